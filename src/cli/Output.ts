/**
 * How the CLI talks: JSON documents for `--json`, aligned tables for people, and
 * errors as one readable line on stderr. Exit codes: 0 ok, 1 failure, 2 usage.
 * Times print through `isoTime` (any stored number, never a throw) and JSON documents
 * through `documentJson` (indentation bounded, so a deeply nested value stays its size).
 */
import { Cause, Effect } from "effect"
import { documentJson } from "../jobs/JsonText.ts"
import { isoTimeOrNull } from "../jobs/TimeRange.ts"
import type { Execution } from "../store/Execution.ts"

/** A user-facing failure with an exit code. */
export class CliFailure extends Error {
  constructor(message: string, readonly exitCode: 1 | 2 = 1) {
    super(message)
  }
}

/** Prints one JSON document on stdout. */
export const printJson = (value: unknown) => Effect.sync(() => process.stdout.write(documentJson(value) + "\n"))

/** Prints a line on stdout. */
export const printLine = (line: string) => Effect.sync(() => process.stdout.write(line + "\n"))

/** ISO text of a stored time (null stays null); never throws, whatever the row holds. */
export const iso = isoTimeOrNull

/** The JSON shape of an execution in `executions list --json` (DESIGN §5). */
export const executionSummary = (e: Execution) => ({
  id: e.id,
  job: e.job,
  queue: e.queue,
  state: e.state,
  attempt: e.attempt,
  maxAttempts: e.maxAttempts,
  priority: e.priority,
  runAt: iso(e.runAt),
  createdAt: iso(e.createdAt),
  startedAt: iso(e.startedAt),
  finishedAt: iso(e.finishedAt),
  idempotencyKey: e.idempotencyKey,
  scheduleId: e.scheduleId,
  retryOf: e.retryOf,
  traceContext: e.traceContext,
  cancelRequested: e.cancelRequested,
  error: e.error
})

/** Renders rows as an aligned text table. */
export const table = (headers: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string>>): string => {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)))
  const line = (cells: ReadonlyArray<string>) => cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join("  ").trimEnd()
  return [line(headers), ...rows.map(line)].join("\n")
}

/** One line describing any failure: a tagged error's message, else the first line of the cause. */
export const describeCause = (cause: Cause.Cause<unknown>): string => {
  const failure = Cause.findErrorOption(cause)
  if (failure._tag === "Some") {
    const e = failure.value as { message?: unknown; _tag?: unknown }
    if (typeof e?.message === "string" && e.message.length > 0) return e.message
    return String(e?._tag ?? failure.value)
  }
  return Cause.pretty(cause)
}

/** The exit code for a failure cause. */
export const exitCodeOf = (cause: Cause.Cause<unknown>): number => {
  const failure = Cause.findErrorOption(cause)
  if (failure._tag === "Some" && failure.value instanceof CliFailure) return failure.value.exitCode
  return 1
}
