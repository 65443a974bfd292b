/**
 * The chaos test at a large size (issue 7): N `roster worker` and M `roster scheduler`
 * processes on one database while this process enqueues a seeded mix of Jobs and, every
 * 100–500 ms, kills a random worker or scheduler with SIGKILL or SIGTERM and starts a
 * new one, for a fixed number of rounds; then it drains, verifies every invariant
 * (tests/support/chaos/Verify.ts) and prints the summary table. Exits 1 when an
 * invariant broke, printing the problems and the processes' log tails. The small size
 * runs in CI as tests/process/chaos.test.ts; docs/reliability.md explains both.
 *
 *   bun bench/chaos.ts [--workers 4] [--schedulers 2] [--rounds 200] [--jobs 20000]
 *                      [--concurrency 20] [--driver sqlite|postgres] [--seed N]
 *
 * PostgreSQL needs ROSTER_BENCH_PG_URL or ROSTER_TEST_PG_URL (a fresh schema is made
 * and dropped). `--seed` (or CHAOS_SEED) replays a run's decisions: which process is
 * killed, with which signal, after how long, and the mix of Jobs.
 */
import { parseArgs } from "node:util"
import { failureReport, runChaos } from "../tests/support/chaos/Chaos.ts"
import { randomSeed } from "../tests/support/chaos/Prng.ts"
import { type ChaosTarget, postgresTarget, sqliteTarget } from "../tests/support/chaos/Target.ts"

const { values } = parseArgs({
  options: {
    workers: { type: "string", default: "4" },
    schedulers: { type: "string", default: "2" },
    rounds: { type: "string", default: "200" },
    jobs: { type: "string", default: "20000" },
    concurrency: { type: "string", default: "20" },
    driver: { type: "string", default: "sqlite" },
    seed: { type: "string" }
  }
})

const count = (name: keyof typeof values): number => {
  const n = Number(String(values[name]).replace(/_/g, ""))
  if (!Number.isInteger(n) || n < 1) {
    console.error(`--${name} must be a positive integer, got "${values[name]}"`)
    process.exit(2)
  }
  return n
}

const progress = (line: string) => process.stderr.write(`[bench/chaos] ${line}\n`)

const target = async (): Promise<ChaosTarget> => {
  if (values.driver === "sqlite") return sqliteTarget()
  if (values.driver !== "postgres") {
    console.error(`--driver must be sqlite or postgres, got "${values.driver}"`)
    process.exit(2)
  }
  const url = process.env.ROSTER_BENCH_PG_URL || process.env.ROSTER_TEST_PG_URL
  if (!url) {
    console.error("--driver postgres needs ROSTER_BENCH_PG_URL or ROSTER_TEST_PG_URL (a postgres:// URL of a scratch database)")
    process.exit(2)
  }
  return postgresTarget(url)
}

const seed = Number(values.seed ?? process.env.CHAOS_SEED ?? randomSeed())
const where = await target()
progress(`seed ${seed} (replay with --seed ${seed}); ${where.driver} in ${where.dir}`)
try {
  const run = await runChaos({
    target: where,
    workers: count("workers"),
    schedulers: count("schedulers"),
    rounds: count("rounds"),
    jobs: count("jobs"),
    concurrency: count("concurrency"),
    seed,
    drainTimeoutMs: 600_000,
    progress
  })
  console.log(run.summary)
  if (run.problems.length > 0) {
    console.error(failureReport(run))
    process.exitCode = 1
  }
} finally {
  await where.cleanup()
}
