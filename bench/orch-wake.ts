/**
 * The fan-in wake-up check in isolation (bench/orchestration.ts found the 10,000-child
 * fan-in never finishing on SQLite): a waiting parent with N children, all but one
 * ended, its wait naming all N; times the check that parking and every child-outcome
 * batch run — SqliteOrchestration.ts's `childrenDone` (and PgOrchestration.ts's) as
 * written at the measured commit — against a rewrite that reads the wait's ids once and
 * looks each child up by primary key. Not a change to src/: the candidate fix, measured.
 *
 * Env: BENCH_WAKE_N (default 500,1000,2000,4000), BENCH_WAKE_FIX_N (default 10000,100000),
 * BENCH_ORCH_STORES (default sqlite,postgres); PostgreSQL at ROSTER_BENCH_PG_URL or
 * ROSTER_TEST_PG_URL.
 */
import { Database } from "bun:sqlite"
import { Effect, Layer, Logger } from "effect"
import { Client, Roster } from "../src/index.ts"
import { orchChild, orchParent, orchSleeper, orchWaiter } from "./orch-apps/orch/jobs.ts"
import { freshPgSchema, pgQuery } from "./pg.ts"
import { count, envInts, ms, progress, report, type Section, tempDb } from "./support.ts"

const Ns = envInts("BENCH_WAKE_N", [500, 1000, 2000, 4000])
const fixNs = envInts("BENCH_WAKE_FIX_N", [10_000, 100_000])
const stores = new Set((process.env.BENCH_ORCH_STORES ?? "sqlite,postgres").split(",").map((s) => s.trim()))
const pgBase = process.env.ROSTER_BENCH_PG_URL || process.env.ROSTER_TEST_PG_URL
const logger = Logger.layer([Logger.withConsoleError(Logger.formatLogFmt)])

/** Makes the schema (migrations) and one parent + n children, through the Client; returns the parent's id. */
const seed = async (db: string, n: number): Promise<string> =>
  Effect.runPromise(Effect.gen(function*() {
    const client = yield* Client
    const { id } = yield* client.enqueue(orchParent, { n })
    for (let i = 0; i < n; i += 10_000) yield* client.enqueueMany(Array.from({ length: Math.min(10_000, n - i) }, (_, j) => ({ job: orchChild, payload: { n: i + j } })))
    return id
  }).pipe(Effect.provide(Roster.layer({ db, jobs: [orchChild, orchParent, orchSleeper, orchWaiter], queues: { orch: {} } }, { configDir: false }).pipe(Layer.provideMerge(logger)))) as Effect.Effect<string>)

// The check as written (SqliteOrchestration.ts `childrenDone` / `wakeIfChildrenDone`), as a SELECT.
const sqliteAsWritten = `SELECT COUNT(*) AS n FROM roster_executions AS p WHERE p.id = ?1 AND p.state = 'waiting' AND p.wait ->> '$.kind' = 'children'
  AND NOT EXISTS (SELECT 1 FROM roster_executions c WHERE c.parent_id = p.id AND c.id IN (SELECT value FROM json_each(p.wait, '$.ids')) AND c.state IN ('queued','running','waiting'))`
// The rewrite: the ids read once (json_each drives), each child looked up by its primary key.
const sqliteRewrite = `SELECT COUNT(*) AS n FROM roster_executions AS p WHERE p.id = ?1 AND p.state = 'waiting' AND p.wait ->> '$.kind' = 'children'
  AND NOT EXISTS (SELECT 1 FROM json_each(p.wait, '$.ids') AS j JOIN roster_executions c ON c.id = j.value WHERE c.parent_id = p.id AND c.state IN ('queued','running','waiting'))`

const pgAsWritten = (id: string) => `SELECT COUNT(*) AS n FROM roster_executions AS p WHERE p.id = '${id}' AND p.state = 'waiting' AND (p.wait::jsonb ->> 'kind') = 'children'
  AND NOT EXISTS (SELECT 1 FROM roster_executions c WHERE c.parent_id = p.id AND c.id IN (SELECT jsonb_array_elements_text(p.wait::jsonb -> 'ids')) AND c.state IN ('queued','running','waiting'))`
const pgRewrite = (id: string) => `SELECT COUNT(*) AS n FROM roster_executions AS p WHERE p.id = '${id}' AND p.state = 'waiting' AND (p.wait::jsonb ->> 'kind') = 'children'
  AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements_text(p.wait::jsonb -> 'ids') AS j(id) JOIN roster_executions c ON c.id = j.id WHERE c.parent_id = p.id AND c.state IN ('queued','running','waiting'))`

// Children: all but the newest ended; the parent waiting on all of them.
const arrange = `UPDATE roster_executions SET parent_id = '%P', parent_step = 'c' || id, state = CASE WHEN id = (SELECT MAX(id) FROM roster_executions WHERE job = 'orch/child') THEN 'queued' ELSE 'succeeded' END WHERE job = 'orch/child'`

const timeSqlite = (path: string, parent: string, statement: string, budgetMs = 20_000): number => {
  const db = new Database(path, { readonly: true })
  try {
    const q = db.query(statement)
    const t0 = performance.now()
    let n = 0
    do {
      q.get(parent)
      n++
    } while (performance.now() - t0 < 200 && n < 20 && performance.now() - t0 < budgetMs)
    return (performance.now() - t0) / n
  } finally {
    db.close()
  }
}

const pgExecMs = async (url: string, statement: string): Promise<number> => {
  const times: Array<number> = []
  for (let i = 0; i < 3; i++) {
    const plan = (await pgQuery<{ "QUERY PLAN": string }>(url, `EXPLAIN (ANALYZE) ${statement}`)).map((r) => r["QUERY PLAN"]).join("\n")
    times.push(Number(plan.match(/Execution Time: ([\d.]+)/)?.[1] ?? NaN))
  }
  return times.sort((a, b) => a - b)[1]!
}

const sections: Array<Section> = []
const cases = [...Ns.map((n) => ({ n, asWritten: true })), ...fixNs.map((n) => ({ n, asWritten: false }))]

if (stores.has("sqlite")) {
  const rows: Array<Array<string>> = []
  for (const c of cases) {
    const tmp = tempDb("wake")
    try {
      const parent = await seed(tmp.db, c.n)
      const db = new Database(tmp.db)
      db.run(arrange.replace("%P", parent))
      db.run(`UPDATE roster_executions SET state = 'waiting', run_at = 253402300799999,
        wait = (SELECT json_object('kind', 'children', 'step', 'all', 'ids', json_group_array(id)) FROM (SELECT id FROM roster_executions WHERE parent_id = ?1 ORDER BY id)) WHERE id = ?1`, [parent])
      const bytes = (db.query("SELECT length(wait) AS b FROM roster_executions WHERE id = ?").get(parent) as { b: number }).b
      db.close()
      const a = c.asWritten ? timeSqlite(tmp.db, parent, sqliteAsWritten) : NaN
      const b = timeSqlite(tmp.db, parent, sqliteRewrite)
      progress(`SQLite wake check, ${c.n} children: as written ${ms(a)} ms, rewrite ${ms(b)} ms`)
      rows.push([count(c.n), `${Math.round(bytes / 1024)} KiB`, c.asWritten ? ms(a) : "not run (quadratic)", ms(b)])
    } finally {
      tmp.cleanup()
    }
  }
  sections.push({
    title: "Orchestration W (SQLite): the fan-in wake-up check, one waiting parent, N children (all but one ended), ms per check",
    headers: ["children awaited", "wait JSON", "as written (childrenDone, correlated json_each)", "rewrite (json_each drives, child by primary key)"],
    rows,
    notes: [
      "as written: `c.parent_id = p.id AND c.id IN (SELECT value FROM json_each(p.wait, '$.ids'))` — EXPLAIN QUERY PLAN: `SEARCH c USING INDEX roster_executions_child (parent_id=?)` then `CORRELATED LIST SUBQUERY: SCAN json_each`, i.e. the whole wait JSON parsed again for every child row: O(N²). It runs when the parent parks and for every outcome batch that ends one of its children after.",
      "rewrite: `NOT EXISTS (SELECT 1 FROM json_each(p.wait, '$.ids') j JOIN roster_executions c ON c.id = j.value WHERE c.parent_id = p.id AND c.state IN (…))`: one parse, N primary-key lookups, stopping at the first child still active."
    ],
    checks: []
  })
}

if (stores.has("postgres") && pgBase) {
  const rows: Array<Array<string>> = []
  for (const c of cases) {
    const { url, drop } = await freshPgSchema(pgBase, "wake")
    try {
      const parent = await seed(url, c.n)
      await pgQuery(url, arrange.replace("%P", parent))
      await pgQuery(url, `UPDATE roster_executions SET state = 'waiting', run_at = 253402300799999,
        wait = (SELECT json_build_object('kind', 'children', 'step', 'all', 'ids', json_agg(id ORDER BY id))::text FROM roster_executions WHERE parent_id = '${parent}') WHERE id = '${parent}'`)
      await pgQuery(url, "ANALYZE roster_executions")
      const a = c.asWritten ? await pgExecMs(url, pgAsWritten(parent)) : NaN
      const b = await pgExecMs(url, pgRewrite(parent))
      progress(`PostgreSQL wake check, ${c.n} children: as written ${ms(a)} ms, rewrite ${ms(b)} ms`)
      rows.push([count(c.n), c.asWritten ? ms(a) : "not run", ms(b)])
    } finally {
      await drop()
    }
  }
  sections.push({
    title: "Orchestration W (PostgreSQL): the fan-in wake-up check, one waiting parent, N children (all but one ended), server ms per check",
    headers: ["children awaited", "as written (wakeIfChildrenDone)", "rewrite (jsonb_array_elements_text drives, child by primary key)"],
    rows,
    notes: ["server Execution Time from EXPLAIN ANALYZE (median of 3) of the check as a SELECT; the real statement is an UPDATE … WHERE of the same condition, after locking the parent."],
    checks: []
  })
}
report(sections)
