/**
 * The rules of flow control across processes as pure functions, so the SQLite and
 * PostgreSQL Stores apply one set and only run statements (DESIGN §7):
 *
 * - **Global concurrency** of a queue: running executions of the queue whose lease is
 *   live (`lease_expires_at >= now`) count; a killed worker's slots come back when its
 *   leases expire, before the Reaper has even seen them.
 * - **Per-key concurrency** of a Job: the same count per (job, key). Keys at their limit
 *   are excluded inside the candidate scan, so they never block other keys or the queue;
 *   within one claim a key is taken at most up to its limit, in claim order.
 * - **Rate limits** (queue, Job, Job per key): a sliding-window log. Each claim writes one
 *   start row per scope (`n` starts, counted until `expires_at` = start + period); a scope
 *   allows a start while the starts it holds with `expires_at > now` number fewer than
 *   `limit`. So no window of `period` ever holds more than `limit` starts, and a burst
 *   of up to `limit` at once is allowed. Retries are claims, so they count as starts.
 *
 * The claim that applies these runs serialised per queue (SQLite: the write lock of an
 * immediate transaction; PostgreSQL: a transaction-scoped advisory lock per queue), so
 * the counts it reads cannot change before it writes: no check-then-claim race.
 */
import type { RateLimit } from "../jobs/FlowLimits.ts"
import type { Execution } from "./Execution.ts"

/** The limits a claim of one queue applies, from the claiming worker's config. */
export interface ClaimLimits {
  readonly globalConcurrency: number | null
  readonly rateLimit: RateLimit | null
  /** The Jobs of the queue that declare a limit, by id. */
  readonly jobs: Readonly<Record<string, JobLimits>>
}

/** One Job's limits. */
export interface JobLimits {
  /** Per-key concurrency limit (keys are on the rows); null: none. */
  readonly concurrency: number | null
  /** The Job's rate limit; `perKey`: counted per the rows' rate keys. */
  readonly rateLimit: (RateLimit & { readonly perKey: boolean }) | null
}

/** Live running executions of the queue per (job, concurrency key). */
export interface RunningCount {
  readonly job: string
  readonly key: string | null
  readonly count: number
}

/** A stored start row of a rate-limit scope. */
export interface StartRow {
  readonly scope: string
  readonly expiresAt: number
  readonly n: number
}

/** A due queued execution as the limited claim scans it. */
export interface Candidate {
  readonly id: string
  readonly job: string
  readonly concurrencyKey: string | null
  readonly rateKey: string | null
}

/** Separates the parts of a scope or a (job, key) pair; not allowed in a Job id. */
export const sep = "\u001f"

/** The rate scope of the queue itself. */
export const queueScope = "*"
/** The rate scope of a Job (its limit as a whole). */
export const jobScope = (job: string): string => `job${sep}${job}`
/** The rate scope of one key of a Job. */
export const keyScope = (job: string, key: string): string => `key${sep}${job}${sep}${key}`
/** A (job, key) pair as the candidate scan's exclusion lists spell it (`job || char(31) || key`). */
export const pairOf = (job: string, key: string): string => `${job}${sep}${key}`

/** Whether a claim of this queue must take the limited path. */
export const hasLimits = (limits: ClaimLimits | null | undefined): limits is ClaimLimits =>
  limits !== null && limits !== undefined &&
  (limits.globalConcurrency !== null || limits.rateLimit !== null || Object.keys(limits.jobs).length > 0)

/** What the stored counts allow before any candidate is read. */
export interface FlowState {
  /** Slots left under the global limit (Infinity: none). */
  readonly globalFree: number
  readonly running: number
  /** Starts left under the queue's rate limit (Infinity: none). */
  readonly queueRateFree: number
  /** Jobs whose own (not per key) rate limit is used up. */
  readonly blockedJobs: ReadonlyArray<string>
  /** (job, key) pairs at their concurrency limit. */
  readonly blockedConcurrency: ReadonlyArray<string>
  /** (job, rate key) pairs at their rate limit. */
  readonly blockedRate: ReadonlyArray<string>
  /** Starts held per scope, live at now. */
  readonly used: ReadonlyMap<string, number>
  /** Live running per (job, key) pair. */
  readonly runningByPair: ReadonlyMap<string, number>
  /** The earliest time a used-up rate scope allows a start again (null: none used up). */
  readonly rateFreesAt: number | null
}

/** Live starts of each scope at `now`. */
const usedOf = (starts: ReadonlyArray<StartRow>, now: number): Map<string, number> => {
  const used = new Map<string, number>()
  for (const s of starts) if (s.expiresAt > now) used.set(s.scope, (used.get(s.scope) ?? 0) + s.n)
  return used
}

/** When a scope holding `used` starts of `limit` allows one more: the expiry that brings it under. */
export const freesAt = (starts: ReadonlyArray<StartRow>, scope: string, limit: number, now: number, extra: ReadonlyArray<StartRow> = []): number | null => {
  const live = [...starts, ...extra].filter((s) => s.scope === scope && s.expiresAt > now).sort((a, b) => a.expiresAt - b.expiresAt)
  let excess = live.reduce((sum, s) => sum + s.n, 0) - limit + 1
  if (excess <= 0) return null
  for (const s of live) {
    excess -= s.n
    if (excess <= 0) return s.expiresAt
  }
  return null
}

/** The limits' state from the stored running counts and start rows. */
export const flowStateOf = (limits: ClaimLimits, running: ReadonlyArray<RunningCount>, starts: ReadonlyArray<StartRow>, now: number): FlowState => {
  const used = usedOf(starts, now)
  const runningTotal = running.reduce((sum, r) => sum + r.count, 0)
  const runningByPair = new Map<string, number>()
  for (const r of running) if (r.key !== null) runningByPair.set(pairOf(r.job, r.key), (runningByPair.get(pairOf(r.job, r.key)) ?? 0) + r.count)
  const blockedConcurrency: Array<string> = []
  for (const [pair, count] of runningByPair) {
    const limit = limits.jobs[pair.slice(0, pair.indexOf(sep))]?.concurrency ?? null
    if (limit !== null && count >= limit) blockedConcurrency.push(pair)
  }
  let rateFreesAt: number | null = null
  const noteFree = (at: number | null) => {
    if (at !== null && (rateFreesAt === null || at < rateFreesAt)) rateFreesAt = at
  }
  const blockedJobs: Array<string> = []
  const blockedRate: Array<string> = []
  for (const [job, l] of Object.entries(limits.jobs)) {
    if (l.rateLimit === null) continue
    if (!l.rateLimit.perKey) {
      if ((used.get(jobScope(job)) ?? 0) >= l.rateLimit.limit) {
        blockedJobs.push(job)
        noteFree(freesAt(starts, jobScope(job), l.rateLimit.limit, now))
      }
      continue
    }
    const prefix = keyScope(job, "")
    for (const [scope, n] of used) {
      if (scope.startsWith(prefix) && n >= l.rateLimit.limit) {
        blockedRate.push(pairOf(job, scope.slice(prefix.length)))
        noteFree(freesAt(starts, scope, l.rateLimit.limit, now))
      }
    }
  }
  let queueRateFree = Infinity
  if (limits.rateLimit !== null) {
    queueRateFree = Math.max(0, limits.rateLimit.limit - (used.get(queueScope) ?? 0))
    if (queueRateFree === 0) noteFree(freesAt(starts, queueScope, limits.rateLimit.limit, now))
  }
  return {
    globalFree: limits.globalConcurrency === null ? Infinity : Math.max(0, limits.globalConcurrency - runningTotal),
    running: runningTotal,
    queueRateFree,
    blockedJobs,
    blockedConcurrency,
    blockedRate,
    used,
    runningByPair,
    rateFreesAt
  }
}

/**
 * The time before which a claim may prune start rows that have expired: `now` less the
 * longest rate period of the limits. A claim reads its `now` before it gets the queue's
 * lock, so claims can commit out of the order of their times: one whose `now` lags
 * another's must still count the starts the other saw expire. Pruning at `now` let such
 * a claim miss them and put more than `limit` starts into one window; kept for one more
 * period, rows serve any claim lagging by up to a period (counting still uses
 * `expires_at > now`, so the extra rows change no count).
 */
export const startsPruneBeforeOf = (limits: ClaimLimits, now: number): number => {
  const periods = [limits.rateLimit, ...Object.values(limits.jobs).map((j) => j.rateLimit)].map((r) => r?.periodMs ?? 0)
  return now - Math.max(0, ...periods)
}

/** How many a claim may take at most, before looking at candidates. */
export const roomOf = (state: FlowState, want: number): number => Math.max(0, Math.min(want, state.globalFree, state.queueRateFree))

/** How many candidates the limited claim scans for `want` (rows of one key past its limit are skipped within the scan). */
export const scanSizeOf = (want: number): number => want * 4 + 16

/** What a limited claim takes and writes. */
export interface Selection {
  /** Ids to claim, in claim order. */
  readonly ids: ReadonlyArray<string>
  /** Start rows to write: n starts per scope. */
  readonly starts: ReadonlyArray<{ readonly scope: string; readonly n: number; readonly expiresAt: number }>
  /**
   * When a rate limit that held something back allows a start again: the claimer sleeps
   * until then instead of polling. Null when nothing was held back by a rate limit.
   */
  readonly retryAt: number | null
}

/** The rate scope a candidate's start counts under for its Job's limit, or null. */
const jobRateScopeOf = (limits: ClaimLimits, c: Candidate): { readonly scope: string; readonly rate: RateLimit } | null => {
  const rate = limits.jobs[c.job]?.rateLimit ?? null
  if (rate === null) return null
  if (!rate.perKey) return { scope: jobScope(c.job), rate }
  return { scope: keyScope(c.job, c.rateKey ?? ""), rate }
}

/**
 * Chooses which candidates (due, in claim order, already without the pairs and Jobs the
 * state excluded) to claim, at most `want`, under every limit.
 */
export const selectClaims = (
  limits: ClaimLimits,
  state: FlowState,
  starts: ReadonlyArray<StartRow>,
  candidates: ReadonlyArray<Candidate>,
  want: number,
  now: number
): Selection => {
  const room = roomOf(state, want)
  const ids: Array<string> = []
  const takenPair = new Map<string, number>()
  const takenScope = new Map<string, number>()
  const rateHeld = new Set<string>()
  for (const c of candidates) {
    if (ids.length >= room) break
    const concurrency = limits.jobs[c.job]?.concurrency ?? null
    const pair = c.concurrencyKey === null || concurrency === null ? null : pairOf(c.job, c.concurrencyKey)
    if (pair !== null && (state.runningByPair.get(pair) ?? 0) + (takenPair.get(pair) ?? 0) >= concurrency!) continue
    const scoped = jobRateScopeOf(limits, c)
    if (scoped !== null && (state.used.get(scoped.scope) ?? 0) + (takenScope.get(scoped.scope) ?? 0) >= scoped.rate.limit) {
      rateHeld.add(scoped.scope)
      continue
    }
    ids.push(c.id)
    if (pair !== null) takenPair.set(pair, (takenPair.get(pair) ?? 0) + 1)
    if (scoped !== null) takenScope.set(scoped.scope, (takenScope.get(scoped.scope) ?? 0) + 1)
  }
  const rows: Array<{ scope: string; n: number; expiresAt: number }> = []
  if (ids.length > 0 && limits.rateLimit !== null) rows.push({ scope: queueScope, n: ids.length, expiresAt: now + limits.rateLimit.periodMs })
  for (const [scope, n] of takenScope) {
    const job = scope.split(sep)[1]!
    rows.push({ scope, n, expiresAt: now + limits.jobs[job]!.rateLimit!.periodMs })
  }
  // Held back by a rate limit only if the claim came short of what was asked.
  let retryAt: number | null = null
  if (ids.length < want) {
    const candidatesFor = (at: number | null) => {
      if (at !== null && (retryAt === null || at < retryAt)) retryAt = at
    }
    candidatesFor(state.rateFreesAt)
    if (limits.rateLimit !== null && ids.length >= state.queueRateFree) {
      candidatesFor(freesAt(starts, queueScope, limits.rateLimit.limit, now, rows))
    }
    for (const scope of rateHeld) {
      const job = scope.split(sep)[1]!
      candidatesFor(freesAt(starts, scope, limits.jobs[job]!.rateLimit!.limit, now, rows))
    }
  }
  return { ids, starts: rows, retryAt }
}

/** The limits of a queue's claim from the queue's config and its Jobs' (those that declare none are left out). */
export const claimLimitsOf = (
  queue: { readonly globalConcurrency?: number | null | undefined; readonly rateLimit?: RateLimit | null | undefined },
  jobs: ReadonlyArray<{ readonly id: string; readonly flow: { readonly concurrency: { readonly limit: number } | undefined; readonly rateLimit: (RateLimit & { readonly key: unknown }) | undefined } }>
): ClaimLimits => {
  const byJob: Record<string, JobLimits> = {}
  for (const j of jobs) {
    const { concurrency, rateLimit } = j.flow
    if (concurrency === undefined && rateLimit === undefined) continue
    byJob[j.id] = {
      concurrency: concurrency?.limit ?? null,
      rateLimit: rateLimit === undefined ? null : { limit: rateLimit.limit, periodMs: rateLimit.periodMs, perKey: rateLimit.key !== undefined }
    }
  }
  return { globalConcurrency: queue.globalConcurrency ?? null, rateLimit: queue.rateLimit ?? null, jobs: byJob }
}

/** What one round of a limited claim took; `again`: its scan was the limit, so another round may find more. */
export interface Round {
  readonly executions: ReadonlyArray<Execution>
  readonly retryAt: number | null
  readonly again: boolean
}

/**
 * Whether a round whose scan came back full but short of the room should scan again:
 * rows of a key that reached its limit inside this claim filled the scan, and the next
 * round excludes that key in SQL, so a key with a long backlog never starves others.
 */
export const scanAgain = (taken: number, room: number, scanned: number, scanSize: number): boolean => taken < room && scanned >= scanSize

/** The most rounds one limited claim runs (each re-reads the counts it just changed). */
export const maxClaimRounds = 4

/** Runs rounds (inside the claim's transaction) until the claim is full, a round needs no other, or the bound. */
export const claimRounds = (want: number, round: (want: number) => Round): Omit<Round, "again"> => {
  const executions: Array<Execution> = []
  let retryAt: number | null = null
  for (let i = 0; i < maxClaimRounds && executions.length < want; i++) {
    const r = round(want - executions.length)
    executions.push(...r.executions)
    retryAt = r.retryAt
    if (!r.again) break
  }
  return { executions, retryAt }
}

/** What a round scans for, or, when nothing can be claimed, the round's (empty) result. */
export type RoundPlan =
  | { readonly _tag: "Scan"; readonly state: FlowState; readonly room: number; readonly jobs: ReadonlyArray<string>; readonly scanSize: number }
  | { readonly _tag: "Done"; readonly round: Round }

/** From a round's flow snapshot: stop (paused, no room, every Job held back) or scan `scanSize` candidates of `jobs`. */
export const planRound = (
  limits: ClaimLimits,
  flow: { readonly paused: boolean; readonly running: ReadonlyArray<RunningCount>; readonly starts: ReadonlyArray<StartRow> },
  jobs: ReadonlyArray<string>,
  want: number,
  now: number
): RoundPlan => {
  if (flow.paused) return { _tag: "Done", round: { executions: [], retryAt: null, again: false } }
  const state = flowStateOf(limits, flow.running, flow.starts, now)
  const room = roomOf(state, want)
  const open = jobs.filter((j) => !state.blockedJobs.includes(j))
  if (room === 0 || open.length === 0) return { _tag: "Done", round: { executions: [], retryAt: state.rateFreesAt, again: false } }
  return { _tag: "Scan", state, room, jobs: open, scanSize: scanSizeOf(room) }
}
