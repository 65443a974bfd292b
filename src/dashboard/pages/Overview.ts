/**
 * The overview: per queue, executions by state (waiting ones too: parked by a sleep, a
 * wait for children or a signal) and the age of the oldest due queued
 * one, its limits (per-worker concurrency; global concurrency and rate limit across
 * workers) with the due executions each cause holds back now (FlowExplain.ts),
 * whether it is paused (with a pause or resume button: the pause is stored, so
 * every worker on the database honours it); throughput over the last hour in 5-minute buckets (succeeded and failed, by
 * finish time); and what needs attention — stuck executions (running with an expired
 * lease), queued executions of Jobs this dashboard's apps do not know (no worker built
 * from them can claim them), and the latest failures.
 */
import { Effect } from "effect"
import { Core } from "../../runtime/Core.ts"
import { states, type ExecutionState } from "../../store/Execution.ts"
import type { QueueConfig } from "../../jobs/QueueConfig.ts"
import { type HeldBack, heldBackOf, limitsOfQueue, rateLimitView } from "../../store/FlowExplain.ts"
import { Store, type QueueState, type QueueStats } from "../../store/Store.ts"
import { badge, executionLink, executionsTable, listLink, postButton } from "../Components.ts"
import { count, duration, relative, time } from "../Format.ts"
import type { Handler } from "../Http.ts"
import { renderPage } from "../Http.ts"
import { html, q, type Html } from "../Html.ts"
import { workersCard } from "./OverviewWorkers.ts"

const bucketMs = 5 * 60_000
const buckets = 12

const zero = (): Record<ExecutionState, number> => Object.fromEntries(states.map((s) => [s, 0])) as Record<ExecutionState, number>

const chart = (series: ReadonlyArray<{ readonly at: number; readonly succeeded: number; readonly failed: number }>): Html => {
  const max = Math.max(1, ...series.map((b) => b.succeeded + b.failed))
  const pct = (n: number) => `${((n / max) * 100).toFixed(1)}%`
  return html`<div class="bars" aria-label="finished executions per 5 minutes">${series.map((b) =>
    html`<div class="col" title="${time(b.at)}: ${b.succeeded} succeeded, ${b.failed} failed"><div class="ok" style="height:${pct(b.succeeded)}"></div><div class="bad" style="height:${pct(b.failed)}"></div></div>`
  )}</div>
<div class="axis">${series.map((b, i) => html`<span>${i % 3 === 0 ? time(b.at).slice(11, 16) : ""}</span>`)}</div>
<div class="legend small muted"><span class="ok" style="background:#4ac26b"></span>succeeded<span style="background:#ff8182"></span>failed · per 5 minutes, UTC</div>`
}

/** A queue's pause state and the button that changes it (any queue listed may be paused: the store keeps any name). */
const queueState = (queue: string, pause: QueueState | undefined, now: number): Html =>
  pause
    ? html`<span title="paused ${pause.pausedAt === null ? "" : relative(pause.pausedAt, now)}">${badge("paused")}</span> ${postButton(`/queues/${q(queue)}/resume`, "Resume", { kind: "primary" })}`
    : html`<span class="badge b-succeeded">active</span> ${postButton(`/queues/${q(queue)}/pause`, "Pause")}`

/** A queue's limits under this config: per-worker concurrency, then global concurrency and rate limit across workers. */
const limitsCell = (queue: QueueConfig | undefined): Html => {
  if (queue === undefined) return html`<span class="muted">—</span>`
  const rate = rateLimitView(queue.rateLimit)
  const global = queue.globalConcurrency ?? null
  return html`<span class="limit nowrap" title="running at once in one worker process">${queue.concurrency} per worker</span>${global === null ? "" : html` · <span class="limit nowrap" title="running at once across every worker">${global} global</span>`}${rate === null ? "" : html` · <span class="limit nowrap" title="starts per period across every worker">${rate.limit} per ${rate.period}</span>`}`
}

/** Due queued executions held back by each cause (only the causes holding some), or a dash; the due count in the title. */
const heldBackCell = (flow: { readonly due: number; readonly heldBack: HeldBack } | undefined): Html => {
  if (flow === undefined) return html`<span class="muted">—</span>`
  const causes = ([["paused", "paused"], ["globalConcurrency", "global limit"], ["keyConcurrency", "key limit"], ["rateLimit", "rate limit"]] as const)
    .filter(([k]) => flow.heldBack[k] > 0)
  if (causes.length === 0) return html`<span class="muted" title="${flow.due} due">—</span>`
  return html`<span title="${flow.due} due">${causes.map(([k, label], i) => html`${i > 0 ? " · " : ""}<span class="held" data-cause="${k}">${count(flow.heldBack[k])} ${label}</span>`)}</span>`
}

/** GET / */
export const overview: Handler = (ctx) =>
  Effect.gen(function*() {
    const store = yield* Store
    const core = yield* Core
    const { now } = ctx
    const since = Math.floor(now / bucketMs) * bucketMs - (buckets - 1) * bucketMs
    const [stats, throughput, stuck, unknown, failures, paused] = yield* Effect.all([
      store.executionsQueueStats({ now }),
      store.executionsThroughput({ since, bucketMs }),
      store.executionsExpired({ now, limit: 20 }),
      store.executionsUnknownJobs([...core.registry.jobs.keys()]),
      store.executionsList({ state: "failed", limit: 10 }),
      store.queuesList
    ])
    const pauses = new Map<string, QueueState>(paused.filter((p) => p.paused).map((p) => [p.queue, p]))

    const byQueue = new Map<string, QueueStats>(stats.map((s) => [s.queue, s]))
    for (const name of [...core.registry.queues.keys(), ...pauses.keys()]) if (!byQueue.has(name)) byQueue.set(name, { queue: name, counts: zero(), oldestDueAt: null })
    const queues = [...byQueue.values()].sort((a, b) => a.queue.localeCompare(b.queue))
    // Limits under this config and the due work each cause holds back now (FlowExplain.ts), one read per queue.
    const flows = new Map(yield* Effect.forEach(queues, (q) => {
      const limits = limitsOfQueue(core.registry, q.queue)
      return Effect.map(store.queuesHeldBack({ queue: q.queue, now, limits }), (read) => [q.queue, heldBackOf(limits, read, now)] as const)
    }))
    const series = Array.from({ length: buckets }, (_, i) => {
      const at = since + i * bucketMs
      const inBucket = throughput.filter((b) => b.at === at)
      return { at, succeeded: inBucket.reduce((n, b) => n + b.succeeded, 0), failed: inBucket.reduce((n, b) => n + b.failed, 0) }
    })
    const hour = (queue: string, key: "succeeded" | "failed") => throughput.filter((b) => b.queue === queue).reduce((n, b) => n + b[key], 0)
    const total = (state: ExecutionState) => queues.reduce((n, q) => n + q.counts[state], 0)
    const oldest = queues.reduce<number | null>((m, q) => (q.oldestDueAt !== null && (m === null || q.oldestDueAt < m) ? q.oldestDueAt : m), null)
    const lastHour = series.reduce((acc, b) => ({ ok: acc.ok + b.succeeded, bad: acc.bad + b.failed }), { ok: 0, bad: 0 })
    const refresh = ctx.url.searchParams.get("refresh") === "1"
    const workers = yield* workersCard(now)

    const stat = (label: string, value: string, extra: Html | string = "") =>
      html`<div class="card"><div class="muted small">${label}</div><div class="stat">${value}</div><div class="small muted">${extra}</div></div>`

    const body = html`
<div class="actions" style="justify-content:space-between"><h1>Overview</h1>
<span class="small muted">${time(now)} UTC · ${refresh ? html`<a href="/">stop auto-refresh</a>` : html`<a href="/?refresh=1">auto-refresh</a>`}</span></div>
<div class="stats">
${stat("Queued", count(total("queued")), listLink({ state: "queued" }, "view"))}
${stat("Running", count(total("running")), stuck.length > 0 ? html`<span style="color:var(--bad)">${stuck.length} stuck</span>` : "none stuck")}
${stat("Finished in the last hour", count(lastHour.ok + lastHour.bad), html`${count(lastHour.ok)} succeeded · <span style="${lastHour.bad ? "color:var(--bad)" : ""}">${count(lastHour.bad)} failed</span>`)}
${stat("Oldest due queued", oldest === null ? "—" : duration(now - oldest), oldest === null ? "nothing waiting" : "waiting to be claimed")}
</div>
<div class="card"><h2>Queues</h2><table class="queues">
<thead><tr><th>Queue</th>${states.map((s) => html`<th class="num">${s}</th>`)}<th class="num">Oldest due</th><th class="num">Succeeded / h</th><th class="num">Failed / h</th><th>Limits</th><th>Held back</th><th>State</th></tr></thead>
<tbody>${queues.map((q) => {
      const declared = core.registry.queues.get(q.queue)
      return html`<tr><td>${listLink({ queue: q.queue }, q.queue)}${declared ? "" : html` <span class="muted small">(not declared here)</span>`}</td>
${states.map((s) => html`<td class="num">${q.counts[s] ? listLink({ queue: q.queue, state: s }, count(q.counts[s])) : html`<span class="muted">0</span>`}</td>`)}
<td class="num">${q.oldestDueAt === null ? html`<span class="muted">—</span>` : duration(now - q.oldestDueAt)}</td>
<td class="num">${count(hour(q.queue, "succeeded"))}</td><td class="num">${count(hour(q.queue, "failed"))}</td>
<td class="small">${limitsCell(declared)}</td>
<td class="nowrap small">${heldBackCell(flows.get(q.queue))}</td>
<td class="nowrap">${queueState(q.queue, pauses.get(q.queue), now)}</td></tr>`
    })}</tbody></table></div>
<div class="card"><h2>Throughput, last hour</h2>${chart(series)}</div>
<div class="grid" style="margin-bottom:16px">
<div class="card"><h2>Stuck executions</h2><p class="small muted">Running with an expired lease: the worker died or stalled; any worker's Reaper retries or fails them.</p>
${stuck.length === 0 ? html`<p class="muted">None.</p>` : html`<table><thead><tr><th>Execution</th><th>Job</th><th>Worker</th><th>Lease expired</th></tr></thead><tbody>${stuck.map((e) =>
      html`<tr><td>${executionLink(e.id, e.id.slice(0, 8) + "…")}</td><td>${e.job}</td><td class="mono small">${e.leaseOwner ?? ""}</td><td>${relative(e.leaseExpiresAt, now)}</td></tr>`
    )}</tbody></table>`}</div>
<div class="card"><h2>Unknown jobs</h2><p class="small muted">Queued executions of Jobs these apps do not define: no worker built from them will claim them.</p>
${unknown.length === 0 ? html`<p class="muted">None.</p>` : html`<table><thead><tr><th>Job</th><th class="num">Queued</th></tr></thead><tbody>${unknown.map((u) =>
      html`<tr><td>${listLink({ job: u.job, state: "queued" }, u.job)}</td><td class="num">${count(u.count)}</td></tr>`
    )}</tbody></table>`}</div>
</div>
${workers}
<div class="card"><h2>Recent failures</h2>${executionsTable(failures, now, "No failed executions.")}
${failures.length > 0 ? html`<div class="pager">${listLink({ state: "failed" }, "All failed executions →")}</div>` : ""}</div>`
    return renderPage(ctx, { title: "Overview", section: "overview", body, refreshSeconds: refresh ? 5 : undefined })
  })
