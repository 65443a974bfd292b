/**
 * Pausing a queue from the CLI, seen by a worker that is already running (another
 * process): `roster queues pause Q` stops claims on Q while other queues still run,
 * enqueues into Q are still accepted, `queues list --json` shows the pause, and
 * `queues resume Q` lets the running worker claim Q again. `worker --exit-when-idle`
 * treats paused work as not due. Real processes in a project folder with two queues.
 *
 * The project lives under tests/.tmp so that its `import "effect"` resolves to this
 * checkout's node_modules, as in a project with Roster installed.
 */
import { Database } from "bun:sqlite"
import { afterEach, beforeEach, describe, expect, test } from "bun:test"
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { parseJsonOutput, repoRoot, spawnRoster, tail, waitFor, type RosterProcess } from "../support/processes.ts"

let project: string
let db: Database | undefined
const running: Array<RosterProcess> = []
const index = JSON.stringify(join(repoRoot, "src/index.ts"))

beforeEach(() => {
  mkdirSync(join(repoRoot, "tests/.tmp"), { recursive: true })
  project = mkdtempSync(join(repoRoot, "tests/.tmp/queues-"))
  mkdirSync(join(project, "apps/q"), { recursive: true })
  writeFileSync(join(project, "roster.config.ts"), `import { defineConfig } from ${index}
export default defineConfig({ db: "roster.db", appsDir: "apps", queues: { mail: { concurrency: 2 }, reports: { concurrency: 3 } } })
`)
  writeFileSync(join(project, "apps/q/jobs.ts"), `import { Effect, Schema } from "effect"
import { Job } from ${index}
export const mail = Job.make({ id: "q/mail", queue: "mail", payload: Schema.Struct({ n: Schema.Number }), handler: (p) => Effect.succeed(p.n) })
export const report = Job.make({ id: "q/report", queue: "reports", payload: Schema.Struct({ n: Schema.Number }), handler: (p) => Effect.succeed(p.n) })
`)
})

afterEach(async () => {
  for (const p of running.splice(0)) {
    p.kill("SIGKILL")
    await p.wait(10_000).catch(() => undefined)
  }
  db?.close(false)
  db = undefined
  rmSync(project, { recursive: true, force: true })
})

// A short poll, so "within a poll" is quick to observe; the change watcher wakes sooner still.
const env = { ROSTER_POLL_MS: "200", ROSTER_WATCH_MS: "50" }
const roster = (args: ReadonlyArray<string>) => spawnRoster(args, { cwd: project, env }).wait(60_000)
const ok = async (args: ReadonlyArray<string>) => {
  const r = await roster(args)
  expect(r.code, `roster ${args.join(" ")}: ${tail(r.stderr)}`).toBe(0)
  return r
}
const enqueue = async (job: string, n: number): Promise<string> =>
  parseJsonOutput<{ id: string }>(await ok(["enqueue", job, "--payload", JSON.stringify({ n }), "--json"])).id

const stateOf = (id: string): string => {
  db ??= new Database(join(project, "roster.db"))
  db.run("PRAGMA busy_timeout = 10000")
  return db.query<{ state: string }, [string]>("SELECT state FROM roster_executions WHERE id = ?").get(id)?.state ?? "missing"
}

interface ListedQueue {
  name: string
  paused: boolean
  pausedAt: string | null
  concurrency: number | null
  globalConcurrency: null
  rateLimit: null
  queued: number
  running: number
}

describe("roster queues pause and resume", () => {
  test("a running worker claims nothing on a paused queue but runs the others; a resume lets it claim again", async () => {
    const first = await enqueue("q/mail", 1)
    const paused = await ok(["queues", "pause", "mail"])
    expect(paused.stdout.trim()).toBe("paused mail")
    expect((await ok(["queues", "pause", "mail"])).stdout.trim()).toBe("mail was already paused")

    const worker = spawnRoster(["worker"], { cwd: project, env })
    running.push(worker)
    await waitFor("the worker to start", () => /serving/.test(worker.stderrSoFar()), { timeoutMs: 30_000 })

    // Enqueues into the paused queue are accepted; the other queue runs.
    const second = await enqueue("q/mail", 2)
    const other = await enqueue("q/report", 3)
    await waitFor("the report to run", () => stateOf(other) === "succeeded", { timeoutMs: 30_000 })
    // Several polls and wake-ups later, the paused queue's work is still queued.
    await Bun.sleep(1_000)
    expect([stateOf(first), stateOf(second)]).toEqual(["queued", "queued"])

    const listed = parseJsonOutput<Array<ListedQueue>>(await ok(["queues", "list", "--json"]))
    const mail = listed.find((q) => q.name === "mail")!
    expect(mail).toMatchObject({ name: "mail", paused: true, concurrency: 2, globalConcurrency: null, rateLimit: null, queued: 2, running: 0 })
    expect(Number.isNaN(Date.parse(mail.pausedAt ?? ""))).toBe(false)
    expect(listed.find((q) => q.name === "reports")).toMatchObject({ paused: false, pausedAt: null, concurrency: 3, queued: 0, running: 0 })
    expect(listed.map((q) => q.name)).toEqual(["default", "mail", "reports"])

    expect((await ok(["queues", "resume", "mail"])).stdout.trim()).toBe("resumed mail")
    await waitFor("the mail queue to run", () => stateOf(first) === "succeeded" && stateOf(second) === "succeeded", { timeoutMs: 30_000 })
    expect((await ok(["queues", "resume", "mail"])).stdout.trim()).toBe("mail was not paused")

    worker.kill("SIGTERM")
    expect((await worker.wait(30_000)).code).toBe(0)
  }, 120_000)

  test("worker --exit-when-idle treats paused work as not due and exits 0", async () => {
    const id = await enqueue("q/mail", 1)
    await ok(["queues", "pause", "mail"])
    const r = await roster(["worker", "--exit-when-idle"])
    expect(r.code, tail(r.stderr)).toBe(0)
    expect(stateOf(id)).toBe("queued")
  }, 90_000)

  test("pause refuses a queue the config does not declare, naming the declared ones", async () => {
    await enqueue("q/mail", 1)
    const r = await roster(["queues", "pause", "mial"])
    expect(r.code).toBe(2)
    expect(r.stderr.trim().split("\n")).toEqual([`roster: unknown queue "mial" (declared: default, mail, reports)`])
    expect(parseJsonOutput<Array<ListedQueue>>(await ok(["queues", "list", "--json"])).some((q) => q.paused)).toBe(false)
  }, 60_000)
})
