/**
 * Conformance of the Store's orchestration (issue 16) on every driver: a park (sleep,
 * children, signal) leaves the execution `waiting`, not charged, and claimable once
 * due; a child is inserted exactly once per (parent, step) — also when its idempotency
 * key is already held (the holder is the child, on PostgreSQL as on SQLite); every way
 * a child can end wakes its waiting parent — including a release or a park of a child
 * asked to cancel, which ends it cancelled; signals are kept, taken once and oldest
 * first; a cancel reaches a parent's whole tree. The model-based test
 * (model.test.ts) checks the same at random; these are its findings, fixed.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test"
import { Effect } from "effect"
import type { Wait } from "../../src/jobs/Wait.ts"
import type { InsertRequest, Outcome, Store } from "../../src/store/Store.ts"
import { drivers, type StoreFixture, withStore } from "./drivers.ts"
import { row } from "./rows.ts"

const leaseMs = 30_000
const never = 253_402_300_799_999

for (const driver of drivers) {
  describe(`store orchestration (${driver.name})`, () => {
    let f: StoreFixture
    beforeEach(() => {
      f = driver.make()
    })
    afterEach(async () => {
      await f.dispose()
    })
    const run = <A>(body: (s: Store["Service"]) => Effect.Effect<A, unknown>) => withStore(f, body)

    /** Inserts and claims one execution of `queue` at `now` as `w1`; returns it. */
    const started = async (r: InsertRequest, now: number) => {
      await run((s) => s.executionsInsert([r]))
      const [e] = await run((s) => s.executionsClaim({ queue: r.queue, jobs: [r.job], workerId: "w1", limit: 1, now, leaseMs }))
      expect(e?.id).toBe(r.id)
      return e!
    }
    const claimAll = (now: number, jobs = ["app/job", "app/child"]) =>
      run((s) => s.executionsClaim({ queue: "default", jobs, workerId: "w1", limit: 10, now, leaseMs }))
    const park = (id: string, attempt: number, now: number, wait: Wait, runAt: number, parentId: string | null = null): Outcome =>
      ({ kind: "park", id, workerId: "w1", attempt, now, wait, runAt, parentId })
    const get = async (id: string) => (await run((s) => s.executionsGet(id)))!

    test("a park is waiting, not charged, and claimed again once due", async () => {
      const p = await started(row({ now: 100, runAt: 100 }), 100)
      expect(await run((s) => s.executionsFinish([park(p.id, 1, 200, { kind: "sleep", step: "nap", until: 5_000 }, 5_000)]))).toEqual([true])
      const w = await get(p.id)
      expect({ state: w.state, attempt: w.attempt, runAt: w.runAt, lease: w.leaseOwner, wait: w.wait })
        .toEqual({ state: "waiting", attempt: 0, runAt: 5_000, lease: null, wait: { kind: "sleep", step: "nap", until: 5_000 } })
      expect(await run((s) => s.attemptsList(p.id))).toEqual([])
      expect(await claimAll(4_999)).toEqual([])
      expect((await claimAll(5_000)).map((e) => [e.id, e.state, e.attempt])).toEqual([[p.id, "running", 1]])
    })

    test("a child is inserted once per (parent, step); a held idempotency key returns its holder", async () => {
      const p = await started(row({ now: 100 }), 100)
      const holder = row({ job: "app/child", idempotencyKey: "k" })
      await run((s) => s.executionsInsert([holder]))
      const first = row({ job: "app/child" })
      expect(await run((s) => s.executionsInsertChild({ parentId: p.id, step: "a", attempt: 1, row: first }))).toEqual({ id: first.id, inserted: true })
      expect(await run((s) => s.executionsInsertChild({ parentId: p.id, step: "a", attempt: 1, row: row({ job: "app/child" }) })))
        .toEqual({ id: first.id, inserted: false })
      // A child whose key another execution holds: that execution, as any enqueue of the key (PostgreSQL failed with a unique violation).
      expect(await run((s) => s.executionsInsertChild({ parentId: p.id, step: "b", attempt: 1, row: row({ job: "app/child", idempotencyKey: "k" }) })))
        .toEqual({ id: holder.id, inserted: false })
      const steps = await run((s) => s.stepsList(p.id))
      expect(steps.map((x) => [x.name, x.output]).sort()).toEqual([["a", JSON.stringify(first.id)], ["b", JSON.stringify(holder.id)]])
      expect((await run((s) => s.executionsList({ parentId: p.id }))).map((e) => e.id)).toEqual([first.id])
    })

    test("the last awaited child's end makes its waiting parent due, whichever way it ends", async () => {
      const p = await started(row({ now: 100 }), 100)
      const kids = [row({ job: "app/child" }), row({ job: "app/child" }), row({ job: "app/child" }), row({ job: "app/child" })]
      for (const [i, k] of kids.entries()) await run((s) => s.executionsInsertChild({ parentId: p.id, step: `c${i}`, attempt: 1, row: k }))
      const claimed = await claimAll(200, ["app/child"])
      expect(claimed.length).toBe(4)
      const ids = kids.map((k) => k.id)
      expect(await run((s) => s.executionsFinish([park(p.id, 1, 300, { kind: "children", step: "join", ids }, never)]))).toEqual([true])
      // Each child is asked to cancel while running; they end by a success, a failure, a release and a park.
      for (const id of ids) expect(await run((s) => s.executionsCancel({ id, now: 400 }))).toBe("requested")
      const base = (id: string) => ({ id, workerId: "w1", attempt: 1, now: 500, startedAt: 200, parentId: p.id })
      await run((s) =>
        s.executionsFinish([
          { ...base(ids[0]!), kind: "succeeded", result: null },
          { ...base(ids[1]!), kind: "failed", error: { tag: "Boom", message: "boom", retryable: false, pretty: "boom" } }
        ]))
      expect((await get(p.id)).runAt).toBe(never)
      await run((s) => s.executionsFinish([{ id: ids[2]!, workerId: "w1", attempt: 1, now: 600, kind: "released", parentId: p.id }]))
      expect((await get(ids[2]!)).state).toBe("cancelled")
      expect((await get(p.id)).runAt).toBe(never)
      // The last one parks, asked to cancel: it ends cancelled, so the parent is due now (it waited forever before).
      await run((s) => s.executionsFinish([park(ids[3]!, 1, 700, { kind: "sleep", step: "nap", until: 9_000 }, 9_000, p.id)]))
      expect((await get(ids[3]!)).state).toBe("cancelled")
      expect({ state: (await get(p.id)).state, runAt: (await get(p.id)).runAt }).toEqual({ state: "waiting", runAt: 700 })
    })

    test("a released child asked to cancel wakes its waiting parent", async () => {
      const p = await started(row({ now: 100 }), 100)
      const k = row({ job: "app/child" })
      await run((s) => s.executionsInsertChild({ parentId: p.id, step: "c", attempt: 1, row: k }))
      await claimAll(200, ["app/child"])
      await run((s) => s.executionsFinish([park(p.id, 1, 300, { kind: "children", step: "join", ids: [k.id] }, never)]))
      await run((s) => s.executionsCancel({ id: k.id, now: 400 }))
      await run((s) => s.executionsFinish([{ id: k.id, workerId: "w1", attempt: 1, now: 500, kind: "released", parentId: p.id }]))
      expect((await get(p.id)).runAt).toBe(500)
      expect((await claimAll(500, ["app/job"])).map((e) => e.id)).toEqual([p.id])
    })

    test("a park for children already ended, or for a signal already kept, is due at once", async () => {
      const p = await started(row({ now: 100 }), 100)
      const k = row({ job: "app/child" })
      await run((s) => s.executionsInsertChild({ parentId: p.id, step: "c", attempt: 1, row: k }))
      expect(await run((s) => s.executionsCancel({ id: k.id, now: 150 }))).toBe("cancelled")
      await run((s) => s.executionsFinish([park(p.id, 1, 200, { kind: "children", step: "join", ids: [k.id] }, never)]))
      expect((await get(p.id)).runAt).toBe(200)
      await claimAll(300, ["app/job"])
      expect(await run((s) => s.signalsSend({ id: p.id, name: "go", payload: "1", now: 350 }))).toEqual({ _tag: "Kept" })
      await run((s) => s.executionsFinish([park(p.id, 1, 400, { kind: "signal", step: "go", signal: "go", until: null }, never)]))
      expect((await get(p.id)).runAt).toBe(400)
    })

    test("signals: kept, waking a wait for them, taken once and oldest first; refused once ended or missing", async () => {
      const p = await started(row({ now: 100 }), 100)
      await run((s) => s.executionsFinish([park(p.id, 1, 200, { kind: "signal", step: "go", signal: "go", until: 10_000 }, 10_000)]))
      expect(await run((s) => s.signalsSend({ id: p.id, name: "stop", payload: "0", now: 300 }))).toEqual({ _tag: "Kept" })
      expect((await get(p.id)).runAt).toBe(10_000)
      expect(await run((s) => s.signalsSend({ id: p.id, name: "go", payload: "1", now: 400 }))).toEqual({ _tag: "Woke" })
      expect(await run((s) => s.signalsSend({ id: p.id, name: "go", payload: "2", now: 450 }))).toEqual({ _tag: "Woke" })
      expect((await get(p.id)).runAt).toBe(400)
      await claimAll(500, ["app/job"])
      const take = (name: string) => run((s) => s.signalsTake({ id: p.id, name, step: name, attempt: 1, now: 600 }))
      expect([await take("go"), await take("go"), await take("go")]).toEqual(["1", "2", null])
      expect((await run((s) => s.signalsList(p.id))).map((x) => [x.name, x.payload, x.consumedAt])).toEqual([["stop", "0", null], ["go", "1", 600], ["go", "2", 600]])
      await run((s) => s.executionsFinish([{ id: p.id, workerId: "w1", attempt: 1, now: 700, startedAt: 500, kind: "succeeded", result: null }]))
      expect(await run((s) => s.signalsSend({ id: p.id, name: "go", payload: "3", now: 800 }))).toEqual({ _tag: "Ended", state: "succeeded" })
      expect(await run((s) => s.signalsSend({ id: "nope", name: "go", payload: "3", now: 800 }))).toEqual({ _tag: "Missing" })
      // A pruned execution takes its signals with it.
      expect(await run((s) => s.executionsPrune({ succeededBefore: 10_000, failedBefore: 10_000, limit: 10 }))).toBe(1)
      expect(await run((s) => s.signalsList(p.id))).toEqual([])
    })

    test("a cancel reaches the parent's tree: queued and waiting at once, running asked", async () => {
      const p = await started(row({ now: 100 }), 100)
      const [a, b, c] = [row({ job: "app/child" }), row({ job: "app/child" }), row({ job: "app/child", runAt: 5_000 })]
      await run((s) => s.executionsInsertChild({ parentId: p.id, step: "a", attempt: 1, row: a }))
      await run((s) => s.executionsInsertChild({ parentId: p.id, step: "b", attempt: 1, row: b }))
      await claimAll(200, ["app/child"])
      // b has a child of its own, c (queued), and a parks waiting.
      await run((s) => s.executionsInsertChild({ parentId: b.id, step: "c", attempt: 1, row: c }))
      await run((s) => s.executionsFinish([park(a.id, 1, 300, { kind: "sleep", step: "nap", until: 9_000 }, 9_000, p.id)]))
      expect(await run((s) => s.executionsCancel({ id: p.id, now: 400 }))).toBe("requested")
      const states = await Promise.all([p.id, a.id, b.id, c.id].map(get))
      expect(states.map((e) => [e.state, e.cancelRequested])).toEqual([["running", true], ["cancelled", false], ["running", true], ["cancelled", false]])
      expect(await run((s) => s.executionsCount({}))).toMatchObject({ running: 2, waiting: 0, cancelled: 2 })
    })
  })
}
