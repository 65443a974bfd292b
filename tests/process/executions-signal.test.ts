/**
 * `roster executions signal|show|list --parent|--state waiting` as real processes
 * (DESIGN §7, orchestration) against a `roster worker` running in the background on a
 * real SQLite file: a waiting execution's `show` gives its wait, a signal resumes it
 * (`executions wait` then exits 0), a signal sent before the wait is kept, refusals
 * (ended, unknown id) are one line and exit 1, a payload that is not JSON is a usage
 * error (exit 2, no database touched); a parent's children are listed by `--parent`,
 * shown (capped at 20, counted by state) by `show`, and each child names its parent.
 * The apps: tests/fixtures/signal-apps (sig/approval waits for "approve", sig/parent
 * enqueues approvals and awaits them). The main path runs on PostgreSQL too when
 * ROSTER_TEST_PG_URL is set (a fresh schema).
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test"
import { existsSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { freshSchema, pgAdmin, urlWithSchema } from "../store/drivers.ts"
import { pgUrl, requireService } from "../support/env.ts"
import { parseJsonOutput, repoRoot, type RosterProcess, type Scratch, spawnRoster, tail, useScratch, waitFor } from "../support/processes.ts"

const signalApps = join(repoRoot, "tests/fixtures/signal-apps")
const isoTime = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
const unknownId = "01900000-0000-7000-8000-000000000000"

const enqueue = async (s: Scratch, job: string, payload: unknown, ...flags: Array<string>) => {
  const r = await s.run(["enqueue", job, "--payload", JSON.stringify(payload), "--json", ...flags])
  expect(r.code, tail(r.stderr)).toBe(0)
  return parseJsonOutput<{ id: string }>(r).id
}

const startWorker = (s: Scratch) => s.spawn(["worker"], { env: { ROSTER_POLL_MS: "200" } })

const stateOf = (s: Scratch, id: string) => s.all<{ state: string }>("SELECT state FROM roster_executions WHERE id = ?", id)[0]?.state

/** Stderr as lines, for "one line" checks. */
const lines = (text: string) => text.trimEnd().split("\n").filter((l) => l.length > 0)

describe("roster executions signal", () => {
  const scratch = useScratch({ apps: signalApps })

  test("show gives the wait; a signal resumes it and wait exits 0; an ended or unknown execution is refused with one line", async () => {
    const s = scratch()
    const id = await enqueue(s, "sig/approval", { n: 1 })
    const worker = startWorker(s)
    await waitFor("the approval to wait", () => stateOf(s, id) === "waiting", { timeoutMs: 60_000 })
      .catch((e) => { throw new Error(`${e}\n${tail(worker.stderrSoFar())}`) })

    const shown = await s.run(["executions", "show", id])
    expect(shown.code, shown.stderr).toBe(0)
    const head = shown.stdout.split("\n")
    expect(head[0]).toBe(`${id}  sig/approval  waiting  attempt 0/3  queue default`)
    expect(head[1]).toMatch(/^waiting for: signal "approve" until \d{4}-\d\d-\d\dT[\d:.]+Z$/)
    const detail = parseJsonOutput<Record<string, any>>(await s.run(["executions", "show", id, "--json"]))
    expect(detail).toMatchObject({ id, state: "waiting", parentId: null, parentStep: null, children: [], signals: [] })
    expect(detail.wait).toMatchObject({ kind: "signal", signal: "approve", step: "approve", text: expect.stringMatching(/^signal "approve" until /) })
    expect(detail.wait.until).toMatch(isoTime)
    expect(detail.wait.dueAt).toBe(detail.wait.until)
    // About an hour from now (the wait's timeout).
    expect(Date.parse(detail.wait.until) - Date.now()).toBeGreaterThan(50 * 60_000)
    expect(Object.values(detail.childCounts as Record<string, number>).every((n) => n === 0)).toBe(true)

    const sent = await s.run(["executions", "signal", id, "approve", "--payload", '{"by":"ann"}'])
    expect(sent.code, sent.stderr).toBe(0)
    expect(sent.stdout).toBe(`sent signal approve to ${id} (it was waiting: resumed)\n`)
    const waited = await s.run(["executions", "wait", id, "--timeout", "30s", "--json"])
    expect(waited.code, tail(waited.stderr)).toBe(0)
    const ended = parseJsonOutput<Record<string, any>>(waited)
    expect(ended).toMatchObject({ state: "succeeded", result: { n: 1, approvedBy: "ann" }, wait: null })
    expect(ended.signals).toEqual([{ seq: expect.any(Number), name: "approve", payload: { by: "ann" }, sentAt: expect.stringMatching(isoTime), consumedAt: expect.stringMatching(isoTime), taken: true }])
    const after = await s.run(["executions", "show", id])
    expect(after.stdout).toMatch(/\n {2}signal approve sent \S+: taken \S+ {2}payload \{"by":"ann"\}\n/)

    // A second signal: the execution has ended.
    const again = await s.run(["executions", "signal", id, "approve", "--payload", '{"by":"bob"}'])
    expect(again.code).toBe(1)
    expect(again.stdout).toBe("")
    expect(lines(again.stderr)).toEqual([`roster: execution ${id} has ended (succeeded); signal "approve" was not sent`])
    const againJson = await s.run(["executions", "signal", id, "approve", "--json"])
    expect(againJson.code).toBe(1)
    expect(parseJsonOutput(againJson)).toEqual({ id, name: "approve", ok: false, error: `execution ${id} has ended (succeeded); signal "approve" was not sent` })
    expect(lines(againJson.stderr)).toHaveLength(1)

    // An unknown execution.
    const unknown = await s.run(["executions", "signal", unknownId, "approve", "--payload", "{}"])
    expect(unknown.code).toBe(1)
    expect(unknown.stdout).toBe("")
    expect(lines(unknown.stderr)).toEqual([`roster: no execution ${unknownId}`])
    // A bad name is refused by the client: one line, exit 1.
    const blank = await s.run(["executions", "signal", id, " "])
    expect(blank.code).toBe(1)
    expect(lines(blank.stderr)).toEqual([expect.stringMatching(/^roster: signal name must be 1 to 200 characters/)])
    // Nothing of the refusals was stored.
    expect(s.count("SELECT COUNT(*) FROM roster_signals WHERE execution_id = ?", id)).toBe(1)
    worker.kill("SIGTERM")
    expect((await worker.wait()).code).toBe(0)
  }, 120_000)

  test("a signal sent before the wait is kept: --json says Kept, show lists it as kept", async () => {
    const s = scratch()
    const id = await enqueue(s, "sig/approval", { n: 2 }, "--delay-ms", "3600000")
    const r = await s.run(["executions", "signal", id, "approve", "--payload", '{"by":"cy"}', "--json"])
    expect(r.code, r.stderr).toBe(0)
    expect(parseJsonOutput(r)).toEqual({ id, name: "approve", ok: true, result: "Kept" })
    const human = await s.run(["executions", "signal", id, "approve", "--payload", '{"by":"dee"}'])
    expect(human.stdout).toBe(`sent signal approve to ${id} (kept for its wait)\n`)
    const shown = await s.run(["executions", "show", id])
    expect(shown.stdout).toContain(`  signal approve sent `)
    expect(shown.stdout.match(/: kept \(no wait has taken it\)/g)).toHaveLength(2)
    const detail = parseJsonOutput<Record<string, any>>(await s.run(["executions", "show", id, "--json"]))
    expect(detail.state).toBe("queued")
    expect(detail.wait).toBeNull()
    expect(detail.signals.map((x: any) => [x.payload.by, x.taken, x.consumedAt])).toEqual([["cy", false, null], ["dee", false, null]])
  }, 60_000)

  test("--payload that is not JSON is a usage error: exit 2, one line, no database opened", async () => {
    const s = scratch()
    const r = await s.run(["executions", "signal", unknownId, "approve", "--payload", "{by: ann}"])
    expect(r.code).toBe(2)
    expect(r.stdout).toBe("")
    expect(lines(r.stderr)).toEqual([expect.stringMatching(/^roster: --payload is not valid JSON: /)])
    expect(existsSync(s.db)).toBe(false)
    // A missing argument is a usage error too.
    expect((await s.run(["executions", "signal", unknownId])).code).toBe(2)
    // On a database that does not exist, any signal is refused without creating it.
    const missing = await s.run(["executions", "signal", unknownId, "approve"])
    expect(missing.code).toBe(1)
    expect(existsSync(s.db)).toBe(false)
  }, 60_000)
})

describe("roster executions list --parent, --state waiting, and show of a parent and its children", () => {
  const scratch = useScratch({ apps: signalApps })

  test("children listed, counted and shown (capped at 20); signalling them all ends the parent", async () => {
    const s = scratch()
    const parent = await enqueue(s, "sig/parent", { count: 22 })
    const other = await enqueue(s, "sig/approval", { n: 100 })
    const worker = startWorker(s)
    await waitFor("the parent and 23 approvals to wait", () => s.count("SELECT COUNT(*) FROM roster_executions WHERE state = 'waiting'") === 24, { timeoutMs: 60_000 })
      .catch((e) => { throw new Error(`${e}\n${tail(worker.stderrSoFar())}`) })

    const children = parseJsonOutput<Array<Record<string, any>>>(await s.run(["executions", "list", "--parent", parent, "--json"]))
    expect(children).toHaveLength(22)
    expect(new Set(children.map((c) => `${c.job} ${c.state}`))).toEqual(new Set(["sig/approval waiting"]))
    expect(children.map((c) => c.id)).not.toContain(other)
    const limited = parseJsonOutput<Array<{ id: string }>>(await s.run(["executions", "list", "--parent", parent, "--limit", "3", "--json"]))
    expect(limited.map((c) => c.id)).toEqual(children.slice(0, 3).map((c) => c.id))
    const waiting = parseJsonOutput<Array<{ id: string }>>(await s.run(["executions", "list", "--state", "waiting", "--limit", "100", "--json"]))
    expect(waiting.map((e) => e.id).sort()).toEqual([parent, other, ...children.map((c) => c.id)].sort())
    expect(parseJsonOutput(await s.run(["executions", "count", "--parent", parent, "--json"]))).toMatchObject({ waiting: 22, queued: 0, succeeded: 0 })
    expect(parseJsonOutput(await s.run(["executions", "list", "--parent", unknownId, "--json"]))).toEqual([])
    const table = await s.run(["executions", "list", "--state", "waiting"])
    expect(lines(table.stdout).slice(1).every((l) => /\s+waiting\s+0\/3\s+/.test(l))).toBe(true)

    const detail = parseJsonOutput<Record<string, any>>(await s.run(["executions", "show", parent, "--json"]))
    expect(detail).toMatchObject({ state: "waiting", parentId: null, wait: { kind: "children", step: "all", text: '22 children to end (step "all")', dueAt: null } })
    expect(detail.wait.ids).toHaveLength(22)
    expect(detail.children).toHaveLength(20)
    expect(detail.children).toEqual(children.slice(0, 20).map((c) => ({ id: c.id, job: "sig/approval", state: "waiting" })))
    expect(detail.childCounts).toEqual({ queued: 0, running: 0, waiting: 22, succeeded: 0, failed: 0, cancelled: 0 })
    const human = await s.run(["executions", "show", parent])
    expect(human.stdout).toContain(`waiting for: 22 children to end (step "all")\n`)
    expect(human.stdout).toContain("children: 22 (22 waiting), newest 20 listed\n")
    expect(human.stdout.match(/^ {2}child \S+ {2}sig\/approval {2}waiting {2}step child-\d+$/gm)).toHaveLength(20)
    expect(human.stdout).toContain(`  and 2 more: roster executions list --parent ${parent}\n`)

    const first = children[children.length - 1]!.id
    const child = parseJsonOutput<Record<string, any>>(await s.run(["executions", "show", first, "--json"]))
    expect(child).toMatchObject({ parentId: parent, parentStep: "child-0", children: [] })
    expect((await s.run(["executions", "show", first])).stdout.split("\n")[1]).toBe(`parent: ${parent} (step "child-0")`)

    // Approve every child (eleven CLI processes at a time); the parent resumes and ends.
    const ids = [...children.map((c) => c.id)].reverse()
    for (let i = 0; i < ids.length; i += 11) {
      await Promise.all(ids.slice(i, i + 11).map(async (c, j) => {
        const r = await s.run(["executions", "signal", c, "approve", "--payload", JSON.stringify({ by: `u${i + j}` })])
        expect(r.code, r.stderr).toBe(0)
      }))
    }
    const waited = await s.run(["executions", "wait", parent, "--timeout", "60s", "--json"])
    expect(waited.code, tail(waited.stderr)).toBe(0)
    const ended = parseJsonOutput<Record<string, any>>(waited)
    expect(ended.result).toEqual(ids.map((_, i) => `u${i}`))
    expect(ended.childCounts).toMatchObject({ succeeded: 22, waiting: 0 })
    expect(stateOf(s, other)).toBe("waiting")
    const shownAfter = await s.run(["executions", "show", parent])
    expect(shownAfter.stdout).toContain("children: 22 (22 succeeded), newest 20 listed\n")
    expect(shownAfter.stdout).not.toContain("waiting for:")
  }, 180_000)
})

const pg = requireService("postgres")

describe.skipIf(pg.skip)("roster executions signal, show and list --parent on PostgreSQL", () => {
  let dir: string
  let db: string
  const started: Array<RosterProcess> = []
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), "roster-signal-"))
    const schema = freshSchema("roster_sig")
    await pgAdmin(pgUrl()!, `CREATE SCHEMA "${schema}"`)
    db = urlWithSchema(pgUrl()!, schema)
  })
  afterEach(async () => {
    await Promise.all(started.splice(0).map(async (p) => {
      p.kill("SIGKILL")
      await p.wait(10_000).catch(() => undefined)
    }))
    const schema = /search_path%3D(\w+)/.exec(db)?.[1]
    if (schema) await pgAdmin(pgUrl()!, `DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
    rmSync(dir, { recursive: true, force: true })
  })
  const spawn = (args: ReadonlyArray<string>, env: Record<string, string> = {}) => {
    const p = spawnRoster(args, { cwd: dir, env: { ROSTER_DB: db, ROSTER_APPS_DIR: signalApps, ...env } })
    started.push(p)
    return p
  }
  const run = (args: ReadonlyArray<string>) => spawn(args).wait()
  const json = async <A = any>(args: ReadonlyArray<string>): Promise<A> => {
    const r = await run(args)
    expect(r.code, tail(r.stderr)).toBe(0)
    return parseJsonOutput<A>(r)
  }

  test("a parent's children listed and shown; a signal resumes a child; an ended one is refused", async () => {
    const parent = (await json<{ id: string }>(["enqueue", "sig/parent", "--payload", '{"count":3}', "--json"])).id
    const worker = spawn(["worker"], { ROSTER_POLL_MS: "200" })
    await waitFor("the parent and its 3 children to wait", async () => (await json<Array<unknown>>(["executions", "list", "--state", "waiting", "--json"])).length === 4, { timeoutMs: 60_000, intervalMs: 200 })
      .catch((e) => { throw new Error(`${e}\n${tail(worker.stderrSoFar())}`) })
    const children = await json<Array<{ id: string; state: string }>>(["executions", "list", "--parent", parent, "--json"])
    expect(children.map((c) => c.state)).toEqual(["waiting", "waiting", "waiting"])
    const detail = await json(["executions", "show", parent, "--json"])
    expect(detail).toMatchObject({ state: "waiting", wait: { kind: "children", text: '3 children to end (step "all")', dueAt: null }, childCounts: { waiting: 3 } })
    expect(detail.children.map((c: { id: string }) => c.id)).toEqual(children.map((c) => c.id))
    const child = await json(["executions", "show", children[2]!.id, "--json"])
    expect(child).toMatchObject({ parentId: parent, parentStep: "child-0", wait: { kind: "signal", signal: "approve" } })

    for (const [i, c] of children.entries()) {
      const r = await run(["executions", "signal", c.id, "approve", "--payload", JSON.stringify({ by: `u${i}` })])
      expect(r.code, r.stderr).toBe(0)
      expect(r.stdout).toBe(`sent signal approve to ${c.id} (it was waiting: resumed)\n`)
    }
    const waited = await run(["executions", "wait", parent, "--timeout", "60s", "--json"])
    expect(waited.code, tail(waited.stderr)).toBe(0)
    expect(parseJsonOutput(waited)).toMatchObject({ state: "succeeded", result: ["u2", "u1", "u0"], childCounts: { succeeded: 3 } })
    const again = await run(["executions", "signal", children[0]!.id, "approve"])
    expect(again.code).toBe(1)
    expect(lines(again.stderr)).toEqual([`roster: execution ${children[0]!.id} has ended (succeeded); signal "approve" was not sent`])
    const unknown = await run(["executions", "signal", unknownId, "approve"])
    expect(unknown.code).toBe(1)
    expect(lines(unknown.stderr)).toEqual([`roster: no execution ${unknownId}`])
  }, 180_000)
})
