/**
 * Finds apps on disk: `<appsDir>/<app>/jobs.ts` exports the app's Jobs and
 * `<appsDir>/<app>/schedules.ts` its Schedules. Apps are
 * visited in name order so every process sees the same Registry. Discovery fails —
 * it never skips — on a jobs module that cannot be imported or exports no Job, or on
 * a Job whose app segment is not the folder it lives in.
 */
import { Effect } from "effect"
import { existsSync, readdirSync, statSync } from "node:fs"
import { join, resolve } from "node:path"
import { isJob } from "./Job.ts"
import { isJobSchedule, type SourcedSchedule } from "./JobSchedule.ts"
import type { SourcedJob } from "./Registry.ts"
import { InvalidDefinition } from "./errors.ts"

/** The app folders under `appsDir`, in name order. */
export const appFolders = (appsDir: string): ReadonlyArray<string> =>
  existsSync(appsDir)
    ? readdirSync(appsDir).filter((name) => statSync(join(appsDir, name)).isDirectory()).sort()
    : []

/** Imports a module of an app; a failed import is an InvalidDefinition naming the file. */
export const importModule = (file: string) =>
  Effect.tryPromise({
    try: () => import(resolve(file)) as Promise<Record<string, unknown>>,
    catch: (cause) =>
      new InvalidDefinition({ file, message: `cannot load ${file}: ${cause instanceof Error ? cause.message : String(cause)}` })
  })

/** Loads every Job under `appsDir`. A missing folder is an error: a worker with no Jobs is a misconfiguration. */
export const discoverJobs = Effect.fnUntraced(function*(appsDir: string) {
  if (!existsSync(appsDir)) {
    return yield* new InvalidDefinition({ message: `apps folder ${appsDir} does not exist (set ROSTER_APPS_DIR or appsDir in roster.config.ts)` })
  }
  const found: Array<SourcedJob> = []
  for (const app of appFolders(appsDir)) {
    const file = join(appsDir, app, "jobs.ts")
    if (!existsSync(file)) continue
    const mod = yield* importModule(file)
    const jobs = Object.values(mod).filter(isJob)
    if (jobs.length === 0) {
      return yield* new InvalidDefinition({ file, message: `${file} exports no Job (export the values returned by Job.make)` })
    }
    for (const job of jobs) {
      if (job.app !== app) {
        return yield* new InvalidDefinition({ file, id: job.id, message: `Job "${job.id}" in ${file} must belong to app "${app}"` })
      }
      found.push({ job, file })
    }
  }
  return found
})

/** Loads every Schedule under `appsDir` (apps without a schedules.ts have none). */
export const discoverSchedules = Effect.fnUntraced(function*(appsDir: string) {
  const found: Array<SourcedSchedule> = []
  for (const app of appFolders(appsDir)) {
    const file = join(appsDir, app, "schedules.ts")
    if (!existsSync(file)) continue
    const mod = yield* importModule(file)
    const schedules = Object.values(mod).filter(isJobSchedule)
    if (schedules.length === 0) {
      return yield* new InvalidDefinition({ file, message: `${file} exports no Schedule (export the values returned by JobSchedule.make)` })
    }
    for (const schedule of schedules) {
      if (!schedule.id.startsWith(`${app}/`)) {
        return yield* new InvalidDefinition({ file, id: schedule.id, message: `Schedule "${schedule.id}" in ${file} must belong to app "${app}"` })
      }
      found.push({ schedule, file })
    }
  }
  return found
})
