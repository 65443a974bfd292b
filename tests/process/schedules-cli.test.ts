/**
 * `roster schedules` and `roster check` as scripts and operators use them (DESIGN §2
 * "Schedules", "Discovery and validation", §5 CLI): the JSON documents of list, show
 * and history; trigger as an ordinary execution linked to its schedule; studio create,
 * pause and resume with one-line refusals; and `check` naming the file and the id of
 * every kind of broken schedules.ts. Real processes on a real SQLite file.
 */
import { describe, expect, test } from "bun:test"
import { mkdirSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { demoApps, parseJsonOutput, type ProcessResult, repoRoot, type Scratch, tail, useScratch, waitFor } from "../support/processes.ts"
import { expectOneLineFailure } from "../support/badInput.ts"

const isoTime = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

/** The fields of every item of `schedules list --json`. */
const summaryFields = [
  "id", "source", "job", "cron", "everyMs", "timezone", "enabled", "paused", "misfire", "overlap",
  "nextDueAt", "lastDueAt", "retiredAt", "nextFires"
] as const

interface Summary {
  id: string
  source: string
  job: string
  cron: string | null
  timezone: string
  paused: boolean
  overlap: string
  misfire: string
  nextDueAt: string | null
  lastDueAt: string | null
  nextFires: Array<string>
}

interface Fire {
  dueAt: string
  enqueuedAt: string
  outcome: string
  executionId: string | null
  error: string | null
}


const listJson = async (s: Scratch): Promise<Array<Summary>> => {
  const r = await s.run(["schedules", "list", "--json"])
  expect(r.code, r.stderr).toBe(0)
  return parseJsonOutput(r)
}

/** Runs a scheduler until `ready` holds, then stops it with SIGTERM (migrating first, so `ready` can read the tables). */
const runScheduler = async (s: Scratch, ready: () => boolean) => {
  expect((await s.run(["migrate"])).code).toBe(0)
  const p = s.spawn(["scheduler"])
  await waitFor("the scheduler", ready, { timeoutMs: 60_000 })
  p.kill("SIGTERM")
  const r = await p.wait(30_000)
  expect(r.code, tail(r.stderr)).toBe(0)
}

describe("reading schedules", () => {
  const scratch = useScratch({ apps: demoApps })

  test("list, show and history --json describe schedules, their next fires and their fires", async () => {
    const s = scratch()
    // Nothing is stored before a scheduler has synced: on a database that exists (a missing
    // file is refused, tests/process/missing-database.test.ts), an empty list, not an error.
    expect((await s.run(["migrate"])).code).toBe(0)
    expect(await listJson(s)).toEqual([])
    const created = await s.run(["schedules", "create", "--id", "demo/per-second", "--job", "demo/noop", "--cron", "* * * * * *", "--payload", '{"n":5}'])
    expect(created.code, created.stderr).toBe(0)
    expect(created.stdout).toMatch(/^created demo\/per-second; next fire \d{4}-.*Z\n$/)
    await runScheduler(s, () => s.count("SELECT COUNT(*) FROM roster_schedule_fires WHERE schedule_id = 'demo/per-second'") >= 3)

    const list = await listJson(s)
    expect(list.map((x) => [x.id, x.source, x.job])).toEqual([
      ["demo/every-minute", "file", "demo/noop"],
      ["demo/every-two-seconds", "file", "demo/noop"],
      ["demo/morning", "file", "demo/noop"],
      ["demo/per-second", "studio", "demo/noop"],
      ["roster/prune", "system", "roster/prune"]
    ])
    for (const item of list) {
      expect(Object.keys(item).sort()).toEqual([...summaryFields].sort())
      expect(item.nextFires).toHaveLength(5)
      for (const t of item.nextFires) expect(t).toMatch(isoTime)
      expect(item.nextDueAt).toBe(item.nextFires[0]!)
    }

    // show: a DST-observing zone's weekday mornings, at 09:00 local time.
    const now = Date.now()
    const morning = parseJsonOutput<Summary & { payload: unknown; label: string; history: Array<Fire> }>(
      await s.run(["schedules", "show", "demo/morning", "--json"])
    )
    expect(morning).toMatchObject({ id: "demo/morning", cron: "0 9 * * 1-5", timezone: "Europe/Berlin", overlap: "skip", misfire: "once", paused: false, payload: { n: 9 }, label: "Weekday mornings" })
    expect(Array.isArray(morning.history)).toBe(true)
    const berlin = new Intl.DateTimeFormat("en-GB", { timeZone: "Europe/Berlin", weekday: "short", hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false })
    const fires = morning.nextFires.map((t) => Date.parse(t))
    expect(fires[0]!).toBeGreaterThan(now - 60_000)
    for (let i = 1; i < fires.length; i++) expect(fires[i]!).toBeGreaterThan(fires[i - 1]!)
    for (const t of fires) {
      const parts = Object.fromEntries(berlin.formatToParts(t).map((p) => [p.type, p.value]))
      expect(`${parts.hour}:${parts.minute}:${parts.second}`).toBe("09:00:00")
      expect(["Sat", "Sun"]).not.toContain(parts.weekday)
    }
    // show: every minute on the minute.
    const minute = parseJsonOutput<Summary>(await s.run(["schedules", "show", "demo/every-minute", "--json"]))
    const minuteFires = minute.nextFires.map((t) => Date.parse(t))
    for (const t of minuteFires) expect(t % 60_000).toBe(0)
    for (let i = 1; i < minuteFires.length; i++) expect(minuteFires[i]! - minuteFires[i - 1]!).toBe(60_000)
    // show: the system prune schedule with its default retention.
    const prune = parseJsonOutput<Summary & { payload: unknown }>(await s.run(["schedules", "show", "roster/prune", "--json"]))
    expect(prune).toMatchObject({ source: "system", cron: "17 * * * *", overlap: "skip", payload: { succeededMs: 7 * 86_400_000, failedMs: 30 * 86_400_000 } })

    // history: newest first, each fire enqueued with its execution, one second apart.
    const historyRun = await s.run(["schedules", "history", "demo/per-second", "--json"])
    expect(historyRun.code, historyRun.stderr).toBe(0)
    const history = parseJsonOutput<Array<Fire>>(historyRun)
    expect(history.length).toBeGreaterThanOrEqual(3)
    const stored = s.all<{ due_at: number; execution_id: string }>(
      "SELECT due_at, execution_id FROM roster_schedule_fires WHERE schedule_id = 'demo/per-second' ORDER BY due_at DESC"
    )
    // No worker runs here: each fire is still enqueued, and says no live worker serves its queue.
    expect(history.map((f) => [f.dueAt, f.outcome, f.executionId, f.error])).toEqual(
      stored.map((r) => [new Date(r.due_at).toISOString(), "enqueued", r.execution_id, expect.stringMatching(/^no live worker serves queue default \(job demo\/\S+\)$/)])
    )
    for (const f of history) expect(f.enqueuedAt).toMatch(isoTime)
    for (let i = 1; i < history.length; i++) expect(Date.parse(history[i - 1]!.dueAt) - Date.parse(history[i]!.dueAt)).toBe(1_000)
    const limited = parseJsonOutput<Array<Fire>>(await s.run(["schedules", "history", "demo/per-second", "--json", "--limit", "2"]))
    expect(limited).toEqual(history.slice(0, 2))
    // show carries the latest fires too.
    const perSecond = parseJsonOutput<{ history: Array<Fire>; lastDueAt: string; payload: unknown }>(await s.run(["schedules", "show", "demo/per-second", "--json"]))
    expect(perSecond.history).toEqual(history.slice(0, 10))
    expect(perSecond.lastDueAt).toBe(history[0]!.dueAt)
    expect(perSecond.payload).toEqual({ n: 5 })

    // A fire's execution: linked by schedule id, keyed by the fire.
    const newest = history[0]!
    const execution = parseJsonOutput<Record<string, unknown>>(await s.run(["executions", "show", newest.executionId!, "--json"]))
    expect(execution).toMatchObject({ job: "demo/noop", scheduleId: "demo/per-second", idempotencyKey: `schedule:demo/per-second:${newest.dueAt}`, payload: { n: 5 } })

    // Unknown ids: one line, exit 1.
    expectOneLineFailure(await s.run(["schedules", "show", "demo/nope", "--json"]), 1, "demo/nope")
    expectOneLineFailure(await s.run(["schedules", "history", "demo/nope", "--json"]), 1, "demo/nope")
  }, 120_000)

  test("trigger enqueues an ordinary execution of the schedule's Job, linked to it, without recording a fire", async () => {
    const s = scratch()
    await runScheduler(s, () => s.count("SELECT COUNT(*) FROM roster_schedules") >= 3)
    const firesBefore = s.count("SELECT COUNT(*) FROM roster_schedule_fires")

    const r = await s.run(["schedules", "trigger", "demo/morning", "--json"])
    expect(r.code, r.stderr).toBe(0)
    const out = parseJsonOutput<{ id: string; inserted: boolean }>(r)
    expect(out).toEqual({ id: expect.any(String), inserted: true })
    const again = parseJsonOutput<{ id: string; inserted: boolean }>(await s.run(["schedules", "trigger", "demo/morning", "--json"]))
    expect(again.inserted).toBe(true)
    expect(again.id).not.toBe(out.id)
    const plain = await s.run(["schedules", "trigger", "demo/morning"])
    expect(plain.stdout).toMatch(/^enqueued \S+ for demo\/morning\n$/)

    const shown = parseJsonOutput<Record<string, unknown>>(await s.run(["executions", "show", out.id, "--json"]))
    expect(shown).toMatchObject({ id: out.id, job: "demo/noop", state: "queued", scheduleId: "demo/morning", idempotencyKey: null, payload: { n: 9 } })
    const linked = s.all<{ id: string; fire_at: number | null }>("SELECT id, fire_at FROM roster_executions WHERE schedule_id = 'demo/morning' ORDER BY id")
    expect(linked.map((e) => e.fire_at)).toEqual([null, null, null])
    expect(linked[0]!.id).toBe(out.id)
    // Run now is not a fire: no fire row is written or points at these executions.
    expect(s.count("SELECT COUNT(*) FROM roster_schedule_fires")).toBe(firesBefore)
    const history = parseJsonOutput<Array<Fire>>(await s.run(["schedules", "history", "demo/morning", "--json"]))
    for (const f of history) expect(linked.map((e) => e.id)).not.toContain(f.executionId)

    const worker = await s.run(["worker", "--exit-when-idle"])
    expect(worker.code, tail(worker.stderr)).toBe(0)
    expect(parseJsonOutput<{ state: string; result: unknown }>(await s.run(["executions", "show", out.id, "--json"]))).toMatchObject({ state: "succeeded", result: { n: 9 } })

    expectOneLineFailure(await s.run(["schedules", "trigger", "demo/nope", "--json"]), 1, "demo/nope")
  }, 120_000)
})

describe("studio schedules from the CLI", () => {
  const scratch = useScratch({ apps: demoApps })

  test("create refuses a bad cron, zone, id, payload or an unknown job with one line, and writes nothing", async () => {
    const s = scratch()
    const create = (...args: Array<string>) => s.run(["schedules", "create", "--id", "demo/bad", ...args])
    expectOneLineFailure(await create("--job", "demo/noop", "--cron", "61 * * * *"), 1, `"demo/bad"`, "61 * * * *")
    expectOneLineFailure(await create("--job", "demo/noop", "--cron", "not a cron"), 1, `"demo/bad"`, "not a cron")
    expectOneLineFailure(await create("--job", "demo/noop", "--cron", "0 9 * * *", "--timezone", "Mars/Olympus"), 1, `"demo/bad"`, "Mars/Olympus")
    expectOneLineFailure(await create("--job", "demo/nope", "--cron", "* * * * *"), 1, `"demo/bad"`, `"demo/nope"`)
    expectOneLineFailure(await create("--job", "demo/noop", "--cron", "* * * * *", "--payload", '{"n":"one"}'), 1, "demo/noop")
    expectOneLineFailure(await create("--job", "demo/noop", "--cron", "* * * * *", "--payload", "{not json"), 2, "--payload")
    expectOneLineFailure(await create("--cron", "* * * * *"), 2, "--job")
    expectOneLineFailure(await s.run(["schedules", "create", "--id", "Bad_Id", "--job", "demo/noop", "--cron", "* * * * *"]), 1, "Bad_Id")
    expect(await listJson(s)).toEqual([])

    const ok = await s.run(["schedules", "create", "--id", "demo/nightly", "--job", "demo/noop", "--cron", "0 3 * * *", "--payload", '{"n":3}'])
    expect(ok.code, ok.stderr).toBe(0)
    expectOneLineFailure(await s.run(["schedules", "create", "--id", "demo/nightly", "--job", "demo/noop", "--cron", "0 4 * * *"]), 1, `"demo/nightly"`, "already exists")
    expect((await listJson(s)).map((x) => [x.id, x.source, x.cron])).toEqual([["demo/nightly", "studio", "0 3 * * *"]])
  }, 120_000)

  test("pause stops a schedule's next fires; resume brings them back from now", async () => {
    const s = scratch()
    const created = await s.run(["schedules", "create", "--id", "demo/hourly", "--job", "demo/noop", "--cron", "0 * * * *", "--timezone", "Europe/Berlin", "--payload", '{"n":1}'])
    expect(created.code, created.stderr).toBe(0)
    const [before] = await listJson(s)
    expect(before).toMatchObject({ id: "demo/hourly", paused: false, timezone: "Europe/Berlin" })
    expect(before!.nextFires).toHaveLength(5)

    const paused = await s.run(["schedules", "pause", "demo/hourly"])
    expect(paused.code, paused.stderr).toBe(0)
    expect(paused.stdout).toBe("paused demo/hourly\n")
    const [whilePaused] = await listJson(s)
    expect(whilePaused).toMatchObject({ paused: true, nextFires: [] })
    // Pausing twice is not an error.
    expect((await s.run(["schedules", "pause", "demo/hourly"])).code).toBe(0)

    const now = Date.now()
    const resumed = await s.run(["schedules", "resume", "demo/hourly"])
    expect(resumed.code, resumed.stderr).toBe(0)
    expect(resumed.stdout).toMatch(/^resumed demo\/hourly; next fire \S+Z\n$/)
    const [after] = await listJson(s)
    expect(after).toMatchObject({ paused: false })
    expect(after!.nextFires).toHaveLength(5)
    expect(Date.parse(after!.nextDueAt!)).toBeGreaterThan(now - 1_000)
    for (const t of after!.nextFires) expect(Date.parse(t) % 3_600_000).toBe(0)

    expectOneLineFailure(await s.run(["schedules", "pause", "demo/nope"]), 1, "demo/nope")
    expectOneLineFailure(await s.run(["schedules", "resume", "demo/nope"]), 1, "demo/nope")
  }, 120_000)
})

describe("roster check", () => {
  const scratch = useScratch({ apps: demoApps })
  const index = JSON.stringify(join(repoRoot, "src/index.ts"))

  const jobsTs = `import { Effect, Schema } from "effect"
import { Job } from ${index}
export const beat = Job.make({ id: "app/beat", payload: Schema.Struct({ n: Schema.Number }), handler: () => Effect.void })
`

  test("exits 0 on the demo apps and reports their schedules", async () => {
    const s = scratch()
    const r = await s.run(["check"])
    expect(r.code, r.stderr).toBe(0)
    expect(r.stdout).toMatch(/^ok: \d+ job\(s\) on \d+ queue\(s\), 3 schedule\(s\) in /)
    const report = parseJsonOutput<{ ok: boolean; schedules: Array<{ id: string; job: string; file: string }> }>(await s.run(["check", "--json"]))
    expect(report.ok).toBe(true)
    expect(report.schedules).toEqual([
      { id: "demo/every-minute", job: "demo/noop", file: join(demoApps, "demo/schedules.ts") },
      { id: "demo/every-two-seconds", job: "demo/noop", file: join(demoApps, "demo/schedules.ts") },
      { id: "demo/morning", job: "demo/noop", file: join(demoApps, "demo/schedules.ts") }
    ])
    // check touches no database.
    expect(await Bun.file(s.db).exists()).toBe(false)
  }, 60_000)

  /** Each broken schedules.ts (for app `app`, next to a valid jobs.ts), and what the one-line error must name besides the file. */
  const broken: ReadonlyArray<readonly [string, string, ReadonlyArray<string>]> = [
    ["a schedules.ts without the expected export", `export const notASchedule = 1`, ["exports no Schedule"]],
    ["duplicate schedule ids", `export const a = JobSchedule.make({ id: "app/dup", job: beat, payload: { n: 1 }, cron: "* * * * *" })
export const b = JobSchedule.make({ id: "app/dup", job: beat, payload: { n: 2 }, cron: "0 * * * *" })`, [`"app/dup"`, "duplicate"]],
    ["a schedule targeting an unknown job", `export const a = JobSchedule.make({ id: "app/orphan", job: "app/nope", payload: { n: 1 }, cron: "* * * * *" })`, [`"app/orphan"`, `"app/nope"`]],
    ["an invalid cron", `export const a = JobSchedule.make({ id: "app/bad-cron", job: beat, payload: { n: 1 }, cron: "61 * * * *" })`, [`"app/bad-cron"`, "61 * * * *"]],
    ["an invalid timezone", `export const a = JobSchedule.make({ id: "app/bad-zone", job: beat, payload: { n: 1 }, cron: "0 9 * * *", timezone: "Mars/Olympus" })`, [`"app/bad-zone"`, "Mars/Olympus"]],
    ["a payload the job's schema rejects (given the Job)", `export const a = JobSchedule.make({ id: "app/bad-payload", job: beat, payload: { n: "one" } as any, cron: "* * * * *" })`, [`"app/bad-payload"`, `"app/beat"`]],
    ["a payload the job's schema rejects (given the job id)", `export const a = JobSchedule.make({ id: "app/bad-payload", job: "app/beat", payload: { n: "one" }, cron: "* * * * *" })`, [`"app/bad-payload"`, `"app/beat"`]],
    ["a schedule of another app", `export const a = JobSchedule.make({ id: "other/x", job: beat, payload: { n: 1 }, cron: "* * * * *" })`, [`"other/x"`, `"app"`]]
  ]

  test("exits 1 with one line naming the file and the id for every kind of broken schedules.ts", async () => {
    const s = scratch()
    const root = join(repoRoot, "tests/.tmp", `check-${process.pid}-${Math.random().toString(36).slice(2, 8)}`)
    try {
      for (const [i, [what, body, names]] of broken.entries()) {
        const apps = join(root, String(i))
        mkdirSync(join(apps, "app"), { recursive: true })
        writeFileSync(join(apps, "app", "jobs.ts"), jobsTs)
        writeFileSync(join(apps, "app", "schedules.ts"), `import { JobSchedule } from ${index}\nimport { beat } from "./jobs.ts"\n${body}\n`)
        const r = await s.run(["check"], { env: { ROSTER_APPS_DIR: apps } })
        expect(r.code, `${what}: ${r.stderr}`).toBe(1)
        const lines = r.stderr.trimEnd().split("\n")
        expect(lines, what).toHaveLength(1)
        expect(lines[0], what).toContain(join(apps, "app", "schedules.ts"))
        for (const name of names) expect(lines[0], what).toContain(name)
        // The scheduler refuses to start on the same problem.
        if (i === 0) {
          const scheduler = await s.run(["scheduler"], { env: { ROSTER_APPS_DIR: apps }, timeoutMs: 30_000 })
          expect(scheduler.code, what).toBe(1)
          expect(scheduler.stderr).toContain(join(apps, "app", "schedules.ts"))
        }
      }
    } finally {
      rmSync(root, { recursive: true, force: true })
    }
  }, 120_000)
})
