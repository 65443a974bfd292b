/**
 * Roster's own pruning: the Job `roster/prune` deletes finished executions older than
 * the retention (with their attempts, steps and logs), in batches, and the system
 * Schedule `roster/prune` runs it every hour. The retention travels in the payload,
 * so the scheduler's config decides it (defaults: succeeded 7 days, failed and
 * cancelled 30 days). The system row is visible; editing or deleting it is refused.
 */
import { Clock, Effect, Schema } from "effect"
import * as Job from "../jobs/Job.ts"
import * as RetryPolicy from "../jobs/RetryPolicy.ts"
import type { ScheduleSpec } from "../store/ScheduleStore.ts"
import { Store } from "../store/Store.ts"
import type { RosterConfig } from "./Config.ts"
import * as Trigger from "../jobs/Trigger.ts"

/** Default retention of succeeded executions: 7 days. */
export const defaultSucceededMs = 7 * 86_400_000
/** Default retention of failed and cancelled executions: 30 days. */
export const defaultFailedMs = 30 * 86_400_000

const Retention = Schema.Struct({ succeededMs: Schema.Number, failedMs: Schema.Number })

/** The prune Job. Its handler requires the Store, which the worker provides to Roster's own app (Services.ts). */
export const pruneJob = Job.make({
  id: "roster/prune",
  label: "Prune finished executions",
  description: "Deletes finished executions older than the retention, with their attempts, steps and logs",
  payload: Retention,
  retry: RetryPolicy.fixed({ attempts: 3, delay: "1 minute" }),
  timeout: "10 minutes",
  handler: ({ succeededMs, failedMs }) =>
    Effect.gen(function*() {
      const store = yield* Store
      const now = yield* Clock.currentTimeMillis
      let deleted = 0
      while (true) {
        const n = yield* store.executionsPrune({ succeededBefore: now - succeededMs, failedBefore: now - failedMs, limit: 5_000 })
        deleted += n
        if (n < 5_000) break
        yield* Effect.yieldNow
      }
      yield* Effect.logInfo(`pruned ${deleted} finished execution(s)`)
      return { deleted }
    })
})

/** The retention a config asks for. */
export const retentionOf = (config: RosterConfig) => ({
  succeededMs: config.retention?.succeededMs ?? defaultSucceededMs,
  failedMs: config.retention?.failedMs ?? defaultFailedMs
})

/** The system Schedule running the prune Job hourly. */
export const pruneScheduleSpec = (config: RosterConfig, now: number): ScheduleSpec => {
  const cron = "17 * * * *"
  return {
    id: "roster/prune",
    job: pruneJob.id,
    payload: JSON.stringify(retentionOf(config)),
    cron,
    everyMs: null,
    timezone: "UTC",
    enabled: true,
    misfire: "once",
    misfireCap: 1,
    overlap: "skip",
    anchorAt: 0,
    label: "Prune finished executions",
    description: "Deletes finished executions older than the retention (succeeded / failed-or-cancelled)",
    nextDueAt: Trigger.nextFireAfter(Trigger.cron(cron, "UTC"), now)
  }
}
