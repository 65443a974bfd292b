/**
 * A Dispatcher's wake-ups, coalesced before they reach its mailbox. Every enqueue commit
 * on the Dispatcher's queue wakes it, and so does every stored outcome of a queue with
 * limits across workers. The mailbox is only read while the Dispatcher sleeps, so a
 * Dispatcher that never sleeps (its queue has a backlog) would keep one entry per wake-up
 * until the backlog is gone: memory that grows with the work done. A wake-up already due
 * when it comes is the same as any other due one, so while one is in the mailbox, more
 * add nothing. A wake-up due later is always passed on: the Dispatcher keeps the earliest
 * of those as its next due time, even when a due one arrives in the same batch.
 */
export interface DueWakeups {
  /** Passes on a wake-up for work due at `dueAt` (epoch ms), unless one due at once is already pending. */
  readonly wake: (dueAt: number) => void
  /** The Dispatcher took everything in its mailbox. */
  readonly taken: () => void
}

/** Coalesces wake-ups in front of `offer` (the mailbox), reading the time from `now`. */
export const make = (offer: (dueAt: number) => void, now: () => number): DueWakeups => {
  let duePending = false
  return {
    wake: (dueAt) => {
      if (dueAt <= now()) {
        if (duePending) return
        duePending = true
      }
      offer(dueAt)
    },
    taken: () => {
      duePending = false
    }
  }
}
