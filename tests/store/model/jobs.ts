/**
 * The Jobs the model-based tests enqueue: two queues, different default priorities and
 * retry policies (no jitter, so a retry's run_at is known), and the worker ids that
 * claim them. Rows are built by the runtime's own `prepare`, so key trimming, delays
 * and priority overrides go through the real enqueue path.
 */
import { Schema } from "effect"
import * as Job from "../../../src/jobs/Job.ts"
import * as RetryPolicy from "../../../src/jobs/RetryPolicy.ts"

const payload = Schema.Struct({ n: Schema.Number })
const handler = () => Promise.resolve(null)

/** Three attempts, 2 s apart, on `default`. */
export const send = Job.make({ id: "model/send", payload, handler, retry: RetryPolicy.fixed({ attempts: 3, delay: 2_000 }) })

/** One attempt only, default priority 1, on `default`. */
export const report = Job.make({ id: "model/report", payload, handler, priority: 1, retry: RetryPolicy.none })

/** Two attempts with exponential backoff from 1 s, on `mail`. */
export const mail = Job.make({
  id: "model/mail",
  payload,
  handler,
  queue: "mail",
  retry: RetryPolicy.exponential({ attempts: 2, initial: 1_000, jitter: false })
})

/** Every Job, by id. */
export const jobs: ReadonlyMap<string, Job.Job> = new Map([send, report, mail].map((j) => [j.id, j]))

/** The queues the Jobs use. */
export const queues = ["default", "mail"] as const

/** Worker ids; several, so claims meet other workers' leases and stale outcomes. */
export const workers = ["w1", "w2", "w3"] as const
