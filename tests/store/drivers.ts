/**
 * The store drivers the conformance suites run against: SQLite always; PostgreSQL when
 * ROSTER_TEST_PG_URL is set (required under CI=true, see tests/support/env.ts). Every
 * fixture is a fresh, empty store — a new SQLite file, or a new PostgreSQL schema that
 * is dropped again on dispose — providing both the Store and the ScheduleStore.
 */
import { PgClient } from "@effect/sql-pg"
import { afterEach, beforeEach } from "bun:test"
import { Effect, Layer, ManagedRuntime, Redacted } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { layerPostgres } from "../../src/store/postgres/PgStore.ts"
import { ScheduleStore } from "../../src/store/ScheduleStore.ts"
import { layerSqliteStores } from "../../src/store/sqlite/SqliteLayer.ts"
import { Store, type StoreChange, type StoreError } from "../../src/store/Store.ts"
import { pgUrl, requireService } from "../support/env.ts"
import { waitFor } from "../support/processes.ts"

/** Where a fixture's store lives, so a child process can open the same one with {@link layerFor}. */
export type StoreLocation =
  | { readonly driver: "sqlite"; readonly path: string }
  | { readonly driver: "postgres"; readonly url: string; readonly schema: string }

/** A store under test: a runtime providing it, and a cleanup. */
export interface StoreFixture {
  readonly run: <A, E>(effect: Effect.Effect<A, E, Store | ScheduleStore>) => Promise<A>
  /** A second, independent connection to the same database (another "process"). */
  readonly second: () => StoreFixture
  readonly location: StoreLocation
  readonly dispose: () => Promise<void>
}

/** A driver: a name and a way to get a fresh, empty store. */
export interface Driver {
  readonly name: "sqlite" | "postgres"
  readonly make: () => StoreFixture
}

/** Store and ScheduleStore at a location. */
export const layerFor = (location: StoreLocation): Layer.Layer<Store | ScheduleStore, StoreError> =>
  location.driver === "sqlite"
    ? layerSqliteStores({ path: location.path })
    : layerPostgres({ url: location.url, schema: location.schema, poolSize: 4 })

const fixture = (location: StoreLocation, cleanup: () => Promise<void>): StoreFixture => {
  const runtime = ManagedRuntime.make(layerFor(location))
  return {
    run: (effect) => runtime.runPromise(effect),
    second: () => fixture(location, async () => {}),
    location,
    dispose: async () => {
      await runtime.dispose()
      await cleanup()
    }
  }
}

/** The SQLite driver: a fresh file in a temp folder per fixture. */
export const sqlite: Driver = {
  name: "sqlite",
  make: () => {
    const dir = mkdtempSync(join(tmpdir(), "roster-store-"))
    return fixture({ driver: "sqlite", path: join(dir, "roster.db") }, async () => rmSync(dir, { recursive: true, force: true }))
  }
}

/** Runs one statement on the test server, outside any store; returns its rows. */
export const pgQuery = (url: string, statement: string): Promise<ReadonlyArray<Record<string, unknown>>> =>
  Effect.runPromise(Effect.scoped(Effect.gen(function*() {
    const sql = yield* PgClient.PgClient
    return yield* sql.unsafe<Record<string, unknown>>(statement)
  }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(url), maxConnections: 1 })))))

/** Runs one statement on the test server, outside any store (schema set-up and clean-up). */
export const pgAdmin = async (url: string, statement: string): Promise<void> => void (await pgQuery(url, statement))

/** `url` with its connections' search_path set to `schema` (how ROSTER_DB selects a schema). */
export const urlWithSchema = (url: string, schema: string): string =>
  `${url}${url.includes("?") ? "&" : "?"}options=${encodeURIComponent(`-c search_path=${schema}`)}`

let schemas = 0

/** A fresh schema name, unique across concurrent test runs on one server. */
export const freshSchema = (prefix = "roster_t"): string => `${prefix}_${process.pid}_${Date.now().toString(36)}_${++schemas}`

/** The PostgreSQL driver: a fresh schema per fixture (created by the store's migrations), dropped on dispose. */
export const postgres = (url: string): Driver => ({
  name: "postgres",
  make: () => {
    const schema = freshSchema()
    return fixture({ driver: "postgres", url, schema }, () => pgAdmin(url, `DROP SCHEMA IF EXISTS "${schema}" CASCADE`))
  }
})

const pg = requireService("postgres")
const url = pgUrl()

/** Every available driver. */
export const drivers: ReadonlyArray<Driver> = pg.skip || url === undefined ? [sqlite] : [sqlite, postgres(url)]

/** Runs an Effect against the fixture's Store. */
export const withStore = <A, E>(f: StoreFixture, body: (store: Store["Service"]) => Effect.Effect<A, E>) =>
  f.run(Store.use(body))

/** Runs an Effect against the fixture's ScheduleStore. */
export const withSchedules = <A, E>(f: StoreFixture, body: (store: ScheduleStore["Service"]) => Effect.Effect<A, E>) =>
  f.run(ScheduleStore.use(body))

/**
 * Before each test of the enclosing describe, a fresh migrated store of `driver`, handed
 * to `use` (the test file keeps it); disposed after the test.
 */
export const freshStoreEach = (driver: Driver, use: (f: StoreFixture) => void): void => {
  let f: StoreFixture
  beforeEach(async () => {
    f = driver.make()
    use(f)
    await withStore(f, (s) => s.migrate)
  })
  afterEach(async () => {
    await f.dispose()
  })
}

/**
 * Waits until a `watchChanges` watcher is watching: every driver reports one unspecified
 * change once it is (PostgreSQL after its LISTEN has been answered, SQLite after its
 * first read), so a loaded machine cannot make a change land before the watch (a fixed
 * sleep could).
 */
export const watching = (seen: ReadonlyArray<StoreChange>): Promise<true> =>
  waitFor("the watcher to start", () => seen.some((c) => c.queue === null), { timeoutMs: 15_000 })
