/**
 * The decisions of recording a schedule fire as pure functions, so the SQLite and
 * PostgreSQL ScheduleStores record fires by one set of rules; each runs the statements
 * in its own transaction, in this order: read the schedule (no live row: `unknown`),
 * read its active execution when the overlap check asks for it, decide the write
 * ({@link fireWriteOf}), insert the fire row (a (schedule, due) that exists: a
 * duplicate, nothing more is inserted), move the schedule forward, insert the fire's
 * execution when the fire is new and enqueues, point the fire at the existing
 * execution if its idempotency key already had one, and report ({@link fireResultOf}).
 */
import type { ExecutionState } from "./Execution.ts"
import { pageLimit } from "./ExecutionRules.ts"
import type { ScheduleRow } from "./ScheduleRow.ts"
import type { FireOutcome, RecordFireRequest, RecordFireResult } from "./ScheduleStore.ts"
import { fireKey } from "./ScheduleStore.ts"
import { type InsertRequest, type InsertResult, StoreError } from "./Store.ts"

/** Whether a fire may be recorded against `row`: it exists and is not retired. */
export const isLive = (row: ScheduleRow | null | undefined): row is ScheduleRow => row != null && row.retired_at === null

/** What recording a fire of no live schedule reports. */
export const unknownFire: RecordFireResult = { status: "unknown", outcome: null, executionId: null, inserted: false }

/** Whether deciding the fire needs the schedule's newest active execution (the overlap check). */
export const checksOverlap = (req: RecordFireRequest): boolean => req.outcome === "enqueued" && req.skipIfActive === true

/** What a fire writes: its row's outcome and error, and the execution it enqueues (key, schedule and fire time set). */
export interface FireWrite {
  readonly outcome: FireOutcome
  readonly error: string | null
  readonly execution: InsertRequest | undefined
}

/** A fire's write, given the schedule's active execution (null: none or not looked for); an enqueue without an execution is refused. */
export const fireWriteOf = (req: RecordFireRequest, active: { readonly id: string; readonly state: ExecutionState } | null): FireWrite | StoreError => {
  if (req.outcome === "enqueued" && req.skipIfActive && active) {
    return { outcome: "skipped", error: `overlap: previous execution ${active.id} is still ${active.state}`, execution: undefined }
  }
  if (req.outcome !== "enqueued") return { outcome: req.outcome, error: req.error ?? null, execution: undefined }
  if (!req.execution) return new StoreError({ message: `fire of ${req.scheduleId} at ${req.dueAt} is enqueued but has no execution` })
  return {
    outcome: "enqueued",
    error: req.error ?? null,
    execution: { ...req.execution, idempotencyKey: fireKey(req.scheduleId, req.dueAt), scheduleId: req.scheduleId, fireAt: req.dueAt }
  }
}

/** The execution to insert for a fire: only when its row is new and it enqueues. */
export const executionToInsert = (write: FireWrite, fresh: boolean): InsertRequest | undefined => (fresh ? write.execution : undefined)

/** Whether the fire row must point at another execution: its key already had one, whose id the insert returned. */
export const fireExecutionMoved = (write: FireWrite, inserted: InsertResult | undefined): inserted is InsertResult =>
  inserted !== undefined && inserted.id !== write.execution?.id

/** What recording the fire reports: a duplicate (row not new) records nothing; else the outcome and its execution. */
export const fireResultOf = (write: FireWrite, fresh: boolean, inserted: InsertResult | undefined): RecordFireResult =>
  !fresh ? { status: "duplicate", outcome: null, executionId: null, inserted: false }
  : { status: "recorded", outcome: write.outcome, executionId: inserted?.id ?? null, inserted: inserted?.inserted ?? false }

/** A history page's bounds: fires due before `before` (default: all), at most `limit` of them (held to 1..10,000). */
export const historyPageOf = (req: { readonly limit: number; readonly before?: number | undefined }): { readonly before: number; readonly limit: number } => ({
  before: req.before ?? Number.MAX_SAFE_INTEGER,
  limit: pageLimit(req.limit)
})
