/**
 * An experiment behind issue 17's drain figure (not part of `npm run bench`): what one
 * claimed row costs SQLite on Roster's own schema (its migrations applied), and which
 * part of that cost each change to the claim would remove. Each variant fills a fresh
 * database with N queued rows (not timed), then claims them 50 at a time at
 * synchronous=NORMAL (as the store's claim runs) until none is left; the figure is the
 * claim loop's time per row.
 * - `store`: the SQLite Store's own `executionsClaim`, as shipped (its statement, then
 *   each row made an Execution and sorted);
 * - `statement`: a copy of that statement alone, `.all()` of `RETURNING *`;
 * - `values`: the same with `.values()` (arrays instead of objects);
 * - `rowid`: the same returning only the rowid (what materialising the rows costs);
 * - `no-expiry`: `statement` with the lease-expiry index dropped (one B-tree write fewer
 *   per claimed row; the Reaper needs that index, so this is a bound, not a proposal);
 * - `no-partials`: `statement` with the partial indexes a keyless row is never in dropped
 *   (idempotency, dedupe, child, schedule_active: SQLite still evaluates their WHERE);
 * - `memory`: `statement` on `:memory:` (no file, no WAL: SQLite's CPU alone);
 * - `short-retry`: `statement` on rows whose retry text is 15 bytes instead of 95 (a
 *   narrower row: ~176 bytes instead of ~256);
 * - `big-cache`: `statement` with a 64 MiB page cache instead of SQLite's 2 MiB default.
 * The SQL here is a copy for measurement only; Roster's SQL lives in src/store/.
 *
 * Env: BENCH_CLAIM_N (rows per variant and round, default 50000), BENCH_CLAIM_ROUNDS (default 3),
 * BENCH_CLAIM_VARIANTS (a comma-separated subset; `statement`, the baseline, always runs).
 */
import type { Database } from "bun:sqlite"
import { Effect } from "effect"
import { applyMigrations, openDatabase } from "../src/store/sqlite/SqliteConnection.ts"
import { makeSqliteStore } from "../src/store/sqlite/SqliteStore.ts"
import type { InsertRequest } from "../src/store/Store.ts"
import { envInt, report, tempDb } from "./support.ts"
import { defaultRetry, fillQueued, measureVariants, variantsSection } from "./variants.ts"

const n = envInt("BENCH_CLAIM_N", 50_000)
const rounds = envInt("BENCH_CLAIM_ROUNDS", 3)
const batch = 50
const job = "bench/claim"
/** A minimal retry snapshot for `short-retry` (15 bytes instead of the default's 95). */
const shortRetry = { attempts: 3 } as unknown as InsertRequest["retry"]

const allVariants = ["store", "statement", "values", "rowid", "no-expiry", "no-partials", "memory", "short-retry", "big-cache"] as const
type Variant = typeof allVariants[number]
const asked = process.env.BENCH_CLAIM_VARIANTS?.split(",")
const variants = allVariants.filter((v) => v === "statement" || asked === undefined || asked.includes(v))

const claimSql = (returning: string) => `UPDATE roster_executions
    SET state = 'running', attempt = attempt + 1, lease_owner = ?1, lease_expires_at = ?2, started_at = ?3
  WHERE rowid IN (
    SELECT rowid FROM roster_executions INDEXED BY roster_executions_claim
     WHERE state IN ('queued','waiting') AND queue = ?4 AND run_at <= ?3 AND job IN (SELECT value FROM json_each(?5))
       AND NOT EXISTS (SELECT 1 FROM roster_queues WHERE name = ?4 AND paused)
     ORDER BY priority DESC, run_at, id
     LIMIT ?6)
  RETURNING ${returning}`

const dropped: Partial<Record<Variant, ReadonlyArray<string>>> = {
  "no-expiry": ["roster_executions_expiry"],
  "no-partials": ["roster_executions_idempotency", "roster_executions_dedupe", "roster_executions_child", "roster_executions_schedule_active"]
}

/** The Store's own claim (it relaxes its FULL commit to NORMAL itself); rows claimed. */
const storeClaim = (db: Database, now: number) => {
  const store = makeSqliteStore(db)
  return (): number =>
    Effect.runSync(store.executionsClaim({ queue: "default", jobs: [job], workerId: "w", limit: batch, now: now + 1, leaseMs: 60_000 })).length
}

/** The copied claim statement at NORMAL; rows claimed. */
const statementClaim = (db: Database, now: number, variant: Variant) => {
  const statement = db.query<unknown, [string, number, number, string, string, number]>(claimSql(variant === "rowid" ? "rowid" : "*"))
  const args = ["w", now + 60_000, now + 1, "default", JSON.stringify([job]), batch] as const
  db.run("PRAGMA synchronous = NORMAL")
  return (): number => (variant === "values" ? statement.values(...args) : statement.all(...args)).length
}

/** µs per claimed row for one variant on a fresh database. */
const once = (variant: Variant): number => {
  const tmp = tempDb("claim")
  try {
    const db = openDatabase({ path: variant === "memory" ? ":memory:" : tmp.db })
    const now = Date.now()
    applyMigrations(db, now)
    for (const index of dropped[variant] ?? []) db.run(`DROP INDEX ${index}`)
    if (variant === "big-cache") db.run("PRAGMA cache_size = -65536")
    fillQueued(db, { n, job, now, retry: variant === "short-retry" ? shortRetry : defaultRetry })
    const claimOnce = variant === "store" ? storeClaim(db, now) : statementClaim(db, now, variant)
    let claimed = 0
    const t0 = performance.now()
    for (let got = claimOnce(); got > 0; got = claimOnce()) claimed += got
    const us = ((performance.now() - t0) / claimed) * 1000
    if (claimed !== n) throw new Error(`${variant}: claimed ${claimed} of ${n}`)
    db.close()
    return us
  } finally {
    tmp.cleanup()
  }
}

report([variantsSection({
  title: `Experiment: the SQLite claim on roster_executions, µs per claimed row (${n.toLocaleString("en-US")} rows, claims of ${batch}, ${rounds} rounds, interleaved)`,
  unit: "row",
  samples: measureVariants("claim variants", variants, rounds, once),
  baseline: "statement",
  notes: ["SQLite work only, one claim statement per batch in autocommit at synchronous=NORMAL; the fill is not timed."]
})])
