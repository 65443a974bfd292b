/**
 * Writes in doubt: what a PostgreSQL store does about the claims and outcomes of its
 * worker that failed while the server went away, so that none of them leaves an
 * execution stuck. (SQLite never needs this: its writes do not lose their replies.)
 *
 * A worker heartbeats every lease it holds in the store, so a row leased to it that it
 * does not run would be extended for as long as the worker lives:
 * - a claim whose reply was lost may have committed: its rows are leased to this
 *   worker, which never received them. A claim that failed is remembered; its rows are
 *   released (back to queued, the attempt not charged), found by worker, queue and the
 *   claim's `started_at`, less the rows of a successful claim stamped the same
 *   millisecond. (A claim still in flight is not in doubt: only a failure makes it so.)
 * - an outcome whose write failed (the WorkerPool logs it and moves on) is kept and
 *   written again, fenced as always: applied if the lease is still this attempt's,
 *   dropped otherwise.
 *
 * Kept outcomes are written before the worker's next claim, heartbeat or outcome
 * batch; a failed claim's rows are released before that queue's next claim (within one
 * poll interval), so a lease nobody runs is not extended for long. Only failures that
 * mean "the server was unavailable" are kept: an outcome refused for any other reason
 * would fail again forever, and is dropped with the error as before.
 */
import { Effect } from "effect"
import type { SqlError } from "effect/sql/SqlError"
import type { Outcome, StoreError } from "../Store.ts"

/** A claim that was sent: who claimed, on which queue, at which `started_at`, and which rows are known to be ours. */
export interface ClaimMark {
  readonly workerId: string
  readonly queue: string
  readonly startedAt: number
  /** Rows of a successful claim by the same worker and queue at the same `started_at`: running, not in doubt. */
  readonly exclude: ReadonlyArray<string>
}

/** The writes a store must be able to make to settle what is in doubt. */
export interface InDoubtWrites {
  /** Applies outcomes, fenced (the store's own outcome batch). */
  readonly finish: (outcomes: ReadonlyArray<Outcome>) => Effect.Effect<unknown, SqlError | StoreError>
  /** Puts a claim's rows that are still running back in the queue, the attempt not charged. */
  readonly release: (claim: ClaimMark) => Effect.Effect<unknown, SqlError | StoreError>
}

/** Tracks claims and outcomes in doubt for one store. */
export const make = (writes: InDoubtWrites, isUnavailable: (e: unknown) => boolean) => {
  const outcomes = new Map<string, Outcome>()
  const claims = new Map<string, ClaimMark>()
  const lastClaim = new Map<string, { startedAt: number; ids: Set<string> }>()
  const claimKey = (m: Pick<ClaimMark, "workerId" | "queue" | "startedAt">) => `${m.workerId}\u0000${m.queue}\u0000${m.startedAt}`
  const outcomeKey = (o: Outcome) => `${o.id}\u0000${o.attempt}`

  const settleOutcomes = Effect.suspend(() => {
    if (outcomes.size === 0) return Effect.void
    const kept = [...outcomes.values()]
    return writes.finish(kept).pipe(
      Effect.catch((e) => (isUnavailable(e) ? Effect.fail(e) : Effect.logError(`dropping ${kept.length} outcome(s) that could not be written: ${e.message}`))),
      Effect.andThen(Effect.sync(() => kept.forEach((o) => outcomes.delete(outcomeKey(o)))))
    )
  })

  return {
    /** Writes the kept outcomes; fails (keeping them) while the server is unavailable. */
    settleOutcomes,
    /**
     * Releases the rows of this worker's failed claims on this queue. Only that queue's
     * Dispatcher may call it, before its next claim: a release running beside a claim
     * stamped the same millisecond (a retry of the same claim) would release that
     * claim's rows too.
     */
    settleClaims: (workerId: string, queue: string) =>
      Effect.suspend(() =>
        Effect.forEach(
          [...claims].filter(([, m]) => m.workerId === workerId && m.queue === queue),
          ([key, mark]) => Effect.andThen(writes.release(mark), Effect.sync(() => claims.delete(key))),
          { discard: true }
        )),
    /** A claim failed after it may have been sent: its rows, if it committed, are in doubt. */
    claimFailed: (m: Omit<ClaimMark, "exclude">): void => {
      const last = lastClaim.get(`${m.workerId}\u0000${m.queue}`)
      claims.set(claimKey(m), { ...m, exclude: last && last.startedAt === m.startedAt ? [...last.ids] : [] })
    },
    /** A claim's rows arrived: remembered, so a failed claim stamped the same millisecond does not release them. */
    claimed: (m: Omit<ClaimMark, "exclude">, ids: ReadonlyArray<string>): void => {
      const wq = `${m.workerId}\u0000${m.queue}`
      const last = lastClaim.get(wq)
      if (last && last.startedAt === m.startedAt) ids.forEach((id) => last.ids.add(id))
      else lastClaim.set(wq, { startedAt: m.startedAt, ids: new Set(ids) })
    },
    /** Keeps outcomes whose write failed because the server was unavailable, to be written again. */
    keep: (failed: ReadonlyArray<Outcome>): void => failed.forEach((o) => outcomes.set(outcomeKey(o), o))
  }
}
