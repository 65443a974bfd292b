/**
 * Jobs of the flow-control benchmark (bench/flow.ts), silent no-ops each on a queue of
 * its own so a run's queue config alone decides its limits:
 *
 * - `flow/noop` on `flow` (the global-concurrency comparison: with and without
 *   `globalConcurrency`);
 * - `flow/keyed` on `keyed`, at most one running per payload key `k` across every worker;
 * - `flow/rated` on `rated` (the queue's `rateLimit` comes from the run's config).
 *
 * A folder of its own (not bench/apps), so the other benchmarks' workers never load them.
 */
import { Effect, Schema } from "effect"
import { Job } from "../../../src/index.ts"

export const flowNoop = Job.make({
  id: "flow/noop",
  label: "Flow bench no-op",
  queue: "flow",
  payload: Schema.Struct({ n: Schema.Number }),
  handler: () => Effect.void
})

export const flowKeyed = Job.make({
  id: "flow/keyed",
  label: "Flow bench keyed no-op",
  queue: "keyed",
  payload: Schema.Struct({ n: Schema.Number, k: Schema.String }),
  concurrency: { key: (p) => p.k, limit: 1 },
  handler: () => Effect.void
})

export const flowRated = Job.make({
  id: "flow/rated",
  label: "Flow bench rate-limited no-op",
  queue: "rated",
  payload: Schema.Struct({ n: Schema.Number }),
  handler: () => Effect.void
})
