/**
 * Several worker processes on one SQLite file share a backlog without losing or
 * duplicating work: every execution is claimed by exactly one worker and its handler
 * runs exactly once (no lease expires here, so at-least-once is exactly once).
 */
import { describe, expect, test } from "bun:test"
import { runsTableSql } from "../fixtures/apps/probe/jobs.ts"
import { attemptsCte, ndjson, parseJsonOutput, tail, useScratch, workerIdOf } from "../support/processes.ts"

const scratch = useScratch()

describe("several workers drain one backlog", () => {
  test("4 workers drain 10,000 jobs and every job succeeds exactly once", async () => {
    const s = scratch()
    const total = 10_000
    const enqueued = await s.run(["enqueue", "probe/record", "--ndjson", "-", "--json"], {
      stdin: ndjson(Array.from({ length: total }, (_, n) => ({ n })))
    })
    expect(enqueued.code).toBe(0)
    expect(parseJsonOutput(enqueued)).toEqual({ inserted: total, existing: 0 })
    s.sqlite().run(runsTableSql)

    const workers = Array.from({ length: 4 }, () => s.spawn(["worker", "--exit-when-idle"]))
    const results = await Promise.all(workers.map((w) => w.wait(90_000)))
    for (const r of results) expect(r.code, tail(r.stderr)).toBe(0)

    // Each worker announced its id; every attempt row names one of them.
    const ids = results.map((r) => workerIdOf(r.stderr))
    expect(ids.every((id) => id !== undefined)).toBe(true)
    expect(new Set(ids).size).toBe(4)

    expect(s.count("SELECT COUNT(*) FROM roster_executions")).toBe(total)
    expect(s.count("SELECT COUNT(*) FROM roster_executions WHERE state = 'succeeded' AND attempt = 1 AND lease_expires_at IS NULL")).toBe(total)

    // Exactly one attempt per execution, each succeeded, by one of the four workers.
    expect(s.count(`${attemptsCte} SELECT COUNT(*) FROM attempts`)).toBe(total)
    expect(s.count(`${attemptsCte} SELECT COUNT(*) FROM attempts WHERE attempt = 1 AND outcome = 'succeeded'`)).toBe(total)
    expect(s.count(`${attemptsCte} SELECT COUNT(DISTINCT execution_id) FROM attempts`)).toBe(total)
    const byWorker = s.all<{ worker: string; n: number }>(`${attemptsCte} SELECT worker, COUNT(*) AS n FROM attempts GROUP BY worker`)
    for (const row of byWorker) expect(ids).toContain(row.worker)
    // The backlog was really shared (otherwise this would test one worker, not four).
    expect(byWorker.length).toBeGreaterThanOrEqual(2)

    // The handler itself ran once per execution: no duplicates, none missing.
    expect(s.count("SELECT COUNT(*) FROM runs")).toBe(total)
    expect(s.count("SELECT COUNT(DISTINCT execution_id) FROM runs")).toBe(total)
    expect(s.count("SELECT COUNT(*) FROM roster_executions e WHERE NOT EXISTS (SELECT 1 FROM runs r WHERE r.execution_id = e.id)")).toBe(0)

    const counts = parseJsonOutput(await s.run(["executions", "count", "--json"]))
    expect(counts).toEqual({ queued: 0, running: 0, waiting: 0, succeeded: total, failed: 0, cancelled: 0 })
  }, 120_000)

  test("processes that open a fresh database at once all migrate it safely (DESIGN §4)", async () => {
    const s = scratch()
    const results = await Promise.all(Array.from({ length: 4 }, (_, n) =>
      s.run(["enqueue", "probe/record", "--payload", JSON.stringify({ n }), "--json"])))
    for (const r of results) expect(r.code, r.stderr).toBe(0)
    expect(new Set(results.map((r) => parseJsonOutput(r).id)).size).toBe(4)
    expect(s.count("SELECT COUNT(*) FROM roster_executions")).toBe(4)
    expect(s.count("SELECT COUNT(*) FROM roster_migrations")).toBe(s.count("SELECT COUNT(DISTINCT version) FROM roster_migrations"))
  }, 60_000)
})
