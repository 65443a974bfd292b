/**
 * Guessing the dashboard token is throttled (src/dashboard/Throttle.ts): per client
 * address, 10 failed token checks — wrong logins or wrong bearer tokens — per minute;
 * then every token check from that address is 429 with Retry-After (the right token
 * too), other addresses and signed-in browsers are unaffected, and the next window
 * allows checks again. In process, through the server's handler, on the TestClock.
 */
import { afterAll, describe, expect, test } from "bun:test"
import { Effect, Layer, ManagedRuntime } from "effect"
import { TestClock } from "effect/testing"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { handle } from "../../src/dashboard/Server.ts"
import * as Throttle from "../../src/dashboard/Throttle.ts"
import * as Roster from "../../src/runtime/Roster.ts"
import { ok } from "./fixtures/apps/web/jobs.ts"

const dir = mkdtempSync(join(tmpdir(), "roster-throttle-"))
const runtime = ManagedRuntime.make(Layer.merge(Roster.layer({ db: join(dir, "roster.db"), jobs: [ok] }), TestClock.layer()))
afterAll(async () => {
  await runtime.dispose()
  rmSync(dir, { recursive: true, force: true })
})

const token = "throttle-test-token-0123456789abcdef"
const base = "http://127.0.0.1:7460"
const throttle = Throttle.make()

const send = async (client: string, path: string, init: RequestInit = {}) => {
  const req = new Request(base + path, { ...init, headers: { host: "127.0.0.1:7460", origin: base, ...init.headers } })
  const response = await runtime.runPromise(handle(req, token, { throttle, client }))
  return { status: response.status, retryAfter: response.headers.get("retry-after"), cookie: response.headers.get("set-cookie") }
}
const bearer = (value: string) => ({ headers: { authorization: `Bearer ${value}` } })
const login = (value: string) => ({ method: "POST", body: new URLSearchParams({ token: value }) })

describe("failed token checks", () => {
  test("10 per minute per address, then 429 with Retry-After until the window ends; others and signed-in browsers unaffected", async () => {
    const signedIn = await send("10.0.0.2", "/login", login(token))
    expect(signedIn.status).toBe(303)
    const cookie = signedIn.cookie!.split(";")[0]!

    for (let i = 0; i < 5; i++) expect((await send("10.0.0.1", "/", bearer(`wrong-${i}`))).status).toBe(401)
    for (let i = 0; i < 5; i++) expect((await send("10.0.0.1", "/login", login(`wrong-${i}`))).status).toBe(401)

    const blocked = await send("10.0.0.1", "/", bearer(token))
    expect(blocked.status).toBe(429)
    expect(Number(blocked.retryAfter)).toBe(60)
    expect((await send("10.0.0.1", "/login", login(token))).status).toBe(429)
    // Another address, and a browser with a session cookie, carry on.
    expect((await send("10.0.0.3", "/", bearer(token))).status).toBe(200)
    expect((await send("10.0.0.1", "/", { headers: { cookie } })).status).toBe(200)
    // A right token does not reset the count; GET /login still shows the form.
    expect((await send("10.0.0.1", "/login")).status).toBe(200)

    await runtime.runPromise(TestClock.adjust("30 seconds"))
    const later = await send("10.0.0.1", "/", bearer(token))
    expect(later.status).toBe(429)
    expect(Number(later.retryAfter)).toBe(30)

    await runtime.runPromise(TestClock.adjust("30 seconds"))
    expect((await send("10.0.0.1", "/", bearer(token))).status).toBe(200)
    expect((await send("10.0.0.1", "/", bearer("wrong-again"))).status).toBe(401)
  })

  test("without a guard (the handler called directly) nothing is throttled", async () => {
    const req = () => new Request(base + "/", { headers: { host: "127.0.0.1:7460", authorization: "Bearer wrong" } })
    for (let i = 0; i < 15; i++) expect((await runtime.runPromise(handle(req(), token))).status).toBe(401)
  })
})

describe("the throttle's memory", () => {
  test("old windows are dropped first once 10,000 addresses are kept", () => {
    const t = Throttle.make({ limit: 1, windowMs: 1_000 })
    for (let i = 0; i < 10_000; i++) t.failed(`a${i}`, 0)
    expect(t.blockedFor("a0", 500)).toBe(500)
    t.failed("late", 2_000) // every earlier window has ended: all dropped
    expect(t.blockedFor("late", 2_000)).toBe(1_000)
    for (let i = 0; i < 10_000; i++) t.failed(`b${i}`, 2_500) // full again, all live: the oldest goes
    expect(t.blockedFor("late", 2_500)).toBe(0)
    expect(t.blockedFor("b9999", 2_500)).toBe(1_000)
  })
})
