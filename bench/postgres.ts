/**
 * Roster on PostgreSQL: drain rate with 1 and 4 worker processes, and enqueue → start
 * latency across processes with LISTEN/NOTIFY wake-ups (and, for contrast, with polling
 * only). Prints markdown tables.
 *
 * - Drain: N `bench/noop` executions are bulk-inserted through the Store into a fresh
 *   schema, then K `roster worker --concurrency C --exit-when-idle` processes drain them.
 *   The rate is N / (last finished_at − first started_at) read from the store, so
 *   process start-up and the idle-exit tail are not counted (wall time is shown beside).
 * - Latency: one idle `roster worker` (poll interval 1 s) and this process enqueuing
 *   `bench/mark` one at a time through `Roster.open(...)`; latency is the handler's
 *   start (its result `at`, epoch ms) minus the moment `enqueue` was called. The
 *   polling-only row runs the worker with ROSTER_WATCH_MS=0 (no LISTEN).
 *
 * Env: ROSTER_BENCH_PG_URL or ROSTER_TEST_PG_URL (required), BENCH_PG_N (default
 * 100000), BENCH_PG_WORKERS (default 1,4), BENCH_PG_CONCURRENCY (default 50),
 * BENCH_PG_LATENCY_N (default 300), BENCH_PG_POLL_N (default 30; 0 skips that row).
 *
 *   ROSTER_TEST_PG_URL=postgres://postgres@127.0.0.1:55433/roster_test bun bench/postgres.ts
 */
import { Effect, Layer } from "effect"
import { join, resolve } from "node:path"
import * as Roster from "../src/runtime/Roster.ts"
import { layerPostgres } from "../src/store/postgres/PgStore.ts"
import type { InsertRequest } from "../src/store/Store.ts"
import { Store } from "../src/store/Store.ts"
import { mark, noop } from "./apps/bench/jobs.ts"
import { freshPgSchema, pgQuery } from "./pg.ts"
import { spawnWorker } from "./support.ts"

const root = resolve(import.meta.dir, "..")
const apps = join(root, "bench/apps")

const base = process.env.ROSTER_BENCH_PG_URL || process.env.ROSTER_TEST_PG_URL
if (!base) {
  console.error("bench/postgres.ts needs ROSTER_BENCH_PG_URL or ROSTER_TEST_PG_URL (a postgres:// URL of a scratch database)")
  process.exit(2)
}
const int = (name: string, fallback: number) => Number((process.env[name] ?? String(fallback)).replace(/_/g, ""))
const n = int("BENCH_PG_N", 100_000)
const workerCounts = (process.env.BENCH_PG_WORKERS ?? "1,4").split(",").map((s) => Number(s.trim()))
const concurrency = int("BENCH_PG_CONCURRENCY", 50)
const latencyN = int("BENCH_PG_LATENCY_N", 300)
const pollN = int("BENCH_PG_POLL_N", 30)

const progress = (line: string) => process.stderr.write(`[bench/postgres] ${line}\n`)

/** A fresh schema, and the URL whose connections use it. */
const freshSchema = (label: string) => freshPgSchema(base, label)

/** Runs an Effect against a PostgreSQL store on `url`. */
const withStore = <A, E>(url: string, body: (store: Store["Service"]) => Effect.Effect<A, E>) =>
  Effect.runPromise(Store.use(body).pipe(Effect.provide(Layer.fresh(layerPostgres({ url })))))

const startWorker = (url: string, args: ReadonlyArray<string>, env: Record<string, string> = {}) => spawnWorker(args, { db: url, appsDir: apps, env })

const percentile = (sorted: ReadonlyArray<number>, p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!
const fmt = (v: number, digits = 1) => v.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits })

interface DrainRow {
  readonly workers: number
  readonly n: number
  readonly drainMs: number
  readonly rate: number
  readonly wallMs: number
}

const drain = async (workers: number): Promise<DrainRow> => {
  const { url, drop } = await freshSchema(`drain${workers}`)
  try {
    const now = Date.now()
    const rows = Array.from({ length: n }, (_, i): InsertRequest => ({
      id: Bun.randomUUIDv7("hex", now),
      job: noop.id,
      queue: noop.queue,
      payload: JSON.stringify({ n: i }),
      priority: 0,
      retry: noop.retry.snapshot,
      timeoutMs: noop.timeoutMs,
      runAt: now,
      now,
      idempotencyKey: null
    }))
    const insertStart = performance.now()
    await withStore(url, (store) =>
      Effect.forEach(Array.from({ length: Math.ceil(n / 10_000) }, (_, k) => rows.slice(k * 10_000, (k + 1) * 10_000)), (chunk) => store.executionsInsert(chunk), { discard: true }))
    progress(`drain ×${workers}: inserted ${n} in ${fmt(performance.now() - insertStart, 0)} ms; starting workers`)
    const start = performance.now()
    const children = Array.from({ length: workers }, () => startWorker(url, ["--concurrency", String(concurrency), "--exit-when-idle"]))
    const codes = await Promise.all(children.map((c) => c.done))
    const wallMs = performance.now() - start
    codes.forEach((code, i) => {
      if (code !== 0) throw new Error(`worker exited ${code}:\n${children[i]!.stderr().slice(-2000)}`)
    })
    const [stats] = await pgQuery<{ done: number; first: string; last: string }>(url,
      "SELECT COUNT(*)::int AS done, MIN(started_at)::text AS first, MAX(finished_at)::text AS last FROM roster_executions WHERE state = 'succeeded'")
    if (!stats || stats.done !== n) throw new Error(`drained ${stats?.done} of ${n}`)
    const drainMs = Number(stats.last) - Number(stats.first)
    return { workers, n, drainMs, rate: (n * 1000) / drainMs, wallMs }
  } finally {
    await drop()
  }
}

interface LatencyRow {
  readonly mode: string
  readonly samples: number
  readonly p50: number
  readonly p90: number
  readonly p99: number
  readonly max: number
}

const latency = async (mode: "LISTEN/NOTIFY" | "polling only", samples: number): Promise<LatencyRow> => {
  const { url, drop } = await freshSchema("latency")
  const worker = startWorker(url, ["--concurrency", "10"], mode === "polling only" ? { ROSTER_WATCH_MS: "0" } : {})
  try {
    const client = await Roster.open({ db: url, jobs: [mark, noop] })
    try {
      const deadline = Date.now() + 30_000
      while (!/serving/.test(worker.stderr())) {
        if (Date.now() > deadline) throw new Error(`the worker did not start:\n${worker.stderr()}`)
        await Bun.sleep(20)
      }
      await Bun.sleep(500) // its LISTEN is up
      const sent: Array<{ id: string; at: number }> = []
      for (let i = 0; i < samples; i++) {
        const at = performance.timeOrigin + performance.now()
        const r = await client.enqueue(mark, { id: i })
        sent.push({ id: r.id, at })
        await Bun.sleep(mode === "polling only" ? 137 : 15) // the worker is idle again before the next one
      }
      const latencies: Array<number> = []
      for (const s of sent) {
        let detail = await client.get(s.id)
        for (let tries = 0; detail?.state !== "succeeded" && tries < 300; tries++) {
          await Bun.sleep(20)
          detail = await client.get(s.id)
        }
        const started = (detail?.result as { at?: number } | null)?.at
        if (started === undefined) throw new Error(`execution ${s.id} did not run`)
        latencies.push(started - s.at)
      }
      const sorted = latencies.sort((a, b) => a - b)
      return { mode, samples, p50: percentile(sorted, 50), p90: percentile(sorted, 90), p99: percentile(sorted, 99), max: sorted.at(-1)! }
    } finally {
      await client.close()
    }
  } finally {
    worker.proc.kill("SIGTERM")
    await worker.done
    await drop()
  }
}

const drains: Array<DrainRow> = []
for (const k of workerCounts) {
  const row = await drain(k)
  progress(`drain ×${k}: ${fmt(row.rate, 0)} jobs/s`)
  drains.push(row)
}
const latencies: Array<LatencyRow> = [await latency("LISTEN/NOTIFY", latencyN)]
if (pollN > 0) latencies.push(await latency("polling only", pollN))

const [server] = await pgQuery<{ server_version: string }>(base, "SHOW server_version")

console.log(`## PostgreSQL\n`)
console.log(`PostgreSQL ${server?.server_version} on the same machine (127.0.0.1), Bun ${Bun.version}, \`bench/noop\` / \`bench/mark\`, concurrency ${concurrency} per worker.\n`)
console.log("| drain | jobs | drain time | jobs/s | wall (incl. start-up) |")
console.log("|---|---:|---:|---:|---:|")
for (const d of drains) console.log(`| ${d.workers} worker process${d.workers === 1 ? "" : "es"} | ${d.n.toLocaleString("en-US")} | ${fmt(d.drainMs / 1000, 2)} s | **${fmt(d.rate, 0)}** | ${fmt(d.wallMs / 1000, 2)} s |`)
console.log("")
console.log("| enqueue → start, cross-process | samples | p50 | p90 | p99 | max |")
console.log("|---|---:|---:|---:|---:|---:|")
for (const l of latencies) console.log(`| ${l.mode} | ${l.samples} | **${fmt(l.p50, 2)} ms** | ${fmt(l.p90, 2)} ms | ${fmt(l.p99, 2)} ms | ${fmt(l.max, 2)} ms |`)
