/**
 * How the dashboard writes times, durations and JSON. Times are shown in UTC (the
 * server renders them; there is no client script to localise them), with a relative
 * form next to them, measured from the page's `now` (read from the Clock).
 */
import { html, type Html } from "./Html.ts"

/** `2024-05-01 12:03:04` (UTC), or an em dash for none. */
export const time = (ms: number | null): string => (ms === null ? "—" : new Date(ms).toISOString().replace("T", " ").slice(0, 19))

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

/** Pretty JSON text for a stored value (already decoded JSON). */
export const json = (value: unknown): string => {
  if (value === undefined) return "undefined"
  try {
    return JSON.stringify(value, null, 2) ?? String(value)
  } catch {
    return String(value)
  }
}

/** A number with thousands separators. */
export const count = (n: number): string => n.toLocaleString("en-US")
