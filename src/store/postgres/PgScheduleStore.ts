/**
 * The ScheduleStore on PostgreSQL, in the executions' database, so a fire row and the
 * execution it enqueues commit together. Every write that reads before it writes
 * (sync, upsert, delete, pause, record) runs in one transaction that first takes a
 * transaction-level advisory lock: schedule writers serialise the way SQLite's
 * `BEGIN IMMEDIATE` makes them, while workers — which never take that lock — carry on.
 * The (schedule, due) primary key of fires still guards against a second enqueue on
 * its own.
 *
 * Limits, plainly: schedule writes are serialised database-wide (per lock key), which
 * is fine for a handful of schedulers writing a few rows per fire; the overlap check
 * reads the executions table under READ COMMITTED, so a worker finishing the previous
 * execution at that very moment may still see the new fire skipped.
 */
import type { PgClient } from "@effect/sql-pg"
import { Effect } from "effect"
import type { SqlError } from "effect/sql/SqlError"
import type { ExecutionState } from "../Execution.ts"
import type { RecordFireRequest, RecordFireResult, ScheduleSource, ScheduleSpec } from "../ScheduleStore.ts"
import { ScheduleStore } from "../ScheduleStore.ts"
import { StoreError } from "../Store.ts"
import { bool, type FireRow, type ScheduleRow, toFire, toSchedule } from "../ScheduleRow.ts"
import { checksOverlap, executionToInsert, fireExecutionMoved, fireResultOf, fireWriteOf, historyPageOf, isLive, unknownFire } from "../FireRules.ts"
import { deleteRefusal, isRefusal, notFound, pauseRefusal, planFileSync, syncResultOf, updateOf, upsertRefusal } from "../ScheduleRules.ts"
import { insertExecutions } from "./ExecutionInsert.ts"
import { type Int8, numOrNull } from "./PgValues.ts"
import { operation } from "./PostgresConnection.ts"

/** Key of the advisory lock every schedule write takes ('rost', 2). */
const scheduleLockKey = [0x726f7374, 2] as const

/** Builds the PostgreSQL ScheduleStore over an open, migrated client (the Store's). */
export const makePgScheduleStore = (sql: PgClient.PgClient, options: { readonly reconnectWindowMs: number }): ScheduleStore["Service"] => {
  const op = operation(options.reconnectWindowMs)

  /** Runs `body` in a transaction holding the schedule write lock. */
  const locked = <A, E, R>(body: Effect.Effect<A, E, R>) =>
    sql.withTransaction(Effect.andThen(sql`SELECT pg_advisory_xact_lock(${scheduleLockKey[0]}, ${scheduleLockKey[1]})`, body))

  const getOne = (id: string) => Effect.map(sql<ScheduleRow>`SELECT * FROM roster_schedules WHERE id = ${id}`, (rows) => rows[0])

  const writeSpec = (spec: ScheduleSpec, nextDueAt: number | null, now: number) =>
    sql`UPDATE roster_schedules
           SET job = ${spec.job}, payload = ${spec.payload}, cron = ${spec.cron}, every_ms = ${spec.everyMs}, timezone = ${spec.timezone},
               enabled = ${spec.enabled}, misfire = ${spec.misfire}, misfire_cap = ${spec.misfireCap}, overlap = ${spec.overlap},
               label = ${spec.label}, description = ${spec.description}, anchor_at = ${spec.anchorAt}, next_due_at = ${nextDueAt},
               retired_at = NULL, updated_at = ${now}
         WHERE id = ${spec.id}`
  const insertSpec = (spec: ScheduleSpec, source: ScheduleSource, now: number) =>
    sql`INSERT INTO roster_schedules (id, source, job, payload, cron, every_ms, timezone, enabled, paused, misfire, misfire_cap,
          overlap, label, description, anchor_at, next_due_at, last_due_at, retired_at, created_at, updated_at)
        VALUES (${spec.id}, ${source}, ${spec.job}, ${spec.payload}, ${spec.cron}, ${spec.everyMs}, ${spec.timezone}, ${spec.enabled}, false,
          ${spec.misfire}, ${spec.misfireCap}, ${spec.overlap}, ${spec.label}, ${spec.description}, ${spec.anchorAt}, ${spec.nextDueAt},
          NULL, NULL, ${now}, ${now})`
  /** Updates an existing row to `spec`, when anything changed (ScheduleRules.updateOf). */
  const updateFromSpec = (row: ScheduleRow, spec: ScheduleSpec, now: number) => {
    const update = updateOf(row, spec)
    return update === undefined ? Effect.void : Effect.asVoid(writeSpec(spec, update.nextDueAt, now))
  }

  const syncFile = (specs: ReadonlyArray<ScheduleSpec>, now: number) =>
    locked(Effect.gen(function*() {
      const plan = planFileSync(new Map((yield* sql<ScheduleRow>`SELECT * FROM roster_schedules ORDER BY id`).map((r) => [r.id, r])), specs)
      if (isRefusal(plan)) return yield* plan
      for (const spec of plan.insert) yield* insertSpec(spec, "file", now)
      for (const { spec, nextDueAt } of plan.update) yield* writeSpec(spec, nextDueAt, now)
      for (const id of plan.retire) yield* sql`UPDATE roster_schedules SET retired_at = ${now}, updated_at = ${now} WHERE id = ${id}`
      return syncResultOf(plan)
    }))

  const upsert = (spec: ScheduleSpec, source: "studio" | "system", now: number) =>
    locked(Effect.gen(function*() {
      const row = yield* getOne(spec.id)
      if (row) {
        const refusal = upsertRefusal(row, spec.id, source)
        if (refusal) return yield* refusal
        yield* updateFromSpec(row, spec, now)
      } else {
        yield* insertSpec(spec, source, now)
      }
      return toSchedule((yield* getOne(spec.id))!)
    }))

  const remove = (id: string) =>
    locked(Effect.gen(function*() {
      const row = yield* getOne(id)
      if (!row) return yield* notFound(id)
      const refusal = deleteRefusal(row, id)
      if (refusal) return yield* refusal
      yield* sql`DELETE FROM roster_schedules WHERE id = ${id}`
      yield* sql`DELETE FROM roster_schedule_fires WHERE schedule_id = ${id}`
    }))

  const pause = (id: string, paused: boolean, now: number, nextDueAt: number | null) =>
    locked(Effect.gen(function*() {
      const row = yield* getOne(id)
      if (!row) return yield* notFound(id)
      const refusal = pauseRefusal(row, id)
      if (refusal) return yield* refusal
      if (bool(row.paused) !== paused) {
        yield* sql`UPDATE roster_schedules SET paused = ${paused}, next_due_at = ${paused ? numOrNull(row.next_due_at) : nextDueAt}, updated_at = ${now}
                    WHERE id = ${id}`
      }
      return toSchedule((yield* getOne(id))!)
    }))

  const active = (scheduleId: string) =>
    Effect.map(
      sql<{ id: string; state: ExecutionState }>`
        SELECT id, state FROM roster_executions
         WHERE schedule_id = ${scheduleId} AND state IN ('queued','running','waiting') ORDER BY id DESC LIMIT 1`,
      (rows) => rows[0] ?? null
    )

  // NULL next_due_at means "no further fire", so it counts as the latest possible value.
  const advance = (scheduleId: string, nextDueAt: number | null, dueAt: number) =>
    sql`UPDATE roster_schedules
           SET next_due_at = CASE WHEN next_due_at IS NULL OR ${nextDueAt}::int8 IS NULL THEN NULL ELSE GREATEST(next_due_at, ${nextDueAt}::int8) END,
               last_due_at = GREATEST(COALESCE(last_due_at, ${dueAt}::int8), ${dueAt}::int8)
         WHERE id = ${scheduleId}`

  /** Records one fire by FireRules, inside the caller's transaction. */
  const recordOne = (req: RecordFireRequest) =>
    Effect.gen(function*(): Effect.fn.Return<RecordFireResult, SqlError | StoreError> {
      if (!isLive(yield* getOne(req.scheduleId))) return unknownFire
      const write = fireWriteOf(req, checksOverlap(req) ? yield* active(req.scheduleId) : null)
      if (write instanceof StoreError) return yield* write
      const fresh = (yield* sql`
        INSERT INTO roster_schedule_fires (schedule_id, due_at, enqueued_at, outcome, execution_id, error)
        VALUES (${req.scheduleId}, ${req.dueAt}, ${req.now}, ${write.outcome}, ${write.execution?.id ?? null}, ${write.error})
        ON CONFLICT DO NOTHING RETURNING 1 AS one`).length === 1
      yield* advance(req.scheduleId, req.nextDueAt, req.dueAt)
      const execution = executionToInsert(write, fresh)
      // No origin: wake every process, this one too.
      const inserted = execution && (yield* insertExecutions(sql, [execution], { origin: "" }))[0]
      if (fireExecutionMoved(write, inserted)) {
        yield* sql`UPDATE roster_schedule_fires SET execution_id = ${inserted.id} WHERE schedule_id = ${req.scheduleId} AND due_at = ${req.dueAt}`
      }
      return fireResultOf(write, fresh, inserted)
    })

  const recordMany = (reqs: ReadonlyArray<RecordFireRequest>) => locked(Effect.forEach(reqs, recordOne))

  return ScheduleStore.of({
    schedulesSyncFile: (req) => op("sync file schedules", syncFile(req.schedules, req.now)),
    schedulesUpsert: (req) => op("upsert schedule", upsert(req.schedule, req.source, req.now)),
    schedulesDelete: (req) => op("delete schedule", remove(req.id)),
    schedulesSetPaused: (req) => op("pause schedule", pause(req.id, req.paused, req.now, req.nextDueAt)),
    schedulesList: (req) =>
      op("list schedules", Effect.map(
        req?.includeRetired
          ? sql<ScheduleRow>`SELECT * FROM roster_schedules ORDER BY id`
          : sql<ScheduleRow>`SELECT * FROM roster_schedules WHERE retired_at IS NULL ORDER BY id`,
        (rows) => rows.map(toSchedule)
      )),
    schedulesGet: (id) => op("get schedule", Effect.map(getOne(id), (row) => (row ? toSchedule(row) : null))),
    schedulesDue: (req) =>
      req.limit <= 0
        ? Effect.succeed([])
        : op("find due schedules", Effect.map(
          sql<ScheduleRow>`
            SELECT * FROM roster_schedules
             WHERE retired_at IS NULL AND enabled AND NOT paused AND next_due_at <= ${req.now}
             ORDER BY next_due_at, id LIMIT ${req.limit}`,
          (rows) => rows.map(toSchedule)
        )),
    schedulesNextDueAt: op("find next due schedule", Effect.map(
      sql<{ v: Int8 | null }>`SELECT MIN(next_due_at) AS v FROM roster_schedules WHERE retired_at IS NULL AND enabled AND NOT paused`,
      (rows) => numOrNull(rows[0]?.v ?? null)
    )),
    schedulesAdvance: (req) =>
      op("advance schedule", Effect.asVoid(sql`
        UPDATE roster_schedules
           SET next_due_at = CASE WHEN next_due_at IS NULL OR ${req.nextDueAt}::int8 IS NULL THEN NULL ELSE GREATEST(next_due_at, ${req.nextDueAt}::int8) END
         WHERE id = ${req.id}`)),
    schedulesRecordFire: (req) => op("record fire", Effect.map(recordMany([req]), (results) => results[0]!)),
    schedulesRecordFires: (reqs) => (reqs.length === 0 ? Effect.succeed([]) : op("record fires", recordMany(reqs))),
    schedulesHistory: (req) => {
      const page = historyPageOf(req)
      return op("read schedule history", Effect.map(
        sql<FireRow>`
          SELECT * FROM roster_schedule_fires WHERE schedule_id = ${req.scheduleId} AND due_at < ${page.before}
           ORDER BY due_at DESC LIMIT ${page.limit}`,
        (rows) => rows.map(toFire)
      ))
    },
    schedulesActiveExecution: (scheduleId) => op("find active execution", active(scheduleId)),
    leaseAcquire: (req) =>
      op("acquire lease", Effect.map(
        sql`INSERT INTO roster_leases (name, owner, expires_at) VALUES (${req.name}, ${req.owner}, ${req.now + req.ttlMs})
            ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
              WHERE roster_leases.owner = excluded.owner OR roster_leases.expires_at <= ${req.now}
            RETURNING owner`,
        (rows) => rows.length > 0
      )),
    leaseRelease: (req) => op("release lease", Effect.asVoid(sql`DELETE FROM roster_leases WHERE name = ${req.name} AND owner = ${req.owner}`))
  })
}
