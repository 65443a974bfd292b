/**
 * The CLI's black-box contract (DESIGN §5): the JSON shapes scripts rely on, idempotent
 * enqueue, and exit codes (0 ok, 1 failure, 2 usage). Driven through real processes.
 */
import { describe, expect, test } from "bun:test"
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import { demoApps, parseJsonOutput, useScratch } from "../support/processes.ts"

const uuidV7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/
const isoTime = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

/** The fields DESIGN §5 promises on every item of `executions list --json`. */
const listFields = [
  "id", "job", "queue", "state", "attempt", "maxAttempts", "priority", "runAt",
  "createdAt", "startedAt", "finishedAt", "idempotencyKey", "scheduleId", "error"
] as const

describe("enqueue output", () => {
  const scratch = useScratch({ apps: demoApps })

  test("enqueue --json prints { id, inserted }", async () => {
    const s = scratch()
    const r = await s.run(["enqueue", "demo/noop", "--payload", '{"n":1}', "--json"])
    expect(r.code).toBe(0)
    const out = parseJsonOutput<{ id: string; inserted: boolean }>(r)
    expect(Object.keys(out).sort()).toEqual(["id", "inserted"])
    expect(out.id).toMatch(uuidV7)
    expect(out.inserted).toBe(true)
    expect(s.all("SELECT id, job, state, payload FROM roster_executions")).toEqual([
      { id: out.id, job: "demo/noop", state: "queued", payload: '{"n":1}' }
    ])
  }, 60_000)

  test("the same idempotency key twice returns the same execution with inserted false", async () => {
    const s = scratch()
    const first = parseJsonOutput(await s.run(["enqueue", "demo/noop", "--payload", '{"n":1}', "--idempotency-key", "order-42", "--json"]))
    // Keys are trimmed, and the payload of a duplicate does not matter.
    const again = await s.run(["enqueue", "demo/noop", "--payload", '{"n":2}', "--idempotency-key", "  order-42 ", "--json"])
    expect(again.code).toBe(0)
    expect(first).toEqual({ id: expect.stringMatching(uuidV7), inserted: true })
    expect(parseJsonOutput(again)).toEqual({ id: first.id, inserted: false })
    expect(s.all("SELECT id, idempotency_key, payload FROM roster_executions")).toEqual([
      { id: first.id, idempotency_key: "order-42", payload: '{"n":1}' }
    ])
    // The key is per Job: another Job may use it.
    const other = parseJsonOutput(await s.run(["enqueue", "demo/sleep", "--payload", '{"ms":1}', "--idempotency-key", "order-42", "--json"]))
    expect(other).toEqual({ id: expect.stringMatching(uuidV7), inserted: true })
    expect(other.id).not.toBe(first.id)
  }, 60_000)

  test("--ndjson prints { inserted, existing } for a file or stdin", async () => {
    const s = scratch()
    const file = join(s.dir, "payloads.ndjson")
    writeFileSync(file, '{"n":1}\n\n{"n":2}\n{"n":3}')
    const fromFile = await s.run(["enqueue", "demo/noop", "--ndjson", file, "--json"])
    expect(fromFile.code).toBe(0)
    expect(parseJsonOutput(fromFile)).toEqual({ inserted: 3, existing: 0 })
    const fromStdin = await s.run(["enqueue", "demo/noop", "--ndjson", "-", "--json"], { stdin: '{"n":4}\n{"n":5}\n' })
    expect(parseJsonOutput(fromStdin)).toEqual({ inserted: 2, existing: 0 })
    const empty = await s.run(["enqueue", "demo/noop", "--ndjson", "-", "--json"], { stdin: "" })
    expect(parseJsonOutput(empty)).toEqual({ inserted: 0, existing: 0 })
    expect(s.all<{ payload: string }>("SELECT payload FROM roster_executions ORDER BY id").map((r) => JSON.parse(r.payload).n)).toEqual([1, 2, 3, 4, 5])
  }, 60_000)
})

describe("executions output", () => {
  const scratch = useScratch({ apps: demoApps })

  test("executions list, show and count --json carry the documented fields", async () => {
    const s = scratch()
    const noop = parseJsonOutput(await s.run(["enqueue", "demo/noop", "--payload", '{"n":7}', "--idempotency-key", "k", "--json"]))
    const broken = parseJsonOutput(await s.run(["enqueue", "demo/broken", "--payload", "{}", "--json"]))
    const later = parseJsonOutput(await s.run(["enqueue", "demo/noop", "--payload", '{"n":8}', "--delay-ms", "3600000", "--json"]))
    const worker = await s.run(["worker", "--exit-when-idle"])
    expect(worker.code).toBe(0)

    const list = parseJsonOutput<Array<Record<string, unknown>>>(await s.run(["executions", "list", "--json"]))
    expect(list).toHaveLength(3)
    for (const item of list) for (const field of listFields) expect(item).toHaveProperty(field)
    // Newest first.
    expect(list.map((e) => e.id)).toEqual([later.id, broken.id, noop.id])
    const [l, b, n] = list as [Record<string, any>, Record<string, any>, Record<string, any>]
    expect(n).toMatchObject({ job: "demo/noop", queue: "default", state: "succeeded", attempt: 1, maxAttempts: 3, priority: 0, idempotencyKey: "k", scheduleId: null, error: null })
    for (const field of ["runAt", "createdAt", "startedAt", "finishedAt"]) expect(n[field]).toMatch(isoTime)
    expect(b).toMatchObject({ job: "demo/broken", state: "failed", attempt: 1, error: { tag: "PermanentFailure", message: "demo/broken always fails", retryable: false } })
    expect(l).toMatchObject({ state: "queued", attempt: 0, startedAt: null, finishedAt: null, idempotencyKey: null })
    expect(Date.parse(l.runAt)).toBeGreaterThan(Date.parse(l.createdAt))

    // Filters.
    const failed = parseJsonOutput<Array<{ id: string }>>(await s.run(["executions", "list", "--json", "--state", "failed"]))
    expect(failed.map((e) => e.id)).toEqual([broken.id])
    const noops = parseJsonOutput<Array<{ id: string }>>(await s.run(["executions", "list", "--json", "--job", "demo/noop", "--limit", "1"]))
    expect(noops.map((e) => e.id)).toEqual([later.id])

    const shown = parseJsonOutput<Record<string, any>>(await s.run(["executions", "show", noop.id, "--json"]))
    for (const field of [...listFields, "payload", "result", "attempts", "logs"]) expect(shown).toHaveProperty(field)
    expect(shown).toMatchObject({ id: noop.id, payload: { n: 7 }, result: { n: 7 } })
    expect(shown.attempts).toHaveLength(1)
    expect(shown.attempts[0]).toMatchObject({ attempt: 1, outcome: "succeeded", worker: expect.any(String) })
    expect(Array.isArray(shown.logs)).toBe(true)

    const counts = parseJsonOutput(await s.run(["executions", "count", "--json"]))
    expect(counts).toEqual({ queued: 1, running: 0, waiting: 0, succeeded: 1, failed: 1, cancelled: 0 })
  }, 60_000)

  test("show --json carries parent, wait, children and signals; signal --json prints { id, name, ok, result }", async () => {
    const s = scratch()
    const later = parseJsonOutput(await s.run(["enqueue", "demo/noop", "--payload", '{"n":1}', "--delay-ms", "3600000", "--json"]))
    const sent = await s.run(["executions", "signal", later.id, "go", "--payload", '{"x":1}', "--json"])
    expect(sent.code, sent.stderr).toBe(0)
    expect(parseJsonOutput(sent)).toEqual({ id: later.id, name: "go", ok: true, result: "Kept" })
    const shown = parseJsonOutput<Record<string, any>>(await s.run(["executions", "show", later.id, "--json"]))
    for (const field of [...listFields, "payload", "result", "attempts", "logs"]) expect(shown).toHaveProperty(field)
    expect(shown).toMatchObject({ parentId: null, parentStep: null, wait: null, children: [] })
    expect(shown.childCounts).toEqual({ queued: 0, running: 0, waiting: 0, succeeded: 0, failed: 0, cancelled: 0 })
    expect(shown.signals).toEqual([{ seq: expect.any(Number), name: "go", payload: { x: 1 }, sentAt: expect.stringMatching(isoTime), consumedAt: null, taken: false }])
    // A refusal with --json: the document on stdout, one line on stderr, exit 1.
    const unknown = await s.run(["executions", "signal", "01900000-0000-7000-8000-000000000000", "go", "--json"])
    expect(unknown.code).toBe(1)
    expect(parseJsonOutput(unknown)).toEqual({ id: "01900000-0000-7000-8000-000000000000", name: "go", ok: false, error: "no execution 01900000-0000-7000-8000-000000000000" })
    expect(unknown.stderr.trimEnd().split("\n")).toEqual(["roster: no execution 01900000-0000-7000-8000-000000000000"])
  }, 60_000)

  test("executions count --json has all six states on an empty database", async () => {
    const s = scratch()
    // An empty database, not a missing one (that is refused: tests/process/missing-database.test.ts).
    expect((await s.run(["migrate"])).code).toBe(0)
    const r = await s.run(["executions", "count", "--json"])
    expect(r.code).toBe(0)
    expect(parseJsonOutput(r)).toEqual({ queued: 0, running: 0, waiting: 0, succeeded: 0, failed: 0, cancelled: 0 })
    const list = await s.run(["executions", "list", "--json"])
    expect(parseJsonOutput(list)).toEqual([])
  }, 60_000)

  test("show of an unknown id exits 1 with one line", async () => {
    const s = scratch()
    expect((await s.run(["migrate"])).code).toBe(0)
    const r = await s.run(["executions", "show", "01900000-0000-7000-8000-000000000000", "--json"])
    expect(r.code).toBe(1)
    expect(r.stdout).toBe("")
    expect(r.stderr.trimEnd().split("\n")).toEqual([expect.stringMatching(/^roster: no execution /)])
  }, 60_000)
})

describe("exit codes", () => {
  const scratch = useScratch({ apps: demoApps })

  test("--help exits 0 and lists the subcommands", async () => {
    const s = scratch()
    for (const args of [["--help"], ["worker", "--help"], ["executions", "--help"]]) {
      const r = await s.run(args)
      expect(r.code, args.join(" ")).toBe(0)
      expect(r.stdout).toContain("USAGE")
    }
    const top = await s.run(["--help"])
    for (const sub of ["worker", "enqueue", "executions"]) expect(top.stdout).toContain(sub)
  }, 60_000)

  test("an unknown subcommand or flag, or a bad flag value, exits 2", async () => {
    const s = scratch()
    for (const args of [
      ["no-such-command"],
      ["executions", "no-such-command"],
      ["executions", "count", "--no-such-flag"],
      ["executions", "list", "--state", "sleeping"],
      ["executions", "signal", "01900000-0000-7000-8000-000000000000", "go", "--payload", "not json"],
      ["executions", "signal", "01900000-0000-7000-8000-000000000000"],
      ["worker", "--concurrency", "many"]
    ]) {
      const r = await s.run(args)
      expect(r.code, `${args.join(" ")}\n${r.stderr}`).toBe(2)
    }
    // Usage errors touch no database.
    expect(await Bun.file(s.db).exists()).toBe(false)
  }, 60_000)
})
