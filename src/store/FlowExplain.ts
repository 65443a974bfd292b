/**
 * Why due work has not started, as pure functions every surface (CLI, dashboard) applies
 * the same way, from the limits of this process's config and a flow snapshot of the
 * store (FlowRules.ts has the rules the claim applies; this file only explains them).
 *
 * Each held-back execution is given exactly one cause, the first that holds, in this
 * order: the queue is paused > the queue's rate limit is used up > its global
 * concurrency is reached > its Job's rate limit is used up > its concurrency key is at
 * its limit > its rate key is at its limit. A due execution no limit holds is waiting
 * for a free worker slot, or for a worker that serves its queue.
 *
 * The limits are this process's config: a worker built from another config applies its
 * own. The store reads (queuesFlow, queuesHeldBack) are a snapshot: by the time it is
 * shown, a claim may have changed it.
 */
import type { RateLimit } from "../jobs/FlowLimits.ts"
import { isoTime } from "../jobs/TimeRange.ts"
import { type ClaimLimits, claimLimitsOf, type FlowState, flowStateOf, freesAt, jobScope, keyScope, pairOf, queueScope } from "./FlowRules.ts"
import type { DueGroup, LiveWorker, QueueFlow } from "./Store.ts"
import { unservedNote } from "./WorkerRules.ts"

/** What holds one due execution back, in the order causes are tried. */
export type HoldCause = "paused" | "queueRate" | "globalConcurrency" | "jobRate" | "keyConcurrency" | "keyRate"

/** Due queued executions of a queue held back now, by cause (rate limits of the queue, the Job and its keys together). */
export interface HeldBack {
  readonly paused: number
  readonly globalConcurrency: number
  readonly keyConcurrency: number
  readonly rateLimit: number
}

/** A rate limit as the surfaces show it: `{ limit: 100, periodMs: 60000, period: "1m" }`. */
export interface RateLimitView {
  readonly limit: number
  readonly periodMs: number
  /** The period in the largest whole unit: `500ms`, `30s`, `1m`, `2h`, `7d`. */
  readonly period: string
}

const units: ReadonlyArray<readonly [string, number]> = [["d", 86_400_000], ["h", 3_600_000], ["m", 60_000], ["s", 1_000]]

/** A period in the largest unit it is a whole number of: 60000 → `1m`, 90000 → `90s`, 1500 → `1500ms`. */
export const periodText = (ms: number): string => {
  for (const [unit, size] of units) if (ms >= size && ms % size === 0) return `${ms / size}${unit}`
  return `${ms}ms`
}

/** A rate limit as shown, or null. */
export const rateLimitView = (rate: RateLimit | null | undefined): RateLimitView | null =>
  rate === null || rate === undefined ? null : { limit: rate.limit, periodMs: rate.periodMs, period: periodText(rate.periodMs) }

/** The limits a claim of `queue` applies under this config: the queue's and those of its Jobs (none for a queue not declared). */
export const limitsOfQueue = (
  registry: {
    readonly queues: ReadonlyMap<string, Parameters<typeof claimLimitsOf>[0]>
    readonly jobs: ReadonlyMap<string, Parameters<typeof claimLimitsOf>[1][number] & { readonly queue: string }>
  },
  queue: string
): ClaimLimits =>
  claimLimitsOf(registry.queues.get(queue) ?? {}, [...registry.jobs.values()].filter((j) => j.queue === queue))

/** The one cause holding back a due execution of `job` whose keys are (or are not) at their limit; null when none. */
export const holdCauseOf = (
  paused: boolean,
  limits: ClaimLimits,
  state: FlowState,
  row: { readonly job: string; readonly keyAtLimit: boolean; readonly rateKeyAtLimit: boolean }
): HoldCause | null => {
  if (paused) return "paused"
  if (limits.rateLimit !== null && state.queueRateFree <= 0) return "queueRate"
  if (limits.globalConcurrency !== null && state.globalFree <= 0) return "globalConcurrency"
  if (state.blockedJobs.includes(row.job)) return "jobRate"
  if (row.keyAtLimit) return "keyConcurrency"
  if (row.rateKeyAtLimit) return "keyRate"
  return null
}

/** The bucket of {@link HeldBack} a cause counts in. */
const bucketOf: Record<HoldCause, keyof HeldBack> = {
  paused: "paused",
  queueRate: "rateLimit",
  globalConcurrency: "globalConcurrency",
  jobRate: "rateLimit",
  keyConcurrency: "keyConcurrency",
  keyRate: "rateLimit"
}

/** A queue's due queued executions and how many of them each cause holds back now (queuesHeldBack's read). */
export const heldBackOf = (
  limits: ClaimLimits,
  read: { readonly flow: QueueFlow; readonly due: ReadonlyArray<DueGroup> },
  now: number
): { readonly due: number; readonly heldBack: HeldBack } => {
  const state = flowStateOf(limits, read.flow.running, read.flow.starts, now)
  const held = { paused: 0, globalConcurrency: 0, keyConcurrency: 0, rateLimit: 0 }
  let due = 0
  for (const g of read.due) {
    due += g.count
    const cause = holdCauseOf(read.flow.paused, limits, state, g)
    if (cause !== null) held[bucketOf[cause]] += g.count
  }
  return { due, heldBack: held }
}

/** No execution held back. */
export const noneHeldBack: HeldBack = { paused: 0, globalConcurrency: 0, keyConcurrency: 0, rateLimit: 0 }

const nextStart = (at: number | null): string => (at === null ? "" : `; next start allowed at ${isoTime(at)}`)

/**
 * Why a queued execution that is due has not started, in one line; null when it is not
 * queued or not due yet. `workers` is the store's live-worker list at `now`.
 */
export const whyNotStarted = (
  execution: {
    readonly state: string
    readonly runAt: number
    readonly job: string
    readonly queue: string
    readonly concurrencyKey: string | null
    readonly rateKey: string | null
  },
  limits: ClaimLimits,
  flow: QueueFlow,
  now: number,
  workers: ReadonlyArray<LiveWorker>
): string | null => {
  if ((execution.state !== "queued" && execution.state !== "waiting") || execution.runAt > now) return null
  const state = flowStateOf(limits, flow.running, flow.starts, now)
  const job = limits.jobs[execution.job]
  const keyAtLimit = execution.concurrencyKey !== null && state.blockedConcurrency.includes(pairOf(execution.job, execution.concurrencyKey))
  const rateKeyAtLimit = execution.rateKey !== null && state.blockedRate.includes(pairOf(execution.job, execution.rateKey))
  const cause = holdCauseOf(flow.paused, limits, state, { job: execution.job, keyAtLimit, rateKeyAtLimit })
  switch (cause) {
    case "paused":
      return "queue paused"
    case "queueRate": {
      const rate = limits.rateLimit!
      return `rate limit ${rate.limit} per ${periodText(rate.periodMs)} reached${nextStart(freesAt(flow.starts, queueScope, rate.limit, now))}`
    }
    case "globalConcurrency":
      return `global limit ${limits.globalConcurrency} reached (${state.running} running)`
    case "jobRate": {
      const rate = job!.rateLimit!
      return `Job rate limit ${rate.limit} per ${periodText(rate.periodMs)} reached${nextStart(freesAt(flow.starts, jobScope(execution.job), rate.limit, now))}`
    }
    case "keyConcurrency": {
      const key = execution.concurrencyKey!
      return `key ${JSON.stringify(key)} at its limit ${job!.concurrency} (${state.runningByPair.get(pairOf(execution.job, key)) ?? 0} running)`
    }
    case "keyRate": {
      const rate = job!.rateLimit!
      const key = execution.rateKey!
      return `Job rate limit ${rate.limit} per ${periodText(rate.periodMs)} for key ${JSON.stringify(key)} reached${nextStart(freesAt(flow.starts, keyScope(execution.job, key), rate.limit, now))}`
    }
    case null:
      return unservedNote(workers, execution.queue, execution.job) ?? "waiting for a free worker slot"
  }
}
