/**
 * Dedupe modes on every driver (docs/jobs.md, "Dedupe modes"): an idempotency key held
 * forever (unchanged), a dedupe key held only while its execution is queued or running
 * (`active`), and `replace` (debounce), which rewrites a queued holder in place or, when
 * the holder is running, takes the key from it and inserts anew. Rows of one batch are
 * taken in order; forever and dedupe keys of the same text do not meet.
 */
import { describe, expect, test } from "bun:test"
import { Effect, Fiber } from "effect"
import { type InsertRequest, type Outcome, Store, type StoreChange } from "../../src/store/Store.ts"
import { waitFor } from "../support/processes.ts"
import { drivers, freshStoreEach, type StoreFixture, watching, withStore } from "./drivers.ts"
import { claimOf, row } from "./rows.ts"

const claim = claimOf

const active = (key: string, over: Partial<InsertRequest> = {}) => row({ dedupeKey: key, dedupeMode: "active", ...over })
const replace = (key: string, over: Partial<InsertRequest> = {}) => row({ dedupeKey: key, dedupeMode: "replace", ...over })

const boom = { tag: "Boom", message: "boom", retryable: true, pretty: "Boom: boom" }

for (const driver of drivers) {
  describe(`dedupe modes (${driver.name})`, () => {
    let f!: StoreFixture
    freshStoreEach(driver, (fixture) => (f = fixture))

    const insert = (...rows: Array<InsertRequest>) => withStore(f, (s) => s.executionsInsert(rows))
    const get = async (id: string) => (await withStore(f, (s) => s.executionsGet(id)))!
    const claimOne = async (now = 1_000) => {
      const claimed = await withStore(f, (s) => s.executionsClaim(claim({ now, limit: 1 })))
      expect(claimed).toHaveLength(1)
      return claimed[0]!
    }
    const finish = (o: Outcome) => withStore(f, (s) => s.executionsFinish([o]))
    const all = () => withStore(f, (s) => s.executionsList({}))

    test("forever is unchanged: the key is held after its execution ended, and returns it", async () => {
      const first = row({ idempotencyKey: "k" })
      expect(await insert(first)).toEqual([{ id: first.id, inserted: true }])
      const e = await claimOne()
      await finish({ kind: "succeeded", id: e.id, workerId: "w1", attempt: 1, result: null, now: 1_100, startedAt: 1_000 })
      const again = row({ idempotencyKey: "k" })
      expect(await insert(again)).toEqual([{ id: first.id, inserted: false }])
      expect(await all()).toHaveLength(1)
    })

    test("active: the holder is returned while it is queued and while it runs", async () => {
      const holder = active("k")
      expect(await insert(holder)).toEqual([{ id: holder.id, inserted: true }])
      expect((await get(holder.id)).dedupeKey).toBe("k")
      const dup = active("k", { payload: '{"other":1}' })
      const [r] = await insert(dup)
      expect(r).toEqual({ id: holder.id, inserted: false })
      expect(r!.replaced).toBeUndefined()
      await claimOne()
      expect(await insert(active("k"))).toEqual([{ id: holder.id, inserted: false }])
      expect((await get(holder.id)).payload).toEqual(JSON.parse(holder.payload))
      expect(await all()).toHaveLength(1)
    })

    for (const ending of ["succeeded", "failed", "cancelled"] as const) {
      test(`active: once the holder has ${ending}, the next enqueue inserts a new execution`, async () => {
        const holder = active("k")
        await insert(holder)
        if (ending === "cancelled") {
          expect(await withStore(f, (s) => s.executionsCancel({ id: holder.id, now: 1_100 }))).toBe("cancelled")
        } else {
          const e = await claimOne()
          const outcome: Outcome = ending === "succeeded"
            ? { kind: "succeeded", id: e.id, workerId: "w1", attempt: 1, result: null, now: 1_100, startedAt: 1_000 }
            : { kind: "failed", id: e.id, workerId: "w1", attempt: 1, error: boom, now: 1_100, startedAt: 1_000 }
          expect(await finish(outcome)).toEqual([true])
        }
        expect((await get(holder.id)).state).toBe(ending)
        const next = active("k")
        expect(await insert(next)).toEqual([{ id: next.id, inserted: true }])
        expect(await insert(active("k"))).toEqual([{ id: next.id, inserted: false }])
        expect((await all()).map((e) => e.id).sort()).toEqual([holder.id, next.id].sort())
      })
    }

    test("active: a holder that retries keeps the key", async () => {
      const holder = active("k")
      await insert(holder)
      const e = await claimOne()
      await finish({ kind: "retry", id: e.id, workerId: "w1", attempt: 1, runAt: 5_000, error: boom, now: 1_100, startedAt: 1_000 })
      expect(await insert(active("k"))).toEqual([{ id: holder.id, inserted: false }])
    })

    test("replace: a queued holder takes the new payload, run time and priority", async () => {
      const holder = replace("digest", { payload: '{"v":1}', runAt: 100, priority: 0 })
      expect(await insert(holder)).toEqual([{ id: holder.id, inserted: true }])
      const change = replace("digest", { payload: '{"v":2}', runAt: 300_000, priority: 7, concurrencyKey: "c2", rateKey: "r2" })
      expect(await insert(change)).toEqual([{ id: holder.id, inserted: false, replaced: true }])
      expect(await get(holder.id)).toMatchObject({
        state: "queued",
        payload: { v: 2 },
        runAt: 300_000,
        priority: 7,
        concurrencyKey: "c2",
        rateKey: "r2",
        dedupeKey: "digest",
        attempt: 0
      })
      expect(await get(change.id)).toBeNull()
      expect(await all()).toHaveLength(1)
      // Not due any more until the new run time.
      expect(await withStore(f, (s) => s.executionsClaim(claim({ now: 299_999 })))).toEqual([])
      expect((await withStore(f, (s) => s.executionsClaim(claim({ now: 300_000 })))).map((e) => e.id)).toEqual([holder.id])
    })

    test("replace: a running holder gives up the key; the new one is inserted and the holder's retry does not conflict", async () => {
      const holder = replace("digest", { payload: '{"v":1}' })
      await insert(holder)
      const e = await claimOne()
      const change = replace("digest", { payload: '{"v":2}', runAt: 2_000 })
      expect(await insert(change)).toEqual([{ id: change.id, inserted: true }])
      expect(await get(holder.id)).toMatchObject({ state: "running", payload: { v: 1 }, dedupeKey: null })
      expect(await get(change.id)).toMatchObject({ state: "queued", payload: { v: 2 }, runAt: 2_000, dedupeKey: "digest" })
      // The running one fails and retries: back to queued beside the new holder.
      expect(await finish({ kind: "retry", id: e.id, workerId: "w1", attempt: 1, runAt: 3_000, error: boom, now: 1_100, startedAt: 1_000 })).toEqual([true])
      expect((await get(holder.id)).state).toBe("queued")
      // Another change replaces the key's holder (the new one), not the retrying one.
      const later = replace("digest", { payload: '{"v":3}', runAt: 2_500 })
      expect(await insert(later)).toEqual([{ id: change.id, inserted: false, replaced: true }])
      expect(await get(change.id)).toMatchObject({ payload: { v: 3 }, runAt: 2_500 })
      expect(await get(holder.id)).toMatchObject({ payload: { v: 1 }, runAt: 3_000 })
    })

    test("replace after the holder ended inserts anew", async () => {
      const holder = replace("digest")
      await insert(holder)
      const e = await claimOne()
      await finish({ kind: "succeeded", id: e.id, workerId: "w1", attempt: 1, result: null, now: 1_100, startedAt: 1_000 })
      const next = replace("digest")
      expect(await insert(next)).toEqual([{ id: next.id, inserted: true }])
    })

    test("two rows with one key in one batch are taken in order", async () => {
      const a1 = active("a")
      const a2 = active("a")
      const r1 = replace("r", { payload: '{"v":1}' })
      const r2 = replace("r", { payload: '{"v":2}', priority: 3 })
      const plain = row()
      const results = await insert(a1, r1, plain, a2, r2)
      expect(results).toEqual([
        { id: a1.id, inserted: true },
        { id: r1.id, inserted: true },
        { id: plain.id, inserted: true },
        { id: a1.id, inserted: false },
        { id: r1.id, inserted: false, replaced: true }
      ])
      expect(await get(r1.id)).toMatchObject({ payload: { v: 2 }, priority: 3 })
      expect(await all()).toHaveLength(3)
    })

    test("forever and dedupe keys of the same text do not meet; keys are per Job", async () => {
      const forever = row({ idempotencyKey: "same" })
      const held = active("same")
      const other = active("same", { job: "app/other" })
      expect(await insert(forever, held, other)).toEqual([
        { id: forever.id, inserted: true },
        { id: held.id, inserted: true },
        { id: other.id, inserted: true }
      ])
      expect(await insert(row({ idempotencyKey: "same" }))).toEqual([{ id: forever.id, inserted: false }])
      expect(await insert(active("same"))).toEqual([{ id: held.id, inserted: false }])
      expect(await get(forever.id)).toMatchObject({ idempotencyKey: "same", dedupeKey: null })
      expect(await get(held.id)).toMatchObject({ idempotencyKey: null, dedupeKey: "same" })
    })

    test("concurrent replaces from two connections leave one queued holder with one of their payloads", async () => {
      const g = f.second()
      try {
        const batches = Array.from({ length: 10 }, (_, i) => [replace("hot", { payload: JSON.stringify({ v: i }) })])
        const results = await Promise.all(batches.map((rows, i) => withStore(i % 2 === 0 ? f : g, (s) => s.executionsInsert(rows))))
        expect(results.flat().filter((r) => r.inserted)).toHaveLength(1)
        const queued = await withStore(f, (s) => s.executionsList({ state: "queued" }))
        expect(queued).toHaveLength(1)
        expect(results.flat().every((r) => r.id === queued[0]!.id)).toBe(true)
      } finally {
        await g.dispose()
      }
    })

    test("replaces racing claims on two connections: the key always has at most one holder, and each result names a row", async () => {
      const g = f.second()
      try {
        const ids = new Set<string>()
        for (let round = 0; round < 5; round++) {
          const enqueues = Array.from({ length: 6 }, (_, i) =>
            withStore(i % 2 === 0 ? f : g, (s) => s.executionsInsert([replace("hot", { payload: JSON.stringify({ round, i }) })])))
          const claims = [f, g].map((h, i) => withStore(h, (s) => s.executionsClaim(claim({ workerId: `w${i}`, now: 1_000 + round }))))
          const [results] = await Promise.all([Promise.all(enqueues), Promise.all(claims)])
          for (const r of results.flat()) ids.add(r.id)
          const holding = (await all()).filter((e) => e.dedupeKey === "hot" && (e.state === "queued" || e.state === "running"))
          expect(holding.length).toBeLessThanOrEqual(1)
        }
        for (const id of ids) expect(await get(id)).not.toBeNull()
      } finally {
        await g.dispose()
      }
    })

    if (driver.name === "postgres") {
      test("a replaced row wakes other processes with its new run time", async () => {
        const g = f.second()
        const seen: Array<StoreChange> = []
        await insert(replace("digest", { runAt: 900_000 }))
        const fiber = await f.run(Effect.forkDetach(Store.use((s) => s.watchChanges({ pollMs: 5, onChange: (c) => seen.push(c) }))))
        try {
          await watching(seen)
          const [r] = await withStore(g, (s) => s.executionsInsert([replace("digest", { runAt: 1_234 })]))
          expect(r!.replaced).toBe(true)
          expect(await waitFor("the wake-up", () => seen.find((c) => c.queue === "default" && c.dueAt === 1_234), { timeoutMs: 5_000 }))
            .toEqual({ queue: "default", dueAt: 1_234 })
        } finally {
          await f.run(Fiber.interrupt(fiber))
          await g.dispose()
        }
      })
    }
  })
}
