/**
 * PostgreSQL helpers the benchmarks share: one statement on a short-lived connection,
 * and a fresh schema with the URL whose connections use it (as ROSTER_DB selects one).
 */
import { PgClient } from "@effect/sql-pg"
import { Effect, Redacted } from "effect"

/** Runs one statement on its own short-lived connection. */
export const pgQuery = <Row extends object>(url: string, statement: string) =>
  Effect.runPromise(PgClient.PgClient.use((sql) => sql.unsafe<Row>(statement)).pipe(
    Effect.provide(PgClient.layer({ url: Redacted.make(url), maxConnections: 1 }))
  ))

/** Creates a schema named from `label` on the server at `base`; `drop` removes it. */
export const freshPgSchema = async (base: string, label: string) => {
  const schema = `roster_bench_${label.replace(/[^a-z0-9_]/g, "")}_${process.pid}_${Date.now().toString(36)}`
  await pgQuery(base, `CREATE SCHEMA "${schema}"`)
  const url = `${base}${base.includes("?") ? "&" : "?"}options=${encodeURIComponent(`-c search_path=${schema}`)}`
  return { schema, url, drop: async () => void (await pgQuery(base, `DROP SCHEMA "${schema}" CASCADE`)) }
}
