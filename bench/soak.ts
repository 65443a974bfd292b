/**
 * Soak: N (default 1,000,000) `demo/noop` executions through ONE real
 * `roster worker --concurrency 50 --exit-when-idle` process. While it runs, every
 * second: the worker's RSS (VmRSS from /proc/<pid>/status), its CPU time
 * (/proc/<pid>/stat), the queued count (a read-only connection, through the claim
 * index) and the machine's 1-minute load average. The queue is filled first with
 * `roster enqueue --ndjson -`, like bench/drain.ts.
 *
 * Reported: RSS at every 10% of progress; RSS median, max and slope (MiB per 100k jobs,
 * least squares over the samples) after warm-up, warm-up being the first
 * BENCH_SOAK_WARMUP (default 10%) of the jobs; and the drain rate with the backlog near
 * N (first 10k and first 100k completions) against a fresh run with a 10k backlog (same
 * worker flags) and against the last 10k of the long run itself.
 *
 * Not in the default `npm run bench` set (it takes minutes): `BENCH_ONLY=soak npm run bench`,
 * or `bun bench/soak.ts [--jobs 100000]`.
 *
 * Env: BENCH_SOAK_N (default 1000000; `--jobs N` overrides), BENCH_SOAK_SMALL (the
 * fresh small-backlog run, default 10000; 0 skips it), BENCH_CONCURRENCY (default 50),
 * BENCH_SOAK_WARMUP (fraction of the jobs, default 0.1), BENCH_SOAK_CSV (also write every
 * sample to this file).
 */
import { readFileSync, writeFileSync } from "node:fs"
import { count, demoApps, enqueueBulk, envInt, load1, mb, median, ms, openReader, progress, rate, readProc, report, type Section, slope, spawnRoster, tempDb, windowRate } from "./support.ts"

const jobsFlag = process.argv.indexOf("--jobs")
const n = jobsFlag > 0 ? Number(process.argv[jobsFlag + 1]?.replace(/_/g, "")) : envInt("BENCH_SOAK_N", 1_000_000)
if (!Number.isInteger(n) || n <= 0) throw new Error(`--jobs must be a positive integer, got ${process.argv[jobsFlag + 1]}`)
const small = envInt("BENCH_SOAK_SMALL", 10_000)
/** The long run's first window, compared with the fresh small run (same size: both a cold worker). */
const firstWindow = small > 0 ? small : 10_000
const concurrency = envInt("BENCH_CONCURRENCY", 50)
const warmupFraction = Number(process.env.BENCH_SOAK_WARMUP ?? "0.1")
const job = "demo/noop"

/** One per-second observation of the worker. */
interface Sample {
  /** Seconds since the worker was spawned. */
  readonly t: number
  readonly rssMb: number
  readonly queued: number
  /** User + system CPU time of the worker so far, ms. */
  readonly cpuMs: number
  readonly load1: number
}


interface SoakRun {
  readonly n: number
  readonly enqueueMs: number
  readonly samples: ReadonlyArray<Sample>
  readonly wallMs: number
  readonly peakRssMb: number
  readonly drained: number
  /** Drain rates (jobs/s) from the store's timestamps. */
  readonly all: number
  /** The first `firstWindow` completions. */
  readonly firstSmall: number
  readonly first100k: number
  /** Completions 100k–200k: a warm worker with the backlog still near N. */
  readonly second100k: number
  readonly last10k: number
  readonly dbMb: number
}

/** One run: a fresh database with `size` queued, one worker until idle, sampled every second. */
const soakOnce = async (size: number): Promise<SoakRun> => {
  const tmp = tempDb("soak")
  try {
    const common = { db: tmp.db, appsDir: demoApps, stderrFile: `${tmp.dir}/enqueue.log` }
    const enqueued = await enqueueBulk(job, size, common)
    progress(`soak ${count(size)}: enqueued in ${ms(enqueued.wallMs)} ms; starting one worker`)
    const reader = openReader(tmp.db)
    const queued = reader.query<{ n: number }, []>("SELECT count(*) AS n FROM roster_executions WHERE state = 'queued'")
    const worker = spawnRoster(["worker", "--concurrency", String(concurrency), "--exit-when-idle"], { ...common, stderrFile: `${tmp.dir}/worker.log` })
    let exited = false
    void worker.done.then(() => (exited = true))
    const samples: Array<Sample> = []
    let nextAt = worker.startedAt
    while (!exited) {
      const proc = readProc(worker.pid)
      if (proc === undefined) break
      // Right after spawn the child has not exec'd Bun yet (VmRSS of a few kB): not a sample.
      if (proc.rssMb < 1) {
        await Bun.sleep(10)
        continue
      }
      samples.push({ t: (performance.now() - worker.startedAt) / 1000, ...proc, queued: queued.get()?.n ?? NaN, load1: load1() })
      if (samples.length % 10 === 0) {
        const s = samples[samples.length - 1]!
        progress(`soak ${count(size)}: ${Math.round(s.t)} s, ${count(size - s.queued)} done, RSS ${mb(s.rssMb)}, load ${s.load1}`)
      }
      nextAt += 1000
      await Promise.race([Bun.sleep(Math.max(0, nextAt - performance.now())), worker.done])
    }
    const result = await worker.done
    if (result.exitCode !== 0) throw new Error(`worker exited ${result.exitCode}:\n${readFileSync(`${tmp.dir}/worker.log`, "utf8").slice(-2000)}`)
    const rows = reader
      .query<{ started_at: number; finished_at: number }, []>(
        "SELECT started_at, finished_at FROM roster_executions WHERE state = 'succeeded' ORDER BY finished_at"
      )
      .all()
    reader.close()
    const window = (from: number, to: number) => (rows.length >= to && from >= 0 ? windowRate(rows, from, to) : NaN)
    return {
      n: size,
      enqueueMs: enqueued.wallMs,
      samples,
      wallMs: result.wallMs,
      peakRssMb: result.peakRssMb,
      drained: rows.length,
      all: window(0, rows.length),
      firstSmall: window(0, Math.min(firstWindow, rows.length)),
      first100k: window(0, 100_000),
      second100k: window(100_000, 200_000),
      last10k: window(rows.length - 10_000, rows.length),
      dbMb: (Bun.file(tmp.db).size + Bun.file(`${tmp.db}-wal`).size) / 2 ** 20
    }
  } finally {
    tmp.cleanup()
  }
}

const pct = (a: number, b: number) => (Number.isFinite(a / b) ? `${Math.round((a / b) * 100)}%` : "n/a")

/** RSS over time at every 10% of progress. */
const rssSection = (r: SoakRun): Section => {
  const done = (s: Sample) => r.n - s.queued
  const rows: Array<Array<string>> = []
  let prev: Sample | undefined
  const last = r.samples[r.samples.length - 1]
  for (let k = 0; k <= 11; k++) {
    // k = 0 is the first sample (start-up); then the first sample at or past k × 10%; then the last one.
    const s = k === 0 ? r.samples[0] : k === 11 ? last : r.samples.find((x) => done(x) >= (k / 10) * r.n)
    if (s === undefined || s === prev) continue
    const dt = prev ? s.t - prev.t : NaN
    rows.push([
      k === 0 ? "start-up" : k === 11 ? "last sample" : `${k * 10}%`,
      s.t.toFixed(0),
      count(done(s)),
      count(s.queued),
      mb(s.rssMb),
      prev ? rate((done(s) - done(prev)) / dt) : "",
      prev ? `${Math.round(((s.cpuMs - prev.cpuMs) / (dt * 1000)) * 100)}%` : "",
      prev ? rate(((done(s) - done(prev)) / (s.cpuMs - prev.cpuMs)) * 1000) : "",
      s.load1.toFixed(2)
    ])
    prev = s
  }
  const warmAt = warmupFraction * r.n
  const warm = r.samples.filter((s) => done(s) >= warmAt)
  const rss = warm.map((s) => s.rssMb)
  const perJob = slope(warm.map(done), rss)
  const loads = r.samples.map((s) => s.load1)
  const flatLimit = 2
  const growth = perJob * 100_000
  return {
    title: `Soak: RSS of one worker over ${count(r.n)} × ${job} (concurrency ${concurrency}, sampled every second)`,
    headers: ["progress", "t (s)", "done", "queued", "worker RSS", "jobs/s since previous row", "worker CPU since previous row", "jobs per worker CPU-second", "load (1 min)"],
    rows,
    notes: [
      `after warm-up (the first ${Math.round(warmupFraction * 100)}% = ${count(Math.round(warmAt))} jobs; ${warm.length} samples): RSS median ${mb(median(rss))}, min ${mb(Math.min(...rss))}, max ${mb(Math.max(...rss))}; slope ${growth.toFixed(2)} MiB per 100k jobs (least squares over those samples, ≈ ${(perJob * 2 ** 20).toFixed(1)} bytes/job${warm.length < 10 ? "; too few samples for a trend" : ""})`,
      `whole run: ${r.samples.length} samples, ${(r.wallMs / 1000).toFixed(0)} s wall, peak RSS ${mb(r.peakRssMb)} (getrusage), ${count(r.drained)} succeeded, db + wal ${mb(r.dbMb)} at the end; bulk enqueue ${ms(r.enqueueMs)} ms`,
      `load average (1 min) during the run: min ${Math.min(...loads).toFixed(2)}, median ${median(loads).toFixed(2)}, max ${Math.max(...loads).toFixed(2)} on ${navigator.hardwareConcurrency} cores`,
      "done = N − queued (executions claimed but not yet recorded, ≤ a claim batch, count as done); worker CPU = user + system time / wall time over the row's interval (100% = one core); jobs per worker CPU-second is the drain with the share of the CPU the machine gave the worker taken out."
    ],
    // A slope through fewer than 10 one-second samples says nothing about a trend.
    checks: warm.length < 10 ? [] : [{
      target: `worker RSS flat after warm-up (slope ≤ ${flatLimit} MiB per 100k jobs, ≈ 21 bytes/job)`,
      measured: `${growth.toFixed(2)} MiB per 100k jobs; median ${mb(median(rss))}, max ${mb(Math.max(...rss))}`,
      met: growth <= flatLimit
    }]
  }
}

/** Drain rate with the backlog near N against near 10k. */
const drainSection = (big: SoakRun, fresh: SoakRun | undefined): Section => {
  const N = count(big.n)
  const rows = [
    [`${N} run: first ${count(firstWindow)}`, `${N} → ${count(big.n - firstWindow)}`, rate(big.firstSmall), "cold"],
    ...(big.n > 100_000 ? [[`${N} run: first 100k`, `${N} → ${count(big.n - 100_000)}`, rate(big.first100k), "cold, then warm"]] : []),
    ...(big.n >= 200_000 ? [[`${N} run: 100k–200k`, `${count(big.n - 100_000)} → ${count(big.n - 200_000)}`, rate(big.second100k), "warm"]] : []),
    [`${N} run: last 10k`, "10,000 → 0", rate(big.last10k), "warm"],
    [`${N} run: all`, `${N} → 0`, rate(big.all), "cold, then warm"]
  ]
  if (fresh) rows.push([`fresh ${count(fresh.n)} run: all`, `${count(fresh.n)} → 0`, rate(fresh.all), "cold"])
  const ratios = [
    ...(fresh ? [`first ${count(firstWindow)} at ${N} / fresh ${count(fresh.n)} (both a cold worker: like for like) = ${pct(big.firstSmall, fresh.all)}`] : []),
    ...(fresh && big.n > 100_000
      ? [`first 100k at ${N} / fresh ${count(fresh.n)} (the issue's comparison; the 100k window is mostly warm, the fresh run all cold) = ${pct(big.first100k, fresh.all)}`]
      : []),
    ...(big.n >= 200_000 ? [`100k–200k / last 10k of the same process (both warm, ${N} vs 10k queued) = ${pct(big.second100k, big.last10k)}`] : [])
  ]
  const checks = fresh
    ? [{
      target: `drain with ${N} queued ≥ 80% of drain with ${count(fresh.n)} queued (first ${count(firstWindow)} vs fresh run, both cold)`,
      measured: `${pct(big.firstSmall, fresh.all)} (${rate(big.firstSmall)} vs ${rate(fresh.all)} jobs/s)`,
      met: big.firstSmall / fresh.all >= 0.8
    }]
    : []
  return {
    title: `Soak: drain rate at a ${N} vs a ${fresh ? count(fresh.n) : "10,000"} backlog (one worker, concurrency ${concurrency}, ${job})`,
    headers: ["window (completions)", "queued during the window", "drain (jobs/s)", "worker JIT"],
    rows,
    notes: [
      "rate over a window of completions = completions / (last finishedAt − first startedAt, or the previous completion's finishedAt), from the store.",
      ...(ratios.length > 0 ? [`ratios: ${ratios.join("; ")}.`] : []),
      `the fresh run's worker: peak RSS ${fresh ? mb(fresh.peakRssMb) : "n/a"}; load average (1 min) ${fresh ? `${fresh.samples[0]?.load1.toFixed(2)} → ${fresh.samples[fresh.samples.length - 1]?.load1.toFixed(2)}` : "n/a"}.`
    ],
    checks
  }
}

/** The long run, then the fresh small-backlog run; returns both sections. */
export const run = async (): Promise<ReadonlyArray<Section>> => {
  const big = await soakOnce(n)
  progress(`soak ${count(n)}: ${rate(big.all)} jobs/s overall`)
  if (process.env.BENCH_SOAK_CSV) {
    writeFileSync(process.env.BENCH_SOAK_CSV, ["t_s,rss_mib,queued,cpu_ms,load1", ...big.samples.map((s) => `${s.t.toFixed(2)},${s.rssMb.toFixed(1)},${s.queued},${Math.round(s.cpuMs)},${s.load1}`)].join("\n") + "\n")
  }
  const fresh = small > 0 ? await soakOnce(small) : undefined
  if (fresh) progress(`soak ${count(small)}: ${rate(fresh.all)} jobs/s`)
  return [rssSection(big), drainSection(big, fresh)]
}

if (import.meta.main) report(await run())
