/**
 * What operators and apps do with Schedules at runtime: read them (with their next
 * fires and history), pause and resume, trigger a run now, and manage studio
 * Schedules (create, update, delete). File Schedules are edited in code; system
 * Schedules are Roster's own and refuse edits. Used by the Client, the CLI and the
 * dashboard alike.
 */
import { storedFlowKeysOf } from "../jobs/FlowKeys.ts"
import { Clock, Effect } from "effect"
import { maxIdLength, parseId, reservedIdProblem } from "../jobs/Job.ts"
import { maxMisfireCap } from "../jobs/JobSchedule.ts"
import * as Trigger from "../jobs/Trigger.ts"
import { InvalidDefinition, UnknownJob } from "../jobs/errors.ts"
import { triggerOf } from "../actors/Scheduler.ts"
import { ScheduleNotFound, ScheduleStore, type ScheduleSpec, type StoredSchedule } from "../store/ScheduleStore.ts"
import { insertRow, settingsOf } from "../store/InsertRow.ts"
import type { InsertResult } from "../store/Store.ts"
import { StoreError } from "../store/Store.ts"
import { Core } from "./Core.ts"
import { defaultMaxPayloadBytes, encodePayload } from "./Enqueue.ts"
import { isoTime, isStorableTime, maxDelayMs } from "../jobs/TimeRange.ts"
import { traceContextOf } from "../actors/ExecutionSpan.ts"

/** A studio Schedule as given to create or update. */
export interface StudioScheduleInput {
  readonly id: string
  readonly job: string
  readonly cron?: string | undefined
  readonly everyMs?: number | undefined
  readonly timezone?: string | undefined
  readonly payload?: unknown
  readonly misfire?: "once" | "skip" | "all" | undefined
  readonly misfireCap?: number | undefined
  readonly overlap?: "allow" | "skip" | undefined
  readonly enabled?: boolean | undefined
  readonly label?: string | undefined
}

/**
 * The next `count` fire times of a stored schedule after `now` (none when paused,
 * disabled or retired), none past the latest storable time; a stored due time
 * outside the range (a row written by hand) is shown alone, never computed from.
 */
export const nextFires = (s: StoredSchedule, now: number, count = 5): ReadonlyArray<number> => {
  if (s.paused || !s.enabled || s.retiredAt !== null || s.nextDueAt === null) return []
  const out = [s.nextDueAt]
  if (!isStorableTime(s.nextDueAt) || !isStorableTime(now)) return out
  const trigger = triggerOf(s)
  while (out.length < count) {
    const next = Trigger.nextFireAfter(trigger, Math.max(out[out.length - 1]!, now))
    if (next === null || !isStorableTime(next)) break
    out.push(next)
  }
  return out
}

const get = (id: string) =>
  Effect.gen(function*() {
    const s = yield* (yield* ScheduleStore).schedulesGet(id)
    if (!s) return yield* new ScheduleNotFound({ id, message: `no schedule "${id}"` })
    return s
  })

/** Validates and encodes a studio Schedule into a store spec. */
const toSpec = (input: StudioScheduleInput, now: number) =>
  Effect.gen(function*() {
    const core = yield* Core
    const bad = (message: string) => new InvalidDefinition({ id: input.id, message: `schedule "${input.id}": ${message}` })
    if (!parseId(input.id)) return yield* bad("id must be <app>/<schedule>, both kebab-case")
    if (input.id.length > maxIdLength) return yield* bad(`id must be at most ${maxIdLength} characters, got ${input.id.length}`)
    const job = core.registry.jobs.get(input.job)
    if (!job) return yield* new UnknownJob({ job: input.job, message: `schedule "${input.id}" targets unknown job "${input.job}"` })
    if ((input.cron === undefined) === (input.everyMs === undefined)) return yield* bad("give exactly one of --cron or --every-ms")
    const timezone = input.timezone ?? "UTC"
    const trigger = input.cron !== undefined ? Trigger.cron(input.cron, timezone) : Trigger.interval(input.everyMs!, 0)
    const invalid = Trigger.validate(trigger)
    if (invalid) return yield* bad(invalid.message)
    if (trigger._tag === "Interval" && trigger.everyMs > maxDelayMs) return yield* bad(`--every-ms must be at most 100 years (${maxDelayMs} ms), got ${trigger.everyMs}`)
    const nextDueAt = Trigger.nextFireAfter(trigger, now)
    if (nextDueAt !== null && !isStorableTime(nextDueAt)) {
      return yield* bad(`its next fire would be ${isoTime(nextDueAt)}, after 9999-12-31T23:59:59.999Z, the latest time Roster stores`)
    }
    const misfire = input.misfire ?? "once"
    if (!["once", "skip", "all"].includes(misfire)) return yield* bad(`misfire must be once, skip or all, got ${misfire}`)
    if (input.misfireCap !== undefined && (!Number.isInteger(input.misfireCap) || input.misfireCap < 1 || input.misfireCap > maxMisfireCap)) {
      return yield* bad(`misfireCap must be an integer from 1 to ${maxMisfireCap}, got ${String(input.misfireCap)}`)
    }
    const overlap = input.overlap ?? "allow"
    if (overlap !== "allow" && overlap !== "skip") return yield* bad(`overlap must be allow or skip, got ${overlap}`)
    const payload = yield* encodePayload(job, input.payload ?? {}, core.config.maxPayloadBytes ?? defaultMaxPayloadBytes).pipe(
      Effect.mapError((e) => bad(e.message))
    )
    return {
      id: input.id,
      job: job.id,
      payload,
      cron: trigger._tag === "Cron" ? trigger.expression : null,
      everyMs: trigger._tag === "Interval" ? trigger.everyMs : null,
      timezone: trigger._tag === "Cron" ? timezone : "UTC",
      enabled: input.enabled ?? true,
      misfire,
      misfireCap: input.misfireCap ?? (misfire === "all" ? 100 : 1),
      overlap,
      anchorAt: 0,
      label: input.label ?? input.id,
      description: "",
      nextDueAt
    } satisfies ScheduleSpec
  })

/** Schedule operations. */
export const Schedules = {
  list: (options: { readonly includeRetired?: boolean } = {}) => ScheduleStore.use((s) => s.schedulesList(options)),
  get,
  history: (id: string, limit = 50) => Effect.flatMap(get(id), () => ScheduleStore.use((s) => s.schedulesHistory({ scheduleId: id, limit }))),
  pause: (id: string) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      return yield* (yield* ScheduleStore).schedulesSetPaused({ id, paused: true, now, nextDueAt: null })
    }),
  /** Resumes from the next fire after now: fires missed while paused are not made up. */
  resume: (id: string) =>
    Effect.gen(function*() {
      const s = yield* get(id)
      const now = yield* Clock.currentTimeMillis
      return yield* (yield* ScheduleStore).schedulesSetPaused({ id, paused: false, now, nextDueAt: Trigger.nextFireAfter(triggerOf(s), now) })
    }),
  /** Runs now: an ordinary execution of the schedule's Job and payload, linked by scheduleId (no fire is recorded). */
  trigger: (id: string) =>
    Effect.gen(function*() {
      const s = yield* get(id)
      const core = yield* Core
      const job = core.registry.jobs.get(s.job)
      if (!job) return yield* new UnknownJob({ job: s.job, message: `schedule "${id}" targets "${s.job}", which this process does not know` })
      const now = yield* Clock.currentTimeMillis
      const [r] = yield* core.recorder.insert([insertRow(job.id, settingsOf(job), {
        payload: s.payload,
        now,
        scheduleId: id,
        ...storedFlowKeysOf(job, s.payload),
        // "Run now" continues the trace of whoever asked (a dashboard request, an app's span).
        traceContext: traceContextOf(yield* Effect.context<never>())
      })])
      if (!r) return yield* new StoreError({ message: "insert returned no row" })
      return r satisfies InsertResult
    }),
  create: (input: StudioScheduleInput) =>
    Effect.gen(function*() {
      // The roster app is Roster's own: no new studio schedule in it. (Updating one that
      // exists meets the store's own refusal: a system row cannot be edited.)
      const reserved = reservedIdProblem(input.id)
      if (reserved) return yield* new InvalidDefinition({ id: input.id, message: `schedule "${input.id}": ${reserved}` })
      const now = yield* Clock.currentTimeMillis
      const store = yield* ScheduleStore
      if (yield* store.schedulesGet(input.id)) {
        return yield* new InvalidDefinition({ id: input.id, message: `schedule "${input.id}" already exists; use update` })
      }
      return yield* store.schedulesUpsert({ schedule: yield* toSpec(input, now), source: "studio", now })
    }),
  update: (input: StudioScheduleInput) =>
    Effect.gen(function*() {
      yield* get(input.id)
      const now = yield* Clock.currentTimeMillis
      return yield* (yield* ScheduleStore).schedulesUpsert({ schedule: yield* toSpec(input, now), source: "studio", now })
    }),
  delete: (id: string) => ScheduleStore.use((s) => s.schedulesDelete({ id }))
}
