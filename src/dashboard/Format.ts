/**
 * How the dashboard writes times, durations and JSON. Times are shown in UTC (the
 * server renders them; there is no client script to localise them), with a relative
 * form next to them, measured from the page's `now` (read from the Clock); any stored
 * number renders (see TimeRange.ts). What a page shows of a value is bounded: JSON and
 * text past {@link maxShownChars} (log lines past {@link maxLogLineChars}) are cut,
 * with the command that prints the whole value (and, for a payload or result, a link
 * to it as a JSON document).
 */
import { prettyJson } from "../jobs/JsonText.ts"
import { isoTime, timeText } from "../jobs/TimeRange.ts"
import { html, type Html } from "./Html.ts"

/** Most characters of one payload, result, step output or cause a page shows. */
export const maxShownChars = 64 * 1024

/** Most characters of one log line (or its annotations) a page shows. */
export const maxLogLineChars = 2_000

/** `2024-05-01 12:03:04` (UTC), or an em dash for none. */
export const time = (ms: number | null): string => (ms === null ? "—" : timeText(ms))

/** `12:03:04.567` (UTC) of a time, for log lines. */
export const clockTime = (ms: number): string => {
  const iso = isoTime(ms)
  return /^\d{4}-\d\d-\d\dT/.test(iso) ? iso.slice(11, 23) : iso
}

/** A duration in the largest sensible unit: `12 ms`, `3.4 s`, `5m 02s`, `3h 05m`, `2d 04h`. */
export const duration = (ms: number): string => {
  const abs = Math.abs(ms)
  if (abs < 1000) return `${Math.round(abs)} ms`
  if (abs < 60_000) return `${Number((abs / 1000).toFixed(abs < 10_000 ? 2 : 1))} s`
  const s = Math.floor(abs / 1000)
  const pad = (n: number) => String(n).padStart(2, "0")
  if (s < 3600) return `${Math.floor(s / 60)}m ${pad(s % 60)}s`
  if (s < 86_400) return `${Math.floor(s / 3600)}h ${pad(Math.floor((s % 3600) / 60))}m`
  return `${Math.floor(s / 86_400)}d ${pad(Math.floor((s % 86_400) / 3600))}h`
}

/** `3m 02s ago` or `in 5 s`, relative to `now`. */
export const relative = (ms: number | null, now: number): string => {
  if (ms === null) return ""
  const d = now - ms
  if (Math.abs(d) < 1000) return "now"
  return d > 0 ? `${duration(d)} ago` : `in ${duration(-d)}`
}

/** A time with its relative form as a tooltip-free second line. */
export const when = (ms: number | null, now: number): Html =>
  ms === null ? html`<span class="muted">—</span>` : html`<span class="nowrap">${time(ms)}</span> <span class="muted small nowrap">${relative(ms, now)}</span>`

/** Pretty JSON text for a stored value (already decoded JSON), whatever its size or depth (unbounded: see {@link shownJson}). */
export const json = (value: unknown): string => prettyJson(value).text

/**
 * A stored value as a page shows it: pretty JSON, cut at {@link maxShownChars}, then a
 * line saying how to get all of it (`whole` is the command printing the whole value).
 */
export const shownJson = (value: unknown, whole: string, link?: string): Html => {
  const shown = prettyJson(value, { maxChars: maxShownChars })
  return html`<pre>${shown.text}${shown.truncated ? "…" : ""}</pre>${shown.truncated ? cutNote(`the first ${count(maxShownChars)} characters`, whole, link) : ""}`
}

/** Text cut at `max` characters, with `…` when it was longer. */
export const clip = (text: string, max: number): string => (text.length > max ? `${text.slice(0, max)}…` : text)

/** Long text in a `<pre>`, cut at `max` characters (default {@link maxShownChars}) with how to get all of it. */
export const shownText = (text: string, whole: string, max = maxShownChars): Html =>
  html`<pre>${clip(text, max)}</pre>${text.length > max ? cutNote(`${count(max)} of ${count(text.length)} characters`, whole) : ""}`

/** Most characters of each of a list's values (an attempt's cause, a step's output) a page shows. */
export const maxListedChars = 2_000

/** Most rows of a list (attempts, steps) a page shows: the first and last half of it. */
export const maxListedRows = 200

/** A list's rows as a page shows them: all, or the first and last {@link maxListedRows}/2 around a `gap`. */
export const edges = <A>(rows: ReadonlyArray<A>): ReadonlyArray<A | "gap"> =>
  rows.length <= maxListedRows ? rows : [...rows.slice(0, maxListedRows / 2), "gap", ...rows.slice(-maxListedRows / 2)]

/** The line under a cut value (with a link to the whole value as JSON, when the dashboard serves it). */
export const cutNote = (shown: string, whole: string, link?: string): Html =>
  html`<p class="muted small">Showing ${shown}; <code>${whole}</code> prints the whole value${link ? html` (or open <a href="${link}">the whole value as JSON</a>)` : ""}.</p>`

/** A number with thousands separators. */
export const count = (n: number): string => n.toLocaleString("en-US")
