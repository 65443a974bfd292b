/**
 * Schedules: the list (trigger, status, next and last fire, actions) and one schedule's
 * page (definition, payload, its next fires computed from the trigger, the fire
 * history with keyset paging by due time, and the latest executions it made, run-now
 * ones included). System schedules belong to Roster: they show no pause or resume.
 */
import { Effect } from "effect"
import { isStorableTime } from "../../jobs/TimeRange.ts"
import { nextFires } from "../../runtime/Schedules.ts"
import { ScheduleNotFound, ScheduleStore, type StoredSchedule } from "../../store/ScheduleStore.ts"
import { Store } from "../../store/Store.ts"
import { badge, executionLink, executionsTable, postButton } from "../Components.ts"
import { clip, duration, maxLogLineChars, shownJson, time, when } from "../Format.ts"
import type { Handler } from "../Http.ts"
import { renderPage } from "../Http.ts"
import { html, q, type Fragment } from "../Html.ts"

/** The path of a schedule's page (`<app>/<name>` keeps its slash; each segment is encoded). */
export const schedulePath = (id: string): string => `/schedules/${id.split("/").map(q).join("/")}`

const status = (s: StoredSchedule): string => (s.retiredAt !== null ? "retired" : !s.enabled ? "disabled" : s.paused ? "paused" : "active")

const statusClass: Record<string, string> = { active: "b-succeeded", paused: "b-paused", disabled: "b-cancelled", retired: "b-retired" }

const statusBadge = (s: StoredSchedule) => html`<span class="badge ${statusClass[status(s)] ?? ""}">${status(s)}</span>`

const triggerText = (s: StoredSchedule): string =>
  s.cron !== null ? `cron ${s.cron} (${s.timezone})` : `every ${duration(s.everyMs ?? 0)}`

const actions = (s: StoredSchedule): ReadonlyArray<Fragment> => {
  const base = schedulePath(s.id)
  if (s.retiredAt !== null) return []
  return [
    s.source !== "system" ? (s.paused ? postButton(`${base}/resume`, "Resume", { kind: "primary" }) : postButton(`${base}/pause`, "Pause")) : "",
    postButton(`${base}/run`, "Run now")
  ]
}

/** GET /schedules */
export const schedulesList: Handler = (ctx) =>
  Effect.gen(function*() {
    const schedules = yield* ScheduleStore
    const includeRetired = ctx.url.searchParams.get("retired") === "1"
    const rows = yield* schedules.schedulesList({ includeRetired })
    const { now } = ctx
    const body = html`
<div class="actions" style="justify-content:space-between"><h1>Schedules</h1>
<span class="small">${includeRetired ? html`<a href="/schedules">hide retired</a>` : html`<a href="/schedules?retired=1">show retired</a>`}</span></div>
<div class="card"><table>
<thead><tr><th>Schedule</th><th>Job</th><th>Trigger</th><th>Source</th><th>Status</th><th>Next fire</th><th>Last fire</th><th></th></tr></thead>
<tbody>${rows.length === 0
      ? html`<tr><td colspan="8" class="muted">No schedules. File schedules appear once a scheduler has synced them.</td></tr>`
      : rows.map((s) =>
        html`<tr><td><a href="${schedulePath(s.id)}">${s.id}</a>${s.label && s.label !== s.id ? html`<div class="small muted">${clip(s.label, 200)}</div>` : ""}</td>
<td>${s.job}</td><td class="mono small">${triggerText(s)}</td><td class="small">${s.source}</td><td>${statusBadge(s)}</td>
<td>${s.paused || s.retiredAt !== null ? html`<span class="muted">—</span>` : when(s.nextDueAt, now)}</td><td>${when(s.lastDueAt, now)}</td>
<td><div class="actions">${actions(s)}</div></td></tr>`)}</tbody></table></div>`
    return renderPage(ctx, { title: "Schedules", section: "schedules", body })
  })

/** GET /schedules/:id */
export const scheduleDetail: Handler = (ctx, [id = ""]) =>
  Effect.gen(function*() {
    const schedules = yield* ScheduleStore
    const store = yield* Store
    const s = yield* schedules.schedulesGet(id)
    if (!s) return yield* new ScheduleNotFound({ id, message: `No schedule ${id}.` })
    const { now } = ctx
    const beforeRaw = Number(ctx.url.searchParams.get("before"))
    // A whole number the store can compare (PostgreSQL refuses 1.5 for a bigint): anything else is the first page.
    const before = isStorableTime(beforeRaw) && beforeRaw > 0 ? beforeRaw : undefined
    const pageSize = 25
    const [fires, recent] = yield* Effect.all([
      schedules.schedulesHistory({ scheduleId: id, limit: pageSize + 1, before }),
      store.executionsList({ scheduleId: id, limit: 10 })
    ])
    const shown = fires.slice(0, pageSize)
    const upcoming = nextFires(s, now, 5)
    const row = (label: string, value: Fragment) => html`<tr><th>${label}</th><td>${value}</td></tr>`
    const body = html`
<div class="actions" style="justify-content:space-between"><h1>${s.id}</h1><div class="actions">${actions(s)}</div></div>
<div class="grid" style="margin-bottom:16px">
<div class="card"><h2>Definition</h2><table class="kv">
${s.label && s.label !== s.id ? row("Label", clip(s.label, maxLogLineChars)) : ""}${s.description ? row("Description", clip(s.description, maxLogLineChars)) : ""}
${row("Job", s.job)}${row("Trigger", html`<span class="mono">${triggerText(s)}</span>`)}
${row("Status", statusBadge(s))}${row("Source", s.source)}
${row("Misfire", s.misfire === "all" ? `all (up to ${s.misfireCap})` : s.misfire)}${row("Overlap", s.overlap)}
${row("Created", when(s.createdAt, now))}${row("Updated", when(s.updatedAt, now))}
${s.retiredAt !== null ? row("Retired", when(s.retiredAt, now)) : ""}
</table></div>
<div class="card"><h2>Next fires</h2>${upcoming.length === 0 ? html`<p class="muted">${s.paused ? "None while paused." : "None."}</p>` : html`<table><tbody>${upcoming.map((at) => html`<tr><td>${when(at, now)}</td></tr>`)}</tbody></table>`}
<h2 style="margin-top:14px">Payload</h2>${shownJson(safeParse(s.payload), `roster schedules show ${s.id} --json`)}</div>
</div>
<div class="card"><h2>History</h2>${shown.length === 0 ? html`<p class="muted">No fires recorded${before ? " before this point" : " yet"}.</p>` : html`<table>
<thead><tr><th>Due</th><th>Decided</th><th>Outcome</th><th>Execution</th><th>Note</th></tr></thead>
<tbody>${shown.map((f) => html`<tr><td>${when(f.dueAt, now)}</td><td class="small">${time(f.enqueuedAt)}${f.enqueuedAt > f.dueAt ? html` <span class="muted">(+${duration(f.enqueuedAt - f.dueAt)})</span>` : ""}</td>
<td>${badge(f.outcome)}</td><td>${f.executionId ? executionLink(f.executionId, f.executionId.slice(0, 8) + "…") : ""}</td><td class="small">${clip(f.error ?? "", maxLogLineChars)}</td></tr>`)}</tbody></table>`}
<div class="pager">${before ? html`<a href="${schedulePath(s.id)}">← Latest</a>` : ""}${fires.length > pageSize ? html`<a href="${schedulePath(s.id)}?before=${shown[shown.length - 1]!.dueAt}">Older →</a>` : ""}</div></div>
<div class="card"><h2>Latest executions</h2>${executionsTable(recent, now, "No executions from this schedule yet.")}</div>`
    return renderPage(ctx, { title: s.id, section: "schedules", body })
  })

const safeParse = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}
