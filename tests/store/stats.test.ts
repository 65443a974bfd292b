/**
 * Store conformance for the read-only figures of the dashboard and the queue gauges:
 * `executionsQueueStats` (counts by queue and state, oldest due queued execution) and
 * `executionsThroughput` (succeeded and failed per queue and time bucket).
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test"
import * as RetryPolicy from "../../src/jobs/RetryPolicy.ts"
import { drivers, withStore, type StoreFixture } from "./drivers.ts"
import { row } from "./rows.ts"


/** Inserts rows of one queue, claims `finish.length` of them at `now` and finishes each as given. */
const seed = async (f: StoreFixture, queue: string, rows: number, finish: ReadonlyArray<{ kind: "succeeded" | "failed"; at: number }>) => {
  await withStore(f, (s) => s.executionsInsert(Array.from({ length: rows }, () => row({ queue }))))
  if (finish.length === 0) return
  const claimed = await withStore(f, (s) => s.executionsClaim({ queue, jobs: ["app/job"], workerId: "w", limit: finish.length, now: 1_000, leaseMs: 60_000 }))
  await withStore(f, (s) =>
    s.executionsFinish(claimed.map((e, i) => {
      const { kind, at } = finish[i]!
      const base = { id: e.id, workerId: "w", attempt: e.attempt, now: at, startedAt: 1_000 }
      return kind === "succeeded"
        ? { ...base, kind, result: null }
        : { ...base, kind, error: { tag: "E", message: "boom", retryable: false, pretty: "" } }
    })))
}

for (const driver of drivers) {
  describe(`store stats (${driver.name})`, () => {
    let f: StoreFixture
    beforeEach(() => {
      f = driver.make()
    })
    afterEach(async () => {
      await f.dispose()
    })

    test("queue stats count every state per queue and name the oldest due queued execution", async () => {
      await seed(f, "default", 4, [{ kind: "succeeded", at: 2_000 }, { kind: "failed", at: 2_000 }])
      await withStore(f, (s) => s.executionsInsert([row({ queue: "mail", runAt: 50 }), row({ queue: "mail", runAt: 5_000 })]))
      const stats = await withStore(f, (s) => s.executionsQueueStats({ now: 1_000 }))
      expect(stats).toEqual([
        { queue: "default", counts: { queued: 2, running: 0, waiting: 0, succeeded: 1, failed: 1, cancelled: 0 }, oldestDueAt: 100 },
        { queue: "mail", counts: { queued: 2, running: 0, waiting: 0, succeeded: 0, failed: 0, cancelled: 0 }, oldestDueAt: 50 }
      ])
    })

    test("a queue with only future work has no oldest due; an empty store has no queues", async () => {
      expect(await withStore(f, (s) => s.executionsQueueStats({ now: 1_000 }))).toEqual([])
      await withStore(f, (s) => s.executionsInsert([row({ runAt: 9_000 })]))
      const [stats] = await withStore(f, (s) => s.executionsQueueStats({ now: 1_000 }))
      expect(stats?.oldestDueAt).toBeNull()
    })

    test("throughput buckets finishes by finished_at from `since`, per queue, leaving out older ones", async () => {
      await seed(f, "default", 4, [
        { kind: "succeeded", at: 10_500 },
        { kind: "succeeded", at: 10_999 },
        { kind: "failed", at: 12_000 },
        { kind: "succeeded", at: 9_999 }
      ])
      await seed(f, "mail", 1, [{ kind: "failed", at: 10_000 }])
      const buckets = await withStore(f, (s) => s.executionsThroughput({ since: 10_000, bucketMs: 1_000 }))
      expect(buckets).toEqual([
        { queue: "default", at: 10_000, succeeded: 2, failed: 0 },
        { queue: "mail", at: 10_000, succeeded: 0, failed: 1 },
        { queue: "default", at: 12_000, succeeded: 0, failed: 1 }
      ])
    })
  })
}
