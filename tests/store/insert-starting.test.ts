/**
 * The hand-off's store half (Store.executionsInsertStarting, docs/queues.md "Hand-off"):
 * on SQLite a new row with a start offer is leased in the transaction that inserts it,
 * exactly as a claim would lease it, unless the claim would not give it to that worker
 * first (paused queue, not due, a due row of its Jobs ahead, not newly inserted).
 * PostgreSQL starts none. What the insert wrote is committed before syncCommitted
 * makes it durable.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test"
import type { StartOffer } from "../../src/store/Store.ts"
import { drivers, withStore, type StoreFixture } from "./drivers.ts"
import { claimOf, row } from "./rows.ts"

const offer = (over: Partial<StartOffer> = {}): StartOffer => ({ workerId: "w1", leaseMs: 30_000, now: 1_000, jobs: ["app/job"], ...over })

for (const driver of drivers) {
  describe(`insert with start offers (${driver.name})`, () => {
    let f: StoreFixture
    beforeEach(() => {
      f = driver.make()
    })
    afterEach(async () => {
      await f.dispose()
    })
    const starts = driver.name === "sqlite"

    test("an offered new row starts leased to the worker, as a claim leases it; a row without an offer stays queued", async () => {
      const [a, b] = [row(), row()]
      const { results, started } = await withStore(f, (s) => s.executionsInsertStarting([a, b], [offer(), null]))
      expect(results.map((r) => r.inserted)).toEqual([true, true])
      expect(started[1]).toBeNull()
      const stored = await withStore(f, (s) => s.executionsGet(a.id))
      if (!starts) {
        expect(started[0]).toBeNull()
        expect(stored!.state).toBe("queued")
        return
      }
      expect(started[0]).toMatchObject({ id: a.id, state: "running", attempt: 1, leaseOwner: "w1", leaseExpiresAt: 31_000, startedAt: 1_000 })
      expect(stored).toEqual(started[0]!)
      expect((await withStore(f, (s) => s.executionsGet(b.id)))!.state).toBe("queued")
      // The claim gets only the row not started.
      expect((await withStore(f, (s) => s.executionsClaim(claimOf()))).map((e) => e.id)).toEqual([b.id])
    })

    test("no start when a due row of the worker's Jobs is ahead in claim order; a row of another Job does not hold it back", async () => {
      const ahead = row()
      const other = row({ job: "app/other" })
      await withStore(f, (s) => s.executionsInsert([ahead, other]))
      const behind = row()
      const first = await withStore(f, (s) => s.executionsInsertStarting([behind], [offer()]))
      expect(first.started).toEqual([null])
      // A higher priority goes ahead of the queued one; the other Job's row is not this worker's.
      const urgent = row({ priority: 5 })
      const second = await withStore(f, (s) => s.executionsInsertStarting([urgent], [offer()]))
      expect(second.started.map((e) => e?.id ?? null)).toEqual([starts ? urgent.id : null])
      // With the worker's queued row gone, a new row of its Job starts though app/other waits.
      await withStore(f, (s) => s.executionsClaim(claimOf({ limit: 2 })))
      const next = row()
      const third = await withStore(f, (s) => s.executionsInsertStarting([next], [offer()]))
      expect(third.started.map((e) => e?.id ?? null)).toEqual([starts ? next.id : null])
      expect((await withStore(f, (s) => s.executionsGet(other.id)))!.state).toBe("queued")
    })

    test("no start for a row not yet due, on a paused queue, or not inserted (an existing key)", async () => {
      const later = row({ runAt: 5_000 })
      const keyed = row({ idempotencyKey: "k" })
      await withStore(f, (s) => s.executionsInsert([keyed]))
      await withStore(f, (s) => s.executionsClaim(claimOf()))
      const again = row({ idempotencyKey: "k" })
      const res = await withStore(f, (s) => s.executionsInsertStarting([later, again], [offer(), offer()]))
      expect(res.results.map((r) => r.inserted)).toEqual([true, false])
      expect(res.started).toEqual([null, null])
      expect((await withStore(f, (s) => s.executionsGet(later.id)))!.state).toBe("queued")

      await withStore(f, (s) => s.queuesPause({ queue: "default", now: 1_000 }))
      const paused = row()
      expect((await withStore(f, (s) => s.executionsInsertStarting([paused], [offer()]))).started).toEqual([null])
      expect((await withStore(f, (s) => s.executionsGet(paused.id)))!.state).toBe("queued")
    })

    test("several offered rows of one batch start in order, each once; they are committed, and syncCommitted then makes them durable", async () => {
      const rows = [row(), row(), row()]
      const res = await withStore(f, (s) => s.executionsInsertStarting(rows, rows.map(() => offer())))
      expect(res.started.map((e) => e?.id ?? null)).toEqual(starts ? rows.map((r) => r.id) : [null, null, null])
      await withStore(f, (s) => s.syncCommitted)
      const counts = await withStore(f, (s) => s.executionsCount({}))
      expect(starts ? counts.running : counts.queued).toBe(3)
      // The started rows were committed before the sync: another connection reads them.
      if (starts) {
        const g = f.second()
        try {
          expect((await withStore(g, (s) => s.executionsCount({}))).running).toBe(3)
        } finally {
          await g.dispose()
        }
      }
    })
  })
}
