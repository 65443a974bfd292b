/**
 * Dashboard sessions (src/dashboard/Sessions.ts): signing in starts a session of this
 * dashboard process, with its own random id and a 7-day expiry; the cookie is refused
 * once the session expired, once it was signed out (the same cookie, copied anywhere),
 * once the token changed, and by another process (a restart). In process, through the
 * server's handler, on the TestClock.
 */
import { afterAll, describe, expect, test } from "bun:test"
import { Layer, ManagedRuntime } from "effect"
import { TestClock } from "effect/testing"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { handle, type Guard } from "../../src/dashboard/Server.ts"
import * as Sessions from "../../src/dashboard/Sessions.ts"
import * as Throttle from "../../src/dashboard/Throttle.ts"
import * as Roster from "../../src/runtime/Roster.ts"
import { ok } from "./fixtures/apps/web/jobs.ts"

const dir = mkdtempSync(join(tmpdir(), "roster-sessions-"))
const runtime = ManagedRuntime.make(Layer.merge(Roster.layer({ db: join(dir, "roster.db"), jobs: [ok] }), TestClock.layer()))
afterAll(async () => {
  await runtime.dispose()
  rmSync(dir, { recursive: true, force: true })
})

const token = "sessions-test-token-0123456789abcdef"
const base = "http://127.0.0.1:7460"

/** One dashboard process: its throttle and its sessions. */
const dashboard = (): Guard => ({ throttle: Throttle.make(), sessions: Sessions.make(), client: "10.0.0.1" })

const send = async (guard: Guard, path: string, init: RequestInit = {}, withToken = token) => {
  const req = new Request(base + path, { ...init, headers: { host: "127.0.0.1:7460", origin: base, accept: "text/html", ...init.headers } })
  return runtime.runPromise(handle(req, withToken, guard))
}
const signIn = async (guard: Guard) => {
  const r = await send(guard, "/login", { method: "POST", body: new URLSearchParams({ token }) })
  expect(r.status).toBe(303)
  const header = r.headers.get("set-cookie")!
  return { header, cookie: header.split(";")[0]! }
}
const withCookie = (cookie: string) => ({ headers: { cookie } })

describe("a session", () => {
  test("lasts 7 days from signing in, then its cookie is refused (the server checks, not only the browser)", async () => {
    const d = dashboard()
    const { header, cookie } = await signIn(d)
    expect(header).toContain(`Max-Age=${7 * 24 * 3600}`)
    expect(header).toContain("HttpOnly")
    expect(header).toContain("SameSite=Strict")
    expect(cookie).not.toContain(token)
    expect((await send(d, "/", withCookie(cookie))).status).toBe(200)
    await runtime.runPromise(TestClock.adjust("6 days"))
    expect((await send(d, "/", withCookie(cookie))).status).toBe(200)
    await runtime.runPromise(TestClock.adjust("1 day"))
    const expired = await send(d, "/", withCookie(cookie))
    expect(expired.status).toBe(401)
    expect(await expired.text()).toContain("Sign in")
    // Signing in again starts a new session.
    expect((await send(d, "/", withCookie((await signIn(d)).cookie))).status).toBe(200)
  })

  test("sign-out ends it: the same cookie, sent again from anywhere, is refused; other sessions carry on", async () => {
    const d = dashboard()
    const mine = await signIn(d)
    const other = await signIn(d)
    expect(mine.cookie).not.toBe(other.cookie)
    const out = await send(d, "/logout", { method: "POST", ...withCookie(mine.cookie) })
    expect(out.status).toBe(303)
    expect(out.headers.get("location")).toBe("/login")
    expect(out.headers.get("set-cookie")).toContain("Max-Age=0")
    // A browser that ignored the clearing header, or a copy of the cookie, gets nowhere.
    expect((await send(d, "/", withCookie(mine.cookie))).status).toBe(401)
    expect((await send(d, "/executions", { headers: { cookie: mine.cookie, accept: "text/plain" } })).status).toBe(401)
    expect((await send(d, "/", withCookie(other.cookie))).status).toBe(200)
  })

  test("changing the token ends every session", async () => {
    const d = dashboard()
    const { cookie } = await signIn(d)
    const rotated = "a-new-token-after-rotation-0123456789"
    expect((await send(d, "/", withCookie(cookie), rotated)).status).toBe(401)
    expect((await send(d, "/", { headers: { authorization: `Bearer ${rotated}` } }, rotated)).status).toBe(200)
    // Once seen under the new token, the session is gone: rotating back does not revive it.
    expect((await send(d, "/", withCookie(cookie))).status).toBe(401)
  })

  test("belongs to one dashboard process: another (a restart) refuses its cookie", async () => {
    const first = dashboard()
    const { cookie } = await signIn(first)
    expect((await send(dashboard(), "/", withCookie(cookie))).status).toBe(401)
  })

  test("cannot be forged or stretched: a changed expiry, id or signature, the old fixed cookie, junk", async () => {
    const d = dashboard()
    const { cookie } = await signIn(d)
    const value = cookie.slice("roster_session=".length)
    const [id, expiresAt, mac] = value.split(".") as [string, string, string]
    const flip = (s: string) => (s[0] === "A" ? "B" : "A") + s.slice(1)
    const forged = [
      `${id}.${Number(expiresAt) + 365 * 24 * 3600_000}.${mac}`,
      `${flip(id)}.${expiresAt}.${mac}`,
      `${id}.${expiresAt}.${flip(mac)}`,
      `${id}.${expiresAt}`,
      "",
      "forged",
      // The fixed HMAC of the token that earlier versions set: no longer a session.
      new Bun.CryptoHasher("sha256", token).update("roster-dashboard-session:v1").digest("base64url")
    ]
    for (const v of forged) expect((await send(d, "/", withCookie(`roster_session=${v}`))).status).toBe(401)
    expect((await send(d, "/", withCookie(cookie))).status).toBe(200)
  })

  test("each sign-in gets a fresh id, so a cookie planted before signing in is never promoted", async () => {
    const d = dashboard()
    const planted = (await signIn(d)).cookie
    await send(d, "/logout", { method: "POST", ...withCookie(planted) })
    const r = await send(d, "/login", { method: "POST", body: new URLSearchParams({ token }), headers: { cookie: planted } })
    const fresh = r.headers.get("set-cookie")!.split(";")[0]!
    expect(fresh).not.toBe(planted)
    expect((await send(d, "/", withCookie(planted))).status).toBe(401)
    expect((await send(d, "/", withCookie(fresh))).status).toBe(200)
  })
})

describe("the sessions' memory", () => {
  test("past the limit, expired sessions go first, then the oldest", () => {
    const s = Sessions.make({ ttlMs: 1_000, max: 3 })
    const a = s.create(token, 0)
    const b = s.create(token, 500)
    const c = s.create(token, 600)
    const d = s.create(token, 1_200) // a has expired: it goes
    expect(s.size()).toBe(3)
    expect([b, c, d].map((x) => s.valid(x.value, token, 1_200))).toEqual([true, true, true])
    const e = s.create(token, 1_300) // all live: the oldest (b) goes
    expect(s.valid(b.value, token, 1_300)).toBe(false)
    expect([c, d, e].map((x) => s.valid(x.value, token, 1_300))).toEqual([true, true, true])
    expect(s.valid(a.value, token, 0)).toBe(false)
  })

  test("an expired session is dropped when its cookie is next seen", () => {
    const s = Sessions.make({ ttlMs: 1_000, max: 10 })
    const a = s.create(token, 0)
    expect(s.valid(a.value, token, 999)).toBe(true)
    expect(s.valid(a.value, token, 1_000)).toBe(false)
    expect(s.size()).toBe(0)
  })
})

describe("without a token", () => {
  test("no sessions are needed and sign-out is harmless", async () => {
    const d = dashboard()
    const req = (path: string, init: RequestInit = {}) => new Request(base + path, { ...init, headers: { host: "127.0.0.1:7460", origin: base } })
    expect((await runtime.runPromise(handle(req("/"), undefined, d))).status).toBe(200)
    expect((await runtime.runPromise(handle(req("/logout", { method: "POST" }), undefined, d))).status).toBe(303)
  })
})
