/**
 * Tracing from enqueue to run. An enqueue made inside a span stores that span's context
 * with the execution, as a W3C `traceparent` (`00-<trace id>-<span id>-<flags>`); the
 * worker that runs it — in this process or another — runs the handler in a span
 * `roster.execute <job>` whose parent is the stored context, so the run joins the
 * enqueue's trace. Both go through Effect's `Tracer`: whatever Tracer the process has
 * (`OtlpTracer.layer` from `effect/observability`, or a test tracer) records the span.
 *
 * Rules, plainly:
 * - Each attempt is its own span, every one a child of the enqueue's span.
 * - A run whose enqueue had no span (a Schedule fire, a bare CLI enqueue) starts its own
 *   trace (a root span), never a child of whatever span the worker itself runs under.
 * - The `sampled` flag travels with the context: an enqueue that was not sampled makes
 *   runs that are not sampled either.
 * - An enqueue under `Tracer.DisablePropagation` (or with tracing disabled) stores
 *   nothing; nor does a span whose ids are not W3C-shaped; a stored value that is not a
 *   valid traceparent is ignored (the run is a root span).
 * - With no Tracer installed (Effect's default, which exports nothing) no span is made:
 *   the worker's hot path then costs one reference read per execution.
 */
import { Context, Effect, References, Tracer } from "effect"
import type { Execution } from "../store/Execution.ts"

const traceparentPattern = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/
const traceIdPattern = /^[0-9a-f]{32}$/
const spanIdPattern = /^[0-9a-f]{16}$/
const invalidTraceId = "0".repeat(32)
const invalidSpanId = "0".repeat(16)

/** The W3C traceparent of a span; null when its ids are not W3C-shaped (32 and 16 hex digits, not all zero). */
export const traceparentOf = (span: Tracer.AnySpan): string | null => {
  const traceId = span.traceId.toLowerCase()
  const spanId = span.spanId.toLowerCase()
  if (!traceIdPattern.test(traceId) || !spanIdPattern.test(spanId) || traceId === invalidTraceId || spanId === invalidSpanId) return null
  return `00-${traceId}-${spanId}-${span.sampled ? "01" : "00"}`
}

/** The span a stored traceparent names, as an external parent; undefined for null or an invalid value. */
export const parentOf = (traceContext: string | null): Tracer.ExternalSpan | undefined => {
  if (traceContext === null) return undefined
  const m = traceparentPattern.exec(traceContext)
  if (m === null || m[1] === "ff" || m[2] === invalidTraceId || m[3] === invalidSpanId) return undefined
  return Tracer.externalSpan({ traceId: m[2]!, spanId: m[3]!, sampled: (parseInt(m[4]!, 16) & 1) === 1 })
}

/**
 * The trace context to store with an enqueue made in `context`: the traceparent of the
 * span a child span would get as parent (a span annotated with DisablePropagation is
 * skipped, as Effect does), or null outside any span. `Tracer.DisablePropagation` set
 * in the context stores nothing, as it sends no `traceparent` header from HttpClient.
 */
export const traceContextOf = (context: Context.Context<never>): string | null => {
  if (Context.get(context, Tracer.DisablePropagation)) return null
  let span: Tracer.AnySpan | undefined = Context.getOrUndefined(context, Tracer.ParentSpan)
  while (span !== undefined && Context.get(span.annotations, Tracer.DisablePropagation)) {
    span = span._tag === "Span" && span.parent._tag === "Some" ? span.parent.value : undefined
  }
  return span === undefined ? null : traceparentOf(span)
}

/** The span name of an execution's run. */
export const spanName = (job: string): string => `roster.execute ${job}`

/** Whether runs in `context` are traced: a Tracer other than Effect's default, and tracing enabled. */
export const tracing = (context: Context.Context<never>): boolean =>
  Context.get(context, Tracer.Tracer) !== Tracer.nativeTracer && Context.get(context, References.TracerEnabled)

/**
 * Runs an execution's handler — `run` is called inside the span, so a handler that
 * throws or starts a Promise does so within it — in the span `roster.execute <job>`,
 * child of the enqueue's stored context. Attributes name the execution, Job, queue and
 * attempt (and follow OpenTelemetry's messaging conventions). The span ends with the
 * handler's exit: a failure, a timeout or an interrupt shows as such. The WorkerPool
 * calls it only when {@link tracing} is on.
 */
export const inSpan = <A, E, R>(execution: Execution, run: () => Effect.Effect<A, E, R>): Effect.Effect<A, E, R> => {
  const parent = parentOf(execution.traceContext)
  return Effect.withSpan(Effect.suspend(run), spanName(execution.job), {
      kind: "consumer",
      ...(parent === undefined ? { root: true } : { parent }),
      captureStackTrace: false,
      attributes: {
        "roster.execution.id": execution.id,
        "roster.job": execution.job,
        "roster.queue": execution.queue,
        "roster.attempt": execution.attempt,
        ...(execution.scheduleId === null ? {} : { "roster.schedule.id": execution.scheduleId }),
        "messaging.system": "roster",
        "messaging.operation.type": "process",
        "messaging.destination.name": execution.queue,
        "messaging.message.id": execution.id
      }
    })
}
