/**
 * Transactional enqueue on PostgreSQL (`enqueueWithinSql`): the execution commits or
 * rolls back with the caller's own rows in the caller's `SqlClient` transaction, and a
 * worker picks it up after the commit, woken by the NOTIFY sent on commit.
 */
import { PgClient } from "@effect/sql-pg"
import { describe, expect, test } from "bun:test"
import { Effect, Layer, ManagedRuntime, Redacted, References, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import * as Job from "../../src/jobs/Job.ts"
import * as Roster from "../../src/runtime/Roster.ts"
import { enqueueWithinSql } from "../../src/runtime/TransactionalPg.ts"
import { Store } from "../../src/store/Store.ts"
import { pgUrl, requireService } from "../support/env.ts"
import { waitFor } from "../support/processes.ts"
import { freshSchema, pgAdmin, urlWithSchema } from "../store/drivers.ts"

const pg = requireService("postgres")

const receipt = Job.make({ id: "shop/receipt", payload: Schema.Struct({ orderId: Schema.Number }), handler: ({ orderId }) => Effect.succeed({ orderId }) })

/** A Roster (optionally with a worker that only polls once a minute) and an app SqlClient on one fresh schema. */
const withRoster = async (
  worker: boolean,
  body: (app: <A, E>(e: Effect.Effect<A, E, SqlClient>) => Promise<A>, roster: <A, E>(e: Effect.Effect<A, E, Store>) => Promise<A>) => Promise<void>
) => {
  const base = pgUrl()!
  const schema = freshSchema("roster_tx")
  await pgAdmin(base, `CREATE SCHEMA "${schema}"`)
  const url = urlWithSchema(base, schema)
  const roster = ManagedRuntime.make(
    Roster.layer({ db: url, jobs: [receipt], worker: { pollMs: 60_000, watchMs: 5 } }, { worker }).pipe(
      Layer.provideMerge(Layer.succeed(References.MinimumLogLevel, "Error"))
    )
  )
  const app = ManagedRuntime.make(PgClient.layer({ url: Redacted.make(url), maxConnections: 2 }))
  try {
    await roster.runPromise(Effect.void)
    await app.runPromise(SqlClient.use((sql) => sql`CREATE TABLE orders (id INTEGER PRIMARY KEY, total INTEGER NOT NULL)`))
    await body((e) => app.runPromise(e), (e) => roster.runPromise(e))
  } finally {
    await app.dispose()
    await roster.dispose()
    await pgAdmin(base, `DROP SCHEMA "${schema}" CASCADE`)
  }
}

const placeOrder = (id: number, fail: boolean) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    return yield* sql.withTransaction(Effect.gen(function*() {
      yield* sql`INSERT INTO orders (id, total) VALUES (${id}, 100)`
      const r = yield* enqueueWithinSql(receipt, { orderId: id }, { idempotencyKey: `order-${id}` })
      if (fail) return yield* Effect.fail(new Error("payment declined"))
      return r
    }))
  })

const countOrders = SqlClient.use((sql) => sql<{ n: number }>`SELECT COUNT(*)::int AS n FROM orders`)

describe.skipIf(pg.skip)("transactional enqueue on PostgreSQL", () => {
  test("a transaction that enqueues and then fails leaves neither the business row nor the execution", async () => {
    await withRoster(false, async (app, roster) => {
      const error = await app(Effect.flip(placeOrder(1, true)))
      expect(error.message).toBe("payment declined")
      expect(await app(countOrders)).toEqual([{ n: 0 }])
      expect((await roster(Store.use((s) => s.executionsCount({})))).queued).toBe(0)
    })
  }, 20_000)

  test("a commit makes both visible together; the same key again returns the existing execution", async () => {
    await withRoster(false, async (app, roster) => {
      const r = await app(placeOrder(2, false))
      expect(r.inserted).toBe(true)
      expect(await app(countOrders)).toEqual([{ n: 1 }])
      const e = await roster(Store.use((s) => s.executionsGet(r.id)))
      expect(e).toMatchObject({ job: "shop/receipt", state: "queued", payload: { orderId: 2 }, idempotencyKey: "order-2" })
      const again = await app(SqlClient.use((sql) => sql.withTransaction(enqueueWithinSql(receipt, { orderId: 2 }, { idempotencyKey: "order-2" }))))
      expect(again).toEqual({ id: r.id, inserted: false })
    })
  }, 20_000)

  test("an invalid payload inside the transaction is a typed error and rolls it back", async () => {
    await withRoster(false, async (app, roster) => {
      const error = await app(Effect.flip(SqlClient.use((sql) =>
        sql.withTransaction(Effect.gen(function*() {
          yield* sql`INSERT INTO orders (id, total) VALUES (3, 1)`
          yield* enqueueWithinSql(receipt, { orderId: "three" })
        })))))
      expect(error.message).toMatch(/invalid payload for shop\/receipt/)
      expect(await app(countOrders)).toEqual([{ n: 0 }])
      expect((await roster(Store.use((s) => s.executionsCount({})))).queued).toBe(0)
    })
  }, 20_000)

  test("outside a transaction it refuses rather than autocommitting", async () => {
    await withRoster(false, async (app) => {
      const error = await app(Effect.flip(enqueueWithinSql(receipt, { orderId: 4 })))
      expect(error.message).toMatch(/needs an open transaction/)
    })
  }, 20_000)

  test("a running worker picks the execution up right after the commit, woken by NOTIFY (it polls once a minute)", async () => {
    await withRoster(true, async (app, roster) => {
      await Bun.sleep(200) // the worker's LISTEN is up
      const r = await app(placeOrder(5, false))
      // Well inside the worker's one-minute poll. (Had a loaded machine delayed the LISTEN
      // past the commit, the watcher's first read on connecting would still wake it.)
      const state = () => roster(Store.use((s) => s.executionsGet(r.id))).then((e) => e!.state)
      await waitFor("the execution to succeed", async () => (await state()) === "succeeded", { timeoutMs: 15_000, intervalMs: 10 })
      expect(await state()).toBe("succeeded")
    })
  }, 20_000)
})
