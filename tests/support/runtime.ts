/**
 * Runs an in-process Roster (Store, Core, Client) on a real SQLite file in a temp
 * folder, on the TestClock, for actor tests. Helpers wait for the runtime's fibers to
 * make progress without advancing time.
 */
import { Effect, Layer, Logger, type Scope } from "effect"
import { TestClock } from "effect/testing"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { Job } from "../../src/jobs/Job.ts"
import * as Registry from "../../src/jobs/Registry.ts"
import { fromConfig } from "../../src/jobs/QueueConfig.ts"
import type { RosterConfig, WorkerSettings } from "../../src/runtime/Config.ts"
import * as Roster from "../../src/runtime/Roster.ts"
import type { Client } from "../../src/runtime/Client.ts"
import type { Core } from "../../src/runtime/Core.ts"
import type { Store } from "../../src/store/Store.ts"

/** Worker settings for TestClock runs: no change watcher (it would spin on every adjust). */
export const testSettings: Partial<WorkerSettings> = { watchMs: 0, logFlushMs: 0, pollMs: 1_000, heartbeatMs: 1_000, leaseMs: 5_000, reapMs: 1_000, graceMs: 2_000 }

/** Runs `body` with a fresh database, the given Jobs (or Jobs made for the database's path), and the TestClock. */
export const runOnTestClock = <A, E>(
  jobsOrMake: ReadonlyArray<Job<any, any, any>> | ((dbPath: string) => ReadonlyArray<Job<any, any, any>>),
  body: Effect.Effect<A, E, Client | Core | Store | Scope.Scope>,
  config: RosterConfig = {}
): Promise<A> => {
  const dir = mkdtempSync(join(tmpdir(), "roster-actors-"))
  const full: RosterConfig = { db: join(dir, "roster.db"), ...config }
  const jobs = typeof jobsOrMake === "function" ? jobsOrMake(full.db!) : jobsOrMake
  const registry = Registry.make({ jobs, queues: fromConfig(full.queues) })
  if (Registry.isError(registry)) throw new Error(registry.message)
  const layer = Roster.layerWithRegistry(full, registry).pipe(
    Layer.provideMerge(TestClock.layer()),
    // Handlers log on purpose in these tests: no console output, while the LogSink's
    // capture loggers (added per execution) still see every line.
    Layer.provideMerge(Layer.succeed(Logger.CurrentLoggers, new Set()))
  )
  return Effect.runPromise(Effect.scoped(Effect.provide(body, layer))).finally(() => rmSync(dir, { recursive: true, force: true }))
}

/**
 * Lets other fibers run until `check` holds (no TestClock time passes); fails after
 * `turns` turns and 10 s of real time both. Every 50th turn waits a real millisecond: the
 * Recorder's fsync is real I/O (store/sqlite/WalSync.ts), which scheduler turns alone do
 * not wait for.
 */
export const eventually = <E, R>(check: Effect.Effect<boolean, E, R>, what = "condition", turns = 2_000) =>
  Effect.gen(function*() {
    const realDeadline = performance.now() + 10_000
    for (let i = 0; ; i++) {
      if (yield* check) return
      if (i >= turns && performance.now() > realDeadline) break
      if (i % 50 === 49) yield* Effect.promise(() => Bun.sleep(1))
      else yield* Effect.yieldNow
    }
    return yield* Effect.die(new Error(`timed out waiting for ${what}`))
  })
