/**
 * An experiment behind issue 17's drain figure (not part of `npm run bench`): what
 * recording one success costs SQLite on Roster's own schema (its migrations applied),
 * statement by statement. Each variant fills a fresh database with N rows (not timed),
 * claims them all for one worker (not timed), then records their successes 150 at a
 * time, one `BEGIN IMMEDIATE` transaction each, at synchronous=FULL unless marked; the
 * figure is that loop's time per row.
 * - `store`: the SQLite Store's own `executionsFinish`, as shipped;
 * - `json`: one `UPDATE … FROM json_each(?)` per batch, the rows as one JSON array (the
 *   statement the store used before the ninth pass);
 * - `loop`: one prepared single-row `UPDATE … WHERE id = ?` per row, bound parameters
 *   (the statement the store uses since the ninth pass);
 * - `loop-rowid`: the same matched by rowid instead of id (no id-index search);
 * - `json-normal`, `loop-normal`: `json` and `loop` at synchronous=NORMAL (no fsync: what
 *   the commit's fsync adds per row).
 * The SQL here is a copy for measurement only; Roster's SQL lives in src/store/.
 *
 * Env: BENCH_FINISH_N (rows per variant and round, default 30000), BENCH_FINISH_ROUNDS (default 5).
 */
import { Effect } from "effect"
import { applyMigrations, openDatabase } from "../src/store/sqlite/SqliteConnection.ts"
import { makeSqliteStore, makeStatements } from "../src/store/sqlite/SqliteStore.ts"
import type { InsertRequest, Outcome } from "../src/store/Store.ts"
import { envInt, percentiles, progress, report, tempDb } from "./support.ts"

const n = envInt("BENCH_FINISH_N", 30_000)
const rounds = envInt("BENCH_FINISH_ROUNDS", 5)
const batch = 150
const job = "bench/finish"
const retry = { attempts: 3, kind: "exponential", initialMs: 10_000, maxMs: 300_000, factor: 2, jitter: "full" } as unknown as InsertRequest["retry"]
const variants = ["store", "json", "loop", "loop-rowid", "json-normal", "loop-normal"] as const
type Variant = typeof variants[number]

interface Claimed { readonly rowid: number; readonly id: string; readonly attempt: number }

/** µs per recorded success for one variant on a fresh database. */
const once = (variant: Variant): number => {
  const tmp = tempDb("finish")
  try {
    const db = openDatabase({ path: tmp.db, synchronous: variant.endsWith("-normal") ? "NORMAL" : "FULL" })
    const now = Date.now()
    applyMigrations(db, now)
    const { insertAll } = makeStatements(db)
    const rows = Array.from({ length: n }, (_, i) => ({
      id: Bun.randomUUIDv7(), job, queue: "default", payload: JSON.stringify({ i, pad: "x".repeat(30) }), priority: 0, retry,
      timeoutMs: 300_000, runAt: now, now, idempotencyKey: null
    }) as InsertRequest)
    db.transaction(() => insertAll(rows)).immediate()
    const claimed = db.query<Claimed, [number, number]>(
      "UPDATE roster_executions SET state = 'running', attempt = attempt + 1, lease_owner = 'w', lease_expires_at = ?, started_at = ? RETURNING rowid, id, attempt"
    ).all(now + 60_000, now)
    const store = makeSqliteStore(db)
    const json = db.query(
      `UPDATE roster_executions AS e SET state = 'succeeded', result = j.value ->> 'r', error = NULL, finished_at = j.value ->> 't', lease_expires_at = NULL
         FROM json_each(?) AS j
        WHERE e.id = j.value ->> 'id' AND e.lease_owner = j.value ->> 'w' AND e.attempt = j.value ->> 'a' AND e.state = 'running'
        RETURNING roster_executions.id AS id`
    )
    const single = (by: "id" | "rowid") => db.query<never, [string | null, number, string | number, string, number]>(
      `UPDATE roster_executions SET state = 'succeeded', result = ?1, error = NULL, finished_at = ?2, lease_expires_at = NULL
        WHERE ${by} = ?3 AND lease_owner = ?4 AND attempt = ?5 AND state = 'running'`
    )
    const [byId, byRowid] = [single("id"), single("rowid")]
    const record = (b: ReadonlyArray<Claimed>): void => {
      const t = now + 5
      if (variant === "store") {
        const outcomes = b.map((r): Outcome => ({ kind: "succeeded", id: r.id, workerId: "w", attempt: r.attempt, now: t, startedAt: now, result: "null" }))
        Effect.runSync(store.executionsFinish(outcomes))
        return
      }
      db.transaction(() => {
        if (variant === "json" || variant === "json-normal") json.all(JSON.stringify(b.map((r) => ({ id: r.id, w: "w", a: r.attempt, t, r: "null" }))))
        else if (variant === "loop-rowid") for (const r of b) byRowid.run("null", t, r.rowid, "w", r.attempt)
        else for (const r of b) byId.run("null", t, r.id, "w", r.attempt)
      }).immediate()
    }
    const t0 = performance.now()
    for (let i = 0; i < claimed.length; i += batch) record(claimed.slice(i, i + batch))
    const us = ((performance.now() - t0) / n) * 1000
    const left = db.query<{ n: number }, []>("SELECT count(*) AS n FROM roster_executions WHERE state <> 'succeeded'").get()!.n
    if (left !== 0) throw new Error(`${variant}: ${left} of ${n} not recorded`)
    db.close()
    return us
  } finally {
    tmp.cleanup()
  }
}

const samples = new Map<Variant, Array<number>>(variants.map((v) => [v, []]))
for (let r = 0; r < rounds; r++) {
  for (const v of variants) samples.get(v)!.push(once(v))
  progress(`finish variants: round ${r + 1} of ${rounds}`)
}
const baseline = percentiles(samples.get("json")!).p50
report([{
  title: `Experiment: recording successes on roster_executions, µs per row (${n.toLocaleString("en-US")} rows, transactions of ${batch}, ${rounds} rounds, interleaved)`,
  headers: ["variant", "median µs/row", "best µs/row", "vs json"],
  rows: variants.map((v) => {
    const s = samples.get(v)!
    const p50 = percentiles(s).p50
    return [v, p50.toFixed(2), Math.min(...s).toFixed(2), `${p50 >= baseline ? "+" : ""}${Math.round((p50 / baseline - 1) * 100)}%`]
  }),
  notes: ["SQLite work only, one BEGIN IMMEDIATE transaction per batch; the fill and the claim are not timed."],
  checks: []
}])
