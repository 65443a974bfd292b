/**
 * Cross-process wake-ups on SQLite: polls the store's change token (SQLite's
 * `data_version`, an in-memory read that changes whenever another connection
 * commits) every few milliseconds and wakes every Dispatcher when it moves. A busy
 * worker is woken often and finds nothing new, which costs one cheap claim; an idle
 * worker picks up another process's enqueue within one watch interval instead of one
 * poll interval.
 */
import { Clock, Effect } from "effect"
import { Store } from "../store/Store.ts"

/** The watcher's loop; `wake` is called with the current time when the token moves. */
export const loop = (options: { readonly intervalMs: number; readonly wake: (now: number) => void }) =>
  Effect.gen(function*() {
    const store = yield* Store
    let last = yield* store.changeToken
    if (last === null) return
    while (true) {
      yield* Effect.sleep(options.intervalMs)
      const token = yield* store.changeToken
      if (token !== last) {
        last = token
        options.wake(yield* Clock.currentTimeMillis)
      }
    }
  })
