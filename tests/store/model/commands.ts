/**
 * The fast-check commands of the model-based Store tests. Each one does to the real
 * store what a part of Roster does — the Client's enqueue, cancel and manual retry, a
 * Dispatcher's claim, a WorkerPool's outcome, a LeaseKeeper's heartbeat, a Reaper's
 * sweep, the prune Job, an operator's queue pause and resume, `--exit-when-idle`'s
 * look for work — through the Store API only, checks the store's answer against
 * the model, updates the model, and then checks every invariant (invariants.ts).
 *
 * A run's queues are claimed plainly or under flow limits drawn for the run (global
 * concurrency, a queue rate limit, per Job a key concurrency and a rate limit whole or
 * per key), with rows carrying concurrency and rate keys from a small set; a limited
 * claim is checked exactly (ids in claim order, retryAt, the starts it logs) and against
 * the limits themselves (checkFlow).
 *
 * Orchestration: a running execution's child inserts (random steps, repeats included,
 * now and then with an idempotency key already held), parks alone or in a batch (a
 * sleep, a random subset of its children, a signal with or without a timeout), signals
 * sent (to any execution, one waiting for a signal, or none) and taken, and cancels of
 * a child or of a parent with its tree; each answer (ids, inserted, Kept/Woke/Ended/
 * Missing, the payload taken) is checked exactly against the model.
 */
import { expect } from "bun:test"
import { Effect } from "effect"
import fc from "fast-check"
import { retryOrFail } from "../../../src/jobs/RetryDecision.ts"
import * as Failure from "../../../src/jobs/Failure.ts"
import { defaultMaxPayloadBytes, prepare, prepareRetry } from "../../../src/runtime/Enqueue.ts"
import type { Wait } from "../../../src/jobs/Wait.ts"
import type { Execution, ExecutionError } from "../../../src/store/Execution.ts"
import type { Outcome, Store } from "../../../src/store/Store.ts"
import { byId, checkInvariants, fromModel, fromStore, type Real } from "./invariants.ts"
import { jobs, queues, workers } from "./jobs.ts"
import {
  claimOrder,
  type ExpectedLimitedClaim,
  type Fence,
  type Handle,
  leaseMs,
  type Model,
  type ModelLimits,
  type ModelRate,
  type ModelStart,
  never,
  scopes
} from "./Model.ts"

/** A step of a run: its own checks in `apply`, then the invariants. */
abstract class Step implements fc.AsyncCommand<Model, Real> {
  check(_m: Readonly<Model>): boolean {
    return true
  }
  abstract apply(m: Model, r: Real): Promise<void>
  abstract toString(): string
  async run(m: Model, r: Real): Promise<void> {
    await this.apply(m, r)
    await checkInvariants(m, r)
  }
}

/** One enqueue of a batch, as a caller asks for it. */
interface EnqueueItem {
  readonly job: string
  readonly key: string | undefined
  readonly delayMs: number
  readonly priority: number | undefined
  readonly n: number
  /** Flow keys, from a small set so that keys meet their limits. */
  readonly concurrencyKey: string | null
  readonly rateKey: string | null
}

/** The Client's enqueueMany: one insert of several rows; an existing (job, key) returns its execution. */
class Enqueue extends Step {
  constructor(readonly items: ReadonlyArray<EnqueueItem>) {
    super()
  }
  async apply(m: Model, r: Real) {
    // The flow keys go on the rows as a Job's key functions would put them there (the Jobs declare no limits: the claims carry them).
    const rows = this.items.map((i) => ({
      ...Effect.runSync(prepare(jobs.get(i.job)!, { n: i.n }, { idempotencyKey: i.key, delayMs: i.delayMs, priority: i.priority }, m.now, defaultMaxPayloadBytes)),
      concurrencyKey: i.concurrencyKey,
      rateKey: i.rateKey
    }))
    const results = await r.run((s) => s.executionsInsert(rows))
    const expected = this.items.map((item, k) => {
      const row = rows[k]!
      const job = jobs.get(item.job)!
      // Keys are trimmed; empty means none. In a batch, the first of one key wins.
      const key = item.key?.trim() || null
      expect(row.idempotencyKey).toBe(key)
      const existing = key === null ? undefined : m.byKey(job.id, key)
      if (existing) return { id: existing.id, inserted: false }
      m.insert({
        id: row.id,
        job: job.id,
        queue: job.queue,
        priority: item.priority ?? job.priority,
        maxAttempts: job.retry.snapshot.attempts,
        idempotencyKey: key,
        retryOf: null,
        payload: { n: item.n },
        runAt: m.now + item.delayMs,
        concurrencyKey: item.concurrencyKey,
        rateKey: item.rateKey
      })
      return { id: row.id, inserted: true }
    })
    expect(results).toEqual(expected)
  }
  toString() {
    return `enqueue(${
      this.items.map((i) =>
        `${i.job} n=${i.n} key=${JSON.stringify(i.key)} delay=${i.delayMs} prio=${i.priority} ck=${i.concurrencyKey} rk=${i.rateKey}`
      ).join("; ")
    })`
  }
}

/** Time passes: leases run out, delayed and retried executions fall due. */
class AdvanceTime extends Step {
  constructor(readonly ms: number) {
    super()
  }
  async apply(m: Model) {
    m.now += this.ms
  }
  toString() {
    return `advance(${this.ms})`
  }
}

/** Counts by a string key. */
const tally = (keys: ReadonlyArray<string>): Map<string, number> => {
  const counts = new Map<string, number>()
  for (const k of keys) counts.set(k, (counts.get(k) ?? 0) + 1)
  return counts
}

/**
 * After a limited claim (already applied to the model): the limits hold over what the
 * store itself returned, and its flow snapshot is the model's. A claim that took
 * something left at most `globalConcurrency` live running in the queue and at most the
 * Job's limit live running per (job, key) it took; every rate scope has at most `limit`
 * starts in any window (t - period, t] over the whole run's log, the store's claims
 * logged by their own times and counts; queuesFlow reports the model's live running per
 * (job, key) and its live starts. (Only after a claim that took something: a heartbeat
 * extends a worker's leases even once expired, so a slot freed by an expiry and taken by
 * another claim can come back above the limit without any claim — leases bound the
 * limits no better than that.)
 */
const checkFlow = async (m: Model, r: Real, queue: string, limits: ModelLimits, claimed: ReadonlyArray<Execution>, starts: ReadonlyArray<ModelStart>) => {
  const live = m.liveRunning(queue)
  if (claimed.length > 0 && limits.globalConcurrency !== null) {
    expect({ queue, liveRunning: live.length <= limits.globalConcurrency }).toEqual({ queue, liveRunning: true })
  }
  const livePairs = tally(live.filter((e) => e.concurrencyKey !== null).map((e) => `${e.job}/${e.concurrencyKey}`))
  for (const c of claimed) {
    const concurrency = limits.jobs[c.job]?.concurrency ?? null
    if (concurrency === null || c.concurrencyKey === null) continue
    const pair = `${c.job}/${c.concurrencyKey}`
    expect({ pair, within: livePairs.get(pair)! <= concurrency }).toEqual({ pair, within: true })
  }
  // The log, from what the store returned: each rate scope the claimed rows count under.
  const now = m.now
  const logged: Array<ModelStart> = []
  if (claimed.length > 0 && limits.rateLimit !== null) {
    logged.push({ queue, scope: scopes.queue, at: now, expiresAt: now + limits.rateLimit.periodMs, n: claimed.length })
  }
  for (const [scope, n] of tally(claimed.flatMap((c) => m.jobScopeOf(limits, c)?.scope ?? []))) {
    const job = claimed.find((c) => m.jobScopeOf(limits, c)?.scope === scope)!.job
    logged.push({ queue, scope, at: now, expiresAt: now + limits.jobs[job]!.rateLimit!.periodMs, n })
  }
  expect([...logged].sort(byScope)).toEqual([...starts].sort(byScope))
  m.starts.push(...logged)
  const rateOf = (scope: string): ModelRate =>
    scope === scopes.queue ? limits.rateLimit! : limits.jobs[scope.split("\u001f")[1]!]!.rateLimit!
  for (const s of m.starts.filter((x) => x.queue === queue)) {
    const { limit, periodMs } = rateOf(s.scope)
    const inWindow = m.starts.filter((x) => x.queue === queue && x.scope === s.scope && x.at > s.at - periodMs && x.at <= s.at).reduce((sum, x) => sum + x.n, 0)
    expect({ scope: s.scope, at: s.at, inWindow: inWindow <= limit }).toEqual({ scope: s.scope, at: s.at, inWindow: true })
  }
  const flow = await r.run((st) => st.queuesFlow({ queue, now }))
  const pairKey = (x: { job: string; key: string | null }) => `${x.job}/${x.key}`
  expect(new Map(flow.running.map((x) => [pairKey(x), x.count]))).toEqual(tally(live.map((e) => pairKey({ job: e.job, key: e.concurrencyKey }))))
  const liveStarts = (xs: ReadonlyArray<{ scope: string; expiresAt: number; n: number }>) =>
    xs.filter((x) => x.expiresAt > now).map(({ scope, expiresAt, n }) => ({ scope, expiresAt, n })).sort(byScope)
  expect(liveStarts(flow.starts)).toEqual(liveStarts(m.starts.filter((x) => x.queue === queue)))
}

const byScope = (a: { scope: string; expiresAt: number; n: number }, b: { scope: string; expiresAt: number; n: number }) =>
  a.scope < b.scope ? -1 : a.scope > b.scope ? 1 : a.expiresAt - b.expiresAt || a.n - b.n

/** A Dispatcher's claim: the due, queued executions of its queue and jobs, in claim order, leased to it. */
class Claim extends Step {
  constructor(readonly workerId: string, readonly queue: string, readonly jobs: ReadonlyArray<string>, readonly limit: number) {
    super()
  }
  async apply(m: Model, r: Real) {
    const limits = m.limits.get(this.queue)
    const req = { queue: this.queue, jobs: this.jobs, workerId: this.workerId, limit: this.limit, now: m.now, leaseMs }
    let expected = m.expectedClaim(this)
    let claimed: ReadonlyArray<Execution>
    let limited: ExpectedLimitedClaim | undefined
    if (limits === undefined) {
      claimed = await r.run((s) => s.executionsClaim(req))
    } else {
      limited = m.expectedLimitedClaim(this, limits)
      expected = limited.executions
      const result = await r.run((s) => s.executionsClaimLimited({ ...req, limits }))
      claimed = result.executions
      expect({ ids: claimed.map((c) => c.id), retryAt: result.retryAt }).toEqual({ ids: expected.map((e) => e.id), retryAt: limited.retryAt })
    }
    // The model held the store's state before this claim (checked after the last step).
    for (const c of claimed) {
      const before = m.executions.get(c.id)
      const otherLiveLease = before?.leaseOwner != null && before.leaseOwner !== this.workerId && before.leaseExpiresAt! >= m.now
      expect({ id: c.id, otherLiveLease }).toEqual({ id: c.id, otherLiveLease: false })
      // Queued, or waiting and due (a parked execution resumes through a claim).
      expect({ id: c.id, claimable: before?.state === "queued" || before?.state === "waiting" }).toEqual({ id: c.id, claimable: true })
    }
    claimed.forEach((c, i) => i > 0 && expect(claimOrder(claimed[i - 1]!, c)).toBeLessThan(0))
    expect(claimed.map((c) => c.id)).toEqual(expected.map((e) => e.id))
    for (const e of expected) m.claim(e, this.workerId)
    expect(claimed.map(fromStore)).toEqual(expected.map(fromModel))
    if (limits !== undefined && limited !== undefined) await checkFlow(m, r, this.queue, limits, claimed, limited.starts)
  }
  toString() {
    return `claim(${this.workerId}, ${this.queue}, [${this.jobs.join(",")}], limit=${this.limit})`
  }
}

/** How a worker ends an attempt (`park`: the handler parked it, see {@link WaitSpec}). */
type Ending = "succeeded" | "transient" | "permanent" | "cancelled" | "released" | "park"

/** What a park waits for: a sleep of `ms`, a subset (bits) of the execution's children, or a signal with or without a timeout of `ms`. */
interface WaitSpec {
  readonly kind: "sleep" | "children" | "signal"
  readonly ms: number
  readonly bits: number
  readonly signal: string
  readonly until: boolean
}
/** How an outcome's fence is made wrong on purpose (a stale or foreign worker). */
type Tamper = "none" | "owner" | "attempt"

/** One outcome of a batch: on which claim (among the live ones, or any), how it ended, and whether its fence is tampered with. */
interface FinishItem {
  readonly pick: number
  readonly live: boolean
  readonly ending: Ending
  readonly tamper: Tamper
  readonly wait: WaitSpec
}

const transientError: ExecutionError = { tag: "Boom", message: "boom", retryable: true, pretty: "Error: boom" }
const permanentError: ExecutionError = { tag: "PermanentFailure", message: "no", retryable: false, pretty: "PermanentFailure: no" }

const tampered = (h: Handle, tamper: Tamper): Fence =>
  tamper === "owner"
    ? { id: h.id, workerId: workers[(workers.indexOf(h.workerId as (typeof workers)[number]) + 1) % workers.length]!, attempt: h.attempt }
    : { id: h.id, workerId: h.workerId, attempt: tamper === "attempt" ? h.attempt - 1 : h.attempt }

/** The wait and due time of a park by an execution, as ctx.sleep, awaitChildren and waitForSignal build them. */
const parkOf = (m: Model, id: string, spec: WaitSpec): { readonly wait: Wait; readonly runAt: number } => {
  switch (spec.kind) {
    case "sleep":
      return { wait: { kind: "sleep", step: "nap", until: m.now + spec.ms }, runAt: m.now + spec.ms }
    case "children": {
      const ids = m.childrenOf(id).map((c) => c.id).sort().filter((_, i) => (spec.bits >> i) % 2 === 1)
      return { wait: { kind: "children", step: "join", ids }, runAt: never }
    }
    case "signal": {
      const until = spec.until ? m.now + spec.ms : null
      return { wait: { kind: "signal", step: spec.signal, signal: spec.signal, until }, runAt: until ?? never }
    }
  }
}

/** The outcome a WorkerPool records for a handle (see WorkerPool.outcomeOf), with the execution's parent as it carries it. */
const outcomeOf = (m: Model, h: Handle, fence: Fence, item: Pick<FinishItem, "ending" | "wait">, now: number): Outcome => {
  const parentId = m.executions.get(h.id)?.parentId ?? null
  const base = { ...fence, now, startedAt: h.startedAt, parentId }
  switch (item.ending) {
    case "succeeded":
      return { ...base, kind: "succeeded", result: JSON.stringify({ ok: h.attempt }) }
    case "cancelled":
      return { ...base, kind: "cancelled", error: Failure.cancelled }
    case "released":
      return { ...fence, now, kind: "released", parentId }
    case "park":
      return { ...fence, now, kind: "park", parentId, ...parkOf(m, h.id, item.wait) }
    default: {
      const error = item.ending === "transient" ? transientError : permanentError
      const job = jobs.get(h.job)!
      const fate = retryOrFail(job, { attempt: fence.attempt, retry: job.retry.snapshot }, error, 0, now)
      return fate.kind === "retry" ? { ...base, kind: "retry", runAt: fate.runAt, error } : { ...base, kind: "failed", error }
    }
  }
}

/** Applies an outcome that passed its fence to the model. */
const applyOutcome = (m: Model, o: Outcome, expired: boolean, h?: Handle): void => {
  const e = m.executions.get(o.id)!
  if (o.kind === "retry" || o.kind === "failed") {
    // Retry exactly when the error allows it and an attempt is left.
    expect({ id: e.id, retried: o.kind === "retry" }).toEqual({ id: e.id, retried: o.error.retryable && e.attempt < e.maxAttempts })
  }
  switch (o.kind) {
    case "succeeded":
      return m.succeed(e, JSON.parse(o.result!))
    case "retry":
      return m.retry(e, o.runAt, o.error.tag, expired)
    case "failed":
      return m.fail(e, o.error.tag, expired)
    case "cancelled":
      return m.cancelRunning(e, o.error?.tag ?? null)
    case "released":
      return m.release(e, h!)
    case "park": {
      const attempt = e.attempt
      m.park(e, h!, o.runAt, o.wait)
      // Parked attempts are not charged.
      expect({ id: e.id, attempt: e.attempt }).toEqual({ id: e.id, attempt: attempt - 1 })
      return
    }
  }
}

const snapshot = (s: Store["Service"], id: string) => Effect.all({ execution: s.executionsGet(id), attempts: s.attemptsList(id) })

/**
 * A Recorder's batch of outcomes (one per execution), live or stale: each applies
 * exactly when the model says its fence holds; a fenced one returns false and changes nothing.
 */
class Finish extends Step {
  constructor(readonly items: ReadonlyArray<FinishItem>) {
    super()
  }
  override check(m: Readonly<Model>) {
    return m.handles.length > 0
  }
  async apply(m: Model, r: Real) {
    const seen = new Set<string>()
    const live = m.handles.filter((h) => m.passesFence(h))
    const plans = this.items.flatMap((item) => {
      const from = item.live && live.length > 0 ? live : m.handles
      const h = from[item.pick % from.length]!
      if (seen.has(h.id)) return []
      seen.add(h.id)
      const fence = tampered(h, item.tamper)
      return [{ h, outcome: outcomeOf(m, h, fence, item, m.now), applies: m.passesFence(fence) }]
    })
    const fenced = plans.filter((p) => !p.applies).map((p) => p.outcome.id)
    const before = await r.run((s) => Effect.forEach(fenced, (id) => snapshot(s, id)))
    const applied = await r.run((s) => s.executionsFinish(plans.map((p) => p.outcome)))
    expect(plans.map((p, i) => ({ id: p.outcome.id, kind: p.outcome.kind, applied: applied[i] })))
      .toEqual(plans.map((p) => ({ id: p.outcome.id, kind: p.outcome.kind, applied: p.applies })))
    expect(await r.run((s) => Effect.forEach(fenced, (id) => snapshot(s, id)))).toEqual(before)
    for (const p of plans) if (p.applies) applyOutcome(m, p.outcome, false, p.h)
  }
  toString() {
    const wait = (w: WaitSpec) =>
      w.kind === "sleep" ? `sleep ${w.ms}` : w.kind === "children" ? `children bits=${w.bits}` : `signal ${w.signal}${w.until ? ` until +${w.ms}` : ""}`
    return `finish(${
      this.items.map((i) => `${i.live ? "live" : "any"}#${i.pick} ${i.ending}${i.ending === "park" ? ` (${wait(i.wait)})` : ""}${i.tamper === "none" ? "" : ` tamper=${i.tamper}`}`)
        .join("; ")
    })`
  }
}

/** A handler parking its live attempt alone (ctx.sleep, awaitChildren, waitForSignal): a Finish of one park, more often than in a mixed batch. */
class Park extends Step {
  constructor(readonly pick: number, readonly wait: WaitSpec) {
    super()
  }
  override check(m: Readonly<Model>) {
    return m.handles.some((h) => m.passesFence(h))
  }
  async apply(m: Model, r: Real) {
    const live = m.handles.filter((h) => m.passesFence(h))
    // A wait for children by a parent that has some, if there is one (else it is due at once).
    const parents = live.filter((h) => m.childrenOf(h.id).length > 0)
    const from = this.wait.kind === "children" && parents.length > 0 ? parents : live
    const h = from[this.pick % from.length]!
    const outcome = outcomeOf(m, h, { id: h.id, workerId: h.workerId, attempt: h.attempt }, { ending: "park", wait: this.wait }, m.now)
    expect(await r.run((s) => s.executionsFinish([outcome]))).toEqual([true])
    applyOutcome(m, outcome, false, h)
  }
  toString() {
    const w = this.wait
    return `park(live#${this.pick}, ${w.kind === "sleep" ? `sleep ${w.ms}` : w.kind === "children" ? `children bits=${w.bits}` : `signal ${w.signal}${w.until ? ` until +${w.ms}` : ""}`})`
  }
}

/** A LeaseKeeper's heartbeat: extends every lease the worker holds and reports cancel requests. */
class Heartbeat extends Step {
  constructor(readonly workerId: string) {
    super()
  }
  async apply(m: Model, r: Real) {
    const held = m.heldBy(this.workerId)
    const expected = held.map((e) => ({ id: e.id, attempt: e.attempt, cancelRequested: e.cancelRequested }))
    const result = await r.run((s) => s.executionsHeartbeat({ workerId: this.workerId, now: m.now, leaseMs }))
    expect(byId(result.held)).toEqual(byId(expected))
    for (const e of held) e.leaseExpiresAt = m.now + leaseMs
  }
  toString() {
    return `heartbeat(${this.workerId})`
  }
}

/**
 * A Reaper's sweep (see Reaper.sweep): up to `limit` running executions whose lease
 * expired, soonest-expired first, each through retry-or-fail with `lease expired`,
 * fenced on the dead lease.
 */
class Reap extends Step {
  constructor(readonly limit: number) {
    super()
  }
  async apply(m: Model, r: Real) {
    const due = m.expired()
    const found = await r.run((s) => s.executionsExpired({ now: m.now, limit: this.limit }))
    expect(found.length).toBe(Math.min(this.limit, due.length))
    const dueIds = new Set(due.map((e) => e.id))
    for (const e of found) expect({ id: e.id, expired: dueIds.has(e.id) }).toEqual({ id: e.id, expired: true })
    const last = found.at(-1)?.leaseExpiresAt ?? -Infinity
    found.forEach((e, i) => i > 0 && expect(e.leaseExpiresAt!).toBeGreaterThanOrEqual(found[i - 1]!.leaseExpiresAt!))
    const foundIds = new Set(found.map((e) => e.id))
    for (const e of due) if (!foundIds.has(e.id)) expect(e.leaseExpiresAt!).toBeGreaterThanOrEqual(last)

    const outcomes = found.filter((e) => e.leaseOwner !== null).map((e): Outcome => {
      const fate = retryOrFail(jobs.get(e.job), e, Failure.leaseExpired, 0, m.now)
      const base = { id: e.id, workerId: e.leaseOwner!, attempt: e.attempt, now: m.now, startedAt: e.startedAt ?? m.now, error: Failure.leaseExpired, expired: true, parentId: e.parentId }
      return fate.kind === "retry" ? { ...base, kind: "retry", runAt: fate.runAt } : { ...base, kind: "failed" }
    })
    const applied = await r.run((s) => s.executionsFinish(outcomes))
    expect(applied).toEqual(outcomes.map(() => true))
    for (const o of outcomes) applyOutcome(m, o, true)
  }
  toString() {
    return `reap(limit=${this.limit})`
  }
}

/** A step on one execution picked among every one ever inserted (pruned ones too). */
abstract class OnExecution extends Step {
  constructor(readonly pick: number) {
    super()
  }
  override check(m: Readonly<Model>) {
    return m.everSeen.length > 0
  }
  protected idOf(m: Model): string {
    return m.everSeen[this.pick % m.everSeen.length]!
  }
}

/** The Client's cancel: a queued execution ends at once, a running one is asked to stop. */
class Cancel extends OnExecution {
  async apply(m: Model, r: Real) {
    const id = this.idOf(m)
    const result = await r.run((s) => s.executionsCancel({ id, now: m.now }))
    expect({ id, result }).toEqual({ id, result: m.cancel(id) })
  }
  toString() {
    return `cancel(#${this.pick})`
  }
}

/** The Client's manual retry: a failed or cancelled execution gets a new one, linked to it, with a derived key. */
class ManualRetry extends OnExecution {
  async apply(m: Model, r: Real) {
    const id = this.idOf(m)
    const original = await r.run((s) => s.executionsGet(id))
    // As the Client refuses: not found, or not failed/cancelled.
    if (original === null || (original.state !== "failed" && original.state !== "cancelled")) return
    const row = prepareRetry(original, m.now)
    const results = await r.run((s) => s.executionsInsert([row]))
    expect(results).toEqual([{ id: row.id, inserted: true }])
    const known = m.executions.get(id)!
    m.insert({
      id: row.id,
      job: known.job,
      queue: known.queue,
      priority: known.priority,
      maxAttempts: known.maxAttempts,
      idempotencyKey: known.idempotencyKey === null ? null : `${known.idempotencyKey}:retry:${row.id}`,
      retryOf: id,
      payload: known.payload,
      runAt: m.now,
      concurrencyKey: known.concurrencyKey,
      rateKey: known.rateKey
    })
  }
  toString() {
    return `retry(#${this.pick})`
  }
}

/** An operator's pause or resume of a queue (`roster queues pause|resume`): its answer (the stored states are an invariant). */
class PauseQueue extends Step {
  constructor(readonly queue: string, readonly pause: boolean) {
    super()
  }
  async apply(m: Model, r: Real) {
    const req = { queue: this.queue, now: m.now }
    const changed = await r.run((s) => (this.pause ? s.queuesPause(req) : s.queuesResume(req)))
    // A resume of a queue never paused stores nothing: the model keeps no state for it either.
    expect(changed).toBe(this.pause ? m.pause(this.queue) : m.resume(this.queue))
  }
  toString() {
    return `${this.pause ? "pause" : "resume"}(${this.queue})`
  }
}

/** `--exit-when-idle`'s look for work on a set of served queues (Store.executionsHasWork). */
class HasWork extends Step {
  constructor(readonly served: ReadonlyArray<{ readonly queue: string; readonly jobs: ReadonlyArray<string> }>) {
    super()
  }
  async apply(m: Model, r: Real) {
    expect(await r.run((s) => s.executionsHasWork({ queues: this.served, now: m.now }))).toBe(m.hasWork(this.served))
  }
  toString() {
    return `hasWork(${this.served.map((q) => `${q.queue}:[${q.jobs.join(",")}]`).join(" ")})`
  }
}

/** The prune Job: finished executions older than the cut-offs go, with their attempt rows, up to a limit. */
class Prune extends Step {
  constructor(readonly succeededAgo: number, readonly failedAgo: number, readonly limit: number) {
    super()
  }
  async apply(m: Model, r: Real) {
    const succeededBefore = m.now - this.succeededAgo
    const failedBefore = m.now - this.failedAgo
    const prunable = new Set(m.prunable(succeededBefore, failedBefore).map((e) => e.id))
    const deleted = await r.run((s) => s.executionsPrune({ succeededBefore, failedBefore, limit: this.limit }))
    expect(deleted).toBe(Math.min(this.limit, prunable.size))
    // Which ones go under a limit is the store's choice; they must all be prunable.
    const left = new Set((await r.run((s) => s.executionsList({ limit: 10_000 }))).map((e) => e.id))
    const gone = [...m.executions.keys()].filter((id) => !left.has(id))
    expect(gone.filter((id) => !prunable.has(id))).toEqual([])
    expect(gone.length).toBe(deleted)
    for (const id of gone) m.remove(id)
  }
  toString() {
    return `prune(succeeded>${this.succeededAgo}ms, failed>${this.failedAgo}ms, limit=${this.limit})`
  }
}

/** One child insert, as a running execution's ctx.enqueue makes it. */
interface ChildItem {
  readonly pick: number
  readonly step: string
  readonly job: string
  readonly n: number
  readonly delayMs: number
  readonly key: string | undefined
}

/**
 * A running execution's ctx.enqueue (executionsInsertChild): a child exactly once per
 * (parent, step) — a repeat returns the first child's id and inserts nothing — with
 * the step recorded (output: the child's id as JSON). A child with an idempotency key
 * already held returns the holder, as any enqueue.
 */
class InsertChild extends Step {
  constructor(readonly item: ChildItem) {
    super()
  }
  override check(m: Readonly<Model>) {
    return [...m.executions.values()].some((e) => e.state === "running")
  }
  async apply(m: Model, r: Real) {
    const running = [...m.executions.values()].filter((e) => e.state === "running").sort((a, b) => (a.id < b.id ? -1 : 1))
    const parent = running[this.item.pick % running.length]!
    const job = jobs.get(this.item.job)!
    const row = Effect.runSync(prepare(job, { n: this.item.n }, { idempotencyKey: this.item.key, delayMs: this.item.delayMs }, m.now, defaultMaxPayloadBytes))
    const result = await r.run((s) => s.executionsInsertChild({ parentId: parent.id, step: this.item.step, attempt: parent.attempt, row }))
    const before = m.childrenOf(parent.id).find((c) => c.parentStep === this.item.step)
    const byKey = row.idempotencyKey === null ? undefined : m.byKey(job.id, row.idempotencyKey)
    let expected: { id: string; inserted: boolean }
    if (before !== undefined) expected = { id: before.id, inserted: false }
    else if (byKey !== undefined) expected = { id: byKey.id, inserted: false }
    else {
      m.insert({
        id: row.id,
        job: job.id,
        queue: job.queue,
        priority: job.priority,
        maxAttempts: job.retry.snapshot.attempts,
        idempotencyKey: row.idempotencyKey,
        retryOf: null,
        payload: { n: this.item.n },
        runAt: m.now + this.item.delayMs,
        concurrencyKey: null,
        rateKey: null,
        parentId: parent.id,
        parentStep: this.item.step
      })
      expected = { id: row.id, inserted: true }
    }
    expect(result).toEqual(expected)
    if (before === undefined) m.saveStep(parent.id, { name: this.item.step, output: JSON.stringify(expected.id), attempt: parent.attempt, createdAt: m.now })
  }
  toString() {
    return `insertChild(running#${this.item.pick}, step=${this.item.step}, ${this.item.job} n=${this.item.n} delay=${this.item.delayMs} key=${JSON.stringify(this.item.key)})`
  }
}

/** The Client's signal: refused for a missing or ended execution, else kept, and waking it if it waits for that signal. */
class SendSignal extends Step {
  constructor(readonly pick: number, readonly name: string, readonly n: number) {
    super()
  }
  async apply(m: Model, r: Real) {
    // Now and then an id that never existed; half the time one waiting for a signal, if any.
    const waiting = [...m.executions.values()].filter((e) => e.state === "waiting" && e.wait?.kind === "signal").map((e) => e.id).sort()
    const id = this.pick % 10 === 9 || m.everSeen.length === 0
      ? "no-such-execution"
      : this.pick % 2 === 0 && waiting.length > 0
      ? waiting[(this.pick >> 1) % waiting.length]!
      : m.everSeen[this.pick % m.everSeen.length]!
    const payload = JSON.stringify({ v: this.n })
    const result = await r.run((s) => s.signalsSend({ id, name: this.name, payload, now: m.now }))
    expect({ id, result }).toEqual({ id, result: m.sendSignal(id, this.name, payload) })
  }
  toString() {
    return `signal(#${this.pick}, ${this.name}, v=${this.n})`
  }
}

/** A running attempt's ctx.waitForSignal taking a kept signal (oldest first, once), recorded as its step. */
class TakeSignal extends Step {
  constructor(readonly pick: number, readonly name: string) {
    super()
  }
  override check(m: Readonly<Model>) {
    return m.handles.some((h) => m.passesFence(h))
  }
  async apply(m: Model, r: Real) {
    const live = m.handles.filter((h) => m.passesFence(h))
    const h = live[this.pick % live.length]!
    const e = m.executions.get(h.id)!
    const taken = await r.run((s) => s.signalsTake({ id: h.id, name: this.name, step: this.name, attempt: h.attempt, now: m.now }))
    expect({ id: h.id, taken }).toEqual({ id: h.id, taken: m.takeSignal(e, this.name, this.name) })
  }
  toString() {
    return `takeSignal(live#${this.pick}, ${this.name})`
  }
}

/** The Client's cancel of a child (its waiting parent may be due once it ends: at once if queued or waiting, or when its running attempt stops). */
class CancelChild extends Step {
  constructor(readonly pick: number) {
    super()
  }
  override check(m: Readonly<Model>) {
    return [...m.executions.values()].some((e) => e.parentId !== null)
  }
  async apply(m: Model, r: Real) {
    const children = [...m.executions.values()].filter((e) => e.parentId !== null).map((e) => e.id).sort()
    const id = children[this.pick % children.length]!
    const result = await r.run((s) => s.executionsCancel({ id, now: m.now }))
    expect({ id, result }).toEqual({ id, result: m.cancel(id) })
  }
  toString() {
    return `cancelChild(#${this.pick})`
  }
}

/** The Client's cancel of an execution that has children: it, and the whole tree below, cancelled or asked to stop. */
class CancelTree extends Step {
  constructor(readonly pick: number) {
    super()
  }
  override check(m: Readonly<Model>) {
    return [...m.executions.values()].some((e) => e.parentId !== null)
  }
  async apply(m: Model, r: Real) {
    const parents = [...new Set([...m.executions.values()].flatMap((e) => (e.parentId === null ? [] : [e.parentId])))].sort()
    const id = parents[this.pick % parents.length]!
    const result = await r.run((s) => s.executionsCancel({ id, now: m.now }))
    expect({ id, result }).toEqual({ id, result: m.cancel(id) })
  }
  toString() {
    return `cancelTree(#${this.pick})`
  }
}

const jobIds = [...jobs.keys()]
const worker = fc.constantFrom(...workers)
const pick = fc.nat({ max: 1_000 })

const enqueueItem: fc.Arbitrary<EnqueueItem> = fc.record({
  job: fc.constantFrom(...jobIds),
  key: fc.option(fc.constantFrom("a", " a", "a ", "\ta\n", "b", "b ", "", "   "), { nil: undefined, freq: 2 }),
  delayMs: fc.constantFrom(0, 0, 1_000, 5_000, 20_000),
  priority: fc.option(fc.integer({ min: -1, max: 2 }), { nil: undefined }),
  n: fc.nat({ max: 99 }),
  concurrencyKey: fc.option(fc.constantFrom("a", "b"), { nil: null }),
  rateKey: fc.option(fc.constantFrom("a", "b"), { nil: null })
})

const signalName = fc.constantFrom("go", "stop")

const waitSpec: fc.Arbitrary<WaitSpec> = fc.record({
  kind: fc.constantFrom<WaitSpec["kind"]>("sleep", "children", "children", "signal"),
  ms: fc.constantFrom(1, 1_000, 5_000, 30_000),
  bits: fc.nat({ max: 255 }),
  signal: signalName,
  until: fc.boolean()
})

const finishItem: fc.Arbitrary<FinishItem> = fc.record({
  pick,
  live: fc.constantFrom(true, true, false),
  ending: fc.constantFrom<Ending>("succeeded", "succeeded", "transient", "transient", "permanent", "cancelled", "released", "park", "park"),
  tamper: fc.constantFrom<Tamper>("none", "none", "none", "owner", "attempt"),
  wait: waitSpec
})

const childItem: fc.Arbitrary<ChildItem> = fc.record({
  // Mostly the oldest running executions, so parents gather several children before they park.
  pick: fc.constantFrom(0, 0, 0, 1, 2),
  step: fc.constantFrom("a", "b", "c"),
  job: fc.constantFrom(...jobs.keys()),
  n: fc.nat({ max: 99 }),
  delayMs: fc.constantFrom(0, 0, 1_000),
  key: fc.option(fc.constantFrom("a", "k"), { nil: undefined, freq: 6 })
})

const enqueue = fc.array(enqueueItem, { minLength: 1, maxLength: 3 }).map((items) => new Enqueue(items))
const advance = fc.oneof(fc.constantFrom(1, 1_000, leaseMs, leaseMs + 1), fc.integer({ min: 1, max: 25_000 })).map((ms) => new AdvanceTime(ms))
const claim = fc.tuple(worker, fc.constantFrom(...queues, "default"), fc.subarray(jobIds, { minLength: 1 }), fc.integer({ min: 1, max: 4 }))
  .map(([w, q, js, limit]) => new Claim(w, q, js, limit))
const finish = fc.array(finishItem, { minLength: 1, maxLength: 3 }).map((items) => new Finish(items))

/** Every command; enqueues, time, claims (plain or limited, by the run's limits) and outcomes more often than the rest. */
export const commandArbitraries: Array<fc.Arbitrary<Step>> = [
  enqueue, enqueue, enqueue, enqueue, advance, advance, claim, claim, claim, claim, claim, finish, finish, finish,
  worker.map((w) => new Heartbeat(w)),
  childItem.map((i) => new InsertChild(i)),
  childItem.map((i) => new InsertChild(i)),
  childItem.map((i) => new InsertChild(i)),
  childItem.map((i) => new InsertChild(i)),
  fc.tuple(pick, signalName, fc.nat({ max: 9 })).map(([p, name, n]) => new SendSignal(p, name, n)),
  fc.tuple(pick, signalName, fc.nat({ max: 9 })).map(([p, name, n]) => new SendSignal(p, name, n)),
  fc.tuple(pick, signalName).map(([p, name]) => new TakeSignal(p, name)),
  pick.map((p) => new CancelTree(p)),
  fc.tuple(pick, waitSpec).map(([p, w]) => new Park(p, w)),
  fc.tuple(pick, waitSpec).map(([p, w]) => new Park(p, w)),
  fc.tuple(pick, waitSpec).map(([p, w]) => new Park(p, w)),
  pick.map((p) => new CancelChild(p)),
  fc.integer({ min: 1, max: 5 }).map((limit) => new Reap(limit)),
  pick.map((p) => new Cancel(p)),
  pick.map((p) => new ManualRetry(p)),
  fc.tuple(fc.constantFrom(0, 5_000, 60_000), fc.constantFrom(0, 5_000, 60_000), fc.constantFrom(1, 3, 100))
    .map(([s, f, limit]) => new Prune(s, f, limit)),
  fc.tuple(fc.constantFrom(...queues), fc.boolean()).map(([q, pause]) => new PauseQueue(q, pause)),
  fc.subarray([...queues], { minLength: 1 }).chain((served) =>
    fc.tuple(...served.map(() => fc.subarray(jobIds))).map((js) => new HasWork(served.map((queue, i) => ({ queue, jobs: js[i]! })))))
]

const period = fc.constantFrom(1_000, 5_000, 20_000)
const rate: fc.Arbitrary<ModelRate> = fc.record({ limit: fc.integer({ min: 1, max: 3 }), periodMs: period })
/** Each limit is left out one time in two (fast-check's freq: nil one time in freq). */
const none = { nil: null, freq: 2 } as const

/** One queue's limits: any mix of global concurrency, a queue rate limit, and per Job a key concurrency and a rate limit (whole or per key). */
const queueLimits = (queueJobs: ReadonlyArray<string>): fc.Arbitrary<ModelLimits> =>
  fc.record({
    globalConcurrency: fc.option(fc.integer({ min: 1, max: 4 }), none),
    rateLimit: fc.option(rate, none),
    jobs: fc.subarray([...queueJobs]).chain((limited) =>
      fc.tuple(...limited.map(() =>
        fc.record({
          concurrency: fc.option(fc.integer({ min: 1, max: 2 }), none),
          rateLimit: fc.option(fc.record({ limit: fc.integer({ min: 1, max: 3 }), periodMs: period, perKey: fc.boolean() }), none)
        })
      )).map((ls) => Object.fromEntries(limited.map((job, i) => [job, ls[i]!]))))
  })

/** The limits of a run: each queue is claimed with limits (two times in three) or plainly (fast-check: undefined one time in three). */
export const limitsArbitrary: fc.Arbitrary<ReadonlyMap<string, ModelLimits>> = fc.tuple(...queues.map((q) =>
  fc.option(queueLimits(jobIds.filter((j) => jobs.get(j)!.queue === q)), { nil: undefined, freq: 3 })
)).map((ls) => new Map(queues.flatMap((q, i) => (ls[i] === undefined ? [] : [[q, ls[i]!] as const]))))
