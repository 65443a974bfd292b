/**
 * The SQLite limit under Roster: Roster's own store (src/store/sqlite, the same
 * statements, transactions, schema, synchronous=FULL and checkpoint thread) called
 * synchronously, with no runtime around it — no Client, fibers, actors, group commit or handler context. It is
 * the ceiling the Roster rows are measured against in the same run (issue 17's "one
 * fsync'd commit per call", and DESIGN §4's claim + complete in batches):
 * - enqueue 1-by-1: one insert transaction, one fsync, per call;
 * - bulk: one transaction per call of 1,000 rows;
 * - drain: claim up to 50, call each handler hook, record the 50 successes in one
 *   transaction, repeat (a batch of 50 per fsync; Roster's Recorder batches at least as
 *   many at concurrency 50);
 * - latency: the same loop polling without pause (it holds a core; a floor, not a design).
 */
import { Effect, Exit, Scope } from "effect"
import { join } from "node:path"
import * as RetryPolicy from "../../src/jobs/RetryPolicy.ts"
import { checkpointerOnDemand } from "../../src/store/sqlite/Checkpointer.ts"
import { applyMigrations, openDatabase } from "../../src/store/sqlite/SqliteConnection.ts"
import { makeSqliteStore } from "../../src/store/sqlite/SqliteStore.ts"
import type { InsertRequest, Outcome } from "../../src/store/Store.ts"
import { CONCURRENCY, payload, started, type Store, type System, tempDir } from "./common.ts"

const job = "peers/noop"
const retry = RetryPolicy.defaultPolicy.snapshot

const request = (i: number, now: number): InsertRequest => ({
  id: Bun.randomUUIDv7(),
  job,
  queue: "default",
  payload: JSON.stringify(payload(i)),
  priority: 0,
  retry,
  timeoutMs: 60_000,
  runAt: now,
  now,
  idempotencyKey: null
})

const open = async (): Promise<Store> => {
  const tmp = tempDir("sqlite-limit")
  const db = openDatabase({ path: join(tmp.dir, "roster.db"), synchronous: "FULL" })
  applyMigrations(db, Date.now())
  // The store's own checkpoint thread, started as the store's layer starts it.
  const scope = Effect.runSync(Scope.make())
  const checkpoints = Effect.runSync(Scope.provide(checkpointerOnDemand(db), scope))
  const store = makeSqliteStore(db, checkpoints.noteWrites)
  const run = <A, E>(effect: Effect.Effect<A, E>): A => Effect.runSync(effect)
  let running = false
  let stopped: Promise<void> = Promise.resolve()
  const work = async (pollWhenEmpty: boolean) => {
    while (running) {
      const now = Date.now()
      const claimed = run(store.executionsClaim({ queue: "default", jobs: [job], workerId: "limit", limit: CONCURRENCY, now, leaseMs: 60_000 }))
      const outcomes: Array<Outcome> = []
      for (const e of claimed) {
        started((e.payload as { i: number }).i)
        outcomes.push({ kind: "succeeded", id: e.id, workerId: "limit", attempt: e.attempt, result: "null", now, startedAt: now })
      }
      if (outcomes.length > 0) run(store.executionsFinish(outcomes))
      // Let the benchmark's own promises and timers run between batches.
      await new Promise<void>((resolve) => (claimed.length > 0 || pollWhenEmpty ? setImmediate(resolve) : setTimeout(resolve, 1)))
    }
  }
  return {
    enqueue: async (i) => void run(store.executionsInsert([request(i, Date.now())])),
    enqueueMany: async (from, count) => {
      const now = Date.now()
      void run(store.executionsInsert(Array.from({ length: count }, (_, k) => request(from + k, now))))
    },
    startWorker: async (mode) => {
      running = true
      stopped = work(mode === "idle")
    },
    succeeded: async () => run(store.executionsCount({ job })).succeeded,
    close: async () => {
      running = false
      await stopped
      await Effect.runPromise(Scope.close(scope, Exit.void))
      db.close(false)
      tmp.cleanup()
    }
  }
}

export const sqliteLimit: System = {
  id: "sqlite-limit",
  label: "SQLite limit (Roster's store, no runtime)",
  unavailable: async () => undefined,
  durability: async () => "SQLite WAL, synchronous=FULL: fsync per commit (as Roster's default)",
  version: () => {
    const db = openDatabase({ path: ":memory:" })
    try {
      return `bun:sqlite ${(db.query("select sqlite_version() AS v").get() as { v: string }).v}, Roster's store`
    } finally {
      db.close()
    }
  },
  settings: `claims ${CONCURRENCY} at a time and records each batch's successes in one transaction; the idle loop polls without pause`,
  open
}
