/**
 * The flow-control limits a queue or a Job declares (DESIGN §7), as plain values:
 *
 * - a queue's `globalConcurrency` (running at once across every worker on the database)
 *   and `rateLimit` (starts per period across every worker);
 * - a Job's `concurrency: { key, limit }` (running at once per key, across every worker)
 *   and `rateLimit: { limit, period, key? }` (starts per period for the Job, or per key).
 *
 * Keys are computed from the payload at enqueue and stored on the row; the limits are
 * the workers' config, read by every claim (src/store/FlowRules.ts applies them).
 */
import { Duration } from "effect"

/** A rate limit as stored and applied: at most `limit` starts in any window of `periodMs`. */
export interface RateLimit {
  readonly limit: number
  readonly periodMs: number
}

/** A rate limit as written in config or on a Job: `{ limit: 100, period: "1 minute" }`. */
export interface RateLimitInput {
  readonly limit: number
  readonly period: Duration.Input
}

/** A Job's per-key concurrency, as written on the Job. */
export interface KeyConcurrencyInput<P> {
  /** The key an execution counts under, from its payload (its Schema's Type). */
  readonly key: (payload: P) => string
  /** Most executions of one key running at once, across every worker. */
  readonly limit: number
}

/** A Job's rate limit, as written on the Job: for the Job as a whole, or per key. */
export interface JobRateLimitInput<P> extends RateLimitInput {
  readonly key?: ((payload: P) => string) | undefined
}

/** The flow limits of a Job, normalised. */
export interface JobFlow<P = any> {
  readonly concurrency: { readonly key: (payload: P) => string; readonly limit: number } | undefined
  readonly rateLimit: (RateLimit & { readonly key: ((payload: P) => string) | undefined }) | undefined
}

/** The most a concurrency or rate limit may be. */
export const maxLimit = 1_000_000
/** The shortest and longest rate-limit period: 1 ms to 1 year. */
export const minPeriodMs = 1
export const maxPeriodMs = 365 * 24 * 3_600_000
/** The longest flow key, in characters (stored in an index on both stores). */
export const maxFlowKeyLength = 512

const isLimit = (n: unknown): n is number => typeof n === "number" && Number.isInteger(n) && n >= 1 && n <= maxLimit

/** A period as milliseconds, or a message saying why it is not one. */
export const periodMsOf = (period: unknown): number | string => {
  let ms: number
  try {
    const d = Duration.fromInput(period as Duration.Input)
    if (d._tag !== "Some") return `must be a duration like "1 minute" or 60000 (ms), got ${JSON.stringify(period)}`
    ms = Duration.toMillis(d.value)
  } catch {
    return `must be a duration like "1 minute" or 60000 (ms), got ${JSON.stringify(period)}`
  }
  if (!Number.isInteger(ms) || ms < minPeriodMs || ms > maxPeriodMs) {
    return `must be a whole number of milliseconds from ${minPeriodMs} to ${maxPeriodMs} (1 year), got ${ms}`
  }
  return ms
}

/** A rate limit from config or a Job, or a message saying what is wrong with it. */
export const rateLimitOf = (input: unknown): RateLimit | string => {
  if (input === null || typeof input !== "object") return `must be an object like { limit: 100, period: "1 minute" }, got ${JSON.stringify(input)}`
  const { limit, period } = input as { limit?: unknown; period?: unknown }
  if (!isLimit(limit)) return `limit must be a whole number from 1 to ${maxLimit}, got ${JSON.stringify(limit)}`
  const periodMs = periodMsOf(period)
  if (typeof periodMs === "string") return `period ${periodMs}`
  return { limit, periodMs }
}

/** A global concurrency from config, or a message saying what is wrong with it. */
export const globalConcurrencyOf = (input: unknown): number | string =>
  isLimit(input) ? input : `must be a whole number from 1 to ${maxLimit}, got ${JSON.stringify(input)}`

/** A Job's flow limits from its options; throws a RangeError naming the Job (a definition is code). */
export const jobFlowOf = <P>(
  id: string,
  options: { readonly concurrency?: KeyConcurrencyInput<P> | undefined; readonly rateLimit?: JobRateLimitInput<P> | undefined }
): JobFlow<P> => {
  let concurrency: JobFlow<P>["concurrency"]
  if (options.concurrency !== undefined) {
    const { key, limit } = options.concurrency
    if (typeof key !== "function") throw new RangeError(`Job "${id}": concurrency.key must be a function of the payload`)
    if (!isLimit(limit)) throw new RangeError(`Job "${id}": concurrency.limit must be a whole number from 1 to ${maxLimit}, got ${JSON.stringify(limit)}`)
    concurrency = { key, limit }
  }
  let rateLimit: JobFlow<P>["rateLimit"]
  if (options.rateLimit !== undefined) {
    const rate = rateLimitOf(options.rateLimit)
    if (typeof rate === "string") throw new RangeError(`Job "${id}": rateLimit ${rate}`)
    const key = options.rateLimit.key
    if (key !== undefined && typeof key !== "function") throw new RangeError(`Job "${id}": rateLimit.key must be a function of the payload`)
    rateLimit = { ...rate, key }
  }
  return { concurrency, rateLimit }
}

/** The keys of an execution whose Job declares none. */
const noKeys = { concurrencyKey: null, rateKey: null } as const

/** The keys a new execution is counted under, computed from its payload, or why not. */
export const flowKeysOf = <P>(
  id: string,
  flow: JobFlow<P>,
  payload: P,
  explicitKey?: string | undefined
): { readonly concurrencyKey: string | null; readonly rateKey: string | null } | string => {
  // Most Jobs declare no key: nothing to compute or check (enqueue's hot path).
  if (explicitKey === undefined && flow.concurrency === undefined && flow.rateLimit?.key === undefined) return noKeys
  const keyOf = (what: string, f: (p: P) => string): string => {
    let k: unknown
    try {
      k = f(payload)
    } catch (e) {
      throw new FlowKeyFailure(`${what} of ${id} threw: ${e instanceof Error ? e.message : String(e)}`)
    }
    if (typeof k !== "string" && typeof k !== "number") throw new FlowKeyFailure(`${what} of ${id} must return a string, got ${JSON.stringify(k) ?? String(k)}`)
    return String(k)
  }
  try {
    const concurrencyKey = explicitKey !== undefined
      ? explicitKey
      : flow.concurrency === undefined ? null : keyOf("concurrency.key", flow.concurrency.key)
    const rateKey = flow.rateLimit?.key === undefined ? null : keyOf("rateLimit.key", flow.rateLimit.key)
    const tooLong = (what: string, k: string | null) =>
      k !== null && k.length > maxFlowKeyLength ? `${what} for ${id} is ${k.length} characters, over the ${maxFlowKeyLength}-character limit` : null
    return tooLong("concurrency key", concurrencyKey) ?? tooLong("rate-limit key", rateKey) ?? { concurrencyKey, rateKey }
  } catch (e) {
    if (e instanceof FlowKeyFailure) return e.message
    throw e
  }
}

class FlowKeyFailure extends Error {}

/** A rate limit as text: "100 per 1m". */
export const rateLimitText = (rate: RateLimit): string => `${rate.limit} per ${Duration.format(Duration.millis(rate.periodMs))}`
