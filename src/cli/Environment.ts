/**
 * What a CLI command runs against: the loaded config (roster.config.ts, or the one
 * baked into a `roster build` binary, + ROSTER_*), and Layers for the Store alone (read
 * commands) or the full runtime with the apps' Registry (enqueue, worker).
 *
 * Only commands that write new work (enqueue, worker, scheduler, dev, migrate, schedules
 * create) create a SQLite file that is not there; a read, a change to existing work or
 * the dashboard pointed at a missing file is refused with a StoreError (reason
 * `missing`) and creates nothing: the path is most likely a typo.
 */
import { Effect, Layer } from "effect"
import { missingDatabase } from "../store/sqlite/SqliteConnection.ts"
import * as Config from "../runtime/Config.ts"
import * as RegistryLoader from "../runtime/RegistryLoader.ts"
import * as Roster from "../runtime/Roster.ts"
import { Embedded } from "./Embedded.ts"

/** Loads config: the binary's own, or roster.config.ts in the working directory; then ROSTER_* on top. */
export const loadConfig = Effect.gen(function*() {
  const embedded = yield* Embedded
  return yield* (embedded
    ? Config.applyEnv(embedded.config, [{ label: "the roster.config.ts built into this binary", config: embedded.config }])
    : Config.load(process.cwd()))
})

/** Loads and validates the Registry: from the apps the binary carries, or discovered on disk. */
export const loadRegistry = (config: Config.RosterConfig) =>
  Effect.gen(function*() {
    const embedded = yield* Embedded
    return yield* RegistryLoader.build(config, embedded?.apps)
  })

/** Fails with the `missing` StoreError when the config names a SQLite file that does not exist. */
export const requireDatabase = (config: Config.RosterConfig) => {
  const db = Roster.databaseOf(config)
  const missing = Roster.isPostgresUrl(db) ? undefined : missingDatabase(db)
  return missing === undefined ? Effect.void : Effect.fail(missing)
}

/** The Store for the configured database, which must exist (read commands). */
export const storeLayer = Layer.unwrap(Effect.gen(function*() {
  const config = yield* loadConfig
  yield* requireDatabase(config)
  return Roster.layerStore(config)
}))

/** The Store for the configured database, created when missing (migrate). */
export const storeLayerCreating = Layer.unwrap(Effect.map(loadConfig, (config) => Roster.layerStore(config)))

/** Store, Core and Client, with the apps' Registry; the database is created when missing (commands that write new work). */
export const runtimeLayer = Layer.unwrap(
  Effect.gen(function*() {
    const config = yield* loadConfig
    const registry = yield* loadRegistry(config)
    return Roster.layerWithRegistry(config, registry)
  })
)

/** {@link runtimeLayer} on a database that must exist (schedules reads and changes, cancel, retry, the dashboard). */
export const runtimeLayerExisting = Layer.unwrap(
  Effect.gen(function*() {
    const config = yield* loadConfig
    const registry = yield* loadRegistry(config)
    yield* requireDatabase(config)
    return Roster.layerWithRegistry(config, registry)
  })
)
