/**
 * A worker that dies without warning (kill -9) loses nothing: its leases expire, another
 * worker's Reaper recovers them through the retry path (`lease_expired`, charged as an
 * attempt, DESIGN §2 "Leases and fencing"), and they run again to success.
 */
import { describe, expect, test } from "bun:test"
import { runsTableSql } from "../fixtures/apps/probe/jobs.ts"
import { join } from "node:path"
import { attemptsCte, bunBinary, ndjson, parseJsonOutput, repoRoot, tail, useScratch, waitFor, workerIdOf } from "../support/processes.ts"

const scratch = useScratch()

/** Short leases so recovery happens within the test; the worker heartbeats well inside them. */
const leaseEnv = { ROSTER_LEASE_MS: "2000", ROSTER_HEARTBEAT_MS: "500", ROSTER_REAP_MS: "500" }

interface AttemptRow {
  attempt: number
  worker: string
  outcome: string
  error: string | null
}

describe("crash recovery", () => {
  test("a worker killed with kill -9 mid-run has its executions recovered by another worker once the lease expires, none lost", async () => {
    const s = scratch()
    const total = 200
    const concurrency = 20
    const enqueued = await s.run(["enqueue", "probe/nap", "--ndjson", "-", "--json"], {
      stdin: ndjson(Array.from({ length: total }, () => ({ ms: 300 })))
    })
    expect(enqueued.code).toBe(0)
    expect(parseJsonOutput(enqueued)).toEqual({ inserted: total, existing: 0 })
    s.sqlite().run(runsTableSql)

    const a = s.spawn(["worker", "--concurrency", String(concurrency)], { env: leaseEnv })
    // Kill A once it has finished some work and holds a full set of leases.
    await waitFor("worker A to hold a full set of leases after finishing some work", () =>
      s.count("SELECT COUNT(*) FROM roster_executions WHERE state = 'succeeded'") > 0 &&
      s.count("SELECT COUNT(*) FROM roster_executions WHERE state = 'running'") === concurrency)
    a.kill("SIGKILL")
    const aResult = await a.wait(10_000)
    expect(aResult.signal).toBe("SIGKILL")
    const aId = workerIdOf(aResult.stderr)
    expect(aId).toBeDefined()

    // What A held when it died, as the database says (nothing changes it until B starts).
    const held = s.all<{ id: string; lease_owner: string; attempt: number }>(
      "SELECT id, lease_owner, attempt FROM roster_executions WHERE state = 'running' ORDER BY id"
    )
    expect(held.length).toBeGreaterThan(0)
    for (const row of held) {
      expect(row.lease_owner).toBe(aId!)
      expect(row.attempt).toBe(1)
    }
    const heldIds = new Set(held.map((r) => r.id))
    const doneByA = s.count("SELECT COUNT(*) FROM roster_executions WHERE state = 'succeeded'")
    expect(doneByA + held.length).toBeLessThan(total)

    const b = s.spawn(["worker", "--concurrency", String(concurrency), "--exit-when-idle"], { env: leaseEnv })
    const bResult = await b.wait(60_000)
    expect(bResult.code, tail(bResult.stderr)).toBe(0)
    const bId = workerIdOf(bResult.stderr)
    expect(bId).toBeDefined()
    expect(bId).not.toBe(aId!)

    // None lost: everything succeeded, nothing is leased any more.
    const counts = parseJsonOutput(await s.run(["executions", "count", "--json"]))
    expect(counts).toEqual({ queued: 0, running: 0, waiting: 0, succeeded: total, failed: 0, cancelled: 0 })
    expect(s.count("SELECT COUNT(*) FROM roster_executions WHERE lease_expires_at IS NOT NULL")).toBe(0)

    // What A held: attempt 1 ended lease_expired under A's name, attempt 2 succeeded on B.
    for (const id of heldIds) {
      const attempts = s.all<AttemptRow>(`${attemptsCte} SELECT attempt, worker, outcome, error FROM attempts WHERE execution_id = ? ORDER BY attempt`, id)
      expect(attempts.map((r) => [r.attempt, r.worker, r.outcome])).toEqual([[1, aId!, "lease_expired"], [2, bId!, "succeeded"]])
      expect(JSON.parse(attempts[0]!.error!)).toMatchObject({ tag: "LeaseExpired", retryable: true })
      expect(s.count("SELECT attempt FROM roster_executions WHERE id = ?", id)).toBe(2)
      // Its handler ran again on B (it may or may not have started on A before the kill).
      const runs = s.all<{ attempt: number }>("SELECT attempt FROM runs WHERE execution_id = ? ORDER BY attempt", id).map((r) => r.attempt)
      expect(runs.at(-1)).toBe(2)
      expect(runs.length).toBeLessThanOrEqual(2)
    }

    // The CLI tells the same story for one of them.
    const shown = parseJsonOutput<{ state: string; attempts: Array<{ attempt: number; worker: string; outcome: string }> }>(
      await s.run(["executions", "show", [...heldIds][0]!, "--json"])
    )
    expect(shown.state).toBe("succeeded")
    expect(shown.attempts.map((a) => [a.attempt, a.worker, a.outcome])).toEqual([[1, aId!, "lease_expired"], [2, bId!, "succeeded"]])

    // Everything else ran once, on A or on B, and succeeded at its first attempt.
    const others = s.all<{ id: string; attempt: number }>("SELECT id, attempt FROM roster_executions")
      .filter((r) => !heldIds.has(r.id))
    expect(others.length).toBe(total - heldIds.size)
    for (const r of others) expect(r.attempt).toBe(1)
    const placeholders = [...heldIds].map(() => "?").join(",")
    expect(s.count(
      `${attemptsCte} SELECT COUNT(*) FROM attempts WHERE execution_id NOT IN (${placeholders}) AND attempt = 1 AND outcome = 'succeeded' AND worker IN (?, ?)`,
      ...heldIds, aId!, bId!
    )).toBe(total - heldIds.size)
    expect(s.count(`${attemptsCte} SELECT COUNT(*) FROM attempts WHERE execution_id NOT IN (${placeholders})`, ...heldIds)).toBe(total - heldIds.size)
    expect(s.count(`SELECT COUNT(*) FROM runs WHERE execution_id NOT IN (${placeholders})`, ...heldIds)).toBe(total - heldIds.size)
    expect(s.count(`SELECT COUNT(DISTINCT execution_id) FROM runs`)).toBe(total)
  }, 90_000)
})

describe("the hand-off across a crash", () => {
  test("executions an app's own idle worker started in their insert, then killed with kill -9, are recovered by another worker, none lost", async () => {
    const s = scratch()
    expect((await s.run(["migrate"])).code).toBe(0)
    s.sqlite().run(runsTableSql)
    const total = 10
    const app = Bun.spawn([bunBinary, join(repoRoot, "tests/fixtures/scripts/handoff-and-die.ts"), s.db, String(total)], {
      stdout: "pipe",
      stderr: "pipe",
      env: { ...process.env, ROSTER_DB: s.db }
    })
    const [out, err] = await Promise.all([new Response(app.stdout).text(), new Response(app.stderr).text()])
    await app.exited
    expect(app.signalCode, tail(err)).toBe("SIGKILL")
    const acknowledged = out.trim().split("\n").filter((l) => l.length > 0)
    expect(acknowledged).toHaveLength(total)
    const ids = acknowledged.map(() => "?").join(", ")
    // Each acknowledged one was running in the app when it died, its handler begun.
    expect(s.count(`SELECT COUNT(*) FROM roster_executions WHERE state = 'running' AND attempt = 1 AND id IN (${ids})`, ...acknowledged)).toBe(total)
    expect(s.count(`SELECT COUNT(DISTINCT execution_id) FROM runs WHERE attempt = 1 AND execution_id IN (${ids})`, ...acknowledged)).toBe(total)

    const b = s.spawn(["worker"], { env: leaseEnv })
    await waitFor("every acknowledged execution to succeed on the second worker", () =>
      s.count(`SELECT COUNT(*) FROM roster_executions WHERE state = 'succeeded' AND id IN (${ids})`, ...acknowledged) === total, { timeoutMs: 30_000 })
    const outcomes = s.all<{ outcome: string }>(`${attemptsCte} SELECT outcome FROM attempts WHERE execution_id IN (${ids}) ORDER BY execution_id, attempt`, ...acknowledged)
    expect(outcomes.map((o) => o.outcome)).toEqual(acknowledged.flatMap(() => ["lease_expired", "succeeded"]))
    b.kill("SIGTERM")
    expect((await b.wait()).code).toBe(0)
  }, 90_000)
})
