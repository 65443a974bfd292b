/**
 * The one place a new execution's row is built. Every insert — the Client's enqueue and
 * enqueueMany, transactional enqueue, a Schedule's fire, a schedule triggered by hand, a
 * manual retry — fills its {@link InsertRequest} here, from the Job's settings and where
 * the row comes from, so a new column is added once. Validation (payload, times,
 * priority, keys) stays with each caller: a fire's payload was encoded when its Schedule
 * was stored, a retry copies a row already accepted. Pure apart from the new id.
 */
import type { Job } from "../jobs/Job.ts"
import type { RetrySnapshot } from "../jobs/RetryPolicy.ts"
import type { InsertRequest } from "./Store.ts"

/** What a new row copies from its Job (or, for a retry, from the original execution). */
export interface JobSettings {
  readonly queue: string
  readonly priority: number
  readonly retry: RetrySnapshot
  readonly timeoutMs: number
}

/** Where a new row comes from, beyond its Job. */
export interface RowOrigin {
  /** The execution id; default a new {@link newId} on `now`. */
  readonly id?: string | undefined
  /** The encoded payload, JSON text. */
  readonly payload: string
  readonly now: number
  /** Default `now`. */
  readonly runAt?: number | undefined
  /** Default the Job's. */
  readonly priority?: number | undefined
  readonly idempotencyKey?: string | null | undefined
  readonly scheduleId?: string | null | undefined
  readonly fireAt?: number | null | undefined
  readonly retryOf?: string | null | undefined
  /**
   * The W3C `traceparent` the run continues; each path decides (see ExecutionSpan): an
   * enqueue or a trigger takes the caller's span, a retry keeps the original's, a
   * Schedule's fire has none.
   */
  readonly traceContext: string | null
  readonly concurrencyKey?: string | null | undefined
  readonly rateKey?: string | null | undefined
  readonly dedupeKey?: string | null | undefined
  readonly dedupeMode?: "active" | "replace" | undefined
}

/** The Job settings a row copies from a Job definition. */
export const settingsOf = (job: Job<any, any, any>): JobSettings => ({
  queue: job.queue,
  priority: job.priority,
  retry: job.retry.snapshot,
  timeoutMs: job.timeoutMs
})

/** The row that inserts one new execution of `job` (no Effect: a bulk builds every row in one plain loop). */
export const insertRow = (job: string, settings: JobSettings, origin: RowOrigin): InsertRequest => ({
  id: origin.id ?? newId(origin.now),
  job,
  queue: settings.queue,
  payload: origin.payload,
  priority: origin.priority ?? settings.priority,
  retry: settings.retry,
  timeoutMs: settings.timeoutMs,
  runAt: origin.runAt ?? origin.now,
  now: origin.now,
  idempotencyKey: origin.idempotencyKey ?? null,
  scheduleId: origin.scheduleId ?? null,
  fireAt: origin.fireAt ?? null,
  retryOf: origin.retryOf ?? null,
  traceContext: origin.traceContext,
  concurrencyKey: origin.concurrencyKey ?? null,
  rateKey: origin.rateKey ?? null,
  dedupeKey: origin.dedupeKey ?? null,
  dedupeMode: origin.dedupeMode
})

/** A UUIDv7 whose time part is `now` (so ids sort by creation and follow the Clock). */
export const newId = (now: number): string => Bun.randomUUIDv7("hex", now)
