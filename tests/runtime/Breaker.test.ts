/**
 * A store failure no restart can fix stops the process's actors instead of restarting
 * them forever (src/runtime/Breaker.ts): the scheduler's `broken` fails with the
 * corrupt-database StoreError its actor met, so `roster scheduler` / `roster dev` exit
 * 1; a failure a restart can fix (a full disk) is retried and `broken` stays pending.
 * In process, on the TestClock, against a real SQLite file whose ScheduleStore is
 * decorated to fail after the start-up upsert.
 */
import { describe, expect, test } from "bun:test"
import { Effect, Exit, Fiber, Scope } from "effect"
import { TestClock } from "effect/testing"
import * as SchedulerRuntime from "../../src/runtime/SchedulerRuntime.ts"
import { ScheduleStore } from "../../src/store/ScheduleStore.ts"
import { StoreError, type StoreErrorReason } from "../../src/store/Store.ts"
import { eventually, runOnTestClock } from "../support/runtime.ts"

/** The ScheduleStore with every operation but the start-up upsert failing with `reason`; counts the failures. */
const failing = (store: ScheduleStore["Service"], reason: StoreErrorReason, failures: { n: number }): ScheduleStore["Service"] =>
  new Proxy(store, {
    get: (target, key) => {
      const real = Reflect.get(target, key)
      if (key === "schedulesUpsert" || typeof real !== "function") return real
      return () =>
        Effect.suspend(() => {
          failures.n++
          return Effect.fail(new StoreError({ message: `${String(key)}: simulated ${reason}`, reason }))
        })
    }
  })

/** Starts the scheduler over the failing store; returns whether `broken` failed, and how often the store failed. */
const run = (reason: StoreErrorReason) =>
  runOnTestClock([], Effect.gen(function*() {
    const failures = { n: 0 }
    const store = yield* ScheduleStore
    const scope = yield* Scope.make()
    const scheduler = yield* Scope.provide(scope)(
      SchedulerRuntime.start({ owner: "t", pollMs: 1_000 }).pipe(Effect.provideService(ScheduleStore, failing(store, reason, failures)))
    )
    const broken = yield* Effect.forkChild(Effect.exit(scheduler.broken))
    yield* eventually(Effect.sync(() => failures.n > 0), "the first failure")
    // Let supervision back off and restart a few times (100 ms, 200 ms, 400 ms, ...).
    for (let i = 0; i < 5; i++) {
      yield* TestClock.adjust(2_000)
      yield* Effect.yieldNow
    }
    // Give the waiting fiber turns to observe `broken` (a pending one stays pending).
    for (let i = 0; i < 100 && broken.pollUnsafe() === undefined; i++) yield* Effect.yieldNow
    const exit = broken.pollUnsafe()
    yield* Scope.close(scope, Exit.void)
    return { exit, failures: failures.n }
  }) as Effect.Effect<{ exit: Exit.Exit<Exit.Exit<never, unknown>> | undefined; failures: number }, never, never>)

describe("the breaker", () => {
  test("a corrupt database stops the scheduler: broken fails with the StoreError, no restart", async () => {
    const { exit, failures } = await run("corrupt")
    expect(exit !== undefined && Exit.isSuccess(exit)).toBe(true)
    const inner = (exit as Exit.Success<Exit.Exit<never, unknown>>).value
    expect(Exit.isFailure(inner)).toBe(true)
    expect(String(Exit.isFailure(inner) ? inner.cause : "")).toContain("simulated corrupt")
    expect(failures).toBe(1)
  })

  test("a full disk is retried under supervision: broken stays pending", async () => {
    const { exit, failures } = await run("disk-full")
    expect(exit).toBeUndefined()
    expect(failures).toBeGreaterThan(2)
  })
})
