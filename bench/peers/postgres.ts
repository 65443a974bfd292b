/**
 * PostgreSQL helpers for the PostgreSQL systems (pg-boss, graphile-worker, Roster on
 * PostgreSQL): a fresh schema per store, dropped afterwards, and the server's
 * durability settings for the table. Uses node-postgres (`pg`), installed here.
 */
import pg from "pg"
import { pgUrl } from "./common.ts"

/** Runs one statement on a short-lived connection of its own. */
export const adminQuery = async <Row extends Record<string, unknown>>(statement: string): Promise<Array<Row>> => {
  const url = pgUrl()
  if (!url) throw new Error("no PostgreSQL URL (ROSTER_TEST_PG_URL or BENCH_PG_URL)")
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return (await client.query<Row>(statement)).rows
  } finally {
    await client.end()
  }
}

/** Why the PostgreSQL systems cannot run, if they cannot. */
export const pgUnavailable = async (): Promise<string | undefined> => {
  if (!pgUrl()) return "no PostgreSQL URL (set ROSTER_TEST_PG_URL or BENCH_PG_URL)"
  try {
    await adminQuery("SELECT 1")
    return undefined
  } catch (error) {
    return `PostgreSQL did not answer: ${error instanceof Error ? error.message : String(error)}`
  }
}

let cached: string | undefined

/** "PostgreSQL 15, synchronous_commit on", plus the server's fsync when it is off. */
export const pgDurability = async (): Promise<string> => {
  if (cached) return cached
  const [row] = await adminQuery<{ v: string; sc: string; fs: string }>(
    "SELECT current_setting('server_version') AS v, current_setting('synchronous_commit') AS sc, current_setting('fsync') AS fs"
  )
  const major = row ? row.v.split(".")[0] : "?"
  cached = `PostgreSQL ${major}, synchronous_commit ${row?.sc}${row?.fs === "off" ? " (server fsync=off)" : ""}`
  return cached
}

let counter = 0

/** A new schema name, unique to this process. */
export const schemaName = (label: string): string => `peers_${label}_${process.pid}_${Date.now().toString(36)}_${counter++}`

/** Creates a schema; returns the URL whose connections use it (search_path) and how to drop it. */
export const freshSchema = async (label: string): Promise<{ schema: string; url: string; drop: () => Promise<void> }> => {
  const base = pgUrl()!
  const schema = schemaName(label)
  await adminQuery(`CREATE SCHEMA "${schema}"`)
  const url = `${base}${base.includes("?") ? "&" : "?"}options=${encodeURIComponent(`-c search_path=${schema}`)}`
  return { schema, url, drop: async () => void (await adminQuery(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)) }
}
