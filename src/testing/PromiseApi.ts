/**
 * The test runtime for tests written with async/await instead of Effect: the same
 * runtime as `RosterTest.make`, each operation a Promise, `close()` at the end.
 */
import { Duration, Effect, Exit, Scope } from "effect"
import type { AnySchema } from "../jobs/Job.ts"
import type { Client } from "../runtime/Client.ts"
import type { EnqueueOptions } from "../runtime/Enqueue.ts"
import type { Execution } from "../store/Execution.ts"
import type { ScheduleFire } from "../store/ScheduleStore.ts"
import type { ExecutionFilter, InsertResult } from "../store/Store.ts"
import type { Schema } from "effect"
import type { TestExecution } from "./TestExecution.ts"
import { type AnyJob, make, type Options, type Requirements, type RosterTest, type ServicesCheck } from "./TestRuntime.ts"

/** The Promise API of a test runtime. Failures reject with the typed error (its `_tag` and `message`). */
export interface RosterTestHandle<ROut = never> {
  readonly enqueue: <P extends AnySchema>(
    job: { readonly _tag: "Job"; readonly id: string; readonly payload: P },
    payload: Schema.Schema.Type<P>,
    options?: EnqueueOptions
  ) => Promise<InsertResult>
  readonly drain: () => Promise<void>
  readonly advance: (duration: Duration.Input) => Promise<void>
  readonly advanceTo: (at: number | Date) => Promise<void>
  readonly now: () => Promise<number>
  readonly execution: (id: string) => Promise<TestExecution>
  readonly executions: (filter?: ExecutionFilter) => Promise<ReadonlyArray<Execution>>
  readonly fires: (scheduleId: string) => Promise<ReadonlyArray<ScheduleFire>>
  /** The Effect runtime underneath, for `run` and anything else. */
  readonly kit: RosterTest<ROut>
  /** Stops the worker and scheduler and closes the in-memory database. */
  readonly close: () => Promise<void>
}

/** Starts a test runtime on its own TestClock; call `close()` when done (e.g. in `afterEach`). */
export const open = async <const Jobs extends ReadonlyArray<AnyJob>, ROut = never, E = never>(
  options: Options<Jobs, ROut, E> & ServicesCheck<Exclude<Requirements<Jobs[number]>, ROut | Client>>
): Promise<RosterTestHandle<ROut>> => {
  const scope = Effect.runSync(Scope.make())
  const kit = await Effect.runPromise(Scope.provide(scope)(make<Jobs, ROut, E>(options))).catch(async (e) => {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    throw e
  })
  const run = <A, E2>(effect: Effect.Effect<A, E2>) => Effect.runPromise(effect)
  return {
    enqueue: (job, payload, enqueueOptions) => run(kit.enqueue(job, payload, enqueueOptions)),
    drain: () => run(kit.drain),
    advance: (duration) => run(kit.advance(duration)),
    advanceTo: (at) => run(kit.advanceTo(at)),
    now: () => run(kit.now),
    execution: (id) => run(kit.execution(id)),
    executions: (filter) => run(kit.executions(filter)),
    fires: (scheduleId) => run(kit.fires(scheduleId)),
    kit,
    close: () => run(Scope.close(scope, Exit.void))
  }
}
