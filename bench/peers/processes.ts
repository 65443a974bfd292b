/**
 * PostgreSQL drain with 1 and with 4 worker processes, Roster against pg-boss on the
 * same server (issue 17's PostgreSQL target; index.ts runs one process per system).
 * For each (repeat, system, K): N jobs are bulk-enqueued into a fresh schema, then K
 * worker processes (drainer.ts: Roster's `startWorker({ concurrency: 50 })`, pg-boss's
 * `work` with batchSize 50 + burstWhenBatchFull) drain them. Each process loads and
 * connects first and starts working only when all K are ready, so start-up neither
 * counts nor takes CPU from a drain under way. The rate is N over first start → last
 * completion, read from each system's own job table; the wall time from the go to all
 * stored is shown beside, and the CPU the worker processes spent from the go to their
 * stop, per job, with the part JavaScriptCore's compiler threads took (procCpu.ts);
 * beside it the server's: every `postgres` process on this machine
 * (procCpu.ts; only a server on this machine can be counted).
 *
 *   ROSTER_TEST_PG_URL=postgres://… node_modules/.bin/bun bench/peers/processes.ts
 *
 * Env: BENCH_PEERS_N (default 20000), BENCH_PEERS_REPEAT (default 3),
 * BENCH_PEERS_PROCESSES (default 1,4).
 */
import { PgBoss } from "pg-boss"
import { join } from "node:path"
import { Roster } from "../../src/index.ts"
import { CHUNK, median, N, payloads, peersDir, pgUrl, progress, rate, REPEAT, sleep } from "./common.ts"
import { adminQuery, freshSchema, pgDurability, pgUnavailable, schemaName } from "./postgres.ts"
import { noop, openOptions } from "./roster.ts"
import { serverCpuMs } from "./procCpu.ts"

const counts = (process.env.BENCH_PEERS_PROCESSES ?? "1,4").split(",").map((s) => Number(s.trim())).filter((k) => k > 0)

interface Prepared {
  /** drainer.ts's second argument. */
  readonly where: string
  /** Completed so far, and the first start → last completion span in ms. */
  readonly progress: () => Promise<{ done: number; spanMs: number }>
  readonly drop: () => Promise<void>
}

const prepareRoster = async (): Promise<Prepared> => {
  const schema = await freshSchema("roster")
  const roster = await Roster.open({ db: schema.url, jobs: [noop] }, openOptions)
  for (let from = 0; from < N; from += CHUNK) {
    await roster.enqueueMany(payloads(from, Math.min(CHUNK, N - from)).map((p) => ({ job: noop, payload: p })))
  }
  await roster.close()
  return {
    where: schema.url,
    progress: async () => {
      const [r] = await adminQuery<{ done: number; span: number | null }>(
        `SELECT count(*)::int AS done, (max(finished_at) - min(started_at))::float8 AS span
           FROM "${schema.schema}".roster_executions WHERE state = 'succeeded'`
      )
      return { done: r?.done ?? 0, spanMs: r?.span ?? 0 }
    },
    drop: schema.drop
  }
}

const preparePgBoss = async (): Promise<Prepared> => {
  const schema = schemaName("pgboss")
  const boss = new PgBoss({ connectionString: pgUrl()!, schema })
  await boss.start()
  await boss.createQueue("noop")
  for (let from = 0; from < N; from += CHUNK) await boss.insert("noop", payloads(from, Math.min(CHUNK, N - from)).map((data) => ({ data })))
  await boss.stop({ graceful: true, close: true, timeout: 10_000 })
  return {
    where: schema,
    progress: async () => {
      const [r] = await adminQuery<{ done: number; span: number | null }>(
        `SELECT count(*)::int AS done, (extract(epoch FROM max(completed_on) - min(started_on)) * 1000)::float8 AS span
           FROM "${schema}".job WHERE name = 'noop' AND state = 'completed'`
      )
      return { done: r?.done ?? 0, spanMs: r?.span ?? 0 }
    },
    drop: async () => void (await adminQuery(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`))
  }
}

const systems = [
  { id: "roster", label: "Roster, PostgreSQL", prepare: prepareRoster },
  { id: "pg-boss", label: "pg-boss (batchSize 50 + burstWhenBatchFull)", prepare: preparePgBoss }
] as const

/** A drainer's stdout, read as lines: `next(prefix)` resolves with the first line starting so. */
const linesOf = (stdout: ReadableStream<Uint8Array>) => {
  const seen: Array<string> = []
  let buffer = ""
  let wake: () => void = () => {}
  let ended = false
  void (async () => {
    for await (const chunk of stdout) {
      buffer += new TextDecoder().decode(chunk)
      const parts = buffer.split("\n")
      buffer = parts.pop() ?? ""
      seen.push(...parts)
      wake()
    }
    ended = true
    wake()
  })()
  return {
    next: async (prefix: string): Promise<string> => {
      while (true) {
        const line = seen.find((l) => l.startsWith(prefix))
        if (line !== undefined) return line
        if (ended) throw new Error(`a drainer exited without printing "${prefix}…" (it printed: ${seen.join(" | ")})`)
        await new Promise<void>((resolve) => (wake = resolve))
      }
    }
  }
}

interface Drain {
  readonly rate: number
  readonly wallMs: number
  /** The workers' CPU (user + system) from the go to SIGTERM, µs per job, all processes together. */
  readonly cpuUsPerJob: number
  /** The part of cpuUsPerJob spent on the workers' JIT compiler threads (NaN when it cannot be read). */
  readonly jitUsPerJob: number
  /** The PostgreSQL server's CPU from the go to the last outcome stored, µs per job (NaN when it cannot be read). */
  readonly serverUsPerJob: number
}

/** One drain: K processes on a freshly filled store; jobs/s from the store, wall ms, and CPU per job. */
const drainOnce = async (system: (typeof systems)[number], k: number): Promise<Drain> => {
  const store = await system.prepare()
  const children = Array.from({ length: k }, () =>
    Bun.spawn([process.execPath, join(peersDir, "drainer.ts"), system.id, store.where], { stdin: "pipe", stdout: "pipe", stderr: "inherit", env: process.env }))
  const outputs = children.map((c) => linesOf(c.stdout))
  let stopped = false
  const stop = async () => {
    if (stopped) return
    stopped = true
    for (const c of children) c.kill("SIGTERM")
    await Promise.all(children.map((c) => c.exited))
  }
  try {
    await Promise.all(outputs.map((o) => o.next("ready")))
    for (const c of children) {
      c.stdin.write("go\n")
      c.stdin.flush()
    }
    const t0 = performance.now()
    const server0 = serverCpuMs()
    let state = await store.progress()
    while (state.done < N) {
      if (performance.now() - t0 > 600_000) throw new Error(`${system.id} × ${k}: ${state.done} of ${N} after 600 s`)
      await sleep(50)
      state = await store.progress()
    }
    const wallMs = performance.now() - t0
    const serverMs = serverCpuMs() - server0
    await stop()
    let cpuMs = 0
    let jitMs = 0
    for (const o of outputs) {
      const [, ready, end] = (await o.next("cpu ")).split(" ").map(Number) as [number, number, number]
      cpuMs += end - ready
      const [, jitReady, jitEnd] = (await o.next("jit ")).split(" ").map(Number) as [number, number, number]
      jitMs += jitEnd - jitReady
    }
    return { rate: (N / state.spanMs) * 1000, wallMs, cpuUsPerJob: (cpuMs * 1000) / N, jitUsPerJob: (jitMs * 1000) / N, serverUsPerJob: (serverMs * 1000) / N }
  } finally {
    await stop()
    await store.drop()
  }
}

const why = await pgUnavailable()
if (why) {
  console.error(`bench/peers/processes.ts: ${why}`)
  process.exit(2)
}
const results = new Map<string, Array<Drain>>()
for (let r = 1; r <= REPEAT; r++) {
  for (const k of counts) {
    for (const system of systems) {
      const one = await drainOnce(system, k)
      progress(`repeat ${r}: ${system.id} × ${k}: ${rate(one.rate)}/s (wall ${Math.round(one.wallMs)} ms, CPU ${Math.round(one.cpuUsPerJob)} µs/job of which JIT ${Math.round(one.jitUsPerJob)}, server ${Math.round(one.serverUsPerJob)} µs/job)`)
      results.set(`${system.id}/${k}`, [...(results.get(`${system.id}/${k}`) ?? []), one])
    }
  }
}
const rows = counts.flatMap((k) => systems.map((s) => {
  const runs = results.get(`${s.id}/${k}`) ?? []
  return `| ${s.label} | ${k} | ${rate(median(runs.map((x) => x.rate)))} | ${runs.map((x) => rate(x.rate)).join(" / ")} | ${rate(median(runs.map((x) => x.wallMs)))} | ${Math.round(median(runs.map((x) => x.cpuUsPerJob)))} | ${Math.round(median(runs.map((x) => x.jitUsPerJob)))} | ${Math.round(median(runs.map((x) => x.serverUsPerJob)))} |`
}))
console.log([
  `PostgreSQL drain, ${N.toLocaleString("en-US")} jobs, concurrency 50 per process, ${REPEAT} repeat(s), median (${await pgDurability()})`,
  "",
  "| system | worker processes | drain /s (first start → last completion) | per repeat | wall ms (go → all stored) | workers' CPU µs per job (go → end, all processes) | of it, JIT compiler threads | server's CPU µs per job (go → all stored) |",
  "|---|--:|--:|---|--:|--:|--:|--:|",
  ...rows
].join("\n"))
process.exit(0)
