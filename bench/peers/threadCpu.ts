/**
 * This process's CPU (user + system, ms) by thread kind, read from /proc/self/task:
 * JavaScriptCore compiles hot functions on its own `JITWorker` threads, whose time
 * `process.cpuUsage()` counts with the JS thread's. On a 2-core machine that compile
 * work is paid again by every worker process (bench/RESULTS.md, fifteenth pass). Empty
 * where /proc cannot be read (not Linux).
 */
import { readdirSync, readFileSync } from "node:fs"

/** Clock ticks per second of /proc's times (USER_HZ: 100 on Linux's usual builds). */
const TICKS_PER_SECOND = 100

/** CPU ms so far of each thread name, trailing numbers dropped ("JITWorker", "bun", "HeapHelper", ...). */
export const threadCpuMs = (): Record<string, number> => {
  const byName: Record<string, number> = {}
  let tasks: Array<string>
  try {
    tasks = readdirSync("/proc/self/task")
  } catch {
    return byName
  }
  for (const task of tasks) {
    let stat: string
    try {
      stat = readFileSync(`/proc/self/task/${task}/stat`, "utf8")
    } catch {
      continue // the thread ended meanwhile
    }
    const close = stat.lastIndexOf(")")
    const name = stat.slice(stat.indexOf("(") + 1, close).replace(/[ #]*\d+$/, "")
    const fields = stat.slice(close + 2).split(" ")
    byName[name] = (byName[name] ?? 0) + ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND
  }
  return byName
}

/** The JIT compiler threads' CPU ms so far (NaN where it cannot be read). */
export const jitCpuMs = (): number => {
  const byName = threadCpuMs()
  return Object.keys(byName).length === 0 ? Number.NaN : (byName["JITWorker"] ?? 0)
}
