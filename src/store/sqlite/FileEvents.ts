/**
 * The file system's word that a database file was written: the change watcher's way to
 * sleep while nothing happens. Every commit in WAL mode writes the `-wal` file, and
 * inotify (through `fs.watch` on the file's folder) reports the write; the watcher then
 * reads `data_version` as before. An idle worker polling every 5 ms spent about 5% of a
 * core (bench/RESULTS.md, "An idle worker's CPU"); with this it wakes when a file moves.
 *
 * A report is a hint, never the only path: the write it reports may not be visible yet
 * (the WAL index is updated after the frames are written, and after the fsync at FULL),
 * so the watcher keeps reading for a while after each report and still reads on a slow
 * timer in between. Where the folder cannot be watched (a watch limit, a file system
 * without inotify, `:memory:`) there is no source, and the watcher polls as before.
 */
import { watch } from "node:fs"
import { basename, dirname } from "node:path"
import { Effect, Latch, type Scope } from "effect"

/** Reports of writes to one database's files. */
export interface FileEvents {
  /** Whether a file was written since the last `take` (always, once the watch failed); forgets the reports. */
  readonly take: Effect.Effect<boolean>
  /** Returns once a file was written since the last `take` (at once if one was). */
  readonly next: Effect.Effect<void>
}

/**
 * Reports of writes and creations of the database's files (`x.db`, `x.db-wal`,
 * `x.db-shm`), or `undefined` when its folder cannot be watched. The watch ends with the
 * scope; a watch that fails later reports for ever, so the caller polls.
 */
export const databaseFileEvents = (filename: string): Effect.Effect<FileEvents | undefined, never, Scope.Scope> =>
  Effect.gen(function*() {
    if (filename === "" || filename === ":memory:" || filename.startsWith("file:")) return undefined
    const latch = Latch.makeUnsafe(false)
    let failed = false
    const base = basename(filename)
    const watcher = yield* Effect.acquireRelease(
      Effect.sync(() => {
        try {
          return watch(dirname(filename), { persistent: false }, (_event, name) => {
            if (name === null || name.startsWith(base)) latch.openUnsafe()
          })
        } catch {
          return undefined
        }
      }),
      (w) => Effect.sync(() => w?.close())
    )
    if (watcher === undefined) return undefined
    watcher.on("error", () => {
      failed = true
      latch.openUnsafe()
    })
    return { take: Effect.sync(() => failed || latch.closeUnsafe()), next: latch.await }
  })
