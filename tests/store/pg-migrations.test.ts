/**
 * PostgreSQL migrations are numbered and applied in one transaction under an advisory
 * lock, so processes starting at once on a fresh schema serialise: one applies them,
 * the others wait for its commit and find nothing to do.
 */
import { PgClient } from "@effect/sql-pg"
import { describe, expect, test } from "bun:test"
import { Effect, Exit, Redacted, Scope } from "effect"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { migrations } from "../../src/store/postgres/migrations.ts"
import { applyMigrations, openClient } from "../../src/store/postgres/PostgresConnection.ts"
import { pgUrl, requireService } from "../support/env.ts"
import { freshSchema, pgAdmin, urlWithSchema } from "./drivers.ts"

const pg = requireService("postgres")

describe.skipIf(pg.skip)("postgres migrations", () => {
  test("four processes migrating one fresh schema at once leave one consistent schema", async () => {
    const url = pgUrl()!
    const schema = freshSchema("roster_mig")
    const dir = mkdtempSync(join(tmpdir(), "roster-pg-migrate-"))
    try {
      const script = join(dir, "migrate.ts")
      const src = (file: string) => JSON.stringify(join(import.meta.dir, "../../src/store/postgres", file))
      writeFileSync(script, `
        import { Effect, Exit, Scope } from "effect"
        import { applyMigrations, openClient } from ${src("PostgresConnection.ts")}
        const options = { url: ${JSON.stringify(url)}, schema: ${JSON.stringify(schema)} }
        const scope = await Effect.runPromise(Scope.make())
        const client = await Effect.runPromise(openClient(options, scope, { size: 1, relaxed: false }))
        console.log(await Effect.runPromise(applyMigrations(client, { schema: options.schema, now: 0 })))
        await Effect.runPromise(Scope.close(scope, Exit.void))
      `)
      const procs = Array.from({ length: 4 }, () => Bun.spawn([process.execPath, script], { stdout: "pipe", stderr: "pipe" }))
      const codes = await Promise.all(procs.map((p) => p.exited))
      const errors = await Promise.all(procs.map((p) => new Response(p.stderr).text()))
      expect(codes, errors.join("\n")).toEqual([0, 0, 0, 0])
      const applied = (await Promise.all(procs.map((p) => new Response(p.stdout).text()))).map((o) => Number(o.trim()))
      expect(applied.filter((n) => n === migrations.length)).toHaveLength(1)
      expect(applied.filter((n) => n === 0)).toHaveLength(3)
      const versions = await Effect.runPromise(PgClient.PgClient.use((sql) => sql<{ version: number }>`SELECT version FROM roster_migrations ORDER BY version`).pipe(
        Effect.provide(PgClient.layer({ url: Redacted.make(urlWithSchema(url, schema)), maxConnections: 1 }))
      ))
      expect(versions.map((v) => v.version)).toEqual(migrations.map((m) => m.version))
    } finally {
      rmSync(dir, { recursive: true, force: true })
      await pgAdmin(url, `DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
    }
  }, 30_000)

  test("a schema migrated to 9 before roster_claim_global existed gets it from migration 10", async () => {
    const url = pgUrl()!
    const schema = freshSchema("roster_mig9")
    const scope = await Effect.runPromise(Scope.make())
    try {
      const client = await Effect.runPromise(openClient({ url, schema }, scope, { size: 1, relaxed: false }))
      const migrate = () => Effect.runPromise(applyMigrations(client, { schema, now: 0 }))
      const hasGlobal = async () =>
        (await Effect.runPromise(client<{ n: number }>`SELECT count(*)::int AS n FROM pg_proc p JOIN pg_namespace s ON s.oid = p.pronamespace
          WHERE p.proname = 'roster_claim_global' AND s.nspname = ${schema}`))[0]!.n === 1
      expect(await migrate()).toBe(migrations.length)
      // As a Roster of the day before left it: at 9, with no roster_claim_global.
      await Effect.runPromise(client.unsafe(`DROP FUNCTION roster_claim_global`))
      await Effect.runPromise(client.unsafe(`DELETE FROM roster_migrations WHERE version > 9`))
      expect(await hasGlobal()).toBe(false)
      expect(await migrate()).toBe(migrations.filter((m) => m.version > 9).length)
      expect(await hasGlobal()).toBe(true)
    } finally {
      await Effect.runPromise(Scope.close(scope, Exit.void))
      await pgAdmin(url, `DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
    }
  }, 30_000)
})
