/**
 * What the chaos driver reads back from the Roster store, through the Store and
 * ScheduleStore contracts (so one reader serves SQLite and PostgreSQL): every
 * execution with its attempts and steps, and every schedule's fires.
 */
import { Effect, ManagedRuntime } from "effect"
import { layerStore } from "../../../src/runtime/Roster.ts"
import type { Attempt, Execution, Step } from "../../../src/store/Execution.ts"
import { type ScheduleFire, ScheduleStore, type StoredSchedule } from "../../../src/store/ScheduleStore.ts"
import { Store } from "../../../src/store/Store.ts"

/** An execution with its attempt history and persisted steps. */
export interface ExecutionRecord {
  readonly execution: Execution
  readonly attempts: ReadonlyArray<Attempt>
  readonly steps: ReadonlyArray<Step>
}

const page = 1_000

/** A connection to the run's database for reading. */
export class StoreView {
  private readonly runtime

  constructor(db: string) {
    this.runtime = ManagedRuntime.make(layerStore({ db }))
  }

  /** Every schedule, retired ones included. */
  schedules(): Promise<ReadonlyArray<StoredSchedule>> {
    return this.runtime.runPromise(ScheduleStore.use((s) => s.schedulesList({ includeRetired: true })))
  }

  /** The latest due time recorded for a schedule (0 when none). */
  lastDue(scheduleId: string): Promise<number> {
    return this.runtime.runPromise(ScheduleStore.use((s) => s.schedulesHistory({ scheduleId, limit: 1 })).pipe(
      Effect.map((fires) => fires[0]?.dueAt ?? 0)
    ))
  }

  /** Every fire of a schedule, oldest first. */
  fires(scheduleId: string): Promise<Array<ScheduleFire>> {
    return this.runtime.runPromise(Effect.gen(function*() {
      const store = yield* ScheduleStore
      const all: Array<ScheduleFire> = []
      let before: number | undefined
      while (true) {
        const batch = yield* store.schedulesHistory({ scheduleId, limit: page, before })
        all.push(...batch)
        if (batch.length < page) return all.reverse()
        before = batch.at(-1)!.dueAt
      }
    }))
  }

  /** Every execution with its attempts and steps. */
  executions(): Promise<Array<ExecutionRecord>> {
    return this.runtime.runPromise(Effect.gen(function*() {
      const store = yield* Store
      const all: Array<Execution> = []
      let before: string | undefined
      while (true) {
        const batch = yield* store.executionsList({ limit: page, before })
        all.push(...batch)
        if (batch.length < page) break
        before = batch.at(-1)!.id
      }
      return yield* Effect.forEach(all, (execution) =>
        Effect.all({ attempts: store.attemptsList(execution.id), steps: store.stepsList(execution.id) }).pipe(
          Effect.map(({ attempts, steps }): ExecutionRecord => ({ execution, attempts, steps }))
        ), { concurrency: 8 })
    }))
  }

  close(): Promise<void> {
    return this.runtime.dispose()
  }
}
