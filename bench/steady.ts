/**
 * Steady load: work arriving while a worker runs it, for minutes. One
 * `roster worker --concurrency 50` process serves the demo app while this process, the
 * app's side, enqueues through `Roster.open` at a fixed rate: a call every 20 ms with
 * RATE / 50 items, of which
 * - 94% demo/noop (its handler logs a line, so the LogSink writes one a job),
 * - 3% demo/noop due 50 ms later (the Dispatcher's timed wake-ups),
 * - 2% demo/flaky failing once, then succeeding on its retry 100 ms later,
 * - 1% demo/broken, failing for good.
 * Every second: the worker's RSS and CPU (/proc) and the backlog (queued and waiting,
 * through the claim index). After SECONDS the producer stops, the worker finishes what is
 * left, and the store must show every enqueued execution ended as its Job says: the
 * broken ones failed, every other one succeeded. Then the worker gets SIGTERM and must
 * exit 0.
 *
 * This is the load under which a Dispatcher's mailbox grew by one entry per enqueue
 * commit (fixed in the twenty-fourth pass): memory that only grows while work keeps
 * arriving, which a drain of a filled queue (bench/soak.ts, bench/backlog.ts) never
 * shows. Reported per store (SQLite; PostgreSQL too when ROSTER_BENCH_PG_URL or
 * ROSTER_TEST_PG_URL is set, in a fresh schema): RSS over time, its median, max and
 * slope after the first fifth of the run, and the enqueue calls' latency meanwhile.
 *
 * Not in the default `npm run bench` set (it takes minutes): `BENCH_ONLY=steady npm run bench`,
 * or `bun bench/steady.ts`.
 *
 * Env: BENCH_STEADY_SECONDS (default 120), BENCH_STEADY_RATE (executions a second,
 * default 4000), BENCH_CONCURRENCY (default 50), BENCH_STEADY_STORES (sqlite,postgres),
 * BENCH_STEADY_WORKERS (worker processes, default 1; RSS and CPU are the first one's).
 */
import { readFileSync } from "node:fs"
import { broken, flaky, noop } from "../examples/demo/apps/demo/jobs.ts"
import { Roster } from "../src/index.ts"
import { freshPgSchema, pgQuery } from "./pg.ts"
import {
  count,
  demoApps,
  envInt,
  load1,
  mb,
  median,
  ms,
  openReader,
  percentiles,
  progress,
  rate,
  readProc,
  report,
  type Section,
  slope,
  spawnRoster,
  tempDb,
  waitForText
} from "./support.ts"

const seconds = envInt("BENCH_STEADY_SECONDS", 120)
const perSecond = envInt("BENCH_STEADY_RATE", 4000)
const concurrency = envInt("BENCH_CONCURRENCY", 50)
const workerCount = Math.max(1, envInt("BENCH_STEADY_WORKERS", 1))
const stores = (process.env.BENCH_STEADY_STORES ?? "sqlite,postgres").split(",").map((s) => s.trim())
const pgBase = process.env.ROSTER_BENCH_PG_URL || process.env.ROSTER_TEST_PG_URL
const tickMs = 20
const perTick = Math.max(1, Math.round((perSecond * tickMs) / 1000))
/** The share of the run before RSS counts (the worker's start-up and warm-up). */
const warmupFraction = 0.2
/** How long the worker may take to finish the backlog once the producer stops. */
const settleMs = 120_000

/** The i-th item of the mix above. */
const itemOf = (i: number) => {
  const m = i % 100
  if (m < 2) return { job: flaky, payload: { failTimes: 1 } }
  if (m < 3) return { job: broken, payload: {} }
  if (m < 6) return { job: noop, payload: { n: i }, options: { delayMs: 50 } }
  return { job: noop, payload: { n: i } }
}
/** How many of the first n items are demo/broken. */
const brokenOf = (n: number) => Math.floor(n / 100) + (n % 100 > 2 ? 1 : 0)

interface Sample {
  /** Seconds since the worker said it was serving. */
  readonly t: number
  readonly rssMb: number
  readonly cpuMs: number
  readonly enqueued: number
  readonly backlog: number
  readonly load1: number
}

interface Target {
  readonly name: string
  readonly db: string
  /** Queued and waiting executions now. */
  readonly backlog: () => Promise<number>
  /** VACUUMs of the executions table so far, by hand (Roster's workers) and by autovacuum (PostgreSQL only). */
  readonly vacuums: () => Promise<string | undefined>
  readonly cleanup: () => Promise<void>
}

const sqliteTarget = (): Target => {
  const tmp = tempDb("steady")
  let reader: ReturnType<typeof openReader> | undefined
  return {
    name: "SQLite",
    db: tmp.db,
    backlog: async () => {
      reader ??= openReader(tmp.db)
      return reader.query<{ n: number }, []>("SELECT count(*) AS n FROM roster_executions WHERE state IN ('queued','waiting')").get()?.n ?? NaN
    },
    vacuums: async () => undefined,
    cleanup: async () => {
      reader?.close()
      tmp.cleanup()
    }
  }
}

const pgTarget = async (base: string): Promise<Target> => {
  const schema = await freshPgSchema(base, "steady")
  return {
    name: "PostgreSQL",
    db: schema.url,
    backlog: async () =>
      Number((await pgQuery<{ n: string }>(schema.url, "SELECT count(*) AS n FROM roster_executions WHERE state IN ('queued','waiting')"))[0]?.n ?? NaN),
    vacuums: async () => {
      const [r] = await pgQuery<{ v: string; av: string }>(
        schema.url,
        "SELECT vacuum_count AS v, autovacuum_count AS av FROM pg_stat_user_tables WHERE relid = 'roster_executions'::regclass"
      )
      return `${r?.v ?? "?"} by Roster's workers (ROSTER_VACUUM_MS ${process.env.ROSTER_VACUUM_MS ?? "default"}), ${r?.av ?? "?"} by autovacuum`
    },
    cleanup: schema.drop
  }
}

/** One run on one store; returns its section. */
const runOn = async (target: Target): Promise<Section> => {
  const logDir = tempDb("steady-logs")
  const logs = Array.from({ length: workerCount }, (_, k) => `${logDir.dir}/worker-${k + 1}.log`)
  // The app's side opens first, so the schema exists before the workers read it.
  const app = await Roster.open({ db: target.db, jobs: [noop, flaky, broken] }, { configDir: false, logger: { level: "Warn" } })
  const workers = logs.map((log) => spawnRoster(["worker", "--concurrency", String(concurrency)], { db: target.db, appsDir: demoApps, stderrFile: log }))
  const worker = workers[0]!
  const stopAll = async () => {
    for (const w of workers) w.stop()
    return Promise.all(workers.map((w) => w.done))
  }
  try {
    for (const log of logs) await waitForText(log, "serving")
    const t0 = performance.now()
    const samples: Array<Sample> = []
    const callMs: Array<number> = []
    let enqueued = 0
    let producing = true
    const producer = (async () => {
      let nextAt = performance.now()
      while (producing) {
        const items = []
        for (let k = 0; k < perTick; k++) items.push(itemOf(enqueued + k))
        const c0 = performance.now()
        await app.enqueueMany(items)
        callMs.push(performance.now() - c0)
        enqueued += items.length
        nextAt += tickMs
        await Bun.sleep(Math.max(0, nextAt - performance.now()))
      }
    })()
    const sample = async () => {
      const proc = readProc(worker.pid)
      if (proc) samples.push({ t: (performance.now() - t0) / 1000, ...proc, enqueued, backlog: await target.backlog(), load1: load1() })
    }
    for (let s = 1; s <= seconds; s++) {
      await Bun.sleep(Math.max(0, t0 + s * 1000 - performance.now()))
      await sample()
      if (s % 15 === 0) {
        const last = samples[samples.length - 1]
        progress(`steady ${target.name}: ${s} s, ${count(enqueued)} enqueued, backlog ${count(last?.backlog ?? NaN)}, worker RSS ${mb(last?.rssMb ?? NaN)}`)
      }
    }
    producing = false
    await producer
    const producedAt = performance.now()
    while ((await target.backlog()) > 0 && performance.now() - producedAt < settleMs) await Bun.sleep(200)
    // Then every execution ended: none running (the last claimed ones are being recorded).
    let counts = await app.count({})
    while (counts.running > 0 && performance.now() - producedAt < settleMs) {
      await Bun.sleep(200)
      counts = await app.count({})
    }
    const settledMs = performance.now() - producedAt
    const vacuums = await target.vacuums()
    const exits = await stopAll()
    const exit = { exitCode: exits.every((e) => e.exitCode === 0) ? 0 : (exits.find((e) => e.exitCode !== 0)?.exitCode ?? null), peakRssMb: exits[0]!.peakRssMb }
    const brokenN = brokenOf(enqueued)
    const expected = { queued: 0, running: 0, waiting: 0, succeeded: enqueued - brokenN, failed: brokenN, cancelled: 0 }
    const allEnded = Object.entries(expected).every(([state, n]) => counts[state as keyof typeof counts] === n)
    return sectionOf(target, samples, callMs, enqueued, counts, expected, allEnded, settledMs, exit.exitCode, exit.peakRssMb, vacuums)
  } catch (error) {
    throw new Error(`${error instanceof Error ? error.message : String(error)}\nworker log:\n${readFileSync(logs[0]!, "utf8").slice(-2000)}`)
  } finally {
    await stopAll()
    await app.close()
    await target.cleanup()
    logDir.cleanup()
  }
}

const sectionOf = (
  target: Target,
  samples: ReadonlyArray<Sample>,
  callMs: ReadonlyArray<number>,
  enqueued: number,
  counts: Record<string, number>,
  expected: Record<string, number>,
  allEnded: boolean,
  settledMs: number,
  exitCode: number | null,
  peakRssMb: number,
  vacuums: string | undefined
): Section => {
  const rows: Array<Array<string>> = []
  let prev: Sample | undefined
  for (let k = 1; k <= 10; k++) {
    const s = samples.find((x) => x.t >= (k / 10) * seconds - 0.5) ?? samples[samples.length - 1]
    if (s === undefined || s === prev) continue
    const dt = prev ? s.t - prev.t : s.t
    const cpu0 = prev?.cpuMs ?? samples[0]!.cpuMs
    rows.push([
      s.t.toFixed(0),
      count(s.enqueued),
      count(s.backlog),
      mb(s.rssMb),
      `${Math.round(((s.cpuMs - cpu0) / (dt * 1000)) * 100)}%`,
      s.load1.toFixed(2)
    ])
    prev = s
  }
  const warm = samples.filter((s) => s.t >= warmupFraction * seconds)
  const rss = warm.map((s) => s.rssMb)
  // RSS saws up and down with each collection; its floor in each 10-second window follows
  // what stays live, so the trend is fitted to the floors.
  const floors: Array<Sample> = []
  for (let i = 0; i + 10 <= warm.length; i += 10) floors.push(warm.slice(i, i + 10).reduce((a, b) => (b.rssMb < a.rssMb ? b : a)))
  const perMinute = slope(floors.map((s) => s.t / 60), floors.map((s) => s.rssMb))
  const perJob = slope(floors.map((s) => s.enqueued), floors.map((s) => s.rssMb))
  const calls = percentiles(callMs)
  const backlogs = samples.map((s) => s.backlog)
  const flatLimit = 2
  return {
    title: `Steady load (${target.name}): ${rate(perSecond)} executions/s enqueued for ${seconds} s while ${workerCount === 1 ? "one worker" : `${workerCount} worker processes`} (concurrency ${concurrency}${workerCount === 1 ? "" : " each; RSS and CPU: the first"}) runs them`,
    headers: ["t (s)", "enqueued", "backlog (queued + waiting)", "worker RSS", "worker CPU since previous row", "load (1 min)"],
    rows,
    notes: [
      `after the first ${Math.round(warmupFraction * 100)}% of the run (${warm.length} one-second samples): worker RSS median ${mb(median(rss))}, min ${mb(Math.min(...rss))}, max ${mb(Math.max(...rss))}; its floor in each 10 s window ${floors.map((s) => Math.round(s.rssMb)).join(", ")} MiB, slope ${perMinute.toFixed(2)} MiB a minute, ${(perJob * 100_000).toFixed(2)} MiB per 100k jobs (least squares over the floors)`,
      `backlog over the run: median ${count(median(backlogs))}, max ${count(Math.max(...backlogs))} (items due 50 ms later count while they wait)`,
      ...(vacuums === undefined ? [] : [`VACUUMs of roster_executions during the run: ${vacuums}`]),
      `enqueue calls of ${perTick} items, ${count(callMs.length)} calls, while the worker ran: p50 ${ms(calls.p50)} ms, p99 ${ms(calls.p99)} ms, max ${ms(calls.max)} ms`,
      `at the end: ${count(enqueued)} enqueued; the store shows ${JSON.stringify(counts)}, expected ${JSON.stringify(expected)}; the rest finished ${ms(settledMs)} ms after the producer stopped; ${workerCount === 1 ? "the worker" : "every worker"} exited ${exitCode} on SIGTERM, peak RSS ${mb(peakRssMb)} (getrusage)`
    ],
    checks: [
      {
        target: `${target.name}: every enqueued execution ended as its Job says, and the worker stopped cleanly`,
        measured: `${allEnded ? "all" : "NOT all"} of ${count(enqueued)}; exit ${exitCode}`,
        met: allEnded && exitCode === 0
      },
      // A slope through fewer than three floors says nothing about a trend.
      ...(floors.length < 3 ? [] : [{
        target: `${target.name}: worker RSS flat under steady load (the floors' slope ≤ ${flatLimit} MiB per 100k jobs)`,
        measured: `${(perJob * 100_000).toFixed(2)} MiB per 100k jobs; median ${mb(median(rss))}, max ${mb(Math.max(...rss))}`,
        met: perJob * 100_000 <= flatLimit
      }])
    ]
  }
}

/** The runs on each store named in BENCH_STEADY_STORES that this machine has. */
export const run = async (): Promise<ReadonlyArray<Section>> => {
  const sections: Array<Section> = []
  if (stores.includes("sqlite")) sections.push(await runOn(sqliteTarget()))
  if (stores.includes("postgres")) {
    if (pgBase) sections.push(await runOn(await pgTarget(pgBase)))
    else progress("steady: PostgreSQL skipped: set ROSTER_BENCH_PG_URL or ROSTER_TEST_PG_URL")
  }
  return sections
}

if (import.meta.main) report(await run())
