/**
 * The verdict of a chaos run, from what the store says (executions, attempt histories,
 * steps, fires), what the handlers recorded outside it (the evidence files), what the
 * driver had acknowledged, and which signals each process was sent:
 *
 * 1. every acknowledged execution exists and ended as its Job dictates, read attempt by
 *    attempt: an attempt ends `lease expired` (a recovery, allowed anywhere), or the
 *    way the handler makes it end — `flaky` retries while attempt ≤ failTimes then
 *    succeeds, `broken` fails permanently at its first charged attempt, the rest
 *    succeed — and every charged attempt has the handler's start and end on record;
 * 2. nothing is lost or extra: executions = acknowledged + enqueued fires;
 * 3. every handler start beyond the runs the Job dictates is explained: by a `lease
 *    expired` attempt (the run was cut off and recovered), or by a shutdown release
 *    (the process was sent SIGTERM; past the grace period its run was released
 *    without charging the attempt, so the attempt number runs again); anything else
 *    is an unexplained duplicate. (The signal may be sent just *before* the start: a
 *    process busy starting up handles it late, and what it claimed meanwhile is
 *    released at its shutdown: handler starts 80–150 ms after the signal was sent were
 *    seen in processes killed right after they started.) A durable step never runs
 *    again after the attempt that stored it;
 * 4. each per-second schedule has one fire per second from before the kills began to
 *    after they ended, all enqueued, each with exactly one execution keyed by it.
 */
import type { Attempt } from "../../../src/store/Execution.ts"
import { fireKey, type ScheduleFire } from "../../../src/store/ScheduleStore.ts"
import type { SentSignal } from "./Cluster.ts"
import type { AckedJob } from "./Enqueuer.ts"
import type { HandlerEvent } from "./Evidence.ts"
import type { ExecutionRecord } from "./StoreView.ts"

/** Everything the verdict is drawn from. */
export interface VerifyInput {
  readonly executions: ReadonlyArray<ExecutionRecord>
  /** Every schedule's fires, oldest first. */
  readonly fires: ReadonlyMap<string, ReadonlyArray<ScheduleFire>>
  /** The schedules that fire every second with misfire `all`. */
  readonly perSecond: ReadonlyArray<string>
  readonly evidence: ReadonlyMap<string, ReadonlyArray<HandlerEvent>>
  readonly acked: ReadonlyMap<string, AckedJob>
  readonly signals: ReadonlyMap<number, ReadonlyArray<SentSignal>>
  /** When the kills began and ended. */
  readonly window: { readonly start: number; readonly end: number }
}

/** Handler starts beyond the runs the Jobs dictate, by what explains them. */
export interface Duplicates {
  leaseExpired: number
  shutdownRelease: number
  unexplained: number
}

/** Lease expiries recovered, by what had been done to the worker that held the lease. */
export interface Recoveries {
  total: number
  afterSigkill: number
  afterSigterm: number
  workerAlive: number
}

/** The verdict and the figures of the summary. */
export interface Verification {
  /** Every broken invariant, one line each; empty when the run passed. */
  readonly problems: Array<string>
  readonly executions: number
  readonly byState: Record<string, number>
  readonly handlerStarts: number
  /** Starts the Jobs themselves asked for: runs after a transient failure. */
  readonly jobRetries: number
  readonly duplicates: Duplicates
  readonly recoveries: Recoveries
  readonly broken: { atFirstAttempt: number; afterLeaseExpiries: number }
  /** Executions that ended failed because lease expiries used up their attempts. */
  readonly exhausted: number
  readonly fires: Array<{ readonly scheduleId: string; readonly fires: number; readonly firstDue: number; readonly lastDue: number }>
}

const isLeaseExpiry = (a: Attempt): boolean => a.outcome === "lease_expired" || a.error?.tag === "LeaseExpired"

/** The pid in a worker id (`host:pid:random`). */
const pidOfWorker = (worker: string): number => Number(worker.split(":").at(-2))

const iso = (ms: number) => new Date(ms).toISOString()

/** Whether `pid` was ever sent `signal`. */
const signalled = (signals: ReadonlyMap<number, ReadonlyArray<SentSignal>>, pid: number, signal: SentSignal["signal"]): boolean =>
  (signals.get(pid) ?? []).some((s) => s.signal === signal)

/** Checks every invariant; returns the problems found and the figures. */
export const verify = (input: VerifyInput): Verification => {
  const problems: Array<string> = []
  const byState: Record<string, number> = {}
  const duplicates: Duplicates = { leaseExpired: 0, shutdownRelease: 0, unexplained: 0 }
  const recoveries: Recoveries = { total: 0, afterSigkill: 0, afterSigterm: 0, workerAlive: 0 }
  const broken = { atFirstAttempt: 0, afterLeaseExpiries: 0 }
  let handlerStarts = 0
  let jobRetries = 0
  let exhausted = 0

  const byId = new Map(input.executions.map((r) => [r.execution.id, r]))

  for (const record of input.executions) {
    const e = record.execution
    const where = `${e.id} (${e.job})`
    byState[e.state] = (byState[e.state] ?? 0) + 1
    // Roster's own Jobs (roster/prune fires at minute 17 of every hour) leave no evidence
    // files: they only have to end well. The rules below are the chaos app's.
    if (e.job.startsWith("roster/")) {
      if (e.state !== "succeeded" && e.state !== "queued") problems.push(`${where}: Roster's own Job ended ${e.state}`)
      continue
    }
    const events = input.evidence.get(e.id) ?? []
    const payload = (e.payload ?? {}) as Record<string, unknown>
    const failTimes = e.job === "chaos/flaky" ? Number(payload.failTimes) : 0

    const acked = input.acked.get(e.id)
    if (acked !== undefined && (acked.job !== e.job || JSON.stringify(acked.payload) !== JSON.stringify(e.payload))) {
      problems.push(`${where}: stored as ${e.job} ${JSON.stringify(e.payload)}, enqueued as ${acked.job} ${JSON.stringify(acked.payload)}`)
    }
    if (e.state !== "succeeded" && e.state !== "failed") {
      problems.push(`${where}: ended ${e.state} at attempt ${e.attempt}`)
      continue
    }

    // 1. The attempt history, attempt by attempt.
    const attempts = [...record.attempts].sort((a, b) => a.attempt - b.attempt)
    const numbers = attempts.map((a) => a.attempt).join(",")
    const expectedNumbers = Array.from({ length: e.attempt }, (_, i) => i + 1).join(",")
    if (numbers !== expectedNumbers) {
      problems.push(`${where}: attempts [${numbers}] recorded for ${e.attempt} charged`)
      continue
    }
    const hasEvent = (kind: HandlerEvent["kind"], attempt: number) => events.some((ev) => ev.kind === kind && ev.attempt === attempt)
    for (const a of attempts) {
      const final = a.attempt === e.attempt
      const at = `${where} attempt ${a.attempt}`
      if (isLeaseExpiry(a)) {
        recoveries.total++
        const pid = pidOfWorker(a.worker)
        if (signalled(input.signals, pid, "SIGKILL")) recoveries.afterSigkill++
        else if (signalled(input.signals, pid, "SIGTERM")) recoveries.afterSigterm++
        else recoveries.workerAlive++
        if (final) {
          if (e.state === "failed" && e.attempt === e.maxAttempts) exhausted++
          else problems.push(`${at}: the last attempt expired but the execution is ${e.state} with ${e.maxAttempts} attempts allowed`)
        }
        continue
      }
      // The handler ran this attempt to its end: its start and end are on record.
      if (!hasEvent("start", a.attempt) || !hasEvent("end", a.attempt)) {
        problems.push(`${at}: ${a.outcome} in the store, but the handler's ${hasEvent("start", a.attempt) ? "end" : "start"} is not on record`)
      }
      const expected = !final
        ? (a.attempt <= failTimes ? "retrying" : "only a lease expiry")
        : e.job === "chaos/broken"
        ? "failed"
        : e.job === "chaos/flaky" && a.attempt <= failTimes
        ? "retrying"
        : "succeeded"
      if (a.outcome !== expected) problems.push(`${at}: ${a.outcome} (${a.error?.tag ?? "no error"}), expected ${expected}`)
      if (final && e.state !== a.outcome) problems.push(`${at}: the execution is ${e.state} but its last attempt ${a.outcome}`)
      if (final && e.job === "chaos/broken") {
        if (a.error?.tag !== "PermanentFailure") problems.push(`${at}: failed with ${a.error?.tag}, expected PermanentFailure`)
        if (a.attempt === 1) broken.atFirstAttempt++
        else broken.afterLeaseExpiries++
      }
    }

    // 3. Every handler start, attempt by attempt: the one the attempt charged, and extras explained.
    const starts = events.filter((ev) => ev.kind === "start")
    handlerStarts += starts.length
    const byAttempt = new Map<number, Array<HandlerEvent>>()
    for (const ev of starts) byAttempt.set(ev.attempt, [...(byAttempt.get(ev.attempt) ?? []), ev])
    for (const [n, runs] of byAttempt) {
      const a = attempts[n - 1]
      if (a === undefined) {
        duplicates.unexplained += runs.length
        problems.push(`${where}: handler started at attempt ${n} (pids ${runs.map((r) => r.pid).join(", ")}), beyond the ${e.attempt} attempts charged`)
        continue
      }
      // One run per attempt number is the charged one; a SIGTERM past the grace period releases a run
      // without charging it, so its attempt number runs again: only those may repeat a number.
      const released = runs.filter((r) => signalled(input.signals, r.pid, "SIGTERM")).length
      const repeats = runs.length - 1
      const explained = Math.min(repeats, released)
      duplicates.shutdownRelease += explained
      if (repeats > explained) {
        duplicates.unexplained += repeats - explained
        problems.push(`${where}: handler started ${runs.length} times at attempt ${n} (pids ${runs.map((r) => r.pid).join(", ")}), only ${released} of them in a process sent SIGTERM`)
      }
      if (isLeaseExpiry(a)) {
        if (n < e.attempt) duplicates.leaseExpired++
      } else if (a.outcome === "retrying") jobRetries++
    }

    // Durable steps: never run again after the attempt that stored them.
    if (e.job === "chaos/steps" && e.state === "succeeded") {
      const stored = new Map(record.steps.map((s) => [s.name, s.attempt]))
      for (const name of ["first", "second"]) {
        const attempt = stored.get(name)
        const runs = events.filter((ev) => ev.kind === "step" && ev.step === name)
        if (attempt === undefined) problems.push(`${where}: step ${name} not stored`)
        else if (runs.some((r) => r.attempt > attempt)) problems.push(`${where}: step ${name} stored at attempt ${attempt} ran again at attempt(s) ${runs.filter((r) => r.attempt > attempt).map((r) => r.attempt).join(", ")}`)
        else if (!runs.some((r) => r.attempt === attempt)) problems.push(`${where}: step ${name} stored at attempt ${attempt} without a run on record`)
      }
    }
  }

  // 4. Fires: one per second per schedule, each enqueued once.
  const fireSummaries: Array<Verification["fires"][number]> = []
  let enqueuedFires = 0
  const fireExecutionIds = new Set<string>()
  for (const [scheduleId, fires] of input.fires) {
    const enqueued = fires.filter((f) => f.outcome === "enqueued")
    enqueuedFires += enqueued.length
    for (const f of enqueued) {
      const e = f.executionId === null ? undefined : byId.get(f.executionId)?.execution
      if (e === undefined) problems.push(`${scheduleId} fire due ${iso(f.dueAt)}: enqueued, but its execution ${f.executionId} does not exist`)
      else if (e.scheduleId !== scheduleId || e.fireAt !== f.dueAt || e.idempotencyKey !== fireKey(scheduleId, f.dueAt)) {
        problems.push(`${scheduleId} fire due ${iso(f.dueAt)}: its execution ${e.id} carries schedule ${e.scheduleId}, fire ${e.fireAt}, key ${e.idempotencyKey}`)
      }
      if (f.executionId !== null) fireExecutionIds.add(f.executionId)
    }
    const made = input.executions.filter((r) => r.execution.scheduleId === scheduleId).length
    if (made !== enqueued.length) problems.push(`${scheduleId}: ${made} executions for ${enqueued.length} enqueued fires`)
    if (!input.perSecond.includes(scheduleId)) continue
    if (fires.length === 0) {
      problems.push(`${scheduleId}: no fires`)
      continue
    }
    const first = fires[0]!.dueAt
    const last = fires.at(-1)!.dueAt
    fireSummaries.push({ scheduleId, fires: fires.length, firstDue: first, lastDue: last })
    const notEnqueued = fires.filter((f) => f.outcome !== "enqueued")
    if (notEnqueued.length > 0) problems.push(`${scheduleId}: ${notEnqueued.length} fires not enqueued (first: ${notEnqueued[0]!.outcome} due ${iso(notEnqueued[0]!.dueAt)})`)
    const gaps = fires.slice(1).filter((f, i) => f.dueAt - fires[i]!.dueAt !== 1_000)
    if (gaps.length > 0) problems.push(`${scheduleId}: due times not one second apart at ${gaps.slice(0, 5).map((f) => iso(f.dueAt)).join(", ")}`)
    if (first > input.window.start) problems.push(`${scheduleId}: first fire due ${iso(first)}, after the kills began at ${iso(input.window.start)}`)
    if (last < input.window.end) problems.push(`${scheduleId}: last fire due ${iso(last)}, before the kills ended at ${iso(input.window.end)}`)
  }
  for (const id of input.perSecond) if (!input.fires.has(id)) problems.push(`${id}: schedule not in the store`)

  // 2. None lost, none extra.
  const lost = [...input.acked.keys()].filter((id) => !byId.has(id))
  if (lost.length > 0) problems.push(`${lost.length} acknowledged executions are missing, e.g. ${lost.slice(0, 5).join(", ")}`)
  const strays = input.executions.filter((r) => !input.acked.has(r.execution.id) && !fireExecutionIds.has(r.execution.id))
  if (strays.length > 0) problems.push(`${strays.length} executions neither acknowledged nor made by a fire, e.g. ${strays.slice(0, 5).map((r) => r.execution.id).join(", ")}`)
  if (input.executions.length !== input.acked.size + enqueuedFires) {
    problems.push(`${input.executions.length} executions for ${input.acked.size} acknowledged + ${enqueuedFires} enqueued fires`)
  }
  for (const id of input.evidence.keys()) if (!byId.has(id)) problems.push(`a handler ran for ${id}, which is not in the store`)

  return {
    problems,
    executions: input.executions.length,
    byState,
    handlerStarts,
    jobRetries,
    duplicates,
    recoveries,
    broken,
    exhausted,
    fires: fireSummaries
  }
}
