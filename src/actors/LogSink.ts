/**
 * The LogSink persists what handlers log. Its capture logger is installed beside the
 * process's own loggers for every running execution (so each line also reaches the
 * worker's output); it keeps the lines annotated with an execution id and attempt and
 * offers them to a bounded mailbox without ever waiting. The sink gathers lines for a
 * short window (100 ms by default) and writes them in one transaction. When a burst
 * outruns the store the mailbox is full: the line is dropped, counted per attempt, and
 * the count is written with the next batch — the handler is never blocked.
 */
import { Cause, Effect, Logger, Queue, References } from "effect"
import type { LogDrops, LogLine } from "../store/Execution.ts"
import { Store } from "../store/Store.ts"
import * as Metrics from "./Metrics.ts"
import { supervise } from "./supervise.ts"

/** The LogSink's interface. */
export interface LogSink {
  /** The capture logger: keeps lines annotated with an executionId and attempt. */
  readonly logger: Logger.Logger<unknown, void>
  /** Writes everything still waiting (used at shutdown and by tests). */
  readonly flush: Effect.Effect<void>
}

const render = (message: unknown): string => {
  const parts = Array.isArray(message) ? message : [message]
  return parts.map((p) => {
    if (typeof p === "string") return p
    if (p instanceof Error) return p.stack ?? p.message
    try {
      return JSON.stringify(p) ?? String(p)
    } catch {
      return String(p)
    }
  }).join(" ")
}

/** Starts a LogSink in the current scope; `capacity` bounds the lines waiting to be written. */
export const make = Effect.fnUntraced(function*(options: { readonly capacity?: number; readonly flushMs?: number } = {}) {
  const store = yield* Store
  const capacity = options.capacity ?? 10_000
  const mailbox = yield* Queue.bounded<LogLine>(capacity)
  const drops = new Map<string, LogDrops>()
  const gathered: Array<LogLine> = []

  const write = (lines: ReadonlyArray<LogLine>) => Effect.gen(function*() {
    const pending = [...drops.values()]
    drops.clear()
    if (lines.length === 0 && pending.length === 0) return
    if (pending.length > 0) yield* Metrics.logLinesDropped(pending.reduce((n, d) => n + d.dropped, 0))
    yield* store.logsAppend({ lines, drops: pending }).pipe(
      Effect.catchTag("StoreError", (e) =>
        Effect.sync(() => {
          // The lines are lost; count them as dropped so the record stays honest.
          for (const l of lines) countDrop(l.executionId, l.attempt, 1)
          for (const d of pending) countDrop(d.executionId, d.attempt, d.dropped)
          process.stderr.write(`roster: could not persist ${lines.length} log line(s): ${e.message}\n`)
        }))
    )
  })

  const countDrop = (executionId: string, attempt: number, n: number) => {
    const key = `${executionId}#${attempt}`
    const d = drops.get(key)
    drops.set(key, { executionId, attempt, dropped: (d?.dropped ?? 0) + n })
  }

  const loop = Effect.gen(function*() {
    while (true) {
      // Taken lines wait in `gathered` (not in this fiber) so a flush at shutdown finds them.
      gathered.push(...(yield* Queue.takeAll(mailbox)))
      // Gather for a moment so a busy worker writes its logs in few transactions.
      if ((options.flushMs ?? 0) > 0) yield* Effect.sleep(options.flushMs!)
      yield* flush
    }
  })
  const flush = Effect.ignore(Effect.flatMap(Queue.clear(mailbox), (more) => write([...gathered.splice(0), ...more])))
  yield* Effect.forkScoped(supervise("LogSink", loop))
  yield* Effect.addFinalizer(() => flush)

  const sink: LogSink = {
    logger: Logger.make(({ message, logLevel, date, cause, fiber }) => {
      const all = fiber.getRef(References.CurrentLogAnnotations)
      const executionId = all.executionId
      const attempt = all.attempt
      // Only lines logged while an execution runs (the WorkerPool annotates them) are kept.
      if (typeof executionId !== "string" || typeof attempt !== "number") return
      let text = render(message)
      if (cause.reasons.length > 0) text += `\n${Cause.pretty(cause)}`
      const annotations = ownAnnotations(all)
      const line: LogLine = {
        executionId,
        attempt,
        at: date.getTime(),
        level: logLevel,
        message: text,
        annotations: Object.keys(annotations).length > 0 ? safeJson(annotations) : null
      }
      if (!Queue.offerUnsafe(mailbox, line)) countDrop(executionId, attempt, 1)
    }),
    flush
  }
  return sink
})

/** Annotations Roster adds itself are implied by the line's execution and attempt. */
const implied = new Set(["executionId", "job", "attempt", "actor", "queue", "worker"])
const ownAnnotations = (all: Readonly<Record<string, unknown>>): Record<string, unknown> => {
  const own: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(all)) if (!implied.has(k)) own[k] = v
  return own
}

const safeJson = (value: unknown): string | null => {
  try {
    return JSON.stringify(value)
  } catch {
    return null
  }
}
