/**
 * The shared heart of a Roster process: the Registry of Jobs it knows, the Recorder
 * (the write path, with group commit) and the WakeBus that lets an enqueue wake this
 * process's Dispatchers at once. The Client and the worker both build on it, so an
 * app that embeds both gets immediate wake-ups and one group-commit stream.
 */
import { Context, Effect, Layer } from "effect"
import * as Recorder from "../actors/Recorder.ts"
import * as WakeBus from "../actors/WakeBus.ts"
import type { Registry } from "../jobs/Registry.ts"
import { Store } from "../store/Store.ts"
import type { RosterConfig } from "./Config.ts"

/** The Core service. */
export class Core extends Context.Service<Core, {
  readonly config: RosterConfig
  readonly registry: Registry
  readonly recorder: Recorder.Recorder
  readonly bus: WakeBus.WakeBus
}>()("roster/Core") {}

/** Builds the Core over a Store. */
export const layer = (config: RosterConfig, registry: Registry): Layer.Layer<Core, never, Store> =>
  Layer.effect(
    Core,
    Effect.gen(function*() {
      const bus = WakeBus.make()
      const recorder = yield* Recorder.make(bus)
      return Core.of({ config, registry, recorder, bus })
    })
  )
