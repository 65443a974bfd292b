/**
 * Durable steps of one attempt: `ctx.step(name, effect)` returns a stored result when
 * an earlier attempt of the same execution completed that step, and otherwise runs
 * the effect and persists its encoded result before returning it. Stored steps are
 * loaded lazily, on the first `ctx.step` of an attempt, so Jobs without steps pay
 * nothing. A name used twice in one attempt is a defect.
 *
 * What it cannot promise: a side effect that completed after the step's effect began
 * but before its result was stored runs again on retry; hand `ctx.stepKey(name)` to
 * the provider as its idempotency key.
 */
import { Clock, type Context, Effect, Schema } from "effect"
import type { JobContext } from "../jobs/Job.ts"
import { makeOrchestration, type RunHooks } from "./Orchestration.ts"
import type { Execution, Step } from "../store/Execution.ts"
import type { Store } from "../store/Store.ts"

/** What a run's context needs from the WorkerPool beyond the store, the execution and its context. */
export type ContextHooks = Omit<RunHooks, "store" | "execution" | "steps" | "claimName" | "save" | "remember">

/**
 * Builds the handler context of one attempt; `context` is the execution's own (its log
 * annotations and capture logger), which `ctx.log` writes through. Its plain fields are
 * set at once; its functions (steps, logs, orchestration) are built on the first read
 * of any of them, as most handlers read none: a dozen closures, a Set and an Effect per
 * run otherwise, about 1 KB a job (bench/RESULTS.md, twenty-third pass). A read gives the
 * same function each time, so `const { step } = ctx` works as before.
 */
export const makeContext = (
  store: Store["Service"],
  execution: Execution,
  context: Context.Context<never>,
  hooks: () => ContextHooks
): JobContext => new RunContext(store, execution, context, hooks)

type Tools = Pick<JobContext, "step" | "stepKey" | "log" | "enqueue" | "awaitChildren" | "sleep" | "waitForSignal">

class RunContext implements JobContext {
  readonly executionId: string
  readonly job: string
  readonly attempt: number
  readonly maxAttempts: number
  readonly scheduleId: string | null
  #tools: Tools | undefined
  readonly #build: () => Tools
  constructor(store: Store["Service"], execution: Execution, context: Context.Context<never>, hooks: () => ContextHooks) {
    this.executionId = execution.id
    this.job = execution.job
    this.attempt = execution.attempt
    this.maxAttempts = execution.maxAttempts
    this.scheduleId = execution.scheduleId
    this.#build = () => buildTools(store, execution, context, hooks())
  }
  get #all(): Tools {
    return (this.#tools ??= this.#build())
  }
  get step() {
    return this.#all.step
  }
  get stepKey() {
    return this.#all.stepKey
  }
  get log() {
    return this.#all.log
  }
  get enqueue() {
    return this.#all.enqueue
  }
  get awaitChildren() {
    return this.#all.awaitChildren
  }
  get sleep() {
    return this.#all.sleep
  }
  get waitForSignal() {
    return this.#all.waitForSignal
  }
}

const buildTools = (store: Store["Service"], execution: Execution, context: Context.Context<never>, hooks: ContextHooks): Tools => {
  const used = new Set<string>()
  let built: ReturnType<typeof makeOrchestration> | undefined
  const orchestration = () => (built ??= makeOrchestration({ ...hooks, store, execution, steps: load, claimName, save, remember }))
  let stored: Map<string, Step> | undefined
  const load = Effect.gen(function*() {
    if (!stored) stored = new Map((yield* Effect.orDie(store.stepsList(execution.id))).map((s) => [s.name, s]))
    return stored
  })
  /** Notes a step row the store already holds (it saved it with another write), for the rest of this run. */
  const remember = (name: string, output: string, createdAt: number) =>
    Effect.map(load, (steps) => void steps.set(name, { executionId: execution.id, name, output, attempt: execution.attempt, createdAt }))
  /** Saves a step's encoded output (a second save of one name keeps the first) and remembers it. */
  const save = (name: string, output: string, createdAt: number) =>
    Effect.andThen(
      Effect.orDie(store.stepsSave({ executionId: execution.id, name, output, attempt: execution.attempt, createdAt })),
      remember(name, output, createdAt)
    )
  const claimName = (name: string) =>
    used.has(name)
      ? Effect.die(new Error(`step "${name}" was used twice in one attempt of execution ${execution.id} (${execution.job}); step names must be unique per handler run`))
      : Effect.sync(() => void used.add(name))
  const step: JobContext["step"] = (name, effect, options) =>
    Effect.gen(function*() {
      yield* claimName(name)
      const codec = options?.schema ? Schema.toCodecJson(options.schema) : undefined
      const previous = (yield* load).get(name)
      if (previous) {
        const raw = JSON.parse(previous.output)
        return codec ? yield* Effect.orDie(Schema.decodeUnknownEffect(codec)(raw)) : raw
      }
      const value = yield* (Effect.isEffect(effect) ? effect : Effect.tryPromise({ try: effect as () => Promise<unknown>, catch: (e) => e }))
      const encoded = codec ? yield* Effect.orDie(Schema.encodeUnknownEffect(codec)(value)) : value
      const now = yield* Clock.currentTimeMillis
      const output = JSON.stringify(encoded === undefined ? null : encoded)
      yield* save(name, output, now)
      return value
    }) as Effect.Effect<any, any>
  return {
    step,
    stepKey: (name) => `${execution.id}:${name}`,
    log: (message, level = "Info") => Effect.runSyncWith(context)(Effect.logWithLevel(level)(message)),
    // Built on first use: most handlers never orchestrate.
    enqueue: ((...args) => orchestration().enqueue(...args)) as JobContext["enqueue"],
    awaitChildren: (name, ids) => orchestration().awaitChildren(name, ids),
    sleep: (name, duration) => orchestration().sleep(name, duration),
    waitForSignal: ((...args) => orchestration().waitForSignal(...args)) as JobContext["waitForSignal"]
  }
}
