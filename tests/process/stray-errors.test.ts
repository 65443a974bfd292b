/**
 * A stray error does not take the worker down (issue 13): a handler that leaves an
 * unhandled promise rejection, or throws from a timer after returning, is logged (the
 * timer's with the execution it came from) while every other execution — one running
 * at that moment included — carries on and is charged nothing. Real `roster worker`
 * processes; without the guard Bun exits 1 and the innocent execution stays `running`.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { release } from "../fixtures/release.ts"
import { killLeftovers, parseJsonOutput, repoRoot, spawnRoster, tail, waitFor } from "../support/processes.ts"

let dir: string
let env: Record<string, string>
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "roster-stray-"))
  env = { ROSTER_DB: join(dir, "roster.db"), ROSTER_APPS_DIR: join(repoRoot, "tests/fixtures/stray-apps") }
})
afterEach(async () => {
  await killLeftovers()
  rmSync(dir, { recursive: true, force: true })
})

const roster = (args: ReadonlyArray<string>) => spawnRoster(args, { cwd: dir, env })
const enqueue = async (job: string, payload: unknown) => {
  const r = await roster(["enqueue", job, "--payload", JSON.stringify(payload), "--json"]).wait()
  expect(r.code, tail(r.stderr)).toBe(0)
  return parseJsonOutput<{ id: string }>(r).id
}
const show = async (id: string) => parseJsonOutput<{ state: string; attempt: number; attempts: Array<unknown> }>(await roster(["executions", "show", id, "--json"]).wait())

describe("stray errors in a worker", () => {
  test("an unhandled rejection and a throw from a timer are logged; the worker and the execution running meanwhile carry on", async () => {
    const worker = roster(["worker"])
    const gate = join(dir, "release-slow")
    const slow = await enqueue("stray/slow", { until: gate })
    await waitFor("the slow execution to run", async () => (await show(slow)).state === "running", { intervalMs: 20 })
    const rejecting = await enqueue("stray/reject", {})
    const throwing = await enqueue("stray/throw-later", {})
    await waitFor("both stray errors to be logged", () =>
      worker.stderrSoFar().includes("unhandled promise rejection") && worker.stderrSoFar().includes("uncaught exception"))
    for (const id of [rejecting, throwing]) await waitFor(`${id} to succeed`, async () => (await show(id)).state === "succeeded")
    // The slow execution ran through both errors; it ends only now, when the test lets it.
    expect((await show(slow)).state).toBe("running")
    release(gate)
    await waitFor("the slow execution to end", async () => (await show(slow)).state !== "running", { intervalMs: 50 })
    expect(worker.exited).toBe(false)
    // The innocent execution: one attempt, succeeded, never recovered from an expired lease.
    expect(await show(slow)).toMatchObject({ state: "succeeded", attempt: 1 })
    expect((await show(slow)).attempts.length).toBe(1)
    const stderr = worker.stderrSoFar()
    expect(stderr).toContain("a rejection nobody handles")
    expect(stderr).toMatch(new RegExp(`uncaught exception \\(from execution ${throwing}\\); the worker carries on.*thrown from a timer`))
    // Still serving: new work runs.
    const after = await enqueue("stray/slow", { until: gate })
    await waitFor("work enqueued after the stray errors to run", async () => (await show(after)).state === "succeeded")
    worker.kill("SIGTERM")
    const r = await worker.wait(30_000)
    expect(r.code, tail(r.stderr)).toBe(0)
  }, 90_000)
})
