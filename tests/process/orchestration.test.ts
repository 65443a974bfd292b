/**
 * Orchestration inside one execution (DESIGN §7) across real `roster worker` processes,
 * on a real SQLite file and on PostgreSQL (a fresh schema per test):
 *
 * - fan-out to 100 children and fan-in, while workers are killed with SIGKILL at random
 *   moments (seeded, printed) and restarted: every child runs to completion once —
 *   a second completion only for an attempt that then ended `lease_expired` (counted) —
 *   the parent succeeds once with all 100 outcomes, each child is enqueued exactly once,
 *   and no step body runs again after its record committed;
 * - a signal sent (`roster executions signal`) while the waiting execution's worker is down
 *   resumes it on another;
 * - a two-level tree (children that enqueue and await children of their own) completes.
 *
 * What ran is counted from a side-effect log the handlers append to (ORCH_LOG, see
 * tests/fixtures/orch-apps/apps/orch/jobs.ts), independent of Roster's records; what
 * Roster recorded (states, attempts and their outcomes, steps) is read from the store.
 * No timing is asserted; every wait is bounded generously.
 */
import { afterAll, afterEach, beforeEach, describe, expect, test } from "bun:test"
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Roster } from "../../src/index.ts"
import type { Mark } from "../fixtures/orch-apps/apps/orch/jobs.ts"
import { type Backend, postgresBackend, sqliteBackend } from "../support/backends.ts"
import { pgUrl, requireService } from "../support/env.ts"
import { attemptsCte, parseJsonOutput, repoRoot, type RosterProcess, spawnRoster, tail, waitFor, workerIdOf } from "../support/processes.ts"

/** Workers run here, so they read this folder's roster.config.ts (queues `parents` and `children`). */
const orchProject = join(repoRoot, "tests/fixtures/orch-apps")

/** Short leases so a kill is recovered within the test; heartbeats and sweeps well inside them. */
const leaseEnv = { ROSTER_LEASE_MS: "2000", ROSTER_HEARTBEAT_MS: "500", ROSTER_REAP_MS: "500", ROSTER_WATCH_MS: "50" }

/** A small seeded generator (mulberry32), so a run's kill schedule can be replayed with ORCH_SEED. */
const seeded = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

const jsonOf = <A>(v: unknown): A => (typeof v === "string" ? JSON.parse(v) : v) as A

/** What the tests measured, printed at the end for the record. */
const measured: Array<string> = []

interface AttemptRow {
  execution_id: string
  attempt: number | string
  worker: string | null
  outcome: string
}

const suite = (makeBackend: (dir: string) => Backend) => {
  let backend: Backend
  let dir: string
  let log: string
  let processes: Array<RosterProcess> = []

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), "roster-orch-"))
    log = join(dir, "marks.ndjson")
    backend = makeBackend(dir)
    processes = []
    await backend.setup()
  }, 30_000)

  afterEach(async () => {
    await Promise.all(processes.map(async (p) => {
      if (p.exited) return
      p.kill("SIGKILL")
      await p.wait(10_000).catch(() => undefined)
    }))
    await backend.cleanup()
    rmSync(dir, { recursive: true, force: true })
  }, 60_000)

  const spawn = (args: ReadonlyArray<string>, env: Record<string, string> = {}) => {
    const p = spawnRoster(args, { cwd: orchProject, env: { ROSTER_DB: backend.db, ORCH_LOG: log, ...env } })
    processes.push(p)
    return p
  }

  const enqueue = async (job: string, payload: unknown): Promise<string> => {
    const r = await spawn(["enqueue", job, "--payload", JSON.stringify(payload), "--json"]).wait(60_000)
    expect(r.code, tail(r.stderr)).toBe(0)
    return parseJsonOutput<{ id: string }>(r).id
  }

  const startWorker = (env: Record<string, string> = {}) => spawn(["worker"], { ...leaseEnv, ...env })

  const serving = (w: RosterProcess) =>
    waitFor(`a worker to start on ${backend.name}`, () => {
      if (w.exited) throw new Error(`worker exited early:\n${tail(w.stderrSoFar())}`)
      return workerIdOf(w.stderrSoFar())
    }, { timeoutMs: 45_000, intervalMs: 50 })

  const marks = (): Array<Mark> =>
    existsSync(log) ? readFileSync(log, "utf8").split("\n").filter((l) => l !== "").map((l) => JSON.parse(l) as Mark) : []

  const execution = async (id: string) => {
    const [row] = await backend.all<{ state: string; attempt: number | string; result: unknown; lease_owner: string | null; wait: string | null }>(
      `SELECT state, attempt, result, lease_owner, wait FROM roster_executions WHERE id = '${id}'`
    )
    return row === undefined ? undefined : { ...row, attempt: Number(row.attempt) }
  }

  const waitState = (id: string, states: ReadonlyArray<string>, timeoutMs: number) =>
    waitFor(`${id} to be ${states.join(" or ")} on ${backend.name}`, async () => {
      const e = await execution(id)
      return e !== undefined && states.includes(e.state) ? e : undefined
    }, { timeoutMs, intervalMs: 100 })

  /** Every attempt of the given executions (`executions show`'s view), keyed by execution. */
  const attemptsOf = async (where: string) => {
    const rows = await backend.all<AttemptRow>(`${attemptsCte} SELECT execution_id, attempt, worker, outcome FROM attempts WHERE ${where} ORDER BY execution_id, attempt`)
    const by = new Map<string, Array<{ attempt: number; worker: string | null; outcome: string }>>()
    for (const r of rows) by.set(r.execution_id, [...(by.get(r.execution_id) ?? []), { attempt: Number(r.attempt), worker: r.worker, outcome: r.outcome }])
    return by
  }

  /** Ends every process (kill -9: what they did is durable, and nothing is left to do). */
  const stopAll = async () => {
    const live = processes.filter((p) => !p.exited)
    for (const p of live) p.kill("SIGKILL")
    for (const p of live) await p.wait(10_000).catch(() => undefined)
  }

  test("fan-out to 100 children and fan-in under kill -9 of random workers: each child completes once (or again only after a lease expiry), the parent once with all 100 outcomes, no step re-run after its record", async () => {
    const n = 100
    const seed = Number(process.env.ORCH_SEED ?? (Date.now() % 2_147_483_647))
    const random = seeded(seed)
    const workers: Array<RosterProcess> = [startWorker(), startWorker(), startWorker()]
    const parentId = await enqueue("orch/parent", { n, stepMs: 300 })
    for (const w of workers) await serving(w)

    // Kill -9 a worker every 300–900 ms, up to 6 times: half of them the one running the
    // parent when it runs (so prepare, the enqueues and finish can be hit), else any.
    const kills: Array<string> = []
    const maxKills = 6
    const killsUntil = Date.now() + 60_000
    // Only a worker that is serving is killed, and only while another one serves (to recover
    // its leases): a kill of a worker still starting up would hit nothing.
    while (kills.length < maxKills && Date.now() < killsUntil) {
      await Bun.sleep(300 + Math.floor(random() * 600))
      const p = await execution(parentId)
      if (p?.state === "succeeded") break
      const live = workers.flatMap((w, i) => (workerIdOf(w.stderrSoFar()) === undefined ? [] : [i]))
      if (live.length < 2) continue
      let victim = live[Math.floor(random() * live.length)]!
      let why = "random"
      if (random() < 0.5 && p?.state === "running" && p.lease_owner !== null) {
        const owner = live.find((i) => workerIdOf(workers[i]!.stderrSoFar()) === p.lease_owner)
        if (owner !== undefined) {
          victim = owner
          why = "parent's"
        }
      }
      const w = workers[victim]!
      w.kill("SIGKILL")
      await w.wait(10_000)
      const [enqueued] = await backend.all<{ n: number | string }>(`SELECT COUNT(*) AS n FROM roster_executions WHERE parent_id = '${parentId}'`)
      kills.push(`${why} (parent ${p?.state ?? "?"}, ${Number(enqueued?.n ?? 0)} children)`)
      workers[victim] = startWorker()
    }

    const parent = await waitState(parentId, ["succeeded", "failed", "cancelled"], 150_000)
    await stopAll()
    const all = marks()

    // The parent: succeeded with all 100 outcomes, each child's own.
    expect(parent.state).toBe("succeeded")
    const result = jsonOf<{ count: number; succeeded: number; distinct: number; sum: number; indices: Array<number> }>(parent.result)
    expect(result.count).toBe(n)
    expect(result.succeeded).toBe(n)
    expect(result.distinct).toBe(n)
    expect([...result.indices].sort((a, b) => a - b)).toEqual(Array.from({ length: n }, (_, i) => i))
    expect(result.sum).toBe(Array.from({ length: n }, (_, i) => i * i).reduce((a, b) => a + b, 0))

    // Each child enqueued exactly once (one row per step name, no stray child), all succeeded.
    const children = await backend.all<{ id: string; state: string; attempt: number | string; parent_step: string }>(
      `SELECT id, state, attempt, parent_step FROM roster_executions WHERE parent_id = '${parentId}' ORDER BY parent_step`
    )
    expect(children.length).toBe(n)
    expect(new Set(children.map((c) => c.parent_step))).toEqual(new Set(Array.from({ length: n }, (_, i) => `child-${i}`)))
    expect(children.every((c) => c.state === "succeeded")).toBe(true)
    const [{ total }] = (await backend.all<{ total: number | string }>("SELECT COUNT(*) AS total FROM roster_executions")) as [{ total: number | string }]
    expect(Number(total)).toBe(n + 1)
    const steps = await backend.all<{ name: string; output: string; attempt: number | string; created_at: number | string }>(
      `SELECT name, output, attempt, created_at FROM roster_steps WHERE execution_id = '${parentId}'`
    )
    const stepOf = new Map(steps.map((s) => [s.name, { output: s.output, attempt: Number(s.attempt), createdAt: Number(s.created_at) }]))
    for (const c of children) expect(JSON.parse(stepOf.get(c.parent_step)!.output)).toBe(c.id)

    // Each child's handler completed once, or more only for attempts that ended lease_expired.
    const attempts = await attemptsOf(`execution_id IN (SELECT id FROM roster_executions WHERE parent_id = '${parentId}' OR id = '${parentId}')`)
    let duplicates = 0
    let childLeaseExpiries = 0
    for (const c of children) {
      const done = all.filter((m) => m.what === "child-done" && m.id === c.id)
      const history = attempts.get(c.id) ?? []
      const final = Number(c.attempt)
      childLeaseExpiries += history.filter((a) => a.outcome === "lease_expired").length
      expect(done.length, `child ${c.parent_step}`).toBeGreaterThanOrEqual(1)
      // One completion per attempt at most; the last attempt's is the one recorded.
      expect(new Set(done.map((m) => m.attempt)).size).toBe(done.length)
      expect(done.some((m) => m.attempt === final)).toBe(true)
      expect(history.find((a) => a.attempt === final)?.outcome).toBe("succeeded")
      for (const m of done.filter((m) => m.attempt !== final)) {
        expect(history.find((a) => a.attempt === m.attempt)?.outcome, `${c.parent_step} attempt ${m.attempt} completed but was not recorded`).toBe("lease_expired")
        duplicates++
      }
      // Every attempt before the last was lost to a kill, nothing else.
      expect(history.filter((a) => a.attempt !== final).every((a) => a.outcome === "lease_expired")).toBe(true)
    }

    // The parent's history: lost attempts only, then one success.
    const parentHistory = attempts.get(parentId) ?? []
    expect(parentHistory.at(-1)).toMatchObject({ attempt: parent.attempt, outcome: "succeeded" })
    expect(parentHistory.slice(0, -1).every((a) => a.outcome === "lease_expired")).toBe(true)
    const parentDone = all.filter((m) => m.what === "parent-done" && m.id === parentId)
    expect(parentDone.filter((m) => m.attempt === parent.attempt).length).toBe(1)
    for (const m of parentDone.filter((m) => m.attempt !== parent.attempt)) {
      expect(parentHistory.find((a) => a.attempt === m.attempt)?.outcome).toBe("lease_expired")
    }

    // prepare and finish: one body at the attempt that committed the step, earlier ones only
    // in attempts lost to a kill, and none started after the step's record was written.
    const reruns: Record<string, number> = {}
    for (const name of ["prepare", "finish"]) {
      const step = stepOf.get(name)
      expect(step, `step ${name} recorded`).toBeDefined()
      const bodies = all.filter((m) => m.what === name && m.id === parentId)
      expect(bodies.filter((m) => m.at > step!.createdAt), `${name} ran after its record committed`).toEqual([])
      expect(bodies.filter((m) => m.attempt === step!.attempt).length).toBe(1)
      for (const m of bodies.filter((m) => m.attempt !== step!.attempt)) {
        expect(m.attempt).toBeLessThan(step!.attempt)
        expect(parentHistory.find((a) => a.attempt === m.attempt)?.outcome).toBe("lease_expired")
      }
      reruns[name] = bodies.length - 1
    }

    measured.push(
      `${backend.name}: seed ${seed}; ${kills.length} kills (${kills.join(", ")}); parent attempts ${parent.attempt} ` +
        `(${parentHistory.filter((a) => a.outcome === "lease_expired").length} lease_expired), parent completions ${parentDone.length}; ` +
        `children: ${childLeaseExpiries} lease_expired attempts, ${duplicates} duplicate completions (each after a lease expiry); ` +
        `step bodies re-run before their record committed: prepare ${reruns.prepare}, finish ${reruns.finish}; after: 0`
    )
  }, 180_000)

  test("a signal delivered while the waiting execution's worker is down resumes it on another worker", async () => {
    const a = startWorker()
    const aId = await serving(a)
    const id = await enqueue("orch/wait-signal", {})
    const waiting = await waitState(id, ["waiting"], 60_000)
    expect(waiting.lease_owner).toBeNull()
    expect(jsonOf<{ kind: string; signal: string }>(waiting.wait)).toMatchObject({ kind: "signal", signal: "go" })
    expect(marks().filter((m) => m.what === "signal-wait").map((m) => m.pid)).toEqual([a.pid])

    a.kill("SIGKILL")
    expect((await a.wait(10_000)).signal).toBe("SIGKILL")

    // Sent while no worker runs: by the CLI, and (a second signal, kept) by the Promise API from this process.
    const sent = await spawn(["executions", "signal", id, "go", "--payload", JSON.stringify({ by: "test" }), "--json"]).wait(60_000)
    expect(sent.code, tail(sent.stderr)).toBe(0)
    expect(parseJsonOutput(sent)).toEqual({ id, name: "go", ok: true, result: "Woke" })
    const roster = await Roster.open({ db: backend.db, appsDir: join(orchProject, "apps") }, { configDir: orchProject, logger: { output: "off" } })
    try {
      expect(await roster.signal(id, "go", { by: "second" })).toBe("Woke")
    } finally {
      await roster.close()
    }
    expect((await execution(id))!.state).toBe("waiting")

    const b = startWorker()
    const bId = await serving(b)
    expect(bId).not.toBe(aId)
    const done = await waitState(id, ["succeeded", "failed", "cancelled"], 60_000)
    expect(done.state).toBe("succeeded")
    expect(jsonOf<string>(done.result)).toBe("go from test")
    // Parked and resumed: one attempt, run to its end on B.
    expect(done.attempt).toBe(1)
    const history = (await attemptsOf(`execution_id = '${id}'`)).get(id) ?? []
    expect(history.map((h) => [h.attempt, h.worker, h.outcome])).toEqual([[1, bId, "succeeded"]])
    const got = marks().filter((m) => m.what === "signal-got")
    expect(got.map((m) => [m.pid, m.detail])).toEqual([[b.pid, { by: "test" }]])
    // The first signal was taken; the second is kept (nothing waits for it any more).
    const signals = await backend.all<{ payload: string; consumed_at: number | string | null }>(`SELECT payload, consumed_at FROM roster_signals WHERE execution_id = '${id}' ORDER BY seq`)
    expect(signals.map((x) => [JSON.parse(x.payload), x.consumed_at !== null])).toEqual([[{ by: "test" }, true], [{ by: "second" }, false]])
    await stopAll()
  }, 120_000)

  test("a two-level tree — children that enqueue and await children of their own — completes", async () => {
    const workers = [startWorker(), startWorker()]
    const mids = 3
    const leaves = 4
    const id = await enqueue("orch/tree", { mids, leaves })
    for (const w of workers) await serving(w)
    // Should it not end, say which execution it waits on (states, leases) and what the workers last logged.
    const done = await waitState(id, ["succeeded", "failed", "cancelled"], 90_000).catch(async (error) => {
      const rows = await backend.all<Record<string, unknown>>(
        `SELECT id, job, state, attempt, lease_owner, lease_expires_at, run_at, parent_id, wait FROM roster_executions ORDER BY id`
      )
      const logs = workers.map((w, i) => `worker ${i + 1} (exited: ${w.exited}):\n${tail(w.stderrSoFar(), 40)}`).join("\n")
      throw new Error(`${(error as Error).message}\nexecutions:\n${rows.map((r) => JSON.stringify(r)).join("\n")}\n${logs}`)
    })
    await stopAll()
    expect(done.state).toBe("succeeded")
    const expected = Array.from({ length: mids }, (_, m) => ({
      m,
      sum: Array.from({ length: leaves }, (_, l) => (m * 100 + l) ** 2).reduce((x, y) => x + y, 0),
      ended: leaves
    }))
    expect(jsonOf(done.result)).toEqual(expected)
    const rows = await backend.all<{ job: string; state: string; depth: number | string }>(
      `SELECT e.job, e.state, CASE WHEN e.parent_id = '${id}' THEN 1 WHEN e.parent_id IS NULL THEN 0 ELSE 2 END AS depth FROM roster_executions e`
    )
    expect(rows.filter((r) => Number(r.depth) === 1).map((r) => r.job)).toEqual(Array(mids).fill("orch/mid"))
    expect(rows.filter((r) => Number(r.depth) === 2).length).toBe(mids * leaves)
    expect(rows.every((r) => r.state === "succeeded")).toBe(true)
    expect(marks().filter((m) => m.what === "child-done").length).toBe(mids * leaves)
  }, 120_000)
}

describe("orchestration across processes on SQLite", () => {
  suite(sqliteBackend)
})

const pg = requireService("postgres")
describe.skipIf(pg.skip)("orchestration across processes on PostgreSQL", () => {
  suite(() => postgresBackend(pgUrl()!, "roster_orch"))
})

afterAll(() => {
  if (measured.length > 0) console.log(measured.join("\n"))
})
