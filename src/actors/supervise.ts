/**
 * The one supervision rule every actor shares: run the actor's loop; if it dies or
 * fails, log the cause, count the restart and run it again after a backoff that grows
 * from 100 ms to 10 s — and back to 100 ms once a run has stayed up for a healthy
 * period (default 60 s), so a rare crash weeks apart is not punished with the longest
 * wait. An interrupt is not a crash: it stops the actor. A failure the
 * owner marks `fatal` (a corrupt database: no restart can fix it) stops the actor too,
 * failing with that cause so the owner can stop the process. The loop body is
 * annotated with the actor's name so every log line says who wrote it.
 */
import { Cause, Clock, Effect, Exit } from "effect"
import * as Metrics from "./Metrics.ts"

/** Options of {@link supervise}. */
export interface SuperviseOptions {
  /** Called after each crash with the restart count (used by tests and metrics). */
  readonly onRestart?: (restarts: number, cause: Cause.Cause<unknown>) => void
  readonly initialBackoffMs?: number
  readonly maxBackoffMs?: number
  /** A run that stayed up this long before crashing starts the backoff afresh (default 60 s). */
  readonly healthyMs?: number
  /** A failure no restart can fix: the actor stops and fails with it instead. */
  readonly fatal?: (cause: Cause.Cause<unknown>) => boolean
}

/** A typed failure's message (one line, no stack); undefined for defects, which keep their stack. */
const failureMessage = (cause: Cause.Cause<unknown>): string | undefined => {
  if (Cause.hasDies(cause)) return undefined
  const failure = Cause.findErrorOption(cause)
  const message = failure._tag === "Some" ? (failure.value as { message?: unknown } | null)?.message : undefined
  return typeof message === "string" && message !== "" ? message : undefined
}

/** Runs `loop` forever under supervision; returns when the loop returns normally, fails only on a `fatal` failure. */
export const supervise = <E, R>(name: string, loop: Effect.Effect<void, E, R>, options: SuperviseOptions = {}): Effect.Effect<void, E, R> =>
  Effect.gen(function*() {
    let restarts = 0
    const initial = options.initialBackoffMs ?? 100
    const max = options.maxBackoffMs ?? 10_000
    const healthy = options.healthyMs ?? 60_000
    while (true) {
      const startedAt = yield* Clock.currentTimeMillis
      const exit = yield* Effect.exit(loop)
      if (Exit.isSuccess(exit)) return
      if (Cause.hasInterruptsOnly(exit.cause)) return yield* Effect.interrupt
      const message = failureMessage(exit.cause)
      if (options.fatal?.(exit.cause)) {
        yield* Effect.logError(`actor ${name} stopped: ${message ?? Cause.pretty(exit.cause)}`)
        return yield* Effect.failCause(exit.cause)
      }
      if ((yield* Clock.currentTimeMillis) - startedAt >= healthy) restarts = 0
      restarts++
      options.onRestart?.(restarts, exit.cause)
      yield* Metrics.actorRestarted(name)
      const backoff = Math.min(max, initial * Math.pow(2, restarts - 1))
      const crashed = `actor ${name} crashed (restart ${restarts}, next in ${backoff} ms)`
      // A typed failure (the store is full or locked) is one line; a defect keeps its stack.
      yield* (message === undefined ? Effect.logError(crashed, exit.cause) : Effect.logError(`${crashed}: ${message}`))
      yield* Effect.sleep(backoff)
    }
  }).pipe(Effect.annotateLogs("actor", name))
