/**
 * BullMQ (npm `bullmq`, with `ioredis`) on a Redis started by index.ts (or
 * BENCH_REDIS_URL): `Queue.add`, `Queue.addBulk`, a `Worker` in this process with
 * `concurrency: 50` for the drain (default 1 for latency). Completed jobs stay in Redis
 * (BullMQ's default), so the completed count is the stored outcome.
 */
import { Queue, Worker } from "bullmq"
import { CONCURRENCY, installedVersion, type Payload, payload, payloads, redisTarget, started, type System } from "./common.ts"

let counter = 0

export const bullmq: System = {
  id: "bullmq",
  label: "BullMQ",
  unavailable: async () => (redisTarget() ? undefined : process.env.BENCH_REDIS_SKIP || "no Redis (redis-server not found and no BENCH_REDIS_URL)"),
  durability: async () => process.env.BENCH_REDIS_DURABILITY || "Redis (BENCH_REDIS_URL; persistence as configured there)",
  version: () => `bullmq ${installedVersion("bullmq")}, ioredis ${installedVersion("ioredis")}`,
  settings: `Worker concurrency ${CONCURRENCY} for the drain; idle worker at concurrency 1 (default)`,
  open: async () => {
    const connection = redisTarget()!
    const name = `peers-${process.pid}-${counter++}`
    const queue = new Queue<Payload>(name, { connection })
    await queue.waitUntilReady()
    let worker: Worker<Payload> | undefined
    return {
      enqueue: async (i) => void (await queue.add("noop", payload(i))),
      enqueueMany: async (from, count) => void (await queue.addBulk(payloads(from, count).map((data) => ({ name: "noop", data })))),
      startWorker: async (mode) => {
        worker = new Worker<Payload>(name, async (job) => started(job.data.i), {
          connection,
          ...(mode === "drain" ? { concurrency: CONCURRENCY } : {})
        })
        worker.on("error", (error) => process.stderr.write(`bullmq worker error: ${error.message}\n`))
        await worker.waitUntilReady()
      },
      succeeded: () => queue.getCompletedCount(),
      close: async () => {
        await worker?.close()
        await queue.obliterate({ force: true })
        await queue.close()
      }
    }
  }
}
