/**
 * The checkpoint thread (src/store/sqlite/Checkpointer.ts) copies WAL frames back into
 * the database file from a connection of its own, on another thread, so the writer's
 * commits rarely carry a checkpoint. Checked on real files: it keeps the WAL short when
 * the writer does no checkpointing at all, it closes its connection when stopped, a
 * store starts it only after writing enough rows, and a process killed with kill -9
 * while the thread checkpoints loses no committed row and leaves an intact file.
 */
import { Database } from "bun:sqlite"
import { afterEach, beforeEach, describe, expect, test } from "bun:test"
import { Effect, Exit, Scope } from "effect"
import { existsSync, mkdtempSync, rmSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { checkpointerOnDemand, startCheckpointer } from "../../src/store/sqlite/Checkpointer.ts"
import { openDatabase } from "../../src/store/sqlite/SqliteConnection.ts"
import { bunBinary, killLeftovers, repoRoot, waitFor } from "../support/processes.ts"

let dir: string
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "roster-checkpointer-"))
})
afterEach(async () => {
  await killLeftovers()
  rmSync(dir, { recursive: true, force: true })
})

/** A WAL file at NORMAL with a table of wide rows and the writer's own checkpoints off. */
const writerWithoutCheckpoints = (path: string) => {
  const db = openDatabase({ path, synchronous: "NORMAL" })
  db.run("PRAGMA wal_autocheckpoint = 0")
  db.run("CREATE TABLE t (x TEXT NOT NULL)")
  const insert = db.query("INSERT INTO t (x) VALUES (?)")
  return { db, insert: (n: number) => insert.run(`${n}:${"x".repeat(500)}`) }
}

const walBytes = (path: string): number => statSync(`${path}-wal`).size

describe("the checkpoint thread", () => {
  test("keeps the WAL short while the writer itself never checkpoints", async () => {
    // Without the thread, 4,000 one-row commits of this table leave a WAL of 4,000+ frames.
    const alone = join(dir, "alone.db")
    const control = writerWithoutCheckpoints(alone)
    for (let n = 0; n < 4_000; n++) control.insert(n)
    const grown = walBytes(alone)
    control.db.close()
    expect(grown).toBeGreaterThan(4_000 * 4_096)

    const path = join(dir, "helped.db")
    const writer = writerWithoutCheckpoints(path)
    const thread = startCheckpointer(path, 1, { thresholdFrames: 64, pollMs: 1, tidyAfterMs: 5 })
    try {
      await waitFor("the thread to watch", () => thread.state() === "watching")
      for (let burst = 0; burst < 40; burst++) {
        const before = thread.checkpoints()
        for (let k = 0; k < 100; k++) writer.insert(burst * 100 + k)
        // Once the writes pause, the thread copies back every frame, and the writer's next
        // commit starts the WAL over.
        await waitFor("the thread to catch up", () => thread.checkpoints() > before && thread.behind() === 0, { intervalMs: 1 })
      }
      expect(thread.checkpoints()).toBeGreaterThanOrEqual(40)
      expect(walBytes(path)).toBeLessThan(grown / 4)
      expect(writer.db.query("SELECT count(*) AS n FROM t").get()).toEqual({ n: 4_000 })
    } finally {
      await thread.stop()
      writer.db.close()
    }
  })

  test("closes its connection when stopped: the writer's close is the last one and removes the WAL", async () => {
    const path = join(dir, "a.db")
    const writer = writerWithoutCheckpoints(path)
    const thread = startCheckpointer(path, 1)
    await waitFor("the thread to watch", () => thread.state() === "watching")
    for (let n = 0; n < 10; n++) writer.insert(n)
    await thread.stop()
    expect(thread.state()).toBe("closed")
    expect(existsSync(`${path}-wal`)).toBe(true)
    writer.db.close()
    expect(existsSync(`${path}-wal`)).toBe(false)
    const reopened = new Database(path, { readonly: true })
    expect(reopened.query("SELECT count(*) AS n FROM t").get()).toEqual({ n: 10 })
    reopened.close()
  })

  test("runs from a program compiled with bun build --compile (its source survives bundling)", async () => {
    const binary = join(dir, "checkpoint-thread")
    const build = Bun.spawnSync([bunBinary, "build", "--compile", "--minify", join(repoRoot, "tests/fixtures/scripts/checkpoint-thread.ts"), "--outfile", binary], {
      cwd: repoRoot,
      stderr: "pipe",
      stdout: "pipe"
    })
    expect(build.exitCode, build.stderr.toString()).toBe(0)
    const run = Bun.spawnSync([binary, join(dir, "compiled.db")], { cwd: dir, stderr: "pipe", stdout: "pipe" })
    expect(run.exitCode, run.stderr.toString()).toBe(0)
    const report = JSON.parse(run.stdout.toString()) as { state: string; reason: string | null; checkpoints: number }
    expect(report).toMatchObject({ state: "watching", reason: null })
    expect(report.checkpoints).toBeGreaterThan(0)
  }, 60_000)

  test("does not create a missing file: it ends unavailable and says why", async () => {
    const path = join(dir, "missing.db")
    const thread = startCheckpointer(path, 2)
    await waitFor("the thread to end", () => thread.state() === "unavailable")
    await thread.stop()
    expect(thread.reason()).toContain("cannot open")
    expect(existsSync(path)).toBe(false)
  })
})

describe("a store's checkpoint thread", () => {
  test("starts once the store has written enough rows, and is closed with the store's scope", async () => {
    const path = join(dir, "a.db")
    const db = openDatabase({ path })
    const scope = Effect.runSync(Scope.make())
    const onDemand = await Effect.runPromise(Scope.provide(checkpointerOnDemand(db, { startAfterRows: 100 }), scope))
    onDemand.noteWrites(60)
    expect(onDemand.running()).toBeUndefined()
    onDemand.noteWrites(40)
    const thread = onDemand.running()
    expect(thread).toBeDefined()
    await waitFor("the thread to watch", () => thread!.state() === "watching")
    onDemand.noteWrites(1_000)
    expect(onDemand.running()).toBe(thread)
    await Effect.runPromise(Scope.close(scope, Exit.void))
    expect(thread!.state()).toBe("closed")
    db.close()
  })

  test("an in-memory database never has one", async () => {
    const db = openDatabase({ path: ":memory:" })
    const scope = Effect.runSync(Scope.make())
    const onDemand = await Effect.runPromise(Scope.provide(checkpointerOnDemand(db, { startAfterRows: 1 }), scope))
    onDemand.noteWrites(1_000)
    expect(onDemand.running()).toBeUndefined()
    await Effect.runPromise(Scope.close(scope, Exit.void))
    db.close()
  })

  test("a process killed with kill -9 while its thread checkpoints loses no committed row", async () => {
    const path = join(dir, "killed.db")
    const child = Bun.spawn([bunBinary, join(repoRoot, "tests/fixtures/scripts/checkpoint-and-write.ts"), path], {
      cwd: repoRoot,
      stdout: "pipe",
      stderr: "pipe"
    })
    let out = ""
    const reader = (async () => {
      const decoder = new TextDecoder()
      for await (const chunk of child.stdout) out += decoder.decode(chunk, { stream: true })
    })()
    const lastLine = () => {
      const lines = out.split("\n")
      lines.pop() // possibly partial
      const [rows, checkpoints] = (lines.at(-1) ?? "0 0").split(" ").map(Number)
      return { rows: rows!, checkpoints: checkpoints! }
    }
    try {
      await waitFor("the thread's checkpoints", () => lastLine().checkpoints >= 5 && lastLine().rows >= 2_000, { timeoutMs: 60_000 })
    } catch (error) {
      child.kill("SIGKILL")
      throw new Error(`${(error as Error).message}; stderr: ${await new Response(child.stderr).text()}`)
    }
    child.kill("SIGKILL")
    await child.exited
    await reader
    const acknowledged = lastLine()
    expect(child.signalCode).toBe("SIGKILL")
    const db = new Database(path)
    try {
      expect(db.query("PRAGMA integrity_check").get()).toEqual({ integrity_check: "ok" })
      const { n } = db.query("SELECT count(*) AS n FROM roster_executions").get() as { n: number }
      expect(n).toBeGreaterThanOrEqual(acknowledged.rows)
    } finally {
      db.close()
    }
  })
})
