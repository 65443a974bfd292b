/**
 * pg-boss (npm `pg-boss`) on PostgreSQL, in a fresh schema per store (pg-boss's
 * `schema` option): `send`, `insert` for bulk, `work` in this process.
 *
 * At its defaults a pg-boss worker fetches one job, runs it, then waits out its polling
 * interval (2 s) before the next fetch; 50 such workers (`localConcurrency: 50`) would
 * drain about 25 jobs/s. The drain therefore uses pg-boss's own throughput settings:
 * one worker fetching batches of 50 (`batchSize: 50`) and fetching again at once while
 * batches come back full (`burstWhenBatchFull: true`); the handler gets the 50 jobs
 * and pg-boss completes them together. The idle worker (latency) is at the defaults:
 * batch of 1, polling every 2 s, LISTEN/NOTIFY off.
 *
 * A second row turns on pg-boss's opt-in LISTEN/NOTIFY wake-up (`useListenNotify` on
 * the instance, `notify: true` on the queue), which is what its latency is with it.
 */
import { PgBoss } from "pg-boss"
import { CONCURRENCY, installedVersion, type Payload, payload, payloads, pgUrl, started, type System } from "./common.ts"
import { adminQuery, pgDurability, pgUnavailable, schemaName } from "./postgres.ts"

const queueName = "noop"

/** The drain's worker options (see above): batches of the concurrency, fetched again at once while full. */
export const drainWorkOptions = { batchSize: CONCURRENCY, burstWhenBatchFull: true } as const

const make = (notify: boolean): System => ({
  id: notify ? "pg-boss-notify" : "pg-boss",
  label: notify ? "pg-boss, LISTEN/NOTIFY" : "pg-boss",
  unavailable: pgUnavailable,
  durability: pgDurability,
  version: () => `pg-boss ${installedVersion("pg-boss")}`,
  settings: notify
    ? `as pg-boss, plus useListenNotify: true and queue notify: true (opt-in)`
    : `drain: batchSize ${CONCURRENCY} + burstWhenBatchFull (see pgboss.ts); idle: defaults (batchSize 1, poll 2 s, no LISTEN/NOTIFY)`,
  open: async () => {
    const schema = schemaName("pgboss")
    const boss = new PgBoss({ connectionString: pgUrl()!, schema, ...(notify ? { useListenNotify: true } : {}) })
    boss.on("error", (error) => process.stderr.write(`pg-boss error: ${error.message}\n`))
    await boss.start()
    await boss.createQueue(queueName, notify ? { notify: true } : {})
    return {
      enqueue: async (i) => void (await boss.send(queueName, payload(i))),
      enqueueMany: async (from, count) => void (await boss.insert(queueName, payloads(from, count).map((data) => ({ data })))),
      startWorker: async (mode) => {
        if (mode === "drain") {
          await boss.work<Payload>(queueName, drainWorkOptions, async (jobs) => {
            for (const job of jobs) started(job.data.i)
          })
        } else {
          await boss.work<Payload>(queueName, async (jobs) => {
            for (const job of jobs) started(job.data.i)
          })
        }
      },
      succeeded: async () => {
        const { rows } = await boss.getDb().executeSql(`SELECT count(*)::int AS n FROM "${schema}".job WHERE name = $1 AND state = 'completed'`, [queueName])
        return (rows[0] as { n: number } | undefined)?.n ?? 0
      },
      close: async () => {
        await boss.stop({ graceful: true, close: true, timeout: 10_000 })
        await adminQuery(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
      }
    }
  }
})

export const pgboss = make(false)
export const pgbossNotify = make(true)
