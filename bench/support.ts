/**
 * What every benchmark shares: sizes from the environment, a throwaway SQLite file in
 * a temp folder, spawning the `roster` CLI as a separate process (with its peak RSS
 * and CPU time), percentiles, in-process memory sampling, machine facts, and the
 * markdown tables a benchmark prints. A benchmark builds `Section`s; run alone it
 * prints them, run by `bench/index.ts` it also writes them as JSON to
 * `BENCH_RESULT_FILE` so the index can print one combined report.
 *
 * Benchmarks are programs, not tests: they may use `Date.now`/`performance.now`
 * freely and never assert a speed (STYLE house rule 5).
 */
import { Database } from "bun:sqlite"
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { cpus, loadavg, tmpdir, totalmem } from "node:os"
import { join, resolve } from "node:path"

/** The project root (where package.json and src/ live). */
export const root = resolve(import.meta.dir, "..")

/** The CLI entry point. */
export const cliEntry = join(root, "src/cli/main.ts")

/** The demo apps folder (demo/noop, demo/sleep, …). */
export const demoApps = join(root, "examples/demo/apps")

/** The bench-only apps folder (bench/mark, bench/noop). */
export const benchApps = join(root, "bench/apps")

/** An integer from the environment, or the default (the real size). */
export const envInt = (name: string, fallback: number): number => {
  const raw = process.env[name]
  if (raw === undefined || raw.trim() === "") return fallback
  const n = Number(raw.replace(/_/g, ""))
  if (!Number.isFinite(n) || n < 0) throw new Error(`${name} must be a non-negative number, got "${raw}"`)
  return Math.floor(n)
}

/** A comma-separated list of integers from the environment (e.g. `BENCH_N=10000,100000`). */
export const envInts = (name: string, fallback: ReadonlyArray<number>): ReadonlyArray<number> => {
  const raw = process.env[name]
  if (raw === undefined || raw.trim() === "") return fallback
  return raw.split(",").map((part) => {
    const n = Number(part.trim().replace(/_/g, ""))
    if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} must be a list of positive numbers, got "${raw}"`)
    return Math.floor(n)
  })
}

/** A temp folder with a database path in it; `cleanup` removes the folder. */
export interface TempDb {
  readonly dir: string
  readonly db: string
  readonly cleanup: () => void
}

const liveDirs = new Set<string>()
let exitHookInstalled = false

/** Makes a temp folder for one benchmark case; removed by `cleanup` or at process exit. */
export const tempDb = (label: string): TempDb => {
  const dir = mkdtempSync(join(tmpdir(), `roster-bench-${label}-`))
  liveDirs.add(dir)
  if (!exitHookInstalled) {
    exitHookInstalled = true
    process.on("exit", () => {
      for (const d of liveDirs) rmSync(d, { recursive: true, force: true })
    })
  }
  return {
    dir,
    db: join(dir, "roster.db"),
    cleanup: () => {
      rmSync(dir, { recursive: true, force: true })
      liveDirs.delete(dir)
    }
  }
}

/** Opens a database read-only for inspecting results (WAL: does not block the writer). */
export const openReader = (path: string): Database => {
  const db = new Database(path, { readonly: true })
  db.run("PRAGMA busy_timeout = 10000")
  return db
}

/** How a child process ended and what it cost. */
export interface ChildResult {
  readonly exitCode: number | null
  readonly stdout: string
  readonly wallMs: number
  /** Peak resident set size, MiB. */
  readonly peakRssMb: number
  /** User + system CPU time, ms. */
  readonly cpuMs: number
}

/** A running child process. */
export interface Child {
  readonly pid: number
  readonly startedAt: number
  /** Sends SIGTERM (graceful shutdown). */
  readonly stop: () => void
  readonly done: Promise<ChildResult>
}

/** Options of {@link spawnRoster}. */
export interface SpawnOptions {
  readonly db: string
  readonly appsDir: string
  /** Text written to stdin, then closed. */
  readonly stdin?: string
  /** File receiving stderr (logs); default: discarded. */
  readonly stderrFile?: string
  readonly env?: Record<string, string>
  /** Extra arguments to `bun` before the script (e.g. `--cpu-prof-md`). */
  readonly bunArgs?: ReadonlyArray<string>
}

/** Spawns `bun src/cli/main.ts <args>` with ROSTER_DB / ROSTER_APPS_DIR set. */
export const spawnRoster = (args: ReadonlyArray<string>, options: SpawnOptions): Child => {
  const startedAt = performance.now()
  if (options.stderrFile) writeFileSync(options.stderrFile, "")
  const proc = Bun.spawn([process.execPath, ...(options.bunArgs ?? []), cliEntry, ...args], {
    cwd: root,
    env: { ...process.env, ...options.env, ROSTER_DB: options.db, ROSTER_APPS_DIR: options.appsDir },
    stdin: options.stdin === undefined ? "ignore" : new Blob([options.stdin]),
    stdout: "pipe",
    stderr: options.stderrFile ? Bun.file(options.stderrFile) : "ignore"
  })
  const done = (async (): Promise<ChildResult> => {
    const stdout = await new Response(proc.stdout).text()
    const exitCode = await proc.exited
    const wallMs = performance.now() - startedAt
    const usage = proc.resourceUsage()
    return {
      exitCode,
      stdout,
      wallMs,
      peakRssMb: usage ? usage.maxRSS / 2 ** 20 : NaN,
      cpuMs: usage ? Number(usage.cpuTime.total) / 1000 : NaN
    }
  })()
  return { pid: proc.pid, startedAt, stop: () => proc.kill("SIGTERM"), done }
}

/**
 * Starts `roster worker <args>` in `cwd` on `db` and `appsDir`, with none of this
 * process's ROSTER_* variables (only `env`'s), keeping its stderr.
 */
export const spawnWorker = (args: ReadonlyArray<string>, options: { readonly db: string; readonly appsDir: string; readonly cwd?: string; readonly env?: Record<string, string> }) => {
  const childEnv: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith("ROSTER_")) childEnv[k] = v
  const proc = Bun.spawn([process.execPath, cliEntry, "worker", ...args], {
    cwd: options.cwd ?? root,
    env: { ...childEnv, ROSTER_DB: options.db, ROSTER_APPS_DIR: options.appsDir, ...options.env },
    stdin: "ignore",
    stdout: "ignore",
    stderr: "pipe"
  })
  let stderr = ""
  const reading = (async () => {
    const decoder = new TextDecoder()
    for await (const chunk of proc.stderr) stderr += decoder.decode(chunk, { stream: true })
  })()
  return { proc, stderr: () => stderr, done: Promise.all([proc.exited, reading]).then(([code]) => code) }
}

/** Runs a roster command to completion; fails on a non-zero exit. */
export const runRoster = async (args: ReadonlyArray<string>, options: SpawnOptions): Promise<ChildResult> => {
  const result = await spawnRoster(args, options).done
  if (result.exitCode !== 0) {
    const tail = options.stderrFile && existsSync(options.stderrFile) ? readFileSync(options.stderrFile, "utf8").slice(-2000) : ""
    throw new Error(`roster ${args.join(" ")} exited ${result.exitCode}\n${result.stdout}\n${tail}`)
  }
  return result
}

/**
 * Bulk-enqueues `n` executions of `job` (payload `{ n: i }`) through the CLI,
 * `roster enqueue <job> --ndjson - --json`; fails unless all `n` were inserted.
 */
export const enqueueBulk = async (job: string, n: number, options: SpawnOptions): Promise<ChildResult> => {
  const result = await runRoster(["enqueue", job, "--ndjson", "-", "--json"], { ...options, stdin: ndjson(n, (i) => ({ n: i })) })
  const inserted = (JSON.parse(result.stdout) as { inserted: number }).inserted
  if (inserted !== n) throw new Error(`enqueue inserted ${inserted} of ${n}`)
  return result
}

/** Kernel clock ticks per second (USER_HZ), the unit of utime/stime in /proc/<pid>/stat. */
const clockTicks = 100

/** VmRSS in MiB and CPU ms (user + system) of a live process; undefined once it has exited. */
export const readProc = (pid: number): { readonly rssMb: number; readonly cpuMs: number } | undefined => {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8")
    const kb = Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1])
    // Fields after the parenthesised command name: utime and stime are the 12th and 13th.
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    const ticks = Number(fields[11]) + Number(fields[12])
    return Number.isFinite(kb) ? { rssMb: kb / 1024, cpuMs: (ticks / clockTicks) * 1000 } : undefined
  } catch {
    return undefined
  }
}

/** The machine's 1-minute load average. */
export const load1 = (): number => Number(readFileSync("/proc/loadavg", "utf8").split(" ")[0])

/** Median of a sample (NaN when empty). */
export const median = (xs: ReadonlyArray<number>): number => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length === 0 ? NaN : s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2
}

/** Least-squares slope of y over x. */
export const slope = (xs: ReadonlyArray<number>, ys: ReadonlyArray<number>): number => {
  const mx = xs.reduce((a, b) => a + b, 0) / xs.length
  const my = ys.reduce((a, b) => a + b, 0) / ys.length
  let num = 0
  let den = 0
  for (let i = 0; i < xs.length; i++) {
    num += (xs[i]! - mx) * (ys[i]! - my)
    den += (xs[i]! - mx) ** 2
  }
  return den === 0 ? NaN : num / den
}

/** Waits until a file contains a string (e.g. a worker's "serving" log line). */
export const waitForText = async (file: string, text: string, timeoutMs = 30_000): Promise<void> => {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (existsSync(file) && readFileSync(file, "utf8").includes(text)) return
    await Bun.sleep(20)
  }
  throw new Error(`timed out waiting for "${text}" in ${file}:\n${existsSync(file) ? readFileSync(file, "utf8").slice(-2000) : "(missing)"}`)
}

/** Summary statistics of a sample, in the sample's unit. */
export interface Percentiles {
  readonly n: number
  readonly mean: number
  readonly p50: number
  readonly p90: number
  readonly p99: number
  readonly max: number
}

/** Nearest-rank percentiles of a sample. */
export const percentiles = (values: ReadonlyArray<number>): Percentiles => {
  if (values.length === 0) return { n: 0, mean: NaN, p50: NaN, p90: NaN, p99: NaN, max: NaN }
  const sorted = Float64Array.from(values).sort()
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!
  let sum = 0
  for (const v of sorted) sum += v
  return { n: sorted.length, mean: sum / sorted.length, p50: at(50), p90: at(90), p99: at(99), max: sorted[sorted.length - 1]! }
}

/** Samples this process's RSS while a phase runs; `stop` returns the peak in MiB. */
export const sampleRss = (intervalMs = 25): { readonly stop: () => number } => {
  let peak = process.memoryUsage().rss
  const timer = setInterval(() => {
    const rss = process.memoryUsage().rss
    if (rss > peak) peak = rss
  }, intervalMs)
  return {
    stop: () => {
      clearInterval(timer)
      peak = Math.max(peak, process.memoryUsage().rss)
      return peak / 2 ** 20
    }
  }
}

/** Facts about the machine a run happened on. */
export interface MachineInfo {
  readonly date: string
  readonly cpu: string
  readonly cores: number
  readonly ramGb: number
  readonly bun: string
  readonly sqlite: string
  readonly os: string
  readonly load: string
}

/** Current load averages (1, 5, 15 min), as `uptime` prints them. */
export const loadNow = (): string => loadavg().map((l) => l.toFixed(2)).join(", ")

/** CPU model, cores, RAM, Bun and SQLite versions, load. */
export const machineInfo = (): MachineInfo => {
  const mem = new Database(":memory:")
  const sqlite = (mem.query("select sqlite_version() as v").get() as { v: string }).v
  mem.close()
  let os = `${process.platform} ${process.arch}`
  try {
    os = `${os}, kernel ${readFileSync("/proc/sys/kernel/osrelease", "utf8").trim()}`
  } catch {
    // not Linux: the platform is enough
  }
  return {
    date: new Date().toISOString(),
    cpu: cpus()[0]?.model ?? "unknown",
    cores: cpus().length,
    ramGb: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    bun: Bun.version,
    sqlite,
    os,
    load: loadNow()
  }
}

/** Machine facts as markdown lines. */
export const machineMarkdown = (m: MachineInfo): string =>
  [
    `- date: ${m.date}`,
    `- cpu: ${m.cpu}, ${m.cores} cores; RAM ${m.ramGb} GiB; ${m.os}`,
    `- bun ${m.bun}, SQLite ${m.sqlite} (WAL, synchronous=FULL), temp dir ${tmpdir()}`,
    `- load average at start (1/5/15 min): ${m.load}`
  ].join("\n")

/** A target a benchmark checks (reported, never asserted). */
export interface Check {
  readonly target: string
  readonly measured: string
  readonly met: boolean
}

/** One table of results, with notes and the targets it checks. */
export interface Section {
  readonly title: string
  readonly headers: ReadonlyArray<string>
  readonly rows: ReadonlyArray<ReadonlyArray<string>>
  readonly notes: ReadonlyArray<string>
  readonly checks: ReadonlyArray<Check>
}

/** A markdown table. */
export const table = (headers: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string>>): string => {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)))
  const line = (cells: ReadonlyArray<string>) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(" | ")} |`
  return [line(headers), `|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`, ...rows.map(line)].join("\n")
}

/** A section as markdown. */
export const sectionMarkdown = (s: Section): string => {
  const parts = [`### ${s.title}`, "", table(s.headers, s.rows)]
  if (s.notes.length > 0) parts.push("", ...s.notes.map((n) => `- ${n}`))
  return parts.join("\n")
}

/** The targets table. */
export const checksMarkdown = (checks: ReadonlyArray<Check>): string =>
  table(["target", "measured", "met"], checks.map((c) => [c.target, c.measured, c.met ? "yes" : "**no**"]))

/** Prints a benchmark's sections; also appends them to BENCH_RESULT_FILE when the index runs it. */
export const report = (sections: ReadonlyArray<Section>): void => {
  const out = process.env.BENCH_RESULT_FILE
  if (out) appendFileSync(out, sections.map((s) => JSON.stringify(s)).join("\n") + "\n")
  const checks = sections.flatMap((s) => s.checks)
  console.log(sections.map(sectionMarkdown).join("\n\n"))
  if (checks.length > 0 && !out) console.log(`\n${checksMarkdown(checks)}`)
}

/** Logs progress to stderr (stdout carries the tables). */
export const progress = (message: string): void => {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}\n`)
}

/** Formats a rate (per second) with thousands separators. */
export const rate = (n: number): string => (Number.isFinite(n) ? Math.round(n).toLocaleString("en-US") : "n/a")

/** Formats milliseconds with sensible precision. */
export const ms = (n: number): string => (!Number.isFinite(n) ? "n/a" : n < 10 ? n.toFixed(2) : n < 100 ? n.toFixed(1) : Math.round(n).toLocaleString("en-US"))

/** Formats MiB. */
export const mb = (n: number): string => (Number.isFinite(n) ? `${Math.round(n)} MiB` : "n/a")

/** Formats an integer count. */
export const count = (n: number): string => n.toLocaleString("en-US")

/** `n` payload lines for `roster enqueue --ndjson -`. */
export const ndjson = (n: number, line: (i: number) => unknown): string => {
  const parts: Array<string> = new Array(n)
  for (let i = 0; i < n; i++) parts[i] = JSON.stringify(line(i))
  return parts.join("\n") + "\n"
}

/** Completion rate over a window of completions, from (startedAt, finishedAt) rows sorted by finishedAt. */
export const windowRate = (rows: ReadonlyArray<{ readonly started_at: number; readonly finished_at: number }>, from: number, to: number): number => {
  const slice = rows.slice(from, to)
  if (slice.length === 0) return NaN
  let first = Infinity
  for (const r of slice) if (r.started_at < first) first = r.started_at
  const last = slice[slice.length - 1]!.finished_at
  // Timestamps are whole ms; a window shorter than 1 ms would divide by zero.
  return (slice.length / Math.max(1, last - (from === 0 ? first : rows[from - 1]!.finished_at))) * 1000
}
