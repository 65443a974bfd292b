/**
 * The schedule store on every driver (SQLite file, PostgreSQL schema): a fire and its
 * execution commit together (or not at all), a (schedule, due) pair enqueues once even
 * from two connections or four processes, the file sync contract (upsert, retire,
 * pause survives, other sources untouched, system rows read-only), due lookups, and
 * the scheduler's leader lease.
 */
import { afterEach, describe, expect, test } from "bun:test"
import { Effect } from "effect"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { defaultPolicy } from "../../src/jobs/RetryPolicy.ts"
import type { InsertRequest } from "../../src/store/Store.ts"
import { Store } from "../../src/store/Store.ts"
import { fireKey, ScheduleStore, type ScheduleSpec } from "../../src/store/ScheduleStore.ts"
import { drivers, type Driver, type StoreFixture } from "./drivers.ts"

const fixtures: Array<StoreFixture> = []
afterEach(async () => {
  // Last opened first: a second connection closes before its database is removed.
  while (fixtures.length) await fixtures.pop()!.dispose()
})

/** Both stores of a fixture, as plain services. */
const open = async (f: StoreFixture) => {
  fixtures.push(f)
  return {
    schedules: await f.run(ScheduleStore.use((s) => Effect.succeed(s))),
    executions: await f.run(Store.use((s) => Effect.succeed(s)))
  }
}

/** A fresh, empty store with both services; `reopen` gives a second connection (another process). */
const freshOn = async (driver: Driver) => {
  const f = driver.make()
  return { ...(await open(f)), location: f.location, reopen: () => open(f.second()) }
}

const run = <A, E>(effect: Effect.Effect<A, E>) => Effect.runPromise(effect)
const failure = <A, E>(effect: Effect.Effect<A, E>) => Effect.runPromise(Effect.flip(effect))

const t0 = Date.parse("2024-05-01T09:00:00Z")
const hour = 3_600_000

const spec = (id: string, over: Partial<ScheduleSpec> = {}): ScheduleSpec => ({
  id,
  job: "demo/noop",
  payload: JSON.stringify({ n: 1 }),
  cron: "0 * * * *",
  everyMs: null,
  timezone: "UTC",
  enabled: true,
  misfire: "once",
  misfireCap: 1,
  overlap: "allow",
  anchorAt: 0,
  label: id,
  description: "",
  nextDueAt: t0 + hour,
  ...over
})

const execution = (id: string, now: number): InsertRequest => ({
  id,
  job: "demo/noop",
  queue: "default",
  payload: JSON.stringify({ n: 1 }),
  priority: 0,
  retry: defaultPolicy.snapshot,
  timeoutMs: 60_000,
  runAt: now,
  now,
  idempotencyKey: null
})

for (const driver of drivers) describe(`schedule store (${driver.name})`, () => {
  const fresh = () => freshOn(driver)

  describe("durable fires", () => {
    test("an enqueued fire writes the fire row and its execution together, and advances the schedule", async () => {
      const { schedules, executions } = await fresh()
      await run(schedules.schedulesUpsert({ schedule: spec("demo/hourly"), source: "studio", now: t0 }))
      const due = t0 + hour
      const r = await run(schedules.schedulesRecordFire({
        scheduleId: "demo/hourly", dueAt: due, now: due + 5, outcome: "enqueued", execution: execution("exec-1", due + 5), nextDueAt: due + hour
      }))
      expect(r).toEqual({ status: "recorded", outcome: "enqueued", executionId: "exec-1", inserted: true })
      const stored = await run(executions.executionsGet("exec-1"))
      expect(stored?.idempotencyKey).toBe(fireKey("demo/hourly", due))
      expect(stored?.idempotencyKey).toBe("schedule:demo/hourly:2024-05-01T10:00:00.000Z")
      expect(stored?.scheduleId).toBe("demo/hourly")
      expect(stored?.fireAt).toBe(due)
      const history = await run(schedules.schedulesHistory({ scheduleId: "demo/hourly", limit: 10 }))
      expect(history).toEqual([{ scheduleId: "demo/hourly", dueAt: due, enqueuedAt: due + 5, outcome: "enqueued", executionId: "exec-1", error: null }])
      const row = await run(schedules.schedulesGet("demo/hourly"))
      expect(row?.nextDueAt).toBe(due + hour)
      expect(row?.lastDueAt).toBe(due)
    })

    test("when the execution insert fails, the fire row is rolled back with it", async () => {
      const { schedules, executions } = await fresh()
      await run(schedules.schedulesUpsert({ schedule: spec("demo/hourly"), source: "studio", now: t0 }))
      // An execution already holds this id (without the fire's key), so the insert inside the fire's transaction throws.
      await run(executions.executionsInsert([execution("taken", t0)]))
      const due = t0 + hour
      const error = await failure(schedules.schedulesRecordFire({
        scheduleId: "demo/hourly", dueAt: due, now: due, outcome: "enqueued", execution: execution("taken", due), nextDueAt: due + hour
      }))
      expect(error._tag).toBe("StoreError")
      expect(await run(schedules.schedulesHistory({ scheduleId: "demo/hourly", limit: 10 }))).toEqual([])
      expect((await run(schedules.schedulesGet("demo/hourly")))?.nextDueAt).toBe(due)
    })

    test("prune trims schedule history due before the failed cut-off, up to the limit", async () => {
      const { schedules, executions } = await fresh()
      await run(schedules.schedulesUpsert({ schedule: spec("demo/hourly"), source: "studio", now: t0 }))
      for (const k of [1, 2, 3, 4]) {
        const due = t0 + k * hour
        await run(schedules.schedulesRecordFire({ scheduleId: "demo/hourly", dueAt: due, now: due, outcome: "skipped", nextDueAt: due + hour }))
      }
      const dues = async () => (await run(schedules.schedulesHistory({ scheduleId: "demo/hourly", limit: 10 }))).map((h) => (h.dueAt - t0) / hour).sort()
      const cut = { succeededBefore: t0 + 3.5 * hour, failedBefore: t0 + 3.5 * hour }
      await run(executions.executionsPrune({ ...cut, limit: 1 }))
      expect(await dues()).toHaveLength(3)
      await run(executions.executionsPrune({ ...cut, limit: 100 }))
      expect(await dues()).toEqual([4])
    })

    test("a second record of the same (schedule, due) inserts nothing and says duplicate", async () => {
      const { schedules, executions } = await fresh()
      await run(schedules.schedulesUpsert({ schedule: spec("demo/hourly"), source: "studio", now: t0 }))
      const due = t0 + hour
      const first = await run(schedules.schedulesRecordFire({ scheduleId: "demo/hourly", dueAt: due, now: due, outcome: "enqueued", execution: execution("a", due), nextDueAt: due + hour }))
      const second = await run(schedules.schedulesRecordFire({ scheduleId: "demo/hourly", dueAt: due, now: due + 1, outcome: "enqueued", execution: execution("b", due + 1), nextDueAt: due + hour }))
      expect(first.status).toBe("recorded")
      expect(second).toEqual({ status: "duplicate", outcome: null, executionId: null, inserted: false })
      expect((await run(executions.executionsList({ scheduleId: "demo/hourly" }))).map((e) => e.id)).toEqual(["a"])
      expect(await run(schedules.schedulesHistory({ scheduleId: "demo/hourly", limit: 10 }))).toHaveLength(1)
    })

    test("two connections (two schedulers) recording one fire enqueue it once", async () => {
      const first = await fresh()
      const second = await first.reopen()
      await run(first.schedules.schedulesUpsert({ schedule: spec("demo/hourly"), source: "studio", now: t0 }))
      const due = t0 + hour
      const results = await Promise.all([
        run(first.schedules.schedulesRecordFire({ scheduleId: "demo/hourly", dueAt: due, now: due, outcome: "enqueued", execution: execution("from-a", due), nextDueAt: due + hour })),
        run(second.schedules.schedulesRecordFire({ scheduleId: "demo/hourly", dueAt: due, now: due, outcome: "enqueued", execution: execution("from-b", due), nextDueAt: due + hour }))
      ])
      expect(results.map((r) => r.status).sort()).toEqual(["duplicate", "recorded"])
      expect(await run(first.executions.executionsList({ scheduleId: "demo/hourly" }))).toHaveLength(1)
    })

    test("four processes racing to record the same 50 fires enqueue each exactly once", async () => {
      const { schedules, executions, location } = await fresh()
      await run(schedules.schedulesUpsert({ schedule: spec("demo/race"), source: "studio", now: t0 }))
      const dir = mkdtempSync(join(tmpdir(), "roster-race-"))
      try {
        const script = join(dir, "race.ts")
        const src = (file: string) => JSON.stringify(join(import.meta.dir, "../..", file))
        writeFileSync(script, `
          import { Effect } from "effect"
          import { layerFor } from ${src("tests/store/drivers.ts")}
          import { ScheduleStore } from ${src("src/store/ScheduleStore.ts")}
          import { defaultPolicy } from ${src("src/jobs/RetryPolicy.ts")}
          const program = Effect.gen(function*() {
            const store = yield* ScheduleStore
            let recorded = 0
            for (let i = 1; i <= 50; i++) {
              const due = ${t0} + i * 60_000
              const r = yield* store.schedulesRecordFire({
                scheduleId: "demo/race", dueAt: due, now: due, outcome: "enqueued", nextDueAt: due + 60_000,
                execution: { id: Bun.randomUUIDv7(), job: "demo/noop", queue: "default", payload: "{}", priority: 0,
                  retry: defaultPolicy.snapshot, timeoutMs: 1000, runAt: due, now: due, idempotencyKey: null }
              })
              if (r.status === "recorded") recorded++
            }
            console.log(recorded)
          })
          await Effect.runPromise(program.pipe(Effect.provide(layerFor(${JSON.stringify(location)}))))
        `)
        const procs = Array.from({ length: 4 }, () => Bun.spawn([process.execPath, script], { stdout: "pipe", stderr: "pipe" }))
        expect(await Promise.all(procs.map((p) => p.exited))).toEqual([0, 0, 0, 0])
        const recorded = await Promise.all(procs.map((p) => new Response(p.stdout).text()))
        expect(recorded.reduce((n, out) => n + Number(out.trim()), 0)).toBe(50)
        expect(await run(schedules.schedulesHistory({ scheduleId: "demo/race", limit: 100 }))).toHaveLength(50)
        expect(await run(executions.executionsCount({ scheduleId: "demo/race" }))).toMatchObject({ queued: 50 })
      } finally {
        rmSync(dir, { recursive: true, force: true })
      }
    }, 30_000)

    test("next and last due only move forward", async () => {
      const { schedules } = await fresh()
      await run(schedules.schedulesUpsert({ schedule: spec("demo/hourly"), source: "studio", now: t0 }))
      await run(schedules.schedulesRecordFire({ scheduleId: "demo/hourly", dueAt: t0 + 3 * hour, now: t0 + 3 * hour, outcome: "missed", nextDueAt: t0 + 4 * hour }))
      await run(schedules.schedulesRecordFire({ scheduleId: "demo/hourly", dueAt: t0 + hour, now: t0 + 3 * hour, outcome: "missed", nextDueAt: t0 + 2 * hour }))
      const row = await run(schedules.schedulesGet("demo/hourly"))
      expect(row?.nextDueAt).toBe(t0 + 4 * hour)
      expect(row?.lastDueAt).toBe(t0 + 3 * hour)
    })

    test("a missed fire is recorded without an execution", async () => {
      const { schedules, executions } = await fresh()
      await run(schedules.schedulesUpsert({ schedule: spec("demo/hourly"), source: "studio", now: t0 }))
      const r = await run(schedules.schedulesRecordFire({ scheduleId: "demo/hourly", dueAt: t0 + hour, now: t0 + 3 * hour, outcome: "missed", nextDueAt: t0 + 4 * hour }))
      expect(r).toEqual({ status: "recorded", outcome: "missed", executionId: null, inserted: false })
      expect(await run(executions.executionsList({}))).toEqual([])
    })

    test("overlap skip: while the previous execution is queued, the fire is recorded skipped; once it ends, the next is enqueued", async () => {
      const { schedules, executions } = await fresh()
      await run(schedules.schedulesUpsert({ schedule: spec("demo/hourly", { overlap: "skip" }), source: "studio", now: t0 }))
      const fire = (n: number, id: string) =>
        run(schedules.schedulesRecordFire({ scheduleId: "demo/hourly", dueAt: t0 + n * hour, now: t0 + n * hour, outcome: "enqueued", execution: execution(id, t0 + n * hour), skipIfActive: true, nextDueAt: t0 + (n + 1) * hour }))
      expect((await fire(1, "e1")).outcome).toBe("enqueued")
      expect(await run(schedules.schedulesActiveExecution("demo/hourly"))).toEqual({ id: "e1", state: "queued" })
      const skipped = await fire(2, "e2")
      expect(skipped.outcome).toBe("skipped")
      expect(skipped.executionId).toBeNull()
      const history = await run(schedules.schedulesHistory({ scheduleId: "demo/hourly", limit: 1 }))
      expect(history[0]?.error).toContain("e1")
      await run(executions.executionsCancel({ id: "e1", now: t0 + 2 * hour }))
      expect(await run(schedules.schedulesActiveExecution("demo/hourly"))).toBeNull()
      expect((await fire(3, "e3")).outcome).toBe("enqueued")
    })

    test("a fire of an unknown or retired schedule writes nothing", async () => {
      const { schedules, executions } = await fresh()
      const r = await run(schedules.schedulesRecordFire({ scheduleId: "demo/ghost", dueAt: t0, now: t0, outcome: "enqueued", execution: execution("x", t0), nextDueAt: null }))
      expect(r.status).toBe("unknown")
      expect(await run(executions.executionsList({}))).toEqual([])
    })
  })

  describe("file sync", () => {
    test("upserts declared schedules and retires file schedules no longer declared", async () => {
      const { schedules } = await fresh()
      const first = await run(schedules.schedulesSyncFile({ schedules: [spec("demo/a"), spec("demo/b")], now: t0 }))
      expect(first).toEqual({ inserted: ["demo/a", "demo/b"], updated: [], retired: [], unchanged: [] })
      const second = await run(schedules.schedulesSyncFile({ schedules: [spec("demo/a", { label: "A" })], now: t0 + 1 }))
      expect(second).toEqual({ inserted: [], updated: ["demo/a"], retired: ["demo/b"], unchanged: [] })
      expect((await run(schedules.schedulesList())).map((s) => s.id)).toEqual(["demo/a"])
      const b = await run(schedules.schedulesGet("demo/b"))
      expect(b?.retiredAt).toBe(t0 + 1)
      expect((await run(schedules.schedulesList({ includeRetired: true }))).map((s) => s.id)).toEqual(["demo/a", "demo/b"])
      const third = await run(schedules.schedulesSyncFile({ schedules: [spec("demo/a", { label: "A" })], now: t0 + 2 }))
      expect(third).toEqual({ inserted: [], updated: [], retired: [], unchanged: ["demo/a"] })
    })

    test("an operator's pause survives a sync that changes the definition", async () => {
      const { schedules } = await fresh()
      await run(schedules.schedulesSyncFile({ schedules: [spec("demo/a")], now: t0 }))
      await run(schedules.schedulesSetPaused({ id: "demo/a", paused: true, now: t0, nextDueAt: null }))
      await run(schedules.schedulesSyncFile({ schedules: [spec("demo/a", { cron: "*/5 * * * *", nextDueAt: t0 + 300_000 })], now: t0 + 1 }))
      const row = await run(schedules.schedulesGet("demo/a"))
      expect(row?.paused).toBe(true)
      expect(row?.cron).toBe("*/5 * * * *")
    })

    test("a trigger change or a revival resets the next due; other edits keep it", async () => {
      const { schedules } = await fresh()
      await run(schedules.schedulesSyncFile({ schedules: [spec("demo/a")], now: t0 }))
      await run(schedules.schedulesSyncFile({ schedules: [spec("demo/a", { payload: "{\"n\":2}", nextDueAt: 999 })], now: t0 }))
      expect((await run(schedules.schedulesGet("demo/a")))?.nextDueAt).toBe(t0 + hour)
      await run(schedules.schedulesSyncFile({ schedules: [spec("demo/a", { payload: "{\"n\":2}", timezone: "Europe/Berlin", nextDueAt: t0 + 2 * hour })], now: t0 }))
      expect((await run(schedules.schedulesGet("demo/a")))?.nextDueAt).toBe(t0 + 2 * hour)
      await run(schedules.schedulesSyncFile({ schedules: [], now: t0 + 1 }))
      await run(schedules.schedulesSyncFile({ schedules: [spec("demo/a", { nextDueAt: t0 + 9 * hour })], now: t0 + 8 * hour }))
      const revived = await run(schedules.schedulesGet("demo/a"))
      expect(revived?.retiredAt).toBeNull()
      expect(revived?.nextDueAt).toBe(t0 + 9 * hour)
    })

    test("studio and system schedules are never touched by a sync", async () => {
      const { schedules } = await fresh()
      const studio = await run(schedules.schedulesUpsert({ schedule: spec("ops/report"), source: "studio", now: t0 }))
      const system = await run(schedules.schedulesUpsert({ schedule: spec("roster/prune"), source: "system", now: t0 }))
      const result = await run(schedules.schedulesSyncFile({ schedules: [spec("demo/a")], now: t0 + 5 }))
      expect(result.retired).toEqual([])
      expect(await run(schedules.schedulesGet("ops/report"))).toEqual(studio)
      expect(await run(schedules.schedulesGet("roster/prune"))).toEqual(system)
    })

    test("a declared schedule whose id is a studio or system row is refused, and nothing is written", async () => {
      const { schedules } = await fresh()
      await run(schedules.schedulesUpsert({ schedule: spec("ops/report"), source: "studio", now: t0 }))
      const error = await failure(schedules.schedulesSyncFile({ schedules: [spec("demo/a"), spec("ops/report")], now: t0 }))
      expect(error._tag).toBe("ScheduleSourceConflict")
      expect(error.message).toContain("ops/report")
      expect(error.message).toContain("studio")
      expect(await run(schedules.schedulesGet("demo/a"))).toBeNull()
    })
  })

  describe("studio and system schedules", () => {
    test("a system schedule refuses studio edits, pause and delete", async () => {
      const { schedules } = await fresh()
      await run(schedules.schedulesUpsert({ schedule: spec("roster/prune"), source: "system", now: t0 }))
      expect((await failure(schedules.schedulesUpsert({ schedule: spec("roster/prune", { cron: "* * * * *" }), source: "studio", now: t0 })))._tag).toBe("ScheduleReadOnly")
      expect((await failure(schedules.schedulesSetPaused({ id: "roster/prune", paused: true, now: t0, nextDueAt: null })))._tag).toBe("ScheduleReadOnly")
      const del = await failure(schedules.schedulesDelete({ id: "roster/prune" }))
      expect(del._tag).toBe("ScheduleReadOnly")
      expect(del.message).toContain("cannot be deleted")
      expect((await run(schedules.schedulesGet("roster/prune")))?.cron).toBe("0 * * * *")
    })

    test("a studio schedule pauses, resumes from the next fire after now (no catch-up), and deletes with its history", async () => {
      const { schedules } = await fresh()
      await run(schedules.schedulesUpsert({ schedule: spec("ops/report"), source: "studio", now: t0 }))
      await run(schedules.schedulesRecordFire({ scheduleId: "ops/report", dueAt: t0 + hour, now: t0 + hour, outcome: "missed", nextDueAt: t0 + 2 * hour }))
      const paused = await run(schedules.schedulesSetPaused({ id: "ops/report", paused: true, now: t0 + hour, nextDueAt: null }))
      expect(paused.paused).toBe(true)
      expect(await run(schedules.schedulesDue({ now: t0 + 10 * hour, limit: 10 }))).toEqual([])
      const resumed = await run(schedules.schedulesSetPaused({ id: "ops/report", paused: false, now: t0 + 10 * hour, nextDueAt: t0 + 11 * hour }))
      expect(resumed.nextDueAt).toBe(t0 + 11 * hour)
      await run(schedules.schedulesDelete({ id: "ops/report" }))
      expect(await run(schedules.schedulesGet("ops/report"))).toBeNull()
      expect(await run(schedules.schedulesHistory({ scheduleId: "ops/report", limit: 10 }))).toEqual([])
      expect((await failure(schedules.schedulesDelete({ id: "ops/report" })))._tag).toBe("ScheduleNotFound")
    })

    test("a live file schedule cannot be deleted or edited from the studio; a retired one can be deleted", async () => {
      const { schedules } = await fresh()
      await run(schedules.schedulesSyncFile({ schedules: [spec("demo/a")], now: t0 }))
      expect((await failure(schedules.schedulesDelete({ id: "demo/a" })))._tag).toBe("ScheduleSourceConflict")
      expect((await failure(schedules.schedulesUpsert({ schedule: spec("demo/a"), source: "studio", now: t0 })))._tag).toBe("ScheduleSourceConflict")
      await run(schedules.schedulesSyncFile({ schedules: [], now: t0 }))
      await run(schedules.schedulesDelete({ id: "demo/a" }))
      expect(await run(schedules.schedulesGet("demo/a"))).toBeNull()
    })
  })

  describe("due schedules", () => {
    test("only live schedules whose next due has come are due, earliest first", async () => {
      const { schedules } = await fresh()
      await run(schedules.schedulesSyncFile({
        schedules: [
          spec("demo/late", { nextDueAt: t0 + 2 * hour }),
          spec("demo/early", { nextDueAt: t0 + hour }),
          spec("demo/future", { nextDueAt: t0 + 5 * hour }),
          spec("demo/off", { enabled: false, nextDueAt: t0 })
        ],
        now: t0
      }))
      await run(schedules.schedulesUpsert({ schedule: spec("ops/paused", { nextDueAt: t0 }), source: "studio", now: t0 }))
      await run(schedules.schedulesSetPaused({ id: "ops/paused", paused: true, now: t0, nextDueAt: null }))
      const due = await run(schedules.schedulesDue({ now: t0 + 3 * hour, limit: 10 }))
      expect(due.map((s) => s.id)).toEqual(["demo/early", "demo/late"])
      expect(await run(schedules.schedulesNextDueAt)).toBe(t0 + hour)
    })
  })

  describe("leader lease", () => {
    test("a free lease is taken, refused to another owner until it expires, and renewed by its holder", async () => {
      const { schedules } = await fresh()
      const acquire = (owner: string, now: number) => run(schedules.leaseAcquire({ name: "scheduler", owner, now, ttlMs: 10_000 }))
      expect(await acquire("a", t0)).toBe(true)
      expect(await acquire("b", t0 + 5_000)).toBe(false)
      expect(await acquire("a", t0 + 9_000)).toBe(true) // renewed until t0 + 19 s
      expect(await acquire("b", t0 + 12_000)).toBe(false)
      expect(await acquire("b", t0 + 19_000)).toBe(true) // expired: taken over
      expect(await acquire("a", t0 + 19_001)).toBe(false)
    })

    test("a released lease is taken by a standby at once", async () => {
      const { schedules } = await fresh()
      expect(await run(schedules.leaseAcquire({ name: "scheduler", owner: "a", now: t0, ttlMs: 10_000 }))).toBe(true)
      await run(schedules.leaseRelease({ name: "scheduler", owner: "b" })) // not b's to release
      expect(await run(schedules.leaseAcquire({ name: "scheduler", owner: "b", now: t0 + 1, ttlMs: 10_000 }))).toBe(false)
      await run(schedules.leaseRelease({ name: "scheduler", owner: "a" }))
      expect(await run(schedules.leaseAcquire({ name: "scheduler", owner: "b", now: t0 + 2, ttlMs: 10_000 }))).toBe(true)
    })
  })
})
