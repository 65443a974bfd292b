/**
 * Where a chaos run happens: a database (a fresh SQLite file, or a fresh schema on a
 * PostgreSQL server), a working folder for the processes, and the folder their
 * handlers write evidence to. `cleanup` removes all of it.
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { repoRoot } from "../processes.ts"
import { evidenceDirVariable } from "./Evidence.ts"

/** The chaos app folder. */
export const chaosApps = join(repoRoot, "tests/fixtures/chaos-apps")

/** A database and folders for one chaos run. */
export interface ChaosTarget {
  readonly driver: "sqlite" | "postgres"
  /** ROSTER_DB: a file path or a postgres:// URL. */
  readonly db: string
  /** The processes' working directory. */
  readonly dir: string
  readonly evidenceDir: string
  /** ROSTER_DB, ROSTER_APPS_DIR and the evidence folder, for every child. */
  readonly env: Readonly<Record<string, string>>
  readonly cleanup: () => Promise<void>
}

const folders = (label: string) => {
  const dir = mkdtempSync(join(tmpdir(), `roster-chaos-${label}-`))
  const evidenceDir = join(dir, "evidence")
  mkdirSync(evidenceDir)
  return { dir, evidenceDir }
}

const targetOf = (driver: ChaosTarget["driver"], db: string, dir: string, evidenceDir: string, dropDb: () => Promise<void>): ChaosTarget => ({
  driver,
  db,
  dir,
  evidenceDir,
  env: { ROSTER_DB: db, ROSTER_APPS_DIR: chaosApps, [evidenceDirVariable]: evidenceDir },
  cleanup: async () => {
    await dropDb()
    rmSync(dir, { recursive: true, force: true })
  }
})

/** A fresh SQLite file in a temp folder. */
export const sqliteTarget = (): ChaosTarget => {
  const { dir, evidenceDir } = folders("sqlite")
  return targetOf("sqlite", join(dir, "roster.db"), dir, evidenceDir, async () => {})
}

/** A fresh schema on the PostgreSQL server at `baseUrl`, dropped at cleanup. */
export const postgresTarget = async (baseUrl: string): Promise<ChaosTarget> => {
  // Imported here so a SQLite-only run never loads the PostgreSQL test support.
  const { freshSchema, pgAdmin, urlWithSchema } = await import("../../store/drivers.ts")
  const schema = freshSchema("roster_chaos")
  await pgAdmin(baseUrl, `CREATE SCHEMA "${schema}"`)
  const { dir, evidenceDir } = folders("pg")
  return targetOf("postgres", urlWithSchema(baseUrl, schema), dir, evidenceDir, () =>
    pgAdmin(baseUrl, `DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined))
}
