/**
 * What a CLI command runs against: the loaded config (roster.config.ts, or the one
 * baked into a `roster build` binary, + ROSTER_*), and Layers for the Store alone (read
 * commands) or the full runtime with the apps' Registry (enqueue, worker).
 */
import { Effect, Layer } from "effect"
import * as Config from "../runtime/Config.ts"
import * as RegistryBuilder from "../runtime/Registry.ts"
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
    return yield* RegistryBuilder.build(config, embedded?.apps)
  })

/** The Store for the configured database. */
export const storeLayer = Layer.unwrap(Effect.map(loadConfig, (config) => Roster.layerStore(config)))

/** Store, Core and Client, with the apps' Registry. */
export const runtimeLayer = Layer.unwrap(
  Effect.gen(function*() {
    const config = yield* loadConfig
    const registry = yield* loadRegistry(config)
    return Roster.layerWithRegistry(config, registry)
  })
)
