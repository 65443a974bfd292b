/**
 * Does a big backlog slow the drain? For each backlog size B (default 10k, 60k, 1M):
 * bulk-enqueue B `demo/noop` executions in-process (`enqueueMany` × 10k, timed), then
 * run one `roster worker --concurrency 50` process until it has finished the first
 * min(B, 50k) executions, stop it (SIGTERM), and compute from the store the drain
 * rate over the first 10k and the first 50k completions. With B = 60k, the first 50k
 * drain with at least 10k still queued behind them; with B = 1M, with ≥ 950k behind.
 *
 * Beside it, the raw Store cost at that backlog (no runtime): 100 cycles of claim 50 +
 * record 50 outcomes through the SQLite Store, µs per job, so a slowdown can be pinned
 * on SQLite or on the runtime.
 *
 * Env: BENCH_BACKLOGS (default 10000,60000,1000000), BENCH_CONCURRENCY (default 50).
 */
import { Effect, Layer, Logger } from "effect"
import { Roster } from "../src/index.ts"
import { Client } from "../src/runtime/Client.ts"
import { layerSqlite } from "../src/store/sqlite/SqliteStore.ts"
import { Store } from "../src/store/Store.ts"
import { count, demoApps, envInt, envInts, mb, ms, openReader, progress, rate, report, sampleRss, type Section, spawnRoster, tempDb, windowRate } from "./support.ts"

const backlogs = envInts("BENCH_BACKLOGS", [10_000, 60_000, 1_000_000])
const concurrency = envInt("BENCH_CONCURRENCY", 50)
const windows = [10_000, 50_000] as const
const chunk = 10_000
const job = "demo/noop"

const logToStderr = Logger.layer([Logger.withConsoleError(Logger.formatLogFmt)])

interface BacklogResult {
  readonly backlog: number
  readonly enqueueMs: number
  readonly enqueueFirstTenth: number
  readonly enqueueLastTenth: number
  readonly enqueueRssMb: number
  readonly drained: number
  readonly rates: ReadonlyArray<number>
  readonly workerRssMb: number
  readonly storeUsPerJob: number
  readonly dbMb: number
}

/** Bulk-enqueues `n` in chunks; returns total ms and the rate of the first and last tenth. */
const enqueueBacklog = (db: string, n: number) =>
  Effect.gen(function*() {
    const client = yield* Client
    const chunkMs: Array<number> = []
    const rss = sampleRss()
    const started = performance.now()
    for (let i = 0; i < n; i += chunk) {
      const items = []
      for (let j = i; j < Math.min(n, i + chunk); j++) items.push({ job, payload: { n: j } })
      const t0 = performance.now()
      yield* client.enqueueMany(items)
      chunkMs.push(performance.now() - t0)
    }
    const totalMs = performance.now() - started
    const k = Math.max(1, Math.floor(chunkMs.length / 10))
    const sum = (xs: ReadonlyArray<number>) => xs.reduce((a, b) => a + b, 0)
    const size = Math.min(chunk, n)
    return {
      totalMs,
      firstTenth: ((k * size) / sum(chunkMs.slice(0, k))) * 1000,
      lastTenth: ((k * size) / sum(chunkMs.slice(-k))) * 1000,
      rssMb: rss.stop()
    }
  }).pipe(Effect.provide(Roster.layer({ db, appsDir: demoApps }).pipe(Layer.provideMerge(logToStderr))))

/** Raw Store cost at the current backlog: claim 50, record 50 successes, 100 times. */
const storeCost = (db: string) =>
  Effect.gen(function*() {
    const store = yield* Store
    let jobs = 0
    let elapsed = 0
    for (let i = 0; i < 100; i++) {
      const now = Date.now()
      const t0 = performance.now()
      const claimed = yield* store.executionsClaim({ queue: "default", jobs: [job], workerId: "bench-probe", limit: 50, now, leaseMs: 30_000 })
      if (claimed.length === 0) break
      yield* store.executionsFinish(claimed.map((e) => ({ kind: "succeeded" as const, id: e.id, workerId: "bench-probe", attempt: e.attempt, now, startedAt: now, result: "{}" })))
      elapsed += performance.now() - t0
      jobs += claimed.length
    }
    return jobs === 0 ? NaN : (elapsed / jobs) * 1000
  }).pipe(Effect.provide(layerSqlite({ path: db })))

/** One backlog size. */
const backlogOnce = async (backlog: number): Promise<BacklogResult> => {
  const tmp = tempDb("backlog")
  try {
    progress(`backlog ${count(backlog)}: enqueueing`)
    const enq = await Effect.runPromise(enqueueBacklog(tmp.db, backlog))
    progress(`backlog ${count(backlog)}: enqueued in ${ms(enq.totalMs)} ms; draining`)
    const target = Math.min(backlog, windows[1])
    const reader = openReader(tmp.db)
    // Progress is one row's state: the execution at position target + concurrency in claim
    // order. With at most `concurrency` in flight, every one before it has finished once it
    // has. (Counting the queued rows instead scanned up to 1M index entries every 100 ms in
    // this process, beside the worker on 2 cores, and held the drain of the 1M backlog back.)
    const stopAt = Math.min(backlog, target + concurrency)
    const marker = reader.query<{ id: string }, [number]>(
      "SELECT id FROM roster_executions INDEXED BY roster_executions_claim WHERE state IN ('queued','waiting') ORDER BY queue, priority DESC, run_at, id LIMIT 1 OFFSET ?"
    ).get(stopAt - 1)!.id
    const markerState = reader.query<{ state: string }, [string]>("SELECT state FROM roster_executions WHERE id = ?")
    const worker = spawnRoster(["worker", "--concurrency", String(concurrency)], { db: tmp.db, appsDir: demoApps, stderrFile: `${tmp.dir}/worker.log` })
    const deadline = Date.now() + 300_000
    while (markerState.get(marker)?.state !== "succeeded" && Date.now() < deadline) await Bun.sleep(100)
    // The last claimed batch may still be running: give it a moment to finish before SIGTERM.
    await Bun.sleep(200)
    worker.stop()
    const w = await worker.done
    const rows = reader
      .query<{ started_at: number; finished_at: number }, []>(
        "SELECT started_at, finished_at FROM roster_executions WHERE state = 'succeeded' ORDER BY finished_at"
      )
      .all()
    reader.close()
    const dbMb = (Bun.file(tmp.db).size + Bun.file(`${tmp.db}-wal`).size) / 2 ** 20
    const storeUsPerJob = backlog - rows.length >= 5_000 ? await Effect.runPromise(storeCost(tmp.db)) : NaN
    return {
      backlog,
      enqueueMs: enq.totalMs,
      enqueueFirstTenth: enq.firstTenth,
      enqueueLastTenth: enq.lastTenth,
      enqueueRssMb: enq.rssMb,
      drained: rows.length,
      // A backlog smaller than a window is measured over all of it.
      rates: windows.map((w, i) => {
        const n = i === 0 ? Math.min(w, backlog) : w
        return rows.length >= n ? windowRate(rows, 0, n) : NaN
      }),
      workerRssMb: w.peakRssMb,
      storeUsPerJob,
      dbMb
    }
  } finally {
    tmp.cleanup()
  }
}

/** Runs every backlog size and returns the section. */
export const run = async (): Promise<Section> => {
  const results: Array<BacklogResult> = []
  for (const b of backlogs) {
    const r = await backlogOnce(b)
    progress(`backlog ${count(b)}: ${r.rates.map(rate).join(" / ")} jobs/s`)
    results.push(r)
  }
  const small = results.find((r) => r.backlog === Math.min(...backlogs))
  const large = results.find((r) => r.backlog === Math.max(...backlogs))
  const mid = results.find((r) => r.backlog >= windows[1] + 10_000 && r.backlog < Math.max(...backlogs))
  const checks = []
  const notes = [
    "drain rate over the first W completions = W / (W-th finishedAt − first startedAt), from the store; it includes the worker's JIT warm-up, equally for every backlog.",
    "store µs/job: 100 × (claim 50 + record 50 successes) through the SQLite Store right after the drain, no runtime: the part of the per-job cost that a backlog could slow down.",
    "bulk enqueue first/last 10%: rate of the first and last tenth of the 10k chunks (does a growing table slow inserts?)."
  ]
  if (small && large && small !== large) {
    const ratio10 = large.rates[0]! / small.rates[0]!
    checks.push({
      target: `drain at ${count(large.backlog)} backlog ≥ 80% of drain at ${count(small.backlog)} (first 10k)`,
      measured: `${Math.round(ratio10 * 100)}% (${rate(large.rates[0]!)} vs ${rate(small.rates[0]!)} jobs/s)`,
      met: ratio10 >= 0.8
    })
    if (mid) {
      const ratio50 = large.rates[1]! / mid.rates[1]!
      checks.push({
        target: `drain at ${count(large.backlog)} ≥ 80% of drain at ${count(mid.backlog)} (first 50k, ≥10k behind)`,
        measured: `${Math.round(ratio50 * 100)}% (${rate(large.rates[1]!)} vs ${rate(mid.rates[1]!)} jobs/s)`,
        met: ratio50 >= 0.8
      })
    }
  }
  return {
    title: `4. Backlog: drain rate vs queued backlog (one worker, concurrency ${concurrency}, ${job})`,
    headers: ["backlog", "bulk enqueue", "enqueue first / last 10% (/s)", "enqueue peak RSS", "db + wal", "drain first 10k or all (jobs/s)", "drain first 50k (jobs/s)", "store µs/job", "worker peak RSS"],
    rows: results.map((r) => [
      count(r.backlog),
      `${ms(r.enqueueMs)} ms (${rate((r.backlog / r.enqueueMs) * 1000)}/s)`,
      `${rate(r.enqueueFirstTenth)} / ${rate(r.enqueueLastTenth)}`,
      mb(r.enqueueRssMb),
      mb(r.dbMb),
      rate(r.rates[0]!),
      rate(r.rates[1]!),
      Number.isFinite(r.storeUsPerJob) ? r.storeUsPerJob.toFixed(1) : "n/a",
      mb(r.workerRssMb)
    ]),
    notes,
    checks
  }
}

if (import.meta.main) report([await run()])
