/**
 * Orchestration (issue 16): fan-out / fan-in of 10,000 children and the cost of parked
 * executions, on SQLite (a real file, synchronous=FULL) and, when ROSTER_BENCH_PG_URL or
 * ROSTER_TEST_PG_URL is set, on PostgreSQL (a fresh schema per run). One in-process
 * worker (`Roster.layer(config, { worker })`, concurrency C) serves the `orch` queue,
 * as the other benches do; the Jobs are in bench/orch-apps/orch/jobs.ts.
 *
 * 1. Fan-out / fan-in: one `orch/parent` enqueues N `orch/child` (no-ops) one
 *    `ctx.enqueue` at a time (a step + insert transaction each), awaits them all
 *    (`ctx.awaitChildren`: it parks, waiting, until the last child ends), returns.
 *    Reported: the parent's first run enqueueing the N children (children/s), the last
 *    child's end → the parent's completion (wake-up, the re-run replaying N enqueue steps,
 *    the fan-in reading N children and saving their outcomes), and the total from the
 *    parent's enqueue to its completion; against the plain drain of N `orch/child`
 *    enqueued by one `enqueueMany` into the running worker. Interleaved A,B,A,B…
 * 2. Parked executions: K `orch/sleeper` (ctx.sleep "1 day") or `orch/waiter`
 *    (waitForSignal, no timeout) parked on the queue, then ~5 s idle (CPU, RSS, claims
 *    issued — the Store's own `roster_store_operations_total{operation="executionsClaim"}`
 *    counter), then M `orch/child` drained on the same queue and worker. Parked rows at
 *    the noops' priority, and at a higher one (they sort ahead of every due row in the
 *    claim index (queue, priority DESC, run_at, id)). Variants interleaved, medians.
 * 3. Claim plans with K parked rows at a higher priority than the due ones: SQLite's
 *    EXPLAIN QUERY PLAN and the candidate SELECT timed (due rows present / only parked
 *    rows); PostgreSQL's EXPLAIN (ANALYZE, BUFFERS) of the same.
 *
 * Env: BENCH_ORCH_N (children, default 10000), BENCH_ORCH_M (drain after parking,
 * default 20000), BENCH_ORCH_K (parked counts, default 0,1000,10000), BENCH_ORCH_REPEAT
 * (default 3), BENCH_ORCH_IDLE_MS (default 5000), BENCH_CONCURRENCY (default 50),
 * BENCH_ORCH_STORES (default sqlite,postgres), BENCH_ORCH_PARTS (default 1,2,3),
 * BENCH_ORCH_TIMEOUT_S (a fan-out run that has not ended by then is reported as such; default 300),
 * BENCH_ORCH_DRAIN_CAP_S (part 2's drain stops there and reports the rate of what drained; default 20).
 */
import { Database } from "bun:sqlite"
import { Effect, Layer, Logger, Metric } from "effect"
import { Client, Roster } from "../src/index.ts"
import type { RosterConfig } from "../src/index.ts"
import { orchChild, orchParent, orchSleeper, orchWaiter, parentMarks } from "./orch-apps/orch/jobs.ts"
import { freshPgSchema, pgQuery } from "./pg.ts"
import { count, envInt, mb, ms, openReader, progress, rate, report, type Section, tempDb } from "./support.ts"

const concurrency = envInt("BENCH_CONCURRENCY", 50)
const repeat = Math.max(1, envInt("BENCH_ORCH_REPEAT", 3))
const N = envInt("BENCH_ORCH_N", 10_000)
const M = envInt("BENCH_ORCH_M", 20_000)
const Ks = (process.env.BENCH_ORCH_K ?? "0,1000,10000").split(",").map((s) => Number(s.trim().replace(/_/g, "")))
const idleMs = envInt("BENCH_ORCH_IDLE_MS", 5_000)
const timeoutMs = envInt("BENCH_ORCH_TIMEOUT_S", 300) * 1000
const drainCapMs = envInt("BENCH_ORCH_DRAIN_CAP_S", 20) * 1000
const parts = new Set((process.env.BENCH_ORCH_PARTS ?? "1,2,3").split(",").map((s) => s.trim()))
const stores = new Set((process.env.BENCH_ORCH_STORES ?? "sqlite,postgres").split(",").map((s) => s.trim()))
const pgBase = process.env.ROSTER_BENCH_PG_URL || process.env.ROSTER_TEST_PG_URL

const logger = Logger.layer([Logger.withConsoleError(Logger.formatLogFmt)])

// ---------------------------------------------------------------------------------------------
// Stores

interface Fresh {
  readonly db: string
  readonly query: <Row extends object>(sql: string) => Promise<ReadonlyArray<Row>>
  /** A write from outside the runtime (the bench's own bookkeeping). */
  readonly exec: (sql: string) => Promise<void>
  readonly drop: () => Promise<void>
}

interface Backend {
  readonly name: "SQLite" | "PostgreSQL"
  readonly fresh: (label: string) => Promise<Fresh>
}

const sqlite: Backend = {
  name: "SQLite",
  fresh: async (label) => {
    const tmp = tempDb(`orch-${label}`)
    return {
      db: tmp.db,
      query: async <Row extends object>(statement: string) => {
        const reader = openReader(tmp.db)
        try {
          return reader.query<Row, []>(statement).all()
        } finally {
          reader.close()
        }
      },
      exec: async (statement) => {
        const writer = new Database(tmp.db)
        try {
          writer.run("PRAGMA busy_timeout = 10000")
          writer.run(statement)
        } finally {
          writer.close()
        }
      },
      drop: async () => tmp.cleanup()
    }
  }
}

const postgres = (base: string): Backend => ({
  name: "PostgreSQL",
  fresh: async (label) => {
    const { url, drop } = await freshPgSchema(base, `orch_${label}`)
    return {
      db: url,
      query: (statement) => pgQuery(url, statement),
      exec: async (statement) => void (await pgQuery(url, statement)),
      drop
    }
  }
})

// ---------------------------------------------------------------------------------------------
// Running

const configOf = (db: string): RosterConfig => ({
  db,
  jobs: [orchChild, orchParent, orchSleeper, orchWaiter],
  queues: { orch: { concurrency } }
})

/** Claims this process's Stores issued so far (the instrumented Store's counter). */
const claimsSoFar = Effect.map(Metric.snapshot, (snaps) => {
  let n = 0
  for (const s of snaps as ReadonlyArray<any>) {
    if (s.id !== "roster_store_operations_total") continue
    const attrs = s.attributes ?? {}
    if (attrs.operation !== "executionsClaim") continue
    n += Number(s.state?.count ?? 0)
  }
  return n
})

const cpuNow = () => {
  const c = process.cpuUsage()
  return (c.user + c.system) / 1000
}

/** Runs `body` with one in-process worker serving `orch` (and a Client). */
const withWorker = <A>(config: RosterConfig, body: (client: Client["Service"]) => Effect.Effect<A, unknown>) =>
  Effect.runPromise(Effect.gen(function*() {
    const client = yield* Client
    return yield* body(client)
  }).pipe(Effect.provide(Roster.layer(config, { configDir: false, worker: { queues: ["orch"], concurrency } }).pipe(Layer.provideMerge(logger)))) as Effect.Effect<A, never, never>)

const until = (client: Client["Service"], done: (c: Record<string, number>) => boolean, everyMs = 20) =>
  Effect.gen(function*() {
    while (!done((yield* client.count({ queue: "orch" })) as Record<string, number>)) yield* Effect.sleep(everyMs)
  })

const median = (xs: ReadonlyArray<number>): number => {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b)
  if (s.length === 0) return NaN
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2
}

const runs = (xs: ReadonlyArray<number>, f: (x: number) => string) => xs.map(f).join(" / ")

// ---------------------------------------------------------------------------------------------
// 1. Fan-out / fan-in

interface FanOut {
  readonly enqueueMs: number
  readonly lastChildToParentMs: number
  readonly wakeMs: number
  readonly rerunMs: number
  readonly totalMs: number
  readonly parentRuns: number
  readonly claims: number
  readonly cpuMs: number
}

const fanOut = async (backend: Backend): Promise<FanOut> => {
  const fresh = await backend.fresh("fan")
  try {
    parentMarks.runs = 0
    const cpu0 = cpuNow()
    const out = await withWorker(configOf(fresh.db), (client) =>
      Effect.gen(function*() {
        const claims0 = yield* claimsSoFar
        const t0 = Date.now()
        const { id } = yield* client.enqueue(orchParent, { n: N })
        let last: Record<string, number> = {}
        yield* until(client, (c) => {
          last = c
          return (c.succeeded ?? 0) + (c.failed ?? 0) >= N + 1 || Date.now() - t0 > timeoutMs
        }, 20)
        return { id, t0, claims: (yield* claimsSoFar) - claims0, last }
      }))
    const cpuMs = cpuNow() - cpu0
    if ((out.last.succeeded ?? 0) + (out.last.failed ?? 0) < N + 1) {
      const [p] = await fresh.query<{ state: string }>(`SELECT state FROM roster_executions WHERE id = '${out.id}'`)
      const enq = parentMarks.enqueuedAt >= parentMarks.firstRunAt ? `${ms(parentMarks.enqueuedAt - parentMarks.firstRunAt)} ms` : "not finished"
      throw new TimedOut(`parent ${p?.state} after ${timeoutMs / 1000} s (counts ${JSON.stringify(out.last)}; enqueueing the children: ${enq}; parent runs ${parentMarks.runs})`)
    }
    const [p] = await fresh.query<{ state: string; started_at: number; finished_at: number; result: string }>(`SELECT state, started_at, finished_at, result FROM roster_executions WHERE id = '${out.id}'`)
    const [c] = await fresh.query<{ n: number; last: number }>(`SELECT COUNT(*) AS n, MAX(finished_at) AS last FROM roster_executions WHERE parent_id = '${out.id}' AND state = 'succeeded'`)
    if (p?.state !== "succeeded" || Number(c?.n) !== N) throw new Error(`fan-out: parent ${p?.state}, ${c?.n} children succeeded of ${N}`)
    const last = Number(c!.last)
    const finished = Number(p.finished_at)
    return {
      enqueueMs: parentMarks.enqueuedAt - parentMarks.firstRunAt,
      lastChildToParentMs: finished - last,
      wakeMs: Number(p.started_at) - last,
      rerunMs: finished - Number(p.started_at),
      totalMs: finished - out.t0,
      parentRuns: parentMarks.runs,
      claims: out.claims,
      cpuMs
    }
  } finally {
    await fresh.drop()
  }
}

interface Plain {
  readonly enqueueMs: number
  readonly drainMs: number
  readonly totalMs: number
  readonly claims: number
  readonly cpuMs: number
}

const plainDrain = async (backend: Backend, n: number): Promise<Plain> => {
  const fresh = await backend.fresh("plain")
  try {
    const cpu0 = cpuNow()
    const out = await withWorker(configOf(fresh.db), (client) =>
      Effect.gen(function*() {
        const claims0 = yield* claimsSoFar
        const t0 = Date.now()
        yield* client.enqueueMany(Array.from({ length: n }, (_, i) => ({ job: orchChild, payload: { n: i } })))
        const t1 = Date.now()
        yield* until(client, (c) => (c.succeeded ?? 0) >= n, 20)
        return { t0, t1, claims: (yield* claimsSoFar) - claims0 }
      }))
    const cpuMs = cpuNow() - cpu0
    const [s] = await fresh.query<{ first: number; last: number }>("SELECT MIN(started_at) AS first, MAX(finished_at) AS last FROM roster_executions WHERE state = 'succeeded'")
    return { enqueueMs: out.t1 - out.t0, drainMs: Number(s!.last) - Number(s!.first), totalMs: Number(s!.last) - out.t0, claims: out.claims, cpuMs }
  } finally {
    await fresh.drop()
  }
}

class TimedOut extends Error {}

const fanSection = async (backend: Backend): Promise<Section> => {
  const f: Array<FanOut> = []
  const p: Array<Plain> = []
  for (let i = 0; i < repeat; i++) {
    let a: FanOut
    try {
      a = await fanOut(backend)
    } catch (e) {
      if (!(e instanceof TimedOut)) throw e
      progress(`${backend.name} fan-out #${i + 1}: did not finish: ${e.message}`)
      return {
        title: `Orchestration 1 (${backend.name}): fan-out / fan-in of ${count(N)} children, one in-process worker, concurrency ${concurrency}`,
        headers: ["case", "outcome"],
        rows: [[`fan-out / fan-in: 1 parent, ${count(N)} × ctx.enqueue, ctx.awaitChildren`, `**did not finish**: ${e.message}`]],
        notes: ["the run was stopped at BENCH_ORCH_TIMEOUT_S; see Orchestration W for the wake-up check's cost against N."],
        checks: []
      }
    }
    progress(`${backend.name} fan-out #${i + 1}: enqueue ${ms(a.enqueueMs)} ms (${rate((N / a.enqueueMs) * 1000)}/s), last child → parent ${ms(a.lastChildToParentMs)} ms (wake ${ms(a.wakeMs)}, re-run ${ms(a.rerunMs)}), total ${ms(a.totalMs)} ms, ${a.parentRuns} parent runs, ${a.claims} claims`)
    f.push(a)
    const b = await plainDrain(backend, N)
    progress(`${backend.name} plain drain #${i + 1}: enqueueMany ${ms(b.enqueueMs)} ms, drain ${ms(b.drainMs)} ms, total ${ms(b.totalMs)} ms, ${b.claims} claims`)
    p.push(b)
  }
  const m = (xs: ReadonlyArray<number>) => median(xs)
  const rows = [
    [
      `fan-out / fan-in: 1 parent, ${count(N)} × ctx.enqueue, ctx.awaitChildren`,
      `${ms(m(f.map((r) => r.enqueueMs)))} (${rate((N / m(f.map((r) => r.enqueueMs))) * 1000)} children/s; runs ${runs(f.map((r) => r.enqueueMs), ms)})`,
      `${ms(m(f.map((r) => r.lastChildToParentMs)))} (wake ${ms(m(f.map((r) => r.wakeMs)))} + re-run ${ms(m(f.map((r) => r.rerunMs)))})`,
      `**${ms(m(f.map((r) => r.totalMs)))}** (runs ${runs(f.map((r) => r.totalMs), ms)})`,
      (m(f.map((r) => r.cpuMs)) / 1000).toFixed(2),
      `${count(Math.round(m(f.map((r) => r.claims))))} (parent runs ${f.map((r) => r.parentRuns).join("/")})`
    ],
    [
      `plain: enqueueMany of ${count(N)} × orch/child, drained`,
      `${ms(m(p.map((r) => r.enqueueMs)))} (${rate((N / m(p.map((r) => r.enqueueMs))) * 1000)}/s, one transaction)`,
      `— (drain ${ms(m(p.map((r) => r.drainMs)))}, ${rate((N / m(p.map((r) => r.drainMs))) * 1000)} jobs/s)`,
      `**${ms(m(p.map((r) => r.totalMs)))}** (runs ${runs(p.map((r) => r.totalMs), ms)})`,
      (m(p.map((r) => r.cpuMs)) / 1000).toFixed(2),
      count(Math.round(m(p.map((r) => r.claims))))
    ]
  ]
  return {
    title: `Orchestration 1 (${backend.name}): fan-out / fan-in of ${count(N)} children, one in-process worker, concurrency ${concurrency} (medians of ${repeat}, interleaved)`,
    headers: ["case", "enqueue the children (ms)", "last child's end → parent's completion (ms)", "total to completion (ms)", "process CPU s", "claims issued"],
    rows,
    notes: [
      "enqueue = the parent's first run from its start to its last ctx.enqueue returning (handler marks, Date.now); children are claimed and run by the same worker meanwhile.",
      "last child → parent = parent finished_at − the last child's finished_at (store ms); wake = the parent's re-run started_at − that; re-run = the re-run's claim → its outcome (replaying N enqueue steps from the loaded steps, awaitChildren listing the N children and saving their outcomes as one step, the success).",
      "total = from the Client's enqueue of the parent (or of the enqueueMany) to the parent's (the last child's) finished_at.",
      "process CPU = this process (worker and Client) over the run, start-up and shutdown included" + (backend.name === "PostgreSQL" ? "; not the server's." : "."),
      "claims issued = the instrumented Store's executionsClaim count over the run."
    ],
    checks: []
  }
}

// ---------------------------------------------------------------------------------------------
// 2. Parked executions

interface ParkVariant {
  readonly label: string
  readonly k: number
  readonly job: typeof orchSleeper | typeof orchWaiter
  readonly priority: number
}

const kMax = Math.max(...Ks)
const kMid = Ks.filter((k) => k > 0 && k < kMax)[0] ?? kMax
const variants: ReadonlyArray<ParkVariant> = [
  ...Ks.map((k) => ({ label: `${count(k)} sleeping, priority 0`, k, job: orchSleeper, priority: 0 })),
  ...[...new Set([kMid, kMax])].filter((k) => k > 0).map((k) => ({ label: `${count(k)} sleeping, priority 10`, k, job: orchSleeper, priority: 10 })),
  ...(kMid > 0 ? [{ label: `${count(kMid)} waiting for a signal, priority 10`, k: kMid, job: orchWaiter, priority: 10 }] : [])
]

interface ParkRun {
  readonly parkMs: number
  readonly idleCpuMs: number
  readonly idleClaims: number
  readonly idleRssMb: number
  readonly rate: number
  /** No-ops drained (M, unless the drain hit BENCH_ORCH_DRAIN_CAP_S). */
  readonly drained: number
  readonly drainClaims: number
  readonly drainCpuMs: number
}

/** Parks K once, then `repeat` times: idle, then a drain of M no-ops (the parked rows stay). */
const parkRun = async (backend: Backend, v: ParkVariant): Promise<{ readonly parkMs: number; readonly reps: ReadonlyArray<ParkRun> }> => {
  const fresh = await backend.fresh("park")
  try {
    const out = await withWorker(configOf(fresh.db), (client) =>
      Effect.gen(function*() {
        const t0 = Date.now()
        for (let i = 0; i < v.k; i += 10_000) {
          yield* client.enqueueMany(Array.from({ length: Math.min(10_000, v.k - i) }, (_, j) => ({ job: v.job, payload: { n: i + j }, options: { priority: v.priority } })))
        }
        yield* until(client, (c) => (c.waiting ?? 0) >= v.k && (c.queued ?? 0) + (c.running ?? 0) === 0, 20)
        const parkMs = Date.now() - t0
        const reps: Array<Omit<ParkRun, "rate" | "drained"> & { readonly since: number; readonly before: number }> = []
        for (let r = 0; r < repeat; r++) {
          // Settle, then only parked executions exist: idle.
          yield* Effect.sleep(500)
          Bun.gc(true)
          const claims0 = yield* claimsSoFar
          const cpu0 = cpuNow()
          let peak = process.memoryUsage().rss
          const end = Date.now() + idleMs
          while (Date.now() < end) {
            yield* Effect.sleep(100)
            peak = Math.max(peak, process.memoryUsage().rss)
          }
          const idleCpuMs = cpuNow() - cpu0
          const idleClaims = (yield* claimsSoFar) - claims0
          // Drain M no-ops on the same queue and worker.
          const before = (yield* client.count({ queue: "orch" })).succeeded ?? 0
          const claims1 = yield* claimsSoFar
          const cpu1 = cpuNow()
          const since = Date.now()
          yield* client.enqueueMany(Array.from({ length: M }, (_, i) => ({ job: orchChild, payload: { n: i } })))
          yield* until(client, (c) => (c.succeeded ?? 0) - before >= M || Date.now() - since > drainCapMs, 20)
          const drainClaims = (yield* claimsSoFar) - claims1
          const drainCpuMs = cpuNow() - cpu1
          // What is left of this round is cancelled, so the next round starts from parked rows only.
          yield* until(client, (c) => (c.running ?? 0) === 0, 20)
          yield* Effect.promise(() => fresh.exec("UPDATE roster_executions SET state = 'cancelled' WHERE job = 'orch/child' AND state = 'queued'"))
          yield* until(client, (c) => (c.queued ?? 0) + (c.running ?? 0) === 0, 20)
          reps.push({ parkMs, idleCpuMs, idleClaims, idleRssMb: peak / 2 ** 20, drainClaims, drainCpuMs, since, before })
        }
        return { parkMs, reps }
      }))
    const [w] = await fresh.query<{ n: number }>(`SELECT COUNT(*) AS n FROM roster_executions WHERE state = 'waiting'`)
    if (Number(w!.n) !== v.k) throw new Error(`park: ${w!.n} of ${v.k} waiting`)
    const reps: Array<ParkRun> = []
    for (const [i, r] of out.reps.entries()) {
      const until_ = out.reps[i + 1]?.since ?? Number.MAX_SAFE_INTEGER
      const [s] = await fresh.query<{ n: number; first: number; last: number }>(`SELECT COUNT(*) AS n, MIN(started_at) AS first, MAX(finished_at) AS last FROM roster_executions WHERE job = 'orch/child' AND state = 'succeeded' AND created_at >= ${r.since} AND created_at < ${until_}`)
      reps.push({ ...r, drained: Number(s!.n), rate: (Number(s!.n) / Math.max(1, Number(s!.last) - Number(s!.first))) * 1000 })
    }
    return { parkMs: out.parkMs, reps }
  } finally {
    await fresh.drop()
  }
}

const parkSection = async (backend: Backend): Promise<Section> => {
  const results = variants.map(() => [] as Array<ParkRun>)
  for (const [j, v] of variants.entries()) {
    const { reps } = await parkRun(backend, v)
    for (const [i, r] of reps.entries()) {
      progress(`${backend.name} parked ${v.label} #${i + 1}: parked in ${ms(r.parkMs)} ms; idle CPU ${ms(r.idleCpuMs)} ms, ${r.idleClaims} claims, RSS ${mb(r.idleRssMb)}; drain ${rate(r.rate)} jobs/s (${r.drained}), ${r.drainClaims} claims`)
      results[j]!.push(r)
    }
  }
  const base = median(results[0]!.map((r) => r.rate))
  const rows = variants.map((v, j) => {
    const rs = results[j]!
    const r = median(rs.map((x) => x.rate))
    return [
      v.label,
      ms(median(rs.map((x) => x.parkMs))),
      `${ms(median(rs.map((x) => x.idleCpuMs)))} (${(median(rs.map((x) => x.idleCpuMs)) / idleMs * 100).toFixed(1)}% of a core)`,
      `${median(rs.map((x) => x.idleClaims))} (${(median(rs.map((x) => x.idleClaims)) / (idleMs / 1000)).toFixed(1)}/s)`,
      mb(median(rs.map((x) => x.idleRssMb))),
      runs(rs.map((x) => x.rate), rate) + (rs.some((x) => x.drained < M) ? ` (capped: ${rs.map((x) => count(x.drained)).join(" / ")} drained in ${drainCapMs / 1000} s)` : ""),
      `**${rate(r)}**`,
      j === 0 ? "—" : `${(((r - base) / base) * 100).toFixed(1)}%`,
      count(Math.round(median(rs.map((x) => x.drainClaims)))),
      (median(rs.map((x) => x.drainCpuMs)) / 1000).toFixed(2)
    ]
  })
  return {
    title: `Orchestration 2 (${backend.name}): K parked executions, then ${count(M)} × orch/child drained on the same queue and worker, concurrency ${concurrency} (K parked once per row, then ${repeat} rounds of idle + drain; medians)`,
    headers: ["parked", "time to park them (ms)", `idle ${idleMs / 1000} s: process CPU ms`, "idle: claims issued", "idle: peak RSS", "drain runs (jobs/s)", "median jobs/s", "vs none parked", "drain claims", "drain CPU s"],
    rows,
    notes: [
      "parked: enqueueMany of K orch/sleeper (ctx.sleep \"1 day\") or orch/waiter (waitForSignal, no timeout: run_at is the end of time), run once each until all are waiting; the orch/child no-ops are priority 0, so priority-10 parked rows sort ahead of every due row in the claim index.",
      `idle: ${idleMs / 1000} s after all are parked (and 0.5 s to settle, a full GC), while nothing is due: this process's CPU (Bun, worker, Dispatcher and watcher), claims the instrumented Store issued, peak RSS (the whole process: runtime, the bench's arrays, the SQLite page cache).`,
      `drain jobs/s = no-ops drained / (last finished_at − first started_at) of them, from the store (the drain stops at M or after ${drainCapMs / 1000} s, whichever comes first); drain claims = executionsClaim calls over the drain; CPU = this process over the drain${backend.name === "PostgreSQL" ? " (not the server's)." : "."}`
    ],
    checks: []
  }
}

// ---------------------------------------------------------------------------------------------
// 3. Claim plans with parked rows ahead of the due ones

const sqliteClaimSelect = (queue: string, now: number, limit: number) =>
  `SELECT id FROM roster_executions INDEXED BY roster_executions_claim
    WHERE state IN ('queued','waiting') AND queue = '${queue}' AND run_at <= ${now} AND job IN (SELECT value FROM json_each('["orch/child","orch/parent","orch/sleeper","orch/waiter"]'))
      AND NOT EXISTS (SELECT 1 FROM roster_queues WHERE name = '${queue}' AND paused)
    ORDER BY priority DESC, run_at, id LIMIT ${limit}`

const pgClaimSelect = (queue: string, now: number, limit: number) =>
  `SELECT id FROM roster_executions
    WHERE state IN ('queued','waiting') AND queue = '${queue}' AND run_at <= ${now} AND job = ANY(ARRAY['orch/child','orch/parent','orch/sleeper','orch/waiter']::text[])
      AND NOT EXISTS (SELECT 1 FROM roster_queues WHERE name = '${queue}' AND paused)
    ORDER BY priority DESC, run_at, id LIMIT ${limit} FOR UPDATE SKIP LOCKED`

const planSection = async (backend: Backend): Promise<Section> => {
  const k = Math.max(...Ks)
  const rows: Array<Array<string>> = []
  const notes: Array<string> = []
  for (const priority of [10]) {
    const fresh = await backend.fresh("plan")
    try {
      await withWorker(configOf(fresh.db), (client) =>
        Effect.gen(function*() {
          yield* client.enqueueMany(Array.from({ length: k }, (_, j) => ({ job: orchSleeper, payload: { n: j }, options: { priority } })))
          yield* until(client, (c) => (c.waiting ?? 0) >= k, 20)
        }))
      const now = Date.now()
      const timeIt = async (statement: string, n: number) => {
        if (backend.name === "SQLite") {
          const db = new Database(fresh.db, { readonly: true })
          try {
            const q = db.query(statement)
            q.all()
            const t0 = performance.now()
            for (let i = 0; i < n; i++) q.all()
            return (performance.now() - t0) / n
          } finally {
            db.close()
          }
        }
        // The server's own execution time (EXPLAIN ANALYZE), median of n: a connection per statement would swamp it.
        const times: Array<number> = []
        for (let i = 0; i < n; i++) {
          const plan = (await fresh.query<{ "QUERY PLAN": string }>(`EXPLAIN (ANALYZE) ${statement}`)).map((r) => r["QUERY PLAN"]).join("\n")
          times.push(Number(plan.match(/Execution Time: ([\d.]+)/)?.[1] ?? NaN))
        }
        return median(times)
      }
      const planOf = async (statement: string) =>
        backend.name === "SQLite"
          ? (await fresh.query<{ detail: string }>(`EXPLAIN QUERY PLAN ${statement}`)).map((r) => r.detail).join("; ")
          : (await fresh.query<{ "QUERY PLAN": string }>(`EXPLAIN (ANALYZE, BUFFERS) ${statement}`)).map((r) => r["QUERY PLAN"].trim())
            .filter((l, i, all) => /roster_executions_claim|Index Cond: \(\(queue|Rows Removed|Execution Time/.test(l) || (l.startsWith("Buffers") && i === all.findIndex((x) => x.startsWith("Buffers"))))
            .join(" | ")
      const pgRemoved = (plan: string) => {
        const m = [...plan.matchAll(/Rows Removed by Filter: (\d+)/g)].map((x) => Number(x[1]))
        const b = plan.match(/Buffers: shared hit=(\d+)/)
        return `${m.length ? `rows removed by filter ${m.join("+")}` : "no rows removed by filter"}${b ? `, ${b[1]} buffers hit` : ""}`
      }
      // Only parked rows: nothing due.
      const empty = backend.name === "SQLite" ? sqliteClaimSelect("orch", now, concurrency) : pgClaimSelect("orch", now, concurrency)
      const emptyMs = await timeIt(empty, backend.name === "SQLite" ? 50 : 7)
      const emptyPlan = await planOf(empty)
      // Then due rows at priority 0 (no worker: they stay queued).
      await Effect.runPromise(Effect.gen(function*() {
        const client = yield* Client
        yield* client.enqueueMany(Array.from({ length: 10_000 }, (_, i) => ({ job: orchChild, payload: { n: i } })))
      }).pipe(Effect.provide(Roster.layer(configOf(fresh.db), { configDir: false }).pipe(Layer.provideMerge(logger)))) as Effect.Effect<void>)
      const due = backend.name === "SQLite" ? sqliteClaimSelect("orch", Date.now(), concurrency) : pgClaimSelect("orch", Date.now(), concurrency)
      const dueMs = await timeIt(due, backend.name === "SQLite" ? 50 : 7)
      const duePlan = await planOf(due)
      if (backend.name === "PostgreSQL") {
        await fresh.query("ANALYZE roster_executions")
      }
      const duePlanAfter = backend.name === "PostgreSQL" ? await planOf(due) : duePlan
      rows.push([
        `${count(k)} sleeping at priority ${priority}`,
        `${ms(emptyMs)}${backend.name === "PostgreSQL" ? ` (${pgRemoved(emptyPlan)})` : ""}`,
        `${ms(dueMs)}${backend.name === "PostgreSQL" ? ` (${pgRemoved(duePlanAfter)})` : ""}`
      ])
      notes.push(`priority ${priority}, nothing due: \`${emptyPlan}\``)
      notes.push(`priority ${priority}, 10,000 due at priority 0${backend.name === "PostgreSQL" ? " (after ANALYZE)" : ""}: \`${duePlanAfter}\``)
      progress(`${backend.name} plan priority ${priority}: empty ${ms(emptyMs)} ms, due ${ms(dueMs)} ms`)
    } finally {
      await fresh.drop()
    }
  }
  return {
    title: `Orchestration 3 (${backend.name}): the claim's candidate SELECT (LIMIT ${concurrency}) with ${count(k)} parked rows`,
    headers: ["parked rows", "nothing due: ms per SELECT", "10,000 due at priority 0: ms per SELECT"],
    rows,
    notes: [
      backend.name === "SQLite"
        ? "the claim's inner SELECT as SqliteStore.ts writes it (INDEXED BY roster_executions_claim), run on a read-only connection, mean of 50 after one warm-up."
        : "the claim's inner SELECT as PgStore.ts writes it (FOR UPDATE SKIP LOCKED); ms = the server's Execution Time from EXPLAIN ANALYZE, median of 7; the plan lines shown are the claim index scan's, from EXPLAIN (ANALYZE, BUFFERS).",
      ...notes
    ],
    checks: []
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
  if (parts.has("1")) sections.push(await fanSection(b))
  if (parts.has("2")) sections.push(await parkSection(b))
  if (parts.has("3")) sections.push(await planSection(b))
}
report(sections)
