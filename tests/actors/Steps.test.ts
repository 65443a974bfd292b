/**
 * Durable steps: a completed step is not run again on a later attempt; a step name
 * used twice in one attempt is a defect; and — as a property over random crash points —
 * a multi-step handler whose side effects use `ctx.stepKey` applies every step exactly
 * once and succeeds.
 */
import { Database } from "bun:sqlite"
import { describe, expect, test } from "bun:test"
import { Effect, Schema } from "effect"
import { TestClock } from "effect/testing"
import fc from "fast-check"
import * as Job from "../../src/jobs/Job.ts"
import * as RetryPolicy from "../../src/jobs/RetryPolicy.ts"
import { Client } from "../../src/runtime/Client.ts"
import * as Worker from "../../src/runtime/Worker.ts"
import { Store } from "../../src/store/Store.ts"
import { eventually, runOnTestClock, testSettings } from "../support/runtime.ts"

const stateOf = (id: string) => Effect.map(Store.use((s) => s.executionsGet(id)), (e) => e!)

describe("durable steps", () => {
  test("a retry returns stored step results instead of running the steps again", async () => {
    const runs = { a: 0, b: 0, c: 0 }
    let attemptSeen = 0
    const threeSteps = Job.make({
      id: "t/three-steps",
      payload: Schema.Struct({}),
      retry: RetryPolicy.fixed({ attempts: 3, delay: 100 }),
      handler: (_, ctx) =>
        Effect.gen(function*() {
          attemptSeen = ctx.attempt
          const a = yield* ctx.step("a", Effect.sync(() => ++runs.a))
          const b = yield* ctx.step("b", Effect.sync(() => ({ at: new Date(++runs.b * 1000) })), { schema: Schema.Struct({ at: Schema.Date }) })
          if (ctx.attempt === 1) return yield* Effect.fail({ _tag: "Flaky", message: "after step b" })
          const c = yield* ctx.step("c", () => Promise.resolve(++runs.c))
          return { a, b: b.at.toISOString(), c }
        })
    })
    const e = await runOnTestClock([threeSteps], Effect.gen(function*() {
      yield* Worker.start({ settings: testSettings })
      const { id } = yield* Client.use((c) => c.enqueue(threeSteps, {}))
      yield* eventually(Effect.map(stateOf(id), (e) => e.state === "queued" && e.attempt === 1), "first attempt failed")
      yield* TestClock.adjust(100)
      yield* eventually(Effect.map(stateOf(id), (e) => e.state === "succeeded"), "success")
      return yield* Client.use((c) => c.get(id))
    }))
    expect(runs).toEqual({ a: 1, b: 1, c: 1 })
    expect(attemptSeen).toBe(2)
    expect(e!.result).toEqual({ a: 1, b: "1970-01-01T00:00:01.000Z", c: 1 })
    expect(e!.steps.map((s) => [s.name, s.attempt, JSON.parse(s.output)])).toEqual([
      ["a", 1, 1],
      ["b", 1, { at: "1970-01-01T00:00:01.000Z" }],
      ["c", 2, 1]
    ])
  })

  test("a step name used twice in one attempt is a defect with a clear message", async () => {
    const twice = Job.make({
      id: "t/twice",
      payload: Schema.Struct({}),
      retry: RetryPolicy.none,
      handler: (_, ctx) => Effect.andThen(ctx.step("x", Effect.succeed(1)), ctx.step("x", Effect.succeed(2)))
    })
    const e = await runOnTestClock([twice], Effect.gen(function*() {
      yield* Worker.start({ settings: testSettings })
      const { id } = yield* Client.use((c) => c.enqueue(twice, {}))
      yield* eventually(Effect.map(stateOf(id), (e) => e.state === "failed"), "failure")
      return yield* stateOf(id)
    }))
    expect(e.error).toMatchObject({ tag: "Defect" })
    expect(e.error!.message).toContain('step "x" was used twice')
  })

  test("stepKey is stable across attempts: execution id and step name", async () => {
    const keys: Array<string> = []
    const keyed = Job.make({
      id: "t/keyed",
      payload: Schema.Struct({}),
      retry: RetryPolicy.fixed({ attempts: 2, delay: 10 }),
      handler: (_, ctx) => Effect.sync(() => keys.push(ctx.stepKey("charge"))).pipe(Effect.andThen(ctx.attempt === 1 ? Effect.fail("again") : Effect.void))
    })
    const id = await runOnTestClock([keyed], Effect.gen(function*() {
      yield* Worker.start({ settings: testSettings })
      const { id } = yield* Client.use((c) => c.enqueue(keyed, {}))
      yield* eventually(Effect.map(stateOf(id), (e) => e.attempt === 1 && e.state === "queued"), "retry")
      yield* TestClock.adjust(10)
      yield* eventually(Effect.map(stateOf(id), (e) => e.state === "succeeded"), "success")
      return id
    }))
    expect(keys).toEqual([`${id}:charge`, `${id}:charge`])
  })
})

type CrashPoint = "before" | "after-effect" | "after-step"

describe("steps under random crash points (property)", () => {
  test("every step is applied exactly once and the execution succeeds", async () => {
    const stepNames = ["reserve", "charge", "ship", "notify"] as const
    // For each attempt that crashes: which step and where.
    const crash = fc.record({ step: fc.integer({ min: 0, max: stepNames.length - 1 }), at: fc.constantFrom<CrashPoint>("before", "after-effect", "after-step") })
    await fc.assert(
      fc.asyncProperty(fc.array(crash, { maxLength: 5 }), async (plan) => {
        let side: Database | undefined
        const makeJobs = (dbPath: string) => {
          // The side table lives in the same database, written through its own connection
          // with INSERT OR IGNORE on the step key: the provider-side idempotency the docs ask for.
          side = new Database(dbPath)
          side.run("PRAGMA busy_timeout = 5000")
          side.run("CREATE TABLE IF NOT EXISTS effects (key TEXT PRIMARY KEY, step TEXT NOT NULL, applied INTEGER NOT NULL)")
          const apply = side.query("INSERT OR IGNORE INTO effects (key, step, applied) VALUES (?, ?, 1)")
          return [Job.make({
            id: "t/saga",
            payload: Schema.Struct({}),
            retry: RetryPolicy.fixed({ attempts: plan.length + 1, delay: 1 }),
            handler: (_, ctx) =>
              Effect.gen(function*() {
                const here = plan[ctx.attempt - 1]
                for (const [i, name] of stepNames.entries()) {
                  if (here?.step === i && here.at === "before") return yield* Effect.die(new Error(`crash before ${name}`))
                  yield* ctx.step(name, Effect.sync(() => {
                    apply.run(ctx.stepKey(name), name)
                    if (here?.step === i && here.at === "after-effect") throw new Error(`crash inside ${name}`)
                    return name
                  }))
                  if (here?.step === i && here.at === "after-step") return yield* Effect.die(new Error(`crash after ${name}`))
                }
                return "done"
              })
          })]
        }
        const result = await runOnTestClock(makeJobs, Effect.gen(function*() {
          const side_ = side!
          yield* Worker.start({ settings: testSettings })
          const { id } = yield* Client.use((c) => c.enqueue("t/saga", {}))
          for (let i = 0; i <= plan.length; i++) {
            yield* eventually(Effect.map(stateOf(id), (e) => e.state !== "running" && (e.state !== "queued" || e.attempt > i)), `attempt ${i + 1}`)
            yield* TestClock.adjust(1)
          }
          yield* eventually(Effect.map(stateOf(id), (e) => e.state === "succeeded"), "success")
          const effects = side_.query("SELECT step, COUNT(*) AS n FROM effects GROUP BY step ORDER BY step").all() as Array<{ step: string; n: number }>
          const steps = yield* Store.use((s) => s.stepsList(id))
          side_.close()
          return { state: (yield* stateOf(id)).state, effects, steps: steps.map((s) => s.name).sort() }
        }))
        expect(result.state).toBe("succeeded")
        expect(result.effects).toEqual([...stepNames].sort().map((step) => ({ step, n: 1 })))
        expect(result.steps).toEqual([...stepNames].sort())
      }),
      { numRuns: 40 }
    )
  }, 60_000)
})
