/**
 * The body of the checkpoint thread (Checkpointer.ts): a Bun Worker with its own
 * connection to the database file that copies WAL frames back into the file
 * (`PRAGMA wal_checkpoint(PASSIVE)`) once enough of them have piled up, so the
 * process's writer rarely has to. It runs from its source text (a Blob URL), which works
 * the same from the sources, the built package and a `roster build` binary; so this
 * function is self-contained: it uses only globals and the modules it is given, never an
 * import (a bundler would rewrite one, and the Worker could not resolve it).
 *
 * How it knows the WAL's length without checkpointing: the wal-index header in the
 * `-shm` file holds the last frame (`mxFrame`) and how many are already copied back
 * (`nBackfill`) (https://sqlite.org/walformat.html). It reads them with `pread` on
 * SQLite's own descriptor of that file, found in `/proc/self/fd`, and never opens or
 * closes one of its own: closing any descriptor of a file drops every POSIX lock this
 * process holds on it (SQLite's WAL locks live on `-shm`), which would let another
 * process write under a reader's feet. The descriptor stays SQLite's as long as this
 * thread's connection is open, and the thread stops reading before it closes. Where
 * there is no `/proc` (not Linux) the thread reports `unavailable` and ends: the writer's
 * own automatic checkpoint carries on as before.
 *
 * States (the `state` cell of the shared array): starting → watching → closed, or
 * starting → unavailable (no connection, no descriptor). `stop` set by the owner ends
 * the watch; the connection is closed before `closed` is set and announced.
 */

/** Cells of the Int32Array the owner and the thread share. */
export const cell = { stop: 0, checkpoints: 1, state: 2, behind: 3 } as const

/** Values of the `state` cell. */
export const threadState = { starting: 0, watching: 1, closed: 2, unavailable: 3 } as const

/** What the owner sends to start the thread. */
export interface ThreadStart {
  readonly path: string
  /** The writer's `synchronous` level (1 NORMAL, 2 FULL, 3 EXTRA): a checkpoint syncs as the writer would. */
  readonly synchronous: number
  /** Frames not yet copied back that make the thread checkpoint. */
  readonly thresholdFrames: number
  /** Pause between reads of the header while the WAL grows, ms; doubled while it does not, up to `maxPollMs`. */
  readonly minPollMs: number
  readonly maxPollMs: number
  /** How long the WAL must stand still before the thread copies back what is left below the threshold, ms. */
  readonly tidyAfterMs: number
  readonly shared: SharedArrayBuffer
}

/** What the thread posts when it ends. */
export interface ThreadEnd {
  readonly state: number
  readonly reason?: string
}

/** The modules the thread uses, loaded by its source's prelude (Checkpointer.ts). */
export interface ThreadModules {
  readonly sqlite: typeof import("bun:sqlite")
  readonly fs: typeof import("node:fs")
}

/** Runs in the Worker: see the module comment. */
export function checkpointThread(modules: ThreadModules): void {
  const { Database } = modules.sqlite
  const fs = modules.fs
  const scope = globalThis as unknown as {
    onmessage: ((event: { data: ThreadStart }) => void) | null
    postMessage: (message: ThreadEnd) => void
  }
  // Repeated here: this function cannot see the module's constants.
  const STOP = 0, CHECKPOINTS = 1, STATE = 2, BEHIND = 3
  const WATCHING = 1, CLOSED = 2, UNAVAILABLE = 3
  const WAL_INDEX_VERSION = 3007000
  scope.onmessage = (event) => {
    scope.onmessage = null
    const start = event.data
    const control = new Int32Array(start.shared)
    const end = (state: number, reason?: string) => {
      Atomics.store(control, STATE, state)
      scope.postMessage(reason === undefined ? { state } : { state, reason })
    }
    let db: InstanceType<typeof Database> | undefined
    try {
      db = new Database(start.path, { readwrite: true, create: false })
      // This thread may wait: a PASSIVE checkpoint never does, and the first read below
      // should outlast a WAL recovery or restart another connection is making.
      db.run("PRAGMA busy_timeout = 2000")
      db.run(`PRAGMA synchronous = ${Math.max(1, Math.min(3, Math.floor(start.synchronous)))}`)
      // A read makes SQLite map the wal-index, so its descriptor is open from here on.
      db.query("SELECT count(*) FROM sqlite_schema").get()
    } catch (error) {
      db?.close(false)
      return end(UNAVAILABLE, `cannot open ${start.path}: ${(error as Error).message}`)
    }
    let fd = -1
    try {
      const shm = fs.realpathSync(`${start.path}-shm`)
      for (const entry of fs.readdirSync("/proc/self/fd")) {
        try {
          if (fs.readlinkSync(`/proc/self/fd/${entry}`) === shm) fd = Number(entry)
        } catch {
          // A descriptor closed while the folder was read.
        }
        if (fd >= 0) break
      }
    } catch {
      // No /proc, or no -shm file: fd stays -1.
    }
    if (fd < 0) {
      db.close(false)
      return end(UNAVAILABLE, "the wal-index descriptor was not found (this needs Linux's /proc)")
    }
    const checkpoint = db.query("PRAGMA wal_checkpoint(PASSIVE)")
    // The header and the checkpoint info: 136 bytes, native byte order.
    const header = new Uint32Array(34)
    const bytes = new Uint8Array(header.buffer)
    Atomics.store(control, STATE, WATCHING)
    let pollMs = start.minPollMs
    let lastFrame = -1
    let quietMs = 0
    while (Atomics.load(control, STOP) === 0) {
      let frame = -1
      let backfilled = 0
      try {
        if (fs.readSync(fd, bytes, 0, 136, 0) === 136 && header[0] === WAL_INDEX_VERSION) {
          frame = header[4]!
          backfilled = header[24]!
        }
      } catch {
        // Read again after the pause.
      }
      const behind = frame < 0 ? 0 : Math.max(0, frame - backfilled)
      Atomics.store(control, BEHIND, behind)
      quietMs = frame === lastFrame ? quietMs + pollMs : 0
      // Enough frames piled up; or the writes stopped with some left, which, once copied,
      // let the next commit start the WAL over from its beginning.
      if (behind >= start.thresholdFrames || (behind > 0 && quietMs >= start.tidyAfterMs)) {
        try {
          checkpoint.get()
          Atomics.add(control, CHECKPOINTS, 1)
        } catch {
          // SQLITE_BUSY: another connection is checkpointing; the frames are being copied.
        }
      }
      pollMs = frame === lastFrame ? Math.min(start.maxPollMs, pollMs * 2) : start.minPollMs
      lastFrame = frame
      Atomics.wait(control, STOP, 0, pollMs)
    }
    db.close(false)
    end(CLOSED)
  }
}
