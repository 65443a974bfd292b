/**
 * Migrations are numbered and applied under the write lock, so processes starting at
 * once on a fresh file serialise: one applies them, the others find nothing to do.
 */
import { describe, expect, test } from "bun:test"
import { Database } from "bun:sqlite"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { migrations } from "../../src/store/sqlite/migrations.ts"

describe("sqlite migrations", () => {
  test("four processes migrating one fresh file at once leave one consistent schema", async () => {
    const dir = mkdtempSync(join(tmpdir(), "roster-migrate-"))
    try {
      const path = join(dir, "roster.db")
      const script = join(dir, "migrate.ts")
      writeFileSync(script, `
        import { openDatabase, applyMigrations } from ${JSON.stringify(join(import.meta.dir, "../../src/store/sqlite/SqliteConnection.ts"))}
        const db = openDatabase({ path: ${JSON.stringify(path)} })
        console.log(applyMigrations(db, 0))
        db.close()
      `)
      const procs = Array.from({ length: 4 }, () => Bun.spawn([process.execPath, script], { stdout: "pipe", stderr: "pipe" }))
      const codes = await Promise.all(procs.map((p) => p.exited))
      const outputs = await Promise.all(procs.map((p) => new Response(p.stdout).text()))
      const errors = await Promise.all(procs.map((p) => new Response(p.stderr).text()))
      expect(errors.join("")).toBe("")
      expect(codes).toEqual([0, 0, 0, 0])
      const applied = outputs.map((o) => Number(o.trim()))
      expect(applied.filter((n) => n === migrations.length)).toHaveLength(1)
      expect(applied.filter((n) => n === 0)).toHaveLength(3)
      const db = new Database(path, { readonly: true })
      const versions = db.query("SELECT version FROM roster_migrations ORDER BY version").all() as Array<{ version: number }>
      expect(versions.map((v) => v.version)).toEqual(migrations.map((m) => m.version))
      db.close()
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }, 30_000)
})
