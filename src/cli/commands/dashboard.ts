/**
 * `roster dashboard [--host H] [--port P]`: serves the web dashboard until
 * SIGTERM/SIGINT. It opens the store and a Client (for retry, cancel and run now) but
 * never runs Jobs, and refuses to start on a SQLite file that does not exist (it would
 * create an empty one where the operator meant another). Binds 127.0.0.1 by default; any other address needs
 * ROSTER_DASHBOARD_TOKEN, without which it refuses to start (exit 1).
 */
import { Effect } from "effect"
import { Command, Flag } from "effect/cli"
import * as Dashboard from "../../dashboard/Server.ts"
import { bindRefusal, tokenFromEnv } from "../../dashboard/Security.ts"
import { runtimeLayerExisting } from "../Environment.ts"
import { CliFailure, printLine } from "../Output.ts"

/** The dashboard command. */
export const dashboard = Command.make(
  "dashboard",
  {
    host: Flag.String("host").pipe(Flag.withDescription("address to bind (default 127.0.0.1; others need ROSTER_DASHBOARD_TOKEN)"), Flag.withDefault("127.0.0.1")),
    port: Flag.Int("port").pipe(Flag.withDescription(`port to listen on (default ${Dashboard.defaultPort}; 0 picks a free one)`), Flag.withDefault(Dashboard.defaultPort))
  },
  (flags) =>
    Effect.gen(function*() {
      const token = yield* tokenFromEnv
      // Refuse before opening anything: an unprotected public bind must not even start.
      const refusal = bindRefusal(flags.host, token)
      if (refusal !== undefined) return yield* Effect.fail(new CliFailure(refusal, 1))
      if (flags.port < 0 || flags.port > 65_535) return yield* Effect.fail(new CliFailure("--port must be between 0 and 65535", 2))
      if (token !== undefined && token.length < 16) yield* Effect.logWarning(`ROSTER_DASHBOARD_TOKEN is only ${token.length} characters; use a long random one (e.g. openssl rand -hex 32)`)
      yield* Effect.scoped(
        Effect.gen(function*() {
          const running = yield* Dashboard.serve({ host: flags.host, port: flags.port, token })
          yield* printLine(`dashboard on ${running.url}${token ? " (token required)" : ""}`)
          yield* Effect.never
        })
      ).pipe(Effect.provide(runtimeLayerExisting))
    })
).pipe(Command.withDescription("Serve the web dashboard (never runs Jobs)"))
