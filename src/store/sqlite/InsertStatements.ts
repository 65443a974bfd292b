/**
 * The insert of new executions on SQLite, prepared once per connection: the Store's
 * enqueue, a Schedule's fire (SqliteScheduleStore.ts) and transactional enqueue on a
 * caller's own connection (TransactionalInsert.ts) all go through it.
 *
 * Rows with an idempotency or dedupe key go one at a time (a conflict answers with the
 * existing execution). Keyless rows cannot conflict, so they go many to a statement, in
 * blocks of 100 or 10 rows: the rows of one bulk call share their Job and options, and a
 * block binds what its rows share once, with only each row's own values bound per row
 * (2 parameters a row, id and payload, where the rows also share their due time,
 * priority and flow keys; 6 where they do not; 16 for a row on its own). Binding is most
 * of the statement's cost in bun:sqlite: the shared block cut a raw bulk insert's
 * statement time by a third (bench/RESULTS.md, seventeenth pass).
 */
import type { Database, Statement } from "bun:sqlite"
import { encodeRetry } from "../RetryText.ts"
import type { InsertRequest, InsertResult } from "../Store.ts"
import { insertDeduped } from "./DedupeInsert.ts"
import { displacedBelow, rowidOf } from "./ExecutionRowid.ts"

type Param = string | number | null

const columns = `seq, id, job, queue, state, payload, priority, attempt, max_attempts, retry, timeout_ms,
       run_at, created_at, idempotency_key, schedule_id, fire_at, retry_of, trace_context, concurrency_key, rate_key, dedupe_key`

/** Whether two rows agree on everything a block binds once, whatever its shape. */
const sameJobAndOrigin = (a: InsertRequest, b: InsertRequest): boolean =>
  a.job === b.job && a.queue === b.queue && (a.retry === b.retry || encodeRetry(a.retry) === encodeRetry(b.retry)) &&
  a.timeoutMs === b.timeoutMs && a.now === b.now && (a.scheduleId ?? null) === (b.scheduleId ?? null) &&
  (a.fireAt ?? null) === (b.fireAt ?? null) && (a.retryOf ?? null) === (b.retryOf ?? null) &&
  (a.traceContext ?? null) === (b.traceContext ?? null)

/** Whether two rows also agree on the values a narrow block binds once. */
const sameTimeAndKeys = (a: InsertRequest, b: InsertRequest): boolean =>
  a.runAt === b.runAt && a.priority === b.priority && (a.concurrencyKey ?? null) === (b.concurrencyKey ?? null) &&
  (a.rateKey ?? null) === (b.rateKey ?? null)

/**
 * One block statement: `perRow` lists the columns bound for each row, in the order
 * `push` binds them (the rest of the row is shared: bound once, after every row's own).
 */
const blockShape = (perRow: ReadonlyArray<string>, push: (out: Array<Param>, r: InsertRequest) => void) => {
  const shared = ["job", "queue", "priority", "max_attempts", "retry", "timeout_ms", "run_at", "created_at", "schedule_id", "fire_at", "retry_of", "trace_context", "concurrency_key", "rate_key"]
    .filter((c) => !perRow.includes(c))
  const sql = (rows: number) => {
    const sharedAt = (c: string) => `?${rows * perRow.length + shared.indexOf(c) + 1}`
    const value = (k: number, c: string) => (perRow.includes(c) ? `?${k * perRow.length + perRow.indexOf(c) + 1}` : sharedAt(c))
    const tuples = Array.from({ length: rows }, (_, k) =>
      `(${value(k, "seq")}, ${value(k, "id")}, ${value(k, "job")}, ${value(k, "queue")}, 'queued', ${value(k, "payload")}, ${value(k, "priority")}, 0, ` +
      `${value(k, "max_attempts")}, ${value(k, "retry")}, ${value(k, "timeout_ms")}, ${value(k, "run_at")}, ${value(k, "created_at")}, NULL, ` +
      `${value(k, "schedule_id")}, ${value(k, "fire_at")}, ${value(k, "retry_of")}, ${value(k, "trace_context")}, ` +
      `${value(k, "concurrency_key")}, ${value(k, "rate_key")}, NULL)`)
    return `INSERT INTO roster_executions (${columns}) VALUES ${tuples.join(", ")}`
  }
  const valueOf = (r: InsertRequest, c: string): Param => {
    switch (c) {
      case "id": return r.id
      case "seq": return rowidOf(r.id)
      case "payload": return r.payload
      case "job": return r.job
      case "queue": return r.queue
      case "priority": return r.priority
      case "max_attempts": return r.retry.attempts
      case "retry": return encodeRetry(r.retry)
      case "timeout_ms": return r.timeoutMs
      case "run_at": return r.runAt
      case "created_at": return r.now
      case "schedule_id": return r.scheduleId ?? null
      case "fire_at": return r.fireAt ?? null
      case "retry_of": return r.retryOf ?? null
      case "trace_context": return r.traceContext ?? null
      case "concurrency_key": return r.concurrencyKey ?? null
      case "rate_key": return r.rateKey ?? null
      default: throw new Error(`unknown column ${c}`)
    }
  }
  /** The parameters of rows[from, from + count): each row's own, then the shared ones (from the first row). */
  const params = (rows: ReadonlyArray<InsertRequest>, from: number, count: number): Array<Param> => {
    const out: Array<Param> = []
    for (let j = from; j < from + count; j++) push(out, rows[j]!)
    for (const c of shared) out.push(valueOf(rows[from]!, c))
    return out
  }
  return { sql, params }
}

const narrow = blockShape(["seq", "id", "payload"], (out, r) => void out.push(rowidOf(r.id), r.id, r.payload))
const wide = blockShape(
  ["seq", "id", "payload", "run_at", "priority", "concurrency_key", "rate_key"],
  (out, r) => void out.push(rowidOf(r.id), r.id, r.payload, r.runAt, r.priority, r.concurrencyKey ?? null, r.rateKey ?? null)
)
const single = blockShape(
  ["seq", "id", "job", "queue", "payload", "priority", "max_attempts", "retry", "timeout_ms", "run_at", "created_at", "schedule_id", "fire_at", "retry_of", "trace_context", "concurrency_key", "rate_key"],
  (out, r) =>
    void out.push(rowidOf(r.id), r.id, r.job, r.queue, r.payload, r.priority, r.retry.attempts, encodeRetry(r.retry), r.timeoutMs, r.runAt, r.now,
      r.scheduleId ?? null, r.fireAt ?? null, r.retryOf ?? null, r.traceContext ?? null, r.concurrencyKey ?? null, r.rateKey ?? null)
)

/** The statements on `db`. */
export const makeStatements = (db: Database) => {
  const insert = db.query<{ id: string }, Array<Param>>(
    `INSERT INTO roster_executions (seq, id, job, queue, state, payload, priority, attempt, max_attempts, retry, timeout_ms,
       run_at, created_at, idempotency_key, schedule_id, fire_at, retry_of, trace_context, concurrency_key, rate_key, dedupe_key,
       parent_id, parent_step)
     VALUES (?, ?, ?, ?, 'queued', ?, ?, 0, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT DO NOTHING RETURNING id`
  )
  const byKey = db.query<{ id: string }, [string, string]>(
    "SELECT id FROM roster_executions WHERE job = ? AND idempotency_key = ?"
  )
  const idAt = db.query<{ id: string }, [number]>("SELECT id FROM roster_executions WHERE seq = ?")
  const lowest = db.query<{ seq: number | null }, []>("SELECT MIN(seq) AS seq FROM roster_executions")
  const tryInsert = (r: InsertRequest, seq: number): boolean =>
    (insert.get(
      seq, r.id, r.job, r.queue, r.payload, r.priority, r.retry.attempts, encodeRetry(r.retry), r.timeoutMs,
      r.runAt, r.now, r.idempotencyKey, r.scheduleId ?? null, r.fireAt ?? null, r.retryOf ?? null, r.traceContext ?? null,
      r.concurrencyKey ?? null, r.rateKey ?? null, r.dedupeKey ?? null, r.parentId ?? null, r.parentStep ?? null
    ) ?? null) !== null
  /**
   * Stores `r` at the rowid its id gives, or displaced (ExecutionRowid.ts) when another
   * row holds that rowid or the id has none; false when a key or the id itself is taken.
   */
  const place = (r: InsertRequest): boolean => {
    const seq = rowidOf(r.id)
    if (seq !== null) {
      if (tryInsert(r, seq)) return true
      const holder = idAt.get(seq)
      // Nothing at the rowid: a key conflicted. The id itself there: it exists.
      if (holder === null || holder.id === r.id) return false
    }
    // A displaced row's id is unique by its own index: a second insert of it conflicts there.
    return tryInsert(r, Math.min(lowest.get()?.seq ?? 0, displacedBelow) - 1)
  }
  const insertOne = (r: InsertRequest): InsertResult => {
    // A dedupe key (modes active, replace) is held only while queued or running: DedupeInsert.ts.
    if ((r.dedupeKey ?? null) !== null) return insertDeduped(db, r, place)
    const key = r.idempotencyKey
    if (place(r)) return { id: r.id, inserted: true }
    if (key === null) throw new Error(`execution id ${r.id} already exists`)
    const existing = byKey.get(r.job, key)
    if (!existing) throw new Error(`insert of ${r.job} with key ${key} conflicted but no row was found`)
    return { id: existing.id, inserted: false }
  }

  // Prepared on first use: a process that never inserts in bulk never compiles a block.
  const prepared = new Map<string, Statement<never, Array<Param>>>()
  const statement = (sql: string) => {
    let s = prepared.get(sql)
    if (s === undefined) prepared.set(sql, (s = db.query<never, Array<Param>>(sql)))
    return s
  }
  const narrowSql = [narrow.sql(100), narrow.sql(10)] as const
  const wideSql = [wide.sql(100), wide.sql(10)] as const
  const singleSql = single.sql(1)

  /** Inserts keyless rows in their order: blocks of 100, then 10, of rows sharing their Job and origin, the rest one by one. */
  const insertKeyless = (rows: ReadonlyArray<InsertRequest>) => {
    let i = 0
    while (i < rows.length) {
      const first = rows[i]!
      let end = i + 1
      while (end < rows.length && end - i < 100 && sameJobAndOrigin(first, rows[end]!)) end++
      for (const size of [100, 10]) {
        while (end - i >= size) {
          let alike = true
          for (let j = i + 1; j < i + size && alike; j++) alike = sameTimeAndKeys(rows[i]!, rows[j]!)
          const shape = alike ? narrow : wide
          runBlock(statement((alike ? narrowSql : wideSql)[size === 100 ? 0 : 1]), shape.params(rows, i, size), rows, i, size)
          i += size
        }
      }
      for (; i < end; i++) runBlock(statement(singleSql), single.params(rows, i, 1), rows, i, 1)
    }
  }
  /**
   * Runs one block; if one of its rowids is taken (ids made in the same millisecond by
   * another process), the block's statement changes nothing and its rows go one by one.
   */
  const runBlock = (s: Statement<never, Array<Param>>, params: Array<Param>, rows: ReadonlyArray<InsertRequest>, from: number, count: number) => {
    try {
      s.run(...params)
    } catch (e) {
      if ((e as { code?: unknown }).code !== "SQLITE_CONSTRAINT_PRIMARYKEY") throw e
      for (let j = from; j < from + count; j++) insertOne(rows[j]!)
    }
  }
  /**
   * Inserts rows in their order (the caller holds the transaction); the claim breaks ties
   * by rowid, which follows the id (ClaimOrder.ts). Each run of keyless rows goes in
   * many at a time; results match the input order.
   */
  const insertAll = (rows: ReadonlyArray<InsertRequest>): Array<InsertResult> => {
    // (A row whose id has no rowid of its own goes alone, displaced.)
    const isKeyless = (r: InsertRequest) => r.idempotencyKey === null && (r.dedupeKey ?? null) === null && rowidOf(r.id) !== null
    const results = new Array<InsertResult>(rows.length)
    let run = 0 // where the current run of keyless rows starts
    for (let i = 0; i <= rows.length; i++) {
      if (i < rows.length && isKeyless(rows[i]!)) continue
      if (i > run) {
        insertKeyless(run === 0 && i === rows.length ? rows : rows.slice(run, i))
        for (let j = run; j < i; j++) results[j] = { id: rows[j]!.id, inserted: true }
      }
      if (i < rows.length) results[i] = insertOne(rows[i]!)
      run = i + 1
    }
    return results
  }
  return { insertOne, insertAll }
}
