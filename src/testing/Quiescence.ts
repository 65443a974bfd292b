/**
 * When a test runtime has nothing left to do at the current TestClock time: no handler
 * in flight (running, or its outcome on its way to the store), no execution stored as
 * running, nothing queued and due (or a lease expired) on a served queue, and no
 * Schedule due. `drain` waits for that without moving the TestClock, letting the real
 * actors' fibers run; it fails with `DrainTimeout` naming what is still busy once a
 * bound of real time passes (a handler waiting on the clock never gets idle by itself).
 * While time is being advanced, handlers waiting on the clock are let be
 * (`allowInFlight`): the wait ends once the set in flight stops changing.
 */
import { Data, Effect } from "effect"
import type { Clock } from "effect"
import type { WorkerPool } from "../actors/WorkerPool.ts"
import type { ScheduleStore } from "../store/ScheduleStore.ts"
import type { Store } from "../store/Store.ts"

/** `drain` gave up: the runtime was still busy when its real-time bound passed. */
export class DrainTimeout extends Data.TaggedError("DrainTimeout")<{
  readonly message: string
  /** Ids of executions still in flight in the worker. */
  readonly inFlight: ReadonlyArray<string>
}> {}

/** What the idle check needs to see. */
export interface QuiescenceOptions {
  readonly store: Store["Service"]
  /** Present when the kit runs a Scheduler. */
  readonly schedules: ScheduleStore["Service"] | undefined
  readonly pool: WorkerPool
  /** The served queues and the Jobs this worker runs on each. */
  readonly queues: ReadonlyArray<{ readonly queue: string; readonly jobs: ReadonlyArray<string> }>
  /** The TestClock (what "due now" means). */
  readonly clock: Clock.Clock
  /** The real clock (what the bound is measured in). */
  readonly live: Clock.Clock
}

/** Why the runtime is busy now, or undefined when it is idle; `allowInFlight` ignores handlers already running. */
export const busyReason = (o: QuiescenceOptions, allowInFlight = false): Effect.Effect<string | undefined, unknown> =>
  Effect.gen(function*() {
    const inFlight = o.pool.inFlight()
    if (!allowInFlight && inFlight.length > 0) return `${inFlight.length} execution(s) in flight (${inFlight.slice(0, 5).join(", ")})`
    const now = o.clock.currentTimeMillisUnsafe()
    const counts = yield* o.store.executionsCount({})
    if (counts.running > inFlight.length || (!allowInFlight && counts.running > 0)) return `${counts.running} execution(s) stored as running`
    if (yield* o.store.executionsHasWork({ queues: o.queues, now })) return `executions due at ${now} not yet claimed`
    if (o.schedules && (yield* o.schedules.schedulesDue({ now, limit: 1 })).length > 0) return `a Schedule due at ${now} not yet fired`
    return undefined
  })

/** How long `drain` waits, in real time, and what counts as idle. */
export interface DrainOptions {
  /** Real milliseconds before giving up (default 5,000). */
  readonly timeoutMs?: number | undefined
  /**
   * Count handlers already running as idle once the set in flight stops changing —
   * what `advance` needs, since a handler waiting on the clock only ends when time
   * moves. `drain` itself insists on nothing in flight.
   */
  readonly allowInFlight?: boolean | undefined
}

/** Idle checks in a row that must agree: lets the LogSink and Recorder fibers settle their last writes. */
const settleTurns = 20
/** Busy turns before yielding to the event loop too, so handlers awaiting real Promises progress. */
const spinTurns = 200

/** Lets the runtime's fibers run, without moving the TestClock, until it is idle. */
export const drain = (o: QuiescenceOptions, options: DrainOptions = {}): Effect.Effect<void, DrainTimeout> =>
  Effect.gen(function*() {
    const timeoutMs = options.timeoutMs ?? 5_000
    const deadline = o.live.currentTimeMillisUnsafe() + timeoutMs
    let idleTurns = 0
    let turns = 0
    let reason: string | undefined = undefined
    let inFlightBefore = ""
    while (true) {
      reason = yield* busyReason(o, options.allowInFlight).pipe(Effect.catchCause(() => Effect.succeed("the store could not be read")))
      const inFlightNow = o.pool.inFlight().join(",")
      if (inFlightNow !== inFlightBefore) {
        inFlightBefore = inFlightNow
        reason ??= "executions in flight are still changing"
      }
      if (reason === undefined) {
        if (++idleTurns >= settleTurns) return
      } else idleTurns = 0
      if (++turns % spinTurns === 0) {
        if (o.live.currentTimeMillisUnsafe() > deadline) break
        yield* Effect.promise(() => new Promise<void>((resolve) => setImmediate(resolve)))
      } else yield* Effect.yieldNow
    }
    const inFlight = o.pool.inFlight()
    return yield* new DrainTimeout({
      inFlight,
      message: `drain: still busy after ${timeoutMs} ms of real time: ${reason}. ` +
        `A handler waiting on the clock (Effect.sleep, a timeout) needs advance(...) to finish.`
    })
  })
