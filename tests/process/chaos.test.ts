/**
 * Chaos (issue 7): two workers and two schedulers as real processes on one database,
 * while the test enqueues a seeded mix of Jobs and, every 100–500 ms, kills a random
 * worker or scheduler with SIGKILL or SIGTERM and starts a new one. Afterwards every
 * acknowledged execution ended as its Job dictates, none is lost, every handler run
 * beyond what the Jobs ask for is explained by a lease expiry or a shutdown release,
 * and every second of each per-second schedule was enqueued exactly once
 * (tests/support/chaos/Verify.ts lists the invariants).
 *
 * The seed is printed with the summary; `CHAOS_SEED=<seed>` replays a run's decisions.
 * The large size is `bun bench/chaos.ts` (see docs/reliability.md).
 */
import { afterEach, describe, expect, test } from "bun:test"
import { type ChaosOptions, type ChaosRun, failureReport, runChaos } from "../support/chaos/Chaos.ts"
import { randomSeed } from "../support/chaos/Prng.ts"
import { type ChaosTarget, postgresTarget, sqliteTarget } from "../support/chaos/Target.ts"
import { pgUrl, requireService } from "../support/env.ts"

const pg = requireService("postgres")

const seed = (): number => (process.env.CHAOS_SEED ? Number(process.env.CHAOS_SEED) : randomSeed())

let target: ChaosTarget | undefined
afterEach(async () => {
  await target?.cleanup()
  target = undefined
})

type Size = Pick<ChaosOptions, "workers" | "schedulers" | "concurrency" | "rounds" | "jobs">

const chaos = async (size: Size, makeTarget: () => Promise<ChaosTarget>): Promise<ChaosRun> => {
  target = await makeTarget()
  const run = await runChaos({ target, ...size, seed: seed() })
  console.log(run.summary)
  return run
}

const expectSurvived = (run: ChaosRun, size: Size) => {
  expect(run.problems, failureReport(run)).toEqual([])
  // The run did what it says: every round killed something, and every kind of kill happened.
  expect(run.kills.length).toBe(size.rounds)
  for (const kind of ["worker", "scheduler"]) {
    for (const signal of ["SIGKILL", "SIGTERM"]) {
      expect(run.kills.some((k) => k.kind === kind && k.signal === signal), `${kind} ${signal}`).toBe(true)
    }
  }
  expect(run.enqueue.acked.size).toBe(size.jobs)
  expect(run.verification.executions).toBeGreaterThan(size.jobs)
}

describe("chaos", () => {
  const size: Size = { workers: 2, schedulers: 2, concurrency: 10, rounds: 30, jobs: 500 }

  test("on SQLite, workers and schedulers killed at random lose nothing, duplicate only where a lease expired or a shutdown released, and fire every second once", async () => {
    expectSurvived(await chaos(size, async () => sqliteTarget()), size)
  }, 150_000)
})

describe.skipIf(pg.skip)("chaos on PostgreSQL", () => {
  const size: Size = { workers: 2, schedulers: 2, concurrency: 10, rounds: 20, jobs: 300 }

  test("on PostgreSQL, workers and schedulers killed at random lose nothing, duplicate only where a lease expired or a shutdown released, and fire every second once", async () => {
    expectSurvived(await chaos(size, () => postgresTarget(pgUrl()!)), size)
  }, 150_000)
})
