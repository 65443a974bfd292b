/**
 * The worker's actors on the TestClock, against a real SQLite file: retries follow the
 * policy, timeouts fail the attempt, lost leases and cancel requests interrupt the
 * handler, and shutdown releases in-flight work without charging an attempt.
 */
import { describe, expect, test } from "bun:test"
import { Effect, Exit, Fiber, Schema, Scope } from "effect"
import { TestClock } from "effect/testing"
import * as Job from "../../src/jobs/Job.ts"
import * as RetryPolicy from "../../src/jobs/RetryPolicy.ts"
import { Client } from "../../src/runtime/Client.ts"
import * as Worker from "../../src/runtime/Worker.ts"
import { Store } from "../../src/store/Store.ts"
import { eventually, runOnTestClock, testSettings } from "../support/runtime.ts"

const stateOf = (id: string) => Effect.map(Store.use((s) => s.executionsGet(id)), (e) => e!)
const attemptsOf = (id: string) => Store.use((s) => s.attemptsList(id))

const alwaysFails = Job.make({
  id: "t/always-fails",
  payload: Schema.Struct({}),
  retry: RetryPolicy.exponential({ attempts: 4, initial: 1_000, max: 3_000, jitter: false }),
  handler: () => Effect.fail({ _tag: "Boom", message: "boom" })
})

describe("retries", () => {
  test("retry delays follow the policy: 1 s, 2 s, then capped at 3 s, then failed", async () => {
    const starts = await runOnTestClock([alwaysFails], Effect.gen(function*() {
      yield* Worker.start({ settings: testSettings })
      const { id } = yield* Client.use((c) => c.enqueue(alwaysFails, {}))
      yield* eventually(Effect.map(stateOf(id), (e) => e.attempt === 1 && e.state === "queued"), "first failure")
      expect((yield* stateOf(id)).runAt).toBe(1_000)
      yield* TestClock.adjust(999)
      expect((yield* stateOf(id)).attempt).toBe(1)
      yield* TestClock.adjust(1)
      yield* eventually(Effect.map(stateOf(id), (e) => e.attempt === 2 && e.state === "queued"), "second failure")
      expect((yield* stateOf(id)).runAt).toBe(3_000)
      yield* TestClock.adjust(2_000)
      yield* eventually(Effect.map(stateOf(id), (e) => e.attempt === 3 && e.state === "queued"), "third failure")
      expect((yield* stateOf(id)).runAt).toBe(6_000)
      yield* TestClock.adjust(3_000)
      yield* eventually(Effect.map(stateOf(id), (e) => e.state === "failed"), "final failure")
      const attempts = yield* attemptsOf(id)
      expect(attempts.map((a) => a.outcome)).toEqual(["retrying", "retrying", "retrying", "failed"])
      return attempts.map((a) => a.startedAt)
    }))
    expect(starts).toEqual([0, 1_000, 3_000, 6_000])
  })

  test("full jitter keeps every delay between 0 and the policy's ceiling", async () => {
    const jittery = Job.make({
      id: "t/jittery",
      payload: Schema.Struct({ i: Schema.Number }),
      retry: RetryPolicy.exponential({ attempts: 2, initial: 10_000, max: 10_000 }),
      handler: () => Effect.fail({ _tag: "Boom", message: "boom" })
    })
    const delays = await runOnTestClock([jittery], Effect.gen(function*() {
      yield* Worker.start({ settings: testSettings })
      const ids = yield* Effect.forEach(Array.from({ length: 30 }, (_, i) => i), (i) => Client.use((c) => c.enqueue(jittery, { i })))
      yield* eventually(Effect.map(Store.use((s) => s.executionsCount({})), (c) => c.queued === 30 && c.running === 0), "all first attempts")
      yield* eventually(Effect.map(Effect.forEach(ids, ({ id }) => stateOf(id)), (es) => es.every((e) => e.attempt === 1 && e.state === "queued")), "all retried")
      return yield* Effect.forEach(ids, ({ id }) => Effect.map(stateOf(id), (e) => e.runAt))
    }))
    expect(delays.every((d) => d >= 0 && d <= 10_000)).toBe(true)
    expect(new Set(delays).size).toBeGreaterThan(1)
  })

  test("Job.permanent fails at once whatever attempts remain", async () => {
    const permanent = Job.make({ id: "t/permanent", payload: Schema.Struct({}), handler: () => Job.permanent("nope") })
    const e = await runOnTestClock([permanent], Effect.gen(function*() {
      yield* Worker.start({ settings: testSettings })
      const { id } = yield* Client.use((c) => c.enqueue(permanent, {}))
      yield* eventually(Effect.map(stateOf(id), (e) => e.state === "failed"), "failure")
      return yield* stateOf(id)
    }))
    expect(e).toMatchObject({ attempt: 1, error: { tag: "PermanentFailure", message: "nope", retryable: false } })
  })

  test("an error the Job's retryable predicate rejects is permanent; a thrown exception is transient", async () => {
    const picky = Job.make({
      id: "t/picky",
      payload: Schema.Struct({ kind: Schema.String }),
      retry: RetryPolicy.fixed({ attempts: 3, delay: 1_000 }),
      retryable: (e) => (e as { _tag?: string })._tag !== "BadRequest",
      handler: ({ kind }) =>
        kind === "bad" ? Effect.fail({ _tag: "BadRequest", message: "400" }) : Effect.sync(() => {
          throw new Error("kaboom")
        })
    })
    const [bad, thrown] = await runOnTestClock([picky], Effect.gen(function*() {
      yield* Worker.start({ settings: testSettings })
      const a = yield* Client.use((c) => c.enqueue(picky, { kind: "bad" }))
      const b = yield* Client.use((c) => c.enqueue(picky, { kind: "throw" }))
      yield* eventually(Effect.map(stateOf(a.id), (e) => e.state === "failed"), "bad request failed")
      yield* eventually(Effect.map(stateOf(b.id), (e) => e.attempt === 1 && e.state === "queued"), "defect retried")
      return [yield* stateOf(a.id), yield* stateOf(b.id)] as const
    }))
    expect(bad.error).toMatchObject({ tag: "BadRequest", retryable: false })
    expect(thrown.error).toMatchObject({ tag: "Defect", message: "kaboom", retryable: true })
    expect(thrown.error!.pretty).toContain("kaboom")
  })
})

describe("timeouts", () => {
  test("a handler that outlives the Job's timeout fails the attempt with JobTimeout", async () => {
    const slow = Job.make({
      id: "t/slow",
      payload: Schema.Struct({}),
      timeout: 1_000,
      retry: RetryPolicy.fixed({ attempts: 2, delay: 500 }),
      handler: () => Effect.sleep(10_000)
    })
    const result = await runOnTestClock([slow], Effect.gen(function*() {
      yield* Worker.start({ settings: { ...testSettings, leaseMs: 60_000 } })
      const { id } = yield* Client.use((c) => c.enqueue(slow, {}))
      yield* eventually(Effect.map(stateOf(id), (e) => e.state === "running"), "running")
      yield* TestClock.adjust(999)
      expect((yield* stateOf(id)).state).toBe("running")
      yield* TestClock.adjust(1)
      yield* eventually(Effect.map(stateOf(id), (e) => e.state === "queued"), "timed out")
      const first = yield* stateOf(id)
      yield* TestClock.adjust(500)
      yield* eventually(Effect.map(stateOf(id), (e) => e.attempt === 2 && e.state === "running"), "second attempt")
      yield* TestClock.adjust(1_000)
      yield* eventually(Effect.map(stateOf(id), (e) => e.state === "failed"), "final timeout")
      return { first, attempts: yield* attemptsOf(id) }
    }))
    expect(result.first).toMatchObject({ attempt: 1, runAt: 1_500, error: { tag: "JobTimeout", retryable: true } })
    expect(result.attempts.map((a) => [a.outcome, a.finishedAt - a.startedAt])).toEqual([["retrying", 1_000], ["failed", 1_000]])
  })

  test("a short timeout started after a long one still fires on time; the long one keeps running", async () => {
    const withTimeout = (id: string, timeout: number) =>
      Job.make({ id, payload: Schema.Struct({}), timeout, retry: RetryPolicy.fixed({ attempts: 1, delay: 0 }), handler: () => Effect.sleep(60_000) })
    const long = withTimeout("t/long-timeout", 10_000)
    const short = withTimeout("t/short-timeout", 300)
    const result = await runOnTestClock([long, short], Effect.gen(function*() {
      yield* Worker.start({ settings: { ...testSettings, leaseMs: 120_000 } })
      const a = yield* Client.use((c) => c.enqueue(long, {}))
      yield* eventually(Effect.map(stateOf(a.id), (e) => e.state === "running"), "long running")
      yield* TestClock.adjust(100)
      const b = yield* Client.use((c) => c.enqueue(short, {}))
      yield* eventually(Effect.map(stateOf(b.id), (e) => e.state === "running"), "short running")
      yield* TestClock.adjust(299)
      expect((yield* stateOf(b.id)).state).toBe("running")
      yield* TestClock.adjust(1)
      yield* eventually(Effect.map(stateOf(b.id), (e) => e.state === "failed"), "short timed out")
      const longAfter = yield* stateOf(a.id)
      yield* TestClock.adjust(9_600)
      yield* eventually(Effect.map(stateOf(a.id), (e) => e.state === "failed"), "long timed out")
      return { short: yield* attemptsOf(b.id), longAfter, long: yield* attemptsOf(a.id) }
    }))
    expect(result.longAfter.state).toBe("running")
    expect(result.short.map((x) => [x.outcome, x.finishedAt])).toEqual([["failed", 400]])
    expect(result.long.map((x) => [x.outcome, x.finishedAt])).toEqual([["failed", 10_000]])
  })
})

describe("leases and cancellation", () => {
  test("a lost lease interrupts the handler and drops its outcome", async () => {
    let interrupted = false
    const long = Job.make({
      id: "t/long",
      payload: Schema.Struct({}),
      handler: () => Effect.sleep(60_000).pipe(Effect.onInterrupt(() => Effect.sync(() => (interrupted = true))))
    })
    const after = await runOnTestClock([long], Effect.gen(function*() {
      const worker = yield* Worker.start({ settings: testSettings })
      const { id } = yield* Client.use((c) => c.enqueue(long, {}))
      yield* eventually(Effect.map(stateOf(id), (e) => e.state === "running"), "running")
      // Another worker's Reaper takes the execution over, as if our lease had expired: its
      // clock reads past our lease (a recovery applies only to a lease expired at its now).
      const error = { tag: "LeaseExpired", message: "lease expired", retryable: true, pretty: "" }
      const reaperNow = (yield* stateOf(id)).leaseExpiresAt! + 1
      const applied = yield* Store.use((s) => s.executionsFinish([{ kind: "retry", id, workerId: worker.workerId, attempt: 1, runAt: 50_000, error, now: reaperNow, startedAt: 0, expired: true }]))
      expect(applied).toEqual([true])
      yield* TestClock.adjust(1_000)
      yield* eventually(Effect.sync(() => interrupted), "handler interrupted")
      yield* eventually(Effect.map(worker.pool.size, (n) => n === 0), "pool empty")
      return { e: yield* stateOf(id), attempts: yield* attemptsOf(id) }
    }))
    expect(after.e).toMatchObject({ state: "queued", attempt: 1, runAt: 50_000 })
    expect(after.attempts.map((a) => a.outcome)).toEqual(["lease_expired"])
  })

  test("a cancel request stops a running handler at the next heartbeat and records cancelled", async () => {
    const long = Job.make({ id: "t/long", payload: Schema.Struct({}), handler: () => Effect.sleep(60_000) })
    const after = await runOnTestClock([long], Effect.gen(function*() {
      yield* Worker.start({ settings: testSettings })
      const { id } = yield* Client.use((c) => c.enqueue(long, {}))
      yield* eventually(Effect.map(stateOf(id), (e) => e.state === "running"), "running")
      expect(yield* Client.use((c) => c.cancel(id))).toBe("requested")
      yield* TestClock.adjust(1_000)
      yield* eventually(Effect.map(stateOf(id), (e) => e.state === "cancelled"), "cancelled")
      return { e: yield* stateOf(id), attempts: yield* attemptsOf(id) }
    }))
    expect(after.e.error).toMatchObject({ tag: "Cancelled" })
    expect(after.attempts.map((a) => a.outcome)).toEqual(["cancelled"])
  })

  test("the Reaper recovers an expired lease as an attempt with error 'lease expired'", async () => {
    const quick = Job.make({ id: "t/quick", payload: Schema.Struct({}), retry: RetryPolicy.fixed({ attempts: 3, delay: 100 }), handler: () => Effect.void })
    const after = await runOnTestClock([quick], Effect.gen(function*() {
      // A "dead worker" claims directly through the store and never heartbeats.
      const { id } = yield* Client.use((c) => c.enqueue(quick, {}))
      yield* Store.use((s) => s.executionsClaim({ queue: "default", jobs: [quick.id], workerId: "dead", limit: 1, now: 0, leaseMs: 5_000 }))
      yield* Worker.start({ settings: testSettings })
      yield* TestClock.adjust(4_000)
      expect((yield* stateOf(id)).leaseOwner).toBe("dead")
      yield* TestClock.adjust(2_000)
      yield* eventually(Effect.map(stateOf(id), (e) => e.state === "queued" || e.state === "succeeded"), "recovered")
      yield* TestClock.adjust(1_000)
      yield* eventually(Effect.map(stateOf(id), (e) => e.state === "succeeded"), "rerun")
      return { e: yield* stateOf(id), attempts: yield* attemptsOf(id) }
    }))
    expect(after.attempts.map((a) => [a.worker, a.outcome, a.error?.message ?? null])).toEqual([
      ["dead", "lease_expired", "lease expired"],
      [expect.not.stringMatching(/^dead$/) as unknown as string, "succeeded", null]
    ])
    expect(after.e.attempt).toBe(2)
  })

  test("manual retry of a failed execution creates a new linked execution with the same payload", async () => {
    const permanent = Job.make({ id: "t/permanent", payload: Schema.Struct({ v: Schema.Number }), handler: () => Job.permanent("nope") })
    const { original, copy } = await runOnTestClock([permanent], Effect.gen(function*() {
      yield* Worker.start({ settings: testSettings })
      const { id } = yield* Client.use((c) => c.enqueue(permanent, { v: 7 }, { idempotencyKey: "order-7" }))
      yield* eventually(Effect.map(stateOf(id), (e) => e.state === "failed"), "failure")
      const retried = yield* Client.use((c) => c.retry(id))
      const running = yield* Effect.flip(Client.use((c) => c.retry(retried.id)))
      expect(running._tag).toBe("InvalidTransition")
      return { original: yield* stateOf(id), copy: yield* stateOf(retried.id) }
    }))
    expect(copy).toMatchObject({ retryOf: original.id, payload: { v: 7 }, job: "t/permanent" })
    expect(copy.idempotencyKey).not.toBe(original.idempotencyKey)
    expect(copy.idempotencyKey!.startsWith("order-7")).toBe(true)
  })
})

describe("shutdown", () => {
  const long = Job.make({ id: "t/long", payload: Schema.Struct({ ms: Schema.Number }), handler: ({ ms }) => Effect.sleep(ms) })

  const shutdownWith = (ms: number) =>
    runOnTestClock([long], Effect.gen(function*() {
      const scope = yield* Scope.make()
      yield* Scope.provide(scope)(Worker.start({ settings: { ...testSettings, graceMs: 2_000, leaseMs: 60_000, heartbeatMs: 30_000 } }))
      const { id } = yield* Client.use((c) => c.enqueue(long, { ms }))
      yield* eventually(Effect.map(stateOf(id), (e) => e.state === "running"), "running")
      const closing = yield* Effect.forkChild(Scope.close(scope, Exit.void))
      yield* TestClock.adjust(2_000)
      yield* Fiber.join(closing)
      return { e: yield* stateOf(id), attempts: yield* attemptsOf(id) }
    }))

  test("in-flight work that finishes within the grace period is recorded", async () => {
    const { e, attempts } = await shutdownWith(1_500)
    expect(e.state).toBe("succeeded")
    expect(attempts.map((a) => a.outcome)).toEqual(["succeeded"])
  })

  test("in-flight work past the grace period is released without charging an attempt", async () => {
    const { e, attempts } = await shutdownWith(60_000)
    expect(e).toMatchObject({ state: "queued", attempt: 0, leaseOwner: null })
    expect(attempts).toEqual([])
  })
})
