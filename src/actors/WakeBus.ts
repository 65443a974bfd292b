/**
 * In-process wake-ups: after the Recorder commits an enqueue (or a retry), it tells
 * the Dispatcher of that queue, at once, when the new work is due. Dispatchers
 * subscribe by queue name; a notification for a queue no Dispatcher serves is a no-op.
 * After it commits outcomes (and after the Client cancels a queued execution), it tells
 * whoever waits for those executions (`Client.waitFor`) to read them again.
 *
 * It also holds the hand-offs of idle in-process workers (docs/queues.md, "Hand-off"): a
 * Dispatcher of a queue without limits across workers offers to start new rows of its
 * Jobs at once, and the Recorder asks for a reservation before it commits an enqueue.
 *
 * Not a `PubSub`: each Dispatcher already has one mailbox (a `Queue`) that this bus
 * offers into synchronously from the Recorder's commit; a PubSub would add a second
 * subscription queue per Dispatcher and a fiber to forward between them.
 */
import { Effect } from "effect"
import type { Execution } from "../store/Execution.ts"

/** A free slot of an in-process worker, reserved for one new row (see {@link Handoff}). */
export interface HandoffSlot {
  readonly workerId: string
  readonly leaseMs: number
  /** The Jobs the worker runs on the queue (the start of the row waits for due rows of these). */
  readonly jobs: ReadonlyArray<string>
  /** Runs the started execution in the worker's pool (the slot's permits go with it); its handler starts at once. */
  readonly start: (execution: Execution) => Effect.Effect<void>
  /** Gives the slot back: the row was not started. */
  readonly cancel: Effect.Effect<void>
}

/** A Dispatcher's offer to start new rows of its Jobs in the transaction that inserts them. */
export interface Handoff {
  readonly jobs: ReadonlySet<string>
  /** A free slot, or null when none is free (or the Dispatcher is not claiming). */
  readonly reserve: Effect.Effect<HandoffSlot | null>
}

/** Notifies dispatchers that work on a queue is due at a time (epoch ms). */
export interface WakeBus {
  readonly notify: (queue: string, dueAt: number) => void
  readonly subscribe: (queue: string, listener: (dueAt: number) => void) => () => void
  /** Notifies every Dispatcher, whatever its queue (a child ended: its parent may be due, on a queue not known here). */
  readonly notifyEvery: (dueAt: number) => void
  /** Says an outcome of the execution `id` was committed (it may have ended, or be queued again). */
  readonly notifyOutcome: (id: string) => void
  /** Listens for committed outcomes of one execution; returns the unsubscribe. */
  readonly subscribeOutcome: (id: string, listener: () => void) => () => void
  /** Registers a Dispatcher's hand-off for its queue; returns the unregister. */
  readonly offerHandoff: (queue: string, handoff: Handoff) => () => void
  /** Whether any hand-off is registered (the Recorder's fast check). */
  readonly hasHandoffs: () => boolean
  /** Reserves a slot for a new row of `job` on `queue`, from the first hand-off that has one free. */
  readonly reserveHandoff: (queue: string, job: string) => Effect.Effect<HandoffSlot | null>
}

const listen = <A>(listeners: Map<string, Set<A>>, key: string, listener: A): () => void => {
  let set = listeners.get(key)
  if (!set) listeners.set(key, (set = new Set()))
  set.add(listener)
  return () => {
    set.delete(listener)
    if (set.size === 0 && listeners.get(key) === set) listeners.delete(key)
  }
}

/** Makes an empty bus. */
export const make = (): WakeBus => {
  const listeners = new Map<string, Set<(dueAt: number) => void>>()
  const outcomeListeners = new Map<string, Set<() => void>>()
  const handoffs = new Map<string, Set<Handoff>>()
  return {
    notify: (queue, dueAt) => {
      const set = listeners.get(queue)
      if (set) for (const l of set) l(dueAt)
    },
    subscribe: (queue, listener) => listen(listeners, queue, listener),
    notifyEvery: (dueAt) => {
      for (const set of listeners.values()) for (const l of set) l(dueAt)
    },
    notifyOutcome: (id) => {
      const set = outcomeListeners.get(id)
      if (set) for (const l of set) l()
    },
    subscribeOutcome: (id, listener) => listen(outcomeListeners, id, listener),
    offerHandoff: (queue, handoff) => listen(handoffs, queue, handoff),
    hasHandoffs: () => handoffs.size > 0,
    reserveHandoff: (queue, job) =>
      Effect.suspend(() => {
        const set = handoffs.get(queue)
        if (!set) return Effect.succeed(null)
        const offers = [...set].filter((h) => h.jobs.has(job))
        const next = (i: number): Effect.Effect<HandoffSlot | null> =>
          i >= offers.length ? Effect.succeed(null) : Effect.flatMap(offers[i]!.reserve, (slot) => (slot ? Effect.succeed(slot) : next(i + 1)))
        return next(0)
      })
  }
}
