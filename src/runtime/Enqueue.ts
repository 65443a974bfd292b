/**
 * Turns (Job, payload, options) into a row to insert, or a typed refusal: the payload
 * is checked for nesting (deeper than 64 levels: PayloadTooDeep), encoded with the
 * Job's Schema (invalid: InvalidPayload), made JSON text (not JSON-safe: NotJsonSafe),
 * and measured (over the limit: PayloadTooLarge); `runAt`, `delayMs`, `priority` and
 * the idempotency key are checked against their ranges (InvalidEnqueueOption: times
 * within 1970–9999, see TimeRange.ts; priority a 32-bit integer and keys of at most
 * 512 characters, which both stores hold).
 * Nothing is written here; every enqueue path — the Client, transactional enqueue —
 * prepares its rows through this one function, and studio Schedules encode their
 * payloads through {@link encodePayload}. The row itself is built by
 * store/InsertRow.ts, like every other insert's.
 */
import { flowKeysOf } from "../jobs/FlowLimits.ts"
import { Effect } from "effect"
import { failureMessage, jsonCodecOf } from "../jobs/JsonCodec.ts"
import { depthOf, maxPayloadDepth } from "../jobs/JsonText.ts"
import type { Job } from "../jobs/Job.ts"
import { InvalidEnqueueOption, InvalidPayload, NotJsonSafe, PayloadTooDeep, PayloadTooLarge } from "../jobs/errors.ts"
import { isStorableTime, maxTime, rangeText } from "../jobs/TimeRange.ts"
import { traceContextOf } from "../actors/ExecutionSpan.ts"
import type { Execution } from "../store/Execution.ts"
import { insertRow, newId, settingsOf } from "../store/InsertRow.ts"
import type { InsertRequest } from "../store/Store.ts"

/** Options of one enqueue. */
export interface EnqueueOptions {
  /** Dedupes the enqueue: an existing (job, key) returns the existing execution. Trimmed; empty means none; at most 512 characters. */
  readonly idempotencyKey?: string | undefined
  /**
   * How `idempotencyKey` dedupes (see docs/jobs.md, "Dedupe modes"); default `"forever"`:
   * - `"forever"`: the key is held as long as its execution exists; an enqueue with it
   *   returns that execution (`inserted: false`).
   * - `"active"`: the key is held only while its execution is queued or running; an
   *   enqueue with it then returns that execution, and once it has ended a new one is
   *   inserted.
   * - `"replace"` (debounce): as `"active"`, but a queued holder takes this enqueue's
   *   payload, run time and priority (`replaced: true`); a running holder gives up the
   *   key and a new execution is inserted, to run after this change.
   * Only with an `idempotencyKey`.
   */
  readonly dedupe?: DedupeMode | undefined
  /** Run no earlier than this time (epoch ms or Date), from 1970-01-01T00:00:00.000Z to 9999-12-31T23:59:59.999Z. */
  readonly runAt?: number | Date | undefined
  /** Run after this delay (whole ms, >= 0, ending by 9999-12-31T23:59:59.999Z) from now; ignored when runAt is given. */
  readonly delayMs?: number | undefined
  /** Overrides the Job's default priority (higher runs first); a 32-bit integer. */
  readonly priority?: number | undefined
  /**
   * Sets the key of the Job's per-key concurrency limit instead of computing it from the
   * payload (at most 512 characters); refused for a Job that declares no `concurrency`.
   */
  readonly concurrencyKey?: string | undefined
}

/** The dedupe modes of an idempotency key (see {@link EnqueueOptions.dedupe}). */
export type DedupeMode = "forever" | "active" | "replace"

/** Every {@link DedupeMode}. */
export const dedupeModes: ReadonlyArray<DedupeMode> = ["forever", "active", "replace"]

/** Default largest payload: 1 MiB. */
export const defaultMaxPayloadBytes = 1024 * 1024


/** Why a payload cannot be enqueued. */
export type PayloadRefusal = InvalidPayload | NotJsonSafe | PayloadTooLarge | PayloadTooDeep

/** Why an enqueue is refused before anything is written. */
export type EnqueueRefusal = PayloadRefusal | InvalidEnqueueOption

/** The smallest and largest priority: a 32-bit signed integer (PostgreSQL's `integer`). */
export const minPriority = -2_147_483_648
export const maxPriority = 2_147_483_647

const tooDeep = (job: Job) =>
  new PayloadTooDeep({ job: job.id, limit: maxPayloadDepth, message: `payload for ${job.id} nests deeper than ${maxPayloadDepth} levels of arrays and objects` })

/** A payload encoded with the Job's Schema to JSON text and size-checked, or why not (no Effect: enqueue's hot path). */
const encodeText = (job: Job, payload: unknown, maxBytes: number): string | PayloadRefusal => {
  // Checked before the Schema sees it (a recursive Schema would recurse as deep), and after.
  if (depthOf(payload) > maxPayloadDepth) return tooDeep(job)
  const encoded = jsonCodecOf(job.payload).encode(payload)
  if (encoded._tag === "Failure") return new InvalidPayload({ job: job.id, message: `invalid payload for ${job.id}: ${failureMessage(encoded)}` })
  if (encoded.value !== payload && depthOf(encoded.value) > maxPayloadDepth) return tooDeep(job)
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

/**
 * The longest idempotency key, in characters (UTF-16 units, at most 3 bytes each in
 * UTF-8): (job, key) is a unique index, and a PostgreSQL B-tree entry holds at most
 * 2,704 bytes; a manual retry appends `:retry:<id>` (43 more).
 */
export const maxKeyLength = 512

/** Normalises an idempotency key: trimmed, empty means none. */
export const normaliseKey = (key: string | undefined | null): string | null => {
  const k = key?.trim()
  return k ? k : null
}

/** The row's run_at from `runAt` or `delayMs`, or why it is out of range. */
const runAtOf = (job: Job, options: EnqueueOptions, now: number): number | InvalidEnqueueOption => {
  if (options.runAt !== undefined) {
    const runAt = options.runAt instanceof Date ? options.runAt.getTime() : options.runAt
    if (isStorableTime(runAt)) return runAt
    const shown = options.runAt instanceof Date ? `${runAt} (${String(options.runAt)})` : String(runAt)
    return new InvalidEnqueueOption({ job: job.id, option: "runAt", message: `runAt for ${job.id} must be a whole number of ms from ${rangeText}, got ${shown}` })
  }
  const delay = options.delayMs ?? 0
  if (typeof delay !== "number" || !Number.isSafeInteger(delay) || delay < 0) {
    return new InvalidEnqueueOption({ job: job.id, option: "delayMs", message: `delay for ${job.id} must be a whole number of milliseconds >= 0, got ${String(delay)}` })
  }
  if (now + delay > maxTime) {
    return new InvalidEnqueueOption({
      job: job.id,
      option: "delayMs",
      message: `delay of ${delay} ms for ${job.id} ends after 9999-12-31T23:59:59.999Z, the latest time Roster stores (at most ${maxTime - now} ms from now)`
    })
  }
  return now + delay
}

/**
 * The row for one enqueue, or why not, with the caller's trace context (no Effect: a
 * bulk prepares every row in one plain loop).
 */
export const prepareRow = (
  job: Job,
  payload: unknown,
  options: EnqueueOptions,
  now: number,
  maxBytes: number,
  traceContext: string | null
): InsertRequest | EnqueueRefusal => {
  const runAt = runAtOf(job, options, now)
  if (typeof runAt !== "number") return runAt
  const priority = options.priority ?? job.priority
  if (!Number.isInteger(priority) || priority < minPriority || priority > maxPriority) {
    return new InvalidEnqueueOption({ job: job.id, option: "priority", message: `priority for ${job.id} must be a whole number from ${minPriority} to ${maxPriority}, got ${String(priority)}` })
  }
  const idempotencyKey = normaliseKey(options.idempotencyKey)
  if (idempotencyKey !== null && idempotencyKey.length > maxKeyLength) {
    return new InvalidEnqueueOption({
      job: job.id,
      option: "idempotencyKey",
      message: `idempotency key for ${job.id} is ${idempotencyKey.length} characters, over the ${maxKeyLength}-character limit`
    })
  }
  const dedupe = options.dedupe ?? "forever"
  if (!dedupeModes.includes(dedupe)) {
    return new InvalidEnqueueOption({
      job: job.id,
      option: "dedupe",
      message: `dedupe for ${job.id} must be one of ${dedupeModes.join(", ")}, got ${JSON.stringify(dedupe)}`
    })
  }
  if (dedupe !== "forever" && idempotencyKey === null) {
    return new InvalidEnqueueOption({
      job: job.id,
      option: "dedupe",
      message: `dedupe "${dedupe}" for ${job.id} needs an idempotencyKey (the key it dedupes on)`
    })
  }
  if (options.concurrencyKey !== undefined && job.flow.concurrency === undefined) {
    return new InvalidEnqueueOption({
      job: job.id,
      option: "concurrencyKey",
      message: `concurrencyKey for ${job.id}: the Job declares no per-key concurrency (add concurrency: { key, limit } to its Job.make)`
    })
  }
  const text = encodeText(job, payload, maxBytes)
  if (typeof text !== "string") return text
  const keys = flowKeysOf(job.id, job.flow, payload, options.concurrencyKey)
  if (typeof keys === "string") return new InvalidEnqueueOption({ job: job.id, option: "concurrencyKey", message: keys })
  // An active or replace key goes to its own column, whose index holds it only while queued or running.
  const forever = dedupe === "forever"
  return insertRow(job.id, settingsOf(job), {
    payload: text,
    now,
    runAt,
    priority,
    traceContext,
    concurrencyKey: keys.concurrencyKey,
    rateKey: keys.rateKey,
    idempotencyKey: forever ? idempotencyKey : null,
    dedupeKey: forever ? null : idempotencyKey,
    dedupeMode: forever ? undefined : dedupe
  })
}

/** Whether {@link prepareRow} refused. */
export const isRefusal = (row: InsertRequest | EnqueueRefusal): row is EnqueueRefusal => "_tag" in row

/**
 * Prepares the row for one enqueue. The current span (if any) is stored as the row's
 * trace context, so the run continues the enqueue's trace (see ExecutionSpan).
 */
export const prepare = (job: Job, payload: unknown, options: EnqueueOptions, now: number, maxBytes: number): Effect.Effect<InsertRequest, EnqueueRefusal> =>
  Effect.withFiber<InsertRequest, EnqueueRefusal>((fiber) => {
    const row = prepareRow(job, payload, options, now, maxBytes, traceContextOf(fiber.context))
    return isRefusal(row) ? Effect.fail(row) : Effect.succeed(row)
  })

/**
 * The row of a manual retry: a new execution with the original's payload, job, queue,
 * priority and policy, due now, linked to the original, and with a new idempotency key
 * (derived from the original's) when it had one. It keeps the original's trace context:
 * the retry is more of the work the original enqueue asked for.
 */
export const prepareRetry = (original: Execution, now: number): InsertRequest => {
  const id = newId(now)
  return insertRow(original.job, original, {
    id,
    payload: JSON.stringify(original.payload),
    now,
    idempotencyKey: original.idempotencyKey === null ? null : `${original.idempotencyKey}:retry:${id}`,
    scheduleId: original.scheduleId,
    fireAt: original.fireAt,
    retryOf: original.id,
    traceContext: original.traceContext,
    concurrencyKey: original.concurrencyKey,
    rateKey: original.rateKey
  })
}
