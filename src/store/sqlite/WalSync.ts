/**
 * A commit whose fsync is taken out of it and run off the JS thread. At `synchronous =
 * FULL` SQLite fsyncs the WAL inside each commit, on the thread that commits, so nothing
 * else in the process runs until the disk answers. The hand-off's insert (Recorder.ts)
 * instead commits at NORMAL — in WAL mode that commit is already safe against a process
 * crash, its frames are in the OS's cache — and {@link WalSync.sync} then fdatasyncs the
 * WAL file on the runtime's I/O threads while the handlers it started run: once it
 * returns, every frame this connection committed before it began is on disk, which is
 * what FULL promises. The Recorder answers its callers only after that
 * (docs/operations.md, "Deferred fsync").
 *
 * Off (`sync` is a no-op and nothing is deferred) unless the file is at FULL or EXTRA
 * in WAL mode, on a real path: below FULL there is nothing to sync, and a `:memory:` or
 * URI database has no WAL file here to sync.
 */
import type { Database } from "bun:sqlite"
import { closeSync, fdatasync, openSync } from "node:fs"
import { Effect } from "effect"
import { isWalFile } from "./FileEvents.ts"

/** What the store needs of a deferred fsync. */
export interface WalSync {
  /** Whether a write may be committed at NORMAL and synced after (`sync`). */
  readonly enabled: boolean
  /** Makes every commit of this connection so far durable (the WAL's fdatasync, off the JS thread); fails with the OS's error. */
  readonly sync: Effect.Effect<void, Error>
}

/** The deferred fsync of `db`'s WAL, given its configured `synchronous` level (0–3). */
export const makeWalSync = (db: Database, configuredSync: number): WalSync => {
  const enabled = configuredSync >= 2 && isWalFile(db)
  if (!enabled) return { enabled, sync: Effect.void }
  // Opened for each sync (≈ 10 µs) rather than kept: nothing to close when the database
  // closes. Read-only: fsync needs no write access.
  const wal = `${db.filename}-wal`
  return {
    enabled,
    sync: Effect.callback<void, Error>((resume) => {
      let fd: number
      try {
        fd = openSync(wal, "r")
      } catch (error) {
        return resume(Effect.fail(error as Error))
      }
      fdatasync(fd, (error) => {
        closeSync(fd)
        resume(error ? Effect.fail(error) : Effect.void)
      })
    })
  }
}
