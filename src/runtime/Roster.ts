/**
 * The two ways an application embeds Roster:
 * - `Roster.layer(config, { worker, scheduler })`: an Effect Layer providing
 *   `Roster.Client` (and the Store), optionally running a worker and/or the scheduler
 *   inside the app's scope; with a worker it requires what the Jobs' handlers require;
 * - `Roster.open(config)`: the same operations as Promises for apps not written with
 *   Effect, with `waitFor`, `startWorker` / `stopWorker`, `startScheduler` / `stopScheduler` and `close`.
 * Both complete the app's config by the one rule of Config.ts: roster.config.ts under
 * it, ROSTER_* over it, so the app and a `roster worker` in the same folder with the
 * same environment use one database.
 */
import { Clock, Effect, Exit, Layer, ManagedRuntime, Scope } from "effect"
import * as Metrics from "../actors/Metrics.ts"
import { AlreadyRunning, InvalidDefinition, RosterClosed } from "../jobs/errors.ts"
import type { Requirements } from "../jobs/Job.ts"
import type { Registry } from "../jobs/Registry.ts"
import type { Execution, ExecutionState } from "../store/Execution.ts"
import { layerSqliteStores } from "../store/sqlite/SqliteLayer.ts"
import { ScheduleStore } from "../store/ScheduleStore.ts"
import type { CancelResult, ExecutionFilter, InsertResult } from "../store/Store.ts"
import type { QueueSummary } from "../store/QueueRules.ts"
import { Store, StoreError } from "../store/Store.ts"
import { Client } from "./Client.ts"
import * as Breaker from "./Breaker.ts"
import * as ClientModule from "./Client.ts"
import * as Config from "./Config.ts"
import type { RosterConfig } from "./Config.ts"
import * as Core from "./Core.ts"
import type { EnqueueOptions } from "./Enqueue.ts"
import * as Logging from "./Logging.ts"
import * as RegistryLoader from "./RegistryLoader.ts"
import * as SchedulerRuntime from "./SchedulerRuntime.ts"
import * as Worker from "./Worker.ts"

/** The Client service `Roster.layer` provides (also exported at the top level as `Client`). */
export { Client }

/** Loads the config the CLI would use in `dir` (default the working directory): roster.config.ts, then ROSTER_*. */
export const loadConfig = (dir?: string): Effect.Effect<RosterConfig, InvalidDefinition> => Config.load(dir)

/** Whether a database setting is a PostgreSQL URL (else it is a SQLite file path). */
export const isPostgresUrl = (db: string): boolean => /^postgres(ql)?:\/\//.test(db)

/** The database a config points at (default `roster.db`). */
export const databaseOf = (config: RosterConfig): string => config.db ?? "roster.db"

/** The Store Layer for a config: SQLite for a path, PostgreSQL for a postgres:// URL. */
export const layerStore = (config: RosterConfig): Layer.Layer<Store | ScheduleStore, StoreError> => {
  const db = databaseOf(config)
  // Instrumented here, where the Store is built, so every operation is counted and timed once (actors/Metrics.ts).
  return Metrics.layerInstrumented(isPostgresUrl(db) ? layerPostgresLoaded(db) : layerSqliteStores({ path: db, synchronous: config.synchronous ?? "FULL" }))
}

/** The PostgreSQL stores, their modules (and @effect/sql-pg) loaded only when a database URL asks for them. */
const layerPostgresLoaded = (url: string): Layer.Layer<Store | ScheduleStore, StoreError> =>
  Layer.unwrap(Effect.promise(() => import("../store/postgres/PgStore.ts")).pipe(Effect.map((m) => m.layerPostgres({ url }))))

/** Store + Core + Client for a config and an already-built Registry (the config is used as given). */
export const layerWithRegistry = (config: RosterConfig, registry: Registry) =>
  ClientModule.layer.pipe(Layer.provideMerge(Core.layer(config, registry)), Layer.provideMerge(layerStore(config)))

/** Options of {@link layer}. */
export interface LayerOptions {
  /** Run a worker in the app's scope (default: no). */
  readonly worker?: Worker.WorkerOptions | boolean | undefined
  /** Run the scheduler in the app's scope: leader lease, sync of the config's Schedules, durable fires (default: no). */
  readonly scheduler?: SchedulerRuntime.SchedulerRuntimeOptions | boolean | undefined
  /** Where roster.config.ts is read from (default: the working directory); `false` reads none. */
  readonly configDir?: Config.ConfigDir | undefined
  /** Roster's own log lines (worker, scheduler): level and stderr, stdout or off (default: the app's own loggers). */
  readonly logger?: Logging.LoggerOptions | undefined
}

/** What config `services` provides. */
type ServicesOf<C> = C extends { readonly services: Layer.Layer<infer A, any, any> } ? A : never

/**
 * What a config's Jobs require from the app: the union of their handlers' requirements,
 * less what config `services` provides and the `Client` Roster gives every handler.
 */
export type RequirementsOf<C> = C extends { readonly jobs: ReadonlyArray<infer J> } ? Exclude<Requirements<J>, Client | ServicesOf<C>> : never

/** With a worker, the Layer requires what the Jobs require; without one, nothing. */
type LayerRequirements<C, O> = O extends { readonly worker: false | undefined } ? never : O extends { readonly worker: unknown } ? RequirementsOf<C> : never

/** The services `Roster.layer` provides. */
export type Provided = Client | Core.Core | Store | ScheduleStore

/** The config completed by the one rule, and its Registry. */
const resolve = (config: RosterConfig, configDir: Config.ConfigDir | undefined) =>
  Effect.gen(function*() {
    const resolved = yield* Config.resolveEmbedded(config, configDir)
    return { config: resolved, registry: yield* RegistryLoader.build(resolved) }
  })

/** The embeddable Layer: provides the Client (and Store, Core), and runs a worker and/or the scheduler if asked. */
export const layer = <const C extends RosterConfig, const O extends LayerOptions = {}>(
  config: C = {} as C,
  options: O = {} as O
): Layer.Layer<Provided, InvalidDefinition | StoreError, LayerRequirements<C, O>> =>
  Layer.unwrap(
    Effect.map(resolve(config, options.configDir), ({ config, registry }) => {
      const base = layerWithRegistry(config, registry)
      const runners: Array<Layer.Layer<never, any, any>> = []
      if (options.worker) runners.push(Worker.layer(options.worker === true ? {} : options.worker))
      if (options.scheduler) runners.push(SchedulerRuntime.layer(options.scheduler === true ? {} : options.scheduler))
      if (runners.length === 0) return base
      const running = Layer.mergeAll(runners[0]!, ...runners.slice(1)).pipe(Layer.provide(base))
      // The logger reaches the actors as they start, not the app's own context.
      const logged = options.logger ? running.pipe(Layer.provide(Logging.layer(options.logger))) : running
      return Layer.merge(base, logged)
    })
  ) as Layer.Layer<Provided, InvalidDefinition | StoreError, any>

/** Options of {@link open}. */
export interface OpenOptions {
  /** Where roster.config.ts is read from (default: the working directory); `false` reads none. */
  readonly configDir?: Config.ConfigDir | undefined
  /** Roster's own log lines: level and stderr, stdout or off (default: Info on stderr, keeping the app's stdout clean). */
  readonly logger?: Logging.LoggerOptions | undefined
}

/** The Promise API returned by {@link open}. Every call rejects with a tagged error (`_tag`, `message`). */
export interface RosterHandle {
  readonly enqueue: (job: ClientModule.JobRef, payload: unknown, options?: EnqueueOptions) => Promise<InsertResult>
  readonly enqueueMany: (items: ReadonlyArray<{ job: ClientModule.JobRef; payload: unknown; options?: EnqueueOptions }>) => Promise<ReadonlyArray<InsertResult>>
  readonly get: (id: string) => Promise<ClientModule.ExecutionDetail | null>
  /** Pauses a queue on the database (every worker stops claiming from it); resolves whether it was not paused before. */
  readonly pauseQueue: (name: string) => Promise<boolean>
  /** Resumes a paused queue; resolves whether it was paused. */
  readonly resumeQueue: (name: string) => Promise<boolean>
  /** Every queue declared here, with executions, or paused: pause state, concurrency and counts. */
  readonly queues: () => Promise<ReadonlyArray<QueueSummary>>
  readonly list: (filter?: ExecutionFilter) => Promise<ReadonlyArray<Execution>>
  readonly count: (filter?: ExecutionFilter) => Promise<Record<ExecutionState, number>>
  readonly cancel: (id: string) => Promise<CancelResult>
  readonly retry: (id: string) => Promise<InsertResult>
  /** Sends the signal `name` to an execution (see Client.signal); rejects for one that has ended or does not exist. */
  readonly signal: (id: string, name: string, payload?: unknown) => Promise<"Kept" | "Woke">
  /**
   * Resolves with the execution once it has ended (succeeded, failed or cancelled);
   * rejects with WaitTimeout after `timeout`, ExecutionNotFound for an unknown id.
   */
  readonly waitFor: (id: string, options?: ClientModule.WaitOptions) => Promise<Execution>
  /** Runs a worker in this process for the Jobs this handle was given; rejects with AlreadyRunning if one runs. */
  readonly startWorker: (options?: Worker.WorkerOptions) => Promise<void>
  /** Stops the worker gracefully (in-flight work finishes or is released). */
  readonly stopWorker: () => Promise<void>
  /** Runs the scheduler in this process (leader lease, file sync, durable fires); rejects with AlreadyRunning if one runs. */
  readonly startScheduler: (options?: SchedulerRuntime.SchedulerRuntimeOptions) => Promise<void>
  /** Stops the scheduler (another process's standby takes over the lease when it expires). */
  readonly stopScheduler: () => Promise<void>
  /** Stops any worker and scheduler and closes the database; later calls reject with RosterClosed. */
  readonly close: () => Promise<void>
}

/** Makes a config whose Jobs require services that its `services` does not provide a type error. */
export type ServicesCheck<C> = [RequirementsOf<C>] extends [never] ? unknown
  : { readonly services: Layer.Layer<RequirementsOf<C>, any, never> }

/** Opens Roster for a non-Effect app. Rejects with the typed error (its `_tag` and `message`). */
export const open = async <const C extends RosterConfig>(config: C & ServicesCheck<C> = {} as C & ServicesCheck<C>, options: OpenOptions = {}): Promise<RosterHandle> => {
  const runtime = ManagedRuntime.make(
    Layer.unwrap(Effect.map(resolve(config, options.configDir), ({ config, registry }) => layerWithRegistry(config, registry))).pipe(
      Layer.provideMerge(Logging.layer(options.logger))
    )
  )
  // Enqueues go straight to the Recorder, without a runPromise each (Client.promiseEnqueue).
  const direct = await runtime.runPromise(Effect.gen(function*() {
    return ClientModule.promiseEnqueue(yield* Core.Core, yield* Clock.Clock)
  }))
  let closed = false
  /** `call`, or the typed RosterClosed once the handle is closed. */
  const whileOpen = <A>(call: () => Promise<A>): Promise<A> =>
    closed ? Promise.reject(new RosterClosed({ message: "this Roster handle is closed" })) : call()
  const run = <A, E>(effect: Effect.Effect<A, E, Provided>): Promise<A> => whileOpen(() => runtime.runPromise(effect))
  const use = <A, E>(f: (client: Client["Service"]) => Effect.Effect<A, E>) => run(Client.use(f))

  /** One runner (worker or scheduler) in a scope of its own: at most one at a time; a failed start leaves none. */
  const runner = (what: string) => {
    let scope: Scope.Closeable | undefined
    return {
      start: async <A, E>(effect: Effect.Effect<A, E, Provided | Scope.Scope>) => {
        if (scope) throw new AlreadyRunning({ message: `a ${what} is already running on this handle` })
        const own = await run(Scope.make())
        scope = own
        try {
          await run(Scope.provide(own)(effect))
        } catch (error) {
          scope = undefined
          await runtime.runPromise(Scope.close(own, Exit.void))
          throw error
        }
      },
      stop: async () => {
        const own = scope
        scope = undefined
        if (own) await runtime.runPromise(Scope.close(own, Exit.void))
      }
    }
  }
  const worker = runner("worker")
  const scheduler = runner("scheduler")
  return {
    enqueue: (job, payload, options) => whileOpen(() => direct.enqueue(job, payload, options)),
    enqueueMany: (items) => whileOpen(() => direct.enqueueMany(items)),
    get: (id) => use((c) => c.get(id)),
    pauseQueue: (name) => use((c) => c.pauseQueue(name)),
    resumeQueue: (name) => use((c) => c.resumeQueue(name)),
    queues: () => use((c) => c.queues()),
    list: (filter) => use((c) => c.list(filter)),
    count: (filter) => use((c) => c.count(filter)),
    cancel: (id) => use((c) => c.cancel(id)),
    signal: (id, name, payload) => use((c) => c.signal(id, name, payload)),
    retry: (id) => use((c) => c.retry(id)),
    waitFor: (id, options) => use((c) => c.waitFor(id, options)),
    startWorker: (options) => worker.start(Effect.flatMap(Worker.start(options), (h) => Breaker.reportWhenBroken("worker", h.broken))),
    stopWorker: worker.stop,
    startScheduler: (options) => scheduler.start(Effect.flatMap(SchedulerRuntime.start(options), (s) => Breaker.reportWhenBroken("scheduler", s.broken))),
    stopScheduler: scheduler.stop,
    close: async () => {
      if (closed) return
      await worker.stop()
      await scheduler.stop()
      closed = true
      await runtime.dispose()
    }
  }
}
