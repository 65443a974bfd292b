/**
 * Store conformance: every transition of DESIGN §2 on every driver, asserted on what
 * the store returns and keeps. Times are plain numbers, so no clock is needed.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test"
import { Effect } from "effect"
import * as RetryPolicy from "../../src/jobs/RetryPolicy.ts"
import type { Outcome } from "../../src/store/Store.ts"
import { drivers, withStore, type StoreFixture } from "./drivers.ts"
import { claimOf, row } from "./rows.ts"


const claim = claimOf

for (const driver of drivers) {
  describe(`store conformance (${driver.name})`, () => {
    let f: StoreFixture
    beforeEach(() => {
      f = driver.make()
    })
    afterEach(async () => {
      await f.dispose()
    })

    describe("enqueue", () => {
      test("an inserted execution is queued with attempt 0 and the snapshotted policy", async () => {
        const r = row({ idempotencyKey: "k1" })
        const [res] = await withStore(f, (s) => s.executionsInsert([r]))
        expect(res).toEqual({ id: r.id, inserted: true })
        const e = await withStore(f, (s) => s.executionsGet(r.id))
        expect(e).toMatchObject({ state: "queued", attempt: 0, maxAttempts: 3, job: "app/job", idempotencyKey: "k1", payload: JSON.parse(r.payload) })
        expect(e!.retry).toEqual(r.retry)
      })

      test("the enqueue's trace context is kept on every insert path and comes back on claim", async () => {
        const tp = (n: number) => `00-${"4bf92f3577b34da6a3ce929d0e0e473" + n}-00f067aa0ba902b7-01`
        // A keyed row, a batch of keyless rows (the bulk path) and a row without one.
        const rows = [row({ idempotencyKey: "traced", traceContext: tp(1) }), ...[2, 3, 4].map((n) => row({ traceContext: tp(n) })), row()]
        await withStore(f, (s) => s.executionsInsert(rows))
        for (const [i, r] of rows.entries()) {
          expect((await withStore(f, (s) => s.executionsGet(r.id)))!.traceContext).toBe(i < 4 ? tp(i + 1) : null)
        }
        const claimed = await withStore(f, (s) => s.executionsClaim(claim()))
        expect(claimed.map((e) => e.traceContext).sort()).toEqual([tp(1), tp(2), tp(3), tp(4), null].sort())
      })

      test("a bulk insert keeps every row's own values and the order given, however the rows differ", async () => {
        // Runs of alike rows (the blocks of 100 and 10), rows that differ only in due time,
        // priority or flow keys, another Job and another retry policy mid-way, keyed rows
        // between them, and stragglers: each must come back as it was given.
        const other = RetryPolicy.fixed({ attempts: 5, delay: "1.5 seconds" }).snapshot
        const rows = [
          ...Array.from({ length: 130 }, () => row({ now: 7, runAt: 7 })),
          ...Array.from({ length: 25 }, (_, i) => row({ now: 7, runAt: 7 + (i % 3), priority: i % 2, concurrencyKey: i % 4 === 0 ? `c${i}` : null, rateKey: i % 5 === 0 ? `r${i}` : null })),
          row({ now: 7, idempotencyKey: "mid" }),
          ...Array.from({ length: 12 }, () => row({ now: 7, runAt: 7, job: "app/other", retry: other })),
          ...Array.from({ length: 3 }, () => row({ now: 8, runAt: 9, scheduleId: "app/s", fireAt: 9, retryOf: "x" }))
        ]
        const results = await withStore(f, (s) => s.executionsInsert(rows))
        expect(results).toEqual(rows.map((r) => ({ id: r.id, inserted: true })))
        const stored = await withStore(f, (s) => Effect.forEach(rows, (r) => s.executionsGet(r.id)))
        for (const [i, r] of rows.entries()) {
          expect({ i, ...stored[i]! }).toMatchObject({
            i, job: r.job, queue: r.queue, priority: r.priority, runAt: r.runAt, createdAt: r.now, retry: r.retry, maxAttempts: r.retry.attempts,
            timeoutMs: r.timeoutMs, idempotencyKey: r.idempotencyKey, scheduleId: r.scheduleId ?? null, fireAt: r.fireAt ?? null,
            retryOf: r.retryOf ?? null, concurrencyKey: r.concurrencyKey ?? null, rateKey: r.rateKey ?? null, payload: JSON.parse(r.payload)
          })
        }
        // Same priority and due time: claimed in the order given.
        const claimed = await withStore(f, (s) => s.executionsClaim(claim({ limit: 200, now: 7 })))
        expect(claimed.filter((e) => e.priority === 0).slice(0, 130).map((e) => e.id)).toEqual(rows.slice(0, 130).map((r) => r.id))
      })

      test("an existing (job, key) returns the existing execution with inserted false, whatever its state", async () => {
        const first = row({ idempotencyKey: "same" })
        await withStore(f, (s) => s.executionsInsert([first]))
        await withStore(f, (s) => s.executionsClaim(claim()))
        const again = await withStore(f, (s) => s.executionsInsert([row({ idempotencyKey: "same" })]))
        expect(again).toEqual([{ id: first.id, inserted: false }])
        const other = await withStore(f, (s) => s.executionsInsert([row({ idempotencyKey: "same", job: "app/other" })]))
        expect(other[0]!.inserted).toBe(true)
      })

      test("idempotent enqueue under concurrent callers on two connections inserts once", async () => {
        const g = f.second()
        try {
          const attempts = Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? f : g))
          const results = await Promise.all(attempts.map((x) => withStore(x, (s) => s.executionsInsert([row({ idempotencyKey: "race" })]))))
          const flat = results.flat()
          expect(flat.filter((r) => r.inserted)).toHaveLength(1)
          expect(new Set(flat.map((r) => r.id)).size).toBe(1)
          const counts = await withStore(f, (s) => s.executionsCount({}))
          expect(counts.queued).toBe(1)
        } finally {
          await g.dispose()
        }
      })

      test("a batch insert commits every row in one call", async () => {
        const rows = Array.from({ length: 500 }, () => row())
        const res = await withStore(f, (s) => s.executionsInsert(rows))
        expect(res.every((r) => r.inserted)).toBe(true)
        expect((await withStore(f, (s) => s.executionsCount({}))).queued).toBe(500)
      })
    })

    describe("claim", () => {
      test("claims in priority DESC, run_at ASC order, ties in enqueue order", async () => {
        const low = row({ priority: 0, runAt: 10 })
        const highLate = row({ priority: 5, runAt: 50 })
        const highEarly = row({ priority: 5, runAt: 20 })
        const lowEarlier = row({ priority: 0, runAt: 5 })
        const tieA = row({ priority: 1, runAt: 30 })
        const tieB = row({ priority: 1, runAt: 30 })
        const tieC = row({ priority: 1, runAt: 30, idempotencyKey: "tie" })
        expect(tieA.id < tieB.id && tieB.id < tieC.id).toBe(true)
        await withStore(f, (s) => s.executionsInsert([low, tieA, highLate, tieB, highEarly, tieC, lowEarlier]))
        const order: Array<string> = []
        for (let i = 0; i < 7; i++) {
          const [e] = await withStore(f, (s) => s.executionsClaim(claim({ limit: 1 })))
          order.push(e!.id)
        }
        expect(order).toEqual([highEarly.id, highLate.id, tieA.id, tieB.id, tieC.id, lowEarlier.id, low.id])
      })

      // Ties fall to the id on both stores, whatever order the rows were stored in: SQLite's
      // rowid is made from the id (src/store/sqlite/ExecutionRowid.ts), PostgreSQL's index ends with it.
      test("ties on priority and run_at made out of order claim by id", async () => {
        const first = row({ priority: 1, runAt: 30 })
        const second = row({ priority: 1, runAt: 30 })
        const keyed = row({ priority: 1, runAt: 30, idempotencyKey: "k" })
        await withStore(f, (s) => s.executionsInsert([second, keyed, first]))
        const claimed = await withStore(f, (s) => s.executionsClaim(claim()))
        expect(claimed.map((e) => e.id)).toEqual([first.id, second.id, keyed.id])
        const one = await withStore(f, (s) => s.executionsCount({}))
        expect(one.running).toBe(3)
      })

      test("a batch claim returns executions in claim order", async () => {
        const rows = [row({ priority: 1 }), row({ priority: 3 }), row({ priority: 2 })]
        await withStore(f, (s) => s.executionsInsert(rows))
        const claimed = await withStore(f, (s) => s.executionsClaim(claim()))
        expect(claimed.map((e) => e.priority)).toEqual([3, 2, 1])
      })

      test("only Jobs the worker knows, on the queue it serves, that are due, are claimed", async () => {
        const known = row()
        const unknown = row({ job: "app/newer" })
        const otherQueue = row({ queue: "emails" })
        const future = row({ runAt: 5_000 })
        await withStore(f, (s) => s.executionsInsert([known, unknown, otherQueue, future]))
        const claimed = await withStore(f, (s) => s.executionsClaim(claim({ now: 1_000 })))
        expect(claimed.map((e) => e.id)).toEqual([known.id])
        const unknownJobs = await withStore(f, (s) => s.executionsUnknownJobs(["app/job"]))
        expect(unknownJobs).toEqual([{ job: "app/newer", count: 1 }])
      })

      test("claiming sets running, charges the attempt and writes the lease", async () => {
        const r = row()
        await withStore(f, (s) => s.executionsInsert([r]))
        const [e] = await withStore(f, (s) => s.executionsClaim(claim({ workerId: "w9", now: 1_000, leaseMs: 30_000 })))
        expect(e).toMatchObject({ id: r.id, state: "running", attempt: 1, leaseOwner: "w9", leaseExpiresAt: 31_000, startedAt: 1_000 })
      })

      test("an execution is claimed by one worker only", async () => {
        await withStore(f, (s) => s.executionsInsert(Array.from({ length: 50 }, () => row())))
        const g = f.second()
        try {
          const [a, b] = await Promise.all([
            withStore(f, (s) => s.executionsClaim(claim({ workerId: "a", limit: 30 }))),
            withStore(g, (s) => s.executionsClaim(claim({ workerId: "b", limit: 30 })))
          ])
          const ids = [...a, ...b].map((e) => e.id)
          expect(ids).toHaveLength(50)
          expect(new Set(ids).size).toBe(50)
        } finally {
          await g.dispose()
        }
      })
    })

    describe("outcomes", () => {
      const claimOne = async (workerId = "w1", now = 1_000) => {
        await withStore(f, (s) => s.executionsInsert([row()]))
        const [e] = await withStore(f, (s) => s.executionsClaim(claim({ workerId, now })))
        return e!
      }
      const finish = (o: Outcome) => withStore(f, (s) => s.executionsFinish([o]))

      test("success stores the result and an attempt row", async () => {
        const e = await claimOne()
        expect(await finish({ kind: "succeeded", id: e.id, workerId: "w1", attempt: 1, result: '{"ok":true}', now: 1_500, startedAt: 1_000 })).toEqual([true])
        const after = await withStore(f, (s) => s.executionsGet(e.id))
        expect(after).toMatchObject({ state: "succeeded", result: { ok: true }, finishedAt: 1_500, leaseExpiresAt: null, leaseOwner: "w1" })
        expect(await withStore(f, (s) => s.attemptsList(e.id))).toEqual([
          { executionId: e.id, attempt: 1, worker: "w1", startedAt: 1_000, finishedAt: 1_500, outcome: "succeeded", error: null }
        ])
      })

      test("a stale worker's outcome is dropped (fenced completion)", async () => {
        const e = await claimOne("w1")
        expect(await finish({ kind: "succeeded", id: e.id, workerId: "w2", attempt: 1, result: null, now: 1_100, startedAt: 1_000 })).toEqual([false])
        expect(await finish({ kind: "succeeded", id: e.id, workerId: "w1", attempt: 2, result: null, now: 1_100, startedAt: 1_000 })).toEqual([false])
        expect((await withStore(f, (s) => s.executionsGet(e.id)))!.state).toBe("running")
        expect(await withStore(f, (s) => s.attemptsList(e.id))).toEqual([])
      })

      test("after a lease is recovered and reclaimed, the first worker's late outcome changes nothing", async () => {
        const e = await claimOne("w1", 1_000)
        const error = { tag: "LeaseExpired", message: "lease expired", retryable: true, pretty: "" }
        const expired = await withStore(f, (s) => s.executionsExpired({ now: 40_000, limit: 10 }))
        expect(expired.map((x) => x.id)).toEqual([e.id])
        expect(await finish({ kind: "retry", id: e.id, workerId: "w1", attempt: 1, runAt: 40_000, error, now: 40_000, startedAt: 1_000, expired: true })).toEqual([true])
        const [again] = await withStore(f, (s) => s.executionsClaim(claim({ workerId: "w2", now: 40_000 })))
        expect(again).toMatchObject({ id: e.id, attempt: 2, leaseOwner: "w2" })
        expect(await finish({ kind: "succeeded", id: e.id, workerId: "w1", attempt: 1, result: null, now: 40_001, startedAt: 1_000 })).toEqual([false])
        expect(await finish({ kind: "succeeded", id: e.id, workerId: "w2", attempt: 2, result: null, now: 40_002, startedAt: 40_000 })).toEqual([true])
        const attempts = await withStore(f, (s) => s.attemptsList(e.id))
        expect(attempts.map((a) => [a.attempt, a.worker, a.outcome])).toEqual([[1, "w1", "lease_expired"], [2, "w2", "succeeded"]])
      })

      test("a retry goes back to queued with a later run_at and the last error", async () => {
        const e = await claimOne()
        const error = { tag: "Boom", message: "boom", retryable: true, pretty: "Boom: boom" }
        await finish({ kind: "retry", id: e.id, workerId: "w1", attempt: 1, runAt: 9_000, error, now: 1_200, startedAt: 1_000 })
        expect(await withStore(f, (s) => s.executionsGet(e.id))).toMatchObject({ state: "queued", attempt: 1, runAt: 9_000, error })
        expect(await withStore(f, (s) => s.executionsClaim(claim({ now: 8_999 })))).toEqual([])
        expect((await withStore(f, (s) => s.executionsClaim(claim({ now: 9_000 })))).map((x) => x.attempt)).toEqual([2])
        expect((await withStore(f, (s) => s.attemptsList(e.id))).map((a) => a.outcome)).toEqual(["retrying"])
      })

      test("a failure is final and recorded with its error", async () => {
        const e = await claimOne()
        const error = { tag: "PermanentFailure", message: "no", retryable: false, pretty: "" }
        await finish({ kind: "failed", id: e.id, workerId: "w1", attempt: 1, error, now: 1_300, startedAt: 1_000 })
        expect(await withStore(f, (s) => s.executionsGet(e.id))).toMatchObject({ state: "failed", finishedAt: 1_300, error })
        expect((await withStore(f, (s) => s.attemptsList(e.id))).map((a) => a.outcome)).toEqual(["failed"])
      })

      test("a release returns the execution to queued without charging the attempt or writing an attempt row", async () => {
        const e = await claimOne()
        expect(await finish({ kind: "released", id: e.id, workerId: "w1", attempt: 1, now: 1_100 })).toEqual([true])
        expect(await withStore(f, (s) => s.executionsGet(e.id))).toMatchObject({ state: "queued", attempt: 0, leaseOwner: null, startedAt: null })
        expect(await withStore(f, (s) => s.attemptsList(e.id))).toEqual([])
      })

      test("outcomes in one batch are applied independently", async () => {
        await withStore(f, (s) => s.executionsInsert([row(), row()]))
        const [a, b] = await withStore(f, (s) => s.executionsClaim(claim()))
        const res = await withStore(f, (s) => s.executionsFinish([
          { kind: "succeeded", id: a!.id, workerId: "w1", attempt: 1, result: null, now: 1_001, startedAt: 1_000 },
          { kind: "succeeded", id: b!.id, workerId: "someone-else", attempt: 1, result: null, now: 1_001, startedAt: 1_000 }
        ]))
        expect(res).toEqual([true, false])
      })
    })

    describe("leases", () => {
      test("a heartbeat extends every lease the worker holds and reports cancel requests", async () => {
        await withStore(f, (s) => s.executionsInsert([row(), row(), row()]))
        const mine = await withStore(f, (s) => s.executionsClaim(claim({ workerId: "w1", limit: 2 })))
        await withStore(f, (s) => s.executionsClaim(claim({ workerId: "w2", limit: 1 })))
        await withStore(f, (s) => s.executionsCancel({ id: mine[0]!.id, now: 1_500 }))
        const hb = await withStore(f, (s) => s.executionsHeartbeat({ workerId: "w1", now: 2_000, leaseMs: 30_000 }))
        expect(hb.held.map((h) => [h.id, h.cancelRequested]).sort()).toEqual(
          [[mine[0]!.id, true], [mine[1]!.id, false]].sort() as Array<[string, boolean]>
        )
        const e = await withStore(f, (s) => s.executionsGet(mine[1]!.id))
        expect(e!.leaseExpiresAt).toBe(32_000)
      })

      test("a heartbeat naming its in-flight ids extends only those; the worker's other leases run out", async () => {
        await withStore(f, (s) => s.executionsInsert([row(), row()]))
        const [kept, dropped] = await withStore(f, (s) => s.executionsClaim(claim({ workerId: "w1", limit: 2, now: 1_000, leaseMs: 1_000 })))
        const hb = await withStore(f, (s) => s.executionsHeartbeat({ workerId: "w1", now: 1_500, leaseMs: 1_000, ids: [kept!.id] }))
        expect(hb.held.map((h) => h.id)).toEqual([kept!.id])
        const expired = await withStore(f, (s) => s.executionsExpired({ now: 2_100, limit: 10 }))
        expect(expired.map((e) => e.id)).toEqual([dropped!.id])
      })

      test("only leases that expired before now are reported as expired", async () => {
        await withStore(f, (s) => s.executionsInsert([row(), row()]))
        await withStore(f, (s) => s.executionsClaim(claim({ workerId: "w1", limit: 1, now: 1_000, leaseMs: 1_000 })))
        await withStore(f, (s) => s.executionsClaim(claim({ workerId: "w2", limit: 1, now: 1_000, leaseMs: 5_000 })))
        const expired = await withStore(f, (s) => s.executionsExpired({ now: 3_000, limit: 10 }))
        expect(expired.map((e) => e.leaseOwner)).toEqual(["w1"])
      })
    })

    describe("cancel", () => {
      test("a queued execution is cancelled at once", async () => {
        const r = row()
        await withStore(f, (s) => s.executionsInsert([r]))
        expect(await withStore(f, (s) => s.executionsCancel({ id: r.id, now: 2_000 }))).toBe("cancelled")
        expect(await withStore(f, (s) => s.executionsGet(r.id))).toMatchObject({ state: "cancelled", finishedAt: 2_000 })
        expect(await withStore(f, (s) => s.executionsClaim(claim()))).toEqual([])
      })

      test("a running execution is asked to stop, then recorded as cancelled by its worker", async () => {
        const r = row()
        await withStore(f, (s) => s.executionsInsert([r]))
        await withStore(f, (s) => s.executionsClaim(claim()))
        expect(await withStore(f, (s) => s.executionsCancel({ id: r.id, now: 2_000 }))).toBe("requested")
        expect(await withStore(f, (s) => s.executionsGet(r.id))).toMatchObject({ state: "running", cancelRequested: true })
        await withStore(f, (s) => s.executionsFinish([{ kind: "cancelled", id: r.id, workerId: "w1", attempt: 1, error: null, now: 2_100, startedAt: 1_000 }]))
        expect((await withStore(f, (s) => s.executionsGet(r.id)))!.state).toBe("cancelled")
      })

      test("an execution asked to cancel never runs again: a retry, a lease expiry or a release ends it cancelled", async () => {
        const rows = [row(), row(), row()]
        await withStore(f, (s) => s.executionsInsert(rows))
        await withStore(f, (s) => s.executionsClaim(claim()))
        for (const r of rows) await withStore(f, (s) => s.executionsCancel({ id: r.id, now: 2_000 }))
        const error = { tag: "Boom", message: "boom", retryable: true, pretty: "boom" }
        const fence = (i: number) => ({ id: rows[i]!.id, workerId: "w1", attempt: 1, now: 3_000 })
        const applied = await withStore(f, (s) => s.executionsFinish([
          { ...fence(0), kind: "retry", runAt: 9_000, error, startedAt: 1_000 },
          // A Reaper's recovery applies only to a lease expired at its `now` (31_000 here).
          { ...fence(1), now: 31_001, kind: "retry", runAt: 9_000, error: { ...error, tag: "LeaseExpired" }, startedAt: 1_000, expired: true },
          { ...fence(2), kind: "released" }
        ]))
        expect(applied).toEqual([true, true, true])
        const after = await Promise.all(rows.map((r) => withStore(f, (s) => s.executionsGet(r.id))))
        expect(after.map((e) => [e!.state, e!.attempt, e!.finishedAt, e!.error?.tag ?? null])).toEqual([
          ["cancelled", 1, 3_000, "Boom"],
          ["cancelled", 1, 31_001, "LeaseExpired"],
          ["cancelled", 0, 3_000, null]
        ])
        const attempts = await Promise.all(rows.map((r) => withStore(f, (s) => s.attemptsList(r.id))))
        expect(attempts.map((a) => a.map((x) => x.outcome))).toEqual([["cancelled"], ["lease_expired"], []])
        expect(await withStore(f, (s) => s.executionsClaim(claim({ now: 10_000 })))).toEqual([])
      })

      test("a finished execution is not changed and an unknown id is reported", async () => {
        const r = row()
        await withStore(f, (s) => s.executionsInsert([r]))
        await withStore(f, (s) => s.executionsClaim(claim()))
        await withStore(f, (s) => s.executionsFinish([{ kind: "succeeded", id: r.id, workerId: "w1", attempt: 1, result: null, now: 1_100, startedAt: 1_000 }]))
        expect(await withStore(f, (s) => s.executionsCancel({ id: r.id, now: 2_000 }))).toBe("already-finished")
        expect(await withStore(f, (s) => s.executionsCancel({ id: "nope", now: 2_000 }))).toBeNull()
      })
    })

    describe("reads", () => {
      test("list filters by job, state and queue, newest first, with a limit", async () => {
        const rows = [row(), row({ job: "app/other" }), row(), row({ queue: "emails" })]
        await withStore(f, (s) => s.executionsInsert(rows))
        const all = await withStore(f, (s) => s.executionsList({}))
        expect(all.map((e) => e.id)).toEqual(rows.map((r) => r.id).reverse())
        expect((await withStore(f, (s) => s.executionsList({ job: "app/other" }))).map((e) => e.id)).toEqual([rows[1]!.id])
        expect((await withStore(f, (s) => s.executionsList({ queue: "emails" }))).map((e) => e.id)).toEqual([rows[3]!.id])
        expect(await withStore(f, (s) => s.executionsList({ limit: 2 }))).toHaveLength(2)
        expect(await withStore(f, (s) => s.executionsList({ state: "running" }))).toEqual([])
      })

      test("count reports every state", async () => {
        await withStore(f, (s) => s.executionsInsert([row(), row()]))
        await withStore(f, (s) => s.executionsClaim(claim({ limit: 1 })))
        expect(await withStore(f, (s) => s.executionsCount({}))).toEqual({ queued: 1, running: 1, waiting: 0, succeeded: 0, failed: 0, cancelled: 0 })
      })

      test("hasWork sees due queued work and expired leases, not future work", async () => {
        const queues = [{ queue: "default", jobs: ["app/job"] }]
        await withStore(f, (s) => s.executionsInsert([row({ runAt: 10_000 })]))
        expect(await withStore(f, (s) => s.executionsHasWork({ queues, now: 1_000 }))).toBe(false)
        expect(await withStore(f, (s) => s.executionsHasWork({ queues, now: 10_000 }))).toBe(true)
        await withStore(f, (s) => s.executionsClaim(claim({ now: 10_000, leaseMs: 1_000 })))
        expect(await withStore(f, (s) => s.executionsHasWork({ queues, now: 10_500 }))).toBe(false)
        expect(await withStore(f, (s) => s.executionsHasWork({ queues, now: 12_000 }))).toBe(true)
      })
    })

    describe("steps", () => {
      test("a step is saved once; a second save of the same name keeps the first", async () => {
        const step = { executionId: "e1", name: "charge", output: '{"id":1}', attempt: 1, createdAt: 5 }
        expect(await withStore(f, (s) => s.stepsSave(step))).toBe(true)
        expect(await withStore(f, (s) => s.stepsSave({ ...step, output: '{"id":2}', attempt: 2 }))).toBe(false)
        expect(await withStore(f, (s) => s.stepsList("e1"))).toEqual([step])
      })
    })

    test("migrations can be applied again without effect", async () => {
      await withStore(f, (s) => Effect.andThen(s.migrate, s.migrate))
      expect(await withStore(f, (s) => s.executionsCount({}))).toMatchObject({ queued: 0 })
    })
  })
}
