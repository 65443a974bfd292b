/**
 * graphile-worker (npm `graphile-worker`) on PostgreSQL, in a fresh schema per store
 * (its `schema` option): `WorkerUtils.addJob`, `addJobs` for bulk, `run` in this
 * process with a task list. LISTEN/NOTIFY wakes its workers (its default).
 *
 * graphile-worker deletes a job when it succeeds, so the stored outcome "succeeded" is
 * the job's row gone: succeeded = enqueued − rows left. For the drain it runs with
 * `concurrency: 50` and `maxPoolSize: 51` (it warns that a pool smaller than the
 * concurrency "may lead to non-optimal performance"; the default pool is 10). Its
 * default logger writes a line per job; it gets a silent one.
 */
import { Logger, makeWorkerUtils, run, type Runner, type WorkerUtils } from "graphile-worker"
import { CONCURRENCY, installedVersion, type Payload, payload, payloads, pgUrl, started, type System } from "./common.ts"
import { adminQuery, pgDurability, pgUnavailable, schemaName } from "./postgres.ts"

const silent = new Logger(() => () => {})

export const graphile: System = {
  id: "graphile-worker",
  label: "graphile-worker",
  unavailable: pgUnavailable,
  durability: pgDurability,
  version: () => `graphile-worker ${installedVersion("graphile-worker")}`,
  settings: `drain: concurrency ${CONCURRENCY}, maxPoolSize ${CONCURRENCY + 1}; idle: defaults (concurrency 1, LISTEN/NOTIFY)`,
  open: async () => {
    const schema = schemaName("graphile")
    const connectionString = pgUrl()!
    const utils: WorkerUtils = await makeWorkerUtils({ connectionString, schema, logger: silent })
    await utils.migrate()
    let enqueued = 0
    let runner: Runner | undefined
    return {
      enqueue: async (i) => {
        await utils.addJob("noop", payload(i))
        enqueued++
      },
      enqueueMany: async (from, count) => {
        await utils.addJobs(payloads(from, count).map((p) => ({ identifier: "noop", payload: p })))
        enqueued += count
      },
      startWorker: async (mode) => {
        runner = await run({
          connectionString,
          schema,
          logger: silent,
          noHandleSignals: true,
          ...(mode === "drain" ? { concurrency: CONCURRENCY, maxPoolSize: CONCURRENCY + 1 } : {}),
          taskList: { noop: async (p) => started((p as Payload).i) }
        })
      },
      succeeded: async () => {
        const left = await utils.withPgClient((client) => client.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${schema}"._private_jobs`))
        return enqueued - (left.rows[0]?.n ?? 0)
      },
      close: async () => {
        await runner?.stop()
        await utils.release()
        await adminQuery(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
      }
    }
  }
}
