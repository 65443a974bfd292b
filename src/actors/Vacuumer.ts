/**
 * The Vacuumer keeps the dead row versions that claims and outcomes leave in the
 * executions table from piling up between autovacuum's visits: on PostgreSQL every claim
 * walks past all of them at the head of the claim index (store/postgres/PgVacuum.ts).
 * Every `intervalMs` it asks the store to vacuum once at least {@link minDeadRows} dead
 * versions, and {@link minDeadShare} of the live rows, have built up; the share keeps a
 * table of millions of finished rows (whose VACUUM reads every index whole) from being
 * vacuumed for a few thousand. Each worker runs one; a second VACUUM while one runs is
 * skipped, not queued.
 *
 * It ends at its first answer on SQLite (`unneeded`: SQLite removes a row's old index
 * entries as it writes), and with one log line when the database user does not own the
 * table (its VACUUM would do nothing; autovacuum still runs).
 */
import { Effect } from "effect"
import { Store } from "../store/Store.ts"

/** Dead row versions below which a vacuum is not worth its index scans. */
export const minDeadRows = 10_000
/** And the share of live rows they must also reach. */
export const minDeadShare = 0.05

/** The Vacuumer's loop, to be run under supervise(). */
export const loop = (options: { readonly intervalMs: number }) =>
  Effect.gen(function*() {
    const store = yield* Store
    while (true) {
      const result = yield* store.executionsVacuum({ minDeadRows, minDeadShare }).pipe(
        Effect.catchTag("StoreError", (e) => Effect.as(Effect.logWarning(`vacuum of roster_executions failed: ${e.message}`), undefined))
      )
      if (result?._tag === "unneeded") return
      if (result?._tag === "not-owner") {
        return yield* Effect.logInfo("not vacuuming roster_executions: the database user does not own it (autovacuum still does)")
      }
      if (result?._tag === "vacuumed") yield* Effect.logDebug(`vacuumed roster_executions (${result.dead} dead row versions)`)
      yield* Effect.sleep(options.intervalMs)
    }
  })
