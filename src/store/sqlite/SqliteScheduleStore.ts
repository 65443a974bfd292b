/**
 * The ScheduleStore on the same embedded SQLite file as the executions, so a fire row
 * and the execution it enqueues commit together (`BEGIN IMMEDIATE`). Every write that
 * reads before it writes (sync, upsert, pause, record) runs inside one immediate
 * transaction, so two processes serialise on the write lock instead of racing.
 *
 * Limits, plainly: one writer at a time, as for the whole SQLite store; schedules and
 * the lease are few rows, so every operation is a handful of indexed statements.
 */
import type { Database } from "bun:sqlite"
import { Effect } from "effect"
import type { ExecutionState } from "../Execution.ts"
import type { RecordFireRequest, RecordFireResult, ScheduleSource, ScheduleSpec, StoredSchedule, SyncResult } from "../ScheduleStore.ts"
import type { ScheduleNotFound, ScheduleReadOnly, ScheduleSourceConflict } from "../ScheduleStore.ts"
import { ScheduleStore } from "../ScheduleStore.ts"
import { StoreError } from "../Store.ts"
import { intOrNull } from "../ExecutionRow.ts"
import { bool, type FireRow, type ScheduleRow, toFire, toSchedule } from "../ScheduleRow.ts"
import { checksOverlap, executionToInsert, fireExecutionMoved, fireResultOf, fireWriteOf, historyPageOf, isLive, unknownFire } from "../FireRules.ts"
import { deleteRefusal, isRefusal, notFound, pauseRefusal, planFileSync, type Refusal, syncResultOf, updateOf, upsertRefusal } from "../ScheduleRules.ts"
import { makeStatements } from "./InsertStatements.ts"
import { attempt } from "./SqliteStore.ts"

/** Builds the SQLite ScheduleStore over an open, migrated database. */
export const makeSqliteScheduleStore = (db: Database): ScheduleStore["Service"] => {
  const { insertOne } = makeStatements(db)
  const getOne = db.query<ScheduleRow, [string]>("SELECT * FROM roster_schedules WHERE id = ?")
  const allRows = db.query<ScheduleRow, []>("SELECT * FROM roster_schedules ORDER BY id")
  const liveRows = db.query<ScheduleRow, []>("SELECT * FROM roster_schedules WHERE retired_at IS NULL ORDER BY id")
  const insertSchedule = db.query(
    `INSERT INTO roster_schedules (id, source, job, payload, cron, every_ms, timezone, enabled, paused, misfire, misfire_cap,
       overlap, label, description, anchor_at, next_due_at, last_due_at, retired_at, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?, ?, NULL, NULL, ?, ?)`
  )
  const updateSchedule = db.query(
    `UPDATE roster_schedules SET job = ?, payload = ?, cron = ?, every_ms = ?, timezone = ?, enabled = ?, misfire = ?,
       misfire_cap = ?, overlap = ?, label = ?, description = ?, anchor_at = ?, next_due_at = ?, retired_at = NULL, updated_at = ?
     WHERE id = ?`
  )
  const retire = db.query("UPDATE roster_schedules SET retired_at = ?, updated_at = ? WHERE id = ?")
  const setPaused = db.query("UPDATE roster_schedules SET paused = ?, next_due_at = ?, updated_at = ? WHERE id = ?")
  const deleteSchedule = db.query("DELETE FROM roster_schedules WHERE id = ?")
  const deleteFires = db.query("DELETE FROM roster_schedule_fires WHERE schedule_id = ?")
  const due = db.query<ScheduleRow, [number, number]>(
    `SELECT * FROM roster_schedules INDEXED BY roster_schedules_due
      WHERE retired_at IS NULL AND enabled = 1 AND paused = 0 AND next_due_at <= ?
      ORDER BY next_due_at, id LIMIT ?`
  )
  const nextDue = db.query<{ v: number | null }, []>(
    "SELECT MIN(next_due_at) AS v FROM roster_schedules WHERE retired_at IS NULL AND enabled = 1 AND paused = 0"
  )
  const insertFire = db.query(
    `INSERT INTO roster_schedule_fires (schedule_id, due_at, enqueued_at, outcome, execution_id, error)
     VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`
  )
  const setFireExecution = db.query("UPDATE roster_schedule_fires SET execution_id = ? WHERE schedule_id = ? AND due_at = ?")
  // NULL next_due_at means "no further fire", so it counts as the latest possible value.
  const advance = db.query(
    `UPDATE roster_schedules
        SET next_due_at = CASE WHEN next_due_at IS NULL OR ?1 IS NULL THEN NULL ELSE MAX(next_due_at, ?1) END,
            last_due_at = MAX(COALESCE(last_due_at, ?2), ?2)
      WHERE id = ?3`
  )
  const advanceOnly = db.query(
    "UPDATE roster_schedules SET next_due_at = CASE WHEN next_due_at IS NULL OR ?1 IS NULL THEN NULL ELSE MAX(next_due_at, ?1) END WHERE id = ?2"
  )
  const active = db.query<{ id: string; state: ExecutionState }, [string]>(
    `SELECT id, state FROM roster_executions INDEXED BY roster_executions_schedule_active
      WHERE schedule_id = ? AND state IN ('queued','running','waiting') ORDER BY id DESC LIMIT 1`
  )
  const history = db.query<FireRow, [string, number, number]>(
    "SELECT * FROM roster_schedule_fires WHERE schedule_id = ? AND due_at < ? ORDER BY due_at DESC LIMIT ?"
  )
  const acquire = db.query<{ owner: string }, [string, string, number, number]>(
    `INSERT INTO roster_leases (name, owner, expires_at) VALUES (?1, ?2, ?3)
     ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
       WHERE roster_leases.owner = excluded.owner OR roster_leases.expires_at <= ?4
     RETURNING owner`
  )
  const release = db.query("DELETE FROM roster_leases WHERE name = ? AND owner = ?")

  const writeSpec = (spec: ScheduleSpec, nextDueAt: number | null, now: number) =>
    updateSchedule.run(
      spec.job, spec.payload, spec.cron, spec.everyMs, spec.timezone, spec.enabled ? 1 : 0, spec.misfire, spec.misfireCap,
      spec.overlap, spec.label, spec.description, spec.anchorAt, nextDueAt, now, spec.id
    )
  const insertSpec = (spec: ScheduleSpec, source: ScheduleSource, now: number) =>
    insertSchedule.run(
      spec.id, source, spec.job, spec.payload, spec.cron, spec.everyMs, spec.timezone, spec.enabled ? 1 : 0, spec.misfire,
      spec.misfireCap, spec.overlap, spec.label, spec.description, spec.anchorAt, spec.nextDueAt, now, now
    )
  /** Updates an existing row to `spec`, when anything changed (ScheduleRules.updateOf). */
  const updateFromSpec = (row: ScheduleRow, spec: ScheduleSpec, now: number): void => {
    const update = updateOf(row, spec)
    if (update !== undefined) writeSpec(spec, update.nextDueAt, now)
  }

  const syncFile = db.transaction((specs: ReadonlyArray<ScheduleSpec>, now: number): SyncResult | Refusal => {
    const plan = planFileSync(new Map(allRows.all().map((r) => [r.id, r])), specs)
    if (isRefusal(plan)) return plan
    for (const spec of plan.insert) insertSpec(spec, "file", now)
    for (const { spec, nextDueAt } of plan.update) writeSpec(spec, nextDueAt, now)
    for (const id of plan.retire) retire.run(now, now, id)
    return syncResultOf(plan)
  })

  const upsert = db.transaction((spec: ScheduleSpec, source: "studio" | "system", now: number): StoredSchedule | ScheduleReadOnly | ScheduleSourceConflict => {
    const row = getOne.get(spec.id)
    if (row) {
      const refusal = upsertRefusal(row, spec.id, source)
      if (refusal) return refusal
      updateFromSpec(row, spec, now)
    } else {
      insertSpec(spec, source, now)
    }
    return toSchedule(getOne.get(spec.id)!)
  })

  const remove = db.transaction((id: string): Refusal | undefined => {
    const row = getOne.get(id)
    if (!row) return notFound(id)
    const refusal = deleteRefusal(row, id)
    if (refusal) return refusal
    deleteSchedule.run(id)
    deleteFires.run(id)
    return undefined
  })

  const pause = db.transaction((id: string, paused: boolean, now: number, nextDueAt: number | null): StoredSchedule | ScheduleNotFound | ScheduleReadOnly => {
    const row = getOne.get(id)
    if (!row) return notFound(id)
    const refusal = pauseRefusal(row, id)
    if (refusal) return refusal
    if (bool(row.paused) !== paused) {
      setPaused.run(paused ? 1 : 0, paused ? intOrNull(row.next_due_at) : nextDueAt, now, id)
    }
    return toSchedule(getOne.get(id)!)
  })

  /** Records one fire by FireRules, inside the caller's transaction. */
  const recordOne = (req: RecordFireRequest): RecordFireResult => {
    if (!isLive(getOne.get(req.scheduleId))) return unknownFire
    const write = fireWriteOf(req, checksOverlap(req) ? active.get(req.scheduleId) : null)
    if (write instanceof StoreError) throw write
    const fresh = insertFire.run(req.scheduleId, req.dueAt, req.now, write.outcome, write.execution?.id ?? null, write.error).changes === 1
    advance.run(req.nextDueAt, req.dueAt, req.scheduleId)
    const execution = executionToInsert(write, fresh)
    const inserted = execution && insertOne(execution)
    if (fireExecutionMoved(write, inserted)) setFireExecution.run(inserted.id, req.scheduleId, req.dueAt)
    return fireResultOf(write, fresh, inserted)
  }
  const recordMany = db.transaction((reqs: ReadonlyArray<RecordFireRequest>) => reqs.map(recordOne))

  /** Runs a transaction that may return a typed refusal, failing the Effect with it. */
  const attemptOrRefuse = <A, R extends Refusal>(what: string, f: () => A | R): Effect.Effect<Exclude<A, Refusal>, StoreError | R> =>
    Effect.flatMap(attempt(what, f), (r) => (isRefusal(r) ? Effect.fail(r as R) : Effect.succeed(r as Exclude<A, Refusal>)))

  return ScheduleStore.of({
    schedulesSyncFile: (req) =>
      attemptOrRefuse<SyncResult, ScheduleSourceConflict>("sync file schedules", () => syncFile.immediate(req.schedules, req.now) as SyncResult | ScheduleSourceConflict),
    schedulesUpsert: (req) =>
      attemptOrRefuse<StoredSchedule, ScheduleSourceConflict | ScheduleReadOnly>("upsert schedule", () => upsert.immediate(req.schedule, req.source, req.now)),
    schedulesDelete: (req) => attemptOrRefuse<void, Refusal>("delete schedule", () => remove.immediate(req.id)),
    schedulesSetPaused: (req) =>
      attemptOrRefuse<StoredSchedule, ScheduleNotFound | ScheduleReadOnly>("pause schedule", () => pause.immediate(req.id, req.paused, req.now, req.nextDueAt)),
    schedulesList: (req) =>
      attempt("list schedules", () => (req?.includeRetired ? allRows.all() : liveRows.all()).map(toSchedule)),
    schedulesGet: (id) =>
      attempt("get schedule", () => {
        const row = getOne.get(id)
        return row ? toSchedule(row) : null
      }),
    schedulesDue: (req) => attempt("find due schedules", () => (req.limit <= 0 ? [] : due.all(req.now, req.limit).map(toSchedule))),
    schedulesNextDueAt: attempt("find next due schedule", () => nextDue.get()?.v ?? null),
    schedulesAdvance: (req) => attempt("advance schedule", () => void advanceOnly.run(req.nextDueAt, req.id)),
    schedulesRecordFire: (req) => attempt("record fire", () => recordMany.immediate([req])[0]!),
    schedulesRecordFires: (reqs) => attempt("record fires", () => (reqs.length === 0 ? [] : recordMany.immediate(reqs))),
    schedulesHistory: (req) =>
      attempt("read schedule history", () => {
        const page = historyPageOf(req)
        return history.all(req.scheduleId, page.before, page.limit).map(toFire)
      }),
    schedulesActiveExecution: (scheduleId) => attempt("find active execution", () => active.get(scheduleId) ?? null),
    leaseAcquire: (req) =>
      attempt("acquire lease", () => acquire.get(req.name, req.owner, req.now + req.ttlMs, req.now) !== null),
    leaseRelease: (req) => attempt("release lease", () => void release.run(req.name, req.owner))
  })
}
