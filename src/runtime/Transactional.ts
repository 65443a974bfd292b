/**
 * Enqueue inside the caller's transaction (SQLite): a business write and its queued
 * work commit or roll back together.
 *
 * ```ts
 * const placeOrder = db.transaction((order) => {
 *   db.query("INSERT INTO orders ...").run(...)
 *   Effect.runSync(enqueueWithin(db, sendReceipt, { orderId: order.id }))
 * })
 * ```
 *
 * The Effect is synchronous (Clock, Schema and bun:sqlite are), so it can run inside
 * `db.transaction`. The Database must be a connection to the Roster file (already
 * migrated by a Roster process or `roster migrate`).
 */
import type { Database } from "bun:sqlite"
import { Clock, Effect } from "effect"
import type { Job } from "../jobs/Job.ts"
import { insertWithin } from "../store/sqlite/TransactionalInsert.ts"
import { StoreError } from "../store/Store.ts"
import { toStoreError } from "../store/sqlite/SqliteStore.ts"
import { defaultMaxPayloadBytes, prepare, type EnqueueOptions } from "./Enqueue.ts"

/** Enqueues through `db` inside its open transaction; nothing is visible to workers until the caller commits. */
export const enqueueWithin = (
  db: Database,
  job: Job<any, any, any>,
  payload: unknown,
  options: EnqueueOptions & { readonly maxPayloadBytes?: number } = {}
) =>
  Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const row = yield* prepare(job, payload, options, now, options.maxPayloadBytes ?? defaultMaxPayloadBytes)
    const [result] = yield* Effect.try({ try: () => insertWithin(db, [row]), catch: (e) => toStoreError("enqueue within transaction", e) })
    if (!result) return yield* new StoreError({ message: "insert returned no row" })
    return result
  })
