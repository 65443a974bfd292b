/**
 * supervise(): a crashed actor is restarted with a growing backoff, counted and
 * logged; an interrupt stops it; a normal return ends it.
 */
import { describe, expect, test } from "bun:test"
import { Cause, Effect, Fiber, Layer, Option, References } from "effect"
import { TestClock } from "effect/testing"
import { supervise } from "../../src/actors/supervise.ts"

const run = <A, E>(effect: Effect.Effect<A, E>) =>
  Effect.runPromise(Effect.provide(effect, Layer.merge(TestClock.layer(), Layer.succeed(References.MinimumLogLevel, "None"))))

describe("supervise", () => {
  test("a crashed actor is restarted after 100 ms, then 200 ms, and keeps working", async () => {
    const result = await run(Effect.gen(function*() {
      let runs = 0
      const restarts: Array<number> = []
      const actor = Effect.suspend(() => {
        runs++
        return runs <= 2 ? Effect.die(new Error(`crash ${runs}`)) : Effect.void
      })
      const fiber = yield* Effect.forkChild(supervise("Flaky", actor, { onRestart: (n) => restarts.push(n) }))
      yield* Effect.yieldNow
      const afterCrash = runs
      yield* TestClock.adjust(99)
      const before100 = runs
      yield* TestClock.adjust(1)
      const at100 = runs
      yield* TestClock.adjust(199)
      const before300 = runs
      yield* TestClock.adjust(1)
      yield* Fiber.join(fiber)
      return { afterCrash, before100, at100, before300, runs, restarts }
    }))
    expect(result).toEqual({ afterCrash: 1, before100: 1, at100: 2, before300: 2, runs: 3, restarts: [1, 2] })
  })

  test("a failing actor (typed error) is restarted like a defect", async () => {
    const runs = await run(Effect.gen(function*() {
      let n = 0
      const fiber = yield* Effect.forkChild(supervise("Failing", Effect.suspend(() => (++n === 1 ? Effect.fail("oops") : Effect.void))))
      yield* TestClock.adjust(100)
      yield* Fiber.join(fiber)
      return n
    }))
    expect(runs).toBe(2)
  })

  test("a failure the owner marks fatal stops the actor, unrestarted, failing with it", async () => {
    const result = await run(Effect.gen(function*() {
      let runs = 0
      const restarts: Array<number> = []
      const actor = Effect.suspend(() => (++runs === 1 ? Effect.fail("transient") : Effect.fail("corrupt")))
      const errorOf = (c: Cause.Cause<unknown>) => Option.getOrUndefined(Cause.findErrorOption(c))
      const fiber = yield* Effect.forkChild(supervise("Doomed", actor, { fatal: (c) => errorOf(c) === "corrupt", onRestart: (n) => restarts.push(n) }))
      yield* TestClock.adjust(1_000)
      const exit = yield* Fiber.await(fiber)
      return { runs, restarts, failedWith: exit._tag === "Failure" ? errorOf(exit.cause) : undefined }
    }))
    expect(result).toEqual({ runs: 2, restarts: [1], failedWith: "corrupt" })
  })

  test("an interrupt stops the actor without a restart", async () => {
    const restarts = await run(Effect.gen(function*() {
      const seen: Array<number> = []
      const fiber = yield* Effect.forkChild(supervise("Forever", Effect.never, { onRestart: (n) => seen.push(n) }))
      yield* Effect.yieldNow
      yield* Fiber.interrupt(fiber)
      return seen
    }))
    expect(restarts).toEqual([])
  })
})

describe("supervise backoff after a healthy period", () => {
  test("a crash after a run that stayed up 60 s restarts after 100 ms again, not the grown backoff", async () => {
    const restarts = await run(Effect.gen(function*() {
      let runs = 0
      const seen: Array<number> = []
      // Runs 1–4 crash at once (backoff 100, 200, 400, 800 ms); run 5 stays up 60 s, then crashes; run 6 ends.
      const actor = Effect.suspend(() => {
        runs++
        if (runs <= 4) return Effect.die(new Error(`crash ${runs}`))
        if (runs === 5) return Effect.andThen(Effect.sleep(60_000), Effect.die(new Error("crash after a healthy minute")))
        return Effect.void
      })
      const fiber = yield* Effect.forkChild(supervise("Rare", actor, { onRestart: (n) => seen.push(n) }))
      yield* TestClock.adjust(100 + 200 + 400 + 800)
      const beforeHealthy = runs
      yield* TestClock.adjust(60_000)
      const crashedAgain = runs
      yield* TestClock.adjust(100)
      const after100 = runs
      yield* TestClock.adjust(10_000)
      yield* Fiber.join(fiber)
      return { beforeHealthy, crashedAgain, after100, seen }
    }))
    expect(restarts).toEqual({ beforeHealthy: 5, crashedAgain: 5, after100: 6, seen: [1, 2, 3, 4, 1] })
  })
})
