/**
 * The executions list: newest first, filtered by job, queue and state (a GET form, so
 * a filtered view is a link) and by parent (`?parent=ID`: the children of an execution,
 * linked from its page), with counts by state for the current job/queue/parent filter
 * and keyset paging (`before` = the last id shown; ids are UUIDv7, so they sort by
 * creation).
 */
import { Effect } from "effect"
import { Core } from "../../runtime/Core.ts"
import { states, type ExecutionState } from "../../store/Execution.ts"
import { Store } from "../../store/Store.ts"
import { executionLink, executionsTable, listLink } from "../Components.ts"
import { count } from "../Format.ts"
import type { Handler } from "../Http.ts"
import { renderPage } from "../Http.ts"
import { html } from "../Html.ts"

/** Rows per page. */
export const pageSize = 50

const param = (url: URL, name: string): string | undefined => {
  const v = url.searchParams.get(name)?.trim()
  return v ? v : undefined
}

/** GET /executions */
export const executionsList: Handler = (ctx) =>
  Effect.gen(function*() {
    const store = yield* Store
    const core = yield* Core
    const job = param(ctx.url, "job")
    const queue = param(ctx.url, "queue")
    const rawState = param(ctx.url, "state")
    const state = states.find((s) => s === rawState)
    const before = param(ctx.url, "before")
    const parent = param(ctx.url, "parent")
    const [rows, counts] = yield* Effect.all([
      store.executionsList({ job, queue, state, before, parentId: parent, limit: pageSize + 1 }),
      store.executionsCount({ job, queue, parentId: parent })
    ])
    const shown = rows.slice(0, pageSize)
    const more = rows.length > pageSize
    const total = Object.values(counts).reduce((n, c) => n + c, 0)
    const queues = [...new Set([...core.registry.queues.keys(), ...(queue ? [queue] : [])])].sort()
    const jobs = [...core.registry.jobs.keys()].sort()
    const tab = (s: ExecutionState | undefined, label: string, n: number) =>
      s === state ? html`<strong>${label} (${count(n)})</strong>` : listLink({ job, queue, parent, state: s }, `${label} (${count(n)})`)

    const body = html`
<h1>Executions</h1>
${parent ? html`<p class="parent-filter">Children of ${executionLink(parent)} · ${listLink({ job, queue, state }, "any parent")}</p>` : ""}
<div class="card"><form class="filters" method="get" action="/executions">
${parent ? html`<input type="hidden" name="parent" value="${parent}">` : ""}
<label>Job<input name="job" list="jobs" value="${job ?? ""}" placeholder="any job"></label>
<datalist id="jobs">${jobs.map((j) => html`<option value="${j}">`)}</datalist>
<label>Queue<select name="queue"><option value="">any queue</option>${queues.map((q) => html`<option value="${q}" ${q === queue ? "selected" : ""}>${q}</option>`)}</select></label>
<label>State<select name="state"><option value="">any state</option>${states.map((s) => html`<option value="${s}" ${s === state ? "selected" : ""}>${s}</option>`)}</select></label>
<button type="submit" class="primary">Filter</button>
${job || queue || state || parent ? html`<a href="/executions">Clear</a>` : ""}
</form></div>
<div class="card">
<div class="actions small" style="margin-bottom:10px">${tab(undefined, "all", total)}${states.map((s) => tab(s, s, counts[s]))}</div>
${executionsTable(shown, ctx.now, "No executions match these filters.")}
<div class="pager">${before ? listLink({ job, queue, state, parent }, "← Newest") : ""}${more ? listLink({ job, queue, state, parent, before: shown[shown.length - 1]!.id }, "Older →") : ""}</div>
</div>`
    return renderPage(ctx, { title: "Executions", section: "executions", body })
  })
