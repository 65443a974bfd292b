/**
 * In-process wake-ups: after the Recorder commits an enqueue (or a retry), it tells
 * the Dispatcher of that queue, at once, when the new work is due. Dispatchers
 * subscribe by queue name; a notification for a queue no Dispatcher serves is a no-op.
 * After it commits outcomes (and after the Client cancels a queued execution), it tells
 * whoever waits for those executions (`Client.waitFor`) to read them again.
 *
 * Not a `PubSub`: each Dispatcher already has one mailbox (a `Queue`) that this bus
 * offers into synchronously from the Recorder's commit; a PubSub would add a second
 * subscription queue per Dispatcher and a fiber to forward between them.
 */

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
    subscribeOutcome: (id, listener) => listen(outcomeListeners, id, listener)
  }
}
