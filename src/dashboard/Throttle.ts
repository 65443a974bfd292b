/**
 * Guessing the dashboard token is slowed down: each client address may fail the token
 * check (a wrong `POST /login`, a wrong `Authorization: Bearer`) `limit` times per
 * window; past that, its token checks are answered 429 with `Retry-After` until the
 * window ends — a right token too, so a guesser learns nothing while blocked. A
 * browser already signed in (session cookie) is not affected. Time comes from the
 * caller (the Effect Clock), so tests can drive it.
 */

/** The failed-check counter of one dashboard process. */
export interface Throttle {
  /** Milliseconds until `client` may try again; 0 when it may now. */
  readonly blockedFor: (client: string, now: number) => number
  /** Counts a failed token check by `client`. */
  readonly failed: (client: string, now: number) => void
}

/** Defaults: 10 failed checks per minute per client address. */
export const defaults = { limit: 10, windowMs: 60_000 } as const

/** Entries kept at most; older windows are dropped first when there are more. */
const maxClients = 10_000

/** A new Throttle with fixed windows per client. */
export const make = (options: { readonly limit: number; readonly windowMs: number } = defaults): Throttle => {
  const windows = new Map<string, { start: number; failures: number }>()
  const current = (client: string, now: number) => {
    const w = windows.get(client)
    if (w === undefined || now - w.start >= options.windowMs) return undefined
    return w
  }
  return {
    blockedFor: (client, now) => {
      const w = current(client, now)
      return w !== undefined && w.failures >= options.limit ? w.start + options.windowMs - now : 0
    },
    failed: (client, now) => {
      const w = current(client, now)
      if (w !== undefined) {
        w.failures++
        return
      }
      if (windows.size >= maxClients) {
        for (const [key, old] of windows) if (now - old.start >= options.windowMs) windows.delete(key)
        if (windows.size >= maxClients) windows.delete(windows.keys().next().value!)
      }
      windows.set(client, { start: now, failures: 1 })
    }
  }
}
