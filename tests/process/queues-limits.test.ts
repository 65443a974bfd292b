/**
 * Flow limits as the CLI shows them, through real processes on a real SQLite file: a
 * project declaring a queue with global concurrency, one capped at one running, one
 * with a rate limit, a Job with per-key concurrency and a queue one worker slot wide.
 * `queues list --json` reports each queue's limits and how many due executions each
 * cause holds back; `executions show` says why a due execution has not started
 * (`waitingFor`) and shows its concurrency key; `enqueue --concurrency-key` sets the key
 * and is refused for a Job without per-key concurrency.
 *
 * The project lives under tests/.tmp so that its `import "effect"` resolves to this
 * checkout's node_modules, as in a project with Roster installed.
 */
import { Database } from "bun:sqlite"
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { parseJsonOutput, repoRoot, spawnRoster, tail, waitFor, type RosterProcess } from "../support/processes.ts"

let project: string
let db: Database | undefined
let worker: RosterProcess | undefined
const index = JSON.stringify(join(repoRoot, "src/index.ts"))

beforeAll(() => {
  mkdirSync(join(repoRoot, "tests/.tmp"), { recursive: true })
  project = mkdtempSync(join(repoRoot, "tests/.tmp/queues-limits-"))
  mkdirSync(join(project, "apps/lim"), { recursive: true })
  writeFileSync(join(project, "roster.config.ts"), `import { defineConfig } from ${index}
export default defineConfig({ db: "roster.db", appsDir: "apps", queues: {
  keyed: { concurrency: 5, globalConcurrency: 3 },
  capped: { concurrency: 5, globalConcurrency: 1 },
  rated: { concurrency: 5, rateLimit: { limit: 2, period: "1 hour" } },
  single: { concurrency: 1 },
  idle: { concurrency: 1 }
} })
`)
  // The holding Jobs sleep long: the test looks while they run, then kills the worker.
  writeFileSync(join(project, "apps/lim/jobs.ts"), `import { Effect, Schema } from "effect"
import { Job } from ${index}
const hold = Effect.sleep("120 seconds")
export const keyed = Job.make({ id: "lim/keyed", queue: "keyed", payload: Schema.Struct({ customer: Schema.String }),
  concurrency: { key: (p) => p.customer, limit: 1 }, handler: () => hold })
export const capped = Job.make({ id: "lim/capped", queue: "capped", payload: Schema.Struct({ n: Schema.Number }), handler: () => hold })
export const rated = Job.make({ id: "lim/rated", queue: "rated", payload: Schema.Struct({ n: Schema.Number }), handler: (p) => Effect.succeed(p.n) })
export const single = Job.make({ id: "lim/single", queue: "single", payload: Schema.Struct({ n: Schema.Number }), handler: () => hold })
export const idle = Job.make({ id: "lim/idle", queue: "idle", payload: Schema.Struct({ n: Schema.Number }), handler: (p) => Effect.succeed(p.n) })
`)
})

afterAll(async () => {
  worker?.kill("SIGKILL")
  await worker?.wait(10_000).catch(() => undefined)
  db?.close(false)
  rmSync(project, { recursive: true, force: true })
})

const env = { ROSTER_POLL_MS: "200", ROSTER_WATCH_MS: "50" }
const roster = (args: ReadonlyArray<string>) => spawnRoster(args, { cwd: project, env }).wait(60_000)
const ok = async (args: ReadonlyArray<string>) => {
  const r = await roster(args)
  expect(r.code, `roster ${args.join(" ")}: ${tail(r.stderr)}`).toBe(0)
  return r
}
const enqueue = async (job: string, payload: unknown, extra: ReadonlyArray<string> = []): Promise<string> =>
  parseJsonOutput<{ id: string }>(await ok(["enqueue", job, "--payload", JSON.stringify(payload), ...extra, "--json"])).id

const stateOf = (id: string): string => {
  db ??= new Database(join(project, "roster.db"))
  db.run("PRAGMA busy_timeout = 10000")
  return db.query<{ state: string }, [string]>("SELECT state FROM roster_executions WHERE id = ?").get(id)?.state ?? "missing"
}

interface HeldBack { paused: number; globalConcurrency: number; keyConcurrency: number; rateLimit: number }
interface ListedQueue {
  name: string
  paused: boolean
  concurrency: number | null
  globalConcurrency: number | null
  rateLimit: { limit: number; periodMs: number; period: string } | null
  queued: number
  running: number
  due: number
  heldBack: HeldBack
}
const listed = async (): Promise<Record<string, ListedQueue>> =>
  Object.fromEntries(parseJsonOutput<Array<ListedQueue>>(await ok(["queues", "list", "--json"])).map((q) => [q.name, q]))
const shown = async (id: string) => parseJsonOutput<Record<string, any>>(await ok(["executions", "show", id, "--json"]))
const held = (over: Partial<HeldBack> = {}): HeldBack => ({ paused: 0, globalConcurrency: 0, keyConcurrency: 0, rateLimit: 0, ...over })

describe("flow limits in the CLI", () => {
  const ids: Record<string, string> = {}

  test("before any worker: limits listed, nothing held back, and no live worker serves the queue", async () => {
    ids.a = await enqueue("lim/keyed", { customer: "cust-1" })
    ids.b = await enqueue("lim/keyed", { customer: "cust-1" })
    ids.c = await enqueue("lim/keyed", { customer: "cust-2" })
    ids.x = await enqueue("lim/capped", { n: 1 })
    ids.y = await enqueue("lim/capped", { n: 2 })
    for (const n of [1, 2, 3, 4]) ids[`r${n}`] = await enqueue("lim/rated", { n })
    ids.s1 = await enqueue("lim/single", { n: 1 })
    ids.s2 = await enqueue("lim/single", { n: 2 })
    ids.i = await enqueue("lim/idle", { n: 1 })
    ids.later = await enqueue("lim/idle", { n: 2 }, ["--delay-ms", "3600000"])
    await ok(["queues", "pause", "idle"])

    const queues = await listed()
    expect(queues.keyed).toMatchObject({ concurrency: 5, globalConcurrency: 3, rateLimit: null, queued: 3, running: 0, due: 3, heldBack: held() })
    expect(queues.rated).toMatchObject({ globalConcurrency: null, rateLimit: { limit: 2, periodMs: 3_600_000, period: "1h" }, due: 4, heldBack: held() })
    expect(queues.idle).toMatchObject({ paused: true, queued: 2, due: 1, heldBack: held({ paused: 1 }) })
    expect(queues.default).toMatchObject({ globalConcurrency: null, rateLimit: null, due: 0, heldBack: held() })

    const a = await shown(ids.a!)
    expect(a).toMatchObject({ state: "queued", concurrencyKey: "cust-1", rateKey: null, waitingFor: "no live worker serves queue keyed (job lim/keyed)" })
    expect((await shown(ids.i!)).waitingFor).toBe("queue paused")
    // Not due yet: nothing to explain.
    expect((await shown(ids.later!)).waitingFor).toBeNull()
  }, 120_000)

  test("with a worker running: each cause counted and explained", async () => {
    worker = spawnRoster(["worker"], { cwd: project, env })
    await waitFor("the worker to claim", () =>
      ["a", "c", "x", "s1"].every((k) => stateOf(ids[k]!) === "running") && ["r1", "r2"].every((k) => stateOf(ids[k]!) === "succeeded"),
    { timeoutMs: 60_000 }).catch((e) => {
      throw new Error(`${e}\n${tail(worker!.stderrSoFar())}`)
    })
    // Several polls later nothing else has started.
    await Bun.sleep(800)
    expect(["b", "y", "r3", "r4", "s2", "i"].map((k) => stateOf(ids[k]!))).toEqual(Array(6).fill("queued"))

    const queues = await listed()
    expect(queues.keyed).toMatchObject({ running: 2, due: 1, heldBack: held({ keyConcurrency: 1 }) })
    expect(queues.capped).toMatchObject({ running: 1, due: 1, heldBack: held({ globalConcurrency: 1 }) })
    expect(queues.rated).toMatchObject({ running: 0, due: 2, heldBack: held({ rateLimit: 2 }) })
    // A worker slot is no limit: due, not held back.
    expect(queues.single).toMatchObject({ running: 1, due: 1, heldBack: held() })
    expect(queues.idle).toMatchObject({ due: 1, heldBack: held({ paused: 1 }) })

    expect((await shown(ids.b!)).waitingFor).toBe(`key "cust-1" at its limit 1 (1 running)`)
    expect((await shown(ids.y!)).waitingFor).toBe("global limit 1 reached (1 running)")
    const r3 = await shown(ids.r3!)
    expect(r3.waitingFor).toMatch(/^rate limit 2 per 1h reached; next start allowed at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
    const next = Date.parse(/at (\S+)$/.exec(r3.waitingFor)![1]!)
    expect(next).toBeGreaterThan(Date.now() + 3_500_000)
    expect((await shown(ids.s2!)).waitingFor).toBe("waiting for a free worker slot")
    // Started and finished ones have nothing to wait for.
    expect((await shown(ids.a!)).waitingFor).toBeNull()
    expect((await shown(ids.r1!)).waitingFor).toBeNull()

    const human = (await ok(["executions", "show", ids.b!])).stdout
    expect(human).toContain(`concurrency key: "cust-1"`)
    expect(human).toContain(`not started: key "cust-1" at its limit 1 (1 running)`)
    const table = (await ok(["queues", "list"])).stdout
    expect(table).toContain("HELD BACK")
    expect(table).toMatch(/rated\s+active\s+5\s+-\s+2\/1h\s+2\s+0\s+2\s+2 rate/)
  }, 120_000)

  test("enqueue --concurrency-key sets the key; a Job without per-key concurrency refuses it with one line", async () => {
    const keyedAs = await enqueue("lim/keyed", { customer: "cust-9" }, ["--concurrency-key", "cust-2"])
    expect(db!.query<{ k: string }, [string]>("SELECT concurrency_key AS k FROM roster_executions WHERE id = ?").get(keyedAs)?.k).toBe("cust-2")
    // cust-2 is running, so it waits for that key, whatever its payload says.
    await Bun.sleep(600)
    expect(stateOf(keyedAs)).toBe("queued")
    expect(await shown(keyedAs)).toMatchObject({ concurrencyKey: "cust-2", waitingFor: `key "cust-2" at its limit 1 (1 running)` })

    const refused = await roster(["enqueue", "lim/rated", "--payload", '{"n":9}', "--concurrency-key", "k"])
    expect(refused.code).not.toBe(0)
    const lines = refused.stderr.trim().split("\n")
    expect(lines).toHaveLength(1)
    expect(lines[0]).toContain("concurrencyKey for lim/rated: the Job declares no per-key concurrency")
  }, 120_000)
})
