/**
 * Builds a process's Registry from config: Jobs and Schedules given in code, or
 * discovered under the apps folder (or among the apps a `roster build` binary carries),
 * with each app's services.ts; queues from config; Roster's own Jobs added. Any problem fails startup with one
 * message naming the file and the id.
 */
import { Effect } from "effect"
import { InvalidDefinition } from "../jobs/errors.ts"
import { discoverJobs, discoverSchedules, discoverServices, type EmbeddedApps, LoadTimeout } from "../jobs/Discovery.ts"
import { validateSchedules, type JobSchedule } from "../jobs/JobSchedule.ts"
import { fromConfig } from "../jobs/QueueConfig.ts"
import * as Registry from "../jobs/Registry.ts"
import type { RosterConfig } from "./Config.ts"
import { readEnvSetting } from "./ConfigRules.ts"
import { pruneJob } from "./Prune.ts"
import { reservedApp, reservedIdProblem } from "../jobs/Job.ts"

/** The apps folder a config points at. */
export const appsDirOf = (config: RosterConfig): string => config.appsDir ?? "apps"

/** Loads and validates the Registry for a config; `embedded` apps, when given, replace the apps folder. */
export const build = (config: RosterConfig, embedded?: EmbeddedApps) =>
  Effect.gen(function*() {
    const loadTimeoutMs = yield* readEnvSetting("ROSTER_LOAD_TIMEOUT_MS")
    return yield* buildWith(config, embedded).pipe(Effect.provideService(LoadTimeout, loadTimeoutMs))
  })

const buildWith = (config: RosterConfig, embedded?: EmbeddedApps) =>
  Effect.gen(function*() {
    const fromCode = config.jobs !== undefined
    const source = embedded ?? appsDirOf(config)
    const jobs = fromCode ? config.jobs!.map((job) => ({ job })) : yield* discoverJobs(source)
    for (const { job, file } of jobs as ReadonlyArray<{ readonly job: { readonly id: string }; readonly file?: string | undefined }>) {
      const reserved = reservedIdProblem(job.id)
      if (reserved) return yield* new InvalidDefinition({ id: job.id, file, message: `${file ? `${file}: ` : ""}Job "${job.id}": ${reserved}` })
    }
    const registry = Registry.make({ jobs: [...jobs, { job: pruneJob }], queues: fromConfig(config.queues) })
    if (Registry.isError(registry)) return yield* Effect.fail(registry)
    const schedules = fromCode
      ? (config.schedules ?? []).map((schedule: JobSchedule) => ({ schedule }))
      : yield* discoverSchedules(source)
    for (const { schedule, file } of schedules as ReadonlyArray<{ readonly schedule: JobSchedule; readonly file?: string | undefined }>) {
      const reserved = reservedIdProblem(schedule.id)
      if (reserved) return yield* new InvalidDefinition({ id: schedule.id, file, message: `${file ? `${file}: ` : ""}Schedule "${schedule.id}": ${reserved}` })
    }
    const checked = validateSchedules({ schedules, jobs: registry.jobs })
    if (!Array.isArray(checked)) return yield* Effect.fail(checked as Exclude<typeof checked, ReadonlyArray<unknown>>)
    // Apps built in code get their services from config `services` (or the embedding app).
    const services = fromCode ? [] : yield* discoverServices(source)
    for (const s of services) {
      if (s.app === reservedApp) {
        return yield* new InvalidDefinition({ file: s.file, message: `${s.file}: the app "${reservedApp}" is reserved for Roster's own Jobs and Schedules; use another app name` })
      }
      if (![...registry.jobs.values()].some((j) => j.app === s.app)) {
        return yield* new InvalidDefinition({ file: s.file, message: `${s.file} provides services for app "${s.app}", which defines no Job` })
      }
    }
    return { ...registry, schedules: checked, services: new Map(services.map((s) => [s.app, s])) } satisfies Registry.Registry
  })
