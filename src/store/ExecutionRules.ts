/**
 * The decisions of the execution store as pure functions over requests and stored rows,
 * so the SQLite and PostgreSQL Stores apply one set of rules and only run statements:
 * - a claim that can match nothing (no room, no jobs) reads nothing;
 * - an outcome's attempt row says how the attempt ended: a Reaper's recovery is
 *   `lease_expired`, a retry of an execution asked to cancel is `cancelled`; a Reaper's
 *   outcome also carries the time its lease must still be expired at when written;
 * - a success has no attempt row of its own: it is read back from the execution;
 * - a cancel ends a queued execution at once, asks a running one to stop, and leaves a
 *   finished one as it is;
 * - lists, counts and stats share one filter, one clamp of each limit and one fold.
 */
import { type Attempt, type AttemptOutcome, type ExecutionState, states } from "./Execution.ts"
import { type ExecutionRow, intOrNull } from "./ExecutionRow.ts"
import type { CancelResult, ClaimRequest, ExecutionFilter, Outcome, QueueStats } from "./Store.ts"

/** Whether a claim cannot match any row (no room left, or no job to run), so nothing is read. */
export const claimsNothing = (req: Pick<ClaimRequest, "limit" | "jobs">): boolean => req.limit <= 0 || req.jobs.length === 0

/** An outcome's error as stored JSON text; null when it has none. */
export const errorTextOf = (o: Outcome): string | null => ("error" in o && o.error !== null ? JSON.stringify(o.error) : null)

/**
 * For a Reaper's outcome, the time its lease must still be expired at as it is written
 * (`lease_expires_at < now`): a heartbeat in between keeps the execution running. Null
 * for every other outcome.
 */
export const expiredBeforeOf = (o: Outcome): number | null => ("expired" in o && o.expired === true ? o.now : null)

/**
 * The attempt row an outcome writes, as asked: null for a release (not charged). A
 * retry that finds its execution asked to cancel ends it cancelled instead, see
 * {@link endedAttemptOutcome}.
 */
export const attemptOutcomeOf = (o: Outcome): AttemptOutcome | null => {
  switch (o.kind) {
    case "retry":
      return o.expired ? "lease_expired" : "retrying"
    case "failed":
      return o.expired ? "lease_expired" : "failed"
    case "cancelled":
      return "cancelled"
    case "succeeded":
      return "succeeded"
    case "released":
      return null
  }
}

/** The attempt outcome once applied: a retry that left the execution cancelled (asked to cancel) is `cancelled`. */
export const endedAttemptOutcome = (asked: AttemptOutcome, state: ExecutionState): AttemptOutcome =>
  asked === "retrying" && state === "cancelled" ? "cancelled" : asked

/**
 * An execution's attempts with its succeeded one, which has no row of its own (the hot
 * path writes none): read back from the execution, whose lease_owner is kept as its worker.
 */
export const withSucceededAttempt = (attempts: Array<Attempt>, id: string, row: ExecutionRow | undefined | null): Array<Attempt> => {
  if (row && row.state === "succeeded" && !attempts.some((a) => a.attempt === row.attempt)) {
    attempts.push({
      executionId: id,
      attempt: row.attempt,
      worker: row.lease_owner ?? "",
      startedAt: intOrNull(row.started_at) ?? 0,
      finishedAt: intOrNull(row.finished_at) ?? 0,
      outcome: "succeeded",
      error: null
    })
  }
  return attempts
}

/** What a cancel of an execution in `state` (undefined: no such execution) does and reports. */
export const cancelOf = (state: ExecutionState | undefined): { readonly result: CancelResult | null; readonly write: "cancel" | "request" | null } =>
  state === undefined ? { result: null, write: null }
  : state === "queued" ? { result: "cancelled", write: "cancel" }
  : state === "running" ? { result: "requested", write: "request" }
  : { result: "already-finished", write: null }

/** One condition of a list or count filter: `column op value`. */
export interface FilterClause {
  readonly column: "job" | "queue" | "state" | "created_at" | "schedule_id" | "id"
  readonly op: "=" | ">=" | "<"
  readonly value: string | number
}

/** The conditions of a filter, in a fixed order (joined with AND; none: every row). */
export const filterClauses = (f: ExecutionFilter): ReadonlyArray<FilterClause> => {
  const clauses: Array<FilterClause> = []
  if (f.job !== undefined) clauses.push({ column: "job", op: "=", value: f.job })
  if (f.queue !== undefined) clauses.push({ column: "queue", op: "=", value: f.queue })
  if (f.state !== undefined) clauses.push({ column: "state", op: "=", value: f.state })
  if (f.since !== undefined) clauses.push({ column: "created_at", op: ">=", value: f.since })
  if (f.scheduleId !== undefined) clauses.push({ column: "schedule_id", op: "=", value: f.scheduleId })
  if (f.before !== undefined) clauses.push({ column: "id", op: "<", value: f.before })
  return clauses
}

/** How many rows a list or a history page returns: `limit` (default 100) held to 1..10,000. */
export const pageLimit = (limit: number | undefined): number => Math.max(1, Math.min(limit ?? 100, 10_000))

/** How many executions (and fires) one prune may delete: never fewer than none. */
export const pruneLimit = (limit: number): number => Math.max(0, limit)

/** A throughput bucket's width: whole milliseconds, at least one. */
export const bucketMsOf = (bucketMs: number): number => Math.max(1, Math.floor(bucketMs))

/** Counts of every state, all zero. */
export const emptyCounts = (): Record<ExecutionState, number> => Object.fromEntries(states.map((s) => [s, 0])) as Record<ExecutionState, number>

/** Counts by state from grouped rows (a state with no row counts zero). */
export const countsOf = (rows: ReadonlyArray<{ readonly state: ExecutionState; readonly n: number }>): Record<ExecutionState, number> => {
  const counts = emptyCounts()
  for (const r of rows) counts[r.state] = r.n
  return counts
}

/** Per-queue stats from counts grouped by (queue, state) and each queue's oldest due run_at, ordered by queue. */
export const queueStatsOf = (
  counts: ReadonlyArray<{ readonly queue: string; readonly state: ExecutionState; readonly n: number }>,
  oldest: ReadonlyArray<{ readonly queue: string; readonly at: number }>
): ReadonlyArray<QueueStats> => {
  const byQueue = new Map<string, { counts: Record<ExecutionState, number>; oldestDueAt: number | null }>()
  const entry = (queue: string) => {
    let e = byQueue.get(queue)
    if (!e) byQueue.set(queue, (e = { counts: emptyCounts(), oldestDueAt: null }))
    return e
  }
  for (const r of counts) entry(r.queue).counts[r.state] = r.n
  for (const r of oldest) entry(r.queue).oldestDueAt = r.at
  return [...byQueue.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([queue, e]): QueueStats => ({ queue, ...e }))
}
