/**
 * The hand-off (docs/queues.md, "Hand-off") on the TestClock, against a real SQLite file:
 * an enqueue that finds an in-process worker with a free permit starts in the insert's
 * transaction — its handler runs with no Dispatcher wake-up and no claim — and anything
 * a claim would not hand that worker first (no free permit, a paused queue, a keyed
 * row) is left to the Dispatcher, woken as before. The poll is a minute, and the clock
 * does not move, so only a hand-off or a wake-up can start anything here.
 */
import { describe, expect, test } from "bun:test"
import { Deferred, Effect, Schema } from "effect"
import * as Job from "../../src/jobs/Job.ts"
import { Client } from "../../src/runtime/Client.ts"
import { Core } from "../../src/runtime/Core.ts"
import * as Worker from "../../src/runtime/Worker.ts"
import { Store } from "../../src/store/Store.ts"
import { eventually, runOnTestClock, testSettings } from "../support/runtime.ts"

const settings = { ...testSettings, pollMs: 60_000 }
// A Dispatcher offers hand-offs once its first claim succeeded; Presence registers the worker after that.
const startWorker = Effect.andThen(
  Worker.start({ settings }),
  eventually(Effect.map(Store.use((s) => s.workersList({ now: 0 })), (ws) => ws.length === 1), "the worker's first claim")
)
const stateOf = (id: string) => Effect.map(Store.use((s) => s.executionsGet(id)), (e) => e!.state)

describe("the hand-off", () => {
  test("an enqueue into an idle worker starts in the insert: no wake-up, and the run is the same as a claimed one", async () => {
    const ran: Array<number> = []
    const echo = Job.make({ id: "t/echo", payload: Schema.Struct({ n: Schema.Number }), handler: ({ n }) => Effect.sync(() => (ran.push(n), n * 2)) })
    const result = await runOnTestClock([echo], Effect.gen(function*() {
      yield* startWorker
      const core = yield* Core
      let wakes = 0
      core.bus.subscribe("default", () => void wakes++)
      const { id } = yield* Client.use((c) => c.enqueue(echo, { n: 21 }))
      yield* eventually(Effect.map(stateOf(id), (s) => s === "succeeded"), "the handed-off run")
      const execution = (yield* Store.use((s) => s.executionsGet(id)))!
      const attempts = yield* Store.use((s) => s.attemptsList(id))
      return { wakes, execution, attempts }
    }))
    expect(ran).toEqual([21])
    expect(result.wakes).toBe(0)
    expect(result.execution).toMatchObject({ state: "succeeded", attempt: 1, result: 42, leaseExpiresAt: null, startedAt: 0, finishedAt: 0 })
    expect(result.attempts.map((a) => a.outcome)).toEqual(["succeeded"])
  })

  test("it takes a permit like a claim: with the only one busy, the next enqueue waits for the Dispatcher", async () => {
    const gates = [Deferred.makeUnsafe<void>(), Deferred.makeUnsafe<void>()]
    let running = 0
    let most = 0
    const gated = Job.make({
      id: "t/gated",
      payload: Schema.Struct({ i: Schema.Number }),
      handler: ({ i }) =>
        Effect.gen(function*() {
          most = Math.max(most, ++running)
          yield* Deferred.await(gates[i]!)
          running--
        })
    })
    const result = await runOnTestClock([gated], Effect.gen(function*() {
      yield* startWorker
      const core = yield* Core
      let wakes = 0
      core.bus.subscribe("default", () => void wakes++)
      const a = yield* Client.use((c) => c.enqueue(gated, { i: 0 }))
      yield* eventually(Effect.sync(() => running === 1), "the first handler")
      const b = yield* Client.use((c) => c.enqueue(gated, { i: 1 }))
      for (let i = 0; i < 50; i++) yield* Effect.yieldNow
      const wakesAfterSecond = wakes
      const bWhileBusy = yield* stateOf(b.id)
      yield* Deferred.succeed(gates[0]!, undefined)
      yield* eventually(Effect.map(stateOf(b.id), (s) => s === "running"), "the second, claimed once the permit is free")
      yield* Deferred.succeed(gates[1]!, undefined)
      yield* eventually(Effect.map(Effect.all([stateOf(a.id), stateOf(b.id)]), (ss) => ss.every((s) => s === "succeeded")), "both")
      return { wakesAfterSecond, bWhileBusy }
    }), { queues: { default: { concurrency: 1 } } })
    expect(result.bWhileBusy).toBe("queued")
    expect(result.wakesAfterSecond).toBe(1)
    expect(most).toBe(1)
  })

  test("a paused queue and a keyed enqueue are not handed off: they wait for the Dispatcher as before", async () => {
    const noop = Job.make({ id: "t/noop", payload: Schema.Struct({ i: Schema.Number }), handler: () => Effect.void })
    const result = await runOnTestClock([noop], Effect.gen(function*() {
      yield* startWorker
      const core = yield* Core
      let wakes = 0
      core.bus.subscribe("default", () => void wakes++)
      const client = yield* Client
      const keyed = yield* client.enqueue(noop, { i: 1 }, { idempotencyKey: "once" })
      // Only a wake-up can start it: the clock does not move, the poll is a minute away.
      yield* eventually(Effect.map(stateOf(keyed.id), (s) => s === "succeeded"), "the keyed run, claimed")
      const keyedWakes = wakes
      yield* client.pauseQueue("default")
      const paused = yield* client.enqueue(noop, { i: 2 })
      // Turns go by (no time): nothing takes it while paused.
      for (let i = 0; i < 200; i++) yield* Effect.yieldNow
      const pausedWakes = wakes
      const whilePaused = yield* stateOf(paused.id)
      yield* client.resumeQueue("default")
      yield* eventually(Effect.map(stateOf(paused.id), (s) => s === "succeeded"), "the run after resume")
      return { keyedWakes, pausedWakes, whilePaused }
    }))
    expect(result.keyedWakes).toBe(1)
    expect(result.pausedWakes).toBe(2)
    expect(result.whilePaused).toBe("queued")
  })
})

describe("the hand-off, through the Promise API on the real clock", () => {
  test("an enqueue's answer comes before the outcome of the job it started is written", async () => {
    const { Roster } = await import("../../src/index.ts")
    const { Database } = await import("bun:sqlite")
    const { mkdtempSync, rmSync } = await import("node:fs")
    const { tmpdir } = await import("node:os")
    const { join } = await import("node:path")
    const dir = mkdtempSync(join(tmpdir(), "roster-handoff-"))
    let started = 0
    const quick = Job.make({ id: "t/quick", payload: Schema.Struct({ i: Schema.Number }), handler: () => Effect.sync(() => void started++) })
    const roster = await Roster.open({ db: join(dir, "roster.db"), jobs: [quick] }, { configDir: false, logger: { output: "off" } })
    const reader = new Database(join(dir, "roster.db"), { readonly: true })
    try {
      await roster.startWorker({})
      // A Dispatcher offers hand-offs from its first claim on; this run follows that claim.
      await roster.waitFor((await roster.enqueue(quick, { i: -1 })).id)
      const seen: Array<{ state: string; startedBefore: boolean }> = []
      for (let i = 0; i < 20; i++) {
        const before = started
        const state = await roster.enqueue(quick, { i }).then(({ id }) =>
          // Read at once, in the answer's own callback, on another connection.
          (reader.query("SELECT state FROM roster_executions WHERE id = ?").get(id) as { state: string }).state)
        seen.push({ state, startedBefore: started > before })
        await Bun.sleep(5)
      }
      // Handed off: started by the time the answer came, its success not yet written.
      const handedOff = seen.filter((s) => s.startedBefore)
      expect(handedOff.length).toBeGreaterThan(10)
      expect(handedOff.every((s) => s.state === "running")).toBe(true)
    } finally {
      reader.close()
      await roster.close()
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
