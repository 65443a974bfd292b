/**
 * The Recorder's inline insert (src/actors/Recorder.ts, "Inline"): an enqueue that finds
 * it idle on SQLite is committed on the caller's stack and answered before the call
 * returns, but callers that come together still share one transaction, a worker's
 * hand-off keeps the batch path, a write lock held by the caller's own open transaction
 * is not waited for, and nothing is written once the Recorder has stopped (a wake-up
 * listener's defect after an inline write: recorder-supervision.test.ts). The real
 * SQLite store; the only wrapper counts the inserts the Recorder hands to it (inline or
 * in a batch).
 */
import { Database } from "bun:sqlite"
import { describe, expect, test } from "bun:test"
import { Effect, Exit, Layer, References } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Recorder from "../../src/actors/Recorder.ts"
import * as WakeBus from "../../src/actors/WakeBus.ts"
import { layerSqlite } from "../../src/store/sqlite/SqliteStore.ts"
import { type InsertResult, Store, type StoreError } from "../../src/store/Store.ts"
import { row } from "../store/rows.ts"

/** Runs `body` with the real SQLite store whose executionsInsert calls are counted (rows per call). */
const withStore = async <A>(body: (inserts: Array<number>, path: string) => Effect.Effect<A, unknown, Store>): Promise<A> => {
  const dir = mkdtempSync(join(tmpdir(), "roster-recorder-inline-"))
  const path = join(dir, "roster.db")
  const inserts: Array<number> = []
  const counted = Layer.effect(
    Store,
    Effect.map(Store, (store) =>
      Store.of({
        ...store,
        executionsInsert: (rows) => Effect.suspend(() => (inserts.push(rows.length), store.executionsInsert(rows))),
        executionsInsertInline: (rows) =>
          Effect.map(store.executionsInsertInline!(rows), (results) => (results !== null && inserts.push(rows.length), results))
      }))
  ).pipe(Layer.provide(layerSqlite({ path })))
  try {
    return await Effect.runPromise(body(inserts, path).pipe(Effect.provide(Layer.merge(counted, Layer.succeed(References.MinimumLogLevel, "None")))) as Effect.Effect<A>)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

type Reply = Exit.Exit<ReadonlyArray<InsertResult>, StoreError>

/** The answers an insertUnsafe call gets, and a wait (bounded, for a loaded machine) for the first. */
const answersOf = () => {
  const answers: Array<Reply> = []
  const first = Promise.withResolvers<void>()
  const reply = (exit: Reply) => (answers.push(exit), first.resolve())
  const answered = Effect.promise(() => Promise.race([first.promise, Bun.sleep(10_000)]))
  return { answers, reply, answered }
}

describe("the Recorder's inline insert", () => {
  test("an enqueue into an idle Recorder is committed and answered before the call returns", async () => {
    const result = await withStore((inserts) =>
      Effect.scoped(Effect.gen(function*() {
        const recorder = yield* Recorder.make(WakeBus.make())
        const answers: Array<Reply> = []
        const accepted = recorder.insertUnsafe([row()], (exit) => answers.push(exit))
        const answeredAtOnce = answers.length
        // One call after another, each awaited: each its own transaction.
        for (let i = 0; i < 5; i++) yield* recorder.insert([row()])
        const stored = yield* Store.use((s) => s.executionsCount({}))
        return { accepted, answeredAtOnce, answer: answers[0], inserts: [...inserts], stored }
      }))
    )
    expect(result.accepted).toBe(true)
    expect(result.answeredAtOnce).toBe(1)
    expect(result.answer?._tag).toBe("Success")
    expect(result.inserts).toEqual([1, 1, 1, 1, 1, 1])
    expect(result.stored.queued).toBe(6)
  })

  test("callers that come together still share one transaction", async () => {
    const result = await withStore((inserts) =>
      Effect.scoped(Effect.gen(function*() {
        const recorder = yield* Recorder.make(WakeBus.make())
        const results = yield* Effect.forEach(Array.from({ length: 50 }, () => row()), (r) => recorder.insert([r]), { concurrency: "unbounded" })
        return { results, inserts: [...inserts], stored: yield* Store.use((s) => s.executionsCount({})) }
      }))
    )
    expect(result.results.every((r) => r[0]?.inserted === true)).toBe(true)
    expect(result.stored.queued).toBe(50)
    // The first may go inline; the others join the mailbox and commit as one batch.
    expect(result.inserts.reduce((a, b) => a + b, 0)).toBe(50)
    expect(result.inserts.length).toBeLessThanOrEqual(2)
  })

  test("with a hand-off on offer (an idle in-process worker) the enqueue takes the batch path", async () => {
    const result = await withStore(() =>
      Effect.scoped(Effect.gen(function*() {
        const bus = WakeBus.make()
        // A worker with no free slot: the batch path asks it, finds none, and inserts.
        bus.offerHandoff("default", { jobs: new Set(["app/job"]), reserve: Effect.succeed(null) })
        const recorder = yield* Recorder.make(bus)
        const { answers, reply, answered } = answersOf()
        recorder.insertUnsafe([row()], reply)
        const answeredAtOnce = answers.length
        yield* answered
        return { answeredAtOnce, answers: answers.map((a) => a._tag) }
      }))
    )
    expect(result.answeredAtOnce).toBe(0)
    expect(result.answers).toEqual(["Success"])
  })

  test("a write lock held by another connection of this thread (an app's open transaction) is not waited for: the enqueue commits after it", async () => {
    const result = await withStore((_, path) =>
      Effect.scoped(Effect.gen(function*() {
        const recorder = yield* Recorder.make(WakeBus.make())
        const app = new Database(path)
        app.run("CREATE TABLE orders (id INTEGER)")
        const { answers, reply, answered } = answersOf()
        // Inside the app's transaction, on the same thread: a wait for its lock here would
        // only end with busy_timeout, and fail.
        app.transaction(() => {
          app.run("INSERT INTO orders VALUES (1)")
          recorder.insertUnsafe([row()], reply)
        }).immediate()
        const answeredInside = answers.length
        yield* answered
        const orders = app.query<{ n: number }, []>("SELECT COUNT(*) AS n FROM orders").get()!.n
        app.close()
        return { answeredInside, answers, orders, stored: yield* Store.use((s) => s.executionsCount({})) }
      }))
    )
    expect(result.answeredInside).toBe(0)
    expect(result.answers.map((a) => a._tag)).toEqual(["Success"])
    expect(result.orders).toBe(1)
    expect(result.stored.queued).toBe(1)
  })

  test("once the Recorder has stopped, an enqueue is refused and writes nothing", async () => {
    const result = await withStore((inserts) =>
      Effect.gen(function*() {
        const recorder = yield* Effect.scoped(Recorder.make(WakeBus.make()))
        let answered = false
        const accepted = recorder.insertUnsafe([row()], () => (answered = true))
        const refused = yield* Effect.flip(recorder.insert([row()]))
        return { accepted, answered, refused: refused.message, inserts: [...inserts], stored: yield* Store.use((s) => s.executionsCount({})) }
      })
    )
    expect(result.accepted).toBe(false)
    expect(result.answered).toBe(false)
    expect(result.refused).toContain("stopped")
    expect(result.inserts).toEqual([])
    expect(result.stored.queued).toBe(0)
  })
})
