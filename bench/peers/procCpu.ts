/**
 * CPU time (user + system, ms) read from Linux's /proc, for what `process.cpuUsage()`
 * does not show apart:
 * - {@link jitCpuMs}: this process's JavaScriptCore compiler threads (`JITWorker`), whose
 *   time cpuUsage counts with the JS thread's. On a 2-core machine every worker process
 *   pays that compile work again (bench/RESULTS.md, fifteenth pass).
 * - {@link serverCpuMs}: every `postgres` process on this machine, the server's side of a
 *   drain (backends that exit between two readings take their time with them; a drain's
 *   backends stay). A server on another machine is not seen at all.
 * Both are NaN where /proc cannot be read (not Linux).
 */
import { readdirSync, readFileSync } from "node:fs"

/** Clock ticks per second of /proc's times (USER_HZ: 100 on Linux's usual builds). */
const TICKS_PER_SECOND = 100

/** The name (comm) and CPU ms so far of one /proc stat file; undefined once the process or thread is gone. */
const statCpu = (path: string): { name: string; ms: number } | undefined => {
  let stat: string
  try {
    stat = readFileSync(path, "utf8")
  } catch {
    return undefined
  }
  // pid (comm) state ppid …: comm may hold spaces, so the fields start after its last ")".
  const close = stat.lastIndexOf(")")
  const fields = stat.slice(close + 2).split(" ")
  // utime and stime: the 14th and 15th fields of stat, the 12th and 13th after comm.
  return { name: stat.slice(stat.indexOf("(") + 1, close), ms: ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND }
}

/** The summed CPU ms of the stat files under `dir`'s entries that `include` accepts by name; NaN when `dir` cannot be listed. */
const sumCpu = (dir: string, entries: (names: Array<string>) => Array<string>, include: (name: string) => boolean): number => {
  let names: Array<string>
  try {
    names = entries(readdirSync(dir))
  } catch {
    return Number.NaN
  }
  let ms = 0
  for (const entry of names) {
    const one = statCpu(`${dir}/${entry}/stat`)
    if (one !== undefined && include(one.name)) ms += one.ms
  }
  return ms
}

/** This process's JIT compiler threads' CPU ms so far (their names are `JITWorker`, numbered or not). */
export const jitCpuMs = (): number => sumCpu("/proc/self/task", (tasks) => tasks, (name) => /^JITWorker[ #]*\d*$/.test(name))

/** The CPU ms so far of every `postgres` process on this machine. */
export const serverCpuMs = (): number => sumCpu("/proc", (names) => names.filter((n) => /^\d+$/.test(n)), (name) => name === "postgres")
