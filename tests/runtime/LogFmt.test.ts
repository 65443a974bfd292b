/**
 * The worker's stderr formatter must print exactly what Effect's Logger.formatLogFmt
 * prints: both loggers see the same log calls and their lines are compared.
 */
import { describe, expect, test } from "bun:test"
import { Cause, Effect, Logger } from "effect"
import { formatLogFmt } from "../../src/runtime/LogFmt.ts"

const linesOf = (program: Effect.Effect<void>) => {
  const ours: Array<string> = []
  const effects: Array<string> = []
  const both = Logger.layer([
    Logger.map(formatLogFmt, (line) => void ours.push(line)),
    Logger.map(Logger.formatLogFmt, (line) => void effects.push(line))
  ])
  Effect.runSync(Effect.provide(program, both))
  return { ours, effects }
}

describe("LogFmt", () => {
  test("prints the same lines as Logger.formatLogFmt", () => {
    const { ours, effects } = linesOf(Effect.gen(function*() {
      yield* Effect.log("plain")
      yield* Effect.log("with spaces and \"quotes\" and a=b")
      yield* Effect.log("")
      yield* Effect.log("tab\there", "second message", 42, { a: 1, b: [1, "x y"] }, null, undefined)
      yield* Effect.logWarning("line one\nline two\\ and a backslash")
      yield* Effect.logError("it broke", Cause.fail(new Error("boom")))
      yield* Effect.log("unicode ünïcødé\u00a0nbsp")
      yield* Effect.log("annotated").pipe(
        Effect.annotateLogs({ executionId: "0190-abc", job: "demo/noop", attempt: 1, "a key=with\"odd": "v v", obj: { n: [1, 2] } })
      )
      yield* Effect.log("in spans").pipe(Effect.withLogSpan("outer span"), Effect.withLogSpan("b=\"c\""))
      yield* Effect.log("again").pipe(Effect.annotateLogs("k", "v"))
    }).pipe(Effect.annotateLogs("actor", "Test")))
    expect(ours.length).toBe(10)
    expect(ours).toEqual(effects)
  })
})
