/**
 * The single binary (DESIGN §5, issue 8): `roster build` run in this repository (what
 * `npm run build` does) compiles the demo into one executable, which is then copied
 * ALONE into an empty folder and run there with a minimal environment — PATH without
 * Bun or node_modules/.bin, no package.json, no node_modules, no roster.config.ts — as
 * a deployed binary would be: `check`, `enqueue`, a `worker --exit-when-idle` drain on a
 * fresh database, `executions count|show`, `dashboard`, `scheduler`, `init`, and (when
 * PostgreSQL is configured) the same drain on PostgreSQL. Then a project made by
 * `roster init` is built, to show its roster.config.ts travels inside its binary.
 *
 * The binary is built once for the file (`bun build --compile` takes about a second
 * here); every test uses its own database file in the one deploy folder.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from "bun:test"
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { freshSchema, pgAdmin, urlWithSchema } from "../store/drivers.ts"
import { pgUrl, requireService } from "../support/env.ts"
import { ndjson, parseJsonOutput, repoRoot, spawnRoster, tail, waitFor, type ProcessResult, type RosterProcess } from "../support/processes.ts"

const pg = requireService("postgres")

/** A PATH with the system's tools only: no Bun, no node_modules/.bin. */
const barePath = "/usr/bin:/bin"

let work: string
let deploy: string
let binary: string
const started: Array<RosterProcess> = []

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), "roster-binary-"))
  const built = join(work, "build", "roster-demo")
  const r = await spawnRoster(["build", "--outfile", built], { cwd: repoRoot, env: {} }).wait(120_000)
  expect(r.code, tail(r.stderr)).toBe(0)
  expect(r.stdout).toMatch(/^built .*roster-demo \(\d+\.\d MB\) in \d+\.\d s: 1 app\(s\) \(demo\)/)
  deploy = join(work, "deploy")
  mkdirSync(deploy)
  binary = join(deploy, "roster-demo")
  copyFileSync(built, binary)
  rmSync(join(work, "build"), { recursive: true, force: true })
}, 120_000)

afterAll(async () => {
  for (const p of started) {
    if (!p.exited) p.kill("SIGKILL")
    await p.wait(10_000).catch(() => undefined)
  }
  rmSync(work, { recursive: true, force: true })
})

/** Starts the binary in the deploy folder with only `env` (plus the bare PATH and HOME). */
const spawnBinary = (args: ReadonlyArray<string>, options: { readonly env?: Record<string, string>; readonly stdin?: string } = {}): RosterProcess => {
  const p = spawnRoster(args, {
    cwd: deploy,
    command: [binary],
    onlyEnv: true,
    env: { PATH: barePath, HOME: deploy, ...options.env },
    stdin: options.stdin
  })
  started.push(p)
  return p
}

/** Runs the binary to completion and expects exit 0. */
const runOk = async (args: ReadonlyArray<string>, options: { readonly env?: Record<string, string>; readonly stdin?: string } = {}): Promise<ProcessResult> => {
  const r = await spawnBinary(args, options).wait(60_000)
  expect(r.code, `${args.join(" ")}\n${tail(r.stderr)}`).toBe(0)
  return r
}

/** Enqueues demo/noop three times one by one and five times in bulk, then drains with one worker; returns the first id. */
const enqueueAndDrain = async (env: Record<string, string>): Promise<string> => {
  const ids: Array<string> = []
  for (const n of [1, 2, 3]) {
    const r = parseJsonOutput<{ id: string; inserted: boolean }>(await runOk(["enqueue", "demo/noop", "--payload", JSON.stringify({ n }), "--json"], { env }))
    expect(r.inserted).toBe(true)
    ids.push(r.id)
  }
  const bulk = await runOk(["enqueue", "demo/noop", "--ndjson", "-", "--json"], { env, stdin: ndjson([10, 11, 12, 13, 14].map((n) => ({ n }))) })
  expect(parseJsonOutput(bulk)).toEqual({ inserted: 5, existing: 0 })
  expect(parseJsonOutput(await runOk(["executions", "count", "--json"], { env }))).toMatchObject({ queued: 8, succeeded: 0 })
  await runOk(["worker", "--exit-when-idle"], { env })
  expect(parseJsonOutput(await runOk(["executions", "count", "--json"], { env }))).toEqual({ queued: 0, running: 0, waiting: 0, succeeded: 8, failed: 0, cancelled: 0 })
  return ids[0]!
}

describe("the demo binary, alone in an empty folder", () => {
  test("the binary sits alone in its folder, and the environment has no Bun to fall back on", () => {
    expect(readdirSync(deploy)).toEqual(["roster-demo"])
    expect(Bun.which("bun", { PATH: barePath })).toBeNull()
  })

  test("check lists the demo's Jobs and Schedules, carried inside the binary", async () => {
    const report = parseJsonOutput<{ ok: boolean; embedded: boolean; appsDir: string; jobs: Array<{ id: string; file: string }>; schedules: Array<{ id: string }> }>(
      await runOk(["check", "--json"])
    )
    expect(report).toMatchObject({ ok: true, embedded: true, appsDir: "examples/demo/apps" })
    const jobs = report.jobs.map((j) => j.id)
    for (const id of ["demo/noop", "demo/sleep", "demo/flaky", "demo/broken"]) expect(jobs).toContain(id)
    expect(report.jobs.find((j) => j.id === "demo/noop")?.file).toBe("examples/demo/apps/demo/jobs.ts")
    expect(report.schedules.map((s) => s.id)).toContain("demo/every-minute")
    expect((await runOk(["check"])).stdout).toContain("built into this binary from examples/demo/apps")
  }, 60_000)

  test("enqueue and a worker drain demo jobs on a fresh SQLite database next to the binary", async () => {
    const env = { ROSTER_DB: join(deploy, "drain.db") }
    expect(existsSync(env.ROSTER_DB)).toBe(false)
    const first = await enqueueAndDrain(env)
    const detail = parseJsonOutput<{ state: string; result: unknown; logs: Array<{ message: string }> }>(await runOk(["executions", "show", first, "--json"], { env }))
    expect(detail.state).toBe("succeeded")
    expect(detail.result).toEqual({ n: 1 })
    expect(detail.logs.map((l) => l.message)).toContain("noop 1")
  }, 60_000)

  test("the dashboard is served from the binary", async () => {
    const env = { ROSTER_DB: join(deploy, "dashboard.db") }
    await runOk(["enqueue", "demo/sleep", "--payload", '{"ms":1}'], { env })
    const p = spawnBinary(["dashboard", "--port", "0"], { env })
    const url = await waitFor("the dashboard to listen", () => {
      if (p.exited) throw new Error(`dashboard exited early:\n${tail(p.stderrSoFar())}`)
      return /dashboard on (http:\/\/\S+)/.exec(p.stdoutSoFar())?.[1]
    })
    const overview = await fetch(`${url}/`)
    expect(overview.status).toBe(200)
    expect(await overview.text()).toContain("Roster")
    const executions = await fetch(`${url}/executions`)
    expect(executions.status).toBe(200)
    expect(await executions.text()).toContain("demo/sleep")
    p.kill("SIGTERM")
    expect((await p.wait(30_000)).code).toBe(0)
  }, 60_000)

  test("the scheduler syncs the Schedules the binary carries", async () => {
    const env = { ROSTER_DB: join(deploy, "scheduler.db") }
    const p = spawnBinary(["scheduler"], { env })
    const ids = await waitFor("the file schedules to be synced", async () => {
      if (p.exited) throw new Error(`scheduler exited early:\n${tail(p.stderrSoFar())}`)
      const r = await spawnBinary(["schedules", "list", "--json"], { env }).wait()
      const rows = r.code === 0 ? parseJsonOutput<Array<{ id: string; source: string }>>(r) : []
      const files = rows.filter((row) => row.source === "file").map((row) => row.id)
      return files.length > 0 && files
    }, { timeoutMs: 30_000, intervalMs: 200 })
    expect(ids).toContain("demo/every-minute")
    p.kill("SIGTERM")
    expect((await p.wait(30_000)).code).toBe(0)
  }, 60_000)

  test("init scaffolds a project beside the binary, which keeps using the apps and config it carries", async () => {
    const r = await runOk(["init"])
    expect(r.stdout).toContain("created roster.config.ts")
    for (const file of ["package.json", "roster.config.ts", "apps/hello/services.ts", "apps/hello/jobs.ts", "apps/hello/schedules.ts"]) expect(existsSync(join(deploy, file))).toBe(true)
    const again = await spawnBinary(["init"]).wait()
    expect(again.code).toBe(1)
    expect(again.stderr.trim()).toBe(
      "roster: roster init overwrites nothing, and package.json, tsconfig.json, .gitignore, roster.config.ts, apps/hello/services.ts, apps/hello/jobs.ts, apps/hello/schedules.ts, apps/hello/jobs.test.ts already exist"
    )
    // The scaffolded roster.config.ts imports "roster", which cannot resolve here: the binary must not load it.
    expect((await runOk(["check"])).stdout).toContain("built into this binary from examples/demo/apps")
  }, 60_000)

  test("a binary refuses to build another", async () => {
    const r = await spawnBinary(["build"]).wait()
    expect(r.code).toBe(1)
    expect(r.stderr).toContain("cannot build another")
  }, 60_000)

  describe.skipIf(pg.skip)("on PostgreSQL", () => {
    test("the binary carries the PostgreSQL driver: the same drain on a fresh schema", async () => {
      const base = pgUrl()!
      const schema = freshSchema("roster_bin")
      await pgAdmin(base, `CREATE SCHEMA "${schema}"`)
      try {
        await enqueueAndDrain({ ROSTER_DB: urlWithSchema(base, schema) })
      } finally {
        await pgAdmin(base, `DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
      }
    }, 60_000)
  })
})

describe("roster build of a project made by roster init", () => {
  let project: string
  beforeEach(async () => {
    // Under tests/.tmp, `import ... from "roster"` resolves to this checkout (its tsconfig paths), as in a project with
    // roster installed, once the scaffolded tsconfig.json, which has no such paths, is removed.
    mkdirSync(join(repoRoot, "tests/.tmp"), { recursive: true })
    project = mkdtempSync(join(repoRoot, "tests/.tmp/binary-project-"))
    const r = await spawnRoster(["init", "--app", "shop"], { cwd: project, env: {} }).wait()
    expect(r.code, tail(r.stderr)).toBe(0)
    rmSync(join(project, "tsconfig.json"))
  }, 60_000)
  afterEach(() => {
    rmSync(project, { recursive: true, force: true })
  })

  test("the binary carries the project's roster.config.ts and its app, services.ts included", async () => {
    const configFile = join(project, "roster.config.ts")
    writeFileSync(configFile, readFileSync(configFile, "utf8").replace("queues: { default: { concurrency: 10 } }", "queues: { default: { concurrency: 3 }, mail: { concurrency: 2 } }"))
    const out = join(work, "shop", "roster-shop")
    const built = await spawnRoster(["build", "--outfile", out], { cwd: project, env: {} }).wait(120_000)
    expect(built.code, tail(built.stderr)).toBe(0)
    expect(built.stdout).toContain("1 app(s) (shop)")
    const r = await spawnRoster(["check", "--json"], { cwd: dirname(out), command: [out], onlyEnv: true, env: { PATH: barePath } }).wait()
    expect(r.code, tail(r.stderr)).toBe(0)
    const report = parseJsonOutput<{ queues: Array<{ name: string; concurrency: number; globalConcurrency: number | null; rateLimit: unknown }>; jobs: Array<{ id: string }>; schedules: Array<{ id: string }> }>(r)
    expect(report.queues).toEqual([{ name: "default", concurrency: 3, globalConcurrency: null, rateLimit: null }, { name: "mail", concurrency: 2, globalConcurrency: null, rateLimit: null }])
    expect(report.jobs.map((j) => j.id)).toContain("shop/greet")
    expect(report.schedules.map((s) => s.id)).toContain("shop/hourly-greeting")
    // The app's services.ts travels inside the binary too: its Greeter makes the greeting.
    const run = (args: ReadonlyArray<string>) =>
      spawnRoster(args, { cwd: dirname(out), command: [out], onlyEnv: true, env: { PATH: barePath, ROSTER_DB: join(dirname(out), "shop.db") } }).wait()
    const enqueued = await run(["enqueue", "shop/greet", "--payload", '{"name":"binary"}', "--json"])
    expect(enqueued.code, tail(enqueued.stderr)).toBe(0)
    const { id } = parseJsonOutput<{ id: string }>(enqueued)
    const worker = await run(["worker", "--exit-when-idle"])
    expect(worker.code, tail(worker.stderr)).toBe(0)
    const shown = parseJsonOutput<{ state: string; result: unknown }>(await run(["executions", "show", id, "--json"]))
    expect(shown).toMatchObject({ state: "succeeded", result: { greeting: "hello, binary" } })
  }, 120_000)

  test("apps that check rejects are not compiled", async () => {
    writeFileSync(join(project, "apps/shop/jobs.ts"), "export const nothing = 1\n")
    const out = join(work, "broken", "roster-broken")
    const r = await spawnRoster(["build", "--outfile", out], { cwd: project, env: {} }).wait()
    expect(r.code).toBe(1)
    expect(r.stderr.trim()).toBe("roster: apps/shop/jobs.ts exports no Job (export the values returned by Job.make)")
    expect(existsSync(out)).toBe(false)
  }, 60_000)
})
