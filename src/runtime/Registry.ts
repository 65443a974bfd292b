/**
 * Builds a process's Registry from config: Jobs given in code, or discovered under
 * the apps folder; queues from config. Any problem fails startup with one message.
 */
import { Effect } from "effect"
import { discoverJobs } from "../jobs/Discovery.ts"
import { fromConfig } from "../jobs/QueueConfig.ts"
import * as Registry from "../jobs/Registry.ts"
import type { RosterConfig } from "./Config.ts"

/** The apps folder a config points at. */
export const appsDirOf = (config: RosterConfig): string => config.appsDir ?? "apps"

/** Loads and validates the Registry for a config. */
export const build = (config: RosterConfig) =>
  Effect.gen(function*() {
    const jobs = config.jobs ? config.jobs.map((job) => ({ job })) : yield* discoverJobs(appsDirOf(config))
    const registry = Registry.make({ jobs, queues: fromConfig(config.queues) })
    if (Registry.isError(registry)) return yield* Effect.fail(registry)
    return registry
  })
