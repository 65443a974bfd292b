/**
 * The second thread of outcome-thread.ts: its own connection to the file; records each
 * batch of successes it is sent under the shared write lock, then (mode `thread`) syncs
 * the WAL outside the lock, or (mode `thread-full`) commits at FULL inside it.
 */
import { Effect } from "effect"
import { fdatasyncSync, openSync } from "node:fs"
import { openDatabase } from "../../src/store/sqlite/SqliteConnection.ts"
import { makeSqliteStore } from "../../src/store/sqlite/SqliteStore.ts"
import type { Outcome } from "../../src/store/Store.ts"
import { acquire, release } from "./outcome-thread-lock.ts"

declare const self: Worker
let lock: Int32Array
let store: ReturnType<typeof makeSqliteStore>
let walFd = -1
let mode = "thread"
self.onmessage = (event: MessageEvent) => {
  const m = event.data
  if (m.init) {
    lock = new Int32Array(m.lock)
    mode = m.mode
    store = makeSqliteStore(openDatabase({ path: m.path, synchronous: mode === "thread-full" ? "FULL" : "NORMAL" }))
    walFd = openSync(`${m.path}-wal`, "r+")
    postMessage({ ready: true })
    return
  }
  acquire(lock)
  try {
    Effect.runSync(store.executionsFinish(m.outcomes as Array<Outcome>))
  } finally {
    release(lock)
  }
  if (mode === "thread") fdatasyncSync(walFd)
  postMessage({ seq: m.seq })
}
