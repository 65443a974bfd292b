/**
 * How a process's actors are forked so that a store failure no restart can fix (a
 * corrupt database file, a schema from a newer Roster) stops the process instead of
 * restarting the actor forever: each actor runs under `supervise` with that failure
 * marked fatal, and the first fatal failure fails `broken`, which the `roster worker`,
 * `scheduler` and `dev` commands wait on to exit 1. A full disk or a lock timeout is
 * not fatal: it is retried under supervision.
 */
import { Cause, Deferred, Effect } from "effect"
import type { Fiber, Scope } from "effect"
import { supervise } from "../actors/supervise.ts"
import { isPermanentStoreFailure } from "../store/Store.ts"

/** Forks supervised actors into the current scope; `broken` fails with the first fatal failure. */
export interface Breaker {
  readonly run: <E, R>(name: string, loop: Effect.Effect<void, E, R>) => Effect.Effect<Fiber.Fiber<void>, never, R | Scope.Scope>
  /** Fails once an actor met a failure no restart can fix; never succeeds. */
  readonly broken: Effect.Effect<never, unknown>
}

/** A new Breaker. */
export const make: Effect.Effect<Breaker> = Effect.map(Deferred.make<never, unknown>(), (broken) => ({
  run: (name, loop) =>
    Effect.forkScoped(supervise(name, loop, { fatal: isPermanentStoreFailure }).pipe(
      Effect.catchCause((cause) => (Cause.hasInterruptsOnly(cause) ? Effect.interrupt : Effect.asVoid(Deferred.failCause(broken, cause))))
    )),
  broken: Deferred.await(broken)
}))

/**
 * For an embedded runtime (no process to exit): waits, in the current scope, for
 * `broken` and then logs at Fatal level that this part of Roster has stopped.
 */
export const reportWhenBroken = (what: string, broken: Effect.Effect<never, unknown>) =>
  Effect.asVoid(Effect.forkScoped(broken.pipe(
    Effect.catchCause((cause) =>
      Cause.hasInterruptsOnly(cause)
        ? Effect.void
        : Effect.logFatal(`Roster's ${what} has stopped for good: ${Cause.squash(cause)}; nothing more runs in this process until it is restarted`))
  )))
