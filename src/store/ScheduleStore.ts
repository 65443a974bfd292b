/**
 * The store contract of Schedules: their rows (by source), their durable fires, and the
 * scheduler's leader lease. A separate service from Store so the Scheduler can be
 * built and tested on its own; implementations share the executions' database, because
 * a fire and the execution it enqueues are written in one transaction.
 *
 * Sources: `file` rows mirror the definitions in code and are changed only by
 * `schedulesSyncFile`; `studio` rows are created at run time; `system` rows belong to
 * Roster and refuse edits and deletes. A sync never writes a row of another source, and
 * an operator's pause survives it.
 *
 * Fires: a fire is identified by (schedule id, due time). Recording it inserts the
 * fire row and its execution in one transaction guarded by that unique pair, so a
 * crash, a restart or two schedulers never enqueue a fire twice. The schedule's
 * `nextDueAt`/`lastDueAt` only move forward when a fire is recorded.
 */
import { Context, Data, type Effect } from "effect"
import type { MisfirePolicy } from "../jobs/FirePlan.ts"
import type { Overlap } from "../jobs/JobSchedule.ts"
import { isoTime } from "../jobs/TimeRange.ts"
import type { ExecutionState } from "./Execution.ts"
import type { InsertRequest, StoreError } from "./Store.ts"

/** Who owns a schedule row. */
export type ScheduleSource = "file" | "studio" | "system"

/** What became of one fire. */
export type FireOutcome = "enqueued" | "skipped" | "missed"

/** A schedule as written by a sync or an upsert: the definition, payload already encoded. */
export interface ScheduleSpec {
  readonly id: string
  readonly job: string
  /** Encoded payload, JSON text. */
  readonly payload: string
  /** Exactly one of `cron` and `everyMs` is set. */
  readonly cron: string | null
  readonly everyMs: number | null
  readonly timezone: string
  readonly enabled: boolean
  readonly misfire: MisfirePolicy
  readonly misfireCap: number
  readonly overlap: Overlap
  /** Interval anchor: fires at anchorAt + k·everyMs. */
  readonly anchorAt: number
  readonly label: string
  readonly description: string
  /**
   * The first due time after the write, used only when the row is new, its trigger
   * changed, or it comes back from being retired or disabled (no catch-up for time it
   * did not exist or was off).
   */
  readonly nextDueAt: number | null
}

/** A stored schedule. Times are epoch ms. */
export interface StoredSchedule extends Omit<ScheduleSpec, "nextDueAt"> {
  readonly source: ScheduleSource
  /** Paused by an operator; survives a file sync. */
  readonly paused: boolean
  readonly nextDueAt: number | null
  readonly lastDueAt: number | null
  /** Set when a file schedule disappeared from code; its history is kept. */
  readonly retiredAt: number | null
  readonly createdAt: number
  readonly updatedAt: number
}

/** One recorded fire. */
export interface ScheduleFire {
  readonly scheduleId: string
  readonly dueAt: number
  /** When the scheduler decided the fire (enqueued it, or recorded the skip or miss). */
  readonly enqueuedAt: number
  readonly outcome: FireOutcome
  readonly executionId: string | null
  readonly error: string | null
}

/** What `schedulesSyncFile` changed, by schedule id. */
export interface SyncResult {
  readonly inserted: ReadonlyArray<string>
  readonly updated: ReadonlyArray<string>
  readonly retired: ReadonlyArray<string>
  readonly unchanged: ReadonlyArray<string>
}

/** Records one fire. */
export interface RecordFireRequest {
  readonly scheduleId: string
  readonly dueAt: number
  readonly now: number
  readonly outcome: FireOutcome
  /**
   * The execution to insert when `outcome` is `enqueued`. The store sets its
   * idempotency key (`schedule:<id>:<due ISO>`), schedule id and fire time.
   */
  readonly execution?: InsertRequest | undefined
  /** When set with `enqueued`: if an execution of this schedule is queued or running, record `skipped` instead (checked in the same transaction). */
  readonly skipIfActive?: boolean | undefined
  /** The schedule's next due after this fire; applied only if later than the stored one. */
  readonly nextDueAt: number | null
  readonly error?: string | undefined
}

/** What recording a fire did. */
export interface RecordFireResult {
  /** `duplicate`: the (schedule, due) fire already existed and nothing was inserted. `unknown`: no such live schedule. */
  readonly status: "recorded" | "duplicate" | "unknown"
  /** The outcome written (may be `skipped` where `enqueued` was asked, see skipIfActive). */
  readonly outcome: FireOutcome | null
  readonly executionId: string | null
  /** False when an execution with the fire's idempotency key already existed (its id is returned). */
  readonly inserted: boolean
}

/** No schedule has this id. */
export class ScheduleNotFound extends Data.TaggedError("ScheduleNotFound")<{
  readonly id: string
  readonly message: string
}> {}

/** The schedule is owned by Roster (`system`) and cannot be edited, paused or deleted. */
export class ScheduleReadOnly extends Data.TaggedError("ScheduleReadOnly")<{
  readonly id: string
  readonly message: string
}> {}

/** The id belongs to a schedule of another source (e.g. a file schedule named like a studio one). */
export class ScheduleSourceConflict extends Data.TaggedError("ScheduleSourceConflict")<{
  readonly id: string
  readonly source: ScheduleSource
  readonly existing: ScheduleSource
  readonly message: string
}> {}

/** The idempotency key of the execution a fire enqueues (a due time no Date holds keeps its number). */
export const fireKey = (scheduleId: string, dueAt: number): string => `schedule:${scheduleId}:${isoTime(dueAt)}`

/** The ScheduleStore service. */
export class ScheduleStore extends Context.Service<ScheduleStore, {
  /**
   * Makes the `file` rows match the definitions in code, in one transaction: upserts
   * them, retires file rows no longer declared, keeps every operator pause, and never
   * touches studio/system rows. Refuses (writing nothing) if a definition's id is
   * already a studio or system row.
   */
  readonly schedulesSyncFile: (req: {
    readonly schedules: ReadonlyArray<ScheduleSpec>
    readonly now: number
  }) => Effect.Effect<SyncResult, StoreError | ScheduleSourceConflict>
  /** Creates or updates a studio or system schedule; refuses a row of another source, and studio writes to system rows. */
  readonly schedulesUpsert: (req: {
    readonly schedule: ScheduleSpec
    readonly source: "studio" | "system"
    readonly now: number
  }) => Effect.Effect<StoredSchedule, StoreError | ScheduleSourceConflict | ScheduleReadOnly>
  /** Deletes a studio schedule and its fire history; refuses system rows (read-only) and file rows (declared in code). */
  readonly schedulesDelete: (req: { readonly id: string }) => Effect.Effect<void, StoreError | ScheduleNotFound | ScheduleReadOnly | ScheduleSourceConflict>
  /**
   * Pauses or resumes a file or studio schedule; refuses system rows. Resuming sets
   * the next due to `nextDueAt` (the first fire after now): fires while paused are not
   * caught up.
   */
  readonly schedulesSetPaused: (req: {
    readonly id: string
    readonly paused: boolean
    readonly now: number
    readonly nextDueAt: number | null
  }) => Effect.Effect<StoredSchedule, StoreError | ScheduleNotFound | ScheduleReadOnly>
  /** All schedules by id; retired ones only when asked. */
  readonly schedulesList: (req?: { readonly includeRetired?: boolean | undefined }) => Effect.Effect<ReadonlyArray<StoredSchedule>, StoreError>
  readonly schedulesGet: (id: string) => Effect.Effect<StoredSchedule | null, StoreError>
  /** Live (enabled, not paused, not retired) schedules due at `now`, earliest first. */
  readonly schedulesDue: (req: { readonly now: number; readonly limit: number }) => Effect.Effect<ReadonlyArray<StoredSchedule>, StoreError>
  /** The earliest next due of any live schedule, or null. */
  readonly schedulesNextDueAt: Effect.Effect<number | null, StoreError>
  /** Moves a schedule's next due forward (never back) without recording a fire, e.g. when no fire fell due after all. */
  readonly schedulesAdvance: (req: { readonly id: string; readonly nextDueAt: number | null }) => Effect.Effect<void, StoreError>
  /** Records one fire (see {@link RecordFireRequest}) in one `BEGIN IMMEDIATE` transaction. */
  readonly schedulesRecordFire: (req: RecordFireRequest) => Effect.Effect<RecordFireResult, StoreError>
  /** Records several fires in one transaction, in order (a plan is written whole or not at all). */
  readonly schedulesRecordFires: (reqs: ReadonlyArray<RecordFireRequest>) => Effect.Effect<ReadonlyArray<RecordFireResult>, StoreError>
  /** A schedule's fires, newest due first. */
  readonly schedulesHistory: (req: {
    readonly scheduleId: string
    readonly limit: number
    /** Only fires due before this time. */
    readonly before?: number | undefined
  }) => Effect.Effect<ReadonlyArray<ScheduleFire>, StoreError>
  /** The newest queued or running execution a schedule made, for the overlap check. */
  readonly schedulesActiveExecution: (scheduleId: string) => Effect.Effect<{ readonly id: string; readonly state: ExecutionState } | null, StoreError>
  /** Takes the named lease if free, expired or already ours (renewing it); returns whether we hold it. */
  readonly leaseAcquire: (req: {
    readonly name: string
    readonly owner: string
    readonly now: number
    readonly ttlMs: number
  }) => Effect.Effect<boolean, StoreError>
  /** Gives up the named lease if we hold it, so a standby can take over at once. */
  readonly leaseRelease: (req: { readonly name: string; readonly owner: string }) => Effect.Effect<void, StoreError>
}>()("roster/ScheduleStore") {}
