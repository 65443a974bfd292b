/**
 * Browser sessions of one dashboard process.
 *
 * A session is born when a browser posts the right token to /login: a new random id
 * (32 bytes) with an expiry (`now + ttl`, from the Effect Clock), signed with an HMAC
 * under a secret drawn when this process started. The cookie is `<id>.<expiresAt>.<mac>`
 * and never holds the token; the process keeps, in memory, each id it issued with its
 * expiry and a digest of the token it was signed in with.
 *
 * States: active (issued, not expired, not ended) → ended, by sign-out, by its expiry
 * passing, by the token changing (it was signed in with another), by the process stopping
 * (the secret and the ids die with it), or — past `max` live sessions — by being the
 * oldest. A cookie is accepted only while its session is active, so a copied cookie
 * stops working at sign-out; nothing is written to the database.
 */
import { createHash, createHmac, randomBytes } from "node:crypto"
import { secretEquals } from "./Security.ts"

/** How long a session lasts: 7 days. */
export const ttlMs = 7 * 24 * 3600 * 1000

/** Live sessions kept at most; past that, expired ones go first, then the oldest. */
export const maxSessions = 10_000

/** The sessions of one dashboard process. */
export interface Sessions {
  /** A new session for `token`: the cookie value and when it expires (epoch ms). */
  readonly create: (token: string, now: number) => { readonly value: string; readonly expiresAt: number }
  /** Whether `value` names an active session of `token` at `now`. */
  readonly valid: (value: string | undefined, token: string, now: number) => boolean
  /** Ends the session `value` names (sign-out); anything else is ignored. */
  readonly end: (value: string | undefined) => void
  /** How many sessions are kept (expired ones included until they are swept). */
  readonly size: () => number
}

const shape = /^([A-Za-z0-9_-]{43})\.(\d{1,15})\.([A-Za-z0-9_-]{43})$/

const parse = (value: string | undefined): { readonly id: string; readonly expiresAt: number; readonly mac: string } | undefined => {
  const m = value === undefined ? null : shape.exec(value)
  return m === null ? undefined : { id: m[1]!, expiresAt: Number(m[2]), mac: m[3]! }
}

/** A new, empty set of sessions with its own secret. */
export const make = (options: { readonly ttlMs: number; readonly max: number } = { ttlMs, max: maxSessions }): Sessions => {
  const secret = randomBytes(32)
  // id → its expiry and which token signed it in, in the order issued (a Map keeps
  // insertion order: the oldest first).
  const active = new Map<string, { readonly expiresAt: number; readonly token: string }>()
  const tokenId = (token: string): string => createHash("sha256").update(token).digest("base64url")
  const mac = (id: string, expiresAt: number): string =>
    createHmac("sha256", secret).update(`roster-dashboard-session:v2\u0000${id}\u0000${expiresAt}`).digest("base64url")
  const sweep = (now: number) => {
    for (const [id, session] of active) if (session.expiresAt <= now) active.delete(id)
    while (active.size >= options.max) active.delete(active.keys().next().value!)
  }
  return {
    create: (token, now) => {
      if (active.size >= options.max) sweep(now)
      const id = randomBytes(32).toString("base64url")
      const expiresAt = now + options.ttlMs
      active.set(id, { expiresAt, token: tokenId(token) })
      return { value: `${id}.${expiresAt}.${mac(id, expiresAt)}`, expiresAt }
    },
    valid: (value, token, now) => {
      const s = parse(value)
      if (s === undefined) return false
      // Every check runs, so a refusal takes as long whichever part was wrong.
      const signed = secretEquals(s.mac, mac(s.id, s.expiresAt))
      const kept = active.get(s.id)
      const issued = kept !== undefined && kept.expiresAt === s.expiresAt
      const current = s.expiresAt > now
      const sameToken = kept !== undefined && secretEquals(kept.token, tokenId(token))
      // An expired session, or one signed in with a token since replaced, never comes back.
      if (issued && signed && (!current || !sameToken)) active.delete(s.id)
      return signed && issued && current && sameToken
    },
    end: (value) => {
      const s = parse(value)
      if (s !== undefined && active.get(s.id)?.expiresAt === s.expiresAt) active.delete(s.id)
    },
    size: () => active.size
  }
}
