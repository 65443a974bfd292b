/**
 * Roster on PostgreSQL as real processes (DESIGN §4, issue "Scale out on PostgreSQL"):
 * the unchanged CLI — `enqueue`, `worker`, `scheduler`, `executions count` — with
 * `ROSTER_DB` a postgres:// URL whose search_path is a fresh schema per test.
 *
 * - 4 workers and 2 schedulers drain 20,000 jobs: every execution succeeds exactly
 *   once and its handler runs exactly once; every fire is recorded once and enqueues
 *   exactly one execution.
 * - kill -9 of one worker loses nothing: its leases expire and the others recover them.
 * - a server restart (`pg_ctl restart`) mid-drain loses nothing, and the workers and
 *   the scheduler carry on by themselves.
 *
 * The handlers (tests/fixtures/pg-apps) record each run in a side table `runs`.
 */
import { PgClient } from "@effect/sql-pg"
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from "bun:test"
import { Effect, ManagedRuntime, Redacted } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { runsTableSql } from "../fixtures/pg-apps/pgprobe/jobs.ts"
import { freshSchema, pgAdmin, urlWithSchema } from "../store/drivers.ts"
import { pgUrl, requireService } from "../support/env.ts"
import { pgBinDir, type PrivateCluster, startPrivateCluster } from "../support/privatePg.ts"
import {
  attemptsCte,
  ndjson,
  parseJsonOutput,
  repoRoot,
  type RosterProcess,
  spawnRoster,
  tail,
  waitFor,
  workerIdOf
} from "../support/processes.ts"

const pg = requireService("postgres")
const pgApps = join(repoRoot, "tests/fixtures/pg-apps")

/** A fresh schema, the processes started on it, and a connection to query it. */
class PgScratch {
  readonly schema = freshSchema("roster_p")
  readonly url: string
  readonly dir = mkdtempSync(join(tmpdir(), "roster-pg-process-"))
  private readonly processes: Array<RosterProcess> = []
  private readonly client: ManagedRuntime.ManagedRuntime<SqlClient, unknown>

  constructor(readonly base: string) {
    this.url = urlWithSchema(base, this.schema)
    this.client = ManagedRuntime.make(PgClient.layer({ url: Redacted.make(this.url), maxConnections: 2 }))
  }

  async setup(): Promise<void> {
    await pgAdmin(this.base, `CREATE SCHEMA "${this.schema}"`)
    await this.exec(runsTableSql)
  }

  /** Starts `roster <args>` on this schema; killed at cleanup if still running. */
  spawn(args: ReadonlyArray<string>, options: { readonly env?: Record<string, string>; readonly stdin?: string } = {}): RosterProcess {
    const p = spawnRoster(args, { cwd: this.dir, env: { ROSTER_DB: this.url, ROSTER_APPS_DIR: pgApps, ...options.env }, stdin: options.stdin })
    this.processes.push(p)
    return p
  }

  run(args: ReadonlyArray<string>, options: { readonly env?: Record<string, string>; readonly stdin?: string } = {}) {
    return this.spawn(args, options).wait(60_000)
  }

  all<Row extends object = Record<string, unknown>>(sql: string, ...params: Array<unknown>): Promise<ReadonlyArray<Row>> {
    return this.client.runPromise(SqlClient.use((c) => c.unsafe<Row>(sql, params)))
  }

  exec(sql: string): Promise<unknown> {
    return this.all(sql)
  }

  /** The single number a `SELECT COUNT(*) ...`-style query returns. */
  async count(sql: string, ...params: Array<unknown>): Promise<number> {
    const [row] = await this.all(sql, ...params)
    const value = row === undefined ? undefined : Object.values(row)[0]
    if (value === undefined || value === null) throw new Error(`query returned no number: ${sql}`)
    return Number(value)
  }

  async cleanup(): Promise<void> {
    await Promise.all(this.processes.map(async (p) => {
      if (p.exited) return
      p.kill("SIGKILL")
      await p.wait(10_000).catch(() => undefined)
    }))
    await this.client.dispose()
    await pgAdmin(this.base, `DROP SCHEMA IF EXISTS "${this.schema}" CASCADE`).catch(() => undefined)
    rmSync(this.dir, { recursive: true, force: true })
  }
}

/** Stops a process with SIGTERM and expects a clean exit; returns its stderr. */
const stop = async (p: RosterProcess): Promise<string> => {
  p.kill("SIGTERM")
  const r = await p.wait(40_000)
  expect(r.code, tail(r.stderr)).toBe(0)
  return r.stderr
}

const enqueueRecords = async (s: PgScratch, total: number) => {
  const r = await s.run(["enqueue", "pgprobe/record", "--ndjson", "-", "--json"], { stdin: ndjson(Array.from({ length: total }, (_, n) => ({ n }))) })
  expect(r.code, tail(r.stderr)).toBe(0)
  expect(parseJsonOutput(r)).toEqual({ inserted: total, existing: 0 })
}

const succeededBacklog = (s: PgScratch) => s.count("SELECT COUNT(*) FROM roster_executions WHERE state = 'succeeded' AND schedule_id IS NULL")

/** Every fire of the schedule once, each enqueued fire with exactly one execution keyed by it, and no other executions. */
const expectFiresOnce = async (s: PgScratch, scheduleId: string) => {
  const fires = await s.count("SELECT COUNT(*) FROM roster_schedule_fires WHERE schedule_id = $1", scheduleId)
  expect(fires).toBeGreaterThan(0)
  expect(await s.count("SELECT COUNT(DISTINCT due_at) FROM roster_schedule_fires WHERE schedule_id = $1", scheduleId)).toBe(fires)
  const enqueued = await s.count("SELECT COUNT(*) FROM roster_schedule_fires WHERE schedule_id = $1 AND outcome = 'enqueued'", scheduleId)
  expect(await s.count("SELECT COUNT(*) FROM roster_executions WHERE schedule_id = $1", scheduleId)).toBe(enqueued)
  expect(await s.count(
    `SELECT COUNT(*) FROM roster_schedule_fires f JOIN roster_executions e ON e.id = f.execution_id
      WHERE f.schedule_id = $1 AND f.outcome = 'enqueued' AND e.fire_at = f.due_at AND e.schedule_id = f.schedule_id`,
    scheduleId
  )).toBe(enqueued)
  return fires
}

/**
 * Executions of Roster's own Jobs: `roster/prune`, which the scheduler fires at minute 17
 * of every hour. Its handler writes no row to `runs`, so a test that spans :17 has one
 * execution more than handler runs (CI saw 20,042 runs for 20,043 executions, twice).
 */
const ownExecutions = (s: PgScratch): Promise<number> => s.count("SELECT COUNT(*) FROM roster_executions WHERE job LIKE 'roster/%'")

/**
 * After a server restart or outage nobody repaired: the processes are still up; stopped
 * in order, they leave everything succeeded, every execution's handler run, a second run
 * only where a lease expired (an outcome lost with a connection, retried), and each fire
 * of `schedules` enqueued once.
 */
const expectCarriedOn = async (s: PgScratch, scheduler: RosterProcess, workers: ReadonlyArray<RosterProcess>, schedules: ReadonlyArray<string>) => {
  for (const p of [scheduler, ...workers]) expect(p.exited, `${p.args.join(" ")} exited:\n${tail(p.stderrSoFar())}`).toBe(false)
  await stop(scheduler)
  await waitFor("the last fires to run", async () =>
    (await s.count("SELECT COUNT(*) FROM roster_executions WHERE state IN ('queued', 'running')")) === 0, { timeoutMs: 30_000 })
  await Promise.all(workers.map(stop))
  const all = await s.count("SELECT COUNT(*) FROM roster_executions")
  expect(parseJsonOutput(await s.run(["executions", "count", "--json"]))).toEqual({ queued: 0, running: 0, waiting: 0, succeeded: all, failed: 0, cancelled: 0 })
  expect(await s.count("SELECT COUNT(DISTINCT execution_id) FROM runs")).toBe(all - (await ownExecutions(s)))
  // Listed, not counted: a failure names the runs (attempt, worker pid, time) it saw.
  expect(await s.all(
    `SELECT r.execution_id, r.attempt, r.pid, r.at FROM runs r JOIN (SELECT execution_id FROM runs GROUP BY execution_id HAVING COUNT(*) > 1) d
       ON d.execution_id = r.execution_id JOIN roster_executions e ON e.id = r.execution_id WHERE e.attempt = 1 ORDER BY r.execution_id, r.at`
  )).toEqual([])
  for (const id of schedules) await expectFiresOnce(s, id)
}

describe.skipIf(pg.skip)("Roster on PostgreSQL, as processes", () => {
  let s: PgScratch
  beforeEach(async () => {
    s = new PgScratch(pgUrl()!)
    await s.setup()
  })
  afterEach(async () => {
    await s.cleanup()
  })

  test("4 workers and 2 schedulers drain 20,000 jobs: each succeeds exactly once, each fire enqueues once", async () => {
    const total = 20_000
    await enqueueRecords(s, total)
    const schedulers = [s.spawn(["scheduler"]), s.spawn(["scheduler"])]
    const workers = Array.from({ length: 4 }, () => s.spawn(["worker", "--concurrency", "50"]))

    await waitFor("the backlog to drain", async () => (await succeededBacklog(s)) === total, { timeoutMs: 90_000, intervalMs: 250 })
    for (const p of schedulers) await stop(p)
    await waitFor("the last fires to run", async () =>
      (await s.count("SELECT COUNT(*) FROM roster_executions WHERE state IN ('queued', 'running')")) === 0, { timeoutMs: 30_000 })
    const stderrs = await Promise.all(workers.map(stop))
    const ids = stderrs.map(workerIdOf)
    expect(new Set(ids).size).toBe(4)

    // Every execution, backlog and fires alike: succeeded on its first attempt, lease cleared.
    const all = await s.count("SELECT COUNT(*) FROM roster_executions")
    expect(all).toBeGreaterThan(total)
    expect(await s.count("SELECT COUNT(*) FROM roster_executions WHERE state = 'succeeded' AND attempt = 1 AND lease_expires_at IS NULL")).toBe(all)

    // One attempt per execution, succeeded, by one of the four workers, and the work was shared.
    expect(await s.count(`${attemptsCte} SELECT COUNT(*) FROM attempts`)).toBe(all)
    expect(await s.count(`${attemptsCte} SELECT COUNT(DISTINCT execution_id) FROM attempts WHERE attempt = 1 AND outcome = 'succeeded'`)).toBe(all)
    const byWorker = await s.all<{ worker: string; n: number }>(`${attemptsCte} SELECT worker, COUNT(*)::int AS n FROM attempts GROUP BY worker`)
    for (const row of byWorker) expect(ids).toContain(row.worker)
    expect(byWorker.length).toBeGreaterThanOrEqual(2)

    // The handler ran exactly once per execution of the app's Jobs. Listed first, not
    // counted: a failure names the executions without a run.
    expect(await s.all(
      `SELECT e.id, e.job, e.schedule_id, e.fire_at, e.attempt, e.lease_owner, e.created_at, e.started_at, e.finished_at
         FROM roster_executions e WHERE e.job NOT LIKE 'roster/%' AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.execution_id = e.id) ORDER BY e.id`
    )).toEqual([])
    const own = await ownExecutions(s)
    expect(await s.count("SELECT COUNT(*) FROM runs")).toBe(all - own)
    expect(await s.count("SELECT COUNT(DISTINCT execution_id) FROM runs")).toBe(all - own)

    // Two schedulers, one leader at a time: every fire once, with exactly one execution each.
    const fires = (await expectFiresOnce(s, "pgprobe/tick-a")) + (await expectFiresOnce(s, "pgprobe/tick-b"))
    expect(all - own - total).toBe(fires)

    expect(parseJsonOutput(await s.run(["executions", "count", "--json"]))).toEqual({ queued: 0, running: 0, waiting: 0, succeeded: all, failed: 0, cancelled: 0 })
  }, 150_000)

  test("kill -9 of one worker loses nothing: its leases expire and the other workers recover them", async () => {
    const total = 1_000
    const leaseEnv = { ROSTER_LEASE_MS: "2000", ROSTER_HEARTBEAT_MS: "500", ROSTER_REAP_MS: "500" }
    const r = await s.run(["enqueue", "pgprobe/nap", "--ndjson", "-", "--json"], { stdin: ndjson(Array.from({ length: total }, () => ({ ms: 40 }))) })
    expect(r.code, tail(r.stderr)).toBe(0)

    const a = s.spawn(["worker", "--concurrency", "20"], { env: leaseEnv })
    const aId = await waitFor("worker A's id", () => workerIdOf(a.stderrSoFar()), { timeoutMs: 20_000 })
    const others = Array.from({ length: 3 }, () => s.spawn(["worker", "--concurrency", "20", "--exit-when-idle"], { env: leaseEnv }))
    await waitFor("worker A to hold leases after finishing some work", async () =>
      (await s.count("SELECT COUNT(*) FROM roster_executions WHERE state = 'succeeded'")) > 50 &&
      (await s.count("SELECT COUNT(*) FROM roster_executions WHERE state = 'running' AND lease_owner = $1", aId)) >= 10, { timeoutMs: 30_000 })
    a.kill("SIGKILL")
    expect((await a.wait(10_000)).signal).toBe("SIGKILL")
    // What A held when it died (only the Reaper changes these rows, once their leases expire).
    const held = new Set((await s.all<{ id: string }>("SELECT id FROM roster_executions WHERE state = 'running' AND lease_owner = $1", aId)).map((x) => x.id))
    expect(held.size).toBeGreaterThan(0)

    const results = await Promise.all(others.map((w) => w.wait(60_000)))
    for (const res of results) expect(res.code, tail(res.stderr)).toBe(0)

    expect(parseJsonOutput(await s.run(["executions", "count", "--json"]))).toEqual({ queued: 0, running: 0, waiting: 0, succeeded: total, failed: 0, cancelled: 0 })
    // A's executions: attempt 1 expired under A, attempt 2 succeeded elsewhere.
    const recovered = await s.all<{ execution_id: string; attempt: number; worker: string; outcome: string }>(
      `${attemptsCte} SELECT execution_id, attempt, worker, outcome FROM attempts WHERE execution_id = ANY($1::text[]) ORDER BY execution_id, attempt`,
      [...held]
    )
    expect(recovered).toHaveLength(held.size * 2)
    for (let i = 0; i < recovered.length; i += 2) {
      expect([recovered[i]!.attempt, recovered[i]!.worker, recovered[i]!.outcome]).toEqual([1, aId, "lease_expired"])
      expect([recovered[i + 1]!.attempt, recovered[i + 1]!.outcome]).toEqual([2, "succeeded"])
      expect(recovered[i + 1]!.worker).not.toBe(aId)
    }
    // Every execution ran; only A's may have run twice.
    expect(await s.count("SELECT COUNT(DISTINCT execution_id) FROM runs")).toBe(total)
    const twice = await s.all<{ execution_id: string }>("SELECT execution_id FROM runs GROUP BY execution_id HAVING COUNT(*) > 1")
    for (const row of twice) expect(held.has(row.execution_id)).toBe(true)
    expect(await s.count("SELECT COUNT(*) FROM roster_executions WHERE attempt > 1 AND NOT (id = ANY($1::text[]))", [...held])).toBe(0)
  }, 120_000)

})

// The restart and the outage happen to a cluster of this file's own: the shared server
// serves the other test files running alongside.
const bin = pg.skip ? undefined : pgBinDir()
describe.skipIf(bin === undefined)("Roster on PostgreSQL, as processes, through a server restart and an outage", () => {
  let cluster: PrivateCluster
  let s: PgScratch
  beforeAll(async () => {
    cluster = await startPrivateCluster(bin!)
  }, 60_000)
  afterAll(async () => {
    await cluster?.destroy()
  })
  beforeEach(async () => {
    s = new PgScratch(cluster.url)
    await s.setup()
  })
  afterEach(async () => {
    await s.cleanup()
  })

  test("a server restart mid-drain loses nothing; workers and scheduler carry on by themselves", async () => {
    const total = 20_000
    await enqueueRecords(s, total)
    // Short leases bound the wait if an outcome is lost with a connection.
    const env = { ROSTER_LEASE_MS: "3000", ROSTER_HEARTBEAT_MS: "1000", ROSTER_REAP_MS: "1000" }
    const scheduler = s.spawn(["scheduler"], { env })
    const workers = Array.from({ length: 4 }, () => s.spawn(["worker", "--concurrency", "50"], { env }))

    await waitFor("a quarter of the backlog", async () => (await succeededBacklog(s)) >= total / 4, { timeoutMs: 60_000, intervalMs: 50 })
    await cluster.restart()
    const restartedAt = Date.now()
    const atRestart = await s.count("SELECT COUNT(*) FROM roster_executions WHERE state = 'succeeded'")
    expect(atRestart).toBeLessThan(total)

    // Nobody restarts the processes: they reconnect and finish the backlog.
    await waitFor("the backlog to drain after the restart", async () => (await succeededBacklog(s)) === total, { timeoutMs: 90_000, intervalMs: 250 })
    await waitFor("a fire after the restart", async () =>
      (await s.count("SELECT COUNT(*) FROM roster_schedule_fires WHERE due_at > $1", restartedAt)) > 0, { timeoutMs: 20_000 })
    await expectCarriedOn(s, scheduler, workers, ["pgprobe/tick-a", "pgprobe/tick-b"])
  }, 180_000)

  test("an outage longer than the retry window: StoreErrors are logged, then everything resumes once the server is back", async () => {
    const total = 10_000
    await enqueueRecords(s, total)
    const env = { ROSTER_LEASE_MS: "3000", ROSTER_HEARTBEAT_MS: "1000", ROSTER_REAP_MS: "1000" }
    const scheduler = s.spawn(["scheduler"], { env })
    const workers = Array.from({ length: 2 }, () => s.spawn(["worker", "--concurrency", "50"], { env }))
    await waitFor("a quarter of the backlog", async () => (await succeededBacklog(s)) >= total / 4, { timeoutMs: 60_000, intervalMs: 50 })
    await cluster.stop()
    try {
      // Longer than the store's 5 s retry window: operations fail and the actors back off.
      await waitFor("a worker's actor to fail with a StoreError", () =>
        workers.some((w) => /heartbeat failed: .*unreachable|actor \S+ crashed/.test(w.stderrSoFar())), { timeoutMs: 30_000 })
      await Bun.sleep(2_000)
    } finally {
      await cluster.start()
    }
    await waitFor("the backlog to drain after the outage", async () => (await succeededBacklog(s)) === total, { timeoutMs: 90_000, intervalMs: 250 })
    // Outcomes that could not be written during the outage were written afterwards.
    await expectCarriedOn(s, scheduler, workers, ["pgprobe/tick-a"])
  }, 180_000)
})
