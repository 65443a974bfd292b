/**
 * Safe HTML for the dashboard's server-rendered pages. Everything shown there comes
 * from users — payloads, job names, errors, log lines — so escaping is the default:
 * the `html` template escapes every interpolated value unless it is already `Html`
 * (built by `html` itself or, for the few fixed fragments, by `raw`). There is no
 * other way to put a string on a page.
 */

/** A fragment of markup that is safe to send as is. */
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text
  }
}

/** What may be interpolated: markup, text (escaped), numbers, nothing, or lists of those. */
export type Fragment = Html | string | number | boolean | null | undefined | ReadonlyArray<Fragment>

const entities: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&quot;", "'": "&#39;" }

/** Escapes text for element content and quoted attribute values. */
export const escape = (text: string): string => text.replace(/[&<>"']/g, (c) => entities[c] ?? c)

const render = (value: Fragment): string => {
  if (value instanceof Html) return value.text
  if (value === null || value === undefined || value === false || value === true) return ""
  if (Array.isArray(value)) return value.map(render).join("")
  return escape(String(value))
}

/** The template tag: literal parts are trusted, interpolated values are escaped. */
export const html = (strings: TemplateStringsArray, ...values: ReadonlyArray<Fragment>): Html => {
  let out = strings[0] ?? ""
  values.forEach((v, i) => {
    out += render(v) + (strings[i + 1] ?? "")
  })
  return new Html(out)
}

/** Marks a fixed, trusted string as markup (never use it with user data). */
export const raw = (text: string): Html => new Html(text)

/** Escapes a value for a URL query or path segment. */
export const q = (value: string): string => encodeURIComponent(value)
