/**
 * Model-based tests of the Store (issue 7): random sequences of enqueues (with and
 * without keys, delayed, prioritised, with flow keys), claims — plain, or under the
 * run's random flow limits (global concurrency, rate limits of the queue, a Job or a Job
 * per key, per-key concurrency) — outcomes (live and fenced), heartbeats, lease expiry,
 * time passing, cancels, manual retries, prunes and queue pauses — and orchestration:
 * child inserts (exactly once per (parent, step)), parks (sleep, children, signal with
 * or without a timeout) alone or in outcome batches, children ending (succeeded, failed,
 * cancelled, lease-expired, released or parked when asked to cancel) that wake their
 * waiting parents, signal sends and takes, cancels of a parent's tree, and claims that
 * resume due waiting executions — run against the real
 * store on every driver side by side with an in-memory model (model/Model.ts). After
 * every command the store is read back and compared with the model (model/invariants.ts).
 *
 * Runs: ROSTER_MODEL_RUNS on SQLite (default 40), a third of it on PostgreSQL, each
 * on a fresh store (file or schema) with up to 100 commands. fast-check prints the seed
 * and the shrunk command sequence of a failure; ROSTER_MODEL_SEED replays that seed.
 */
import { describe, test } from "bun:test"
import fc from "fast-check"
import { drivers, withStore } from "./drivers.ts"
import { commandArbitraries, limitsArbitrary } from "./model/commands.ts"
import { checkInvariants, type Real } from "./model/invariants.ts"
import { Model } from "./model/Model.ts"

const sqliteRuns = Math.max(1, Number(process.env.ROSTER_MODEL_RUNS ?? 40) || 40)
const runsOn = (driver: string) => (driver === "sqlite" ? sqliteRuns : Math.max(1, Math.ceil(sqliteRuns / 3)))
/** ROSTER_MODEL_SEED replays the seed a failure printed. */
const seed = process.env.ROSTER_MODEL_SEED === undefined ? undefined : Number(process.env.ROSTER_MODEL_SEED)
if (seed !== undefined) console.log(`store model: seed ${seed}`)

for (const driver of drivers) {
  describe(`store model (${driver.name})`, () => {
    test("random operation sequences agree with the model and keep every invariant", async () => {
      await fc.assert(
        fc.asyncProperty(limitsArbitrary, fc.commands(commandArbitraries, { maxCommands: 100, size: "max" }), async (limits, commands) => {
          const f = driver.make()
          try {
            const real: Real = { run: (body) => withStore(f, body) }
            const model = new Model(limits)
            await fc.asyncModelRun(() => ({ model, real }), commands)
            // Last, the attempt rows of every execution ever seen.
            for (const id of model.everSeen) model.touched.add(id)
            await checkInvariants(model, real)
          } finally {
            await f.dispose()
          }
        }),
        { numRuns: runsOn(driver.name), ...(seed === undefined ? {} : { seed }) }
      )
    }, 600_000)
  })
}
