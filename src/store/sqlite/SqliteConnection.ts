/**
 * Opens the embedded SQLite file with Roster's settings: WAL, a busy timeout so
 * concurrent processes wait for the write lock instead of failing, and
 * `synchronous=FULL` by default so an acknowledged enqueue survives power loss
 * (`NORMAL` is an opt-in). Migrations are applied under `BEGIN IMMEDIATE`.
 */
import { Database } from "bun:sqlite"
import { mkdirSync, existsSync } from "node:fs"
import { dirname } from "node:path"
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
    throw new Error(`cannot open database ${path}: ${(cause as Error).message}`)
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
    throw new Error(`cannot open database ${path}: ${(cause as Error).message}`)
  }
  return db
}

/** Applies pending migrations in one `BEGIN IMMEDIATE` transaction; returns how many ran. */
export const applyMigrations = (db: Database, now: number): number => {
  db.run("CREATE TABLE IF NOT EXISTS roster_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT")
  const run = db.transaction(() => {
    const row = db.query("SELECT COALESCE(MAX(version), 0) AS v FROM roster_migrations").get() as { v: number }
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
