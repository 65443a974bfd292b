/**
 * The stderr log format: the same logfmt line, byte for byte, as Effect's
 * `Logger.formatLogFmt`, written for a worker that logs a line per job. Labels and
 * level names are sanitised once and cached, plain values are recognised with `test`
 * instead of `match`, and the fiber id needs no helper. tests/runtime/LogFmt.test.ts
 * compares it with `Logger.formatLogFmt` over messages, causes, spans and annotations.
 */
import { Cause, Formatter, Logger, References } from "effect"

/** A value needs quoting when it holds whitespace, a double quote or an equals sign. */
const textOnly = /^[^\s"=]*$/
const value = (v: string): string => (textOnly.test(v) ? v : JSON.stringify(v))
const unknown = (v: unknown): string => (typeof v === "string" ? v : Formatter.format(v, { space: 0 }))

const labels = new Map<string, string>()
/** ` label=` with the label's whitespace, `=` and `"` replaced by `_`, cached per label. */
const label = (key: string): string => {
  let out = labels.get(key)
  if (out === undefined) {
    out = ` ${key.replace(/[\s="]/g, "_")}=`
    if (labels.size < 1_000) labels.set(key, out)
  }
  return out
}

const levels = new Map<string, string>()
const level = (logLevel: string): string => {
  let out = levels.get(logLevel)
  if (out === undefined) levels.set(logLevel, (out = ` level=${value(logLevel.toUpperCase())}`))
  return out
}

/** A logfmt line per log call: timestamp, level, fiber, message(s), cause, spans, annotations. */
export const formatLogFmt: Logger.Logger<unknown, string> = Logger.make(({ cause, date, fiber, logLevel, message }) => {
  // An ISO timestamp never needs quoting.
  let out = `timestamp=${date.toISOString()}${level(logLevel)} fiber=#${fiber.id}`
  if (Array.isArray(message)) {
    for (const m of message) out += ` message=${value(unknown(m))}`
  } else {
    out += ` message=${value(unknown(message))}`
  }
  if (cause.reasons.length > 0) out += ` cause=${value(Cause.pretty(cause))}`
  const spans = fiber.getRef(References.CurrentLogSpans)
  if (spans.length > 0) {
    const now = date.getTime()
    for (const [name, start] of spans) out += `${label(name)}${now - start}ms`
  }
  const annotations = fiber.getRef(References.CurrentLogAnnotations)
  for (const key of Object.keys(annotations)) out += `${label(key)}${value(unknown(annotations[key]))}`
  return out
})
