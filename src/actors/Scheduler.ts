/**
 * The Scheduler actor: turns due Schedules into durable fires. One process at a time
 * is the leader (a lease in the store); the others are hot standbys.
 *
 * States and transitions:
 * - standby: tries the lease every `leaseTtlMs / 3`; on success → leader.
 * - leader: on taking the lease, syncs the file Schedules into the store; then loops:
 *   renew the lease (every `leaseTtlMs / 3`; a refused or failed renewal → standby),
 *   plan and record every due schedule, then sleep until the earliest next due, capped
 *   at `pollMs` so studio changes made by other processes are seen, or until a
 *   SchedulesChanged message. Interrupted → releases the lease so a standby takes over.
 *
 * Each due schedule is planned with FirePlan (misfire policy) and its decisions are
 * written in one transaction: missed fires as `missed`; enqueues as executions, or as
 * `skipped` with the reason when the overlap policy finds the previous execution still
 * queued or running, or when the target Job is unknown or disabled here. A duplicate
 * (schedule, due) is a no-op, so two leaders at once never enqueue a fire twice.
 * A fire of a Job no live worker serves is still enqueued (nothing is lost; a worker
 * that starts later runs it), and its fire row and a warning say "no live worker
 * serves queue Q (job J)" (see WorkerRules.ts).
 * All time comes from Effect's Clock, so TestClock drives it.
 */
import { Cause, Clock, Effect, Queue } from "effect"
import * as FirePlan from "../jobs/FirePlan.ts"
import type { Job } from "../jobs/Job.ts"
import type { JobSchedule } from "../jobs/JobSchedule.ts"
import { encodeJobPayload } from "../jobs/JobSchedule.ts"
import { storedFlowKeysOf } from "../jobs/FlowKeys.ts"
import * as Trigger from "../jobs/Trigger.ts"
import { InvalidDefinition } from "../jobs/errors.ts"
import { insertRow, newId as newUuid, settingsOf, type JobSettings } from "../store/InsertRow.ts"
import type { RecordFireRequest, ScheduleSpec, StoredSchedule } from "../store/ScheduleStore.ts"
import { ScheduleStore } from "../store/ScheduleStore.ts"
import { isPermanentStoreError, isPermanentStoreFailure, type LiveWorker, type StoreError } from "../store/Store.ts"
import { unservedNote } from "../store/WorkerRules.ts"

/** What the Scheduler needs to know about a Job it enqueues. */
export interface SchedulableJob extends JobSettings {
  /** Encodes a file Schedule's payload with the Job's Schema, to JSON text. */
  readonly encode: (payload: unknown) => Effect.Effect<string, { readonly message: string }>
  /** Why this Job must not be enqueued now, if so; its fires are recorded `skipped` with this reason. */
  readonly disabled?: string | undefined
  /** The flow keys of an encoded payload (see FlowKeys.ts); none when absent. */
  readonly flowKeys?: ((payloadText: string) => { readonly concurrencyKey: string | null; readonly rateKey: string | null }) | undefined
}

/** A SchedulableJob from a Job definition (payloads encoded with its Schema's JSON codec). */
export const fromJob = (job: Job): SchedulableJob => ({
  ...settingsOf(job),
  flowKeys: (text) => storedFlowKeysOf(job, text),
  encode: (payload) =>
    Effect.suspend(() => {
      const text = encodeJobPayload(job, payload)
      return text instanceof InvalidDefinition ? Effect.fail(text) : Effect.succeed(text)
    })
})

/** Options of {@link make}. */
export interface SchedulerOptions {
  /** This process's identity in the leader lease. */
  readonly owner: string
  /** The file Schedules (from code), synced into the store on taking the lease. */
  readonly schedules: ReadonlyArray<JobSchedule>
  /** The Jobs this scheduler may enqueue, by id. */
  readonly jobs: ReadonlyMap<string, SchedulableJob>
  /** Longest sleep between passes, in ms (default 1 s). */
  readonly pollMs?: number | undefined
  /** Leader lease time to live, in ms (default 15 s); renewed every third of it. */
  readonly leaseTtlMs?: number | undefined
  readonly leaseName?: string | undefined
  /** How late a fire may be and still be on time (default 60 s). */
  readonly toleranceMs?: number | undefined
  /** Most missed fires recorded per plan (default 100). */
  readonly missedRecordCap?: number | undefined
  /** Due schedules handled per pass (default 100). */
  readonly batch?: number | undefined
  /** Execution ids; default a UUIDv7 on the Clock's time. */
  readonly newId?: ((now: number) => string) | undefined
  /** The registered workers at a time, to note fires no live worker serves; without it, no note. */
  readonly liveWorkers?: ((now: number) => Effect.Effect<ReadonlyArray<LiveWorker>, StoreError>) | undefined
}

/** A running Scheduler's handle. */
export interface Scheduler {
  /** The actor's loop: fork it into the owning scope (under supervise()); fails only on a corrupt database. */
  readonly run: Effect.Effect<never, StoreError, ScheduleStore>
  /** Tells the Scheduler schedules changed in this process (studio create, update, pause), so it looks at once. */
  readonly schedulesChanged: Effect.Effect<void>
  /** Whether this process holds the leader lease. */
  readonly isLeader: Effect.Effect<boolean>
}

/** The trigger of a stored schedule. */
export const triggerOf = (s: Pick<StoredSchedule, "cron" | "everyMs" | "timezone" | "anchorAt">): Trigger.Trigger =>
  s.cron !== null ? Trigger.cron(s.cron, s.timezone) : Trigger.interval(s.everyMs!, s.anchorAt)

/** The store row of a file Schedule, its payload encoded, its first due after `now`. */
export const toSpec = (schedule: JobSchedule, payload: string, now: number): ScheduleSpec => ({
  id: schedule.id,
  job: schedule.job,
  payload,
  cron: schedule.trigger._tag === "Cron" ? schedule.trigger.expression : null,
  everyMs: schedule.trigger._tag === "Interval" ? schedule.trigger.everyMs : null,
  timezone: schedule.trigger._tag === "Cron" ? schedule.trigger.timezone : "UTC",
  enabled: schedule.enabled,
  misfire: schedule.misfire.policy,
  misfireCap: schedule.misfire.cap,
  overlap: schedule.overlap,
  anchorAt: schedule.trigger._tag === "Interval" ? schedule.trigger.anchorAt : 0,
  label: schedule.label,
  description: schedule.description,
  nextDueAt: Trigger.nextFireAfter(schedule.trigger, now)
})

/** Encodes the file Schedules and syncs them into the store; fails with the first problem. */
export const syncFileSchedules = Effect.fnUntraced(function*(options: Pick<SchedulerOptions, "schedules" | "jobs">) {
  const store = yield* ScheduleStore
  const now = yield* Clock.currentTimeMillis
  const specs: Array<ScheduleSpec> = []
  for (const schedule of options.schedules) {
    const job = options.jobs.get(schedule.job)
    if (!job) {
      return yield* new InvalidDefinition({ id: schedule.id, message: `Schedule "${schedule.id}" targets unknown Job "${schedule.job}"` })
    }
    const payload = yield* job.encode(schedule.payload).pipe(
      Effect.mapError((e) => new InvalidDefinition({ id: schedule.id, message: `Schedule "${schedule.id}": ${e.message}` }))
    )
    specs.push(toSpec(schedule, payload, now))
  }
  return yield* store.schedulesSyncFile({ schedules: specs, now })
})

/** Builds a Scheduler: its mailbox and state, and the loop to fork. */
export const make = (options: SchedulerOptions): Effect.Effect<Scheduler> =>
  Effect.gen(function*() {
    const mailbox = yield* Queue.sliding<"SchedulesChanged">(1)
    const pollMs = Math.max(1, options.pollMs ?? 1_000)
    const ttlMs = Math.max(3, options.leaseTtlMs ?? 15_000)
    const renewEveryMs = Math.floor(ttlMs / 3)
    const leaseName = options.leaseName ?? "scheduler"
    const newId = options.newId ?? newUuid
    let leader = false
    let renewedAt = Number.NEGATIVE_INFINITY
    let synced = false
    let syncRetryAt = Number.NEGATIVE_INFINITY

    /** Plans one due schedule and records its decisions in one transaction. */
    const fire = Effect.fnUntraced(function*(store: ScheduleStore["Service"], s: StoredSchedule, now: number) {
      const plan = FirePlan.plan({
        trigger: triggerOf(s),
        after: s.nextDueAt! - 1,
        now,
        misfire: { policy: s.misfire, cap: s.misfireCap },
        toleranceMs: options.toleranceMs,
        missedRecordCap: options.missedRecordCap
      })
      if (plan.decisions.length === 0) return yield* store.schedulesAdvance({ id: s.id, nextDueAt: plan.nextDueAt })
      const job = options.jobs.get(s.job)
      // Read only when this plan enqueues; a failed read notes nothing rather than delaying the fire.
      const unserved = job && options.liveWorkers && plan.decisions.some((d) => d.outcome === "enqueue")
        ? yield* options.liveWorkers(now).pipe(
          Effect.map((workers) => unservedNote(workers, job.queue, s.job)),
          Effect.catchTag("StoreError", (e) => Effect.as(Effect.logDebug(`live workers not read: ${e.message}`), undefined))
        )
        : undefined
      const requests = plan.decisions.map((d): RecordFireRequest => {
        const base = { scheduleId: s.id, dueAt: d.dueAt, now, nextDueAt: plan.nextDueAt }
        if (d.outcome === "missed") return { ...base, outcome: "missed" }
        if (!job) return { ...base, outcome: "skipped", error: `job ${s.job} is not known to this scheduler` }
        if (job.disabled !== undefined) return { ...base, outcome: "skipped", error: `job ${s.job} is disabled: ${job.disabled}` }
        return {
          ...base,
          outcome: "enqueued",
          skipIfActive: s.overlap === "skip",
          ...(unserved === undefined ? {} : { error: unserved }),
          // A fire is started by the clock, not by a caller: no trace context.
          execution: insertRow(s.job, job, { id: newId(now), payload: s.payload, now, traceContext: null, ...job.flowKeys?.(s.payload) })
        }
      })
      const results = yield* store.schedulesRecordFires(requests)
      const missed = plan.decisions.filter((d) => d.outcome === "missed").length
      if (missed > 0) {
        yield* Effect.logWarning(`schedule ${s.id}: ${missed}${plan.truncated ? "+ (older ones not recorded)" : ""} missed fires (misfire ${s.misfire})`)
      }
      for (const [i, r] of results.entries()) {
        const due = new Date(requests[i]!.dueAt).toISOString()
        if (r.outcome === "enqueued" && unserved !== undefined) yield* Effect.logWarning(`schedule ${s.id}: fire ${due} enqueued ${r.executionId}, but ${unserved}`)
        else if (r.outcome === "enqueued") yield* Effect.logInfo(`schedule ${s.id}: fire ${due} enqueued ${r.executionId}`)
        else if (r.outcome === "skipped") yield* Effect.logInfo(`schedule ${s.id}: fire ${due} skipped (${requests[i]!.error ?? "overlap"})`)
      }
    })

    /** Takes or renews the lease when due; returns whether we lead. */
    const holdLease = Effect.fnUntraced(function*(store: ScheduleStore["Service"], now: number) {
      if (leader && now - renewedAt < renewEveryMs) return true
      const held = yield* store.leaseAcquire({ name: leaseName, owner: options.owner, now, ttlMs }).pipe(
        Effect.catchTag("StoreError", (e) =>
          isPermanentStoreError(e) ? Effect.fail(e) : Effect.as(Effect.logError(`scheduler lease: ${e.message}`), false))
      )
      if (held) renewedAt = now
      if (held && !leader) {
        synced = false
        syncRetryAt = Number.NEGATIVE_INFINITY
        yield* Effect.logInfo(`scheduler ${options.owner} is the leader`)
      }
      if (!held && leader) yield* Effect.logWarning(`scheduler ${options.owner} lost the leader lease`)
      leader = held
      return held
    })

    /** Waits `ms`, or less if a SchedulesChanged message arrives. */
    const wait = (ms: number) =>
      ms <= 0 ? Effect.yieldNow : Effect.raceFirst(Effect.sleep(ms), Effect.asVoid(Queue.take(mailbox)))

    const pass = Effect.gen(function*() {
      const store = yield* ScheduleStore
      const now = yield* Clock.currentTimeMillis
      if (!(yield* holdLease(store, now))) return yield* wait(renewEveryMs)
      if (!synced && now >= syncRetryAt) {
        yield* syncFileSchedules(options).pipe(
          Effect.tap((r) => Effect.logInfo(`synced file schedules: ${r.inserted.length} new, ${r.updated.length} updated, ${r.retired.length} retired`)),
          Effect.tap(() => Effect.sync(() => (synced = true))),
          Effect.catch((e) =>
            Effect.andThen(Effect.sync(() => (syncRetryAt = now + 30_000)), Effect.logError(`file schedules not synced (retrying in 30 s): ${e.message}`)))
        )
      }
      const due = yield* store.schedulesDue({ now, limit: options.batch ?? 100 })
      let failed = false
      for (const s of due) {
        yield* fire(store, s, now).pipe(
          Effect.catchCause((cause) =>
            Cause.hasInterruptsOnly(cause)
              ? Effect.interrupt
              : Effect.andThen(Effect.sync(() => (failed = true)), Effect.logError(`schedule ${s.id}: fire not recorded`, cause)))
        )
      }
      const nextDue = yield* store.schedulesNextDueAt
      const after = yield* Clock.currentTimeMillis
      let ms = Math.min(pollMs, renewedAt + renewEveryMs - after)
      if (nextDue !== null) ms = Math.min(ms, nextDue - after)
      // A failed schedule stays due; wait a full poll instead of spinning on it.
      yield* wait(failed ? pollMs : ms)
    })

    const releaseIfLeader = Effect.gen(function*() {
      if (!leader) return
      leader = false
      const store = yield* ScheduleStore
      yield* store.leaseRelease({ name: leaseName, owner: options.owner }).pipe(Effect.ignore)
    })

    // A pass the store refused (locked, full, unreachable) is logged and tried again
    // after a poll, except a store failure no retry can fix (a corrupt file): that ends
    // the actor, for its owner to stop. A defect is not caught here: it goes to the
    // supervisor like any actor's (one rule: logged, counted, restarted with backoff).
    const run = pass.pipe(
      Effect.catch((error: StoreError) =>
        isPermanentStoreFailure(Cause.fail(error))
          ? Effect.fail(error)
          : Effect.andThen(Effect.logError(`scheduler pass failed: ${error.message}`), Effect.sleep(pollMs))),
      Effect.forever,
      Effect.ensuring(releaseIfLeader),
      Effect.annotateLogs("actor", "Scheduler")
    )

    return {
      run,
      schedulesChanged: Effect.asVoid(Queue.offer(mailbox, "SchedulesChanged")),
      isLeader: Effect.sync(() => leader)
    }
  })
