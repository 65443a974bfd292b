/**
 * The demo app's Jobs. Scripts, benchmarks and the README quick start rely on these
 * four (DESIGN §5 "Black-box contract"): keep their ids and payloads stable.
 */
import { Effect, Schema } from "effect"
import { Job, RetryPolicy } from "../../../../src/index.ts"

/** Returns at once. */
export const noop = Job.make({
  id: "demo/noop",
  label: "No-op",
  payload: Schema.Struct({ n: Schema.Number }),
  result: Schema.Struct({ n: Schema.Number }),
  retry: RetryPolicy.fixed({ attempts: 3, delay: "100 millis" }),
  handler: ({ n }) => Effect.as(Effect.log(`noop ${n}`), { n })
})

/** Sleeps for `ms` milliseconds. */
export const sleep = Job.make({
  id: "demo/sleep",
  label: "Sleep",
  payload: Schema.Struct({ ms: Schema.Number }),
  retry: RetryPolicy.fixed({ attempts: 3, delay: "100 millis" }),
  handler: ({ ms }) => Effect.log(`sleeping ${ms} ms`).pipe(Effect.andThen(Effect.sleep(ms)), Effect.as({ sleptMs: ms }))
})

/** Fails transiently `failTimes` attempts, then succeeds. */
export const flaky = Job.make({
  id: "demo/flaky",
  label: "Flaky",
  payload: Schema.Struct({ failTimes: Schema.Number }),
  retry: RetryPolicy.exponential({ attempts: 10, initial: "100 millis", max: "1 second", jitter: false }),
  handler: ({ failTimes }, ctx) =>
    ctx.attempt <= failTimes
      ? Effect.log(`flaky attempt ${ctx.attempt}: failing`).pipe(
        Effect.andThen(Effect.fail({ _tag: "FlakyFailure", message: `transient failure ${ctx.attempt} of ${failTimes}` }))
      )
      : Effect.as(Effect.log(`flaky attempt ${ctx.attempt}: succeeding`), { attempts: ctx.attempt })
})

/** Always fails permanently. */
export const broken = Job.make({
  id: "demo/broken",
  label: "Broken",
  payload: Schema.Struct({}),
  handler: () => Effect.log("broken: giving up").pipe(Effect.andThen(Job.permanent("demo/broken always fails")))
})
