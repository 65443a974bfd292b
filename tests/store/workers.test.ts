/**
 * Store conformance for live workers: `workersRegister`, `workersHeartbeat`,
 * `workersRemove` and `workersList`, with staleness and pruning as WorkerRules says.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test"
import type { WorkerRegistration } from "../../src/store/Store.ts"
import { isServed, pruneStaleMs, staleAfterMsOf, unservedNote } from "../../src/store/WorkerRules.ts"
import { drivers, withStore, type StoreFixture } from "./drivers.ts"

const worker = (id: string, over: Partial<WorkerRegistration> = {}): WorkerRegistration => ({
  id,
  host: "host-a",
  pid: 4242,
  queues: ["default", "mail"],
  jobs: ["app/job", "app/mail"],
  version: "0.1.0",
  staleAfterMs: 30_000,
  ...over
})

for (const driver of drivers) {
  describe(`store workers (${driver.name})`, () => {
    let f: StoreFixture
    beforeEach(() => {
      f = driver.make()
    })
    afterEach(async () => {
      await f.dispose()
    })

    test("a registered worker is listed with what it serves, live until its staleness window passes", async () => {
      await withStore(f, (s) => s.workersRegister({ worker: worker("w1"), now: 1_000 }))
      const [w] = await withStore(f, (s) => s.workersList({ now: 2_000 }))
      expect(w).toEqual({ ...worker("w1"), startedAt: 1_000, lastSeenAt: 1_000, stale: false })
      expect((await withStore(f, (s) => s.workersList({ now: 31_000 })))[0]!.stale).toBe(false)
      expect((await withStore(f, (s) => s.workersList({ now: 31_001 })))[0]!.stale).toBe(true)
    })

    test("a heartbeat moves last seen forward (never back) and keeps the start time", async () => {
      await withStore(f, (s) => s.workersRegister({ worker: worker("w1"), now: 1_000 }))
      expect(await withStore(f, (s) => s.workersHeartbeat({ id: "w1", now: 50_000 }))).toBe(true)
      expect(await withStore(f, (s) => s.workersHeartbeat({ id: "w1", now: 40_000 }))).toBe(true)
      const [w] = await withStore(f, (s) => s.workersList({ now: 60_000 }))
      expect([w!.startedAt, w!.lastSeenAt, w!.stale]).toEqual([1_000, 50_000, false])
    })

    test("a heartbeat of a worker with no row reports false", async () => {
      expect(await withStore(f, (s) => s.workersHeartbeat({ id: "ghost", now: 1_000 }))).toBe(false)
      expect(await withStore(f, (s) => s.workersList({ now: 1_000 }))).toEqual([])
    })

    test("registering again updates the row in place; removing deletes it", async () => {
      await withStore(f, (s) => s.workersRegister({ worker: worker("w1"), now: 1_000 }))
      await withStore(f, (s) => s.workersRegister({ worker: worker("w1", { queues: ["mail"], jobs: ["app/mail"] }), now: 5_000 }))
      await withStore(f, (s) => s.workersRegister({ worker: worker("w2"), now: 5_000 }))
      const listed = await withStore(f, (s) => s.workersList({ now: 5_000 }))
      expect(listed.map((w) => [w.id, w.queues, w.startedAt, w.lastSeenAt])).toEqual([
        ["w1", ["mail"], 1_000, 5_000],
        ["w2", ["default", "mail"], 5_000, 5_000]
      ])
      await withStore(f, (s) => s.workersRemove({ id: "w1" }))
      await withStore(f, (s) => s.workersRemove({ id: "w1" }))
      expect((await withStore(f, (s) => s.workersList({ now: 5_000 }))).map((w) => w.id)).toEqual(["w2"])
    })

    test("a registration prunes rows unseen for a day, and only those", async () => {
      await withStore(f, (s) => s.workersRegister({ worker: worker("old"), now: 1_000 }))
      await withStore(f, (s) => s.workersRegister({ worker: worker("recent"), now: 2_000 }))
      await withStore(f, (s) => s.workersRegister({ worker: worker("new"), now: 1_500 + pruneStaleMs }))
      const listed = await withStore(f, (s) => s.workersList({ now: 1_500 + pruneStaleMs }))
      expect(listed.map((w) => [w.id, w.stale])).toEqual([["new", false], ["recent", true]])
    })
  })
}

describe("worker rules", () => {
  const live = [{ ...worker("w1"), startedAt: 0, lastSeenAt: 0, stale: false }, { ...worker("w2", { queues: ["reports"], jobs: ["app/report"] }), startedAt: 0, lastSeenAt: 0, stale: true }]

  test("a worker is stale after the longer of three heartbeats and its lease", () => {
    expect(staleAfterMsOf({ heartbeatMs: 10_000, leaseMs: 30_000 })).toBe(30_000)
    expect(staleAfterMsOf({ heartbeatMs: 20_000, leaseMs: 40_000 })).toBe(60_000)
  })

  test("a (queue, job) is served only by a live worker serving both", () => {
    expect(isServed(live, "mail", "app/mail")).toBe(true)
    expect(isServed(live, "mail", "app/report")).toBe(false)
    expect(isServed(live, "reports", "app/report")).toBe(false)
    expect(unservedNote(live, "reports", "app/report")).toBe("no live worker serves queue reports (job app/report)")
    expect(unservedNote(live, "default", "app/job")).toBeUndefined()
  })
})
