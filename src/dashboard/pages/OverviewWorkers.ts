/**
 * The overview's Workers card: every registered worker process with what it serves and
 * when it was last seen, stale ones marked (not seen within their staleness window, see
 * WorkerRules.ts), and each live Schedule whose Job no live worker serves — its fires
 * are still enqueued, but nothing runs them until such a worker starts.
 */
import { Effect } from "effect"
import { Core } from "../../runtime/Core.ts"
import { ScheduleStore } from "../../store/ScheduleStore.ts"
import { Store, type StoreError } from "../../store/Store.ts"
import { unservedSchedules } from "../../store/WorkerRules.ts"
import { relative } from "../Format.ts"
import { html, type Html } from "../Html.ts"
import { schedulePath } from "./Schedules.ts"

/** The Workers card at `now`. */
export const workersCard = (now: number): Effect.Effect<Html, StoreError, Store | ScheduleStore | Core> =>
  Effect.gen(function*() {
    const store = yield* Store
    const schedules = yield* ScheduleStore
    const core = yield* Core
    const [workers, stored] = yield* Effect.all([store.workersList({ now }), schedules.schedulesList()])
    const live = stored.filter((s) => s.enabled && !s.paused && s.retiredAt === null)
    const unserved = unservedSchedules(live, (job) => core.registry.jobs.get(job)?.queue, workers)
    return html`<div class="card"><h2>Workers</h2><p class="small muted">Worker processes registered in this database. Stale: not seen for longer than three heartbeats or its lease (killed, hung, or cut off from the database).</p>
${workers.length === 0 ? html`<p class="muted">No workers registered.</p>` : html`<table><thead><tr><th>Worker</th><th>Host</th><th class="num">PID</th><th>Queues</th><th class="num">Jobs</th><th>Started</th><th>Last seen</th><th>State</th></tr></thead><tbody>${workers.map((w) =>
      html`<tr><td class="mono small">${w.id}</td><td>${w.host}</td><td class="num">${String(w.pid)}</td><td>${w.queues.join(", ")}</td><td class="num" title="${w.jobs.join(", ")}">${String(w.jobs.length)}</td><td>${relative(w.startedAt, now)}</td><td>${relative(w.lastSeenAt, now)}</td><td>${w.stale ? html`<span class="badge b-failed">stale</span>` : html`<span class="badge b-succeeded">live</span>`}</td></tr>`
    )}</tbody></table>`}
${unserved.length === 0 ? "" : html`<ul class="small">${unserved.map((u) =>
      html`<li style="color:var(--bad)"><a href="${schedulePath(u.schedule)}">${u.schedule}</a>: ${u.reason}</li>`
    )}</ul>`}</div>`
  })
