/**
 * The columns of an execution row (and of its attempt, step and log rows) as both
 * stores keep them, and the one mapping from each row to its domain value. Backends differ only in how a driver hands over integers
 * (SQLite: numbers; PostgreSQL BIGINT: strings) and booleans (SQLite: 0/1), so they
 * pass the row with those columns as they come and this module normalises them.
 */
import type { Attempt, Execution, ExecutionState, LogDrops, LogLine, Step } from "./Execution.ts"
import { UnparsedPayload } from "./Execution.ts"
import { parseWait } from "../jobs/Wait.ts"
import { decodeRetry } from "./RetryText.ts"

/** An integer column as a driver returns it (PostgreSQL BIGINT: a string). */
export type Int = number | string | bigint

/** An execution row as a driver returns it. */
export interface ExecutionRow {
  id: string
  job: string
  queue: string
  state: ExecutionState
  payload: string
  priority: number
  attempt: number
  max_attempts: number
  retry: string
  timeout_ms: Int
  run_at: Int
  created_at: Int
  started_at: Int | null
  finished_at: Int | null
  lease_owner: string | null
  lease_expires_at: Int | null
  cancel_requested: number | boolean
  idempotency_key: string | null
  schedule_id: string | null
  fire_at: Int | null
  retry_of: string | null
  trace_context: string | null
  concurrency_key?: string | null
  rate_key?: string | null
  dedupe_key?: string | null
  parent_id?: string | null
  parent_step?: string | null
  wait?: string | null
  result: string | null
  error: string | null
}

/** JSON text to a value; null stays null. */
export const parseJson = (text: string | null): unknown => (text === null ? null : JSON.parse(text))

/** A stored payload; text that is not JSON becomes an UnparsedPayload instead of throwing. */
export const parsePayload = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch (e) {
    return new UnparsedPayload(text, (e as Error).message)
  }
}

/** An integer column as a number. */
export const int = (v: Int): number => (typeof v === "number" ? v : Number(v))
/** A nullable integer column as a number or null. */
export const intOrNull = (v: Int | null): number | null => (v === null ? null : int(v))

/** Maps a stored row to an Execution. */
export const toExecution = (r: ExecutionRow): Execution => ({
  id: r.id,
  job: r.job,
  queue: r.queue,
  state: r.state,
  payload: parsePayload(r.payload),
  priority: r.priority,
  attempt: r.attempt,
  maxAttempts: r.max_attempts,
  retry: decodeRetry(r.retry),
  timeoutMs: int(r.timeout_ms),
  runAt: int(r.run_at),
  createdAt: int(r.created_at),
  startedAt: intOrNull(r.started_at),
  finishedAt: intOrNull(r.finished_at),
  leaseOwner: r.lease_owner,
  leaseExpiresAt: intOrNull(r.lease_expires_at),
  cancelRequested: r.cancel_requested === true || r.cancel_requested === 1,
  idempotencyKey: r.idempotency_key,
  scheduleId: r.schedule_id,
  fireAt: intOrNull(r.fire_at),
  retryOf: r.retry_of,
  traceContext: r.trace_context ?? null,
  concurrencyKey: r.concurrency_key ?? null,
  rateKey: r.rate_key ?? null,
  dedupeKey: r.dedupe_key ?? null,
  parentId: r.parent_id ?? null,
  parentStep: r.parent_step ?? null,
  wait: parseWait(r.wait),
  result: parseJson(r.result),
  error: parseJson(r.error) as Execution["error"]
})

/** An attempt row as a driver returns it. */
export interface AttemptRow { execution_id: string; attempt: number; worker: string; started_at: Int; finished_at: Int; outcome: Attempt["outcome"]; error: string | null }

/** Maps a stored attempt row to an Attempt. */
export const toAttempt = (r: AttemptRow): Attempt => ({
  executionId: r.execution_id, attempt: r.attempt, worker: r.worker, startedAt: int(r.started_at), finishedAt: int(r.finished_at), outcome: r.outcome,
  error: parseJson(r.error) as Attempt["error"]
})

/** A step row as a driver returns it. */
export interface StepRow { execution_id: string; name: string; output: string; attempt: number; created_at: Int }

/** Maps a stored step row to a Step. */
export const toStep = (r: StepRow): Step => ({ executionId: r.execution_id, name: r.name, output: r.output, attempt: r.attempt, createdAt: int(r.created_at) })

/** A log row as a driver returns it. */
export interface LogRow { execution_id: string; attempt: number; at: Int; level: string; message: string; annotations: string | null }

/** Maps a stored log row to a LogLine. */
export const toLogLine = (r: LogRow): LogLine =>
  ({ executionId: r.execution_id, attempt: r.attempt, at: int(r.at), level: r.level, message: r.message, annotations: r.annotations })

/** A log-drop row as a driver returns it. */
export interface LogDropsRow { execution_id: string; attempt: number; dropped: number }

/** Maps a stored log-drop row to LogDrops. */
export const toLogDrops = (r: LogDropsRow): LogDrops => ({ executionId: r.execution_id, attempt: r.attempt, dropped: r.dropped })

/** PostgreSQL's claim order: priority DESC, run_at ASC, id ASC (RETURNING rows come unordered; SQLite's is in sqlite/ClaimOrder.ts). */
export const byClaimOrder = (a: Execution, b: Execution): number =>
  b.priority - a.priority || a.runAt - b.runAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)

/**
 * Sorts claimed executions into {@link byClaimOrder}, in place. A claim of up to 64 rows
 * (the default batch is 50) by binary insertion: `Array.prototype.sort` calls the
 * comparator from native code, at a cost per call that made it about a microsecond of the
 * worker's thread a job in a PostgreSQL drain (bench/RESULTS.md, twenty-third pass).
 */
export const sortInClaimOrder = (executions: Array<Execution>): Array<Execution> => {
  if (executions.length > 64) return executions.sort(byClaimOrder)
  for (let i = 1; i < executions.length; i++) {
    const e = executions[i]!
    // The first of executions[0..i) that sorts after e (after its equals: stable).
    let lo = 0
    let hi = i
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (byClaimOrder(executions[mid]!, e) > 0) hi = mid
      else lo = mid + 1
    }
    for (let j = i; j > lo; j--) executions[j] = executions[j - 1]!
    executions[lo] = e
  }
  return executions
}
