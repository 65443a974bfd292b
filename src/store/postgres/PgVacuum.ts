/**
 * VACUUM of the executions table, asked for by the workers (actors/Vacuumer.ts) as often
 * as the table needs it rather than when autovacuum next looks.
 *
 * Why: a claim changes a row from queued to running, which in PostgreSQL writes a new
 * row version and leaves the old one's entry in the claim index. Those dead entries sit
 * at the head of the index, exactly where every claim starts reading, and only VACUUM
 * takes them out. Autovacuum visits a database at most once a minute
 * (`autovacuum_naptime`, a server-wide setting), and at a few thousand jobs a second a
 * minute's dead entries made each claim cost tens of milliseconds: the worker fell
 * behind and the backlog grew to tens of thousands (bench/steady.ts; bench/RESULTS.md,
 * twenty-fifth pass).
 *
 * `SKIP_LOCKED`: a VACUUM already running on the table (another worker's, autovacuum's)
 * is not waited for. `INDEX_CLEANUP ON`: without it PostgreSQL may skip the index pass
 * when few heap pages hold dead rows, which is the case here, and the index pass is the
 * point. The dead and live counts come from the statistics system (`pg_stat_user_tables`),
 * which backends update about once a second.
 *
 * Only the table's owner (or a superuser) can vacuum it; for anyone else VACUUM warns
 * and does nothing, so ownership is read once and reported instead.
 */
import type { PgClient } from "@effect/sql-pg"
import { Effect } from "effect"
import type { Store, VacuumResult } from "../Store.ts"
import type { Operation } from "./PgStats.ts"
import { type Int8, num } from "./PgValues.ts"

/** The vacuum operation of the PostgreSQL Store. */
export const makePgVacuum = (sql: PgClient.PgClient, op: Operation): Pick<Store["Service"], "executionsVacuum"> => {
  let owner: boolean | undefined
  return {
    executionsVacuum: (req) =>
      op("vacuum executions", Effect.gen(function*() {
        if (owner === undefined) {
          const rows = yield* sql<{ owner: boolean }>`
            SELECT pg_has_role(current_user, c.relowner, 'USAGE') AS owner FROM pg_class c WHERE c.oid = 'roster_executions'::regclass`
          owner = rows[0]?.owner === true
        }
        if (!owner) return { _tag: "not-owner" } satisfies VacuumResult
        const stats = yield* sql<{ dead: Int8; live: Int8 }>`
          SELECT n_dead_tup AS dead, n_live_tup AS live FROM pg_stat_user_tables WHERE relid = 'roster_executions'::regclass`
        const dead = num(stats[0]?.dead ?? 0)
        const live = num(stats[0]?.live ?? 0)
        if (dead < req.minDeadRows || dead < req.minDeadShare * live) return { _tag: "below", dead } satisfies VacuumResult
        yield* sql.unsafe("VACUUM (SKIP_LOCKED, INDEX_CLEANUP ON) roster_executions")
        return { _tag: "vacuumed", dead } satisfies VacuumResult
      }))
  }
}
