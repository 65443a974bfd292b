/**
 * A queue's concurrency permits: a counting semaphore whose `release` is a plain call,
 * so the WorkerPool can give a permit back from a handler fiber's exit observer (its
 * success path runs no Effect after the handler, bench/RESULTS.md thirteenth pass).
 * `take` waits in FIFO order; a waiter interrupted while waiting takes nothing.
 * Effect's `Semaphore` does the same, but only releases as an Effect.
 */
import { Effect } from "effect"

interface Waiter {
  readonly n: number
  readonly resume: (effect: Effect.Effect<void>) => void
}

/** A pool of `size` permits. */
export interface Permits {
  /** Permits free now. */
  readonly free: () => number
  /** Waits until `n` permits are free (behind earlier waiters), then takes them. */
  readonly take: (n: number) => Effect.Effect<void>
  /** Takes `n` permits if they are free now and no one waits for them; whether it did. */
  readonly takeIfAvailable: (n: number) => boolean
  /** Gives `n` permits back and wakes the waiters they now satisfy, in order. */
  readonly release: (n: number) => void
}

export const make = (size: number): Permits => {
  let free = size
  const waiters: Array<Waiter> = []
  const wakeWaiters = () => {
    while (waiters.length > 0 && waiters[0]!.n <= free) {
      const w = waiters.shift()!
      free -= w.n
      w.resume(Effect.void)
    }
  }
  return {
    free: () => free,
    take: (n) =>
      Effect.callback<void>((resume) => {
        if (waiters.length === 0 && free >= n) {
          free -= n
          resume(Effect.void)
          return
        }
        const waiter: Waiter = { n, resume }
        waiters.push(waiter)
        // Interrupted while waiting: leave the line (the permits were never taken).
        return Effect.sync(() => {
          const i = waiters.indexOf(waiter)
          if (i >= 0) waiters.splice(i, 1)
          wakeWaiters()
        })
      }),
    takeIfAvailable: (n) => {
      if (waiters.length > 0 || free < n) return false
      free -= n
      return true
    },
    release: (n) => {
      free += n
      wakeWaiters()
    }
  }
}
