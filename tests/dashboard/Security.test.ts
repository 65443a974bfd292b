/**
 * The dashboard's security rules, checked with plain HTTP against the real CLI: a
 * non-loopback bind without a token refuses to start; with a token every request
 * without it is 401; a cross-origin POST is refused and changes nothing; without a
 * token only loopback Host names are answered; responses forbid scripts and framing;
 * a client guessing the token is throttled.
 * Only loopback addresses are ever bound here (`--host 0.0.0.0` is refused before
 * anything listens).
 */
import { describe, expect, test } from "bun:test"
import { existsSync } from "node:fs"
import { useScratch } from "../support/processes.ts"
import { drain, enqueue, startDashboard, webApps } from "./DashboardProcess.ts"

const token = "security-test-token-0123456789abcdef"

/** A fetch that does not follow redirects (an action answers 303). */
const send = (url: string, init: RequestInit = {}) => fetch(url, { redirect: "manual", ...init })

describe("binding", () => {
  const scratch = useScratch({ apps: webApps })

  test("a non-loopback bind without a token refuses to start, with one line, before opening anything", async () => {
    const s = scratch()
    const r = await s.run(["dashboard", "--host", "0.0.0.0", "--port", "0"])
    expect(r.code).toBe(1)
    const lines = r.stderr.trim().split("\n")
    expect(lines).toHaveLength(1)
    expect(lines[0]).toContain("ROSTER_DASHBOARD_TOKEN")
    expect(r.stdout).not.toContain("dashboard on")
    expect(existsSync(s.db)).toBe(false)
  }, 60_000)

  test("an empty token counts as none", async () => {
    const s = scratch()
    const r = await s.run(["dashboard", "--host", "0.0.0.0", "--port", "0"], { env: { ROSTER_DASHBOARD_TOKEN: "  " } })
    expect(r.code).toBe(1)
  }, 60_000)
})

describe("with a token", () => {
  const scratch = useScratch({ apps: webApps })

  test("a request without the token gets 401; the bearer token or the session cookie gets 200", async () => {
    const s = scratch()
    const { url } = await startDashboard(s, { env: { ROSTER_DASHBOARD_TOKEN: token } })
    for (const path of ["/", "/executions", "/schedules", "/executions/nope"]) {
      expect((await send(url + path)).status).toBe(401)
      expect((await send(url + path, { headers: { authorization: "Bearer wrong" } })).status).toBe(401)
    }
    expect((await send(url + "/", { headers: { accept: "text/html" } })).status).toBe(401)
    expect((await send(url + "/", { headers: { authorization: `Bearer ${token}` } })).status).toBe(200)
    expect((await send(url + "/executions", { headers: { authorization: `Bearer ${token}` } })).status).toBe(200)

    const badLogin = await send(url + "/login", { method: "POST", headers: { origin: url }, body: new URLSearchParams({ token: "wrong" }) })
    expect(badLogin.status).toBe(401)
    expect(badLogin.headers.get("set-cookie")).toBeNull()
    const login = await send(url + "/login", { method: "POST", headers: { origin: url }, body: new URLSearchParams({ token, next: "/schedules" }) })
    expect(login.status).toBe(303)
    expect(login.headers.get("location")).toBe("/schedules")
    const cookie = login.headers.get("set-cookie") ?? ""
    expect(cookie).toContain("HttpOnly")
    expect(cookie).toContain("SameSite=Strict")
    expect(cookie).not.toContain(token)
    const session = cookie.split(";")[0]!
    expect((await send(url + "/schedules", { headers: { cookie: session } })).status).toBe(200)
    expect((await send(url + "/schedules", { headers: { cookie: "roster_session=forged" } })).status).toBe(401)
  }, 60_000)

  test("a client that fails the token check 10 times in a minute gets 429 with Retry-After, even with the right token", async () => {
    const s = scratch()
    const { url } = await startDashboard(s, { env: { ROSTER_DASHBOARD_TOKEN: token } })
    for (let i = 0; i < 10; i++) expect((await send(url + "/", { headers: { authorization: `Bearer wrong-${i}` } })).status).toBe(401)
    const blocked = await send(url + "/", { headers: { authorization: `Bearer ${token}` } })
    expect(blocked.status).toBe(429)
    expect(Number(blocked.headers.get("retry-after"))).toBeGreaterThan(0)
    expect((await send(url + "/login", { method: "POST", headers: { origin: url }, body: new URLSearchParams({ token }) })).status).toBe(429)
  }, 60_000)

  test("a login never redirects to another site", async () => {
    const s = scratch()
    const { url } = await startDashboard(s, { env: { ROSTER_DASHBOARD_TOKEN: token } })
    const r = await send(url + "/login", { method: "POST", headers: { origin: url }, body: new URLSearchParams({ token, next: "//evil.example/x" }) })
    expect(r.status).toBe(303)
    expect(r.headers.get("location")).toBe("/")
  }, 60_000)
})

describe("mutations", () => {
  const scratch = useScratch({ apps: webApps })

  test("a cross-origin POST is refused with 403 and changes nothing; a same-origin one retries", async () => {
    const s = scratch()
    const id = await enqueue(s, "web/fail", { note: "x" })
    await drain(s)
    const { url } = await startDashboard(s, { env: { ROSTER_DASHBOARD_TOKEN: token } })
    const auth = { authorization: `Bearer ${token}` }
    const retry = `${url}/executions/${id}/retry`
    const executions = () => s.count("SELECT COUNT(*) FROM roster_executions")

    expect((await send(retry, { method: "POST", headers: { ...auth, origin: "http://evil.example" } })).status).toBe(403)
    expect((await send(retry, { method: "POST", headers: { ...auth, origin: "null" } })).status).toBe(403)
    expect((await send(retry, { method: "POST", headers: { ...auth, referer: "http://evil.example/page" } })).status).toBe(403)
    expect((await send(retry, { method: "POST", headers: auth })).status).toBe(403)
    expect((await send(retry, { headers: auth })).status).toBe(405)
    expect((await send(`${url}/executions/${id}/cancel`, { method: "POST", headers: { ...auth, origin: "http://evil.example" } })).status).toBe(403)
    expect(executions()).toBe(1)

    const ok = await send(retry, { method: "POST", headers: { ...auth, referer: `${url}/executions/${id}` } })
    expect(ok.status).toBe(303)
    expect(executions()).toBe(2)
    expect(s.count("SELECT COUNT(*) FROM roster_executions WHERE retry_of = ?", id)).toBe(1)

    // Only failed or cancelled executions can be retried: the new, queued one is refused.
    const newId = s.all<{ id: string }>("SELECT id FROM roster_executions WHERE retry_of = ?", id)[0]!.id
    const refused = await send(`${url}/executions/${newId}/retry`, { method: "POST", headers: { ...auth, origin: url } })
    expect(refused.status).toBe(409)
    expect(executions()).toBe(2)
  }, 60_000)

  test("cancel from the dashboard cancels a queued execution", async () => {
    const s = scratch()
    const id = await enqueue(s, "web/ok", { n: 1 })
    const { url } = await startDashboard(s)
    const r = await send(`${url}/executions/${id}/cancel`, { method: "POST", headers: { origin: url } })
    expect(r.status).toBe(303)
    expect(r.headers.get("location")).toBe(`/executions/${id}?notice=cancelled`)
    expect(s.all<{ state: string }>("SELECT state FROM roster_executions WHERE id = ?", id)[0]!.state).toBe("cancelled")
  }, 60_000)
})

describe("without a token", () => {
  const scratch = useScratch({ apps: webApps })

  test("only loopback Host names are answered (no DNS rebinding), and pages forbid scripts and framing", async () => {
    const s = scratch()
    const { url } = await startDashboard(s)
    const ok = await send(url + "/")
    expect(ok.status).toBe(200)
    expect(ok.headers.get("content-security-policy")).toContain("default-src 'none'")
    expect(ok.headers.get("content-security-policy")).not.toContain("script-src")
    expect(ok.headers.get("x-frame-options")).toBe("DENY")
    expect(ok.headers.get("x-content-type-options")).toBe("nosniff")
    const port = new URL(url).port
    expect((await send(url + "/", { headers: { host: `localhost:${port}` } })).status).toBe(200)
    expect((await send(url + "/", { headers: { host: `evil.example:${port}` } })).status).toBe(403)
  }, 60_000)
})
