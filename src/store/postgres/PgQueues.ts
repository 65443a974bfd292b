/**
 * Queue pause on PostgreSQL: the roster_queues rows the claim and the has-work query
 * read. A resume also sends a wake-up for its queue inside its own statement
 * (delivered on commit), so other processes' Dispatchers claim at once; this
 * process's own are woken by the caller (its origin is skipped by PgWakeups).
 */
import type { PgClient } from "@effect/sql-pg"
import { Effect } from "effect"
import { type QueueRow, toQueueState } from "../QueueRules.ts"
import type { Store } from "../Store.ts"
import { wakeChannel } from "./ExecutionInsert.ts"
import type { Operation } from "./PgStats.ts"

/** The queue operations of the PostgreSQL Store. */
export const makePgQueues = (sql: PgClient.PgClient, op: Operation, origin: string): Pick<Store["Service"], "queuesPause" | "queuesResume" | "queuesList"> => ({
  // A pause of a paused queue keeps its paused_at and reports no change.
  queuesPause: (req) =>
    op("pause queue", Effect.map(
      sql`INSERT INTO roster_queues (name, paused, paused_at) VALUES (${req.queue}, true, ${req.now})
          ON CONFLICT (name) DO UPDATE SET paused = true, paused_at = excluded.paused_at WHERE NOT roster_queues.paused
          RETURNING name`,
      (rows) => rows.length === 1
    )),
  queuesResume: (req) =>
    op("resume queue", Effect.map(
      sql`WITH r AS (UPDATE roster_queues SET paused = false, paused_at = NULL WHERE name = ${req.queue} AND paused RETURNING name)
          SELECT pg_notify(${wakeChannel}, json_build_object('s', current_schema(), 'q', name, 'at', ${req.now}::int8, 'o', ${origin}::text)::text) FROM r`,
      (rows) => rows.length === 1
    )),
  queuesList: op("list queues", Effect.map(
    sql<QueueRow>`SELECT name, paused, paused_at FROM roster_queues ORDER BY name`,
    (rows) => rows.map(toQueueState)
  ))
})
