/**
 * The rules of queue pause as pure functions, so the SQLite and PostgreSQL Stores and
 * every surface (Client, CLI, dashboard) apply one set: a stored row read as a
 * QueueState, and the queue list that joins declared queues, stored pauses and
 * per-queue counts.
 *
 * A pause is stored under any queue name: the store cannot know every config that
 * workers on the database were built from. Refusing a name nobody declared is a
 * decision for a surface (the CLI refuses one, naming the declared queues).
 */
import type { QueueConfig } from "../jobs/QueueConfig.ts"
import { type HeldBack, noneHeldBack, rateLimitView, type RateLimitView } from "./FlowExplain.ts"
import type { QueueState, QueueStats } from "./Store.ts"

/** A stored roster_queues row (SQLite stores the flag as 0/1, PostgreSQL as a boolean). */
export interface QueueRow {
  readonly name: string
  readonly paused: number | boolean
  readonly paused_at: number | string | bigint | null
}

/** A stored row as a QueueState. */
export const toQueueState = (row: QueueRow): QueueState => {
  const paused = row.paused === true || row.paused === 1
  return { queue: row.name, paused, pausedAt: paused && row.paused_at !== null ? Number(row.paused_at) : null }
}

/** One queue as the list shows it: its declaration here (if any), stored state and counts. */
export interface QueueSummary {
  readonly name: string
  /** Whether this process's config declares it. */
  readonly declared: boolean
  readonly paused: boolean
  readonly pausedAt: number | null
  /** Per worker process, from this config; null for a queue it does not declare. */
  readonly concurrency: number | null
  /** Most running at once across every worker, from this config; null: no limit (or not declared here). */
  readonly globalConcurrency: number | null
  /** Most starts per period across every worker, from this config; null: no limit (or not declared here). */
  readonly rateLimit: RateLimitView | null
  readonly queued: number
  readonly running: number
  /** Queued executions already due (run_at <= now). */
  readonly due: number
  /** Due queued executions held back now, by cause (FlowExplain.ts), under this config's limits. */
  readonly heldBack: HeldBack
}

/** The names {@link queueSummariesOf} lists: declared, with executions, or with a stored state, ordered. */
export const listedQueueNames = (
  declared: Iterable<string>,
  states: ReadonlyArray<QueueState>,
  stats: ReadonlyArray<QueueStats>
): ReadonlyArray<string> => [...new Set([...declared, ...states.map((s) => s.queue), ...stats.map((s) => s.queue)])].sort()

/**
 * Every queue that is declared, has executions, or has a stored state, ordered by name;
 * `held` gives each queue's due and held-back counts (FlowExplain.heldBackOf), zero when absent.
 */
export const queueSummariesOf = (
  declared: Iterable<QueueConfig>,
  states: ReadonlyArray<QueueState>,
  stats: ReadonlyArray<QueueStats>,
  held: ReadonlyMap<string, { readonly due: number; readonly heldBack: HeldBack }> = new Map()
): ReadonlyArray<QueueSummary> => {
  const configs = new Map([...declared].map((q) => [q.name, q] as const))
  const names = listedQueueNames(configs.keys(), states, stats)
  return names.map((name): QueueSummary => {
    const config = configs.get(name)
    const state = states.find((s) => s.queue === name)
    const counts = stats.find((s) => s.queue === name)?.counts
    return {
      name,
      declared: config !== undefined,
      paused: state?.paused ?? false,
      pausedAt: state?.pausedAt ?? null,
      concurrency: config?.concurrency ?? null,
      globalConcurrency: config?.globalConcurrency ?? null,
      rateLimit: rateLimitView(config?.rateLimit),
      queued: counts?.queued ?? 0,
      running: counts?.running ?? 0,
      due: held.get(name)?.due ?? 0,
      heldBack: held.get(name)?.heldBack ?? noneHeldBack
    }
  })
}

/**
 * The refusal of a surface asked to pause a queue its config does not declare: one line
 * naming the declared queues; null when declared. Resuming a queue that is stored as
 * paused is always allowed (it may have been paused from another config).
 */
export const undeclaredQueue = (name: string, declared: Iterable<string>, stored: ReadonlyArray<QueueState>, action: "pause" | "resume"): string | null => {
  const names = [...declared].sort()
  if (names.includes(name)) return null
  if (action === "resume" && stored.some((s) => s.queue === name && s.paused)) return null
  return `unknown queue "${name}" (declared: ${names.join(", ")})`
}
