#!/usr/bin/env bun
/**
 * The `roster` command. Every subcommand's failure is reported as one readable line on
 * stderr; exit codes are 0 ok, 1 failure, 2 usage. SIGTERM/SIGINT interrupt the
 * running command, whose scopes close gracefully (a worker drains), then exit 0.
 * Run directly, it reads roster.config.ts and the apps from disk; the entry that
 * `roster build` generates calls {@link run} with the project baked in instead.
 */
// Sub-path imports: the package index also loads clients (redis) a CLI start does not need.
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeServices from "@effect/platform-node/NodeServices"
import { Cause, Effect, Exit, Logger } from "effect"
import { CliError, Command } from "effect/cli"
import { build } from "./commands/build.ts"
import { dashboard } from "./commands/dashboard.ts"
import { enqueue } from "./commands/enqueue.ts"
import { executions } from "./commands/executions.ts"
import { init } from "./commands/init.ts"
import { check, migrate } from "./commands/migrate.ts"
import { queues } from "./commands/queues.ts"
import { schedules } from "./commands/schedules.ts"
import { dev, scheduler } from "./commands/scheduler.ts"
import { worker } from "./commands/worker.ts"
import { workers } from "./commands/workers.ts"
import { Embedded, type EmbeddedProject } from "./Embedded.ts"
import { stderrLogger } from "../runtime/Logging.ts"
import { describeCause, exitCodeOf } from "./Output.ts"

const roster = Command.make("roster").pipe(
  Command.withDescription("Durable Jobs and Schedules for TypeScript on Bun"),
  Command.withSubcommands([worker, scheduler, dev, dashboard, enqueue, executions, schedules, queues, workers, migrate, check, init, build])
)

/** Logs are one logfmt line each on stderr (Logging.ts), so stdout carries only command output (--json). */
const program = Command.runWith(roster, { version: "0.1.0" })(process.argv.slice(2)).pipe(
  Effect.provide(NodeServices.layer),
  Effect.provide(Logger.layer([stderrLogger])),
  Effect.as(0),
  Effect.catchCause((cause) => {
    if (Cause.hasInterruptsOnly(cause)) return Effect.failCause(cause)
    const failure = Cause.findErrorOption(cause)
    if (failure._tag === "Some" && CliError.isCliError(failure.value)) {
      const e = failure.value
      // Help was printed (with the parse errors, if any) by the CLI itself.
      if (e._tag === "ShowHelp") return Effect.succeed(e.errors.length > 0 ? 2 : 0)
      return Effect.sync(() => (process.stderr.write(`roster: ${e.message}\n`), 2))
    }
    return Effect.sync(() => {
      process.stderr.write(`roster: ${describeCause(cause)}\n`)
      return exitCodeOf(cause)
    })
  })
)

/** Runs the command line; `embedded` is the project a `roster build` binary carries. */
export const run = (embedded?: EmbeddedProject): void =>
  NodeRuntime.runMain(Effect.provideService(program, Embedded, embedded), {
    disableErrorReporting: true,
    teardown: (exit, onExit) => {
      const code = Exit.isSuccess(exit) ? Number(exit.value) : Cause.hasInterruptsOnly(exit.cause) ? 0 : 1
      process.exitCode = code
      onExit(code)
    }
  })

if (import.meta.main) run()
