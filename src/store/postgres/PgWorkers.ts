/**
 * The live-worker operations of the PostgreSQL Store: one row per worker process in
 * `roster_workers`, registered at start, refreshed every heartbeat, deleted at a clean
 * stop — the same answers as SQLite's. Staleness and pruning are decided by
 * WorkerRules.ts; this file runs statements.
 *
 * Limits, plainly: a handful of rows, one short write per worker per heartbeat; the
 * list reads the whole table. Times are the workers' own clocks, so a worker whose
 * clock runs far behind the reader's may look stale early.
 */
import type { PgClient } from "@effect/sql-pg"
import { Effect } from "effect"
import type { Store } from "../Store.ts"
import { pruneBeforeOf, registrationValues, toLiveWorker } from "../WorkerRules.ts"
import type { Operation } from "./PgStats.ts"
import { type Int8, num } from "./PgValues.ts"

interface PgWorkerRow {
  readonly id: string
  readonly host: string
  readonly pid: number
  readonly queues: string
  readonly jobs: string
  readonly version: string
  readonly started_at: Int8
  readonly last_seen_at: Int8
  readonly stale_after_ms: Int8
}

/** The workers operations of the PostgreSQL Store. */
export const makePgWorkers = (sql: PgClient.PgClient, op: Operation): Pick<Store["Service"], "workersRegister" | "workersHeartbeat" | "workersRemove" | "workersList"> => ({
  workersRegister: ({ worker, now }) => {
    const [id, host, pid, queues, jobs, version, startedAt, lastSeenAt, staleAfterMs] = registrationValues(worker, now)
    return op("register worker", sql.withTransaction(Effect.gen(function*() {
      yield* sql`DELETE FROM roster_workers WHERE last_seen_at < ${pruneBeforeOf(now)}`
      yield* sql`INSERT INTO roster_workers (id, host, pid, queues, jobs, version, started_at, last_seen_at, stale_after_ms)
        VALUES (${id}, ${host}, ${pid}, ${queues}, ${jobs}, ${version}, ${startedAt}, ${lastSeenAt}, ${staleAfterMs})
        ON CONFLICT (id) DO UPDATE SET host = EXCLUDED.host, pid = EXCLUDED.pid, queues = EXCLUDED.queues, jobs = EXCLUDED.jobs,
          version = EXCLUDED.version, last_seen_at = EXCLUDED.last_seen_at, stale_after_ms = EXCLUDED.stale_after_ms`
    })))
  },
  workersHeartbeat: ({ id, now }) =>
    op("refresh worker", Effect.map(
      sql<{ one: number }>`UPDATE roster_workers SET last_seen_at = GREATEST(last_seen_at, ${now}) WHERE id = ${id} RETURNING 1 AS one`,
      (rows) => rows.length === 1
    )),
  workersRemove: ({ id }) => op("remove worker", Effect.asVoid(sql`DELETE FROM roster_workers WHERE id = ${id}`)),
  workersList: ({ now }) =>
    op("list workers", Effect.map(
      sql<PgWorkerRow>`SELECT * FROM roster_workers ORDER BY id`,
      (rows) => rows.map((r) => toLiveWorker({ ...r, started_at: num(r.started_at), last_seen_at: num(r.last_seen_at), stale_after_ms: num(r.stale_after_ms) }, now))
    ))
})
