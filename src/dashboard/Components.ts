/**
 * Pieces several dashboard pages show the same way: state badges, the executions
 * table, POST action buttons and links into the executions list.
 */
import type { Execution } from "../store/Execution.ts"
import { relative, when } from "./Format.ts"
import { html, q, type Fragment, type Html } from "./Html.ts"

/** A coloured badge for a state or outcome. */
export const badge = (state: string): Html => html`<span class="badge b-${state.replace(/[^a-z_]/g, "")}">${state.replace("_", " ")}</span>`

/** A one-button POST form (every action is a POST; the server checks its origin). */
export const postButton = (action: string, label: string, options: { readonly kind?: "primary" | "danger" | undefined; readonly name?: string } = {}): Html =>
  html`<form class="inline" method="post" action="${action}"><button type="submit" class="${options.kind ?? ""}" name="${options.name ?? ""}">${label}</button></form>`

/** A link to an execution's page. */
export const executionLink = (id: string, text: Fragment = id): Html => html`<a class="mono nowrap" href="/executions/${q(id)}">${text}</a>`

/** A link to the executions list with filters. */
export const listLink = (filter: Readonly<Record<string, string | undefined>>, text: Fragment): Html => {
  const query = Object.entries(filter).filter(([, v]) => v !== undefined && v !== "").map(([k, v]) => `${k}=${q(v!)}`).join("&")
  return html`<a href="/executions${query ? `?${query}` : ""}">${text}</a>`
}

/** One line of an error: tag and message, shortened. */
export const errorLine = (error: Execution["error"], max = 120): string => {
  if (!error) return ""
  const text = `${error.tag}: ${error.message}`
  return text.length > max ? `${text.slice(0, max - 1)}…` : text
}

/** The executions table of the list page and the overview. */
export const executionsTable = (rows: ReadonlyArray<Execution>, now: number, empty = "No executions."): Html =>
  html`<table>
<thead><tr><th>Execution</th><th>Job</th><th>Queue</th><th>State</th><th class="num">Attempt</th><th>Created</th><th>Finished</th><th>Error</th></tr></thead>
<tbody>${rows.length === 0
    ? html`<tr><td colspan="8" class="muted">${empty}</td></tr>`
    : rows.map((e) =>
      html`<tr>
<td>${executionLink(e.id, e.id.slice(0, 8) + "…" + e.id.slice(-6))}</td>
<td>${listLink({ job: e.job }, e.job)}</td>
<td>${listLink({ queue: e.queue }, e.queue)}</td>
<td>${badge(e.state)}${e.state === "queued" && e.runAt > now ? html` <span class="muted small">${relative(e.runAt, now)}</span>` : ""}</td>
<td class="num">${e.attempt}/${e.maxAttempts}</td>
<td>${when(e.createdAt, now)}</td>
<td>${when(e.finishedAt, now)}</td>
<td class="small">${errorLine(e.error)}</td>
</tr>`)}</tbody></table>`
