/**
 * The orchestration half of a handler's context (DESIGN §7): `ctx.enqueue`,
 * `ctx.awaitChildren`, `ctx.sleep` and `ctx.waitForSignal`, built on durable steps.
 * Each is a step named by the handler, so a re-run returns what the first run recorded;
 * a wait that is not over yet parks the execution through `park`, which ends this run
 * at once (the WorkerPool writes the `park` outcome: waiting, no slot, no lease, no
 * attempt charged) and never returns.
 */
import { Clock, Duration, Effect, Option, Schema } from "effect"
import type { Job, JobContext } from "../jobs/Job.ts"
import { jsonCodecOf } from "../jobs/JsonCodec.ts"
import { InvalidEnqueueOption, PermanentFailure } from "../jobs/errors.ts"
import { maxTime } from "../jobs/TimeRange.ts"
import type { ChildOutcome, Wait } from "../jobs/Wait.ts"
import { isRefusal, prepareRow } from "../runtime/Enqueue.ts"
import type { Execution, Step } from "../store/Execution.ts"
import type { Store } from "../store/Store.ts"
import { traceContextOf } from "./ExecutionSpan.ts"

/** What the orchestration functions need from the run they belong to. */
export interface RunHooks {
  readonly store: Store["Service"]
  readonly execution: Execution
  /** The run's stored steps (loaded once) and the names this run used. */
  readonly steps: Effect.Effect<Map<string, Step>>
  readonly claimName: (name: string) => Effect.Effect<void>
  /** Saves a step of this run (Steps.ts), and notes one the store saved with another write. */
  readonly save: (name: string, output: string, createdAt: number) => Effect.Effect<void>
  readonly remember: (name: string, output: string, createdAt: number) => Effect.Effect<void>
  /** Ends this run as parked with `wait`, due at `runAt`; never returns. */
  readonly park: (wait: Wait, runAt: number) => Effect.Effect<never>
  /** Tells this process's Dispatchers that new work on `queue` is due at `at`. */
  readonly wake: (queue: string, at: number) => void
  /** The result Schema of a Job this worker knows, to decode a child's result. */
  readonly resultSchemaOf: (job: string) => Job["result"]
  readonly maxPayloadBytes: number
}

const ended = new Set(["succeeded", "failed", "cancelled"])

/** The end of a wait of `duration` from `now`: whole ms, never before now, never past the latest storable time. */
const untilAfter = (now: number, duration: Duration.Input): number =>
  Math.min(maxTime, now + Math.max(0, Math.ceil(Duration.toMillis(Duration.fromInputUnsafe(duration)))))

/** The orchestration functions of one run's context. */
export const makeOrchestration = (h: RunHooks): Pick<JobContext, "enqueue" | "awaitChildren" | "sleep" | "waitForSignal"> => {
  const { store, execution, save, remember } = h
  const stored = (name: string) => Effect.map(h.steps, (s) => s.get(name))

  /** Every child of this execution, newest first, paging through lists of 10,000. */
  const children = Effect.gen(function*() {
    const all: Array<Execution> = []
    let before: string | undefined
    while (true) {
      const page = yield* Effect.orDie(store.executionsList({ parentId: execution.id, limit: 10_000, before }))
      all.push(...page)
      if (page.length < 10_000) return all
      before = page[page.length - 1]!.id
    }
  })

  const decodeResult = (job: string, raw: unknown): unknown => {
    const schema = h.resultSchemaOf(job)
    if (schema === undefined) return raw
    const decoded = jsonCodecOf(schema).decode(raw)
    return decoded._tag === "Success" ? decoded.value : raw
  }
  const decodeOutcomes = (raw: ReadonlyArray<ChildOutcome>): ReadonlyArray<ChildOutcome> =>
    raw.map((o) => (o.state === "succeeded" ? { ...o, result: decodeResult(o.job, o.result) } : o))

  return {
    enqueue: (name, job, payload, options = {}) =>
      Effect.gen(function*() {
        yield* h.claimName(name)
        const previous = yield* stored(name)
        if (previous) return JSON.parse(previous.output) as string
        if (options.dedupe === "active" || options.dedupe === "replace") {
          return yield* Effect.fail(new InvalidEnqueueOption({
            job: job.id,
            option: "dedupe",
            message: `dedupe "${options.dedupe}" for the child ${job.id} of ${execution.id}: a child is already enqueued once per step name; use an idempotency key (mode forever) to share one execution`
          }))
        }
        const now = yield* Clock.currentTimeMillis
        const context = yield* Effect.context<never>()
        const row = prepareRow(job, payload, options, now, h.maxPayloadBytes, traceContextOf(context))
        if (isRefusal(row)) return yield* Effect.fail(row)
        const r = yield* Effect.orDie(store.executionsInsertChild({ parentId: execution.id, step: name, attempt: execution.attempt, row }))
        yield* remember(name, JSON.stringify(r.id), now)
        if (r.inserted) h.wake(row.queue, row.runAt)
        return r.id
      }),

    awaitChildren: (name, ids) =>
      Effect.gen(function*() {
        yield* h.claimName(name)
        const previous = yield* stored(name)
        if (previous) return decodeOutcomes(JSON.parse(previous.output) as ReadonlyArray<ChildOutcome>)
        const mine = new Map((yield* children).map((c) => [c.id, c] as const))
        const strangers = ids.filter((id) => !mine.has(id))
        if (strangers.length > 0) {
          return yield* Effect.die(new Error(`awaitChildren "${name}" of ${execution.id}: ${strangers.slice(0, 3).join(", ")}${strangers.length > 3 ? ", ..." : ""} ${strangers.length === 1 ? "is not a child" : "are not children"} of this execution (children come from ctx.enqueue)`))
        }
        if (!ids.every((id) => ended.has(mine.get(id)!.state))) return yield* h.park({ kind: "children", step: name, ids }, maxTime)
        const outcomes = ids.map((id): ChildOutcome => {
          const c = mine.get(id)!
          return c.state === "succeeded"
            ? { id, job: c.job, state: "succeeded", result: c.result, error: null }
            : { id, job: c.job, state: c.state as "failed" | "cancelled", result: null, error: c.error === null ? null : { tag: c.error.tag, message: c.error.message } }
        })
        yield* save(name, JSON.stringify(outcomes), yield* Clock.currentTimeMillis)
        return decodeOutcomes(outcomes)
      }),

    sleep: (name, duration) =>
      Effect.gen(function*() {
        yield* h.claimName(name)
        const now = yield* Clock.currentTimeMillis
        const previous = yield* stored(name)
        let until: number
        if (previous) until = (JSON.parse(previous.output) as { until: number }).until
        else {
          until = untilAfter(now, duration)
          yield* save(name, JSON.stringify({ until }), now)
        }
        if (now >= until) return
        return yield* h.park({ kind: "sleep", step: name, until }, until)
      }),

    waitForSignal: <A>(name: string, options: { readonly schema: Schema.Codec<A, any>; readonly timeout?: Duration.Input | undefined }) =>
      Effect.gen(function*() {
        yield* h.claimName(name)
        const decode = (text: string) =>
          Effect.mapError(
            Schema.decodeUnknownEffect(Schema.toCodecJson(options.schema))(JSON.parse(text)),
            (e) => new PermanentFailure({ message: `signal "${name}" to ${execution.id}: the payload does not match the wait's schema: ${e.message}` })
          )
        const timeoutStep = `roster:timeout:${name}`
        const deadlineStep = `roster:deadline:${name}`
        const got = yield* stored(name)
        if (got) return Option.some(yield* decode(got.output))
        if (yield* stored(timeoutStep)) return Option.none<A>()
        const now = yield* Clock.currentTimeMillis
        const previous = yield* stored(deadlineStep)
        let until: number | null
        if (previous) until = (JSON.parse(previous.output) as { until: number | null }).until
        else {
          until = options.timeout === undefined ? null : untilAfter(now, options.timeout)
          yield* save(deadlineStep, JSON.stringify({ until }), now)
        }
        const taken = yield* Effect.orDie(store.signalsTake({ id: execution.id, name, step: name, attempt: execution.attempt, now }))
        if (taken !== null) {
          yield* remember(name, taken, now)
          return Option.some(yield* decode(taken))
        }
        if (until !== null && now >= until) {
          yield* save(timeoutStep, "true", now)
          return Option.none<A>()
        }
        return yield* h.park({ kind: "signal", step: name, signal: name, until }, until ?? maxTime)
      })
  }
}
