/**
 * Execution rows for store tests: distinct, time-ordered ids and plain defaults that a
 * test overrides where it matters.
 */
import * as RetryPolicy from "../../src/jobs/RetryPolicy.ts"
import type { ClaimRequest, InsertRequest } from "../../src/store/Store.ts"

let seq = 0

/** A queued `app/job` execution on `default`, due at 100, 3 attempts without jitter. */
export const row = (over: Partial<InsertRequest> = {}): InsertRequest => {
  seq++
  return {
    id: Bun.randomUUIDv7("hex", 1_000 + seq),
    job: "app/job",
    queue: "default",
    payload: JSON.stringify({ n: seq }),
    priority: 0,
    retry: RetryPolicy.exponential({ attempts: 3, initial: 1000, jitter: false }).snapshot,
    timeoutMs: 60_000,
    runAt: 100,
    now: 100,
    idempotencyKey: null,
    ...over
  }
}

/** A claim of `app/job` on `default` by `w1` at 1,000, up to 10, leased for 30 s, as a test overrides it. */
export const claimOf = (over: Partial<ClaimRequest> = {}): ClaimRequest => ({
  queue: "default",
  jobs: ["app/job"],
  workerId: "w1",
  limit: 10,
  now: 1_000,
  leaseMs: 30_000,
  ...over
})
