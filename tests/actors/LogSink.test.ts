/**
 * Handler logs are captured with their execution and attempt, persisted by the
 * LogSink, and bounded: a burst that outruns the store never blocks the handler, and
 * every line is either persisted or counted as dropped.
 */
import { describe, expect, test } from "bun:test"
import { Effect, Schema } from "effect"
import { TestClock } from "effect/testing"
import * as Job from "../../src/jobs/Job.ts"
import * as RetryPolicy from "../../src/jobs/RetryPolicy.ts"
import { Client } from "../../src/runtime/Client.ts"
import * as Worker from "../../src/runtime/Worker.ts"
import { Store } from "../../src/store/Store.ts"
import { eventually, runOnTestClock, testSettings } from "../support/runtime.ts"

const stateOf = (id: string) => Effect.map(Store.use((s) => s.executionsGet(id)), (e) => e!)

describe("handler logs", () => {
  test("Effect.log in a handler is kept per attempt, with annotations and the defect's stack", async () => {
    const chatty = Job.make({
      id: "t/chatty",
      payload: Schema.Struct({}),
      retry: RetryPolicy.fixed({ attempts: 2, delay: 10 }),
      handler: (_, ctx) =>
        Effect.gen(function*() {
          yield* Effect.log("hello", { from: ctx.attempt }).pipe(Effect.annotateLogs("customer", "c-1"))
          if (ctx.attempt === 1) yield* Effect.sync(() => {
            throw new Error("kaboom in attempt 1")
          })
          yield* Effect.logWarning("second time lucky")
        })
    })
    const logs = await runOnTestClock([chatty], Effect.gen(function*() {
      yield* Worker.start({ settings: testSettings })
      const { id } = yield* Client.use((c) => c.enqueue(chatty, {}))
      yield* eventually(Effect.map(stateOf(id), (e) => e.attempt === 1 && e.state === "queued"), "first attempt")
      yield* TestClock.adjust(10)
      yield* eventually(Effect.map(stateOf(id), (e) => e.state === "succeeded"), "success")
      yield* eventually(Effect.map(Store.use((s) => s.logsList(id)), (l) => l.lines.length >= 4), "logs written")
      return yield* Store.use((s) => s.logsList(id))
    }))
    const lines = logs.lines.map((l) => [l.attempt, l.level, l.message.split("\n")[0]])
    expect(lines).toEqual([
      [1, "Info", 'hello {"from":1}'],
      [1, "Error", expect.stringContaining("t/chatty") as unknown as string],
      [2, "Info", 'hello {"from":2}'],
      [2, "Warn", "second time lucky"]
    ])
    expect(JSON.parse(logs.lines[0]!.annotations!)).toEqual({ customer: "c-1" })
    expect(logs.lines[1]!.message).toContain("kaboom in attempt 1")
    expect(logs.lines[1]!.message).toMatch(/at .*LogSink\.test\.ts/)
    expect(logs.drops).toEqual([])
  })

  test("a burst of 100,000 lines finishes without blocking; persisted plus dropped equals 100,000", async () => {
    const burst = Job.make({
      id: "t/burst",
      payload: Schema.Struct({}),
      handler: () =>
        Effect.gen(function*() {
          for (let i = 0; i < 100_000; i++) yield* Effect.log(`line ${i}`)
          return "done"
        })
    })
    const { lines, drops, state } = await runOnTestClock([burst], Effect.gen(function*() {
      yield* Worker.start({ settings: { ...testSettings, logCapacity: 1_000 } })
      const { id } = yield* Client.use((c) => c.enqueue(burst, {}))
      yield* eventually(Effect.map(stateOf(id), (e) => e.state === "succeeded"), "success", 100_000)
      const count = () => Effect.map(Store.use((s) => s.logsList(id)), (l) => l.lines.length + l.drops.reduce((n, d) => n + d.dropped, 0))
      yield* eventually(Effect.map(count(), (n) => n === 100_000), "every line accounted for", 100_000)
      const l = yield* Store.use((s) => s.logsList(id))
      return { lines: l.lines.length, drops: l.drops, state: (yield* stateOf(id)).state }
    }), {})
    expect(state).toBe("succeeded")
    expect(lines + drops.reduce((n, d) => n + d.dropped, 0)).toBe(100_000)
    expect(drops.length).toBe(1)
    expect(drops[0]!.dropped).toBeGreaterThan(0)
  }, 60_000)
})
