/**
 * The two ways an application embeds Roster:
 * - `Roster.layer(config)`: an Effect Layer providing `Roster.Client` (and the Store),
 *   optionally running a worker inside the app's scope;
 * - `Roster.open(config)`: the same operations as Promises for apps not written with
 *   Effect, with `startWorker` / `stopWorker` / `close`.
 */
import { Effect, Exit, Layer, ManagedRuntime, Scope } from "effect"
import type { InvalidDefinition } from "../jobs/errors.ts"
import type { Registry } from "../jobs/Registry.ts"
import { layerPostgres } from "../store/postgres/PgStore.ts"
import { layerSqliteStores } from "../store/sqlite/SqliteLayer.ts"
import { ScheduleStore } from "../store/ScheduleStore.ts"
import { Store, StoreError } from "../store/Store.ts"
import { Client } from "./Client.ts"
import * as ClientModule from "./Client.ts"
import type { RosterConfig } from "./Config.ts"
import * as Core from "./Core.ts"
import type { EnqueueOptions } from "./Enqueue.ts"
import * as RegistryBuilder from "./Registry.ts"
import * as Worker from "./Worker.ts"

/** The Client service `Roster.layer` provides (also exported at the top level as `Client`). */
export { Client }

/** Whether a database setting is a PostgreSQL URL (else it is a SQLite file path). */
export const isPostgresUrl = (db: string): boolean => /^postgres(ql)?:\/\//.test(db)

/** The database a config points at (default `roster.db`). */
export const databaseOf = (config: RosterConfig): string => config.db ?? "roster.db"

/** The Store Layer for a config: SQLite for a path, PostgreSQL for a postgres:// URL. */
export const layerStore = (config: RosterConfig): Layer.Layer<Store | ScheduleStore, StoreError> => {
  const db = databaseOf(config)
  if (isPostgresUrl(db)) return layerPostgres({ url: db })
  return layerSqliteStores({ path: db, synchronous: config.synchronous ?? "FULL" })
}

/** Store + Core + Client for a config and an already-built Registry. */
export const layerWithRegistry = (config: RosterConfig, registry: Registry) =>
  ClientModule.layer.pipe(Layer.provideMerge(Core.layer(config, registry)), Layer.provideMerge(layerStore(config)))

/** Options of {@link layer}. */
export interface LayerOptions {
  /** Run a worker in the app's scope (default: no). */
  readonly worker?: Worker.WorkerOptions | boolean
}

/** The embeddable Layer: provides the Client (and Store, Core), and runs a worker if asked. */
export const layer = (config: RosterConfig, options: LayerOptions = {}): Layer.Layer<Client | Core.Core | Store | ScheduleStore, InvalidDefinition | StoreError> =>
  Layer.unwrap(
    Effect.map(RegistryBuilder.build(config), (registry) => {
      const base = layerWithRegistry(config, registry)
      if (!options.worker) return base
      const workerOptions = options.worker === true ? {} : options.worker
      return Layer.merge(base, Worker.layer(workerOptions).pipe(Layer.provide(base)))
    })
  )

/** The Promise API returned by {@link open}. */
export interface RosterHandle {
  readonly enqueue: (job: ClientModule.JobRef, payload: unknown, options?: EnqueueOptions) => Promise<{ id: string; inserted: boolean }>
  readonly enqueueMany: (items: ReadonlyArray<{ job: ClientModule.JobRef; payload: unknown; options?: EnqueueOptions }>) => Promise<ReadonlyArray<{ id: string; inserted: boolean }>>
  readonly get: (id: string) => Promise<ClientModule.ExecutionDetail | null>
  readonly list: Client["Service"]["list"] extends (f?: infer F) => any ? (filter?: F) => Promise<ReadonlyArray<import("../store/Execution.ts").Execution>> : never
  readonly count: () => Promise<Record<string, number>>
  readonly cancel: (id: string) => Promise<string>
  readonly retry: (id: string) => Promise<{ id: string; inserted: boolean }>
  /** Runs a worker in this process for the Jobs this handle was given. */
  readonly startWorker: (options?: Worker.WorkerOptions) => Promise<void>
  /** Stops the worker gracefully (in-flight work finishes or is released). */
  readonly stopWorker: () => Promise<void>
  /** Stops any worker and closes the database. */
  readonly close: () => Promise<void>
}

/** Opens Roster for a non-Effect app. Rejects with the typed error (its `_tag` and `message`). */
export const open = async (config: RosterConfig): Promise<RosterHandle> => {
  const runtime = ManagedRuntime.make(layer(config))
  await runtime.runPromise(Effect.void)
  const run = <A, E>(effect: Effect.Effect<A, E, Client | Core.Core | Store | ScheduleStore>) => runtime.runPromise(effect)
  let workerScope: Scope.Closeable | undefined
  const stopWorker = async () => {
    const scope = workerScope
    workerScope = undefined
    if (scope) await run(Scope.close(scope, Exit.void))
  }
  return {
    enqueue: (job, payload, options) => run(Client.use((c) => c.enqueue(job, payload, options))),
    enqueueMany: (items) => run(Client.use((c) => c.enqueueMany(items))),
    get: (id) => run(Client.use((c) => c.get(id))),
    list: (filter) => run(Client.use((c) => c.list(filter))),
    count: () => run(Client.use((c) => c.count())),
    cancel: (id) => run(Client.use((c) => c.cancel(id))),
    retry: (id) => run(Client.use((c) => c.retry(id))),
    startWorker: async (options) => {
      if (workerScope) throw new Error("a worker is already running in this process")
      const scope = await run(Scope.make())
      workerScope = scope
      await run(Scope.provide(scope)(Worker.start(options)))
    },
    stopWorker,
    close: async () => {
      await stopWorker()
      await runtime.dispose()
    }
  }
}
