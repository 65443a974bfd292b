/**
 * What a dashboard handler receives and returns: the request with its parsed URL and
 * the page's `now` (from the Clock), and HTML responses, redirects and error pages,
 * each with the security headers. Handlers are Effects over the services the dashboard
 * opens — Store, ScheduleStore, and a Client over the Core (for retry, cancel and run
 * now); never a worker.
 */
import type { Effect } from "effect"
import type { Core } from "../runtime/Core.ts"
import type { Client } from "../runtime/Client.ts"
import type { ScheduleStore } from "../store/ScheduleStore.ts"
import type { Store } from "../store/Store.ts"
import { html, type Html } from "./Html.ts"
import { page, type PageOptions, type Section } from "./Layout.ts"
import { securityHeaders } from "./Security.ts"

/** The services the dashboard's handlers use. */
export type Services = Client | Core | Store | ScheduleStore

/** One request, as handlers see it. */
export interface RequestContext {
  readonly req: Request
  readonly url: URL
  readonly now: number
  /** A token is configured (so the page shows "Sign out"). */
  readonly signedIn: boolean
}

/**
 * A typed failure a handler may end with; the server turns it into an error page by its
 * tag (`…NotFound` 404, `StoreError` 500, any other refusal 409).
 */
export interface HandlerError {
  readonly _tag: string
  readonly message: string
}

/** A handler of one route. */
export type Handler = (ctx: RequestContext, params: ReadonlyArray<string>) => Effect.Effect<Response, HandlerError, Services>

/** Notices an action can leave for the page it redirects to, by code (never free text from the URL). */
const notices: Record<string, { readonly kind: "ok" | "error"; readonly text: string }> = {
  retried: { kind: "ok", text: "Retry enqueued: this is the new execution." },
  cancelled: { kind: "ok", text: "Execution cancelled." },
  "cancel-requested": { kind: "ok", text: "Cancellation requested: the worker stops it at its next heartbeat." },
  "already-finished": { kind: "error", text: "The execution had already finished; nothing was cancelled." },
  paused: { kind: "ok", text: "Schedule paused." },
  resumed: { kind: "ok", text: "Schedule resumed; fires missed while paused are not caught up." },
  ran: { kind: "ok", text: "Run enqueued: this is the new execution, linked to its schedule." },
  "queue-paused": { kind: "ok", text: "Queue paused: no worker claims from it until it is resumed (running executions finish; enqueues are still accepted)." },
  "queue-resumed": { kind: "ok", text: "Queue resumed: workers claim from it again." }
}

/** An HTML response with the security headers. */
export const respond = (body: Html, status = 200, headers: Record<string, string> = {}): Response =>
  new Response(body.text, { status, headers: { "content-type": "text/html; charset=utf-8", ...securityHeaders, ...headers } })

/** A full page for this request (with the notice named by `?notice=`, if any). */
export const renderPage = (ctx: RequestContext, options: Omit<PageOptions, "signedIn">, status = 200): Response =>
  respond(page({ notice: notices[ctx.url.searchParams.get("notice") ?? ""], ...options, signedIn: ctx.signedIn }), status)

/** A 303 redirect after a POST (optionally with a notice code). */
export const redirect = (location: string, notice?: keyof typeof notices | string, headers: Record<string, string> = {}): Response => {
  const target = notice ? `${location}${location.includes("?") ? "&" : "?"}notice=${encodeURIComponent(notice)}` : location
  return new Response(null, { status: 303, headers: { location: target, ...securityHeaders, ...headers } })
}

/** An error page: a title, a message (escaped) and a way back. */
export const errorPage = (ctx: RequestContext | undefined, status: number, title: string, message: string, section: Section = "none"): Response => {
  const body = html`<h1>${title}</h1><div class="card"><p>${message}</p><p><a href="/">Back to the overview</a></p></div>`
  return ctx ? renderPage(ctx, { title, section, body }, status) : respond(page({ title, section, body }), status)
}

/** A plain-text response (401/403/405 for scripts) with the security headers. */
export const text = (status: number, body: string, headers: Record<string, string> = {}): Response =>
  new Response(body + "\n", { status, headers: { "content-type": "text/plain; charset=utf-8", ...securityHeaders, ...headers } })
