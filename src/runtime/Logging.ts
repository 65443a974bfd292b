/**
 * Where Roster's own log lines go. The CLI writes logfmt lines to stderr, so stdout
 * carries only command output; an embedding app chooses with the `logger` option of
 * `Roster.layer` / `Roster.open`: a minimum level, and stderr, stdout or off. Handler
 * logs are persisted with their execution whatever is chosen here (the LogSink
 * captures them separately).
 */
import { Effect, Fiber, Latch, Layer, Logger, References } from "effect"
import type { LogLevel } from "effect/LogLevel"
import { formatLogFmt } from "./LogFmt.ts"

/** The `logger` option of an embedded Roster. */
export interface LoggerOptions {
  /** Lines below this level are not written (default Info). */
  readonly level?: LogLevel | undefined
  /** Where lines go (default stderr); `off` writes none. */
  readonly output?: "stderr" | "stdout" | "off" | undefined
}

/**
 * A logfmt logger writing to a stream in batches: a busy worker logs a line per job,
 * and one write per 20 ms keeps that off the hot path (flushed when its scope closes).
 *
 * Not `Logger.batched`: that one wakes every window whether or not a line came, which
 * was half of an idle worker's CPU (bench/RESULTS.md, "An idle worker's CPU"). This one
 * sleeps on a latch until the first line of a batch arrives.
 */
export const streamLogger = (stream: NodeJS.WriteStream) =>
  Effect.gen(function*() {
    let lines: Array<string> = []
    const due = Latch.makeUnsafe(false)
    const flush = Effect.uninterruptible(Effect.sync(() => {
      if (lines.length === 0) return
      const out = lines
      lines = []
      stream.write(out.join("\n") + "\n")
    }))
    // Close before flushing: a line that arrives during the write opens it again.
    const batches = due.await.pipe(Effect.andThen(Effect.sleep("20 millis")), Effect.andThen(due.close), Effect.andThen(flush), Effect.forever)
    const fiber = yield* Effect.forkDetach(batches)
    yield* Effect.addFinalizer(() => Effect.andThen(Fiber.interrupt(fiber), flush))
    return Logger.make<unknown, void>((options) => {
      if (lines.push(formatLogFmt.log(options)) === 1) due.openUnsafe()
    })
  })

/** The CLI's logger: logfmt on stderr. */
export const stderrLogger = streamLogger(process.stderr)

/** A Layer setting Roster's loggers and minimum level as the options ask. */
export const layer = (options: LoggerOptions = {}): Layer.Layer<never> => {
  const output = options.output ?? "stderr"
  const loggers = Logger.layer(output === "off" ? [] : [streamLogger(output === "stdout" ? process.stdout : process.stderr)])
  return Layer.merge(loggers, Layer.succeed(References.MinimumLogLevel, options.level ?? "Info"))
}
