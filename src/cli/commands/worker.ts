/**
 * `roster worker`: claims and runs executions until SIGTERM/SIGINT (graceful: stop
 * claiming, let in-flight handlers finish within the grace period, release the rest),
 * or, with `--exit-when-idle`, until no due work is left; exits 1 when the database
 * cannot be used (a corrupt file).
 */
import { Clock, Effect, Option } from "effect"
import { Command, Flag } from "effect/cli"
import { Store } from "../../store/Store.ts"
import { Core } from "../../runtime/Core.ts"
import * as ProcessGuard from "../../runtime/ProcessGuard.ts"
import * as Worker from "../../runtime/Worker.ts"
import { concurrencyRange, readEnvSetting } from "../../runtime/ConfigRules.ts"
import { runtimeLayer } from "../Environment.ts"
import { CliFailure } from "../Output.ts"

/** `--concurrency`, when given: a usage error outside the queue concurrency range (0 used to be ignored, a negative number taken). */
export const concurrencyFlag = (flag: Option.Option<number>) =>
  Option.isNone(flag) || (flag.value >= concurrencyRange.min && flag.value <= concurrencyRange.max)
    ? Effect.succeed(Option.getOrUndefined(flag))
    : Effect.fail(new CliFailure(`--concurrency must be a whole number from ${concurrencyRange.min} to ${concurrencyRange.max}, got ${flag.value}`, 2))

/**
 * Polls until the worker has nothing in flight and the store has no work for it within
 * the horizon: a retry or delayed execution due within ROSTER_IDLE_HORIZON_MS, or a
 * lease expiring within it, still counts as work.
 */
const untilIdle = (handle: Worker.WorkerHandle, idleHorizonMs: number) =>
  Effect.gen(function*() {
    const store = yield* Store
    const core = yield* Core
    const queues = handle.queues.map((q) => ({
      queue: q.name,
      jobs: [...core.registry.jobs.values()].filter((j) => j.queue === q.name).map((j) => j.id)
    }))
    while (true) {
      yield* Effect.sleep(100)
      if ((yield* handle.pool.size) > 0) continue
      const now = yield* Clock.currentTimeMillis
      if (!(yield* store.executionsHasWork({ queues, now: now + idleHorizonMs }))) return
    }
  })

/** The worker command. */
export const worker = Command.make(
  "worker",
  {
    queue: Flag.String("queue").pipe(Flag.withDescription("a queue to serve (repeatable; default: all declared queues)"), Flag.atLeast(0)),
    concurrency: Flag.Int("concurrency").pipe(Flag.withDescription("executions run at once per queue (overrides config)"), Flag.optional),
    exitWhenIdle: Flag.Boolean("exit-when-idle").pipe(Flag.withDescription("exit 0 once no due work is left"), Flag.withDefault(false)),
    metricsPort: Flag.Int("metrics-port").pipe(Flag.withDescription("serve Prometheus metrics at http://127.0.0.1:PORT/metrics (0 picks a free port)"), Flag.optional)
  },
  (flags) =>
    Effect.scoped(
      Effect.gen(function*() {
        yield* ProcessGuard.install
        const concurrency = yield* concurrencyFlag(flags.concurrency)
        const idleHorizonMs = yield* readEnvSetting("ROSTER_IDLE_HORIZON_MS")
        // Loaded only when asked for: the exporter brings Effect's HTTP modules (~40 ms of every start).
        if (Option.isSome(flags.metricsPort)) {
          const port = flags.metricsPort.value
          yield* Effect.flatMap(Effect.promise(() => import("../../runtime/MetricsExporter.ts")), (m) => m.serve({ port }))
        }
        const handle = yield* Worker.start({ queues: flags.queue, concurrency })
        if (flags.exitWhenIdle) {
          yield* Effect.raceFirst(untilIdle(handle, idleHorizonMs), handle.broken)
          yield* Effect.logInfo("no due work left; exiting")
        } else {
          yield* handle.broken
        }
      })
    ).pipe(Effect.provide(runtimeLayer))
).pipe(Command.withDescription("Run a worker: claim and run executions of the Jobs under the apps folder"))
