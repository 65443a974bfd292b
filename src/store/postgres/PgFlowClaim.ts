/**
 * The limited claim on PostgreSQL (FlowRules.ts): one call of a server-side function
 * (PgClaimFunction.ts) that first takes a transaction-scoped advisory lock for the
 * queue — so limited claims of one queue, from every process, run one at a time — and
 * then, in statements whose snapshots are taken after the lock (READ COMMITTED: each
 * sees every claim committed before it), reads the pause, live running counts and live
 * rate-limit starts, scans due candidates without the (job, key) pairs and Jobs at
 * their limit, claims the chosen rows and writes the starts. Candidates are still locked
 * `FOR UPDATE SKIP LOCKED`, so a worker claiming the queue without limits (another
 * config) never gets the same row. Also the read-only flow snapshot the surfaces
 * explain held-back work with, and the due queued executions grouped for the held-back
 * counts (FlowExplain.ts).
 */
import type { PgClient } from "@effect/sql-pg"
import { Effect } from "effect"
import type { SqlError } from "effect/sql/SqlError"
import { type ExecutionRow, sortInClaimOrder, toExecution } from "../ExecutionRow.ts"
import { flowStateOf, maxClaimRounds, startsPruneBeforeOf, type StartRow } from "../FlowRules.ts"
import type { ClaimLimits } from "../FlowRules.ts"
import type { DueGroup, LimitedClaim, LimitedClaimRequest, QueueFlow, QueueHeldBack } from "../Store.ts"
import { arrayText, type NativeClient } from "./NativeClient.ts"
import { textArray } from "./PgValues.ts"

/**
 * Reads a queue's flow snapshot on `sql` (the caller's transaction, if one is open) in
 * one statement: the pause, live running counts per (job, key) and live rate-limit
 * starts, as the claim function reads them.
 */
export const readQueueFlow = (sql: PgClient.PgClient, queue: string, now: number) =>
  Effect.map(
    sql<{ paused: boolean; running: string; starts: string }>`
      SELECT EXISTS (SELECT 1 FROM roster_queues WHERE name = ${queue} AND paused) AS paused,
             COALESCE((SELECT json_agg(json_build_object('job', job, 'key', key, 'count', count))::text FROM (
               SELECT job, concurrency_key AS key, COUNT(*)::int AS count FROM roster_executions
                WHERE state = 'running' AND lease_expires_at >= ${now} AND queue = ${queue}
                GROUP BY job, concurrency_key) r), '[]') AS running,
             COALESCE((SELECT json_agg(json_build_object('scope', scope, 'expiresAt', expires_at, 'n', n))::text
                         FROM roster_rate_starts WHERE queue = ${queue} AND expires_at > ${now}), '[]') AS starts`,
    ([row]) => ({
      paused: row!.paused === true,
      running: JSON.parse(row!.running) as QueueFlow["running"],
      starts: (JSON.parse(row!.starts) as ReadonlyArray<{ scope: string; expiresAt: number | string; n: number }>)
        .map((s): StartRow => ({ scope: s.scope, expiresAt: Number(s.expiresAt), n: s.n }))
    }) satisfies QueueFlow
  )

/**
 * A queue's flow snapshot and its due queued executions grouped by Job and by whether
 * their keys are at a limit of `limits`, in one REPEATABLE READ transaction (one
 * snapshot for both reads).
 */
export const readHeldBack = (sql: PgClient.PgClient, queue: string, now: number, limits: ClaimLimits) =>
  sql.withTransaction(Effect.gen(function*() {
    yield* sql`SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY`
    const flow = yield* readQueueFlow(sql, queue, now)
    const state = flowStateOf(limits, flow.running, flow.starts, now)
    const groups = yield* sql<{ job: string; key_at_limit: boolean; rate_key_at_limit: boolean; count: number }>`
      SELECT job,
             (concurrency_key IS NOT NULL AND (job || chr(31) || concurrency_key) = ANY(${textArray(state.blockedConcurrency)}::text[])) AS key_at_limit,
             (rate_key IS NOT NULL AND (job || chr(31) || rate_key) = ANY(${textArray(state.blockedRate)}::text[])) AS rate_key_at_limit,
             COUNT(*)::int AS count
        FROM roster_executions
       WHERE state IN ('queued','waiting') AND queue = ${queue} AND run_at <= ${now}
       GROUP BY 1, 2, 3
       ORDER BY 1, 2, 3`
    const due = groups.map((g): DueGroup => ({ job: g.job, keyAtLimit: g.key_at_limit === true, rateKeyAtLimit: g.rate_key_at_limit === true, count: g.count }))
    return { flow, due } satisfies QueueHeldBack
  }))

/** The global-only limited claim: $1 queue, $2 jobs, $3 worker, $4 want, $5 now, $6 lease ms, $7 ending ids, $8 global limit, $9 prune before. */
const claimGlobalText = `SELECT * FROM roster_claim_global($1, $2::text[], $3, $4::integer, $5::bigint, $6::bigint, $7::text[], $8::integer, $9::bigint)`

/** Any other limited claim: as {@link claimGlobalText}, with the limits as JSON text ($8: text, since Bun.SQL would encode a string sent as jsonb as a JSON string) and the most rounds ($10); one JSON text back. */
const claimLimitedText = `SELECT roster_claim_limited($1, $2::text[], $3, $4::integer, $5::bigint, $6::bigint, $7::text[], $8::text::jsonb, $9::bigint, $10::integer) AS out`

/**
 * The limited claim on `claims` (the claims' native pool, relaxed: a lost claim or start
 * only means the work runs again or the window counts fewer), as the plain claim is
 * run: one call of a server-side function (PgClaimFunction.ts) that takes the queue's
 * advisory lock and runs the rounds of FlowRules.claimRounds inside its own statement's
 * transaction — `roster_claim_global` when the global limit is the only one,
 * `roster_claim_limited` otherwise. On the same client as the plain claim, a global
 * limit costs the drain what its function costs, not also a slower driver
 * (bench/RESULTS.md, twenty-fourth pass). The caller settles claims in doubt first and
 * marks this one, as for the plain claim.
 */
export const claimLimited = (claims: NativeClient, req: LimitedClaimRequest): Effect.Effect<LimitedClaim, SqlError> => {
  const { limits } = req
  const pruneBefore = startsPruneBeforeOf(limits, req.now)
  const common = [req.queue, arrayText(req.jobs), req.workerId, req.limit, req.now, req.leaseMs, arrayText(req.ending ?? [])]
  if (limits.globalConcurrency !== null && limits.rateLimit === null && Object.keys(limits.jobs).length === 0) {
    return Effect.map(
      claims.run<ExecutionRow>(claimGlobalText, [...common, limits.globalConcurrency, pruneBefore]),
      (rows): LimitedClaim => ({ executions: sortInClaimOrder(rows.map(toExecution)), retryAt: null })
    )
  }
  return Effect.map(
    claims.run<{ out: string }>(claimLimitedText, [...common, JSON.stringify(limits), pruneBefore, maxClaimRounds]),
    ([row]): LimitedClaim => {
      const out = JSON.parse(row!.out) as { rows: ReadonlyArray<ExecutionRow>; retryAt: number | null }
      return { executions: sortInClaimOrder(out.rows.map(toExecution)), retryAt: out.retryAt }
    }
  )
}
