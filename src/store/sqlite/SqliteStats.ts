/**
 * Read-only figures over the SQLite executions table for the dashboard overview and
 * the queue-depth metrics: counts by queue and state, the oldest due queued execution
 * per queue, and finishes per time bucket.
 *
 * Limits, plainly: counts and throughput scan the table (no index serves GROUP BY
 * queue, state or finished_at, and adding one would tax every write on the hot path);
 * the oldest-due lookup reads the claim index. Pruning keeps the table bounded, and
 * these run per page view or scrape, never per job.
 */
import type { Database } from "bun:sqlite"
import type { Effect } from "effect"
import type { ExecutionState } from "../Execution.ts"
import { bucketMsOf, queueStatsOf } from "../ExecutionRules.ts"
import type { Store, StoreError, ThroughputBucket } from "../Store.ts"

/** Runs one read, mapping a SQLite failure to a StoreError (the Store's own helper). */
export type Attempt = <A>(what: string, f: () => A) => Effect.Effect<A, StoreError>

/** The stats operations of the SQLite Store. */
export const makeSqliteStats = (db: Database, attempt: Attempt): Pick<Store["Service"], "executionsQueueStats" | "executionsThroughput"> => {
  const counts = db.query<{ queue: string; state: ExecutionState; n: number }, []>(
    "SELECT queue, state, COUNT(*) AS n FROM roster_executions GROUP BY queue, state"
  )
  const oldest = db.query<{ queue: string; at: number }, [number]>(
    `SELECT queue, MIN(run_at) AS at FROM roster_executions INDEXED BY roster_executions_claim
      WHERE state IN ('queued','waiting') AND run_at <= ? GROUP BY queue`
  )
  const throughput = db.query<{ queue: string; at: number; succeeded: number; failed: number }, [number, number]>(
    `SELECT queue, ?1 + CAST((finished_at - ?1) / ?2 AS INTEGER) * ?2 AS at,
            SUM(state = 'succeeded') AS succeeded, SUM(state = 'failed') AS failed
       FROM roster_executions
      WHERE state IN ('succeeded', 'failed') AND finished_at >= ?1
      GROUP BY queue, at ORDER BY at, queue`
  )
  return {
    executionsQueueStats: (req) =>
      attempt("read queue stats", () => queueStatsOf(counts.all(), oldest.all(req.now))),
    executionsThroughput: (req) =>
      attempt("read throughput", () =>
        throughput.all(req.since, bucketMsOf(req.bucketMs)).map((r): ThroughputBucket => ({
          queue: r.queue,
          at: r.at,
          succeeded: r.succeeded,
          failed: r.failed
        })))
  }
}
