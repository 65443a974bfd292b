/**
 * Everything Roster stores in one SQLite file, as one Layer: the execution Store and
 * the ScheduleStore share the connection, so a schedule fire and its execution are
 * written in one transaction.
 */
import { Context, Effect, Layer } from "effect"
import { ScheduleStore } from "../ScheduleStore.ts"
import { Store, type StoreError } from "../Store.ts"
import type { SqliteOptions } from "./SqliteConnection.ts"
import { makeSqliteScheduleStore } from "./SqliteScheduleStore.ts"
import { checkpointerOnDemand } from "./Checkpointer.ts"
import { acquireDatabase, makeSqliteStore } from "./SqliteStore.ts"

/** Store and ScheduleStore on one SQLite file. */
export const layerSqliteStores = (options: SqliteOptions): Layer.Layer<Store | ScheduleStore, StoreError> =>
  Layer.effectContext(
    Effect.gen(function*() {
      const db = yield* acquireDatabase(options)
      // Released before the database closes: the thread's connection closes first.
      const checkpoints = yield* checkpointerOnDemand(db)
      return Context.make(Store, makeSqliteStore(db, checkpoints.noteWrites)).pipe(Context.add(ScheduleStore, makeSqliteScheduleStore(db)))
    })
  )
