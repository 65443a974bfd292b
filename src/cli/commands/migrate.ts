/**
 * `roster migrate`: applies the store's migrations explicitly (they are also applied
 * at every start) and `roster check`: validates the apps without running anything.
 */
import { Effect } from "effect"
import { Command, Flag } from "effect/cli"
import { Store } from "../../store/Store.ts"
import * as RegistryBuilder from "../../runtime/Registry.ts"
import { Embedded } from "../Embedded.ts"
import { loadConfig, loadRegistry, storeLayer } from "../Environment.ts"
import { printJson, printLine } from "../Output.ts"

/** The migrate command. */
export const migrate = Command.make("migrate", {}, () =>
  Effect.gen(function*() {
    const store = yield* Store
    yield* store.migrate
    yield* printLine("migrations applied")
  }).pipe(Effect.provide(storeLayer))).pipe(Command.withDescription("Apply database migrations"))

/** The check command: loads config and apps, validates them, and reports. */
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
        appsDir: embedded?.apps.appsDir ?? RegistryBuilder.appsDirOf(config),
        embedded: embedded !== undefined,
        queues: [...registry.queues.values()],
        jobs: [...registry.jobs.values()].map((j) => ({ id: j.id, queue: j.queue, file: registry.sources.get(j.id) ?? null })),
        schedules: registry.schedules.map((c) => ({ id: c.schedule.id, job: c.schedule.job, file: c.file ?? null }))
      }
      if (flags.json) return yield* printJson(report)
      const where = embedded ? `built into this binary from ${report.appsDir}` : `in ${report.appsDir}`
      yield* printLine(`ok: ${report.jobs.length} job(s) on ${report.queues.length} queue(s), ${report.schedules.length} schedule(s) ${where}`)
    })
).pipe(Command.withDescription("Validate config and apps (Jobs, queues, Schedules and their payloads); exits non-zero on any problem"))
