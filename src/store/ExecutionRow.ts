/**
 * The columns of an execution row as both stores keep them, and the one mapping from a
 * row to an Execution. Backends differ only in how a driver hands over integers
 * (SQLite: numbers; PostgreSQL BIGINT: strings) and booleans (SQLite: 0/1), so they
 * pass the row with those columns as they come and this module normalises them.
 */
import type { Execution, ExecutionState } from "./Execution.ts"
import { UnparsedPayload } from "./Execution.ts"

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
  retry: JSON.parse(r.retry),
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
  result: parseJson(r.result),
  error: parseJson(r.error) as Execution["error"]
})

/** Claim order: priority DESC, run_at ASC, id ASC (RETURNING rows come unordered). */
export const byClaimOrder = (a: Execution, b: Execution): number =>
  b.priority - a.priority || a.runAt - b.runAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)
