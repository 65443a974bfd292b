/**
 * The PostgreSQL claims find their rows by the versions their subquery locked (`ctid`:
 * the plain claim in PgStore.ts, the global-limited one in PgClaimFunction.ts). Queued
 * rows that other transactions update while claims run (a new row version each time,
 * committed between a claim's snapshot and its lock) must never be claimed twice nor
 * lost: at most they wait for a later claim.
 */
import { SQL } from "bun"
import { describe, expect, test } from "bun:test"
import { Effect } from "effect"
import type { Store } from "../../src/store/Store.ts"
import { pgUrl, requireService } from "../support/env.ts"
import { postgres, urlWithSchema, withStore } from "./drivers.ts"
import { claimOf, row } from "./rows.ts"

const pg = requireService("postgres")

/** The two claims that find rows by version: plain, and under a global limit (roster_claim_global) far above the rows. */
const claims = {
  plain: (s: Store["Service"], worker: string) => s.executionsClaim(claimOf({ workerId: worker, limit: 7 })),
  "global-limited": (s: Store["Service"], worker: string) =>
    Effect.map(
      s.executionsClaimLimited({ ...claimOf({ workerId: worker, limit: 7 }), limits: { globalConcurrency: 10_000, rateLimit: null, jobs: {} } }),
      (c) => c.executions
    )
}

describe.skipIf(pg.skip)("claim by row version (postgres)", () => {
  test.each(Object.keys(claims) as Array<keyof typeof claims>)("%s claims racing updates of the queued rows take each row once, and every row in the end", async (form) => {
    const f = postgres(pgUrl()!).make()
    const others = [f.second(), f.second()]
    const location = f.location
    if (location.driver !== "postgres") throw new Error("expected a PostgreSQL fixture")
    const updater = new SQL(urlWithSchema(location.url, location.schema), { max: 1 })
    try {
      await withStore(f, (s) => s.migrate)
      const n = 600
      await withStore(f, (s) => s.executionsInsert(Array.from({ length: n }, () => row())))

      // New versions of random queued rows, each committed at once, for as long as the claims run.
      let claiming = true
      let updates = 0
      const churn = (async () => {
        while (claiming) {
          await updater.unsafe(`UPDATE roster_executions SET priority = priority
            WHERE id IN (SELECT id FROM roster_executions WHERE state = 'queued' ORDER BY random() LIMIT 25)`)
          updates++
        }
      })()

      // Until every row is claimed (or claimed rows add up to n with repeats, which the
      // checks below catch), with a deadline far above the second a run takes: the last
      // rows are claimed between the updater's statements, which lock up to 25 of them.
      const claimed: Array<{ id: string; attempt: number; worker: string }> = []
      const deadline = Date.now() + 40_000
      const claimer = async (fixture: typeof f, worker: string) => {
        while (claimed.length < n && Date.now() < deadline) {
          const got = await withStore(fixture, (s) => claims[form](s, worker))
          for (const e of got) claimed.push({ id: e.id, attempt: e.attempt, worker })
          if (got.length === 0) await Bun.sleep(2)
        }
      }
      await Promise.all([claimer(f, "a"), claimer(others[0]!, "b"), claimer(others[1]!, "c")])
      claiming = false
      await churn

      expect(updates).toBeGreaterThan(0)
      const ids = claimed.map((c) => c.id)
      expect(new Set(ids).size).toBe(ids.length)
      expect(ids).toHaveLength(n)
      expect(claimed.every((c) => c.attempt === 1)).toBe(true)
      const states = await updater.unsafe(`SELECT state, attempt, COUNT(*)::int AS n FROM roster_executions GROUP BY state, attempt`)
      expect([...states]).toEqual([{ state: "running", attempt: 1, n }])
    } finally {
      await updater.close()
      for (const o of others) await o.dispose()
      await f.dispose()
    }
  }, 90_000)
})
