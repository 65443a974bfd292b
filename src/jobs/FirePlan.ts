/**
 * What a Schedule does with the fires that came due since it was last handled: the
 * misfire policy as a pure function. The Scheduler calls `plan` with the schedule's
 * trigger, the last handled instant and `now`, then records every decision durably.
 *
 * A fire due at or after `now - toleranceMs` is on time and always enqueued. Older
 * ones are misfires (the scheduler was down, paused by load, or behind):
 * - `once`: one late run, for the most recent misfire — none if a fire is on time
 *   anyway (that run is the catch-up); every other misfire is recorded `missed`;
 * - `skip`: no late run; every misfire is recorded `missed`;
 * - `all`: the most recent `cap` misfires are run late, older ones are `missed`.
 * At most `missedRecordCap` missed fires (the most recent) are recorded; `truncated`
 * says older ones were left unrecorded, so a week-long outage of a per-second
 * schedule costs a bounded amount of work and storage.
 */
import type { Trigger } from "./Trigger.ts"
import { firesBetween, lastFiresBetween, nextFireAfter } from "./Trigger.ts"

/** The misfire policies of DESIGN §2. */
export type MisfirePolicy = "once" | "skip" | "all"

/** A misfire policy with its cap (how many late runs `all` makes; 1 for `once`, 0 for `skip`). */
export interface Misfire {
  readonly policy: MisfirePolicy
  readonly cap: number
}

/** The default cap of `all`. */
export const defaultAllCap = 100

/** How late a fire may be and still count as on time, by default (Quartz's misfire threshold). */
export const defaultToleranceMs = 60_000

/** How many missed fires one plan records at most, by default (the most recent). */
export const defaultMissedRecordCap = 100

/** Builds a Misfire from its policy name and, for `all`, its cap. */
export const misfire = (policy: MisfirePolicy, cap = defaultAllCap): Misfire =>
  ({ policy, cap: policy === "once" ? 1 : policy === "skip" ? 0 : cap })

/** One fire and what to do with it. */
export interface Decision {
  readonly dueAt: number
  readonly outcome: "enqueue" | "missed"
}

/** The input of {@link plan}. Times are epoch ms. */
export interface PlanInput {
  readonly trigger: Trigger
  /** Fires at or before this instant are already handled: the last recorded due time, or just before the first due. */
  readonly after: number
  readonly now: number
  readonly misfire: Misfire
  readonly toleranceMs?: number | undefined
  readonly missedRecordCap?: number | undefined
}

/** The decisions for the fires in (after, now], ascending by due time, and the next due after now. */
export interface Plan {
  readonly decisions: ReadonlyArray<Decision>
  readonly nextDueAt: number | null
  /** Older missed fires exist in the window and are not recorded. */
  readonly truncated: boolean
}

/** Decides every fire in (after, now]: enqueue, or record as missed. */
export const plan = (input: PlanInput): Plan => {
  const { trigger, after, now } = input
  const tolerance = Math.max(0, input.toleranceMs ?? defaultToleranceMs)
  const missedCap = Math.max(0, input.missedRecordCap ?? defaultMissedRecordCap)
  const nextDueAt = nextFireAfter(trigger, now)
  if (now <= after) return { decisions: [], nextDueAt, truncated: false }

  const lateUntil = now - tolerance - 1 // a fire is late when dueAt < now - tolerance
  const onTime = firesBetween(trigger, Math.max(after, lateUntil), now)
  const lateRuns = input.misfire.policy === "skip"
    ? 0
    : input.misfire.policy === "once"
    ? (onTime.length > 0 ? 0 : 1)
    : Math.max(0, Math.floor(input.misfire.cap))
  const late = lateUntil > after ? lastFiresBetween(trigger, after, lateUntil, lateRuns + missedCap) : { fires: [], more: false }

  const enqueued = late.fires.slice(late.fires.length - Math.min(lateRuns, late.fires.length))
  // lastFiresBetween returned at most lateRuns + missedCap fires, so every missed one fits the record cap.
  const missed = late.fires.slice(0, late.fires.length - enqueued.length)
  const decisions: Array<Decision> = [
    ...missed.map((dueAt): Decision => ({ dueAt, outcome: "missed" })),
    ...enqueued.map((dueAt): Decision => ({ dueAt, outcome: "enqueue" })),
    ...onTime.map((dueAt): Decision => ({ dueAt, outcome: "enqueue" }))
  ]
  return { decisions, nextDueAt, truncated: late.more }
}
