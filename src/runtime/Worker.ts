/**
 * The worker runtime: one Dispatcher per served queue, a WorkerPool, a LeaseKeeper, a
 * Reaper, a Vacuumer (PostgreSQL's dead row versions), a LogSink, a change watcher
 * (SQLite's data_version, PostgreSQL's LISTEN/NOTIFY) and Presence (its live-worker
 * row), each supervised and forked into the layer's scope. The worker registers its row
 * after its first claims and removes it at a clean stop, after in-flight work; a killed
 * worker's row goes stale (WorkerRules.ts).
 *
 * Handlers run with their app's services (Services.ts), built once at start in the
 * worker's scope; a services Layer that fails to build fails the start, naming its file.
 *
 * Shutdown, when the scope closes (SIGTERM/SIGINT under runMain, or an embedding app
 * releasing its Layer): stop claiming, let in-flight handlers finish within the grace
 * period, then interrupt the rest and release their leases (back to queued, the attempt
 * not charged). The Recorder outlives the worker, so every outcome is written.
 *
 * A store failure no restart can fix (a corrupt database file) stops the actor that met
 * it and fails the handle's `broken`, so `roster worker` exits 1 instead of retrying
 * forever; a full disk or a lock timeout is retried under supervision.
 */
import { claimLimitsOf, hasLimits } from "../store/FlowRules.ts"
import { Clock, Effect, Fiber, Layer } from "effect"
import { hostname } from "node:os"
import * as ChangeWatcher from "../actors/ChangeWatcher.ts"
import * as Dispatcher from "../actors/Dispatcher.ts"
import * as LeaseKeeper from "../actors/LeaseKeeper.ts"
import * as LogSink from "../actors/LogSink.ts"
import * as Presence from "../actors/Presence.ts"
import * as Reaper from "../actors/Reaper.ts"
import * as Vacuumer from "../actors/Vacuumer.ts"
import * as WorkerPool from "../actors/WorkerPool.ts"
import { InvalidDefinition } from "../jobs/errors.ts"
import type { QueueConfig } from "../jobs/QueueConfig.ts"
import { Store, type WorkerRegistration } from "../store/Store.ts"
import { staleAfterMsOf } from "../store/WorkerRules.ts"
import * as Breaker from "./Breaker.ts"
import { workerSettings, type WorkerSettings } from "./Config.ts"
import { checkOption, concurrencyRange, workerRanges } from "./ConfigRules.ts"
import { Core } from "./Core.ts"
import * as Services from "./Services.ts"
import { rosterVersion } from "./Version.ts"

/** Options of a worker. */
export interface WorkerOptions {
  /** Queues to serve (default: every declared queue). */
  readonly queues?: ReadonlyArray<string> | undefined
  /** Overrides every served queue's concurrency. */
  readonly concurrency?: number | undefined
  /** A stable id for this worker (default host:pid:random). */
  readonly workerId?: string | undefined
  readonly settings?: Partial<WorkerSettings> | undefined
}

/** A running worker's handle. */
export interface WorkerHandle {
  readonly workerId: string
  readonly pool: WorkerPool.WorkerPool
  readonly queues: ReadonlyArray<QueueConfig>
  /** Stops claiming, waits up to the grace period, then releases what is still running. */
  readonly shutdown: Effect.Effect<void>
  /** Fails once an actor met a failure no restart can fix (a corrupt database); never succeeds. */
  readonly broken: Effect.Effect<never, unknown>
}

/** The first worker option given in code that is out of its range, if any. */
const checkWorkerOptions = (options: WorkerOptions): InvalidDefinition | undefined => {
  if (options.concurrency !== undefined) {
    const bad = checkOption(options.concurrency, concurrencyRange, "the worker option concurrency")
    if (bad) return bad
  }
  for (const [key, value] of Object.entries(options.settings ?? {})) {
    const range = workerRanges[key as keyof WorkerSettings]
    if (range === undefined) return new InvalidDefinition({ message: `the worker setting ${key} is not one Roster knows (${Object.keys(workerRanges).join(", ")})` })
    const bad = value === undefined ? undefined : checkOption(value, range, `the worker setting ${key}`)
    if (bad) return bad
  }
  return undefined
}

/** A default worker id: host, pid and a random suffix. */
export const defaultWorkerId = (): string => `${hostname()}:${process.pid}:${Math.random().toString(36).slice(2, 8)}`

/** Starts a worker in the current scope and returns its handle. */
export const start = Effect.fnUntraced(function*(options: WorkerOptions = {}) {
  const core = yield* Core
  const store = yield* Store
  // Options given in code are held to the rules roster.config.ts and ROSTER_* are (ConfigRules.ts).
  const refused = checkWorkerOptions(options)
  if (refused) return yield* refused
  const settings = { ...workerSettings(core.config), ...options.settings }
  if (settings.leaseMs < 2 * settings.heartbeatMs) {
    return yield* new InvalidDefinition({
      message: `worker settings: leaseMs (${settings.leaseMs}) must be at least two heartbeats (heartbeatMs ${settings.heartbeatMs}): a shorter lease runs out between them and every execution fails "lease expired"`
    })
  }
  const workerId = options.workerId ?? defaultWorkerId()
  const names = options.queues && options.queues.length > 0 ? options.queues : [...core.registry.queues.keys()]
  const queues: Array<QueueConfig> = []
  for (const name of names) {
    const q = core.registry.queues.get(name)
    if (!q) return yield* new InvalidDefinition({ message: `queue "${name}" is not declared (declared: ${[...core.registry.queues.keys()].join(", ")})` })
    queues.push(options.concurrency !== undefined ? { ...q, concurrency: options.concurrency } : q)
  }
  // Built before the actors, so closed after them: at shutdown, after in-flight work.
  const contexts = yield* Services.build()
  const logSink = yield* LogSink.make({ capacity: settings.logCapacity, flushMs: settings.logFlushMs })
  const pool = yield* WorkerPool.make({
    registry: core.registry,
    recorder: core.recorder,
    workerId,
    logSink,
    contexts,
    bus: core.bus,
    maxPayloadBytes: core.config.maxPayloadBytes
  })
  const { run, broken } = yield* Breaker.make
  const dispatchers: Array<Fiber.Fiber<void>> = []
  const wakes: Array<(at: number) => void> = []
  const limitedWakes: Array<(at: number) => void> = []
  const readies: Array<Effect.Effect<void>> = []
  const served: Array<string> = []
  for (const queue of queues) {
    const queueJobs = [...core.registry.jobs.values()].filter((j) => j.queue === queue.name)
    const jobs = queueJobs.map((j) => j.id)
    if (jobs.length === 0) continue
    served.push(...jobs)
    const limits = claimLimitsOf(queue, queueJobs)
    const d = yield* Dispatcher.make({ queue, jobs, workerId, pool, bus: core.bus, limits, ...settings })
    wakes.push(d.wake)
    if (hasLimits(limits)) limitedWakes.push(d.wake)
    readies.push(d.ready)
    dispatchers.push(yield* run(`Dispatcher(${queue.name})`, d.loop))
  }
  const background = [
    yield* run("LeaseKeeper", LeaseKeeper.loop({ workerId, pool, ...settings }).pipe(Effect.provideService(Store, store))),
    yield* run("Reaper", Reaper.loop({ registry: core.registry, recorder: core.recorder, intervalMs: settings.reapMs }).pipe(Effect.provideService(Store, store)))
  ]
  if (settings.vacuumMs > 0) {
    background.push(yield* run("Vacuumer", Vacuumer.loop({ intervalMs: settings.vacuumMs }).pipe(Effect.provideService(Store, store))))
  }
  // Presence registers it once every Dispatcher has claimed (the database is usable).
  const presence: WorkerRegistration = {
    id: workerId,
    host: hostname(),
    pid: process.pid,
    queues: queues.map((q) => q.name),
    jobs: served,
    version: rosterVersion,
    staleAfterMs: staleAfterMsOf(settings)
  }
  const ready = Effect.asVoid(Effect.all(readies, { concurrency: "unbounded" }))
  background.push(yield* run("Presence", Presence.loop({ worker: presence, heartbeatMs: settings.heartbeatMs, ready }).pipe(Effect.provideService(Store, store))))
  if (settings.watchMs > 0) {
    const wakeAll = (now: number) => wakes.forEach((w) => w(now))
    background.push(yield* run("ChangeWatcher", ChangeWatcher.loop({ intervalMs: settings.watchMs, wake: wakeAll, bus: core.bus, wakeOnOutcome: (now) => limitedWakes.forEach((w) => w(now)) }).pipe(Effect.provideService(Store, store))))
  }

  let stopped = false
  const shutdown = Effect.gen(function*() {
    if (stopped) return
    stopped = true
    yield* Fiber.interruptAll(dispatchers)
    const { running, recording } = pool.counts()
    if (running + recording > 0) {
      yield* Effect.logInfo(`stopping: waiting up to ${settings.graceMs} ms for ${running} running execution(s)${recording > 0 ? ` and the outcomes of ${recording} more to be stored` : ""}`)
      const start = yield* Clock.currentTimeMillis
      const finished = yield* pool.awaitEmpty.pipe(Effect.timeoutOption(settings.graceMs))
      if (finished._tag === "None") {
        const left = pool.running()
        yield* Effect.logWarning(`grace period over after ${(yield* Clock.currentTimeMillis) - start} ms: releasing ${left.length} execution(s) without charging an attempt`)
        yield* Effect.forEach(left, (id) => pool.interrupt(id, "shutdown"), { concurrency: "unbounded", discard: true })
        yield* pool.awaitEmpty
      }
    }
    yield* Fiber.interruptAll(background)
    yield* logSink.flush
    // A clean stop leaves no row behind: `roster workers list` forgets this process at once.
    yield* store.workersRemove({ id: workerId }).pipe(
      Effect.catchTag("StoreError", (e) => Effect.logWarning(`worker ${workerId} not deregistered (it shows stale until pruned): ${e.message}`))
    )
  }).pipe(Effect.annotateLogs("worker", workerId))
  yield* Effect.addFinalizer(() => shutdown)

  yield* Effect.logInfo(`worker ${workerId} serving ${queues.map((q) => `${q.name}×${q.concurrency}`).join(", ")}`)
  return { workerId, pool, queues, shutdown, broken } satisfies WorkerHandle
})

/**
 * The worker as a Layer: runs for as long as the layer's scope is open. A failure no
 * restart can fix stops it loudly: a Fatal log line says no more executions will run
 * in this process (an embedding app's process is its own to stop).
 */
export const layer = (options: WorkerOptions = {}): Layer.Layer<never, InvalidDefinition, Core | Store> =>
  Layer.effectDiscard(Effect.flatMap(start(options), (handle) => Breaker.reportWhenBroken("worker", handle.broken)))
