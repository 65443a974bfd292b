/**
 * Graceful shutdown (DESIGN §2 "Shutdown"): on SIGTERM a worker stops claiming, lets
 * in-flight handlers finish within the grace period, then interrupts what is left and
 * releases it — back to queued, the attempt not charged — and exits 0.
 */
import { describe, expect, test } from "bun:test"
import { runsTableSql } from "../fixtures/apps/probe/jobs.ts"
import { attemptsCte, ndjson, parseJsonOutput, tail, useScratch, waitFor } from "../support/processes.ts"

const scratch = useScratch()

const enqueueNaps = async (s: ReturnType<typeof scratch>, count: number, ms: number) => {
  const r = await s.run(["enqueue", "probe/nap", "--ndjson", "-", "--json"], { stdin: ndjson(Array.from({ length: count }, () => ({ ms }))) })
  expect(r.code).toBe(0)
  expect(parseJsonOutput(r)).toEqual({ inserted: count, existing: 0 })
  s.sqlite().run(runsTableSql)
}

/** Ids of executions whose handler has started (it writes to `runs` first thing). */
const startedIds = (s: ReturnType<typeof scratch>): Array<string> =>
  s.all<{ execution_id: string }>("SELECT DISTINCT execution_id FROM runs ORDER BY execution_id").map((r) => r.execution_id)

/** Enqueues `count` naps of `ms`, starts a worker with `concurrency` and `graceMs`, waits until it runs a full set, sends SIGTERM; returns the ids that were in flight. */
const termWithFullSet = async (s: ReturnType<typeof scratch>, o: { count: number; ms: number; concurrency: number; graceMs: number }) => {
  await enqueueNaps(s, o.count, o.ms)
  const worker = s.spawn(["worker", "--concurrency", String(o.concurrency)], { env: { ROSTER_GRACE_MS: String(o.graceMs) } })
  const inFlight = await waitFor("the worker to start a full set of handlers", () => {
    const ids = startedIds(s)
    return ids.length === o.concurrency ? ids : undefined
  })
  worker.kill("SIGTERM")
  const result = await worker.wait(30_000)
  expect(result.code, tail(result.stderr)).toBe(0)
  return inFlight
}

describe("SIGTERM", () => {
  test("SIGTERM drains gracefully: in-flight executions finish, nothing new is claimed, exit 0", async () => {
    const s = scratch()
    const concurrency = 5
    const inFlight = await termWithFullSet(s, { count: 8, ms: 3_000, concurrency, graceMs: 10_000 })

    // The in-flight ones were allowed to finish.
    const succeeded = s.all<{ id: string }>("SELECT id FROM roster_executions WHERE state = 'succeeded' ORDER BY id").map((r) => r.id)
    expect(succeeded).toEqual(inFlight)
    expect(s.count(`${attemptsCte} SELECT COUNT(*) FROM attempts WHERE outcome = 'succeeded' AND attempt = 1`)).toBe(concurrency)
    expect(s.count(`${attemptsCte} SELECT COUNT(*) FROM attempts`)).toBe(concurrency)

    // Nothing was claimed after the signal: the rest are untouched.
    const rest = s.all<{ state: string; attempt: number; started_at: number | null; lease_owner: string | null }>(
      "SELECT state, attempt, started_at, lease_owner FROM roster_executions WHERE state <> 'succeeded'"
    )
    expect(rest).toEqual(Array.from({ length: 3 }, () => ({ state: "queued", attempt: 0, started_at: null, lease_owner: null })))
    expect(s.count("SELECT COUNT(*) FROM roster_executions WHERE lease_expires_at IS NOT NULL")).toBe(0)
    expect(startedIds(s)).toEqual(inFlight)
  }, 60_000)

  test("past the grace period in-flight work is released without charging an attempt", async () => {
    const s = scratch()
    const concurrency = 5
    const inFlight = await termWithFullSet(s, { count: 7, ms: 10_000, concurrency, graceMs: 300 })

    // Released: back to queued, attempt 0, no lease, no attempt row.
    const rows = s.all<{ id: string; state: string; attempt: number; started_at: number | null; lease_expires_at: number | null }>(
      "SELECT id, state, attempt, started_at, lease_expires_at FROM roster_executions ORDER BY id"
    )
    expect(rows.length).toBe(7)
    for (const row of rows) {
      expect(row).toMatchObject({ state: "queued", attempt: 0, started_at: null, lease_expires_at: null })
    }
    expect(s.count(`${attemptsCte} SELECT COUNT(*) FROM attempts`)).toBe(0)
    // They had really started (and were interrupted), and nothing else had.
    expect(startedIds(s)).toEqual(inFlight)
    const counts = parseJsonOutput(await s.run(["executions", "count", "--json"]))
    expect(counts).toEqual({ queued: 7, running: 0, waiting: 0, succeeded: 0, failed: 0, cancelled: 0 })
  }, 60_000)
})
