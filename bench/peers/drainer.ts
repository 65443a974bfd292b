/**
 * One worker process of the multi-process PostgreSQL drain (processes.ts): attaches to
 * a store the coordinator filled and drains it at concurrency 50 until SIGTERM.
 * `bun drainer.ts roster <url with search_path>` or `bun drainer.ts pg-boss <schema>`.
 */
import { PgBoss } from "pg-boss"
import { Roster } from "../../src/index.ts"
import { CONCURRENCY, pgUrl } from "./common.ts"
import { drainWorkOptions } from "./pgboss.ts"
import { noop, openOptions } from "./roster.ts"

const [system, where] = process.argv.slice(2) as [string, string]
let stop: () => Promise<void>
if (system === "roster") {
  const roster = await Roster.open({ db: where, jobs: [noop] }, openOptions)
  await roster.startWorker({ concurrency: CONCURRENCY })
  stop = () => roster.close()
} else {
  const boss = new PgBoss({ connectionString: pgUrl()!, schema: where })
  boss.on("error", (error) => process.stderr.write(`pg-boss error: ${error.message}\n`))
  await boss.start()
  await boss.work("noop", drainWorkOptions, async () => {})
  stop = () => boss.stop({ graceful: true, close: true, timeout: 10_000 })
}
process.stdout.write("ready\n")
process.on("SIGTERM", () => void stop().finally(() => process.exit(0)))
