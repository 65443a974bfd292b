/**
 * Turns (Job, payload, options) into a row to insert, or a typed refusal: the payload
 * is encoded with the Job's Schema (invalid: InvalidPayload), made JSON text (not
 * JSON-safe: NotJsonSafe), and measured (over the limit: PayloadTooLarge). Nothing is
 * written here; every enqueue path — the Client, transactional enqueue, the Scheduler
 * — prepares its rows through this one function.
 */
import { Effect } from "effect"
import { failureMessage, jsonCodecOf } from "../jobs/JsonCodec.ts"
import type { Job } from "../jobs/Job.ts"
import { InvalidPayload, NotJsonSafe, PayloadTooLarge } from "../jobs/errors.ts"
import { traceContextOf } from "../actors/ExecutionSpan.ts"
import type { Execution } from "../store/Execution.ts"
import type { InsertRequest } from "../store/Store.ts"

/** Options of one enqueue. */
export interface EnqueueOptions {
  /** Dedupes the enqueue: an existing (job, key) returns the existing execution. Trimmed; empty means none. */
  readonly idempotencyKey?: string | undefined
  /** Run no earlier than this time (epoch ms or Date). */
  readonly runAt?: number | Date | undefined
  /** Run after this delay (ms) from now; ignored when runAt is given. */
  readonly delayMs?: number | undefined
  /** Overrides the Job's default priority (higher runs first). */
  readonly priority?: number | undefined
}

/** Default largest payload: 1 MiB. */
export const defaultMaxPayloadBytes = 1024 * 1024


/** Why a payload cannot be enqueued. */
export type PayloadRefusal = InvalidPayload | NotJsonSafe | PayloadTooLarge

/** A payload encoded with the Job's Schema to JSON text and size-checked, or why not (no Effect: enqueue's hot path). */
const encodeText = (job: Job, payload: unknown, maxBytes: number): string | PayloadRefusal => {
  const encoded = jsonCodecOf(job.payload).encode(payload)
  if (encoded._tag === "Failure") return new InvalidPayload({ job: job.id, message: `invalid payload for ${job.id}: ${failureMessage(encoded)}` })
  let text: string | undefined
  try {
    text = JSON.stringify(encoded.value)
  } catch (e) {
    return new NotJsonSafe({ job: job.id, message: `payload for ${job.id} is not JSON-safe: ${(e as Error).message}` })
  }
  if (text === undefined) return new NotJsonSafe({ job: job.id, message: `payload for ${job.id} is not JSON-safe` })
  // Byte length only matters near the limit: UTF-8 is at most 3 bytes per UTF-16 unit.
  const bytes = text.length * 3 <= maxBytes ? text.length : Buffer.byteLength(text, "utf8")
  if (bytes > maxBytes) {
    return new PayloadTooLarge({ job: job.id, bytes, limit: maxBytes, message: `payload for ${job.id} is ${bytes} bytes, over the ${maxBytes}-byte limit` })
  }
  return text
}

/** Encodes a payload with the Job's Schema to JSON text, checking size. */
export const encodePayload = (job: Job, payload: unknown, maxBytes: number): Effect.Effect<string, PayloadRefusal> =>
  Effect.suspend(() => {
    const text = encodeText(job, payload, maxBytes)
    return typeof text === "string" ? Effect.succeed(text) : Effect.fail(text)
  })

/** Normalises an idempotency key: trimmed, empty means none. */
export const normaliseKey = (key: string | undefined | null): string | null => {
  const k = key?.trim()
  return k ? k : null
}

/**
 * Prepares the row for one enqueue. The current span (if any) is stored as the row's
 * trace context, so the run continues the enqueue's trace (see ExecutionSpan).
 */
export const prepare = (job: Job, payload: unknown, options: EnqueueOptions, now: number, maxBytes: number): Effect.Effect<InsertRequest, PayloadRefusal> =>
  Effect.withFiber((fiber) => {
    const text = encodeText(job, payload, maxBytes)
    if (typeof text !== "string") return Effect.fail(text)
    const runAt = options.runAt instanceof Date ? options.runAt.getTime() : options.runAt ?? now + Math.max(0, options.delayMs ?? 0)
    return Effect.succeed({
      id: newId(now),
      job: job.id,
      queue: job.queue,
      payload: text,
      priority: options.priority ?? job.priority,
      retry: job.retry.snapshot,
      timeoutMs: job.timeoutMs,
      runAt,
      now,
      idempotencyKey: normaliseKey(options.idempotencyKey),
      traceContext: traceContextOf(fiber.context)
    })
  })

/**
 * The row of a manual retry: a new execution with the original's payload, job, queue,
 * priority and policy, due now, linked to the original, and with a new idempotency key
 * (derived from the original's) when it had one. It keeps the original's trace context:
 * the retry is more of the work the original enqueue asked for.
 */
export const prepareRetry = (original: Execution, now: number): InsertRequest => {
  const id = newId(now)
  return {
    id,
    job: original.job,
    queue: original.queue,
    payload: JSON.stringify(original.payload),
    priority: original.priority,
    retry: original.retry,
    timeoutMs: original.timeoutMs,
    runAt: now,
    now,
    idempotencyKey: original.idempotencyKey === null ? null : `${original.idempotencyKey}:retry:${id}`,
    scheduleId: original.scheduleId,
    fireAt: original.fireAt,
    retryOf: original.id,
    traceContext: original.traceContext
  }
}

/** A UUIDv7 whose time part is `now` (so ids sort by creation and follow the Clock). */
export const newId = (now: number): string => Bun.randomUUIDv7("hex", now)
