/**
 * The scheduler as real processes on one SQLite file (DESIGN §2 "Schedules",
 * "Processes"): every fire is recorded once under its (schedule, due) key and enqueues
 * exactly one execution keyed `schedule:<id>:<due ISO>`, whether two schedulers run at
 * once, leadership moves between them, or the leader dies with kill -9; misfires after
 * an outage follow each schedule's policy; and the file sync keeps its contract across
 * restarts with an edited schedules.ts.
 */
import { describe, expect, test } from "bun:test"
import { mkdirSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { parseJsonOutput, repoRoot, type RosterProcess, type Scratch, tail, useScratch, waitFor } from "../support/processes.ts"

const schedApps = join(repoRoot, "tests/fixtures/sched-apps")
const iso = (ms: number) => new Date(ms).toISOString()

interface FireRow {
  schedule_id: string
  due_at: number
  enqueued_at: number
  outcome: "enqueued" | "skipped" | "missed"
  execution_id: string | null
  error: string | null
}

const firesOf = (s: Scratch, id: string): Array<FireRow> =>
  s.all<FireRow>("SELECT * FROM roster_schedule_fires WHERE schedule_id = ? ORDER BY due_at", id)

/** The latest due time recorded for each schedule (0 when none yet). */
const lastDues = (s: Scratch, ids: ReadonlyArray<string>): Array<number> =>
  ids.map((id) => s.count("SELECT COALESCE(MAX(due_at), 0) FROM roster_schedule_fires WHERE schedule_id = ?", id))

/** The owner id a `roster scheduler` logs at start. */
const ownerOf = (stderr: string): string | undefined => /scheduler (\S+) started/.exec(stderr)?.[1]

/** How many times a process logged taking the leader lease. */
const leaderships = (p: RosterProcess): number => p.stderrSoFar().split("\n").filter((l) => l.includes(" is the leader")).length

/** Stops a process with SIGTERM and expects a clean exit. */
const stop = async (p: RosterProcess): Promise<string> => {
  p.kill("SIGTERM")
  const r = await p.wait(30_000)
  expect(r.code, tail(r.stderr)).toBe(0)
  return r.stderr
}

/**
 * The invariants of durable fires for one schedule: no due time twice; one fire every
 * second from the first to the last (none lost); every enqueued fire has exactly one
 * execution, carrying the fire's idempotency key and due time, and no other execution
 * of the schedule exists; fires of other outcomes have none.
 */
const expectEveryFireOnce = (s: Scratch, id: string): Array<FireRow> => {
  const fires = firesOf(s, id)
  expect(fires.length, id).toBeGreaterThan(0)
  expect(s.count("SELECT COUNT(*) - COUNT(DISTINCT due_at) FROM roster_schedule_fires WHERE schedule_id = ?", id)).toBe(0)
  for (const f of fires) expect(f.due_at % 1_000, `${id} due ${iso(f.due_at)}`).toBe(0)
  const gaps = fires.slice(1).map((f, i) => f.due_at - fires[i]!.due_at).filter((d) => d !== 1_000)
  expect(gaps, `${id}: due times from ${iso(fires[0]!.due_at)} to ${iso(fires.at(-1)!.due_at)} must be one second apart`).toEqual([])

  const executions = s.all<{ id: string; job: string; idempotency_key: string; fire_at: number }>(
    "SELECT id, job, idempotency_key, fire_at FROM roster_executions WHERE schedule_id = ? ORDER BY fire_at, id", id
  )
  const enqueued = fires.filter((f) => f.outcome === "enqueued")
  expect(executions.length, `${id}: executions vs enqueued fires`).toBe(enqueued.length)
  expect(new Set(executions.map((e) => e.idempotency_key)).size).toBe(executions.length)
  expect(executions.map((e): Array<string | number | null> => [e.id, e.idempotency_key, e.fire_at])).toEqual(
    enqueued.map((f) => [f.execution_id, `schedule:${id}:${iso(f.due_at)}`, f.due_at])
  )
  for (const f of fires.filter((f) => f.outcome !== "enqueued")) expect(f.execution_id).toBeNull()
  return fires
}

/** Applies the migrations first, so the test can read the tables while schedulers start. */
const migrate = async (s: Scratch) => {
  const r = await s.run(["migrate"])
  expect(r.code, r.stderr).toBe(0)
}

/** Runs a worker until nothing is due and expects every execution to have succeeded. */
const drain = async (s: Scratch, total: number) => {
  const w = await s.run(["worker", "--exit-when-idle"], { timeoutMs: 60_000 })
  expect(w.code, tail(w.stderr)).toBe(0)
  // The schedules' Job only: the scheduler's own hourly roster/prune (at minute 17) may fire during a run.
  const counts = parseJsonOutput(await s.run(["executions", "count", "--job", "tick/beat", "--json"]))
  expect(counts).toEqual({ queued: 0, running: 0, waiting: 0, succeeded: total, failed: 0, cancelled: 0 })
}

describe("two schedulers on one database", () => {
  const scratch = useScratch({ apps: join(schedApps, "pair") })
  const ids = [..."abcdefghijklmnopqrst"].map((c) => `tick/${c}`)

  test("two schedulers against one database over a run of per-second Schedules produce exactly one execution per fire", async () => {
    const s = scratch()
    await migrate(s)
    // A 6 s lease: the standby tries every 2 s; the leader renews every 2 s.
    const env = { ROSTER_SCHEDULER_LEASE_MS: "6000" }
    const a = s.spawn(["scheduler"], { env })
    const b = s.spawn(["scheduler"], { env })
    const owners = await waitFor("both schedulers to start", () => {
      const oa = ownerOf(a.stderrSoFar())
      const ob = ownerOf(b.stderrSoFar())
      return oa !== undefined && ob !== undefined && [oa, ob] as const
    })
    expect(owners[0]).not.toBe(owners[1])

    // Both run while one leads for a few seconds of fires.
    const start = await waitFor("a first fire of every schedule", () => {
      const dues = lastDues(s, ids)
      return dues.every((d) => d > 0) && Math.max(...dues)
    }, { timeoutMs: 60_000 })
    await waitFor("three more seconds of fires", () => lastDues(s, ids).every((d) => d >= start + 3_000), { timeoutMs: 60_000 })

    // The leader stops (releasing its lease); the standby takes over, and fires carry on.
    const leaderOwner = s.all<{ owner: string }>("SELECT owner FROM roster_leases WHERE name = 'scheduler'")[0]?.owner
    expect(owners).toContain(leaderOwner!)
    const [leader, standby] = leaderOwner === owners[0] ? [a, b] : [b, a]
    const handover = Math.max(...lastDues(s, ids))
    await stop(leader)
    await waitFor("the standby to lead", () => leaderships(standby) > 0, { timeoutMs: 60_000 })
    await waitFor("three seconds of fires after the handover", () => lastDues(s, ids).every((d) => d >= handover + 3_000), { timeoutMs: 60_000 })
    const standbyLog = await stop(standby)
    expect(standbyLog).toContain("is the leader")

    let total = 0
    for (const id of ids) {
      const fires = expectEveryFireOnce(s, id)
      // Within the misfire tolerance, every second is enqueued, none missed or skipped,
      // including those that fell due while no one held the lease.
      expect(fires.filter((f) => f.outcome !== "enqueued")).toEqual([])
      expect(fires[0]!.due_at).toBeLessThanOrEqual(start)
      expect(fires.at(-1)!.due_at).toBeGreaterThanOrEqual(handover + 3_000)
      total += fires.length
    }
    // No lease is left behind: both stopped cleanly.
    expect(s.count("SELECT COUNT(*) FROM roster_leases")).toBe(0)
    await drain(s, total)
  }, 180_000)

  test("when the lease is taken from under a leader that still believes it leads, each fire is still enqueued once", async () => {
    const s = scratch()
    await migrate(s)
    // A checks its lease every 4 s (12 s lease), B every second (3 s lease). The test hands
    // the lease from A to B behind A's back, as if A had stalled past its lease: B takes
    // over within a second while A keeps firing until its next check, so for up to a few
    // seconds both lead and fire the same due times; only the unique (schedule, due)
    // guard keeps them apart. Then the lease goes back to A, and again.
    const a = s.spawn(["scheduler"], { env: { ROSTER_SCHEDULER_LEASE_MS: "12000" } })
    await waitFor("A to lead", () => leaderships(a) === 1, { timeoutMs: 60_000 })
    const b = s.spawn(["scheduler"], { env: { ROSTER_SCHEDULER_LEASE_MS: "3000" } })
    const owners = await waitFor("both schedulers to start", () => {
      const oa = ownerOf(a.stderrSoFar())
      const ob = ownerOf(b.stderrSoFar())
      return oa !== undefined && ob !== undefined && [oa, ob] as const
    })
    await waitFor("a first fire of every schedule", () => lastDues(s, ids).every((d) => d > 0), { timeoutMs: 60_000 })
    const handTo = (owner: string, ttlMs: number) =>
      s.sqlite().query("UPDATE roster_leases SET owner = ?, expires_at = ? WHERE name = 'scheduler'").run(owner, Date.now() + ttlMs)
    for (let round = 1; round <= 3; round++) {
      handTo(owners[1], 3_000)
      await waitFor("B to take over", () => leaderships(b) === round, { timeoutMs: 60_000 })
      await waitFor("A to notice", () => a.stderrSoFar().split("\n").filter((l) => l.includes("lost the leader lease")).length === round, { timeoutMs: 60_000 })
      handTo(owners[0], 12_000)
      await waitFor("A to lead again", () => leaderships(a) === round + 1, { timeoutMs: 60_000 })
    }
    await Bun.sleep(2_000)
    const logA = await stop(a)
    const logB = await stop(b)
    expect(logA).toContain("is the leader")
    expect(logB).toContain("is the leader")

    let total = 0
    for (const id of ids) {
      const fires = expectEveryFireOnce(s, id)
      expect(fires.filter((f) => f.outcome !== "enqueued")).toEqual([])
      total += fires.length
    }
    await drain(s, total)
  }, 180_000)
})

describe("a scheduler killed with kill -9", () => {
  const scratch = useScratch({ apps: join(schedApps, "outage") })
  const ids = ["tick/all", "tick/once", "tick/skip"]
  // A short leader lease so the restarted scheduler can take over soon after the kill.
  const env = { ROSTER_SCHEDULER_LEASE_MS: "2000" }

  /** Starts scheduler A, lets it fire a few seconds, kills it with SIGKILL; returns what each schedule had recorded. */
  const startAndKill = async (s: Scratch, extraEnv: Record<string, string> = {}) => {
    await migrate(s)
    const a = s.spawn(["scheduler"], { env: { ...env, ...extraEnv } })
    const first = await waitFor("a first fire of every schedule", () => {
      const dues = lastDues(s, ids)
      return dues.every((d) => d > 0) && Math.max(...dues)
    }, { timeoutMs: 60_000 })
    await waitFor("a few seconds of fires", () => lastDues(s, ids).every((d) => d >= first + 2_000), { timeoutMs: 60_000 })
    a.kill("SIGKILL")
    const result = await a.wait(10_000)
    expect(result.signal).toBe("SIGKILL")
    const owner = ownerOf(result.stderr)
    // It died holding the lease: nothing released it.
    expect(s.all<{ owner: string }>("SELECT owner FROM roster_leases WHERE name = 'scheduler'")).toEqual([{ owner: owner! }])
    return { owner: owner!, killedAt: Date.now(), before: new Map(ids.map((id, i) => [id, lastDues(s, ids)[i]!])) }
  }

  /** Starts scheduler B and stops it once every schedule has fired on time past `until`. */
  const restartUntil = async (s: Scratch, until: number, extraEnv: Record<string, string> = {}) => {
    const b = s.spawn(["scheduler"], { env: { ...env, ...extraEnv } })
    await waitFor("the restarted scheduler to fire on time", () => lastDues(s, ids).every((d) => d >= until), { timeoutMs: 90_000 })
    return stop(b)
  }

  /** The fires B recorded in its first pass (the catch-up), which all carry that pass's time. */
  const catchUpOf = (fires: Array<FireRow>, lastBefore: number) => {
    const firstAfter = fires.find((f) => f.due_at > lastBefore)!
    expect(firstAfter.due_at).toBe(lastBefore + 1_000)
    const now = firstAfter.enqueued_at
    return { now, fires: fires.filter((f) => f.due_at > lastBefore && f.enqueued_at === now) }
  }

  test("a scheduler killed with kill -9 and restarted neither loses (per policy) nor duplicates a fire", async () => {
    const s = scratch()
    const { killedAt, before } = await startAndKill(s)
    await Bun.sleep(3_000)
    // Nothing fired while no scheduler ran.
    expect(lastDues(s, ids)).toEqual(ids.map((id) => before.get(id)!))
    const logB = await restartUntil(s, killedAt + 3_000 + 3_000)

    let total = 0
    for (const id of ids) {
      const fires = expectEveryFireOnce(s, id)
      // An outage shorter than the misfire tolerance (60 s) makes no misfire: whatever the
      // policy, every second that fell due while A was dead is enqueued late, in B's first pass.
      expect(fires.filter((f) => f.outcome !== "enqueued"), id).toEqual([])
      const catchUp = catchUpOf(fires, before.get(id)!)
      // B's first pass came after the 3 s outage and covered every second since A's last fire.
      expect(catchUp.now, id).toBeGreaterThanOrEqual(killedAt + 3_000)
      expect(catchUp.fires.length, id).toBeGreaterThanOrEqual(3)
      expect(catchUp.fires.at(-1)!.due_at, id).toBeGreaterThanOrEqual(killedAt + 2_000)
      total += fires.length
    }
    expect(logB.includes("missed fires"), "no missed fires logged").toBe(false)
    await drain(s, total)
  }, 180_000)

  test("after a kill -9 outage longer than the misfire tolerance, each policy enqueues or records missed every second exactly once", async () => {
    const s = scratch()
    // A tolerance of 8 s (the default is 60 s) keeps the outage, and the test, short.
    const toleranceMs = 8_000
    const tolerance = { ROSTER_SCHEDULER_TOLERANCE_MS: String(toleranceMs) }
    const { killedAt, before } = await startAndKill(s, tolerance)
    // Longer than the tolerance, so the oldest missed seconds are misfires.
    const outageMs = toleranceMs + 4_000
    await Bun.sleep(outageMs)
    const logB = await restartUntil(s, killedAt + outageMs + 3_000, tolerance)

    let total = 0
    for (const id of ids) {
      const fires = expectEveryFireOnce(s, id)
      const { now, fires: catchUp } = catchUpOf(fires, before.get(id)!)
      // FirePlan: a fire due before now - tolerance is late; the rest of the catch-up is on time.
      const late = catchUp.filter((f) => f.due_at < now - toleranceMs)
      const onTime = catchUp.filter((f) => f.due_at >= now - toleranceMs)
      expect(late.length, id).toBeGreaterThanOrEqual(2)
      expect(onTime.length, id).toBeGreaterThanOrEqual(toleranceMs / 1_000 - 1)
      expect(onTime.map((f) => f.outcome), id).toEqual(onTime.map(() => "enqueued"))
      if (id === "tick/all") {
        // `all` runs every misfire late (cap 1000).
        expect(late.map((f) => f.outcome)).toEqual(late.map(() => "enqueued"))
      } else {
        // `once` makes no extra late run when a fire is on time anyway (that run is the
        // catch-up); `skip` never does. Either way every misfire is recorded `missed`.
        expect(late.map((f) => [f.outcome, f.execution_id, f.error])).toEqual(late.map(() => ["missed", null, null]))
        const warning = `schedule ${id}: ${late.length} missed fires (misfire ${id.slice("tick/".length)})`
        expect(logB.includes(warning), warning).toBe(true)
      }
      // Nothing before the kill or after the catch-up is anything but enqueued.
      expect(fires.filter((f) => !catchUp.includes(f) && f.outcome !== "enqueued"), id).toEqual([])
      total += fires.filter((f) => f.outcome === "enqueued").length
    }
    expect(/schedule tick\/all: \d+\+? missed fires/.test(logB), "tick/all records no missed fire").toBe(false)
    await drain(s, total)
  }, 240_000)
})

describe("the file sync across restarts", () => {
  const scratch = useScratch()

  /** An app folder under the repo (so `effect` resolves), removed when the test ends. */
  const tmpRoot = join(repoRoot, "tests/.tmp")

  const jobsTs = `import { Effect, Schema } from "effect"
import { Job } from ${JSON.stringify(join(repoRoot, "src/index.ts"))}
export const beat = Job.make({ id: "tick/beat", payload: Schema.Struct({ n: Schema.Number }), handler: () => Effect.void })
`

  /** A schedules.ts declaring `specs` as [name, cron, n]. */
  const schedulesTs = (specs: ReadonlyArray<readonly [string, string, number]>) =>
    [
      `import { JobSchedule } from ${JSON.stringify(join(repoRoot, "src/index.ts"))}`,
      `import { beat } from "./jobs.ts"`,
      ...specs.map(([name, cron, n]) =>
        `export const s_${name} = JobSchedule.make({ id: "tick/${name}", job: beat, payload: { n: ${n} }, cron: ${JSON.stringify(cron)} })`)
    ].join("\n") + "\n"

  interface Summary {
    id: string
    source: string
    job: string
    cron: string | null
    paused: boolean
    nextDueAt: string | null
    retiredAt: string | null
    nextFires: Array<string>
  }

  /** Definition columns of a schedule row (not its next/last due, which fires move). */
  const definitionOf = (s: Scratch, id: string) =>
    s.all("SELECT id, source, job, payload, cron, timezone, enabled, paused, misfire, misfire_cap, overlap, label, retired_at, created_at, updated_at FROM roster_schedules WHERE id = ?", id)[0]

  test("the file sync behaves per the contract across restarts with an edited schedules.ts", async () => {
    const s = scratch()
    mkdirSync(tmpRoot, { recursive: true })
    const apps = join(tmpRoot, `sync-${process.pid}-${Math.random().toString(36).slice(2, 8)}`)
    const app = join(apps, "tick")
    mkdirSync(app, { recursive: true })
    try {
      const env = { ROSTER_APPS_DIR: apps }
      const runScheduler = async (expectSync: string) => {
        const p = s.spawn(["scheduler"], { env })
        await waitFor(`the sync (${expectSync})`, () => p.stderrSoFar().includes("synced file schedules"), { timeoutMs: 60_000 })
        const log = await stop(p)
        expect(log).toContain(`synced file schedules: ${expectSync}`)
      }
      const run = (args: Array<string>) => s.run(args, { env })
      const list = async (all = false) => {
        const r = await run(["schedules", "list", "--json", ...(all ? ["--all"] : [])])
        expect(r.code, r.stderr).toBe(0)
        return new Map(parseJsonOutput<Array<Summary>>(r).map((x) => [x.id, x]))
      }

      // v1: four file schedules (daily, so none fires during the test).
      writeFileSync(join(app, "jobs.ts"), jobsTs)
      writeFileSync(join(app, "schedules.ts"), schedulesTs([["keep", "0 0 * * *", 1], ["change", "0 1 * * *", 2], ["remove", "0 2 * * *", 3], ["held", "0 3 * * *", 4]]))
      await runScheduler("4 new, 0 updated, 0 retired")
      const v1 = await list()
      expect([...v1.keys()]).toEqual(["roster/prune", "tick/change", "tick/held", "tick/keep", "tick/remove"])
      expect([...v1.values()].map((x) => x.source)).toEqual(["system", "file", "file", "file", "file"])

      // An operator pauses a file schedule and creates a studio one.
      const paused = await run(["schedules", "pause", "tick/held"])
      expect(paused.code, paused.stderr).toBe(0)
      const created = await run(["schedules", "create", "--id", "tick/studio", "--job", "tick/beat", "--cron", "0 5 * * *", "--payload", '{"n":5}'])
      expect(created.code, created.stderr).toBe(0)
      const studioBefore = definitionOf(s, "tick/studio")
      const pruneBefore = definitionOf(s, "roster/prune")
      const keepBefore = definitionOf(s, "tick/keep")
      const heldBefore = definitionOf(s, "tick/held") as { updated_at: number }

      // v2: change one cron, remove one, add one, and edit the paused one's payload.
      writeFileSync(join(app, "schedules.ts"), schedulesTs([["keep", "0 0 * * *", 1], ["change", "30 1 * * *", 2], ["held", "0 3 * * *", 40], ["added", "0 6 * * *", 6]]))
      await runScheduler("1 new, 2 updated, 1 retired")

      const live = await list()
      expect([...live.keys()]).toEqual(["roster/prune", "tick/added", "tick/change", "tick/held", "tick/keep", "tick/studio"])
      const all = await list(true)
      expect([...all.keys()]).toEqual(["roster/prune", "tick/added", "tick/change", "tick/held", "tick/keep", "tick/remove", "tick/studio"])

      // The changed one has its new cron, and its next fires follow it.
      const change = live.get("tick/change")!
      expect(change).toMatchObject({ source: "file", cron: "30 1 * * *", paused: false, retiredAt: null })
      expect(change.nextFires).toHaveLength(5)
      for (const t of change.nextFires) expect(t).toMatch(/T01:30:00\.000Z$/)
      expect(change.nextDueAt).toBe(change.nextFires[0]!)
      // The removed one is retired, not deleted: hidden from list, shown with --all.
      const removed = all.get("tick/remove")!
      expect(removed.source).toBe("file")
      expect(removed.retiredAt).toMatch(/^\d{4}-\d{2}-\d{2}T/)
      expect(removed.nextFires).toEqual([])
      // The added one is a file schedule.
      expect(live.get("tick/added")).toMatchObject({ source: "file", cron: "0 6 * * *", paused: false, retiredAt: null })
      // The paused one is still paused, though its definition changed.
      expect(live.get("tick/held")).toMatchObject({ paused: true, nextFires: [] })
      const held = parseJsonOutput<{ payload: unknown; paused: boolean }>(await run(["schedules", "show", "tick/held", "--json"]))
      expect(held).toMatchObject({ payload: { n: 40 }, paused: true })
      expect((definitionOf(s, "tick/held") as { updated_at: number }).updated_at).toBeGreaterThan(heldBefore.updated_at)
      // The unchanged file one, the studio one and the system one were not touched.
      expect(definitionOf(s, "tick/keep")).toEqual(keepBefore)
      expect(definitionOf(s, "tick/studio")).toEqual(studioBefore)
      expect(definitionOf(s, "roster/prune")).toEqual(pruneBefore)
      expect(live.get("tick/studio")).toMatchObject({ source: "studio", cron: "0 5 * * *", paused: false })
      expect(live.get("roster/prune")).toMatchObject({ source: "system", job: "roster/prune", cron: "17 * * * *" })

      // The system schedule refuses delete, pause and edit; a live file one refuses delete.
      for (const [args, pattern] of [
        [["schedules", "delete", "roster/prune"], /^roster: .*"roster\/prune".*system.*cannot be deleted/],
        [["schedules", "pause", "roster/prune"], /^roster: .*"roster\/prune".*system.*cannot be paused/],
        [["schedules", "update", "roster/prune", "--cron", "* * * * *"], /^roster: .*"roster\/prune".*system.*cannot be edited/],
        [["schedules", "delete", "tick/keep"], /^roster: .*"tick\/keep".*declared in code/]
      ] as const) {
        const r = await run([...args])
        expect(r.code, `${args.join(" ")}: ${r.stderr}`).toBe(1)
        expect(r.stderr.trimEnd().split("\n"), args.join(" ")).toEqual([expect.stringMatching(pattern)])
      }
      expect(definitionOf(s, "roster/prune")).toEqual(pruneBefore)

      // v3: the removed one comes back (revived, same row), the pause still holds.
      writeFileSync(join(app, "schedules.ts"), schedulesTs([["keep", "0 0 * * *", 1], ["change", "30 1 * * *", 2], ["held", "0 3 * * *", 40], ["added", "0 6 * * *", 6], ["remove", "0 2 * * *", 3]]))
      await runScheduler("0 new, 1 updated, 0 retired")
      const v3 = await list()
      expect(v3.get("tick/remove")).toMatchObject({ source: "file", retiredAt: null })
      expect(v3.get("tick/remove")!.nextFires).toHaveLength(5)
      expect(v3.get("tick/held")).toMatchObject({ paused: true })
      expect(definitionOf(s, "tick/studio")).toEqual(studioBefore)
    } finally {
      rmSync(apps, { recursive: true, force: true })
    }
  }, 180_000)
})
