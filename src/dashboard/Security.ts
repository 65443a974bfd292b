/**
 * Who may use the dashboard, and from where.
 *
 * - Binding: loopback (127.0.0.0/8, ::1, localhost) by default; any other address needs
 *   `ROSTER_DASHBOARD_TOKEN`, and the dashboard refuses to start without it.
 * - Authentication, when a token is set (on any bind): every request carries
 *   `Authorization: Bearer <token>` or the session cookie a browser gets by posting the
 *   token to /login once. The cookie names a session of this process (Sessions.ts): a
 *   random id and its expiry, signed over the token, never the token itself; it is
 *   HttpOnly and SameSite=Strict, and refused once expired, signed out, or after the
 *   token changes or the process restarts. Anything else is answered 401.
 * - After signing in, a browser is sent back only to a path of this dashboard
 *   ({@link safeNext}: parsed as a URL, never pattern-matched).
 * - Without a token (loopback only), the Host header must name a loopback address, so
 *   a page on another site cannot reach the dashboard through DNS rebinding.
 * - Mutations are POST only, and a POST must come from the dashboard's own pages: its
 *   Origin (or, when absent, Referer) must name the host it was sent to; otherwise 403.
 * Comparisons of secrets are constant-time.
 */
import { Effect } from "effect"
import { createHash, timingSafeEqual } from "node:crypto"
import * as Env from "../runtime/Env.ts"
import type { Sessions } from "./Sessions.ts"

/** The environment variable holding the dashboard token. */
export const tokenVariable = "ROSTER_DASHBOARD_TOKEN"

/** The session cookie's name. */
export const cookieName = "roster_session"

/** Whether a bind host or Host-header name is a loopback address. */
export const isLoopback = (host: string): boolean => {
  const h = host.toLowerCase().replace(/^\[(.*)\]$/, "$1")
  return h === "localhost" || h === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h)
}

/** Why the dashboard must not start on `host` with this token, if it must not. */
export const bindRefusal = (host: string, token: string | undefined): string | undefined =>
  isLoopback(host) || token !== undefined
    ? undefined
    : `refusing to serve the dashboard on ${host} without ${tokenVariable}: set a token, or bind 127.0.0.1 (the default)`

/** The token from the environment, read through Env.ts (empty means none). */
export const tokenFromEnv: Effect.Effect<string | undefined> = Effect.map(Env.text(tokenVariable), (raw) => {
  const t = raw?.trim()
  return t ? t : undefined
})

const digest = (s: string): Buffer => createHash("sha256").update(s).digest()

/** Constant-time string equality (hashes first, so lengths leak nothing). */
export const secretEquals = (a: string, b: string): boolean => timingSafeEqual(digest(a), digest(b))

/** Parses a Cookie header. */
export const cookies = (header: string | null): Map<string, string> => {
  const out = new Map<string, string>()
  for (const part of (header ?? "").split(";")) {
    const i = part.indexOf("=")
    if (i > 0) out.set(part.slice(0, i).trim(), part.slice(i + 1).trim())
  }
  return out
}

/** The session cookie a request carries, if any. */
export const sessionCookie = (req: Request): string | undefined => cookies(req.headers.get("cookie")).get(cookieName)

/** Whether a request is authenticated at `now`: no token configured, the bearer token, or an active session's cookie. */
export const authenticated = (req: Request, token: string | undefined, sessions: Sessions, now: number): boolean => {
  if (token === undefined) return true
  const auth = req.headers.get("authorization")
  const bearer = auth === null ? undefined : /^Bearer\s+(.+)$/i.exec(auth.trim())?.[1]
  if (bearer !== undefined && secretEquals(bearer, token)) return true
  return sessions.valid(sessionCookie(req), token, now)
}

/** Whether the Host header is acceptable: any with a token; a loopback name without one. */
export const hostAllowed = (req: Request, token: string | undefined): boolean => {
  if (token !== undefined) return true
  const host = req.headers.get("host")
  if (host === null) return false
  const name = host.startsWith("[") ? host.slice(0, host.indexOf("]") + 1) : host.replace(/:\d+$/, "")
  return isLoopback(name)
}

const hostOf = (url: string | null): string | undefined => {
  if (url === null || url === "null") return undefined
  try {
    return new URL(url).host.toLowerCase()
  } catch {
    return undefined
  }
}

/** Whether a POST comes from this dashboard: Origin, else Referer, must name the request's Host. */
export const sameOrigin = (req: Request): boolean => {
  const host = req.headers.get("host")?.toLowerCase()
  if (!host) return false
  const origin = req.headers.get("origin")
  const from = origin !== null ? hostOf(origin) : hostOf(req.headers.get("referer"))
  return from !== undefined && from === host
}

/** The Set-Cookie header that signs a browser in: the session's value, kept until its expiry. */
export const signInCookie = (session: { readonly value: string; readonly expiresAt: number }, now: number): string =>
  `${cookieName}=${session.value}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${Math.max(0, Math.floor((session.expiresAt - now) / 1000))}`

/** The Set-Cookie header that signs a browser out. */
export const signOutCookie = `${cookieName}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0`

/** Headers on every response: no scripts, no framing, no sniffing, no caching, no cross-site referrers. */
export const securityHeaders: Readonly<Record<string, string>> = {
  "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  "x-frame-options": "DENY",
  "x-content-type-options": "nosniff",
  "referrer-policy": "same-origin",
  "cache-control": "no-store"
}

/** A stand-in origin to resolve `next` against: it can never be the origin of a real site. */
const home = "http://dashboard.invalid"

/** Whether `target` resolves, as a browser would resolve it against this dashboard, to a path here. */
const staysHome = (target: string): boolean => {
  try {
    return new URL(target, `${home}/login`).origin === home
  } catch {
    return false
  }
}

/**
 * Where to send a browser after signing in: `next` resolved as a URL against this
 * dashboard, kept only when its origin is unchanged, as the parsed path, query and
 * fragment (percent-encoded, so no tab, newline or backslash survives); anything
 * else — another host (`//x`, `/\x`, `/<TAB>/x`), another scheme (`javascript:`), a
 * path the parser folds into `//x` (`/.//x`), text that does not parse — is `/`.
 */
export const safeNext = (next: string | null | undefined): string => {
  if (typeof next !== "string" || next.length === 0 || next.length > 4096 || !staysHome(next)) return "/"
  const u = new URL(next, `${home}/login`)
  // The parser leaves a backslash in a query or fragment as it is; encoded, it means the same here.
  const local = `${u.pathname}${u.search}${u.hash}`.replaceAll("\\", "%5C")
  // The result is sent as a relative Location: it must resolve here too, on its own.
  return local.startsWith("/") && !local.startsWith("//") && staysHome(local) ? local : "/"
}
