/**
 * The hot path's native client (src/store/postgres/NativeClient.ts) against the real
 * server: its failures read as the other driver's do (the SQLSTATE named, a restart or
 * an unreachable server retryable, a statement's fault not), a terminated connection is
 * replaced, and the arrays it sends (JS arrays, and the array-literal text the store
 * builds for a batch of successes) round-trip every value.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test"
import { Effect, Exit } from "effect"
import { SqlError } from "effect/sql/SqlError"
import { arrayText, intArrayText, type NativeClient, openNative } from "../../src/store/postgres/NativeClient.ts"
import { isUnavailable, toStoreError } from "../../src/store/postgres/PgErrors.ts"
import { pgUrl, requireService } from "../support/env.ts"
import { pgAdmin, pgQuery } from "./drivers.ts"

const pg = requireService("postgres")

/** The SqlError a statement's run ended with. */
const errorOf = (exit: Exit.Exit<unknown, SqlError>, text: string): SqlError => {
  if (Exit.isSuccess(exit)) throw new Error(`expected ${text} to fail`)
  const error = exit.cause.reasons.find((r) => r._tag === "Fail")?.error
  expect(error).toBeInstanceOf(SqlError)
  return error as SqlError
}

const failureOf = async (client: NativeClient, text: string): Promise<SqlError> =>
  errorOf(await Effect.runPromise(Effect.exit(client.run(text, []))), text)

describe.skipIf(pg.skip)("native client (postgres)", () => {
  const schema = `native_${process.pid}_${Date.now().toString(36)}`
  let client: NativeClient
  beforeEach(async () => {
    await pgAdmin(pgUrl()!, `CREATE SCHEMA "${schema}"`)
    client = openNative({ url: pgUrl()!, schema }, { size: 1, relaxed: true })
  })
  afterEach(async () => {
    await Effect.runPromise(client.close)
    await pgAdmin(pgUrl()!, `DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
  })

  test("its sessions use the schema, the relaxed commit and Roster's application name", async () => {
    const [row] = await Effect.runPromise(client.run<{ s: string; c: string; a: string }>(
      "SELECT current_schema() AS s, current_setting('synchronous_commit') AS c, current_setting('application_name') AS a", []
    ))
    expect(row).toEqual({ s: schema, c: "off", a: `roster/${schema}` })
  })

  test("a statement's fault names its SQLSTATE and is not retried", async () => {
    const error = await failureOf(client, "SELECT * FROM no_such_table")
    expect(isUnavailable(error)).toBe(false)
    expect(toStoreError("claim executions", error).message).toMatch(/^claim executions: relation "no_such_table" does not exist \(SQLSTATE 42P01\)$/)
  })

  test("a session terminated mid-statement fails as unavailable (retryable), and the next statement gets a new one", async () => {
    const [{ pid }] = await Effect.runPromise(client.run<{ pid: number }>("SELECT pg_backend_pid() AS pid", [])) as [{ pid: number }]
    // Terminated while it runs, so the failure cannot race the pool noticing a closed socket.
    const sleeping = Effect.runPromise(Effect.exit(client.run("SELECT pg_sleep(30)", [])))
    for (let i = 0; ; i++) {
      const [row] = await pgQuery(pgUrl()!, `SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = ${pid} AND query LIKE 'SELECT pg_sleep%' AND state = 'active'`)
      if ((row as { n: number }).n === 1) break
      if (i > 400) throw new Error("the statement never started")
      await Bun.sleep(25)
    }
    await pgAdmin(pgUrl()!, `SELECT pg_terminate_backend(${pid})`)
    const error = errorOf(await sleeping, "the terminated statement")
    expect(isUnavailable(error)).toBe(true)
    const message = toStoreError("heartbeat", error).message
    expect(message).toContain("(SQLSTATE 57P01)")
    expect(message).toContain("(the database is unreachable or restarting)")
    const [again] = await Effect.runPromise(client.run<{ pid: number }>("SELECT pg_backend_pid() AS pid", []))
    expect(again!.pid).not.toBe(pid)
  })

  test("a server that refuses the connection is unavailable (retryable)", async () => {
    const closed = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {}, open(s) { s.end() } } })
    const port = closed.port
    closed.stop(true)
    const url = new URL(pgUrl()!)
    url.host = `127.0.0.1:${port}`
    const nowhere = openNative({ url: url.toString() }, { size: 1, relaxed: false })
    try {
      const error = await failureOf(nowhere, "SELECT 1")
      expect(isUnavailable(error)).toBe(true)
    } finally {
      await Effect.runPromise(nowhere.close)
    }
  })

  test("arrays round-trip quotes, backslashes, braces, commas, NULL, empty text, unicode and 64-bit times", async () => {
    const texts = ['a"b', "c\\d", "{x,y}", "NULL", "", " spaced ", "ü → 😀", null, '\\"']
    const times = [0, -1, 1_765_000_000_000, null, 253_402_300_799_999]
    const [row] = await Effect.runPromise(client.run<{ t: Array<string | null>; n: Array<string | null>; c: number }>(
      "SELECT $1::text[] AS t, $2::int8[]::text[] AS n, cardinality($1::text[]) AS c", [texts, times]
    ))
    expect(row).toEqual({ t: texts, n: times.map((n) => (n === null ? null : String(n))), c: texts.length })
  })

  test("array-literal text (arrayText, intArrayText) round-trips the same values; times are rounded to whole milliseconds", async () => {
    const texts = ['a"b', "c\\d", "{x,y}", "NULL", "", " spaced ", "ü → 😀", null, '\\"', '{"m":0,"sum":"x,y"}']
    const times = [0, -1, 1_765_000_000_000, 1_765_000_000_000, 253_402_300_799_999, 12.6]
    const [row] = await Effect.runPromise(client.run<{ t: Array<string | null>; n: Array<string>; c: number }>(
      "SELECT $1::text[] AS t, $2::int8[]::text[] AS n, cardinality($1::text[]) AS c", [arrayText(texts), intArrayText(times)]
    ))
    expect(row).toEqual({ t: texts, n: times.map((n) => String(Math.round(n))), c: texts.length })
    const [empty] = await Effect.runPromise(client.run<{ t: Array<string>; n: Array<string> }>(
      "SELECT $1::text[] AS t, $2::int8[]::text[] AS n", [arrayText([]), intArrayText([])]
    ))
    expect(empty).toEqual({ t: [], n: [] })
  })
})
