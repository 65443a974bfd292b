/**
 * The testing kit itself (`roster/testing`): drain waits without moving time and gives
 * up, naming what is busy, after its bound; advance stops at every retry and fire on the
 * way so each runs at its own time; fires are recorded; services reach the handlers (a
 * missing one is a type error); logs are kept with the execution; the caller's
 * TestClock is used when there is one; the Promise API works alike.
 */
import { describe, expect, test } from "bun:test"
import { Context, Effect, Layer, Schema, type Scope } from "effect"
import { TestClock } from "effect/testing"
import { Client, Job, JobSchedule, RetryPolicy } from "roster"
import { DrainTimeout, RosterTest } from "roster/testing"

const run = <A, E>(body: Effect.Effect<A, E, Scope.Scope>) => Effect.runPromise(Effect.scoped(body))

const alwaysFails = Job.make({
  id: "t/always-fails",
  payload: Schema.Struct({}),
  retry: RetryPolicy.exponential({ attempts: 4, initial: 1_000, max: 3_000, jitter: false }),
  handler: () => Effect.fail({ _tag: "Boom", message: "boom" })
})

const sleeper = Job.make({
  id: "t/sleeper",
  payload: Schema.Struct({ ms: Schema.Number }),
  handler: ({ ms }) => Effect.as(Effect.sleep(ms), "woke")
})

describe("drain", () => {
  test("runs what is due now, follow-up enqueues included, without moving the TestClock", () =>
    run(Effect.gen(function*() {
      const child = Job.make({ id: "t/child", payload: Schema.Struct({ n: Schema.Number }), handler: ({ n }) => Effect.succeed(n * 2) })
      const parent = Job.make({
        id: "t/parent",
        payload: Schema.Struct({ n: Schema.Number }),
        handler: ({ n }) => Effect.map(Client.use((c) => c.enqueue(child, { n })), (r) => r.id)
      })
      const t = yield* RosterTest.make({ jobs: [parent, child] })
      const { id } = yield* t.enqueue(parent, { n: 21 })
      yield* t.drain
      expect(yield* t.now).toBe(0)
      const childId = (yield* t.execution(id)).result as string
      expect(yield* t.execution(childId)).toMatchObject({ state: "succeeded", result: 42 })
    })))

  test("fails with DrainTimeout, naming the execution in flight, when a handler waits on the clock", () =>
    run(Effect.gen(function*() {
      const t = yield* RosterTest.make({ jobs: [sleeper], drainTimeoutMs: 200 })
      const { id } = yield* t.enqueue(sleeper, { ms: 60_000 })
      const error = yield* Effect.flip(t.drain)
      expect(error).toBeInstanceOf(DrainTimeout)
      expect(error.inFlight).toEqual([id])
      expect(error.message).toContain("in flight")
      yield* t.advance("1 minute")
      expect(yield* t.execution(id)).toMatchObject({ state: "succeeded", result: "woke", finishedAt: 60_000 })
    })))

  test("closing the runtime with a handler still running does not wait for real time: it is released", async () => {
    const started = performance.now()
    await run(Effect.gen(function*() {
      const t = yield* RosterTest.make({ jobs: [sleeper], drainTimeoutMs: 100 })
      yield* t.enqueue(sleeper, { ms: 3_600_000 })
      yield* Effect.ignore(t.drain)
    }))
    expect(performance.now() - started).toBeLessThan(5_000)
  })
})

describe("advance", () => {
  test("one long advance runs each retry at its own time: 0, 1 s, 3 s, 6 s", () =>
    run(Effect.gen(function*() {
      const t = yield* RosterTest.make({ jobs: [alwaysFails] })
      const { id } = yield* t.enqueue(alwaysFails, {})
      yield* t.advance("1 hour")
      const e = yield* t.execution(id)
      expect(e).toMatchObject({ state: "failed", attempt: 4, error: { tag: "Boom" } })
      expect(e.attempts.map((a) => [a.outcome, a.startedAt])).toEqual([["retrying", 0], ["retrying", 1_000], ["retrying", 3_000], ["failed", 6_000]])
      expect(yield* t.now).toBe(3_600_000)
    })))

  test("advanceTo never moves back, and a scheduled enqueue runs at its runAt", () =>
    run(Effect.gen(function*() {
      const noop = Job.make({ id: "t/noop", payload: Schema.Struct({}), handler: () => Effect.void })
      const t = yield* RosterTest.make({ jobs: [noop], startAt: 1_000_000 })
      const { id } = yield* t.enqueue(noop, {}, { runAt: 1_250_000 })
      yield* t.advanceTo(500)
      expect(yield* t.now).toBe(1_000_000)
      yield* t.advanceTo(new Date(2_000_000))
      expect(yield* t.execution(id)).toMatchObject({ state: "succeeded", startedAt: 1_250_000 })
    })))
})

describe("fires", () => {
  test("a Schedule's fires are recorded oldest first, each execution run at its due time", () =>
    run(Effect.gen(function*() {
      const noop = Job.make({ id: "t/noop", payload: Schema.Struct({}), handler: () => Effect.void })
      const everyMinute = JobSchedule.make({ id: "t/every-minute", job: noop, payload: {}, every: "1 minute" })
      const t = yield* RosterTest.make({ jobs: [noop], schedules: [everyMinute] })
      yield* t.advance("5 minutes")
      const fires = yield* t.fires(everyMinute.id)
      expect(fires.map((f) => [f.dueAt, f.outcome])).toEqual([60_000, 120_000, 180_000, 240_000, 300_000].map((at) => [at, "enqueued"]))
      for (const f of fires) expect(yield* t.execution(f.executionId!)).toMatchObject({ state: "succeeded", startedAt: f.dueAt })
    })))
})

class Greeter extends Context.Service<Greeter, { readonly greet: (name: string) => string }>()("test/Greeter") {}

const greet = Job.make({
  id: "t/greet",
  payload: Schema.Struct({ name: Schema.String }),
  handler: ({ name }) =>
    Effect.gen(function*() {
      const greeter = yield* Greeter
      yield* Effect.log(`greeting ${name}`)
      return greeter.greet(name)
    })
})

describe("services and logs", () => {
  test("the services Layer reaches the handler; its log lines are kept with the execution", () =>
    run(Effect.gen(function*() {
      const t = yield* RosterTest.make({ jobs: [greet], services: Layer.succeed(Greeter, { greet: (n) => `hello ${n}` }) })
      const { id } = yield* t.enqueue(greet, { name: "ada" })
      yield* t.drain
      const e = yield* t.execution(id)
      expect(e).toMatchObject({ state: "succeeded", result: "hello ada" })
      expect(e.logs).toEqual([{ attempt: 1, at: 0, level: "Info", message: "greeting ada" }])
      expect(yield* t.run(Greeter.use((g) => Effect.succeed(g.greet("run"))))).toBe("hello run")
    })))

  test("a Job whose service is not provided does not type-check", () => {
    const missing = () =>
      // @ts-expect-error Greeter is required by t/greet and not provided
      RosterTest.make({ jobs: [greet] })
    const wrong = () =>
      // @ts-expect-error a Layer of another service does not satisfy t/greet
      RosterTest.make({ jobs: [greet], services: Layer.succeed(Client, {} as Client["Service"]) })
    expect([typeof missing, typeof wrong]).toEqual(["function", "function"])
  })
})

describe("the caller's TestClock and the Promise API", () => {
  test("with TestClock.layer() provided, TestClock.adjust from the test drives the runtime", () =>
    Effect.gen(function*() {
      const t = yield* RosterTest.make({ jobs: [sleeper] })
      const { id } = yield* t.enqueue(sleeper, { ms: 5_000 })
      yield* TestClock.adjust("5 seconds")
      yield* t.drain
      expect(yield* t.execution(id)).toMatchObject({ state: "succeeded", finishedAt: 5_000 })
    }).pipe(Effect.scoped, Effect.provide(TestClock.layer()), Effect.runPromise))

  test("RosterTest.open: the same runtime with Promises", async () => {
    const t = await RosterTest.open({ jobs: [alwaysFails] })
    try {
      const { id } = await t.enqueue(alwaysFails, {})
      await t.drain()
      expect((await t.execution(id)).attempt).toBe(1)
      await t.advance("10 seconds")
      expect(await t.execution(id)).toMatchObject({ state: "failed", attempt: 4 })
      expect(await t.now()).toBe(10_000)
    } finally {
      await t.close()
    }
  })

  test("open rejects with the typed error for a bad definition", async () => {
    const wrongQueue = Job.make({ id: "t/wrong-queue", queue: "nowhere", payload: Schema.Struct({}), handler: () => Effect.void })
    await expect(RosterTest.open({ jobs: [wrongQueue] })).rejects.toMatchObject({ _tag: "InvalidDefinition" })
  })
})

