/**
 * Cross-process wake-ups on PostgreSQL: LISTEN on `roster_wake` over a connection of
 * its own and turn each notification for this schema into a StoreChange (queue and
 * earliest due time), or, for an outcome notice, into an `outcome` change (for waiters).
 * Notifications this store sent itself are skipped: its Recorder has already woken this
 * process's Dispatchers and waiters.
 *
 * States: connecting → listening → (connection lost) backing off → connecting. A lost
 * connection (server restart, failover, network) is logged once per outage and retried
 * with a backoff growing from 100 ms to 10 s, reset once listening again. Whatever was
 * sent while nobody listened is lost with the connection, so every (re)connect reports
 * one "something may have changed" to make the Dispatchers look; polling covers the
 * gap before that.
 */
import type { PgClient } from "@effect/sql-pg"
import { Cause, Clock, Effect, Queue } from "effect"
import type { StoreChange, StoreError } from "../Store.ts"
import { type OutcomePayload, wakeChannel, type WakePayload } from "./ExecutionInsert.ts"
import { toStoreError } from "./PgErrors.ts"

/** Listens until interrupted; never fails (connection losses are retried here). */
export const watchWakeups = (
  client: PgClient.PgClient,
  options: { readonly origin: string; readonly onChange: (change: StoreChange) => void }
): Effect.Effect<void, StoreError> =>
  Effect.gen(function*() {
    let failures = 0
    const listenOnce = Effect.scoped(Effect.gen(function*() {
      const [row] = yield* client<{ schema: string | null }>`SELECT current_schema() AS schema`
      const schema = row?.schema ?? null
      const notifications = yield* client.listen(wakeChannel)
      if (failures > 0) yield* Effect.logInfo(`LISTEN ${wakeChannel} restored after ${failures} failed attempt(s)`)
      failures = 0
      options.onChange({ queue: null, dueAt: yield* Clock.currentTimeMillis })
      while (true) {
        const n = yield* Queue.take(notifications)
        const wake = parse(n.payload)
        if (wake === null) {
          options.onChange({ queue: null, dueAt: yield* Clock.currentTimeMillis })
        } else if (wake.s === schema && (wake.o === "" || wake.o !== options.origin)) {
          options.onChange("e" in wake ? { queue: null, dueAt: yield* Clock.currentTimeMillis, outcome: true } : { queue: wake.q, dueAt: wake.at })
        }
      }
    }))
    while (true) {
      const exit = yield* Effect.exit(listenOnce)
      if (exit._tag === "Failure" && Cause.hasInterruptsOnly(exit.cause)) return yield* Effect.interrupt
      failures++
      const backoff = Math.min(10_000, 100 * 2 ** (failures - 1))
      if (failures === 1) {
        const error = exit._tag === "Failure" ? Cause.findErrorOption(exit.cause) : undefined
        const reason = error?._tag === "Some" ? toStoreError("LISTEN", error.value).message : "LISTEN: the connection ended"
        yield* Effect.logWarning(`${reason}; wake-ups fall back to polling while reconnecting`)
      }
      yield* Effect.sleep(backoff)
    }
  }).pipe(Effect.annotateLogs("component", "PgWakeups"))

const parse = (payload: string): WakePayload | OutcomePayload | null => {
  try {
    const v = JSON.parse(payload) as Partial<WakePayload & { e: unknown }>
    if (v.e === 1) return { s: typeof v.s === "string" ? v.s : "", e: 1, o: typeof v.o === "string" ? v.o : "" }
    if (typeof v.q !== "string" || typeof v.at !== "number") return null
    return { s: typeof v.s === "string" ? v.s : "", q: v.q, at: v.at, o: typeof v.o === "string" ? v.o : "" }
  } catch {
    return null
  }
}
