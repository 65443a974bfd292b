/**
 * The live-worker operations of the SQLite Store: one row per worker process in
 * `roster_workers`, registered at start, refreshed every heartbeat, deleted at a clean
 * stop. Staleness and pruning are decided by WorkerRules.ts; this file runs statements.
 *
 * Limits, plainly: a handful of rows, one short write per worker per heartbeat; the
 * list reads the whole table.
 */
import type { Database } from "bun:sqlite"
import type { Store } from "../Store.ts"
import { pruneBeforeOf, registrationValues, toLiveWorker, type WorkerRow } from "../WorkerRules.ts"
import type { Attempt } from "./SqliteStats.ts"

/** The workers operations of the SQLite Store. */
export const makeSqliteWorkers = (db: Database, attempt: Attempt): Pick<Store["Service"], "workersRegister" | "workersHeartbeat" | "workersRemove" | "workersList"> => {
  const prune = db.query<never, [number]>("DELETE FROM roster_workers WHERE last_seen_at < ?")
  const upsert = db.query<never, Array<string | number>>(
    `INSERT INTO roster_workers (id, host, pid, queues, jobs, version, started_at, last_seen_at, stale_after_ms)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (id) DO UPDATE SET host = excluded.host, pid = excluded.pid, queues = excluded.queues, jobs = excluded.jobs,
       version = excluded.version, last_seen_at = excluded.last_seen_at, stale_after_ms = excluded.stale_after_ms`
  )
  const touch = db.query<never, [number, string]>("UPDATE roster_workers SET last_seen_at = max(last_seen_at, ?) WHERE id = ?")
  const remove = db.query<never, [string]>("DELETE FROM roster_workers WHERE id = ?")
  const list = db.query<WorkerRow, []>("SELECT * FROM roster_workers ORDER BY id")
  const register = db.transaction((values: Array<string | number>, pruneBefore: number) => {
    prune.run(pruneBefore)
    upsert.run(...values)
  })
  return {
    workersRegister: ({ worker, now }) =>
      attempt("register worker", () => register.immediate([...registrationValues(worker, now)], pruneBeforeOf(now))),
    workersHeartbeat: ({ id, now }) => attempt("refresh worker", () => touch.run(now, id).changes === 1),
    workersRemove: ({ id }) => attempt("remove worker", () => void remove.run(id)),
    workersList: ({ now }) => attempt("list workers", () => list.all().map((r) => toLiveWorker(r, now)))
  }
}
