/**
 * The Store on an embedded SQLite file through `bun:sqlite`.
 *
 * Limits, plainly: one file, one writer at a time (other processes wait on
 * busy_timeout); cross-process wake-ups come from reading `PRAGMA data_version`, which
 * changes whenever another connection commits, while writes come and when the file
 * system reports one. Calls are synchronous under the hood, so each operation is short
 * and batched: group commit is what makes it fast at `synchronous=FULL`.
 */
import type { Database } from "bun:sqlite"
import { Clock, Effect, Layer } from "effect"
import type { ExecutionState, LogDrops, LogLine } from "../Execution.ts"
import { type AttemptRow, type ExecutionRow, type LogDropsRow, type LogRow, type StepRow, toAttempt, toExecution, toLogDrops, toLogLine, toStep } from "../ExecutionRow.ts"
import { attemptOutcomeOf, cancelOf, claimsNothing, countsOf, endedAttemptOutcome, errorTextOf, expiredBeforeOf, filterClauses, pageLimit, pruneLimit, withSucceededAttempt } from "../ExecutionRules.ts"
import type { CancelResult, ExecutionFilter, InsertRequest, InsertResult, InsertStarted, Outcome, StartOffer } from "../Store.ts"
import { Store, StoreError, type StoreErrorReason } from "../Store.ts"
import { makeSqliteFlow } from "./SqliteFlowClaim.ts"
import { makeSqliteOrchestration } from "./SqliteOrchestration.ts"
import { byRowClaimOrder, type ClaimedRow } from "./ClaimOrder.ts"
import { makeSqliteQueues } from "./SqliteQueues.ts"
import { makeSqliteStats } from "./SqliteStats.ts"
import { makeSqliteWorkers } from "./SqliteWorkers.ts"
import { applyMigrations, openDatabase, type SqliteOptions } from "./SqliteConnection.ts"
import { isWatchable, nextWrite } from "./FileEvents.ts"
import { makeWalSync } from "./WalSync.ts"
import { makeStatements } from "./InsertStatements.ts"
import { byIdSql, inJsonIdsSql, rowidOf, rowidSql } from "./ExecutionRowid.ts"
import { checkpointerOnDemand, type NoteWrites } from "./Checkpointer.ts"

/** How long the change watch keeps reading every pollMs after a file moved or data_version changed. */
const watchHotMs = 250
/** How often the change watch reads while no file moves (a report missed, or made before its commit was visible). */
const watchColdMs = 500
/** Reads 1 ms apart after a report ends a quiet spell, before the pace goes back to pollMs. */
const watchQuickReads = 4

export type { SqliteOptions } from "./SqliteConnection.ts"


/**
 * Builds the SQLite Store over an open database. `noteWrites` hears how many rows each
 * insert, claim, outcome batch and log batch wrote (Checkpointer.ts starts its thread by it).
 */
export const makeSqliteStore = (db: Database, noteWrites: NoteWrites = () => {}): Store["Service"] => {
  const configuredSync = (db.query("PRAGMA synchronous").get() as { synchronous: number }).synchronous
  /**
   * Runs a write whose loss on power failure is harmless without its own fsync: in WAL
   * mode a NORMAL commit is durable against process crashes, and the next FULL commit
   * fsyncs the WAL up to and including it. A lost claim or heartbeat only means the
   * execution is queued again or its lease is shorter — at-least-once either way —
   * while enqueues and outcomes keep the configured FULL durability.
   */
  const relaxed = <A>(f: () => A): A => {
    if (configuredSync < 2) return f()
    db.run("PRAGMA synchronous = NORMAL")
    try {
      return f()
    } finally {
      db.run("PRAGMA synchronous = FULL")
    }
  }
  // The hand-off's insert commits at NORMAL; syncCommitted fsyncs it (WalSync.ts).
  const walSync = makeWalSync(db, configuredSync)
  const { insertAll, insertOne } = makeStatements(db)
  const watchable = isWatchable(db.filename)
  const claim = db.query<ClaimedRow, [string, number, number, string, string, number]>(
    `UPDATE roster_executions
        SET state = 'running', attempt = attempt + 1, lease_owner = ?1, lease_expires_at = ?2, started_at = ?3
      -- By rowid: the claim index holds it, so each claimed row is one table seek, not a
      -- search of the id index first (drain +2.5% median, bench/RESULTS.md fifth pass).
      WHERE rowid IN (
        SELECT rowid FROM roster_executions INDEXED BY roster_executions_claim
         WHERE state IN ('queued','waiting') AND queue = ?4 AND run_at <= ?3 AND job IN (SELECT value FROM json_each(?5))
           -- A paused queue gives nothing, read in this statement (no check-then-claim race);
           -- uncorrelated, so SQLite evaluates it once per claim.
           AND NOT EXISTS (SELECT 1 FROM roster_queues WHERE name = ?4 AND paused)
         ORDER BY priority DESC, run_at, rowid
         LIMIT ?6)
      RETURNING *`
  )
  // Successes are the hot path: one prepared UPDATE per row, with no attempt row — the
  // succeeded attempt is read back from the execution (lease_owner is kept as its worker).
  // Bound parameters, not one json_each statement per batch: 11–14% less per row
  // (bench/finish-variants.ts, bench/RESULTS.md ninth pass).
  // By the rowid the id gives (?6), and by the displaced rows' index when that finds none.
  const successSet = "SET state = 'succeeded', result = ?1, error = NULL, finished_at = ?2, lease_expires_at = NULL"
  const finishSucceededAt = db.query<never, [string | null, number, string, string, number, number | null]>(
    `UPDATE roster_executions ${successSet} WHERE seq = ?6 AND id = ?3 AND lease_owner = ?4 AND attempt = ?5 AND state = 'running'`
  )
  const finishSucceededById = db.query<never, [string | null, number, string, string, number]>(
    `UPDATE roster_executions ${successSet} WHERE ${byIdSql("?3")} AND lease_owner = ?4 AND attempt = ?5 AND state = 'running'`
  )
  const finishSucceeded = (o: Extract<Outcome, { kind: "succeeded" }>): boolean =>
    finishSucceededAt.run(o.result, o.now, o.id, o.workerId, o.attempt, rowidOf(o.id)).changes === 1 ||
    finishSucceededById.run(o.result, o.now, o.id, o.workerId, o.attempt).changes === 1
  // A retry or a release of an execution asked to cancel ends it cancelled: it never runs again.
  // A Reaper's outcome (?7, its now) applies only to a lease still expired as it is written:
  // a heartbeat since the Reaper listed it keeps the execution running.
  const finishRetry = db.query<{ state: ExecutionState }, Array<string | number | null>>(
    `UPDATE roster_executions
        SET state = CASE WHEN cancel_requested THEN 'cancelled' ELSE 'queued' END,
            run_at = CASE WHEN cancel_requested THEN run_at ELSE ?1 END,
            finished_at = CASE WHEN cancel_requested THEN ?2 ELSE finished_at END,
            error = ?3, lease_owner = NULL, lease_expires_at = NULL
      WHERE ${byIdSql("?4")} AND lease_owner = ?5 AND attempt = ?6 AND state = 'running'
        AND (?7 IS NULL OR lease_expires_at < ?7)
      RETURNING state`
  )
  const finishFailed = db.query(
    `UPDATE roster_executions SET state = 'failed', error = ?1, finished_at = ?2, lease_owner = NULL, lease_expires_at = NULL
      WHERE ${byIdSql("?3")} AND lease_owner = ?4 AND attempt = ?5 AND state = 'running'
        AND (?6 IS NULL OR lease_expires_at < ?6)`
  )
  const finishCancelled = db.query(
    `UPDATE roster_executions SET state = 'cancelled', error = ?1, finished_at = ?2, lease_owner = NULL, lease_expires_at = NULL
      WHERE ${byIdSql("?3")} AND lease_owner = ?4 AND attempt = ?5 AND state = 'running'`
  )
  const finishReleased = db.query(
    `UPDATE roster_executions
        SET state = CASE WHEN cancel_requested THEN 'cancelled' ELSE 'queued' END,
            finished_at = CASE WHEN cancel_requested THEN ?1 ELSE finished_at END,
            attempt = attempt - 1, started_at = NULL, lease_owner = NULL, lease_expires_at = NULL
      WHERE ${byIdSql("?2")} AND lease_owner = ?3 AND attempt = ?4 AND state = 'running'`
  )
  const insertAttempt = db.query(
    `INSERT OR REPLACE INTO roster_attempts (execution_id, attempt, worker, started_at, finished_at, outcome, error)
     VALUES (?, ?, ?, ?, ?, ?, ?)`
  )
  const heartbeat = db.query<{ id: string; attempt: number; cancel_requested: number }, [number, string, string | null]>(
    `UPDATE roster_executions INDEXED BY roster_executions_expiry SET lease_expires_at = ?1 WHERE lease_owner = ?2 AND state = 'running'
        AND (?3 IS NULL OR id IN (SELECT value FROM json_each(?3)))
      RETURNING id, attempt, cancel_requested`
  )
  const expired = db.query<ExecutionRow, [number, number]>(
    `SELECT * FROM roster_executions INDEXED BY roster_executions_expiry
      WHERE state = 'running' AND lease_expires_at < ? ORDER BY lease_expires_at LIMIT ?`
  )
  const hasDue = db.query<{ one: number }, [string, number, string]>(
    `SELECT 1 AS one FROM roster_executions INDEXED BY roster_executions_claim
      WHERE state IN ('queued','waiting') AND queue = ?1 AND run_at <= ?2 AND job IN (SELECT value FROM json_each(?3))
        AND NOT EXISTS (SELECT 1 FROM roster_queues WHERE name = ?1 AND paused) LIMIT 1`
  )
  const hasExpired = db.query<{ one: number }, [number]>(
    "SELECT 1 AS one FROM roster_executions INDEXED BY roster_executions_expiry WHERE state = 'running' AND lease_expires_at < ? LIMIT 1"
  )
  const getOne = db.query<ExecutionRow, [string]>(`SELECT * FROM roster_executions WHERE ${byIdSql("?1")}`)
  const cancelQueued = db.query(
    `UPDATE roster_executions SET state = 'cancelled', finished_at = ?1 WHERE ${byIdSql("?2")} AND state IN ('queued','waiting')`
  )
  const cancelRunning = db.query(
    `UPDATE roster_executions SET cancel_requested = 1 WHERE ${byIdSql("?1")} AND state = 'running'`
  )
  const attempts = db.query<AttemptRow, [string]>("SELECT * FROM roster_attempts WHERE execution_id = ? ORDER BY attempt")
  const steps = db.query<StepRow, [string]>(
    "SELECT * FROM roster_steps WHERE execution_id = ? ORDER BY created_at, name"
  )
  const stepSave = db.query(
    "INSERT INTO roster_steps (execution_id, name, output, attempt, created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING"
  )
  const pruneSelect = db.query<{ id: string }, [number, number, number]>(
    `SELECT id FROM roster_executions
      WHERE (state = 'succeeded' AND finished_at < ?1) OR (state IN ('failed', 'cancelled') AND finished_at < ?2)
      LIMIT ?3`
  )
  const pruneTables = ["roster_attempts", "roster_steps", "roster_logs", "roster_log_drops", "roster_signals"] as const
  const pruneDeletes = [
    ...pruneTables.map((t) => db.query(`DELETE FROM ${t} WHERE execution_id IN (SELECT value FROM json_each(?))`)),
    db.query(`DELETE FROM roster_executions WHERE ${inJsonIdsSql("?1")}`)
  ]
  // Schedule history goes with the longer (failed) retention.
  const pruneFires = db.query(
    `DELETE FROM roster_schedule_fires WHERE (schedule_id, due_at) IN
       (SELECT schedule_id, due_at FROM roster_schedule_fires WHERE due_at < ? LIMIT ?)`
  )
  const prune = db.transaction((succeededBefore: number, failedBefore: number, limit: number): number => {
    const ids = JSON.stringify(pruneSelect.all(succeededBefore, failedBefore, limit).map((r) => r.id))
    let deleted = 0
    for (const d of pruneDeletes) deleted = d.run(ids).changes
    pruneFires.run(failedBefore, limit)
    return deleted
  })
  const logInsert = db.query("INSERT INTO roster_logs (execution_id, attempt, at, level, message, annotations) VALUES (?, ?, ?, ?, ?, ?)")
  const logDrop = db.query(
    `INSERT INTO roster_log_drops (execution_id, attempt, dropped) VALUES (?, ?, ?)
     ON CONFLICT (execution_id, attempt) DO UPDATE SET dropped = dropped + excluded.dropped`
  )
  const logSelect = db.query<LogRow, [string]>(
    "SELECT * FROM roster_logs WHERE execution_id = ? ORDER BY rowid"
  )
  const dropSelect = db.query<LogDropsRow, [string]>(
    "SELECT * FROM roster_log_drops WHERE execution_id = ? ORDER BY attempt"
  )
  const logsAppend = db.transaction((lines: ReadonlyArray<LogLine>, drops: ReadonlyArray<LogDrops>) => {
    for (const l of lines) logInsert.run(l.executionId, l.attempt, l.at, l.level, l.message, l.annotations)
    for (const d of drops) logDrop.run(d.executionId, d.attempt, d.dropped)
  })
  const dataVersion = db.query<{ data_version: number }, []>("PRAGMA data_version")
  const unknownJobs = db.query<{ job: string; count: number }, [string]>(
    `SELECT job, COUNT(*) AS count FROM roster_executions
      WHERE state IN ('queued','waiting') AND job NOT IN (SELECT value FROM json_each(?)) GROUP BY job ORDER BY job`
  )

  const insertMany = db.transaction(insertAll)
  // The connection's busy timeout, set aside for an inline insert (executionsInsertInline).
  // (Run, not prepared: SQLite applies this PRAGMA when it compiles the statement.)
  const busyTimeoutMs = db.query<{ timeout: number }, []>("PRAGMA busy_timeout").get()?.timeout ?? 0
  const restoreLockWait = `PRAGMA busy_timeout = ${busyTimeoutMs}`
  // A hand-off (Store.StartOffer): the new row is leased as a claim would lease it, unless
  // its queue is paused or a due execution of the offering worker's Jobs is ahead of it in
  // claim order (that one is the Dispatcher's to claim first).
  const startInserted = db.query<ClaimedRow, [string, number, number, string, string]>(
    `UPDATE roster_executions AS e
        SET state = 'running', attempt = attempt + 1, lease_owner = ?1, lease_expires_at = ?2, started_at = ?3
      WHERE ${byIdSql("?4", "e")} AND e.state = 'queued' AND e.run_at <= ?3
        AND NOT EXISTS (SELECT 1 FROM roster_queues WHERE name = e.queue AND paused)
        AND NOT EXISTS (
          SELECT 1 FROM roster_executions AS o INDEXED BY roster_executions_claim
           WHERE o.state IN ('queued','waiting') AND o.queue = e.queue AND o.run_at <= ?3 AND o.rowid <> e.rowid
             AND o.job IN (SELECT value FROM json_each(?5))
             AND (o.priority > e.priority OR (o.priority = e.priority AND (o.run_at < e.run_at OR (o.run_at = e.run_at AND o.rowid < e.rowid)))))
      RETURNING *`
  )
  const offerJobs = new WeakMap<ReadonlyArray<string>, string>()
  const jobsJson = (jobs: ReadonlyArray<string>): string => {
    let text = offerJobs.get(jobs)
    if (text === undefined) offerJobs.set(jobs, (text = JSON.stringify(jobs)))
    return text
  }
  const insertStarting = db.transaction((rows: ReadonlyArray<InsertRequest>, offers: ReadonlyArray<StartOffer | null>): InsertStarted => {
    const results = insertAll(rows)
    const started = offers.map((o, i) => {
      if (o === null || !results[i]!.inserted) return null
      const row = startInserted.get(o.workerId, o.now + o.leaseMs, o.now, results[i]!.id, jobsJson(o.jobs))
      return row === null ? null : toExecution(row)
    })
    return { results, started }
  })
  const orchestration = makeSqliteOrchestration(db, insertOne)

  /** Applies one outcome other than a success, and writes its attempt row (ExecutionRules). */
  const applyOutcome = (o: Exclude<Outcome, { kind: "succeeded" }>): boolean => {
    const fence = [o.id, o.workerId, o.attempt] as const
    const error = errorTextOf(o)
    if (o.kind === "released") return finishReleased.run(o.now, ...fence).changes === 1
    if (o.kind === "park") return orchestration.park(o)
    const state = o.kind === "retry"
      ? finishRetry.get(o.runAt, o.now, error, ...fence, expiredBeforeOf(o))?.state
      : (o.kind === "failed" ? finishFailed.run(error, o.now, ...fence, expiredBeforeOf(o)) : finishCancelled.run(error, o.now, ...fence)).changes === 1
      ? o.kind
      : undefined
    if (state === undefined) return false
    insertAttempt.run(o.id, o.attempt, o.workerId, o.startedAt, o.now, endedAttemptOutcome(attemptOutcomeOf(o)!, state), error)
    return true
  }
  const finishMany = db.transaction((outcomes: ReadonlyArray<Outcome>): ReadonlyArray<boolean> => {
    // Every success first, then the other outcomes in order: a Reaper's outcome for an execution
    // that succeeded in the same batch then finds it ended, and applies to nothing.
    const results = outcomes.map((o) => (o.kind === "succeeded" ? finishSucceeded(o) : false))
    outcomes.forEach((o, i) => {
      if (o.kind !== "succeeded") results[i] = applyOutcome(o)
    })
    // Children whose outcome applied: their waiting parents may be due now (the rest of the batch pays nothing).
    // A park or a release ends a child asked to cancel, so they count too (the check itself reads the states).
    const children = outcomes.filter((o, i) => results[i] && (o.parentId ?? null) !== null)
    if (children.length > 0) orchestration.wakeParents(children.map((o) => o.id), children[0]!.now)
    return results
  })

  const cancelOne = db.transaction((id: string, now: number): CancelResult | null => {
    const cancel = cancelOf(getOne.get(id)?.state)
    if (cancel.write === "cancel") cancelQueued.run(now, id)
    if (cancel.write === "request") cancelRunning.run(id)
    // A cancel reaches the whole tree below (docs/patterns.md), and wakes a parent awaiting this one.
    if (cancel.write !== null) {
      orchestration.cancelTree(id, now)
      if (cancel.write === "cancel") orchestration.wakeParents([id], now)
    }
    return cancel.result
  })

  /** A committed write's result, its rows told to `noteWrites` first. */
  const wrote = <A>(rows: number, result: A): A => {
    if (rows > 0) noteWrites(rows)
    return result
  }

  // Pages follow the rowid, which follows the id (ExecutionRowid.ts): `before` stands for
  // its rowid (where that id is stored, else where it would be).
  const beforeSql = (p: string) => `seq < COALESCE((SELECT b.seq FROM roster_executions b WHERE ${byIdSql(p, "b")}), ${rowidSql(p)})`
  const whereOf = (f: ExecutionFilter): { sql: string; params: Array<string | number> } => {
    const clauses = filterClauses(f)
    return {
      sql: clauses.length ? ` WHERE ${clauses.map((c, i) => (c.column === "id" ? beforeSql(`?${i + 1}`) : `${c.column} ${c.op} ?${i + 1}`)).join(" AND ")}` : "",
      params: clauses.map((c) => c.value)
    }
  }

  return Store.of({
    migrate: Effect.flatMap(Clock.currentTimeMillis, (now) => attempt("migrate", () => void applyMigrations(db, now))),
    executionsInsert: (rows) => attempt("insert executions", () => (rows.length === 0 ? [] : wrote(rows.length, insertMany.immediate(rows)))),
    startsOnInsert: true,
    executionsInsertInline: (rows) =>
      attempt("insert executions", () => {
        if (rows.length === 0) return []
        // No wait for the write lock: a connection holding it may be this thread's own
        // (an app's transaction on the same file), which no busy wait here can outlast.
        db.run("PRAGMA busy_timeout = 0")
        try {
          return wrote(rows.length, insertMany.immediate(rows))
        } catch (e) {
          if (sqliteCode(e).startsWith("SQLITE_BUSY")) return null
          throw e
        } finally {
          db.run(restoreLockWait)
        }
      }),
    executionsInsertStarting: (rows, offers) =>
      attempt("insert executions", () => (rows.length === 0 ? { results: [], started: [] } : wrote(rows.length, walSync.enabled ? relaxed(() => insertStarting.immediate(rows, offers)) : insertStarting.immediate(rows, offers)))),
    executionsClaim: (req) =>
      attempt("claim executions", () => {
        if (claimsNothing(req)) return []
        const rows = relaxed(() => claim.all(req.workerId, req.now + req.leaseMs, req.now, req.queue, JSON.stringify(req.jobs), req.limit))
        return wrote(rows.length, rows).sort(byRowClaimOrder).map(toExecution)
      }),
    executionsFinish: (outcomes) => attempt("record outcomes", () => (outcomes.length === 0 ? [] : wrote(outcomes.length, finishMany.immediate(outcomes)))),
    syncCommitted: Effect.mapError(walSync.sync, (cause) => toStoreError("sync the WAL to disk", cause)),
    executionsHeartbeat: (req) =>
      attempt("heartbeat", () => ({
        held: relaxed(() => heartbeat.all(req.now + req.leaseMs, req.workerId, req.ids === undefined ? null : JSON.stringify(req.ids))).map((r) => ({
          id: r.id,
          attempt: r.attempt,
          cancelRequested: r.cancel_requested === 1
        }))
      })),
    executionsExpired: (req) => attempt("find expired leases", () => expired.all(req.now, req.limit).map(toExecution)),
    executionsHasWork: (req) =>
      attempt("look for work", () =>
        hasExpired.get(req.now) !== null || req.queues.some((q) => q.jobs.length > 0 && hasDue.get(q.queue, req.now, JSON.stringify(q.jobs)) !== null)),
    executionsGet: (id) => attempt("get execution", () => {
      const row = getOne.get(id)
      return row ? toExecution(row) : null
    }),
    executionsList: (filter) =>
      attempt("list executions", () => {
        const w = whereOf(filter)
        return db.query<ExecutionRow, Array<string | number>>(`SELECT * FROM roster_executions${w.sql} ORDER BY seq DESC LIMIT ${pageLimit(filter.limit)}`)
          .all(...w.params).map(toExecution)
      }),
    executionsCount: (filter) =>
      attempt("count executions", () => {
        const w = whereOf(filter)
        return countsOf(db.query<{ state: ExecutionState; n: number }, Array<string | number>>(
          `SELECT state, COUNT(*) AS n FROM roster_executions${w.sql} GROUP BY state`
        ).all(...w.params))
      }),
    executionsCancel: (req) => attempt("cancel execution", () => cancelOne.immediate(req.id, req.now)),
    // SQLite takes a row's old index entries out as it writes the new ones: nothing piles up.
    executionsVacuum: () => Effect.succeed({ _tag: "unneeded" }),
    executionsUnknownJobs: (known) => attempt("find unknown jobs", () => unknownJobs.all(JSON.stringify(known))),
    attemptsList: (id) =>
      attempt("list attempts", () => withSucceededAttempt(attempts.all(id).map(toAttempt), id, getOne.get(id))),
    stepsList: (id) => attempt("list steps", () => steps.all(id).map(toStep)),
    stepsSave: (s) => attempt("save step", () => stepSave.run(s.executionId, s.name, s.output, s.attempt, s.createdAt).changes === 1),
    executionsPrune: (req) => attempt("prune executions", () => prune.immediate(req.succeededBefore, req.failedBefore, pruneLimit(req.limit))),
    logsAppend: ({ lines, drops }) =>
      attempt("append logs", () => (lines.length + drops.length === 0 ? undefined : wrote(lines.length + drops.length, relaxed(() => logsAppend.immediate(lines, drops))))),
    logsList: (id) =>
      attempt("list logs", () => ({ lines: logSelect.all(id).map(toLogLine), drops: dropSelect.all(id).map(toLogDrops) })),
    // data_version is an in-memory read that moves whenever another connection commits.
    // It is read every pollMs while it moves (and for watchHotMs after); in a quiet spell,
    // on the file system's report of a write, or every watchColdMs (FileEvents.ts).
    watchChanges: ({ pollMs, onChange }) =>
      Effect.gen(function*() {
        const read = attempt("read data_version", () => dataVersion.get()?.data_version)
        let last = yield* read
        const started = yield* Clock.currentTimeMillis
        onChange({ queue: null, dueAt: started })
        let hotUntil = started + watchHotMs
        // Reads 1 ms apart after a report ends a quiet spell: the commit it reports is
        // visible only once its fsync is done, and the next read should not be pollMs away.
        let quick = 0
        const seen = (token: number | undefined, now: number) => {
          if (token === last) return false
          last = token
          hotUntil = now + watchHotMs
          quick = 0
          onChange({ queue: null, dueAt: now })
          return true
        }
        const quiet = Effect.scoped(Effect.gen(function*() {
          const written = yield* nextWrite(db.filename)
          const now = yield* Clock.currentTimeMillis
          // Not watchable now: reads every pollMs for another spell, then tries again.
          if (written === undefined) return void (hotUntil = now + watchHotMs)
          // Watching now: a commit made before the watch began is read here, not missed.
          // Then a read on each report, or every watchColdMs in case one was missed.
          while (!seen(yield* read, yield* Clock.currentTimeMillis)) {
            const reported = yield* Effect.raceFirst(Effect.as(written, true), Effect.as(Effect.sleep(watchColdMs), false))
            if (reported) {
              // A report may be this process's own write (data_version does not move for
              // those): the reads go on every pollMs for a spell, not back to a watch at once.
              hotUntil = (yield* Clock.currentTimeMillis) + watchHotMs
              quick = watchQuickReads
              return
            }
          }
        }))
        while (true) {
          if (watchable && (yield* Clock.currentTimeMillis) >= hotUntil) {
            yield* quiet
          } else {
            yield* Effect.sleep(quick > 0 ? Math.min(1, pollMs) : pollMs)
            quick = Math.max(0, quick - 1)
          }
          seen(yield* read, yield* Clock.currentTimeMillis)
        }
      }),
    ...makeSqliteWorkers(db, attempt),
    ...makeSqliteStats(db, attempt),
    ...makeSqliteQueues(db, attempt),
    ...makeSqliteFlow(db, attempt, relaxed),
    executionsInsertChild: (req) => attempt("insert child execution", () => db.transaction(() => orchestration.insertChild(req)).immediate()),
    signalsSend: (req) => attempt("send signal", () => db.transaction(() => orchestration.signalSend(req)).immediate()),
    signalsTake: (req) => attempt("take signal", () => db.transaction(() => orchestration.signalTake(req)).immediate()),
    signalsList: (id) => attempt("list signals", () => orchestration.signals(id))
  })
}

/** SQLite's result code of a failure (`SQLITE_FULL`, `SQLITE_CORRUPT`, ...), looking through a wrapping Error. */
const sqliteCode = (cause: unknown): string => {
  const code = (cause as { code?: unknown } | null)?.code
  if (typeof code === "string") return code
  const inner = (cause as { cause?: unknown } | null)?.cause
  return inner === undefined ? "" : sqliteCode(inner)
}

/** What a SQLite failure means for the caller, and a hint for the operator. */
const classify = (code: string, message: string): { reason?: StoreErrorReason; hint: string } => {
  if (/^SQLITE_(CORRUPT|NOTADB)/.test(code)) {
    return { reason: "corrupt", hint: " (Roster leaves the file as it is: restore a backup, or recover it with sqlite3 .recover)" }
  }
  if (code === "SQLITE_FULL") return { reason: "disk-full", hint: " (no space left for the database; this write was not applied)" }
  if (code.startsWith("SQLITE_READONLY")) return { reason: "read-only", hint: "" }
  if (/database is locked|SQLITE_BUSY/i.test(message)) return { hint: " (the database is locked by another process; busy_timeout elapsed)" }
  return { hint: "" }
}

/** A StoreError with `message`, and the reason and hint its SQLite cause gives. */
const storeError = (message: string, cause: unknown): StoreError => {
  const { reason, hint } = classify(sqliteCode(cause), message)
  return new StoreError({ message: `${message}${hint}`, cause, reason })
}

/** Maps a SQLite failure to one readable StoreError (a StoreError passes through). */
export const toStoreError = (what: string, cause: unknown): StoreError =>
  cause instanceof StoreError ? cause : storeError(`${what}: ${cause instanceof Error ? cause.message : String(cause)}`, cause)

/** Runs a synchronous store call, mapping a SQLite failure to one readable StoreError. */
export const attempt = <A>(what: string, f: () => A): Effect.Effect<A, StoreError> => Effect.try({ try: f, catch: (cause) => toStoreError(what, cause) })

/** Opens, configures and migrates the file in the current scope (closed with it). */
export const acquireDatabase = (options: SqliteOptions) =>
  Effect.acquireRelease(
    Effect.gen(function*() {
      const db = yield* Effect.try({
        try: () => openDatabase(options),
        // The message already says "cannot open database <path>: ...".
        catch: (cause) => storeError((cause as Error).message, cause)
      })
      const now = yield* Clock.currentTimeMillis
      return yield* Effect.try({
        try: () => (applyMigrations(db, now), db),
        catch: (cause) => (db.close(false), toStoreError(`prepare database ${options.path}`, cause))
      })
    }),
    (db) => Effect.sync(() => db.close(false))
  )

/** The SQLite Store as a Layer: opens the file, migrates, closes it with the scope. */
export const layerSqlite = (options: SqliteOptions): Layer.Layer<Store, StoreError> =>
  Layer.effect(Store, Effect.flatMap(acquireDatabase(options), (db) => Effect.map(checkpointerOnDemand(db), (checkpoints) => makeSqliteStore(db, checkpoints.noteWrites))))
