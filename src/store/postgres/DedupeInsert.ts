/**
 * The insert of a row with a dedupe key (modes `active` and `replace`, see docs/jobs.md)
 * on PostgreSQL, one row at a time, called by ExecutionInsert for such rows in request
 * order. The key is held by the partial unique index `roster_executions_dedupe` while
 * its execution is queued or running; the index alone releases it when the holder ends.
 *
 * Each turn: insert with `ON CONFLICT` on that index; on a conflict read the holder;
 * `active` returns it; `replace` rewrites a queued holder (payload, run time, priority,
 * flow keys; only `WHERE state = 'queued'`, so a holder claimed in between is not
 * rewritten) or, when it is running, takes the key from it and inserts again. Other
 * transactions move holders between these statements (a claim, an outcome, another
 * enqueue of the key), so a turn that finds its holder gone or moved starts again, a
 * bounded number of times.
 *
 * A new or replaced row sends the wake-up inside its statement, as ExecutionInsert's
 * insert does: a replaced row's run time may now be earlier.
 */
import { Effect } from "effect"
import type { SqlClient } from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"
import type { InsertRequest, InsertResult } from "../Store.ts"
import { StoreError } from "../Store.ts"
import { encodeRetry } from "../RetryText.ts"

/** Turns before giving up on a key whose holder moves on every turn. */
const maxTurns = 5

/**
 * Inserts `r` (whose `dedupeKey` is set) under its dedupe mode. `origin` is echoed in
 * the wake-up; `ownIdMayExist`: a row whose id exists is taken as inserted by an
 * earlier attempt of the same batch whose reply was lost.
 */
export const insertDeduped = (
  sql: SqlClient,
  r: InsertRequest,
  origin: string,
  ownIdMayExist: boolean
): Effect.Effect<InsertResult, SqlError | StoreError> =>
  Effect.gen(function*() {
    const key = r.dedupeKey
    if (key === null || key === undefined) return yield* new StoreError({ message: `insert of ${r.id} without a dedupe key` })
    if (ownIdMayExist) {
      const own = yield* sql<{ id: string }>`SELECT id FROM roster_executions WHERE id = ${r.id}`
      if (own.length > 0) return { id: r.id, inserted: true }
    }
    for (let turn = 0; turn < maxTurns; turn++) {
      const inserted = yield* sql<{ id: string }>`
        WITH ins AS (
          INSERT INTO roster_executions (id, job, queue, state, payload, priority, attempt, max_attempts, retry, timeout_ms,
            run_at, created_at, idempotency_key, schedule_id, fire_at, retry_of, trace_context, concurrency_key, rate_key, dedupe_key)
          VALUES (${r.id}, ${r.job}, ${r.queue}, 'queued', ${r.payload}, ${r.priority}, 0, ${r.retry.attempts}, ${encodeRetry(r.retry)},
                  ${r.timeoutMs}, ${r.runAt}, ${r.now}, NULL, ${r.scheduleId ?? null}, ${r.fireAt ?? null}, ${r.retryOf ?? null},
                  ${r.traceContext ?? null}, ${r.concurrencyKey ?? null}, ${r.rateKey ?? null}, ${key})
          ON CONFLICT (job, dedupe_key) WHERE dedupe_key IS NOT NULL AND state IN ('queued', 'running', 'waiting') DO NOTHING
          RETURNING id, queue, run_at
        ), woke AS (
          SELECT pg_notify('roster_wake', json_build_object('s', current_schema(), 'q', queue, 'at', run_at, 'o', ${origin}::text)::text) FROM ins
        )
        SELECT id, (SELECT COUNT(*) FROM woke) AS woke FROM ins`
      if (inserted.length > 0) return { id: r.id, inserted: true }
      const holders = yield* sql<{ id: string; state: string }>`
        SELECT id, state FROM roster_executions
         WHERE job = ${r.job} AND dedupe_key = ${key} AND state IN ('queued', 'running', 'waiting')`
      const holder = holders[0]
      // Ended between the two statements: the key is free, insert again.
      if (holder === undefined) continue
      if (r.dedupeMode !== "replace") return { id: holder.id, inserted: false }
      if (holder.state === "queued") {
        const replaced = yield* sql<{ id: string }>`
          WITH up AS (
            UPDATE roster_executions
               SET payload = ${r.payload}, run_at = ${r.runAt}, priority = ${r.priority},
                   concurrency_key = ${r.concurrencyKey ?? null}, rate_key = ${r.rateKey ?? null}
             WHERE id = ${holder.id} AND state = 'queued' AND dedupe_key = ${key}
            RETURNING id, queue, run_at
          ), woke AS (
            SELECT pg_notify('roster_wake', json_build_object('s', current_schema(), 'q', queue, 'at', run_at, 'o', ${origin}::text)::text) FROM up
          )
          SELECT id, (SELECT COUNT(*) FROM woke) AS woke FROM up`
        if (replaced.length > 0) return { id: holder.id, inserted: false, replaced: true }
        // Claimed (or ended) in between: look again.
        continue
      }
      // Running: it keeps running without the key (a later retry of it conflicts with
      // nothing), and this change gets an execution of its own.
      yield* sql`UPDATE roster_executions SET dedupe_key = NULL WHERE id = ${holder.id} AND dedupe_key = ${key}`
    }
    return yield* new StoreError({
      message: `insert of ${r.job} with dedupe key ${key}: its holder moved on ${maxTurns} tries in a row`
    })
  })
