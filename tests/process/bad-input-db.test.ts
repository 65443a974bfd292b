/**
 * Bad input at the level of the database file (issue 7): a corrupted file, one this
 * process cannot write, a full disk, and a database migrated by a newer Roster. In
 * every row some executions are enqueued first (acknowledged: the enqueue exited 0),
 * then the condition is applied; Roster refuses with one clear line and exit 1 — or, for
 * a worker on a full disk, waits and carries on — never changes what it cannot use,
 * and once the condition is removed every acknowledged execution is there and runs.
 * Real files, real mounts, real processes.
 */
import { Database } from "bun:sqlite"
import { afterEach, describe, expect, test } from "bun:test"
import { appendFileSync, chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { randomBytes } from "node:crypto"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { latestVersion } from "../../src/store/sqlite/SqliteConnection.ts"
import { runsTableSql } from "../fixtures/apps/probe/jobs.ts"
import { latestVersion as pgLatestVersion } from "../../src/store/postgres/PostgresConnection.ts"
import { acknowledge, expectAllRan, expectRefused } from "../support/badInput.ts"
import { pgUrl, requireService } from "../support/env.ts"
import { bindReadOnly, mountTmpfs, remount, requirePrivilege, unmount } from "../support/privileges.ts"
import { demoApps, fixtureApps, type ProcessResult, spawnRoster, tail, useScratch, waitFor } from "../support/processes.ts"
import { reachableCopy } from "../support/reachable.ts"
import { freshSchema, pgAdmin, urlWithSchema } from "../store/drivers.ts"

/** The commands each row tries: a read, a write, and a long-running worker (which must exit, not retry forever). */
const commands: ReadonlyArray<ReadonlyArray<string>> = [
  ["executions", "count", "--json"],
  ["enqueue", "demo/noop", "--payload", '{"n":99}', "--json"],
  ["worker"]
]

/** Runs each command (all of {@link commands} by default); each must be refused with a last line matching `mentions`. */
const expectAllRefused = async (run: (args: ReadonlyArray<string>) => Promise<ProcessResult>, mentions: RegExp, only = commands) => {
  for (const args of only) expectRefused(await run(args), mentions, { logs: args[0] === "worker" })
}

/** The main file's bytes, and that SQLite left no write-ahead log beside it (nothing pending). */
const snapshot = (db: string): Buffer => {
  expect(existsSync(`${db}-wal`) ? statSync(`${db}-wal`).size : 0).toBe(0)
  return readFileSync(db)
}

/** Mount points made by a test, unmounted after it whatever happened. */
const mounts: Array<string> = []
afterEach(() => {
  for (const dir of mounts.splice(0).reverse()) {
    unmount(dir)
    rmSync(dir, { recursive: true, force: true })
  }
})
const mountPoint = (): string => {
  const dir = mkdtempSync(join(tmpdir(), "roster-mount-"))
  mounts.push(dir)
  return dir
}

describe("a corrupted database file", () => {
  const scratch = useScratch({ apps: demoApps })

  /** The page of roster_executions' table root, and the page size, read with a connection closed again at once. */
  const executionsRoot = (path: string): { page: number; size: number } => {
    const db = new Database(path)
    try {
      const { rootpage } = db.query("SELECT rootpage FROM sqlite_master WHERE name = 'roster_executions'").get() as { rootpage: number }
      const { page_size } = db.query("PRAGMA page_size").get() as { page_size: number }
      return { page: rootpage, size: page_size }
    } finally {
      db.close()
    }
  }

  test("a damaged page, a damaged header or random bytes: one line, exit 1, the file untouched; restored, every acknowledged execution runs", async () => {
    const s = scratch()
    const ids = await acknowledge(s, 5)
    const root = executionsRoot(s.db)
    const pristine = snapshot(s.db)

    // Random bytes fail where a damaged header does (at open): one command is enough for them.
    const damages: ReadonlyArray<readonly [string, () => Buffer, RegExp, typeof commands?]> = [
      ["the executions table's root page overwritten", () => {
        const b = Buffer.from(pristine)
        b.fill(0xff, (root.page - 1) * root.size, root.page * root.size)
        return b
      }, /database disk image is malformed \(Roster leaves the file as it is/],
      ["the header overwritten", () => {
        const b = Buffer.from(pristine)
        b.write("this is not the header of a SQLite file".padEnd(100, "!"), 0)
        return b
      }, /cannot open database .*: file is not a database \(Roster leaves the file as it is/],
      ["a file of random bytes", () => randomBytes(64 * 1024), /cannot open database .*: file is not a database/, [["worker"]]]
    ]
    for (const [what, damage, mentions, only] of damages) {
      const damaged = damage()
      writeFileSync(s.db, damaged)
      await expectAllRefused((args) => s.run(args, { timeoutMs: 30_000 }), mentions, only)
      expect(snapshot(s.db).equals(damaged), `${what}: the file changed`).toBe(true)
    }

    writeFileSync(s.db, pristine)
    await expectAllRan(s, ids)
  }, 60_000)
})

describe("a read-only database", () => {
  const scratch = useScratch({ apps: demoApps })
  const asNobody = requirePrivilege("runuser")
  const mounting = requirePrivilege("mount")

  // Root ignores file permissions, so "read-only" is another user (runuser) or a read-only mount.
  test.skipIf(asNobody.skip && mounting.skip)("a file this process cannot write — root's 0644 file for user nobody, a read-only mount even for root: one line naming it read-only, exit 1, nothing changed; writable again, every acknowledged execution runs", async () => {
    const s = scratch()
    const ids = await acknowledge(s, 3)
    const before = snapshot(s.db)
    if (!asNobody.skip) {
      chmodSync(s.dir, 0o755)
      chmodSync(s.db, 0o644)
      // nobody may not reach this clone (under mktemp -d, or a 0700 home): it runs a world-readable copy.
      const copy = reachableCopy()
      try {
        const command = ["runuser", "-u", "nobody", "--", ...copy.command]
        await expectAllRefused(
          (args) => spawnRoster(args, { cwd: s.dir, env: s.env({ ROSTER_APPS_DIR: copy.demoApps }), command }).wait(30_000),
          /attempt to write a readonly database \(read-only: this process cannot write .*roster\.db\)/
        )
      } finally {
        copy.remove()
      }
    }
    if (!mounting.skip) {
      const view = mountPoint()
      bindReadOnly(s.dir, view)
      await expectAllRefused(
        (args) => s.run(args, { env: { ROSTER_DB: join(view, "roster.db") }, timeoutMs: 30_000 }),
        /unable to open database file \(read-only: this process cannot write .*roster\.db\)/
      )
    }
    expect(snapshot(s.db).equals(before)).toBe(true)
    expect(existsSync(`${s.db}-shm`)).toBe(false)
    await expectAllRan(s, ids)
  }, 60_000)
})

describe("a full disk", () => {
  const scratch = useScratch({ apps: fixtureApps })
  const mounting = requirePrivilege("mount")

  /** A text payload of about 100 KB (a command-line argument may hold 128 KiB): a 1 MiB disk fills after a few. */
  const bigPayload = (n: number) => JSON.stringify({ text: `${n}:`.padEnd(100_000, "x") })

  test.skipIf(mounting.skip)("enqueues until a 1 MiB disk is full: the refused enqueue is one line; a worker on the full disk stays up, and once there is space every acknowledged execution runs", async () => {
    const s = scratch()
    const disk = mountPoint()
    mountTmpfs(disk, "1m")
    const env = { ROSTER_DB: join(disk, "roster.db") }

    const acknowledged: Array<string> = []
    let refused: ProcessResult | undefined
    for (let n = 0; n < 60 && refused === undefined; n++) {
      const r = await s.run(["enqueue", "probe/text", "--payload", bigPayload(n), "--json"], { env })
      if (r.code === 0) acknowledged.push(JSON.parse(r.stdout).id)
      else refused = r
    }
    expect(refused, "the disk never filled").toBeDefined()
    expectRefused(refused!, /^roster: insert executions: database or disk is full \(no space left for the database; this write was not applied\)$/)
    expect(acknowledged.length).toBeGreaterThan(2)
    acknowledged.sort()

    // Claims are writes too: the worker cannot claim, says so in one line per retry, and stays up.
    const worker = s.spawn(["worker"], { env })
    await waitFor("the worker to meet the full disk", () => worker.stderrSoFar().includes("claim executions: database or disk is full"))
    expect(worker.exited).toBe(false)
    const db = new Database(env.ROSTER_DB)
    try {
      db.run("PRAGMA busy_timeout = 10000")
      const inState = (state: string) =>
        (db.query("SELECT id FROM roster_executions WHERE state = ? ORDER BY id").all(state) as Array<{ id: string }>).map((r) => r.id)
      expect(inState("queued")).toEqual(acknowledged)

      remount(disk, "size=16m")
      await waitFor("every acknowledged execution to succeed", () => inState("succeeded").length === acknowledged.length, { timeoutMs: 40_000 })
      expect(inState("succeeded")).toEqual(acknowledged)
      expect(db.query("PRAGMA integrity_check").all()).toEqual([{ integrity_check: "ok" }])
    } finally {
      db.close()
    }
    worker.kill("SIGTERM")
    const stopped = await worker.wait(30_000)
    expect(stopped.code, tail(stopped.stderr)).toBe(0)
    expect(stopped.stderr).not.toMatch(/^\s+at /m)
  }, 90_000)

  /** Fills the rest of a mounted disk with a file (until ENOSPC); returns its path, to delete it again. */
  const fillUp = (disk: string): string => {
    const filler = join(disk, "filler")
    for (const chunk of [64 * 1024, 4 * 1024, 512]) {
      try {
        while (true) appendFileSync(filler, Buffer.alloc(chunk))
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== "ENOSPC") throw e
      }
    }
    return filler
  }

  test.skipIf(mounting.skip)("a worker whose outcomes cannot be written on a full disk: once there is space, those executions expire and run again", async () => {
    const s = scratch()
    const disk = mountPoint()
    mountTmpfs(disk, "1m")
    const env = { ROSTER_DB: join(disk, "roster.db"), ROSTER_LEASE_MS: "3000", ROSTER_HEARTBEAT_MS: "300", ROSTER_REAP_MS: "200" }
    const ids = await acknowledge(s, 2, { job: "probe/nap", payload: () => ({ ms: 1_500 }), env })
    const db = new Database(env.ROSTER_DB)
    db.run(runsTableSql)
    const worker = s.spawn(["worker"], { env })
    try {
      db.run("PRAGMA busy_timeout = 10000")
      await waitFor("both handlers to start", () => (db.query("SELECT COUNT(*) AS n FROM runs").get() as { n: number }).n === 2)
      const filler = fillUp(disk)
      await waitFor("the outcomes to fail", () => worker.stderrSoFar().split("could not record the outcome").length === 3)
      rmSync(filler)
      // The heartbeat no longer keeps those leases: they expire, and the Reaper retries them.
      await waitFor("both executions to succeed", () => (db.query("SELECT COUNT(*) AS n FROM roster_executions WHERE state = 'succeeded'").get() as { n: number }).n === 2, { timeoutMs: 30_000 })
      expect(db.query("SELECT id, attempt FROM roster_executions ORDER BY id").all()).toEqual(ids.map((id) => ({ id, attempt: 2 })))
      expect(db.query("SELECT execution_id, attempt, outcome FROM roster_attempts ORDER BY execution_id").all())
        .toEqual(ids.map((id) => ({ execution_id: id, attempt: 1, outcome: "lease_expired" })))
      expect(db.query("PRAGMA integrity_check").all()).toEqual([{ integrity_check: "ok" }])
    } finally {
      db.close()
    }
    worker.kill("SIGTERM")
    expect((await worker.wait(30_000)).code).toBe(0)
  }, 60_000)
})

describe("a database migrated by a newer Roster", () => {
  const scratch = useScratch({ apps: demoApps })
  const refusal = (known: number) => new RegExp(`schema is version ${known + 1}, this Roster knows up to ${known}: upgrade Roster$`)

  test("SQLite: every command is refused with one line, exit 1, the file unchanged; every acknowledged execution is still there", async () => {
    const s = scratch()
    const ids = await acknowledge(s, 3)
    const setVersion = (sql: string) => {
      const db = new Database(s.db)
      db.run(sql)
      db.close()
    }
    setVersion(`INSERT INTO roster_migrations (version, name, applied_at) VALUES (${latestVersion + 1}, 'from a newer Roster', 0)`)
    const before = snapshot(s.db)
    await expectAllRefused((args) => s.run(args, { timeoutMs: 30_000 }), refusal(latestVersion))
    expectRefused(await s.run(["migrate"]), refusal(latestVersion))
    expect(snapshot(s.db).equals(before)).toBe(true)

    // Back on a schema this build knows (as a newer Roster's downgrade would leave it).
    setVersion(`DELETE FROM roster_migrations WHERE version > ${latestVersion}`)
    await expectAllRan(s, ids)
  }, 60_000)

  const pg = requireService("postgres")
  test.skipIf(pg.skip)("PostgreSQL: every command is refused with one line, exit 1, nothing applied; every acknowledged execution is still there", async () => {
    const s = scratch()
    const base = pgUrl()!
    const schema = freshSchema("roster_bad")
    await pgAdmin(base, `CREATE SCHEMA "${schema}"`)
    try {
      const env = { ROSTER_DB: urlWithSchema(base, schema) }
      const ids = await acknowledge(s, 3, { env })
      await pgAdmin(base, `INSERT INTO "${schema}".roster_migrations (version, name, applied_at) VALUES (${pgLatestVersion + 1}, 'from a newer Roster', 0)`)
      await expectAllRefused((args) => s.run(args, { env, timeoutMs: 30_000 }), refusal(pgLatestVersion))
      await pgAdmin(base, `DELETE FROM "${schema}".roster_migrations WHERE version > ${pgLatestVersion}`)
      await expectAllRan(s, ids, env)
    } finally {
      await pgAdmin(base, `DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
    }
  }, 60_000)
})
