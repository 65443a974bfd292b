/**
 * The definition of a Schedule: a recurring enqueue of one Job, identified by
 * `<app>/<schedule>`, with a payload, a trigger (a cron expression in an IANA zone or a
 * fixed interval), an enabled flag, a misfire policy and an overlap policy. Like a Job,
 * it is a plain value: `apps/<app>/schedules.ts` exports them, the Registry validates
 * them against the Jobs, and the Scheduler syncs them into the store as `file` rows.
 * (Named JobSchedule so it never clashes with Effect's `Schedule`.)
 */
import { Duration, Result, Schema } from "effect"
import type { AnySchema, Job } from "./Job.ts"
import { maxIdLength, parseId } from "./Job.ts"
import type { Misfire, MisfirePolicy } from "./FirePlan.ts"
import { defaultAllCap, misfire as makeMisfire } from "./FirePlan.ts"
import type { Trigger } from "./Trigger.ts"
import { cron as cronTrigger, interval, minIntervalMs, validate } from "./Trigger.ts"
import { InvalidDefinition } from "./errors.ts"
import { depthOf, maxPayloadDepth } from "./JsonText.ts"
import { maxDelayMs } from "./TimeRange.ts"

/** What to do when a fire comes due while the previous execution of this schedule is queued or running. */
export type Overlap = "allow" | "skip"

/** A Schedule definition. */
export interface JobSchedule {
  readonly _tag: "JobSchedule"
  /** `<app>/<schedule>`, both kebab-case. */
  readonly id: string
  readonly app: string
  readonly name: string
  readonly label: string
  readonly description: string
  /** The target Job's id. */
  readonly job: string
  /** The target Job, when the definition was given the Job value rather than its id. */
  readonly target: Job | undefined
  /** The payload, in the Job's payload Type (encoded with its Schema at sync). */
  readonly payload: unknown
  readonly trigger: Trigger
  readonly enabled: boolean
  readonly misfire: Misfire
  readonly overlap: Overlap
}

/** How a definition states its misfire policy: a name, or `all` with an explicit cap. */
export type MisfireOption = MisfirePolicy | { readonly all: { readonly cap: number } }

/** Options of {@link make}. Exactly one of `cron` and `every`. */
export interface JobScheduleOptions<J extends Job<any, any, any> | string> {
  readonly id: string
  /** The Job value (the payload is then typed by its Schema) or its `<app>/<job>` id. */
  readonly job: J
  readonly payload: J extends Job<infer P extends AnySchema, any, any> ? Schema.Schema.Type<P> : unknown
  /** 5 or 6 fields (seconds first, optional), croner syntax, or a nickname such as `@daily`. */
  readonly cron?: string | undefined
  /** A fixed interval (at least 1 second), fired at multiples of it since the Unix epoch. */
  readonly every?: Duration.Input | undefined
  /** IANA zone the cron expression is read in; default `UTC`. Intervals ignore it. */
  readonly timezone?: string | undefined
  readonly enabled?: boolean | undefined
  /** Default `once`; `all` alone means a cap of 100. */
  readonly misfire?: MisfireOption | undefined
  /** Default `allow`. */
  readonly overlap?: Overlap | undefined
  readonly label?: string | undefined
  readonly description?: string | undefined
}

/** The most late runs `all` may make after downtime: each is an execution enqueued in one scheduler pass. */
export const maxMisfireCap = 10_000

const toMisfire = (id: string, option: MisfireOption | undefined): Misfire => {
  if (option === undefined) return makeMisfire("once")
  if (option === "once" || option === "skip" || option === "all") return makeMisfire(option, defaultAllCap)
  const cap = (option as { all?: { cap?: unknown } }).all?.cap
  if (typeof cap !== "number" || !Number.isInteger(cap) || cap < 1 || cap > maxMisfireCap) {
    throw new RangeError(`Schedule "${id}": misfire { all: { cap } } needs an integer cap >= 1 and <= ${maxMisfireCap}, got ${String(cap)}`)
  }
  return makeMisfire("all", cap)
}

const toTrigger = (id: string, options: JobScheduleOptions<any>): Trigger => {
  const hasCron = options.cron !== undefined
  const hasEvery = options.every !== undefined
  if (hasCron === hasEvery) throw new RangeError(`Schedule "${id}" needs exactly one of cron and every`)
  let trigger: Trigger
  if (hasCron) {
    trigger = cronTrigger(options.cron!, options.timezone ?? "UTC")
  } else {
    let everyMs: number
    try {
      everyMs = Duration.toMillis(Duration.fromInputUnsafe(options.every!))
    } catch {
      throw new RangeError(`Schedule "${id}": every must be a duration such as "15 minutes", got ${String(options.every)}`)
    }
    if (!Number.isInteger(everyMs) || everyMs < minIntervalMs) {
      throw new RangeError(`Schedule "${id}": every must be a whole number of milliseconds >= ${minIntervalMs}, got ${everyMs}`)
    }
    if (everyMs > maxDelayMs) throw new RangeError(`Schedule "${id}": every must be at most 100 years (${maxDelayMs} ms), got ${everyMs}`)
    trigger = interval(everyMs)
  }
  const invalid = validate(trigger)
  if (invalid) throw new RangeError(`Schedule "${id}": ${invalid.message}`)
  return trigger
}

/**
 * Defines a Schedule. Throws a RangeError on a malformed id, job id, trigger, timezone
 * or policy, or (when given the Job value) a payload its Schema rejects: a definition
 * is code, so discovery reports the throw with the file it came from.
 */
export const make = <J extends Job<any, any, any> | string>(options: JobScheduleOptions<J>): JobSchedule => {
  const parsed = parseId(options.id)
  if (!parsed) throw new RangeError(`Schedule id "${options.id}" must be <app>/<schedule>, both kebab-case`)
  if (options.id.length > maxIdLength) throw new RangeError(`Schedule id "${options.id.slice(0, 40)}…" must be at most ${maxIdLength} characters, got ${options.id.length}`)
  const target = typeof options.job === "string" ? undefined : options.job as Job
  const job = target ? target.id : options.job as string
  if (!parseId(job)) throw new RangeError(`Schedule "${options.id}": job "${job}" must be <app>/<job>, both kebab-case`)
  if (options.overlap !== undefined && options.overlap !== "allow" && options.overlap !== "skip") {
    throw new RangeError(`Schedule "${options.id}": overlap must be "allow" or "skip", got ${String(options.overlap)}`)
  }
  const schedule: JobSchedule = {
    _tag: "JobSchedule",
    id: options.id,
    app: parsed.app,
    name: parsed.name,
    label: options.label ?? options.id,
    description: options.description ?? "",
    job,
    target,
    payload: options.payload,
    trigger: toTrigger(options.id, options),
    enabled: options.enabled ?? true,
    misfire: toMisfire(options.id, options.misfire),
    overlap: options.overlap ?? "allow"
  }
  if (target) {
    const encoded = encodePayload(schedule, target)
    if (encoded instanceof InvalidDefinition) throw new RangeError(encoded.message)
  }
  return schedule
}

/** Whether a value is a Schedule definition (used by discovery to pick a module's Schedules). */
export const isJobSchedule = (u: unknown): u is JobSchedule =>
  typeof u === "object" && u !== null && (u as { _tag?: unknown })._tag === "JobSchedule" &&
  typeof (u as JobSchedule).id === "string" && typeof (u as JobSchedule).trigger === "object"

const jsonCodecs = new WeakMap<object, Schema.Codec<unknown, unknown>>()
const jsonCodec = (schema: AnySchema): Schema.Codec<unknown, unknown> => {
  let c = jsonCodecs.get(schema)
  if (!c) jsonCodecs.set(schema, (c = Schema.toCodecJson(schema) as Schema.Codec<unknown, unknown>))
  return c
}

/** Encodes a payload with the Job's Schema (its JSON codec, as enqueue does) to the JSON text stored and enqueued. */
export const encodeJobPayload = (job: Job, payload: unknown): InvalidDefinition | string => {
  if (depthOf(payload) > maxPayloadDepth) {
    return new InvalidDefinition({ id: job.id, message: `payload for Job "${job.id}" nests deeper than ${maxPayloadDepth} levels of arrays and objects` })
  }
  const encoded = Schema.encodeUnknownResult(jsonCodec(job.payload))(payload)
  if (Result.isFailure(encoded)) {
    return new InvalidDefinition({ id: job.id, message: `payload does not match Job "${job.id}": ${encoded.failure.message.replace(/\s*\n\s*/g, " ")}` })
  }
  const text = JSON.stringify(encoded.success)
  if (text === undefined) return new InvalidDefinition({ id: job.id, message: `payload for Job "${job.id}" encodes to no JSON value` })
  return text
}

/** Encodes the schedule's payload with its Job's Schema; the error names the schedule. */
export const encodePayload = (schedule: JobSchedule, job: Job): InvalidDefinition | string => {
  const text = encodeJobPayload(job, schedule.payload)
  return text instanceof InvalidDefinition
    ? new InvalidDefinition({ id: schedule.id, message: `Schedule "${schedule.id}": ${text.message}` })
    : text
}

/** A Schedule with the file it was found in, if any. */
export interface SourcedSchedule {
  readonly schedule: JobSchedule
  readonly file?: string | undefined
}

/** A validated Schedule with its encoded payload. */
export interface CheckedSchedule {
  readonly schedule: JobSchedule
  /** The payload encoded with the target Job's Schema, JSON text. */
  readonly payload: string
  readonly file?: string | undefined
}

/**
 * Validates Schedules against the known Jobs: no two with one id, every target Job
 * known, every payload accepted by its Job's Schema. Returns the first problem found.
 */
export const validateSchedules = (options: {
  readonly schedules: ReadonlyArray<JobSchedule | SourcedSchedule>
  readonly jobs: ReadonlyMap<string, Job>
}): InvalidDefinition | ReadonlyArray<CheckedSchedule> => {
  const seen = new Map<string, string | undefined>()
  const out: Array<CheckedSchedule> = []
  for (const entry of options.schedules) {
    const { schedule, file } = "_tag" in entry ? { schedule: entry, file: undefined } : entry
    const where = file ? ` (${file})` : ""
    if (seen.has(schedule.id)) {
      const first = seen.get(schedule.id)
      return new InvalidDefinition({
        id: schedule.id,
        file,
        message: `duplicate Schedule id "${schedule.id}"${where}${first ? `, first defined in ${first}` : ""}`
      })
    }
    seen.set(schedule.id, file)
    const job = options.jobs.get(schedule.job)
    if (!job) {
      return new InvalidDefinition({ id: schedule.id, file, message: `Schedule "${schedule.id}"${where} targets unknown Job "${schedule.job}"` })
    }
    const payload = encodePayload(schedule, job)
    if (payload instanceof InvalidDefinition) return new InvalidDefinition({ id: schedule.id, file, message: payload.message + where })
    out.push({ schedule, payload, file })
  }
  return out
}
