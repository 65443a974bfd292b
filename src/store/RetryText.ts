/**
 * The `retry` column's text: a Job's retry snapshot, stored on each execution at enqueue
 * (RetryPolicy.ts says why). It is written short, `e3/10000/300000/2/f` (kind,
 * attempts / initial ms / max ms / factor / jitter), 19 bytes where the JSON object was
 * 95, because every byte of a row is written again on each claim and outcome and a
 * fifth of an enqueue's row was this text (bench/RESULTS.md, seventeenth pass). Rows
 * written before keep their JSON, which is read as ever. Both stores use this codec.
 */
import type { RetrySnapshot } from "../jobs/RetryPolicy.ts"

const kinds = { e: "exponential", f: "fixed", c: "custom" } as const
const jitters = { f: "full", n: "none" } as const
const shortForm = /^([efc])([^/]+)\/([^/]+)\/([^/]+)\/([^/]+)\/([fn])$/

const texts = new WeakMap<RetrySnapshot, string>()

/** The stored text of a snapshot (one Job's snapshot is one object: encoded once). */
export const encodeRetry = (retry: RetrySnapshot): string => {
  let text = texts.get(retry)
  if (text === undefined) {
    texts.set(retry, (text = `${retry.kind[0]}${retry.attempts}/${retry.initialMs}/${retry.maxMs}/${retry.factor}/${retry.jitter[0]}`))
  }
  return text
}

// A worker reads the same few texts on every claimed row: each is parsed once. The texts
// come from this codec (or an old row's JSON), so there are a handful; the bound is a guard.
const parsed = new Map<string, RetrySnapshot>()
const parsedBound = 1_000

/** The snapshot a stored text holds: the short form, or the JSON of rows written before it. */
export const decodeRetry = (text: string): RetrySnapshot => {
  const known = parsed.get(text)
  if (known !== undefined) return known
  const snapshot = text.startsWith("{") ? (JSON.parse(text) as RetrySnapshot) : parseShort(text)
  if (parsed.size >= parsedBound) parsed.clear()
  parsed.set(text, snapshot)
  return snapshot
}

const parseShort = (text: string): RetrySnapshot => {
  const m = shortForm.exec(text)
  const [attempts, initialMs, maxMs, factor] = [m?.[2], m?.[3], m?.[4], m?.[5]].map(Number) as [number, number, number, number]
  if (m === null || [attempts, initialMs, maxMs, factor].some(Number.isNaN)) throw new Error(`unreadable retry snapshot: ${JSON.stringify(text)}`)
  return { attempts, kind: kinds[m[1] as keyof typeof kinds], initialMs, maxMs, factor, jitter: jitters[m[6] as keyof typeof jitters] }
}
