/**
 * Orchestration on SQLite (DESIGN §7): parking an execution (`waiting`), waking a parent
 * when the last child it awaits ends, children inserted exactly once per (parent, step),
 * signals kept and taken once, and a cancel that reaches a parent's whole tree. Every
 * write runs inside the caller's transaction (the Store's outcome batch, cancel or
 * insert), so a wake-up can never fall between a park and the check that makes it due.
 */
import type { Database } from "bun:sqlite"
import { parseWait, type Signal, type SignalSendResult } from "../../jobs/Wait.ts"
import type { ExecutionState } from "../Execution.ts"
import type { InsertRequest, InsertResult, Outcome } from "../Store.ts"
import { byIdSql, inIdsSql, inJsonIdsSql } from "./ExecutionRowid.ts"

type Park = Extract<Outcome, { kind: "park" }>

/** The orchestration statements of the SQLite Store, prepared once. */
export const makeSqliteOrchestration = (db: Database, insertOne: (r: InsertRequest) => InsertResult) => {
  // Parked: not charged (as a release); asked to cancel, it ends cancelled.
  const park = db.query<{ state: ExecutionState }, [number, number, string, string, string, number]>(
    `UPDATE roster_executions
        SET state = CASE WHEN cancel_requested THEN 'cancelled' ELSE 'waiting' END,
            finished_at = CASE WHEN cancel_requested THEN ?1 ELSE finished_at END,
            run_at = ?2, wait = ?3, attempt = attempt - 1, started_at = NULL, lease_owner = NULL, lease_expires_at = NULL
      WHERE ${byIdSql("?4")} AND lease_owner = ?5 AND attempt = ?6 AND state = 'running'
      RETURNING state`
  )
  /** A waiting parent whose awaited children have all ended is due now. */
  // Driven by the wait's id list (a rowid lookup per id, stopping at the first
  // active child): with the ids as an IN list instead, SQLite re-reads the list for every
  // child row and a fan-in of 10,000 children never finishes (bench/RESULTS.md).
  const childrenDone = `NOT EXISTS (SELECT 1 FROM json_each(p.wait, '$.ids') j JOIN roster_executions c ON ${byIdSql("j.value", "c")}
        WHERE c.parent_id = p.id AND c.state IN ('queued','running','waiting'))`
  const wakeIfChildrenDone = db.query<never, [number, string]>(
    `UPDATE roster_executions AS p SET run_at = ?1
      WHERE ${byIdSql("?2", "p")} AND p.state = 'waiting' AND p.run_at > ?1 AND p.wait ->> '$.kind' = 'children' AND ${childrenDone}`
  )
  const wakeIfSignalKept = db.query<never, [number, string]>(
    `UPDATE roster_executions AS p SET run_at = ?1
      WHERE ${byIdSql("?2", "p")} AND p.state = 'waiting' AND p.run_at > ?1 AND p.wait ->> '$.kind' = 'signal'
        AND EXISTS (SELECT 1 FROM roster_signals s WHERE s.execution_id = p.id AND s.name = p.wait ->> '$.signal' AND s.consumed_at IS NULL)`
  )
  const wakeParents = db.query<never, [number, string]>(
    `UPDATE roster_executions AS p SET run_at = ?1
      WHERE ${inIdsSql(`SELECT parent_id AS value FROM roster_executions WHERE ${inJsonIdsSql("?2")} AND parent_id IS NOT NULL`, "p")}
        AND p.state = 'waiting' AND p.run_at > ?1 AND p.wait ->> '$.kind' = 'children' AND ${childrenDone}`
  )
  const childOf = db.query<{ id: string }, [string, string]>("SELECT id FROM roster_executions WHERE parent_id = ? AND parent_step = ?")
  const saveStep = db.query("INSERT OR IGNORE INTO roster_steps (execution_id, name, output, attempt, created_at) VALUES (?, ?, ?, ?, ?)")
  const stateOf = db.query<{ state: ExecutionState; wait: string | null }, [string]>(`SELECT state, wait FROM roster_executions WHERE ${byIdSql("?1")}`)
  const addSignal = db.query<never, [string, string, string, number]>(
    `INSERT INTO roster_signals (execution_id, seq, name, payload, sent_at)
     VALUES (?1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM roster_signals WHERE execution_id = ?1), ?2, ?3, ?4)`
  )
  const takeSignal = db.query<{ payload: string }, [number, string, string]>(
    `UPDATE roster_signals SET consumed_at = ?1
      WHERE (execution_id, seq) = (SELECT execution_id, seq FROM roster_signals WHERE execution_id = ?2 AND name = ?3 AND consumed_at IS NULL ORDER BY seq LIMIT 1)
      RETURNING payload`
  )
  const listSignals = db.query<{ execution_id: string; seq: number; name: string; payload: string; sent_at: number; consumed_at: number | null }, [string]>(
    "SELECT * FROM roster_signals WHERE execution_id = ? ORDER BY seq"
  )
  // The tree below an execution, to any depth.
  const tree = `WITH RECURSIVE tree(id) AS (
      SELECT id FROM roster_executions WHERE parent_id = ?2
      UNION SELECT e.id FROM roster_executions e JOIN tree t ON e.parent_id = t.id)`
  const cancelTreeQueued = db.query<{ id: string }, [number, string]>(
    `${tree} UPDATE roster_executions SET state = 'cancelled', finished_at = ?1
      WHERE ${inIdsSql("SELECT id AS value FROM tree")} AND state IN ('queued','waiting') RETURNING id`
  )
  const cancelTreeRunning = db.query<never, [number, string]>(
    `${tree} UPDATE roster_executions SET cancel_requested = 1 WHERE ?1 IS NOT NULL AND ${inIdsSql("SELECT id AS value FROM tree")} AND state = 'running'`
  )

  return {
    /** Applies a park outcome, then makes it due at once if what it waits for already happened; whether it applied. */
    park: (o: Park): boolean => {
      const row = park.get(o.now, o.runAt, JSON.stringify(o.wait), o.id, o.workerId, o.attempt)
      if (!row) return false
      if (row.state === "waiting" && o.wait.kind === "children") wakeIfChildrenDone.run(o.now, o.id)
      if (row.state === "waiting" && o.wait.kind === "signal") wakeIfSignalKept.run(o.now, o.id)
      return true
    },
    /** Makes due the waiting parents of these ended executions whose awaited children have all ended. */
    wakeParents: (endedIds: ReadonlyArray<string>, now: number): void => {
      if (endedIds.length > 0) wakeParents.run(now, JSON.stringify(endedIds))
    },
    /** Cancels the tree below a cancelled execution (queued and waiting ones at once, running ones asked). */
    cancelTree: (id: string, now: number): void => {
      const cancelled = cancelTreeQueued.all(now, id).map((r) => r.id)
      cancelTreeRunning.run(now, id)
      if (cancelled.length > 0) wakeParents.run(now, JSON.stringify(cancelled))
    },
    insertChild: (req: { readonly parentId: string; readonly step: string; readonly attempt: number; readonly row: InsertRequest }): InsertResult => {
      const existing = childOf.get(req.parentId, req.step)
      if (existing) return { id: existing.id, inserted: false }
      const r = insertOne({ ...req.row, parentId: req.parentId, parentStep: req.step })
      saveStep.run(req.parentId, req.step, JSON.stringify(r.id), req.attempt, req.row.now)
      return r
    },
    signalSend: (req: { readonly id: string; readonly name: string; readonly payload: string; readonly now: number }): SignalSendResult => {
      const row = stateOf.get(req.id)
      if (!row) return { _tag: "Missing" }
      if (row.state === "succeeded" || row.state === "failed" || row.state === "cancelled") return { _tag: "Ended", state: row.state }
      addSignal.run(req.id, req.name, req.payload, req.now)
      const wait = row.state === "waiting" ? parseWait(row.wait) : null
      if (wait?.kind !== "signal" || wait.signal !== req.name) return { _tag: "Kept" }
      wakeIfSignalKept.run(req.now, req.id)
      return { _tag: "Woke" }
    },
    signalTake: (req: { readonly id: string; readonly name: string; readonly step: string; readonly attempt: number; readonly now: number }): string | null => {
      const taken = takeSignal.get(req.now, req.id, req.name)
      if (!taken) return null
      saveStep.run(req.id, req.step, taken.payload, req.attempt, req.now)
      return taken.payload
    },
    signals: (id: string): ReadonlyArray<Signal> =>
      listSignals.all(id).map((s) => ({ executionId: s.execution_id, seq: s.seq, name: s.name, payload: s.payload, sentAt: s.sent_at, consumedAt: s.consumed_at }))
  }
}
