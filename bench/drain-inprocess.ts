/**
 * The worker's own cost per job: an in-process drain through the Promise API, the way
 * an app embeds Roster (`Roster.open`, then `startWorker`), with nothing else running.
 * N silent no-op executions are bulk-enqueued (not timed), then a worker at concurrency
 * 50 drains them; the clock runs from `startWorker` until the store shows all N
 * succeeded. Each repeat runs in a fresh child process, so each pays the same start-up
 * and JIT warm-up (a long-lived worker pays it once).
 *
 * Printed per repeat: jobs/s, the process's CPU (user + system, every thread) per job
 * over the drain, and how long after `startWorker` the first handler ran. Use it for
 * before/after runs of a change to the worker's hot path: run it at both commits,
 * alternating (bench/RESULTS.md shows how).
 *
 * Env: BENCH_INPROC_N (default 100000), BENCH_INPROC_REPEAT (4), BENCH_CONCURRENCY (50),
 * BENCH_INPROC_SYNC (FULL or NORMAL; default FULL, Roster's default).
 */
import { Effect, Schema } from "effect"
import { Job, Roster } from "../src/index.ts"
import { envInt, machineInfo, machineMarkdown, ms, rate, root, table, tempDb } from "./support.ts"

const n = envInt("BENCH_INPROC_N", 100_000)
const repeats = envInt("BENCH_INPROC_REPEAT", 4)
const concurrency = envInt("BENCH_CONCURRENCY", 50)
const sync = process.env.BENCH_INPROC_SYNC === "NORMAL" ? "NORMAL" : "FULL"

interface Run {
  readonly perS: number
  readonly cpuUsPerJob: number
  readonly firstStartMs: number
}

/** One drain in this process; prints its Run as JSON. */
const child = async (): Promise<void> => {
  let starts = 0
  let firstStart = 0
  let allStarted: () => void = () => {}
  const started = new Promise<void>((resolve) => (allStarted = resolve))
  const noop = Job.make({
    id: "bench/inprocess-noop",
    payload: Schema.Struct({ i: Schema.Number, pad: Schema.String }),
    handler: () =>
      Effect.sync(() => {
        if (starts === 0) firstStart = performance.now()
        if (++starts === n) allStarted()
      })
  })
  const tmp = tempDb("drain-inprocess")
  const roster = await Roster.open(
    { db: tmp.db, jobs: [noop], ...(sync === "NORMAL" ? { synchronous: "NORMAL" as const } : {}) },
    { configDir: false, logger: { level: "Warn" } }
  )
  const pad = "x".repeat(30)
  for (let from = 0; from < n; from += 1_000) {
    const items = []
    for (let i = from; i < Math.min(n, from + 1_000); i++) items.push({ job: noop, payload: { i, pad } })
    await roster.enqueueMany(items)
  }
  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  await roster.startWorker({ concurrency })
  await started
  while ((await roster.count({ job: noop.id })).succeeded < n) await Bun.sleep(2)
  const wallMs = performance.now() - t0
  const cpu = process.cpuUsage(cpu0)
  await roster.close()
  tmp.cleanup()
  const run: Run = { perS: (n / wallMs) * 1000, cpuUsPerJob: (cpu.user + cpu.system) / n, firstStartMs: firstStart - t0 }
  console.log(JSON.stringify(run))
}

const main = async (): Promise<void> => {
  const runs: Array<Run> = []
  for (let r = 0; r < repeats; r++) {
    const proc = Bun.spawn([process.execPath, import.meta.path, "--child"], { cwd: root, stdout: "pipe", stderr: "inherit", env: process.env })
    const out = await new Response(proc.stdout).text()
    if ((await proc.exited) !== 0) throw new Error(`repeat ${r + 1} failed`)
    runs.push(JSON.parse(out.trim().split("\n").pop()!) as Run)
  }
  const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
  console.log(`### In-process drain: ${n.toLocaleString("en-US")} × no-op, concurrency ${concurrency}, synchronous=${sync}\n`)
  console.log(table(
    ["repeat", "drain /s", "CPU µs/job", "first start ms"],
    [
      ...runs.map((run, i) => [String(i + 1), rate(run.perS), run.cpuUsPerJob.toFixed(1), ms(run.firstStartMs)]),
      ["median", rate(median(runs.map((r) => r.perS))), median(runs.map((r) => r.cpuUsPerJob)).toFixed(1), ms(median(runs.map((r) => r.firstStartMs)))]
    ]
  ))
  console.log(`\n${machineMarkdown(machineInfo())}`)
}

if (process.argv.includes("--child")) await child()
else await main()

