/**
 * How PostgreSQL failures read: one StoreError naming the operation, the server's
 * message and SQLSTATE, and whether the server is only unreachable or restarting. Apart
 * from PostgresConnection.ts (which imports `@effect/sql-pg`) so that transactional
 * enqueue, exported from the package's index, does not load the driver into every
 * process that imports Roster.
 */
import { SqlError } from "effect/sql/SqlError"
import { StoreError } from "../Store.ts"

/** The URL with any password hidden, for messages. */
export const redactUrl = (url: string): string => url.replace(/(\/\/[^:/@]+):[^@/]*@/, "$1:***@")

/** SQLSTATEs that mean "the server is going away or not back yet": safe to try again. */
const unavailableCodes = new Set(["57P01", "57P02", "57P03", "53300", "40P01", "40001"])

const codeOf = (e: SqlError): string | undefined => {
  const code = (e.reason.cause as { code?: unknown } | undefined)?.code
  return typeof code === "string" ? code : undefined
}

/** Whether a failure is the server being unreachable or restarting (worth retrying), not a fault of the statement. */
export const isUnavailable = (e: unknown): boolean =>
  e instanceof SqlError && (e.isRetryable || unavailableCodes.has(codeOf(e) ?? ""))

/** Maps any database failure to one readable StoreError. */
export const toStoreError = (what: string, cause: unknown): StoreError => {
  if (cause instanceof StoreError) return cause
  let detail: string
  if (cause instanceof SqlError) {
    const inner = cause.reason.cause as { message?: unknown; code?: unknown; detail?: unknown } | undefined
    const text = typeof inner?.message === "string" && inner.message !== "" ? inner.message : cause.reason.message ?? cause.message
    const sqlState = typeof inner?.code === "string" && /^[0-9A-Z]{5}$/.test(inner.code) ? `(SQLSTATE ${inner.code})` : ""
    detail = [text, sqlState, typeof inner?.detail === "string" ? inner.detail : ""].filter((s) => s !== "").join(" ")
    if (isUnavailable(cause)) detail += " (the database is unreachable or restarting)"
  } else {
    detail = cause instanceof Error ? cause.message : String(cause)
  }
  return new StoreError({ message: `${what}: ${detail}`, cause })
}
