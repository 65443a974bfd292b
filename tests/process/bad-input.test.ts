/**
 * Bad input at the process level: a database that cannot be opened, an unknown Job,
 * a payload that does not match its Schema or is too large — each is refused with one
 * readable line on stderr, exit 1, and nothing written; a stored payload that no longer
 * decodes fails that execution permanently while the worker carries on (DESIGN §2).
 */
import { describe, expect, test } from "bun:test"
import { mkdirSync, writeFileSync, existsSync } from "node:fs"
import { join } from "node:path"
import { attemptsCte, demoApps, fixtureApps, parseJsonOutput, tail, useScratch, type ProcessResult } from "../support/processes.ts"
import { rowidOf } from "../../src/store/sqlite/ExecutionRowid.ts"

/** Exit 1 with exactly one line on stderr, starting `roster:`, and no stack trace. */
const expectOneLineFailure = (r: ProcessResult, mentions?: RegExp) => {
  expect(r.code, r.stderr).toBe(1)
  const lines = r.stderr.trimEnd().split("\n")
  expect(lines.length, r.stderr).toBe(1)
  expect(lines[0]).toStartWith("roster: ")
  expect(r.stderr).not.toMatch(/^\s+at /m)
  if (mentions) expect(lines[0]).toMatch(mentions)
  expect(r.stdout).toBe("")
}

describe("a database that cannot be opened", () => {
  const scratch = useScratch({ apps: demoApps })

  test("a database path that cannot be opened prints one clear line and exits non-zero", async () => {
    const s = scratch()
    const inProc = "/proc/roster-nope/x.db"
    const aFolder = join(s.dir, "a-folder")
    mkdirSync(aFolder)
    for (const db of [inProc, aFolder]) {
      for (const args of [["executions", "count", "--json"], ["enqueue", "demo/noop", "--payload", '{"n":1}', "--json"], ["worker", "--exit-when-idle"]]) {
        const r = await s.run(args, { env: { ROSTER_DB: db } })
        // A read of a file that does not exist is refused before any open (missing-database.test.ts).
        const refusal = args[0] === "executions" && db === inProc ? "no database at" : "cannot open database"
        expectOneLineFailure(r, new RegExp(`${refusal} ${db.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")}`))
      }
    }
    expect(existsSync("/proc/roster-nope")).toBe(false)
  }, 60_000)
})

describe("enqueue refuses bad input and writes nothing", () => {
  const scratch = useScratch({ apps: demoApps })

  /**
   * Enqueues one good execution (acknowledged, and so the database exists), runs
   * `attempt`, then checks that it is still the only one, and that it runs.
   */
  const nothingWritten = async (s: ReturnType<typeof scratch>, attempt: () => Promise<void>) => {
    const good = await s.run(["enqueue", "demo/noop", "--payload", '{"n":1}', "--json"])
    expect(good.code).toBe(0)
    await attempt()
    expect(s.count("SELECT COUNT(*) FROM roster_executions")).toBe(1)
    const worker = await s.run(["worker", "--exit-when-idle"])
    expect(worker.code, tail(worker.stderr)).toBe(0)
    expect(s.all("SELECT id, state FROM roster_executions")).toEqual([{ id: parseJsonOutput(good).id, state: "succeeded" }])
  }

  test("an unknown job name is refused with exit 1 and nothing written", async () => {
    const s = scratch()
    await nothingWritten(s, async () => {
      expectOneLineFailure(await s.run(["enqueue", "demo/nope", "--payload", "{}", "--json"]), /unknown job "demo\/nope"/)
      expectOneLineFailure(await s.run(["enqueue", "demo/nope", "--ndjson", "-", "--json"], { stdin: '{"n":1}\n{"n":2}\n' }), /unknown job "demo\/nope"/)
    })
  }, 60_000)

  test("an invalid payload is refused with exit 1 and nothing written", async () => {
    const s = scratch()
    await nothingWritten(s, async () => {
      expectOneLineFailure(await s.run(["enqueue", "demo/noop", "--payload", '{"n":"x"}', "--json"]), /invalid payload for demo\/noop/)
      expectOneLineFailure(await s.run(["enqueue", "demo/noop", "--payload", "{}", "--json"]), /invalid payload for demo\/noop/)
      // One bad line refuses the whole bulk: the good lines around it are not written either.
      expectOneLineFailure(await s.run(["enqueue", "demo/noop", "--ndjson", "-", "--json"], { stdin: '{"n":1}\n{"n":"x"}\n{"n":3}\n' }), /invalid payload/)
      // Text that is not JSON at all is a usage error.
      const notJson = await s.run(["enqueue", "demo/noop", "--payload", "{n:", "--json"])
      expect(notJson.code).toBe(2)
      expect(notJson.stderr.trimEnd().split("\n")).toHaveLength(1)
      expect(notJson.stderr).toStartWith("roster: ")
    })
  }, 60_000)

  test("an oversize payload (> 1 MiB) is refused; one of exactly 1 MiB is accepted", async () => {
    const s = scratch()
    const limit = 1024 * 1024
    const envelope = JSON.stringify({ text: "" }).length
    const exactly = join(s.dir, "exactly.ndjson")
    const over = join(s.dir, "over.ndjson")
    // A payload this large cannot be a command-line argument (128 KiB per argument), hence files.
    writeFileSync(exactly, JSON.stringify({ text: "a".repeat(limit - envelope) }) + "\n")
    writeFileSync(over, JSON.stringify({ text: "a".repeat(limit - envelope + 1) }) + "\n")
    const env = { ROSTER_APPS_DIR: fixtureApps }

    const accepted = await s.run(["enqueue", "probe/text", "--ndjson", exactly, "--json"], { env })
    expect(accepted.code, accepted.stderr).toBe(0)
    expect(parseJsonOutput(accepted)).toEqual({ inserted: 1, existing: 0 })
    expectOneLineFailure(await s.run(["enqueue", "probe/text", "--ndjson", over, "--json"], { env }), new RegExp(`${limit + 1} bytes, over the ${limit}-byte limit`))
    expect(s.count("SELECT COUNT(*) FROM roster_executions")).toBe(1)
    expect(s.count("SELECT length(payload) FROM roster_executions")).toBe(limit)
    // The acknowledged one, enqueued before the refusal, runs.
    const worker = await s.run(["worker", "--exit-when-idle"], { env })
    expect(worker.code, tail(worker.stderr)).toBe(0)
    expect(s.count("SELECT COUNT(*) FROM roster_executions WHERE state = 'succeeded'")).toBe(1)
  }, 60_000)
})

describe("an undecodable stored payload", () => {
  const scratch = useScratch({ apps: demoApps })

  /** Inserts a copy of an enqueued row with another id and payload, as an older deploy or a hand edit might leave it. */
  const insertCopy = (s: ReturnType<typeof scratch>, of: string, payload: string): string => {
    const id = Bun.randomUUIDv7()
    s.sqlite().query(
      // The rowid made from the id, as Roster stores every row (src/store/sqlite/ExecutionRowid.ts).
      `INSERT INTO roster_executions (seq, id, job, queue, state, payload, priority, attempt, max_attempts, retry, timeout_ms, run_at, created_at)
       SELECT ?, ?, job, queue, state, ?, priority, attempt, max_attempts, retry, timeout_ms, run_at, created_at FROM roster_executions WHERE id = ?`
    ).run(rowidOf(id), id, payload, of)
    return id
  }

  test("an undecodable stored payload fails permanently and the worker carries on", async () => {
    const s = scratch()
    const good = await s.run(["enqueue", "demo/noop", "--ndjson", "-", "--json"], { stdin: '{"n":1}\n{"n":2}\n{"n":3}\n' })
    expect(parseJsonOutput(good)).toEqual({ inserted: 3, existing: 0 })
    const template = s.all<{ id: string }>("SELECT id FROM roster_executions LIMIT 1")[0]!.id
    const bad = insertCopy(s, template, '{"n":"oops"}')
    expect(s.count("SELECT max_attempts FROM roster_executions WHERE id = ?", bad)).toBeGreaterThan(1)

    const worker = await s.run(["worker", "--exit-when-idle"])
    expect(worker.code, tail(worker.stderr)).toBe(0)

    const row = s.all<{ state: string; attempt: number; error: string }>("SELECT state, attempt, error FROM roster_executions WHERE id = ?", bad)[0]!
    expect(row.state).toBe("failed")
    expect(row.attempt).toBe(1)
    expect(JSON.parse(row.error)).toMatchObject({ tag: "UndecodablePayload", retryable: false })
    expect(s.all(`${attemptsCte} SELECT attempt, outcome FROM attempts WHERE execution_id = ?`, bad)).toEqual([{ attempt: 1, outcome: "failed" }])
    expect(s.count("SELECT COUNT(*) FROM roster_executions WHERE state = 'succeeded' AND id <> ?", bad)).toBe(3)

    const shown = parseJsonOutput(await s.run(["executions", "show", bad, "--json"]))
    expect(shown).toMatchObject({ state: "failed", attempt: 1, error: { tag: "UndecodablePayload" } })
    expect(shown.attempts).toEqual([expect.objectContaining({ attempt: 1, outcome: "failed", error: expect.objectContaining({ tag: "UndecodablePayload" }) })])
  }, 60_000)

  test("a stored payload that is not JSON text fails permanently and the worker carries on", async () => {
    const s = scratch()
    const good = await s.run(["enqueue", "demo/noop", "--ndjson", "-", "--json"], { stdin: '{"n":1}\n{"n":2}\n' })
    expect(good.code).toBe(0)
    const template = s.all<{ id: string }>("SELECT id FROM roster_executions LIMIT 1")[0]!.id
    const bad = insertCopy(s, template, "not json")
    const worker = await s.run(["worker", "--exit-when-idle"], {
      env: { ROSTER_LEASE_MS: "1000", ROSTER_HEARTBEAT_MS: "300", ROSTER_REAP_MS: "200", ROSTER_IDLE_HORIZON_MS: "1000" },
      timeoutMs: 20_000
    })
    expect(worker.code, tail(worker.stderr)).toBe(0)
    expect(s.all("SELECT state, attempt FROM roster_executions WHERE id = ?", bad)).toEqual([{ state: "failed", attempt: 1 }])
    expect(s.count("SELECT COUNT(*) FROM roster_executions WHERE state = 'succeeded'")).toBe(2)
  }, 30_000)
})
