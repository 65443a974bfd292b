/**
 * Errors of the definition language and of enqueue: what a caller of Roster can get
 * back for bad input. Every one is a tagged error with a readable message, so the CLI
 * prints one line and an Effect caller can `catchTag` precisely.
 */
import { Data } from "effect"

/** A payload did not match the Job's Schema at enqueue; nothing was written. */
export class InvalidPayload extends Data.TaggedError("InvalidPayload")<{
  readonly job: string
  readonly message: string
  /** In a bulk enqueue, the 1-based position of the refused item. */
  readonly item?: number | undefined
}> {}

/** No Job with this id is registered. */
export class UnknownJob extends Data.TaggedError("UnknownJob")<{
  readonly job: string
  readonly message: string
  /** In a bulk enqueue, the 1-based position of the refused item. */
  readonly item?: number | undefined
}> {}

/**
 * The payload nests arrays and objects deeper than the limit (64 levels); nothing was
 * written. Pages and JSON output of deep values would otherwise grow with the depth.
 */
export class PayloadTooDeep extends Data.TaggedError("PayloadTooDeep")<{
  readonly job: string
  readonly limit: number
  readonly message: string
  readonly item?: number | undefined
}> {}

/**
 * An enqueue option is out of its range: `runAt` outside the times Roster stores
 * (1970-01-01T00:00:00.000Z to 9999-12-31T23:59:59.999Z) or not a whole number of ms,
 * `delayMs` negative, fractional or reaching past that range, `priority` not a
 * 32-bit integer, or an idempotency key over 512 characters. Nothing was written.
 */
export class InvalidEnqueueOption extends Data.TaggedError("InvalidEnqueueOption")<{
  readonly job: string
  readonly option: "runAt" | "delayMs" | "priority" | "idempotencyKey" | "concurrencyKey" | "dedupe"
  readonly message: string
  readonly item?: number | undefined
}> {}

/** The encoded payload is larger than the configured limit. */
export class PayloadTooLarge extends Data.TaggedError("PayloadTooLarge")<{
  readonly job: string
  readonly bytes: number
  readonly limit: number
  readonly message: string
  /** In a bulk enqueue, the 1-based position of the refused item. */
  readonly item?: number | undefined
}> {}

/** A payload or result could not be represented as JSON. */
export class NotJsonSafe extends Data.TaggedError("NotJsonSafe")<{
  readonly job: string
  readonly message: string
  /** In a bulk enqueue, the 1-based position of the refused item. */
  readonly item?: number | undefined
}> {}

/** The definitions given to a Registry are inconsistent (duplicate id, undeclared queue, bad name). */
export class InvalidDefinition extends Data.TaggedError("InvalidDefinition")<{
  readonly message: string
  readonly file?: string | undefined
  readonly id?: string | undefined
}> {}

/** An execution was not found. */
export class ExecutionNotFound extends Data.TaggedError("ExecutionNotFound")<{
  readonly id: string
  readonly message: string
}> {}

/** An operation was refused because of the execution's state (e.g. retrying a running execution). */
export class InvalidTransition extends Data.TaggedError("InvalidTransition")<{
  readonly id: string
  readonly message: string
}> {}

/**
 * A handler failure that must not be retried. Handlers return it through
 * `Job.permanent(reason)`; the execution fails at once whatever attempts remain.
 */
export class PermanentFailure extends Data.TaggedError("PermanentFailure")<{
  readonly message: string
  readonly cause?: unknown
}> {}

/** The handler ran longer than the Job's timeout. Transient. */
export class JobTimeout extends Data.TaggedError("JobTimeout")<{
  readonly message: string
  readonly timeoutMs: number
}> {}

/** A stored payload no longer decodes with the Job's Schema. Permanent. */
export class UndecodablePayload extends Data.TaggedError("UndecodablePayload")<{
  readonly message: string
}> {}

/** A handler's result does not encode with the Job's result Schema. Permanent: a retry returns the same result. */
export class InvalidResult extends Data.TaggedError("InvalidResult")<{
  readonly message: string
}> {}

/** A call on a `Roster.open` handle after its `close()`. */
export class RosterClosed extends Data.TaggedError("RosterClosed")<{
  readonly message: string
}> {}

/** `startWorker` / `startScheduler` while one is already running on the same handle. */
export class AlreadyRunning extends Data.TaggedError("AlreadyRunning")<{
  readonly message: string
}> {}

/** `waitFor` gave up: the execution had not ended within the timeout (it goes on; only the wait ended). */
export class WaitTimeout extends Data.TaggedError("WaitTimeout")<{
  readonly id: string
  readonly timeoutMs: number
  readonly message: string
}> {}

/** A signal that cannot be sent: an empty or overlong name, or a payload that is not JSON-safe. Nothing is stored. */
export class InvalidSignal extends Data.TaggedError("InvalidSignal")<{
  readonly id: string
  readonly message: string
}> {}
