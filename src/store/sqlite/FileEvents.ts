/**
 * The file system's word that a database file was written: the change watcher's way to
 * sleep through a quiet spell. Every commit in WAL mode writes the `-wal` file, and
 * inotify (through `fs.watch` on the file's folder) reports the write; the watcher then
 * reads `data_version` as before. An idle worker polling every 5 ms spent about 5% of a
 * core (bench/RESULTS.md, "An idle worker's CPU"); with this it wakes when a file moves.
 *
 * A report is a hint, never the only path: the write it reports may not be visible yet
 * (the WAL index is updated after the frames are written, and after the fsync at FULL),
 * so the watcher reads 1 ms apart after a report and still reads on a slow timer while
 * it waits. Where the folder cannot be watched (the watch limit reached, a file system
 * without inotify) the watcher reads every pollMs as before, and tries again later.
 */
import { watch } from "node:fs"
import { basename, dirname } from "node:path"
import { Effect, Latch, type Scope } from "effect"

/** Whether `filename` names a file whose folder could be watched (not `:memory:`, not a URI). */
export const isWatchable = (filename: string): boolean => filename !== "" && filename !== ":memory:" && !filename.startsWith("file:")

/** Whether `db` is a WAL-mode file on a real path: one with a `-wal` and a `-shm` file beside it. */
export const isWalFile = (db: { readonly filename: string; query: (sql: string) => { get: () => unknown } }): boolean =>
  isWatchable(db.filename) && ((db.query("PRAGMA journal_mode").get() as { journal_mode: string } | null)?.journal_mode.toLowerCase() === "wal")

/**
 * Watches the database's files (`x.db`, `x.db-wal`, `x.db-shm`) until the scope closes;
 * the effect it returns ends at the first write or creation reported (or a failure of the
 * watch). `undefined` when the folder cannot be watched. Watching only
 * while quiet matters: a busy worker writes the WAL thousands of times a second, and a
 * report for each would cost its thread more than the reads it saves (bench/RESULTS.md).
 */
export const nextWrite = (filename: string): Effect.Effect<Effect.Effect<void> | undefined, never, Scope.Scope> =>
  Effect.gen(function*() {
    const written = Latch.makeUnsafe(false)
    const base = basename(filename)
    const watcher = yield* Effect.acquireRelease(
      Effect.sync(() => {
        try {
          return watch(dirname(filename), { persistent: false }, (_event, name) => {
            if (name === null || name.startsWith(base)) written.openUnsafe()
          })
        } catch {
          return undefined
        }
      }),
      (w) => Effect.sync(() => w?.close())
    )
    if (watcher === undefined) return undefined
    watcher.on("error", () => written.openUnsafe())
    return written.await
  })
