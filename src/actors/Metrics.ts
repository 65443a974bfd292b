/**
 * Roster's instrumentation, in one place (like Oban's engine wraps every call in
 * telemetry): the Effect metrics, the one function per event that updates them, and
 * {@link instrumentStore}, which wraps the Store once where it is built so every store
 * operation is counted and timed without the actors that call it knowing. Actors call
 * the event functions below; nothing else in `src` updates a metric. The Prometheus
 * endpoint (runtime/MetricsExporter.ts) renders whatever these hold.
 */
import { Clock, Context, Effect, Exit, Layer, Metric } from "effect"
import { Store } from "../store/Store.ts"

/** Finished attempts, with attributes job, outcome and queue (one Metric per series: executionSeries). */
const executionsOptions = { description: "attempts finished, by job, queue and outcome", incremental: true } as const

/** Handler duration in milliseconds. */
export const durations = Metric.histogram("roster_execution_duration_ms", {
  description: "handler duration in milliseconds",
  boundaries: Metric.exponentialBoundaries({ start: 1, factor: 4, count: 10 })
})

/** Expired leases recovered by a Reaper. */
export const leaseRecoveries = Metric.counter("roster_lease_recoveries_total", {
  description: "expired leases recovered",
  incremental: true
})

/** Actors restarted by supervise() after a crash, with attribute actor (one Metric per series: restartSeries). */
const actorRestartsOptions = { description: "actor restarts after a crash", incremental: true } as const

/** Handler log lines dropped because the LogSink was full. */
export const droppedLogLines = Metric.counter("roster_dropped_log_lines_total", {
  description: "handler log lines dropped under back-pressure",
  incremental: true
})

/** Stray errors caught by the process guard, with attribute kind (rejection | exception). */
export const strayErrors = Metric.counter("roster_stray_errors_total", {
  description: "Errors that escaped every handler (unhandled rejections, exceptions thrown from timers), logged and survived"
})

/** Executions per queue and state (queued, running), from the store at scrape time. */
export const queueDepth = Metric.gauge("roster_queue_depth", {
  description: "executions per queue and state (queued, running), read from the store at scrape time"
})

/** Age of the oldest queued execution that is due, per queue, in milliseconds (0 when none). */
export const oldestDueAge = Metric.gauge("roster_queue_oldest_due_age_ms", {
  description: "age of the oldest due queued execution per queue in milliseconds (0 when none)"
})

/** Store operations, with attributes operation (the Store method) and outcome (ok | error): storeSeries. */
const storeOperationsOptions = { description: "store operations, by operation and outcome (ok, error)", incremental: true } as const

/** Store operation duration in milliseconds, with attribute operation: storeDurationSeries. */
const storeDurationsOptions = {
  description: "store operation duration in milliseconds, by operation",
  boundaries: Metric.exponentialBoundaries({ start: 1, factor: 4, count: 8 })
} as const

/**
 * Attributed metrics are made once per series, not once per event, and each series is
 * its own Metric with its attributes built in (the same name, description and
 * attributes, so the same series in the registry). Not `Metric.withAttributes`: it adds
 * the attributes to the context on every update, so the series is keyed afresh each
 * time (a sort and a JSON.stringify of the attributes, and a context copy, per update).
 * One finished attempt's metrics: 0.30–0.46 → 0.17–0.23 µs (bench/RESULTS.md, thirteenth pass).
 */
const memo = <M>(make: (key: string) => M): (key: string) => M => {
  const cache = new Map<string, M>()
  return (key) => {
    let m = cache.get(key)
    if (m === undefined) cache.set(key, (m = make(key)))
    return m
  }
}

const executionSeries = memo((key) => {
  const [job, queue, outcome] = key.split("\u0000") as [string, string, string]
  // Attributes in name order, so the exposition's labels read job, outcome, queue.
  return Metric.counter("roster_executions_total", { ...executionsOptions, attributes: { job, outcome, queue } })
})

/** One attempt finished with `outcome` (succeeded, retry, failed, cancelled, released, lost) after `ms` of handler time. */
export const attemptFinished = (job: string, queue: string, outcome: string, ms: number): Effect.Effect<void> =>
  Effect.withFiber((fiber) => Effect.succeed(attemptFinishedUnsafe(fiber.context, job, queue, outcome, ms)))

/** {@link attemptFinished}, applied at once in `context` (the running fiber's), for the WorkerPool's hot path. */
export const attemptFinishedUnsafe = (context: Context.Context<never>, job: string, queue: string, outcome: string, ms: number): void => {
  executionSeries(`${job}\u0000${queue}\u0000${outcome}`).updateUnsafe(1, context)
  durations.updateUnsafe(ms, context)
}

/** A Reaper recovered `n` expired leases. */
export const leasesRecovered = (n: number): Effect.Effect<void> => (n > 0 ? Metric.update(leaseRecoveries, n) : Effect.void)

const restartSeries = memo((actor) => Metric.counter("roster_actor_restarts_total", { ...actorRestartsOptions, attributes: { actor } }))

/** supervise() restarted the actor `actor` after a crash. */
export const actorRestarted = (actor: string): Effect.Effect<void> => Metric.update(restartSeries(actor), 1)

/** The LogSink dropped `n` handler log lines. */
export const logLinesDropped = (n: number): Effect.Effect<void> => Metric.update(droppedLogLines, n)

/** The process guard caught a stray error. */
export const strayError = (kind: "rejection" | "exception"): Effect.Effect<void> => Metric.update(Metric.withAttributes(strayErrors, { kind }), 1)

/** The queue gauges of one queue, read from the store at scrape time. */
export const queueObserved = (queue: string, stats: { readonly queued: number; readonly running: number; readonly oldestDueAgeMs: number }): Effect.Effect<void> =>
  Effect.all([
    Metric.update(Metric.withAttributes(queueDepth, { queue, state: "queued" }), stats.queued),
    Metric.update(Metric.withAttributes(queueDepth, { queue, state: "running" }), stats.running),
    Metric.update(Metric.withAttributes(oldestDueAge, { queue }), stats.oldestDueAgeMs)
  ], { discard: true })

/** Exposes the unlabelled counters at 0, so rate() works before the first event. */
export const exposeCounters: Effect.Effect<void> = Effect.andThen(Metric.update(leaseRecoveries, 0), Metric.update(droppedLogLines, 0))

// Long-running: a duration would measure the process's life, not an operation.
const untimed: ReadonlySet<string> = new Set(["watchChanges"])

const storeSeries = memo((key) => {
  const [operation, outcome] = key.split("\u0000") as [string, string]
  return Metric.counter("roster_store_operations_total", { ...storeOperationsOptions, attributes: { operation, outcome } })
})
const storeDurationSeries = memo((operation) => Metric.histogram("roster_store_operation_duration_ms", { ...storeDurationsOptions, attributes: { operation } }))

/** Times and counts the effects of one operation: its series are looked up once, and updated in place as each ends. */
const timer = (operation: string) => {
  const ok = storeSeries(`${operation}\u0000ok`)
  const failed = storeSeries(`${operation}\u0000error`)
  const duration = storeDurationSeries(operation)
  return <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.withFiber((fiber) => {
      const clock = fiber.getRef(Clock.Clock)
      const start = clock.currentTimeMillisUnsafe()
      return Effect.onExit(effect, (exit) => {
        ;(Exit.isSuccess(exit) ? ok : failed).updateUnsafe(1, fiber.context)
        duration.updateUnsafe(clock.currentTimeMillisUnsafe() - start, fiber.context)
        return Effect.void
      })
    })
}

/** The Store with every operation counted (by outcome) and timed; the operations themselves are unchanged. */
export const instrumentStore = (store: Store["Service"]): Store["Service"] => {
  const wrapped: Record<string, unknown> = {}
  for (const [operation, op] of Object.entries(store)) {
    if (untimed.has(operation)) {
      wrapped[operation] = op
      continue
    }
    const timed = timer(operation)
    wrapped[operation] = Effect.isEffect(op)
      ? timed(op as Effect.Effect<unknown, unknown>)
      : typeof op === "function"
      ? (...args: Array<unknown>) => {
        const r = (op as (...a: Array<unknown>) => unknown)(...args)
        return Effect.isEffect(r) ? timed(r) : r
      }
      : op
  }
  return wrapped as Store["Service"]
}

/** A Store Layer whose Store is {@link instrumentStore}d; every other service it provides is left as it is. */
export const layerInstrumented = <A, E, R>(layer: Layer.Layer<A | Store, E, R>): Layer.Layer<A | Store, E, R> =>
  Layer.flatMap(layer, (context) => Layer.succeedContext(Context.add(context, Store, instrumentStore(Context.get(context, Store)))))
