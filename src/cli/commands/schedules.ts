/**
 * `roster schedules list|show|history|pause|resume|trigger|create|update|delete|preview`.
 * Reads have `--json`; writes print what they did; `preview` lists the fires of a trigger
 * without a database, through the Trigger functions the Scheduler uses.
 */
import { Clock, Effect, Option } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import type { ScheduleFire, StoredSchedule } from "../../store/ScheduleStore.ts"
import { maxDelayMs, maxTime, rangeText } from "../../jobs/TimeRange.ts"
import * as Trigger from "../../jobs/Trigger.ts"
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

const history = Command.make("history", { id: idArg, json, limit: Flag.Int("limit").pipe(Flag.withDescription("most fires (default 50)"), Flag.withDefault(50)) }, (flags) =>
  run(Effect.gen(function*() {
    if (flags.limit < 1 || flags.limit > 10_000) return yield* Effect.fail(new CliFailure(`--limit must be from 1 to 10000, got ${flags.limit}`, 2))
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

// --- preview ------------------------------------------------------------------------

/** The largest `--count` of `preview`. */
export const maxPreviewCount = 1_000

const instantPattern = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,3}))?)?(Z|[+-]\d{2}:\d{2}))?$/

/**
 * An ISO 8601 instant from 1970 to 9999: a date (midnight UTC) or a date-time with `Z` or
 * an offset. A date-time without one is refused, since it would be read in the local
 * timezone of whichever machine runs the command.
 */
export const parseInstant = (text: string): number | undefined => {
  const m = instantPattern.exec(text.trim())
  if (!m) return undefined
  const [, y, mo, d, h = "00", mi = "00", s = "00", frac = "0", zone = "Z"] = m as unknown as Array<string>
  const year = Number(y), month = Number(mo), day = Number(d), hour = Number(h), minute = Number(mi), second = Number(s)
  if (year < 1970 || month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59) return undefined
  if (day > new Date(Date.UTC(year, month, 0)).getUTCDate()) return undefined
  let offsetMin = 0
  if (zone !== "Z") {
    const oh = Number(zone.slice(1, 3)), om = Number(zone.slice(4, 6))
    if (oh > 23 || om > 59) return undefined
    offsetMin = (zone[0] === "-" ? -1 : 1) * (oh * 60 + om)
  }
  const ms = Date.UTC(year, month - 1, day, hour, minute, second, Number(frac.padEnd(3, "0"))) - offsetMin * 60_000
  return ms >= 0 && ms <= maxTime ? ms : undefined
}

/** The first `count` fires strictly after `from`, as the Scheduler finds them (none past the latest time Roster stores). */
export const previewFires = (trigger: Trigger.Trigger, from: number, count: number): ReadonlyArray<number> =>
  Trigger.firesBetween(trigger, from, maxTime, count)

/** A whole number written in decimal digits, if it is one that fits a double exactly. */
const wholeNumber = (text: string): number | undefined => {
  const n = /^\s*\d{1,15}\s*$/.test(text) ? Number(text) : Number.NaN
  return Number.isSafeInteger(n) ? n : undefined
}

const localTime = (timezone: string) => {
  const f = new Intl.DateTimeFormat("en-CA", {
    timeZone: timezone, hourCycle: "h23", year: "numeric", month: "2-digit", day: "2-digit",
    hour: "2-digit", minute: "2-digit", second: "2-digit", weekday: "short", timeZoneName: "short"
  })
  return (ms: number) => {
    const p: Record<string, string> = Object.fromEntries(f.formatToParts(new Date(ms)).map((part) => [part.type, part.value]))
    return `${p.weekday} ${p.year}-${p.month}-${p.day} ${p.hour}:${p.minute}:${p.second} ${p.timeZoneName}`
  }
}

const preview = Command.make("preview", {
  cron: Flag.String("cron").pipe(Flag.withDescription("cron expression, 5 or 6 fields"), Flag.optional),
  everyMs: Flag.String("every-ms").pipe(Flag.withDescription("fixed interval in ms, anchored at the Unix epoch (instead of --cron)"), Flag.optional),
  timezone: Flag.String("timezone").pipe(Flag.withDescription("IANA zone of the cron expression (default UTC)"), Flag.optional),
  from: Flag.String("from").pipe(Flag.withDescription("list the fires strictly after this ISO 8601 instant (default: now)"), Flag.optional),
  count: Flag.String("count").pipe(Flag.withDescription(`how many fires, 1 to ${maxPreviewCount} (default 10)`), Flag.optional),
  json
}, (flags) =>
  Effect.gen(function*() {
    const usage = (message: string) => Effect.fail(new CliFailure(message, 2))
    if (Option.isSome(flags.cron) === Option.isSome(flags.everyMs)) return yield* usage("give exactly one of --cron or --every-ms")
    if (Option.isSome(flags.everyMs) && Option.isSome(flags.timezone)) return yield* usage("--timezone applies to --cron only: an interval ignores the timezone")
    // Numbers are read here, not by the flag parser, so a bad one is one line like every other refusal.
    const count = Option.isSome(flags.count) ? wholeNumber(flags.count.value) : 10
    if (count === undefined || count < 1 || count > maxPreviewCount) {
      return yield* usage(`--count must be a whole number from 1 to ${maxPreviewCount}, got "${Option.getOrElse(flags.count, () => "")}"`)
    }
    const everyMs = Option.isSome(flags.everyMs) ? wholeNumber(flags.everyMs.value) : undefined
    if (Option.isSome(flags.everyMs) && everyMs === undefined) return yield* usage(`--every-ms must be a whole number of milliseconds, got "${flags.everyMs.value}"`)
    let from: number
    if (Option.isSome(flags.from)) {
      const parsed = parseInstant(flags.from.value)
      if (parsed === undefined) {
        return yield* usage(`--from must be an ISO 8601 instant in ${rangeText}, a date or a date-time with Z or an offset (2024-03-30T12:00:00Z), got "${flags.from.value}"`)
      }
      from = parsed
    } else from = yield* Clock.currentTimeMillis
    const timezone = Option.getOrElse(flags.timezone, () => "UTC")
    const trigger = Option.isSome(flags.cron) ? Trigger.cron(flags.cron.value, timezone) : Trigger.interval(everyMs!, 0)
    const invalid = Trigger.validate(trigger)
    if (invalid) return yield* Effect.fail(new CliFailure(invalid.message))
    if (trigger._tag === "Interval" && trigger.everyMs > maxDelayMs) {
      return yield* Effect.fail(new CliFailure(`--every-ms must be at most 100 years (${maxDelayMs} ms), got ${trigger.everyMs}`))
    }
    const fires = previewFires(trigger, from, count)
    const utc = (ms: number) => new Date(ms).toISOString()
    if (flags.json) return yield* printJson(fires.map(utc))
    if (fires.length === 0) return yield* printLine(`no fires after ${utc(from)}`)
    if (trigger._tag === "Interval") return yield* printLine(fires.map(utc).join("\n"))
    const local = localTime(timezone)
    yield* printLine(table(["UTC", `LOCAL (${timezone})`], fires.map((t) => [utc(t), local(t)])))
  })).pipe(Command.withDescription("List the next fires of a cron expression or interval, as the Scheduler computes them (no database needed)"))

/** The schedules command group. */
export const schedules = Command.make("schedules").pipe(
  Command.withDescription("Inspect and steer schedules"),
  Command.withSubcommands([list, show, history, pause, resume, trigger, create, update, remove, preview])
)
