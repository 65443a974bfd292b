/**
 * `roster executions list|show|logs|count|cancel|retry|wait|signal`: read executions
 * without SQL, act on them, wait for one to end (woken by commits, see Client.waitFor)
 * and send one a signal (Client.signal). `show` says why a queued, due execution has not
 * started (FlowExplain.ts), and shows its parent, children, current wait and signals.
 */
import { Clock, Duration, Effect, Option } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { states, type Execution, type ExecutionState, type LogLine } from "../../store/Execution.ts"
import { Store } from "../../store/Store.ts"
import { Client } from "../../runtime/Client.ts"
import { loadConfig, loadRegistry, runtimeLayerExisting, storeLayer } from "../Environment.ts"
import { fromConfig } from "../../jobs/QueueConfig.ts"
import { limitsOfQueue, whyNotStarted } from "../../store/FlowExplain.ts"
import { parseStored } from "../../jobs/JsonText.ts"
import { isoTime, maxTime, minTime } from "../../jobs/TimeRange.ts"
import { type Signal, waitText, type Wait } from "../../jobs/Wait.ts"
import { CliFailure, describeCause, executionSummary, printJson, printLine, table } from "../Output.ts"

const logJson = (l: LogLine) => ({
  attempt: l.attempt,
  at: isoTime(l.at),
  level: l.level,
  message: l.message,
  annotations: l.annotations === null ? null : parseStored(l.annotations)
})

const logText = (l: LogLine) => `${isoTime(l.at)} #${l.attempt} ${l.level.padEnd(7)} ${l.message}`

const json = Flag.Boolean("json").pipe(Flag.withDescription("print one JSON document"), Flag.withDefault(false))

const filterFlags = {
  job: Flag.String("job").pipe(Flag.withDescription("only this Job id"), Flag.optional),
  queue: Flag.String("queue").pipe(Flag.withDescription("only this queue"), Flag.optional),
  state: Flag.Literals("state", states).pipe(Flag.withDescription("only this state"), Flag.optional),
  parent: Flag.String("parent").pipe(Flag.withDescription("only the children of this execution (made by its ctx.enqueue)"), Flag.optional),
  since: Flag.String("since").pipe(Flag.withDescription("only created since: an ISO time or a duration like 15m, 2h, 7d"), Flag.optional)
}

const units: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }

/** Parses `--since`: an ISO time, or a duration back from now. */
const parseSince = (raw: string) =>
  Effect.gen(function*() {
    const m = /^(\d+)([smhd])$/.exec(raw.trim())
    // Held to the stored range (TimeRange.ts): "since 100000d" means since the first time, not a number no store compares.
    const inRange = (t: number) => Math.min(maxTime, Math.max(minTime, t))
    if (m) return inRange((yield* Clock.currentTimeMillis) - Number(m[1]) * (units[m[2]!] ?? 0))
    const t = Date.parse(raw)
    if (Number.isNaN(t)) return yield* Effect.fail(new CliFailure(`--since "${raw}" is neither an ISO time nor a duration like 15m`, 2))
    return inRange(t)
  })

const toFilter = (flags: {
  job: Option.Option<string>
  queue: Option.Option<string>
  state: Option.Option<ExecutionState>
  since: Option.Option<string>
  parent: Option.Option<string>
}) =>
  Effect.gen(function*() {
    return {
      job: Option.getOrUndefined(flags.job),
      queue: Option.getOrUndefined(flags.queue),
      state: Option.getOrUndefined(flags.state),
      since: Option.isSome(flags.since) ? yield* parseSince(flags.since.value) : undefined,
      parentId: Option.getOrUndefined(flags.parent)
    }
  })

const list = Command.make(
  "list",
  { ...filterFlags, limit: Flag.Int("limit").pipe(Flag.withDescription("most rows (default 50)"), Flag.withDefault(50)), json },
  (flags) =>
    Effect.gen(function*() {
      if (flags.limit < 1 || flags.limit > 10_000) return yield* Effect.fail(new CliFailure(`--limit must be from 1 to 10000, got ${flags.limit}`, 2))
      const store = yield* Store
      const rows = yield* store.executionsList({ ...(yield* toFilter(flags)), limit: flags.limit })
      if (flags.json) return yield* printJson(rows.map(executionSummary))
      if (rows.length === 0) return yield* printLine("no executions")
      yield* printLine(table(
        ["ID", "JOB", "STATE", "ATTEMPT", "CREATED", "ERROR"],
        rows.map((e) => [e.id, e.job, e.state, `${e.attempt}/${e.maxAttempts}`, isoTime(e.createdAt), e.error?.message.slice(0, 60) ?? ""])
      ))
    }).pipe(Effect.provide(storeLayer))
).pipe(Command.withDescription("List executions, newest first"))

/**
 * The limits a claim of `queue` applies under this config (FlowExplain.limitsOfQueue):
 * its Jobs' too when the apps load; the queue's own alone when they do not, so `show`
 * still works on a database whose apps are broken here.
 */
const limitsFor = (queue: string) =>
  Effect.gen(function*() {
    const config = yield* loadConfig
    const registry = yield* Effect.option(loadRegistry(config))
    if (Option.isSome(registry)) return limitsOfQueue(registry.value, queue)
    return limitsOfQueue({ queues: new Map(fromConfig(config.queues).map((q) => [q.name, q])), jobs: new Map() }, queue)
  })

/** Why a queued, due execution has not started (FlowExplain.whyNotStarted); null otherwise. */
const waitingForOf = (e: Execution) =>
  Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    if ((e.state !== "queued" && e.state !== "waiting") || e.runAt > now) return null
    const store = yield* Store
    const limits = yield* limitsFor(e.queue)
    const [flow, workers] = yield* Effect.all([store.queuesFlow({ queue: e.queue, now }), store.workersList({ now })])
    return whyNotStarted(e, limits, flow, now, workers)
  })

/** The most children `show` lists (newest first); `childCounts` counts them all. */
const maxListedChildren = 20

/** A wait as JSON: its stored fields with times as ISO text, its one line, and when it is due by the clock (null: when woken). */
const waitJson = (wait: Wait, runAt: number) => {
  const until = wait.kind === "children" ? {} : { until: wait.until === null ? null : isoTime(wait.until) }
  return { ...wait, ...until, text: waitText(wait), dueAt: runAt >= maxTime ? null : isoTime(runAt) }
}

/** When a waiting execution is due, where its wait's line does not say it already: woken (due earlier than the wait's end). */
const dueText = (wait: Wait, runAt: number) => {
  const until = wait.kind === "children" ? null : wait.until
  if (runAt >= maxTime || runAt === until) return ""
  return `; woken, due at ${isoTime(runAt)}`
}

const signalJson = (s: Signal) => ({
  seq: s.seq,
  name: s.name,
  payload: parseStored(s.payload),
  sentAt: isoTime(s.sentAt),
  consumedAt: s.consumedAt === null ? null : isoTime(s.consumedAt),
  taken: s.consumedAt !== null
})

/** An execution's children (the newest {@link maxListedChildren}) and counts by state of all of them. */
const childrenOf = (id: string) =>
  Effect.gen(function*() {
    const store = yield* Store
    const [rows, counts] = yield* Effect.all([store.executionsList({ parentId: id, limit: maxListedChildren }), store.executionsCount({ parentId: id })])
    const total = Object.values(counts).reduce((n, c) => n + c, 0)
    return { listed: rows.map((c) => ({ id: c.id, job: c.job, state: c.state, parentStep: c.parentStep })), counts, total }
  })

/**
 * The `show --json` document of an execution: its summary with payload, result, attempts,
 * steps and logs, its flow keys, `waitingFor` (why it has not started when queued and
 * due), its parent, its current wait (null unless waiting), its children (the newest 20,
 * with counts by state of all) and the signals sent to it.
 */
const detailOf = (e: Execution) =>
  Effect.gen(function*() {
    const store = yield* Store
    const attempts = yield* store.attemptsList(e.id)
    const steps = yield* store.stepsList(e.id)
    const logs = yield* store.logsList(e.id)
    const waitingFor = yield* waitingForOf(e)
    const children = yield* childrenOf(e.id)
    const signals = yield* store.signalsList(e.id)
    const detail = {
      ...executionSummary(e),
      concurrencyKey: e.concurrencyKey,
      rateKey: e.rateKey,
      waitingFor,
      parentId: e.parentId,
      parentStep: e.parentStep,
      wait: e.state === "waiting" && e.wait !== null ? waitJson(e.wait, e.runAt) : null,
      children: children.listed.map(({ id, job, state }) => ({ id, job, state })),
      childCounts: children.counts,
      signals: signals.map(signalJson),
      payload: e.payload,
      result: e.result,
      attempts: attempts.map((a) => ({ ...a, startedAt: isoTime(a.startedAt), finishedAt: isoTime(a.finishedAt) })),
      steps: steps.map((s) => ({ name: s.name, attempt: s.attempt, output: parseStored(s.output), createdAt: isoTime(s.createdAt) })),
      logs: logs.lines.map(logJson),
      droppedLogLines: logs.drops.map((d) => ({ attempt: d.attempt, dropped: d.dropped }))
    }
    return { detail, logs, children, signals }
  })

/** The most signals `show` prints (--json has them all). */
const maxListedSignals = 20

const clipText = (text: string, max: number) => (text.length > max ? `${text.slice(0, max - 1)}…` : text)

const show = Command.make(
  "show",
  { id: Argument.String("id").pipe(Argument.withDescription("the execution id")), json },
  (flags) =>
    Effect.gen(function*() {
      const store = yield* Store
      const e = yield* store.executionsGet(flags.id)
      if (!e) return yield* Effect.fail(new CliFailure(`no execution ${flags.id}`))
      const { detail, logs, children, signals } = yield* detailOf(e)
      if (flags.json) return yield* printJson(detail)
      yield* printLine(`${e.id}  ${e.job}  ${e.state}  attempt ${e.attempt}/${e.maxAttempts}  queue ${e.queue}`)
      if (e.parentId !== null) yield* printLine(`parent: ${e.parentId} (step ${JSON.stringify(e.parentStep)})`)
      if (e.concurrencyKey !== null) yield* printLine(`concurrency key: ${JSON.stringify(e.concurrencyKey)}`)
      if (e.rateKey !== null) yield* printLine(`rate key: ${JSON.stringify(e.rateKey)}`)
      if (detail.waitingFor !== null) yield* printLine(`not started: ${detail.waitingFor}`)
      if (detail.wait !== null && e.wait !== null) yield* printLine(`waiting for: ${detail.wait.text}${dueText(e.wait, e.runAt)}`)
      yield* printLine(`payload: ${JSON.stringify(e.payload)}`)
      if (e.result !== null) yield* printLine(`result:  ${JSON.stringify(e.result)}`)
      if (e.error) yield* printLine(`error:   ${e.error.tag}: ${e.error.message}`)
      for (const a of detail.attempts) yield* printLine(`  attempt ${a.attempt} ${a.outcome} on ${a.worker} ${a.startedAt} → ${a.finishedAt}${a.error ? `: ${a.error.message}` : ""}`)
      for (const s of detail.steps) yield* printLine(`  step ${s.name} (attempt ${s.attempt}): ${JSON.stringify(s.output)}`)
      if (children.total > 0) {
        const byState = states.filter((s) => children.counts[s] > 0).map((s) => `${children.counts[s]} ${s}`).join(", ")
        yield* printLine(`children: ${children.total} (${byState})${children.total > children.listed.length ? `, newest ${children.listed.length} listed` : ""}`)
        for (const c of children.listed) yield* printLine(`  child ${c.id}  ${c.job}  ${c.state}${c.parentStep === null ? "" : `  step ${c.parentStep}`}`)
        if (children.total > children.listed.length) yield* printLine(`  and ${children.total - children.listed.length} more: roster executions list --parent ${e.id}`)
      }
      for (const s of signals.slice(0, maxListedSignals)) {
        yield* printLine(`  signal ${s.name} sent ${isoTime(s.sentAt)}: ${s.consumedAt === null ? "kept (no wait has taken it)" : `taken ${isoTime(s.consumedAt)}`}  payload ${clipText(s.payload, 200)}`)
      }
      if (signals.length > maxListedSignals) yield* printLine(`  and ${signals.length - maxListedSignals} more signals: roster executions show ${e.id} --json`)
      for (const l of logs.lines) yield* printLine(`  log  ${logText(l)}`)
      for (const d of logs.drops) yield* printLine(`  log  attempt ${d.attempt}: ${d.dropped} line(s) dropped under back-pressure`)
    }).pipe(Effect.provide(storeLayer))
).pipe(Command.withDescription("Show one execution with its payload, result, attempts, steps, parent, children, wait and signals"))

const logs = Command.make(
  "logs",
  { id: Argument.String("id").pipe(Argument.withDescription("the execution id")), json },
  (flags) =>
    Effect.gen(function*() {
      const store = yield* Store
      if (!(yield* store.executionsGet(flags.id))) return yield* Effect.fail(new CliFailure(`no execution ${flags.id}`))
      const { lines, drops } = yield* store.logsList(flags.id)
      if (flags.json) return yield* printJson({ lines: lines.map(logJson), dropped: drops.map((d) => ({ attempt: d.attempt, dropped: d.dropped })) })
      if (lines.length === 0 && drops.length === 0) return yield* printLine("no logs")
      for (const l of lines) yield* printLine(logText(l))
      for (const d of drops) yield* printLine(`attempt ${d.attempt}: ${d.dropped} line(s) dropped under back-pressure`)
    }).pipe(Effect.provide(storeLayer))
).pipe(Command.withDescription("Print an execution's captured logs, all attempts in order"))

/** Prints `label n/total` on a terminal's stderr, overwriting the line; silent when not a TTY. */
const progress = (label: string, done: number, total: number) =>
  Effect.sync(() => {
    if (process.stderr.isTTY) process.stderr.write(`\r${label} ${done}/${total}${done === total ? "\n" : ""}`)
  })

/** Runs an action on one execution (by id) or on every execution matching filters. */
const bulk = <A>(
  name: "cancel" | "retry",
  act: (client: Client["Service"], id: string) => Effect.Effect<A, { readonly message: string }>,
  describe: (id: string, result: A) => string
) =>
  Command.make(
    name,
    {
      id: Argument.String("id").pipe(Argument.withDescription("the execution id (or use filters)"), Argument.optional),
      ...filterFlags,
      limit: Flag.Int("limit").pipe(Flag.withDescription("most executions acted on with filters (default 10,000)"), Flag.withDefault(10_000)),
      json
    },
    (flags) =>
      Effect.gen(function*() {
        // The store reads at least one row and at most 10,000: --limit 0 would act on one execution.
        if (flags.limit < 1 || flags.limit > 10_000) return yield* Effect.fail(new CliFailure(`--limit must be from 1 to 10000, got ${flags.limit}`, 2))
        const client = yield* Client
        const filter = yield* toFilter(flags)
        const hasFilter = Object.values(filter).some((v) => v !== undefined)
        if (Option.isSome(flags.id) === hasFilter) {
          return yield* Effect.fail(new CliFailure(`give an execution id or filters (--job, --queue, --state, --since, --parent), not both`, 2))
        }
        const ids = Option.isSome(flags.id) ? [flags.id.value] : (yield* client.list({ ...filter, limit: flags.limit })).map((e) => e.id)
        const results: Array<{ id: string; ok: boolean; result?: A; error?: string }> = []
        for (const [i, id] of ids.entries()) {
          const exit = yield* Effect.exit(act(client, id))
          results.push(exit._tag === "Success" ? { id, ok: true, result: exit.value } : { id, ok: false, error: describeCause(exit.cause) })
          if (ids.length > 1) yield* progress(name === "cancel" ? "cancelling" : "retrying", i + 1, ids.length)
        }
        if (flags.json) yield* printJson(Option.isSome(flags.id) ? results[0] : { total: ids.length, ok: results.filter((r) => r.ok).length, results })
        else if (Option.isNone(flags.id) || results[0]!.ok) {
          for (const r of results) yield* printLine(r.ok ? describe(r.id, r.result as A) : `${r.id}: ${r.error}`)
        }
        if (Option.isSome(flags.id) && !results[0]!.ok) return yield* Effect.fail(new CliFailure(results[0]!.error!))
        if (ids.length > 0 && results.every((r) => !r.ok)) return yield* Effect.fail(new CliFailure(`no execution could be ${name === "cancel" ? "cancelled" : "retried"}`))
      }).pipe(Effect.provide(runtimeLayerExisting))
  )

const cancel = bulk("cancel", (c, id) => c.cancel(id), (id, r) => `${id}: ${r === "requested" ? "cancel requested (its worker stops it at the next heartbeat)" : r}`).pipe(
  Command.withDescription("Cancel a queued execution, or ask a running one to stop; with filters, every match")
)

const retry = bulk("retry", (c, id) => c.retry(id), (id, r) => `${id}: retried as ${r.id}`).pipe(
  Command.withDescription("Retry a failed or cancelled execution as a new linked one; with filters, every match")
)

const count = Command.make(
  "count",
  { ...filterFlags, json },
  (flags) =>
    Effect.gen(function*() {
      const store = yield* Store
      const counts = yield* store.executionsCount(yield* toFilter(flags))
      if (flags.json) return yield* printJson(counts)
      yield* printLine(table(["STATE", "COUNT"], Object.entries(counts).map(([s, n]) => [s, String(n)])))
    }).pipe(Effect.provide(storeLayer))
).pipe(Command.withDescription("Count executions by state"))

const durationUnits: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }

/** The longest `--timeout` (what a timer holds: about 24.8 days). */
const maxTimeoutMs = 2 ** 31 - 1

/** Parses `--timeout`: ms (`500`), a short duration (`200ms`, `30s`, `2m`, `1h`) or Effect's spelling (`2 minutes`). */
const parseTimeout = (raw: string) => {
  const text = raw.trim()
  const short = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text)
  const ms = short
    ? Number(short[1]) * (durationUnits[short[2] ?? "ms"] ?? 1)
    : Option.match(Duration.fromInput(text as Duration.Input), { onNone: () => NaN, onSome: Duration.toMillis })
  if (!Number.isFinite(ms) || ms <= 0 || ms > maxTimeoutMs) {
    return Effect.fail(new CliFailure(`--timeout "${raw}" is not a duration from 1 ms to 24 days (like 500, 200ms, 30s, 2m or "2 minutes")`, 2))
  }
  return Effect.succeed(Math.ceil(ms))
}

const wait = Command.make(
  "wait",
  {
    id: Argument.String("id").pipe(Argument.withDescription("the execution id")),
    timeout: Flag.String("timeout").pipe(Flag.withDescription("how long to wait: 500 (ms), 200ms, 30s, 2m, \"2 minutes\" (default 30s)"), Flag.withDefault("30s")),
    json
  },
  (flags) =>
    // The timeout is checked before the database is opened: a usage error whatever the database.
    Effect.flatMap(parseTimeout(flags.timeout), (timeoutMs) => Effect.gen(function*() {
      const client = yield* Client
      const e = yield* client.waitFor(flags.id, { timeout: timeoutMs }).pipe(
        Effect.catchTags({
          ExecutionNotFound: (error) => Effect.fail(new CliFailure(error.message)),
          WaitTimeout: (error) => Effect.fail(new CliFailure(error.message))
        })
      )
      if (flags.json) yield* printJson((yield* detailOf(e)).detail)
      else yield* printLine(`${e.id}  ${e.job}  ${e.state}  attempt ${e.attempt}/${e.maxAttempts}${e.error ? `  ${e.error.tag}: ${e.error.message}` : ""}`)
      if (e.state !== "succeeded") return yield* Effect.fail(new CliFailure(`execution ${e.id} ${e.state}${e.error ? `: ${e.error.message}` : ""}`))
    }).pipe(Effect.provide(runtimeLayerExisting)))
).pipe(Command.withDescription("Wait for an execution to end: exit 0 if it succeeded, 1 if it failed, was cancelled or the timeout passed"))

/** Parses `--payload` of a signal (default null) before anything is opened: not JSON is a usage error. */
const parseSignalPayload = (raw: Option.Option<string>) =>
  Option.isNone(raw)
    ? Effect.succeed(null as unknown)
    : Effect.try({
      try: () => JSON.parse(raw.value) as unknown,
      catch: (e) => new CliFailure(`--payload is not valid JSON: ${(e as Error).message}`, 2)
    })

const signal = Command.make(
  "signal",
  {
    id: Argument.String("id").pipe(Argument.withDescription("the execution id")),
    name: Argument.String("name").pipe(Argument.withDescription("the signal's name, as its ctx.waitForSignal gives it")),
    payload: Flag.String("payload").pipe(Flag.withDescription("the signal's payload as JSON (default null), decoded by the wait's schema"), Flag.optional),
    json
  },
  (flags) =>
    Effect.flatMap(parseSignalPayload(flags.payload), (payload) => Effect.gen(function*() {
      const client = yield* Client
      const exit = yield* Effect.exit(client.signal(flags.id, flags.name, payload))
      if (exit._tag === "Failure") {
        const error = describeCause(exit.cause)
        if (flags.json) yield* printJson({ id: flags.id, name: flags.name, ok: false, error })
        return yield* Effect.fail(new CliFailure(error))
      }
      if (flags.json) return yield* printJson({ id: flags.id, name: flags.name, ok: true, result: exit.value })
      yield* printLine(`sent signal ${flags.name} to ${flags.id} ${exit.value === "Woke" ? "(it was waiting: resumed)" : "(kept for its wait)"}`)
    }).pipe(Effect.provide(runtimeLayerExisting)))
).pipe(Command.withDescription("Send a signal to an execution: a wait for it resumes, or it is kept for a wait to come; refused once the execution has ended"))

/** The executions command group. */
export const executions = Command.make("executions").pipe(
  Command.withDescription("Inspect executions"),
  Command.withSubcommands([list, show, logs, count, cancel, retry, wait, signal])
)
