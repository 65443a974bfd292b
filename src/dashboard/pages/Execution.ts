/**
 * One execution: its summary and timing (with why it has not started when queued and
 * due, FlowExplain.ts, and its flow keys), the retry and cancel actions its state
 * allows, payload and result, the last error with its pretty cause, every attempt
 * (worker, timing, outcome, error), the durable steps, and the captured logs with any
 * drop counts; for orchestration, its parent, what it waits for while waiting, its
 * children (the newest 20, counted by state, linked to the list filtered by parent) and
 * the signals sent to it. Everything user-supplied is escaped by the `html` template, and what
 * it shows of each value is bounded (Format.ts): a cut payload, result, cause, step
 * output or log line says which command prints it whole.
 */
import { Effect } from "effect"
import { ExecutionNotFound } from "../../jobs/errors.ts"
import { Client } from "../../runtime/Client.ts"
import { Core } from "../../runtime/Core.ts"
import { limitsOfQueue, whyNotStarted } from "../../store/FlowExplain.ts"
import { documentJson } from "../../jobs/JsonText.ts"
import { maxTime } from "../../jobs/TimeRange.ts"
import { type Signal, waitText } from "../../jobs/Wait.ts"
import { type Attempt, type Execution, states, UnparsedPayload } from "../../store/Execution.ts"
import { Store } from "../../store/Store.ts"
import { badge, executionLink, listLink, postButton } from "../Components.ts"
import { clip, clockTime, count, cutNote, duration, edges, maxListedChars, maxListedRows, maxLogLineChars, maxShownChars, relative, shownJson, shownText, when } from "../Format.ts"
import type { Handler } from "../Http.ts"
import { renderPage } from "../Http.ts"
import { html, q, type Fragment } from "../Html.ts"
import { securityHeaders } from "../Security.ts"

const row = (label: string, value: Fragment) => html`<tr><th>${label}</th><td>${value}</td></tr>`

/** The SQLite store may keep a success only on the execution (no attempt row): show it as an attempt anyway. */
const withFinalAttempt = (e: Execution, attempts: ReadonlyArray<Attempt>): ReadonlyArray<Attempt> =>
  e.state === "succeeded" && !attempts.some((a) => a.attempt === e.attempt) && e.startedAt !== null && e.finishedAt !== null
    ? [...attempts, { executionId: e.id, attempt: e.attempt, worker: e.leaseOwner ?? "", startedAt: e.startedAt, finishedAt: e.finishedAt, outcome: "succeeded", error: null }]
    : attempts

/** The row standing for the middle of a long list, with the command that prints all of it. */
const gapRow = (columns: number, total: number, what: string, id: string) =>
  html`<tr><td colspan="${columns}" class="muted small">… ${count(total - maxListedRows)} more ${what}; <code>roster executions show ${id} --json</code> prints them all …</td></tr>`

/** A burst of logs shows its first and last this many lines (a handler may log 100,000). */
const logEdge = 500

const levelClass = (level: string) => (/error|fatal/i.test(level) ? "log-error" : /warn/i.test(level) ? "log-warn" : "")

/**
 * GET /executions/:id/payload.json and /result.json: the whole value as a JSON document
 * (what a page cuts), with the dashboard's security headers and `nosniff`, so a browser
 * shows it as text and never runs it.
 */
export const executionValue: Handler = (_ctx, [id = "", which = "payload"]) =>
  Effect.gen(function*() {
    const e = yield* (yield* Store).executionsGet(id)
    if (!e) return yield* new ExecutionNotFound({ id, message: `No execution ${id}.` })
    const value = which === "result" ? e.result : e.payload
    return new Response(documentJson(value instanceof UnparsedPayload ? value.text : value) + "\n", {
      headers: { ...securityHeaders, "content-type": "application/json; charset=utf-8" }
    })
  })

/** Why a queued, due execution has not started, under this dashboard's config (FlowExplain.whyNotStarted); null otherwise. */
const waitingForOf = (e: Execution, now: number) =>
  Effect.gen(function*() {
    if ((e.state !== "queued" && e.state !== "waiting") || e.runAt > now) return null
    const store = yield* Store
    const core = yield* Core
    const [flow, workers] = yield* Effect.all([store.queuesFlow({ queue: e.queue, now }), store.workersList({ now })])
    return whyNotStarted(e, limitsOfQueue(core.registry, e.queue), flow, now, workers)
  })

/** The most children the page lists (newest first); the counts by state cover them all. */
const maxListedChildren = 20

/** An execution's newest children and its counts of children by state. */
const childrenOf = (id: string) =>
  Effect.gen(function*() {
    const store = yield* Store
    const [rows, counts] = yield* Effect.all([store.executionsList({ parentId: id, limit: maxListedChildren }), store.executionsCount({ parentId: id })])
    return { rows, counts, total: Object.values(counts).reduce((n, c) => n + c, 0) }
  })

/** The current wait of a waiting execution, and when it is due where the wait's line does not say so. */
const waitRow = (e: Execution, now: number) => {
  if (e.state !== "waiting" || e.wait === null) return ""
  const until = e.wait.kind === "children" ? null : e.wait.until
  const due = e.runAt >= maxTime || e.runAt === until ? "" : html` <span class="muted small">woken, due ${when(e.runAt, now)}</span>`
  return row("Waiting for", html`<span class="wait">${clip(waitText(e.wait), 600)}</span>${due}`)
}

const childrenCard = (e: Execution, children: { readonly rows: ReadonlyArray<Execution>; readonly counts: Record<string, number>; readonly total: number }, now: number) => {
  if (children.total === 0) return ""
  const all = listLink({ parent: e.id }, `All ${count(children.total)} children →`)
  return html`<div class="card children"><h2>Children</h2>
<div class="actions small child-counts" style="margin-bottom:10px">${states.filter((s) => (children.counts[s] ?? 0) > 0).map((s) => html`<span class="child-count" data-state="${s}">${badge(s)} ${listLink({ parent: e.id, state: s }, count(children.counts[s] ?? 0))}</span>`)}</div>
<table><thead><tr><th>Execution</th><th>Job</th><th>Step</th><th>State</th><th>Created</th><th>Finished</th></tr></thead>
<tbody>${children.rows.map((c) => html`<tr><td>${executionLink(c.id, c.id.slice(0, 8) + "…" + c.id.slice(-6))}</td><td>${c.job}</td><td class="mono small">${clip(c.parentStep ?? "", 200)}</td><td>${badge(c.state)}</td><td>${when(c.createdAt, now)}</td><td>${when(c.finishedAt, now)}</td></tr>`)}
${children.total > children.rows.length ? html`<tr><td colspan="6" class="muted small">… and ${count(children.total - children.rows.length)} more</td></tr>` : ""}</tbody></table>
<div class="pager">${all}</div></div>`
}

/** The signals sent to it, oldest first; a kept one waits for a wait to take it. */
const signalsCard = (signals: ReadonlyArray<Signal>, whole: string, now: number) =>
  signals.length === 0 ? "" : html`<div class="card signals"><h2>Signals</h2><table>
<thead><tr><th>Name</th><th>Sent</th><th>Taken</th><th>Payload</th></tr></thead>
<tbody>${edges(signals).map((s) => s === "gap" ? html`<tr><td colspan="4" class="muted small">… ${count(signals.length - maxListedRows)} more signals; <code>${whole}</code> prints them all …</td></tr>` : html`<tr><td class="mono">${clip(s.name, 200)}</td><td>${when(s.sentAt, now)}</td>
<td>${s.consumedAt === null ? html`<span class="muted">kept for a wait to come</span>` : when(s.consumedAt, now)}</td><td>${shownText(s.payload, whole, maxListedChars)}</td></tr>`)}</tbody></table></div>`

/** GET /executions/:id */
export const executionDetail: Handler = (ctx, [id = ""]) =>
  Effect.gen(function*() {
    const client = yield* Client
    const store = yield* Store
    const e = yield* client.get(id)
    if (!e) return yield* new ExecutionNotFound({ id, message: `No execution ${id}.` })
    const logs = yield* store.logsList(id)
    const waitingFor = yield* waitingForOf(e, ctx.now)
    const children = yield* childrenOf(e.id)
    const shownLines = logs.lines.length <= 2 * logEdge ? logs.lines : [...logs.lines.slice(0, logEdge), "gap" as const, ...logs.lines.slice(-logEdge)]
    const { now } = ctx
    const whole = `roster executions show ${e.id} --json`
    const longLines = shownLines.some((l) => l !== "gap" && (l.message.length > maxLogLineChars || (l.annotations?.length ?? 0) > maxLogLineChars))
    const attempts = withFinalAttempt(e, e.attempts)
    const stuck = e.state === "running" && e.leaseExpiresAt !== null && e.leaseExpiresAt < now
    const base = `/executions/${q(e.id)}`
    const actions = [
      e.state === "failed" || e.state === "cancelled" ? postButton(`${base}/retry`, "Retry", { kind: "primary" }) : "",
      e.state === "queued" || e.state === "waiting" || (e.state === "running" && !e.cancelRequested) ? postButton(`${base}/cancel`, "Cancel", { kind: "danger" }) : ""
    ]

    const body = html`
<div class="actions" style="justify-content:space-between"><h1>${e.job} <span class="muted mono small">${e.id}</span></h1><div class="actions">${actions}</div></div>
<div class="grid" style="margin-bottom:16px">
<div class="card"><h2>Execution</h2><table class="kv">
${row("State", html`${badge(e.state)}${stuck ? html` <span class="badge b-failed">stuck: lease expired</span>` : ""}${e.cancelRequested && e.state === "running" ? html` <span class="muted small">cancel requested</span>` : ""}${e.state === "queued" && e.attempt > 0 ? html` <span class="muted small">retrying</span>` : ""}`)}
${row("Job", listLink({ job: e.job }, e.job))}
${row("Queue", listLink({ queue: e.queue }, e.queue))}
${e.parentId !== null ? row("Parent", html`<span class="parent">${executionLink(e.parentId)}${e.parentStep !== null ? html` <span class="muted small">step <span class="mono">${clip(e.parentStep, 200)}</span></span>` : ""}</span>`) : ""}
${waitRow(e, now)}
${children.total > 0 ? row("Children", listLink({ parent: e.id }, `${count(children.total)} children`)) : ""}
${waitingFor !== null ? row("Not started", html`<span class="waiting-for">${waitingFor}</span>`) : ""}
${e.concurrencyKey !== null ? row("Concurrency key", html`<span class="mono">${clip(e.concurrencyKey, 600)}</span>`) : ""}
${e.rateKey !== null ? row("Rate key", html`<span class="mono">${clip(e.rateKey, 600)}</span>`) : ""}
${row("Attempt", `${e.attempt} of ${e.maxAttempts}`)}
${row("Priority", e.priority)}
${row("Retry policy", `${e.retry.kind}, ${e.retry.attempts} attempts, from ${duration(e.retry.initialMs)} up to ${duration(e.retry.maxMs)}${e.retry.jitter === "full" ? ", full jitter" : ""}`)}
${row("Timeout", duration(e.timeoutMs))}
${e.idempotencyKey !== null ? row("Idempotency key", html`<span class="mono">${clip(e.idempotencyKey, 600)}</span>`) : ""}
${e.scheduleId !== null ? row("Schedule", html`<a href="/schedules/${e.scheduleId.split("/").map(q).join("/")}">${e.scheduleId}</a>${e.fireAt !== null ? html` <span class="muted small">fire due ${when(e.fireAt, now)}</span>` : html` <span class="muted small">run now</span>`}`) : ""}
${e.retryOf !== null ? row("Retry of", executionLink(e.retryOf)) : ""}
</table></div>
<div class="card"><h2>Timing</h2><table class="kv">
${row("Created", when(e.createdAt, now))}
${row("Run at", e.state === "waiting" && e.runAt >= maxTime ? html`<span class="muted">when woken</span>` : when(e.runAt, now))}
${row("Started", when(e.startedAt, now))}
${row("Finished", when(e.finishedAt, now))}
${e.startedAt !== null && e.finishedAt !== null ? row("Last attempt took", duration(e.finishedAt - e.startedAt)) : ""}
${e.finishedAt !== null ? row("Created → finished", duration(e.finishedAt - e.createdAt)) : ""}
${e.state === "running" ? row("Lease", html`<span class="mono small">${e.leaseOwner ?? ""}</span> · expires ${relative(e.leaseExpiresAt, now)}`) : ""}
</table></div>
</div>
${e.error ? html`<div class="card"><h2>Error</h2><p><strong>${e.error.tag}</strong>: ${clip(e.error.message, maxShownChars)} <span class="muted small">(${e.error.retryable ? "retryable" : "permanent"})</span></p>
${e.error.pretty ? html`<details><summary>Cause</summary>${shownText(e.error.pretty, whole)}</details>` : ""}</div>` : ""}
<div class="grid" style="margin-bottom:16px">
<div class="card"><h2>Payload</h2>${shownJson(e.payload, whole, `${base}/payload.json`)}</div>
<div class="card"><h2>Result</h2>${e.result === null ? html`<p class="muted">None${e.finishedAt === null ? " yet" : ""}.</p>` : shownJson(e.result, whole, `${base}/result.json`)}</div>
</div>
<div class="card"><h2>Attempts</h2>${attempts.length === 0 ? html`<p class="muted">No attempt has run yet.</p>` : html`<table>
<thead><tr><th class="num">#</th><th>Outcome</th><th>Worker</th><th>Started</th><th class="num">Took</th><th>Error</th></tr></thead>
<tbody>${edges(attempts).map((a) => a === "gap" ? gapRow(6, attempts.length, "attempts", e.id) : html`<tr><td class="num">${a.attempt}</td><td>${badge(a.outcome)}</td><td class="mono small">${a.worker}</td>
<td>${when(a.startedAt, now)}</td><td class="num">${duration(a.finishedAt - a.startedAt)}</td>
<td>${a.error ? html`${a.error.tag}: ${clip(a.error.message, maxLogLineChars)}${a.error.pretty ? html`<details><summary>cause</summary>${shownText(a.error.pretty, whole, maxListedChars)}</details>` : ""}` : ""}</td></tr>`)}</tbody></table>`}</div>
${childrenCard(e, children, now)}
${signalsCard(e.signals, whole, now)}
${e.steps.length > 0 ? html`<div class="card"><h2>Steps</h2><table><thead><tr><th>Step</th><th class="num">Attempt</th><th>Saved</th><th>Output</th></tr></thead>
<tbody>${edges(e.steps).map((s) => s === "gap" ? gapRow(4, e.steps.length, "steps", e.id) : html`<tr><td class="mono">${clip(s.name, 200)}</td><td class="num">${s.attempt}</td><td>${when(s.createdAt, now)}</td><td>${shownText(s.output, whole, maxListedChars)}</td></tr>`)}</tbody></table></div>` : ""}
<div class="card"><h2>Logs</h2>${logs.lines.length === 0 && logs.drops.length === 0 ? html`<p class="muted">No captured logs.</p>` : html`<table>
<thead><tr><th>Time</th><th class="num">#</th><th>Level</th><th>Message</th></tr></thead>
<tbody>${shownLines.map((l) => l === "gap" ? html`<tr><td colspan="4" class="muted small">… ${count(logs.lines.length - shownLines.length + 1)} more lines; <code>roster executions logs ${e.id}</code> prints them all …</td></tr>` : html`<tr class="${levelClass(l.level)}"><td class="mono small nowrap">${clockTime(l.at)}</td><td class="num">${l.attempt}</td>
<td class="small">${l.level}</td><td><pre style="border:none;background:transparent;padding:0">${clip(l.message, maxLogLineChars)}</pre>${l.annotations ? html`<div class="mono small muted">${clip(l.annotations, maxLogLineChars)}</div>` : ""}</td></tr>`)}</tbody></table>
${longLines ? cutNote(`the first ${count(maxLogLineChars)} characters of each line`, `roster executions logs ${e.id}`) : ""}
${logs.drops.map((d) => html`<p class="small" style="color:var(--warn)">Attempt ${d.attempt}: ${d.dropped} line(s) dropped under back-pressure.</p>`)}`}</div>`
    return renderPage(ctx, { title: `${e.job} ${e.id.slice(0, 8)}`, section: "executions", body })
  })
