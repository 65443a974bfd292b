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
import { type Candidate, flowStateOf, maxClaimRounds, planRound, type Round, scanAgain, selectClaims, startsPruneBeforeOf, type StartRow } from "../FlowRules.ts"
import type { Execution } from "../Execution.ts"
import type { ClaimLimits } from "../FlowRules.ts"
import type { DueGroup, LimitedClaim, LimitedClaimRequest, QueueFlow, QueueHeldBack } from "../Store.ts"
import { int8Array, type Int8, num, textArray } from "./PgValues.ts"

/**
 * Reads a queue's flow snapshot on `sql` (the caller's transaction, if one is open) in
 * one statement: the pause, live running counts per (job, key) — less the claimer's own
 * executions whose handler has ended (`ending`) — and live rate-limit starts. With
 * `pruneBefore` (a claim), the same statement deletes start rows that expired before it
 * (they are not among the live ones it reads).
 */
export const readQueueFlow = (
  sql: PgClient.PgClient,
  queue: string,
  now: number,
  ending: { readonly ids: ReadonlyArray<string>; readonly workerId: string } = { ids: [], workerId: "" },
  pruneBefore?: number
) =>
  Effect.map(
    sql<{ paused: boolean; running: string; starts: string }>`
      ${pruneBefore === undefined ? sql`` : sql`WITH pruned AS (DELETE FROM roster_rate_starts WHERE queue = ${queue} AND expires_at <= ${pruneBefore} RETURNING 1)`}
      SELECT EXISTS (SELECT 1 FROM roster_queues WHERE name = ${queue} AND paused) AS paused,
             COALESCE((SELECT json_agg(json_build_object('job', job, 'key', key, 'count', count))::text FROM (
               SELECT job, concurrency_key AS key, COUNT(*)::int AS count FROM roster_executions
                WHERE state = 'running' AND lease_expires_at >= ${now} AND queue = ${queue} AND NOT (lease_owner = ${ending.workerId} AND id = ANY(${textArray(ending.ids)}::text[]))
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

/** One round of the limited claim (FlowRules.Round): read, scan, choose, then claim and record the starts in one statement. */
const round = (sql: PgClient.PgClient, req: LimitedClaimRequest, want: number, pruneBefore: number | undefined) =>
  Effect.gen(function*() {
    const flow = yield* readQueueFlow(sql, req.queue, req.now, { ids: req.ending ?? [], workerId: req.workerId }, pruneBefore)
    const plan = planRound(req.limits, flow, req.jobs, want, req.now)
    if (plan._tag === "Done") return plan.round
    const { state, room, jobs, scanSize } = plan
    const scanned = yield* sql<{ id: string; job: string; concurrency_key: string | null; rate_key: string | null }>`
      SELECT id, job, concurrency_key, rate_key FROM roster_executions
       WHERE state IN ('queued','waiting') AND queue = ${req.queue} AND run_at <= ${req.now} AND job = ANY(${textArray(jobs)}::text[])
         AND (concurrency_key IS NULL OR NOT ((job || chr(31) || concurrency_key) = ANY(${textArray(state.blockedConcurrency)}::text[])))
         AND (rate_key IS NULL OR NOT ((job || chr(31) || rate_key) = ANY(${textArray(state.blockedRate)}::text[])))
       ORDER BY priority DESC, run_at, id
       LIMIT ${scanSize}
       FOR UPDATE SKIP LOCKED`
    const candidates = scanned.map((r): Candidate => ({ id: r.id, job: r.job, concurrencyKey: r.concurrency_key, rateKey: r.rate_key }))
    const chosen = selectClaims(req.limits, state, flow.starts, candidates, want, req.now)
    const again = scanAgain(chosen.ids.length, room, scanned.length, scanSize)
    if (chosen.ids.length === 0) return { executions: [], retryAt: chosen.retryAt, again } satisfies Round
    const rows = yield* sql<ExecutionRow>`
      WITH claimed AS (
        UPDATE roster_executions
           SET state = 'running', attempt = attempt + 1, lease_owner = ${req.workerId},
               lease_expires_at = ${req.now + req.leaseMs}, started_at = ${req.now}
         WHERE id = ANY(${textArray(chosen.ids)}::text[]) AND state IN ('queued','waiting')
        RETURNING *
      ), started AS (
        INSERT INTO roster_rate_starts (queue, scope, expires_at, n)
        SELECT ${req.queue}, scope, expires_at, n
          FROM unnest(${textArray(chosen.starts.map((s) => s.scope))}::text[], ${int8Array(chosen.starts.map((s) => s.expiresAt))}::int8[],
                      ${int8Array(chosen.starts.map((s) => s.n))}::int8[]) AS u(scope, expires_at, n)
        RETURNING 1
      )
      SELECT * FROM claimed`
    return { executions: rows.map(toExecution), retryAt: chosen.retryAt, again } satisfies Round
  })

/**
 * The limited claim on `sql` (the relaxed client: a lost claim or start only means the
 * work runs again or the window counts fewer): rounds as FlowRules.claimRounds, under
 * the queue's advisory lock. The caller settles claims in doubt first and marks this
 * one, as for the plain claim.
 */
export const claimLimited = (sql: PgClient.PgClient, req: LimitedClaimRequest) =>
  sql.withTransaction(Effect.gen(function*() {
    yield* sql`SELECT pg_advisory_xact_lock(hashtextextended(${`roster:claim:${req.queue}`} || ':' || current_schema(), 0))`
    const executions: Array<Execution> = []
    let retryAt: number | null = null
    for (let i = 0; i < maxClaimRounds && executions.length < req.limit; i++) {
      const r = yield* round(sql, req, req.limit - executions.length, i === 0 ? startsPruneBeforeOf(req.limits, req.now) : undefined)
      executions.push(...r.executions)
      retryAt = r.retryAt
      if (!r.again) break
    }
    return { executions: executions.sort(byClaimOrder), retryAt } satisfies LimitedClaim
  }))
