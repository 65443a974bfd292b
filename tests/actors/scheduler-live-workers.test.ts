/**
 * "The scheduler only enqueues when a worker exists", the durable way: a fire of a Job
 * no live worker serves is still enqueued (nothing is lost), and its fire row says
 * "no live worker serves queue Q (job J)"; a fire a live worker serves carries no note.
 * The Scheduler on the TestClock against a real SQLite file, with the live workers read
 * from the same store.
 */
import { afterEach, describe, expect, test } from "bun:test"
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

const dir = mkdtempSync(join(tmpdir(), "roster-"))
afterEach(() => rmSync(dir, { recursive: true, force: true }))

const served = Job.make({ id: "demo/served", payload: Schema.Struct({ n: Schema.Number }), handler: () => Effect.void })
const orphan = Job.make({ id: "demo/orphan", queue: "reports", payload: Schema.Struct({ n: Schema.Number }), handler: () => Effect.void })

describe("fires of Jobs no live worker serves", () => {
  test("are enqueued all the same, and their fire rows name the queue and Job no live worker serves", async () => {
    const db = openDatabase({ path: join(dir, "roster.db") })
    applyMigrations(db, 0)
    const schedules = makeSqliteScheduleStore(db)
    const executions = makeSqliteStore(db)
    const start = Date.parse("2024-05-01T09:30:00Z")
    await Effect.runPromise(Effect.gen(function*() {
      yield* TestClock.setTime(start)
      // A live worker serving default/demo/served, and a stale one that served reports/demo/orphan.
      yield* executions.workersRegister({ worker: { id: "live", host: "h", pid: 1, queues: ["default"], jobs: ["demo/served"], version: "0.1.0", staleAfterMs: 86_400_000 }, now: start })
      yield* executions.workersRegister({ worker: { id: "dead", host: "h", pid: 2, queues: ["reports"], jobs: ["demo/orphan"], version: "0.1.0", staleAfterMs: 1_000 }, now: start })
      const scheduler = yield* Scheduler.make({
        owner: "a",
        schedules: [
          JobSchedule.make({ id: "demo/a", job: served, payload: { n: 1 }, cron: "0 * * * *" }),
          JobSchedule.make({ id: "demo/b", job: orphan, payload: { n: 2 }, cron: "0 * * * *" })
        ],
        jobs: new Map([["demo/served", Scheduler.fromJob(served)], ["demo/orphan", Scheduler.fromJob(orphan)]]),
        liveWorkers: (now) => executions.workersList({ now }),
        pollMs: 60_000,
        leaseTtlMs: 600_000
      })
      const fiber = yield* Effect.forkChild(Effect.provideService(scheduler.run, ScheduleStore, schedules))
      yield* TestClock.adjust("1 hour")
      yield* Fiber.interrupt(fiber)
    }).pipe(Effect.provide(Layer.merge(TestClock.layer(), Layer.succeed(References.MinimumLogLevel, "None")))))
    const fires = async (id: string) => (await Effect.runPromise(schedules.schedulesHistory({ scheduleId: id, limit: 10 }))).map((f) => [f.outcome, f.error, f.executionId !== null])
    expect(await fires("demo/a")).toEqual([["enqueued", null, true]])
    expect(await fires("demo/b")).toEqual([["enqueued", "no live worker serves queue reports (job demo/orphan)", true]])
    expect((await Effect.runPromise(executions.executionsList({ scheduleId: "demo/b" }))).map((e) => [e.queue, e.state])).toEqual([["reports", "queued"]])
    db.close(false)
  })
})
