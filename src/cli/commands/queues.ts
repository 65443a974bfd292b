/**
 * `roster queues list|pause|resume`: see every queue's pause state, limits and counts
 * (with the due work each limit holds back, FlowExplain.ts), and pause
 * or resume one on the database (every worker sees it at its next claim). `pause`
 * refuses a queue this config does not declare, naming the declared ones, so a typo
 * does not store a pause nobody serves; `resume` also takes any queue stored as paused
 * (paused from another config). The store itself accepts any name (QueueRules.ts).
 */
import { Effect } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { Core } from "../../runtime/Core.ts"
import { Client } from "../../runtime/Client.ts"
import type { HeldBack } from "../../store/FlowExplain.ts"
import { undeclaredQueue } from "../../store/QueueRules.ts"
import { Store } from "../../store/Store.ts"
import { runtimeLayerExisting } from "../Environment.ts"
import { CliFailure, iso, printJson, printLine, table } from "../Output.ts"

const json = Flag.Boolean("json").pipe(Flag.withDescription("print one JSON document"), Flag.withDefault(false))
const nameArg = Argument.String("queue").pipe(Argument.withDescription("the queue name"))

/** Runs a command on a database that must exist: pausing never creates one. */
const run = <A, E, R>(effect: Effect.Effect<A, E, R>) => effect.pipe(Effect.provide(runtimeLayerExisting))

/** Refuses (exit 2) a queue this config does not declare, unless resuming one stored as paused. */
const checkDeclared = (name: string, action: "pause" | "resume") =>
  Effect.gen(function*() {
    const core = yield* Core
    const stored = action === "resume" ? yield* Store.use((s) => s.queuesList) : []
    const refusal = undeclaredQueue(name, core.registry.queues.keys(), stored, action)
    if (refusal !== null) return yield* Effect.fail(new CliFailure(refusal, 2))
  })

/** Held-back counts as one cell: `3 global, 1 key` (causes with none left out), or `-`. */
const heldBackText = (held: HeldBack): string => {
  const parts = [
    [held.paused, "paused"],
    [held.globalConcurrency, "global"],
    [held.keyConcurrency, "key"],
    [held.rateLimit, "rate"]
  ] as const
  const shown = parts.filter(([n]) => n > 0).map(([n, what]) => `${n} ${what}`)
  return shown.length === 0 ? "-" : shown.join(", ")
}

const list = Command.make("list", { json }, (flags) =>
  run(Effect.gen(function*() {
    const queues = yield* Client.use((c) => c.queues())
    if (flags.json) return yield* printJson(queues.map((q) => ({ ...q, pausedAt: iso(q.pausedAt) })))
    yield* printLine(table(
      ["QUEUE", "STATE", "CONCURRENCY", "GLOBAL", "RATE LIMIT", "QUEUED", "RUNNING", "DUE", "HELD BACK"],
      queues.map((q) => [
        q.declared ? q.name : `${q.name} (not declared here)`,
        q.paused ? `paused since ${iso(q.pausedAt)}` : "active",
        q.concurrency === null ? "-" : String(q.concurrency),
        q.globalConcurrency === null ? "-" : String(q.globalConcurrency),
        q.rateLimit === null ? "-" : `${q.rateLimit.limit}/${q.rateLimit.period}`,
        String(q.queued),
        String(q.running),
        String(q.due),
        heldBackText(q.heldBack)
      ])
    ))
  }))).pipe(Command.withDescription("List queues: pause state, limits, queued, running and due counts, and due work held back by each cause"))

const pause = Command.make("pause", { queue: nameArg }, (flags) =>
  run(Effect.gen(function*() {
    yield* checkDeclared(flags.queue, "pause")
    const changed = yield* Client.use((c) => c.pauseQueue(flags.queue))
    yield* printLine(changed ? `paused ${flags.queue}` : `${flags.queue} was already paused`)
  }))).pipe(Command.withDescription("Pause a queue: no worker claims from it until resumed (running executions finish; enqueues are still accepted)"))

const resume = Command.make("resume", { queue: nameArg }, (flags) =>
  run(Effect.gen(function*() {
    yield* checkDeclared(flags.queue, "resume")
    const changed = yield* Client.use((c) => c.resumeQueue(flags.queue))
    yield* printLine(changed ? `resumed ${flags.queue}` : `${flags.queue} was not paused`)
  }))).pipe(Command.withDescription("Resume a paused queue: workers claim from it again within a poll"))

/** The queues command group. */
export const queues = Command.make("queues").pipe(
  Command.withDescription("Inspect, pause and resume queues"),
  Command.withSubcommands([list, pause, resume])
)
