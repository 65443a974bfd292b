/**
 * Keeps a worker process alive through errors that escape every handler: an unhandled
 * promise rejection or an exception thrown from a timer. Without a listener, Bun exits
 * the process (code 1) and every execution in flight stays `running` until its lease
 * expires, charged an attempt it did nothing to deserve. With the guard, the error is
 * logged (with the execution it came from when that is known, see actors/StrayErrors.ts)
 * and counted, and every other execution carries on. The CLI's long-running commands
 * install it for their lifetime; an app embedding Roster keeps its own process policy.
 */
import { Context, Effect } from "effect"
import * as Metrics from "../actors/Metrics.ts"
import { currentExecution } from "../actors/StrayErrors.ts"

const describe = (error: unknown): string => (error instanceof Error ? error.stack ?? `${error.name}: ${error.message}` : String(error))

/** Installs the guard in the current scope (removed when it closes). */
export const install = Effect.gen(function*() {
  const context = yield* Effect.context<never>()
  const report = (kind: "rejection" | "exception", error: unknown) => {
    const executionId = currentExecution()
    const where = executionId === undefined ? "its execution cannot be known" : `from execution ${executionId}`
    const log = Effect.logError(`${kind === "rejection" ? "unhandled promise rejection" : "uncaught exception"} (${where}); the worker carries on`, describe(error)).pipe(
      executionId === undefined ? (e) => e : Effect.annotateLogs("executionId", executionId),
      Effect.andThen(Metrics.strayError(kind))
    )
    Effect.runForkWith(context as Context.Context<never>)(log)
  }
  const onRejection = (reason: unknown) => report("rejection", reason)
  const onException = (error: unknown) => report("exception", error)
  yield* Effect.acquireRelease(
    Effect.sync(() => {
      process.on("unhandledRejection", onRejection)
      process.on("uncaughtException", onException)
    }),
    () =>
      Effect.sync(() => {
        process.off("unhandledRejection", onRejection)
        process.off("uncaughtException", onException)
      })
  )
})
