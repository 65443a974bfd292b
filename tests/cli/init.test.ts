/**
 * `roster init` (issues 8 and 12): a complete project — package.json with the scripts
 * of DESIGN §7, tsconfig.json, .gitignore, roster.config.ts and an app with a Job that
 * uses a service, services.ts, a Schedule and a test — whose app `roster check` accepts,
 * a worker runs and whose own test passes, and nothing is ever overwritten.
 *
 * Projects are made under tests/.tmp (gitignored) and run with the CLI from source. The
 * scaffolded tsconfig.json is removed before running them, so that this checkout's
 * tsconfig (whose paths map "roster" to src/) applies, as an installed package would;
 * tests/process/init-project.test.ts runs a project with Roster really installed from
 * its tarball. The CLI runs as a real process with the project as its working directory
 * and no ROSTER_* variables, so only the scaffolded config is read.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test"
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { parseJsonOutput, repoRoot, spawnRoster, tail, type ProcessResult } from "../support/processes.ts"

const projectFiles = (app: string) => [
  "package.json",
  "tsconfig.json",
  ".gitignore",
  "roster.config.ts",
  `apps/${app}/services.ts`,
  `apps/${app}/jobs.ts`,
  `apps/${app}/schedules.ts`,
  `apps/${app}/jobs.test.ts`
]

interface ScaffoldedPackage {
  name: string
  type: string
  scripts: Record<string, string>
  dependencies: Record<string, string>
  devDependencies: Record<string, string>
  allowScripts: Record<string, boolean>
}

const readJson = <A>(path: string): A => JSON.parse(readFileSync(path, "utf8")) as A

/** This checkout's package.json. */
const ours = readJson<{ version: string; devDependencies: Record<string, string> }>(join(repoRoot, "package.json"))

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
  test("creates a project in a missing folder whose app check accepts and a worker runs, with its service", async () => {
    const project = join(root, "shop")
    const created = expectOk(await roster(root, ["init", "--app", "greetings", "shop"]))
    for (const file of projectFiles("greetings")) {
      expect(existsSync(join(project, file)), file).toBe(true)
      expect(created.stdout).toContain(`created ${join("shop", file)}`)
    }
    rmSync(join(project, "tsconfig.json"))

    const report = parseJsonOutput<{ ok: boolean; embedded: boolean; appsDir: string; jobs: Array<{ id: string }>; schedules: Array<{ id: string; job: string }> }>(
      expectOk(await roster(project, ["check", "--json"]))
    )
    expect(report).toMatchObject({ ok: true, embedded: false, appsDir: "apps" })
    expect(report.jobs.map((j) => j.id)).toContain("greetings/greet")
    expect(report.schedules).toContainEqual(expect.objectContaining({ id: "greetings/hourly-greeting", job: "greetings/greet" }))

    const { id } = parseJsonOutput<{ id: string }>(expectOk(await roster(project, ["enqueue", "greetings/greet", "--payload", '{"name":"you"}', "--json"])))
    expectOk(await roster(project, ["worker", "--exit-when-idle"]))
    const detail = parseJsonOutput<{ state: string; result: unknown; logs: Array<{ message: string }> }>(expectOk(await roster(project, ["executions", "show", id, "--json"])))
    // The greeting comes from the Greeter of apps/greetings/services.ts.
    expect(detail).toMatchObject({ state: "succeeded", result: { greeting: "hello, you" } })
    expect(detail.logs.map((l) => l.message)).toContain("hello, you")
    // The config's db: roster.db in the project folder.
    expect(existsSync(join(project, "roster.db"))).toBe(true)

    // The app's own test (on roster/testing) passes.
    const tested = expectOk(await spawnRoster([], { cwd: project, env: {}, command: [process.execPath, "test", "./apps/greetings/jobs.test.ts"] }).wait(60_000))
    expect(tested.stderr).toMatch(/\b3 pass\b/)
    expect(tested.stderr).toMatch(/\b0 fail\b/)
  }, 60_000)

  test("package.json has the scripts, roster and the peers at this checkout's versions, and allows bun's install script", async () => {
    expectOk(await roster(root, ["init", "my-Project"]))
    const pkg = readJson<ScaffoldedPackage>(join(root, "my-Project/package.json"))
    expect(pkg.name).toBe("my-project")
    expect(pkg.type).toBe("module")
    expect(pkg.scripts).toMatchObject({
      worker: "roster worker",
      scheduler: "roster scheduler",
      dev: "roster dev",
      dashboard: "roster dashboard",
      check: "roster check",
      test: "tsc --noEmit && bun test"
    })
    expect(pkg.dependencies).toEqual({ roster: `^${ours.version}`, effect: `^${ours.devDependencies["effect"]}` })
    expect(pkg.devDependencies).toEqual({
      bun: `^${ours.devDependencies["bun"]}`,
      "@types/bun": `^${ours.devDependencies["@types/bun"]}`,
      typescript: `^${ours.devDependencies["typescript"]}`
    })
    expect(pkg.allowScripts).toEqual({ bun: true })
    const tsconfig = readFileSync(join(root, "my-Project/tsconfig.json"), "utf8")
    for (const flag of ["strict", "exactOptionalPropertyTypes", "noUncheckedIndexedAccess", "noPropertyAccessFromIndexSignature", "noUnusedLocals", "verbatimModuleSyntax"]) {
      expect(tsconfig).toContain(`"${flag}": true`)
    }
    expect(tsconfig).not.toContain("skipLibCheck")
    expect(readFileSync(join(root, "my-Project/.gitignore"), "utf8").split("\n")).toEqual(expect.arrayContaining(["node_modules/", "*.db", "*.db-wal", "*.db-shm", ".roster/", "dist/"]))
  }, 60_000)

  test("--roster sets the roster dependency as given", async () => {
    expectOk(await roster(root, ["init", "--roster", "file:/somewhere/roster-0.1.0.tgz"]))
    expect(readJson<ScaffoldedPackage>(join(root, "package.json")).dependencies["roster"]).toBe("file:/somewhere/roster-0.1.0.tgz")
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
    for (const file of projectFiles("hello").filter((f) => f !== "apps/hello/jobs.ts")) expect(existsSync(join(root, file)), file).toBe(false)
  }, 60_000)

  test("refuses in a folder that already has a package.json, naming every file it would overwrite", async () => {
    writeFileSync(join(root, "package.json"), "{}\n")
    writeFileSync(join(root, ".gitignore"), "x\n")
    const r = await roster(root, ["init"])
    expect(r.code).toBe(1)
    expect(r.stderr.trim()).toBe("roster: roster init overwrites nothing, and package.json, .gitignore already exist")
    expect(readFileSync(join(root, "package.json"), "utf8")).toBe("{}\n")
    expect(existsSync(join(root, "roster.config.ts"))).toBe(false)
  }, 60_000)

  test("an app name that is not kebab-case is a usage error", async () => {
    const r = await roster(root, ["init", "--app", "My_App"])
    expect(r.code).toBe(2)
    expect(r.stderr).toContain("must be kebab-case")
    expect(existsSync(join(root, "roster.config.ts"))).toBe(false)
  }, 60_000)
})
