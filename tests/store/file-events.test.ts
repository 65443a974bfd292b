/**
 * The SQLite change watch sleeps through a quiet spell until the file system reports a
 * write to the database's files (src/store/sqlite/FileEvents.ts) instead of reading
 * data_version every 5 ms. Checked on real files: another connection's commit ends the
 * wait and a write to another file does not; a folder that cannot be watched gives no
 * wait (so the watch reads as before); and commits after quiet spells still reach the
 * watcher.
 */
import { Database } from "bun:sqlite"
import { afterEach, beforeEach, describe, expect, test } from "bun:test"
import { Effect, Exit, Fiber, Scope } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { isWatchable, nextWrite } from "../../src/store/sqlite/FileEvents.ts"
import { Store, type StoreChange } from "../../src/store/Store.ts"
import { waitFor } from "../support/processes.ts"
import { drivers, watching, withStore, type StoreFixture } from "./drivers.ts"
import { row } from "./rows.ts"

let dir: string
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "roster-file-events-"))
})
afterEach(() => rmSync(dir, { recursive: true, force: true }))

/** Watches `path` in a scope of its own; `ended` says whether the wait for a write has ended; `close` ends the watch. */
const watchFor = async (path: string) => {
  const scope = Effect.runSync(Scope.make())
  const written = await Effect.runPromise(Scope.provide(nextWrite(path), scope))
  if (written === undefined) throw new Error(`cannot watch ${path}`)
  let ended = false
  void Effect.runPromise(written).then(() => (ended = true))
  return { ended: () => ended, close: () => Effect.runPromise(Scope.close(scope, Exit.void)) }
}

describe("database file events", () => {
  test("another connection's commit ends the wait", async () => {
    const path = join(dir, "a.db")
    const writer = new Database(path)
    writer.run("PRAGMA journal_mode = WAL")
    writer.run("CREATE TABLE t (x)")
    await new Promise((r) => setTimeout(r, 100))
    const w = await watchFor(path)
    try {
      await new Promise((r) => setTimeout(r, 200))
      expect(w.ended()).toBe(false)
      writer.run("INSERT INTO t VALUES (1)")
      await waitFor("the report of the commit", () => w.ended(), { timeoutMs: 15_000 })
    } finally {
      await w.close()
      writer.close()
    }
  })

  test("a write to another file in the folder does not end it", async () => {
    const w = await watchFor(join(dir, "a.db"))
    try {
      await Bun.write(join(dir, "other.txt"), "x")
      const other = new Database(join(dir, "b.db"))
      other.run("CREATE TABLE t (x)")
      other.close()
      await new Promise((r) => setTimeout(r, 300))
      expect(w.ended()).toBe(false)
    } finally {
      await w.close()
    }
  })

  test("a folder that cannot be watched gives no wait (the watcher reads every pollMs); :memory: is not watched", async () => {
    const scope = Effect.runSync(Scope.make())
    expect(await Effect.runPromise(Scope.provide(nextWrite(join(dir, "missing", "a.db")), scope))).toBeUndefined()
    await Effect.runPromise(Scope.close(scope, Exit.void))
    expect([":memory:", "", "file:x.db?mode=memory"].map(isWatchable)).toEqual([false, false, false])
    expect(isWatchable(join(dir, "a.db"))).toBe(true)
  })
})

const sqlite = drivers.find((d) => d.name === "sqlite")!

describe("the SQLite change watch after a quiet spell", () => {
  let f: StoreFixture
  let g: StoreFixture
  beforeEach(async () => {
    f = sqlite.make()
    await withStore(f, (s) => s.migrate)
    g = f.second()
  })
  afterEach(async () => {
    await g.dispose()
    await f.dispose()
  })

  test("each of several commits, a second apart (past the spell of reads every pollMs), reaches the watcher", async () => {
    const seen: Array<StoreChange> = []
    const fiber = await f.run(Effect.forkDetach(Store.use((s) => s.watchChanges({ pollMs: 5, onChange: (c) => seen.push(c) }))))
    try {
      await watching(seen)
      for (let i = 0; i < 3; i++) {
        await new Promise((r) => setTimeout(r, 1_000))
        const before = seen.length
        await withStore(g, (s) => s.executionsInsert([row({ queue: `q${i}` })]))
        await waitFor(`commit ${i} to reach the watcher`, () => seen.length > before, { timeoutMs: 15_000 })
      }
    } finally {
      await f.run(Fiber.interrupt(fiber))
    }
  })
})
