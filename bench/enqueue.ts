/**
 * Enqueue rate in-process through `Roster.layer` and the Client (Effect API), three
 * ways, each on a fresh database:
 * - sequential: one `enqueue` at a time, each awaited (one commit, one fsync, each);
 * - concurrent: `Effect.forEach` over N payloads with concurrency 100, so the Recorder's
 *   group commit shares each transaction among everyone waiting;
 * - bulk: `enqueueMany` in chunks of 10,000 (one transaction per chunk).
 * Each reports throughput, per-call latency percentiles, rows per insert transaction
 * (from the timing Store), the rate at the start vs the end of the run (is the growing
 * table slowing it down?) and this process's peak RSS during the phase.
 *
 * Env: BENCH_ENQUEUE_SEQ_N (default 5000), BENCH_ENQUEUE_N (concurrent, default
 * 100000), BENCH_ENQUEUE_BULK_N (default 500000), BENCH_ENQUEUE_CONCURRENCY (default 100).
 */
import { Effect, Layer, Logger } from "effect"
import { Client, Roster, type RosterConfig } from "../src/index.ts"
import { install } from "./sqlprofile.ts"
import { count, demoApps, envInt, mb, ms, percentiles, progress, rate, report, sampleRss, type Section, tempDb } from "./support.ts"

const seqN = envInt("BENCH_ENQUEUE_SEQ_N", 5_000)
const concN = envInt("BENCH_ENQUEUE_N", 100_000)
const bulkN = envInt("BENCH_ENQUEUE_BULK_N", 500_000)
const fibers = envInt("BENCH_ENQUEUE_CONCURRENCY", 100)
const chunk = 10_000
const job = "demo/noop"

/** Runtime logs go to stderr as logfmt, like the CLI's, so stdout carries only the table. */
const logToStderr = Logger.layer([Logger.withConsoleError(Logger.formatLogFmt)])

interface ModeResult {
  readonly mode: string
  readonly n: number
  readonly wallMs: number
  /** Per call (one enqueue, or one chunk for bulk), ms. */
  readonly latencies: ReadonlyArray<number>
  readonly rowsPerTx: number
  readonly firstTenth: number
  readonly lastTenth: number
  readonly peakRssMb: number
}

/** Rate of the first and last tenth of a run, from each call's completion time. */
const tenths = (done: ReadonlyArray<number>, rowsPerCall: number, started: number): [number, number] => {
  const sorted = [...done].sort((a, b) => a - b)
  const k = Math.max(1, Math.floor(sorted.length / 10))
  const first = ((k * rowsPerCall) / (sorted[k - 1]! - started)) * 1000
  const last = ((k * rowsPerCall) / (sorted[sorted.length - 1]! - sorted[sorted.length - 1 - k]!)) * 1000
  return [first, last]
}

/** Runs one mode on a fresh database. */
const runMode = async (mode: "sequential" | "concurrent" | "bulk", n: number): Promise<ModeResult> => {
  const tmp = tempDb(`enqueue-${mode}`)
  try {
    const config: RosterConfig = { db: tmp.db, appsDir: demoApps }
    // Transactions only: timing each insert statement would slow the bulk path it measures.
    const profile = install({ statements: false })
    const program = Effect.gen(function*() {
      const client = yield* Client
      // Warm up (JIT, prepared statements) on a few rows, outside the measurement.
      yield* Effect.forEach(Array.from({ length: 200 }, (_, i) => i), (i) => client.enqueue(job, { n: -i }), { concurrency: 10, discard: true })
      profile.reset()
      const latencies: Array<number> = []
      const done: Array<number> = []
      const rss = sampleRss()
      const started = performance.now()
      const timed = <A, E>(effect: Effect.Effect<A, E>) =>
        Effect.suspend(() => {
          const t0 = performance.now()
          return Effect.tap(effect, () =>
            Effect.sync(() => {
              const t1 = performance.now()
              latencies.push(t1 - t0)
              done.push(t1)
            }))
        })
      if (mode === "sequential") {
        for (let i = 0; i < n; i++) yield* timed(client.enqueue(job, { n: i }))
      } else if (mode === "concurrent") {
        yield* Effect.forEach(Array.from({ length: n }, (_, i) => i), (i) => timed(client.enqueue(job, { n: i })), { concurrency: fibers, discard: true })
      } else {
        for (let i = 0; i < n; i += chunk) {
          const items = []
          for (let j = i; j < Math.min(n, i + chunk); j++) items.push({ job, payload: { n: j } })
          yield* timed(client.enqueueMany(items))
        }
      }
      const wallMs = performance.now() - started
      const peakRssMb = rss.stop()
      const [firstTenth, lastTenth] = tenths(done, mode === "bulk" ? chunk : 1, started)
      // Rows per insert transaction (the Recorder's group-commit batch): every transaction
      // during the phase is an enqueue's.
      let transactions = 0
      for (const t of profile.transactions.values()) transactions += t.calls
      return { mode, n, wallMs, latencies, rowsPerTx: n / transactions, firstTenth, lastTenth, peakRssMb } satisfies ModeResult
    })
    return await Effect.runPromise(program.pipe(Effect.provide(Roster.layer(config).pipe(Layer.provideMerge(logToStderr)))))
  } finally {
    tmp.cleanup()
  }
}

/** Runs the three modes and returns the section. */
export const run = async (): Promise<Section> => {
  const results: Array<ModeResult> = []
  for (const [mode, n] of [["sequential", seqN], ["concurrent", concN], ["bulk", bulkN]] as const) {
    if (n === 0) continue
    const r = await runMode(mode, n)
    progress(`enqueue ${mode} n=${n}: ${rate((r.n / r.wallMs) * 1000)}/s`)
    results.push(r)
  }
  const find = (mode: string) => results.find((r) => r.mode === mode)
  const conc = find("concurrent")
  const bulk = find("bulk")
  const checks = []
  if (conc) checks.push({ target: "enqueue concurrent (100 fibers) ≥ 30,000/s", measured: `${rate((conc.n / conc.wallMs) * 1000)}/s`, met: (conc.n / conc.wallMs) * 1000 >= 30_000 })
  if (bulk) checks.push({ target: "enqueue bulk (enqueueMany × 10k) ≥ 200,000/s", measured: `${rate((bulk.n / bulk.wallMs) * 1000)}/s`, met: (bulk.n / bulk.wallMs) * 1000 >= 200_000 })
  return {
    title: `2. Enqueue in-process (Roster.layer + Client, ${job})`,
    headers: ["mode", "N", "rate (/s)", "latency per call p50 / p99 / max (ms)", "rows per insert tx", "first 10% / last 10% (/s)", "peak RSS"],
    rows: results.map((r) => {
      const p = percentiles(r.latencies)
      return [
        r.mode === "concurrent" ? `concurrent (${fibers} fibers)` : r.mode === "bulk" ? `bulk (enqueueMany × ${count(chunk)})` : "sequential (awaited)",
        count(r.n),
        rate((r.n / r.wallMs) * 1000),
        `${ms(p.p50)} / ${ms(p.p99)} / ${ms(p.max)}`,
        r.rowsPerTx.toFixed(1),
        `${rate(r.firstTenth)} / ${rate(r.lastTenth)}`,
        mb(r.peakRssMb)
      ]
    }),
    notes: [
      "every mode commits at synchronous=FULL: an acknowledged enqueue has been fsynced.",
      "bulk latency is per 10,000-row chunk; rows per insert tx is the Recorder's group-commit batch (rows / transactions committed, counted at the driver).",
      "peak RSS is this benchmark process (Bun + Effect + the rows being prepared), sampled every 25 ms."
    ],
    checks
  }
}

if (import.meta.main) report([await run()])
