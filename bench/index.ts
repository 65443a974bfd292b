/**
 * `npm run bench`: runs every benchmark, each in its own Bun process (so each one's
 * peak RSS is its own and one cannot warm the JIT for the next), then prints one
 * markdown report: machine facts, the disk's commit cost, each benchmark's table with
 * the load average around it, and the targets met or missed.
 *
 * Env: BENCH_ONLY (comma-separated subset of drain,enqueue,latency,idle,backlog,schedules,profile,costs,
 * or the optional soak, steady, flow and orchestration, which take minutes and run only when
 * named: `BENCH_ONLY=soak`, `BENCH_ONLY=steady`, … — steady, flow and orchestration
 * also on PostgreSQL when ROSTER_BENCH_PG_URL or ROSTER_TEST_PG_URL is set),
 * BENCH_OUT (also write the report to this file); each benchmark's own size variables
 * (see its file) pass through, so `BENCH_N=2000 … npm run bench` is a quick run.
 */
import { Database } from "bun:sqlite"
import { readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { checksMarkdown, loadNow, machineInfo, machineMarkdown, ms, percentiles, progress, root, type Section, sectionMarkdown, tempDb } from "./support.ts"

const all = ["drain", "enqueue", "latency", "idle", "backlog", "schedules", "profile", "costs"] as const
/** Benchmarks that run only when BENCH_ONLY names them. */
const optional = ["soak", "steady", "flow", "orchestration"] as const
const only = process.env.BENCH_ONLY ? process.env.BENCH_ONLY.split(",").map((s) => s.trim()) : [...all]

/** The disk's cost of a durable commit: 300 one-row and 100 fifty-row transactions at synchronous=FULL. */
const commitCost = (): string => {
  const tmp = tempDb("fsync")
  try {
    const db = new Database(tmp.db, { create: true })
    db.run("PRAGMA journal_mode = WAL")
    db.run("PRAGMA synchronous = FULL")
    db.run("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)")
    const insert = db.query("INSERT INTO t (v) VALUES (?)")
    const one = db.transaction(() => insert.run("x".repeat(200)))
    const fifty = db.transaction(() => {
      for (let i = 0; i < 50; i++) insert.run("x".repeat(200))
    })
    const time = (f: () => void, n: number) =>
      percentiles(Array.from({ length: n }, () => {
        const t0 = performance.now()
        f()
        return performance.now() - t0
      }))
    const a = time(() => one.immediate(), 300)
    const b = time(() => fifty.immediate(), 100)
    db.close()
    return `- durable commit on this disk (SQLite WAL, FULL): 1 row p50 ${ms(a.p50)} ms / p99 ${ms(a.p99)} ms; 50 rows p50 ${ms(b.p50)} ms / p99 ${ms(b.p99)} ms`
  } finally {
    tmp.cleanup()
  }
}

/** Where the source under test stands: commit and uncommitted changes under src/. */
const sourceState = async (): Promise<string> => {
  const git = async (...args: Array<string>) => {
    const p = Bun.spawn(["git", ...args], { cwd: root, stdout: "pipe", stderr: "ignore" })
    const out = await new Response(p.stdout).text()
    await p.exited
    return out.trim()
  }
  const head = await git("rev-parse", "--short", "HEAD")
  const dirty = (await git("status", "--short", "--", "src")).split("\n").filter((l) => l.length > 0)
  return `- source: commit ${head || "unknown"}${dirty.length ? `, with uncommitted changes in ${dirty.length} src file(s): ${dirty.map((l) => l.slice(3)).join(", ")}` : ", clean src/"}`
}

interface Ran {
  readonly name: string
  readonly sections: ReadonlyArray<Section>
  readonly loadBefore: string
  readonly loadAfter: string
  readonly wallMs: number
  readonly exitCode: number | null
}

const runBench = async (name: string): Promise<Ran> => {
  const tmp = tempDb(`index-${name}`)
  try {
    const resultFile = join(tmp.dir, "sections.ndjson")
    writeFileSync(resultFile, "")
    const loadBefore = loadNow()
    const started = performance.now()
    progress(`running bench/${name}.ts`)
    const proc = Bun.spawn([process.execPath, join(root, "bench", `${name}.ts`)], {
      cwd: root,
      env: { ...process.env, BENCH_RESULT_FILE: resultFile },
      stdout: "ignore",
      stderr: "inherit"
    })
    const exitCode = await proc.exited
    const sections = readFileSync(resultFile, "utf8").split("\n").filter((l) => l.length > 0).map((l) => JSON.parse(l) as Section)
    return { name, sections, loadBefore, loadAfter: loadNow(), wallMs: performance.now() - started, exitCode }
  } finally {
    tmp.cleanup()
  }
}

const info = machineInfo()
const header = [
  "## Roster benchmarks",
  "",
  machineMarkdown(info),
  commitCost(),
  await sourceState(),
  `- command: ${process.env.npm_lifecycle_event === "bench" ? "npm run bench" : `bun bench/index.ts`}${Object.entries(process.env).filter(([k]) => k.startsWith("BENCH_") && k !== "BENCH_RESULT_FILE").map(([k, v]) => ` ${k}=${v}`).join("")}`
].join("\n")
process.stderr.write(`${header}\n\n`)

const ran: Array<Ran> = []
for (const name of [...all, ...optional]) if (only.includes(name)) ran.push(await runBench(name))

const body = ran.map((r) => {
  const status = r.exitCode === 0 ? "" : ` — **exited ${r.exitCode}; results incomplete**`
  const sections = r.sections.map(sectionMarkdown).join("\n\n")
  return `${sections || `### ${r.name}: no results`}\n- ran ${(r.wallMs / 1000).toFixed(0)} s; load average before ${r.loadBefore}, after ${r.loadAfter}${status}`
}).join("\n\n")
const checks = ran.flatMap((r) => r.sections.flatMap((s) => s.checks))
const reportText = `${header}\n\n${body}\n\n### Targets\n\n${checksMarkdown(checks)}\n\n- load average at the end: ${loadNow()}\n`
console.log(reportText)
if (process.env.BENCH_OUT) writeFileSync(process.env.BENCH_OUT, reportText)
if (ran.some((r) => r.exitCode !== 0)) process.exitCode = 1
