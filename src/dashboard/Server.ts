/**
 * The dashboard's HTTP server: Bun.serve in the caller's scope (stopped when it
 * closes), every request checked in one order — Host (DNS rebinding), method, origin
 * of a POST, authentication (a bearer token, or a session of this process's Sessions) —
 * then routed to a handler run as an Effect over the
 * dashboard's services. A handler's typed failure becomes an error page; a defect is
 * logged and answered 500 without details. A request body over 64 KiB is answered
 * 413 by Bun.serve before it is read.
 */
import { Cause, Clock, Data, Effect } from "effect"
import { cancelExecution, pauseQueue, pauseSchedule, resumeQueue, resumeSchedule, retryExecution, runSchedule } from "./Actions.ts"
import type { Handler, HandlerError, RequestContext, Services } from "./Http.ts"
import { errorPage, redirect, text } from "./Http.ts"
import { executionDetail, executionValue } from "./pages/Execution.ts"
import { executionsList } from "./pages/Executions.ts"
import { login, loginPage, logout } from "./pages/Login.ts"
import { overview } from "./pages/Overview.ts"
import { scheduleDetail, schedulesList } from "./pages/Schedules.ts"
import { authenticated, bindRefusal, hostAllowed, sameOrigin } from "./Security.ts"
import * as Sessions from "./Sessions.ts"
import * as Throttle from "./Throttle.ts"

/** The dashboard could not start (refused bind, port in use). */
export class DashboardError extends Data.TaggedError("DashboardError")<{ readonly message: string }> {}

/** Options of {@link serve}. */
export interface DashboardOptions {
  /** Bind address (default 127.0.0.1). */
  readonly host?: string | undefined
  /** Port (default 7460; 0 picks a free one). */
  readonly port?: number | undefined
  /** The token every request must carry; required for a non-loopback host. */
  readonly token?: string | undefined
}

/** A running dashboard. */
export interface RunningDashboard {
  readonly url: string
  readonly port: number
}

/** The default port. */
export const defaultPort = 7460

interface Route {
  readonly method: "GET" | "POST"
  readonly pattern: RegExp
  readonly handler: Handler
}

const routes: ReadonlyArray<Route> = [
  { method: "GET", pattern: /^\/$/, handler: overview },
  { method: "GET", pattern: /^\/executions$/, handler: executionsList },
  { method: "GET", pattern: /^\/executions\/([^/]+)$/, handler: executionDetail },
  { method: "GET", pattern: /^\/executions\/([^/]+)\/(payload|result)\.json$/, handler: executionValue },
  { method: "POST", pattern: /^\/executions\/([^/]+)\/retry$/, handler: retryExecution },
  { method: "POST", pattern: /^\/executions\/([^/]+)\/cancel$/, handler: cancelExecution },
  { method: "POST", pattern: /^\/queues\/([^/]+)\/pause$/, handler: pauseQueue },
  { method: "POST", pattern: /^\/queues\/([^/]+)\/resume$/, handler: resumeQueue },
  { method: "GET", pattern: /^\/schedules$/, handler: schedulesList },
  { method: "POST", pattern: /^\/schedules\/(.+)\/pause$/, handler: pauseSchedule },
  { method: "POST", pattern: /^\/schedules\/(.+)\/resume$/, handler: resumeSchedule },
  { method: "POST", pattern: /^\/schedules\/(.+)\/run$/, handler: runSchedule },
  { method: "GET", pattern: /^\/schedules\/(.+)$/, handler: scheduleDetail }
]

const statusOf = (e: HandlerError): number => (e._tag.endsWith("NotFound") ? 404 : e._tag === "StoreError" ? 500 : 409)

const titleOf = (status: number): string => (status === 404 ? "Not found" : status === 500 ? "Store error" : "Not possible")

const wantsHtml = (req: Request): boolean => (req.headers.get("accept") ?? "").includes("text/html")

const decode = (parts: ReadonlyArray<string>): ReadonlyArray<string> | undefined => {
  try {
    return parts.map((p) => decodeURIComponent(p))
  } catch {
    return undefined
  }
}

/** Who is asking (for the failed-token-check throttle), and the throttle and sessions of this dashboard. */
export interface Guard {
  readonly throttle: Throttle.Throttle
  readonly client: string
  /** The dashboard's sessions; without them, the process-wide ones of {@link handle}. */
  readonly sessions?: Sessions.Sessions | undefined
}

/** Sessions of handlers called without their own (tests, embedding): one set per process. */
const processSessions = Sessions.make()

/** The largest request body accepted: the dashboard's forms are a token and a path. */
export const maxBodyBytes = 64 * 1024

/** Answers one request. */
export const handle = (req: Request, token: string | undefined, guard?: Guard): Effect.Effect<Response, never, Services> =>
  Effect.gen(function*() {
    if (!hostAllowed(req, token)) return text(403, "forbidden: unexpected Host header (the dashboard answers loopback names only)")
    const method = req.method === "HEAD" ? "GET" : req.method
    if (method !== "GET" && method !== "POST") return text(405, "method not allowed", { allow: "GET, HEAD, POST" })
    if (method === "POST" && !sameOrigin(req)) return text(403, "forbidden: cross-origin request (Origin or Referer must match the Host)")
    const url = new URL(req.url)
    const path = url.pathname.length > 1 ? url.pathname.replace(/\/+$/, "") : url.pathname
    const now = yield* Clock.currentTimeMillis
    const sessions = guard?.sessions ?? processSessions

    // A token check (a login, a bearer token) from an address that failed too often is not made.
    const loggingIn = path === "/login" && method === "POST"
    if (token !== undefined && guard !== undefined && (loggingIn || req.headers.has("authorization"))) {
      const waitMs = guard.throttle.blockedFor(guard.client, now)
      if (waitMs > 0) return text(429, "too many failed token checks from this address; try again later", { "retry-after": String(Math.ceil(waitMs / 1000)) })
    }
    if (path === "/login") {
      if (token === undefined) return redirect("/")
      if (!loggingIn) return loginPage(url.searchParams.get("next") ?? "/")
      const response = yield* Effect.promise(() => login(req, token, sessions, now))
      if (response.status === 401) guard?.throttle.failed(guard.client, now)
      return response
    }
    if (path === "/logout" && method === "POST") return logout(req, sessions)
    if (!authenticated(req, token, sessions, now)) {
      if (req.headers.has("authorization")) guard?.throttle.failed(guard.client, now)
      return wantsHtml(req)
        ? loginPage(`${url.pathname}${url.search}`, 401)
        : text(401, "unauthorized: send Authorization: Bearer <ROSTER_DASHBOARD_TOKEN>", { "www-authenticate": "Bearer realm=\"roster\"" })
    }

    const ctx: RequestContext = { req, url, now, signedIn: token !== undefined }
    const matching = routes.filter((r) => r.pattern.test(path))
    const route = matching.find((r) => r.method === method)
    if (!route) {
      return matching.length > 0
        ? text(405, "method not allowed", { allow: matching.map((r) => (r.method === "GET" ? "GET, HEAD" : r.method)).join(", ") })
        : errorPage(ctx, 404, "Not found", `Nothing lives at ${path}.`)
    }
    const params = decode(route.pattern.exec(path)!.slice(1))
    if (!params) return errorPage(ctx, 400, "Bad request", "The address is not valid.")
    return yield* route.handler(ctx, params).pipe(
      Effect.catch((e: HandlerError) => {
        const status = statusOf(e)
        return Effect.succeed(errorPage(ctx, status, titleOf(status), e.message))
      })
    )
  }).pipe(
    Effect.catchCause((cause) =>
      Effect.as(Effect.logError("dashboard request failed", Cause.pretty(cause)), errorPage(undefined, 500, "Internal error", "Something went wrong; the dashboard log has the details.")))
  )

/** Starts the dashboard in the current scope; it stops when the scope closes. */
export const serve = Effect.fnUntraced(function*(options: DashboardOptions) {
  const host = options.host ?? "127.0.0.1"
  const port = options.port ?? defaultPort
  const refusal = bindRefusal(host, options.token)
  if (refusal !== undefined) return yield* new DashboardError({ message: refusal })
  const context = yield* Effect.context<Services>()
  const run = Effect.runPromiseWith(context)
  const throttle = Throttle.make()
  const sessions = Sessions.make()
  const server = yield* Effect.acquireRelease(
    Effect.try({
      try: () =>
        Bun.serve({
          hostname: host,
          port,
          maxRequestBodySize: maxBodyBytes,
          fetch: (req, server) => run(handle(req, options.token, { throttle, sessions, client: server.requestIP(req)?.address ?? "unknown" }))
        }),
      catch: (cause) => new DashboardError({ message: `cannot serve the dashboard on ${host}:${port}: ${(cause as Error).message}` })
    }),
    (s) => Effect.promise(() => s.stop(true))
  )
  return { url: server.url.toString().replace(/\/$/, ""), port: server.port ?? port } satisfies RunningDashboard
})
