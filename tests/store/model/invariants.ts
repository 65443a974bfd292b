/**
 * What must hold between the real store and the model after every command, read back
 * through the Store's own queries: the same executions with the same fields; each in
 * exactly one state (the per-state lists partition the whole and match the counts);
 * attempt ≤ max attempts; a lease exactly when running; one execution per (job, key);
 * the attempt rows of every execution the last command touched; every stored queue
 * state (paused since when, or resumed); a waiting parent whose awaited children have
 * all ended is due by the last end (or its park, if later); and the steps and signals
 * (in sent order, each consumed at most once, by the take the model expects) of every
 * execution whose orchestration changed.
 */
import { expect } from "bun:test"
import { Effect } from "effect"
import type { Execution } from "../../../src/store/Execution.ts"
import { states } from "../../../src/store/Execution.ts"
import type { Store, StoreError } from "../../../src/store/Store.ts"
import { queues } from "./jobs.ts"
import { isEnded, type Model, type ModelExecution } from "./Model.ts"

/** The store under test, as the commands see it. */
export interface Real {
  readonly run: <A>(body: (store: Store["Service"]) => Effect.Effect<A, StoreError>) => Promise<A>
}

/** Larger than any run's executions, so a list is the whole table. */
const all = 10_000

/** The fields the model keeps, from a stored execution. */
export const fromStore = (e: Execution) => ({
  id: e.id,
  job: e.job,
  queue: e.queue,
  state: e.state,
  priority: e.priority,
  attempt: e.attempt,
  maxAttempts: e.maxAttempts,
  runAt: e.runAt,
  createdAt: e.createdAt,
  startedAt: e.startedAt,
  finishedAt: e.finishedAt,
  leaseOwner: e.leaseOwner,
  leaseExpiresAt: e.leaseExpiresAt,
  cancelRequested: e.cancelRequested,
  idempotencyKey: e.idempotencyKey,
  concurrencyKey: e.concurrencyKey,
  rateKey: e.rateKey,
  retryOf: e.retryOf,
  payload: e.payload,
  result: e.result,
  errorTag: e.error?.tag ?? null,
  parentId: e.parentId,
  parentStep: e.parentStep,
  wait: e.wait
})

/** The same fields from the model (its record is those fields and the attempt rows). */
export const fromModel = ({ attempts: _, parkedAt: __, ...fields }: ModelExecution): ReturnType<typeof fromStore> => fields

/** Sorted by id, for comparing sets of executions. */
export const byId = <T extends { readonly id: string }>(xs: ReadonlyArray<T>): Array<T> => [...xs].sort((a, b) => (a.id < b.id ? -1 : 1))

/** Reads the whole store back and compares it with the model; throws on the first difference. */
export const checkInvariants = async (m: Model, r: Real): Promise<void> => {
  const touched = [...m.touched]
  m.touched.clear()
  const orchestrated = [...m.touchedOrchestration]
  m.touchedOrchestration.clear()
  const seen = await r.run((s) =>
    Effect.all({
      all: s.executionsList({ limit: all }),
      byState: Effect.forEach(states, (state) => s.executionsList({ state, limit: all })),
      counts: s.executionsCount({}),
      queueCounts: Effect.forEach(queues, (queue) => s.executionsCount({ queue })),
      attempts: Effect.forEach(touched, (id) => s.attemptsList(id)),
      queueStates: s.queuesList,
      steps: Effect.forEach(orchestrated, (id) => s.stepsList(id)),
      signals: Effect.forEach(orchestrated, (id) => s.signalsList(id))
    }))

  // The same executions, field by field.
  expect(byId(seen.all).map(fromStore)).toEqual(byId([...m.executions.values()]).map(fromModel))

  // Exactly one state each: the per-state lists are disjoint and together are everything.
  const ids = seen.byState.flat().map((e) => e.id)
  expect(new Set(ids).size).toBe(ids.length)
  expect([...ids].sort()).toEqual(seen.all.map((e) => e.id).sort())
  states.forEach((state, i) => expect(seen.byState[i]!.every((e) => e.state === state)).toBe(true))
  expect(seen.counts).toEqual(m.counts())
  queues.forEach((queue, i) => expect(seen.queueCounts[i]).toEqual(m.counts({ queue })))

  // Every stored queue state, by name: a pause lasts until its resume, whatever else happens.
  expect(seen.queueStates).toEqual([...m.queueStates].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([queue, pausedAt]) => ({ queue, paused: pausedAt !== null, pausedAt })))

  const keys = new Set<string>()
  for (const e of seen.all) {
    expect(e.attempt).toBeLessThanOrEqual(e.maxAttempts)
    // A live lease exactly while running.
    expect(e.leaseExpiresAt !== null).toBe(e.state === "running")
    if (e.state === "running") expect(e.leaseOwner).not.toBeNull()
    if (e.idempotencyKey !== null) {
      const key = `${e.job}\u0000${e.idempotencyKey}`
      expect(keys.has(key)).toBe(false)
      keys.add(key)
    }
  }

  // A waiting parent whose awaited children have all ended is due, by the last of the ends (or its park, if later).
  const byIdNow = new Map(seen.all.map((e) => [e.id, e]))
  for (const e of seen.all) {
    if (e.state !== "waiting" || e.wait?.kind !== "children") continue
    // The park names only its own children (commands.ts); a pruned one has ended.
    if (!e.wait.ids.every((id) => !byIdNow.has(id) || isEnded(byIdNow.get(id)!.state))) continue
    const bound = Math.max(m.executions.get(e.id)!.parkedAt!, ...e.wait.ids.map((id) => m.endedAt.get(id)!))
    expect({ id: e.id, dueByLastEnd: e.runAt <= bound }).toEqual({ id: e.id, dueByLastEnd: true })
  }

  // Steps (child inserts, signal takes) and signals of every execution whose orchestration changed.
  orchestrated.forEach((id, i) => {
    const steps = seen.steps[i]!.map((s) => ({ name: s.name, output: s.output, attempt: s.attempt, createdAt: s.createdAt }))
    const byName = <T extends { readonly name: string }>(xs: ReadonlyArray<T>) => [...xs].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    expect({ id, steps: byName(steps) }).toEqual({ id, steps: byName(m.steps.get(id) ?? []) })
    const signals = seen.signals[i]!
    // Sent order is seq order; each taken at most once (a take consumes one kept signal, oldest first).
    signals.forEach((x, k) => k > 0 && expect(x.seq).toBeGreaterThan(signals[k - 1]!.seq))
    expect({ id, signals: signals.map((x) => ({ name: x.name, payload: x.payload, sentAt: x.sentAt, consumedAt: x.consumedAt })) })
      .toEqual({ id, signals: m.signals.get(id) ?? [] })
  })

  touched.forEach((id, i) => {
    const stored = seen.attempts[i]!.map((a) => ({ attempt: a.attempt, worker: a.worker, outcome: a.outcome }))
    expect({ id, attempts: stored }).toEqual({ id, attempts: m.executions.get(id)?.attempts ?? [] })
  })
}
