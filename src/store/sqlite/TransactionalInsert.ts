/**
 * Transactional enqueue on SQLite: inserts an execution through the caller's own
 * `bun:sqlite` Database while the caller is inside a transaction on the Roster file,
 * so the execution commits or rolls back with the caller's rows. Nothing here commits.
 * Workers see the new row once the caller commits: another connection's commit moves
 * `data_version`, which the worker's change watcher turns into a wake-up, and polling
 * finds it even if that wake-up is missed.
 */
import type { Database } from "bun:sqlite"
import type { InsertRequest, InsertResult } from "../Store.ts"
import { makeStatements } from "./InsertStatements.ts"

const statements = new WeakMap<Database, ReturnType<typeof makeStatements>>()

/** Whether the connection is inside a transaction. */
export const inTransaction = (db: Database): boolean => db.inTransaction

/** Inserts within the caller's open transaction; throws if there is none. */
export const insertWithin = (db: Database, rows: ReadonlyArray<InsertRequest>): ReadonlyArray<InsertResult> => {
  if (!db.inTransaction) {
    throw new Error("enqueueWithin needs an open transaction on this Database (call it inside db.transaction(...))")
  }
  let s = statements.get(db)
  if (!s) statements.set(db, (s = makeStatements(db)))
  return rows.map(s.insertOne)
}
