/**
 * `roster init` (issue 8): roster.config.ts and `apps/<app>/{jobs,schedules}.ts`, ready
 * to run — `roster check` passes on them at once and `roster worker` runs the Job —
 * and nothing is ever overwritten.
 *
 * Projects are made under tests/.tmp (gitignored) so that their `import ... from
 * "roster"` and `"effect"` resolve to this checkout, as they would in a project with
 * roster installed. The CLI runs as a real process with the project as its working
 * directory and no ROSTER_* variables, so only the scaffolded config is read.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test"
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { parseJsonOutput, repoRoot, spawnRoster, tail, type ProcessResult } from "../support/processes.ts"

let root: string

beforeEach(() => {
  mkdirSync(join(repoRoot, "tests/.tmp"), { recursive: true })
  root = mkdtempSync(join(repoRoot, "tests/.tmp/init-"))
})

afterEach(() => {
  rmSync(root, { recursive: true, force: true })
})

/** Runs the CLI from source in `cwd`. */
const roster = (cwd: string, args: ReadonlyArray<string>): Promise<ProcessResult> => spawnRoster(args, { cwd, env: {} }).wait(60_000)

const expectOk = (r: ProcessResult): ProcessResult => {
  expect(r.code, tail(r.stderr)).toBe(0)
  return r
}

describe("roster init", () => {
  test("creates a project in a missing folder that check accepts and a worker runs", async () => {
    const project = join(root, "shop")
    const created = expectOk(await roster(root, ["init", "--app", "greetings", "shop"]))
    expect(created.stdout).toContain(`created ${join("shop", "roster.config.ts")}`)
    for (const file of ["roster.config.ts", "apps/greetings/jobs.ts", "apps/greetings/schedules.ts"]) expect(existsSync(join(project, file))).toBe(true)

    const report = parseJsonOutput<{ ok: boolean; embedded: boolean; appsDir: string; jobs: Array<{ id: string }>; schedules: Array<{ id: string; job: string }> }>(
      expectOk(await roster(project, ["check", "--json"]))
    )
    expect(report).toMatchObject({ ok: true, embedded: false, appsDir: "apps" })
    expect(report.jobs.map((j) => j.id)).toContain("greetings/greet")
    expect(report.schedules).toContainEqual(expect.objectContaining({ id: "greetings/hourly-greeting", job: "greetings/greet" }))

    const { id } = parseJsonOutput<{ id: string }>(expectOk(await roster(project, ["enqueue", "greetings/greet", "--payload", '{"name":"you"}', "--json"])))
    expectOk(await roster(project, ["worker", "--exit-when-idle"]))
    const detail = parseJsonOutput<{ state: string; result: unknown; logs: Array<{ message: string }> }>(expectOk(await roster(project, ["executions", "show", id, "--json"])))
    expect(detail).toMatchObject({ state: "succeeded", result: { greeting: "hello, you" } })
    expect(detail.logs.map((l) => l.message)).toContain("hello, you")
    // The config's db: roster.db in the project folder.
    expect(existsSync(join(project, "roster.db"))).toBe(true)
  }, 60_000)

  test("writes into the working directory by default, with the app hello", async () => {
    expectOk(await roster(root, ["init"]))
    expect(readFileSync(join(root, "apps/hello/jobs.ts"), "utf8")).toContain('id: "hello/greet"')
    expect(readFileSync(join(root, "apps/hello/schedules.ts"), "utf8")).toContain('id: "hello/hourly-greeting"')
  }, 60_000)

  test("refuses, writing nothing, when any of its files exists", async () => {
    mkdirSync(join(root, "apps/hello"), { recursive: true })
    writeFileSync(join(root, "apps/hello/jobs.ts"), "// mine\n")
    const r = await roster(root, ["init"])
    expect(r.code).toBe(1)
    expect(r.stderr.trim()).toBe("roster: roster init overwrites nothing, and apps/hello/jobs.ts already exists")
    expect(readFileSync(join(root, "apps/hello/jobs.ts"), "utf8")).toBe("// mine\n")
    expect(existsSync(join(root, "roster.config.ts"))).toBe(false)
    expect(existsSync(join(root, "apps/hello/schedules.ts"))).toBe(false)
  }, 60_000)

  test("an app name that is not kebab-case is a usage error", async () => {
    const r = await roster(root, ["init", "--app", "My_App"])
    expect(r.code).toBe(2)
    expect(r.stderr).toContain("must be kebab-case")
    expect(existsSync(join(root, "roster.config.ts"))).toBe(false)
  }, 60_000)
})
