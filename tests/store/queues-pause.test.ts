/**
 * Queue pause on every driver: a paused queue's due executions are not claimed (other
 * queues' are), it still accepts enqueues, the has-work query of `--exit-when-idle`
 * sees no work in it, a resume makes its executions claimable again, and the pause is
 * stored, so another connection (another process) sees it. Any queue name is accepted.
 */
import { describe, expect, test } from "bun:test"
import { Effect, Fiber } from "effect"
import { Store, type StoreChange } from "../../src/store/Store.ts"
import { waitFor } from "../support/processes.ts"
import { drivers, freshStoreEach, type StoreFixture, watching, withStore } from "./drivers.ts"
import { claimOf, row } from "./rows.ts"

const claim = (queue: string, over: Partial<{ workerId: string; now: number }> = {}) => claimOf({ queue, ...over })

const work = (queues: ReadonlyArray<string>, now = 1_000) => ({ queues: queues.map((queue) => ({ queue, jobs: ["app/job"] })), now })

for (const driver of drivers) {
  describe(`queue pause (${driver.name})`, () => {
    let f!: StoreFixture
    freshStoreEach(driver, (fixture) => (f = fixture))

    test("a paused queue's due executions are not claimed; another queue's are", async () => {
      await withStore(f, (s) => s.executionsInsert([row({ queue: "mail" }), row({ queue: "mail" }), row({ queue: "other" })]))
      expect(await withStore(f, (s) => s.queuesPause({ queue: "mail", now: 500 }))).toBe(true)
      expect(await withStore(f, (s) => s.executionsClaim(claim("mail")))).toEqual([])
      expect(await withStore(f, (s) => s.executionsClaim(claim("other")))).toHaveLength(1)
      expect((await withStore(f, (s) => s.executionsCount({ queue: "mail" }))).queued).toBe(2)
    })

    test("a paused queue still accepts enqueues", async () => {
      await withStore(f, (s) => s.queuesPause({ queue: "mail", now: 500 }))
      const r = row({ queue: "mail" })
      expect(await withStore(f, (s) => s.executionsInsert([r]))).toEqual([{ id: r.id, inserted: true }])
      expect((await withStore(f, (s) => s.executionsGet(r.id)))!.state).toBe("queued")
    })

    test("a resume makes the queue's executions claimable, in claim order", async () => {
      const rows = [row({ queue: "mail", priority: 1 }), row({ queue: "mail", priority: 5 })]
      await withStore(f, (s) => s.executionsInsert(rows))
      await withStore(f, (s) => s.queuesPause({ queue: "mail", now: 500 }))
      expect(await withStore(f, (s) => s.executionsClaim(claim("mail")))).toEqual([])
      expect(await withStore(f, (s) => s.queuesResume({ queue: "mail", now: 600 }))).toBe(true)
      const claimed = await withStore(f, (s) => s.executionsClaim(claim("mail")))
      expect(claimed.map((e) => e.id)).toEqual([rows[1]!.id, rows[0]!.id])
    })

    test("has-work is false while the only due work is in a paused queue", async () => {
      await withStore(f, (s) => s.executionsInsert([row({ queue: "mail" })]))
      expect(await withStore(f, (s) => s.executionsHasWork(work(["mail"])))).toBe(true)
      await withStore(f, (s) => s.queuesPause({ queue: "mail", now: 500 }))
      expect(await withStore(f, (s) => s.executionsHasWork(work(["mail"])))).toBe(false)
      await withStore(f, (s) => s.executionsInsert([row({ queue: "other" })]))
      expect(await withStore(f, (s) => s.executionsHasWork(work(["mail", "other"])))).toBe(true)
      await withStore(f, (s) => s.queuesResume({ queue: "mail", now: 600 }))
      expect(await withStore(f, (s) => s.executionsHasWork(work(["mail"])))).toBe(true)
    })

    test("pause and resume report whether they changed anything; a second pause keeps the first pause's time", async () => {
      expect(await withStore(f, (s) => s.queuesList)).toEqual([])
      expect(await withStore(f, (s) => s.queuesResume({ queue: "mail", now: 100 }))).toBe(false)
      expect(await withStore(f, (s) => s.queuesPause({ queue: "mail", now: 200 }))).toBe(true)
      expect(await withStore(f, (s) => s.queuesPause({ queue: "mail", now: 300 }))).toBe(false)
      expect(await withStore(f, (s) => s.queuesList)).toEqual([{ queue: "mail", paused: true, pausedAt: 200 }])
      expect(await withStore(f, (s) => s.queuesResume({ queue: "mail", now: 400 }))).toBe(true)
      expect(await withStore(f, (s) => s.queuesResume({ queue: "mail", now: 500 }))).toBe(false)
      expect(await withStore(f, (s) => s.queuesList)).toEqual([{ queue: "mail", paused: false, pausedAt: null }])
      expect(await withStore(f, (s) => s.queuesPause({ queue: "mail", now: 600 }))).toBe(true)
      expect(await withStore(f, (s) => s.queuesList)).toEqual([{ queue: "mail", paused: true, pausedAt: 600 }])
    })

    test("any queue name is stored, declared anywhere or not; queues are listed by name", async () => {
      for (const queue of ["zeta", "Not Kebab", "alpha"]) await withStore(f, (s) => s.queuesPause({ queue, now: 1 }))
      expect((await withStore(f, (s) => s.queuesList)).map((q) => q.queue)).toEqual(["Not Kebab", "alpha", "zeta"])
    })

    test("the pause is stored: another connection's claim honours it, and its resume is seen", async () => {
      const g = f.second()
      try {
        await withStore(f, (s) => s.executionsInsert([row({ queue: "mail" })]))
        await withStore(f, (s) => s.queuesPause({ queue: "mail", now: 500 }))
        expect(await withStore(g, (s) => s.executionsClaim(claim("mail", { workerId: "w2" })))).toEqual([])
        await withStore(g, (s) => s.queuesResume({ queue: "mail", now: 600 }))
        expect(await withStore(f, (s) => s.executionsClaim(claim("mail")))).toHaveLength(1)
      } finally {
        await g.dispose()
      }
    })

    test("another connection's resume reaches the change watcher", async () => {
      const g = f.second()
      const seen: Array<StoreChange> = []
      const fiber = await f.run(Effect.forkDetach(Store.use((s) => s.watchChanges({ pollMs: 5, onChange: (c) => seen.push(c) }))))
      try {
        await watching(seen)
        await withStore(g, (s) => s.queuesPause({ queue: "mail", now: 500 }))
        // Whatever the pause itself reports has come by then; only the resume's change counts.
        await Bun.sleep(300)
        seen.length = 0
        await withStore(g, (s) => s.queuesResume({ queue: "mail", now: 600 }))
        const change = await waitFor("a change", () => seen.find((c) => c.queue === "mail" || c.queue === null), { timeoutMs: 5_000 })
        if (driver.name === "postgres") expect(change).toEqual({ queue: "mail", dueAt: 600 })
      } finally {
        await f.run(Fiber.interrupt(fiber))
        await g.dispose()
      }
    })
  })
}
