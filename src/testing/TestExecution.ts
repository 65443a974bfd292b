/**
 * What a test sees of one execution: the stored row with its attempts, its durable
 * steps (outputs parsed back from JSON) and the log lines its handler wrote, all read
 * from the real store after the actors recorded them.
 */
import { Effect } from "effect"
import { ExecutionNotFound } from "../jobs/errors.ts"
import type { Attempt, Execution } from "../store/Execution.ts"
import type { Store, StoreError } from "../store/Store.ts"

/** One stored step, its output decoded from JSON. */
export interface TestStep {
  readonly name: string
  /** The attempt that ran it (later attempts reuse it). */
  readonly attempt: number
  readonly output: unknown
  readonly createdAt: number
}

/** One captured handler log line. */
export interface TestLog {
  readonly attempt: number
  readonly at: number
  readonly level: string
  readonly message: string
}

/** An execution with everything recorded about it. */
export interface TestExecution extends Execution {
  readonly attempts: ReadonlyArray<Attempt>
  readonly steps: ReadonlyArray<TestStep>
  readonly logs: ReadonlyArray<TestLog>
  /** Log lines dropped because the LogSink was full (0 in any ordinary test). */
  readonly droppedLogs: number
}

const parse = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

/** Reads an execution and what was recorded about it; fails with ExecutionNotFound for an unknown id. */
export const read = (store: Store["Service"], id: string): Effect.Effect<TestExecution, ExecutionNotFound | StoreError> =>
  Effect.gen(function*() {
    const execution = yield* store.executionsGet(id)
    if (!execution) return yield* new ExecutionNotFound({ id, message: `no execution ${id}` })
    const attempts = yield* store.attemptsList(id)
    const steps = yield* store.stepsList(id)
    const logs = yield* store.logsList(id)
    return {
      ...execution,
      attempts,
      steps: steps.map((s) => ({ name: s.name, attempt: s.attempt, output: parse(s.output), createdAt: s.createdAt })),
      logs: logs.lines.map((l) => ({ attempt: l.attempt, at: l.at, level: l.level, message: l.message })),
      droppedLogs: logs.drops.reduce((n, d) => n + d.dropped, 0)
    }
  })
