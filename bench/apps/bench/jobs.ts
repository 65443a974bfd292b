/**
 * Jobs used only by the benchmarks. Neither logs, so a drain of `bench/noop` shows
 * what Roster costs without the demo's one log line per run.
 *
 * `bench/mark` records when its handler started: in a map shared with an in-process
 * benchmark (`starts`, `onStart`, by payload id, `performance.now()` time base), and
 * as its result (`at`, epoch ms with sub-ms precision) so a benchmark in another
 * process can read it from the store.
 */
import { Effect, Schema } from "effect"
import { Job } from "../../../src/index.ts"

/** Start times by payload id, in this process's `performance.now()` time base. */
export const starts = new Map<number, number>()

/** Called with (payload id, start time) when a `bench/mark` handler starts, if set. */
export const hooks: { onStart: ((id: number, at: number) => void) | undefined } = { onStart: undefined }

/** Returns at once, without logging. */
export const noop = Job.make({
  id: "bench/noop",
  label: "Bench no-op",
  payload: Schema.Struct({ n: Schema.Number }),
  handler: () => Effect.void
})

/** Records the moment its handler starts. */
export const mark = Job.make({
  id: "bench/mark",
  label: "Bench start marker",
  payload: Schema.Struct({ id: Schema.Number }),
  result: Schema.Struct({ at: Schema.Number }),
  handler: ({ id }) =>
    Effect.sync(() => {
      const now = performance.now()
      starts.set(id, now)
      hooks.onStart?.(id, now)
      return { at: performance.timeOrigin + now }
    })
})
