/**
 * Transactional enqueue on SQLite: the execution commits or rolls back with the
 * caller's own rows, and a worker picks it up after the commit without any explicit
 * wake-up (the change watcher sees the other connection's commit).
 */
import { Database } from "bun:sqlite"
import { describe, expect, test } from "bun:test"
import { Effect, Layer, ManagedRuntime, References, Schema } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Job from "../../src/jobs/Job.ts"
import * as Roster from "../../src/runtime/Roster.ts"
import { enqueueWithin } from "../../src/runtime/Transactional.ts"
import { Store } from "../../src/store/Store.ts"
import { waitFor } from "../support/processes.ts"

const receipt = Job.make({ id: "shop/receipt", payload: Schema.Struct({ orderId: Schema.Number }), handler: ({ orderId }) => Effect.succeed({ orderId }) })

const withRoster = async (worker: boolean, body: (db: Database, run: <A, E>(e: Effect.Effect<A, E, Store>) => Promise<A>) => Promise<void>) => {
  const dir = mkdtempSync(join(tmpdir(), "roster-tx-"))
  const path = join(dir, "roster.db")
  const runtime = ManagedRuntime.make(
    Roster.layer({ db: path, jobs: [receipt], worker: { pollMs: 60_000, watchMs: 5 } }, { worker }).pipe(
      Layer.provideMerge(Layer.succeed(References.MinimumLogLevel, "Error"))
    )
  )
  await runtime.runPromise(Effect.void)
  const db = new Database(path)
  db.run("PRAGMA busy_timeout = 5000")
  db.run("CREATE TABLE IF NOT EXISTS orders (id INTEGER PRIMARY KEY, total INTEGER NOT NULL)")
  try {
    await body(db, (e) => runtime.runPromise(e))
  } finally {
    db.close()
    await runtime.dispose()
    rmSync(dir, { recursive: true, force: true })
  }
}

const placeOrder = (db: Database, id: number, fail: boolean) =>
  db.transaction(() => {
    db.query("INSERT INTO orders (id, total) VALUES (?, ?)").run(id, 100)
    const r = Effect.runSync(enqueueWithin(db, receipt, { orderId: id }, { idempotencyKey: `order-${id}` }))
    if (fail) throw new Error("payment declined")
    return r
  })

describe("transactional enqueue", () => {
  test("a transaction that enqueues and then throws leaves neither the business row nor the execution", async () => {
    await withRoster(false, async (db, run) => {
      expect(() => placeOrder(db, 1, true)()).toThrow("payment declined")
      expect(db.query("SELECT COUNT(*) AS n FROM orders").get()).toEqual({ n: 0 })
      expect((await run(Store.use((s) => s.executionsCount({})))).queued).toBe(0)
    })
  })

  test("a commit makes both visible together", async () => {
    await withRoster(false, async (db, run) => {
      const r = placeOrder(db, 2, false)()
      expect(r.inserted).toBe(true)
      expect(db.query("SELECT COUNT(*) AS n FROM orders").get()).toEqual({ n: 1 })
      const e = await run(Store.use((s) => s.executionsGet(r.id)))
      expect(e).toMatchObject({ job: "shop/receipt", state: "queued", payload: { orderId: 2 }, idempotencyKey: "order-2" })
    })
  })

  test("an invalid payload inside the transaction is a typed error and rolls it back", async () => {
    await withRoster(false, async (db, run) => {
      const tx = db.transaction(() => {
        db.query("INSERT INTO orders (id, total) VALUES (3, 1)").run()
        Effect.runSync(enqueueWithin(db, receipt, { orderId: "three" }))
      })
      expect(() => tx()).toThrow(/invalid payload for shop\/receipt/)
      expect(db.query("SELECT COUNT(*) AS n FROM orders").get()).toEqual({ n: 0 })
      expect((await run(Store.use((s) => s.executionsCount({})))).queued).toBe(0)
    })
  })

  test("outside a transaction it refuses rather than autocommitting", async () => {
    await withRoster(false, async (db) => {
      expect(() => Effect.runSync(enqueueWithin(db, receipt, { orderId: 4 }))).toThrow(/needs an open transaction/)
    })
  })

  test("a running worker picks the execution up after the commit, with no explicit wake-up", async () => {
    await withRoster(true, async (db, run) => {
      const r = placeOrder(db, 5, false)()
      // Bounded by time, not by a count of polls: a loaded machine makes each poll slower.
      const state = () => run(Store.use((s) => s.executionsGet(r.id))).then((e) => e!.state)
      await waitFor("the execution to succeed", async () => (await state()) === "succeeded", { timeoutMs: 15_000, intervalMs: 10 })
      expect(await state()).toBe("succeeded")
    })
  })
})
