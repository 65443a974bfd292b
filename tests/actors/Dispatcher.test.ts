/**
 * The Dispatcher's sleep on the TestClock, against a real SQLite file: a wake-up that
 * is due now and one due later, arriving together, must both count — the later one is
 * claimed at its due time, not at the next poll.
 */
import { describe, expect, test } from "bun:test"
import { Effect, Schema } from "effect"
import { TestClock } from "effect/testing"
import * as Job from "../../src/jobs/Job.ts"
import { Core } from "../../src/runtime/Core.ts"
import { prepare } from "../../src/runtime/Enqueue.ts"
import * as Worker from "../../src/runtime/Worker.ts"
import { Store } from "../../src/store/Store.ts"
import { eventually, runOnTestClock, testSettings } from "../support/runtime.ts"

const noop = Job.make({ id: "t/noop", payload: Schema.Struct({}), handler: () => Effect.void })

describe("Dispatcher wake-ups", () => {
  test("a due-now wake-up does not drop a later due time woken in the same batch", async () => {
    const startedAt = await runOnTestClock([noop], Effect.gen(function*() {
      yield* Worker.start({ settings: { ...testSettings, pollMs: 60_000 } })
      const store = yield* Store
      const core = yield* Core
      // Written without a wake-up, as another process would; due in 500 ms.
      const row = yield* prepare(noop, {}, { runAt: 500 }, 0, 1 << 20)
      const { id } = (yield* store.executionsInsert([row]))[0]!
      // Two wake-ups in one mailbox batch: something due now and this execution.
      yield* Effect.sync(() => {
        core.bus.notify("default", 0)
        core.bus.notify("default", 500)
      })
      for (let i = 0; i < 50; i++) yield* Effect.yieldNow
      expect((yield* store.executionsGet(id))!.state).toBe("queued")
      yield* TestClock.adjust(500)
      yield* eventually(Effect.map(store.executionsGet(id), (e) => e!.state === "succeeded"), "the execution due at 500 ms")
      return (yield* store.executionsGet(id))!.startedAt
    }))
    expect(startedAt).toBe(500)
  })
})
