/**
 * `roster migrate`: applies the store's migrations explicitly (they are also applied
 * at every start) and `roster check`: validates the apps without running anything.
 */
import { existsSync } from "node:fs"
import { Effect } from "effect"
import { Command, Flag } from "effect/cli"
import { Store } from "../../store/Store.ts"
import * as RegistryLoader from "../../runtime/RegistryLoader.ts"
import type { RosterConfig } from "../../runtime/Config.ts"
import { databaseOf, isPostgresUrl } from "../../runtime/Roster.ts"
import { Embedded } from "../Embedded.ts"
import { loadConfig, loadRegistry, storeLayer, storeLayerCreating } from "../Environment.ts"
import { printJson, printLine } from "../Output.ts"

/** The migrate command. */
export const migrate = Command.make("migrate", {}, () =>
  Effect.gen(function*() {
    const store = yield* Store
    yield* store.migrate
    yield* printLine("migrations applied")
  }).pipe(Effect.provide(storeLayerCreating))).pipe(Command.withDescription("Apply database migrations"))

/**
 * Queued executions of Jobs these apps do not define (a rolling deploy that dropped a
 * Job, a typo'd enqueue from another service). Read only when the database already
 * exists: `check` never creates one. A database that cannot be read is reported, not
 * fatal — the apps' validation decides the exit code.
 */
const unknownJobsIn = (config: RosterConfig, known: ReadonlyArray<string>) => {
  const db = databaseOf(config)
  if (!isPostgresUrl(db) && !existsSync(db)) return Effect.succeed({ checked: false as const, reason: `no database at ${db} yet` })
  return Effect.gen(function*() {
    const store = yield* Store
    return { checked: true as const, unknown: yield* store.executionsUnknownJobs(known) }
  }).pipe(
    Effect.provide(storeLayer),
    Effect.catch((e) => Effect.succeed({ checked: false as const, reason: `database not read: ${e.message}` }))
  )
}

/** The check command: loads config and apps, validates them, reports, and lists queued executions no app can run. */
export const check = Command.make(
  "check",
  { json: Flag.Boolean("json").pipe(Flag.withDescription("print JSON"), Flag.withDefault(false)) },
  (flags) =>
    Effect.gen(function*() {
      const config = yield* loadConfig
      const registry = yield* loadRegistry(config)
      const embedded = yield* Embedded
      const report = {
        ok: true,
        appsDir: embedded?.apps.appsDir ?? RegistryLoader.appsDirOf(config),
        embedded: embedded !== undefined,
        queues: [...registry.queues.values()],
        jobs: [...registry.jobs.values()].map((j) => ({ id: j.id, queue: j.queue, file: registry.sources.get(j.id) ?? null })),
        schedules: registry.schedules.map((c) => ({ id: c.schedule.id, job: c.schedule.job, file: c.file ?? null }))
      }
      const database = yield* unknownJobsIn(config, [...registry.jobs.keys()])
      const unknownJobs = database.checked ? database.unknown : null
      if (flags.json) return yield* printJson({ ...report, unknownJobs, ...(database.checked ? {} : { database: database.reason }) })
      const where = embedded ? `built into this binary from ${report.appsDir}` : `in ${report.appsDir}`
      yield* printLine(`ok: ${report.jobs.length} job(s) on ${report.queues.length} queue(s), ${report.schedules.length} schedule(s) ${where}`)
      if (!database.checked) return yield* printLine(database.reason)
      for (const u of database.unknown) {
        yield* printLine(`warning: ${u.count} queued execution(s) of ${u.job}, which no app defines: no worker will run them`)
      }
    })
).pipe(Command.withDescription("Validate config and apps (Jobs, queues, Schedules and their payloads); exits non-zero on any problem"))
