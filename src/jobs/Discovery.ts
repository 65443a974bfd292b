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

/**
 * Loads one kind of definition from every app: `<appsDir>/<app>/<fileName>` must export
 * at least one value the guard accepts, each belonging to that app.
 */
const discover = <A extends { readonly id: string }>(options: {
  readonly appsDir: string
  readonly fileName: string
  readonly noun: string
  readonly maker: string
  readonly guard: (u: unknown) => u is A
}) =>
  Effect.gen(function*() {
    const found: Array<{ readonly value: A; readonly file: string }> = []
    for (const app of appFolders(options.appsDir)) {
      const file = join(options.appsDir, app, options.fileName)
      if (!existsSync(file)) continue
      const values = Object.values(yield* importModule(file)).filter(options.guard)
      if (values.length === 0) {
        return yield* new InvalidDefinition({ file, message: `${file} exports no ${options.noun} (export the values returned by ${options.maker})` })
      }
      for (const value of values) {
        if (!value.id.startsWith(`${app}/`)) {
          return yield* new InvalidDefinition({ file, id: value.id, message: `${options.noun} "${value.id}" in ${file} must belong to app "${app}"` })
        }
        found.push({ value, file })
      }
    }
    return found
  })

/** Loads every Job under `appsDir`. A missing folder is an error: a worker with no Jobs is a misconfiguration. */
export const discoverJobs = (appsDir: string): Effect.Effect<Array<SourcedJob>, InvalidDefinition> =>
  existsSync(appsDir)
    ? Effect.map(discover({ appsDir, fileName: "jobs.ts", noun: "Job", maker: "Job.make", guard: isJob }), (found) =>
      found.map(({ value, file }) => ({ job: value, file })))
    : Effect.fail(new InvalidDefinition({ message: `apps folder ${appsDir} does not exist (set ROSTER_APPS_DIR or appsDir in roster.config.ts)` }))

/** Loads every Schedule under `appsDir` (apps without a schedules.ts have none). */
export const discoverSchedules = (appsDir: string): Effect.Effect<Array<SourcedSchedule>, InvalidDefinition> =>
  Effect.map(discover({ appsDir, fileName: "schedules.ts", noun: "Schedule", maker: "JobSchedule.make", guard: isJobSchedule }), (found) =>
    found.map(({ value, file }) => ({ schedule: value, file })))
