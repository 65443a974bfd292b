/**
 * How long to wait before the next attempt of a failed execution, and how many attempts
 * there are in all. The policy is snapshotted onto each execution at enqueue, so a
 * deploy that changes a Job's policy does not change the fate of work already queued.
 * A custom function cannot be stored: its snapshot keeps the attempts and an
 * exponential fallback, used only by a process that does not have the Job loaded
 * (e.g. a Reaper recovering a lease for a Job it does not know).
 */
import { Duration } from "effect"
import { maxDelayMs } from "./TimeRange.ts"

/** The stored, JSON-safe form of a retry policy. */
export interface RetrySnapshot {
  readonly attempts: number
  readonly kind: "exponential" | "fixed" | "custom"
  readonly initialMs: number
  readonly maxMs: number
  readonly factor: number
  readonly jitter: "full" | "none"
}

/** A retry policy: the snapshot plus, for custom policies, the delay function. */
export interface RetryPolicy {
  readonly snapshot: RetrySnapshot
  /** Delay after the `attempt`-th failed attempt (1-based); `random` is uniform in [0, 1). */
  readonly custom?: ((attempt: number, error: unknown) => Duration.Input) | undefined
}

const toMs = (input: Duration.Input): number => Duration.toMillis(Duration.fromInputUnsafe(input))

const checkAttempts = (n: number): number => {
  if (!Number.isInteger(n) || n < 1) throw new RangeError(`retry attempts must be an integer >= 1, got ${n}`)
  return n
}

const defaults = { attempts: 3, initialMs: 10_000, maxMs: 300_000, factor: 2 }

/** Exponential backoff from `initial`, multiplied by `factor` each attempt, capped at `max`, with full jitter by default. */
export const exponential = (options: {
  readonly attempts?: number
  readonly initial?: Duration.Input
  readonly max?: Duration.Input
  readonly factor?: number
  readonly jitter?: boolean
} = {}): RetryPolicy => ({
  snapshot: {
    attempts: checkAttempts(options.attempts ?? defaults.attempts),
    kind: "exponential",
    initialMs: options.initial === undefined ? defaults.initialMs : toMs(options.initial),
    maxMs: options.max === undefined ? defaults.maxMs : toMs(options.max),
    factor: options.factor ?? defaults.factor,
    jitter: options.jitter === false ? "none" : "full"
  }
})

/** The same delay after every failure. */
export const fixed = (options: { readonly attempts?: number; readonly delay: Duration.Input }): RetryPolicy => {
  const ms = toMs(options.delay)
  return {
    snapshot: {
      attempts: checkAttempts(options.attempts ?? defaults.attempts),
      kind: "fixed",
      initialMs: ms,
      maxMs: ms,
      factor: 1,
      jitter: "none"
    }
  }
}

/** A user-supplied delay function; it sees the 1-based attempt that failed and its error. */
export const custom = (options: {
  readonly attempts: number
  readonly delay: (attempt: number, error: unknown) => Duration.Input
}): RetryPolicy => ({
  snapshot: { ...exponential({ attempts: options.attempts }).snapshot, kind: "custom" },
  custom: options.delay
})

/** No retries: the first failure is final. */
export const none: RetryPolicy = fixed({ attempts: 1, delay: 0 })

/** The default policy of DESIGN §2: 3 attempts, 10 s doubling to 5 min, full jitter. */
export const defaultPolicy: RetryPolicy = exponential()

/** The backoff ceiling for the attempt that just failed, before jitter. */
export const ceilingMs = (snapshot: RetrySnapshot, attempt: number): number =>
  Math.min(snapshot.maxMs, snapshot.initialMs * Math.pow(snapshot.factor, Math.max(0, attempt - 1)))

/**
 * The delay before the next attempt, given the attempt that failed (1-based) and a
 * uniform random number in [0, 1). Full jitter picks uniformly in [0, ceiling].
 */
export const delayMs = (policy: RetryPolicy, attempt: number, error: unknown, random: number): number => {
  if (policy.custom) return storableDelay(toMs(policy.custom(attempt, error)))
  const ceiling = storableDelay(ceilingMs(policy.snapshot, attempt))
  return policy.snapshot.jitter === "full" ? Math.floor(random * (ceiling + 1)) : ceiling
}

/**
 * A delay the next run_at can hold: whole milliseconds from 0 to one hundred years
 * (TimeRange.maxDelayMs). A factor such as 1.5, an infinite or NaN custom delay would
 * otherwise give a run_at the store refuses, and the failure would never be recorded.
 */
const storableDelay = (ms: number): number => (Number.isNaN(ms) ? 0 : Math.min(maxDelayMs, Math.max(0, Math.floor(ms))))

/** Whether another attempt remains after `attempt` attempts have been charged. */
export const hasAttemptLeft = (snapshot: RetrySnapshot, attempt: number): boolean => attempt < snapshot.attempts

