/**
 * `roster workers list [--json]`: the worker processes registered in the database, with
 * what they serve and when they were last seen. A worker that stopped cleanly is gone;
 * one that was killed shows `stale: true` once its last refresh is older than its
 * staleness window (the longer of three heartbeats and its lease, see WorkerRules.ts).
 */
import { Clock, Effect } from "effect"
import { Command, Flag } from "effect/cli"
import { Store, type LiveWorker } from "../../store/Store.ts"
import { storeLayer } from "../Environment.ts"
import { iso, printJson, printLine, table } from "../Output.ts"

/** A worker as `workers list --json` prints it. */
export const workerJson = (w: LiveWorker) => ({
  id: w.id,
  host: w.host,
  pid: w.pid,
  queues: w.queues,
  jobs: w.jobs,
  version: w.version,
  startedAt: iso(w.startedAt),
  lastSeenAt: iso(w.lastSeenAt),
  staleAfterMs: w.staleAfterMs,
  stale: w.stale
})

const list = Command.make("list", { json: Flag.Boolean("json").pipe(Flag.withDescription("print one JSON document"), Flag.withDefault(false)) }, (flags) =>
  Effect.gen(function*() {
    const store = yield* Store
    const now = yield* Clock.currentTimeMillis
    const workers = yield* store.workersList({ now })
    if (flags.json) return yield* printJson(workers.map(workerJson))
    if (workers.length === 0) return yield* printLine("no workers registered")
    yield* printLine(table(
      ["ID", "HOST", "PID", "QUEUES", "JOBS", "STARTED", "LAST SEEN", "STATE"],
      workers.map((w) => [w.id, w.host, String(w.pid), w.queues.join(","), String(w.jobs.length), iso(w.startedAt)!, iso(w.lastSeenAt)!, w.stale ? "stale" : "live"])
    ))
  }).pipe(Effect.provide(storeLayer))).pipe(Command.withDescription("List registered worker processes (stale: not seen within its staleness window)"))

/** The workers command group. */
export const workers = Command.make("workers").pipe(
  Command.withDescription("Inspect worker processes"),
  Command.withSubcommands([list])
)
