/**
 * The Store on PostgreSQL through `@effect/sql-pg` (and `Bun.SQL` for the drain's hot
 * path): many worker and scheduler processes on many machines share one database, with
 * the semantics of the SQLite store (the conformance suite in tests/store runs against
 * both).
 *
 * - Claims are one statement: `UPDATE ... WHERE ctid = ANY(ARRAY(SELECT ctid ... ORDER
 *   BY priority DESC, run_at, id LIMIT n FOR UPDATE SKIP LOCKED)) RETURNING *`, served
 *   by a partial index in exactly that order; concurrent workers skip each other's rows
 *   instead of waiting on them.
 * - Group commit: a batch of enqueues is one INSERT; a batch of outcomes is one UPDATE
 *   for the successes and one statement for the rest (with their attempt rows), in one
 *   transaction. Outcomes are fenced exactly as on SQLite.
 * - Wake-ups: inserts and retries `pg_notify` inside their own statement (delivered on
 *   commit), and so does every statement that ends executions (one outcome notice per
 *   statement, for waiters); `watchChanges` LISTENs on a dedicated connection (see PgWakeups.ts).
 * - Two pools: durable writes and reads on one; heartbeats and log lines on one with
 *   `synchronous_commit = off` (see PgStoreOptions.relaxed). The claims (plain and
 *   limited, relaxed too) and the batch of successes run on Bun's native client instead
 *   (NativeClient.ts), with the same durability each.
 * - Server outages: every operation retries while the server is unavailable (see
 *   PostgresConnection.ts), and claims and outcomes that failed in doubt are settled
 *   before the next ones (see InDoubt.ts).
 *
 * Limits, plainly: times are epoch ms passed in by the caller (never the server's
 * clock); a success keeps its worker in `lease_owner` and has no attempt row of its
 * own (it is read back from the execution, as on SQLite); LISTEN/NOTIFY does not pass
 * through a transaction-pooling PgBouncer, where wake-ups fall back to polling.
 */
import { PgClient } from "@effect/sql-pg"
import { Clock, Context, Effect, Exit, Layer, Scope } from "effect"
import type { ExecutionState, LogDrops, LogLine } from "../Execution.ts"
import { type AttemptRow, type ExecutionRow, type LogDropsRow, type LogRow, type StepRow, sortInClaimOrder, toAttempt, toExecution, toLogDrops, toLogLine, toStep } from "../ExecutionRow.ts"
import { attemptOutcomeOf, cancelOf, claimsNothing, countsOf, errorTextOf, expiredBeforeOf, filterClauses, pageLimit, pruneLimit, withSucceededAttempt } from "../ExecutionRules.ts"
import { ScheduleStore } from "../ScheduleStore.ts"
import type { ExecutionFilter, InsertRequest, LimitedClaimRequest, Outcome } from "../Store.ts"
import { claimLimited, readHeldBack, readQueueFlow } from "./PgFlowClaim.ts"
import { makePgOrchestration } from "./PgOrchestration.ts"
import { Store, StoreError } from "../Store.ts"
import { insertExecutions } from "./ExecutionInsert.ts"
import * as InDoubt from "./InDoubt.ts"
import { makePgQueues } from "./PgQueues.ts"
import { makePgScheduleStore } from "./PgScheduleStore.ts"
import { makePgStats } from "./PgStats.ts"
import { makePgVacuum } from "./PgVacuum.ts"
import { makePgWorkers } from "./PgWorkers.ts"
import { watchWakeups } from "./PgWakeups.ts"
import { isUnavailable, redactUrl } from "./PgErrors.ts"
import { applyMigrations, defaultReconnectWindowMs, openClient, operation, type PostgresOptions } from "./PostgresConnection.ts"
import { arrayText, intArrayText, type NativeClient, openNative } from "./NativeClient.ts"
import { type Int8, int4Array, int8Array, num, textArray } from "./PgValues.ts"

export type { PostgresOptions } from "./PostgresConnection.ts"

/** What the store needs besides the client. */
export interface PgStoreOptions {
  /**
   * Sessions with `synchronous_commit = off`, for writes whose loss on a server crash is
   * harmless: claims, heartbeats and log lines. A lost claim only means the execution
   * is queued again (its worker's fenced outcome is then dropped and it runs again); a
   * lost heartbeat, a shorter lease. Each later durable commit (an enqueue, an outcome)
   * flushes the WAL up to itself, these included. Defaults to the durable client.
   */
  readonly relaxed?: PgClient.PgClient | undefined
  /** Bun's native client for the drain's hot statements: claims (relaxed sessions) and success batches (durable). */
  readonly hot: { readonly claims: NativeClient; readonly successes: NativeClient }
  /** This store's id, carried by its wake-ups so it can ignore its own. */
  readonly origin: string
  readonly reconnectWindowMs: number
}

/**
 * The claim, on the claims' native pool: $1 worker, $2 lease expiry, $3 now (started_at),
 * $4 queue, $5 now (due), $6 jobs (an array), $7 limit.
 *
 * The rows are found by the versions the subquery locked (`ctid`, a TID scan), not by
 * their ids through the primary key's index: 12% less server time a claimed row in a
 * drain (bench/RESULTS.md, twenty-fourth pass). The subquery's `FOR UPDATE` locks the
 * exact versions it returns, so none can change before the UPDATE reads them. A row
 * whose newest version was committed after this statement's snapshot (it changed while
 * the subquery waited to lock it, and still matches) is locked but not visible to the
 * TID scan: it is not claimed this time, stays as it is, and the next claim takes it.
 */
const claimText = `
  UPDATE roster_executions
     SET state = 'running', attempt = attempt + 1, lease_owner = $1, lease_expires_at = $2, started_at = $3
   WHERE ctid = ANY(ARRAY(
     SELECT ctid FROM roster_executions
      WHERE state IN ('queued','waiting') AND queue = $4 AND run_at <= $5 AND job = ANY($6::text[])
        -- A paused queue gives nothing, read in this statement (no check-then-claim race);
        -- uncorrelated, so it is an InitPlan evaluated once per claim.
        AND NOT EXISTS (SELECT 1 FROM roster_queues WHERE name = $4 AND paused)
      ORDER BY priority DESC, run_at, id
      LIMIT $7
      FOR UPDATE SKIP LOCKED))
  RETURNING *`

/** The outcome notice of a statement that ended executions, one text for both drivers; `origin` is SQL for this store's id (see PgWakeups.ts). */
const endedNotice = (origin: string) => `pg_notify('roster_wake', json_build_object('s', current_schema(), 'e', 1, 'o', ${origin}::text)::text)`

/**
 * A batch of successes, fenced, with one outcome notice: $1 ids, $2 workers, $3 attempts,
 * $4 times, $5 results (arrays), $6 this store's id.
 */
const successesText = `
  WITH done AS (
    UPDATE roster_executions AS e
       SET state = 'succeeded', result = u.result, error = NULL, finished_at = u.now, lease_expires_at = NULL
      FROM unnest($1::text[], $2::text[], $3::int4[], $4::int8[], $5::text[]) AS u(id, worker, attempt, now, result)
     WHERE e.id = u.id AND e.lease_owner = u.worker AND e.attempt = u.attempt AND e.state = 'running'
    RETURNING e.id
  ), told AS (SELECT ${endedNotice("$6")} WHERE EXISTS (SELECT 1 FROM done))
  SELECT id, (SELECT COUNT(*) FROM told) AS told FROM done`

/** Builds the PostgreSQL Store over an open, migrated client. */
export const makePgStore = (sql: PgClient.PgClient, options: PgStoreOptions): Store["Service"] => {
  const op = operation(options.reconnectWindowMs)
  const { origin } = options
  const relaxed = options.relaxed ?? sql

  const orchestration = makePgOrchestration(sql, origin)

  const getOne = (id: string) =>
    Effect.map(sql<ExecutionRow>`SELECT * FROM roster_executions WHERE id = ${id}`, (rows) => rows[0])

  /** The outcome notice of a statement that ended executions (one per statement; for waiters, see PgWakeups.ts). */
  const ended = sql.literal(endedNotice(`'${origin.replace(/'/g, "''")}'`))

  // Successes are the hot path: one statement per batch, and no attempt row — the
  // succeeded attempt is read back from the execution (lease_owner is kept as its worker).
  // On Bun's native client (NativeClient.ts), the arrays sent as array literal text.
  const finishSucceeded = (outcomes: ReadonlyArray<Extract<Outcome, { kind: "succeeded" }>>) =>
    options.hot.successes.run<{ id: string }>(successesText, [
      arrayText(outcomes.map((o) => o.id)),
      arrayText(outcomes.map((o) => o.workerId)),
      intArrayText(outcomes.map((o) => o.attempt)),
      intArrayText(outcomes.map((o) => o.now)),
      arrayText(outcomes.map((o) => o.result)),
      origin
    ])

  /**
   * Every other outcome in one statement: the fenced update, its attempt row, and a
   * wake-up for work back in the queue. A retry or a release of an execution asked to
   * cancel ends it cancelled instead: it never runs again.
   */
  const finishOthers = (outcomes: ReadonlyArray<Exclude<Outcome, { kind: "succeeded" | "park" }>>) => {
    return sql<{ ord: Int8 }>`
      WITH u AS (
        SELECT * FROM unnest(${textArray(outcomes.map((o) => o.id))}::text[], ${textArray(outcomes.map((o) => o.workerId))}::text[], ${int4Array(outcomes.map((o) => o.attempt))}::int4[],
                             ${textArray(outcomes.map((o) => o.kind))}::text[], ${int8Array(outcomes.map((o) => (o.kind === "retry" ? o.runAt : null)))}::int8[],
                             ${textArray(outcomes.map(errorTextOf))}::text[], ${int8Array(outcomes.map((o) => o.now))}::int8[],
                             ${int8Array(outcomes.map((o) => ("startedAt" in o ? o.startedAt : null)))}::int8[], ${textArray(outcomes.map(attemptOutcomeOf))}::text[],
                             ${int8Array(outcomes.map(expiredBeforeOf))}::int8[])
          WITH ORDINALITY AS u(id, worker, attempt, kind, run_at, error, now, started_at, outcome, expired_before, ord)
      ), done AS (
        UPDATE roster_executions AS e
           SET state = CASE WHEN u.kind NOT IN ('retry', 'released') THEN u.kind WHEN e.cancel_requested THEN 'cancelled' ELSE 'queued' END,
               run_at = CASE WHEN u.kind = 'retry' AND NOT e.cancel_requested THEN u.run_at ELSE e.run_at END,
               error = CASE WHEN u.kind = 'released' THEN e.error ELSE u.error END,
               finished_at = CASE WHEN u.kind IN ('failed', 'cancelled') OR e.cancel_requested THEN u.now ELSE e.finished_at END,
               attempt = CASE WHEN u.kind = 'released' THEN e.attempt - 1 ELSE e.attempt END,
               started_at = CASE WHEN u.kind = 'released' THEN NULL ELSE e.started_at END,
               lease_owner = NULL, lease_expires_at = NULL
          FROM u
         WHERE e.id = u.id AND e.lease_owner = u.worker AND e.attempt = u.attempt AND e.state = 'running'
           -- A Reaper's outcome applies only to a lease still expired as it is written (re-checked
           -- on the locked row): a heartbeat since the Reaper listed it keeps the execution running.
           AND (u.expired_before IS NULL OR e.lease_expires_at < u.expired_before)
        RETURNING u.ord, e.id, e.queue, e.run_at, e.state, u.kind, u.worker, u.attempt, u.started_at, u.now,
                  CASE WHEN u.outcome = 'retrying' AND e.state = 'cancelled' THEN 'cancelled' ELSE u.outcome END AS outcome, u.error
      ), attempts AS (
        INSERT INTO roster_attempts (execution_id, attempt, worker, started_at, finished_at, outcome, error)
        SELECT id, attempt, worker, started_at, now, outcome, error FROM done WHERE kind <> 'released'
        ON CONFLICT (execution_id, attempt) DO UPDATE
          SET worker = excluded.worker, started_at = excluded.started_at, finished_at = excluded.finished_at,
              outcome = excluded.outcome, error = excluded.error
      ), woke AS (
        SELECT pg_notify('roster_wake', json_build_object('s', current_schema(), 'q', queue, 'at', MIN(run_at), 'o', ${origin}::text)::text)
          FROM done WHERE state = 'queued' GROUP BY queue
      ), told AS (SELECT ${ended} WHERE EXISTS (SELECT 1 FROM done WHERE state <> 'queued'))
      SELECT ord, (SELECT COUNT(*) FROM woke) AS woke, (SELECT COUNT(*) FROM told) AS told FROM done`
  }

  const finishMany = (outcomes: ReadonlyArray<Outcome>) =>
    Effect.gen(function*() {
      // Sorted by id so concurrent batches lock rows in one order (no deadlock between a Reaper and a worker).
      const indexed = outcomes.map((o, i) => ({ o, i })).sort((a, b) => (a.o.id < b.o.id ? -1 : a.o.id > b.o.id ? 1 : a.i - b.i))
      const successes = indexed.filter((x) => x.o.kind === "succeeded")
      const parks = indexed.filter((x) => x.o.kind === "park")
      const others = indexed.filter((x) => x.o.kind !== "succeeded" && x.o.kind !== "park")
      // A park or a release ends a child asked to cancel, so they count too (wakeParents reads the states).
      const children = indexed.filter((x) => (x.o.parentId ?? null) !== null)
      const applied = new Array<boolean>(outcomes.length).fill(false)
      const run = Effect.gen(function*() {
        if (successes.length > 0) {
          const ids = new Set((yield* finishSucceeded(successes.map((x) => x.o as Extract<Outcome, { kind: "succeeded" }>))).map((r) => r.id))
          for (const x of successes) applied[x.i] = ids.has(x.o.id)
        }
        if (others.length > 0) {
          for (const r of yield* finishOthers(others.map((x) => x.o as Exclude<Outcome, { kind: "succeeded" | "park" }>))) {
            applied[others[num(r.ord) - 1]!.i] = true
          }
        }
        for (const x of parks) applied[x.i] = yield* orchestration.park(x.o as Extract<Outcome, { kind: "park" }>)
        // Children that ended: their waiting parents may be due now, decided in this transaction.
        const ended = children.filter((x) => applied[x.i]).map((x) => x.o.id)
        if (ended.length > 0) yield* orchestration.wakeParents(ended, children[0]!.o.now)
        return applied
      })
      // A batch of only successes that are no one's children (the common case) is one autocommit statement.
      const statements = (successes.length > 0 ? 1 : 0) + (others.length > 0 ? 1 : 0) + parks.length + (children.length > 0 ? 1 : 0)
      return yield* (statements > 1 ? sql.withTransaction(run) : run)
    })

  const unavailable = (e: unknown) => isUnavailable(e instanceof StoreError ? e.cause : e)
  const inDoubt = InDoubt.make({
    finish: finishMany,
    release: (c) =>
      // As every release: an execution asked to cancel ends cancelled (at the lost claim's instant), never queued again.
      sql`UPDATE roster_executions
             SET state = CASE WHEN cancel_requested THEN 'cancelled' ELSE 'queued' END,
                 finished_at = CASE WHEN cancel_requested THEN ${c.startedAt} ELSE finished_at END,
                 attempt = attempt - 1, started_at = NULL, lease_owner = NULL, lease_expires_at = NULL
           WHERE lease_owner = ${c.workerId} AND queue = ${c.queue} AND state = 'running' AND started_at = ${c.startedAt}
             AND NOT (id = ANY(${textArray(c.exclude)}::text[]))`
  }, unavailable)

  const claim = (req: Parameters<Store["Service"]["executionsClaim"]>[0]) =>
    Effect.gen(function*() {
      yield* inDoubt.settleOutcomes
      yield* inDoubt.settleClaims(req.workerId, req.queue)
      const mark = { workerId: req.workerId, queue: req.queue, startedAt: req.now }
      const rows = yield* options.hot.claims.run<ExecutionRow>(claimText, [
        req.workerId, req.now + req.leaseMs, req.now, req.queue, req.now, arrayText(req.jobs), req.limit
      ]).pipe(Effect.onError(() => Effect.sync(() => inDoubt.claimFailed(mark))))
      inDoubt.claimed(mark, rows.map((r) => r.id))
      return sortInClaimOrder(rows.map(toExecution))
    })

  const claimWithin = (req: LimitedClaimRequest) =>
    Effect.gen(function*() {
      yield* inDoubt.settleOutcomes
      yield* inDoubt.settleClaims(req.workerId, req.queue)
      const mark = { workerId: req.workerId, queue: req.queue, startedAt: req.now }
      const claimed = yield* claimLimited(options.hot.claims, req).pipe(Effect.onError(() => Effect.sync(() => inDoubt.claimFailed(mark))))
      inDoubt.claimed(mark, claimed.executions.map((e) => e.id))
      return claimed
    })

  const cancelOne = (id: string, now: number) =>
    sql.withTransaction(Effect.gen(function*() {
      const [row] = yield* sql<{ state: ExecutionState }>`SELECT state FROM roster_executions WHERE id = ${id} FOR UPDATE`
      const cancel = cancelOf(row?.state)
      if (cancel.write === "cancel") yield* sql`UPDATE roster_executions SET state = 'cancelled', finished_at = ${now} WHERE id = ${id} RETURNING ${ended}`
      if (cancel.write === "request") yield* sql`UPDATE roster_executions SET cancel_requested = true WHERE id = ${id}`
      // A cancel reaches the whole tree below (docs/patterns.md), and wakes a parent awaiting this one.
      if (cancel.write !== null) yield* orchestration.cancelTree(id, now)
      if (cancel.write === "cancel") yield* orchestration.wakeParents([id], now)
      return cancel.result
    }))

  const whereOf = (f: ExecutionFilter) => {
    const clauses = filterClauses(f).map((c) => sql`${sql.literal(`${c.column} ${c.op}`)} ${c.value}`)
    return clauses.length > 0 ? sql`WHERE ${sql.and(clauses)}` : sql``
  }

  const logsAppend = (lines: ReadonlyArray<LogLine>, drops: ReadonlyArray<LogDrops>) => {
    // One row per (execution, attempt): an upsert may not touch a row twice in one statement.
    const merged = new Map<string, LogDrops>()
    for (const d of drops) {
      const k = `${d.executionId}\u0000${d.attempt}`
      const prev = merged.get(k)
      merged.set(k, prev ? { ...prev, dropped: prev.dropped + d.dropped } : d)
    }
    const ds = [...merged.values()]
    return relaxed`
      WITH l AS (
        INSERT INTO roster_logs (execution_id, attempt, at, level, message, annotations)
        SELECT execution_id, attempt, at, level, message, annotations
          FROM unnest(${textArray(lines.map((l) => l.executionId))}::text[], ${int4Array(lines.map((l) => l.attempt))}::int4[], ${int8Array(lines.map((l) => l.at))}::int8[],
                      ${textArray(lines.map((l) => l.level))}::text[], ${textArray(lines.map((l) => l.message))}::text[], ${textArray(lines.map((l) => l.annotations))}::text[])
               WITH ORDINALITY AS u(execution_id, attempt, at, level, message, annotations, ord)
         ORDER BY ord
        RETURNING 1
      ), d AS (
        INSERT INTO roster_log_drops (execution_id, attempt, dropped)
        SELECT * FROM unnest(${textArray(ds.map((d) => d.executionId))}::text[], ${int4Array(ds.map((d) => d.attempt))}::int4[], ${int4Array(ds.map((d) => d.dropped))}::int4[])
        ON CONFLICT (execution_id, attempt) DO UPDATE SET dropped = roster_log_drops.dropped + excluded.dropped
        RETURNING 1
      )
      SELECT (SELECT COUNT(*) FROM l) AS lines, (SELECT COUNT(*) FROM d) AS drops`
  }

  // An insert retried after a lost reply may find its own rows already committed.
  const insertRetrying = (rows: Parameters<Store["Service"]["executionsInsert"]>[0]) => {
    let tries = 0
    return op("insert executions", Effect.suspend(() => insertExecutions(sql, rows, { origin, ownIdsMayExist: tries++ > 0 })))
  }

  const insert = (rows: ReadonlyArray<InsertRequest>) => (rows.length === 0 ? Effect.succeed([]) : insertRetrying(rows))
  return Store.of({
    migrate: Effect.flatMap(Clock.currentTimeMillis, (now) => op("migrate", Effect.asVoid(applyMigrations(sql, { now })))),
    executionsInsert: insert,
    // No hand-off here: the rows are claimed as usual (docs/queues.md, "Hand-off"); each
    // commit is durable when it returns, so nothing is deferred (syncCommitted: no-op).
    startsOnInsert: false,
    executionsInsertInline: null,
    executionsInsertStarting: (rows) => Effect.map(insert(rows), (results) => ({ results, started: rows.map(() => null) })),
    syncCommitted: Effect.void,
    executionsClaim: (req) => (claimsNothing(req) ? Effect.succeed([]) : op("claim executions", claim(req))),
    executionsClaimLimited: (req) => (claimsNothing(req) ? Effect.succeed({ executions: [], retryAt: null }) : op("claim executions", claimWithin(req))),
    executionsInsertChild: (req) => op("insert child execution", sql.withTransaction(orchestration.insertChild(req))),
    signalsSend: (req) => op("send signal", sql.withTransaction(orchestration.signalSend(req))),
    signalsTake: (req) => op("take signal", sql.withTransaction(orchestration.signalTake(req))),
    signalsList: (id) => op("list signals", orchestration.signals(id)),
    queuesFlow: (req) => op("read queue flow", sql.withTransaction(readQueueFlow(sql, req.queue, req.now))),
    queuesHeldBack: (req) => op("read held-back executions", readHeldBack(sql, req.queue, req.now, req.limits)),
    executionsFinish: (outcomes) =>
      outcomes.length === 0
        ? Effect.succeed([])
        : op("record outcomes", Effect.andThen(inDoubt.settleOutcomes, finishMany(outcomes))).pipe(
          Effect.tapError((e) => Effect.sync(() => (unavailable(e) ? inDoubt.keep(outcomes) : undefined)))
        ),
    // Rows are locked in id order, as outcome batches lock them, so the two never deadlock.
    executionsHeartbeat: (req) =>
      op("heartbeat", Effect.map(
        Effect.andThen(inDoubt.settleOutcomes, relaxed<{ id: string; attempt: number; cancel_requested: boolean }>`
          UPDATE roster_executions SET lease_expires_at = ${req.now + req.leaseMs}
           WHERE id IN (
             SELECT id FROM roster_executions WHERE lease_owner = ${req.workerId} AND state = 'running'
               ${req.ids === undefined ? relaxed`` : relaxed`AND id = ANY(${textArray(req.ids)}::text[])`} ORDER BY id FOR UPDATE)
             AND lease_owner = ${req.workerId} AND state = 'running'
          RETURNING id, attempt, cancel_requested`),
        (rows) => ({ held: rows.map((r) => ({ id: r.id, attempt: r.attempt, cancelRequested: r.cancel_requested })) })
      )),
    executionsExpired: (req) =>
      op("find expired leases", Effect.map(
        sql<ExecutionRow>`
          SELECT * FROM roster_executions WHERE state = 'running' AND lease_expires_at < ${req.now}
           ORDER BY lease_expires_at LIMIT ${req.limit}`,
        (rows) => rows.map(toExecution)
      )),
    executionsHasWork: (req) =>
      op("look for work", Effect.gen(function*() {
        const [expired] = yield* sql`SELECT 1 AS one FROM roster_executions WHERE state = 'running' AND lease_expires_at < ${req.now} LIMIT 1`
        if (expired) return true
        for (const q of req.queues) {
          if (q.jobs.length === 0) continue
          const [due] = yield* sql`
            SELECT 1 AS one FROM roster_executions
             WHERE state IN ('queued','waiting') AND queue = ${q.queue} AND run_at <= ${req.now} AND job = ANY(${textArray(q.jobs)}::text[])
               AND NOT EXISTS (SELECT 1 FROM roster_queues WHERE name = ${q.queue} AND paused) LIMIT 1`
          if (due) return true
        }
        return false
      })),
    executionsGet: (id) => op("get execution", Effect.map(getOne(id), (row) => (row ? toExecution(row) : null))),
    executionsList: (filter) =>
      op("list executions", Effect.map(
        sql<ExecutionRow>`SELECT * FROM roster_executions ${whereOf(filter)} ORDER BY id DESC LIMIT ${pageLimit(filter.limit)}`,
        (rows) => rows.map(toExecution)
      )),
    executionsCount: (filter) =>
      op("count executions", Effect.map(
        sql<{ state: ExecutionState; n: number }>`SELECT state, COUNT(*)::int AS n FROM roster_executions ${whereOf(filter)} GROUP BY state`,
        countsOf
      )),
    executionsCancel: (req) => op("cancel execution", cancelOne(req.id, req.now)),
    executionsUnknownJobs: (known) =>
      op("find unknown jobs", sql<{ job: string; count: number }>`
        SELECT job, COUNT(*)::int AS count FROM roster_executions
         WHERE state IN ('queued','waiting') AND NOT (job = ANY(${textArray(known)}::text[])) GROUP BY job ORDER BY job`),
    executionsPrune: (req) =>
      op("prune executions", Effect.map(
        sql<{ n: number }>`
          WITH doomed AS (
            SELECT id FROM roster_executions
             WHERE (state = 'succeeded' AND finished_at < ${req.succeededBefore})
                OR (state IN ('failed', 'cancelled') AND finished_at < ${req.failedBefore})
             LIMIT ${pruneLimit(req.limit)}
          ), attempts AS (DELETE FROM roster_attempts WHERE execution_id IN (SELECT id FROM doomed)),
          steps AS (DELETE FROM roster_steps WHERE execution_id IN (SELECT id FROM doomed)),
          logs AS (DELETE FROM roster_logs WHERE execution_id IN (SELECT id FROM doomed)),
          drops AS (DELETE FROM roster_log_drops WHERE execution_id IN (SELECT id FROM doomed)),
          signals AS (DELETE FROM roster_signals WHERE execution_id IN (SELECT id FROM doomed)),
          executions AS (DELETE FROM roster_executions WHERE id IN (SELECT id FROM doomed) RETURNING 1),
          -- Schedule history goes with the longer (failed) retention, as on SQLite.
          fires AS (DELETE FROM roster_schedule_fires WHERE (schedule_id, due_at) IN
            (SELECT schedule_id, due_at FROM roster_schedule_fires WHERE due_at < ${req.failedBefore} LIMIT ${pruneLimit(req.limit)}))
          SELECT COUNT(*)::int AS n FROM executions`,
        (rows) => rows[0]?.n ?? 0
      )),
    attemptsList: (id) =>
      op("list attempts", Effect.gen(function*() {
        const rows = yield* sql<AttemptRow>`SELECT * FROM roster_attempts WHERE execution_id = ${id} ORDER BY attempt`
        return withSucceededAttempt(rows.map(toAttempt), id, yield* getOne(id))
      })),
    stepsList: (id) =>
      op("list steps", Effect.map(sql<StepRow>`SELECT * FROM roster_steps WHERE execution_id = ${id} ORDER BY created_at, name`, (rows) => rows.map(toStep))),
    stepsSave: (s) =>
      op("save step", Effect.map(
        sql`INSERT INTO roster_steps (execution_id, name, output, attempt, created_at)
            VALUES (${s.executionId}, ${s.name}, ${s.output}, ${s.attempt}, ${s.createdAt}) ON CONFLICT DO NOTHING RETURNING 1 AS one`,
        (rows) => rows.length === 1
      )),
    logsAppend: ({ lines, drops }) => (lines.length + drops.length === 0 ? Effect.void : op("append logs", Effect.asVoid(logsAppend(lines, drops)))),
    logsList: (id) =>
      op("list logs", Effect.gen(function*() {
        const lines = yield* sql<LogRow>`
          SELECT execution_id, attempt, at, level, message, annotations FROM roster_logs WHERE execution_id = ${id} ORDER BY seq`
        const drops = yield* sql<LogDropsRow>`
          SELECT execution_id, attempt, dropped FROM roster_log_drops WHERE execution_id = ${id} ORDER BY attempt`
        return { lines: lines.map(toLogLine), drops: drops.map(toLogDrops) }
      })),
    watchChanges: ({ onChange }) => watchWakeups(sql, { origin, onChange }),
    ...makePgWorkers(sql, op),
    ...makePgStats(sql, op),
    ...makePgVacuum(sql, op),
    ...makePgQueues(sql, op, origin)
  })
}

/** Opens the pool in `scope` and applies migrations (retrying while the server is still coming up). */
export const acquireClient = (options: PostgresOptions, scope: Scope.Scope) =>
  Effect.gen(function*() {
    const client = yield* openClient(options, scope, { size: options.poolSize ?? 10, relaxed: false })
    const now = yield* Clock.currentTimeMillis
    yield* operation(options.reconnectWindowMs ?? defaultReconnectWindowMs)(
      `prepare database ${redactUrl(options.url)}`,
      applyMigrations(client, { schema: options.schema, now, database: redactUrl(options.url) })
    )
    return client
  })

/**
 * Store and ScheduleStore on one PostgreSQL database, as one Layer: opens the pools,
 * migrates, and closes the pools with the scope. A fire and the execution it enqueues
 * are written in one transaction.
 */
export const layerPostgres = (options: PostgresOptions): Layer.Layer<Store | ScheduleStore, StoreError> =>
  Layer.effectContext(Effect.gen(function*() {
    const scope = yield* Scope.make()
    yield* Effect.addFinalizer(() => Scope.close(scope, Exit.void))
    const client = yield* acquireClient(options, scope)
    const relaxed = yield* openClient(options, scope, { size: Math.max(1, Math.min(4, options.poolSize ?? 10) - 2), relaxed: true })
    const hot = {
      claims: openNative(options, { size: Math.min(2, options.poolSize ?? 10), relaxed: true }),
      successes: openNative(options, { size: 1, relaxed: false })
    }
    yield* Scope.addFinalizer(scope, Effect.andThen(hot.claims.close, hot.successes.close))
    const reconnectWindowMs = options.reconnectWindowMs ?? defaultReconnectWindowMs
    const origin = crypto.randomUUID()
    const store = makePgStore(client, { relaxed, hot, origin, reconnectWindowMs })
    return Context.make(Store, store).pipe(Context.add(ScheduleStore, makePgScheduleStore(client, { reconnectWindowMs })))
  }))
