/**
 * SQLite's rowids made from execution ids (src/store/sqlite/ExecutionRowid.ts): two ids
 * that give one rowid (made in one millisecond by two processes), ids that are not
 * UUIDv7s, and a file migrated from the id-indexed table all keep every row findable by
 * its own id through every Store command.
 */
import { Database } from "bun:sqlite"
import { afterEach, describe, expect, test } from "bun:test"
import { Effect } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { displacedBelow, rowidOf, rowidSql } from "../../src/store/sqlite/ExecutionRowid.ts"
import { migrations } from "../../src/store/sqlite/migrations.ts"
import { applyMigrations, openDatabase } from "../../src/store/sqlite/SqliteConnection.ts"
import { makeSqliteStore } from "../../src/store/sqlite/SqliteStore.ts"
import type { InsertRequest, Outcome } from "../../src/store/Store.ts"
import { claimOf, row } from "./rows.ts"

const dirs: Array<string> = []
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
})

const openStore = (migrate = true) => {
  const dir = mkdtempSync(join(tmpdir(), "roster-rowids-"))
  dirs.push(dir)
  const db = openDatabase({ path: join(dir, "roster.db") })
  if (migrate) applyMigrations(db, 1)
  return { db, store: migrate ? makeSqliteStore(db) : undefined! }
}

/** Another id with the same rowid as `id`: the same millisecond and counter, other random bits (as another process could make). */
const twinOf = (id: string): string => {
  const tail = id.slice(19)
  const other = [...tail].map((c) => (c === "-" ? c : ((parseInt(c, 16) + 7) % 16).toString(16))).join("")
  return id.slice(0, 19) + other
}

const run = <A, E>(effect: Effect.Effect<A, E>): A => Effect.runSync(effect)

const success = (id: string, attempt = 1): Outcome => ({ kind: "succeeded", id, workerId: "w1", attempt, result: "1", now: 1_100, startedAt: 1_000 })

describe("rowids made from ids (sqlite)", () => {
  test("the rowid in JavaScript and in SQL agree, and one process's ids get increasing rowids", () => {
    const db = new Database(":memory:")
    const inSql = db.query<{ r: number }, [string]>(`SELECT ${rowidSql("?1")} AS r`)
    for (const ms of [0, 1_000, 1_577_836_800_000, Date.now(), 3_700_000_000_000]) {
      let last = -Infinity
      for (let i = 0; i < 5_000; i++) {
        const id = Bun.randomUUIDv7("hex", ms)
        const r = rowidOf(id)!
        expect(Number.isSafeInteger(r)).toBe(true)
        expect(inSql.get(id)!.r).toBe(r)
        expect(r).toBeGreaterThan(last)
        expect(r).toBeGreaterThan(displacedBelow)
        last = r
      }
    }
    expect(rowidOf("not-an-id")).toBeNull()
    expect(rowidOf(Bun.randomUUIDv7("hex", 1_000).toUpperCase())).toBeNull()
    db.close()
  })

  test("only a lower-case UUIDv7 of 1970–2089 has a rowid: every one-character change of an id agrees with the rule written out", () => {
    // The rule, written with a regular expression and substrings (as rowidOf was before it
    // became one pass over the characters).
    const shape = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$/
    const epochMs = Date.UTC(2020, 0, 1)
    const reference = (s: string): number | null => {
      if (!shape.test(s)) return null
      const ms = parseInt(s.slice(0, 8) + s.slice(9, 13), 16)
      const r = (ms - epochMs) * 4096 + parseInt(s.slice(15, 18), 16)
      return Number.isSafeInteger(r) ? r : null
    }
    // Each position replaced by each of these: hex digits, upper-case ones, a dash,
    // characters just outside 0–9 and a–f, characters above 127, a NUL.
    const replacements = ["0", "7", "9", "a", "f", "A", "F", "-", "/", ":", "`", "g", "é", "\u0000", "\u4e00"]
    let checked = 0
    for (const ms of [0, Date.now(), 3_700_000_000_000]) {
      const id = Bun.randomUUIDv7("hex", ms)
      for (let i = 0; i < id.length; i++) {
        for (const c of replacements) {
          const changed = id.slice(0, i) + c + id.slice(i + 1)
          expect({ changed, rowid: rowidOf(changed) }).toEqual({ changed, rowid: reference(changed) })
          checked++
        }
      }
      for (const odd of ["", id.slice(0, 35), `${id}0`, ` ${id.slice(1)}`, id.replaceAll("-", "_"), id.slice(0, 14) + "4" + id.slice(15)]) {
        expect(rowidOf(odd)).toBeNull()
      }
    }
    expect(checked).toBe(3 * 36 * replacements.length)
    // Past 2089 the rowid would not be a safe integer: such an id is displaced.
    expect(rowidOf(Bun.randomUUIDv7("hex", 3_800_000_000_000))).toBeNull()
    expect(reference(Bun.randomUUIDv7("hex", 3_800_000_000_000))).toBeNull()
  })

  test("two ids with one rowid, in a bulk block and alone, are both stored and each found, claimed and finished by its own id", () => {
    const { db, store } = openStore()
    const block = Array.from({ length: 120 }, () => row())
    const twins = [twinOf(block[50]!.id), twinOf(block[115]!.id)]
    run(store.executionsInsert([row({ id: twins[0]! })]))
    // The block of 100 holding block[50] meets the taken rowid; its rows go one by one.
    const results = run(store.executionsInsert([...block, row({ id: twins[1]! })]))
    expect(results.map((r) => r.id)).toEqual([...block.map((r) => r.id), twins[1]!])
    expect(results.every((r) => r.inserted)).toBe(true)
    expect(db.query("SELECT COUNT(*) AS n FROM roster_executions WHERE seq < ?").get(displacedBelow)).toEqual({ n: 2 })
    const all = [...block.map((r) => r.id), ...twins]
    for (const id of all) expect(run(store.executionsGet(id))?.id).toBe(id)
    const claimed = run(store.executionsClaim(claimOf({ limit: 1_000 })))
    expect(new Set(claimed.map((e) => e.id))).toEqual(new Set(all))
    expect(run(store.executionsFinish(all.map((id) => success(id))))).toEqual(all.map(() => true))
    expect(run(store.executionsCount({})).succeeded).toBe(122)
    for (const id of all) expect(run(store.executionsGet(id))?.state).toBe("succeeded")
    db.close()
  })

  test("an id stored (at its rowid or displaced) cannot be stored again", () => {
    const { db, store } = openStore()
    const first = row()
    const twin = row({ id: twinOf(first.id) })
    run(store.executionsInsert([first, twin]))
    for (const again of [first, twin]) {
      const exit = Effect.runSyncExit(store.executionsInsert([{ ...again, payload: "{}" }]))
      expect(exit._tag).toBe("Failure")
      expect(String(exit)).toContain("already exists")
    }
    expect(run(store.executionsCount({})).queued).toBe(2)
    db.close()
  })

  test("a keyed row whose rowid is taken is displaced, and its key still answers with it", () => {
    const { db, store } = openStore()
    const first = row()
    run(store.executionsInsert([first]))
    const keyed = row({ id: twinOf(first.id), idempotencyKey: "k" })
    expect(run(store.executionsInsert([keyed]))).toEqual([{ id: keyed.id, inserted: true }])
    expect(run(store.executionsInsert([row({ idempotencyKey: "k" })]))).toEqual([{ id: keyed.id, inserted: false }])
    const deduped = row({ id: twinOf(twinOf(first.id)), dedupeKey: "d", dedupeMode: "replace" } as Partial<InsertRequest>)
    expect(run(store.executionsInsert([deduped]))).toEqual([{ id: deduped.id, inserted: true }])
    const replacing = row({ dedupeKey: "d", dedupeMode: "replace", payload: "{\"n\":-1}" } as Partial<InsertRequest>)
    expect(run(store.executionsInsert([replacing]))).toEqual([{ id: deduped.id, inserted: false, replaced: true }])
    expect(run(store.executionsGet(deduped.id))?.payload).toEqual({ n: -1 })
    db.close()
  })

  test("ids that are not UUIDv7s are stored displaced and found, cancelled and listed by id", () => {
    const { db, store } = openStore()
    const odd = ["job-1", "JOB-1", Bun.randomUUIDv7("hex", 1_000).toUpperCase()].map((id) => row({ id }))
    const plain = row()
    run(store.executionsInsert([...odd, plain]))
    for (const r of [...odd, plain]) expect(run(store.executionsGet(r.id))?.id).toBe(r.id)
    expect(run(store.executionsCancel({ id: "job-1", now: 2_000 }))).toBe("cancelled")
    expect(run(store.executionsGet("job-1"))?.state).toBe("cancelled")
    expect(run(store.executionsGet("JOB-1"))?.state).toBe("queued")
    expect(run(store.executionsGet("job-2"))).toBeNull()
    // Newest first by rowid; displaced rows come after the rest, in the order stored, and pages follow on.
    const page = run(store.executionsList({ limit: 2 }))
    expect(page.map((e) => e.id)).toEqual([plain.id, odd[0]!.id])
    const next = run(store.executionsList({ limit: 10, before: page[1]!.id }))
    expect(next.map((e) => e.id)).toEqual([odd[1]!.id, odd[2]!.id])
    db.close()
  })

  test("migration 10 keeps every row of an id-indexed file findable by its id, twins and odd ids too, and in claim order", () => {
    const { db } = openStore(false)
    db.run("CREATE TABLE roster_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT")
    for (const m of migrations.filter((m) => m.version <= 9)) {
      db.run(m.sql)
      db.query("INSERT INTO roster_migrations (version, name, applied_at) VALUES (?, ?, 1)").run(m.version, m.name)
    }
    const ids = Array.from({ length: 300 }, (_, i) => Bun.randomUUIDv7("hex", 1_000 + Math.floor(i / 7)))
    const stored = [...ids, twinOf(ids[3]!), twinOf(ids[200]!), "legacy-id"]
    const insert = db.query(
      `INSERT INTO roster_executions (id, job, queue, state, payload, priority, max_attempts, retry, timeout_ms, run_at, created_at)
       VALUES (?, 'app/job', 'default', ?, ?, 0, 3, 'e3/1000/60000/2/f', 60000, 100, 100)`
    )
    // Stored out of id order, as several processes would.
    for (const [i, id] of [...stored].reverse().entries()) insert.run(id, i % 5 === 0 ? "succeeded" : "queued", JSON.stringify({ id }))
    db.query("UPDATE roster_executions SET attempt = 1, lease_owner = 'w0' WHERE state = 'succeeded'").run()
    applyMigrations(db, 2)
    expect(db.query("SELECT MAX(version) AS v FROM roster_migrations").get()).toEqual({ v: 10 })
    expect(db.query("PRAGMA integrity_check").get()).toEqual({ integrity_check: "ok" })
    const store = makeSqliteStore(db)
    for (const id of stored) expect(run(store.executionsGet(id))!.payload).toEqual({ id })
    expect(db.query("SELECT COUNT(*) AS n FROM roster_executions WHERE seq < ?").get(displacedBelow)).toEqual({ n: 3 })
    const queued = run(store.executionsCount({})).queued
    const claimed = run(store.executionsClaim(claimOf({ limit: 1_000 })))
    expect(claimed.length).toBe(queued)
    // The displaced rows (the later stored of each pair of twins, and the odd id) first, then id order.
    const displaced = db.query<{ id: string }, [number]>("SELECT id FROM roster_executions WHERE seq < ? ORDER BY seq").all(displacedBelow).map((r) => r.id)
    expect(new Set(displaced)).toEqual(new Set([ids[3]!, ids[200]!, "legacy-id"]))
    const inOrder = claimed.map((e) => e.id).filter((id) => !displaced.includes(id))
    expect(inOrder).toEqual([...inOrder].sort())
    expect(run(store.executionsFinish(claimed.map((e) => success(e.id))))).toEqual(claimed.map(() => true))
    db.close()
  })
})
