/**
 * The columns of a schedule row and a fire row as both stores keep them, the one
 * mapping from each to its domain value, and the one comparison of a stored row with a
 * declared spec (does the file sync have to write it, restart its trigger?). Backends
 * differ only in how a driver hands over integers (SQLite: numbers; PostgreSQL BIGINT:
 * strings) and booleans (SQLite: 0/1), normalised here as in ExecutionRow.ts.
 */
import { type Int, int, intOrNull } from "./ExecutionRow.ts"
import type { FireOutcome, ScheduleFire, ScheduleSource, ScheduleSpec, StoredSchedule } from "./ScheduleStore.ts"

/** A stored boolean: SQLite's 0/1 or PostgreSQL's boolean. */
type Bool = number | boolean

/** A boolean column as a boolean. */
export const bool = (v: Bool): boolean => v === true || v === 1

/** A schedule row as a driver returns it. */
export interface ScheduleRow {
  id: string
  source: ScheduleSource
  job: string
  payload: string
  cron: string | null
  every_ms: Int | null
  timezone: string
  enabled: Bool
  paused: Bool
  misfire: StoredSchedule["misfire"]
  misfire_cap: number
  overlap: StoredSchedule["overlap"]
  label: string
  description: string
  anchor_at: Int
  next_due_at: Int | null
  last_due_at: Int | null
  retired_at: Int | null
  created_at: Int
  updated_at: Int
}

/** A fire row as a driver returns it. */
export interface FireRow {
  schedule_id: string
  due_at: Int
  enqueued_at: Int
  outcome: FireOutcome
  execution_id: string | null
  error: string | null
}

/** Maps a stored schedule row to a StoredSchedule. */
export const toSchedule = (r: ScheduleRow): StoredSchedule => ({
  id: r.id,
  source: r.source,
  job: r.job,
  payload: r.payload,
  cron: r.cron,
  everyMs: intOrNull(r.every_ms),
  timezone: r.timezone,
  enabled: bool(r.enabled),
  paused: bool(r.paused),
  misfire: r.misfire,
  misfireCap: r.misfire_cap,
  overlap: r.overlap,
  label: r.label,
  description: r.description,
  anchorAt: int(r.anchor_at),
  nextDueAt: intOrNull(r.next_due_at),
  lastDueAt: intOrNull(r.last_due_at),
  retiredAt: intOrNull(r.retired_at),
  createdAt: int(r.created_at),
  updatedAt: int(r.updated_at)
})

/** Maps a stored fire row to a ScheduleFire. */
export const toFire = (r: FireRow): ScheduleFire => ({
  scheduleId: r.schedule_id,
  dueAt: int(r.due_at),
  enqueuedAt: int(r.enqueued_at),
  outcome: r.outcome,
  executionId: r.execution_id,
  error: r.error
})

/** Whether the spec fires at other times than the row: its next due time must be recomputed. */
export const triggerChanged = (row: ScheduleRow, spec: ScheduleSpec): boolean =>
  row.cron !== spec.cron || intOrNull(row.every_ms) !== spec.everyMs || row.timezone !== spec.timezone || int(row.anchor_at) !== spec.anchorAt

/** Whether the spec differs from the row in anything the file sync writes. */
export const definitionChanged = (row: ScheduleRow, spec: ScheduleSpec): boolean =>
  triggerChanged(row, spec) || row.job !== spec.job || row.payload !== spec.payload || bool(row.enabled) !== spec.enabled ||
  row.misfire !== spec.misfire || row.misfire_cap !== spec.misfireCap || row.overlap !== spec.overlap ||
  row.label !== spec.label || row.description !== spec.description
