/**
 * Drain rate: bulk-enqueue N executions with `roster enqueue <job> --ndjson -`, then
 * time one `roster worker --concurrency 50 --exit-when-idle` process until it exits.
 *
 * The drain rate is N / (last finishedAt − first startedAt), read from the store, so
 * process start-up and the idle-exit tail are not counted; the worker's wall time
 * (which includes them) is reported beside it. Each size runs for `demo/noop` (one log
 * line per run, as the black-box contract says) and for the silent `bench/noop`, so
 * the cost of logging shows. At the largest size two comparison runs follow, which say
 * what bounds the drain: the same at synchronous=NORMAL (no fsync per commit) and at
 * concurrency 200 (bigger claim and group-commit batches).
 *
 * Env: BENCH_N (sizes, default 10000,100000), BENCH_CONCURRENCY (default 50),
 * BENCH_DRAIN_JOBS (default demo/noop,bench/noop), BENCH_DRAIN_EXTRA (comparison runs
 * at the largest size as job:sync:concurrency, default
 * demo/noop:NORMAL:50,demo/noop:FULL:200; empty for none).
 */
import { benchApps, count, demoApps, enqueueBulk, envInt, mb, ms, openReader, progress, rate, report, runRoster, type Section, tempDb, windowRate } from "./support.ts"

const sizes = (process.env.BENCH_N ?? "10000,100000").split(",").map((s) => Number(s.trim().replace(/_/g, "")))
const concurrency = envInt("BENCH_CONCURRENCY", 50)
const jobs = (process.env.BENCH_DRAIN_JOBS ?? "demo/noop,bench/noop").split(",").map((s) => s.trim())
const extras = (process.env.BENCH_DRAIN_EXTRA ?? `demo/noop:NORMAL:${concurrency},demo/noop:FULL:200`)
  .split(",").map((s) => s.trim()).filter((s) => s.length > 0)
  .map((s) => {
    const [job = "demo/noop", sync = "FULL", c = String(concurrency)] = s.split(":")
    if (sync !== "FULL" && sync !== "NORMAL") throw new Error(`BENCH_DRAIN_EXTRA: synchronous must be FULL or NORMAL, got ${sync}`)
    return { job, sync: sync as Sync, concurrency: Number(c) }
  })

type Sync = "FULL" | "NORMAL"
const target = 30_000

interface DrainResult {
  readonly job: string
  readonly sync: Sync
  readonly concurrency: number
  readonly n: number
  readonly enqueueMs: number
  readonly drained: number
  readonly drainMs: number
  readonly drainRate: number
  readonly wallMs: number
  readonly cpuMs: number
  readonly peakRssMb: number
  readonly firstTenth: number
  readonly lastTenth: number
}

/** One drain: a fresh database, a bulk enqueue, one worker until idle. */
export const drainOnce = async (job: string, n: number, sync: Sync = "FULL", workers = concurrency): Promise<DrainResult> => {
  const tmp = tempDb("drain")
  try {
    const appsDir = job.startsWith("bench/") ? benchApps : demoApps
    const common = { db: tmp.db, appsDir, stderrFile: `${tmp.dir}/enqueue.log`, env: { ROSTER_SYNCHRONOUS: sync } }
    const enqueued = await enqueueBulk(job, n, common)
    progress(`drain ${job} n=${n} ${sync} c=${workers}: enqueued in ${ms(enqueued.wallMs)} ms; starting worker`)
    const worker = await runRoster(["worker", "--concurrency", String(workers), "--exit-when-idle"], { ...common, stderrFile: `${tmp.dir}/worker.log` })
    const reader = openReader(tmp.db)
    const rows = reader
      .query<{ started_at: number; finished_at: number }, []>(
        "SELECT started_at, finished_at FROM roster_executions WHERE state = 'succeeded' ORDER BY finished_at"
      )
      .all()
    reader.close()
    let first = Infinity
    for (const r of rows) if (r.started_at < first) first = r.started_at
    const last = rows[rows.length - 1]?.finished_at ?? first
    const drainMs = last - first
    const tenth = Math.max(1, Math.floor(rows.length / 10))
    return {
      job,
      sync,
      concurrency: workers,
      n,
      enqueueMs: enqueued.wallMs,
      drained: rows.length,
      drainMs,
      drainRate: (rows.length / Math.max(1, drainMs)) * 1000,
      wallMs: worker.wallMs,
      cpuMs: worker.cpuMs,
      peakRssMb: worker.peakRssMb,
      firstTenth: windowRate(rows, 0, tenth),
      lastTenth: windowRate(rows, rows.length - tenth, rows.length)
    }
  } finally {
    tmp.cleanup()
  }
}

/** Runs every (job, size) case and returns the section. */
export const run = async (): Promise<Section> => {
  const results: Array<DrainResult> = []
  const cases = sizes.flatMap((n) => jobs.map((job) => ({ job, n, sync: "FULL" as Sync, concurrency })))
  const largest = Math.max(...sizes)
  for (const e of extras) cases.push({ ...e, n: largest })
  for (const c of cases) {
    const r = await drainOnce(c.job, c.n, c.sync, c.concurrency)
    progress(`drain ${c.job} n=${c.n} ${c.sync} c=${c.concurrency}: ${rate(r.drainRate)} jobs/s`)
    results.push(r)
  }
  const demo = results.filter((r) => r.job === "demo/noop" && r.sync === "FULL" && r.concurrency === concurrency)
  const best = (rs: ReadonlyArray<DrainResult>) => rs.reduce((a, r) => (r.n > a.n ? r : a))
  return {
    title: `1. Drain: one worker process (roster worker --exit-when-idle)`,
    headers: ["job", "synchronous", "concurrency", "N", "CLI bulk enqueue", "drained", "drain rate (jobs/s)", "first 10% / last 10% (jobs/s)", "worker wall", "worker CPU", "worker peak RSS"],
    rows: results.map((r) => [
      r.job,
      r.sync === "FULL" ? "FULL" : "NORMAL (comparison)",
      String(r.concurrency),
      count(r.n),
      `${ms(r.enqueueMs)} ms (${rate((r.n / r.enqueueMs) * 1000)}/s)`,
      count(r.drained),
      rate(r.drainRate),
      `${rate(r.firstTenth)} / ${rate(r.lastTenth)}`,
      `${ms(r.wallMs)} ms`,
      `${ms(r.cpuMs)} ms (${Math.round((r.cpuMs / r.wallMs) * 100)}%)`,
      mb(r.peakRssMb)
    ]),
    notes: [
      "drain rate = drained / (last finishedAt − first startedAt), from the store (ms timestamps); worker wall adds process start-up (~0.4 s: Bun, Effect, discovery, migrations) and the --exit-when-idle tail (≤100 ms poll + shutdown).",
      "CLI bulk enqueue is the whole `roster enqueue --ndjson -` process (start-up included).",
      "worker CPU is user+system time of the worker process; ~100% means one core saturated (JS is single-threaded; SQLite runs on the same thread)."
    ],
    checks: demo.length === 0 ? [] : [{
      target: `drain demo/noop at concurrency ${concurrency} ≥ ${rate(target)} jobs/s`,
      measured: demo.map((r) => `${rate(r.drainRate)}/s @ ${count(r.n)}`).join(", "),
      met: best(demo).drainRate >= target
    }]
  }
}

if (import.meta.main) report([await run()])
