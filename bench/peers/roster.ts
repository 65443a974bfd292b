/**
 * Roster, through its public API from this repository's sources: `Roster.open` (the
 * Promise API: the same Client, Store and worker as `Roster.layer`), a silent no-op
 * Job, and a worker in this process (`startWorker`). Three variants: SQLite at
 * synchronous=FULL (Roster's default), SQLite at NORMAL, and PostgreSQL.
 */
import { Effect, Schema } from "effect"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { Job, Roster } from "../../src/index.ts"
import { CONCURRENCY, payload, payloads, repoRoot, started, type Store, type System, tempDir } from "./common.ts"
import { freshSchema, pgDurability, pgUnavailable } from "./postgres.ts"

/** The no-op Job every workload runs: calls the start hook, logs nothing. */
export const noop = Job.make({
  id: "peers/noop",
  payload: Schema.Struct({ i: Schema.Number, pad: Schema.String }),
  handler: ({ i }) => Effect.sync(() => started(i))
})

const rosterVersion = (): string => {
  const pkg = JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as { version: string }
  return `roster ${pkg.version} (this checkout)`
}

/** Roster.open's options for every Roster process here: the repository's roster.config.ts (the demo app) is not read; warnings only. */
export const openOptions = { configDir: false, logger: { level: "Warn" } } as const

/** Opens Roster on `db` and wraps it as a Store. */
const openStore = async (db: string, synchronous: "FULL" | "NORMAL" | undefined, cleanup: () => Promise<void> | void): Promise<Store> => {
  const roster = await Roster.open({ db, jobs: [noop], ...(synchronous ? { synchronous } : {}) }, openOptions)
  return {
    enqueue: async (i) => void (await roster.enqueue(noop, payload(i))),
    enqueueMany: async (from, count) => void (await roster.enqueueMany(payloads(from, count).map((p) => ({ job: noop, payload: p })))),
    // Idle: the default queue's concurrency (10); drain: 50.
    startWorker: (mode) => roster.startWorker(mode === "drain" ? { concurrency: CONCURRENCY } : {}),
    succeeded: async () => (await roster.count({ job: noop.id })).succeeded,
    close: async () => {
      await roster.close()
      await cleanup()
    }
  }
}

const sqlite = (sync: "FULL" | "NORMAL"): System => ({
  id: sync === "FULL" ? "roster-sqlite-full" : "roster-sqlite-normal",
  label: sync === "FULL" ? "Roster, SQLite" : "Roster, SQLite NORMAL",
  unavailable: async () => undefined,
  durability: async () =>
    sync === "FULL" ? "SQLite WAL, synchronous=FULL (default): fsync per commit" : "SQLite WAL, synchronous=NORMAL (opt-in)",
  version: rosterVersion,
  settings: `worker option concurrency ${CONCURRENCY} for the drain; idle worker at the default queue concurrency (10)`,
  open: async () => {
    const tmp = tempDir(`roster-${sync.toLowerCase()}`)
    // FULL is the default: it is not passed, so this row is Roster as shipped.
    return openStore(join(tmp.dir, "roster.db"), sync === "FULL" ? undefined : "NORMAL", tmp.cleanup)
  }
})

export const rosterSqliteFull = sqlite("FULL")
export const rosterSqliteNormal = sqlite("NORMAL")

export const rosterPostgres: System = {
  id: "roster-pg",
  label: "Roster, PostgreSQL",
  unavailable: pgUnavailable,
  durability: pgDurability,
  version: rosterVersion,
  settings: `worker option concurrency ${CONCURRENCY} for the drain; store in a fresh schema (search_path in the URL)`,
  open: async () => {
    const schema = await freshSchema("roster")
    return openStore(schema.url, undefined, schema.drop)
  }
}
