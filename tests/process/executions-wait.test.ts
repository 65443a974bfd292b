/**
 * `roster executions wait ID [--timeout 30s] [--json]` as a real process (DESIGN §7):
 * it waits while a separate `roster worker` process runs the execution and is woken by
 * that worker's commit (SQLite's change watcher, PostgreSQL's NOTIFY): exit 0 and the
 * execution as JSON when it succeeded, 1 when it failed, and 1 with one line when the
 * timeout passes first. On PostgreSQL when ROSTER_TEST_PG_URL is set.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { freshSchema, pgAdmin, urlWithSchema } from "../store/drivers.ts"
import { pgUrl, requireService } from "../support/env.ts"
import { demoApps, parseJsonOutput, type RosterProcess, spawnRoster, tail } from "../support/processes.ts"

const pg = requireService("postgres")

/** Where the processes of one test run: a folder, and a database (a SQLite file or a fresh PostgreSQL schema). */
interface Backend {
  readonly name: string
  readonly skip: boolean
  readonly setup: (dir: string) => Promise<string>
  readonly teardown: (db: string) => Promise<void>
}

const backends: ReadonlyArray<Backend> = [
  { name: "sqlite", skip: false, setup: async (dir) => join(dir, "roster.db"), teardown: async () => {} },
  {
    name: "postgres",
    skip: pg.skip,
    setup: async () => {
      const schema = freshSchema("roster_w")
      await pgAdmin(pgUrl()!, `CREATE SCHEMA "${schema}"`)
      return urlWithSchema(pgUrl()!, schema)
    },
    teardown: async (db) => {
      const schema = /search_path%3D(\w+)/.exec(db)?.[1]
      if (schema) await pgAdmin(pgUrl()!, `DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
    }
  }
]

for (const backend of backends) {
  describe.skipIf(backend.skip)(`roster executions wait (${backend.name})`, () => {
    let dir: string
    let db: string
    const started: Array<RosterProcess> = []
    beforeEach(async () => {
      dir = mkdtempSync(join(tmpdir(), "roster-wait-"))
      db = await backend.setup(dir)
    })
    afterEach(async () => {
      await Promise.all(started.splice(0).map(async (p) => {
        p.kill("SIGKILL")
        await p.wait(10_000).catch(() => undefined)
      }))
      await backend.teardown(db)
      rmSync(dir, { recursive: true, force: true })
    })

    const spawn = (args: ReadonlyArray<string>) => {
      const p = spawnRoster(args, { cwd: dir, env: { ROSTER_DB: db, ROSTER_APPS_DIR: demoApps } })
      started.push(p)
      return p
    }
    const enqueue = async (job: string, payload: unknown) => {
      const r = await spawn(["enqueue", job, "--payload", JSON.stringify(payload), "--json"]).wait()
      expect(r.code, tail(r.stderr)).toBe(0)
      return parseJsonOutput<{ id: string }>(r).id
    }
    /** Starts a wait and gives it time to be waiting before anything runs. */
    const waiting = async (id: string, ...flags: Array<string>) => {
      const p = spawn(["executions", "wait", id, ...flags])
      await Bun.sleep(1_500)
      expect(p.exited, tail(p.stderrSoFar())).toBe(false)
      return p
    }

    test("a wait is woken by another process's worker: exit 0 and the execution as JSON", async () => {
      const id = await enqueue("demo/sleep", { ms: 300 })
      const wait = await waiting(id, "--json", "--timeout", "60s")
      spawn(["worker", "--exit-when-idle"])
      const r = await wait.wait(60_000)
      expect(r.code, tail(r.stderr)).toBe(0)
      const execution = parseJsonOutput<{ id: string; state: string; attempts: Array<unknown>; payload: unknown }>(r)
      expect(execution).toMatchObject({ id, state: "succeeded", payload: { ms: 300 } })
      expect(execution.attempts.length).toBe(1)
    }, 90_000)

    test("a failed execution exits 1, still printing it with --json", async () => {
      const id = await enqueue("demo/broken", {})
      const wait = await waiting(id, "--json", "--timeout", "1 minute")
      spawn(["worker", "--exit-when-idle"])
      const r = await wait.wait(60_000)
      expect(r.code, tail(r.stderr)).toBe(1)
      expect(parseJsonOutput<{ state: string }>(r).state).toBe("failed")
      expect(r.stderr.trim().split("\n"), r.stderr).toHaveLength(1)
    }, 90_000)

    test("--timeout 200ms on a queued execution with no worker exits 1 with one line", async () => {
      const id = await enqueue("demo/noop", { n: 1 })
      const r = await spawn(["executions", "wait", id, "--timeout", "200ms"]).wait()
      expect(r.code).toBe(1)
      expect(r.stdout).toBe("")
      expect(r.stderr.trim().split("\n")).toEqual([`roster: execution ${id} had not ended after 200 ms`])
    }, 30_000)

    test("an unknown id exits 1 and a bad --timeout is a usage error", async () => {
      await enqueue("demo/noop", { n: 1 })
      const unknown = await spawn(["executions", "wait", "nope", "--timeout", "1s"]).wait()
      expect(unknown.code).toBe(1)
      expect(unknown.stderr.trim()).toBe("roster: no execution nope")
      for (const bad of ["soon", "0", "-5s", "99999 days"]) {
        const r = await spawn(["executions", "wait", "nope", `--timeout=${bad}`]).wait()
        expect(r.code, bad).toBe(2)
        expect(r.stderr.trim().split("\n")).toHaveLength(1)
      }
    }, 60_000)
  })
}
