/**
 * Durable steps and transactional enqueue across real crashes: a worker killed with
 * `kill -9` after step 2 is resumed at step 3 by another worker, each step's effect
 * having run exactly once; a process that dies right after committing an enqueue
 * (before anything could wake a worker) still gets its job run.
 */
import { describe, expect, test } from "bun:test"
import { join } from "node:path"
import { bunBinary, fixtureApps, repoRoot, useScratch, waitFor, workerIdOf, attemptsCte } from "../support/processes.ts"

const scratch = useScratch({ apps: fixtureApps })
const fast = { ROSTER_LEASE_MS: "1500", ROSTER_HEARTBEAT_MS: "300", ROSTER_REAP_MS: "200", ROSTER_IDLE_HORIZON_MS: "3000" }

describe("durable steps across kill -9", () => {
  test("a three-step handler killed after step 2 resumes at step 3 and each step ran exactly once", async () => {
    const s = scratch()
    const enq = await s.run(["enqueue", "saga/three-steps", "--payload", "{}", "--json"])
    expect(enq.code).toBe(0)
    const { id } = JSON.parse(enq.stdout) as { id: string }
    const a = s.spawn(["worker"], { env: fast })
    await waitFor("step 2 applied", () => {
      try {
        return s.count("SELECT COUNT(*) FROM effects WHERE step = 'charge'") === 1
      } catch {
        return false
      }
    })
    const workerA = await waitFor("worker A's id in its log", () => workerIdOf(a.stderrSoFar()))
    a.kill("SIGKILL")
    expect((await a.wait()).signal).toBe("SIGKILL")
    expect(s.count("SELECT COUNT(*) FROM roster_executions WHERE id = ? AND state = 'running'", id)).toBe(1)

    const b = await s.run(["worker", "--exit-when-idle"], { env: fast, timeoutMs: 60_000 })
    expect(b.code).toBe(0)
    const effects = s.all<{ step: string; n: number }>("SELECT step, COUNT(*) AS n FROM effects GROUP BY step ORDER BY step")
    expect(effects).toEqual([{ step: "charge", n: 1 }, { step: "reserve", n: 1 }, { step: "ship", n: 1 }])
    expect(s.count("SELECT COUNT(*) FROM effects WHERE step_key LIKE ?", `${id}:%`)).toBe(3)
    expect(s.all("SELECT state, attempt FROM roster_executions WHERE id = ?", id)).toEqual([{ state: "succeeded", attempt: 2 }])
    const attempts = s.all<{ attempt: number; worker: string; outcome: string }>(`${attemptsCte} SELECT attempt, worker, outcome FROM attempts WHERE execution_id = ? ORDER BY attempt`, id)
    expect(attempts.map((x) => x.outcome)).toEqual(["lease_expired", "succeeded"])
    expect(attempts[0]!.worker).toBe(workerA!)
    const steps = s.all<{ name: string; attempt: number }>("SELECT name, attempt FROM roster_steps WHERE execution_id = ? ORDER BY name", id)
    expect(steps).toEqual([{ name: "charge", attempt: 1 }, { name: "reserve", attempt: 1 }, { name: "ship", attempt: 2 }])
  }, 90_000)
})

describe("transactional enqueue across a crash", () => {
  test("a process killed right after committing its enqueue still has the job run", async () => {
    const s = scratch()
    // Create the schema first, as a deployed app would have it.
    expect((await s.run(["migrate"])).code).toBe(0)
    const worker = s.spawn(["worker"], { env: { ROSTER_POLL_MS: "60000" } })
    await waitFor("worker started", () => workerIdOf(worker.stderrSoFar()))
    const child = Bun.spawn([bunBinary, join(repoRoot, "tests/fixtures/scripts/enqueue-and-die.ts"), s.db, "42"], { stdout: "pipe", stderr: "pipe" })
    await child.exited
    expect(child.signalCode).toBe("SIGKILL")
    expect(s.count("SELECT COUNT(*) FROM orders WHERE id = 42")).toBe(1)
    await waitFor("the job ran", () => s.count("SELECT COUNT(*) FROM roster_executions WHERE job = 'probe/record' AND state = 'succeeded'") === 1, { timeoutMs: 20_000 })
    expect(s.count("SELECT COUNT(*) FROM runs")).toBe(1)
    worker.kill("SIGTERM")
    expect((await worker.wait()).code).toBe(0)
  }, 60_000)
})
