/**
 * Roster side by side with peer job queues (issue 17): plainjob (SQLite), BullMQ
 * (Redis), pg-boss and graphile-worker (PostgreSQL), and Roster itself on SQLite at
 * synchronous=FULL (its default) and NORMAL and on PostgreSQL, through each one's own
 * public client, with the same four workloads (workloads.ts). Prints one markdown
 * table (median of BENCH_PEERS_REPEAT repeats) and notes on stdout; progress on stderr.
 *
 * Each (system, repeat) runs in a child process of its own (child.ts), and repeats are
 * interleaved (every system once, then again; even repeats in reverse order), so drift
 * in the machine's load spreads over all rows and no system always follows the same
 * one. BullMQ gets a private redis-server started here (no persistence) and stopped at
 * the end, unless BENCH_REDIS_URL names one. After each repeat a host probe
 * (hostProbe.ts: no job system, a fixed 0.5 ms of computation after the same pauses as
 * the latency samples) shows how much of a p99 this machine adds by itself; it is the
 * table's last row (BENCH_PEERS_PROBE=0 leaves it out).
 *
 *   cd bench/peers && npm install --no-audit --no-fund        # once
 *   cd ../.. && ROSTER_TEST_PG_URL=postgres://… node_modules/.bin/bun bench/peers/index.ts
 *
 * Env: BENCH_PEERS_N (20000), BENCH_PEERS_REPEAT (3), BENCH_PEERS_ONLY (comma list of
 * system ids), BENCH_PEERS_LATENCY_N (500), BENCH_PEERS_LATENCY_SECONDS (30),
 * BENCH_PEERS_CHUNK (1000), BENCH_PEERS_CONCURRENCY (50), BENCH_PEERS_OUT_MD (also write
 * the report there), BENCH_PEERS_PROBE (0: no host probe), ROSTER_TEST_PG_URL or
 * BENCH_PG_URL, BENCH_REDIS_URL.
 */
import { execFileSync } from "node:child_process"
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { cpus, loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { CHUNK, CONCURRENCY, LATENCY_N, LATENCY_SECONDS, median, ms, N, peersDir, progress, rate, REPEAT, repoRoot, type System } from "./common.ts"
import { redisDurability, type RedisServer, startRedis } from "./redis.ts"
import { entries } from "./systems.ts"
import type { RunResult } from "./workloads.ts"

if (!existsSync(join(peersDir, "node_modules"))) {
  console.error("bench/peers has no node_modules: run `cd bench/peers && npm install --no-audit --no-fund` first")
  process.exit(2)
}

const only = (process.env.BENCH_PEERS_ONLY ?? "").split(",").map((s) => s.trim()).filter((s) => s.length > 0)
for (const id of only) {
  if (!entries.some((e) => e.id === id)) {
    console.error(`BENCH_PEERS_ONLY: unknown system "${id}"; one of: ${entries.map((e) => e.id).join(", ")}`)
    process.exit(2)
  }
}
const selected = entries.filter((e) => only.length === 0 || only.includes(e.id))

const git = (...args: Array<string>): string => {
  try {
    return execFileSync("git", args, { cwd: repoRoot, encoding: "utf8" }).trim()
  } catch {
    return "?"
  }
}

const loadStart = loadavg()
const startedAt = new Date()
// The sources Roster runs from are the working tree's, as of the start.
const commit = git("rev-parse", "--short", "HEAD")
const srcDirty = git("status", "--porcelain", "--", "src") !== ""

// BullMQ's Redis: the caller's, or a private one.
let redis: RedisServer | undefined
if (selected.some((e) => e.id === "bullmq") && !process.env.BENCH_REDIS_URL) {
  const started = await startRedis()
  if (typeof started === "string") process.env.BENCH_REDIS_SKIP = started
  else {
    redis = started
    process.env.BENCH_REDIS_URL = started.url
    progress(`redis-server pid ${started.pid} on ${started.url} (no persistence)`)
  }
}
if (process.env.BENCH_REDIS_URL) process.env.BENCH_REDIS_DURABILITY = await redisDurability(process.env.BENCH_REDIS_URL)

interface Row {
  readonly system: System
  readonly skipped?: string
  readonly durability: string
  readonly runs: Array<RunResult>
  readonly failures: Array<string>
}

const rows: Array<Row> = []
for (const entry of selected) {
  const system = await entry.load()
  const skipped = await system.unavailable()
  rows.push({ system, ...(skipped ? { skipped } : {}), durability: skipped ? "" : await system.durability(), runs: [], failures: [] })
  if (skipped) progress(`${system.id}: skipped: ${skipped}`)
}

/** Runs one repeat of one system in a child process. */
const runChild = async (row: Row, repeat: number): Promise<void> => {
  const out = join(tmpdir(), `roster-peers-${process.pid}-${row.system.id}-${repeat}.json`)
  rmSync(out, { force: true })
  const proc = Bun.spawn([process.execPath, join(peersDir, "child.ts"), row.system.id], {
    cwd: repoRoot,
    env: { ...process.env, BENCH_PEERS_OUT: out },
    stdin: "ignore",
    stdout: "inherit",
    stderr: "inherit"
  })
  const code = await proc.exited
  if (code === 0 && existsSync(out)) {
    row.runs.push(JSON.parse(readFileSync(out, "utf8")) as RunResult)
    rmSync(out, { force: true })
  } else {
    row.failures.push(`repeat ${repeat}: child exited ${code}`)
    progress(`${row.system.id} repeat ${repeat}: child exited ${code}`)
  }
}

const probeRuns: Array<{ p50: number; p99: number; n: number }> = []
const withProbe = process.env.BENCH_PEERS_PROBE !== "0"

/** One host probe in a child process (hostProbe.ts). */
const runProbe = async (repeat: number): Promise<void> => {
  const out = join(tmpdir(), `roster-peers-${process.pid}-probe-${repeat}.json`)
  rmSync(out, { force: true })
  const proc = Bun.spawn([process.execPath, join(peersDir, "hostProbe.ts"), out], { cwd: repoRoot, stdin: "ignore", stdout: "inherit", stderr: "inherit" })
  if ((await proc.exited) === 0 && existsSync(out)) {
    const run = JSON.parse(readFileSync(out, "utf8")) as { p50: number; p99: number; n: number }
    probeRuns.push(run)
    progress(`host probe repeat ${repeat}: p50 ${ms(run.p50)} ms, p99 ${ms(run.p99)} ms`)
  } else progress(`host probe repeat ${repeat}: child failed`)
  rmSync(out, { force: true })
}

const repeatLoads: Array<number> = []
try {
  for (let repeat = 1; repeat <= REPEAT; repeat++) {
    repeatLoads.push(loadavg()[0]!)
    // Odd repeats in the listed order, even ones reversed: no system always runs right
    // after the same one (a child that fsyncs hard leaves the disk busy for the next).
    for (const row of repeat % 2 === 1 ? rows : [...rows].reverse()) {
      if (row.skipped) continue
      progress(`${row.system.id}: repeat ${repeat} of ${REPEAT}`)
      await runChild(row, repeat)
    }
    if (withProbe) await runProbe(repeat)
  }
} finally {
  await redis?.stop()
}

const fmtRate = (values: ReadonlyArray<number>) => rate(median(values))
const cells = (row: Row): Array<string> => {
  if (row.skipped) return [row.system.label, `skipped: ${row.skipped}`, "—", "—", "—", "—", "—"]
  const r = row.runs
  const samples = median(r.map((x) => x.latencyN))
  const p99 = ms(median(r.map((x) => x.p99)))
  return [
    row.system.label,
    row.durability,
    fmtRate(r.map((x) => x.enqueuePerS)),
    fmtRate(r.map((x) => x.bulkPerS)),
    fmtRate(r.map((x) => x.drainPerS)),
    ms(median(r.map((x) => x.p50))),
    samples < LATENCY_N ? `${p99} (n=${samples})` : p99
  ]
}

const headers = ["system", "durability setting", "enqueue 1-by-1 /s", "bulk /s", `drain c=${CONCURRENCY} /s`, "enqueue→start p50 ms", "p99 ms"]
const table = (head: ReadonlyArray<string>, body: ReadonlyArray<ReadonlyArray<string>>): string => {
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((r) => (r[i] ?? "").length)))
  const line = (c: ReadonlyArray<string>) => `| ${c.map((x, i) => x.padEnd(widths[i]!)).join(" | ")} |`
  const align = head.map((_, i) => (i < 2 ? "-".repeat(widths[i]! + 2) : `${"-".repeat(widths[i]! + 1)}:`))
  return [line(head), `|${align.join("|")}|`, ...body.map(line)].join("\n")
}

const osName = (() => {
  try {
    return /PRETTY_NAME="([^"]+)"/.exec(readFileSync("/etc/os-release", "utf8"))?.[1] ?? process.platform
  } catch {
    return process.platform
  }
})()

/** Each repeat's figures, for the spread behind a median. */
const raw = (row: Row): string => {
  const list = (f: (r: RunResult) => string) => row.runs.map(f).join(" / ")
  return `${row.system.label}, per repeat: enqueue ${list((r) => rate(r.enqueuePerS))}; bulk ${list((r) => rate(r.bulkPerS))}; drain ${list((r) => rate(r.drainPerS))}; p50 ${list((r) => ms(r.p50))}; p99 ${list((r) => ms(r.p99))}`
}

const notes: Array<string> = [
  `N = ${N.toLocaleString("en-US")} jobs per workload, ${REPEAT} repeat(s) interleaved across systems (even repeats in reverse order), median shown; 50-byte JSON payloads; a no-op handler; every store fresh and empty per workload; worker, client and benchmark in one process per system (a child of index.ts).`,
  `enqueue 1-by-1: each call awaited until the system acknowledged it. bulk: the system's bulk call with ${CHUNK.toLocaleString("en-US")} jobs each. drain: ${N.toLocaleString("en-US")} queued jobs, clock from starting the worker until the store shows all succeeded. latency: enqueue call → handler start, one job at a time (1–10 ms pause) into an idle worker at the system's defaults; up to ${LATENCY_N} samples or ${LATENCY_SECONDS} s per repeat ("n=" when the time ran out first: those systems poll).`,
  ...rows.filter((r) => !r.skipped).map((r) => `${r.system.label}: ${r.system.version()}; ${r.system.settings}.`),
  ...rows.flatMap((r) => [
    ...r.failures.map((f) => `${r.system.label}: ${f}.`),
    ...r.runs.flatMap((run, k) => Object.entries(run.errors).map(([w, e]) => `${r.system.label}, repeat ${k + 1}, ${w}: ${e}`))
  ]),
  ...(REPEAT > 1 ? rows.filter((r) => r.runs.length > 0).map(raw) : []),
  `machine: ${cpus().length} cores (${cpus()[0]?.model ?? "?"}), ${osName}, Bun ${Bun.version}; load average at start ${loadStart.map((l) => l.toFixed(2)).join(", ")} (1-minute figure at each repeat's start: ${repeatLoads.map((l) => l.toFixed(1)).join(", ")}), at end ${loadavg().map((l) => l.toFixed(2)).join(", ")}.`,
  `commit ${commit}${srcDirty ? " (src/ had uncommitted changes)" : ""}; started ${startedAt.toISOString()}, took ${Math.round((Date.now() - startedAt.getTime()) / 1000)} s.`
]

const probeRow = probeRuns.length === 0 ? [] : [[
  "host probe (no job system: 0.5 ms of computation after the same pauses)",
  "—", "—", "—", "—",
  ms(median(probeRuns.map((r) => r.p50))),
  ms(median(probeRuns.map((r) => r.p99)))
]]
if (probeRuns.length > 0) {
  notes.splice(notes.length - 2, 0, `host probe, per repeat: p50 ${probeRuns.map((r) => ms(r.p50)).join(" / ")}; p99 ${probeRuns.map((r) => ms(r.p99)).join(" / ")} ms (${probeRuns[0]!.n} windows each; a hot window is 0.5 ms, so the rest is the machine).`)
}

const report = [table(headers, [...rows.map(cells), ...probeRow]), "", ...notes.map((n) => `- ${n}`)].join("\n")
console.log(report)
if (process.env.BENCH_PEERS_OUT_MD) writeFileSync(process.env.BENCH_PEERS_OUT_MD, report + "\n")
