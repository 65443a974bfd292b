/**
 * `roster schedules list|show|history|pause|resume|trigger|create|update|delete`.
 * Reads have `--json`; writes print what they did.
 */
import { Clock, Effect, Option } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import type { ScheduleFire, StoredSchedule } from "../../store/ScheduleStore.ts"
import { nextFires, Schedules, type StudioScheduleInput } from "../../runtime/Schedules.ts"
import { runtimeLayer, runtimeLayerExisting } from "../Environment.ts"
import { parseStored } from "../../jobs/JsonText.ts"
import { CliFailure, iso, printJson, printLine, table } from "../Output.ts"

const json = Flag.Boolean("json").pipe(Flag.withDescription("print one JSON document"), Flag.withDefault(false))
const idArg = Argument.String("id").pipe(Argument.withDescription("the schedule id, <app>/<schedule>"))

const summary = (s: StoredSchedule, now: number) => ({
  id: s.id,
  source: s.source,
  job: s.job,
  cron: s.cron,
  everyMs: s.everyMs,
  timezone: s.timezone,
  enabled: s.enabled,
  paused: s.paused,
  misfire: s.misfire,
  overlap: s.overlap,
  nextDueAt: iso(s.nextDueAt),
  lastDueAt: iso(s.lastDueAt),
  retiredAt: iso(s.retiredAt),
  nextFires: nextFires(s, now).map((t) => iso(t))
})

const fireJson = (f: ScheduleFire) => ({ dueAt: iso(f.dueAt), enqueuedAt: iso(f.enqueuedAt), outcome: f.outcome, executionId: f.executionId, error: f.error })

/** Runs a command on a database that must exist: reads and changes to schedules never create one. */
const run = <A, E, R>(effect: Effect.Effect<A, E, R>) => effect.pipe(Effect.provide(runtimeLayerExisting))

const list = Command.make("list", { json, all: Flag.Boolean("all").pipe(Flag.withDescription("include retired file schedules"), Flag.withDefault(false)) }, (flags) =>
  run(Effect.gen(function*() {
    const rows = yield* Schedules.list({ includeRetired: flags.all })
    const now = yield* Clock.currentTimeMillis
    if (flags.json) return yield* printJson(rows.map((s) => summary(s, now)))
    if (rows.length === 0) return yield* printLine("no schedules")
    yield* printLine(table(
      ["ID", "SOURCE", "JOB", "TRIGGER", "STATE", "NEXT"],
      rows.map((s) => [s.id, s.source, s.job, s.cron ? `${s.cron} ${s.timezone}` : `every ${s.everyMs} ms`, s.retiredAt ? "retired" : s.paused ? "paused" : s.enabled ? "active" : "disabled", iso(s.nextDueAt) ?? "-"])
    ))
  }))).pipe(Command.withDescription("List schedules"))

const show = Command.make("show", { id: idArg, json }, (flags) =>
  run(Effect.gen(function*() {
    const s = yield* Schedules.get(flags.id)
    const now = yield* Clock.currentTimeMillis
    const history = yield* Schedules.history(flags.id, 10)
    const detail = { ...summary(s, now), payload: parseStored(s.payload), label: s.label, history: history.map(fireJson) }
    if (flags.json) return yield* printJson(detail)
    yield* printLine(`${s.id} (${s.source}) → ${s.job}  ${s.cron ? `cron "${s.cron}" ${s.timezone}` : `every ${s.everyMs} ms`}  misfire ${s.misfire}, overlap ${s.overlap}${s.paused ? "  PAUSED" : ""}`)
    yield* printLine(`payload: ${s.payload}`)
    yield* printLine(`next fires: ${detail.nextFires.join(", ") || "none"}`)
    for (const f of history) yield* printLine(`  ${iso(f.dueAt)} ${f.outcome}${f.executionId ? ` ${f.executionId}` : ""}${f.error ? ` (${f.error})` : ""}`)
  }))).pipe(Command.withDescription("Show a schedule with its next fires and recent history"))

const history = Command.make("history", { id: idArg, json, limit: Flag.Int("limit").pipe(Flag.withDefault(50)) }, (flags) =>
  run(Effect.gen(function*() {
    const fires = yield* Schedules.history(flags.id, flags.limit)
    if (flags.json) return yield* printJson(fires.map(fireJson))
    if (fires.length === 0) return yield* printLine("no fires yet")
    yield* printLine(table(["DUE", "ENQUEUED", "OUTCOME", "EXECUTION", "ERROR"], fires.map((f) => [iso(f.dueAt)!, iso(f.enqueuedAt)!, f.outcome, f.executionId ?? "", f.error ?? ""])))
  }))).pipe(Command.withDescription("Fires of a schedule, newest first"))

const pause = Command.make("pause", { id: idArg }, (flags) =>
  run(Effect.andThen(Schedules.pause(flags.id), printLine(`paused ${flags.id}`)))).pipe(Command.withDescription("Pause a schedule (survives the file sync)"))

const resume = Command.make("resume", { id: idArg }, (flags) =>
  run(Effect.flatMap(Schedules.resume(flags.id), (s) => printLine(`resumed ${flags.id}; next fire ${iso(s.nextDueAt)}`)))).pipe(
    Command.withDescription("Resume a paused schedule from its next fire (missed fires are not made up)")
  )

const trigger = Command.make("trigger", { id: idArg, json }, (flags) =>
  run(Effect.flatMap(Schedules.trigger(flags.id), (r) => (flags.json ? printJson(r) : printLine(`enqueued ${r.id} for ${flags.id}`))))).pipe(
    Command.withDescription("Run now: enqueue an ordinary execution of the schedule's Job, linked to it")
  )

const studioFlags = {
  job: Flag.String("job").pipe(Flag.withDescription("the target Job, <app>/<job>"), Flag.optional),
  cron: Flag.String("cron").pipe(Flag.withDescription("cron expression, 5 or 6 fields"), Flag.optional),
  everyMs: Flag.Int("every-ms").pipe(Flag.withDescription("fixed interval in ms (instead of --cron)"), Flag.optional),
  timezone: Flag.String("timezone").pipe(Flag.withDescription("IANA zone (default UTC)"), Flag.optional),
  payload: Flag.String("payload").pipe(Flag.withDescription("payload JSON (default {})"), Flag.optional),
  misfire: Flag.Literals("misfire", ["once", "skip", "all"]).pipe(Flag.optional),
  overlap: Flag.Literals("overlap", ["allow", "skip"]).pipe(Flag.optional)
}

type StudioFlags = { [K in keyof typeof studioFlags]: Option.Option<any> }

const parsePayload = (raw: Option.Option<string>) =>
  Option.isNone(raw) ? Effect.succeed(undefined) : Effect.try({ try: () => JSON.parse(raw.value) as unknown, catch: (e) => new CliFailure(`--payload is not valid JSON: ${(e as Error).message}`, 2) })

const inputOf = (id: string, flags: StudioFlags, base?: StoredSchedule) =>
  Effect.gen(function*() {
    const payload = yield* parsePayload(flags.payload)
    const cron = Option.getOrUndefined(flags.cron) as string | undefined
    const everyMs = Option.getOrUndefined(flags.everyMs) as number | undefined
    const keepTrigger = cron === undefined && everyMs === undefined
    return {
      id,
      job: Option.getOrUndefined(flags.job) ?? base?.job ?? "",
      cron: keepTrigger ? base?.cron ?? undefined : cron,
      everyMs: keepTrigger ? base?.everyMs ?? undefined : everyMs,
      timezone: Option.getOrUndefined(flags.timezone) ?? base?.timezone,
      payload: payload ?? (base ? JSON.parse(base.payload) : undefined),
      misfire: Option.getOrUndefined(flags.misfire) ?? base?.misfire,
      overlap: Option.getOrUndefined(flags.overlap) ?? base?.overlap
    } satisfies StudioScheduleInput
  })

// Creating a studio schedule is new work, like an enqueue: it may create the database.
const create = Command.make("create", { id: Flag.String("id").pipe(Flag.withDescription("the schedule id, <app>/<schedule>")), ...studioFlags }, (flags) =>
  Effect.gen(function*() {
    if (Option.isNone(flags.job)) return yield* Effect.fail(new CliFailure("--job is required", 2))
    const s = yield* Schedules.create(yield* inputOf(flags.id, flags))
    yield* printLine(`created ${s.id}; next fire ${iso(s.nextDueAt)}`)
  }).pipe(Effect.provide(runtimeLayer))).pipe(Command.withDescription("Create a studio schedule (managed at runtime, never touched by the file sync)"))

const update = Command.make("update", { id: idArg, ...studioFlags }, (flags) =>
  run(Effect.gen(function*() {
    const base = yield* Schedules.get(flags.id)
    const s = yield* Schedules.update(yield* inputOf(flags.id, flags, base))
    yield* printLine(`updated ${s.id}; next fire ${iso(s.nextDueAt)}`)
  }))).pipe(Command.withDescription("Update a studio schedule"))

const remove = Command.make("delete", { id: idArg }, (flags) =>
  run(Effect.andThen(Schedules.delete(flags.id), printLine(`deleted ${flags.id}`)))).pipe(Command.withDescription("Delete a studio schedule"))

/** The schedules command group. */
export const schedules = Command.make("schedules").pipe(
  Command.withDescription("Inspect and steer schedules"),
  Command.withSubcommands([list, show, history, pause, resume, trigger, create, update, remove])
)
