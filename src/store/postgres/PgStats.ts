/**
 * Read-only figures over the PostgreSQL executions table for the dashboard overview
 * and the queue-depth metrics: counts by queue and state, the oldest due queued
 * execution per queue, and finishes per time bucket — the same answers as SQLite's.
 *
 * Limits, plainly: counts and throughput scan the table (no index serves GROUP BY
 * queue, state or finished_at, and adding one would tax every write on the hot path).
 * Pruning keeps the table bounded, and these run per page view or scrape, never per job.
 */
import type { PgClient } from "@effect/sql-pg"
import { Effect } from "effect"
import type { SqlError } from "effect/sql/SqlError"
import type { ExecutionState } from "../Execution.ts"
import { bucketMsOf, queueStatsOf } from "../ExecutionRules.ts"
import type { Store, StoreError, ThroughputBucket } from "../Store.ts"
import { type Int8, num } from "./PgValues.ts"

/** Runs a store operation (retry while unavailable, errors mapped): the Store's own helper. */
export type Operation = <A, E>(what: string, effect: Effect.Effect<A, E>) => Effect.Effect<A, StoreError | Exclude<E, SqlError>>

/** The stats operations of the PostgreSQL Store. */
export const makePgStats = (sql: PgClient.PgClient, op: Operation): Pick<Store["Service"], "executionsQueueStats" | "executionsThroughput"> => ({
  executionsQueueStats: (req) =>
    op("read queue stats", Effect.gen(function*() {
      const counts = yield* sql<{ queue: string; state: ExecutionState; n: number }>`
        SELECT queue, state, COUNT(*)::int AS n FROM roster_executions GROUP BY queue, state`
      const oldest = yield* sql<{ queue: string; at: Int8 }>`
        SELECT queue, MIN(run_at) AS at FROM roster_executions WHERE state IN ('queued','waiting') AND run_at <= ${req.now} GROUP BY queue`
      return queueStatsOf(counts, oldest.map((r) => ({ queue: r.queue, at: num(r.at) })))
    })),
  executionsThroughput: (req) => {
    const since = req.since
    const bucketMs = bucketMsOf(req.bucketMs)
    return op("read throughput", Effect.map(
      sql<{ queue: string; at: Int8; succeeded: number; failed: number }>`
        SELECT queue, ${since}::int8 + ((finished_at - ${since}::int8) / ${bucketMs}::int8) * ${bucketMs}::int8 AS at,
               (COUNT(*) FILTER (WHERE state = 'succeeded'))::int AS succeeded, (COUNT(*) FILTER (WHERE state = 'failed'))::int AS failed
          FROM roster_executions
         WHERE state IN ('succeeded', 'failed') AND finished_at >= ${since}
         GROUP BY 1, 2 ORDER BY at, queue`,
      (rows) => rows.map((r): ThroughputBucket => ({ queue: r.queue, at: num(r.at), succeeded: r.succeeded, failed: r.failed }))
    ))
  }
})
