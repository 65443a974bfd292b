/**
 * The insert of executions on PostgreSQL, shared by the Store (group-committed
 * enqueues), schedule fires and transactional enqueue: one statement for a whole
 * batch (`unnest` of column arrays), which also sends the wake-up.
 *
 * Dedupe keys (modes active and replace) go through DedupeInsert.ts instead.
 *
 * Idempotency: a row whose (job, key) exists is skipped by `ON CONFLICT` and its
 * existing id is read back afterwards (a statement that waited on a concurrent insert
 * of the same key sees it once that commits). Rows are inserted in request order, so
 * of two requests with one key in a batch, the first wins — as on SQLite.
 *
 * Wake-up: `pg_notify('roster_wake', ...)` runs inside the inserting statement, so
 * PostgreSQL delivers it when the surrounding transaction commits, never before the
 * rows are visible, and never for a rollback. The payload names the schema, the queue,
 * the earliest run_at inserted for it and the sending store (`o`), so a process can
 * ignore what it already told its own Dispatchers.
 */
import { Effect } from "effect"
import type { SqlClient } from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"
import type { InsertRequest, InsertResult } from "../Store.ts"
import { StoreError } from "../Store.ts"
import { insertDeduped } from "./DedupeInsert.ts"
import { int4Array, int8Array, textArray } from "./PgValues.ts"
import { encodeRetry } from "../RetryText.ts"

/** The channel every Roster wake-up is sent on; listeners filter by schema. */
export const wakeChannel = "roster_wake"

/** A wake-up as sent on {@link wakeChannel}: schema, queue, earliest due time, origin. */
export interface WakePayload {
  readonly s: string
  readonly q: string
  readonly at: number
  readonly o: string
}

/** An outcome notice as sent on {@link wakeChannel}: schema, `e: 1` (executions ended or moved on), origin. */
export interface OutcomePayload {
  readonly s: string
  readonly e: 1
  readonly o: string
}

/** Options of {@link insertExecutions}. */
export interface InsertOptions {
  /** The sending store's id, echoed in the wake-up (empty: wake everyone, this process too). */
  readonly origin: string
  /**
   * When the same batch may already have been committed by an attempt whose reply was
   * lost: a row whose id exists is then taken as inserted by that attempt, instead of
   * failing as an id conflict.
   */
  readonly ownIdsMayExist?: boolean
}

const columns = (rows: ReadonlyArray<InsertRequest>) => ({
  id: rows.map((r) => r.id),
  job: rows.map((r) => r.job),
  queue: rows.map((r) => r.queue),
  payload: rows.map((r) => r.payload),
  priority: rows.map((r) => r.priority),
  maxAttempts: rows.map((r) => r.retry.attempts),
  retry: rows.map((r) => encodeRetry(r.retry)),
  timeoutMs: rows.map((r) => r.timeoutMs),
  runAt: rows.map((r) => r.runAt),
  createdAt: rows.map((r) => r.now),
  key: rows.map((r) => r.idempotencyKey),
  scheduleId: rows.map((r) => r.scheduleId ?? null),
  fireAt: rows.map((r) => r.fireAt ?? null),
  retryOf: rows.map((r) => r.retryOf ?? null),
  traceContext: rows.map((r) => r.traceContext ?? null),
  concurrencyKey: rows.map((r) => r.concurrencyKey ?? null),
  rateKey: rows.map((r) => r.rateKey ?? null),
  dedupeKey: rows.map((r) => r.dedupeKey ?? null)
})

const hasDedupeKey = (r: InsertRequest) => (r.dedupeKey ?? null) !== null

/**
 * Inserts `rows`; returns, in request order, each row's id and whether it is new. Runs
 * on whatever connection `sql` resolves to — the caller's transaction, if one is open.
 * Rows without a dedupe key go in one statement; rows with one (modes active and
 * replace) one at a time, in request order, through DedupeInsert.ts, all in one
 * transaction (a savepoint inside the caller's).
 */
export const insertExecutions = (
  sql: SqlClient,
  rows: ReadonlyArray<InsertRequest>,
  options: InsertOptions
): Effect.Effect<ReadonlyArray<InsertResult>, SqlError | StoreError> => {
  if (!rows.some(hasDedupeKey)) return insertPlain(sql, rows, options)
  return sql.withTransaction(Effect.gen(function*() {
    // Dedupe keys and idempotency keys never meet, so the plain rows may go first.
    const plain = yield* insertPlain(sql, rows.filter((r) => !hasDedupeKey(r)), options)
    const results: Array<InsertResult> = []
    let i = 0
    for (const r of rows) {
      results.push(hasDedupeKey(r) ? yield* insertDeduped(sql, r, options.origin, options.ownIdsMayExist ?? false) : plain[i++]!)
    }
    return results
  }))
}

/** Inserts rows without a dedupe key in one statement. */
const insertPlain = (
  sql: SqlClient,
  rows: ReadonlyArray<InsertRequest>,
  options: InsertOptions
): Effect.Effect<ReadonlyArray<InsertResult>, SqlError | StoreError> =>
  Effect.gen(function*() {
    if (rows.length === 0) return []
    const c = columns(rows)
    // Strict: only an idempotency conflict is skipped, so an id conflict fails the whole statement.
    const conflict = options.ownIdsMayExist
      ? sql`ON CONFLICT DO NOTHING`
      : sql`ON CONFLICT (job, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING`
    const inserted = yield* sql<{ id: string }>`
      WITH ins AS (
        INSERT INTO roster_executions (id, job, queue, state, payload, priority, attempt, max_attempts, retry, timeout_ms,
          run_at, created_at, idempotency_key, schedule_id, fire_at, retry_of, trace_context, concurrency_key, rate_key, dedupe_key)
        SELECT r.id, r.job, r.queue, 'queued', r.payload, r.priority, 0, r.max_attempts, r.retry, r.timeout_ms,
               r.run_at, r.created_at, r.idempotency_key, r.schedule_id, r.fire_at, r.retry_of, r.trace_context,
               r.concurrency_key, r.rate_key, r.dedupe_key
          FROM unnest(${textArray(c.id)}::text[], ${textArray(c.job)}::text[], ${textArray(c.queue)}::text[], ${textArray(c.payload)}::text[], ${int4Array(c.priority)}::int4[],
                      ${int4Array(c.maxAttempts)}::int4[], ${textArray(c.retry)}::text[], ${int8Array(c.timeoutMs)}::int8[], ${int8Array(c.runAt)}::int8[], ${int8Array(c.createdAt)}::int8[],
                      ${textArray(c.key)}::text[], ${textArray(c.scheduleId)}::text[], ${int8Array(c.fireAt)}::int8[], ${textArray(c.retryOf)}::text[],
                      ${textArray(c.traceContext)}::text[], ${textArray(c.concurrencyKey)}::text[], ${textArray(c.rateKey)}::text[],
                      ${textArray(c.dedupeKey)}::text[])
               WITH ORDINALITY AS r(id, job, queue, payload, priority, max_attempts, retry, timeout_ms, run_at, created_at,
                                    idempotency_key, schedule_id, fire_at, retry_of, trace_context, concurrency_key, rate_key, dedupe_key, ord)
         ORDER BY r.ord
        ${conflict}
        RETURNING id, queue, run_at
      ), woke AS (
        SELECT pg_notify('roster_wake', json_build_object('s', current_schema(), 'q', queue, 'at', MIN(run_at), 'o', ${options.origin}::text)::text)
          FROM ins GROUP BY queue
      )
      SELECT id, (SELECT COUNT(*) FROM woke) AS woke FROM ins`
    const fresh = new Set(inserted.map((r) => r.id))
    if (fresh.size === rows.length) return rows.map((r) => ({ id: r.id, inserted: true }))

    const missing = rows.filter((r) => !fresh.has(r.id))
    const ours = new Set<string>()
    if (options.ownIdsMayExist) {
      const found = yield* sql<{ id: string }>`SELECT id FROM roster_executions WHERE id = ANY(${textArray(missing.map((r) => r.id))}::text[])`
      for (const r of found) ours.add(r.id)
    }
    const keyed = missing.filter((r) => !ours.has(r.id) && r.idempotencyKey !== null)
    const existing = new Map<string, string>()
    if (keyed.length > 0) {
      const found = yield* sql<{ job: string; idempotency_key: string; id: string }>`
        SELECT job, idempotency_key, id FROM roster_executions
         WHERE (job, idempotency_key) IN (SELECT * FROM unnest(${textArray(keyed.map((r) => r.job))}::text[], ${textArray(keyed.map((r) => r.idempotencyKey))}::text[]))`
      for (const r of found) existing.set(`${r.job}\u0000${r.idempotency_key}`, r.id)
    }
    const results: Array<InsertResult> = []
    for (const r of rows) {
      if (fresh.has(r.id) || ours.has(r.id)) {
        results.push({ id: r.id, inserted: true })
        continue
      }
      const id = r.idempotencyKey === null ? undefined : existing.get(`${r.job}\u0000${r.idempotencyKey}`)
      if (id === undefined) {
        return yield* new StoreError({
          message: r.idempotencyKey === null
            ? `execution id ${r.id} already exists`
            : `insert of ${r.job} with key ${r.idempotencyKey} conflicted but no row was found`
        })
      }
      results.push({ id, inserted: false })
    }
    return results
  })
