/**
 * The dashboard's pages in-process: requests go straight to the server's handler over
 * a real SQLite store, so paging, the overview's attention lists, escaping of query
 * input, the cap on huge logs and the error pages are checked without a browser.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { Effect, ManagedRuntime } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as RetryPolicy from "../../src/jobs/RetryPolicy.ts"
import { handle } from "../../src/dashboard/Server.ts"
import * as Roster from "../../src/runtime/Roster.ts"
import { Store, type InsertRequest } from "../../src/store/Store.ts"
import { fail, ok } from "./fixtures/apps/web/jobs.ts"

const dir = mkdtempSync(join(tmpdir(), "roster-dashboard-"))
const runtime = ManagedRuntime.make(Roster.layer({ db: join(dir, "roster.db"), jobs: [fail, ok] }))
const base = "http://127.0.0.1:7460"

const get = async (path: string, init: RequestInit = {}) => {
  const response = await runtime.runPromise(handle(new Request(base + path, { ...init, headers: { host: "127.0.0.1:7460", ...init.headers } }), undefined))
  return { status: response.status, body: await response.text(), headers: response.headers }
}

let seq = 0
const row = (over: Partial<InsertRequest> = {}): InsertRequest => {
  seq++
  const now = Date.now() - 60_000 + seq
  return {
    id: Bun.randomUUIDv7("hex", now),
    job: "web/ok",
    queue: "default",
    payload: JSON.stringify({ n: seq }),
    priority: 0,
    retry: RetryPolicy.fixed({ attempts: 1, delay: 1000 }).snapshot,
    timeoutMs: 60_000,
    runAt: now,
    now,
    idempotencyKey: null,
    ...over
  }
}

const store = <A, E>(f: (s: Store["Service"]) => Effect.Effect<A, E>) => runtime.runPromise(Store.use(f))

const rowsOf = (body: string) => (body.match(/<tr>\n<td><a class="mono nowrap" href="\/executions\//g) ?? []).length

beforeAll(async () => {
  await store((s) => s.executionsInsert(Array.from({ length: 120 }, () => row())))
})

afterAll(async () => {
  await runtime.dispose()
  rmSync(dir, { recursive: true, force: true })
})

describe("executions list", () => {
  test("pages by 50, newest first, with an Older link until the end", async () => {
    const first = await get("/executions?job=web/ok")
    expect(first.status).toBe(200)
    expect(rowsOf(first.body)).toBe(50)
    const older = /href="(\/executions\?job=web%2Fok&amp;before=[^"]+)">Older/.exec(first.body)?.[1]?.replace(/&amp;/g, "&")
    expect(older).toBeDefined()
    const second = await get(older!)
    expect(rowsOf(second.body)).toBe(50)
    const third = await get(/href="([^"]+)">Older/.exec(second.body)![1]!.replace(/&amp;/g, "&"))
    expect(rowsOf(third.body)).toBe(20)
    expect(third.body).not.toContain("Older →")
    expect(third.body).toContain("← Newest")
  })

  test("filter values from the URL are escaped wherever they are echoed", async () => {
    const r = await get(`/executions?job=${encodeURIComponent("<b>x</b>\"'")}`)
    expect(r.status).toBe(200)
    expect(r.body).not.toContain("<b>x</b>")
    expect(r.body).toContain("&lt;b&gt;x&lt;/b&gt;&quot;&#39;")
    expect(r.body).toContain("No executions match these filters.")
    // The parent filter is echoed in the heading, a hidden field and the links.
    const p = await get(`/executions?parent=${encodeURIComponent("<b>x</b>\"'")}`)
    expect(p.status).toBe(200)
    expect(p.body).not.toContain("<b>x</b>")
    expect(p.body).toContain('<input type="hidden" name="parent" value="&lt;b&gt;x&lt;/b&gt;&quot;&#39;">')
    expect(p.body).toContain("No executions match these filters.")
  })
})

describe("overview", () => {
  test("lists stuck executions and queued executions of unknown jobs", async () => {
    await store((s) => s.executionsInsert([row({ job: "gone/job", queue: "legacy" })]))
    const [stuck] = await store((s) => s.executionsInsert([row({ queue: "slow", job: "web/fail", runAt: 0 })]))
    await store((s) => s.executionsClaim({ queue: "slow", jobs: ["web/fail"], workerId: "dead-worker", limit: 1, now: Date.now() - 120_000, leaseMs: 1_000 }))
    const r = await get("/")
    expect(r.status).toBe(200)
    const unknown = r.body.slice(r.body.indexOf("<h2>Unknown jobs</h2>"), r.body.indexOf("<h2>Recent failures</h2>"))
    expect(unknown).toContain("gone/job")
    expect(unknown).toContain(">1<")
    const stuckCard = r.body.slice(r.body.indexOf("<h2>Stuck executions</h2>"), r.body.indexOf("<h2>Unknown jobs</h2>"))
    expect(stuckCard).toContain(`/executions/${stuck!.id}`)
    expect(stuckCard).toContain("dead-worker")
    expect(r.body).toContain("(not declared here)")
  })
})

describe("execution page", () => {
  test("a burst of logs shows its first and last 500 lines and says how many are hidden", async () => {
    const [e] = await store((s) => s.executionsInsert([row()]))
    const lines = Array.from({ length: 1_500 }, (_, i) => ({ executionId: e!.id, attempt: 1, at: Date.now(), level: "Info", message: `line ${i}`, annotations: null }))
    await store((s) => s.logsAppend({ lines, drops: [{ executionId: e!.id, attempt: 1, dropped: 7 }] }))
    const r = await get(`/executions/${e!.id}`)
    expect(r.status).toBe(200)
    expect(r.body).toContain(">line 0<")
    expect(r.body).toContain(">line 499<")
    expect(r.body).not.toContain(">line 500<")
    expect(r.body).toContain(">line 1499<")
    expect(r.body).toContain("500 more lines")
    expect(r.body).toContain("7 line(s) dropped")
  })

  test("unknown ids, routes and methods get 404 and 405 pages", async () => {
    expect((await get("/executions/nope")).status).toBe(404)
    expect((await get("/schedules/app/nope")).status).toBe(404)
    expect((await get("/nowhere")).status).toBe(404)
    expect((await get("/executions", { method: "PUT" })).status).toBe(405)
  })
})
