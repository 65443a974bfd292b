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
import { makeSqliteStore } from "../src/store/sqlite/SqliteStore.ts"
import type { Outcome } from "../src/store/Store.ts"
import { envInt, report, tempDb } from "./support.ts"
import { fillQueued, measureVariants, variantsSection } from "./variants.ts"

const n = envInt("BENCH_FINISH_N", 30_000)
const rounds = envInt("BENCH_FINISH_ROUNDS", 5)
const batch = 150
const job = "bench/finish"
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
    fillQueued(db, { n, job, now })
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

report([variantsSection({
  title: `Experiment: recording successes on roster_executions, µs per row (${n.toLocaleString("en-US")} rows, transactions of ${batch}, ${rounds} rounds, interleaved)`,
  unit: "row",
  samples: measureVariants("finish variants", variants, rounds, once),
  baseline: "json",
  notes: ["SQLite work only, one BEGIN IMMEDIATE transaction per batch; the fill and the claim are not timed."]
})])
