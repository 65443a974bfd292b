/**
 * Cross-process wake-ups (`watchChanges`) on every driver: another connection's commit
 * reaches the watcher. On PostgreSQL the change names its queue and due time, a store
 * does not wake itself for its own inserts, and a lost LISTEN connection (or every
 * pooled connection) is replaced without anyone restarting anything.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test"
import { Effect, Fiber } from "effect"
import * as RetryPolicy from "../../src/jobs/RetryPolicy.ts"
import { Store, type StoreChange } from "../../src/store/Store.ts"
import { waitFor } from "../support/processes.ts"
import { drivers, pgAdmin, pgQuery, watching, withStore, type StoreFixture } from "./drivers.ts"
import { claimOf, row } from "./rows.ts"


/** Starts watching on `f`; returns what it saw so far and a stop. */
const watch = async (f: StoreFixture) => {
  const seen: Array<StoreChange> = []
  const fiber = await f.run(Effect.forkDetach(Store.use((s) => s.watchChanges({ pollMs: 5, onChange: (c) => seen.push(c) }))))
  return { seen, stop: () => f.run(Fiber.interrupt(fiber)) }
}

for (const driver of drivers) {
  describe(`wake-ups (${driver.name})`, () => {
    let f: StoreFixture
    let g: StoreFixture
    beforeEach(async () => {
      f = driver.make()
      await withStore(f, (s) => s.migrate)
      g = f.second()
    })
    afterEach(async () => {
      await g.dispose()
      await f.dispose()
    })

    test("another connection's enqueue reaches the watcher", async () => {
      const w = await watch(f)
      try {
        await watching(w.seen)
        w.seen.length = 0
        await withStore(g, (s) => s.executionsInsert([row({ queue: "mail", runAt: 4_242 })]))
        const change = await waitFor("a change", () => w.seen.find((c) => c.queue === "mail" || c.queue === null), { timeoutMs: 5_000 })
        if (driver.name === "postgres") expect(change).toEqual({ queue: "mail", dueAt: 4_242 })
      } finally {
        await w.stop()
      }
    })

    if (driver.name === "postgres") {
      test("a store does not wake itself for its own enqueues (its Recorder already did)", async () => {
        const w = await watch(f)
        try {
          await watching(w.seen)
          await withStore(f, (s) => s.executionsInsert([row({ queue: "own" })]))
          await withStore(g, (s) => s.executionsInsert([row({ queue: "other" })]))
          await waitFor("the other store's wake-up", () => w.seen.some((c) => c.queue === "other"), { timeoutMs: 5_000 })
          expect(w.seen.some((c) => c.queue === "own")).toBe(false)
        } finally {
          await w.stop()
        }
      })

      test("a retry or a release from another process wakes the queue it returns to", async () => {
        await withStore(g, (s) => s.executionsInsert([row({ queue: "q1" }), row({ queue: "q2" })]))
        const [a] = await withStore(g, (s) => s.executionsClaim({ queue: "q1", jobs: ["app/job"], workerId: "w", limit: 1, now: 1_000, leaseMs: 30_000 }))
        const [b] = await withStore(g, (s) => s.executionsClaim({ queue: "q2", jobs: ["app/job"], workerId: "w", limit: 1, now: 1_000, leaseMs: 30_000 }))
        const w = await watch(f)
        try {
          await watching(w.seen)
          const error = { tag: "E", message: "e", retryable: true, pretty: "" }
          await withStore(g, (s) => s.executionsFinish([
            { kind: "retry", id: a!.id, workerId: "w", attempt: 1, runAt: 7_000, error, now: 1_500, startedAt: 1_000 },
            { kind: "released", id: b!.id, workerId: "w", attempt: 1, now: 1_500 }
          ]))
          await waitFor("both wake-ups", () => w.seen.some((c) => c.queue === "q1") && w.seen.some((c) => c.queue === "q2"), { timeoutMs: 5_000 })
          expect(w.seen.find((c) => c.queue === "q1")).toEqual({ queue: "q1", dueAt: 7_000 })
        } finally {
          await w.stop()
        }
      })

      test("a killed LISTEN connection is replaced by itself and wake-ups resume", async () => {
        const w = await watch(f)
        try {
          await watching(w.seen)
          const location = f.location as Extract<StoreFixture["location"], { driver: "postgres" }>
          await pgAdmin(location.url, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'LISTEN %' AND application_name = 'roster/${location.schema}' AND pid <> pg_backend_pid()`)
          // The reconnect reports an unspecified change (anything sent meanwhile was lost with the connection).
          await waitFor("the reconnect", () => w.seen.filter((c) => c.queue === null).length >= 2, { timeoutMs: 10_000 })
          await withStore(g, (s) => s.executionsInsert([row({ queue: "after" })]))
          await waitFor("a wake-up after the reconnect", () => w.seen.some((c) => c.queue === "after"), { timeoutMs: 5_000 })
        } finally {
          await w.stop()
        }
      })

      test("store operations carry on after every pooled connection is terminated", async () => {
        await withStore(f, (s) => s.executionsInsert([row(), row(), row()]))
        // A claim and a success first, so the native pools of the hot path hold open connections too.
        const succeed = (id: string) => ({ kind: "succeeded" as const, id, workerId: "w1", attempt: 1, result: "1", now: 1_100, startedAt: 1_000 })
        const [first] = await withStore(f, (s) => s.executionsClaim(claimOf({ limit: 1 })))
        expect(await withStore(f, (s) => s.executionsFinish([succeed(first!.id)]))).toEqual([true])
        const location = f.location as Extract<StoreFixture["location"], { driver: "postgres" }>
        const [killed] = await pgQuery(location.url, `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE application_name = 'roster/${location.schema}' AND pid <> pg_backend_pid()`)
        expect((killed as { n: number }).n).toBeGreaterThanOrEqual(3)
        expect((await withStore(f, (s) => s.executionsCount({}))).queued).toBe(2)
        await withStore(f, (s) => s.executionsInsert([row()]))
        expect((await withStore(f, (s) => s.executionsCount({}))).queued).toBe(3)
        const claimed = await withStore(f, (s) => s.executionsClaim(claimOf({ limit: 3 })))
        expect(claimed.length).toBe(3)
        expect(await withStore(f, (s) => s.executionsFinish(claimed.map((e) => succeed(e.id))))).toEqual([true, true, true])
        expect(await withStore(f, (s) => s.executionsCount({}))).toMatchObject({ queued: 0, running: 0, succeeded: 4 })
      })
    }
  })
}
