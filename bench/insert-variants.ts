/**
 * An experiment behind a suggested Store change (not part of `npm run bench`): the
 * cost per row of three ways to bulk-insert executions into Roster's own schema (its
 * migrations applied), in one transaction at synchronous=FULL:
 * - per row `INSERT … ON CONFLICT DO NOTHING RETURNING id` with `.get()` (what the
 *   SQLite Store's insertOne did at the time of writing);
 * - per row plain `INSERT` with `.run()` (enough when ids are made client-side and the
 *   row has no idempotency key, so no conflict is possible);
 * - `INSERT … SELECT … FROM json_each(?)`, 1,000 rows per statement.
 * The SQL here is a copy for measurement only; Roster's SQL lives in src/store/.
 *
 * Env: BENCH_INSERT_N (rows per variant and round, default 100000), BENCH_INSERT_ROUNDS (default 3).
 */
import { applyMigrations, openDatabase } from "../src/store/sqlite/SqliteConnection.ts"
import { envInt, percentiles, progress, report, tempDb } from "./support.ts"

const n = envInt("BENCH_INSERT_N", 100_000)
const rounds = envInt("BENCH_INSERT_ROUNDS", 3)
const retry = JSON.stringify({ attempts: 3, kind: "fixed", initialMs: 100 })
const columns = "id, job, queue, state, payload, priority, attempt, max_attempts, retry, timeout_ms, run_at, created_at"

type Variant = "returning" | "plain" | "json_each"

/** µs per row for one variant on a fresh database. */
const once = (variant: Variant): number => {
  const tmp = tempDb("insert")
  try {
    const db = openDatabase({ path: tmp.db })
    applyMigrations(db, Date.now())
    const now = Date.now()
    const rows = Array.from({ length: n }, (_, i) => ({ id: Bun.randomUUIDv7("hex", now), payload: JSON.stringify({ n: i }) }))
    const returning = db.query(
      `INSERT INTO roster_executions (${columns}, idempotency_key, schedule_id, fire_at, retry_of)
       VALUES (?, ?, ?, 'queued', ?, ?, 0, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING RETURNING id`
    )
    const plain = db.query(`INSERT INTO roster_executions (${columns}) VALUES (?, ?, ?, 'queued', ?, ?, 0, ?, ?, ?, ?, ?)`)
    const many = db.query(
      `INSERT INTO roster_executions (${columns})
       SELECT j.value ->> 0, ?2, ?3, 'queued', j.value ->> 1, 0, 0, 3, ?4, 300000, ?1, ?1 FROM json_each(?5) AS j`
    )
    const t0 = performance.now()
    db.transaction(() => {
      if (variant === "returning") {
        for (const r of rows) returning.get(r.id, "demo/noop", "default", r.payload, 0, 3, retry, 300_000, now, now, null, null, null, null)
      } else if (variant === "plain") {
        for (const r of rows) plain.run(r.id, "demo/noop", "default", r.payload, 0, 3, retry, 300_000, now, now)
      } else {
        for (let i = 0; i < n; i += 1000) many.run(now, "demo/noop", "default", retry, JSON.stringify(rows.slice(i, i + 1000).map((r) => [r.id, r.payload])))
      }
    }).immediate()
    const us = ((performance.now() - t0) / n) * 1000
    db.close()
    return us
  } finally {
    tmp.cleanup()
  }
}

const variants: ReadonlyArray<Variant> = ["returning", "plain", "json_each"]
const samples = new Map<Variant, Array<number>>(variants.map((v) => [v, []]))
for (let r = 0; r < rounds; r++) {
  for (const v of variants) samples.get(v)!.push(once(v))
  progress(`insert variants: round ${r + 1} of ${rounds}`)
}
report([{
  title: `Experiment: bulk insert into roster_executions, µs per row (${n.toLocaleString("en-US")} rows, ${rounds} rounds, interleaved)`,
  headers: ["variant", "median µs/row", "best µs/row", "rows/s at median"],
  rows: variants.map((v) => {
    const p = percentiles(samples.get(v)!)
    const best = Math.min(...samples.get(v)!)
    return [v, p.p50.toFixed(2), best.toFixed(2), Math.round(1e6 / p.p50).toLocaleString("en-US")]
  }),
  notes: ["SQLite work only (no Effect, no payload encoding); one transaction per variant and round."],
  checks: []
}])
