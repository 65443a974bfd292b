/**
 * After signing in, a browser goes back only to a path of this dashboard: `next` is
 * resolved as a URL (src/dashboard/Security.ts › safeNext) and kept only when the
 * origin is unchanged, as the parsed path, query and fragment; the form never carries
 * anything else either. Checked on the function (known tricks, then random strings
 * made of the characters those tricks use, resolved the way a browser resolves a
 * Location) and through the server's handler (the redirect and the form). The
 * dashboard's request bodies are bounded too (a real server on a free port).
 */
import { afterAll, describe, expect, test } from "bun:test"
import { Effect, ManagedRuntime } from "effect"
import fc from "fast-check"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { safeNext } from "../../src/dashboard/Security.ts"
import { handle, maxBodyBytes, serve } from "../../src/dashboard/Server.ts"
import * as Sessions from "../../src/dashboard/Sessions.ts"
import * as Throttle from "../../src/dashboard/Throttle.ts"
import * as Roster from "../../src/runtime/Roster.ts"
import { ok } from "./fixtures/apps/web/jobs.ts"

const dir = mkdtempSync(join(tmpdir(), "roster-next-"))
const runtime = ManagedRuntime.make(Roster.layer({ db: join(dir, "roster.db"), jobs: [ok] }))
afterAll(async () => {
  await runtime.dispose()
  rmSync(dir, { recursive: true, force: true })
})

const token = "next-test-token-0123456789abcdef"
const base = "http://127.0.0.1:7460"
const guard = { throttle: Throttle.make(), sessions: Sessions.make(), client: "10.0.0.1" }

/** Where a browser on `page` ends up when told `Location: location`. */
const resolved = (location: string, page = "https://dash.example:7460/login"): URL => new URL(location, page)

/** The properties every answer of safeNext has: a path here, whatever page it is resolved against. */
const staysHere = (location: string) => {
  expect(location.startsWith("/")).toBe(true)
  expect(location.startsWith("//")).toBe(false)
  expect(location).not.toMatch(/[\u0000-\u0020\u007f\\]/)
  for (const page of ["https://dash.example:7460/login", "http://127.0.0.1:7460/login?next=x", "http://[::1]:9/a/b/c"]) {
    expect(resolved(location, page).origin).toBe(new URL(page).origin)
  }
}

describe("safeNext", () => {
  const offsite = [
    "//evil.example",
    "//evil.example/x",
    "///evil.example",
    "/\\evil.example",
    "\\\\evil.example",
    "\\/evil.example",
    "/\t/evil.example",
    "/\n/evil.example",
    "/\r\n/evil.example",
    "\t//evil.example",
    " //evil.example",
    "/./\t/evil.example",
    "/.//evil.example",
    "/..//evil.example",
    "/x/../..//evil.example",
    "/%2e%2e//evil.example",
    "/%2e//evil.example",
    "http://evil.example/",
    "https:evil.example",
    "https://127.0.0.1:7460/",
    "ftp://evil.example",
    "javascript:alert(1)",
    "JaVaScRiPt:alert(1)",
    " javascript:alert(1)",
    "java\tscript:alert(1)",
    "data:text/html,<script>alert(1)</script>",
    "vbscript:x",
    "http://user@evil.example",
    "http:\\\\evil.example",
    "http:/\\evil.example"
  ]
  test.each(offsite)("%p goes to /", (next) => {
    expect(safeNext(next)).toBe("/")
  })

  test("nothing, empty, or longer than 4 KiB goes to /", () => {
    expect(safeNext(null)).toBe("/")
    expect(safeNext(undefined)).toBe("/")
    expect(safeNext("")).toBe("/")
    expect(safeNext("/" + "a".repeat(5000))).toBe("/")
  })

  const local: ReadonlyArray<[string, string]> = [
    ["/", "/"],
    ["/schedules", "/schedules"],
    ["/executions?state=failed&job=web%2Fok", "/executions?state=failed&job=web%2Fok"],
    ["/executions/0190-abc#attempts", "/executions/0190-abc#attempts"],
    ["/schedules/web/hourly", "/schedules/web/hourly"],
    // Encoded slashes and tabs stay encoded: a path here, never a host.
    ["/%2F%2Fevil.example", "/%2F%2Fevil.example"],
    ["%2F%2Fevil.example", "/%2F%2Fevil.example"],
    ["/%09/evil.example", "/%09/evil.example"],
    ["/\u0000/evil.example", "/%00/evil.example"],
    ["/a b<\"'>", "/a%20b%3C%22'%3E"],
    ["/ü?q=ü", "/%C3%BC?q=%C3%BC"],
    ["/x/../executions", "/executions"],
    ["/executions?next=//evil.example", "/executions?next=//evil.example"]
  ]
  test.each(local)("%p stays here as %p", (next, expected) => {
    expect(safeNext(next)).toBe(expected)
    staysHere(safeNext(next))
  })

  test("random strings of slashes, backslashes, dots, tabs, newlines, percent signs, colons and letters never leave", () => {
    const piece = fc.constantFrom("/", "\\", ".", "..", "\t", "\n", "\r", " ", "%", "%2F", "%5C", "%09", "%2e", ":", "@", "?", "#", "evil.example", "javascript", "http", "a", "\u0000", "\u00a0", "\u3000", "ｅ")
    fc.assert(fc.property(fc.array(piece, { maxLength: 12 }).map((xs) => xs.join("")), (next) => {
      const location = safeNext(next)
      staysHere(location)
      // Answering again changes nothing: what is sent is already the parsed form.
      expect(safeNext(location)).toBe(location)
    }), { numRuns: 3000 })
    fc.assert(fc.property(fc.string({ unit: "binary", maxLength: 40 }), (next) => staysHere(safeNext(next))), { numRuns: 2000 })
  })
})

const send = (path: string, init: RequestInit = {}) =>
  runtime.runPromise(handle(new Request(base + path, { ...init, headers: { host: "127.0.0.1:7460", origin: base, ...init.headers } }), token, guard))

describe("the sign-in redirect and form", () => {
  test("POST /login with next=/%09/evil.example (a tab, once the form is decoded) redirects to /", async () => {
    const r = await send("/login", { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: `token=${token}&next=/%09/evil.example` })
    expect(r.status).toBe(303)
    expect(r.headers.get("location")).toBe("/")
  })

  test.each(["//evil.example", "/\\evil.example", "/\n/evil.example", "javascript:alert(1)", "/.//evil.example", "https://evil.example/"])("POST /login with next=%p redirects to /", async (next) => {
    const r = await send("/login", { method: "POST", body: new URLSearchParams({ token, next }) })
    expect(r.headers.get("location")).toBe("/")
  })

  test("a local next is kept, as its parsed path, query and fragment", async () => {
    const r = await send("/login", { method: "POST", body: new URLSearchParams({ token, next: "/executions?state=failed#top" }) })
    expect(r.headers.get("location")).toBe("/executions?state=failed#top")
  })

  test("the form carries only a checked next: GET /login?next=… and a failed sign-in", async () => {
    const hidden = async (r: Response) => /name="next" value="([^"]*)"/.exec(await r.text())?.[1]
    expect(await hidden(await send(`/login?next=${encodeURIComponent("/%09/evil.example")}`))).toBe("/%09/evil.example")
    expect(await hidden(await send(`/login?next=${encodeURIComponent("/\t/evil.example")}`))).toBe("/")
    expect(await hidden(await send(`/login?next=${encodeURIComponent("javascript:alert(1)")}`))).toBe("/")
    expect(await hidden(await send(`/login?next=${encodeURIComponent("\"><b>x</b>")}`))).toBe("/%22%3E%3Cb%3Ex%3C/b%3E")
    expect(await hidden(await send(`/login?next=${encodeURIComponent("/executions?a=1&b=\"2\"")}`))).toBe("/executions?a=1&amp;b=%222%22")
    const failed = await send("/login", { method: "POST", body: new URLSearchParams({ token: "wrong", next: "//evil.example" }) })
    expect(failed.status).toBe(401)
    expect(await hidden(failed)).toBe("/")
    // A protected page asked for without a session offers to come back to it.
    expect(await hidden(await send("/executions?state=failed", { headers: { accept: "text/html" } }))).toBe("/executions?state=failed")
  })
})

describe("request bodies", () => {
  test(`a body over ${maxBodyBytes / 1024} KiB is refused with 413 before it is read; the dashboard carries on`, async () => {
    await runtime.runPromise(Effect.scoped(Effect.gen(function*() {
      const { url } = yield* serve({ host: "127.0.0.1", port: 0, token })
      const post = (body: string) => fetch(`${url}/login`, { method: "POST", redirect: "manual", headers: { origin: url, "content-type": "application/x-www-form-urlencoded" }, body })
      const big = yield* Effect.promise(() => post(`token=${"x".repeat(maxBodyBytes + 1)}`))
      expect(big.status).toBe(413)
      const right = yield* Effect.promise(() => post(`token=${token}&next=/schedules`))
      expect(right.status).toBe(303)
      expect(right.headers.get("location")).toBe("/schedules")
    })))
  }, 60_000)
})
