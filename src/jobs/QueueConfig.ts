/**
 * Queues are named, kebab-case, and declared in config with a per-worker-process
 * concurrency and, optionally, limits across every worker on the database
 * (`globalConcurrency`, `rateLimit`; see FlowLimits.ts). `default` always exists.
 */
import { type RateLimit, type RateLimitInput, rateLimitOf } from "./FlowLimits.ts"

/** The declared shape of one queue. */
export interface QueueConfig {
  readonly name: string
  /** How many executions of this queue one worker process runs at once. */
  readonly concurrency: number
  /** Most running at once across every worker on the database; null: no limit. */
  readonly globalConcurrency?: number | null | undefined
  /** Most starts in any window of the period across every worker; null: no limit. */
  readonly rateLimit?: RateLimit | null | undefined
}

/** A queue as written in config. */
export interface QueueInput {
  readonly concurrency?: number | undefined
  readonly globalConcurrency?: number | undefined
  readonly rateLimit?: RateLimitInput | undefined
}

/** Concurrency of `default` when the config does not declare it. */
export const defaultConcurrency = 10

/**
 * Normalises the config's queue map, adding `default` when absent. Values were checked
 * by ConfigRules; a rate limit that is not one is dropped here rather than thrown.
 */
export const fromConfig = (queues: Readonly<Record<string, QueueInput>> | undefined): ReadonlyArray<QueueConfig> => {
  const out = new Map<string, QueueConfig>()
  out.set("default", { name: "default", concurrency: defaultConcurrency, globalConcurrency: null, rateLimit: null })
  for (const [name, q] of Object.entries(queues ?? {})) {
    const rate = q.rateLimit === undefined ? null : rateLimitOf(q.rateLimit)
    out.set(name, {
      name,
      concurrency: q.concurrency ?? defaultConcurrency,
      globalConcurrency: q.globalConcurrency ?? null,
      rateLimit: typeof rate === "string" ? null : rate
    })
  }
  return [...out.values()]
}

/** Whether a queue has any limit across workers (its claims take the limited path). */
export const isLimited = (q: QueueConfig): boolean => (q.globalConcurrency ?? null) !== null || (q.rateLimit ?? null) !== null
