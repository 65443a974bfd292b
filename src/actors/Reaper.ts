/**
 * The Reaper recovers executions whose lease expired (their worker crashed, hung or
 * lost the database): each goes through the retry-or-fail path with the error
 * `lease expired`, which counts as an attempt. The outcome is fenced on the dead
 * lease's owner and attempt, so two Reapers racing recover an execution once.
 */
import { Clock, Effect, Random } from "effect"
import type { Registry } from "../jobs/Registry.ts"
import * as Failure from "../jobs/Failure.ts"
import { retryOrFail } from "../jobs/RetryDecision.ts"
import { Store } from "../store/Store.ts"
import type { Outcome } from "../store/Store.ts"
import * as Metrics from "./Metrics.ts"
import type { Recorder } from "./Recorder.ts"

/** One sweep; returns how many executions were recovered. */
export const sweep = Effect.fnUntraced(function*(options: { readonly registry: Registry; readonly recorder: Pick<Recorder, "finish">; readonly limit?: number }) {
  const store = yield* Store
  const now = yield* Clock.currentTimeMillis
  const expired = yield* store.executionsExpired({ now, limit: options.limit ?? 500 })
  let recovered = 0
  for (const e of expired) {
    if (e.leaseOwner === null) continue
    const job = options.registry.jobs.get(e.job)
    const fate = retryOrFail(job, e, Failure.leaseExpired, yield* Random.next, now)
    const base = { id: e.id, workerId: e.leaseOwner, attempt: e.attempt, now, startedAt: e.startedAt ?? now, error: Failure.leaseExpired, expired: true, parentId: e.parentId }
    const outcome: Outcome = fate.kind === "retry" ? { ...base, kind: "retry", runAt: fate.runAt } : { ...base, kind: "failed" }
    if (yield* options.recorder.finish(outcome, e.queue)) {
      recovered++
      yield* Effect.logWarning(`recovered ${e.id} (${e.job}) from ${e.leaseOwner}: lease expired; ${fate.kind === "retry" ? "will retry" : "failed"}`)
    }
  }
  yield* Metrics.leasesRecovered(recovered)
  return recovered
})

/** The Reaper's loop, to be run under supervise(). */
export const loop = (options: { readonly registry: Registry; readonly recorder: Pick<Recorder, "finish">; readonly intervalMs: number }) =>
  Effect.gen(function*() {
    while (true) {
      yield* sweep(options).pipe(Effect.catchTag("StoreError", (e) => Effect.logError(`reaper sweep failed: ${e.message}`)))
      yield* Effect.sleep(options.intervalMs)
    }
  })
