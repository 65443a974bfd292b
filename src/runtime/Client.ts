/**
 * `Roster.Client`: what an application does with Roster — enqueue (one, or many in one
 * transaction), read executions, cancel, retry and wait for one to end. Enqueues go
 * through the Recorder, so concurrent callers share one transaction, and wake this
 * process's Dispatchers at once.
 *
 * Waiting is woken by commits, never by a timer: this process's own outcomes through
 * the WakeBus, other processes' through one change watcher (SQLite's data_version,
 * PostgreSQL's outcome notices) that runs while anyone waits and stops when the last
 * waiter leaves. Each wake-up costs one read of the waited row.
 */
import type { Signal } from "../jobs/Wait.ts"
import { InvalidSignal } from "../jobs/errors.ts"
import { Cause, Clock, Context, Duration, Effect, type Exit, Layer, RcRef } from "effect"
import type { Job } from "../jobs/Job.ts"
import type { Registry } from "../jobs/Registry.ts"
import { ExecutionNotFound, InvalidEnqueueOption, InvalidPayload, InvalidTransition, NotJsonSafe, PayloadTooDeep, PayloadTooLarge, UnknownJob, WaitTimeout } from "../jobs/errors.ts"
import type { Attempt, Execution, ExecutionState, LogDrops, LogLine, Step } from "../store/Execution.ts"
import type { CancelResult, ExecutionFilter, InsertRequest, InsertResult } from "../store/Store.ts"
import { Store, StoreError } from "../store/Store.ts"
import { listedQueueNames, queueSummariesOf, type QueueSummary } from "../store/QueueRules.ts"
import { heldBackOf, limitsOfQueue } from "../store/FlowExplain.ts"
import { Core } from "./Core.ts"
import { supervise } from "../actors/supervise.ts"
import { workerSettings } from "./Config.ts"
import { traceContextOf } from "../actors/ExecutionSpan.ts"
import { defaultMaxPayloadBytes, type EnqueueRefusal, prepareRetry, prepareRow, type EnqueueOptions } from "./Enqueue.ts"

/** The largest signal payload, as JSON text: 1 MiB. */
const maxSignalBytes = 1024 * 1024

/** Errors an enqueue can fail with. */
export type EnqueueError = InvalidPayload | PayloadTooLarge | PayloadTooDeep | NotJsonSafe | InvalidEnqueueOption | UnknownJob | StoreError

/** The prefix a bulk refusal's message gets: `item 3 of 10: `. */
export const itemPrefix = (item: number, of: number): string => `item ${item} of ${of}: `

/** The same refusal, naming its item in a bulk of `of` (1-based). */
const atItem = <E extends EnqueueRefusal | UnknownJob>(e: E, item: number, of: number): E => {
  const fields = { ...e, item, message: itemPrefix(item, of) + e.message }
  switch (e._tag) {
    case "InvalidPayload": return new InvalidPayload(fields as InvalidPayload) as E
    case "NotJsonSafe": return new NotJsonSafe(fields as NotJsonSafe) as E
    case "PayloadTooLarge": return new PayloadTooLarge(fields as PayloadTooLarge) as E
    case "PayloadTooDeep": return new PayloadTooDeep(fields as PayloadTooDeep) as E
    case "InvalidEnqueueOption": return new InvalidEnqueueOption(fields as InvalidEnqueueOption) as E
    case "UnknownJob": return new UnknownJob(fields as UnknownJob) as E
  }
  return e
}

/** One item of an enqueue. */
export interface EnqueueItem {
  readonly job: JobRef
  readonly payload: unknown
  readonly options?: EnqueueOptions | undefined
}

const resolveJob = (registry: Registry, ref: JobRef): Job | UnknownJob => {
  const id = typeof ref === "string" ? ref : ref.id
  const job = registry.jobs.get(id) ?? (typeof ref === "string" ? undefined : ref)
  if (job) return job
  const known = [...registry.jobs.keys()].sort()
  return new UnknownJob({ job: id, message: `unknown job "${id}"${known.length ? ` (known: ${known.slice(0, 20).join(", ")}${known.length > 20 ? ", …" : ""})` : ""}` })
}

/**
 * The rows of an enqueue, prepared in one plain loop: the first refusal instead (named
 * by its position when `numbered`).
 */
const enqueueRows = (
  registry: Registry,
  items: ReadonlyArray<EnqueueItem>,
  numbered: boolean,
  now: number,
  maxBytes: number,
  traceContext: string | null
): Array<InsertRequest> | EnqueueError => {
  const rows: Array<InsertRequest> = new Array(items.length)
  for (let i = 0; i < items.length; i++) {
    const item = items[i]!
    const job = resolveJob(registry, item.job)
    const row = job instanceof UnknownJob ? job : prepareRow(job, item.payload, item.options ?? {}, now, maxBytes, traceContext)
    if ("_tag" in row) return numbered ? atItem(row, i + 1, items.length) : row
    rows[i] = row
  }
  return rows
}

const noRow = new StoreError({ message: "insert returned no row" })

/** The one result of a single enqueue. */
const firstResult = (results: ReadonlyArray<InsertResult>): Effect.Effect<InsertResult, StoreError> =>
  results[0] ? Effect.succeed(results[0]) : Effect.fail(noRow)

/** Enqueue for callers outside Effect: see {@link promiseEnqueue}. */
export interface PromiseEnqueue {
  readonly enqueue: (job: JobRef, payload: unknown, options?: EnqueueOptions) => Promise<InsertResult>
  readonly enqueueMany: (items: ReadonlyArray<EnqueueItem>) => Promise<ReadonlyArray<InsertResult>>
}

/**
 * The Client's enqueue and enqueueMany as Promises, for the Promise API (`Roster.open`):
 * the same checks and the same write through the Recorder, with no fiber of the
 * caller's own (no runPromise, Deferred or fiber resumption per call: 22–25 → 12–16 µs
 * of runtime a call, bench/RESULTS.md fourteenth pass). Time is read from `clock`, the
 * runtime's. A Promise caller has no span, so the rows carry no trace context, as with
 * a fiber run by `runPromise`. Rejects with the typed error, as `runPromise` would.
 */
export const promiseEnqueue = (core: Core["Service"], clock: Clock.Clock): PromiseEnqueue => {
  const maxBytes = core.config.maxPayloadBytes ?? defaultMaxPayloadBytes
  const insertAll = (items: ReadonlyArray<EnqueueItem>, numbered: boolean): Promise<ReadonlyArray<InsertResult>> =>
    new Promise((resolve, reject) => {
      // A throw while preparing (a payload's getter, say) rejects, as a defect would.
      const rows = enqueueRows(core.registry, items, numbered, clock.currentTimeMillisUnsafe(), maxBytes, null)
      if (!Array.isArray(rows)) return reject(rows)
      const reply = (exit: Exit.Exit<ReadonlyArray<InsertResult>, StoreError>) =>
        exit._tag === "Success" ? resolve(exit.value) : reject(Cause.squash(exit.cause))
      // A full mailbox (or a stopped Recorder): the Effect path waits for room (or fails).
      if (!core.recorder.insertUnsafe(rows, reply)) void Effect.runPromiseExit(core.recorder.insert(rows)).then(reply)
    })
  return {
    enqueue: (job, payload, options) =>
      insertAll([{ job, payload, options }], false).then((results) => results[0] ?? Promise.reject(noRow)),
    enqueueMany: (items) => insertAll(items, true)
  }
}

/** An execution with everything recorded about it. */
export interface ExecutionDetail extends Execution {
  readonly attempts: ReadonlyArray<Attempt>
  readonly steps: ReadonlyArray<Step>
  /** Its handlers' persisted log lines, oldest first, and how many were dropped per attempt. */
  readonly logs: ReadonlyArray<LogLine>
  readonly logDrops: ReadonlyArray<LogDrops>
  /** Signals sent to it, in order (a kept one has `consumedAt` null). */
  readonly signals: ReadonlyArray<Signal>
}

/** A Job given by value or by id. */
export type JobRef = Job<any, any, any> | string

/** The states an execution ends in: `waitFor` returns once it is in one. */
export const endStates: ReadonlySet<ExecutionState> = new Set(["succeeded", "failed", "cancelled"])

/** Options of `waitFor`. */
export interface WaitOptions {
  /** How long to wait (a Duration input: ms, "30 seconds", ...); default: until it ends. */
  readonly timeout?: Duration.Input | undefined
}

/** The Client service. */
export class Client extends Context.Service<Client, {
  readonly enqueue: (job: JobRef, payload: unknown, options?: EnqueueOptions) => Effect.Effect<InsertResult, EnqueueError>
  /**
   * Validates every item first; writes all in one transaction or none. A refusal names
   * the first bad item (`item 3 of 10: …`, and its `item` field).
   */
  readonly enqueueMany: (
    items: ReadonlyArray<{ readonly job: JobRef; readonly payload: unknown; readonly options?: EnqueueOptions }>
  ) => Effect.Effect<ReadonlyArray<InsertResult>, EnqueueError>
  readonly get: (id: string) => Effect.Effect<ExecutionDetail | null, StoreError>
  /**
   * Pauses a queue on the database: no worker claims its executions until it is resumed
   * (running ones finish); enqueues are still accepted. Any name is accepted, declared
   * in this config or not. Returns whether it was not paused before.
   */
  readonly pauseQueue: (name: string) => Effect.Effect<boolean, StoreError>
  /** Resumes a paused queue and wakes this process's Dispatchers at once; returns whether it was paused. */
  readonly resumeQueue: (name: string) => Effect.Effect<boolean, StoreError>
  /** Every queue declared here, with executions, or paused: pause state, concurrency and counts, by name. */
  readonly queues: () => Effect.Effect<ReadonlyArray<QueueSummary>, StoreError>
  readonly list: (filter?: ExecutionFilter) => Effect.Effect<ReadonlyArray<Execution>, StoreError>
  readonly count: (filter?: ExecutionFilter) => Effect.Effect<Record<ExecutionState, number>, StoreError>
  /** Cancels a queued execution, or asks a running one to stop. */
  readonly cancel: (id: string) => Effect.Effect<CancelResult, ExecutionNotFound | StoreError>
  /**
   * Sends the signal `name` with `payload` (JSON-safe) to an execution: a wait for it
   * (`ctx.waitForSignal(name, ...)`) resumes, or, sent before the wait, it is kept and
   * taken once. "Woke" when the execution was waiting for it, else "Kept". Refused for
   * an execution that has ended (InvalidTransition) or does not exist.
   */
  readonly signal: (id: string, name: string, payload?: unknown) => Effect.Effect<"Kept" | "Woke", ExecutionNotFound | InvalidTransition | InvalidSignal | StoreError>
  /** Creates a new execution with the same payload, linked to a failed or cancelled one. */
  readonly retry: (id: string) => Effect.Effect<InsertResult, ExecutionNotFound | InvalidTransition | StoreError>
  /**
   * Waits until the execution has ended (succeeded, failed or cancelled) and returns it;
   * at once if it already has. Woken by commits (this process's and others'), not by polling.
   */
  readonly waitFor: (id: string, options?: WaitOptions) => Effect.Effect<Execution, ExecutionNotFound | WaitTimeout | StoreError>
}>()("roster/Client") {}

/** Builds the Client over the Core and the Store. */
export const layer: Layer.Layer<Client, never, Core | Store> = Layer.effect(
  Client,
  Effect.gen(function*() {
    const core = yield* Core
    const store = yield* Store
    const maxBytes = core.config.maxPayloadBytes ?? defaultMaxPayloadBytes

    // Every waiter's wake-up, called on any other process's commit while the watcher runs.
    const waiters = new Set<() => void>()
    const { watchMs } = workerSettings(core.config)
    // One watcher for all waiters of this process: started by the first, stopped with the
    // last. ROSTER_WATCH_MS=0 turns it off, as for the worker: only this process's commits wake.
    const watcher = yield* RcRef.make({
      acquire: watchMs <= 0 ? Effect.void : Effect.asVoid(Effect.forkScoped(supervise("WaitWatcher", store.watchChanges({
        pollMs: watchMs,
        onChange: () => waiters.forEach((wake) => wake())
      }))))
    })

    /** Reads the row once per wake-up until it has ended; the wake-ups are registered before the first read. */
    const awaitEnd = (id: string) =>
      Effect.scoped(Effect.gen(function*() {
        let woken = true
        let signal: (() => void) | undefined
        const wake = () => {
          woken = true
          signal?.()
        }
        yield* Effect.acquireRelease(
          Effect.sync(() => {
            waiters.add(wake)
            return core.bus.subscribeOutcome(id, wake)
          }),
          (unsubscribe) => Effect.sync(() => {
            waiters.delete(wake)
            unsubscribe()
          })
        )
        yield* RcRef.get(watcher)
        while (true) {
          if (!woken) {
            yield* Effect.callback<void>((resume) => {
              signal = () => resume(Effect.void)
              if (woken) resume(Effect.void)
              return Effect.sync(() => {
                signal = undefined
              })
            })
            signal = undefined
          }
          woken = false
          const execution = yield* store.executionsGet(id)
          if (!execution) return yield* new ExecutionNotFound({ id, message: `no execution ${id}` })
          if (endStates.has(execution.state)) return execution
        }
      }))

    /** Prepares every item (see {@link enqueueRows}), then inserts all in one transaction. */
    const insertAll = (items: ReadonlyArray<EnqueueItem>, numbered: boolean) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        Effect.withFiber<ReadonlyArray<InsertResult>, EnqueueError>((fiber) => {
          const rows = enqueueRows(core.registry, items, numbered, now, maxBytes, traceContextOf(fiber.context))
          return Array.isArray(rows) ? core.recorder.insert(rows) : Effect.fail(rows)
        }))

    return Client.of({
      enqueue: (job, payload, options) => Effect.flatMap(insertAll([{ job, payload, options }], false), firstResult),
      enqueueMany: (items) => insertAll(items, true),
      get: (id) =>
        Effect.gen(function*() {
          const execution = yield* store.executionsGet(id)
          if (!execution) return null
          const attempts = yield* store.attemptsList(id)
          const steps = yield* store.stepsList(id)
          const logs = yield* store.logsList(id)
          const signals = yield* store.signalsList(id)
          return { ...execution, attempts, steps, logs: logs.lines, logDrops: logs.drops, signals }
        }),
      pauseQueue: (name) => Effect.flatMap(Clock.currentTimeMillis, (now) => store.queuesPause({ queue: name, now })),
      resumeQueue: (name) =>
        Effect.gen(function*() {
          const now = yield* Clock.currentTimeMillis
          const resumed = yield* store.queuesResume({ queue: name, now })
          // Other processes see the commit through their change watcher (or their next poll).
          if (resumed) core.bus.notify(name, now)
          return resumed
        }),
      queues: () =>
        Effect.gen(function*() {
          const now = yield* Clock.currentTimeMillis
          const [states, stats] = yield* Effect.all([store.queuesList, store.executionsQueueStats({ now })])
          // Held-back counts under this config's limits, per listed queue (one read each).
          const held = new Map(yield* Effect.forEach(listedQueueNames(core.registry.queues.keys(), states, stats), (queue) => {
            const limits = limitsOfQueue(core.registry, queue)
            return Effect.map(store.queuesHeldBack({ queue, now, limits }), (read) => [queue, heldBackOf(limits, read, now)] as const)
          }))
          return queueSummariesOf(core.registry.queues.values(), states, stats, held)
        }),
      list: (filter = {}) => store.executionsList(filter),
      count: (filter = {}) => store.executionsCount(filter),
      cancel: (id) =>
        Effect.gen(function*() {
          const now = yield* Clock.currentTimeMillis
          const result = yield* store.executionsCancel({ id, now })
          if (result === null) return yield* new ExecutionNotFound({ id, message: `no execution ${id}` })
          if (result === "cancelled") core.bus.notifyOutcome(id)
          return result
        }),
      signal: (id, name, payload = null) =>
        Effect.gen(function*() {
          const refuse = (message: string) => new InvalidSignal({ id, message })
          if (typeof name !== "string" || name.trim() === "" || name.length > 200) return yield* refuse(`signal name must be 1 to 200 characters, got ${JSON.stringify(name)}`)
          let text: string | undefined
          try {
            text = JSON.stringify(payload)
          } catch (e) {
            return yield* refuse(`signal "${name}" to ${id}: the payload is not JSON-safe: ${(e as Error).message}`)
          }
          if (text === undefined) return yield* refuse(`signal "${name}" to ${id}: the payload is not JSON-safe`)
          if (text.length > maxSignalBytes) return yield* refuse(`signal "${name}" to ${id}: the payload is ${text.length} characters, over the ${maxSignalBytes} limit`)
          const now = yield* Clock.currentTimeMillis
          const sent = yield* store.signalsSend({ id, name, payload: text, now })
          if (sent._tag === "Missing") return yield* new ExecutionNotFound({ id, message: `no execution ${id}` })
          if (sent._tag === "Ended") return yield* new InvalidTransition({ id, message: `execution ${id} has ended (${sent.state}); signal "${name}" was not sent` })
          // This process's Dispatchers claim it now; other processes' see the commit.
          if (sent._tag === "Woke") core.bus.notifyEvery(now)
          return sent._tag
        }),
      retry: (id) =>
        Effect.gen(function*() {
          const original = yield* store.executionsGet(id)
          if (!original) return yield* new ExecutionNotFound({ id, message: `no execution ${id}` })
          if (original.state !== "failed" && original.state !== "cancelled") {
            return yield* new InvalidTransition({ id, message: `execution ${id} is ${original.state}; only failed or cancelled executions can be retried` })
          }
          const now = yield* Clock.currentTimeMillis
          const [result] = yield* core.recorder.insert([prepareRetry(original, now)])
          if (!result) return yield* new StoreError({ message: "insert returned no row" })
          return result
        }),
      waitFor: (id, options = {}) => {
        if (options.timeout === undefined) return awaitEnd(id)
        const timeoutMs = Duration.toMillis(Duration.fromInputUnsafe(options.timeout))
        return awaitEnd(id).pipe(
          Effect.timeoutOrElse({
            duration: timeoutMs,
            orElse: () => Effect.fail(new WaitTimeout({ id, timeoutMs, message: `execution ${id} had not ended after ${timeoutMs} ms` }))
          })
        )
      }
    })
  })
)
