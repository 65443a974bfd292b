/**
 * `roster migrate`: applies the store's migrations explicitly (they are also applied
 * at every start) and `roster check`: validates the apps without running anything;
 * `roster check --live` also reads the database and fails when a live Schedule's Job
 * has no live worker serving it (see WorkerRules.ts).
 */
import { existsSync } from "node:fs"
import { Clock, Effect } from "effect"
import { Command, Flag } from "effect/cli"
import type { Registry } from "../../jobs/Registry.ts"
import { ScheduleStore } from "../../store/ScheduleStore.ts"
import { Store } from "../../store/Store.ts"
import { unservedSchedules } from "../../store/WorkerRules.ts"
import * as RegistryLoader from "../../runtime/RegistryLoader.ts"
import type { RosterConfig } from "../../runtime/Config.ts"
import { databaseOf, isPostgresUrl } from "../../runtime/Roster.ts"
import { Embedded } from "../Embedded.ts"
import { loadConfig, loadRegistry, storeLayer, storeLayerCreating } from "../Environment.ts"
import { CliFailure, printJson, printLine } from "../Output.ts"

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

/**
 * `--live`: every live Schedule (stored ones that are enabled, not paused and not
 * retired, and file ones not stored yet) whose Job no live worker serves. The database
 * must exist: no database means no worker ever ran.
 */
const liveCheck = (registry: Registry) =>
  Effect.gen(function*() {
    const store = yield* Store
    const schedules = yield* ScheduleStore
    const now = yield* Clock.currentTimeMillis
    const workers = yield* store.workersList({ now })
    const stored = yield* schedules.schedulesList()
    const live = stored.filter((s) => s.enabled && !s.paused && s.retiredAt === null).map((s) => ({ id: s.id, job: s.job }))
    const known = new Set(stored.map((s) => s.id))
    for (const c of registry.schedules) if (!known.has(c.schedule.id) && c.schedule.enabled) live.push({ id: c.schedule.id, job: c.schedule.job })
    const unserved = unservedSchedules(live, (job) => registry.jobs.get(job)?.queue, workers)
    return { workers: workers.filter((w) => !w.stale).length, stale: workers.filter((w) => w.stale).length, unserved }
  }).pipe(Effect.provide(storeLayer))

/** The check command: loads config and apps, validates them, reports, and lists queued executions no app can run. */
export const check = Command.make(
  "check",
  {
    json: Flag.Boolean("json").pipe(Flag.withDescription("print JSON"), Flag.withDefault(false)),
    live: Flag.Boolean("live").pipe(Flag.withDescription("also fail when a scheduled Job has no live worker (reads the database)"), Flag.withDefault(false))
  },
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
      const live = flags.live ? yield* liveCheck(registry) : undefined
      const liveFailure = live && live.unserved.length > 0
        ? new CliFailure(`${live.unserved.length} scheduled job(s) with no live worker: ${live.unserved.map((u) => `${u.schedule} (${u.reason})`).join("; ")}`)
        : undefined
      if (flags.json) {
        yield* printJson({ ...report, ok: liveFailure === undefined, unknownJobs, ...(database.checked ? {} : { database: database.reason }), ...(live ? { live } : {}) })
        return yield* liveFailure ? Effect.fail(liveFailure) : Effect.void
      }
      const where = embedded ? `built into this binary from ${report.appsDir}` : `in ${report.appsDir}`
      yield* printLine(`ok: ${report.jobs.length} job(s) on ${report.queues.length} queue(s), ${report.schedules.length} schedule(s) ${where}`)
      if (!database.checked) yield* printLine(database.reason)
      else {
        for (const u of database.unknown) {
          yield* printLine(`warning: ${u.count} queued execution(s) of ${u.job}, which no app defines: no worker will run them`)
        }
      }
      if (live) {
        yield* printLine(`live: ${live.workers} live worker(s)${live.stale > 0 ? `, ${live.stale} stale` : ""}`)
        for (const u of live.unserved) yield* printLine(`error: schedule ${u.schedule}: ${u.reason}`)
      }
      if (liveFailure) return yield* Effect.fail(liveFailure)
    })
).pipe(Command.withDescription("Validate config and apps (Jobs, queues, Schedules and their payloads); exits non-zero on any problem"))
