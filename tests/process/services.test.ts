/**
 * `apps/<app>/services.ts` in a real `roster worker` process (DESIGN §7): built once
 * per process, provided to that app's handlers, closed at shutdown after in-flight
 * work; a Layer that fails to build stops the start with one line naming the file,
 * exit 1, and the queued work stays queued with no attempt charged.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test"
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { release } from "../fixtures/release.ts"
import { killLeftovers, parseJsonOutput, repoRoot, spawnRoster, tail, waitFor } from "../support/processes.ts"

const apps = join(repoRoot, "tests/fixtures/service-apps")
let dir: string
let env: Record<string, string>

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "roster-services-proc-"))
  env = { ROSTER_DB: join(dir, "roster.db"), ROSTER_APPS_DIR: apps, ROSTER_TEST_EVENTS: join(dir, "events.log") }
})
afterEach(async () => {
  await killLeftovers()
  rmSync(dir, { recursive: true, force: true })
})

const roster = (args: ReadonlyArray<string>, extra: Record<string, string> = {}) => spawnRoster(args, { cwd: dir, env: { ...env, ...extra } })
const events = () => (existsSync(env.ROSTER_TEST_EVENTS!) ? readFileSync(env.ROSTER_TEST_EVENTS!, "utf8").trim().split("\n") : [])

const enqueue = async (name: string, until?: string): Promise<string> => {
  const r = await roster(["enqueue", "greeter/greet", "--payload", JSON.stringify({ name, until }), "--json"]).wait()
  expect(r.code, tail(r.stderr)).toBe(0)
  return parseJsonOutput<{ id: string }>(r).id
}

const show = async (id: string) => {
  const r = await roster(["executions", "show", id, "--json"]).wait()
  expect(r.code, tail(r.stderr)).toBe(0)
  return parseJsonOutput<{ state: string; attempt: number; result: unknown }>(r)
}

describe("services.ts in a worker process", () => {
  test("built once, given to every execution of its app, closed after in-flight work at SIGTERM", async () => {
    const ids = [await enqueue("ada"), await enqueue("grace")]
    const worker = roster(["worker"])
    await waitFor("both greetings", () => events().filter((l) => l.startsWith("handled")).length === 2)
    const gate = join(dir, "release-linus")
    const slow = await enqueue("linus", gate)
    await waitFor("the slow greeting to start", async () => (await show(slow)).state === "running", { intervalMs: 20 })
    worker.kill("SIGTERM")
    // Stopping waits for the greeting in flight, which ends only when the test lets it.
    await waitFor("the worker to wait for its running execution", () => worker.stderrSoFar().includes("stopping: waiting up to"))
    expect(worker.exited).toBe(false)
    expect(events()).toEqual(["built", "handled ada", "handled grace"])
    release(gate)
    const r = await worker.wait(30_000)
    expect(r.code, tail(r.stderr)).toBe(0)
    for (const id of [...ids, slow]) expect((await show(id)).state).toBe("succeeded")
    expect((await show(slow)).result).toEqual({ text: "hello, linus" })
    expect(events()).toEqual(["built", "handled ada", "handled grace", "handled linus", "closed"])
  }, 60_000)

  test("a services Layer that fails to build: one line naming the file, exit 1, nothing charged", async () => {
    const id = await enqueue("ada")
    const r = await roster(["worker", "--exit-when-idle"], { ROSTER_TEST_BREAK_SERVICES: "1" }).wait(30_000)
    expect(r.code).toBe(1)
    const lastLine = r.stderr.trim().split("\n").at(-1)
    expect(lastLine).toBe(`roster: cannot build the services of app "greeter" (${join(apps, "greeter/services.ts")}): GREETING_WORDS is not set`)
    expect(await show(id)).toMatchObject({ state: "queued", attempt: 0 })
  }, 60_000)
})
