/**
 * Enqueue inside the caller's PostgreSQL transaction: a business write and its queued
 * work commit or roll back together.
 *
 * ```ts
 * const placeOrder = (order: Order) =>
 *   sql.withTransaction(Effect.gen(function*() {
 *     yield* sql`INSERT INTO orders ${sql.insert(order)}`
 *     yield* enqueueWithinSql(sendReceipt, { orderId: order.id })
 *   }))
 * ```
 *
 * The ambient `SqlClient` (from `@effect/sql-pg`) must reach the database and schema
 * of Roster's tables (already migrated by a Roster process or `roster migrate`).
 * Listening workers are woken when the caller commits.
 */
import { Clock, Effect } from "effect"
import type { Job } from "../jobs/Job.ts"
import { insertWithinSql } from "../store/postgres/TransactionalInsert.ts"
import { StoreError } from "../store/Store.ts"
import { defaultMaxPayloadBytes, prepare, type EnqueueOptions } from "./Enqueue.ts"

/** Enqueues through the ambient SqlClient transaction; nothing is visible to workers until the caller commits. */
export const enqueueWithinSql = (
  job: Job<any, any, any>,
  payload: unknown,
  options: EnqueueOptions & { readonly maxPayloadBytes?: number } = {}
) =>
  Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const row = yield* prepare(job, payload, options, now, options.maxPayloadBytes ?? defaultMaxPayloadBytes)
    const [result] = yield* insertWithinSql([row])
    if (!result) return yield* new StoreError({ message: "insert returned no row" })
    return result
  })
