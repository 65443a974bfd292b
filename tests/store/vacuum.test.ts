/**
 * `executionsVacuum`: SQLite has nothing to reclaim; PostgreSQL vacuums the executions
 * table once enough dead row versions built up (counted from its statistics), and
 * reports, without vacuuming, when the database user does not own the table.
 */
import { describe, expect, test } from "bun:test"
import { ManagedRuntime } from "effect"
import { Store } from "../../src/store/Store.ts"
import { pgUrl, requireService } from "../support/env.ts"
import { waitFor } from "../support/processes.ts"
import { layerFor, pgAdmin, pgQuery, postgres, sqlite, withStore } from "./drivers.ts"
import { claimAndSucceed, executionStats } from "./deadVersions.ts"

const pg = requireService("postgres")

test("SQLite: nothing to vacuum, ever", async () => {
  const f = sqlite.make()
  try {
    await withStore(f, (s) => s.migrate)
    expect(await withStore(f, (s) => s.executionsVacuum({ minDeadRows: 0, minDeadShare: 0 }))).toEqual({ _tag: "unneeded" })
  } finally {
    await f.dispose()
  }
})

describe.skipIf(pg.skip)("vacuum (postgres)", () => {
  const stats = executionStats

  test("vacuums once enough dead row versions built up, and not before", async () => {
    const f = postgres(pgUrl()!).make()
    const location = f.location
    if (location.driver !== "postgres") throw new Error("expected a PostgreSQL fixture")
    try {
      await withStore(f, (s) => s.migrate)
      const n = 300
      // The claim and the success each leave a dead version of every row behind: 2n.
      expect(await claimAndSucceed(f, n)).toBe(n)
      // The statistics arrive once the writing connections report them: up to 10 s after, when they go idle.
      await waitFor("the dead versions in the statistics", async () => (await stats(location.schema)).dead >= 2 * n, { timeoutMs: 30_000 })
      const before = await stats(location.schema)

      const below = await withStore(f, (s) => s.executionsVacuum({ minDeadRows: 1_000_000, minDeadShare: 0 }))
      expect(below).toEqual({ _tag: "below", dead: before.dead })
      const share = await withStore(f, (s) => s.executionsVacuum({ minDeadRows: 1, minDeadShare: 100 }))
      expect(share._tag).toBe("below")
      expect((await stats(location.schema)).vacuums).toBe(before.vacuums)

      const done = await withStore(f, (s) => s.executionsVacuum({ minDeadRows: 1, minDeadShare: 0 }))
      expect(done).toEqual({ _tag: "vacuumed", dead: before.dead })
      const after = await stats(location.schema)
      expect(after.vacuums).toBe(before.vacuums + 1)
      expect(after.dead).toBeLessThan(n)
      // Nothing the vacuum took was live: every execution is still there, succeeded.
      const [count] = await pgQuery(pgUrl()!, `SELECT COUNT(*)::int AS n FROM "${location.schema}".roster_executions WHERE state = 'succeeded'`)
      expect(count).toEqual({ n })
    } finally {
      await f.dispose()
    }
  }, 60_000)

  test("a database user that does not own the table is told so, and nothing runs", async () => {
    const f = postgres(pgUrl()!).make()
    const location = f.location
    if (location.driver !== "postgres") throw new Error("expected a PostgreSQL fixture")
    const role = `roster_t_vac_${process.pid}_${Date.now().toString(36)}`
    const admin = pgUrl()!
    try {
      await withStore(f, (s) => s.migrate)
      // A second login role, with a password so that the server's auth method (trust or not) lets it in.
      await pgAdmin(admin, `CREATE ROLE "${role}" LOGIN PASSWORD 'vacuum-test'`)
      await pgAdmin(admin, `GRANT CONNECT, CREATE ON DATABASE "${new URL(admin).pathname.slice(1)}" TO "${role}"`)
      await pgAdmin(admin, `GRANT USAGE, CREATE ON SCHEMA "${location.schema}" TO "${role}"`)
      await pgAdmin(admin, `GRANT SELECT, UPDATE ON ALL TABLES IN SCHEMA "${location.schema}" TO "${role}"`)
      const url = new URL(admin)
      url.username = role
      url.password = "vacuum-test"
      const runtime = ManagedRuntime.make(layerFor({ driver: "postgres", url: url.toString(), schema: location.schema }))
      try {
        const before = await stats(location.schema)
        expect(await runtime.runPromise(Store.use((s) => s.executionsVacuum({ minDeadRows: 0, minDeadShare: 0 })))).toEqual({ _tag: "not-owner" })
        expect((await stats(location.schema)).vacuums).toBe(before.vacuums)
      } finally {
        await runtime.dispose()
      }
    } finally {
      await f.dispose()
      await pgAdmin(admin, `DROP OWNED BY "${role}"`).catch(() => {})
      await pgAdmin(admin, `DROP ROLE IF EXISTS "${role}"`)
    }
  }, 60_000)
})
