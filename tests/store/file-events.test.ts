/**
 * The SQLite change watch sleeps on the file system's reports of writes to the
 * database's files (src/store/sqlite/FileEvents.ts) instead of reading data_version every
 * 5 ms while nothing happens. Checked on real files: another connection's commit is
 * reported; a folder that cannot be watched gives no source (the watch polls); and a
 * commit after a quiet spell, when the watch has stopped reading every 5 ms, still
 * reaches it.
 */
import { Database } from "bun:sqlite"
import { afterEach, beforeEach, describe, expect, test } from "bun:test"
import { Effect, Exit, Fiber, Scope } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { databaseFileEvents, type FileEvents } from "../../src/store/sqlite/FileEvents.ts"
import { Store, type StoreChange } from "../../src/store/Store.ts"
import { waitFor } from "../support/processes.ts"
import { drivers, watching, withStore, type StoreFixture } from "./drivers.ts"
import { row } from "./rows.ts"

let dir: string
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "roster-file-events-"))
})
afterEach(() => rmSync(dir, { recursive: true, force: true }))

/** The events of `path` in a scope of their own; `close` ends the watch. */
const open = async (path: string) => {
  const scope = Effect.runSync(Scope.make())
  const events = await Effect.runPromise(Scope.provide(databaseFileEvents(path), scope))
  return { events, close: () => Effect.runPromise(Scope.close(scope, Exit.void)) }
}

describe("database file events", () => {
  test("another connection's commit is reported; a take forgets it; the next write is reported again", async () => {
    const path = join(dir, "a.db")
    const writer = new Database(path)
    writer.run("PRAGMA journal_mode = WAL")
    writer.run("CREATE TABLE t (x)")
    const { events, close } = await open(path)
    try {
      expect(events).toBeDefined()
      const e = events as FileEvents
      // Reports of the setup, if any, are forgotten.
      await new Promise((r) => setTimeout(r, 100))
      await Effect.runPromise(e.take)
      expect(await Effect.runPromise(e.take)).toBe(false)
      const next = Effect.runPromise(e.next)
      writer.run("INSERT INTO t VALUES (1)")
      await next
      expect(await Effect.runPromise(e.take)).toBe(true)
      await new Promise((r) => setTimeout(r, 100))
      await Effect.runPromise(e.take)
      writer.run("INSERT INTO t VALUES (2)")
      await waitFor("the second report", () => Effect.runPromise(e.take), { timeoutMs: 15_000 })
    } finally {
      await close()
      writer.close()
    }
  })

  test("another file in the folder is not a report", async () => {
    const path = join(dir, "a.db")
    const { events, close } = await open(path)
    try {
      await new Promise((r) => setTimeout(r, 100))
      await Effect.runPromise(events!.take)
      Bun.write(join(dir, "other.txt"), "x")
      const other = new Database(join(dir, "b.db"))
      other.run("CREATE TABLE t (x)")
      other.close()
      await new Promise((r) => setTimeout(r, 300))
      expect(await Effect.runPromise(events!.take)).toBe(false)
    } finally {
      await close()
    }
  })

  test("no source where nothing can be watched: in memory, or a folder that does not exist", async () => {
    for (const path of [":memory:", "", join(dir, "missing", "a.db")]) {
      const { events, close } = await open(path)
      expect(events).toBeUndefined()
      await close()
    }
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
