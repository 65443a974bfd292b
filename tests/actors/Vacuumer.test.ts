/**
 * The Vacuumer (src/actors/Vacuumer.ts): on SQLite its loop ends at the first answer; on
 * PostgreSQL it leaves a table with few dead row versions alone and vacuums it once
 * claims and outcomes have left {@link Vacuumer.minDeadRows} of them.
 */
import { describe, expect, test } from "bun:test"
import { Effect, Fiber } from "effect"
import * as Vacuumer from "../../src/actors/Vacuumer.ts"
import { pgUrl, requireService } from "../support/env.ts"
import { waitFor } from "../support/processes.ts"
import { claimAndSucceed, executionStats } from "../store/deadVersions.ts"
import { postgres, sqlite, withStore } from "../store/drivers.ts"

const pg = requireService("postgres")

test("SQLite: the loop ends at once", async () => {
  const f = sqlite.make()
  try {
    await withStore(f, (s) => s.migrate)
    // Returns (a loop that kept sleeping would hit the test's timeout).
    await f.run(Vacuumer.loop({ intervalMs: 60_000 }))
  } finally {
    await f.dispose()
  }
})

describe.skipIf(pg.skip)("Vacuumer (postgres)", () => {
  test("vacuums once claims and outcomes left enough dead row versions, not before", async () => {
    const f = postgres(pgUrl()!).make()
    const location = f.location
    if (location.driver !== "postgres") throw new Error("expected a PostgreSQL fixture")
    const stats = () => executionStats(location.schema)
    const churn = (n: number) => claimAndSucceed(f, n)
    try {
      await withStore(f, (s) => s.migrate)
      const loop = await f.run(Effect.forkDetach(Vacuumer.loop({ intervalMs: 100 })))
      try {
        // Below the threshold: 2,000 dead versions, counted, left alone.
        await churn(1_000)
        await waitFor("the first dead versions in the statistics", async () => (await stats()).dead >= 2_000, { timeoutMs: 30_000 })
        await Bun.sleep(500)
        expect((await stats()).vacuums).toBe(0)
        // Past it: the loop vacuums within a few of its ticks once the statistics show them.
        await churn(Vacuumer.minDeadRows / 2)
        await waitFor("a VACUUM by the Vacuumer", async () => (await stats()).vacuums >= 1, { timeoutMs: 30_000 })
        expect((await stats()).dead).toBeLessThan(Vacuumer.minDeadRows)
      } finally {
        await f.run(Fiber.interrupt(loop))
      }
    } finally {
      await f.dispose()
    }
  }, 90_000)
})
