/**
 * Dedupe modes through the Client and transactional enqueue (the store's side is
 * tests/store/dedupe.test.ts): `dedupe` needs an idempotency key and one of the known
 * modes, and a debounce — three enqueues with `replace` — runs once, with the last
 * payload, at the last run time.
 */
import { Database } from "bun:sqlite"
import { PgClient } from "@effect/sql-pg"
import { describe, expect, test } from "bun:test"
import { Effect, Layer, ManagedRuntime, Redacted, References, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { TestClock } from "effect/testing"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Job from "../../src/jobs/Job.ts"
import { Client } from "../../src/runtime/Client.ts"
import type { EnqueueOptions } from "../../src/runtime/Enqueue.ts"
import * as Roster from "../../src/runtime/Roster.ts"
import { enqueueWithin } from "../../src/runtime/Transactional.ts"
import { enqueueWithinSql } from "../../src/runtime/TransactionalPg.ts"
import * as Worker from "../../src/runtime/Worker.ts"
import { type InsertResult, Store } from "../../src/store/Store.ts"
import { pgUrl, requireService } from "../support/env.ts"
import { eventually, runOnTestClock, testSettings } from "../support/runtime.ts"
import { freshSchema, pgAdmin, urlWithSchema } from "../store/drivers.ts"

const digest = Job.make({
  id: "mail/digest",
  payload: Schema.Struct({ user: Schema.String, changes: Schema.Number }),
  handler: ({ changes }) => Effect.succeed({ changes })
})

const listAll = Store.use((s) => s.executionsList({}))

describe("dedupe option", () => {
  const refused = async (options: EnqueueOptions) =>
    runOnTestClock([digest], Effect.gen(function*() {
      const error = yield* Effect.flip(Client.use((c) => c.enqueue(digest, { user: "ada", changes: 1 }, options)))
      return { error, n: (yield* listAll).length }
    }))

  test("a mode other than forever without an idempotency key is refused, naming the option", async () => {
    for (const options of [{ dedupe: "active" }, { dedupe: "replace" }, { dedupe: "replace", idempotencyKey: "   " }] as const) {
      const { error, n } = await refused(options)
      expect(error).toMatchObject({ _tag: "InvalidEnqueueOption", option: "dedupe", job: "mail/digest" })
      expect(error.message).toContain("needs an idempotencyKey")
      expect(n).toBe(0)
    }
  })

  test("an unknown mode is refused", async () => {
    const { error, n } = await refused({ idempotencyKey: "k", dedupe: "debounce" as never })
    expect(error).toMatchObject({ _tag: "InvalidEnqueueOption", option: "dedupe" })
    expect(error.message).toContain("forever, active, replace")
    expect(n).toBe(0)
  })

  test("forever (the default, or given) keeps the idempotency key; active and replace store a dedupe key", async () => {
    const rows = await runOnTestClock([digest], Effect.gen(function*() {
      const p = { user: "ada", changes: 1 }
      const a = yield* Client.use((c) => c.enqueue(digest, p, { idempotencyKey: " a " }))
      const b = yield* Client.use((c) => c.enqueue(digest, p, { idempotencyKey: "b", dedupe: "forever" }))
      const c = yield* Client.use((c) => c.enqueue(digest, p, { idempotencyKey: " c ", dedupe: "active" }))
      const again = yield* Client.use((c) => c.enqueue(digest, p, { idempotencyKey: "c", dedupe: "active" }))
      return { a, b, c, again, all: yield* listAll }
    }))
    expect(rows.again).toEqual({ id: rows.c.id, inserted: false })
    const byId = new Map(rows.all.map((e) => [e.id, e]))
    expect(byId.get(rows.a.id)).toMatchObject({ idempotencyKey: "a", dedupeKey: null })
    expect(byId.get(rows.b.id)).toMatchObject({ idempotencyKey: "b", dedupeKey: null })
    expect(byId.get(rows.c.id)).toMatchObject({ idempotencyKey: null, dedupeKey: "c" })
  })

  test("enqueueMany names the bad item", async () => {
    const error = await runOnTestClock([digest], Effect.flip(Client.use((c) => c.enqueueMany([
      { job: digest, payload: { user: "ada", changes: 1 }, options: { idempotencyKey: "k", dedupe: "replace" } },
      { job: digest, payload: { user: "ada", changes: 2 }, options: { dedupe: "active" } }
    ]))))
    expect(error).toMatchObject({ _tag: "InvalidEnqueueOption", option: "dedupe", item: 2 })
  })

  test("debounce: three enqueues with replace give one execution, run once with the last payload", async () => {
    const r = await runOnTestClock([digest], Effect.gen(function*() {
      yield* Worker.start({ settings: testSettings })
      const options = { idempotencyKey: "digest:ada", dedupe: "replace", delayMs: 300_000 } as const
      const results: Array<InsertResult> = []
      for (const changes of [1, 2, 3]) {
        results.push(yield* Client.use((c) => c.enqueue(digest, { user: "ada", changes }, options)))
        yield* TestClock.adjust("1 minute")
      }
      const queued = yield* listAll
      // Now minute 3; the last change (minute 2) is due at minute 7.
      yield* TestClock.adjust("3 minutes")
      const early = (yield* Client.use((c) => c.get(results[0]!.id)))!.state
      yield* TestClock.adjust("1 minute")
      yield* eventually(Effect.map(Client.use((c) => c.get(results[0]!.id)), (e) => e?.state === "succeeded"), "the digest to run")
      return { results, queued, early, done: (yield* Client.use((c) => c.get(results[0]!.id)))!, all: yield* listAll }
    }))
    const id = r.results[0]!.id
    expect(r.results).toEqual([{ id, inserted: true }, { id, inserted: false, replaced: true }, { id, inserted: false, replaced: true }])
    expect(r.queued).toHaveLength(1)
    // Due 5 minutes after the last change (made at minute 2), not after the first.
    expect(r.queued[0]!.runAt - r.queued[0]!.createdAt).toBe(420_000)
    expect(r.early).toBe("queued")
    expect(r.done).toMatchObject({ state: "succeeded", attempt: 1, payload: { user: "ada", changes: 3 }, result: { changes: 3 } })
    expect(r.all).toHaveLength(1)
  })

  test("concurrent replaces in one group commit leave one execution with the last payload", async () => {
    const r = await runOnTestClock([digest], Effect.gen(function*() {
      const results = yield* Effect.forEach(
        [1, 2, 3, 4, 5],
        (changes) => Client.use((c) => c.enqueue(digest, { user: "ada", changes }, { idempotencyKey: "k", dedupe: "replace" })),
        { concurrency: "unbounded" }
      )
      return { results, all: yield* listAll }
    }))
    expect(r.all).toHaveLength(1)
    expect(r.results.filter((x) => x.inserted)).toHaveLength(1)
    expect(new Set(r.results.map((x) => x.id))).toEqual(new Set([r.all[0]!.id]))
    expect(r.all[0]!.payload).toEqual({ user: "ada", changes: 5 })
  })
})

describe("dedupe in transactional enqueue on SQLite", () => {
  test("replace inside the caller's transaction rewrites the queued holder and commits with it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "roster-dedupe-"))
    const path = join(dir, "roster.db")
    const runtime = ManagedRuntime.make(
      Roster.layer({ db: path, jobs: [digest] }, { worker: false }).pipe(Layer.provideMerge(Layer.succeed(References.MinimumLogLevel, "Error")))
    )
    await runtime.runPromise(Effect.void)
    const db = new Database(path)
    db.run("PRAGMA busy_timeout = 5000")
    try {
      const options = { idempotencyKey: "k", dedupe: "replace" } as const
      const enqueue = (changes: number) => Effect.runSync(enqueueWithin(db, digest, { user: "ada", changes }, options))
      const first = db.transaction(() => enqueue(1))()
      const second = db.transaction(() => [enqueue(2), enqueue(3)])()
      expect(second).toEqual([{ id: first.id, inserted: false, replaced: true }, { id: first.id, inserted: false, replaced: true }])
      // A rolled-back replace changes nothing.
      expect(() => db.transaction(() => { enqueue(4); throw new Error("rolled back") })()).toThrow("rolled back")
      const all = await runtime.runPromise(listAll)
      expect(all).toHaveLength(1)
      expect(all[0]).toMatchObject({ id: first.id, payload: { user: "ada", changes: 3 }, dedupeKey: "k" })
    } finally {
      db.close()
      await runtime.dispose()
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

const pg = requireService("postgres")

describe.skipIf(pg.skip)("dedupe in transactional enqueue on PostgreSQL", () => {
  test("active and replace inside the caller's transaction; a rollback changes nothing", async () => {
    const base = pgUrl()!
    const schema = freshSchema("roster_dd")
    await pgAdmin(base, `CREATE SCHEMA "${schema}"`)
    const url = urlWithSchema(base, schema)
    const roster = ManagedRuntime.make(
      Roster.layer({ db: url, jobs: [digest] }, { worker: false }).pipe(Layer.provideMerge(Layer.succeed(References.MinimumLogLevel, "Error")))
    )
    const app = ManagedRuntime.make(PgClient.layer({ url: Redacted.make(url), maxConnections: 2 }))
    try {
      await roster.runPromise(Effect.void)
      const enqueue = (changes: number, dedupe: "active" | "replace") => enqueueWithinSql(digest, { user: "ada", changes }, { idempotencyKey: "k", dedupe })
      const inTx = <A, E>(e: Effect.Effect<A, E, SqlClient>) => app.runPromise(SqlClient.use((sql) => sql.withTransaction(e)))
      const first = await inTx(enqueue(1, "replace"))
      expect(first.inserted).toBe(true)
      const [kept, replaced] = await inTx(Effect.all([enqueue(2, "active"), enqueue(3, "replace")]))
      expect(kept).toEqual({ id: first.id, inserted: false })
      expect(replaced).toEqual({ id: first.id, inserted: false, replaced: true })
      const rolledBack = await app.runPromise(Effect.flip(SqlClient.use((sql) =>
        sql.withTransaction(Effect.andThen(enqueue(4, "replace"), Effect.fail(new Error("rolled back")))))))
      expect((rolledBack as Error).message).toBe("rolled back")
      const all = await roster.runPromise(listAll)
      expect(all).toHaveLength(1)
      expect(all[0]).toMatchObject({ id: first.id, payload: { user: "ada", changes: 3 }, dedupeKey: "k" })
    } finally {
      await app.dispose()
      await roster.dispose()
      await pgAdmin(base, `DROP SCHEMA "${schema}" CASCADE`)
    }
  }, 30_000)
})
