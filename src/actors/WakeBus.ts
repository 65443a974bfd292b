/**
 * In-process wake-ups: after the Recorder commits an enqueue (or a retry), it tells
 * the Dispatcher of that queue, at once, when the new work is due. Dispatchers
 * subscribe by queue name; a notification for a queue no Dispatcher serves is a no-op.
 *
 * Not a `PubSub`: each Dispatcher already has one mailbox (a `Queue`) that this bus
 * offers into synchronously from the Recorder's commit; a PubSub would add a second
 * subscription queue per Dispatcher and a fiber to forward between them.
 */

/** Notifies dispatchers that work on a queue is due at a time (epoch ms). */
export interface WakeBus {
  readonly notify: (queue: string, dueAt: number) => void
  readonly subscribe: (queue: string, listener: (dueAt: number) => void) => () => void
}

/** Makes an empty bus. */
export const make = (): WakeBus => {
  const listeners = new Map<string, Set<(dueAt: number) => void>>()
  return {
    notify: (queue, dueAt) => {
      const set = listeners.get(queue)
      if (set) for (const l of set) l(dueAt)
    },
    subscribe: (queue, listener) => {
      let set = listeners.get(queue)
      if (!set) listeners.set(queue, (set = new Set()))
      set.add(listener)
      return () => set.delete(listener)
    }
  }
}
