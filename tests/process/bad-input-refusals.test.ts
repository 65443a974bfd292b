/**
 * Input that must be refused (issue 13), with real `roster` processes on a real SQLite
 * file: times outside 1970–9999, a bulk enqueue with one bad line (all or nothing),
 * ids in the reserved `roster` app, payloads nested deeper than 64 levels. Each is one
 * line on stderr and exit 1 (exit 2 for text that is not JSON) with nothing written;
 * and what an older version or a hand edit may already have stored — a time no Date
 * holds, a payload nested 20,000 deep, megabyte values and log lines — renders in
 * every CLI command and dashboard page, bounded, with the command that prints it
 * whole. Work acknowledged before the bad input runs afterwards.
 */
import { afterAll, describe, expect, test } from "bun:test"
import { mkdirSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { startDashboard } from "../dashboard/DashboardProcess.ts"
import { acknowledge, expectAllRan, expectRefused } from "../support/badInput.ts"
import { demoApps, ndjson, parseJsonOutput, repoRoot, tail, useScratch, waitFor, type Scratch } from "../support/processes.ts"
import { rowidOf } from "../../src/store/sqlite/ExecutionRowid.ts"

const refusalApps = join(repoRoot, "tests/fixtures/refusal-apps")

/** A value nested `levels` arrays deep: `[[[…1…]]]`. */
const nested = (levels: number): unknown => {
  let v: unknown = 1
  for (let i = 0; i < levels; i++) v = [v]
  return v
}

/** Inserts a copy of an enqueued row with another id and overrides, as an older version or a hand edit might leave it. */
const insertCopy = (s: Scratch, of: string, set: { readonly payload?: string; readonly runAt?: number; readonly createdAt?: number }): string => {
  const id = Bun.randomUUIDv7()
  s.sqlite().query(
    // The rowid made from the id, as Roster stores every row (src/store/sqlite/ExecutionRowid.ts).
    `INSERT INTO roster_executions (seq, id, job, queue, state, payload, priority, attempt, max_attempts, retry, timeout_ms, run_at, created_at)
     SELECT ?1, ?2, job, queue, state, coalesce(?3, payload), priority, attempt, max_attempts, retry, timeout_ms, coalesce(?4, run_at), coalesce(?5, created_at)
       FROM roster_executions WHERE id = ?6`
  ).run(rowidOf(id), id, set.payload ?? null, set.runAt ?? null, set.createdAt ?? null, of)
  return id
}

const farFuture = 9_000_000_000_000_000

describe("times outside 1970-01-01 to 9999-12-31 are refused at every entry", () => {
  const scratch = useScratch({ apps: demoApps })

  test("--delay-ms past 9999, negative, --priority past 32 bits, a key over 512 characters: one line, exit 1, nothing written", async () => {
    const s = scratch()
    const acknowledged = await acknowledge(s, 2)
    const one = ["enqueue", "demo/noop", "--payload", '{"n":1}']
    expectRefused(await s.run([...one, "--delay-ms", String(farFuture)]), /delay of 9000000000000000 ms for demo\/noop ends after 9999-12-31T23:59:59\.999Z/)
    expectRefused(await s.run([...one, "--delay-ms", "-1", "--json"]), /delay for demo\/noop must be a whole number of milliseconds >= 0, got -1/)
    expectRefused(await s.run([...one, "--priority", "3000000000"]), /priority for demo\/noop must be a whole number from -2147483648 to 2147483647/)
    expectRefused(await s.run(["enqueue", "demo/noop", "--ndjson", "-", "--delay-ms", String(farFuture)], { stdin: ndjson([{ n: 1 }, { n: 2 }]) }), /^roster: line 1: delay of/)
    // (job, key) is a unique index; PostgreSQL's B-tree refuses entries over 2,704 bytes.
    expectRefused(await s.run([...one, "--idempotency-key", "k".repeat(513)]), /idempotency key for demo\/noop is 513 characters, over the 512-character limit/)
    expect(s.count("SELECT COUNT(*) FROM roster_executions")).toBe(2)
    const keyed = await s.run([...one, "--idempotency-key", "k".repeat(512), "--json"])
    expect(keyed.code, keyed.stderr).toBe(0)
    await expectAllRan(s, [...acknowledged, parseJsonOutput(keyed).id])
  }, 60_000)

  test("a studio schedule whose next fire would pass 9999, whose id is over 200 characters or whose payload nests too deep is refused", async () => {
    const s = scratch()
    const create = ["schedules", "create", "--id", "demo/far", "--job", "demo/noop", "--payload", '{"n":1}']
    expectRefused(await s.run([...create, "--every-ms", String(farFuture)]), /schedule "demo\/far": --every-ms must be at most 100 years/)
    const longId = `demo/${"a".repeat(196)}`
    expectRefused(await s.run([...create.slice(0, 2), "--id", longId, ...create.slice(4), "--every-ms", "60000"]), /id must be at most 200 characters, got 201/)
    expectRefused(await s.run([...create.slice(0, 6), "--payload", JSON.stringify({ n: 1, x: nested(100) }), "--every-ms", "60000"]), /schedule "demo\/far": payload for demo\/noop nests deeper than 64 levels/)
    expect(s.count("SELECT COUNT(*) FROM roster_schedules WHERE source = 'studio'")).toBe(0)
  }, 60_000)

  test("a stored time no Date can hold renders in executions list|show|logs|count, schedules list|show and every dashboard page", async () => {
    const s = scratch()
    const [template] = await acknowledge(s, 1)
    const far = insertCopy(s, template!, { runAt: farFuture, createdAt: farFuture })
    const created = await s.run(["schedules", "create", "--id", "demo/later", "--job", "demo/noop", "--every-ms", "60000", "--payload", '{"n":1}'])
    expect(created.code, created.stderr).toBe(0)
    s.sqlite().run(`UPDATE roster_schedules SET next_due_at = ${farFuture}, last_due_at = ${-farFuture} WHERE id = 'demo/later'`)

    const list = await s.run(["executions", "list", "--json"])
    expect(list.code, list.stderr).toBe(0)
    expect(parseJsonOutput<Array<{ id: string; runAt: string }>>(list).find((e) => e.id === far)).toMatchObject({ runAt: "out-of-range time 9000000000000000" })
    // Reads only: side by side.
    await Promise.all([["executions", "list"], ["executions", "show", far], ["executions", "show", far, "--json"], ["executions", "logs", far], ["schedules", "list"], ["schedules", "list", "--json"], ["schedules", "show", "demo/later"], ["schedules", "show", "demo/later", "--json"]].map(async (args) => {
      const r = await s.run(args)
      expect(r.code, `${args.join(" ")}: ${r.stderr}`).toBe(0)
      expect(r.stderr).toBe("")
    }))
    expect(parseJsonOutput(await s.run(["schedules", "show", "demo/later", "--json"]))).toMatchObject({ nextDueAt: "out-of-range time 9000000000000000", lastDueAt: "out-of-range time -9000000000000000" })

    const { url } = await startDashboard(s)
    for (const path of ["/", "/executions", `/executions/${far}`, "/schedules", "/schedules/demo/later", "/schedules/demo/later?before=1.5", `/schedules/demo/later?before=${farFuture}`]) {
      const r = await fetch(url + path)
      expect(r.status, path).toBe(200)
    }
    expect(await (await fetch(`${url}/executions/${far}`)).text()).toContain("out-of-range time 9000000000000000")

    // A --since reaching before 1970 or past 9999 is held to the range, not handed to the store as it is.
    for (const since of ["99999999999999999999d", "+100000-01-01T00:00:00Z"]) {
      const r = await s.run(["executions", "count", "--since", since, "--json"])
      expect(r.code, r.stderr).toBe(0)
    }
    expect(parseJsonOutput(await s.run(["executions", "count", "--since", "99999999999999999999d", "--json"])).queued).toBe(2)

    // The acknowledged one runs; the hand-made one is never due.
    await expectAllRan(s, [template!])
  }, 90_000)
})

describe("bulk enqueue is all or nothing", () => {
  const scratch = useScratch({ apps: demoApps })

  test("a bulk of 25,001 lines whose last is bad writes none of them and names that line", async () => {
    const s = scratch()
    const acknowledged = await acknowledge(s, 3)
    const good = Array.from({ length: 25_000 }, (_, n) => ({ n }))
    // Past the 10,000 rows a bulk used to commit at a time; the blank line still counts.
    const badPayload = ndjson(good) + "\n" + JSON.stringify({ n: "x" }) + "\n"
    expectRefused(await s.run(["enqueue", "demo/noop", "--ndjson", "-", "--json"], { stdin: badPayload }), /^roster: line 25002: invalid payload for demo\/noop: .*\(nothing was enqueued\)$/)
    expect(s.count("SELECT COUNT(*) FROM roster_executions")).toBe(3)

    const notJson = await s.run(["enqueue", "demo/noop", "--ndjson", "-"], { stdin: ndjson(good) + "{\"n\":\n" })
    expect(notJson.code).toBe(2)
    expect(notJson.stderr.trimEnd().split("\n")).toEqual(["roster: line 25001 is not valid JSON: JSON Parse error: Unexpected EOF"])
    expect(s.count("SELECT COUNT(*) FROM roster_executions")).toBe(3)

    const tooDeep = await s.run(["enqueue", "demo/noop", "--ndjson", "-"], { stdin: ndjson([...good.slice(0, 5), { n: 1, x: nested(100) }]) })
    expectRefused(tooDeep, /^roster: line 6: payload for demo\/noop nests deeper than 64 levels/)
    expect(s.count("SELECT COUNT(*) FROM roster_executions")).toBe(3)

    // The same bulk without the bad line is taken whole.
    const ok = await s.run(["enqueue", "demo/noop", "--ndjson", "-", "--json"], { stdin: ndjson(good) })
    expect(ok.code, ok.stderr).toBe(0)
    expect(parseJsonOutput(ok)).toEqual({ inserted: 25_000, existing: 0 })
    s.sqlite().run("DELETE FROM roster_executions WHERE id NOT IN (" + acknowledged.map((id) => `'${id}'`).join(",") + ")")
    await expectAllRan(s, acknowledged)
  }, 120_000)
})

describe("the roster app is reserved", () => {
  const scratch = useScratch({ apps: demoApps })
  const root = join(repoRoot, "tests/.tmp", `bad-input-refusals-${process.pid}`)
  afterAll(() => rmSync(root, { recursive: true, force: true }))

  test("schedules create refuses any roster/ id and writes nothing; the scheduler schedules pruning", async () => {
    const s = scratch()
    const acknowledged = await acknowledge(s, 1)
    for (const id of ["roster/prune", "roster/anything"]) {
      expectRefused(
        await s.run(["schedules", "create", "--id", id, "--job", "demo/noop", "--every-ms", "60000", "--payload", '{"n":1}']),
        new RegExp(`schedule "${id}": the app "roster" is reserved for Roster's own Jobs and Schedules`)
      )
    }
    expect(s.count("SELECT COUNT(*) FROM roster_schedules")).toBe(0)
    await expectAllRan(s, acknowledged)
    const scheduler = s.spawn(["scheduler"])
    await waitFor("the scheduler to start", () => /scheduler \S+ started/.test(scheduler.stderrSoFar()))
    scheduler.kill("SIGTERM")
    expect((await scheduler.wait()).code).toBe(0)
    expect(s.all("SELECT id, source FROM roster_schedules WHERE source <> 'file'")).toEqual([{ id: "roster/prune", source: "system" }])
  }, 60_000)

  test("a studio roster/prune left by an older version: every scheduler starts and warns; deleted, pruning is scheduled again", async () => {
    const s = scratch()
    const created = await s.run(["schedules", "create", "--id", "demo/squat", "--job", "demo/noop", "--every-ms", "60000", "--payload", '{"n":1}'])
    expect(created.code, created.stderr).toBe(0)
    s.sqlite().run("UPDATE roster_schedules SET id = 'roster/prune' WHERE id = 'demo/squat'")
    for (let i = 0; i < 2; i++) {
      const scheduler = s.spawn(["scheduler"])
      await waitFor("the scheduler to start", () => /scheduler \S+ started/.test(scheduler.stderrSoFar()) || scheduler.exited)
      scheduler.kill("SIGTERM")
      const r = await scheduler.wait()
      expect(r.code, tail(r.stderr)).toBe(0)
      expect(r.stderr).toContain("roster schedules delete roster/prune")
    }
    const deleted = await s.run(["schedules", "delete", "roster/prune"])
    expect(deleted.code, deleted.stderr).toBe(0)
    const scheduler = s.spawn(["scheduler"])
    await waitFor("the scheduler to start", () => /scheduler \S+ started/.test(scheduler.stderrSoFar()))
    scheduler.kill("SIGTERM")
    expect((await scheduler.wait()).code).toBe(0)
    expect(s.all("SELECT id, source FROM roster_schedules WHERE source <> 'file'")).toEqual([{ id: "roster/prune", source: "system" }])
  }, 60_000)

  test("a Job or services.ts of app roster in the apps folder: check, worker and enqueue refuse to start, naming the file", async () => {
    const s = scratch()
    const apps = join(root, "apps")
    mkdirSync(join(apps, "roster"), { recursive: true })
    const file = join(apps, "roster", "jobs.ts")
    writeFileSync(file, `import { Effect, Schema } from "effect"
import { Job } from ${JSON.stringify(join(repoRoot, "src/index.ts"))}
export const prune = Job.make({ id: "roster/cleanup", payload: Schema.Struct({}), handler: () => Effect.void })
`)
    const env = { ROSTER_APPS_DIR: apps }
    await Promise.all([["check"], ["worker", "--exit-when-idle"], ["enqueue", "roster/cleanup", "--payload", "{}"]].map(async (args) => {
      const r = await s.run(args, { env })
      expectRefused(r, /Job "roster\/cleanup": the app "roster" is reserved/, { logs: true })
      expect(r.stderr).toContain(file)
    }))
    // Services for app roster would replace Roster's own (its prune Job's Store).
    rmSync(file)
    const services = join(apps, "roster", "services.ts")
    writeFileSync(services, `import { Layer } from "effect"
export default Layer.empty
`)
    const r = await s.run(["check"], { env })
    expectRefused(r, /the app "roster" is reserved/)
    expect(r.stderr).toContain(services)
    expect(s.count("SELECT COUNT(*) FROM sqlite_master WHERE name = 'roster_executions'")).toBe(0)
  }, 60_000)
})

describe("nesting is bounded at enqueue, and what any page renders is bounded", () => {
  const scratch = useScratch({ apps: refusalApps })

  test("a 40 KB payload nested 20,000 deep is refused; 64 levels are accepted", async () => {
    const s = scratch()
    const acknowledged = await acknowledge(s, 1, { job: "any/json", payload: (n) => ({ data: n }) })
    const deep = JSON.stringify({ data: nested(20_000) })
    expect(deep.length).toBeGreaterThan(40_000)
    const file = join(s.dir, "deep.ndjson")
    writeFileSync(file, deep + "\n")
    expectRefused(await s.run(["enqueue", "any/json", "--ndjson", file]), /^roster: line 1: payload for any\/json nests deeper than 64 levels of arrays and objects/)
    expectRefused(await s.run(["enqueue", "any/json", "--payload", JSON.stringify({ data: nested(64) })]), /nests deeper than 64 levels/)
    expect(s.count("SELECT COUNT(*) FROM roster_executions")).toBe(1)
    const ok = await s.run(["enqueue", "any/json", "--payload", JSON.stringify({ data: nested(63) }), "--json"])
    expect(ok.code, ok.stderr).toBe(0)
    await expectAllRan(s, [...acknowledged, parseJsonOutput(ok).id])
  }, 60_000)

  test("stored deep and huge values: pages stay small with the command that prints them whole, which does", async () => {
    const s = scratch()
    const [template] = await acknowledge(s, 1, { job: "any/json", payload: (n) => ({ data: n }) })
    const deepText = JSON.stringify({ data: nested(20_000) })
    const deep = insertCopy(s, template!, { payload: deepText })
    const bigFile = join(s.dir, "big.ndjson")
    writeFileSync(bigFile, JSON.stringify({ data: "x".repeat(900_000), logChars: 50_000 }) + "\n")
    expect((await s.run(["enqueue", "any/json", "--ndjson", bigFile])).code).toBe(0)
    const big = s.all<{ id: string }>("SELECT id FROM roster_executions WHERE length(payload) > 800000")[0]!.id
    const worker = await s.run(["worker", "--exit-when-idle"], { timeoutMs: 60_000 })
    expect(worker.code, tail(worker.stderr)).toBe(0)
    // Stored before the bound, the deep one still runs; its result is as deep.
    expect(s.all("SELECT state, length(result) AS bytes FROM roster_executions WHERE id = ?", deep)).toEqual([{ state: "succeeded", bytes: 40_001 }])
    expect(s.all("SELECT state FROM roster_executions WHERE id = ?", big)).toEqual([{ state: "succeeded" }])

    const { url } = await startDashboard(s)
    const deepPage = await fetch(`${url}/executions/${deep}`)
    expect(deepPage.status).toBe(200)
    const deepHtml = await deepPage.text()
    expect(deepHtml.length).toBeLessThan(300_000)
    const bigPage = await fetch(`${url}/executions/${big}`)
    expect(bigPage.status).toBe(200)
    const bigHtml = await bigPage.text()
    // Payload and result are each cut at 64 KiB, the log line at 2,000 characters.
    expect(bigHtml.length).toBeLessThan(300_000)
    expect(bigHtml).toContain(`roster executions show ${big} --json</code> prints the whole value`)
    expect(bigHtml).toContain(`roster executions logs ${big}</code> prints the whole value`)
    // The whole value is also one click away, as a JSON document a browser shows as text.
    expect(bigHtml).toContain(`<a href="/executions/${big}/payload.json">the whole value as JSON</a>`)
    for (const [id, which, expected] of [[big, "payload", { data: "x".repeat(900_000), logChars: 50_000 }], [big, "result", "x".repeat(900_000)], [deep, "payload", JSON.parse(deepText)]] as const) {
      const r = await fetch(`${url}/executions/${id}/${which}.json`)
      expect(r.status).toBe(200)
      expect(r.headers.get("content-type")).toBe("application/json; charset=utf-8")
      expect(r.headers.get("x-content-type-options")).toBe("nosniff")
      expect(JSON.stringify(JSON.parse(await r.text()))).toBe(JSON.stringify(expected))
    }
    expect((await fetch(`${url}/executions/nope/result.json`)).status).toBe(404)

    // 500 attempts and 500 steps of 20,000 characters each (20 MB): the first and last 100 of each, cut at 2,000.
    const db = s.sqlite()
    const long = "c".repeat(20_000)
    db.transaction(() => {
      for (let i = 1; i <= 500; i++) {
        db.query("INSERT INTO roster_attempts (execution_id, attempt, worker, started_at, finished_at, outcome, error) VALUES (?, ?, 'w', 1, 2, 'failed', ?)")
          .run(template!, i + 10, JSON.stringify({ tag: "Boom", message: long, retryable: true, pretty: long }))
        db.query("INSERT INTO roster_steps (execution_id, name, output, attempt, created_at) VALUES (?, ?, ?, 1, 1)").run(template!, `step-${i}`, JSON.stringify(long))
      }
    })()
    const listsPage = await fetch(`${url}/executions/${template}`)
    expect(listsPage.status).toBe(200)
    const listsHtml = await listsPage.text()
    expect(listsHtml.length).toBeLessThan(1_500_000)
    // 501 attempts: the 500 written here and the execution's own success.
    expect(/… 301 more attempts; <code>roster executions show \S+ --json<\/code> prints them all/.test(listsHtml)).toBe(true)
    expect(listsHtml.includes("… 300 more steps;")).toBe(true)

    const shownDeep = await s.run(["executions", "show", deep, "--json"])
    expect(shownDeep.code, shownDeep.stderr).toBe(0)
    expect(shownDeep.stdout.length).toBeLessThan(200_000)
    expect(JSON.stringify(parseJsonOutput(shownDeep).payload)).toBe(JSON.stringify(JSON.parse(deepText)))
    const shownBig = parseJsonOutput(await s.run(["executions", "show", big, "--json"]))
    expect(shownBig.payload.data.length).toBe(900_000)
    expect(shownBig.result.length).toBe(900_000)
    expect(shownBig.logs[0].message.length).toBe(50_000)
  }, 120_000)
})
