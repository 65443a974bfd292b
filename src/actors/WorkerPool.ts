/**
 * The WorkerPool runs claimed executions: one fiber per execution, forked in the
 * execution's own context, with a plain map from execution id to its slot. Each fiber
 * decodes the stored payload and runs the handler; an observer on the fiber's exit
 * settles it: the queue's permit back at once, then the outcome handed to the Recorder
 * (`offer`) without waiting for a reply. The Recorder ends the slot (returns the
 * Dispatcher's unrecorded token, logs a lost lease or a failed write) once the batch
 * holding the outcome is committed. The slot, not the fiber, is what `size`,
 * `awaitEmpty` and `inFlight` count, so a worker still waits for every outcome to be
 * stored before it stops.
 *
 * Timeouts are kept by one sweeper fiber per pool rather than a timer per execution: it
 * sleeps (on the Clock) until the earliest deadline among running handlers, interrupts
 * the overdue ones, and is woken early only when a new deadline is earlier than the one
 * it sleeps towards. A timed-out handler fails its attempt with JobTimeout, as before.
 *
 * Per execution: running → (recording) → done. An interrupt carries a reason:
 * - `cancel`   an operator asked to stop it: recorded as cancelled (charged);
 * - `shutdown` the worker is stopping: released back to queued, attempt not charged;
 * - `lost`     another worker owns it now: nothing is written, the outcome is dropped;
 * - `timeout`  (the sweeper's own) the Job's timeout passed: the attempt fails with JobTimeout.
 * Once a fiber is recording, interrupts no longer apply: the outcome is already on its way.
 */
import { Cause, Clock, Context, Deferred, Effect, Exit, Fiber, Logger, Queue, Random, References, Schema } from "effect"
import type { Job } from "../jobs/Job.ts"
import type { Registry } from "../jobs/Registry.ts"
import { retryOrFail } from "../jobs/RetryDecision.ts"
import * as Failure from "../jobs/Failure.ts"
import { InvalidResult, JobTimeout, UndecodablePayload } from "../jobs/errors.ts"
import { type Execution, type ExecutionError, UnparsedPayload } from "../store/Execution.ts"
import type { Outcome } from "../store/Store.ts"
import { Store, type StoreError } from "../store/Store.ts"
import * as ExecutionSpan from "./ExecutionSpan.ts"
import * as Metrics from "./Metrics.ts"
import type { LogSink } from "./LogSink.ts"
import type { Recorder } from "./Recorder.ts"
import { makeContext } from "./Steps.ts"
import type { WakeBus } from "./WakeBus.ts"
import type { Wait } from "../jobs/Wait.ts"
import { defaultMaxPayloadBytes } from "../runtime/Enqueue.ts"
import { attribute } from "./StrayErrors.ts"
import { supervise } from "./supervise.ts"

/** The app of a job id (`<app>/<job>`). */
const appOf = (job: string): string => {
  const slash = job.indexOf("/")
  return slash < 0 ? job : job.slice(0, slash)
}
import { failureMessage, jsonCodecOf } from "../jobs/JsonCodec.ts"

const messageOf = (e: unknown): string => (e instanceof Error ? e.message : String(e))

const noop = (): void => {}

/** The context each app's handlers run in, by app (built by runtime/Services.ts). */
export type HandlerContexts = (app: string) => Context.Context<never>

/** Why an in-flight execution is being interrupted. */
export type InterruptReason = "cancel" | "shutdown" | "lost"

/** The WorkerPool's interface. */
export interface WorkerPool {
  /**
   * Starts running a claimed execution; `release` (the queue's permit) runs once, as soon
   * as the handler has ended — its outcome is then on its way to the Recorder — so the
   * Dispatcher can claim the next batch while this one commits; `settled` runs once its
   * outcome is recorded (or dropped), so the Dispatcher can bound what is unrecorded.
   * The handler's fiber starts at once, on the caller's stack.
   */
  readonly run: (execution: Execution, release: () => void, settled?: () => void) => Effect.Effect<void>
  /** {@link run} for each of a claim's executions, in order, in one step. */
  readonly runEach: (executions: ReadonlyArray<Execution>, release: () => void, settled?: () => void) => Effect.Effect<void>
  /** Interrupts an in-flight execution for a reason; a no-op once it is recording. */
  readonly interrupt: (id: string, reason: InterruptReason) => Effect.Effect<void>
  /** Ids of executions whose handler is running (not yet recording). */
  readonly running: () => ReadonlyArray<string>
  /** Ids of every execution in flight: running, or with its outcome on its way to the store. */
  readonly inFlight: () => ReadonlyArray<string>
  /** Ids of the executions whose handler has ended and whose outcome is on its way to the store. */
  readonly recording: () => ReadonlyArray<string>
  /** How many executions are running (handler not ended) and how many are recording (outcome not yet stored). */
  readonly counts: () => { readonly running: number; readonly recording: number }
  readonly size: Effect.Effect<number>
  readonly awaitEmpty: Effect.Effect<void>
}

interface Slot {
  reason: InterruptReason | "timeout" | "park" | undefined
  /** What the handler parked on (reason "park"), and when it is due. */
  park: { readonly wait: Wait; readonly runAt: number } | undefined
  recording: boolean
  /** The outcome is with the Recorder, which runs the slot's end once it is stored. */
  submitted: boolean
  fiber: Fiber.Fiber<void> | undefined
  /** When the handler's timeout passes (Clock ms); Infinity until it starts. */
  deadline: number
}

/** Starts a WorkerPool in the current scope. */
export const make = Effect.fnUntraced(function*(options: {
  readonly registry: Registry
  readonly recorder: Recorder
  readonly workerId: string
  /** Captures handler logs; without one, logs only reach the process's output. */
  readonly logSink?: LogSink | undefined
  /** The context each app's handlers run in (Services.ts); default: the pool's own, less the Store. */
  readonly contexts?: HandlerContexts | undefined
  /** Wakes this process's Dispatchers for a child a handler enqueued (ctx.enqueue). */
  readonly bus?: WakeBus | undefined
  /** The largest payload of a child (ctx.enqueue), as the Client's. */
  readonly maxPayloadBytes?: number | undefined
}) {
  const store = yield* Store
  const { registry, recorder, workerId, logSink } = options
  const own = Context.omit(Store)(yield* Effect.context<never>()) as Context.Context<never>
  const contexts: HandlerContexts = options.contexts ?? (() => own)
  // On close: the running handlers are interrupted (each released back to queued, its
  // attempt not charged), and the pool waits for them and for the outcomes they settle.
  let closed = false
  yield* Effect.addFinalizer(() =>
    Effect.suspend(() => {
      closed = true
      const running: Array<Fiber.Fiber<void>> = []
      for (const slot of slots.values()) if (!slot.recording && slot.fiber !== undefined) running.push(slot.fiber)
      for (const fiber of running) fiber.interruptUnsafe()
      return Effect.andThen(Fiber.awaitAll(running), Effect.suspend(() => Fiber.awaitAll([...settling])))
    })
  )
  // Loggers of every execution: the process's own plus the LogSink's capture logger, built once.
  const loggers = logSink === undefined ? undefined : new Set([...(yield* Logger.CurrentLoggers), logSink.logger])
  const slots = new Map<string, Slot>()

  // The timeout sweeper: `sweepAt` is when it next looks (Infinity: nothing to watch).
  let sweepAt = Infinity
  const sweeperWake = yield* Queue.unbounded<number>()
  const sweep = Effect.gen(function*() {
    while (true) {
      const now = yield* Clock.currentTimeMillis
      let next = Infinity
      for (const slot of slots.values()) {
        if (slot.recording || slot.reason !== undefined) continue
        if (slot.deadline <= now && slot.fiber !== undefined) {
          slot.reason = "timeout"
          // Not awaited: the fiber records its own outcome, the sweeper moves on.
          slot.fiber.interruptUnsafe()
        } else if (slot.deadline < next) next = slot.deadline // (a fiber not yet handed over is looked at again then)
      }
      sweepAt = next
      yield* next === Infinity ? Queue.take(sweeperWake) : Effect.timeoutOption(Queue.take(sweeperWake), next - now)
      yield* Queue.clear(sweeperWake)
    }
  })
  yield* Effect.forkScoped(supervise("TimeoutSweeper", sweep))

  /** What every run's context shares (ContextHooks, less `park`). */
  const contextHooks = {
    wake: (queue: string, at: number) => options.bus?.notify(queue, at),
    resultSchemaOf: (id: string) => registry.jobs.get(id)?.result,
    maxPayloadBytes: options.maxPayloadBytes ?? defaultMaxPayloadBytes
  }

  /** Ends the run as parked: not interruptible by the handler's own code (it is the fiber's interruption). */
  const parkOf = (slot: Slot) => (wait: Wait, runAt: number): Effect.Effect<never> =>
    Effect.suspend(() => {
      if (slot.reason === undefined) {
        slot.reason = "park"
        slot.park = { wait, runAt }
      }
      if (slot.fiber !== undefined) slot.fiber.interruptUnsafe()
      return slot.fiber === undefined ? Effect.interrupt : Effect.never
    })

  /**
   * The handler's run, as an Effect built at once in the execution's `context` (its
   * services, annotations and loggers): decode, the handler in its span (when tracing is
   * on), encode. A handler that throws instead of returning fails with a defect, as one
   * that dies.
   */
  const execute = (job: Job, execution: Execution, slot: Slot, context: Context.Context<never>): Effect.Effect<string, unknown> => {
    if (execution.payload instanceof UnparsedPayload) {
      return Effect.fail(new UndecodablePayload({ message: `stored payload of ${execution.id} is not JSON (${execution.payload.reason})` }))
    }
    const decoded = jsonCodecOf(job.payload).decode(execution.payload)
    if (decoded._tag === "Failure") {
      return Effect.fail(new UndecodablePayload({ message: `stored payload does not match ${job.id}'s schema: ${failureMessage(decoded)}` }))
    }
    const payload = decoded.value
    const ctx = makeContext(store, execution, context, () => ({ park: parkOf(slot), ...contextHooks }))
    const handle = () => {
      // Attributed, so a stray error the handler schedules can be traced back to it (StrayErrors.ts).
      const r = attribute(execution.id, () => job.handler(payload, ctx)) as Effect.Effect<unknown, unknown> | Promise<unknown>
      return Effect.isEffect(r) ? r : Effect.tryPromise({ try: () => r, catch: (e) => e })
    }
    // What the handler requires is in the execution's context (its app's services).
    const ran = ExecutionSpan.tracing(context) ? ExecutionSpan.inSpan(execution, handle) : Effect.suspend(handle)
    return Effect.flatMap(ran, (result) => {
      if (job.result === undefined) return Effect.succeed(JSON.stringify(result === undefined ? null : result))
      const encoded = jsonCodecOf(job.result).encode(result)
      if (encoded._tag === "Failure") {
        return Effect.fail(new InvalidResult({ message: `result does not match ${job.id}'s result schema: ${failureMessage(encoded)}` }))
      }
      return Effect.succeed(JSON.stringify(encoded.value))
    })
  }

  const outcomeOf = (job: Job | undefined, execution: Execution, exit: import("effect").Exit.Exit<string, unknown>, slot: Slot, now: number, random: number): Outcome | null => {
    const base = { id: execution.id, workerId, attempt: execution.attempt, now, startedAt: execution.startedAt ?? now, parentId: execution.parentId }
    if (exit._tag === "Success") return { ...base, kind: "succeeded", result: exit.value }
    if (Cause.hasInterruptsOnly(exit.cause) && slot.reason !== "timeout") {
      if (slot.reason === "lost") return null
      if (slot.reason === "park" && slot.park !== undefined) {
        return { id: execution.id, workerId, attempt: execution.attempt, now, kind: "park", wait: slot.park.wait, runAt: slot.park.runAt, parentId: execution.parentId }
      }
      if (slot.reason === "cancel") return { ...base, kind: "cancelled", error: Failure.cancelled }
      return { id: execution.id, workerId, attempt: execution.attempt, now, kind: "released" }
    }
    const cause = Cause.hasInterruptsOnly(exit.cause)
      ? Cause.fail(new JobTimeout({ message: `timed out after ${execution.timeoutMs} ms`, timeoutMs: execution.timeoutMs }))
      : exit.cause
    const error = Failure.classify(job, cause)
    const fate = retryOrFail(job, execution, error, random, now)
    return fate.kind === "retry" ? { ...base, kind: "retry", runAt: fate.runAt, error } : { ...base, kind: "failed", error }
  }

  /** What is logged when an outcome handed to the Recorder was not stored: a failed write, or a lease lost before it. */
  const afterRecording = (execution: Execution, exit: Exit.Exit<boolean, StoreError>): Effect.Effect<void> =>
    Effect.updateContext(
      exit._tag === "Failure"
        ? Effect.logError(`could not record the outcome of ${execution.id}: ${messageOf(Cause.squash(exit.cause))}; its lease will expire and it will be retried`)
        : Effect.logWarning(`lease on ${execution.id} (${execution.job}) was lost before its outcome was recorded; the outcome is dropped`),
      (_: Context.Context<never>) => executionContext(execution)
    )

  /** Hands a stored-to-be outcome to the Recorder, which ends the slot (`end`) once it is stored. */
  const followUpOf = (execution: Execution, end: () => void) => (exit: Exit.Exit<boolean, StoreError>): Effect.Effect<void> =>
    exit._tag === "Success" && exit.value ? Effect.sync(end) : Effect.andThen(afterRecording(execution, exit), Effect.sync(end))
  const submit = (execution: Execution, slot: Slot, outcome: Outcome, end: () => void): Effect.Effect<void> =>
    Effect.flatMap(recorder.submit(outcome, execution.queue, followUpOf(execution, end)), (accepted) => {
      slot.submitted = accepted
      return accepted
        ? Effect.void
        : Effect.logError(`could not record the outcome of ${execution.id}: the recorder has stopped; its lease will expire and it will be retried`)
    })

  /** The outcome of an attempt that did not succeed (or was interrupted), logged and handed over. */
  const settleOther = (job: Job | undefined, execution: Execution, slot: Slot, exit: Exit.Exit<string, unknown>, started: number, end: () => void) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const random = exit._tag === "Failure" ? yield* Random.next : 0
      const outcome = outcomeOf(job, execution, exit, slot, now, random)
      yield* Metrics.attemptFinished(execution.job, execution.queue, outcome?.kind ?? "lost", now - started)
      if (outcome === null) {
        yield* Effect.logWarning(`lease on ${execution.id} (${execution.job}) was lost; the outcome is dropped`)
        return
      }
      if (outcome.kind === "failed" || outcome.kind === "retry") {
        const verdict = `${execution.job} ${execution.id} attempt ${execution.attempt} ${outcome.kind === "retry" ? "will retry" : "failed"}: ${outcome.error.message}`
        // A defect is logged with its stack, and so kept with the execution's logs.
        yield* outcome.error.tag === "Defect" ? Effect.logError(verdict, outcome.error.pretty) : Effect.logWarning(verdict)
      }
      yield* submit(execution, slot, outcome, end)
    })

  /** Off the success path: unless its outcome is with the Recorder (which then ends the slot), a settling fiber's end ends it. */
  const endedOf = (slot: Slot, end: () => void): Effect.Effect<void> => Effect.sync(() => (slot.submitted ? undefined : end()))

  // Fibers settling an outcome off the success path (failures, interrupts, a full
  // mailbox): uninterruptible, and the pool's close waits for them.
  const settling = new Set<Fiber.Fiber<void>>()
  const settle = (context: Context.Context<never>, effect: Effect.Effect<void>) => {
    const fiber = Effect.runForkWith(context)(effect, { uninterruptible: true })
    if (fiber.pollUnsafe() === undefined) {
      settling.add(fiber)
      fiber.addObserver(() => settling.delete(fiber))
    }
  }

  /**
   * Starts one execution's handler in a fiber of its own, in the execution's context (its
   * app's services, annotations and loggers), and settles it when that fiber exits: an
   * observer, not more Effect steps on the fiber. A success, the every-job path, is
   * plain calls (the permit back, metrics, the outcome into the Recorder's mailbox);
   * anything else (a failure, an interrupt, a full mailbox) settles on a fiber of its own
   * (settleOther). Measured in a drain: CPU a job −12%, jobs/s +8% (bench/RESULTS.md thirteenth pass).
   */
  const start = (execution: Execution, release: () => void, settled: () => void): void => {
    if (closed) return release()
    const slot: Slot = { reason: undefined, park: undefined, recording: false, submitted: false, fiber: undefined, deadline: Infinity }
    slots.set(execution.id, slot)
    // The slot's end: called by the Recorder once the outcome is stored (or by a settling fiber, endedOf).
    const end = () => {
      slotEnded(execution.id, slot)
      settled()
    }
    const job = registry.jobs.get(execution.job)
    const context = executionContext(execution)
    const clock = Context.get(context, Clock.Clock)
    const started = clock.currentTimeMillisUnsafe()
    slot.deadline = started + execution.timeoutMs
    if (slot.deadline < sweepAt) {
      sweepAt = slot.deadline
      Queue.offerUnsafe(sweeperWake, slot.deadline)
    }
    const run = job
      ? Effect.suspend(() => execute(job, execution, slot, context))
      : Effect.fail(new UndecodablePayload({ message: `no handler for ${execution.job} in this worker` }))
    const fiber = Effect.runForkWith(context)(run)
    slot.fiber = fiber as Fiber.Fiber<unknown, unknown> as Fiber.Fiber<void>
    fiber.addObserver((exit) => {
      slot.recording = true
      release()
      if (exit._tag === "Success") {
        const now = clock.currentTimeMillisUnsafe()
        Metrics.attemptFinishedUnsafe(context, execution.job, execution.queue, "succeeded", now - started)
        const outcome = outcomeOf(job, execution, exit, slot, now, 0)!
        if (recorder.offer(outcome, execution.queue, followUpOf(execution, end), end)) {
          slot.submitted = true
          return
        }
        return settle(context, Effect.ensuring(submit(execution, slot, outcome, end), endedOf(slot, end)))
      }
      settle(context, Effect.ensuring(settleOther(job, execution, slot, exit, started, end), endedOf(slot, end)))
    })
  }

  /**
   * An execution's context in one step: its app's handler context (its services, and
   * nothing of Roster's internals), its log annotations and the capture logger (when
   * there is a LogSink).
   */
  const executionContext = (execution: Execution): Context.Context<never> => {
    const app = appContextOf(execution.job)
    return Context.add(app.context, References.CurrentLogAnnotations, {
      ...app.annotations,
      executionId: execution.id,
      job: execution.job,
      attempt: execution.attempt
    }) as Context.Context<never>
  }
  /**
   * Each app's context with the capture logger, built once per app (a Job this worker
   * does not know: each time), and found by the Job's id without cutting out its app.
   */
  type AppContext = { readonly context: Context.Context<never>; readonly annotations: Record<string, unknown> }
  const appContexts = new Map<string, AppContext>()
  const byJob = new Map<string, AppContext>()
  const appContextOf = (job: string): AppContext => {
    const known = byJob.get(job)
    if (known !== undefined) return known
    const app = appOf(job)
    const kept = registry.jobs.has(job)
    let built = appContexts.get(app)
    if (built === undefined) {
      const context = contexts(app)
      built = {
        context: loggers === undefined ? context : Context.add(context, Logger.CurrentLoggers, loggers) as Context.Context<never>,
        annotations: Context.get(context, References.CurrentLogAnnotations)
      }
      if (kept) appContexts.set(app, built)
    }
    if (kept) byJob.set(job, built)
    return built
  }

  // Resolved when the last slot ends (an outcome stored, or dropped): the pool is empty.
  let emptied: Deferred.Deferred<void> | undefined
  // Only its own slot: should a retry of the same execution run again before the last
  // attempt's follow-up has ended that attempt's slot, the newer slot is the retry's.
  const slotEnded = (id: string, slot: Slot) => {
    if (slots.get(id) === slot) slots.delete(id)
    if (slots.size === 0 && emptied !== undefined) {
      Deferred.doneUnsafe(emptied, Exit.void)
      emptied = undefined
    }
  }

  const pool: WorkerPool = {
    run: (execution, release, settled = noop) => Effect.sync(() => start(execution, release, settled)),
    runEach: (executions, release, settled = noop) =>
      Effect.sync(() => {
        for (const execution of executions) start(execution, release, settled)
      }),
    interrupt: (id, reason) =>
      Effect.suspend(() => {
        const slot = slots.get(id)
        if (!slot || slot.recording || slot.fiber === undefined) return Effect.void
        slot.reason = reason
        return Fiber.interrupt(slot.fiber)
      }),
    running: () => [...slots.entries()].filter(([, s]) => !s.recording).map(([id]) => id),
    inFlight: () => [...slots.keys()],
    recording: () => {
      const ids: Array<string> = []
      for (const [id, slot] of slots) if (slot.recording) ids.push(id)
      return ids
    },
    counts: () => {
      let recording = 0
      for (const slot of slots.values()) if (slot.recording) recording++
      return { running: slots.size - recording, recording }
    },
    size: Effect.sync(() => slots.size),
    awaitEmpty: Effect.suspend(() => (slots.size === 0 ? Effect.void : Deferred.await(emptied ??= Deferred.makeUnsafe<void>())))
  }
  return pool
})
