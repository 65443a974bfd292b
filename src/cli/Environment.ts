/**
 * What a CLI command runs against: the loaded config (roster.config.ts + ROSTER_*),
 * and Layers for the Store alone (read commands) or the full runtime with the apps'
 * Registry (enqueue, worker).
 */
import { Effect, Layer } from "effect"
import * as Config from "../runtime/Config.ts"
import * as RegistryBuilder from "../runtime/Registry.ts"
import * as Roster from "../runtime/Roster.ts"

/** Loads config from the working directory. */
export const loadConfig = Config.load(process.cwd())

/** The Store for the configured database. */
export const storeLayer = Layer.unwrap(Effect.map(loadConfig, (config) => Roster.layerStore(config)))

/** Store, Core and Client, with the Registry discovered from the apps folder. */
export const runtimeLayer = Layer.unwrap(
  Effect.gen(function*() {
    const config = yield* loadConfig
    const registry = yield* RegistryBuilder.build(config)
    return Roster.layerWithRegistry(config, registry)
  })
)
