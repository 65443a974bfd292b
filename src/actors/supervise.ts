/**
 * The one supervision rule every actor shares: run the actor's loop; if it dies or
 * fails, log the cause, count the restart and run it again after a backoff that grows
 * from 100 ms to 10 s. An interrupt is not a crash: it stops the actor. The loop
 * body is annotated with the actor's name so every log line says who wrote it.
 */
import { Cause, Effect, Exit, Metric } from "effect"
import { actorRestarts } from "./Metrics.ts"

/** Options of {@link supervise}. */
export interface SuperviseOptions {
  /** Called after each crash with the restart count (used by tests and metrics). */
  readonly onRestart?: (restarts: number, cause: Cause.Cause<unknown>) => void
  readonly initialBackoffMs?: number
  readonly maxBackoffMs?: number
}

/** Runs `loop` forever under supervision; returns when the loop returns normally. */
export const supervise = <E, R>(name: string, loop: Effect.Effect<void, E, R>, options: SuperviseOptions = {}): Effect.Effect<void, never, R> =>
  Effect.gen(function*() {
    let restarts = 0
    const initial = options.initialBackoffMs ?? 100
    const max = options.maxBackoffMs ?? 10_000
    const counter = Metric.withAttributes(actorRestarts, { actor: name })
    while (true) {
      const exit = yield* Effect.exit(loop)
      if (Exit.isSuccess(exit)) return
      if (Cause.hasInterruptsOnly(exit.cause)) return yield* Effect.interrupt
      restarts++
      options.onRestart?.(restarts, exit.cause)
      yield* Metric.update(counter, 1)
      const backoff = Math.min(max, initial * Math.pow(2, restarts - 1))
      yield* Effect.logError(`actor ${name} crashed (restart ${restarts}, next in ${backoff} ms)`, exit.cause)
      yield* Effect.sleep(backoff)
    }
  }).pipe(Effect.annotateLogs("actor", name))
