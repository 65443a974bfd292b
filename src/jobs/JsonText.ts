/**
 * How deep a JSON value nests, and JSON text of it whose size does not grow with its
 * depth. Enqueue refuses a payload nested deeper than {@link maxPayloadDepth} (see
 * Enqueue.ts); but a row written by an older version, by hand, or a handler's result
 * may nest deeper, and `JSON.stringify(v, null, 2)` indents every level — a 40 KB value
 * nested 20,000 deep becomes 800 MB of spaces. {@link prettyJson} indents the first
 * levels and writes deeper ones compactly (still valid JSON, the same value), and can
 * stop after a number of characters, saying so.
 */

/** The deepest payload enqueue accepts: 64 levels of arrays and objects (`{"a":1}` is 1, `1` is 0). */
export const maxPayloadDepth = 64

/** Levels {@link prettyJson} indents; deeper values are written compactly. */
export const indentLevels = 16

/**
 * The nesting depth of a JSON value, counted up to `limit + 1` (so a value nested
 * 20,000 deep costs no more than one nested `limit + 1` deep, and no stack).
 */
export const depthOf = (value: unknown, limit = maxPayloadDepth): number => {
  let deepest = 0
  const walk = (v: unknown, depth: number): void => {
    if (v === null || typeof v !== "object" || deepest > limit) return
    const here = depth + 1
    if (here > deepest) deepest = here
    if (here > limit) return
    if (Array.isArray(v)) {
      for (const item of v) walk(item, here)
    } else {
      for (const key in v) walk((v as Record<string, unknown>)[key], here)
    }
  }
  walk(value, 0)
  return deepest
}

/** JSON text, possibly cut short. */
export interface JsonText {
  readonly text: string
  /** Whether `text` stops before the end of the value. */
  readonly truncated: boolean
}

const compact = (v: unknown): string => {
  try {
    return JSON.stringify(v) ?? "null"
  } catch {
    return JSON.stringify(String(v))
  }
}

/**
 * Pretty JSON text of a (decoded JSON) value: two-space indentation for the first
 * {@link indentLevels} levels, compact below; at most `maxChars` characters (then
 * `truncated`). Never throws.
 */
export const prettyJson = (value: unknown, options: { readonly maxChars?: number } = {}): JsonText => {
  const maxChars = options.maxChars ?? Infinity
  const parts: Array<string> = []
  let length = 0
  const push = (s: string): boolean => {
    parts.push(s)
    length += s.length
    return length <= maxChars
  }
  // Returns false once the budget is spent (the caller stops writing).
  const write = (v: unknown, level: number): boolean => {
    if (v === null || typeof v !== "object" || level >= indentLevels || typeof (v as { toJSON?: unknown }).toJSON === "function") return push(compact(v))
    const pad = "\n" + "  ".repeat(level + 1)
    if (Array.isArray(v)) {
      if (v.length === 0) return push("[]")
      if (!push("[")) return false
      for (let i = 0; i < v.length; i++) {
        if (!push((i === 0 ? "" : ",") + pad)) return false
        const item = v[i]
        if (!write(item === undefined || typeof item === "function" || typeof item === "symbol" ? null : item, level + 1)) return false
      }
      return push("\n" + "  ".repeat(level) + "]")
    }
    let first = true
    for (const key of Object.keys(v)) {
      const item = (v as Record<string, unknown>)[key]
      if (item === undefined || typeof item === "function" || typeof item === "symbol") continue
      if (!push((first ? "{" : ",") + pad + JSON.stringify(key) + ": ")) return false
      first = false
      if (!write(item, level + 1)) return false
    }
    return push(first ? "{}" : "\n" + "  ".repeat(level) + "}")
  }
  if (value === undefined) return { text: "undefined", truncated: false }
  const complete = write(value, 0)
  const text = parts.join("")
  return complete ? { text, truncated: false } : { text: text.slice(0, maxChars), truncated: true }
}

/**
 * Pretty JSON of a whole document (the CLI's `--json`): `JSON.stringify(v, null, 2)`
 * when the value is shallow enough, else {@link prettyJson} (same value, bounded indentation).
 */
export const documentJson = (value: unknown): string =>
  depthOf(value, indentLevels) <= indentLevels ? JSON.stringify(value, null, 2) : prettyJson(value).text

/** A stored JSON text parsed, or the text itself when it is not JSON (a row written by hand). Never throws. */
export const parseStored = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}
