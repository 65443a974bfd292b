/**
 * The LeaseKeeper heartbeats: every interval it extends, in one statement, the lease
 * of every execution this worker has in flight, and compares what the store says it
 * holds with what is running here. A running execution the store no longer leases to
 * us was recovered by someone else: its handler is interrupted and its outcome
 * dropped. A held execution with a cancel request is interrupted and recorded as
 * cancelled. Only in-flight ones are extended: an execution whose outcome could not be
 * written (a full disk) has left the pool, and its lease must run out so that it is
 * retried, not be kept alive for as long as this worker runs.
 */
import { Clock, Effect } from "effect"
import { Store } from "../store/Store.ts"
import type { WorkerPool } from "./WorkerPool.ts"

/** One heartbeat; exported so tests can drive it without waiting. */
export const beat = Effect.fnUntraced(function*(options: { readonly workerId: string; readonly leaseMs: number; readonly pool: WorkerPool }) {
  const store = yield* Store
  const before = new Set(options.pool.running())
  const now = yield* Clock.currentTimeMillis
  const { held } = yield* store.executionsHeartbeat({ workerId: options.workerId, now, leaseMs: options.leaseMs, ids: options.pool.inFlight() })
  const byId = new Map(held.map((h) => [h.id, h]))
  // Only executions running both before and after the heartbeat: one that finished while
  // it was in flight released its lease itself and is not lost.
  for (const id of options.pool.running()) {
    if (!before.has(id)) continue
    const h = byId.get(id)
    if (!h) {
      yield* Effect.logWarning(`lease on ${id} is no longer ours; interrupting its handler`)
      yield* options.pool.interrupt(id, "lost")
    } else if (h.cancelRequested) {
      yield* Effect.logInfo(`cancel requested for ${id}; interrupting its handler`)
      yield* options.pool.interrupt(id, "cancel")
    }
  }
})

/** The LeaseKeeper's loop, to be run under supervise(). */
export const loop = (options: { readonly workerId: string; readonly leaseMs: number; readonly heartbeatMs: number; readonly pool: WorkerPool }) =>
  Effect.gen(function*() {
    while (true) {
      yield* Effect.sleep(options.heartbeatMs)
      yield* beat(options).pipe(Effect.catchTag("StoreError", (e) => Effect.logError(`heartbeat failed: ${e.message}`)))
    }
  })
