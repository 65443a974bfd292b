/**
 * Outcomes never outrun the store by more than one claim batch (issue 13): a worker
 * draining a large backlog of instant handlers holds at most `concurrency + batchSize`
 * executions whose outcome is not yet stored — a crash at any moment re-runs at most
 * that many — while the claim of the next batch still overlaps the commit of the last.
 * The real worker on a real SQLite file; the pool is sampled between every fiber step.
 */
import { describe, expect, test } from "bun:test"
import { Effect, Fiber, Schema } from "effect"
import * as Job from "../../src/jobs/Job.ts"
import { Client } from "../../src/runtime/Client.ts"
import * as Worker from "../../src/runtime/Worker.ts"
import { Store } from "../../src/store/Store.ts"
import { eventually, runOnTestClock, testSettings } from "../support/runtime.ts"

const instant = Job.make({ id: "bench/instant", payload: Schema.Struct({ n: Schema.Number }), handler: () => Effect.void })

describe("unrecorded outcomes are bounded", () => {
  test("draining 20,000 instant jobs at concurrency 50, batch 100: never more than 150 in flight, and all succeed", async () => {
    const n = 20_000
    const { maxInFlight, maxRecording, succeeded } = await runOnTestClock([instant], Effect.gen(function*() {
      const client = yield* Client
      for (let i = 0; i < n; i += 1_000) {
        yield* client.enqueueMany(Array.from({ length: 1_000 }, (_, j) => ({ job: instant, payload: { n: i + j } })))
      }
      let maxInFlight = 0
      let maxRecording = 0
      const worker = yield* Worker.start({ settings: { ...testSettings, batchSize: 100 } })
      const sampler = yield* Effect.forkChild(Effect.forever(Effect.suspend(() => {
        const { running, recording } = worker.pool.counts()
        maxInFlight = Math.max(maxInFlight, running + recording)
        maxRecording = Math.max(maxRecording, recording)
        return Effect.yieldNow
      })))
      yield* eventually(Store.use((s) => Effect.map(s.executionsCount({}), (c) => c.succeeded === n)), "every execution to succeed", 5_000_000)
      yield* Fiber.interrupt(sampler)
      const counts = yield* Store.use((s) => s.executionsCount({}))
      return { maxInFlight, maxRecording, succeeded: counts.succeeded }
    }), { queues: { default: { concurrency: 50 } } })
    expect(succeeded).toBe(n)
    expect(maxInFlight).toBeLessThanOrEqual(150)
    // The overlap is kept: outcomes did wait for a commit while others ran.
    expect(maxRecording).toBeGreaterThan(0)
  }, 120_000)
})
