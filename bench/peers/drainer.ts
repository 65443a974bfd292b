/**
 * One worker process of the multi-process PostgreSQL drain (processes.ts): attaches to
 * a store the coordinator filled and drains it at concurrency 50 until SIGTERM.
 * `bun drainer.ts roster <url with search_path>` or `bun drainer.ts pg-boss <schema>`.
 * It loads and connects, prints "ready", and starts working only when a line arrives
 * on stdin: the coordinator sends it once every process is ready, so no process's
 * start-up takes CPU from another's drain. At SIGTERM it prints "cpu <ready> <end>":
 * its CPU time (user + system, ms) when it was ready and at the end, and "jit <ready>
 * <end>": the part of it spent on JavaScriptCore's compiler threads (procCpu.ts).
 */
import { PgBoss } from "pg-boss"
import { Roster } from "../../src/index.ts"
import { CONCURRENCY, pgUrl } from "./common.ts"
import { drainWorkOptions } from "./pgboss.ts"
import { noop, openOptions } from "./roster.ts"
import { jitCpuMs } from "./procCpu.ts"

const [system, where] = process.argv.slice(2) as [string, string]

const cpuMs = (): number => {
  const u = process.cpuUsage()
  return Math.round((u.user + u.system) / 1000)
}

/** Resolves at the first line on stdin (the coordinator's go). */
const go = async (): Promise<void> => {
  for await (const chunk of Bun.stdin.stream()) if (new TextDecoder().decode(chunk).includes("\n")) return
}

/** Stops on SIGTERM (printing the CPU line), then says ready and waits for the go. */
const readyToWork = async (stop: () => Promise<void>): Promise<void> => {
  const readyCpu = cpuMs()
  const readyJit = jitCpuMs()
  process.on("SIGTERM", () => {
    process.stdout.write(`cpu ${readyCpu} ${cpuMs()}\njit ${readyJit} ${jitCpuMs()}\n`)
    void stop().finally(() => process.exit(0))
  })
  process.stdout.write("ready\n")
  await go()
}

if (system === "roster") {
  const roster = await Roster.open({ db: where, jobs: [noop] }, openOptions)
  await readyToWork(() => roster.close())
  await roster.startWorker({ concurrency: CONCURRENCY })
} else {
  const boss = new PgBoss({ connectionString: pgUrl()!, schema: where })
  boss.on("error", (error) => process.stderr.write(`pg-boss error: ${error.message}\n`))
  await boss.start()
  await readyToWork(() => boss.stop({ graceful: true, close: true, timeout: 10_000 }))
  await boss.work("noop", drainWorkOptions, async () => {})
}
