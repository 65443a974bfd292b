/**
 * Flow control (issue 15): what the limited claim costs and how exactly it holds a limit,
 * on SQLite (a real file, synchronous=FULL) and, when ROSTER_BENCH_PG_URL or
 * ROSTER_TEST_PG_URL is set, on PostgreSQL (a fresh schema per run).
 *
 * 1. Global limit overhead: drain N `flow/noop` through one in-process worker
 *    (`Roster.layer(config, { worker })`, concurrency C) with no limit (plain claim) and
 *    with `globalConcurrency: C` (the limited claim: serialised transaction, live running
 *    count, candidate scan), which never holds anything back. Runs interleave A,B,A,B…
 *    (BENCH_FLOW_REPEAT each); the medians give the overhead.
 * 2. Per-key concurrency: N `flow/keyed` (limit 1 per key) spread round-robin over 1,000
 *    keys; then skewed — every other row on one hot key, the rest round-robin over the
 *    other 999 — so each claim's scan meets the hot key's blocked rows. The skewed row
 *    reports the other keys' drain (first start → last non-hot finish) and the hot key's
 *    own rate once it is alone (one at a time: one claim → run → record cycle each).
 * 3. Rate-limit accuracy: queue `rateLimit` L per period P, a backlog far above it, one
 *    worker (and, with BENCH_FLOW_RATE_PROCS > 0, that many `roster worker` processes)
 *    for S seconds. From the executions' started_at (the claim's `now`, in ms): the most
 *    starts in any window [t, t + P), starts per consecutive window from the first
 *    start, and each start's delay after the earliest moment the limit allowed it given
 *    the starts before it (start k ≥ L: start k−L + P; the first L: the first start).
 *
 * Env: BENCH_FLOW_N (SQLite drains, default 20000), BENCH_FLOW_PG_N (default 10000),
 * BENCH_FLOW_REPEAT (default 3), BENCH_CONCURRENCY (default 50), BENCH_FLOW_KEYS
 * (default 1000), BENCH_FLOW_RATES (limit/periodMs list, default 200/1000,20/1000),
 * BENCH_FLOW_RATE_SECONDS (default 5), BENCH_FLOW_RATE_PROCS (default 3; 0: none),
 * BENCH_FLOW_STORES (default sqlite,postgres), BENCH_FLOW_PARTS (default 1,2,3).
 */
import { Effect, Layer, Logger } from "effect"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Client, Roster } from "../src/index.ts"
import type { RosterConfig } from "../src/index.ts"
import type { QueueInput } from "../src/jobs/QueueConfig.ts"
import { flowKeyed, flowNoop, flowRated } from "./flow-apps/flow/jobs.ts"
import { freshPgSchema, pgQuery } from "./pg.ts"
import { count, envInt, ms, openReader, percentiles, progress, rate, report, root, type Section, spawnWorker, tempDb } from "./support.ts"

const concurrency = envInt("BENCH_CONCURRENCY", 50)
const repeat = Math.max(1, envInt("BENCH_FLOW_REPEAT", 3))
const keys = Math.max(2, envInt("BENCH_FLOW_KEYS", 1000))
const rateSeconds = Math.max(1, envInt("BENCH_FLOW_RATE_SECONDS", 5))
const rateProcs = envInt("BENCH_FLOW_RATE_PROCS", 3)
const rates = (process.env.BENCH_FLOW_RATES ?? "200/1000,20/1000").split(",").map((s) => s.trim()).filter((s) => s.length > 0).map((s) => {
  const [limit, period] = s.split("/").map(Number)
  if (!limit || !period) throw new Error(`BENCH_FLOW_RATES: expected limit/periodMs, got ${s}`)
  return { limit, periodMs: period }
})
const parts = new Set((process.env.BENCH_FLOW_PARTS ?? "1,2,3").split(",").map((s) => s.trim()))
const stores = new Set((process.env.BENCH_FLOW_STORES ?? "sqlite,postgres").split(",").map((s) => s.trim()))
const pgBase = process.env.ROSTER_BENCH_PG_URL || process.env.ROSTER_TEST_PG_URL

/** Runtime logs (a few lines per run) to stderr: stdout carries the tables. */
const logger = Logger.layer([Logger.withConsoleError(Logger.formatLogFmt)])

// ---------------------------------------------------------------------------------------------
// Stores

interface StartRow {
  readonly started: number
  readonly finished: number | null
  readonly job: string
  readonly key: string | null
}

/** One fresh database for one run. */
interface Fresh {
  readonly db: string
  /** Every execution that started, in start order. */
  readonly starts: () => Promise<ReadonlyArray<StartRow>>
  readonly drop: () => Promise<void>
}

interface Backend {
  readonly name: "SQLite" | "PostgreSQL"
  readonly n: number
  readonly fresh: (label: string) => Promise<Fresh>
}

const startsSql = "SELECT started_at, finished_at, job, concurrency_key FROM roster_executions WHERE started_at IS NOT NULL ORDER BY started_at"
type RawStart = { started_at: unknown; finished_at: unknown; job: string; concurrency_key: string | null }
const toStart = (r: RawStart): StartRow => ({
  started: Number(r.started_at),
  finished: r.finished_at === null ? null : Number(r.finished_at),
  job: r.job,
  key: r.concurrency_key
})

const sqlite: Backend = {
  name: "SQLite",
  n: envInt("BENCH_FLOW_N", 20_000),
  fresh: async (label) => {
    const tmp = tempDb(`flow-${label}`)
    return {
      db: tmp.db,
      starts: async () => {
        const reader = openReader(tmp.db)
        try {
          return reader.query<RawStart, []>(startsSql).all().map(toStart)
        } finally {
          reader.close()
        }
      },
      drop: async () => tmp.cleanup()
    }
  }
}

const postgres = (base: string): Backend => ({
  name: "PostgreSQL",
  n: envInt("BENCH_FLOW_PG_N", 10_000),
  fresh: async (label) => {
    const { url, drop } = await freshPgSchema(base, `flow_${label}`)
    return {
      db: url,
      starts: async () => (await pgQuery<RawStart>(url, startsSql)).map(toStart),
      drop
    }
  }
})

// ---------------------------------------------------------------------------------------------
// Running

/** Every flow queue is declared (the Jobs name them); `queues` sets the one a run serves. */
const configOf = (db: string, queues: Record<string, QueueInput>): RosterConfig => ({
  db,
  jobs: [flowNoop, flowKeyed, flowRated],
  queues: { flow: { concurrency }, keyed: { concurrency }, rated: { concurrency }, ...queues }
})

/** Bulk-enqueues through an in-process Client, 10k per enqueueMany. */
const enqueue = async (config: RosterConfig, items: ReadonlyArray<{ job: string; payload: unknown }>) => {
  const t0 = performance.now()
  await Effect.runPromise(Effect.gen(function*() {
    const client = yield* Client
    for (let i = 0; i < items.length; i += 10_000) yield* client.enqueueMany(items.slice(i, i + 10_000))
  }).pipe(Effect.provide(Roster.layer(config, { configDir: false }).pipe(Layer.provideMerge(logger)))))
  return performance.now() - t0
}

interface WorkerRun {
  readonly wallMs: number
  readonly cpuMs: number
}

/**
 * Runs one in-process worker serving `queue` until `done` (checked every 50 ms on the
 * Client's counts) says stop; CPU is this process's user+system over the worker's life.
 */
const runWorker = async (
  config: RosterConfig,
  queue: string,
  done: (counts: Record<string, number>, elapsedMs: number) => boolean
): Promise<WorkerRun> => {
  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  await Effect.runPromise(Effect.gen(function*() {
    const client = yield* Client
    while (!done(yield* client.count({ queue }), performance.now() - t0)) yield* Effect.sleep(50)
  }).pipe(Effect.provide(Roster.layer(config, { configDir: false, worker: { queues: [queue], concurrency } }).pipe(Layer.provideMerge(logger)))))
  const cpu = process.cpuUsage(cpu0)
  return { wallMs: performance.now() - t0, cpuMs: (cpu.user + cpu.system) / 1000 }
}

const median = (xs: ReadonlyArray<number>): number => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2
}

const span = (rows: ReadonlyArray<StartRow>) => {
  let first = Infinity
  let last = -Infinity
  for (const r of rows) {
    if (r.started < first) first = r.started
    if (r.finished !== null && r.finished > last) last = r.finished
  }
  return { first, last, ms: Math.max(1, last - first) }
}

// ---------------------------------------------------------------------------------------------
// 1. Global limit overhead

interface DrainResult {
  readonly rate: number
  readonly drainMs: number
  readonly cpuMs: number
  readonly wallMs: number
  /** Executions per claim: rows claimed together share their started_at (a claim's `now`). */
  readonly perClaim: number
}

const drainNoop = async (backend: Backend, global: number | null): Promise<DrainResult> => {
  const fresh = await backend.fresh(global === null ? "plain" : "global")
  try {
    const config = configOf(fresh.db, { flow: global === null ? { concurrency } : { concurrency, globalConcurrency: global } })
    await enqueue(config, Array.from({ length: backend.n }, (_, i) => ({ job: flowNoop.id, payload: { n: i } })))
    const w = await runWorker(config, "flow", (c) => (c.queued ?? 0) + (c.running ?? 0) === 0)
    const rows = await fresh.starts()
    if (rows.length !== backend.n) throw new Error(`drained ${rows.length} of ${backend.n}`)
    const s = span(rows)
    const claims = new Set(rows.map((r) => r.started)).size
    return { rate: (rows.length / s.ms) * 1000, drainMs: s.ms, cpuMs: w.cpuMs, wallMs: w.wallMs, perClaim: rows.length / claims }
  } finally {
    await fresh.drop()
  }
}

/**
 * The global limits compared: none (the plain claim), the per-process concurrency (the
 * case asked about), and, to tell the limited claim's SQL from the limit's own effect, a
 * limit ten times the concurrency that never binds (BENCH_FLOW_GLOBAL_WIDE=0 drops it).
 */
const globalLimits: ReadonlyArray<number | null> = [null, concurrency, ...(envInt("BENCH_FLOW_GLOBAL_WIDE", 1) > 0 ? [concurrency * 10] : [])]

const globalSection = async (backend: Backend): Promise<Section> => {
  const results = globalLimits.map(() => [] as Array<DrainResult>)
  for (let i = 0; i < repeat; i++) {
    for (const [k, global] of globalLimits.entries()) {
      const r = await drainNoop(backend, global)
      progress(`${backend.name} drain globalConcurrency ${global ?? "none"} #${i + 1}: ${rate(r.rate)} jobs/s, CPU ${ms(r.cpuMs)} ms, ${r.perClaim.toFixed(1)} per claim`)
      results[k]!.push(r)
    }
  }
  const medRate = results.map((rs) => median(rs.map((r) => r.rate)))
  const medCpu = results.map((rs) => median(rs.map((r) => r.cpuMs)))
  const rows = globalLimits.map((global, k) => [
    global === null ? `{ concurrency: ${concurrency} }` : `{ concurrency: ${concurrency}, globalConcurrency: ${global} }${global > concurrency ? " (never binds)" : ""}`,
    results[k]!.map((r) => rate(r.rate)).join(" / "),
    rate(medRate[k]!),
    k === 0 ? "—" : `${(((medRate[0]! - medRate[k]!) / medRate[0]!) * 100).toFixed(1)}%`,
    (medCpu[k]! / 1000).toFixed(2),
    k === 0 ? "—" : `${(((medCpu[k]! - medCpu[0]!) / medCpu[0]!) * 100).toFixed(1)}%`,
    median(results[k]!.map((r) => r.perClaim)).toFixed(1)
  ])
  const overhead = (medRate[0]! - medRate[1]!) / medRate[0]!
  return {
    title: `Flow 1 (${backend.name}): drain ${count(backend.n)} × flow/noop, one in-process worker, concurrency ${concurrency}: no limit vs globalConcurrency`,
    headers: ["queue config", "runs (jobs/s, interleaved)", "median jobs/s", "rate overhead", "median worker CPU s", "CPU overhead", "jobs per claim"],
    rows,
    notes: [
      "jobs/s = N / (last finished_at − first started_at) from the store; CPU = this process's user+system over the worker's whole life (start-up, drain, shutdown)" +
      (backend.name === "PostgreSQL" ? "; the PostgreSQL server's own CPU is not in it." : "."),
      "jobs per claim = executions / distinct started_at values (rows of one claim share its `now`; two claims in the same ms count as one, so it is an upper bound).",
      `order: the configs in turn, repeated ${repeat} times, each on a fresh ${backend.name === "SQLite" ? "database file" : "schema"}; overhead = against the no-limit median.`
    ],
    checks: [{ target: `${backend.name}: globalConcurrency = per-process concurrency costs ≤ 10% of the drain rate`, measured: `${(overhead * 100).toFixed(1)}% (${rate(medRate[0]!)} → ${rate(medRate[1]!)} jobs/s)`, met: overhead <= 0.1 }]
  }
}

// ---------------------------------------------------------------------------------------------
// 2. Per-key concurrency

const keyedSection = async (backend: Backend): Promise<Section> => {
  const rows: Array<Array<string>> = []
  // Uniform: round-robin over every key.
  {
    const fresh = await backend.fresh("keyed")
    try {
      const config = configOf(fresh.db, { keyed: { concurrency } })
      await enqueue(config, Array.from({ length: backend.n }, (_, i) => ({ job: flowKeyed.id, payload: { n: i, k: `k${i % keys}` } })))
      const w = await runWorker(config, "keyed", (c) => (c.queued ?? 0) + (c.running ?? 0) === 0)
      const starts = await fresh.starts()
      if (starts.length !== backend.n) throw new Error(`drained ${starts.length} of ${backend.n}`)
      const s = span(starts)
      progress(`${backend.name} keyed uniform: ${rate((starts.length / s.ms) * 1000)} jobs/s`)
      rows.push([`${count(keys)} keys, round-robin (${backend.n / keys} rows each)`, count(backend.n), rate((starts.length / s.ms) * 1000), "—", (w.cpuMs / 1000).toFixed(2)])
    } finally {
      await fresh.drop()
    }
  }
  // Skewed: every other row on the hot key, the rest round-robin over the other keys.
  {
    const fresh = await backend.fresh("skew")
    try {
      const config = configOf(fresh.db, { keyed: { concurrency } })
      const cold = Math.ceil(backend.n / 2)
      await enqueue(config, Array.from({ length: backend.n }, (_, i) => ({ job: flowKeyed.id, payload: { n: i, k: i % 2 === 1 ? "hot" : `k${(i / 2) % (keys - 1)}` } })))
      // Until the cold rows are done (only the hot key is left), then 3 s of the hot key alone.
      let coldDoneAt: number | null = null
      const w = await runWorker(config, "keyed", (c, elapsed) => {
        const left = (c.queued ?? 0) + (c.running ?? 0)
        if (left === 0) return true
        if (coldDoneAt === null && left <= backend.n - cold) coldDoneAt = elapsed
        return coldDoneAt !== null && elapsed > coldDoneAt + 3_000
      })
      const starts = await fresh.starts()
      const coldRows = starts.filter((r) => r.key !== "hot" && r.finished !== null)
      const hotRows = starts.filter((r) => r.key === "hot" && r.finished !== null)
      if (coldRows.length !== cold) throw new Error(`drained ${coldRows.length} of ${cold} cold rows`)
      const c = span(coldRows)
      // The hot key alone: its finishes after the last cold finish.
      const alone = hotRows.filter((r) => r.started > c.last)
      const aloneSpan = alone.length > 1 ? (alone[alone.length - 1]!.finished! - alone[0]!.started) : NaN
      const hotAloneRate = (alone.length / aloneSpan) * 1000
      const hotDuring = hotRows.filter((r) => r.started <= c.last).length
      progress(`${backend.name} keyed skewed: cold ${rate((coldRows.length / c.ms) * 1000)} jobs/s, hot alone ${rate(hotAloneRate)}/s`)
      rows.push([
        `skewed: every other row on one hot key, the rest over ${count(keys - 1)} keys`,
        `${count(cold)} cold + ${count(backend.n - cold)} hot`,
        `${rate((coldRows.length / c.ms) * 1000)} (cold rows; ${count(hotDuring)} hot rows ran meanwhile)`,
        `${rate(hotAloneRate)} (${count(alone.length)} in ${ms(aloneSpan)} ms)`,
        (w.cpuMs / 1000).toFixed(2)
      ])
    } finally {
      await fresh.drop()
    }
  }
  return {
    title: `Flow 2 (${backend.name}): per-key concurrency limit 1 (flow/keyed), one in-process worker, concurrency ${concurrency}`,
    headers: ["backlog", "rows", "drain jobs/s", "hot key alone (jobs/s)", "worker CPU s"],
    rows,
    notes: [
      "drain jobs/s = rows / (last finished_at − first started_at) of those rows, from the store.",
      "skewed: the hot key's rows sit at every other position of the claim order, so every claim's candidate scan passes over them (excluded in SQL as a blocked (job, key) pair); the run stops 3 s after only the hot key is left, whose rate is then one claim → run → record cycle per execution.",
      "compare with Flow 1's no-limit row for the cost of the per-key claim."
    ],
    checks: []
  }
}

// ---------------------------------------------------------------------------------------------
// 3. Rate-limit accuracy

interface Accuracy {
  readonly starts: number
  readonly maxWindow: number
  readonly perWindow: ReadonlyArray<number>
  readonly delay: ReturnType<typeof percentiles>
}

const accuracyOf = (times: ReadonlyArray<number>, limit: number, periodMs: number, seconds: number): Accuracy => {
  const t = [...times].sort((a, b) => a - b)
  let maxWindow = 0
  for (let i = 0, j = 0; i < t.length; i++) {
    while (j < t.length && t[j]! < t[i]! + periodMs) j++
    if (j - i > maxWindow) maxWindow = j - i
  }
  const t0 = t[0] ?? 0
  const windows = Math.max(1, Math.floor((seconds * 1000) / periodMs))
  const perWindow = Array.from({ length: windows }, () => 0)
  for (const x of t) {
    const w = Math.floor((x - t0) / periodMs)
    if (w < windows) perWindow[w]!++
  }
  const delays = t.map((x, k) => x - (k < limit ? t0 : t[k - limit]! + periodMs))
  return { starts: t.length, maxWindow, perWindow, delay: percentiles(delays) }
}

/** `procs` `roster worker` processes on the bench's flow app, with the rate limit in a roster.config.ts of their own. */
const rateProcesses = async (db: string, limit: number, periodMs: number, procs: number, seconds: number) => {
  const dir = mkdtempSync(join(tmpdir(), "roster-bench-flow-cfg-"))
  try {
    writeFileSync(join(dir, "roster.config.ts"), `export default { queues: { flow: {}, keyed: {}, rated: { concurrency: ${concurrency}, rateLimit: { limit: ${limit}, period: ${periodMs} } } } }\n`)
    const children = Array.from({ length: procs }, () =>
      spawnWorker(["--queue", "rated"], { db, appsDir: join(root, "bench/flow-apps"), cwd: dir }))
    const deadline = Date.now() + 30_000
    while (children.some((c) => !/serving/.test(c.stderr()))) {
      if (Date.now() > deadline || children.some((c) => c.proc.exitCode !== null)) {
        for (const c of children) c.proc.kill("SIGTERM")
        throw new Error(`rate workers did not start:\n${children.map((c) => c.stderr().slice(-1500)).join("\n---\n")}`)
      }
      await Bun.sleep(20)
    }
    await Bun.sleep(seconds * 1000 + 300)
    for (const c of children) c.proc.kill("SIGTERM")
    await Promise.all(children.map((c) => c.done))
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

const rateSection = async (backend: Backend): Promise<Section> => {
  const rows: Array<Array<string>> = []
  const variants = rates.flatMap((r) => [{ ...r, procs: 0 }, ...(rateProcs > 0 ? [{ ...r, procs: rateProcs }] : [])])
  for (const v of variants) {
    const fresh = await backend.fresh("rate")
    try {
      const backlog = Math.max(1_000, Math.ceil((v.limit * rateSeconds * 1000) / v.periodMs) * 3)
      const queues = { rated: { concurrency, rateLimit: { limit: v.limit, period: v.periodMs } } }
      const config = configOf(fresh.db, queues)
      await enqueue(config, Array.from({ length: backlog }, (_, i) => ({ job: flowRated.id, payload: { n: i } })))
      let firstStartAt: number | null = null
      if (v.procs === 0) {
        await runWorker(config, "rated", (c, elapsed) => {
          if (firstStartAt === null && ((c.running ?? 0) > 0 || (c.succeeded ?? 0) > 0)) firstStartAt = elapsed
          return firstStartAt !== null && elapsed > firstStartAt + rateSeconds * 1000 + 300
        })
      } else {
        await rateProcesses(fresh.db, v.limit, v.periodMs, v.procs, rateSeconds)
      }
      const starts = (await fresh.starts()).map((r) => r.started)
      const a = accuracyOf(starts, v.limit, v.periodMs, rateSeconds)
      const full = a.perWindow
      const expected = (v.limit * rateSeconds * 1000) / v.periodMs
      progress(`${backend.name} rate ${v.limit}/${v.periodMs}ms ×${v.procs || 1}: max window ${a.maxWindow}, windows ${full.join(",")}, delay p50 ${ms(a.delay.p50)} p99 ${ms(a.delay.p99)}`)
      rows.push([
        `${v.limit} per ${v.periodMs} ms`,
        v.procs === 0 ? "1 (in-process)" : `${v.procs} processes`,
        count(backlog),
        `${count(full.reduce((x, y) => x + y, 0))} of ${count(Math.round(expected))} allowed (${count(a.starts)} in the whole run)`,
        `**${a.maxWindow}**`,
        `${full.join(" / ")} (${Math.round((full.reduce((x, y) => x + y, 0) / full.length / v.limit) * 100)}%)`,
        `${ms(a.delay.p50)} / ${ms(a.delay.p99)} / ${ms(a.delay.max)}`
      ])
    } finally {
      await fresh.drop()
    }
  }
  return {
    title: `Flow 3 (${backend.name}): rate-limit accuracy, queue rateLimit, backlog far above it, ${rateSeconds} s, concurrency ${concurrency} per worker`,
    headers: ["rate limit", "workers", "backlog", "starts in the windows shown", "max starts in any window", "starts per consecutive window (% of limit)", "start delay at the limit p50 / p99 / max (ms)"],
    rows,
    notes: [
      "from roster_executions.started_at (whole ms, the claim's clock); max starts in any window = most starts in [t, t + period) over every t (must be ≤ limit).",
      "consecutive windows start at the first start; the run lasts a little over the windows shown (the stop is 300 ms after them), so the last window is full.",
      "start delay: start k (in start order) minus the earliest moment the limit allowed it given the starts before it — the first `limit` starts: the first start; start k ≥ limit: start k − limit + period. It includes the Dispatcher's wake-up jitter (spread up to min(25 ms, period/limit/4)) and, for the first `limit`, claim batching (concurrency per claim).",
      "rate-limited claims are one serialised transaction per queue, so with several processes they take turns; each process's Dispatcher sleeps until the store says the limit next frees a start."
    ],
    checks: rows.map((r, i) => ({ target: `${backend.name}: ${r[0]} × ${r[1]}: no window holds more than the limit`, measured: `${r[4]!.replace(/\*/g, "")} max`, met: Number(r[4]!.replace(/\*/g, "")) <= variants[i]!.limit }))
  }
}

// ---------------------------------------------------------------------------------------------

const backends: Array<Backend> = []
if (stores.has("sqlite")) backends.push(sqlite)
if (stores.has("postgres")) {
  if (pgBase) backends.push(postgres(pgBase))
  else progress("PostgreSQL skipped: set ROSTER_BENCH_PG_URL or ROSTER_TEST_PG_URL")
}
const sections: Array<Section> = []
for (const b of backends) {
  if (parts.has("1")) sections.push(await globalSection(b))
  if (parts.has("2")) sections.push(await keyedSection(b))
  if (parts.has("3")) sections.push(await rateSection(b))
}
report(sections)
