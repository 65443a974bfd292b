/**
 * Dead row versions in a PostgreSQL fixture's executions table, for the vacuum tests
 * (tests/store/vacuum.test.ts, tests/actors/Vacuumer.test.ts): making them the way a
 * worker does, and reading the server's statistics of them.
 */
import { Effect } from "effect"
import { pgUrl } from "../support/env.ts"
import { pgQuery, type StoreFixture, withStore } from "./drivers.ts"
import { claimOf, row } from "./rows.ts"

/**
 * Inserts `n` executions, claims them and stores their successes: the claim and the
 * success each leave a dead version of every row, 2n in all. Returns how many were claimed.
 */
export const claimAndSucceed = (f: StoreFixture, n: number): Promise<number> =>
  withStore(f, (s) =>
    Effect.gen(function*() {
      yield* s.executionsInsert(Array.from({ length: n }, () => row()))
      const claimed = yield* s.executionsClaim(claimOf({ limit: n }))
      yield* s.executionsFinish(claimed.map((e) => ({ kind: "succeeded" as const, id: e.id, workerId: "w1", attempt: e.attempt, now: 2_000, startedAt: 1_000, result: null })))
      return claimed.length
    }))

/**
 * The executions table's dead row versions and VACUUM count in `schema`, as the server's
 * statistics show them (the writing connections report them up to 10 s after, once idle).
 */
export const executionStats = async (schema: string): Promise<{ readonly dead: number; readonly vacuums: number }> => {
  const [r] = await pgQuery(pgUrl()!, `SELECT n_dead_tup::int AS dead, vacuum_count::int AS vacuums FROM pg_stat_user_tables WHERE schemaname = '${schema}' AND relname = 'roster_executions'`)
  return r as { dead: number; vacuums: number }
}
