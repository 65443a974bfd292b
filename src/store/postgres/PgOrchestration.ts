/**
 * Orchestration on PostgreSQL (DESIGN §7), with the semantics of SQLite's
 * (SqliteOrchestration.ts). Under READ COMMITTED a check and a write in one statement
 * can both miss a concurrent commit, so every wake-up check here first locks the row it
 * may wake (`FOR UPDATE`, in its own statement) and then reads in a new statement, whose
 * snapshot sees whatever committed before the lock was granted: a park and the end of
 * its last child, or a park and its signal, can never both miss each other, nor can two
 * children ending at once both miss being last.
 */
import type { PgClient } from "@effect/sql-pg"
import { Effect } from "effect"
import { parseWait, type Signal, type SignalSendResult } from "../../jobs/Wait.ts"
import type { ExecutionState } from "../Execution.ts"
import { type InsertRequest, type InsertResult, type Outcome, StoreError } from "../Store.ts"
import { type Int8, num, numOrNull, textArray } from "./PgValues.ts"
import { encodeRetry } from "../RetryText.ts"

type Park = Extract<Outcome, { kind: "park" }>

/** The orchestration operations of the PostgreSQL Store, on `sql` (the caller's transaction, if open). */
export const makePgOrchestration = (sql: PgClient.PgClient, origin: string) => {
  const notifyQueue = (queue: string, at: number) =>
    sql`SELECT pg_notify('roster_wake', json_build_object('s', current_schema(), 'q', ${queue}::text, 'at', ${at}::int8, 'o', ${origin}::text)::text)`

  /** Awaited children of a locked waiting parent, none still active: due now. */
  const wakeIfChildrenDone = (id: string, now: number) =>
    sql<{ queue: string }>`
      UPDATE roster_executions AS p SET run_at = ${now}
       WHERE p.id = ${id} AND p.state = 'waiting' AND p.run_at > ${now} AND (p.wait::jsonb ->> 'kind') = 'children'
         AND NOT EXISTS (SELECT 1 FROM roster_executions c
                          WHERE c.parent_id = p.id AND c.id IN (SELECT jsonb_array_elements_text(p.wait::jsonb -> 'ids'))
                            AND c.state IN ('queued','running','waiting'))
      RETURNING p.queue`

  const wakeIfSignalKept = (id: string, now: number) =>
    sql<{ queue: string }>`
      UPDATE roster_executions AS p SET run_at = ${now}
       WHERE p.id = ${id} AND p.state = 'waiting' AND p.run_at > ${now} AND (p.wait::jsonb ->> 'kind') = 'signal'
         AND EXISTS (SELECT 1 FROM roster_signals s WHERE s.execution_id = p.id AND s.name = (p.wait::jsonb ->> 'signal') AND s.consumed_at IS NULL)
      RETURNING p.queue`

  const woke = (rows: ReadonlyArray<{ readonly queue: string }>, now: number) =>
    Effect.forEach(rows, (r) => notifyQueue(r.queue, now), { discard: true })

  /** Makes due the waiting parents of these ended executions whose awaited children have all ended. */
  const wakeParents = (endedIds: ReadonlyArray<string>, now: number) =>
    Effect.gen(function*() {
      if (endedIds.length === 0) return
      const parents = yield* sql<{ id: string }>`
        SELECT id FROM roster_executions
         WHERE id IN (SELECT parent_id FROM roster_executions WHERE id = ANY(${textArray(endedIds)}::text[]) AND parent_id IS NOT NULL)
         ORDER BY id FOR UPDATE`
      for (const p of parents) yield* woke(yield* wakeIfChildrenDone(p.id, now), now)
    })

  return {
    wakeParents,
    /** Applies a park outcome (the row stays locked), then makes it due at once if what it waits for already happened. */
    park: (o: Park) =>
      Effect.gen(function*() {
        const [row] = yield* sql<{ state: ExecutionState; queue: string }>`
          UPDATE roster_executions
             SET state = CASE WHEN cancel_requested THEN 'cancelled' ELSE 'waiting' END,
                 finished_at = CASE WHEN cancel_requested THEN ${o.now} ELSE finished_at END,
                 run_at = ${o.runAt}, wait = ${JSON.stringify(o.wait)}, attempt = attempt - 1,
                 started_at = NULL, lease_owner = NULL, lease_expires_at = NULL
           WHERE id = ${o.id} AND lease_owner = ${o.workerId} AND attempt = ${o.attempt} AND state = 'running'
          RETURNING state, queue`
        if (!row) return false
        if (row.state === "waiting" && o.wait.kind === "children") yield* woke(yield* wakeIfChildrenDone(o.id, o.now), o.now)
        if (row.state === "waiting" && o.wait.kind === "signal") yield* woke(yield* wakeIfSignalKept(o.id, o.now), o.now)
        if (row.state === "waiting") yield* notifyQueue(row.queue, o.runAt)
        return true
      }),
    /** Cancels the tree below a cancelled execution (queued and waiting ones at once, running ones asked). */
    cancelTree: (id: string, now: number) =>
      Effect.gen(function*() {
        const tree = yield* sql<{ id: string; state: ExecutionState }>`
          WITH RECURSIVE tree(id) AS (
            SELECT id FROM roster_executions WHERE parent_id = ${id}
            UNION SELECT e.id FROM roster_executions e JOIN tree t ON e.parent_id = t.id)
          SELECT e.id, e.state FROM roster_executions e WHERE e.id IN (SELECT id FROM tree) ORDER BY e.id FOR UPDATE`
        if (tree.length === 0) return
        const ids = tree.map((t) => t.id)
        const cancelled = yield* sql<{ id: string }>`
          UPDATE roster_executions SET state = 'cancelled', finished_at = ${now}
           WHERE id = ANY(${textArray(ids)}::text[]) AND state IN ('queued','waiting') RETURNING id`
        yield* sql`UPDATE roster_executions SET cancel_requested = true WHERE id = ANY(${textArray(ids)}::text[]) AND state = 'running'`
        if (cancelled.length > 0) yield* sql`SELECT pg_notify('roster_wake', json_build_object('s', current_schema(), 'e', 1, 'o', ${origin}::text)::text)`
      }),
    insertChild: (req: { readonly parentId: string; readonly step: string; readonly attempt: number; readonly row: InsertRequest }) =>
      Effect.gen(function*() {
        const r = req.row
        const inserted = yield* sql<{ id: string }>`
          INSERT INTO roster_executions (id, job, queue, state, payload, priority, attempt, max_attempts, retry, timeout_ms,
            run_at, created_at, idempotency_key, schedule_id, fire_at, retry_of, trace_context, concurrency_key, rate_key,
            dedupe_key, parent_id, parent_step)
          VALUES (${r.id}, ${r.job}, ${r.queue}, 'queued', ${r.payload}, ${r.priority}, 0, ${r.retry.attempts}, ${encodeRetry(r.retry)},
            ${r.timeoutMs}, ${r.runAt}, ${r.now}, ${r.idempotencyKey}, ${r.scheduleId ?? null}, ${r.fireAt ?? null}, ${r.retryOf ?? null},
            ${r.traceContext ?? null}, ${r.concurrencyKey ?? null}, ${r.rateKey ?? null}, ${r.dedupeKey ?? null}, ${req.parentId}, ${req.step})
          ON CONFLICT DO NOTHING
          RETURNING id`
        const saveStep = (id: string) =>
          sql`INSERT INTO roster_steps (execution_id, name, output, attempt, created_at)
              VALUES (${req.parentId}, ${req.step}, ${JSON.stringify(id)}, ${req.attempt}, ${r.now}) ON CONFLICT DO NOTHING`
        if (inserted.length === 0) {
          // The (parent, step) child exists; or, as on SQLite, the child's (job, idempotency key) is held: its holder is the child.
          const [existing] = yield* sql<{ id: string }>`SELECT id FROM roster_executions WHERE parent_id = ${req.parentId} AND parent_step = ${req.step}`
          if (existing) return { id: existing.id, inserted: false } satisfies InsertResult
          const [holder] = r.idempotencyKey === null ? [] :
            yield* sql<{ id: string }>`SELECT id FROM roster_executions WHERE job = ${r.job} AND idempotency_key = ${r.idempotencyKey}`
          if (!holder) return yield* Effect.fail(new StoreError({ message: `child insert of ${r.job} for ${req.parentId} step ${req.step} conflicted but no row was found` }))
          yield* saveStep(holder.id)
          return { id: holder.id, inserted: false } satisfies InsertResult
        }
        yield* saveStep(r.id)
        yield* notifyQueue(r.queue, r.runAt)
        return { id: r.id, inserted: true } satisfies InsertResult
      }),
    signalSend: (req: { readonly id: string; readonly name: string; readonly payload: string; readonly now: number }) =>
      Effect.gen(function*() {
        const [row] = yield* sql<{ state: ExecutionState; wait: string | null }>`SELECT state, wait FROM roster_executions WHERE id = ${req.id} FOR UPDATE`
        if (!row) return { _tag: "Missing" } satisfies SignalSendResult as SignalSendResult
        if (row.state === "succeeded" || row.state === "failed" || row.state === "cancelled") return { _tag: "Ended", state: row.state } as SignalSendResult
        yield* sql`INSERT INTO roster_signals (execution_id, name, payload, sent_at) VALUES (${req.id}, ${req.name}, ${req.payload}, ${req.now})`
        const wait = row.state === "waiting" ? parseWait(row.wait) : null
        if (wait?.kind !== "signal" || wait.signal !== req.name) return { _tag: "Kept" } as SignalSendResult
        yield* woke(yield* wakeIfSignalKept(req.id, req.now), req.now)
        return { _tag: "Woke" } as SignalSendResult
      }),
    signalTake: (req: { readonly id: string; readonly name: string; readonly step: string; readonly attempt: number; readonly now: number }) =>
      Effect.gen(function*() {
        const [taken] = yield* sql<{ payload: string }>`
          UPDATE roster_signals SET consumed_at = ${req.now}
           WHERE (execution_id, seq) = (SELECT execution_id, seq FROM roster_signals
                                         WHERE execution_id = ${req.id} AND name = ${req.name} AND consumed_at IS NULL
                                         ORDER BY seq LIMIT 1 FOR UPDATE)
          RETURNING payload`
        if (!taken) return null
        yield* sql`INSERT INTO roster_steps (execution_id, name, output, attempt, created_at)
                   VALUES (${req.id}, ${req.step}, ${taken.payload}, ${req.attempt}, ${req.now}) ON CONFLICT DO NOTHING`
        return taken.payload
      }),
    signals: (id: string) =>
      Effect.map(
        sql<{ execution_id: string; seq: Int8; name: string; payload: string; sent_at: Int8; consumed_at: Int8 | null }>`
          SELECT * FROM roster_signals WHERE execution_id = ${id} ORDER BY seq`,
        (rows) => rows.map((s): Signal => ({ executionId: s.execution_id, seq: num(s.seq), name: s.name, payload: s.payload, sentAt: num(s.sent_at), consumedAt: numOrNull(s.consumed_at) }))
      )
  }
}
