/**
 * The insert of a row with a dedupe key (modes `active` and `replace`, see docs/jobs.md)
 * on SQLite. The key is held by the partial unique index `roster_executions_dedupe`
 * while its execution is queued or running, so an insert that conflicts there has a
 * holder; nothing releases the key when the holder ends but the index itself.
 *
 * - `active`: the holder is returned (`inserted: false`).
 * - `replace`: a queued holder takes the row's payload, run time, priority and flow keys
 *   (`replaced: true`); a running holder gives the key up (its later retry, if any, then
 *   conflicts with nothing) and the row is inserted.
 *
 * The caller holds the write transaction (the Store's batch, or the caller's own for
 * transactional enqueue), and SQLite has one writer: nothing moves between these
 * statements, so the loop below turns at most twice.
 */
import type { Database } from "bun:sqlite"
import type { InsertRequest, InsertResult } from "../Store.ts"
import { byIdSql } from "./ExecutionRowid.ts"

const prepared = (db: Database) => ({
  holder: db.query<{ id: string; state: string }, [string, string]>(
    `SELECT id, state FROM roster_executions
      WHERE job = ? AND dedupe_key = ? AND state IN ('queued', 'running', 'waiting')`
  ),
  replace: db.query<{ id: string }, [string, number, number, string | null, string | null, string]>(
    `UPDATE roster_executions SET payload = ?, run_at = ?, priority = ?, concurrency_key = ?, rate_key = ?
      WHERE ${byIdSql("?6")} AND state = 'queued' RETURNING id`
  ),
  release: db.query<never, [string]>(`UPDATE roster_executions SET dedupe_key = NULL WHERE ${byIdSql("?1")}`)
})

const statements = new WeakMap<Database, ReturnType<typeof prepared>>()

/**
 * Inserts `r` (whose `dedupeKey` is set) under its dedupe mode. `tryInsert` runs the
 * store's own INSERT … ON CONFLICT DO NOTHING (at the id's rowid, or displaced) and says whether the row went in.
 */
export const insertDeduped = (db: Database, r: InsertRequest, tryInsert: (r: InsertRequest) => boolean): InsertResult => {
  const key = r.dedupeKey
  if (key === null || key === undefined) throw new Error(`insertDeduped of ${r.id} without a dedupe key`)
  let s = statements.get(db)
  if (!s) statements.set(db, (s = prepared(db)))
  for (let turn = 0; turn < 3; turn++) {
    if (tryInsert(r)) return { id: r.id, inserted: true }
    const holder = s.holder.get(r.job, key)
    if (!holder) throw new Error(`execution id ${r.id} already exists`)
    if (r.dedupeMode !== "replace") return { id: holder.id, inserted: false }
    if (holder.state === "queued") {
      if (s.replace.get(r.payload, r.runAt, r.priority, r.concurrencyKey ?? null, r.rateKey ?? null, holder.id)) {
        return { id: holder.id, inserted: false, replaced: true }
      }
    } else {
      s.release.run(holder.id)
    }
  }
  throw new Error(`insert of ${r.job} with dedupe key ${key} found its holder moving on every try`)
}
