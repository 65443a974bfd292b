/**
 * `roster init` makes a project that works right after `npm install` (issue 12, DESIGN
 * §7). `roster init --roster file:<tarball>` (the tarball `npm pack` makes of this
 * checkout, tests/support/package.ts) writes a project in a folder under the OS temp
 * folder; `npm install` installs it from package.json alone; then, as a user would run
 * them: `bun run check`, `bun run test` (tsc --noEmit under the strict tsconfig, then
 * the app's own test), an enqueue and `bun run worker --exit-when-idle` — the Job
 * succeeds with the greeting of the app's services.ts — and `bun run scheduler`, which
 * syncs the app's Schedule and exits 0 on SIGTERM, leaving no process behind.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { rmSync } from "node:fs"
import { join } from "node:path"
import { cliEntry, parseJsonOutput, tail, waitFor, type ProcessResult } from "../support/processes.ts"
import { expectOk, npmInstall, packedTarball, run, runOk, start, tempDir } from "../support/package.ts"

let root: string
let project: string

beforeAll(async () => {
  root = tempDir("roster-init-project-")
  const tarball = await packedTarball(root)
  await runOk([process.execPath, cliEntry, "init", "--app", "shop", "--roster", `file:${tarball}`, "shop"], root, 60_000)
  project = join(root, "shop")
  await npmInstall(project)
}, 600_000)

afterAll(() => {
  rmSync(root, { recursive: true, force: true })
})

/** `bun run <script> <args>` in the project, with the bun npm installed there. */
const bunRun = (script: string, args: ReadonlyArray<string> = [], timeoutMs = 60_000): Promise<ProcessResult> =>
  run([join(project, "node_modules/.bin/bun"), "run", script, ...args], project, timeoutMs)

const isAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

describe("a project made by roster init", () => {
  test("bun run check accepts the app", async () => {
    const r = expectOk(await bunRun("check"))
    expect(r.stdout).toContain("ok: ")
    const report = parseJsonOutput<{ ok: boolean; jobs: Array<{ id: string }>; schedules: Array<{ id: string }> }>(expectOk(await bunRun("check", ["--json"])))
    expect(report.ok).toBe(true)
    expect(report.jobs.map((j) => j.id)).toContain("shop/greet")
    expect(report.schedules.map((s) => s.id)).toContain("shop/hourly-greeting")
  }, 120_000)

  test("bun run test type-checks the project and passes the app's test", async () => {
    const r = expectOk(await bunRun("test", [], 240_000))
    const output = `${r.stdout}${r.stderr}`
    expect(output).toContain("apps/shop/jobs.test.ts")
    expect(output).toMatch(/\b3 pass\b/)
    expect(output).toMatch(/\b0 fail\b/)
  }, 240_000)

  test("bun run worker runs an enqueued Job with the app's service", async () => {
    const { id } = parseJsonOutput<{ id: string }>(expectOk(await bunRun("roster", ["enqueue", "shop/greet", "--payload", '{"name":"you"}', "--json"])))
    expectOk(await bunRun("worker", ["--exit-when-idle"]))
    const detail = parseJsonOutput<{ state: string; result: unknown; logs: Array<{ message: string }> }>(expectOk(await bunRun("roster", ["executions", "show", id, "--json"])))
    expect(detail).toMatchObject({ state: "succeeded", result: { greeting: "hello, you" } })
    expect(detail.logs.map((l) => l.message)).toContain("hello, you")
  }, 120_000)

  test("bun run scheduler syncs the Schedule and stops cleanly on SIGTERM", async () => {
    const scheduler = start([join(project, "node_modules/.bin/bun"), "run", "scheduler"], project)
    const pid = await waitFor("the scheduler to sync its file schedules", () => {
      const output = scheduler.stderrSoFar()
      return output.includes("synced file schedules") ? /scheduler \S+?:(\d+):\S+ started/.exec(output)?.[1] : undefined
    }, { timeoutMs: 60_000 })
    scheduler.kill("SIGTERM")
    const r = await scheduler.wait(30_000)
    expect(r.code, tail(r.stderr)).toBe(0)
    // The roster process bun run started is gone too, not left running.
    expect(isAlive(Number(pid))).toBe(false)
    const schedules = parseJsonOutput<Array<{ id: string; nextRunAt?: string | null }>>(expectOk(await bunRun("roster", ["schedules", "list", "--json"])))
    expect(schedules.map((s) => s.id)).toContain("shop/hourly-greeting")
  }, 120_000)
})
