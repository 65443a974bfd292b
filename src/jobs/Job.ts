/**
 * The definition of a Job: a durable unit of work identified by `<app>/<job>`, with a
 * payload Schema checked at enqueue and again at execution, a queue, a timeout, a
 * retry policy and a handler. Definitions are plain values; a Registry collects them
 * and a worker runs them.
 */
import { type JobRateLimitInput, type JobFlow, jobFlowOf, type KeyConcurrencyInput } from "./FlowLimits.ts"
import { Duration, Effect, type Option, Schema } from "effect"
import type { EnqueueOptions, EnqueueRefusal } from "../runtime/Enqueue.ts"
import type { ChildOutcome } from "./Wait.ts"
import type { RetryPolicy } from "./RetryPolicy.ts"
import { defaultPolicy } from "./RetryPolicy.ts"
import { PermanentFailure } from "./errors.ts"
import { maxDelayMs } from "./TimeRange.ts"

/** What a handler knows about the execution it is running. */
export interface JobContext {
  readonly executionId: string
  readonly job: string
  /** The attempt being run, 1-based. */
  readonly attempt: number
  readonly maxAttempts: number
  readonly scheduleId: string | null
  /**
   * A durable step: the first successful run persists its result; a later attempt of
   * the same execution returns the stored result without running `effect` again.
   */
  readonly step: <A, E>(
    name: string,
    effect: Effect.Effect<A, E> | (() => Promise<A>),
    options?: { readonly schema?: Schema.Codec<A, any> }
  ) => Effect.Effect<A, E>
  /** A stable key (execution id + step name) to hand to an external provider as its idempotency key. */
  readonly stepKey: (name: string) => string
  /**
   * Writes a log line persisted with the execution (and sent to the process's output),
   * for Promise handlers; an Effect handler uses `Effect.log*`, which is captured alike.
   */
  readonly log: (message: string, level?: LogLevel) => void
  /**
   * Enqueues a child execution exactly once per execution and `name`, whatever the
   * retries, crashes and lease recoveries: it is a step named `name`, recorded with the
   * child's id (which it returns) in the transaction that inserts the child. The child
   * records this execution as its parent; flow-control limits apply to it as to any.
   */
  readonly enqueue: <J extends Job<any, any, any, any>>(
    name: string,
    job: J,
    payload: Schema.Schema.Type<J["payload"]>,
    options?: EnqueueOptions
  ) => Effect.Effect<string, EnqueueRefusal>
  /**
   * Waits until every child in `ids` (made by this execution's `enqueue`) has ended and
   * returns how each ended — a failed child is an outcome, not an exception. While any
   * runs, the execution parks: state `waiting`, no slot, no lease, no attempt charged.
   */
  readonly awaitChildren: (name: string, ids: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<ChildOutcome>>
  /** Sleeps durably: the execution parks until `duration` after the first time this step ran. */
  readonly sleep: (name: string, duration: Duration.Input) => Effect.Effect<void>
  /**
   * Waits for the signal `name` (`client.signal(id, name, payload)`), parked; a signal
   * sent before is kept and taken once. Some(payload decoded by `schema`), or None when
   * `timeout` (counted from the first time this step ran) passes first.
   */
  readonly waitForSignal: <A>(
    name: string,
    options: { readonly schema: Schema.Codec<A, any>; readonly timeout?: Duration.Input | undefined }
  ) => Effect.Effect<Option.Option<A>, PermanentFailure>
}

/** Levels of {@link JobContext.log}. */
export type LogLevel = "Debug" | "Info" | "Warn" | "Error"

/**
 * A handler may return an Effect or, for apps not written with Effect, a Promise. `R`
 * is what the handler requires (the app's services): the worker provides it from
 * `apps/<app>/services.ts` or config `services`, and `Roster.layer` requires it.
 */
export type Handler<P, A, E, R = never> = (payload: P, ctx: JobContext) => Effect.Effect<A, E, R> | Promise<A>

/** Any payload or result Schema: a codec whose encoded side is made JSON-safe by Roster. */
export type AnySchema = Schema.Codec<any, any>

/**
 * A Job definition: `P` its payload Schema, `S` its result Schema, `E` what its handler
 * fails with and `R` what its handler requires.
 */
export interface Job<P extends AnySchema = AnySchema, S extends AnySchema = AnySchema, E = unknown, R = any> {
  readonly _tag: "Job"
  /** `<app>/<job>`, both kebab-case. */
  readonly id: string
  readonly app: string
  readonly name: string
  readonly label: string
  readonly description: string
  readonly payload: P
  readonly result: S | undefined
  readonly queue: string
  readonly timeoutMs: number
  readonly retry: RetryPolicy
  readonly priority: number
  /**
   * Whether a failure may be retried (src/jobs/Failure.ts): it may reject any typed
   * failure, and returning true re-enables a validation failure (`SchemaError`), which is
   * permanent by default; `Job.permanent(...)` is never retried whatever this says.
   */
  readonly retryable: (error: unknown) => boolean
  /** Per-key concurrency and the Job's rate limit, across every worker (see FlowLimits.ts). */
  readonly flow: JobFlow<Schema.Schema.Type<P>>
  readonly handler: Handler<Schema.Schema.Type<P>, Schema.Schema.Type<S>, E, R>
}

/**
 * What a Job's handler requires (never for a Promise handler or one that needs nothing;
 * never, too, for a Job typed loosely as `Job`, whose requirements are unknown).
 */
export type Requirements<J> = J extends Job<any, any, any, infer R> ? (0 extends (1 & R) ? never : R) : never

/** Options of {@link make}. */
export interface JobOptions<P extends AnySchema, S extends AnySchema, E, R> {
  readonly id: string
  readonly label?: string
  readonly description?: string
  readonly payload: P
  readonly result?: S
  readonly queue?: string
  readonly timeout?: Duration.Input
  readonly retry?: RetryPolicy
  readonly priority?: number
  readonly retryable?: (error: unknown) => boolean
  /**
   * At most `limit` executions per key running at once across every worker; limit 1
   * runs one key's executions one at a time, in claim order, while other keys run.
   */
  readonly concurrency?: KeyConcurrencyInput<Schema.Schema.Type<P>> | undefined
  /** At most `limit` starts in any window of `period`, for the Job or (with `key`) per key. */
  readonly rateLimit?: JobRateLimitInput<Schema.Schema.Type<P>> | undefined
  readonly handler: Handler<Schema.Schema.Type<P>, Schema.Schema.Type<S>, E, R>
}

/** The `retryable` of a Job that gives none: every failure Roster does not make permanent may be retried. */
export const retryAll = (_error: unknown): boolean => true

const kebab = /^[a-z0-9]+(?:-[a-z0-9]+)*$/

/** Whether a name is kebab-case (used for apps, jobs, schedules and queues). */
export const isKebab = (name: string): boolean => kebab.test(name)

/** The longest Job or Schedule id: ids are primary and unique keys, and go into fire keys and log lines. */
export const maxIdLength = 200

/** The app whose Jobs and Schedules are Roster's own (`roster/prune`); no other definition may use it. */
export const reservedApp = "roster"

/** Why an id of a Job or Schedule defined outside Roster may not be used, if it may not. */
export const reservedIdProblem = (id: string): string | undefined =>
  id.split("/")[0] === reservedApp ? `the app "${reservedApp}" is reserved for Roster's own Jobs and Schedules; use another app name` : undefined

/** Splits `<app>/<job>` and checks both halves; undefined when malformed. */
export const parseId = (id: string): { readonly app: string; readonly name: string } | undefined => {
  const parts = id.split("/")
  if (parts.length !== 2) return undefined
  const [app, name] = parts as [string, string]
  return isKebab(app) && isKebab(name) ? { app, name } : undefined
}

/** Defines a Job. Throws a RangeError on a malformed id, since a definition is code, not input. */
export const make = <P extends AnySchema, S extends AnySchema = typeof Schema.Unknown, E = never, R = never>(
  options: JobOptions<P, S, E, R>
): Job<P, S, E, R> => {
  const parsed = parseId(options.id)
  if (!parsed) throw new RangeError(`Job id "${options.id}" must be <app>/<job>, both kebab-case`)
  if (options.id.length > maxIdLength) throw new RangeError(`Job id "${options.id.slice(0, 40)}…" must be at most ${maxIdLength} characters, got ${options.id.length}`)
  const timeoutMs = options.timeout === undefined ? 300_000 : Duration.toMillis(Duration.fromInputUnsafe(options.timeout))
  // Both are stored on every execution: a value the store cannot hold would fail every enqueue.
  if (!Number.isInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > maxDelayMs) {
    throw new RangeError(`Job "${options.id}": timeout must be a whole number of milliseconds from 1 to 100 years (${maxDelayMs}), got ${timeoutMs}`)
  }
  const priority = options.priority ?? 0
  if (!Number.isInteger(priority) || priority < -2_147_483_648 || priority > 2_147_483_647) {
    throw new RangeError(`Job "${options.id}": priority must be a whole number from -2147483648 to 2147483647, got ${priority}`)
  }
  return {
    _tag: "Job",
    id: options.id,
    app: parsed.app,
    name: parsed.name,
    label: options.label ?? options.id,
    description: options.description ?? "",
    payload: options.payload,
    result: options.result,
    queue: options.queue ?? "default",
    timeoutMs,
    retry: options.retry ?? defaultPolicy,
    priority,
    retryable: options.retryable ?? retryAll,
    flow: jobFlowOf(options.id, options),
    handler: options.handler
  }
}

/** Whether a value is a Job definition (used by discovery to pick a module's Jobs). */
export const isJob = (u: unknown): u is Job =>
  typeof u === "object" && u !== null && (u as { _tag?: unknown })._tag === "Job" && typeof (u as Job).handler === "function"

/** Fails the current attempt permanently: no retry, whatever attempts remain. */
export const permanent = (message: string, cause?: unknown): Effect.Effect<never, PermanentFailure> =>
  Effect.fail(new PermanentFailure({ message, cause }))
