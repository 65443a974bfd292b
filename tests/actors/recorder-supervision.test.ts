/**
 * The Recorder is supervised like every actor (issue 13): a defect in its loop (here a
 * wake-up listener that throws after a commit) is logged and the Recorder restarts and
 * keeps committing; callers of the batch it was on are answered, none left waiting.
 * Before, the loop was forked detached and unsupervised: after such a defect every
 * later write waited forever. The real SQLite store and WakeBus.
 */
import { describe, expect, test } from "bun:test"
import { Effect, Layer, References } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Recorder from "../../src/actors/Recorder.ts"
import * as WakeBus from "../../src/actors/WakeBus.ts"
import { layerSqlite } from "../../src/store/sqlite/SqliteStore.ts"
import { Store } from "../../src/store/Store.ts"
import { row } from "../store/rows.ts"

describe("the Recorder under supervision", () => {
  test("a defect in its loop restarts it: the write after it commits instead of waiting forever", async () => {
    const dir = mkdtempSync(join(tmpdir(), "roster-recorder-"))
    try {
      const result = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
        const bus = WakeBus.make()
        let wakes = 0
        bus.subscribe("default", () => {
          if (++wakes === 1) throw new Error("a listener bug")
        })
        const recorder = yield* Recorder.make(bus)
        const first = yield* recorder.insert([row()])
        const second = yield* recorder.insert([row(), row()]).pipe(Effect.timeoutOption("5 seconds"))
        const stored = yield* Store.use((s) => s.executionsCount({}))
        return { first, second, wakes, stored }
      })).pipe(Effect.provide(Layer.merge(layerSqlite({ path: join(dir, "roster.db") }), Layer.succeed(References.MinimumLogLevel, "None")))))
      expect(result.first.map((r) => r.inserted)).toEqual([true])
      expect(result.second._tag).toBe("Some")
      expect(result.wakes).toBeGreaterThanOrEqual(1)
      expect(result.stored.queued).toBe(3)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
