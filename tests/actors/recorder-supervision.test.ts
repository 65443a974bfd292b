/**
 * The Recorder is supervised like every actor (issue 13): a defect in its loop (here a
 * wake-up listener that throws after a commit) is logged and the Recorder restarts and
 * keeps committing; callers of the batch it was on are answered, none left waiting. The
 * same defect after an insert written at once (an idle Recorder's inline write) is
 * logged, and the write keeps its answer.
 * Before, the loop was forked detached and unsupervised: after such a defect every
 * later write waited forever. The real SQLite store and WakeBus.
 *
 * The same holds for outcomes handed over with `submit` (the WorkerPool's path, which
 * does not wait for a reply): each follow-up runs once after its batch's commit with
 * what `finish` would return, and once with a StoreError when the loop crashes after
 * the commit, so no worker slot is left waiting for it.
 */
import { describe, expect, test } from "bun:test"
import { Effect, Exit, Layer, References } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Recorder from "../../src/actors/Recorder.ts"
import * as WakeBus from "../../src/actors/WakeBus.ts"
import { layerSqlite } from "../../src/store/sqlite/SqliteStore.ts"
import { Store, type Outcome, type StoreError } from "../../src/store/Store.ts"
import { row } from "../store/rows.ts"

describe("the Recorder under supervision", () => {
  // A wake-up listener that throws once, on the wake-up of the `throwOn`-th write. The
  // first write into an idle Recorder is written at once (Recorder.ts, "Inline"), its
  // defect logged and its answer kept; a write that joins the mailbox beside it (two at
  // once) is written by the loop, whose defect crashes and restarts it.
  const listenerBug = (throwOn: 1 | 2) => {
    const dir = mkdtempSync(join(tmpdir(), "roster-recorder-"))
    return Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const bus = WakeBus.make()
      let wakes = 0
      bus.subscribe("default", () => {
        if (++wakes === throwOn) throw new Error("a listener bug")
      })
      const recorder = yield* Recorder.make(bus)
      const first = yield* Effect.all([recorder.insert([row()]), recorder.insert([row()])], { concurrency: 2 })
      const second = yield* recorder.insert([row(), row()]).pipe(Effect.timeoutOption("5 seconds"))
      const stored = yield* Store.use((s) => s.executionsCount({}))
      return { first, second, wakes, stored }
    })).pipe(Effect.provide(Layer.merge(layerSqlite({ path: join(dir, "roster.db") }), Layer.succeed(References.MinimumLogLevel, "None")))))
      .finally(() => rmSync(dir, { recursive: true, force: true }))
  }

  test.each([
    ["a defect in its loop restarts it: the write after it commits instead of waiting forever", 2 as const],
    ["a listener's defect after an inline write is logged: that write stays answered, the next commits", 1 as const]
  ])("%s", async (_, throwOn) => {
    const result = await listenerBug(throwOn)
    expect(result.first.map((r) => r.map((x) => x.inserted))).toEqual([[true], [true]])
    expect(result.second._tag).toBe("Some")
    expect(result.wakes).toBeGreaterThanOrEqual(throwOn)
    expect(result.stored.queued).toBe(4)
  })

  // The WorkerPool's path: an outcome handed over with submit, its follow-up run by the Recorder after the commit.
  const handOver = (breakFirstOutcome: boolean) => {
    const dir = mkdtempSync(join(tmpdir(), "roster-recorder-"))
    return Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const bus = WakeBus.make()
      const recorder = yield* Recorder.make(bus)
      const store = yield* Store
      const rows = [row(), row(), row()]
      yield* store.executionsInsert(rows)
      const claimed = yield* store.executionsClaim({ queue: "default", jobs: ["app/job"], workerId: "w1", limit: 3, now: 200, leaseMs: 60_000 })
      const byId = new Map(claimed.map((e) => [e.id, e]))
      const success = (id: string, workerId = "w1"): Outcome =>
        ({ kind: "succeeded", id, workerId, attempt: byId.get(id)!.attempt, result: "null", now: 300, startedAt: 200 })
      if (breakFirstOutcome) {
        let calls = 0
        bus.subscribeOutcome(rows[0]!.id, () => {
          if (++calls === 1) throw new Error("a listener bug")
        })
      }
      const seen: Array<Array<Exit.Exit<boolean, StoreError>>> = [[], [], []]
      const firstBatch = Promise.withResolvers<void>()
      const all = Promise.withResolvers<void>()
      const submit = (i: number, outcome: Outcome) =>
        recorder.submit(outcome, "default", (exit) =>
          Effect.sync(() => {
            seen[i]!.push(exit)
            if (seen[0]!.length > 0 && seen[1]!.length > 0) firstBatch.resolve()
            if (seen.every((s) => s.length > 0)) all.resolve()
          }))
      // A bounded wait: a follow-up that never runs fails the expectations below instead of hanging.
      const until = (p: Promise<void>) => Effect.promise(() => Promise.race([p, Bun.sleep(10_000)]))
      // Two in one batch (one whose lease this worker never held), then a third once their follow-ups ran:
      // the Recorder runs a batch's follow-ups (and failAll's) before it takes the next batch, so a
      // follow-up run twice would show by the time the third one runs.
      const accepted = [yield* submit(0, success(rows[0]!.id)), yield* submit(1, success(rows[1]!.id, "w2"))]
      yield* until(firstBatch.promise)
      accepted.push(yield* submit(2, success(rows[2]!.id)))
      yield* until(all.promise)
      const states = yield* Effect.forEach(rows, (r) => Effect.map(store.executionsGet(r.id), (e) => e?.state))
      return { accepted, seen, states }
    })).pipe(Effect.provide(Layer.merge(layerSqlite({ path: join(dir, "roster.db") }), Layer.succeed(References.MinimumLogLevel, "None")))))
      .finally(() => rmSync(dir, { recursive: true, force: true }))
  }

  test("submit: each follow-up runs once, after the commit, with what finish would return", async () => {
    const { accepted, seen, states } = await handOver(false)
    expect(accepted).toEqual([true, true, true])
    expect(seen.map((s) => s.length)).toEqual([1, 1, 1])
    expect(seen.map((s) => (s[0]!._tag === "Success" ? s[0]!.value : "failure"))).toEqual([true, false, true])
    expect(states).toEqual(["succeeded", "running", "succeeded"])
  })

  test("submit: a crash after the commit answers the batch's follow-ups once each, with a StoreError, and the next batch commits", async () => {
    const { accepted, seen, states } = await handOver(true)
    expect(accepted).toEqual([true, true, true])
    expect(seen.map((s) => s.length)).toEqual([1, 1, 1])
    expect(seen[0]![0]!._tag).toBe("Failure")
    expect(seen[1]![0]!._tag).toBe("Failure")
    expect(seen[2]![0]).toEqual(Exit.succeed(true))
    // The first batch was committed before the crash: a caller told of an error sees it retried or already done, never lost.
    expect(states).toEqual(["succeeded", "running", "succeeded"])
  })
})
