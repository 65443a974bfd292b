/**
 * The Scheduler enqueues the Vixie catch-up fire: a daily 02:30 in Europe/Berlin runs at
 * 03:00 CEST on the day 02:30 does not exist (31 March 2024), once, recorded `enqueued`,
 * and not again at the autumn overlap — on the TestClock against a real SQLite file.
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
import { applyMigrations, openDatabase } from "../../src/store/sqlite/SqliteConnection.ts"

const cleanups: Array<() => void> = []
afterEach(() => {
  while (cleanups.length) cleanups.pop()!()
})

const freshStore = () => {
  const dir = mkdtempSync(join(tmpdir(), "roster-"))
  const db: Database = openDatabase({ path: join(dir, "roster.db") })
  applyMigrations(db, 0)
  cleanups.push(() => {
    db.close(false)
    rmSync(dir, { recursive: true, force: true })
  })
  return makeSqliteScheduleStore(db)
}

const at = (iso: string) => Date.parse(iso)
const noop = Job.make({ id: "demo/noop", payload: Schema.Struct({}), handler: () => Effect.void })

const firesOf = (store: ScheduleStore["Service"], id: string) =>
  Effect.map(store.schedulesHistory({ scheduleId: id, limit: 100 }), (fires) =>
    fires.map((f) => `${new Date(f.dueAt).toISOString()} ${f.outcome}`).reverse())

const runFor = (store: ScheduleStore["Service"], schedule: JobSchedule.JobSchedule, from: string, hours: number) =>
  Effect.runPromise(Effect.provide(
    Effect.gen(function*() {
      yield* TestClock.setTime(at(from))
      const scheduler = yield* Scheduler.make({ jobs: new Map([["demo/noop", Scheduler.fromJob(noop)]]), owner: "a", schedules: [schedule], pollMs: 60_000, leaseTtlMs: 600_000 })
      const fiber = yield* Effect.forkChild(Effect.provideService(scheduler.run, ScheduleStore, store))
      yield* Effect.yieldNow
      yield* TestClock.adjust(`${hours} hours`)
      yield* Fiber.interrupt(fiber)
      return yield* firesOf(store, schedule.id)
    }),
    Layer.merge(TestClock.layer(), Layer.succeed(References.MinimumLogLevel, "None"))
  ))

describe("the Scheduler across daylight saving", () => {
  test("a daily 02:30 in Europe/Berlin runs at 03:00 CEST on 31 March 2024, once, and the days around at 02:30", async () => {
    const store = freshStore()
    const nightly = JobSchedule.make({ id: "demo/nightly", job: noop, payload: {}, cron: "30 2 * * *", timezone: "Europe/Berlin" })
    expect(await runFor(store, nightly, "2024-03-29T12:00:00Z", 72)).toEqual([
      "2024-03-30T01:30:00.000Z enqueued", // 02:30 CET
      "2024-03-31T01:00:00.000Z enqueued", // no 02:30 that day: 03:00 CEST, right after the gap
      "2024-04-01T00:30:00.000Z enqueued" // 02:30 CEST
    ])
  })

  test("the autumn overlap still runs 02:30 once, at its first occurrence", async () => {
    const store = freshStore()
    const nightly = JobSchedule.make({ id: "demo/nightly", job: noop, payload: {}, cron: "30 2 * * *", timezone: "Europe/Berlin" })
    expect(await runFor(store, nightly, "2024-10-26T12:00:00Z", 48)).toEqual([
      "2024-10-27T00:30:00.000Z enqueued", // 02:30 CEST; not again at 02:30 CET
      "2024-10-28T01:30:00.000Z enqueued"
    ])
  })
})
