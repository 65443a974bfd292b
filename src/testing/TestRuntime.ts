/**
 * A test runtime for a user's own Jobs and Schedules: the real Roster — the SQLite
 * store (in memory), the Recorder, Dispatchers, WorkerPool, LeaseKeeper, Reaper,
 * LogSink and, when Schedules are given, the Scheduler — on the TestClock. A test
 * enqueues, lets the runtime run everything due now (`drain`), moves time
 * (`advance`), and reads what was recorded: attempts, retries, steps, logs, fires.
 *
 * Nothing is mocked: an execution goes through the same claim, lease, decode, handler,
 * retry policy and group commit as in `roster worker`; only the Clock is the TestClock
 * and the database lives in memory. Handlers' logs are captured with their execution
 * and kept off the test's output.
 *
 * Lifecycle: `make` starts everything in the caller's scope; closing the scope stops
 * the worker (in-flight handlers get the grace period, on the TestClock) and the
 * scheduler, then closes the database.
 */
import { Clock, Context, Duration, Effect, Exit, Fiber, Layer, Logger, Schema, Scope } from "effect"
import { TestClock } from "effect/testing"
import type { AnySchema, Job, Requirements } from "../jobs/Job.ts"
import type { JobSchedule } from "../jobs/JobSchedule.ts"
import type { ExecutionNotFound, InvalidDefinition } from "../jobs/errors.ts"
import { Client, type EnqueueError } from "../runtime/Client.ts"
import type { RosterConfig, WorkerSettings } from "../runtime/Config.ts"
import type { Core } from "../runtime/Core.ts"
import type { EnqueueOptions } from "../runtime/Enqueue.ts"
import * as RegistryLoader from "../runtime/RegistryLoader.ts"
import * as Roster from "../runtime/Roster.ts"
import * as SchedulerRuntime from "../runtime/SchedulerRuntime.ts"
import * as Worker from "../runtime/Worker.ts"
import type { Execution } from "../store/Execution.ts"
import { type ScheduleFire, type ScheduleReadOnly, type ScheduleSourceConflict, ScheduleStore } from "../store/ScheduleStore.ts"
import { type ExecutionFilter, type InsertResult, Store, type StoreError } from "../store/Store.ts"
import * as Quiescence from "./Quiescence.ts"
import * as TestExecution from "./TestExecution.ts"

/** Anything made by `Job.make`, whatever its payload, result, error and requirements. */
export type AnyJob = Job<any, any, any, any>

/** What the handlers of some Jobs require (the union of their `R`). */
export type { Requirements }

/**
 * Makes `services` required, naming what is missing, when the Jobs need more than it
 * provides (the runtime itself provides `Client`, for follow-up enqueues).
 */
export type ServicesCheck<Missing> = 0 extends 1 & Missing ? unknown // Jobs typed loosely (`Job`): nothing to check
  : [Missing] extends [never] ? unknown
  : { readonly services: { readonly "these services are required by the Jobs but not provided": Missing } }

/** Why a test runtime could not start: a bad definition, the store, or a Schedule the sync refused. */
export type StartError = InvalidDefinition | StoreError | ScheduleSourceConflict | ScheduleReadOnly

/**
 * Worker settings for TestClock runs: no change watcher (it would spin on every clock
 * move), logs written at once, and slow polling — in one process every enqueue, retry
 * and fire wakes its Dispatcher directly, so polls are only a fallback, and each one
 * is a wake-up `advance` must step through (a day at 1 s polls is 86,400 of them).
 * Heartbeats are every 30 s (a cancel request reaches a running handler within that
 * much test time), leases three times that, as in Roster's defaults.
 */
export const defaultSettings: Partial<WorkerSettings> = {
  watchMs: 0,
  logFlushMs: 0,
  pollMs: 60_000,
  heartbeatMs: 30_000,
  leaseMs: 90_000,
  reapMs: 60_000,
  graceMs: 30_000
}

/** The Scheduler's settings in a test runtime: a pass a minute at most, the leader lease renewed as rarely. */
const schedulerSettings: SchedulerRuntime.SchedulerRuntimeOptions = { pollMs: 60_000, leaseTtlMs: 180_000 }

/** Options of {@link make}. */
export interface Options<Jobs extends ReadonlyArray<AnyJob>, ROut, E> {
  /** The Jobs under test; the worker runs exactly these (and Roster's own `roster/prune`). */
  readonly jobs: Jobs
  /** File Schedules, synced and fired by a real Scheduler (started only when given, or with `scheduler: true`). */
  readonly schedules?: ReadonlyArray<JobSchedule> | undefined
  /**
   * A Layer providing what the handlers require, as config `services` would: built
   * once, before the worker starts, and closed after it stops. `run` sees the same
   * instances, so a test can read a fake's state.
   */
  readonly services?: Layer.Layer<ROut, E, never> | undefined
  /** Queues and their concurrency, as in roster.config.ts. */
  readonly queues?: RosterConfig["queues"]
  /** Worker settings over {@link defaultSettings}. */
  readonly worker?: Partial<WorkerSettings> | undefined
  /** Run the Scheduler even without file Schedules (e.g. for Roster's pruning). */
  readonly scheduler?: boolean | undefined
  /** Retention and payload limit, as in roster.config.ts. */
  readonly config?: Pick<RosterConfig, "retention" | "maxPayloadBytes"> | undefined
  /** Where the TestClock starts (default: its own start, the epoch). Ignored when the caller provides a TestClock. */
  readonly startAt?: number | Date | undefined
  /** Also print every log line (the runtime's and the handlers') to the console; default off. */
  readonly printLogs?: boolean | undefined
  /** Real milliseconds `drain` waits for the runtime to get idle before failing (default 5,000). */
  readonly drainTimeoutMs?: number | undefined
}

/** A running test runtime. Every operation is self-contained: it needs nothing from the caller's context. */
export interface RosterTest<ROut = never> {
  /** The Client the runtime provides (list, count, cancel, retry, enqueue by id). */
  readonly client: Client["Service"]
  /** Enqueues an execution of a Job, its payload typed by the Job's Schema. */
  readonly enqueue: <P extends AnySchema>(
    job: { readonly _tag: "Job"; readonly id: string; readonly payload: P },
    payload: Schema.Schema.Type<P>,
    options?: EnqueueOptions
  ) => Effect.Effect<InsertResult, EnqueueError>
  /** Runs everything due at the current TestClock time, to quiescence; time does not move. */
  readonly drain: Effect.Effect<void, Quiescence.DrainTimeout>
  /**
   * Moves the TestClock forward by `duration`, stopping at each retry, scheduled run
   * and Schedule fire on the way to run it at its own time, then settles: like `drain`,
   * except that a handler still waiting on the clock (sleeping past the target) is
   * left running instead of failing the call.
   */
  readonly advance: (duration: Duration.Input) => Effect.Effect<void, Quiescence.DrainTimeout>
  /** Like {@link advance}, to an absolute time (epoch ms or a Date); never moves back. */
  readonly advanceTo: (at: number | Date) => Effect.Effect<void, Quiescence.DrainTimeout>
  /** The TestClock's time, in epoch ms. */
  readonly now: Effect.Effect<number>
  /** An execution with its attempts, steps and logs. */
  readonly execution: (id: string) => Effect.Effect<TestExecution.TestExecution, ExecutionNotFound | StoreError>
  /** Executions, newest first (`{ job, state, scheduleId, ... }` filters). */
  readonly executions: (filter?: ExecutionFilter) => Effect.Effect<ReadonlyArray<Execution>, StoreError>
  /** A Schedule's recorded fires, oldest first. */
  readonly fires: (scheduleId: string) => Effect.Effect<ReadonlyArray<ScheduleFire>, StoreError>
  /** Runs an effect with the kit's services, Client, Store and TestClock (e.g. to read a fake service's state). */
  readonly run: <A, E2, R extends ROut | Client | Store | ScheduleStore | Core>(effect: Effect.Effect<A, E2, R>) => Effect.Effect<A, E2>
}

const isTestClock = (clock: Clock.Clock): clock is TestClock.TestClock =>
  typeof (clock as Partial<TestClock.TestClock>).adjust === "function" && typeof (clock as Partial<TestClock.TestClock>).setTime === "function"

const epochOf = (at: number | Date): number => (typeof at === "number" ? at : at.getTime())

/** Earliest run_at of a queued or waiting execution later than `now`; scans at most 10,000 rows of each. */
const nextQueuedAfter = (store: Store["Service"], now: number) =>
  Effect.map(
    Effect.all([store.executionsList({ state: "queued", limit: 10_000 }), store.executionsList({ state: "waiting", limit: 10_000 })]),
    ([queued, waiting]) => [...queued, ...waiting].reduce((min, e) => (e.runAt > now && e.runAt < min ? e.runAt : min), Infinity)
  )

/**
 * Starts a test runtime in the current scope. Uses the TestClock of the caller's
 * context when there is one (`Effect.provide(TestClock.layer())`), else its own.
 */
export const make = <const Jobs extends ReadonlyArray<AnyJob>, ROut = never, E = never>(
  options: Options<Jobs, ROut, E> & ServicesCheck<Exclude<Requirements<Jobs[number]>, ROut | Client>>
): Effect.Effect<RosterTest<ROut>, E | StartError, Scope.Scope> =>
  Effect.gen(function*() {
    const outer = yield* Clock.clockWith(Effect.succeed)
    const clockContext = isTestClock(outer)
      ? Context.make(Clock.Clock, outer)
      : yield* Layer.build(TestClock.layer())
    const clock = Context.get(clockContext, Clock.Clock) as TestClock.TestClock
    const live = yield* clock.withLive(Clock.clockWith(Effect.succeed))
    if (!isTestClock(outer) && options.startAt !== undefined) yield* clock.setTime(epochOf(options.startAt))
    const base = clockContext.pipe(
      Context.add(Logger.CurrentLoggers, options.printLogs ? new Set([Logger.consolePretty()]) : new Set())
    ) as Context.Context<never>
    const inBase = <A, E2, R>(effect: Effect.Effect<A, E2, R>) => Effect.provide(effect, base)

    let config: RosterConfig = {
      ...options.config,
      db: ":memory:",
      jobs: options.jobs,
      schedules: options.schedules ?? [],
      queues: options.queues,
      worker: { ...defaultSettings, ...options.worker }
    }
    // Built here rather than by the worker so that `run` reaches the instances the handlers use.
    const services = options.services ? yield* inBase(Layer.build(options.services)) : Context.empty()
    if (options.services) config = { ...config, services: Layer.succeedContext(services) }
    const registry = yield* RegistryLoader.build(config)
    const roster = yield* inBase(Layer.build(Roster.layerWithRegistry(config, registry)))
    const runtime = Context.merge(base, roster)
    const inRuntime = <A, E2, R>(effect: Effect.Effect<A, E2, R>) => Effect.provide(effect, runtime)
    const full = Context.merge(runtime, services) as Context.Context<ROut | Client | Store | ScheduleStore | Core>
    const inFull = <A, E2, R>(effect: Effect.Effect<A, E2, R>) => Effect.provide(effect, full) as Effect.Effect<A, E2, Exclude<R, ROut | Client | Store | ScheduleStore | Core>>

    // The worker lives in its own scope so that closing the kit can give in-flight
    // handlers their grace period on the TestClock instead of waiting for real time.
    const workerScope = yield* Scope.make()
    const runScheduler = options.scheduler ?? (options.schedules !== undefined && options.schedules.length > 0)
    const worker = yield* inRuntime(Scope.provide(workerScope)(Worker.start({})))
    if (runScheduler) yield* inRuntime(Scope.provide(workerScope)(SchedulerRuntime.start(schedulerSettings)))
    yield* Effect.addFinalizer(() =>
      inBase(Effect.gen(function*() {
        const closing = yield* Effect.forkChild(Scope.close(workerScope, Exit.void))
        if (worker.pool.inFlight().length > 0) yield* clock.adjust(config.worker?.graceMs ?? 30_000)
        yield* Fiber.join(closing)
      })))

    const store = Context.get(roster, Store)
    const scheduleStore = Context.get(roster, ScheduleStore)
    const client = Context.get(roster, Client)
    const quiescence: Quiescence.QuiescenceOptions = {
      store,
      schedules: runScheduler ? scheduleStore : undefined,
      pool: worker.pool,
      queues: worker.queues.map((q) => ({ queue: q.name, jobs: [...registry.jobs.values()].filter((j) => j.queue === q.name).map((j) => j.id) })),
      clock,
      live
    }
    const drain = inBase(Quiescence.drain(quiescence, { timeoutMs: options.drainTimeoutMs }))
    const settle = inBase(Quiescence.drain(quiescence, { timeoutMs: options.drainTimeoutMs, allowInFlight: true }))

    const advanceTo = (at: number | Date) =>
      inBase(Effect.gen(function*() {
        const target = epochOf(at)
        yield* settle
        while (true) {
          const now = clock.currentTimeMillisUnsafe()
          const queued = yield* nextQueuedAfter(store, now).pipe(Effect.orElseSucceed(() => Infinity))
          const scheduled = runScheduler ? ((yield* scheduleStore.schedulesNextDueAt.pipe(Effect.orElseSucceed(() => null))) ?? Infinity) : Infinity
          const next = Math.min(queued, scheduled <= now ? Infinity : scheduled)
          if (next > target) break
          yield* clock.setTime(next)
          yield* settle
        }
        if (target > clock.currentTimeMillisUnsafe()) yield* clock.setTime(target)
        yield* settle
      }))

    const kit: RosterTest<ROut> = {
      client,
      enqueue: (job, payload, enqueueOptions) => inBase(client.enqueue(job.id, payload, enqueueOptions)),
      drain,
      advance: (duration) => Effect.suspend(() => advanceTo(clock.currentTimeMillisUnsafe() + Duration.toMillis(Duration.fromInputUnsafe(duration)))),
      advanceTo,
      now: clock.currentTimeMillis,
      execution: (id) => TestExecution.read(store, id),
      executions: (filter = {}) => store.executionsList(filter),
      fires: (scheduleId) => Effect.map(scheduleStore.schedulesHistory({ scheduleId, limit: 10_000 }), (fires) => [...fires].reverse()),
      run: (effect) => inFull(effect) as Effect.Effect<any, any>
    }
    return kit
  })
