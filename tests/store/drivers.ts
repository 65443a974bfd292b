/**
 * The store drivers the conformance suite runs against. SQLite always; PostgreSQL
 * joins when its implementation and ROSTER_TEST_PG_URL are present.
 */
import { Effect, Layer, ManagedRuntime } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { layerSqlite } from "../../src/store/sqlite/SqliteStore.ts"
import { Store, type StoreError } from "../../src/store/Store.ts"

/** A store under test: a runtime providing it, and a cleanup. */
export interface StoreFixture {
  readonly run: <A, E>(effect: Effect.Effect<A, E, Store>) => Promise<A>
  /** A second, independent connection to the same database (another "process"). */
  readonly second: () => StoreFixture
  readonly dispose: () => Promise<void>
}

/** A driver: a name and a way to get a fresh, empty store. */
export interface Driver {
  readonly name: string
  readonly make: () => StoreFixture
}

const fixture = (layer: Layer.Layer<Store, StoreError>, cleanup: () => void, second: () => StoreFixture): StoreFixture => {
  const runtime = ManagedRuntime.make(layer)
  return {
    run: (effect) => runtime.runPromise(effect),
    second,
    dispose: async () => {
      await runtime.dispose()
      cleanup()
    }
  }
}

/** The SQLite driver: a fresh file in a temp folder per fixture. */
export const sqlite: Driver = {
  name: "sqlite",
  make: () => {
    const dir = mkdtempSync(join(tmpdir(), "roster-store-"))
    const path = join(dir, "roster.db")
    const open = (cleanup: () => void): StoreFixture => fixture(layerSqlite({ path }), cleanup, () => open(() => {}))
    return open(() => rmSync(dir, { recursive: true, force: true }))
  }
}

/** Every available driver. */
export const drivers: ReadonlyArray<Driver> = [sqlite]

/** Runs an Effect against the fixture's Store. */
export const withStore = <A, E>(f: StoreFixture, body: (store: Store["Service"]) => Effect.Effect<A, E>) =>
  f.run(Store.use(body))
