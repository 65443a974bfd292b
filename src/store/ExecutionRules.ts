/**
 * The decisions of the execution store as pure functions over requests and stored rows,
 * so the SQLite and PostgreSQL Stores apply one set of rules and only run statements:
 * the claim guard, an outcome's attempt row (a Reaper's recovery is `lease_expired`, a
 * retry of an execution asked to cancel `cancelled`), the success read back from its
 * execution, the cancel decision, and one filter, clamp and fold for lists and stats.
 */
import { type Attempt, type AttemptOutcome, type ExecutionState, states } from "./Execution.ts"
import { type ExecutionRow, intOrNull } from "./ExecutionRow.ts"
import type { CancelResult, ClaimRequest, ExecutionFilter, Outcome, QueueStats } from "./Store.ts"

/** Whether a claim cannot match any row (no room left, or no job to run), so nothing is read. */
export const claimsNothing = (req: Pick<ClaimRequest, "limit" | "jobs">): boolean => req.limit <= 0 || req.jobs.length === 0

/** An outcome's error as stored JSON text; null when it has none. */
export const errorTextOf = (o: Outcome): string | null => ("error" in o && o.error !== null ? JSON.stringify(o.error) : null)

/** For a Reaper's outcome, the time its lease must still be expired at when written (`lease_expires_at < now`); else null. */
export const expiredBeforeOf = (o: Outcome): number | null => ("expired" in o && o.expired === true ? o.now : null)

/** The attempt row an outcome writes, as asked (see {@link endedAttemptOutcome}); null for a release (not charged). */
export const attemptOutcomeOf = (o: Outcome): AttemptOutcome | null =>
  o.kind === "released" || o.kind === "park" ? null : o.kind === "retry" ? (o.expired ? "lease_expired" : "retrying") : o.kind === "failed" && o.expired ? "lease_expired" : o.kind

/** The attempt outcome once applied: a retry that left the execution cancelled (asked to cancel) is `cancelled`. */
export const endedAttemptOutcome = (asked: AttemptOutcome, state: ExecutionState): AttemptOutcome =>
  asked === "retrying" && state === "cancelled" ? "cancelled" : asked

/** An execution's attempts with its succeeded one, which has no row (read back from the execution; lease_owner is kept as its worker). */
export const withSucceededAttempt = (attempts: Array<Attempt>, id: string, row: ExecutionRow | undefined | null): Array<Attempt> => {
  if (!row || row.state !== "succeeded" || attempts.some((a) => a.attempt === row.attempt)) return attempts
  const [startedAt, finishedAt] = [intOrNull(row.started_at) ?? 0, intOrNull(row.finished_at) ?? 0]
  return [...attempts, { executionId: id, attempt: row.attempt, worker: row.lease_owner ?? "", startedAt, finishedAt, outcome: "succeeded", error: null }]
}

/** What a cancel of an execution in `state` (undefined: no such execution) does and reports. */
export const cancelOf = (state: ExecutionState | undefined): { readonly result: CancelResult | null; readonly write: "cancel" | "request" | null } =>
  state === undefined ? { result: null, write: null } : state === "queued" || state === "waiting" ? { result: "cancelled", write: "cancel" }
  : state === "running" ? { result: "requested", write: "request" } : { result: "already-finished", write: null }

/** One condition of a list or count filter: `column op value`. */
export interface FilterClause {
  readonly column: "job" | "queue" | "state" | "created_at" | "schedule_id" | "id" | "parent_id"
  readonly op: "=" | ">=" | "<"
  readonly value: string | number
}

const filterColumns = [
  ["job", "job", "="], ["queue", "queue", "="], ["state", "state", "="], ["since", "created_at", ">="], ["scheduleId", "schedule_id", "="], ["before", "id", "<"], ["parentId", "parent_id", "="]
] as const

/** The conditions of a filter, in a fixed order (joined with AND; none: every row). */
export const filterClauses = (f: ExecutionFilter): ReadonlyArray<FilterClause> =>
  filterColumns.flatMap(([key, column, op]) => (f[key] === undefined ? [] : [{ column, op, value: f[key] }]))

/** How many rows a list or a history page returns: `limit` (default 100) held to 1..10,000. */
export const pageLimit = (limit: number | undefined): number => Math.max(1, Math.min(limit ?? 100, 10_000))

/** How many executions (and fires) one prune may delete: never fewer than none. */
export const pruneLimit = (limit: number): number => Math.max(0, limit)

/** A throughput bucket's width: whole milliseconds, at least one. */
export const bucketMsOf = (bucketMs: number): number => Math.max(1, Math.floor(bucketMs))

/** Counts by state from grouped rows (a state with no row counts zero). */
export const countsOf = (rows: ReadonlyArray<{ readonly state: ExecutionState; readonly n: number }>): Record<ExecutionState, number> =>
  Object.fromEntries([...states.map((s) => [s, 0] as const), ...rows.map((r) => [r.state, r.n] as const)]) as Record<ExecutionState, number>

/** Per-queue stats from counts grouped by (queue, state) and each queue's oldest due run_at, ordered by queue. */
export const queueStatsOf = (
  counts: ReadonlyArray<{ readonly queue: string; readonly state: ExecutionState; readonly n: number }>,
  oldest: ReadonlyArray<{ readonly queue: string; readonly at: number }>
): ReadonlyArray<QueueStats> => {
  const queues = [...new Set([...counts.map((r) => r.queue), ...oldest.map((r) => r.queue)])].sort((a, b) => a.localeCompare(b))
  return queues.map((queue): QueueStats => ({
    queue,
    counts: countsOf(counts.filter((r) => r.queue === queue)),
    oldestDueAt: oldest.find((r) => r.queue === queue)?.at ?? null
  }))
}
