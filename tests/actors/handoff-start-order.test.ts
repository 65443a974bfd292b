/**
 * When a hand-off's handler starts (src/actors/Recorder.ts, insertAll): at once, in the
 * Recorder's batch, before the insert's fsync is asked for (at FULL the answer waits for
 * that fsync anyway, and it runs off the JS thread while the handler does), and the
 * answer comes only after that fsync. The real SQLite store (a file), Recorder and
 * WorkerPool; the store's wrapper only notes when its syncCommitted is asked for and when
 * it ends, and the slot hands the row to the pool as a Dispatcher's does.
 */
import { describe, expect, test } from "bun:test"
import { Effect, Exit, Layer, References, Schema } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Recorder from "../../src/actors/Recorder.ts"
import * as WakeBus from "../../src/actors/WakeBus.ts"
import * as WorkerPool from "../../src/actors/WorkerPool.ts"
import * as Job from "../../src/jobs/Job.ts"
import { fromConfig } from "../../src/jobs/QueueConfig.ts"
import * as Registry from "../../src/jobs/Registry.ts"
import { layerSqlite } from "../../src/store/sqlite/SqliteStore.ts"
import { type InsertResult, Store, type StoreError } from "../../src/store/Store.ts"
import { row } from "../store/rows.ts"

const run = async (synchronous: "FULL" | "NORMAL") => {
  const dir = mkdtempSync(join(tmpdir(), "roster-handoff-order-"))
  const events: Array<string> = []
  const noted = Layer.effect(
    Store,
    Effect.map(Store, (store) =>
      Store.of({
        ...store,
        syncCommitted: Effect.suspend(() => (events.push("sync asked"), store.syncCommitted)).pipe(Effect.ensuring(Effect.sync(() => events.push("sync ended"))))
      }))
  ).pipe(Layer.provide(layerSqlite({ path: join(dir, "roster.db"), synchronous })))
  try {
    return await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const bus = WakeBus.make()
      const job = Job.make({
        id: "app/job",
        payload: Schema.Struct({ n: Schema.Number }),
        handler: () => Effect.sync(() => void events.push("handler started"))
      })
      const registry = Registry.make({ jobs: [job], queues: fromConfig(undefined) })
      if (Registry.isError(registry)) throw new Error(registry.message)
      const recorder = yield* Recorder.make(bus)
      const pool = yield* WorkerPool.make({ registry, recorder, workerId: "w1" })
      bus.offerHandoff("default", {
        jobs: new Set(["app/job"]),
        reserve: Effect.succeed({
          workerId: "w1",
          leaseMs: 30_000,
          jobs: ["app/job"],
          start: (execution) => Effect.andThen(Effect.sync(() => void events.push(`started ${execution.state}`)), pool.run(execution, () => {})),
          cancel: Effect.void
        })
      })
      const answer = yield* Effect.callback<Exit.Exit<ReadonlyArray<InsertResult>, StoreError>>((resume) => {
        if (!recorder.insertUnsafe([row({ runAt: 0 })], (exit) => (events.push("answered"), resume(Effect.succeed(exit))))) {
          resume(Effect.succeed(Exit.die("not accepted")))
        }
      })
      return { events: [...events], answer: answer._tag }
    })).pipe(Effect.provide(Layer.merge(noted, Layer.succeed(References.MinimumLogLevel, "None")))))
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

describe("a hand-off's start and its fsync", () => {
  for (const synchronous of ["FULL", "NORMAL"] as const) {
    test(`at ${synchronous} the handler starts at once, before the fsync is asked for; the answer comes after the fsync`, async () => {
      const r = await run(synchronous)
      expect(r.answer).toBe("Success")
      expect(r.events).toEqual(["started running", "handler started", "sync asked", "sync ended", "answered"])
    })
  }
})
