/**
 * A database that a process test's `roster` processes share (ROSTER_DB), and a way for
 * the test to read it directly: a SQLite file in a folder, or a fresh PostgreSQL schema
 * dropped again at cleanup.
 */
import { Database } from "bun:sqlite"
import { PgClient } from "@effect/sql-pg"
import { ManagedRuntime, Redacted } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { rmSync } from "node:fs"
import { join } from "node:path"
import { freshSchema, pgAdmin, urlWithSchema } from "../store/drivers.ts"

/** A database the tests' processes share, and a way to read it. */
export interface Backend {
  readonly name: "sqlite" | "postgres"
  /** ROSTER_DB for the children. */
  readonly db: string
  readonly setup: () => Promise<void>
  readonly all: <Row>(sql: string) => Promise<ReadonlyArray<Row>>
  readonly cleanup: () => Promise<void>
}

/** `roster.db` in `dir`; with `removeDir`, cleanup deletes the folder too. */
export const sqliteBackend = (dir: string, options: { readonly removeDir?: boolean } = {}): Backend => {
  const db = join(dir, "roster.db")
  let connection: Database | undefined
  return {
    name: "sqlite",
    db,
    setup: async () => undefined,
    all: async <Row>(sql: string) => {
      if (connection === undefined) {
        connection = new Database(db)
        connection.run("PRAGMA busy_timeout = 30000")
      }
      return connection.query<Row, []>(sql).all()
    },
    cleanup: async () => {
      connection?.close(false)
      if (options.removeDir) rmSync(dir, { recursive: true, force: true })
    }
  }
}

/** A fresh schema (named from `prefix`) on the server at `base`. */
export const postgresBackend = (base: string, prefix: string): Backend => {
  const schema = freshSchema(prefix)
  const url = urlWithSchema(base, schema)
  let client: ManagedRuntime.ManagedRuntime<SqlClient, unknown> | undefined
  return {
    name: "postgres",
    db: url,
    setup: () => pgAdmin(base, `CREATE SCHEMA "${schema}"`),
    all: <Row>(sql: string) => {
      client ??= ManagedRuntime.make(PgClient.layer({ url: Redacted.make(url), maxConnections: 2 }))
      return client.runPromise(SqlClient.use((c) => c.unsafe<Row & object>(sql))) as Promise<ReadonlyArray<Row>>
    },
    cleanup: async () => {
      await client?.dispose()
      await pgAdmin(base, `DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined)
    }
  }
}
