/**
 * Failures are matched to their type, through the real worker on the TestClock: a
 * validation failure (Effect's SchemaError — failed, thrown, rejected, or wrapped by
 * Effect.try — a raw SchemaIssue, or an enqueue refused inside the handler) is
 * permanent at attempt 1 unless the Job's own `retryable` returns true for it; a thrown
 * PermanentFailure is permanent too; other failures and defects are still retried.
 */
import { describe, expect, test } from "bun:test"
import { Effect, Schema, SchemaParser } from "effect"
import * as Job from "../../src/jobs/Job.ts"
import { PermanentFailure } from "../../src/jobs/errors.ts"
import * as RetryPolicy from "../../src/jobs/RetryPolicy.ts"
import { Client } from "../../src/runtime/Client.ts"
import * as Worker from "../../src/runtime/Worker.ts"
import { Store } from "../../src/store/Store.ts"
import { eventually, runOnTestClock, testSettings } from "../support/runtime.ts"

const stateOf = (id: string) => Effect.map(Store.use((s) => s.executionsGet(id)), (e) => e!)

const Input = Schema.Struct({ email: Schema.String })
const notInput = { email: 42 }
const retry = RetryPolicy.fixed({ attempts: 3, delay: 1_000 })

const target = Job.make({ id: "t/target", payload: Schema.Struct({ n: Schema.Number }), handler: () => Effect.void })

/** What each kind of handler does with an input that does not decode. */
const kinds = {
  "fails with SchemaError (decodeUnknownEffect)": () => Schema.decodeUnknownEffect(Input)(notInput),
  "throws SchemaError (decodeUnknownSync in Effect.sync)": () => Effect.sync(() => Schema.decodeUnknownSync(Input)(notInput)),
  "throws SchemaError inside Effect.try without catch (UnknownError)": () => Effect.try(() => Schema.decodeUnknownSync(Input)(notInput)),
  "fails with a raw SchemaIssue (SchemaParser)": () => SchemaParser.decodeUnknownEffect(Input)(notInput),
  "enqueues a child with an invalid payload (InvalidPayload)": () => Client.use((c) => c.enqueue(target, { n: "x" } as never))
} as const
type Kind = keyof typeof kinds
const run = (kind: string) => kinds[kind as Kind]() as Effect.Effect<unknown, unknown, Client>

const validating = Job.make({
  id: "t/validating",
  payload: Schema.Struct({ kind: Schema.String }),
  retry,
  handler: ({ kind }) => run(kind)
})

const asyncThrows = Job.make({
  id: "t/async-throws",
  payload: Schema.Struct({}),
  retry,
  handler: async () => Schema.decodeUnknownSync(Input)(notInput)
})

const asyncRejects = Job.make({
  id: "t/async-rejects",
  payload: Schema.Struct({}),
  retry,
  handler: () => Schema.decodeUnknownPromise(Input)(notInput)
})

const optsIn = Job.make({
  id: "t/opts-in",
  payload: Schema.Struct({ kind: Schema.String }),
  retry,
  // An upstream's answer that does not decode may be fixed by the upstream: retry it.
  retryable: (e) => Schema.isSchemaError(e),
  handler: ({ kind }) => run(kind)
})

const rejectsAll = Job.make({ id: "t/rejects-all", payload: Schema.Struct({}), retry, retryable: () => false, handler: () => kinds["fails with SchemaError (decodeUnknownEffect)"]() })

const predicateThrows = Job.make({
  id: "t/predicate-throws",
  payload: Schema.Struct({}),
  retry,
  retryable: () => {
    throw new Error("bad predicate")
  },
  handler: () => kinds["fails with SchemaError (decodeUnknownEffect)"]()
})

const thrownPermanent = Job.make({
  id: "t/thrown-permanent",
  payload: Schema.Struct({}),
  retry,
  handler: () => Effect.sync(() => {
    throw new PermanentFailure({ message: "account closed" })
  })
})

const plain = Job.make({ id: "t/plain", payload: Schema.Struct({}), retry, handler: () => Effect.fail({ _tag: "Upstream", message: "503" }) })

const badResult = Job.make({
  id: "t/bad-result",
  payload: Schema.Struct({}),
  result: Schema.Struct({ total: Schema.Number }),
  retry,
  handler: () => Effect.succeed({ total: "many" } as never)
})

const all = [target, validating, asyncThrows, asyncRejects, optsIn, rejectsAll, predicateThrows, thrownPermanent, plain, badResult]

/** Runs one execution of `job` to its first outcome: failed, or queued again for a retry. */
const firstOutcome = (job: Job.Job<any, any, any, any>, payload: unknown) =>
  runOnTestClock(all, Effect.gen(function*() {
    yield* Worker.start({ settings: testSettings })
    const { id } = yield* Client.use((c) => c.enqueue(job, payload as never))
    yield* eventually(Effect.map(stateOf(id), (e) => e.state === "failed" || (e.attempt === 1 && e.state === "queued")), `first outcome of ${job.id}`)
    const e = yield* stateOf(id)
    return { state: e.state, attempt: e.attempt, tag: e.error?.tag, retryable: e.error?.retryable, message: e.error?.message }
  }))

describe("validation failures inside a handler are permanent by default", () => {
  for (const [kind, tag] of [
    ["fails with SchemaError (decodeUnknownEffect)", "SchemaError"],
    ["throws SchemaError (decodeUnknownSync in Effect.sync)", "SchemaError"],
    ["throws SchemaError inside Effect.try without catch (UnknownError)", "SchemaError"],
    ["fails with a raw SchemaIssue (SchemaParser)", "SchemaError"],
    ["enqueues a child with an invalid payload (InvalidPayload)", "InvalidPayload"]
  ] as const) {
    test(`a handler that ${kind} fails at attempt 1, not retried`, async () => {
      const outcome = await firstOutcome(validating, { kind })
      expect(outcome).toMatchObject({ state: "failed", attempt: 1, tag, retryable: false })
      if (tag === "SchemaError") expect(outcome.message).toMatch(/^Expected string\n\s+at \["email"\]$/)
    })
  }

  test("a Promise handler whose decodeUnknownSync throws, or whose decodeUnknownPromise rejects, fails at attempt 1", async () => {
    expect(await firstOutcome(asyncThrows, {})).toMatchObject({ state: "failed", attempt: 1, tag: "SchemaError", retryable: false })
    expect(await firstOutcome(asyncRejects, {})).toMatchObject({ state: "failed", attempt: 1, tag: "SchemaError", retryable: false })
  })
})

describe("a Job's own retryable decides validation failures too", () => {
  test("returning true for a SchemaError makes it retryable again, whether failed or thrown", async () => {
    for (const kind of ["fails with SchemaError (decodeUnknownEffect)", "throws SchemaError (decodeUnknownSync in Effect.sync)"] as const) {
      expect(await firstOutcome(optsIn, { kind })).toMatchObject({ state: "queued", attempt: 1, tag: "SchemaError", retryable: true })
    }
    // Its predicate says false for an InvalidPayload: permanent.
    expect(await firstOutcome(optsIn, { kind: "enqueues a child with an invalid payload (InvalidPayload)" })).toMatchObject({ state: "failed", retryable: false })
  })

  test("a predicate that returns false, or throws, leaves a SchemaError permanent", async () => {
    expect(await firstOutcome(rejectsAll, {})).toMatchObject({ state: "failed", attempt: 1, tag: "SchemaError", retryable: false })
    expect(await firstOutcome(predicateThrows, {})).toMatchObject({ state: "failed", attempt: 1, tag: "SchemaError", retryable: false })
  })
})

describe("other failures keep their verdict", () => {
  test("a PermanentFailure thrown as a defect is permanent", async () => {
    expect(await firstOutcome(thrownPermanent, {})).toMatchObject({ state: "failed", attempt: 1, tag: "PermanentFailure", message: "account closed", retryable: false })
  })

  test("a result that does not match the Job's result Schema is an InvalidResult, permanent", async () => {
    const outcome = await firstOutcome(badResult, {})
    expect(outcome).toMatchObject({ state: "failed", attempt: 1, tag: "InvalidResult", retryable: false })
    expect(outcome.message).toStartWith("result does not match t/bad-result's result schema")
  })

  test("an ordinary typed failure is still retried", async () => {
    expect(await firstOutcome(plain, {})).toMatchObject({ state: "queued", attempt: 1, tag: "Upstream", retryable: true })
  })
})
