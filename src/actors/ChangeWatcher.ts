/**
 * Cross-process wake-ups: runs the store's change watch (SQLite reads `data_version`
 * every few milliseconds while its files are written, and on the file system's report of
 * a write after a quiet spell; PostgreSQL LISTENs for NOTIFY) and wakes the Dispatchers.
 * A change that names its queue goes through the WakeBus to that queue's Dispatchers,
 * with its due time; an unspecified change wakes every Dispatcher. A busy worker is
 * woken often and finds nothing new, which costs one cheap claim; an idle worker picks
 * up another process's enqueue at once instead of after one poll interval. A change that
 * only wrote outcomes wakes only the Dispatchers of queues with limits across workers
 * (an ended execution may have freed a global or per-key slot); the rest is for
 * waiters (Client.waitFor).
 */
import { Store } from "../store/Store.ts"
import type { WakeBus } from "./WakeBus.ts"

/** The watcher's loop; `wake` is called with a due time when any queue may have work. */
export const loop = (options: {
  readonly intervalMs: number
  readonly wake: (now: number) => void
  readonly bus?: WakeBus | undefined
  /** Called for a change that only wrote outcomes. */
  readonly wakeOnOutcome?: ((now: number) => void) | undefined
}) =>
  Store.use((store) =>
    store.watchChanges({
      pollMs: options.intervalMs,
      onChange: (change) => {
        // Outcomes bring no new work (a retry's return to the queue has its own wake-up).
        if (change.outcome) return options.wakeOnOutcome?.(change.dueAt)
        if (change.queue === null || options.bus === undefined) options.wake(change.dueAt)
        else options.bus.notify(change.queue, change.dueAt)
      }
    }))
