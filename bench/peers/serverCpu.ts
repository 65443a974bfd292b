/**
 * The CPU (user + system, ms) every `postgres` process on this machine has used so far,
 * read from /proc: the server's side of a drain, which the workers' own CPU leaves out.
 * The difference of two readings is what the server spent between them (backends that
 * exit in between take their time with them; a drain's backends stay). NaN where /proc
 * cannot be read (not Linux); a server on another machine is not seen at all.
 */
import { readdirSync, readFileSync } from "node:fs"

/** Clock ticks per second of /proc/<pid>/stat's times (USER_HZ: 100 on Linux's usual builds). */
const TICKS_PER_SECOND = 100

export const serverCpuMs = (): number => {
  let pids: Array<string>
  try {
    pids = readdirSync("/proc").filter((name) => /^\d+$/.test(name))
  } catch {
    return Number.NaN
  }
  let ticks = 0
  for (const pid of pids) {
    let stat: string
    try {
      stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    } catch {
      continue
    }
    // pid (comm) state ppid …: comm may hold spaces, so split after its closing paren.
    const close = stat.lastIndexOf(")")
    if (stat.slice(stat.indexOf("(") + 1, close) !== "postgres") continue
    const fields = stat.slice(close + 2).split(" ")
    ticks += Number(fields[11]) + Number(fields[12]) // utime, stime (fields 14 and 15 of stat)
  }
  return (ticks * 1000) / TICKS_PER_SECOND
}
