/**
 * Settings that cannot work (issue 13): a number out of its range in a ROSTER_* variable
 * or in roster.config.ts, a lease shorter than two heartbeats, a roster.config.ts whose
 * default export is not a config, a module that never finishes loading, a
 * `--concurrency` of 0. Each is refused at start with one line naming the setting and
 * where it came from, before the database is opened; work acknowledged before is still
 * queued and runs once the setting is fixed. Real `roster` processes on a real file.
 */
import { describe, expect, test } from "bun:test"
import { existsSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Effect, Schema } from "effect"
import { Job, Roster } from "../../src/index.ts"
import { acknowledge, expectAllRan, expectRefused, idsOf } from "../support/badInput.ts"
import { demoApps, repoRoot, useScratch } from "../support/processes.ts"

/** Every numeric variable with a value it must refuse, and the range its line names. */
const badVariables: ReadonlyArray<readonly [name: string, value: string, range: RegExp]> = [
  ["ROSTER_LEASE_MS", "0", /from 200 to 2147483647/],
  ["ROSTER_HEARTBEAT_MS", "0", /from 100 to 2147483647/],
  ["ROSTER_POLL_MS", "0", /from 10 to/],
  ["ROSTER_WATCH_MS", "-1", /from 1 to 2147483647 \(or 0: off\)/],
  ["ROSTER_REAP_MS", "abc", /from 10 to/],
  ["ROSTER_VACUUM_MS", "50", /from 100 to 2147483647 \(or 0: off\)/],
  ["ROSTER_GRACE_MS", "1.5", /from 0 to/],
  ["ROSTER_BATCH_SIZE", "0", /from 1 to 10000/],
  ["ROSTER_LOG_CAPACITY", "0", /from 1 to 10000000/],
  ["ROSTER_LOG_FLUSH_MS", "9999999999", /from 0 to 2147483647/],
  ["ROSTER_MAX_PAYLOAD_BYTES", "0", /bytes from 1 to 1000000000/],
  ["ROSTER_SCHEDULER_POLL_MS", "0", /from 10 to/],
  ["ROSTER_SCHEDULER_LEASE_MS", "0", /from 300 to/],
  ["ROSTER_SCHEDULER_TOLERANCE_MS", "-5", /from 0 to/],
  ["ROSTER_IDLE_HORIZON_MS", "soon", /from 0 to/],
  ["ROSTER_LOAD_TIMEOUT_MS", "0", /from 1 to/]
]

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

describe("a ROSTER_* number out of its range", () => {
  const scratch = useScratch({ apps: demoApps })

  test("every numeric variable: one line naming the variable and its text, exit 1, before the database is opened", async () => {
    const s = scratch()
    for (const [name, value, range] of badVariables) {
      const r = await s.run(["enqueue", "demo/noop", "--payload", '{"n":1}', "--json"], { env: { [name]: value } })
      expectRefused(r, new RegExp(`^roster: ${name} must be a whole number .*${range.source}.*, got ${escape(JSON.stringify(value))}$`))
    }
    // The refusals came before the database: an enqueue would have created it.
    expect(existsSync(s.db)).toBe(false)
  }, 120_000)

  test("a lease of 0, a heartbeat of 0, a lease shorter than two heartbeats: worker, scheduler, dev and enqueue refuse; acknowledged work stays queued and runs", async () => {
    const s = scratch()
    const ids = await acknowledge(s, 3)
    const cases: ReadonlyArray<readonly [Record<string, string>, RegExp]> = [
      [{ ROSTER_LEASE_MS: "0" }, /^roster: ROSTER_LEASE_MS must be a whole number of milliseconds from 200/],
      [{ ROSTER_HEARTBEAT_MS: "0" }, /^roster: ROSTER_HEARTBEAT_MS must be a whole number of milliseconds from 100/],
      [
        { ROSTER_LEASE_MS: "1000" },
        /^roster: ROSTER_LEASE_MS \(1000 ms\) must be at least twice the heartbeat, the default worker\.heartbeatMs \(10000 ms\): .*"lease expired"$/
      ],
      [
        { ROSTER_LEASE_MS: "1000", ROSTER_HEARTBEAT_MS: "600" },
        /^roster: ROSTER_LEASE_MS \(1000 ms\) must be at least twice the heartbeat, ROSTER_HEARTBEAT_MS \(600 ms\)/
      ],
      [{ ROSTER_HEARTBEAT_MS: "20000" }, /^roster: ROSTER_HEARTBEAT_MS \(20000 ms\) must be at most half the lease, the default worker\.leaseMs \(30000 ms\)/]
    ]
    for (const [env, line] of cases) {
      // The commands of one case are independent: run side by side.
      await Promise.all([["worker"], ["scheduler"], ["dev"], ["enqueue", "demo/noop", "--payload", '{"n":9}']].map(async (args) =>
        expectRefused(await s.run(args, { env, timeoutMs: 30_000 }), line)))
    }
    expect(await idsOf(s, "queued")).toEqual(ids)
    // Exactly two heartbeats is enough.
    await expectAllRan(s, ids, { ROSTER_LEASE_MS: "1000", ROSTER_HEARTBEAT_MS: "500" })
  }, 120_000)

  test("--concurrency outside 1..10000 is a usage error (0 used to be ignored, a negative number taken)", async () => {
    const s = scratch()
    for (const args of [["worker", "--concurrency", "0"], ["worker", "--concurrency", "-1"], ["dev", "--concurrency", "100000"]]) {
      const r = await s.run(args, { timeoutMs: 30_000 })
      expect(r.code, r.stderr).toBe(2)
      expect(r.stderr.trimEnd().split("\n").at(-1)).toMatch(/^roster: --concurrency must be a whole number from 1 to 10000, got -?\d+$/)
    }
  }, 60_000)

  test("--limit outside 1..10000 is a usage error: cancel --limit 0 used to cancel one execution", async () => {
    const s = scratch()
    const ids = await acknowledge(s, 2)
    for (const args of [
      ["executions", "cancel", "--state", "queued", "--limit", "0"],
      ["executions", "retry", "--state", "failed", "--limit", "-1"],
      ["executions", "list", "--limit", "20000"],
      ["schedules", "history", "demo/every-minute", "--limit", "0"]
    ]) {
      const r = await s.run(args)
      expect(r.code, `${args.join(" ")}: ${r.stderr}`).toBe(2)
      expect(r.stderr.trimEnd().split("\n")).toEqual([expect.stringMatching(/^roster: --limit must be from 1 to 10000, got -?\d+$/)])
    }
    expect(await idsOf(s, "queued")).toEqual(ids)
  }, 60_000)
})

describe("roster.config.ts that cannot work", () => {
  const scratch = useScratch({ apps: demoApps })

  test("a value out of range, an unknown key, a default export that is not a config: check, worker and enqueue refuse naming the key and the file; fixed, the work runs", async () => {
    const s = scratch()
    const ids = await acknowledge(s, 2)
    const file = join(s.dir, "roster.config.ts")
    const at = escape(file)
    // Flow-control values are checked by the same rule as every other: `check` alone shows it.
    const checkOnly = [["check"]]
    const cases: ReadonlyArray<readonly [source: string, line: RegExp, env?: Record<string, string>, commands?: ReadonlyArray<ReadonlyArray<string>>]> = [
      ["export default { worker: { leaseMs: 0 } }", new RegExp(`^roster: worker\\.leaseMs in ${at} must be a whole number of milliseconds from 200 to 2147483647, got 0$`)],
      ["export default { worker: { heartbeatMs: 0 } }", new RegExp(`^roster: worker\\.heartbeatMs in ${at} must be .* got 0$`)],
      [
        "export default { worker: { leaseMs: 5000 } }",
        new RegExp(`^roster: worker\\.leaseMs in ${at} \\(5000 ms\\) must be at least twice the heartbeat, ROSTER_HEARTBEAT_MS \\(3000 ms\\)`),
        { ROSTER_HEARTBEAT_MS: "3000" }
      ],
      ["export default { worker: { leaseMS: 5000 } }", new RegExp(`^roster: worker\\.leaseMS in ${at} is not a setting Roster knows \\(keys of worker: leaseMs, `)],
      ["export default { queue: { default: { concurrency: 2 } } }", new RegExp(`^roster: queue in ${at} is not a setting Roster knows \\(keys: db, `)],
      ["export default { queues: { default: { concurrency: 0 } } }", new RegExp(`^roster: queues\\.default\\.concurrency in ${at} must be a whole number from 1 to 10000, got 0$`)],
      ["export default { queues: { default: 4 } }", new RegExp(`^roster: queues\\.default in ${at} must be an object like \\{ concurrency: 5 \\}, got 4$`)],
      ["export default { queues: { default: { globalConcurrency: 0 } } }", new RegExp(`^roster: queues\\.default\\.globalConcurrency in ${at} must be a whole number from 1 to 1000000, got 0$`), undefined, checkOnly],
      ["export default { queues: { default: { rateLimit: { limit: 10, period: \"soon\" } } } }", new RegExp(`^roster: queues\\.default\\.rateLimit in ${at} period must be a duration like "1 minute" or 60000 \\(ms\\), got "soon"$`), undefined, checkOnly],
      ["export default { queues: { default: { rateLimit: { limit: 0, period: 1000 } } } }", new RegExp(`^roster: queues\\.default\\.rateLimit in ${at} limit must be a whole number from 1 to 1000000, got 0$`), undefined, checkOnly],
      ["export default { queues: { default: { globalconcurrency: 2 } } }", new RegExp(`^roster: queues\\.default\\.globalconcurrency in ${at} is not a setting Roster knows \\(keys of queues\\.default: concurrency, globalConcurrency, rateLimit\\)$`), undefined, checkOnly],
      ["export default { retention: { failedMs: -1 } }", new RegExp(`^roster: retention\\.failedMs in ${at} must be a whole number of milliseconds from 0 to`)],
      ["export default { maxPayloadBytes: \"1mb\" }", new RegExp(`^roster: maxPayloadBytes in ${at} must be .* got the string "1mb"$`)],
      ["export default { synchronous: \"OFF\" }", new RegExp(`^roster: synchronous in ${at} must be "FULL" or "NORMAL", got the string "OFF"$`)],
      ["export default () => ({ db: 'x.db' })", new RegExp(`^roster: ${at} must \`export default defineConfig\\(\\{\\.\\.\\.\\}\\)\`; its default export is a function$`)],
      ["export default 5", new RegExp(`^roster: ${at} must .*; its default export is 5$`)],
      ["export default [{ db: 'x.db' }]", new RegExp(`^roster: ${at} must .*; its default export is an array$`)]
    ]
    for (const [source, line, env, commands] of cases) {
      writeFileSync(file, `${source}\n`)
      await Promise.all((commands ?? [["check"], ["worker"], ["enqueue", "demo/noop", "--payload", '{"n":9}']]).map(async (args) =>
        expectRefused(await s.run(args, { env: env ?? {}, timeoutMs: 30_000 }), line)))
    }
    // The variable names itself even when the file sets the same key.
    writeFileSync(file, "export default { worker: { leaseMs: 5000 } }\n")
    expectRefused(await s.run(["check"], { env: { ROSTER_LEASE_MS: "0" } }), /^roster: ROSTER_LEASE_MS must be/)
    rmSync(file)
    expect(await idsOf(s, "queued")).toEqual(ids)
    await expectAllRan(s, ids)
  }, 180_000)

  test("the config an embedding app passes is named as such", async () => {
    const noop = Job.make({ id: "embed/noop", payload: Schema.Struct({}), handler: () => Effect.void })
    const refusal = await Roster.open({ db: ":memory:", jobs: [noop], worker: { heartbeatMs: 0 } }, { configDir: false }).then(
      () => undefined,
      (e: { _tag: string; message: string }) => e
    )
    expect(refusal?._tag).toBe("InvalidDefinition")
    expect(refusal?.message).toMatch(/^worker\.heartbeatMs in the config given to Roster\.layer \/ Roster\.open must be a whole number of milliseconds from 100/)
  })

  test("a scheduler option out of range is refused by startScheduler, before anything is written", async () => {
    const noop = Job.make({ id: "embed/noop", payload: Schema.Struct({}), handler: () => Effect.void })
    const roster = await Roster.open({ db: ":memory:", jobs: [noop] }, { configDir: false, logger: { output: "off" } })
    try {
      for (const [options, line] of [
        [{ pollMs: 0 }, /^the scheduler option pollMs must be a whole number of milliseconds from 10 to/],
        [{ leaseTtlMs: 100 }, /^the scheduler option leaseTtlMs must be a whole number of milliseconds from 300 to/],
        [{ toleranceMs: -1 }, /^the scheduler option toleranceMs must be .* got -1$/]
      ] as const) {
        const refusal = await roster.startScheduler(options).then(() => undefined, (e: { _tag: string; message: string }) => e)
        expect(refusal?._tag).toBe("InvalidDefinition")
        expect(refusal?.message).toMatch(line)
      }
    } finally {
      await roster.close()
    }
  })
})

describe("a module that never finishes loading", () => {
  const scratch = useScratch({ apps: demoApps })
  const never = "await new Promise(() => {})\n"
  // Long enough for the modules that do settle (they import Roster's sources) on a loaded machine.
  const loadTimeout = "3000"
  const index = join(repoRoot, "src/index.ts")
  const job = `import { Effect, Schema } from "effect"\nimport { Job } from ${JSON.stringify(index)}\nexport const ok = Job.make({ id: "slow/ok", payload: Schema.Struct({}), handler: () => Effect.void })\n`

  test("a jobs.ts, schedules.ts or services.ts whose top-level await never settles: check and worker exit 1 naming the file after ROSTER_LOAD_TIMEOUT_MS", async () => {
    const s = scratch()
    const apps = join(s.dir, "apps")
    const app = join(apps, "slow")
    const files: ReadonlyArray<readonly [string, Record<string, string>]> = [
      ["jobs.ts", { "jobs.ts": `${never}export {}\n` }],
      ["schedules.ts", { "jobs.ts": job, "schedules.ts": `${never}export {}\n` }],
      ["services.ts", { "jobs.ts": job, "services.ts": `${never}export default undefined\n` }]
    ]
    for (const [hanging, contents] of files) {
      rmSync(app, { recursive: true, force: true })
      mkdirSync(app, { recursive: true })
      for (const [name, text] of Object.entries(contents)) writeFileSync(join(app, name), text)
      const path = escape(join(app, hanging))
      await Promise.all([["check"], ["worker"]].map(async (args) => {
        const started = Date.now()
        const r = await s.run(args, { env: { ROSTER_APPS_DIR: apps, ROSTER_LOAD_TIMEOUT_MS: loadTimeout }, timeoutMs: 20_000 })
        expectRefused(r, new RegExp(`^roster: cannot load ${path}: it did not finish loading within ${loadTimeout} ms \\(.*ROSTER_LOAD_TIMEOUT_MS sets the limit\\)$`))
        expect(Date.now() - started).toBeLessThan(15_000)
      }))
    }
    expect(existsSync(s.db)).toBe(false)
  }, 120_000)

  test("a roster.config.ts that never settles: every command exits 1 naming it; removed, the acknowledged work runs", async () => {
    const s = scratch()
    const ids = await acknowledge(s, 2)
    const file = join(s.dir, "roster.config.ts")
    writeFileSync(file, `${never}export default {}\n`)
    await Promise.all([["check"], ["executions", "count", "--json"], ["worker"], ["enqueue", "demo/noop", "--payload", '{"n":9}']].map(async (args) => {
      const r = await s.run(args, { env: { ROSTER_LOAD_TIMEOUT_MS: loadTimeout }, timeoutMs: 20_000 })
      expectRefused(r, new RegExp(`^roster: cannot load ${escape(file)}: it did not finish loading within ${loadTimeout} ms`))
    }))
    rmSync(file)
    await expectAllRan(s, ids)
  }, 120_000)
})

describe("an apps folder that cannot be read", () => {
  const scratch = useScratch({ apps: demoApps })

  test("a file where the folder should be, or a dangling link inside it: one line naming the folder, exit 1, not a stack trace", async () => {
    const s = scratch()
    const file = join(s.dir, "not-a-folder")
    writeFileSync(file, "")
    const apps = join(s.dir, "apps")
    mkdirSync(apps)
    symlinkSync(join(s.dir, "gone"), join(apps, "dangling"))
    for (const [dir, why] of [[file, "ENOTDIR"], [apps, "ENOENT"]] as const) {
      await Promise.all([["check"], ["worker"], ["enqueue", "demo/noop", "--payload", '{"n":1}']].map(async (args) => {
        const r = await s.run(args, { env: { ROSTER_APPS_DIR: dir } })
        expectRefused(r, new RegExp(`^roster: cannot read apps folder ${escape(dir)}: ${why}: .*\\(set ROSTER_APPS_DIR or appsDir in roster\\.config\\.ts\\)$`))
      }))
    }
    expect(existsSync(s.db)).toBe(false)
  }, 60_000)
})
