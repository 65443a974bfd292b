/**
 * The scheduler runtime: upserts Roster's system Schedules, then runs the Scheduler
 * actor (leader lease, file sync, durable fires) under supervision in the current
 * scope. Fires it enqueues in this process wake this process's Dispatchers at once
 * (`roster dev`); other processes find them through their change watcher or polling.
 */
import { Clock, Effect, Layer } from "effect"
import * as Scheduler from "../actors/Scheduler.ts"
import { ScheduleStore } from "../store/ScheduleStore.ts"
import { Store } from "../store/Store.ts"
import * as Breaker from "./Breaker.ts"
import { checkOption, envOnly, readEnvSetting, type EnvOnly } from "./ConfigRules.ts"
import { Core } from "./Core.ts"
import { pruneScheduleSpec } from "./Prune.ts"
import { defaultWorkerId } from "./Worker.ts"

/** Options of the scheduler runtime. */
export interface SchedulerRuntimeOptions {
  readonly owner?: string | undefined
  readonly pollMs?: number | undefined
  readonly leaseTtlMs?: number | undefined
  readonly toleranceMs?: number | undefined
}

/**
 * A scheduler setting: the option given in code, else its ROSTER_SCHEDULER_* variable,
 * else the default; out of the variable's range, the InvalidDefinition naming it.
 */
const setting = (option: number | undefined, name: string, env: EnvOnly) => {
  if (option === undefined) return readEnvSetting(env)
  const refusal = checkOption(option, envOnly[env], `the scheduler option ${name}`)
  return refusal === undefined ? Effect.succeed(option) : Effect.fail(refusal)
}

/** Starts the scheduler in the current scope; returns its handle and `broken`, which fails on a corrupt database. */
export const start = Effect.fnUntraced(function*(options: SchedulerRuntimeOptions = {}) {
  // Checked before anything is written.
  const pollMs = yield* setting(options.pollMs, "pollMs", "ROSTER_SCHEDULER_POLL_MS")
  const leaseTtlMs = yield* setting(options.leaseTtlMs, "leaseTtlMs", "ROSTER_SCHEDULER_LEASE_MS")
  // How late a fire may be and still count as on time (misfire policies apply beyond it).
  const toleranceMs = yield* setting(options.toleranceMs, "toleranceMs", "ROSTER_SCHEDULER_TOLERANCE_MS")
  const core = yield* Core
  const store = yield* ScheduleStore
  const now = yield* Clock.currentTimeMillis
  // A studio or file row squatting on a system id (made before the `roster` app was
  // reserved) must not stop every scheduler from starting: warn and run without it.
  yield* store.schedulesUpsert({ schedule: pruneScheduleSpec(core.config, now), source: "system", now }).pipe(
    Effect.catchTag("ScheduleSourceConflict", (e) =>
      Effect.logWarning(
        `${e.message}; the app "roster" is reserved, so Roster's pruning is not scheduled until that schedule is deleted (roster schedules delete ${e.id})`
      ))
  )
  const jobs = new Map([...core.registry.jobs].map(([id, job]) => [id, Scheduler.fromJob(job)]))
  const owner = options.owner ?? defaultWorkerId()
  // Wake this process's Dispatchers for what the Scheduler enqueues (the store decorator is the seam).
  const notifying: ScheduleStore["Service"] = {
    ...store,
    schedulesRecordFires: (reqs) =>
      Effect.tap(store.schedulesRecordFires(reqs), (results) =>
        Effect.sync(() =>
          results.forEach((r, i) => {
            const e = reqs[i]?.execution
            if (r.inserted && e) core.bus.notify(e.queue, e.runAt)
          })))
  }
  // The execution Store, when this process has one, tells which fires no live worker serves.
  const executions = yield* Effect.serviceOption(Store)
  const scheduler = yield* Scheduler.make({
    owner,
    liveWorkers: executions._tag === "Some" ? (now) => executions.value.workersList({ now }) : undefined,
    schedules: core.registry.schedules.map((c) => c.schedule),
    jobs,
    pollMs,
    leaseTtlMs,
    toleranceMs
  })
  const { run, broken } = yield* Breaker.make
  yield* run("Scheduler", Effect.provideService(scheduler.run, ScheduleStore, notifying))
  yield* Effect.logInfo(`scheduler ${owner} started with ${core.registry.schedules.length} file schedule(s)`)
  return { ...scheduler, broken }
})

/** The scheduler as a Layer: runs for as long as the layer's scope is open; a fatal failure is logged loudly (Breaker). */
export const layer = (options: SchedulerRuntimeOptions = {}) =>
  Layer.effectDiscard(Effect.flatMap(start(options), (s) => Breaker.reportWhenBroken("scheduler", s.broken)))
