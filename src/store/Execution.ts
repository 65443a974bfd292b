/**
 * The stored shape of a Job Execution and of its attempts, as the Store returns them.
 *
 * States: queued → running → succeeded | failed | cancelled. A retry goes back to
 * queued with a later runAt. "scheduled" (queued, runAt in the future) and "retrying"
 * (queued, attempt > 0) are views, not states.
 */
import type { ExecutionError } from "../jobs/Failure.ts"
import type { RetrySnapshot } from "../jobs/RetryPolicy.ts"
import type { Wait } from "../jobs/Wait.ts"

/** The stored states of an execution. */
export const states = ["queued", "running", "waiting", "succeeded", "failed", "cancelled"] as const

/** One stored state. */
export type ExecutionState = (typeof states)[number]

/** The last error of an execution or the error of an attempt (a domain type: jobs/Failure.ts classifies it). */
export type { ExecutionError }

/**
 * A stored payload that is not JSON text (written by hand or by a foreign tool). It is
 * returned in place of the payload so one bad row never breaks a claim of many; the
 * worker fails it permanently as UndecodablePayload.
 */
export class UnparsedPayload {
  constructor(readonly text: string, readonly reason: string) {}
}

/** A Job Execution. Times are epoch milliseconds. */
export interface Execution {
  readonly id: string
  readonly job: string
  readonly queue: string
  readonly state: ExecutionState
  readonly payload: unknown
  readonly priority: number
  /** Attempts charged so far; the running attempt is `attempt`. */
  readonly attempt: number
  readonly maxAttempts: number
  readonly retry: RetrySnapshot
  readonly timeoutMs: number
  readonly runAt: number
  readonly createdAt: number
  readonly startedAt: number | null
  readonly finishedAt: number | null
  readonly leaseOwner: string | null
  readonly leaseExpiresAt: number | null
  readonly cancelRequested: boolean
  readonly idempotencyKey: string | null
  readonly scheduleId: string | null
  readonly fireAt: number | null
  /** The execution this one is a manual retry of. */
  readonly retryOf: string | null
  /**
   * The trace context of the enqueue that made it, as a W3C `traceparent`
   * (`00-<trace id>-<span id>-<flags>`); null when the enqueue ran outside a span.
   */
  readonly traceContext: string | null
  /** The key of its Job's per-key concurrency limit (null: none). */
  readonly concurrencyKey: string | null
  /** The key of its Job's per-key rate limit (null: none). */
  readonly rateKey: string | null
  /** The dedupe key it holds while queued or running (modes active and replace); null: none. */
  readonly dedupeKey: string | null
  /** The execution whose `ctx.enqueue` made this one, and that step's name; null: none. */
  readonly parentId: string | null
  readonly parentStep: string | null
  /** What it waits for while `waiting` (kept, as its last wait, after it resumes). */
  readonly wait: Wait | null
  readonly result: unknown
  readonly error: ExecutionError | null
}

/** Outcomes an attempt can end with. `released` is not charged and writes no attempt row. */
export type AttemptOutcome = "succeeded" | "failed" | "retrying" | "cancelled" | "lease_expired"

/** One attempt of an execution. */
export interface Attempt {
  readonly executionId: string
  readonly attempt: number
  readonly worker: string
  readonly startedAt: number
  readonly finishedAt: number
  readonly outcome: AttemptOutcome
  readonly error: ExecutionError | null
}

/** A persisted durable step result. */
export interface Step {
  readonly executionId: string
  readonly name: string
  /** The step's result, encoded JSON text. */
  readonly output: string
  readonly attempt: number
  readonly createdAt: number
}

/** One captured handler log line. */
export interface LogLine {
  readonly executionId: string
  readonly attempt: number
  readonly at: number
  readonly level: string
  readonly message: string
  /** JSON object of the log annotations, if any. */
  readonly annotations: string | null
}

/** Lines dropped for one attempt because the LogSink was full. */
export interface LogDrops {
  readonly executionId: string
  readonly attempt: number
  readonly dropped: number
}
