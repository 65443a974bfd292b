/**
 * The limited claim on every driver (store/FlowRules.ts): a queue's global concurrency
 * counts live leases across connections and frees a slot when a lease expires; per-key
 * concurrency takes keys in claim order and skips a key at its limit without blocking
 * the others; rate limits (queue, Job, Job per key) allow at most `limit` starts per
 * sliding window, say when the next start is allowed, and count retries; a paused
 * queue gives nothing; claims racing from two connections never exceed a limit.
 */
import { describe, expect, test } from "bun:test"
import type { ClaimLimits } from "../../src/store/FlowRules.ts"
import type { InsertRequest } from "../../src/store/Store.ts"
import { drivers, freshStoreEach, type StoreFixture, withStore } from "./drivers.ts"
import { claimOf, row } from "./rows.ts"

const none: ClaimLimits = { globalConcurrency: null, rateLimit: null, jobs: {} }

const claim = (limits: Partial<ClaimLimits>, over: Partial<{ workerId: string; now: number; limit: number; jobs: ReadonlyArray<string> }> = {}) => ({
  ...claimOf(over),
  limits: { ...none, ...limits }
})

const keyed = (key: string, over: Partial<InsertRequest> = {}) => row({ concurrencyKey: key, ...over })

for (const driver of drivers) {
  describe(`flow limits (${driver.name})`, () => {
    let f!: StoreFixture
    freshStoreEach(driver, (fixture) => (f = fixture))

    const claimIds = async (req: ReturnType<typeof claim> & { readonly ending?: ReadonlyArray<string> }, fixture = f) =>
      (await withStore(fixture, (s) => s.executionsClaimLimited(req))).executions.map((e) => e.id)

    test("global concurrency counts running executions of every worker and frees a slot with an outcome", async () => {
      const rows = Array.from({ length: 5 }, () => row())
      await withStore(f, (s) => s.executionsInsert(rows))
      expect(await claimIds(claim({ globalConcurrency: 2 }))).toEqual([rows[0]!.id, rows[1]!.id])
      expect(await claimIds(claim({ globalConcurrency: 2 }, { workerId: "w2" }))).toEqual([])
      await withStore(f, (s) => s.executionsFinish([{ kind: "succeeded", id: rows[0]!.id, workerId: "w1", attempt: 1, result: null, now: 1_100, startedAt: 1_000 }]))
      expect(await claimIds(claim({ globalConcurrency: 2 }, { workerId: "w2", now: 1_200 }))).toEqual([rows[2]!.id])
    })

    test("a slot held by an expired lease is free again before any Reaper runs", async () => {
      const rows = Array.from({ length: 3 }, () => row())
      await withStore(f, (s) => s.executionsInsert(rows))
      expect(await claimIds(claim({ globalConcurrency: 1 }))).toHaveLength(1)
      expect(await claimIds(claim({ globalConcurrency: 1 }, { workerId: "w2", now: 20_000 }))).toEqual([])
      // w1's lease ran to 31,000: at 31,001 its slot counts no more.
      expect(await claimIds(claim({ globalConcurrency: 1 }, { workerId: "w2", now: 31_001 }))).toEqual([rows[1]!.id])
    })

    test("per-key limit 1 takes one of each key in claim order, and the next of a key once it ends", async () => {
      const rows = [keyed("a"), keyed("a"), keyed("b"), keyed("b"), keyed("c")]
      await withStore(f, (s) => s.executionsInsert(rows))
      const limits = { jobs: { "app/job": { concurrency: 1, rateLimit: null } } }
      expect(await claimIds(claim(limits))).toEqual([rows[0]!.id, rows[2]!.id, rows[4]!.id])
      expect(await claimIds(claim(limits, { workerId: "w2" }))).toEqual([])
      await withStore(f, (s) => s.executionsFinish([{ kind: "failed", id: rows[2]!.id, workerId: "w1", attempt: 1, error: { tag: "Error", message: "x" } as never, now: 1_100, startedAt: 1_000 }]))
      expect(await claimIds(claim(limits, { workerId: "w2", now: 1_200 }))).toEqual([rows[3]!.id])
    })

    test("a key at its limit never blocks other keys behind it (no head-of-line blocking)", async () => {
      const hot = Array.from({ length: 60 }, () => keyed("hot"))
      const cold = keyed("cold")
      const unkeyed = row()
      await withStore(f, (s) => s.executionsInsert([...hot, cold, unkeyed]))
      const limits = { jobs: { "app/job": { concurrency: 1, rateLimit: null } } }
      expect(await claimIds(claim(limits, { limit: 1 }))).toEqual([hot[0]!.id])
      // 59 queued rows of "hot" are ahead in claim order; the claim skips them.
      expect(await claimIds(claim(limits, { limit: 1 }))).toEqual([cold.id])
      expect(await claimIds(claim(limits, { limit: 5 }))).toEqual([unkeyed.id])
    })

    test("a claim scans again when one key's rows filled its scan, so a key behind them is taken in the same claim", async () => {
      const hot = Array.from({ length: 30 }, () => row({ rateKey: "a" }))
      const cold = row({ rateKey: "b" })
      await withStore(f, (s) => s.executionsInsert([...hot, cold]))
      const limits = { jobs: { "app/job": { concurrency: null, rateLimit: { limit: 1, periodMs: 60_000, perKey: true } } } }
      expect(await claimIds(claim(limits, { limit: 2 }))).toEqual([hot[0]!.id, cold.id])
    })

    test("the claimer's own executions whose handler ended (outcome not yet stored) hold no slot", async () => {
      const rows = Array.from({ length: 4 }, () => keyed("a"))
      await withStore(f, (s) => s.executionsInsert(rows))
      const limits = { globalConcurrency: 1, jobs: { "app/job": { concurrency: 1, rateLimit: null } } }
      const [first] = await claimIds(claim(limits))
      expect(await claimIds(claim(limits))).toEqual([])
      // w1's handler of `first` has ended; its outcome is on its way: the slot (global and key) is free.
      expect(await claimIds({ ...claim(limits), ending: [first!] })).toEqual([rows[1]!.id])
      // Only the claimer's own ids count as ending: another worker naming them frees nothing.
      expect(await claimIds({ ...claim(limits, { workerId: "w2" }), ending: [first!, rows[1]!.id] })).toEqual([])
    })

    test("per-key limit 2 lets two of a key run at once", async () => {
      const rows = [keyed("a"), keyed("a"), keyed("a")]
      await withStore(f, (s) => s.executionsInsert(rows))
      const limits = { jobs: { "app/job": { concurrency: 2, rateLimit: null } } }
      expect(await claimIds(claim(limits, { limit: 1 }))).toEqual([rows[0]!.id])
      expect(await claimIds(claim(limits))).toEqual([rows[1]!.id])
      expect(await claimIds(claim(limits))).toEqual([])
    })

    test("a queue rate limit allows `limit` starts per sliding window and says when the next is allowed", async () => {
      await withStore(f, (s) => s.executionsInsert(Array.from({ length: 10 }, () => row())))
      const rateLimit = { limit: 3, periodMs: 1_000 }
      const first = await withStore(f, (s) => s.executionsClaimLimited(claim({ rateLimit }, { now: 1_000, limit: 2 })))
      expect(first.executions).toHaveLength(2)
      expect(first.retryAt).toBeNull()
      const second = await withStore(f, (s) => s.executionsClaimLimited(claim({ rateLimit }, { now: 1_400 })))
      expect(second.executions).toHaveLength(1)
      expect(second.retryAt).toBe(2_000)
      const third = await withStore(f, (s) => s.executionsClaimLimited(claim({ rateLimit }, { now: 1_999 })))
      expect(third.executions).toHaveLength(0)
      expect(third.retryAt).toBe(2_000)
      // At 2,000 the two starts of 1,000 leave the window; the one of 1,400 stays.
      const fourth = await withStore(f, (s) => s.executionsClaimLimited(claim({ rateLimit }, { now: 2_000 })))
      expect(fourth.executions).toHaveLength(2)
      expect(fourth.retryAt).toBe(2_400)
    })

    test("a Job's rate limit per key holds one key back while another key starts", async () => {
      const rows = [row({ rateKey: "a" }), row({ rateKey: "a" }), row({ rateKey: "b" })]
      await withStore(f, (s) => s.executionsInsert(rows))
      const limits = { jobs: { "app/job": { concurrency: null, rateLimit: { limit: 1, periodMs: 500, perKey: true } } } }
      const first = await withStore(f, (s) => s.executionsClaimLimited(claim(limits)))
      expect(first.executions.map((e) => e.id)).toEqual([rows[0]!.id, rows[2]!.id])
      expect(first.retryAt).toBe(1_500)
      expect(await claimIds(claim(limits, { now: 1_499 }))).toEqual([])
      expect(await claimIds(claim(limits, { now: 1_500 }))).toEqual([rows[1]!.id])
    })

    test("a Job's own rate limit leaves the queue's other Jobs alone", async () => {
      const limited = [row({ job: "app/limited" }), row({ job: "app/limited" })]
      const other = row()
      await withStore(f, (s) => s.executionsInsert([...limited, other]))
      const limits = { jobs: { "app/limited": { concurrency: null, rateLimit: { limit: 1, periodMs: 60_000, perKey: false } } } }
      const jobs = ["app/limited", "app/job"]
      expect(await claimIds(claim(limits, { jobs }))).toEqual([limited[0]!.id, other.id])
      const again = await withStore(f, (s) => s.executionsClaimLimited(claim(limits, { jobs, now: 2_000 })))
      expect(again.executions).toEqual([])
      expect(again.retryAt).toBe(61_000)
    })

    test("a retry counts as a start", async () => {
      const r = row()
      await withStore(f, (s) => s.executionsInsert([r]))
      const rateLimit = { limit: 1, periodMs: 10_000 }
      expect(await claimIds(claim({ rateLimit }))).toEqual([r.id])
      await withStore(f, (s) => s.executionsFinish([{ kind: "retry", id: r.id, workerId: "w1", attempt: 1, runAt: 1_100, error: { tag: "Error", message: "x" } as never, now: 1_050, startedAt: 1_000 }]))
      expect(await claimIds(claim({ rateLimit }, { now: 2_000 }))).toEqual([])
      expect(await claimIds(claim({ rateLimit }, { now: 11_000 }))).toEqual([r.id])
    })

    test("a paused queue gives nothing under limits either", async () => {
      await withStore(f, (s) => s.executionsInsert([row()]))
      await withStore(f, (s) => s.queuesPause({ queue: "default", now: 500 }))
      expect(await claimIds(claim({ globalConcurrency: 5 }))).toEqual([])
      await withStore(f, (s) => s.queuesResume({ queue: "default", now: 600 }))
      expect(await claimIds(claim({ globalConcurrency: 5 }))).toHaveLength(1)
    })

    test("queuesFlow reports the live running counts per key and the live starts", async () => {
      await withStore(f, (s) => s.executionsInsert([keyed("a"), keyed("b"), keyed("b")]))
      await claimIds(claim({ rateLimit: { limit: 10, periodMs: 1_000 }, jobs: { "app/job": { concurrency: 1, rateLimit: null } } }))
      const flow = await withStore(f, (s) => s.queuesFlow({ queue: "default", now: 1_500 }))
      expect(flow.paused).toBe(false)
      expect([...flow.running].sort((x, y) => (x.key! < y.key! ? -1 : 1))).toEqual([{ job: "app/job", key: "a", count: 1 }, { job: "app/job", key: "b", count: 1 }])
      expect(flow.starts).toEqual([{ scope: "*", expiresAt: 2_000, n: 2 }])
      expect((await withStore(f, (s) => s.queuesFlow({ queue: "default", now: 2_000 }))).starts).toEqual([])
    })

    test("claims racing from two connections never exceed the global limit or a key's limit", async () => {
      const rows = [...Array.from({ length: 30 }, (_, i) => keyed(`k${i % 3}`)), ...Array.from({ length: 30 }, () => row())]
      await withStore(f, (s) => s.executionsInsert(rows))
      const g = f.second()
      try {
        const limits = { globalConcurrency: 7, jobs: { "app/job": { concurrency: 1, rateLimit: null } } }
        const results = await Promise.all(Array.from({ length: 12 }, (_, i) =>
          claimIds(claim(limits, { workerId: `w${i}`, limit: 3 }), i % 2 === 0 ? f : g)))
        const claimed = results.flat()
        expect(new Set(claimed).size).toBe(claimed.length)
        expect(claimed.length).toBe(7)
        const byKey = new Map<string | null, number>()
        for (const id of claimed) {
          const k = rows.find((r) => r.id === id)!.concurrencyKey ?? null
          byKey.set(k, (byKey.get(k) ?? 0) + 1)
        }
        for (const [k, n] of byKey) if (k !== null) expect(n).toBe(1)
      } finally {
        await g.dispose()
      }
    })
  })
}
