/**
 * Transactional enqueue on PostgreSQL: inserts executions through the caller's own
 * `SqlClient` while the caller is inside `sql.withTransaction(...)`, so the executions
 * commit or roll back with the caller's rows. Nothing here commits. The insert's
 * `pg_notify` is delivered when the caller commits, waking listening workers then;
 * polling finds the rows even if that wake-up is missed.
 *
 * The client must reach the database (and search_path) where Roster's tables live,
 * already migrated by a Roster process or `roster migrate`, in READ COMMITTED (the
 * default): an idempotency conflict is read back in a later statement.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { InsertRequest, InsertResult } from "../Store.ts"
import { StoreError } from "../Store.ts"
import { insertExecutions } from "./ExecutionInsert.ts"
import { toStoreError } from "./PgErrors.ts"

/** Inserts within the ambient SqlClient transaction; refuses when there is none. */
export const insertWithinSql = (rows: ReadonlyArray<InsertRequest>): Effect.Effect<ReadonlyArray<InsertResult>, StoreError, SqlClient> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const transaction = yield* Effect.serviceOption(sql.transactionService)
    if (transaction._tag === "None") {
      return yield* new StoreError({
        message: "enqueueWithinSql needs an open transaction on this SqlClient (call it inside sql.withTransaction(...))"
      })
    }
    // The caller's client may rename columns (transformResultNames); Roster's SQL wants them as written.
    return yield* insertExecutions(sql.withoutTransforms(), rows, { origin: "" }).pipe(
      Effect.mapError((e) => toStoreError("enqueue within transaction", e))
    )
  })
