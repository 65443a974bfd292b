/**
 * The limited claim on SQLite (FlowRules.ts): in one immediate transaction — the write
 * lock serialises it against every other claim, from any process — read the queue's
 * pause, live running counts and live rate-limit starts, scan due candidates without
 * the (job, key) pairs and Jobs at their limit, choose, claim the chosen rows, and write
 * the starts. Also the read-only flow snapshot the surfaces explain held-back work with,
 * and the due queued executions grouped for the held-back counts (FlowExplain.ts).
 */
import type { Database } from "bun:sqlite"
import { toExecution } from "../ExecutionRow.ts"
import { byClaimOrderIn, type ClaimedRow } from "./ClaimOrder.ts"
import { type Candidate, claimRounds, flowStateOf, planRound, type Round, type RunningCount, scanAgain, selectClaims, startsPruneBeforeOf, type StartRow } from "../FlowRules.ts"
import type { DueGroup, LimitedClaim, LimitedClaimRequest, QueueFlow, Store } from "../Store.ts"
import type { Attempt } from "./SqliteStats.ts"

/** The limited claim and the flow snapshot of the SQLite Store. */
export const makeSqliteFlow = (
  db: Database,
  attempt: Attempt,
  relaxed: <A>(f: () => A) => A
): Pick<Store["Service"], "executionsClaimLimited" | "queuesFlow" | "queuesHeldBack"> => {
  const paused = db.query<{ one: number }, [string]>("SELECT 1 AS one FROM roster_queues WHERE name = ? AND paused")
  // Running executions are few (bounded by every worker's concurrency): the expiry index holds exactly them.
  // The claimer's own executions whose handler has ended (outcome on its way) are not running: ?3.
  const running = db.query<{ job: string; key: string | null; count: number }, [number, string, string, string]>(
    `SELECT job, concurrency_key AS key, COUNT(*) AS count FROM roster_executions INDEXED BY roster_executions_expiry
      WHERE state = 'running' AND lease_expires_at >= ?1 AND queue = ?2
        AND NOT (lease_owner = ?4 AND id IN (SELECT value FROM json_each(?3)))
      GROUP BY job, concurrency_key`
  )
  const starts = db.query<{ scope: string; expires_at: number; n: number }, [string, number]>(
    "SELECT scope, expires_at, n FROM roster_rate_starts WHERE queue = ? AND expires_at > ?"
  )
  const candidates = db.query<{ id: string; seq: number; job: string; concurrency_key: string | null; rate_key: string | null }, [string, number, string, string, string, number]>(
    `SELECT id, seq, job, concurrency_key, rate_key FROM roster_executions INDEXED BY roster_executions_claim
      WHERE state IN ('queued','waiting') AND queue = ?1 AND run_at <= ?2 AND job IN (SELECT value FROM json_each(?3))
        AND (concurrency_key IS NULL OR (job || char(31) || concurrency_key) NOT IN (SELECT value FROM json_each(?4)))
        AND (rate_key IS NULL OR (job || char(31) || rate_key) NOT IN (SELECT value FROM json_each(?5)))
      ORDER BY priority DESC, run_at, rowid
      LIMIT ?6`
  )
  const claimIds = db.query<ClaimedRow, [string, number, number, string]>(
    `UPDATE roster_executions
        SET state = 'running', attempt = attempt + 1, lease_owner = ?1, lease_expires_at = ?2, started_at = ?3
      WHERE seq IN (SELECT value FROM json_each(?4)) AND state IN ('queued','waiting')
      RETURNING *`
  )
  const addStart = db.query("INSERT INTO roster_rate_starts (queue, scope, expires_at, n) VALUES (?, ?, ?, ?)")
  const pruneStarts = db.query("DELETE FROM roster_rate_starts WHERE queue = ? AND expires_at <= ?")

  // Every due queued row of the queue, grouped by Job and by whether its keys are at a limit (the pairs the flow state found).
  const dueGroups = db.query<{ job: string; key_at_limit: number; rate_key_at_limit: number; count: number }, [string, number, string, string]>(
    `SELECT job,
            (concurrency_key IS NOT NULL AND (job || char(31) || concurrency_key) IN (SELECT value FROM json_each(?3))) AS key_at_limit,
            (rate_key IS NOT NULL AND (job || char(31) || rate_key) IN (SELECT value FROM json_each(?4))) AS rate_key_at_limit,
            COUNT(*) AS count
       FROM roster_executions
      WHERE state IN ('queued','waiting') AND queue = ?1 AND run_at <= ?2
      GROUP BY job, key_at_limit, rate_key_at_limit
      ORDER BY job, key_at_limit, rate_key_at_limit`
  )

  const snapshot = (queue: string, now: number, ending: ReadonlyArray<string> = [], workerId = ""): QueueFlow => ({
    paused: paused.get(queue) !== null,
    running: running.all(now, queue, JSON.stringify(ending), workerId) satisfies ReadonlyArray<RunningCount>,
    starts: starts.all(queue, now).map((s): StartRow => ({ scope: s.scope, expiresAt: s.expires_at, n: s.n }))
  })

  /** One round: read the counts, scan, choose, claim, record the starts (FlowRules.claimRound); `seqs` gathers the claimed rowids. */
  const round = (req: LimitedClaimRequest, want: number, seqs: Map<string, number>): Round => {
    const flow = snapshot(req.queue, req.now, req.ending, req.workerId)
    const plan = planRound(req.limits, flow, req.jobs, want, req.now)
    if (plan._tag === "Done") return plan.round
    const { state, room, jobs, scanSize } = plan
    const scanned = candidates.all(
      req.queue, req.now, JSON.stringify(jobs), JSON.stringify(state.blockedConcurrency), JSON.stringify(state.blockedRate), scanSize
    )
    const seqOf = new Map(scanned.map((r) => [r.id, r.seq]))
    const chosen = selectClaims(req.limits, state, flow.starts, scanned.map((r): Candidate => ({ id: r.id, job: r.job, concurrencyKey: r.concurrency_key, rateKey: r.rate_key })), want, req.now)
    // Claimed by rowid (the scan read it): no lookup of the ids.
    const rows = chosen.ids.length === 0 ? [] : claimIds.all(req.workerId, req.now + req.leaseMs, req.now, JSON.stringify(chosen.ids.map((id) => seqOf.get(id)!)))
    for (const s of chosen.starts) addStart.run(req.queue, s.scope, s.expiresAt, s.n)
    for (const r of rows) seqs.set(r.id, r.seq)
    return { executions: rows.map(toExecution), retryAt: chosen.retryAt, again: scanAgain(chosen.ids.length, room, scanned.length, scanSize) }
  }

  const claim = db.transaction((req: LimitedClaimRequest): LimitedClaim => {
    const seqs = new Map<string, number>()
    const claimed = claimRounds(req.limit, (want) => round(req, want, seqs))
    pruneStarts.run(req.queue, startsPruneBeforeOf(req.limits, req.now))
    return { executions: [...claimed.executions].sort(byClaimOrderIn(seqs)), retryAt: claimed.retryAt }
  })

  return {
    executionsClaimLimited: (req) =>
      attempt("claim executions", () =>
        req.limit <= 0 || req.jobs.length === 0 ? { executions: [], retryAt: null } : relaxed(() => claim.immediate(req))),
    queuesFlow: (req) => attempt("read queue flow", () => db.transaction(() => snapshot(req.queue, req.now)).deferred()),
    queuesHeldBack: (req) =>
      attempt("read held-back executions", () =>
        db.transaction(() => {
          const flow = snapshot(req.queue, req.now)
          const state = flowStateOf(req.limits, flow.running, flow.starts, req.now)
          const due = dueGroups.all(req.queue, req.now, JSON.stringify(state.blockedConcurrency), JSON.stringify(state.blockedRate))
            .map((g): DueGroup => ({ job: g.job, keyAtLimit: g.key_at_limit === 1, rateKeyAtLimit: g.rate_key_at_limit === 1, count: g.count }))
          return { flow, due }
        }).deferred())
  }
}
