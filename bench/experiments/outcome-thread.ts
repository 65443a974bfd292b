/**
 * An experiment behind issue 17's drain figure (not part of `npm run bench`): the
 * drain's outcome writes on a second thread with its own connection, the claim staying
 * on the main thread, against both on one thread, with no runtime. Each claimed job
 * costs a busy spin of BENCH_SPIN_US (default 11 µs: the runtime's measured cost a job).
 * Modes, interleaved per round:
 * - `single`: claim 50, spin, record the 50 successes (FULL), all on the main thread;
 * - `thread`: the successes go to outcome-thread-writer.ts, which commits at NORMAL under
 *   a shared Atomics lock and fdatasyncs the WAL after releasing it (as durable as FULL);
 * - `thread-full`: the same with the writer's commit at FULL, inside the lock.
 * At most 3 batches are with the writer; the main thread takes the lock around each claim.
 * The real runtime with the same design (branch `outcome-thread`, bench/RESULTS.md tenth
 * pass) was slower: this is the upper bound, not what a worker gets.
 *
 * BENCH_OT_WORK=work replaces the spin (which takes the same wall time whatever else runs)
 * with a fixed amount of allocating work, calibrated to BENCH_SPIN_US on a quiet thread,
 * so that a main thread slowed by the busy second core would show. It did not: the
 * thread still gains as much (bench/RESULTS.md tenth pass), so this stays an upper bound.
 *
 * Env: BENCH_OT_N (jobs per run, default 100000), BENCH_SPIN_US, BENCH_OT_ROUNDS (3),
 * BENCH_OT_MODES (default single,thread,thread-full).
 */
import { Effect } from "effect"
import { applyMigrations, openDatabase } from "../../src/store/sqlite/SqliteConnection.ts"
import { makeSqliteStore } from "../../src/store/sqlite/SqliteStore.ts"
import type { Outcome } from "../../src/store/Store.ts"
import { envInt, tempDb } from "../support.ts"
import { fillQueued } from "../variants.ts"
import { acquire, release } from "./outcome-thread-lock.ts"

const n = envInt("BENCH_OT_N", 100_000)
const spinUs = envInt("BENCH_SPIN_US", 11)
const rounds = envInt("BENCH_OT_ROUNDS", 3)
const modes = (process.env.BENCH_OT_MODES ?? "single,thread,thread-full").split(",")
const job = "bench/ot"
const maxInFlight = 3

/** A wall-clock spin of spinUs (the default), or with BENCH_OT_WORK=work a fixed amount of allocating work calibrated to it. */
const work = process.env.BENCH_OT_WORK === "work"
/** Read by nothing: it keeps the allocating loop from being optimised away. */
let sink = 0
const allocate = (k: number) => {
  for (let i = 0; i < k; i++) {
    const o = { a: i, b: [i, i + 1], c: `x${i}` }
    sink += o.b.length + o.c.length
  }
}
const calibrate = (): number => {
  let k = 1000
  for (let r = 0; r < 5; r++) {
    const t0 = performance.now()
    for (let j = 0; j < 2000; j++) allocate(k)
    const usPer = ((performance.now() - t0) * 1000) / 2000
    k = Math.max(1, Math.round((k * spinUs) / usPer))
  }
  return k
}
const units = work ? calibrate() : 0
const spin = (us: number) => {
  if (work) return allocate(units)
  const end = performance.now() + us / 1000
  while (performance.now() < end);
}

/** Jobs/s of one mode on a fresh database of n due jobs. */
const once = async (mode: string): Promise<number> => {
  const tmp = tempDb("ot")
  const db = openDatabase({ path: tmp.db, synchronous: "FULL" })
  applyMigrations(db, Date.now())
  fillQueued(db, { n, job, now: Date.now() })
  const store = makeSqliteStore(db)
  const lock = new Int32Array(new SharedArrayBuffer(4))
  let writer: Worker | undefined
  let inFlight = 0
  let replied: (() => void) | undefined
  if (mode !== "single") {
    writer = new Worker(new URL("./outcome-thread-writer.ts", import.meta.url).href)
    await new Promise<void>((ready) => {
      writer!.onmessage = (event) => {
        if (event.data.ready) return ready()
        inFlight--
        replied?.()
      }
      writer!.postMessage({ init: true, lock: lock.buffer, path: tmp.db, mode })
    })
  }
  let seq = 0
  let done = 0
  const t0 = performance.now()
  while (done < n) {
    const now = Date.now()
    if (writer) acquire(lock)
    let claimed
    try {
      claimed = Effect.runSync(store.executionsClaim({ queue: "default", jobs: [job], workerId: "w", limit: 50, now, leaseMs: 60_000 }))
    } finally {
      if (writer) release(lock)
    }
    if (claimed.length === 0) break
    const outcomes: Array<Outcome> = claimed.map((e) => {
      spin(spinUs)
      return { id: e.id, workerId: "w", attempt: e.attempt, now, startedAt: now, parentId: null, kind: "succeeded", result: "null" }
    })
    done += claimed.length
    if (!writer) {
      Effect.runSync(store.executionsFinish(outcomes))
      continue
    }
    inFlight++
    writer.postMessage({ seq: seq++, outcomes })
    // A turn of the event loop, so replies come in; then wait while too many are out.
    await new Promise<void>((turn) => setImmediate(turn))
    while (inFlight >= maxInFlight) await new Promise<void>((r) => (replied = r))
  }
  while (inFlight > 0) await new Promise<void>((r) => (replied = r))
  const perS = (n / (performance.now() - t0)) * 1000
  const left = (db.query("SELECT COUNT(*) AS c FROM roster_executions WHERE state <> 'succeeded'").get() as { c: number }).c
  writer?.terminate()
  db.close()
  tmp.cleanup()
  if (left !== 0) throw new Error(`${mode}: ${left} executions not succeeded`)
  return perS
}

if (work) console.log(`work: ${units} allocations a job (≈ ${spinUs} µs alone)`)
for (let r = 0; r < rounds; r++) {
  for (const mode of modes) {
    const perS = await once(mode)
    console.log(`round ${r + 1}  ${mode.padEnd(12)} ${Math.round(perS).toLocaleString("en-US").padStart(7)}/s  ${(1e6 / perS).toFixed(1)} µs a job`)
  }
}
