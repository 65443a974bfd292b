/**
 * The Scheduler actor on the TestClock against a real SQLite file: fires land at their
 * due times, a 3-hour outage is handled per misfire policy, an overlap skip is
 * recorded, fires of unknown or disabled Jobs are recorded as skipped, and only the
 * leader fires while a standby waits to take over.
 */
import { afterEach, describe, expect, test } from "bun:test"
import type { Database } from "bun:sqlite"
import { Effect, Fiber, Layer, References, Schema } from "effect"
import { TestClock } from "effect/testing"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Scheduler from "../../src/actors/Scheduler.ts"
import * as Job from "../../src/jobs/Job.ts"
import * as JobSchedule from "../../src/jobs/JobSchedule.ts"
import { ScheduleStore } from "../../src/store/ScheduleStore.ts"
import { makeSqliteScheduleStore } from "../../src/store/sqlite/SqliteScheduleStore.ts"
import { makeSqliteStore } from "../../src/store/sqlite/SqliteStore.ts"
import { applyMigrations, openDatabase } from "../../src/store/sqlite/SqliteConnection.ts"

const cleanups: Array<() => void> = []
afterEach(() => {
  while (cleanups.length) cleanups.pop()!()
})

const fresh = () => {
  const dir = mkdtempSync(join(tmpdir(), "roster-"))
  const path = join(dir, "roster.db")
  const dbs: Array<Database> = []
  const open = () => {
    const db = openDatabase({ path })
    dbs.push(db)
    applyMigrations(db, 0)
    return { schedules: makeSqliteScheduleStore(db), executions: makeSqliteStore(db) }
  }
  cleanups.push(() => {
    for (const db of dbs) db.close(false)
    rmSync(dir, { recursive: true, force: true })
  })
  return { ...open(), reopen: open }
}

const onTestClock = <A, E>(effect: Effect.Effect<A, E>) =>
  Effect.runPromise(Effect.provide(effect, Layer.merge(TestClock.layer(), Layer.succeed(References.MinimumLogLevel, "None"))))

const at = (iso: string) => Date.parse(iso)
const hhmm = (ms: number) => new Date(ms).toISOString().slice(11, 16)

const noop = Job.make({ id: "demo/noop", payload: Schema.Struct({ n: Schema.Number }), handler: () => Effect.void })
const jobs = new Map([["demo/noop", Scheduler.fromJob(noop)]])

/** A schedule's fires, oldest first, as "due outcome @decided". */
const history = (store: ScheduleStore["Service"], id: string) =>
  Effect.map(store.schedulesHistory({ scheduleId: id, limit: 100 }), (fires) =>
    fires.map((f) => `${hhmm(f.dueAt)} ${f.outcome} @${hhmm(f.enqueuedAt)}`).reverse())

/** Settings for tests that only care about fire times: a long poll and lease, so hours pass in few steps. */
const coarse = { pollMs: 60_000, leaseTtlMs: 600_000 } as const

/** Starts a scheduler on `store`; returns its handle and fiber. */
const start = (store: ScheduleStore["Service"], options: Omit<Scheduler.SchedulerOptions, "jobs"> & { readonly jobs?: Scheduler.SchedulerOptions["jobs"] }) =>
  Effect.gen(function*() {
    const scheduler = yield* Scheduler.make({ jobs, ...options })
    const fiber = yield* Effect.forkChild(Effect.provideService(scheduler.run, ScheduleStore, store))
    yield* Effect.yieldNow
    return { scheduler, fiber }
  })

describe("fires on time", () => {
  test("an hourly cron and a 7-minute interval fire at their due times, each one enqueued once", async () => {
    const { schedules, executions } = fresh()
    const hourly = JobSchedule.make({ id: "demo/hourly", job: noop, payload: { n: 1 }, cron: "0 * * * *" })
    const sevens = JobSchedule.make({ id: "demo/sevens", job: "demo/noop", payload: { n: 7 }, every: "7 minutes" })
    await onTestClock(Effect.gen(function*() {
      yield* TestClock.setTime(at("2024-05-01T09:30:00Z"))
      const { fiber } = yield* start(schedules, { owner: "a", schedules: [hourly, sevens], ...coarse })
      yield* TestClock.adjust("3 hours")
      yield* Fiber.interrupt(fiber)
      expect(yield* history(schedules, "demo/hourly")).toEqual(["10:00 enqueued @10:00", "11:00 enqueued @11:00", "12:00 enqueued @12:00"])
      const sevensFires = yield* schedules.schedulesHistory({ scheduleId: "demo/sevens", limit: 100 })
      expect(sevensFires.length).toBe(Math.floor(at("2024-05-01T12:30:00Z") / 420_000) - Math.floor(at("2024-05-01T09:30:00Z") / 420_000))
      expect(sevensFires.every((f) => f.dueAt % 420_000 === 0 && f.enqueuedAt === f.dueAt && f.outcome === "enqueued")).toBe(true)
    }))
    const made = await Effect.runPromise(executions.executionsList({ scheduleId: "demo/hourly" }))
    expect(made.map((e) => [hhmm(e.fireAt!), e.payload, e.queue, e.idempotencyKey]).reverse()).toEqual([
      ["10:00", { n: 1 }, "default", "schedule:demo/hourly:2024-05-01T10:00:00.000Z"],
      ["11:00", { n: 1 }, "default", "schedule:demo/hourly:2024-05-01T11:00:00.000Z"],
      ["12:00", { n: 1 }, "default", "schedule:demo/hourly:2024-05-01T12:00:00.000Z"]
    ])
    const row = await Effect.runPromise(schedules.schedulesGet("demo/hourly"))
    expect(row?.source).toBe("file")
    expect(row?.nextDueAt).toBe(at("2024-05-01T13:00:00Z"))
  }, 30_000)
})

describe("a 3-hour outage", () => {
  test("each misfire policy runs the late fires it promises, then continues on time", async () => {
    const { schedules } = fresh()
    const defs = (["once", "skip", "all"] as const).map((misfire) =>
      JobSchedule.make({ id: `demo/${misfire}`, job: noop, payload: { n: 1 }, cron: "0 * * * *", misfire }))
    await onTestClock(Effect.gen(function*() {
      yield* TestClock.setTime(at("2024-05-01T09:30:00Z"))
      const before = yield* start(schedules, { owner: "a", schedules: defs, ...coarse })
      yield* TestClock.adjust("10 minutes")
      yield* Fiber.interrupt(before.fiber) // the scheduler goes down at 09:40 ...
      yield* TestClock.setTime(at("2024-05-01T12:20:00Z")) // ... and a new one starts at 12:20
      const after = yield* start(schedules, { owner: "b", schedules: defs, ...coarse })
      yield* TestClock.adjust("1 hour")
      yield* Fiber.interrupt(after.fiber)
      expect(yield* history(schedules, "demo/once")).toEqual(["10:00 missed @12:20", "11:00 missed @12:20", "12:00 enqueued @12:20", "13:00 enqueued @13:00"])
      expect(yield* history(schedules, "demo/skip")).toEqual(["10:00 missed @12:20", "11:00 missed @12:20", "12:00 missed @12:20", "13:00 enqueued @13:00"])
      expect(yield* history(schedules, "demo/all")).toEqual(["10:00 enqueued @12:20", "11:00 enqueued @12:20", "12:00 enqueued @12:20", "13:00 enqueued @13:00"])
    }))
  }, 30_000)
})

describe("overlap", () => {
  test("with overlap skip, a fire while the previous execution is still queued is recorded skipped", async () => {
    const { schedules, executions } = fresh()
    const every10 = JobSchedule.make({ id: "demo/every10", job: noop, payload: { n: 1 }, cron: "*/10 * * * *", overlap: "skip" })
    await onTestClock(Effect.gen(function*() {
      yield* TestClock.setTime(at("2024-05-01T09:55:00Z"))
      const { fiber } = yield* start(schedules, { owner: "a", schedules: [every10], ...coarse })
      yield* TestClock.adjust("30 minutes") // 10:25: no worker ran the 10:00 execution
      const first = yield* schedules.schedulesActiveExecution("demo/every10")
      expect(first?.state).toBe("queued")
      yield* executions.executionsCancel({ id: first!.id, now: at("2024-05-01T10:25:00Z") })
      yield* TestClock.adjust("10 minutes")
      yield* Fiber.interrupt(fiber)
      expect(yield* history(schedules, "demo/every10")).toEqual([
        "10:00 enqueued @10:00", "10:10 skipped @10:10", "10:20 skipped @10:20", "10:30 enqueued @10:30"
      ])
      const skipped = yield* schedules.schedulesHistory({ scheduleId: "demo/every10", limit: 100 })
      expect(skipped.filter((f) => f.outcome === "skipped").every((f) => f.error?.includes(first!.id))).toBe(true)
    }))
  }, 30_000)
})

describe("targets the scheduler cannot enqueue", () => {
  test("a fire of an unknown or disabled Job is recorded skipped with the reason, and the schedule moves on", async () => {
    const { schedules, executions } = fresh()
    const reports = JobSchedule.make({ id: "demo/reports", job: noop, payload: { n: 1 }, cron: "0 * * * *" })
    const disabled = new Map([["demo/noop", { ...Scheduler.fromJob(noop), disabled: "switched off by ops" }]])
    await onTestClock(Effect.gen(function*() {
      yield* TestClock.setTime(at("2024-05-01T09:30:00Z"))
      const { fiber } = yield* start(schedules, { owner: "a", schedules: [reports], jobs: disabled, ...coarse })
      yield* TestClock.adjust("1 minute")
      // A studio schedule created while the scheduler runs, for a Job this process does not know.
      yield* schedules.schedulesUpsert({
        source: "studio",
        now: at("2024-05-01T09:31:00Z"),
        schedule: {
          id: "ops/gone", job: "demo/gone", payload: "{}", cron: "0 * * * *", everyMs: null, timezone: "UTC", enabled: true,
          misfire: "once", misfireCap: 1, overlap: "allow", anchorAt: 0, label: "gone", description: "", nextDueAt: at("2024-05-01T10:00:00Z")
        }
      })
      yield* TestClock.adjust("2 hours")
      yield* Fiber.interrupt(fiber)
      const gone = yield* schedules.schedulesHistory({ scheduleId: "ops/gone", limit: 10 })
      expect(gone.map((f) => `${hhmm(f.dueAt)} ${f.outcome}`).reverse()).toEqual(["10:00 skipped", "11:00 skipped"])
      expect(gone.every((f) => f.error?.includes("demo/gone is not known"))).toBe(true)
      const off = yield* schedules.schedulesHistory({ scheduleId: "demo/reports", limit: 10 })
      expect(off.map((f) => f.outcome)).toEqual(["skipped", "skipped"])
      expect(off[0]?.error).toContain("switched off by ops")
      expect((yield* schedules.schedulesGet("ops/gone"))?.nextDueAt).toBe(at("2024-05-01T12:00:00Z"))
      expect(yield* executions.executionsList({})).toEqual([])
    }))
  }, 30_000)
})

describe("wake-ups", () => {
  test("SchedulesChanged wakes a scheduler sleeping on a long poll, so a new studio schedule fires on time", async () => {
    const { schedules } = fresh()
    await onTestClock(Effect.gen(function*() {
      yield* TestClock.setTime(at("2024-05-01T09:30:00Z"))
      const { scheduler, fiber } = yield* start(schedules, { owner: "a", schedules: [], pollMs: 3_600_000, leaseTtlMs: 3 * 3_600_000 })
      yield* TestClock.adjust("1 minute")
      yield* schedules.schedulesUpsert({
        source: "studio",
        now: at("2024-05-01T09:31:00Z"),
        schedule: {
          id: "ops/soon", job: "demo/noop", payload: "{\"n\":1}", cron: "32 9 * * *", everyMs: null, timezone: "UTC", enabled: true,
          misfire: "once", misfireCap: 1, overlap: "allow", anchorAt: 0, label: "soon", description: "", nextDueAt: at("2024-05-01T09:32:00Z")
        }
      })
      yield* scheduler.schedulesChanged
      yield* TestClock.adjust("2 minutes")
      yield* Fiber.interrupt(fiber)
      expect(yield* history(schedules, "ops/soon")).toEqual(["09:32 enqueued @09:32"])
    }))
  }, 30_000)

  test("with the default 1 s poll, a schedule created by another process is fired within a second of its due time", async () => {
    const mine = fresh()
    const other = mine.reopen()
    await onTestClock(Effect.gen(function*() {
      yield* TestClock.setTime(at("2024-05-01T09:30:00Z"))
      const { fiber } = yield* start(mine.schedules, { owner: "a", schedules: [] })
      yield* TestClock.adjust("10 seconds")
      yield* other.schedules.schedulesUpsert({
        source: "studio",
        now: at("2024-05-01T09:30:10Z"),
        schedule: {
          id: "ops/soon", job: "demo/noop", payload: "{\"n\":1}", cron: "15 30 9 * * *", everyMs: null, timezone: "UTC", enabled: true,
          misfire: "once", misfireCap: 1, overlap: "allow", anchorAt: 0, label: "soon", description: "", nextDueAt: at("2024-05-01T09:30:15Z")
        }
      })
      yield* TestClock.adjust("1 minute")
      yield* Fiber.interrupt(fiber)
      const fires = yield* mine.schedules.schedulesHistory({ scheduleId: "ops/soon", limit: 10 })
      expect(fires.map((f) => f.outcome)).toEqual(["enqueued"])
      expect(fires[0]!.enqueuedAt - at("2024-05-01T09:30:15Z")).toBeLessThanOrEqual(1_000)
    }))
  }, 30_000)
})

describe("leadership", () => {
  test("only the lease holder fires; a standby takes over when the leader stops", async () => {
    const first = fresh()
    const second = first.reopen()
    const hourly = JobSchedule.make({ id: "demo/hourly", job: noop, payload: { n: 1 }, cron: "0 * * * *" })
    await onTestClock(Effect.gen(function*() {
      yield* TestClock.setTime(at("2024-05-01T09:30:00Z"))
      const a = yield* start(first.schedules, { owner: "a", schedules: [hourly], pollMs: 60_000 })
      const b = yield* start(second.schedules, { owner: "b", schedules: [hourly], pollMs: 60_000 })
      yield* TestClock.adjust("40 minutes")
      expect(yield* a.scheduler.isLeader).toBe(true)
      expect(yield* b.scheduler.isLeader).toBe(false)
      yield* Fiber.interrupt(a.fiber) // releases the lease at 10:10
      yield* TestClock.adjust("10 seconds")
      expect(yield* b.scheduler.isLeader).toBe(true)
      yield* TestClock.adjust("1 hour")
      yield* Fiber.interrupt(b.fiber)
      expect(yield* history(first.schedules, "demo/hourly")).toEqual(["10:00 enqueued @10:00", "11:00 enqueued @11:00"])
    }))
    expect(await Effect.runPromise(first.executions.executionsList({ scheduleId: "demo/hourly" }))).toHaveLength(2)
  }, 30_000)
})
