/**
 * The limited claim on PostgreSQL (FlowRules.ts): one transaction that first takes a
 * transaction-scoped advisory lock for the queue — so limited claims of one queue, from
 * every process, run one at a time — and then, in statements whose snapshots are taken
 * after the lock (READ COMMITTED: each sees every claim committed before it), reads the
 * pause, live running counts and live rate-limit starts, scans due candidates without
 * the (job, key) pairs and Jobs at their limit, claims the chosen rows and writes the
 * starts. Candidates are still locked `FOR UPDATE SKIP LOCKED`, so a worker claiming the
 * queue without limits (another config) never gets the same row. Also the read-only
 * flow snapshot the surfaces explain held-back work with, and the due queued executions
 * grouped for the held-back counts (FlowExplain.ts).
 */
import type { PgClient } from "@effect/sql-pg"
import { Effect } from "effect"
import { byClaimOrder, type ExecutionRow, toExecution } from "../ExecutionRow.ts"
import { type Candidate, flowStateOf, roomOf, scanSizeOf, selectClaims, startsPruneBeforeOf, type StartRow } from "../FlowRules.ts"
import type { ClaimLimits } from "../FlowRules.ts"
import type { DueGroup, LimitedClaim, LimitedClaimRequest, QueueFlow, QueueHeldBack } from "../Store.ts"
import { int8Array, type Int8, num, textArray } from "./PgValues.ts"

/** Reads a queue's flow snapshot on `sql` (the caller's transaction, if one is open). */
export const readQueueFlow = (sql: PgClient.PgClient, queue: string, now: number) =>
  Effect.gen(function*() {
    const [paused] = yield* sql`SELECT 1 AS one FROM roster_queues WHERE name = ${queue} AND paused`
    const running = yield* sql<{ job: string; key: string | null; count: number }>`
      SELECT job, concurrency_key AS key, COUNT(*)::int AS count FROM roster_executions
       WHERE state = 'running' AND lease_expires_at >= ${now} AND queue = ${queue} GROUP BY job, concurrency_key`
    const starts = yield* sql<{ scope: string; expires_at: Int8; n: number }>`
      SELECT scope, expires_at, n FROM roster_rate_starts WHERE queue = ${queue} AND expires_at > ${now}`
    return {
      paused: paused !== undefined,
      running,
      starts: starts.map((s): StartRow => ({ scope: s.scope, expiresAt: num(s.expires_at), n: s.n }))
    } satisfies QueueFlow
  })

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

/**
 * The limited claim on `sql` (the relaxed client: a lost claim or start only means the
 * work runs again or the window counts fewer). The caller settles claims in doubt first
 * and marks this one, as for the plain claim.
 */
export const claimLimited = (sql: PgClient.PgClient, req: LimitedClaimRequest) =>
  sql.withTransaction(Effect.gen(function*() {
    yield* sql`SELECT pg_advisory_xact_lock(hashtextextended(${`roster:claim:${req.queue}`} || ':' || current_schema(), 0))`
    const flow = yield* readQueueFlow(sql, req.queue, req.now)
    if (flow.paused) return { executions: [], retryAt: null } satisfies LimitedClaim
    const state = flowStateOf(req.limits, flow.running, flow.starts, req.now)
    const room = roomOf(state, req.limit)
    const jobs = req.jobs.filter((j) => !state.blockedJobs.includes(j))
    if (room === 0 || jobs.length === 0) return { executions: [], retryAt: state.rateFreesAt } satisfies LimitedClaim
    const scanned = yield* sql<{ id: string; job: string; concurrency_key: string | null; rate_key: string | null }>`
      SELECT id, job, concurrency_key, rate_key FROM roster_executions
       WHERE state IN ('queued','waiting') AND queue = ${req.queue} AND run_at <= ${req.now} AND job = ANY(${textArray(jobs)}::text[])
         AND (concurrency_key IS NULL OR NOT ((job || chr(31) || concurrency_key) = ANY(${textArray(state.blockedConcurrency)}::text[])))
         AND (rate_key IS NULL OR NOT ((job || chr(31) || rate_key) = ANY(${textArray(state.blockedRate)}::text[])))
       ORDER BY priority DESC, run_at, id
       LIMIT ${scanSizeOf(room)}
       FOR UPDATE SKIP LOCKED`
    const candidates = scanned.map((r): Candidate => ({ id: r.id, job: r.job, concurrencyKey: r.concurrency_key, rateKey: r.rate_key }))
    const chosen = selectClaims(req.limits, state, flow.starts, candidates, req.limit, req.now)
    yield* sql`DELETE FROM roster_rate_starts WHERE queue = ${req.queue} AND expires_at <= ${startsPruneBeforeOf(req.limits, req.now)}`
    if (chosen.ids.length === 0) return { executions: [], retryAt: chosen.retryAt } satisfies LimitedClaim
    const rows = yield* sql<ExecutionRow>`
      UPDATE roster_executions
         SET state = 'running', attempt = attempt + 1, lease_owner = ${req.workerId},
             lease_expires_at = ${req.now + req.leaseMs}, started_at = ${req.now}
       WHERE id = ANY(${textArray(chosen.ids)}::text[]) AND state IN ('queued','waiting')
      RETURNING *`
    if (chosen.starts.length > 0) {
      yield* sql`
        INSERT INTO roster_rate_starts (queue, scope, expires_at, n)
        SELECT ${req.queue}, scope, expires_at, n
          FROM unnest(${textArray(chosen.starts.map((s) => s.scope))}::text[], ${int8Array(chosen.starts.map((s) => s.expiresAt))}::int8[],
                      ${int8Array(chosen.starts.map((s) => s.n))}::int8[]) AS u(scope, expires_at, n)`
    }
    return { executions: rows.map(toExecution).sort(byClaimOrder), retryAt: chosen.retryAt } satisfies LimitedClaim
  }))
