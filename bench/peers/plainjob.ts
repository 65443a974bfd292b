/**
 * plainjob (npm `plainjob`) on bun:sqlite, as its README sets it up:
 * `bun(new Database(path, { strict: true }))`, `defineQueue`, `defineWorker`.
 *
 * plainjob fixes WAL and synchronous=NORMAL itself (`defineQueue` sets the pragmas). A
 * plainjob worker runs one job at a time; there is no concurrency option, so the drain
 * defines 50 workers on the one queue (one JS thread, like every system here). Its
 * default logger is the console with a debug line per job; it gets a silent one.
 */
import { Database } from "bun:sqlite"
import { join } from "node:path"
import { bun, defineQueue, defineWorker, JobStatus, type Worker } from "plainjob"
import { CONCURRENCY, installedVersion, type Payload, payload, payloads, silentLogger, sleep, started, type System, tempDir } from "./common.ts"

const type = "noop"

export const plainjob: System = {
  id: "plainjob",
  label: "plainjob",
  unavailable: async () => undefined,
  durability: async () => "SQLite WAL, synchronous=NORMAL (set by plainjob)",
  version: () => `plainjob ${installedVersion("plainjob")}`,
  settings: `drain: ${CONCURRENCY} workers on one queue (a worker runs one job at a time); idle: 1 worker, default poll interval 1 s`,
  open: async () => {
    const tmp = tempDir("plainjob")
    const queue = defineQueue({ connection: bun(new Database(join(tmp.dir, "plainjob.db"), { strict: true })), logger: silentLogger })
    const workers: Array<Worker> = []
    const loops: Array<Promise<void>> = []
    return {
      // add and addMany are synchronous: the row is committed when they return.
      enqueue: async (i) => void queue.add(type, payload(i)),
      enqueueMany: async (from, count) => void queue.addMany(type, payloads(from, count)),
      startWorker: async (mode) => {
        const n = mode === "drain" ? CONCURRENCY : 1
        for (let k = 0; k < n; k++) {
          const worker = defineWorker(type, (job) => started((JSON.parse(job.data) as Payload).i), { queue, logger: silentLogger })
          workers.push(worker)
          loops.push(worker.start().catch(() => {}))
        }
      },
      succeeded: async () => queue.countJobs({ type, status: JobStatus.Done }),
      close: async () => {
        await Promise.all(workers.map((w) => w.stop()))
        // stop() only ends a worker's sleep; let a loop that is mid-job finish its turn.
        await Promise.race([Promise.all(loops), sleep(2_000)])
        queue.close()
        tmp.cleanup()
      }
    }
  }
}
