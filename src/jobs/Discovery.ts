/**
 * Finds apps: `<appsDir>/<app>/jobs.ts` exports the app's Jobs,
 * `<appsDir>/<app>/schedules.ts` its Schedules and `<appsDir>/<app>/services.ts`
 * (optional) a default-exported Layer with the services its handlers require. The modules are imported from disk, or,
 * in a binary made by `roster build`, taken from the ones it imported statically
 * ({@link EmbeddedApps}); either way they go through the same validation. Apps are
 * visited in name order so every process sees the same Registry. Discovery fails —
 * it never skips — on a jobs module that cannot be imported or exports no Job, or on
 * a Job whose app segment is not the folder it lives in, and on a module that does not
 * finish loading within {@link LoadTimeout} (a top-level await that never settles would
 * otherwise hang every command, `roster check` included).
 */
import { Context, Effect, Layer } from "effect"
import { existsSync, readdirSync, statSync } from "node:fs"
import { join, resolve } from "node:path"
import { isJob } from "./Job.ts"
import { isJobSchedule, type SourcedSchedule } from "./JobSchedule.ts"
import type { SourcedJob } from "./Registry.ts"
import { InvalidDefinition } from "./errors.ts"

/** A module's exports, as `import * as m` gives them. */
export type ModuleExports = Readonly<Record<string, unknown>>

/** The files discovery reads in each app folder. */
export type AppFile = "jobs.ts" | "schedules.ts" | "services.ts"

/** An app's services: the Layer `<app>/services.ts` exports by default, and that file. */
export interface AppServices {
  readonly app: string
  readonly file: string
  readonly layer: Layer.Layer<any, any, any>
}

/** The app folders under `appsDir`, in name order. */
export const appFolders = (appsDir: string): ReadonlyArray<string> =>
  existsSync(appsDir)
    ? readdirSync(appsDir).filter((name) => statSync(join(appsDir, name)).isDirectory()).sort()
    : []

/** The apps under `appsDir` that have `fileName`, in name order, with that file's path. */
export const appFilesOnDisk = (appsDir: string, fileName: AppFile): ReadonlyArray<{ readonly app: string; readonly file: string }> =>
  appFolders(appsDir).map((app) => ({ app, file: join(appsDir, app, fileName) })).filter(({ file }) => existsSync(file))

/** How long one module may take to load, in ms (default 30 s; the CLI and Roster.layer set it from ROSTER_LOAD_TIMEOUT_MS). */
export const LoadTimeout = Context.Reference<number>("roster/jobs/LoadTimeout", { defaultValue: () => 30_000 })

/** Imports a module of an app; a failed or unfinished import is an InvalidDefinition naming the file. */
export const importModule = (file: string) =>
  Effect.gen(function*() {
    const timeoutMs = yield* LoadTimeout
    return yield* Effect.tryPromise({
      try: () => import(resolve(file)) as Promise<Record<string, unknown>>,
      catch: (cause) =>
        new InvalidDefinition({ file, message: `cannot load ${file}: ${cause instanceof Error ? cause.message : String(cause)}` })
    }).pipe(Effect.timeoutOrElse({
      duration: timeoutMs,
      orElse: () =>
        Effect.fail(
          new InvalidDefinition({
            file,
            message: `cannot load ${file}: it did not finish loading within ${timeoutMs} ms (a top-level await that never settles?; ROSTER_LOAD_TIMEOUT_MS sets the limit)`
          })
        )
    }))
  })

/** One app's modules, imported ahead of time (a file the app does not have is absent). */
export interface AppModules {
  readonly app: string
  readonly modules: Partial<Record<AppFile, ModuleExports>>
}

/**
 * Apps a `roster build` binary carries: a compiled binary cannot resolve packages for
 * modules it would import from disk, so its entry imports them statically and hands
 * them over here. `appsDir` is the folder they were found in at build time (it names
 * the files in messages).
 */
export interface EmbeddedApps {
  readonly appsDir: string
  readonly apps: ReadonlyArray<AppModules>
}

/** Where apps come from: a folder on disk, or modules a binary carries. */
export type AppsSource = string | EmbeddedApps

/** The `<app>/<fileName>` modules of a source, in app name order, each with its file path. */
const modulesOf = (source: AppsSource, fileName: AppFile) =>
  Effect.gen(function*() {
    const found: Array<{ readonly app: string; readonly file: string; readonly exports: ModuleExports }> = []
    if (typeof source !== "string") {
      for (const { app, modules } of [...source.apps].sort((a, b) => (a.app < b.app ? -1 : a.app > b.app ? 1 : 0))) {
        const exports = modules[fileName]
        if (exports !== undefined) found.push({ app, file: join(source.appsDir, app, fileName), exports })
      }
      return found
    }
    const files = yield* Effect.try({
      try: () => appFilesOnDisk(source, fileName),
      // A file where the folder should be, an entry that cannot be read (a dangling link): one line, not a stack trace.
      catch: (cause) =>
        new InvalidDefinition({ message: `cannot read apps folder ${source}: ${cause instanceof Error ? cause.message : String(cause)} (set ROSTER_APPS_DIR or appsDir in roster.config.ts)` })
    })
    for (const { app, file } of files) found.push({ app, file, exports: yield* importModule(file) })
    return found
  })

/**
 * Loads one kind of definition from every app: `<appsDir>/<app>/<fileName>` must export
 * at least one value the guard accepts, each belonging to that app.
 */
const discover = <A extends { readonly id: string }>(options: {
  readonly source: AppsSource
  readonly fileName: AppFile
  readonly noun: string
  readonly maker: string
  readonly guard: (u: unknown) => u is A
}) =>
  Effect.gen(function*() {
    const found: Array<{ readonly value: A; readonly file: string }> = []
    for (const { app, file, exports } of yield* modulesOf(options.source, options.fileName)) {
      const values = Object.values(exports).filter(options.guard)
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

/** Loads every Job of the apps. A missing folder is an error: a worker with no Jobs is a misconfiguration. */
export const discoverJobs = (source: AppsSource): Effect.Effect<Array<SourcedJob>, InvalidDefinition> =>
  typeof source !== "string" || existsSync(source)
    ? Effect.map(discover({ source, fileName: "jobs.ts", noun: "Job", maker: "Job.make", guard: isJob }), (found) =>
      found.map(({ value, file }) => ({ job: value, file })))
    : Effect.fail(new InvalidDefinition({ message: `apps folder ${source} does not exist (set ROSTER_APPS_DIR or appsDir in roster.config.ts)` }))

/** Loads every Schedule of the apps (apps without a schedules.ts have none). */
export const discoverSchedules = (source: AppsSource): Effect.Effect<Array<SourcedSchedule>, InvalidDefinition> =>
  Effect.map(discover({ source, fileName: "schedules.ts", noun: "Schedule", maker: "JobSchedule.make", guard: isJobSchedule }), (found) =>
    found.map(({ value, file }) => ({ schedule: value, file })))

/** Loads every app's services.ts (optional): its `export default` must be a Layer. */
export const discoverServices = (source: AppsSource): Effect.Effect<Array<AppServices>, InvalidDefinition> =>
  typeof source === "string" && !existsSync(source)
    ? Effect.succeed([])
    : Effect.flatMap(modulesOf(source, "services.ts"), (found) =>
      Effect.forEach(found, ({ app, file, exports }) =>
        Layer.isLayer(exports["default"])
          ? Effect.succeed({ app, file, layer: exports["default"] as Layer.Layer<any, any, any> })
          : Effect.fail(new InvalidDefinition({ file, message: `${file} must \`export default\` a Layer providing the services of app "${app}"'s handlers` }))))
