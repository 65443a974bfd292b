/**
 * The ownership rules of schedule rows and the plan of a file sync, as pure functions
 * over stored rows, so the SQLite and PostgreSQL ScheduleStores apply one set of rules
 * (each then writes the plan in its own transaction):
 * - a sync upserts `file` rows, retires the file rows no longer declared, and refuses to
 *   take over an id another source owns;
 * - `system` rows are Roster's: not edited, deleted, paused or resumed from outside;
 * - a `file` row is edited in code: the API may pause it, not edit or delete it;
 * - an update resets the next due time only when the schedule (re)starts or its trigger
 *   changed, so an edit of a payload keeps the schedule's place.
 */
import { intOrNull } from "./ExecutionRow.ts"
import { bool, definitionChanged, type ScheduleRow, triggerChanged } from "./ScheduleRow.ts"
import type { ScheduleSource, ScheduleSpec, SyncResult } from "./ScheduleStore.ts"
import { ScheduleNotFound, ScheduleReadOnly, ScheduleSourceConflict } from "./ScheduleStore.ts"

/** A typed refusal computed inside a transaction (which then commits nothing). */
export type Refusal = ScheduleNotFound | ScheduleReadOnly | ScheduleSourceConflict

/** Whether a transaction's result is a refusal. */
export const isRefusal = (u: unknown): u is Refusal =>
  u instanceof ScheduleNotFound || u instanceof ScheduleReadOnly || u instanceof ScheduleSourceConflict

/** What updating `row` to `spec` writes: the next due time to keep or reset; undefined when nothing changed. */
export const updateOf = (row: ScheduleRow, spec: ScheduleSpec): { readonly nextDueAt: number | null } | undefined => {
  const revived = row.retired_at !== null
  if (!revived && !definitionChanged(row, spec)) return undefined
  const restart = revived || triggerChanged(row, spec) || (!bool(row.enabled) && spec.enabled)
  return { nextDueAt: restart ? spec.nextDueAt : intOrNull(row.next_due_at) }
}

/** The writes of a file sync. */
export interface FileSyncPlan {
  readonly insert: ReadonlyArray<ScheduleSpec>
  readonly update: ReadonlyArray<{ readonly spec: ScheduleSpec; readonly nextDueAt: number | null }>
  readonly unchanged: ReadonlyArray<string>
  readonly retire: ReadonlyArray<string>
}

/** Plans syncing the declared `specs` over the stored `rows` (by id); refuses an id another source owns. */
export const planFileSync = (rows: ReadonlyMap<string, ScheduleRow>, specs: ReadonlyArray<ScheduleSpec>): FileSyncPlan | ScheduleSourceConflict => {
  const plan = { insert: [] as Array<ScheduleSpec>, update: [] as Array<{ spec: ScheduleSpec; nextDueAt: number | null }>, unchanged: [] as Array<string>, retire: [] as Array<string> }
  for (const spec of specs) {
    const row = rows.get(spec.id)
    if (row === undefined) {
      plan.insert.push(spec)
      continue
    }
    if (row.source !== "file") {
      return new ScheduleSourceConflict({
        id: spec.id,
        source: "file",
        existing: row.source,
        message: `schedule "${spec.id}" is declared in code but a ${row.source} schedule already has this id; rename one of them`
      })
    }
    const update = updateOf(row, spec)
    if (update === undefined) plan.unchanged.push(spec.id)
    else plan.update.push({ spec, nextDueAt: update.nextDueAt })
  }
  const declared = new Set(specs.map((s) => s.id))
  for (const row of rows.values()) {
    if (row.source === "file" && row.retired_at === null && !declared.has(row.id)) plan.retire.push(row.id)
  }
  return plan
}

/** What a sync reports, from its plan. */
export const syncResultOf = (plan: FileSyncPlan): SyncResult => ({
  inserted: plan.insert.map((s) => s.id),
  updated: plan.update.map((u) => u.spec.id),
  retired: plan.retire,
  unchanged: plan.unchanged
})

/** Why a `source` may not upsert over `row`, if it may not. */
export const upsertRefusal = (row: ScheduleRow, id: string, source: ScheduleSource): ScheduleReadOnly | ScheduleSourceConflict | undefined => {
  if (row.source === "system" && source !== "system") {
    return new ScheduleReadOnly({ id, message: `schedule "${id}" is owned by Roster (system) and cannot be edited` })
  }
  if (row.source !== source) {
    return new ScheduleSourceConflict({
      id,
      source,
      existing: row.source,
      message: `schedule "${id}" is a ${row.source} schedule${row.source === "file" ? " declared in code; edit it there" : ""}`
    })
  }
  return undefined
}

/** No schedule `id`. */
export const notFound = (id: string): ScheduleNotFound => new ScheduleNotFound({ id, message: `no schedule "${id}"` })

/** Why the schedule `id` may not be deleted, if it may not. */
export const deleteRefusal = (row: ScheduleRow, id: string): ScheduleReadOnly | ScheduleSourceConflict | undefined => {
  if (row.source === "system") return new ScheduleReadOnly({ id, message: `schedule "${id}" is owned by Roster (system) and cannot be deleted` })
  if (row.source === "file" && row.retired_at === null) {
    return new ScheduleSourceConflict({
      id,
      source: "studio",
      existing: "file",
      message: `schedule "${id}" is declared in code; remove it from its schedules.ts (or pause it)`
    })
  }
  return undefined
}

/** Why the schedule `id` may not be paused or resumed, if it may not. */
export const pauseRefusal = (row: ScheduleRow, id: string): ScheduleReadOnly | undefined => {
  if (row.source === "system") return new ScheduleReadOnly({ id, message: `schedule "${id}" is owned by Roster (system) and cannot be paused or resumed` })
  return undefined
}
