/**
 * Where Roster's own log lines go. The CLI writes logfmt lines to stderr, so stdout
 * carries only command output; an embedding app chooses with the `logger` option of
 * `Roster.layer` / `Roster.open`: a minimum level, and stderr, stdout or off. Handler
 * logs are persisted with their execution whatever is chosen here (the LogSink
 * captures them separately).
 */
import { Effect, Layer, Logger, References } from "effect"
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
 * A logfmt logger writing to a stream in batches every 20 ms: a busy worker logs a line
 * per job, and one write per batch keeps that off the hot path (flushed when its scope closes).
 */
export const streamLogger = (stream: NodeJS.WriteStream) =>
  Logger.batched(formatLogFmt, {
    window: "20 millis",
    flush: (lines) => Effect.sync(() => void stream.write(lines.join("\n") + "\n"))
  })

/** The CLI's logger: logfmt on stderr. */
export const stderrLogger = streamLogger(process.stderr)

/** A Layer setting Roster's loggers and minimum level as the options ask. */
export const layer = (options: LoggerOptions = {}): Layer.Layer<never> => {
  const output = options.output ?? "stderr"
  const loggers = Logger.layer(output === "off" ? [] : [streamLogger(output === "stdout" ? process.stdout : process.stderr)])
  return Layer.merge(loggers, Layer.succeed(References.MinimumLogLevel, options.level ?? "Info"))
}
