/**
 * WAL checkpoints off the JS thread. In WAL mode every commit appends frames to the
 * `-wal` file, and the connection that commits the transaction which takes the WAL past
 * 1,000 frames copies them all back into the database file, fsyncing both, before its
 * commit returns: a stall of milliseconds, every few hundred one-row commits, on the
 * thread that also runs every handler. The checkpointer is a second thread with its own
 * connection (CheckpointThread.ts) that copies frames back as soon as a few hundred have
 * piled up, so when the writer's own automatic checkpoint comes due it finds almost
 * nothing left to copy, and the WAL restarts from its beginning as before. Measured
 * (bench/RESULTS.md, seventeenth pass): a one-row insert commit at `synchronous=NORMAL`
 * 17–20% faster, bulk inserts faster, one-row commits at FULL (bound by their fsync)
 * unchanged within the noise.
 *
 * It starts once the store has written a couple of thousand rows, so a short command
 * (`roster enqueue`, `executions list`) never starts a thread, and it is stopped, its
 * connection closed, before the store's own connection closes. It needs Linux
 * (CheckpointThread.ts says why); elsewhere the thread ends at once and the writer
 * checkpoints as SQLite always does.
 *
 * Effect ships no checkpoint or thread service; a Bun Worker is the one way to run
 * bun:sqlite calls on another core.
 */
import type { Database } from "bun:sqlite"
import { Effect } from "effect"
import { cell, checkpointThread, type ThreadEnd, type ThreadStart, threadState } from "./CheckpointThread.ts"
import { isWalFile } from "./FileEvents.ts"

/** Settings of the checkpoint thread. */
export interface CheckpointerOptions {
  /** Frames not yet copied back that make the thread checkpoint (default 256: 1 MiB of 4 KiB pages). */
  readonly thresholdFrames?: number
  /** How often the thread reads the WAL's length while it grows, ms (default 2; up to 100 while it does not). */
  readonly pollMs?: number
  /** How long the WAL must stand still before the thread copies back what is left, ms (default 50). */
  readonly tidyAfterMs?: number
}

/** A running checkpoint thread. */
export interface Checkpointer {
  /** Checkpoints the thread has run so far. */
  readonly checkpoints: () => number
  /** Frames in the WAL not yet copied back, at the thread's last look. */
  readonly behind: () => number
  /** `starting`, `watching`, `closed` or `unavailable`. */
  readonly state: () => keyof typeof threadState
  /** Why the thread could not watch, once it is `unavailable`. */
  readonly reason: () => string | undefined
  /** Settles once the thread has ended (closed, unavailable or failed). */
  readonly ended: Promise<void>
  /** Ends the thread; resolves once its connection is closed (or after `timeoutMs`, the thread terminated). */
  readonly stop: (timeoutMs?: number) => Promise<void>
}

const stateNames = Object.fromEntries(Object.entries(threadState).map(([name, value]) => [value, name])) as Record<number, keyof typeof threadState>

// The thread's source: a prelude that loads its modules (a string, so no bundler rewrites
// the require), then the function's own text.
let threadUrl: string | undefined
const sourceUrl = (): string =>
  (threadUrl ??= URL.createObjectURL(new Blob([
    `(${checkpointThread.toString()})({ sqlite: require("bun:sqlite"), fs: require("node:fs") })`
  ], { type: "application/javascript" })))

/** Starts the checkpoint thread on the WAL-mode file at `path`, whose writer runs at `synchronous` (0–3). */
export const startCheckpointer = (path: string, synchronous: number, options: CheckpointerOptions = {}): Checkpointer => {
  const shared = new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT * 4)
  const control = new Int32Array(shared)
  let reason: string | undefined
  let ended!: () => void
  const done = new Promise<void>((resolve) => (ended = resolve))
  const worker = new Worker(sourceUrl())
  // The thread never keeps the process alive; a process that exits without closing its
  // store leaves the file as a crash would, which WAL mode recovers.
  worker.unref()
  worker.addEventListener("message", (event: MessageEvent<ThreadEnd>) => {
    reason = event.data.reason
    ended()
  })
  worker.addEventListener("error", (event) => {
    reason = `checkpoint thread failed: ${(event as ErrorEvent).message}`
    Atomics.store(control, cell.state, threadState.unavailable)
    ended()
  })
  worker.addEventListener("close", () => ended())
  const start: ThreadStart = {
    path,
    synchronous,
    thresholdFrames: options.thresholdFrames ?? 256,
    minPollMs: options.pollMs ?? 2,
    maxPollMs: 100,
    tidyAfterMs: options.tidyAfterMs ?? 50,
    shared
  }
  worker.postMessage(start)
  return {
    checkpoints: () => Atomics.load(control, cell.checkpoints),
    behind: () => Atomics.load(control, cell.behind),
    state: () => stateNames[Atomics.load(control, cell.state)] ?? "starting",
    reason: () => reason,
    ended: done,
    stop: async (timeoutMs = 5_000) => {
      Atomics.store(control, cell.stop, 1)
      Atomics.notify(control, cell.stop)
      let timer: ReturnType<typeof setTimeout> | undefined
      await Promise.race([done, new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)))])
      clearTimeout(timer)
      worker.terminate()
    }
  }
}

/** Told how many rows a committed write changed; starts the thread once they add up. */
export type NoteWrites = (rows: number) => void

/** A checkpoint thread that starts on demand. */
export interface OnDemand {
  /** Told each committed write's rows (the SQLite Store calls it). */
  readonly noteWrites: NoteWrites
  /** The thread, once started. */
  readonly running: () => Checkpointer | undefined
}

/** Rows written before the thread starts, by default: about two automatic checkpoints' worth of one-row commits. */
export const defaultStartAfterRows = 2_000

const never: OnDemand = { noteWrites: () => {}, running: () => undefined }

/**
 * A checkpoint thread for `db` in the current scope, started once the store has written
 * `startAfterRows` rows, and stopped, its connection closed, when the scope closes.
 * Started by volume, not by time: a command that writes a few rows never starts a
 * thread, and a loop of awaited enqueues that never yields to the event loop (each one
 * answered at once, see the Recorder's inline insert) would hold off any timer.
 */
export const checkpointerOnDemand = (db: Database, options: CheckpointerOptions & { readonly startAfterRows?: number } = {}) =>
  Effect.gen(function*() {
    if (!isWalFile(db)) return never
    const synchronous = (db.query("PRAGMA synchronous").get() as { synchronous: number }).synchronous
    const context = yield* Effect.context<never>()
    let running: Checkpointer | undefined
    let open = true
    let left = options.startAfterRows ?? defaultStartAfterRows
    yield* Effect.addFinalizer(() =>
      Effect.suspend(() => {
        open = false
        return running === undefined ? Effect.void : Effect.promise(() => running!.stop())
      })
    )
    return {
      noteWrites: (rows) => {
        if (running !== undefined || !open || (left -= rows) > 0) return
        const thread = (running = startCheckpointer(db.filename, synchronous, options))
        // A thread that could not watch is said once: the writer's own checkpoints carry on.
        void thread.ended.then(() => {
          if (thread.state() !== "unavailable" || (process.platform !== "linux" && thread.reason()?.includes("/proc"))) return
          Effect.runForkWith(context)(Effect.logWarning(`SQLite checkpoint thread not running (${thread.reason()}); commits checkpoint as SQLite does by default`))
        })
      },
      running: () => running
    } satisfies OnDemand
  })
