/**
 * The in-memory model of the Store that the model-based tests run beside the real one:
 * executions as plain records, a logical clock, and the claims workers hold. Each
 * operation here states what DESIGN §2 says the store must do — which executions a
 * claim takes and in what order, whether an outcome passes its fence, what an
 * idempotent enqueue returns — and the commands (commands.ts) compare the real store
 * against it after every step.
 *
 * States: queued → running → succeeded | failed | cancelled; a retry or a release goes
 * back to queued. A cancel request on a running execution is a flag it keeps until it
 * finishes; an attempt that would send it back to queued (a retry, a lease expiry, a
 * release) ends it cancelled instead, so it never runs again (DESIGN §2: it "ends
 * cancelled").
 *
 * A queue may be paused: a paused queue's claim takes nothing and its due executions are
 * not work for `--exit-when-idle`, while its enqueues, outcomes and cancels go on as
 * usual; a resume makes them claimable again.
 */
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
  attempts: Array<ModelAttempt>
}

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
export type NewExecution = Pick<ModelExecution, "id" | "job" | "queue" | "priority" | "maxAttempts" | "idempotencyKey" | "retryOf" | "payload" | "runAt">

/** What claim order looks at. */
type ClaimKey = Pick<ModelExecution, "priority" | "runAt" | "id">

/** Claim order: priority DESC, run_at ASC, id ASC. */
export const claimOrder = (a: ClaimKey, b: ClaimKey): number =>
  b.priority - a.priority || a.runAt - b.runAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)

/** The in-memory model. */
export class Model {
  now = t0
  readonly executions = new Map<string, ModelExecution>()
  /** Every claim handed out and not released, live or stale; outcomes are sent on these. */
  readonly handles: Array<Handle> = []
  /** Every id ever inserted, pruned ones too (cancel and retry may name a vanished execution). */
  readonly everSeen: Array<string> = []
  /** Ids whose attempt rows changed since the last invariant check. */
  readonly touched = new Set<string>()
  /** Queues with a stored state: paused (since when) or resumed (null). */
  readonly queueStates = new Map<string, number | null>()

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
      attempts: []
    })
    this.everSeen.push(row.id)
  }

  /** The executions a claim must return, in claim order: due, queued, of the queue (unless paused) and jobs, up to limit. */
  expectedClaim(req: { readonly queue: string; readonly jobs: ReadonlyArray<string>; readonly limit: number }): Array<ModelExecution> {
    if (this.isPaused(req.queue)) return []
    return [...this.executions.values()]
      .filter((e) => e.state === "queued" && e.queue === req.queue && req.jobs.includes(e.job) && e.runAt <= this.now)
      .sort(claimOrder)
      .slice(0, Math.max(0, req.limit))
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
    const counts: Record<ExecutionState, number> = { queued: 0, running: 0, succeeded: 0, failed: 0, cancelled: 0 }
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
  }

  /** Back to queued for a later attempt — unless a cancel was requested: then it ends cancelled, never to run again. */
  retry(e: ModelExecution, runAt: number, errorTag: string, expired: boolean): void {
    this.endAttempt(e, expired ? "lease_expired" : e.cancelRequested ? "cancelled" : "retrying")
    e.errorTag = errorTag
    if (e.cancelRequested) {
      e.state = "cancelled"
      e.finishedAt = this.now
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
  }

  cancelRunning(e: ModelExecution, errorTag: string | null): void {
    this.endAttempt(e, "cancelled")
    e.state = "cancelled"
    e.errorTag = errorTag
    e.finishedAt = this.now
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
  }

  /** An operator's cancel: queued ends at once, running is asked to stop. */
  cancel(id: string): "cancelled" | "requested" | "already-finished" | null {
    const e = this.executions.get(id)
    if (!e) return null
    if (e.state === "queued") {
      e.state = "cancelled"
      e.finishedAt = this.now
      return "cancelled"
    }
    if (e.state === "running") {
      e.cancelRequested = true
      return "requested"
    }
    return "already-finished"
  }

  remove(id: string): void {
    this.executions.delete(id)
    this.touched.add(id)
  }
}
