/**
 * Permits (the Dispatcher's per-queue semaphore): takes and waits in FIFO order, a
 * plain release wakes the waiters it satisfies, a waiter interrupted while waiting
 * takes nothing, and takeIfAvailable never jumps the line.
 */
import { describe, expect, test } from "bun:test"
import { Effect, Fiber } from "effect"
import * as Permits from "../../src/actors/Permits.ts"

describe("Permits", () => {
  test("take succeeds at once while permits are free, then waits for a release", async () => {
    const order = await Effect.runPromise(Effect.gen(function*() {
      const permits = Permits.make(2)
      const order: Array<string> = []
      yield* permits.take(2)
      order.push(`took 2, free ${permits.free()}`)
      const waiter = yield* Effect.forkChild(Effect.andThen(permits.take(1), Effect.sync(() => order.push("waiter took 1"))))
      yield* Effect.yieldNow
      order.push(`waiting, free ${permits.free()}`)
      permits.release(1)
      yield* Fiber.join(waiter)
      order.push(`free ${permits.free()}`)
      return order
    }))
    expect(order).toEqual(["took 2, free 0", "waiting, free 0", "waiter took 1", "free 0"])
  })

  test("waiters are served in order; takeIfAvailable does not overtake them", async () => {
    const result = await Effect.runPromise(Effect.gen(function*() {
      const permits = Permits.make(1)
      const served: Array<string> = []
      yield* permits.take(1)
      const big = yield* Effect.forkChild(Effect.andThen(permits.take(2), Effect.sync(() => served.push("big"))))
      yield* Effect.yieldNow
      const small = yield* Effect.forkChild(Effect.andThen(permits.take(1), Effect.sync(() => served.push("small"))))
      yield* Effect.yieldNow
      permits.release(1) // 1 free: the first waiter needs 2, so no one is served and nothing is taken
      const overtook = permits.takeIfAvailable(1)
      yield* Effect.yieldNow
      const beforeSecond = [...served]
      permits.release(1) // 2 free: big, then small waits again
      yield* Fiber.join(big)
      const afterSecond = [...served]
      permits.release(2)
      yield* Fiber.join(small)
      return { overtook, beforeSecond, afterSecond, served, free: permits.free() }
    }))
    expect(result.overtook).toBe(false)
    expect(result.beforeSecond).toEqual([])
    expect(result.afterSecond).toEqual(["big"])
    expect(result.served).toEqual(["big", "small"])
    expect(result.free).toBe(1)
  })

  test("a waiter interrupted while waiting takes nothing and leaves the line", async () => {
    const result = await Effect.runPromise(Effect.gen(function*() {
      const permits = Permits.make(1)
      yield* permits.take(1)
      const first = yield* Effect.forkChild(permits.take(1))
      yield* Effect.yieldNow
      const second = yield* Effect.forkChild(permits.take(1))
      yield* Effect.yieldNow
      yield* Fiber.interrupt(first)
      permits.release(1)
      yield* Fiber.join(second)
      const afterSecond = permits.free()
      permits.release(1)
      return { afterSecond, free: permits.free(), available: permits.takeIfAvailable(1) }
    }))
    expect(result).toEqual({ afterSecond: 0, free: 1, available: true })
  })
})
