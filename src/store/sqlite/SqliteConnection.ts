/**
 * Opens the embedded SQLite file with Roster's settings: WAL, a busy timeout so
 * concurrent processes wait for the write lock instead of failing, and
 * `synchronous=FULL` by default so an acknowledged enqueue survives power loss
 * (`NORMAL` is an opt-in). Migrations are applied under `BEGIN IMMEDIATE`.
 */
import { Database } from "bun:sqlite"
import { accessSync, constants, existsSync, mkdirSync } from "node:fs"
import { dirname, resolve } from "node:path"
import { schemaTooNew } from "../SchemaVersion.ts"
import { StoreError } from "../Store.ts"
import { migrations } from "./migrations.ts"

/** Options of the SQLite store. */
export interface SqliteOptions {
  /** Path of the database file (created if missing, along with its folder). */
  readonly path: string
  /** `FULL` (default) or `NORMAL`. */
  readonly synchronous?: "FULL" | "NORMAL"
  /** How long a writer waits for the lock, in ms (default 10 s). */
  readonly busyTimeoutMs?: number
}

const writable = (path: string): boolean => {
  try {
    accessSync(path, constants.W_OK)
    return true
  } catch {
    return false
  }
}

/** Why an existing file could not be opened for writing, when that is the reason. */
const readOnlyHint = (path: string): string => {
  if (!existsSync(path)) return ""
  if (!writable(path)) return ` (read-only: this process cannot write ${path})`
  const dir = dirname(path)
  if (!writable(dir)) return ` (read-only: this process cannot write the folder ${dir}, where SQLite keeps the -wal and -shm files)`
  return ""
}

/** An Error whose message is readable on its own, keeping SQLite's error (its code) as the cause. */
const openFailure = (path: string, cause: unknown): Error =>
  new Error(`cannot open database ${path}: ${(cause as Error).message}${readOnlyHint(path)}`, { cause })

/**
 * The refusal of a database file that does not exist, for commands that must not create
 * one (reads, and changes to existing work): nothing has been enqueued there, so the
 * path is most likely not the one meant. Undefined when the file exists (or is `:memory:`).
 */
export const missingDatabase = (path: string): StoreError | undefined =>
  path === ":memory:" || existsSync(path)
    ? undefined
    : new StoreError({
      message: `no database at ${resolve(path)} (nothing has been enqueued there yet; check ROSTER_DB, or db in roster.config.ts)`,
      reason: "missing"
    })

/** Opens and configures the database; throws with a readable message when it cannot. */
export const openDatabase = (options: SqliteOptions): Database => {
  const { path } = options
  if (path !== ":memory:") {
    const dir = dirname(path)
    if (!existsSync(dir)) {
      try {
        mkdirSync(dir, { recursive: true })
      } catch (cause) {
        throw new Error(`cannot open database ${path}: cannot create folder ${dir} (${(cause as Error).message})`)
      }
    }
  }
  let db: Database
  try {
    db = new Database(path, { create: true })
  } catch (cause) {
    throw openFailure(path, cause)
  }
  try {
    db.run(`PRAGMA busy_timeout = ${Math.max(0, Math.floor(options.busyTimeoutMs ?? 10_000))}`)
    const mode = db.query("PRAGMA journal_mode = WAL").get() as { journal_mode: string } | null
    if (path !== ":memory:" && mode?.journal_mode !== "wal") {
      throw new Error(`journal_mode is ${mode?.journal_mode}, expected wal`)
    }
    db.run(`PRAGMA synchronous = ${options.synchronous === "NORMAL" ? "NORMAL" : "FULL"}`)
    db.run("PRAGMA foreign_keys = OFF")
  } catch (cause) {
    db.close()
    throw openFailure(path, cause)
  }
  return db
}

/** The newest migration this build knows. */
export const latestVersion = migrations[migrations.length - 1]?.version ?? 0

/**
 * Applies pending migrations in one `BEGIN IMMEDIATE` transaction; returns how many ran.
 * Throws the `schema-too-new` StoreError, changing nothing, on a database migrated by a
 * newer Roster.
 */
export const applyMigrations = (db: Database, now: number): number => {
  db.run("CREATE TABLE IF NOT EXISTS roster_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT")
  const run = db.transaction(() => {
    const row = db.query("SELECT COALESCE(MAX(version), 0) AS v FROM roster_migrations").get() as { v: number }
    if (row.v > latestVersion) throw schemaTooNew(db.filename, row.v, latestVersion)
    let applied = 0
    for (const m of migrations) {
      if (m.version <= row.v) continue
      db.run(m.sql)
      db.query("INSERT INTO roster_migrations (version, name, applied_at) VALUES (?, ?, ?)").run(m.version, m.name, now)
      applied++
    }
    return applied
  })
  return run.immediate()
}
