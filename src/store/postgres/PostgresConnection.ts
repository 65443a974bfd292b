/**
 * The PostgreSQL connection of the store: a pool of `@effect/sql-pg` sessions, the
 * one place where a database failure becomes a StoreError, the bounded retry that
 * rides out a server restart, and the migrations (under an advisory lock).
 *
 * Reconnection: the pool replaces a session that died (restart, failover, network)
 * on its next checkout, so nothing here holds on to a dead connection. An operation
 * that failed because the server could not be reached — or because it was shutting
 * down, starting up, or chose us as a deadlock victim — is run again with a short
 * backoff for up to `reconnectWindowMs` (default 5 s, enough for `pg_ctl restart`);
 * past that it fails with a StoreError and the actor that called it logs, backs off
 * and tries again on its own schedule. Every retried operation is safe to repeat:
 * outcomes are fenced, claims and heartbeats are leases, inserts recognise their own
 * ids, and a fire is keyed by (schedule, due).
 */
import { PgClient } from "@effect/sql-pg"
import { Cause, Clock, Effect, Redacted, Scope } from "effect"
import * as Reactivity from "effect/reactivity/Reactivity"
import type { SqlClient } from "effect/sql/SqlClient"
import { SqlError } from "effect/sql/SqlError"
import { schemaTooNew } from "../SchemaVersion.ts"
import { StoreError } from "../Store.ts"
import { isUnavailable, redactUrl, toStoreError } from "./PgErrors.ts"
import { migrationLockKey, migrations, migrationsTableSql } from "./migrations.ts"

/** Options of the PostgreSQL store. */
export interface PostgresOptions {
  /** A `postgres://` URL. `?options=-c%20search_path%3Dname` selects a schema, as does `schema`. */
  readonly url: string
  /** Schema of Roster's tables, created if missing (default: the connection's search_path, usually `public`). */
  readonly schema?: string | undefined
  /** Most pooled connections of this process for durable writes and reads (default 10, one of them held by LISTEN while a worker runs); add up to 4 for claims, heartbeats and logs, and 1 for batches of successes. */
  readonly poolSize?: number | undefined
  /** How long an operation retries while the server is unreachable before failing (default 5,000 ms). */
  readonly reconnectWindowMs?: number | undefined
}

/** Default of {@link PostgresOptions.reconnectWindowMs}. */
export const defaultReconnectWindowMs = 5_000

/**
 * Runs a store operation: retries it while the server is unavailable, for up to
 * `windowMs`, then maps a remaining database failure to a StoreError. Other failures
 * (a schedule's typed refusal) pass through unchanged. `effect` is re-run from the
 * start, so a transaction is retried whole.
 */
export const operation = (windowMs: number) => <A, E>(what: string, effect: Effect.Effect<A, E>): Effect.Effect<A, Exclude<E, SqlError> | StoreError> =>
  Effect.gen(function*() {
    const start = yield* Clock.currentTimeMillis
    let delay = 50
    while (true) {
      const exit = yield* Effect.exit(effect)
      if (exit._tag === "Success") return exit.value
      const error = Cause.findErrorOption(exit.cause)
      if (error._tag === "Some" && !(error.value instanceof SqlError)) return yield* Effect.fail(error.value as Exclude<E, SqlError>)
      const unavailable = error._tag === "Some" && isUnavailable(error.value)
      const elapsed = (yield* Clock.currentTimeMillis) - start
      if (!unavailable || elapsed + delay > windowMs) {
        if (error._tag === "Some") return yield* Effect.fail(toStoreError(what, error.value))
        return yield* Effect.failCause(exit.cause as Cause.Cause<never>)
      }
      yield* Effect.logDebug(`${what}: database unavailable, retrying in ${delay} ms`)
      yield* Effect.sleep(delay)
      delay = Math.min(delay * 2, 1_000)
    }
  })

const quoteIdentifier = (name: string): string => `"${name.replace(/"/g, '""')}"`

/**
 * Opens a pool in `scope` (connections are made lazily, so this does not touch the
 * server). A `relaxed` pool's sessions run with `synchronous_commit = off`: their
 * commits do not wait for the WAL flush (see PgStore for what may use it).
 */
export const openClient = (
  options: PostgresOptions,
  scope: Scope.Scope,
  pool: { readonly size: number; readonly relaxed: boolean }
): Effect.Effect<PgClient.PgClient, StoreError> =>
  PgClient.make({
    url: Redacted.make(options.url),
    maxConnections: Math.max(1, pool.size),
    // pg_stat_activity shows which schema a connection serves.
    applicationName: options.schema === undefined ? "roster" : `roster/${options.schema}`.slice(0, 63),
    startupParameters: {
      ...(options.schema === undefined ? {} : { search_path: quoteIdentifier(options.schema) }),
      ...(pool.relaxed ? { synchronous_commit: "off" } : {})
    }
  }).pipe(
    Effect.provide(Reactivity.layer),
    Scope.provide(scope),
    Effect.mapError((e) => toStoreError(`connect to ${redactUrl(options.url)}`, e))
  )

/** The newest migration this build knows. */
export const latestVersion = migrations[migrations.length - 1]?.version ?? 0

/**
 * Applies pending migrations in one transaction under an advisory lock; returns how
 * many ran. A second process blocks on the lock until the first commits, then finds
 * every version applied. A schema migrated by a newer Roster fails with the
 * `schema-too-new` StoreError and nothing applied (`database` names it in the message).
 */
export const applyMigrations = (sql: SqlClient, options: { readonly schema?: string | undefined; readonly now: number; readonly database?: string | undefined }) =>
  sql.withTransaction(Effect.gen(function*() {
    yield* sql`SELECT pg_advisory_xact_lock(${migrationLockKey[0]}, ${migrationLockKey[1]})`
    if (options.schema !== undefined) yield* sql.unsafe(`CREATE SCHEMA IF NOT EXISTS ${quoteIdentifier(options.schema)}`)
    yield* sql.unsafe(migrationsTableSql)
    const [row] = yield* sql<{ v: number }>`SELECT COALESCE(MAX(version), 0)::int AS v FROM roster_migrations`
    if ((row?.v ?? 0) > latestVersion) {
      return yield* schemaTooNew(options.database ?? (options.schema === undefined ? "on PostgreSQL" : `schema ${options.schema}`), row?.v ?? 0, latestVersion)
    }
    let applied = 0
    for (const m of migrations) {
      if (m.version <= (row?.v ?? 0)) continue
      for (const statement of m.statements) yield* sql.unsafe(statement)
      yield* sql`INSERT INTO roster_migrations (version, name, applied_at) VALUES (${m.version}, ${m.name}, ${options.now})`
      applied++
    }
    return applied
  }))
