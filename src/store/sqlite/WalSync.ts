/**
 * A commit whose fsync runs off the JS thread. At `synchronous = FULL` SQLite fsyncs the
 * WAL inside each commit, on the thread that commits: for that long (≈ 0.3–1 ms here)
 * no handler, claim or enqueue in the process moves. A deferred write instead commits at
 * NORMAL — in WAL mode that commit is already safe against a process crash, its frames
 * are in the OS's cache — and {@link WalSync.sync} then fdatasyncs the WAL file on the
 * runtime's I/O threads: once it returns, every frame this connection committed before
 * it began is on disk, which is what FULL promises. The Recorder answers its callers only
 * after that (docs/reliability.md, "Deferred fsync").
 *
 * Off (`sync` is a no-op and nothing is deferred) unless the file is at FULL or EXTRA
 * in WAL mode, on a real path: below FULL there is nothing to sync, and a `:memory:` or
 * URI database has no WAL file here to sync.
 */
import type { Database } from "bun:sqlite"
import { close, fdatasync, open } from "node:fs"
import { Effect } from "effect"
import { isWatchable } from "./FileEvents.ts"

/** What the store needs of a deferred fsync. */
export interface WalSync {
  /** Whether writes may be committed at NORMAL and synced after (`sync`). */
  readonly enabled: boolean
  /** Makes every commit of this connection so far durable (the WAL's fdatasync); fails with the OS's error. */
  readonly sync: Effect.Effect<void, Error>
}

/** Opens the WAL read-only (fsync needs no write access), fdatasyncs it, closes it. */
const syncFile = (path: string) =>
  Effect.callback<void, Error>((resume) => {
    open(path, "r", (openError, fd) => {
      if (openError) return resume(Effect.fail(openError))
      fdatasync(fd, (syncError) => {
        close(fd, () => resume(syncError ? Effect.fail(syncError) : Effect.void))
      })
    })
  })

/** The deferred fsync of `db`'s WAL, given its configured `synchronous` level (0–3). */
export const makeWalSync = (db: Database, configuredSync: number): WalSync => {
  const mode = (db.query("PRAGMA journal_mode").get() as { journal_mode: string }).journal_mode
  const enabled = configuredSync >= 2 && mode.toLowerCase() === "wal" && isWatchable(db.filename)
  // Opened on each sync, not kept: a kept descriptor would outlive a WAL that another
  // connection removed and recreated, and syncing that would sync nothing.
  return { enabled, sync: enabled ? syncFile(`${db.filename}-wal`) : Effect.void }
}
