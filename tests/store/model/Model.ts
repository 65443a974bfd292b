/**
 * The in-memory model of the Store that the model-based tests run beside the real one:
 * executions as plain records, a logical clock, and the claims workers hold. Each
 * operation here states what DESIGN §2 says the store must do — which executions a
 * claim takes and in what order, whether an outcome passes its fence, what an
 * idempotent enqueue returns — and the commands (commands.ts) compare the real store
 * against it after every step.
 *
 * States: queued → running → succeeded | failed | cancelled; a retry or a release goes
 * back to queued, a park to waiting. A cancel request on a running execution is a flag it keeps until it
 * finishes; an attempt that would send it back to queued (a retry, a lease expiry, a
 * release) ends it cancelled instead, so it never runs again (DESIGN §2: it "ends
 * cancelled").
 *
 * Orchestration (DESIGN §7): a running execution may park — `waiting`, its attempt not
 * charged, no lease, due at its wait's end (a sleep's or a signal's timeout; never, for
 * children or a signal without one) or at once when what it waits for happens: the last
 * awaited child ends (any way), or a signal of its name is sent or already kept. A
 * claim takes due waiting executions like queued ones. Children are inserted once per
 * (parent, step), their step recorded; signals are kept per execution and taken once,
 * oldest first; a cancel reaches the whole tree below (queued and waiting at once,
 * running asked to stop).
 *
 * A queue may be paused: a paused queue's claim takes nothing and its due executions are
 * not work for `--exit-when-idle`, while its enqueues, outcomes and cancels go on as
 * usual; a resume makes them claimable again.
 *
 * A queue may be claimed under flow limits (the run's, see {@link ModelLimits}):
 * {@link Model.expectedLimitedClaim} states independently of src/store/FlowRules.ts what
 * such a claim takes, what it answers for retryAt, and which rate-limit starts it logs.
 */
import type { Wait } from "../../../src/jobs/Wait.ts"
import type { AttemptOutcome, ExecutionState } from "../../../src/store/Execution.ts"

/** The lease every claim asks for. */
export const leaseMs = 10_000

/** The logical clock's start (2026-01-01T00:00:00Z). */
export const t0 = Date.UTC(2026, 0, 1)

/** An attempt row as the model expects attemptsList to return it. */
export interface ModelAttempt {
  readonly attempt: number
  readonly worker: string
  readonly outcome: AttemptOutcome
}

/** One execution as the model knows it. */
export interface ModelExecution {
  readonly id: string
  readonly job: string
  readonly queue: string
  readonly priority: number
  readonly maxAttempts: number
  readonly idempotencyKey: string | null
  readonly retryOf: string | null
  readonly payload: unknown
  readonly createdAt: number
  /** The key a Job's per-key concurrency limit counts it under; null: none. */
  readonly concurrencyKey: string | null
  /** The key a Job's per-key rate limit counts it under; null: none (a per-key limit counts it under ""). */
  readonly rateKey: string | null
  state: ExecutionState
  runAt: number
  attempt: number
  leaseOwner: string | null
  leaseExpiresAt: number | null
  cancelRequested: boolean
  startedAt: number | null
  finishedAt: number | null
  errorTag: string | null
  result: unknown
  /** The execution whose step `parentStep` inserted it (executionsInsertChild); null: none. */
  readonly parentId: string | null
  readonly parentStep: string | null
  /** Its last wait (kept after it resumes). */
  wait: Wait | null
  attempts: Array<ModelAttempt>
  /** Model only: when it last parked (the children-wait invariant's lower bound). */
  parkedAt: number | null
}

/** A step row as the model expects stepsList to return it. */
export interface ModelStep {
  readonly name: string
  readonly output: string
  readonly attempt: number
  readonly createdAt: number
}

/** A signal as the model expects signalsList to return it (seq is the store's: compared by order). */
export interface ModelSignal {
  readonly name: string
  readonly payload: string
  readonly sentAt: number
  consumedAt: number | null
}

/** A finished state. */
export const isEnded = (state: ExecutionState): boolean => state === "succeeded" || state === "failed" || state === "cancelled"

/** What a wait with no clock deadline is due at (children, a signal without timeout): the latest time Roster stores. */
export const never = 253_402_300_799_999

/** What a worker believes it holds after a claim; stale once the lease moves on. */
export interface Handle {
  readonly id: string
  readonly job: string
  readonly workerId: string
  readonly attempt: number
  readonly startedAt: number
}

/** The fence an outcome carries. */
export interface Fence {
  readonly id: string
  readonly workerId: string
  readonly attempt: number
}

/** A new execution as the model records it at enqueue. */
export type NewExecution = Pick<
  ModelExecution,
  "id" | "job" | "queue" | "priority" | "maxAttempts" | "idempotencyKey" | "retryOf" | "payload" | "runAt" | "concurrencyKey" | "rateKey"
> & { readonly parentId?: string | null; readonly parentStep?: string | null }

/** What claim order looks at. */
type ClaimKey = Pick<ModelExecution, "priority" | "runAt" | "id">

/** Claim order: priority DESC, run_at ASC, id ASC. */
export const claimOrder = (a: ClaimKey, b: ClaimKey): number =>
  b.priority - a.priority || a.runAt - b.runAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)

/** A rate limit: at most `limit` starts in any window of `periodMs`. */
export interface ModelRate {
  readonly limit: number
  readonly periodMs: number
}

/**
 * The flow limits every claim of one queue applies in a run (the workers' config; the
 * same shape as the Store's ClaimLimits, stated here again on purpose).
 */
export interface ModelLimits {
  readonly globalConcurrency: number | null
  readonly rateLimit: ModelRate | null
  readonly jobs: Readonly<Record<string, { readonly concurrency: number | null; readonly rateLimit: (ModelRate & { readonly perKey: boolean }) | null }>>
}

/** One claim's starts under one rate scope, as the store logs them. */
export interface ModelStart {
  readonly queue: string
  readonly scope: string
  /** When the claim started them. */
  readonly at: number
  readonly expiresAt: number
  readonly n: number
}

/** What a limited claim must return, and the starts it must log. */
export interface ExpectedLimitedClaim {
  readonly executions: Array<ModelExecution>
  readonly retryAt: number | null
  readonly starts: Array<ModelStart>
}

/** The rate scopes as the store names them: the queue, a Job as a whole, one key of a Job (parts joined by U+001F). */
export const scopes = {
  queue: "*",
  job: (job: string) => `job\u001f${job}`,
  key: (job: string, key: string) => `key\u001f${job}\u001f${key}`
} as const

/** The in-memory model. */
export class Model {
  now = t0
  /** Every claim's starts under each rate scope, never forgotten (the window invariant reads them all). */
  readonly starts: Array<ModelStart> = []

  /** `limits`: the queues whose claims are limited in this run, and how. */
  constructor(readonly limits: ReadonlyMap<string, ModelLimits> = new Map()) {}
  readonly executions = new Map<string, ModelExecution>()
  /** Every claim handed out and not released, live or stale; outcomes are sent on these. */
  readonly handles: Array<Handle> = []
  /** Every id ever inserted, pruned ones too (cancel and retry may name a vanished execution). */
  readonly everSeen: Array<string> = []
  /** Ids whose attempt rows changed since the last invariant check. */
  readonly touched = new Set<string>()
  /** Queues with a stored state: paused (since when) or resumed (null). */
  readonly queueStates = new Map<string, number | null>()
  /** Step rows per execution (child inserts and signal takes record them); dropped with a pruned execution. */
  readonly steps = new Map<string, Array<ModelStep>>()
  /** Signals per execution, in the order sent; dropped with a pruned execution. */
  readonly signals = new Map<string, Array<ModelSignal>>()
  /** When each execution ever ended, never forgotten (pruned children's ends still bound their parent's wake-up). */
  readonly endedAt = new Map<string, number>()
  /** Ids whose steps or signals changed since the last invariant check. */
  readonly touchedOrchestration = new Set<string>()

  /** Whether a queue is paused now. */
  isPaused(queue: string): boolean {
    return (this.queueStates.get(queue) ?? null) !== null
  }

  /** Pauses a queue; whether it was not paused before (a second pause keeps the first time). */
  pause(queue: string): boolean {
    if (this.isPaused(queue)) return false
    this.queueStates.set(queue, this.now)
    return true
  }

  /** Resumes a queue; whether it was paused. */
  resume(queue: string): boolean {
    if (!this.isPaused(queue)) return false
    this.queueStates.set(queue, null)
    return true
  }

  /** Whether `--exit-when-idle` sees work: a due queued execution of an unpaused served queue and job, or any expired lease. */
  hasWork(served: ReadonlyArray<{ readonly queue: string; readonly jobs: ReadonlyArray<string> }>): boolean {
    return this.expired().length > 0 ||
      served.some((q) => q.jobs.length > 0 && this.expectedClaim({ queue: q.queue, jobs: q.jobs, limit: 1 }).length > 0)
  }

  /** The execution holding (job, key) now, if any. */
  byKey(job: string, key: string): ModelExecution | undefined {
    for (const e of this.executions.values()) if (e.job === job && e.idempotencyKey === key) return e
    return undefined
  }

  /** Records a fresh queued execution. */
  insert(row: NewExecution): void {
    this.executions.set(row.id, {
      ...row,
      createdAt: this.now,
      state: "queued",
      attempt: 0,
      leaseOwner: null,
      leaseExpiresAt: null,
      cancelRequested: false,
      startedAt: null,
      finishedAt: null,
      errorTag: null,
      result: null,
      parentId: row.parentId ?? null,
      parentStep: row.parentStep ?? null,
      wait: null,
      attempts: [],
      parkedAt: null
    })
    this.everSeen.push(row.id)
  }

  /** The executions a claim must return, in claim order: due, queued or waiting, of the queue (unless paused) and jobs, up to limit. */
  expectedClaim(req: { readonly queue: string; readonly jobs: ReadonlyArray<string>; readonly limit: number }): Array<ModelExecution> {
    if (this.isPaused(req.queue)) return []
    return [...this.executions.values()]
      .filter((e) => (e.state === "queued" || e.state === "waiting") && e.queue === req.queue && req.jobs.includes(e.job) && e.runAt <= this.now)
      .sort(claimOrder)
      .slice(0, Math.max(0, req.limit))
  }

  /** Running executions of a queue whose lease is live now (a lease ends after its expiry instant). */
  liveRunning(queue: string): Array<ModelExecution> {
    return [...this.executions.values()].filter((e) => e.queue === queue && e.state === "running" && e.leaseExpiresAt! >= this.now)
  }

  /** Starts of a scope still in the window at now. */
  private liveStarts(queue: string, scope: string, extra: ReadonlyArray<ModelStart> = []): Array<ModelStart> {
    return [...this.starts, ...extra].filter((s) => s.queue === queue && s.scope === scope && s.expiresAt > this.now)
  }

  private used(queue: string, scope: string, extra: ReadonlyArray<ModelStart> = []): number {
    return this.liveStarts(queue, scope, extra).reduce((sum, s) => sum + s.n, 0)
  }

  /** The first instant after now at which a scope holds fewer than `limit` live starts (null: it does now). */
  freeAt(queue: string, scope: string, limit: number, extra: ReadonlyArray<ModelStart> = []): number | null {
    const live = this.liveStarts(queue, scope, extra)
    if (live.reduce((sum, s) => sum + s.n, 0) < limit) return null
    const expiries = [...new Set(live.map((s) => s.expiresAt))].sort((a, b) => a - b)
    return expiries.find((t) => live.filter((s) => s.expiresAt > t).reduce((sum, s) => sum + s.n, 0) < limit) ?? null
  }

  /** The rate scope an execution's start counts under for its Job's own limit, if the Job has one. */
  jobScopeOf(limits: ModelLimits, e: Pick<ModelExecution, "job" | "rateKey">): { readonly scope: string; readonly rate: ModelRate } | null {
    const rate = limits.jobs[e.job]?.rateLimit ?? null
    if (rate === null) return null
    return { scope: rate.perKey ? scopes.key(e.job, e.rateKey ?? "") : scopes.job(e.job), rate }
  }

  /**
   * What a limited claim must take: the due queued executions of the queue and jobs (none
   * if paused) in claim order, each taken unless its (job, key) is at the Job's
   * concurrency limit (live running plus those taken before it) or its Job's rate scope
   * is at its limit (live starts plus those taken before it), until `limit`, the
   * queue's free global slots or its free rate starts are used up. Rows held back never
   * block later ones.
   *
   * Its retryAt, when it takes fewer than asked: the earliest instant one of these rate
   * scopes allows a start again — every scope already at its limit before the claim, the
   * queue's scope if it is at its limit after it, and every scope that held a row back.
   * Null when there is none (a concurrency limit frees on an outcome, not at a time).
   */
  expectedLimitedClaim(req: { readonly queue: string; readonly jobs: ReadonlyArray<string>; readonly limit: number }, limits: ModelLimits): ExpectedLimitedClaim {
    if (this.isPaused(req.queue)) return { executions: [], retryAt: null, starts: [] }
    const q = req.queue
    const live = this.liveRunning(q)
    const queueRate = limits.rateLimit
    const room = Math.min(
      req.limit,
      limits.globalConcurrency === null ? Infinity : limits.globalConcurrency - live.length,
      queueRate === null ? Infinity : queueRate.limit - this.used(q, scopes.queue)
    )
    const taken: Array<ModelExecution> = []
    const held = new Set<string>()
    for (const e of this.expectedClaim({ ...req, limit: Infinity })) {
      if (taken.length >= room) break
      const concurrency = limits.jobs[e.job]?.concurrency ?? null
      if (concurrency !== null && e.concurrencyKey !== null) {
        const sameKey = (x: ModelExecution) => x.job === e.job && x.concurrencyKey === e.concurrencyKey
        if (live.filter(sameKey).length + taken.filter(sameKey).length >= concurrency) continue
      }
      const scoped = this.jobScopeOf(limits, e)
      if (scoped !== null) {
        const before = taken.filter((x) => this.jobScopeOf(limits, x)?.scope === scoped.scope).length
        if (this.used(q, scoped.scope) + before >= scoped.rate.limit) {
          held.add(scoped.scope)
          continue
        }
      }
      taken.push(e)
    }
    const starts: Array<ModelStart> = []
    const start = (scope: string, n: number, periodMs: number) => starts.push({ queue: q, scope, at: this.now, expiresAt: this.now + periodMs, n })
    if (taken.length > 0 && queueRate !== null) start(scopes.queue, taken.length, queueRate.periodMs)
    const byScope = new Map<string, { n: number; periodMs: number }>()
    for (const e of taken) {
      const scoped = this.jobScopeOf(limits, e)
      if (scoped !== null) byScope.set(scoped.scope, { n: (byScope.get(scoped.scope)?.n ?? 0) + 1, periodMs: scoped.rate.periodMs })
    }
    for (const [scope, { n, periodMs }] of byScope) start(scope, n, periodMs)

    let retryAt: number | null = null
    if (taken.length < req.limit) {
      // The scopes at their limit before the claim, the queue's after it, and those that held a row back, with their limits.
      const full = new Map<string, number>()
      if (queueRate !== null && this.used(q, scopes.queue) >= queueRate.limit) full.set(scopes.queue, queueRate.limit)
      if (queueRate !== null && this.used(q, scopes.queue, starts) >= queueRate.limit) full.set(scopes.queue, queueRate.limit)
      for (const [job, l] of Object.entries(limits.jobs)) {
        if (l.rateLimit === null) continue
        const candidates = l.rateLimit.perKey
          ? [...new Set(this.starts.filter((s) => s.queue === q && s.scope.startsWith(scopes.key(job, ""))).map((s) => s.scope))]
          : [scopes.job(job)]
        for (const scope of candidates) if (this.used(q, scope) >= l.rateLimit.limit) full.set(scope, l.rateLimit.limit)
      }
      for (const scope of held) full.set(scope, limits.jobs[scope.split("\u001f")[1]!]!.rateLimit!.limit)
      for (const [scope, limit] of full) {
        const at = this.freeAt(q, scope, limit, starts)
        if (at !== null && (retryAt === null || at < retryAt)) retryAt = at
      }
    }
    return { executions: taken, retryAt, starts }
  }

  /** Leases an execution to a worker: running, one more attempt. */
  claim(e: ModelExecution, workerId: string): Handle {
    e.state = "running"
    e.attempt++
    e.leaseOwner = workerId
    e.leaseExpiresAt = this.now + leaseMs
    e.startedAt = this.now
    const handle = { id: e.id, job: e.job, workerId, attempt: e.attempt, startedAt: this.now }
    this.handles.push(handle)
    return handle
  }

  /** Whether an outcome with this fence applies: the execution is running under exactly this owner and attempt. */
  passesFence(f: Fence): boolean {
    const e = this.executions.get(f.id)
    return e !== undefined && e.state === "running" && e.leaseOwner === f.workerId && e.attempt === f.attempt
  }

  /** Running executions of a worker (what its heartbeat holds). */
  heldBy(workerId: string): Array<ModelExecution> {
    return [...this.executions.values()].filter((e) => e.state === "running" && e.leaseOwner === workerId)
  }

  /** Running executions whose lease expired before now. */
  expired(): Array<ModelExecution> {
    return [...this.executions.values()].filter((e) => e.state === "running" && e.leaseExpiresAt !== null && e.leaseExpiresAt < this.now)
  }

  /** Finished executions a prune with these cut-offs may delete. */
  prunable(succeededBefore: number, failedBefore: number): Array<ModelExecution> {
    return [...this.executions.values()].filter((e) =>
      e.finishedAt !== null &&
      ((e.state === "succeeded" && e.finishedAt < succeededBefore) ||
        ((e.state === "failed" || e.state === "cancelled") && e.finishedAt < failedBefore)))
  }

  /** Executions by stored state. */
  counts(filter: { readonly queue?: string } = {}): Record<ExecutionState, number> {
    const counts: Record<ExecutionState, number> = { queued: 0, running: 0, waiting: 0, succeeded: 0, failed: 0, cancelled: 0 }
    for (const e of this.executions.values()) if (filter.queue === undefined || e.queue === filter.queue) counts[e.state]++
    return counts
  }

  /** Ends the running attempt: the lease is gone, the attempt row written. */
  private endAttempt(e: ModelExecution, outcome: AttemptOutcome): void {
    e.attempts.push({ attempt: e.attempt, worker: e.leaseOwner!, outcome })
    e.leaseOwner = null
    e.leaseExpiresAt = null
    this.touched.add(e.id)
  }

  succeed(e: ModelExecution, result: unknown): void {
    // A success keeps its worker as lease owner (its attempt row is read back from it).
    e.attempts.push({ attempt: e.attempt, worker: e.leaseOwner!, outcome: "succeeded" })
    this.touched.add(e.id)
    e.state = "succeeded"
    e.result = result
    e.errorTag = null
    e.finishedAt = this.now
    e.leaseExpiresAt = null
    this.ended(e)
  }

  /** Back to queued for a later attempt — unless a cancel was requested: then it ends cancelled, never to run again. */
  retry(e: ModelExecution, runAt: number, errorTag: string, expired: boolean): void {
    this.endAttempt(e, expired ? "lease_expired" : e.cancelRequested ? "cancelled" : "retrying")
    e.errorTag = errorTag
    if (e.cancelRequested) {
      e.state = "cancelled"
      e.finishedAt = this.now
      this.ended(e)
    } else {
      e.state = "queued"
      e.runAt = runAt
    }
  }

  fail(e: ModelExecution, errorTag: string, expired: boolean): void {
    this.endAttempt(e, expired ? "lease_expired" : "failed")
    e.state = "failed"
    e.errorTag = errorTag
    e.finishedAt = this.now
    this.ended(e)
  }

  cancelRunning(e: ModelExecution, errorTag: string | null): void {
    this.endAttempt(e, "cancelled")
    e.state = "cancelled"
    e.errorTag = errorTag
    e.finishedAt = this.now
    this.ended(e)
  }

  /** A shutdown's release: back to queued (cancelled if a cancel was requested), the attempt not charged, no attempt row. */
  release(e: ModelExecution, handle: Handle): void {
    e.state = e.cancelRequested ? "cancelled" : "queued"
    if (e.cancelRequested) e.finishedAt = this.now
    e.attempt--
    e.startedAt = null
    e.leaseOwner = null
    e.leaseExpiresAt = null
    // The released handler was interrupted: it never reports again.
    this.handles.splice(this.handles.indexOf(handle), 1)
    if (e.cancelRequested) this.ended(e)
  }

  /**
   * A park (ctx.sleep, awaitChildren, waitForSignal): waiting with its wait, due at
   * runAt, the attempt not charged, no attempt row, the handler gone (as a release);
   * asked to cancel, it ends cancelled instead. Due at once when what it waits for
   * already happened: every awaited child ended, or a kept signal of its name.
   */
  park(e: ModelExecution, handle: Handle, runAt: number, wait: Wait): void {
    e.state = e.cancelRequested ? "cancelled" : "waiting"
    e.wait = wait
    e.runAt = runAt
    e.attempt--
    e.startedAt = null
    e.leaseOwner = null
    e.leaseExpiresAt = null
    e.parkedAt = this.now
    this.handles.splice(this.handles.indexOf(handle), 1)
    if (e.cancelRequested) {
      e.finishedAt = this.now
      this.ended(e)
      return
    }
    if (wait.kind === "children" && this.childrenEnded(e)) this.dueNow(e)
    if (wait.kind === "signal" && (this.signals.get(e.id) ?? []).some((s) => s.name === wait.signal && s.consumedAt === null)) this.dueNow(e)
  }

  /** Due now, unless due already. */
  private dueNow(e: ModelExecution): void {
    e.runAt = Math.min(e.runAt, this.now)
  }

  /** Whether every child a waiting execution awaits has ended (a pruned one has; ids not its children do not count). */
  childrenEnded(e: ModelExecution): boolean {
    if (e.wait?.kind !== "children") return false
    return e.wait.ids.every((id) => {
      const c = this.executions.get(id)
      return c === undefined || c.parentId !== e.id || isEnded(c.state)
    })
  }

  /** An execution just ended: recorded, and its parent, waiting for its children, is due now if they have all ended. */
  private ended(e: ModelExecution): void {
    this.endedAt.set(e.id, this.now)
    const p = e.parentId === null ? undefined : this.executions.get(e.parentId)
    if (p !== undefined && p.state === "waiting" && p.wait?.kind === "children" && this.childrenEnded(p)) this.dueNow(p)
  }

  /** The children of an execution now (by parent id). */
  childrenOf(id: string): Array<ModelExecution> {
    return [...this.executions.values()].filter((c) => c.parentId === id)
  }

  /** Records a step unless one of that name exists (the first save wins). */
  saveStep(id: string, step: ModelStep): void {
    const steps = this.steps.get(id) ?? []
    if (!steps.some((s) => s.name === step.name)) steps.push(step)
    this.steps.set(id, steps)
    this.touchedOrchestration.add(id)
  }

  /** A signal sent: refused for a missing or ended execution; kept; and waking it if it waits for that signal. */
  sendSignal(id: string, name: string, payload: string): { _tag: "Kept" } | { _tag: "Woke" } | { _tag: "Ended"; state: string } | { _tag: "Missing" } {
    const e = this.executions.get(id)
    if (e === undefined) return { _tag: "Missing" }
    if (isEnded(e.state)) return { _tag: "Ended", state: e.state }
    const signals = this.signals.get(id) ?? []
    signals.push({ name, payload, sentAt: this.now, consumedAt: null })
    this.signals.set(id, signals)
    this.touchedOrchestration.add(id)
    if (e.state !== "waiting" || e.wait?.kind !== "signal" || e.wait.signal !== name) return { _tag: "Kept" }
    this.dueNow(e)
    return { _tag: "Woke" }
  }

  /** Takes the oldest kept signal of a name, recording it as a step; null when none is kept. */
  takeSignal(e: ModelExecution, name: string, step: string): string | null {
    const s = (this.signals.get(e.id) ?? []).find((x) => x.name === name && x.consumedAt === null)
    if (s === undefined) return null
    s.consumedAt = this.now
    this.touchedOrchestration.add(e.id)
    this.saveStep(e.id, { name: step, output: s.payload, attempt: e.attempt, createdAt: this.now })
    return s.payload
  }

  /** An operator's cancel: queued ends at once, running is asked to stop. */
  cancel(id: string): "cancelled" | "requested" | "already-finished" | null {
    const e = this.executions.get(id)
    if (!e) return null
    if (isEnded(e.state)) return "already-finished"
    const result = this.cancelOne(e)
    // The tree below, to any depth, through children in any state (a pruned one ends the path).
    const seen = new Set([id])
    const below = this.childrenOf(id)
    while (below.length > 0) {
      const c = below.shift()!
      if (seen.has(c.id)) continue
      seen.add(c.id)
      if (!isEnded(c.state)) this.cancelOne(c)
      below.push(...this.childrenOf(c.id))
    }
    return result
  }

  /** Queued or waiting: cancelled now; running: asked to stop. */
  private cancelOne(e: ModelExecution): "cancelled" | "requested" {
    if (e.state === "running") {
      e.cancelRequested = true
      return "requested"
    }
    e.state = "cancelled"
    e.finishedAt = this.now
    this.ended(e)
    return "cancelled"
  }

  remove(id: string): void {
    this.executions.delete(id)
    this.touched.add(id)
    this.steps.delete(id)
    this.signals.delete(id)
    this.touchedOrchestration.add(id)
  }
}
