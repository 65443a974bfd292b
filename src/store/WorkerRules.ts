/**
 * The rules of live workers, as pure functions both drivers and the runtime call: how a
 * stored row becomes a {@link LiveWorker}, when a worker counts as stale, when a stale
 * row is pruned, and whether some live worker serves a (queue, Job) pair.
 *
 * Staleness: a worker refreshes its row every heartbeat. It is stale once its last
 * refresh is older than `staleAfterMs`, which the worker writes at registration as the
 * longer of three heartbeats and its lease ({@link staleAfterMsOf}): by then its leases
 * have run out too, so a worker that is not seen is also not holding work. A worker
 * that stops cleanly removes its row; one that was killed stays, marked stale, until a
 * registration prunes rows unseen for a day ({@link pruneStaleMs}).
 */
import type { LiveWorker, WorkerRegistration } from "./Store.ts"

/** Rows not refreshed for this long are deleted at the next registration: a day. */
export const pruneStaleMs = 86_400_000

/** How long after its last refresh a worker is stale: the longer of three heartbeats and its lease. */
export const staleAfterMsOf = (settings: { readonly heartbeatMs: number; readonly leaseMs: number }): number =>
  Math.max(3 * settings.heartbeatMs, settings.leaseMs)

/** The time before which an unrefreshed row is pruned. */
export const pruneBeforeOf = (now: number): number => now - pruneStaleMs

/** Whether a worker last seen at `lastSeenAt` is stale at `now`. */
export const isStale = (w: { readonly lastSeenAt: number; readonly staleAfterMs: number }, now: number): boolean =>
  now - w.lastSeenAt > w.staleAfterMs

/** A workers row as both drivers read it (times already numbers). */
export interface WorkerRow {
  readonly id: string
  readonly host: string
  readonly pid: number
  /** JSON arrays of names. */
  readonly queues: string
  readonly jobs: string
  readonly version: string
  readonly started_at: number
  readonly last_seen_at: number
  readonly stale_after_ms: number
}

/** The values a registration writes, in column order. */
export const registrationValues = (w: WorkerRegistration, now: number) =>
  [w.id, w.host, w.pid, JSON.stringify(w.queues), JSON.stringify(w.jobs), w.version, now, now, w.staleAfterMs] as const

const names = (text: string): ReadonlyArray<string> => {
  const v: unknown = JSON.parse(text)
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : []
}

/** A stored row as a LiveWorker at `now`. */
export const toLiveWorker = (r: WorkerRow, now: number): LiveWorker => ({
  id: r.id,
  host: r.host,
  pid: r.pid,
  queues: names(r.queues),
  jobs: names(r.jobs),
  version: r.version,
  startedAt: r.started_at,
  lastSeenAt: r.last_seen_at,
  staleAfterMs: r.stale_after_ms,
  stale: isStale({ lastSeenAt: r.last_seen_at, staleAfterMs: r.stale_after_ms }, now)
})

/** Whether some live (not stale) worker serves `job` on `queue`. */
export const isServed = (workers: ReadonlyArray<LiveWorker>, queue: string, job: string): boolean =>
  workers.some((w) => !w.stale && w.queues.includes(queue) && w.jobs.includes(job))

/** The note a fire, a log line and `roster check --live` give a Job no live worker serves, or undefined. */
export const unservedNote = (workers: ReadonlyArray<LiveWorker>, queue: string, job: string): string | undefined =>
  isServed(workers, queue, job) ? undefined : `no live worker serves queue ${queue} (job ${job})`

/** A live Schedule whose Job no live worker serves, with why. */
export interface Unserved {
  readonly schedule: string
  readonly job: string
  /** The Job's queue, or null when these apps do not define the Job. */
  readonly queue: string | null
  readonly reason: string
}

/** The live Schedules among `schedules` whose Job no live worker serves (`queueOf` names a Job's queue, if the apps define it). */
export const unservedSchedules = (
  schedules: ReadonlyArray<{ readonly id: string; readonly job: string }>,
  queueOf: (job: string) => string | undefined,
  workers: ReadonlyArray<LiveWorker>
): ReadonlyArray<Unserved> =>
  schedules.flatMap((s) => {
    const queue = queueOf(s.job) ?? null
    const reason = queue === null ? `job ${s.job} is not defined by these apps` : unservedNote(workers, queue, s.job)
    return reason === undefined ? [] : [{ schedule: s.id, job: s.job, queue, reason }]
  })
