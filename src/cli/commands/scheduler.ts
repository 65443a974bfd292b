/**
 * `roster scheduler` (only enqueues: the leader records fires durably, standbys wait)
 * and `roster dev` (scheduler and worker in one process; fires still go through the
 * durable queue). Both run until a signal, or exit 1 when the database cannot be used
 * (a corrupt file).
 */
import { Effect } from "effect"
import { Command, Flag } from "effect/cli"
import * as ProcessGuard from "../../runtime/ProcessGuard.ts"
import * as SchedulerRuntime from "../../runtime/SchedulerRuntime.ts"
import * as Worker from "../../runtime/Worker.ts"
import { runtimeLayer } from "../Environment.ts"
import { concurrencyFlag } from "./worker.ts"

/** The scheduler command. */
export const scheduler = Command.make("scheduler", {}, () =>
  Effect.scoped(Effect.flatMap(SchedulerRuntime.start(), (s) => s.broken)).pipe(Effect.provide(runtimeLayer))).pipe(
    Command.withDescription("Run the scheduler: record due fires of Schedules and enqueue them (runs no Jobs)")
  )

/** The dev command. */
export const dev = Command.make(
  "dev",
  { concurrency: Flag.Int("concurrency").pipe(Flag.withDescription("executions run at once per queue"), Flag.optional) },
  (flags) =>
    Effect.scoped(
      Effect.gen(function*() {
        yield* ProcessGuard.install
        const worker = yield* Worker.start({ concurrency: yield* concurrencyFlag(flags.concurrency) })
        const scheduler = yield* SchedulerRuntime.start()
        yield* Effect.raceFirst(worker.broken, scheduler.broken)
      })
    ).pipe(Effect.provide(runtimeLayer))
).pipe(Command.withDescription("Development: a scheduler and a worker in one process"))
