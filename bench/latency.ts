/**
 * Enqueue → handler start latency, one execution at a time with a gap between them
 * (so this measures an idle worker's reaction, not queueing behind a backlog):
 *
 * - in-process: `Roster.layer(config, { worker: true })`; the `bench/mark` handler
 *   records `performance.now()` in a map shared with this process. Measured from just
 *   before `enqueue` is called (the enqueue's own commit, an fsync, is inside the
 *   figure) and, separately, from when `enqueue` returned (the acknowledged commit).
 * - cross-process: a separate `roster worker` process runs the bench app; this process
 *   enqueues through its own Client; the handler's result carries its start time
 *   (epoch ms, sub-ms precision) and the store's createdAt/startedAt (whole ms) give a
 *   second reading. The worker learns of the enqueue through SQLite's data_version,
 *   polled every ROSTER_WATCH_MS (default 5 ms), since SQLite has no notifications.
 *
 * Env: BENCH_LATENCY_N (in-process, default 2000), BENCH_LATENCY_X_N (cross-process,
 * default 1000), BENCH_LATENCY_GAP_MS (max random gap, default 10).
 */
import { Effect, Layer, Logger } from "effect"
import { Roster } from "../src/index.ts"
import { Client } from "../src/runtime/Client.ts"
import { hooks, mark } from "./apps/bench/jobs.ts"
import { benchApps, envInt, mb, ms, openReader, percentiles, progress, report, sampleRss, type Section, spawnRoster, tempDb, waitForText } from "./support.ts"

const inN = envInt("BENCH_LATENCY_N", 2_000)
const crossN = envInt("BENCH_LATENCY_X_N", 1_000)
const maxGapMs = envInt("BENCH_LATENCY_GAP_MS", 10)

/** A random gap, so enqueues do not line up with any poll interval. */
/** Runtime logs go to stderr as logfmt, like the CLI's, so stdout carries only the table. */
const logToStderr = Logger.layer([Logger.withConsoleError(Logger.formatLogFmt)])

const gap = () => Bun.sleep(1 + Math.random() * Math.max(0, maxGapMs - 1))

interface InProcessResult {
  readonly fromCall: ReadonlyArray<number>
  readonly fromAck: ReadonlyArray<number>
  readonly enqueueCall: ReadonlyArray<number>
  readonly peakRssMb: number
}

/** In-process: enqueue, wait for the handler to start, pause, repeat. */
const inProcess = async (): Promise<InProcessResult> => {
  const tmp = tempDb("latency-in")
  try {
    const layer = Roster.layer({ db: tmp.db, jobs: [mark] }, { worker: true }).pipe(Layer.provideMerge(logToStderr))
    const fromCall: Array<number> = []
    const fromAck: Array<number> = []
    const enqueueCall: Array<number> = []
    let peakRssMb = NaN
    await Effect.runPromise(Effect.gen(function*() {
      const client = yield* Client
      const run = (id: number) =>
        Effect.gen(function*() {
          // The handler records its start time synchronously; the promise only delivers it.
          const started = new Promise<number>((resolve) => {
            hooks.onStart = (got, at) => {
              if (got === id) resolve(at)
            }
          })
          const t0 = performance.now()
          yield* client.enqueue(mark, { id })
          const t1 = performance.now()
          const at = yield* Effect.promise(() => started).pipe(Effect.timeout("10 seconds"))
          return { t0, t1, at }
        })
      for (let i = 0; i < 50; i++) yield* run(-1 - i) // warm-up
      const rss = sampleRss()
      for (let i = 0; i < inN; i++) {
        const { t0, t1, at } = yield* run(i)
        fromCall.push(at - t0)
        fromAck.push(at - t1)
        enqueueCall.push(t1 - t0)
        yield* Effect.promise(gap)
      }
      peakRssMb = rss.stop()
    }).pipe(Effect.provide(layer)))
    hooks.onStart = undefined
    return { fromCall, fromAck, enqueueCall, peakRssMb }
  } finally {
    tmp.cleanup()
  }
}

interface CrossResult {
  readonly fromCall: ReadonlyArray<number>
  readonly fromDb: ReadonlyArray<number>
  readonly enqueueCall: ReadonlyArray<number>
  readonly workerPeakRssMb: number
  readonly workerCpuMs: number
  readonly wallMs: number
}

/** Cross-process: a `roster worker` child runs the jobs; this process enqueues. */
const crossProcess = async (): Promise<CrossResult> => {
  const tmp = tempDb("latency-x")
  try {
    const log = `${tmp.dir}/worker.log`
    // This process and the worker both migrate on start; migrations serialise on the write lock.
    const layer = Roster.layer({ db: tmp.db, appsDir: benchApps }).pipe(Layer.provideMerge(logToStderr))
    const worker = spawnRoster(["worker"], { db: tmp.db, appsDir: benchApps, stderrFile: log })
    const enqueuedAt = new Map<string, number>()
    const enqueueCall: Array<number> = []
    const started = performance.now()
    await Effect.runPromise(Effect.gen(function*() {
      const client = yield* Client
      yield* Effect.promise(() => waitForText(log, "serving"))
      for (let i = 0; i < crossN + 20; i++) {
        const t0 = performance.timeOrigin + performance.now()
        const { id } = yield* client.enqueue("bench/mark", { id: i })
        enqueueCall.push(performance.timeOrigin + performance.now() - t0)
        if (i >= 20) enqueuedAt.set(id, t0) // the first 20 warm the worker up
        yield* Effect.promise(gap)
      }
      // Wait for the last ones to finish.
      for (let tries = 0; tries < 500; tries++) {
        const counts = yield* client.count()
        if (counts.queued === 0 && counts.running === 0) break
        yield* Effect.sleep(10)
      }
    }).pipe(Effect.provide(layer)))
    const wallMs = performance.now() - started
    worker.stop()
    const result = await worker.done
    const reader = openReader(tmp.db)
    const rows = reader
      .query<{ id: string; result: string | null; created_at: number; started_at: number | null }, []>(
        "SELECT id, result, created_at, started_at FROM roster_executions"
      )
      .all()
    reader.close()
    const fromCall: Array<number> = []
    const fromDb: Array<number> = []
    for (const r of rows) {
      const t0 = enqueuedAt.get(r.id)
      if (t0 === undefined || r.result === null || r.started_at === null) continue
      fromCall.push((JSON.parse(r.result) as { at: number }).at - t0)
      fromDb.push(r.started_at - r.created_at)
    }
    if (fromCall.length < crossN) progress(`latency cross-process: only ${fromCall.length} of ${crossN} finished`)
    return { fromCall, fromDb, enqueueCall: enqueueCall.slice(20), workerPeakRssMb: result.peakRssMb, workerCpuMs: result.cpuMs, wallMs }
  } finally {
    tmp.cleanup()
  }
}

const row = (label: string, values: ReadonlyArray<number>, rss: string): Array<string> => {
  const p = percentiles(values)
  return [label, String(p.n), ms(p.p50), ms(p.p90), ms(p.p99), ms(p.max), ms(p.mean), rss]
}

/** Runs both and returns the section. */
export const run = async (): Promise<Section> => {
  const rows: Array<Array<string>> = []
  const checks = []
  if (inN > 0) {
    const r = await inProcess()
    const p = percentiles(r.fromCall)
    progress(`latency in-process: p50 ${ms(p.p50)} ms`)
    rows.push(row("in-process: enqueue call → handler start", r.fromCall, mb(r.peakRssMb)))
    rows.push(row("in-process: enqueue acknowledged → handler start", r.fromAck, ""))
    rows.push(row("in-process: enqueue call (commit + fsync)", r.enqueueCall, ""))
    checks.push({ target: "in-process enqueue → start p50 ≤ 2 ms", measured: `p50 ${ms(p.p50)} ms, p99 ${ms(p.p99)} ms`, met: p.p50 <= 2 })
  }
  if (crossN > 0) {
    const r = await crossProcess()
    const p = percentiles(r.fromCall)
    progress(`latency cross-process: p50 ${ms(p.p50)} ms`)
    rows.push(row("cross-process: enqueue call → handler start", r.fromCall, `${mb(r.workerPeakRssMb)} (worker)`))
    rows.push(row("cross-process: store createdAt → startedAt (whole ms)", r.fromDb, ""))
    rows.push(row("cross-process: enqueue call (commit + fsync)", r.enqueueCall, ""))
    checks.push({ target: "cross-process enqueue → start p50 ≤ 25 ms", measured: `p50 ${ms(p.p50)} ms, p99 ${ms(p.p99)} ms`, met: p.p50 <= 25 })
  }
  return {
    title: "3. Enqueue → start latency (one at a time, idle worker)",
    headers: ["path", "n", "p50 ms", "p90 ms", "p99 ms", "max ms", "mean ms", "peak RSS"],
    rows,
    notes: [
      `enqueues are one at a time with a random 1–${maxGapMs} ms gap; each waits for (in-process) or does not wait for (cross-process) the previous start.`,
      "cross-process wake-up is the worker's change watcher polling SQLite's data_version every 5 ms (ROSTER_WATCH_MS), then one claim transaction.",
      "'enqueue call' rows are the enqueue's own cost: prepare, group commit and its fsync at synchronous=FULL."
    ],
    checks
  }
}

if (import.meta.main) report([await run()])
