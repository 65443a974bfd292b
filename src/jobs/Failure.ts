/**
 * Turns how an attempt ended into a stored error and a verdict: may it be retried?
 * Failures are matched to their type, wherever they arrive from (an Effect's failure,
 * a rejected Promise, a thrown exception, or Effect's `UnknownError` wrapper of
 * `Effect.try`/`Effect.tryPromise`):
 * - **always permanent**: `Job.permanent(...)` (a `PermanentFailure`, failed or thrown),
 *   an undecodable stored payload, an invalid result, a service the handler requires
 *   that nothing provides (no retry can fix it);
 * - **permanent unless the Job says otherwise**: validation failures — Effect's
 *   `SchemaError` (what `Schema.decodeUnknownEffect` fails with and
 *   `Schema.decodeUnknownSync` / `decodeUnknownPromise` throw), a raw `SchemaIssue`,
 *   and Roster's own enqueue refusals from inside a handler (`InvalidPayload`,
 *   `PayloadTooLarge`, `PayloadTooDeep`, `NotJsonSafe`, `InvalidEnqueueOption`). The
 *   same input fails the same way on every attempt, so they are not retried — unless
 *   the Job gives its own `retryable` and it returns `true` for that error;
 * - **retried unless the Job says otherwise**: every other typed failure, which the
 *   Job's `retryable` may reject;
 * - **transient**: timeouts, lost leases and other defects (thrown exceptions, kept
 *   with their stack).
 */
import { Cause, Schema, SchemaIssue } from "effect"
import { type Job, retryAll } from "./Job.ts"

/** How an attempt ended, as recorded: an execution's last error or an attempt's. */
export interface ExecutionError {
  readonly tag: string
  readonly message: string
  readonly retryable: boolean
  /** A readable rendering of the cause, with stack for defects. */
  readonly pretty: string
}

const permanentTags = new Set(["PermanentFailure", "UndecodablePayload", "InvalidResult"])

/** Tags of validation failures: permanent unless the Job's own `retryable` returns true. */
export const validationTags: ReadonlySet<string> = new Set([
  "SchemaError", "InvalidPayload", "PayloadTooLarge", "PayloadTooDeep", "NotJsonSafe", "InvalidEnqueueOption"
])

const formatIssue = SchemaIssue.makeFormatterDefault()

const tagOf = (error: unknown): string => {
  if (SchemaIssue.isIssue(error)) return "SchemaError"
  if (typeof error === "object" && error !== null) {
    const tag = (error as { _tag?: unknown })._tag
    if (typeof tag === "string") return tag
    if (error instanceof Error) return error.name
  }
  return typeof error
}

const messageOf = (error: unknown): string => {
  if (SchemaIssue.isIssue(error)) return formatIssue(error)
  if (typeof error === "object" && error !== null && typeof (error as { message?: unknown }).message === "string") {
    return (error as { message: string }).message
  }
  try {
    return typeof error === "string" ? error : JSON.stringify(error) ?? String(error)
  } catch {
    return String(error)
  }
}

const isValidation = (error: unknown): boolean => Schema.isSchemaError(error) || SchemaIssue.isIssue(error) || validationTags.has(tagOf(error))

/** `Effect.try`/`tryPromise` without `catch` wrap what was thrown in an UnknownError: judge what was thrown. */
const unwrap = (error: unknown): unknown => {
  if (!Cause.isUnknownError(error)) return error
  const inner = (error as Error).cause
  return isValidation(inner) || permanentTags.has(tagOf(inner)) ? inner : error
}

/** Classifies a failed attempt's cause. */
export const classify = (job: Job | undefined, cause: Cause.Cause<unknown>): ExecutionError => {
  const pretty = Cause.pretty(cause)
  const failure = Cause.findErrorOption(cause)
  if (failure._tag === "Some") return judge(job, unwrap(failure.value), pretty) ?? {
    tag: tagOf(failure.value),
    message: messageOf(failure.value),
    retryable: job ? ask(job, failure.value, true) : true,
    pretty
  }
  const defect = Cause.findDefect(cause)
  const dieValue = defect._tag === "Success" ? defect.success : undefined
  const missing = missingService(dieValue)
  if (missing !== undefined) {
    const app = job?.app ?? "<app>"
    return {
      tag: "MissingService",
      message: `${job?.id ?? "the handler"} requires the service ${missing}, which nothing provides: add it to apps/${app}/services.ts or config services`,
      retryable: false,
      pretty
    }
  }
  return judge(job, unwrap(dieValue), pretty) ?? {
    tag: "Defect",
    message: dieValue === undefined ? pretty.split("\n")[0] ?? "defect" : messageOf(dieValue),
    retryable: true,
    pretty
  }
}

/** The verdict on a permanent or validation failure; undefined for any other error. */
const judge = (job: Job | undefined, error: unknown, pretty: string): ExecutionError | undefined => {
  const tag = tagOf(error)
  if (permanentTags.has(tag)) return { tag, message: messageOf(error), retryable: false, pretty }
  if (!isValidation(error)) return undefined
  // Only a predicate the Job gave can make a validation failure retryable; the default retries everything else.
  const retryable = job !== undefined && job.retryable !== retryAll && ask(job, error, false)
  return { tag, message: messageOf(error), retryable, pretty }
}

/** The service key of Effect's "Service not found" defect, if that is what `u` is. */
const missingService = (u: unknown): string | undefined => {
  if (!(u instanceof Error)) return undefined
  const m = /^Service not found(?:: (.+))?$/.exec(u.message)
  return m ? m[1] ?? "(unnamed)" : undefined
}

/** The Job's predicate; a predicate that throws leaves the default verdict. */
const ask = (job: Job, error: unknown, fallback: boolean): boolean => {
  try {
    return job.retryable(error) === true
  } catch {
    return fallback
  }
}

/** The error recorded when a lease expires and a Reaper recovers the execution. */
export const leaseExpired: ExecutionError = {
  tag: "LeaseExpired",
  message: "lease expired",
  retryable: true,
  pretty: "lease expired: the worker stopped heartbeating (crashed, hung or lost the database)"
}

/** The error recorded when an operator cancels a running execution. */
export const cancelled: ExecutionError = {
  tag: "Cancelled",
  message: "cancelled by request",
  retryable: false,
  pretty: "cancelled by request while running"
}
