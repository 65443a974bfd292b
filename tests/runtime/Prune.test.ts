/**
 * Pruning of finished executions (DESIGN §2 "Processes"): succeeded executions older
 * than their retention, and failed or cancelled ones older than theirs, are deleted
 * with their attempts, steps, logs and log-drop counts; younger ones stay, and queued
 * or running executions are never deleted, however old. Run in process on the
 * TestClock against a real SQLite file: rows are made by a real worker at chosen
 * instants, then pruned through the store and through the `roster/prune` Job, which
 * the system Schedule of the same name fires hourly with the config's retention.
 */
import { Database } from "bun:sqlite"
import { describe, expect, test } from "bun:test"
import { Effect, Exit, Schema, Scope } from "effect"
import { TestClock } from "effect/testing"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Job from "../../src/jobs/Job.ts"
import * as RetryPolicy from "../../src/jobs/RetryPolicy.ts"
import { Client } from "../../src/runtime/Client.ts"
import { defaultFailedMs, defaultSucceededMs, pruneJob, retentionOf } from "../../src/runtime/Prune.ts"
import type { Core } from "../../src/runtime/Core.ts"
import * as SchedulerRuntime from "../../src/runtime/SchedulerRuntime.ts"
import * as Worker from "../../src/runtime/Worker.ts"
import { ScheduleStore } from "../../src/store/ScheduleStore.ts"
import { Store } from "../../src/store/Store.ts"
import { eventually, runOnTestClock, testSettings } from "../support/runtime.ts"

const day = 86_400_000

/** Succeeds after a step and a log line. */
const ok = Job.make({
  id: "t/ok",
  payload: Schema.Struct({ tag: Schema.String }),
  handler: ({ tag }, ctx) =>
    ctx.step("one", Effect.succeed(1)).pipe(Effect.andThen(Effect.log(`ok ${tag}`)), Effect.as({ tag }))
})

/** Fails permanently after a step and a log line. */
const bad = Job.make({
  id: "t/bad",
  payload: Schema.Struct({ tag: Schema.String }),
  handler: ({ tag }, ctx) =>
    ctx.step("one", Effect.succeed(1)).pipe(Effect.andThen(Effect.log(`bad ${tag}`)), Effect.andThen(Job.permanent(`bad ${tag}`)))
})

/** Fails its first attempt transiently, succeeds on the second: a succeeded execution with attempt rows. */
const flaky = Job.make({
  id: "t/flaky",
  payload: Schema.Struct({ tag: Schema.String }),
  retry: RetryPolicy.fixed({ attempts: 2, delay: 1_000 }),
  handler: ({ tag }, ctx) =>
    ctx.step(`attempt-${ctx.attempt}`, Effect.succeed(ctx.attempt)).pipe(
      Effect.andThen(Effect.log(`flaky ${tag} attempt ${ctx.attempt}`)),
      Effect.andThen(ctx.attempt === 1 ? Effect.fail({ _tag: "Transient", message: "first attempt fails" }) : Effect.succeed({ tag }))
    )
})

/** Never run by the tests' workers in time: kept queued (delayed) or claimed by a "worker elsewhere". */
const idle = Job.make({ id: "t/idle", payload: Schema.Struct({ tag: Schema.String }), handler: () => Effect.void })

const jobs = [ok, bad, flaky, idle, pruneJob]

const stateOf = (id: string) => Effect.map(Store.use((s) => s.executionsGet(id)), (e) => e)

/** Runs a worker until every given execution is finished, then stops it, so the clock can jump days without it. */
const runWorkerUntilFinished = (
  ids: ReadonlyArray<string>,
  options: { readonly retryAfterMs?: number; readonly logLines?: Readonly<Record<string, number>> } = {}
) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    yield* Scope.provide(scope)(Worker.start({ settings: testSettings }))
    const finished = Effect.map(
      Effect.forEach(ids, (id) => stateOf(id)),
      (es) => es.every((e) => e !== null && (e.state === "succeeded" || e.state === "failed" || e.state === "cancelled"))
    )
    if (options.retryAfterMs !== undefined) {
      // Let first attempts fail, then move the clock to their retry.
      yield* eventually(Effect.map(Effect.forEach(ids, (id) => stateOf(id)), (es) => es.every((e) => e !== null && e.state !== "running" && (e.state !== "queued" || e.attempt > 0))), "first attempts")
      yield* TestClock.adjust(options.retryAfterMs)
    }
    yield* eventually(finished, "executions to finish")
    // Logs are persisted by the LogSink after the outcome: wait for every execution's lines.
    yield* eventually(
      Effect.map(Effect.forEach(ids, (id) => Store.use((s) => s.logsList(id))), (ls) =>
        ls.every((l, i) => l.lines.length >= (options.logLines?.[ids[i]!] ?? 1))),
      "logs persisted"
    )
    yield* Scope.close(scope, Exit.void)
  })

/** What is left of one execution: its row, and its rows in every child table. */
interface Remains {
  readonly state: string | null
  readonly attempts: number
  readonly steps: number
  readonly logs: number
  readonly logDrops: number
}

const remainsOf = (db: Database, id: string): Remains => {
  const n = (table: string) => db.query<{ n: number }, [string]>(`SELECT COUNT(*) AS n FROM ${table} WHERE execution_id = ?`).get(id)!.n
  const row = db.query<{ state: string }, [string]>("SELECT state FROM roster_executions WHERE id = ?").get(id)
  return { state: row?.state ?? null, attempts: n("roster_attempts"), steps: n("roster_steps"), logs: n("roster_logs"), logDrops: n("roster_log_drops") }
}

const gone: Remains = { state: null, attempts: 0, steps: 0, logs: 0, logDrops: 0 }

describe("pruning finished executions", () => {
  test("old succeeded executions go after their retention and failed or cancelled ones after theirs, with attempts, steps and logs; queued and running stay", async () => {
    const dir = mkdtempSync(join(tmpdir(), "roster-prune-"))
    const dbPath = join(dir, "roster.db")
    const db = new Database(dbPath, { create: true })
    try {
      const snapshots = await runOnTestClock(jobs, Effect.gen(function*() {
        const client = yield* Client
        const store = yield* Store
        const snap = <K extends string>(ids: Record<K, string>) =>
          Effect.sync(() => Object.fromEntries(Object.entries<string>(ids).map(([name, id]) => [name, remainsOf(db, id)])) as Record<K, Remains>)

        // Day 0: one execution of each kind.
        const sOld = (yield* client.enqueue(ok, { tag: "s-old" })).id
        const fOld = (yield* client.enqueue(bad, { tag: "f-old" })).id
        const rOld = (yield* client.enqueue(flaky, { tag: "r-old" })).id
        yield* runWorkerUntilFinished([sOld, fOld, rOld], { retryAfterMs: 1_000, logLines: { [rOld]: 2 } })
        const xOld = (yield* client.enqueue(idle, { tag: "x-old" }, { delayMs: 365 * day })).id
        expect(yield* client.cancel(xOld)).toBe("cancelled")
        // Queued far in the future, and running under a worker that is not here (its lease outlives the test).
        const qOld = (yield* client.enqueue(idle, { tag: "q-old" }, { delayMs: 365 * day })).id
        const runOld = (yield* client.enqueue(idle, { tag: "run-old" })).id
        const claimed = yield* store.executionsClaim({ queue: "default", jobs: [idle.id], workerId: "elsewhere", limit: 10, now: 1_000, leaseMs: 365 * day })
        expect(claimed.map((e) => e.id)).toEqual([runOld])
        // Log-drop counts belong to an execution too.
        yield* store.logsAppend({ lines: [], drops: [{ executionId: sOld, attempt: 1, dropped: 3 }, { executionId: fOld, attempt: 1, dropped: 2 }] })

        // Day 5: a younger succeeded, failed and cancelled execution.
        yield* TestClock.adjust(5 * day)
        const sMid = (yield* client.enqueue(ok, { tag: "s-mid" })).id
        const fMid = (yield* client.enqueue(bad, { tag: "f-mid" })).id
        yield* runWorkerUntilFinished([sMid, fMid])
        const xMid = (yield* client.enqueue(idle, { tag: "x-mid" }, { delayMs: 365 * day })).id
        expect(yield* client.cancel(xMid)).toBe("cancelled")

        const ids = { sOld, fOld, rOld, xOld, qOld, runOld, sMid, fMid, xMid }
        const before = yield* snap(ids)

        // Day 10, through the store with the default retention: only the day-0 succeeded ones
        // are older than 7 days; limit bounds one call.
        yield* TestClock.adjust(5 * day)
        const cut = { succeededBefore: 10 * day - defaultSucceededMs, failedBefore: 10 * day - defaultFailedMs }
        const first = yield* store.executionsPrune({ ...cut, limit: 1 })
        const rest = yield* store.executionsPrune({ ...cut, limit: 5_000 })
        const again = yield* store.executionsPrune({ ...cut, limit: 5_000 })
        const day10 = yield* snap(ids)

        // Day 33, through the roster/prune Job with the default retention: day-0 failed and
        // cancelled ones are now older than 30 days, the day-5 succeeded one older than 7.
        yield* TestClock.adjust(23 * day)
        const prune33 = (yield* client.enqueue(pruneJob, retentionOf({}))).id
        yield* runWorkerUntilFinished([prune33])
        const day33 = yield* snap(ids)
        const prune33Detail = yield* client.get(prune33)
        const prune33Logs = yield* store.logsList(prune33)

        // Day 36, through the Job with a shorter failed retention given in its payload (2 days):
        // the day-5 failed and cancelled ones go; the prune run of day 33 is younger than 7 days.
        yield* TestClock.adjust(3 * day)
        const prune36 = (yield* client.enqueue(pruneJob, { succeededMs: 7 * day, failedMs: 2 * day })).id
        yield* runWorkerUntilFinished([prune36])
        const day36 = yield* snap({ ...ids, prune33, prune36 })
        const prune36Detail = yield* client.get(prune36)

        // A year later, queued and running executions are still never pruned.
        yield* TestClock.adjust(400 * day)
        const late = yield* store.executionsPrune({ succeededBefore: 436 * day, failedBefore: 436 * day, limit: 5_000 })
        const final = yield* snap({ ...ids, prune33, prune36 })

        return {
          before, first, rest, again, day10, day33, day36, late, final,
          prune33: { state: prune33Detail?.state, result: prune33Detail?.result, logs: prune33Logs.lines.map((l) => l.message) },
          prune36: { state: prune36Detail?.state, result: prune36Detail?.result }
        }
      }), { db: dbPath })

      const { before, day10, day33, day36, final } = snapshots
      // Every finished execution had something in each child table to prune.
      // (A handler's own lines are logged; the worker may add its own, e.g. for a failure.)
      expect(before.sOld).toMatchObject({ state: "succeeded", attempts: 0, steps: 1, logDrops: 1 })
      expect(before.fOld).toMatchObject({ state: "failed", attempts: 1, steps: 1, logDrops: 1 })
      expect(before.rOld).toMatchObject({ state: "succeeded", attempts: 1, steps: 2, logDrops: 0 })
      for (const r of [before.sOld, before.fOld, before.rOld, before.sMid, before.fMid]) expect(r.logs).toBeGreaterThan(0)
      expect(before.rOld.logs).toBeGreaterThanOrEqual(2)
      expect(before.xOld).toEqual({ state: "cancelled", attempts: 0, steps: 0, logs: 0, logDrops: 0 })
      expect(before.qOld.state).toBe("queued")
      expect(before.runOld.state).toBe("running")
      expect(before.sMid).toMatchObject({ state: "succeeded", steps: 1 })
      expect(before.fMid).toMatchObject({ state: "failed", attempts: 1, steps: 1 })
      expect(before.xMid.state).toBe("cancelled")

      // Day 10: the two day-0 succeeded executions, one per call under limit 1.
      expect([snapshots.first, snapshots.rest, snapshots.again]).toEqual([1, 1, 0])
      expect(day10.sOld).toEqual(gone)
      expect(day10.rOld).toEqual(gone)
      expect(day10.fOld).toEqual(before.fOld)
      expect(day10.xOld).toEqual(before.xOld)
      expect(day10.sMid).toEqual(before.sMid)
      expect(day10.fMid).toEqual(before.fMid)
      expect(day10.qOld).toEqual(before.qOld)
      expect(day10.runOld).toEqual(before.runOld)

      // Day 33 (the Job, default retention): day-0 failed and cancelled, day-5 succeeded.
      expect(snapshots.prune33).toEqual({ state: "succeeded", result: { deleted: 3 }, logs: ["pruned 3 finished execution(s)"] })
      expect(day33.fOld).toEqual(gone)
      expect(day33.xOld).toEqual(gone)
      expect(day33.sMid).toEqual(gone)
      expect(day33.fMid).toEqual(before.fMid)
      expect(day33.xMid).toEqual(before.xMid)
      expect(day33.qOld).toEqual(before.qOld)
      expect(day33.runOld).toEqual(before.runOld)

      // Day 36 (the Job, failed retention from its payload): the day-5 failed and cancelled.
      expect(snapshots.prune36).toEqual({ state: "succeeded", result: { deleted: 2 } })
      expect(day36.fMid).toEqual(gone)
      expect(day36.xMid).toEqual(gone)
      expect(day36.prune33.state).toBe("succeeded")
      expect(day36.qOld).toEqual(before.qOld)
      expect(day36.runOld).toEqual(before.runOld)

      // Long after: only the two prune runs were left to go; queued and running remain.
      expect(snapshots.late).toBe(2)
      expect(final.qOld).toEqual(before.qOld)
      expect(final.runOld).toEqual(before.runOld)
      expect(final.prune33).toEqual(gone)
      expect(final.prune36).toEqual(gone)
      expect(db.query<{ n: number }, []>("SELECT COUNT(*) AS n FROM roster_executions").get()!.n).toBe(2)
      for (const table of ["roster_attempts", "roster_steps", "roster_logs", "roster_log_drops"]) {
        expect(db.query<{ n: number }, []>(`SELECT COUNT(*) AS n FROM ${table}`).get()!.n, table).toBe(0)
      }
    } finally {
      db.close(false)
      rmSync(dir, { recursive: true, force: true })
    }
  }, 60_000)

  test("the system Schedule roster/prune runs the prune Job hourly with the retention of the scheduler's config", async () => {
    const retention = { succeededMs: 10 * 60_000, failedMs: day }
    const body = Effect.gen(function*() {
      const client = yield* Client
      const store = yield* Store
      const schedules = yield* ScheduleStore
      // At 00:00, one succeeded and one failed execution.
      const s0 = (yield* client.enqueue(ok, { tag: "s0" })).id
      const f0 = (yield* client.enqueue(bad, { tag: "f0" })).id
      yield* runWorkerUntilFinished([s0, f0])

      // The scheduler alone (a long poll keeps the clock's wake-ups few) fires roster/prune at 00:17.
      const scope = yield* Scope.make()
      yield* Scope.provide(scope)(SchedulerRuntime.start({ owner: "test", pollMs: 3_600_000, leaseTtlMs: 3 * 3_600_000 }))
      yield* eventually(Effect.map(schedules.schedulesGet("roster/prune"), (r) => r !== null), "the system schedule")
      const row = (yield* schedules.schedulesGet("roster/prune"))!
      yield* TestClock.adjust(17 * 60_000)
      yield* eventually(Effect.map(schedules.schedulesHistory({ scheduleId: "roster/prune", limit: 10 }), (h) => h.length === 1), "the 00:17 fire")
      yield* Scope.close(scope, Exit.void)
      const [fire] = yield* schedules.schedulesHistory({ scheduleId: "roster/prune", limit: 10 })
      const execution = (yield* store.executionsGet(fire!.executionId!))!
      yield* runWorkerUntilFinished([execution.id])
      return {
        row,
        fire,
        execution,
        detail: yield* client.get(execution.id),
        s0: yield* store.executionsGet(s0),
        f0: yield* store.executionsGet(f0)
      }
    })
    // runOnTestClock's layer provides the ScheduleStore too; its signature names only what most tests use.
    const result = await runOnTestClock(
      jobs,
      body as Effect.Effect<Effect.Success<typeof body>, Effect.Error<typeof body>, Client | Core | Store | Scope.Scope>,
      { retention }
    )

    expect(result.row).toMatchObject({ source: "system", job: "roster/prune", cron: "17 * * * *", overlap: "skip", payload: JSON.stringify(retention) })
    expect(result.fire).toMatchObject({ dueAt: 17 * 60_000, outcome: "enqueued" })
    expect(result.execution).toMatchObject({ job: "roster/prune", scheduleId: "roster/prune", fireAt: 17 * 60_000, payload: retention })
    // Succeeded 17 minutes ago > 10 minutes: pruned; failed 17 minutes ago < 1 day: kept.
    expect(result.detail).toMatchObject({ state: "succeeded", result: { deleted: 1 } })
    expect(result.s0).toBeNull()
    expect(result.f0).toMatchObject({ state: "failed" })
  }, 60_000)
})
