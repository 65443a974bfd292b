/**
 * What an idle Roster process costs: CPU per second (user + system, from
 * /proc/<pid>/stat) and wake-ups of a `roster worker` and a `roster scheduler` with
 * nothing to do, on a fresh SQLite file with the bench app (no schedules), measured
 * over a window after each has started. A worker on a quiet database should sleep:
 * this is the figure a laptop's battery or a cloud bill sees.
 *
 * Env: BENCH_IDLE_SECONDS (window, default 20), BENCH_IDLE_WATCH_MS (ROSTER_WATCH_MS
 * for the worker, default unset: Roster's default).
 */
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { benchApps, envInt, progress, report, type Section, spawnRoster, tempDb, waitForText } from "./support.ts"

const seconds = envInt("BENCH_IDLE_SECONDS", 20)
const watchMs = process.env.BENCH_IDLE_WATCH_MS

/** utime + stime of a process, in clock ticks (100 per second on Linux). */
const ticksOf = (pid: number): number => {
  // The command name (field 2) may hold spaces; the fields after its ")" are fixed.
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
  return Number(fields[11]) + Number(fields[12])
}

/** Voluntary context switches so far (each is a sleep the process woke from). */
const switchesOf = (pid: number): number =>
  Number(/voluntary_ctxt_switches:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? NaN)

const measure = async (command: "worker" | "scheduler", ready: string): Promise<ReadonlyArray<string>> => {
  const t = tempDb(`idle-${command}`)
  const log = join(t.dir, `${command}.log`)
  const env: Record<string, string> = watchMs !== undefined && command === "worker" ? { ROSTER_WATCH_MS: watchMs } : {}
  const child = spawnRoster([command], { db: t.db, appsDir: benchApps, stderrFile: log, env })
  try {
    await waitForText(log, ready)
    await Bun.sleep(2_000)
    const t0 = ticksOf(child.pid)
    const s0 = switchesOf(child.pid)
    progress(`idle ${command}: measuring ${seconds} s`)
    await Bun.sleep(seconds * 1_000)
    const cpuMsPerS = ((ticksOf(child.pid) - t0) * 10) / seconds
    const wakeups = (switchesOf(child.pid) - s0) / seconds
    return [command, `${cpuMsPerS.toFixed(1)} ms/s`, `${(cpuMsPerS / 10).toFixed(2)}%`, wakeups.toFixed(0)]
  } finally {
    child.stop()
    await child.done
    t.cleanup()
  }
}

const rows = [await measure("worker", "serving"), await measure("scheduler", "started with")]
const section: Section = {
  title: "An idle worker's CPU",
  headers: ["process", "CPU", "of one core", "sleeps woken /s (main thread)"],
  rows,
  notes: [
    `measured over ${seconds} s, 2 s after the process said it was ready; fresh SQLite file, bench app, nothing enqueued`,
    `worker ROSTER_WATCH_MS: ${watchMs ?? "default"}`
  ],
  checks: []
}
report([section])
