/**
 * The retry decision: after an attempt fails with a classified error (see Failure.ts),
 * does the execution run again, and when? It runs again only if the error is retryable
 * and its retry snapshot has an attempt left; the delay is the Job's policy (its custom
 * function when this process has the Job loaded, else the stored snapshot). The
 * WorkerPool decides this for a failed handler, the Reaper for an expired lease.
 */
import type { Job } from "./Job.ts"
import type { ExecutionError } from "./Failure.ts"
import * as RetryPolicy from "./RetryPolicy.ts"

/** A failed attempt's fate: run again at `runAt`, or fail for good. */
export type Fate = { readonly kind: "retry"; readonly runAt: number } | { readonly kind: "failed" }

/** Picks the next attempt's fate, given the attempts charged so far and a uniform random number in [0, 1). */
export const retryOrFail = (
  job: Job | undefined,
  execution: { readonly attempt: number; readonly retry: RetryPolicy.RetrySnapshot },
  error: ExecutionError,
  random: number,
  now: number
): Fate => {
  if (!error.retryable || !RetryPolicy.hasAttemptLeft(execution.retry, execution.attempt)) return { kind: "failed" }
  const policy: RetryPolicy.RetryPolicy = job ? { snapshot: execution.retry, custom: job.retry.custom } : { snapshot: execution.retry }
  return { kind: "retry", runAt: now + RetryPolicy.delayMs(policy, execution.attempt, error, random) }
}
