/**
 * The Store contract: every durable transition of DESIGN §2 as one operation. Two
 * implementations (sqlite/, postgres/) satisfy it and one conformance suite
 * (tests/store) checks both. Runtime code never holds SQL; it asks the Store.
 *
 * Fencing: every outcome names the worker and attempt that produced it and is applied
 * only `WHERE id = ? AND lease_owner = ? AND attempt = ? AND state = 'running'`; a
 * stale outcome changes nothing and is reported as not applied.
 */
import { Cause, Context, Data, type Effect } from "effect"
import type { RetrySnapshot } from "../jobs/RetryPolicy.ts"
import type { ClaimLimits, RunningCount, StartRow } from "./FlowRules.ts"
import type { Signal, SignalSendResult, Wait } from "../jobs/Wait.ts"
import type { Attempt, Execution, ExecutionError, ExecutionState, LogDrops, LogLine, Step } from "./Execution.ts"

/**
 * Why a store failed, when the driver can tell: `corrupt` (not a database, or a damaged
 * file: retrying cannot help), `read-only`, `disk-full`, `schema-too-new` (migrated by
 * a newer Roster), or `missing` (a command that only reads or changes existing work met
 * a SQLite file that does not exist, and created nothing).
 */
export type StoreErrorReason = "corrupt" | "read-only" | "disk-full" | "schema-too-new" | "missing"

/** A failure of the store itself (I/O, lock timeout, corrupt file). Mapped once, at the store boundary. */
export class StoreError extends Data.TaggedError("StoreError")<{
  readonly message: string
  readonly cause?: unknown
  readonly reason?: StoreErrorReason | undefined
}> {}

/** Whether a failure is a StoreError that no retry can fix (a corrupt file, a newer schema). */
export const isPermanentStoreError = (e: unknown): boolean =>
  e instanceof StoreError && (e.reason === "corrupt" || e.reason === "schema-too-new")

/** Whether a Cause fails with a StoreError that no retry can fix. */
export const isPermanentStoreFailure = (cause: Cause.Cause<unknown>): boolean => {
  const failure = Cause.findErrorOption(cause)
  return failure._tag === "Some" && isPermanentStoreError(failure.value)
}

/** One execution to insert. */
export interface InsertRequest {
  readonly id: string
  readonly job: string
  readonly queue: string
  /** Encoded payload, JSON text. */
  readonly payload: string
  readonly priority: number
  readonly retry: RetrySnapshot
  readonly timeoutMs: number
  readonly runAt: number
  readonly now: number
  readonly idempotencyKey: string | null
  readonly scheduleId?: string | null
  readonly fireAt?: number | null
  readonly retryOf?: string | null
  /** The enqueue's W3C `traceparent`, continued by the run's span (see ExecutionSpan). */
  readonly traceContext?: string | null
  /** Set by executionsInsertChild only. */
  readonly parentId?: string | null
  readonly parentStep?: string | null
  /** The key its Job's per-key concurrency limit counts it under (null: none). */
  readonly concurrencyKey?: string | null
  /** The key its Job's per-key rate limit counts it under (null: the Job's limit, if any, is not per key). */
  readonly rateKey?: string | null
  /**
   * A dedupe key held only while the execution is queued or running (see docs/jobs.md):
   * `active` returns the execution holding it; `replace` replaces a queued holder's
   * payload, run time and priority, or, when the holder is running, takes the key from
   * it and inserts anew.
   */
  readonly dedupeKey?: string | null
  readonly dedupeMode?: "active" | "replace" | undefined
}

/** Result of an insert: the execution's id, and whether it is new or an existing one with the same (job, key). */
export interface InsertResult {
  readonly id: string
  readonly inserted: boolean
  /** A `replace` dedupe that rewrote the queued holder of its key (then `inserted` is false). */
  readonly replaced?: boolean | undefined
}

/**
 * An in-process worker's offer to start a new row at once, in the transaction that
 * inserts it (Recorder.ts, "hand-off"): the row is leased to `workerId` as a claim would
 * lease it, if it is new, due at `now`, its queue is not paused, and no due execution of
 * `jobs` on its queue is ahead of it in claim order. Otherwise it stays queued.
 */
export interface StartOffer {
  readonly workerId: string
  readonly leaseMs: number
  readonly now: number
  /** The Jobs the offering worker runs on the row's queue. */
  readonly jobs: ReadonlyArray<string>
}

/** What an insert with start offers did: each row's result, and the rows it started (null: not started). */
export interface InsertStarted {
  readonly results: ReadonlyArray<InsertResult>
  readonly started: ReadonlyArray<Execution | null>
}

/** Claim up to `limit` due executions of `queue` whose job is in `jobs`, in claim order. */
export interface ClaimRequest {
  readonly queue: string
  readonly jobs: ReadonlyArray<string>
  readonly workerId: string
  readonly limit: number
  readonly now: number
  readonly leaseMs: number
}

/** A claim of a queue under flow limits (see FlowRules.ts). */
export interface LimitedClaimRequest extends ClaimRequest {
  readonly limits: ClaimLimits
  /**
   * The claimer's own executions whose handler has ended, with the outcome not yet
   * stored: they run no more, so they do not count against a concurrency limit.
   */
  readonly ending?: ReadonlyArray<string> | undefined
}

/** What a limited claim took, and when a rate limit that held work back allows a start again. */
export interface LimitedClaim {
  readonly executions: ReadonlyArray<Execution>
  /** Null when no rate limit held anything back (a concurrency limit frees on an outcome, not at a time). */
  readonly retryAt: number | null
}

/** What holds a queue's work back now: its pause, live running counts and live rate-limit starts. */
export interface QueueFlow {
  readonly paused: boolean
  readonly running: ReadonlyArray<RunningCount>
  readonly starts: ReadonlyArray<StartRow>
}

/**
 * Due queued executions of a queue, grouped by Job and by whether the row's keys are at
 * a limit in the flow state read with them (FlowExplain.ts attributes them to causes).
 */
export interface DueGroup {
  readonly job: string
  /** Its (job, concurrency key) pair is at the Job's per-key concurrency limit. */
  readonly keyAtLimit: boolean
  /** Its (job, rate key) pair is at the Job's per-key rate limit. */
  readonly rateKeyAtLimit: boolean
  readonly count: number
}

/** A queue's flow snapshot and its due queued executions, read together (read-only). */
export interface QueueHeldBack {
  readonly flow: QueueFlow
  readonly due: ReadonlyArray<DueGroup>
}

/** Identifies the attempt an outcome belongs to, for fencing. */
export interface Fence {
  readonly id: string
  readonly workerId: string
  readonly attempt: number
  /**
   * The execution's parent, when it is a child (ctx.enqueue): an outcome that ends it
   * may make the parent, waiting for its children, due — checked in the same transaction.
   */
  readonly parentId?: string | null | undefined
}

/**
 * How an attempt ended, as written by the Recorder or the Reaper. `expired` marks the
 * Reaper's recovery of a lease it found expired: besides the fence, it applies only if
 * the lease is still expired at `now` when written (`lease_expires_at < now`, as in
 * `executionsExpired`), so a heartbeat that extended it in between wins and the
 * outcome reports false — an ordinary result for a Reaper, not a lost lease.
 */
export type Outcome =
  | (Fence & { readonly kind: "succeeded"; readonly result: string | null; readonly now: number; readonly startedAt: number })
  | (Fence & { readonly kind: "retry"; readonly runAt: number; readonly error: ExecutionError; readonly now: number; readonly startedAt: number; readonly expired?: boolean })
  | (Fence & { readonly kind: "failed"; readonly error: ExecutionError; readonly now: number; readonly startedAt: number; readonly expired?: boolean })
  | (Fence & { readonly kind: "cancelled"; readonly error: ExecutionError | null; readonly now: number; readonly startedAt: number })
  | (Fence & { readonly kind: "released"; readonly now: number })
  /**
   * The handler parked the execution (ctx.sleep, awaitChildren, waitForSignal): it is
   * stored `waiting` with `wait`, due at `runAt`, the attempt not charged (as a release);
   * asked to cancel, it ends cancelled instead. Written with the check that makes it due
   * at once when what it waits for already happened (every awaited child ended, the
   * signal was sent), in the same transaction, so no wake-up falls between the two.
   */
  | (Fence & { readonly kind: "park"; readonly runAt: number; readonly wait: Wait; readonly now: number })

/** Filters of list and count. */
export interface ExecutionFilter {
  readonly job?: string | undefined
  readonly queue?: string | undefined
  readonly state?: ExecutionState | undefined
  /** Only executions created at or after this time. */
  readonly since?: number | undefined
  readonly scheduleId?: string | undefined
  readonly limit?: number | undefined
  /** Page backwards from this id (exclusive); lists are newest first. */
  readonly before?: string | undefined
  /** Only the children of this execution (made by its ctx.enqueue). */
  readonly parentId?: string | undefined
}

/** What a heartbeat learns about this worker's in-flight executions. */
export interface HeartbeatResult {
  /** Executions whose lease this worker still holds (and now extended). */
  readonly held: ReadonlyArray<{ readonly id: string; readonly attempt: number; readonly cancelRequested: boolean }>
}

/** One queue's figures, for the dashboard overview and the queue-depth metrics. */
export interface QueueStats {
  readonly queue: string
  /** Executions by stored state. */
  readonly counts: Record<ExecutionState, number>
  /** run_at of the oldest queued execution already due at the given time, or null. */
  readonly oldestDueAt: number | null
}

/** Executions of one queue that finished in one time bucket. */
export interface ThroughputBucket {
  readonly queue: string
  /** Start of the bucket: `since + k·bucketMs`. */
  readonly at: number
  readonly succeeded: number
  readonly failed: number
}

/**
 * A hint that another process changed the store: new or returning work on `queue`
 * due at `dueAt`, or (`queue` null) something unspecified, to be looked for at `dueAt`;
 * `outcome` marks a change that only wrote outcomes (no new work: workers may skip it,
 * whoever waits for an execution reads it again).
 */
export interface StoreChange {
  readonly queue: string | null
  readonly dueAt: number
  readonly outcome?: true | undefined
}

/**
 * A queue's stored state. The store keeps it for any queue name, declared in this
 * process's config or not, so a worker built from another config still honours it.
 */
export interface QueueState {
  readonly queue: string
  readonly paused: boolean
  /** When the current pause began; null when not paused. */
  readonly pausedAt: number | null
}

/** What `executionsCancel` did. */
export type CancelResult = "cancelled" | "requested" | "already-finished"

/** What a worker process writes about itself when it starts (see WorkerRules.ts). */
export interface WorkerRegistration {
  readonly id: string
  readonly host: string
  readonly pid: number
  /** The queues it serves, and the Jobs it can run on them. */
  readonly queues: ReadonlyArray<string>
  readonly jobs: ReadonlyArray<string>
  /** Roster's version. */
  readonly version: string
  /** How long after its last refresh it counts as stale (WorkerRules.staleAfterMsOf). */
  readonly staleAfterMs: number
}

/** A registered worker process as listed, `stale` computed at the time asked. */
export interface LiveWorker extends WorkerRegistration {
  readonly startedAt: number
  readonly lastSeenAt: number
  readonly stale: boolean
}

/**
 * What {@link Store.executionsVacuum} did:
 * - `unneeded`: this store reclaims space as it writes (SQLite); never worth asking again;
 * - `below`: fewer dead row versions than asked for; nothing done;
 * - `vacuumed`: VACUUM ran on the executions table (`dead`: the dead versions counted
 *   before); a no-op when another session was vacuuming it at that moment (SKIP_LOCKED);
 * - `not-owner`: the database user does not own the table, so its VACUUM would do nothing.
 */
export type VacuumResult =
  | { readonly _tag: "unneeded" }
  | { readonly _tag: "below"; readonly dead: number }
  | { readonly _tag: "vacuumed"; readonly dead: number }
  | { readonly _tag: "not-owner" }

/** The Store service. */
export class Store extends Context.Service<Store, {
  /** Applies pending migrations; safe when several processes start at once. */
  readonly migrate: Effect.Effect<void, StoreError>
  /** Inserts executions in one transaction; an existing (job, idempotency key) returns the existing id. */
  readonly executionsInsert: (rows: ReadonlyArray<InsertRequest>) => Effect.Effect<ReadonlyArray<InsertResult>, StoreError>
  /** Whether {@link executionsInsertStarting} can start rows (SQLite); a worker offers hand-offs only then. */
  readonly startsOnInsert: boolean
  /**
   * {@link executionsInsert} at once, on the calling thread, without waiting for the
   * write lock: null when another connection holds it (the caller then takes its usual
   * path). An idle Recorder writes an enqueue on its caller's stack with it (Recorder.ts,
   * "Inline"). SQLite only (bun:sqlite is synchronous); null on PostgreSQL, whose writes
   * are round trips.
   */
  readonly executionsInsertInline: ((rows: ReadonlyArray<InsertRequest>) => Effect.Effect<ReadonlyArray<InsertResult> | null, StoreError>) | null
  /**
   * Inserts as {@link executionsInsert}, and in the same transaction starts each row whose
   * `offers` entry is not null and whose {@link StartOffer} conditions hold. The SQLite
   * store starts them; PostgreSQL starts none (its rows are claimed as usual).
   * Its commit does not wait for the disk (see {@link syncCommitted}): acknowledge only after that.
   */
  readonly executionsInsertStarting: (
    rows: ReadonlyArray<InsertRequest>,
    offers: ReadonlyArray<StartOffer | null>
  ) => Effect.Effect<InsertStarted, StoreError>
  /** Claims due executions in claim order (priority DESC, run_at, then stored order: rowid on SQLite, id on PostgreSQL), leasing them to the worker; a paused queue gives none. */
  readonly executionsClaim: (req: ClaimRequest) => Effect.Effect<ReadonlyArray<Execution>, StoreError>
  /**
   * Claims as {@link executionsClaim}, under a queue's global concurrency and rate limit
   * and its Jobs' per-key concurrency and rate limits (FlowRules.ts), counted across
   * every process and applied in one transaction serialised per queue; writes the
   * rate-limit starts it takes.
   */
  readonly executionsClaimLimited: (req: LimitedClaimRequest) => Effect.Effect<LimitedClaim, StoreError>
  /** A queue's pause, live running counts per (job, key) and live rate-limit starts at `now` (read-only). */
  readonly queuesFlow: (req: { readonly queue: string; readonly now: number }) => Effect.Effect<QueueFlow, StoreError>
  /**
   * A queue's flow snapshot ({@link queuesFlow}) and, in the same read, its due queued
   * executions grouped by Job and by whether their keys are at a limit of `limits`
   * (the surfaces' held-back counts; scans the queue's queued rows).
   */
  readonly queuesHeldBack: (req: { readonly queue: string; readonly now: number; readonly limits: ClaimLimits }) => Effect.Effect<QueueHeldBack, StoreError>
  /**
   * Applies outcomes in one transaction; returns, for each, whether it was applied
   * (false: the lease was lost, or, for a Reaper's `expired` outcome, was renewed).
   */
  readonly executionsFinish: (outcomes: ReadonlyArray<Outcome>) => Effect.Effect<ReadonlyArray<boolean>, StoreError>
  /**
   * Makes every write committed so far durable: after {@link executionsInsertStarting},
   * the fsync its commit did not wait for — on SQLite at FULL the WAL's fdatasync, off
   * the JS thread, so that the handlers it started run meanwhile (sqlite/WalSync.ts). A
   * no-op where every commit is already durable when it returns (PostgreSQL, SQLite below
   * FULL).
   */
  readonly syncCommitted: Effect.Effect<void, StoreError>
  /**
   * Extends the worker's leases on `ids` — the executions it still has in flight — or,
   * without `ids`, every lease it holds; reports which it still holds and which were
   * asked to cancel. Naming the ids lets a lease the worker no longer tracks (its
   * outcome could not be written) expire, so the execution is retried.
   */
  readonly executionsHeartbeat: (req: { readonly workerId: string; readonly now: number; readonly leaseMs: number; readonly ids?: ReadonlyArray<string> | undefined }) => Effect.Effect<HeartbeatResult, StoreError>
  /**
   * Running executions whose lease expired before `now`. A snapshot: a heartbeat may
   * renew a lease before the Reaper writes, which its `expired` outcome re-checks.
   */
  readonly executionsExpired: (req: { readonly now: number; readonly limit: number }) => Effect.Effect<ReadonlyArray<Execution>, StoreError>
  /**
   * Whether any work remains for these (queue, jobs) pairs: a due queued execution, or a
   * running one whose lease expired (it will come back). A paused queue's executions
   * are not work. Used by `--exit-when-idle`.
   */
  readonly executionsHasWork: (req: { readonly queues: ReadonlyArray<{ readonly queue: string; readonly jobs: ReadonlyArray<string> }>; readonly now: number }) => Effect.Effect<boolean, StoreError>
  readonly executionsGet: (id: string) => Effect.Effect<Execution | null, StoreError>
  /** Newest first. */
  readonly executionsList: (filter: ExecutionFilter) => Effect.Effect<ReadonlyArray<Execution>, StoreError>
  readonly executionsCount: (filter: ExecutionFilter) => Effect.Effect<Record<ExecutionState, number>, StoreError>
  /** Cancels a queued execution at once; asks a running one to stop (its worker interrupts it at the next heartbeat). */
  readonly executionsCancel: (req: { readonly id: string; readonly now: number }) => Effect.Effect<CancelResult | null, StoreError>
  /** Queued executions whose job is not in `known` (no running worker can claim them). */
  readonly executionsUnknownJobs: (known: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<{ readonly job: string; readonly count: number }>, StoreError>
  /**
   * Deletes up to `limit` finished executions — succeeded ones finished before
   * `succeededBefore`, failed or cancelled ones before `failedBefore` — with their
   * attempts, steps, logs and signals, in one transaction, and up to `limit` schedule fires due
   * before `failedBefore`; returns how many executions.
   */
  readonly executionsPrune: (req: { readonly succeededBefore: number; readonly failedBefore: number; readonly limit: number }) => Effect.Effect<number, StoreError>
  /**
   * Reclaims the dead row versions that claims and outcomes leave behind in the executions
   * table, once at least `minDeadRows` of them and `minDeadShare` of its live rows have
   * built up (PostgreSQL: `VACUUM`, skipped while another session vacuums the table). The
   * claim walks past every dead entry at the head of its index until then (docs/postgres.md).
   */
  readonly executionsVacuum: (req: { readonly minDeadRows: number; readonly minDeadShare: number }) => Effect.Effect<VacuumResult, StoreError>
  readonly attemptsList: (executionId: string) => Effect.Effect<ReadonlyArray<Attempt>, StoreError>
  readonly stepsList: (executionId: string) => Effect.Effect<ReadonlyArray<Step>, StoreError>
  /** Records a step's result; a second save of one name keeps the first (returns false). */
  readonly stepsSave: (step: Step) => Effect.Effect<boolean, StoreError>
  /** Appends captured log lines and adds to per-attempt drop counts, in one transaction. */
  readonly logsAppend: (req: { readonly lines: ReadonlyArray<LogLine>; readonly drops: ReadonlyArray<LogDrops> }) => Effect.Effect<void, StoreError>
  /** An execution's log lines in order, and its drop counts. */
  readonly logsList: (executionId: string) => Effect.Effect<{ readonly lines: ReadonlyArray<LogLine>; readonly drops: ReadonlyArray<LogDrops> }, StoreError>
  /**
   * Watches for other processes' commits until interrupted, calling `onChange` for each
   * (SQLite: reads data_version every `pollMs` while its files are written, and on the
   * file system's report of a write after a quiet spell; PostgreSQL: LISTEN/NOTIFY on its own
   * connection, reconnecting by itself). Wake-ups are hints: polling stays the fallback.
   * Once watching (and again after each reconnect) it reports one unspecified change, so
   * a caller that read before the watch began reads again and misses no commit.
   */
  readonly watchChanges: (options: { readonly pollMs: number; readonly onChange: (change: StoreChange) => void }) => Effect.Effect<void, StoreError>
  /**
   * Pauses a queue: from this commit on, no claim takes its executions (the claim reads
   * the pause in the same statement); enqueues are still accepted. Any name is
   * accepted. Returns whether it was not paused before.
   */
  readonly queuesPause: (req: { readonly queue: string; readonly now: number }) => Effect.Effect<boolean, StoreError>
  /** Resumes a paused queue (and, on PostgreSQL, wakes other processes' Dispatchers); returns whether it was paused. */
  readonly queuesResume: (req: { readonly queue: string; readonly now: number }) => Effect.Effect<boolean, StoreError>
  /** Every queue with a stored state (paused now, or paused once), ordered by name. */
  readonly queuesList: Effect.Effect<ReadonlyArray<QueueState>, StoreError>
  /**
   * Per queue that has executions: counts by state, and the run_at of the oldest queued
   * execution due at `now`. Read-only; scans the table (dashboard, metrics scrapes).
   */
  readonly executionsQueueStats: (req: { readonly now: number }) => Effect.Effect<ReadonlyArray<QueueStats>, StoreError>
  /**
   * Succeeded and failed executions per queue and bucket of `bucketMs`, by finished_at at
   * or after `since`; buckets with neither are absent; ordered by `at`, then queue.
   */
  readonly executionsThroughput: (req: { readonly since: number; readonly bucketMs: number }) => Effect.Effect<ReadonlyArray<ThroughputBucket>, StoreError>
  /**
   * Registers (or re-registers) a worker process, seen at `now`, and deletes rows not
   * refreshed for a day (WorkerRules.pruneStaleMs), in one transaction.
   */
  readonly workersRegister: (req: { readonly worker: WorkerRegistration; readonly now: number }) => Effect.Effect<void, StoreError>
  /** Refreshes a worker's last seen time; false when its row is gone (pruned), so the worker registers again. */
  readonly workersHeartbeat: (req: { readonly id: string; readonly now: number }) => Effect.Effect<boolean, StoreError>
  /** Deletes a worker's row (a clean stop). */
  readonly workersRemove: (req: { readonly id: string }) => Effect.Effect<void, StoreError>
  /**
   * Inserts a child of `parentId` for its step `step` exactly once: a second insert of the
   * same (parent, step) — a retry, a re-run after a crash — returns the first child's id
   * (inserted false). The step is recorded with the child's id in the same transaction.
   */
  readonly executionsInsertChild: (req: { readonly parentId: string; readonly step: string; readonly attempt: number; readonly row: InsertRequest }) => Effect.Effect<InsertResult, StoreError>
  /**
   * Sends a signal: kept for the execution's wait of that name (now or later), and, when
   * the execution waits for it, makes it due at `now`. Refused (nothing stored) for an
   * execution that has ended or does not exist.
   */
  readonly signalsSend: (req: { readonly id: string; readonly name: string; readonly payload: string; readonly now: number }) => Effect.Effect<SignalSendResult, StoreError>
  /**
   * Takes the oldest kept signal of `name` for a running attempt, recording it as the
   * step `step` (output: the payload) in the same transaction; null when none is kept.
   */
  readonly signalsTake: (req: { readonly id: string; readonly name: string; readonly step: string; readonly attempt: number; readonly now: number }) => Effect.Effect<string | null, StoreError>
  /** An execution's signals in the order sent. */
  readonly signalsList: (id: string) => Effect.Effect<ReadonlyArray<Signal>, StoreError>
  /** Every registered worker by id, marked stale as of `now`. */
  readonly workersList: (req: { readonly now: number }) => Effect.Effect<ReadonlyArray<LiveWorker>, StoreError>
}>()("roster/Store") {}
