/**
 * An experiment behind issue 17's drain figure (not part of `npm run bench`): would a
 * narrow claim table, the store redesign the eighth pass named as the remaining route,
 * make SQLite's share of a drain small enough? Both variants run the same loop with no
 * runtime: claim 50 due executions (autocommit at synchronous=NORMAL, as Roster's claim),
 * then record their 50 successes in one `BEGIN IMMEDIATE` transaction at FULL, until none
 * is left; N rows queued first (not timed). The figure is µs per job, claim + success.
 * - `roster`: Roster's schema (its migrations) and its statements as shipped: the claim
 *   `UPDATE … RETURNING *` by the claim index, one success `UPDATE` per row.
 * - `roster-rows`: Roster's schema, the claim as a read of 50 rowids in claim order and one
 *   `UPDATE … WHERE rowid = ? RETURNING *` each, in one transaction (what the per-row
 *   statements of `narrow` alone are worth);
 * - `narrow`: an upper bound for the redesign. The executions table keeps its payload and
 *   history, without the claim and expiry indexes; what is due lives in a narrow
 *   `WITHOUT ROWID` table keyed in claim order, and leases in a narrow table with an
 *   expiry index. A claim deletes 50 due entries, inserts 50 leases and reads the 50
 *   executions by rowid; it does not touch the wide row at all (its state would have to
 *   be read from the lease table: every query of the store would change). A success
 *   deletes the lease (fenced by owner and attempt) and updates the wide row.
 * The SQL here is for measurement only; Roster's SQL lives in src/store/.
 *
 * Env: BENCH_NARROW_N (rows per variant and round, default 50000), BENCH_NARROW_ROUNDS (default 5).
 */
import type { Database } from "bun:sqlite"
import { Effect } from "effect"
import { applyMigrations, openDatabase } from "../src/store/sqlite/SqliteConnection.ts"
import { makeSqliteStore } from "../src/store/sqlite/SqliteStore.ts"
import type { Outcome } from "../src/store/Store.ts"
import { envInt, report, tempDb } from "./support.ts"
import { fillQueued, measureVariants, variantsSection } from "./variants.ts"

const n = envInt("BENCH_NARROW_N", 50_000)
const rounds = envInt("BENCH_NARROW_ROUNDS", 5)
const batch = 50
const job = "bench/narrow"
const variants = ["roster", "roster-rows", "narrow"] as const
type Variant = typeof variants[number]

/** Records the successes of `claimed` through the Store, in one transaction at FULL. */
const succeed = (store: ReturnType<typeof makeSqliteStore>, claimed: ReadonlyArray<{ readonly id: string; readonly attempt: number }>, now: number): void => {
  const outcomes = claimed.map((e): Outcome => ({ kind: "succeeded", id: e.id, workerId: "w", attempt: e.attempt, now: now + 2, startedAt: now + 1, result: "null" }))
  Effect.runSync(store.executionsFinish(outcomes))
}

/** One claim + record step of `roster`; jobs done. */
const rosterStep = (db: Database, now: number) => {
  const store = makeSqliteStore(db)
  return (): number => {
    const claimed = Effect.runSync(store.executionsClaim({ queue: "default", jobs: [job], workerId: "w", limit: batch, now: now + 1, leaseMs: 60_000 }))
    if (claimed.length === 0) return 0
    succeed(store, claimed, now)
    return claimed.length
  }
}

/** One claim + record step of `roster-rows`; jobs done. */
const rosterRowsStep = (db: Database, now: number) => {
  const store = makeSqliteStore(db)
  const pick = db.query<{ rowid: number }, [string, number, number]>(
    `SELECT rowid FROM roster_executions INDEXED BY roster_executions_claim
      WHERE state IN ('queued','waiting') AND queue = ? AND run_at <= ? ORDER BY priority DESC, run_at, id LIMIT ?`
  )
  const claimOne = db.query<{ id: string; attempt: number; payload: string }, [string, number, number, number]>(
    "UPDATE roster_executions SET state = 'running', attempt = attempt + 1, lease_owner = ?, lease_expires_at = ?, started_at = ? WHERE rowid = ? RETURNING *"
  )
  db.run("PRAGMA synchronous = NORMAL")
  const claim = db.transaction(() => pick.all("default", now + 1, batch).map((r) => {
    const e = claimOne.get("w", now + 60_000, now + 1, r.rowid)!
    JSON.parse(e.payload)
    return e
  }))
  return (): number => {
    const claimed = claim.immediate()
    if (claimed.length === 0) return 0
    db.run("PRAGMA synchronous = FULL")
    succeed(store, claimed, now)
    db.run("PRAGMA synchronous = NORMAL")
    return claimed.length
  }
}

/** One claim + record step of `narrow`; jobs done. */
const narrowStep = (db: Database, now: number) => {
  db.run("DROP INDEX roster_executions_claim")
  db.run("DROP INDEX roster_executions_expiry")
  db.run(`CREATE TABLE due (queue TEXT NOT NULL, priority INTEGER NOT NULL, run_at INTEGER NOT NULL, id TEXT NOT NULL, exec INTEGER NOT NULL,
            PRIMARY KEY (queue, priority DESC, run_at, id)) WITHOUT ROWID`)
  db.run("CREATE TABLE leases (exec INTEGER PRIMARY KEY, owner TEXT NOT NULL, attempt INTEGER NOT NULL, expires_at INTEGER NOT NULL)")
  db.run("CREATE INDEX leases_expiry ON leases (expires_at)")
  db.transaction(() => db.run("INSERT INTO due SELECT queue, priority, run_at, id, rowid FROM roster_executions")).immediate()
  const pick = db.query<{ queue: string; priority: number; run_at: number; id: string; exec: number }, [string, number, number]>(
    "SELECT queue, priority, run_at, id, exec FROM due WHERE queue = ? AND run_at <= ? ORDER BY priority DESC, run_at, id LIMIT ?"
  )
  const take = db.query("DELETE FROM due WHERE queue = ? AND priority = ? AND run_at = ? AND id = ?")
  const lease = db.query("INSERT INTO leases (exec, owner, attempt, expires_at) VALUES (?, ?, ?, ?)")
  const read = db.query<{ rowid: number; id: string; attempt: number; payload: string }, [number]>("SELECT rowid, * FROM roster_executions WHERE rowid = ?")
  const unlease = db.query("DELETE FROM leases WHERE exec = ? AND owner = ? AND attempt = ?")
  const done = db.query("UPDATE roster_executions SET state = 'succeeded', attempt = ?, result = ?, started_at = ?, finished_at = ?, lease_owner = ? WHERE rowid = ?")
  db.run("PRAGMA synchronous = NORMAL")
  const claim = db.transaction(() => {
    const rows = pick.all("default", now + 1, batch)
    return rows.map((r) => {
      take.run(r.queue, r.priority, r.run_at, r.id)
      const e = read.get(r.exec)!
      lease.run(r.exec, "w", e.attempt + 1, now + 60_000)
      JSON.parse(e.payload)
      return e
    })
  })
  const record = db.transaction((claimed: ReadonlyArray<{ rowid: number; attempt: number }>) => {
    for (const e of claimed) if (unlease.run(e.rowid, "w", e.attempt + 1).changes === 1) done.run(e.attempt + 1, "null", now + 1, now + 2, "w", e.rowid)
  })
  return (): number => {
    const claimed = claim.immediate()
    if (claimed.length === 0) return 0
    db.run("PRAGMA synchronous = FULL")
    record.immediate(claimed)
    db.run("PRAGMA synchronous = NORMAL")
    return claimed.length
  }
}

const once = (variant: Variant): number => {
  const tmp = tempDb("narrow")
  try {
    const db = openDatabase({ path: tmp.db })
    const now = Date.now()
    applyMigrations(db, now)
    fillQueued(db, { n, job, now })
    const step = variant === "roster" ? rosterStep(db, now) : variant === "roster-rows" ? rosterRowsStep(db, now) : narrowStep(db, now)
    let jobs = 0
    const t0 = performance.now()
    for (let got = step(); got > 0; got = step()) jobs += got
    const us = ((performance.now() - t0) / jobs) * 1000
    if (jobs !== n) throw new Error(`${variant}: ${jobs} of ${n} done`)
    const left = db.query<{ n: number }, []>("SELECT count(*) AS n FROM roster_executions WHERE state <> 'succeeded'").get()!.n
    if (left !== 0) throw new Error(`${variant}: ${left} not recorded`)
    db.close()
    return us
  } finally {
    tmp.cleanup()
  }
}

report([variantsSection({
  title: `Experiment: claim 50 + record 50 successes, no runtime, µs per job (${n.toLocaleString("en-US")} jobs, ${rounds} rounds, interleaved)`,
  unit: "job",
  samples: measureVariants("narrow claim", variants, rounds, once),
  baseline: "roster",
  notes: ["SQLite work only: claims autocommit at NORMAL, successes one FULL transaction per batch; the fill is not timed."]
})])
