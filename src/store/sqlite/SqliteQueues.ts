/**
 * Queue pause on SQLite: the roster_queues rows the claim and the has-work query read.
 * Other processes see a pause or a resume within their change watcher's poll (any
 * commit moves `PRAGMA data_version`), and their next claim reads the row itself.
 */
import type { Database } from "bun:sqlite"
import { type QueueRow, toQueueState } from "../QueueRules.ts"
import type { Store } from "../Store.ts"
import type { Attempt } from "./SqliteStats.ts"

/** The queue operations of the SQLite Store. */
export const makeSqliteQueues = (db: Database, attempt: Attempt): Pick<Store["Service"], "queuesPause" | "queuesResume" | "queuesList"> => {
  // A pause of a paused queue keeps its paused_at and reports no change.
  const pause = db.query<{ name: string }, [string, number]>(
    `INSERT INTO roster_queues (name, paused, paused_at) VALUES (?1, 1, ?2)
     ON CONFLICT (name) DO UPDATE SET paused = 1, paused_at = excluded.paused_at WHERE NOT roster_queues.paused
     RETURNING name`
  )
  const resume = db.query("UPDATE roster_queues SET paused = 0, paused_at = NULL WHERE name = ? AND paused")
  const list = db.query<QueueRow, []>("SELECT name, paused, paused_at FROM roster_queues ORDER BY name")
  return {
    queuesPause: (req) => attempt("pause queue", () => pause.get(req.queue, req.now) !== null),
    queuesResume: (req) => attempt("resume queue", () => resume.run(req.queue).changes === 1),
    queuesList: attempt("list queues", () => list.all().map(toQueueState))
  }
}
