/**
 * Presence keeps this worker's live-worker row fresh: every heartbeat it refreshes the
 * row's last seen time, so `roster workers list`, the dashboard, the Scheduler and
 * `roster check --live` know the process is alive and what it serves.
 *
 * States and transitions:
 * - registered: each tick refreshes the row; a refresh that finds no row (pruned, or
 *   removed by hand) → unregistered.
 * - waiting (the start): until every Dispatcher's first claim has succeeded, so a
 *   corrupt database is refused before the worker writes into it → registered.
 * - unregistered (also after a failed first registration): each tick registers the
 *   row again → registered.
 * A store failure leaves the state as it is and is logged; the next tick tries again.
 * The worker removes the row at a clean stop (Worker.ts).
 */
import { Clock, Effect } from "effect"
import { Store, type WorkerRegistration } from "../store/Store.ts"

/** One tick; returns whether the row is registered afterwards. Exported so tests can drive it. */
export const beat = Effect.fnUntraced(function*(options: { readonly worker: WorkerRegistration; readonly registered: boolean }) {
  const store = yield* Store
  const now = yield* Clock.currentTimeMillis
  if (options.registered && (yield* store.workersHeartbeat({ id: options.worker.id, now }))) return true
  yield* store.workersRegister({ worker: options.worker, now })
  return true
})

/**
 * Presence's loop, to be run under the worker's Breaker. It registers the row once
 * `ready` (every Dispatcher's first claim) has succeeded: a worker whose database turns
 * out unusable (corrupt) stops before writing anything of its own into it.
 */
export const loop = (options: { readonly worker: WorkerRegistration; readonly heartbeatMs: number; readonly ready: Effect.Effect<void> }) =>
  Effect.gen(function*() {
    yield* options.ready
    let registered = yield* beat({ worker: options.worker, registered: false }).pipe(
      Effect.catchTag("StoreError", (e) => Effect.as(Effect.logWarning(`worker ${options.worker.id} not registered yet: ${e.message}`), false))
    )
    while (true) {
      yield* Effect.sleep(options.heartbeatMs)
      registered = yield* beat({ worker: options.worker, registered }).pipe(
        Effect.catchTag("StoreError", (e) => Effect.as(Effect.logError(`worker presence not refreshed: ${e.message}`), registered))
      )
    }
  })
