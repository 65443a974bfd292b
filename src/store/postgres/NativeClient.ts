/**
 * Bun's built-in PostgreSQL client (`Bun.SQL`), for the drain's two hot statements:
 * the claim and the batch of successes. Its wire protocol and row decoding are native,
 * so a job costs the worker's thread about half the CPU of the JavaScript driver
 * (bench/RESULTS.md, "twenty-second pass"); everything else stays on `@effect/sql-pg`,
 * which also gives LISTEN and transactions.
 *
 * A failure becomes the same `SqlError` the other driver raises, with the SQLSTATE as
 * its cause's `code`, so `operation` retries it (server restarting or unreachable) and
 * `toStoreError` names it in one way for both drivers.
 */
import { Effect } from "effect"
import { ConnectionError, SqlError, UnknownError } from "effect/sql/SqlError"
import type { PostgresOptions } from "./PostgresConnection.ts"

/** One pool of Bun.SQL connections, closed with the store's scope. */
export interface NativeClient {
  /** Runs one statement with positional parameters (`$1`…), prepared once per connection. */
  readonly run: <Row>(text: string, params: ReadonlyArray<unknown>) => Effect.Effect<ReadonlyArray<Row>, SqlError>
  readonly close: Effect.Effect<void>
}

/** An element of an array literal: quoted, with `"` and `\\` escaped (most texts have neither); null is NULL. */
const element = (value: string | null): string =>
  value === null ? "NULL" : value.indexOf('"') < 0 && value.indexOf("\\") < 0 ? `"${value}"` : `"${value.replace(/[\\"]/g, "\\$&")}"`

/**
 * An array parameter as PostgreSQL's array literal text (`{"a","b"}`, `{1,2}`), for a
 * statement that casts it (`$1::text[]`). Bun.SQL builds the same text from a JS array,
 * but escapes every element with a regular expression: a CPU profile of a drain put
 * that at 3.5 µs of the worker's thread a job (bench/RESULTS.md, twenty-third pass).
 */
export const arrayText = (values: ReadonlyArray<string | null>): string => {
  let text = "{"
  for (let i = 0; i < values.length; i++) text += (i === 0 ? "" : ",") + element(values[i]!)
  return text + "}"
}

/**
 * {@link arrayText} of whole numbers (rounded), which need no quotes. A value equal to the
 * one before reuses its text: a batch's times are mostly the same millisecond, and a
 * number past 2³¹ is slow to turn into text.
 */
export const intArrayText = (values: ReadonlyArray<number>): string => {
  let text = "{"
  let last = NaN
  let lastText = ""
  for (let i = 0; i < values.length; i++) {
    const v = Math.round(values[i]!)
    if (v !== last) {
      last = v
      lastText = String(v)
    }
    text += (i === 0 ? "" : ",") + lastText
  }
  return text + "}"
}

/** Bun's own codes for a connection it could not open or lost, or a socket failure. */
const connectionLost = /^ERR_POSTGRES_(CONNECTION|SOCKET|IDLE|LIFETIME|UNEXPECTED_EOF)|^E(CONNREFUSED|CONNRESET|PIPE|TIMEDOUT|NOTFOUND|HOSTUNREACH|NETUNREACH|ADDRNOTAVAIL)$/

/** The SqlError the `@effect/sql-pg` driver would raise for the same failure. */
export const toSqlError = (error: unknown, operation: string): SqlError => {
  const e = error as { message?: unknown; code?: unknown; errno?: unknown; detail?: unknown } | null
  const sqlState = typeof e?.errno === "string" && /^[0-9A-Z]{5}$/.test(e.errno) ? e.errno : undefined
  const bunCode = typeof e?.code === "string" ? e.code : ""
  const message = typeof e?.message === "string" ? e.message : String(error)
  const cause = { code: sqlState ?? bunCode, message, detail: typeof e?.detail === "string" ? e.detail : undefined, error }
  const props = { cause, message, operation }
  const lost = sqlState === undefined ? connectionLost.test(bunCode) : sqlState.startsWith("08")
  return new SqlError({ reason: lost ? new ConnectionError(props) : new UnknownError(props) })
}

/**
 * Opens a pool of at most `size` connections, lazily. A `relaxed` pool's sessions run
 * with `synchronous_commit = off`, as in PostgresConnection.ts.
 */
export const openNative = (
  options: PostgresOptions,
  pool: { readonly size: number; readonly relaxed: boolean }
): NativeClient => {
  const connection: Record<string, string> = {
    application_name: options.schema === undefined ? "roster" : `roster/${options.schema}`.slice(0, 63)
  }
  if (options.schema !== undefined) connection.search_path = `"${options.schema.replace(/"/g, '""')}"`
  if (pool.relaxed) connection.synchronous_commit = "off"
  const db = new Bun.SQL(options.url, { max: Math.max(1, pool.size), connection, idleTimeout: 60 })
  return {
    run: <Row>(text: string, params: ReadonlyArray<unknown>) =>
      Effect.tryPromise({
        try: () => db.unsafe(text, params as Array<unknown>) as Promise<ReadonlyArray<Row>>,
        catch: (error) => toSqlError(error, "execute")
      }),
    close: Effect.promise(() => db.close({ timeout: 1 }).catch(() => undefined))
  }
}
