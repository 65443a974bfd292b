/**
 * Jobs of the orchestration benchmark (bench/orchestration.ts), on a queue of their own
 * (`orch`); a folder of its own (not bench/apps), so the other benchmarks' workers never
 * load them.
 *
 * - `orch/child`: a silent no-op (the children, and the plain-drain comparison);
 * - `orch/parent`: enqueues `n` children one `ctx.enqueue` at a time, awaits them all,
 *   returns how many succeeded; it marks (module state, the bench runs the worker in
 *   this process) when its first run started and when that run had enqueued them all;
 * - `orch/sleeper`: parks for a day (`ctx.sleep`);
 * - `orch/waiter`: parks until a signal that never comes (`ctx.waitForSignal`, no timeout).
 */
import { Effect, Schema } from "effect"
import { Job } from "../../../src/index.ts"

export const orchChild = Job.make({
  id: "orch/child",
  label: "Orchestration bench child (no-op)",
  queue: "orch",
  payload: Schema.Struct({ n: Schema.Number }),
  handler: () => Effect.void
})

/** Wall-clock marks of the parent's runs (Date.now, comparable with the store's ms). */
export const parentMarks = { firstRunAt: 0, enqueuedAt: 0, runs: 0, lastRunAt: 0 }

export const orchParent = Job.make({
  id: "orch/parent",
  label: "Orchestration bench parent (fan-out / fan-in)",
  queue: "orch",
  payload: Schema.Struct({ n: Schema.Number }),
  handler: ({ n }, ctx) =>
    Effect.gen(function*() {
      parentMarks.runs++
      parentMarks.lastRunAt = Date.now()
      const first = parentMarks.runs === 1
      if (first) parentMarks.firstRunAt = parentMarks.lastRunAt
      const ids: Array<string> = new Array(n)
      for (let i = 0; i < n; i++) ids[i] = yield* ctx.enqueue(`c${i}`, orchChild, { n: i })
      if (first) parentMarks.enqueuedAt = Date.now()
      const outcomes = yield* ctx.awaitChildren("all", ids)
      return outcomes.filter((o) => o.state === "succeeded").length
    })
})

export const orchSleeper = Job.make({
  id: "orch/sleeper",
  label: "Orchestration bench sleeper (a day)",
  queue: "orch",
  payload: Schema.Struct({ n: Schema.Number }),
  handler: (_, ctx) => ctx.sleep("day", "1 day")
})

export const orchWaiter = Job.make({
  id: "orch/waiter",
  label: "Orchestration bench waiter (a signal that never comes)",
  queue: "orch",
  payload: Schema.Struct({ n: Schema.Number }),
  handler: (_, ctx) => Effect.asVoid(ctx.waitForSignal("never", { schema: Schema.Struct({}) }))
})
