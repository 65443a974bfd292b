/**
 * The set of Jobs (and, later, Schedules) a process knows, validated as a whole: no two
 * definitions with one id, no Job on an undeclared queue, kebab-case queue names.
 * Workers claim only Jobs in their Registry, so a rolling deploy never fails a job that
 * a newer worker knows.
 */
import type { Job } from "./Job.ts"
import type { AppServices } from "./Discovery.ts"
import type { CheckedSchedule } from "./JobSchedule.ts"
import { isKebab } from "./Job.ts"
import type { QueueConfig } from "./QueueConfig.ts"
import { InvalidDefinition } from "./errors.ts"

/** A validated set of Jobs and queues. */
export interface Registry {
  readonly jobs: ReadonlyMap<string, Job>
  readonly queues: ReadonlyMap<string, QueueConfig>
  /** The file each Job came from, when discovered on disk (for error messages). */
  readonly sources: ReadonlyMap<string, string>
  /** The file Schedules, validated against the Jobs (payloads encoded). */
  readonly schedules: ReadonlyArray<CheckedSchedule>
  /** Each app's services.ts, when it has one (keyed by app). */
  readonly services: ReadonlyMap<string, AppServices>
}

/** A Job with the file it was found in, if any. */
export interface SourcedJob {
  readonly job: Job
  readonly file?: string | undefined
}

/** Builds a Registry, or explains the first problem found. */
export const make = (options: {
  readonly jobs: ReadonlyArray<Job | SourcedJob>
  readonly queues: ReadonlyArray<QueueConfig>
}): InvalidDefinition | Registry => {
  const queues = new Map<string, QueueConfig>()
  for (const q of options.queues) {
    if (!isKebab(q.name)) return new InvalidDefinition({ message: `queue name "${q.name}" must be kebab-case` })
    if (!Number.isInteger(q.concurrency) || q.concurrency < 1) {
      return new InvalidDefinition({ message: `queue "${q.name}" concurrency must be an integer >= 1, got ${q.concurrency}` })
    }
    queues.set(q.name, q)
  }
  if (!queues.has("default")) queues.set("default", { name: "default", concurrency: 10 })
  const jobs = new Map<string, Job>()
  const sources = new Map<string, string>()
  for (const entry of options.jobs) {
    const { job, file } = "_tag" in entry ? { job: entry, file: undefined } : entry
    const where = file ? ` (${file})` : ""
    if (jobs.has(job.id)) {
      const first = sources.get(job.id)
      return new InvalidDefinition({
        id: job.id,
        file,
        message: `duplicate Job id "${job.id}"${where}${first ? `, first defined in ${first}` : ""}`
      })
    }
    if (!queues.has(job.queue)) {
      return new InvalidDefinition({
        id: job.id,
        file,
        message: `Job "${job.id}"${where} uses queue "${job.queue}", which is not declared in config`
      })
    }
    jobs.set(job.id, job)
    if (file) sources.set(job.id, file)
  }
  return { jobs, queues, sources, schedules: [], services: new Map() }
}

/** Whether `make` returned an error. */
export const isError = (r: InvalidDefinition | Registry): r is InvalidDefinition => r instanceof InvalidDefinition
