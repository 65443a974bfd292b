/**
 * One Dispatcher per served queue. It owns the queue's Semaphore (the worker's
 * concurrency for that queue): it waits for a free permit, takes every other free
 * permit up to the batch size, claims that many due executions of the Jobs this worker
 * knows, and hands each to the WorkerPool, which returns the permit as soon as the
 * handler has ended, so the next claim overlaps the commit of the last outcomes.
 *
 * What is unrecorded is bounded too: a second semaphore of `concurrency + batchSize`
 * tokens is held by each execution from its claim until its outcome is stored, so no
 * more than one claim batch beyond the running handlers waits only in memory (a crash
 * re-runs at most that many), however far the Recorder falls behind.
 *
 * States: claiming → (all permits used) waiting for a permit → claiming;
 *         claiming → (fewer due than permits) sleeping → claiming.
 * It sleeps until a wake-up (an in-process enqueue, a retry falling due, another
 * process's commit seen by the change watcher), the earliest due time it was told
 * of, or the poll interval — whichever comes first.
 *
 * A queue with limits across workers (global or per-key concurrency, rate limits; see
 * store/FlowRules.ts) claims through the limited claim. A slot freed by an outcome
 * wakes it (its own outcomes at once; other processes' through the change watcher), and
 * a claim held back by a rate limit sleeps until the limit allows the next start, plus
 * a small random spread so workers waiting on one window do not all claim at once.
 */
import { Clock, Deferred, Effect, Exit, Queue, Random } from "effect"
import * as DueWakeups from "./DueWakeups.ts"
import * as Permits from "./Permits.ts"
import type { QueueConfig } from "../jobs/QueueConfig.ts"
import { type ClaimLimits, hasLimits } from "../store/FlowRules.ts"
import type { Execution } from "../store/Execution.ts"
import type { StoreError } from "../store/Store.ts"
import { Store } from "../store/Store.ts"
import type { WakeBus } from "./WakeBus.ts"
import type { WorkerPool } from "./WorkerPool.ts"

/** Options of a Dispatcher. */
export interface DispatcherOptions {
  readonly queue: QueueConfig
  /** Ids of the Jobs on this queue this worker has handlers for. */
  readonly jobs: ReadonlyArray<string>
  readonly workerId: string
  readonly leaseMs: number
  readonly pollMs: number
  /** Most executions claimed in one statement. */
  readonly batchSize: number
  readonly pool: WorkerPool
  readonly bus: WakeBus
  /** The queue's and its Jobs' limits across workers; null or empty: the plain claim. */
  readonly limits?: ClaimLimits | null | undefined
}

/** The spread added to a rate limit's next start: up to a quarter of one start's share of the period, at most 25 ms. */
const spreadMs = (limits: ClaimLimits): number => {
  const rates = [limits.rateLimit, ...Object.values(limits.jobs).map((j) => j.rateLimit)].filter((r) => r !== null)
  const share = Math.min(...rates.map((r) => r!.periodMs / r!.limit))
  return Number.isFinite(share) ? Math.min(25, share / 4) : 0
}

/** The Dispatcher's loop, to be run under supervise(). Also returns a `wake` to poke it. */
export const make = Effect.fnUntraced(function*(options: DispatcherOptions) {
  const store = yield* Store
  const limits = hasLimits(options.limits) ? options.limits : null
  const permits = Permits.make(options.queue.concurrency)
  // Plain permits too: each is given back from the Recorder's commit by a plain call.
  const unrecorded = Permits.make(options.queue.concurrency + Math.max(1, options.batchSize))
  const clock = yield* Clock.Clock
  const mailbox = yield* Queue.unbounded<number>()
  // Coalesced: a Dispatcher under a backlog never reads its mailbox (DueWakeups.ts).
  const wakeups = DueWakeups.make((dueAt) => Queue.offerUnsafe(mailbox, dueAt), () => clock.currentTimeMillisUnsafe())
  const unsubscribe = options.bus.subscribe(options.queue.name, wakeups.wake)
  yield* Effect.addFinalizer(() => Effect.sync(unsubscribe))
  const maxBatch = Math.max(1, Math.min(options.batchSize, options.queue.concurrency))
  // Completed by the first claim that succeeds: the database is usable for this queue.
  const firstClaim = Deferred.makeUnsafe<void>()
  let nextDueAt = Infinity

  const sleep = Effect.gen(function*() {
    const start = yield* Clock.currentTimeMillis
    let now = start
    while (now < Math.min(start + options.pollMs, nextDueAt)) {
      const deadline = Math.min(start + options.pollMs, nextDueAt)
      const woke = yield* Queue.takeAll(mailbox).pipe(Effect.timeoutOption(deadline - now))
      now = yield* Clock.currentTimeMillis
      if (woke._tag === "None") break
      wakeups.taken()
      // Keep the later due times of the batch too: a due-now wake beside them must not drop them.
      let dueNow = false
      for (const dueAt of woke.value) {
        if (dueAt <= now) dueNow = true
        else if (dueAt < nextDueAt) nextDueAt = dueAt
      }
      if (dueNow || nextDueAt <= now) break
    }
    if (nextDueAt <= now) nextDueAt = Infinity
  })

  // A limited queue's slot frees when an outcome is stored: claim again at once.
  const recorded = limits === null
    ? () => unrecorded.release(1)
    : () => {
      unrecorded.release(1)
      wakeups.wake(clock.currentTimeMillisUnsafe())
    }

  const claimOnce = (limit: number, now: number): Effect.Effect<ReadonlyArray<Execution>, StoreError> => {
    const req = { queue: options.queue.name, jobs: options.jobs, workerId: options.workerId, limit, now, leaseMs: options.leaseMs }
    if (limits === null) return store.executionsClaim(req)
    return Effect.gen(function*() {
      // What this worker has finished but not yet stored runs no more: it holds no slot.
      const claimed = yield* store.executionsClaimLimited({ ...req, limits, ending: options.pool.recording() })
      if (claimed.retryAt !== null && claimed.executions.length < limit) {
        const spread = spreadMs(limits)
        const at = claimed.retryAt + (spread > 0 ? Math.floor((yield* Random.next) * spread) : 0)
        if (at < nextDueAt) nextDueAt = at
      }
      return claimed.executions
    })
  }

  // Each execution gives its permit back as soon as its handler ends.
  const releaseOne = () => permits.release(1)

  // The hand-off (WakeBus.Handoff): while this Dispatcher claims, a new row of its Jobs
  // can start in the transaction that inserts it, on a free permit taken here. Only for
  // a queue without limits across workers (a limited start is the limited claim's to decide),
  // on a store that can start a row in its insert (SQLite).
  let claiming = false
  if (limits === null && store.startsOnInsert) {
    const slotFree = Effect.sync(() => {
      if (!claiming || !permits.takeIfAvailable(1)) return null
      if (!unrecorded.takeIfAvailable(1)) return (permits.release(1), null)
      return {
        workerId: options.workerId,
        leaseMs: options.leaseMs,
        jobs: options.jobs,
        start: (execution: Execution) => options.pool.run(execution, releaseOne, recorded),
        cancel: Effect.sync(() => {
          releaseOne()
          unrecorded.release(1)
        })
      }
    })
    const unoffer = options.bus.offerHandoff(options.queue.name, { jobs: new Set(options.jobs), reserve: slotFree })
    yield* Effect.addFinalizer(() => Effect.sync(unoffer))
  }

  const loop = Effect.gen(function*() {
    while (true) {
      yield* permits.take(1)
      let taken = 1
      while (taken < maxBatch && permits.takeIfAvailable(1)) taken++
      yield* unrecorded.take(taken).pipe(Effect.onInterrupt(() => Effect.sync(() => permits.release(taken))))
      const giveBack = (n: number) =>
        Effect.sync(() => {
          permits.release(n)
          unrecorded.release(n)
        })
      // Claimed work must reach the pool even if we are interrupted mid-way (shutdown),
      // or it would sit leased to nobody until its lease expired.
      const claimed = yield* Effect.uninterruptible(Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const claimed = yield* claimOnce(taken, now).pipe(Effect.onError(() => giveBack(taken)))
        Deferred.doneUnsafe(firstClaim, Exit.void)
        claiming = true
        if (claimed.length < taken) yield* giveBack(taken - claimed.length)
        yield* options.pool.runEach(claimed, releaseOne, recorded)
        return claimed
      }))
      if (claimed.length < taken) yield* sleep
    }
  }).pipe(
    Effect.ensuring(Effect.sync(() => (claiming = false))),
    Effect.annotateLogs("queue", options.queue.name)
  )

  return {
    loop,
    wake: wakeups.wake,
    /** Waits for the first claim that succeeded. */
    ready: Deferred.await(firstClaim)
  }
})
