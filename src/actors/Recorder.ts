/**
 * The Recorder owns the write path of executions. Callers (the Client's enqueues, the
 * WorkerPool's outcomes, the Reaper's recoveries) send it messages; it takes every
 * message waiting in its mailbox and commits them in one transaction per kind — group
 * commit — then answers each caller. While one transaction is being written, the
 * next batch accumulates, so the cost of an fsync is shared by everyone waiting.
 *
 * After a commit it notifies the in-process Dispatchers of newly due work, and the
 * in-process waiters of each execution whose outcome it wrote. An enqueue that an idle
 * in-process worker can take at once it starts in the insert itself (the hand-off,
 * docs/queues.md): no wake-up and no claim, and the insert's fsync runs off the JS thread
 * while that handler starts; the caller is answered once it is durable. On scope
 * close it stops taking new messages and drains what is already in the mailbox.
 *
 * Its mailbox is bounded ({@link capacity} messages): a producer that outruns the
 * store waits for room instead of growing memory without end. It runs under
 * `supervise` like every actor: a defect while committing fails the replies of that
 * batch (each caller gets a StoreError, nothing is left waiting) and the loop restarts.
 */
import { Cause, Clock, Deferred, Effect, Exit, Fiber, Queue } from "effect"
import { supervise } from "./supervise.ts"
import type { InsertRequest, InsertResult, InsertStarted, Outcome } from "../store/Store.ts"
import { Store, StoreError } from "../store/Store.ts"
import type { HandoffSlot, WakeBus } from "./WakeBus.ts"

type Message =
  | { readonly _tag: "Insert"; readonly rows: ReadonlyArray<InsertRequest>; readonly reply: (exit: Exit.Exit<ReadonlyArray<InsertResult>, StoreError>) => void }
  | {
    readonly _tag: "Finish"
    readonly outcome: Outcome
    readonly queue: string
    readonly then: (exit: Exit.Exit<boolean, StoreError>) => Effect.Effect<void>
    /** Run instead of `then` when the outcome was stored: a plain call, no Effect (the every-job path). */
    readonly stored: (() => void) | undefined
    /** Set once `then` or `stored` has run (failAll after a crash must not run it again). */
    followed: boolean
  }

/** The Recorder's interface: each call resolves once its write is committed. */
export interface Recorder {
  readonly insert: (rows: ReadonlyArray<InsertRequest>) => Effect.Effect<ReadonlyArray<InsertResult>, StoreError>
  /**
   * {@link insert} as a plain call, for a caller outside any fiber (the Promise API):
   * `reply` runs on the Recorder's fiber once the rows are committed (or have failed).
   * False when the mailbox is full or the Recorder has stopped (`reply` never runs;
   * `insert` then waits for room or says which).
   */
  readonly insertUnsafe: (rows: ReadonlyArray<InsertRequest>, reply: (exit: Exit.Exit<ReadonlyArray<InsertResult>, StoreError>) => void) => boolean
  /** Applies an outcome; false means the lease was lost and the outcome was dropped. */
  readonly finish: (outcome: Outcome, queue: string) => Effect.Effect<boolean, StoreError>
  /**
   * Hands an outcome over without waiting for it: `then` runs on the Recorder's fiber
   * once the batch holding it is committed (or has failed), with what `finish` would
   * have returned. The WorkerPool's path (through {@link offer} on a success): nothing
   * waits on a reply, and the Recorder runs the batch's follow-ups in one go.
   * False when the Recorder has stopped (`then` never runs).
   */
  readonly submit: (outcome: Outcome, queue: string, then: (exit: Exit.Exit<boolean, StoreError>) => Effect.Effect<void>) => Effect.Effect<boolean>
  /**
   * {@link submit} as a plain call that never waits: false when the mailbox is full or the
   * Recorder has stopped (`then` never runs; `submit` then waits for room or says which).
   * With `stored`, that plain call runs instead of `then` when the outcome was stored.
   */
  readonly offer: (outcome: Outcome, queue: string, then: (exit: Exit.Exit<boolean, StoreError>) => Effect.Effect<void>, stored?: () => void) => boolean
}

const stopped = new StoreError({ message: "the recorder has stopped (the runtime is shutting down)" })

/** Resumes after the tasks and microtasks queued now have run (a promise's `then` included). */
const nextMacrotask = Effect.callback<void>((resume) => void setImmediate(() => resume(Effect.void)))

/** What the callers of a batch get when writing it crashed (a defect, not a StoreError). */
const crashed = (cause: Cause.Cause<unknown>) => new StoreError({ message: `the recorder crashed writing this batch: ${Cause.squash(cause)}` })

const startedNone = (results: ReadonlyArray<InsertResult>): InsertStarted => ({ results, started: [] })

/** Messages that may wait in the Recorder's mailbox before producers wait for room. */
export const capacity = 10_000

/** Starts a Recorder in the current scope. */
export const make = Effect.fnUntraced(function*(bus: WakeBus) {
  const store = yield* Store
  const mailbox = yield* Queue.bounded<Message, Cause.Done>(capacity)
  // The Recorder's own context (its services, Clock and metrics), for an inline insert.
  const context = yield* Effect.context<never>()
  // A batch is being written (inline or by the loop); `open` turns false as the Recorder stops.
  let committing = false
  let inlinedThisTurn = false
  let open = true

  const commit = (batch: ReadonlyArray<Message>) =>
    Effect.gen(function*() {
      const inserts = batch.filter((m): m is Extract<Message, { _tag: "Insert" }> => m._tag === "Insert")
      const finishes = batch.filter((m): m is Extract<Message, { _tag: "Finish" }> => m._tag === "Finish")
      if (inserts.length > 0) {
        const exit = yield* insertAll(inserts)
        let i = 0
        for (const m of inserts) {
          m.reply(exit._tag === "Success" ? Exit.succeed(exit.value.results.slice(i, i + m.rows.length)) : Exit.failCause(exit.cause))
          i += m.rows.length
        }
        if (exit._tag === "Success") wakeAfterInserts(inserts, exit.value)
        // The handlers it started ran during the fsync: their outcomes are already in the
        // mailbox, and committing them now (a FULL commit, on this thread) would hold back
        // the answers just given. One macrotask lets the callers see them first.
        if (exit._tag === "Success" && exit.value.started.some((e) => e !== null)) yield* nextMacrotask
      }
      if (finishes.length > 0) {
        const exit = yield* Effect.exit(store.executionsFinish(finishes.map((m) => m.outcome)))
        if (exit._tag === "Success") {
          wakeAfterOutcomes(finishes, exit.value)
          for (let j = 0; j < finishes.length; j++) if (exit.value[j]) bus.notifyOutcome(finishes[j]!.outcome.id)
          for (let j = 0; j < finishes.length; j++) {
            const m = finishes[j]!
            const applied = exit.value[j] ?? false
            if (!applied || m.stored === undefined) yield* followUp(m, Exit.succeed(applied))
            else if (!m.followed) {
              // The every-job path: a plain call, and only its defect costs an Effect.
              m.followed = true
              try {
                m.stored()
              } catch (defect) {
                yield* followUpFailed(m, Cause.die(defect))
              }
            }
          }
        } else {
          const failed = Exit.failCause(exit.cause)
          for (const m of finishes) yield* followUp(m, failed)
        }
      }
    })

  /** Wakes the Dispatchers of the new rows the hand-off did not start. */
  const wakeAfterInserts = (inserts: ReadonlyArray<Extract<Message, { _tag: "Insert" }>>, { results, started }: InsertStarted) => {
    // The first queue's earliest time kept apart: most batches (and every single enqueue) have one queue.
    let queue: string | null = null
    let at = Infinity
    let others: Map<string, number> | null = null
    let j = 0
    for (const m of inserts) {
      for (const r of m.rows) {
        if (!started[j] && (results[j]?.inserted || results[j]?.replaced)) {
          if (queue === null || queue === r.queue) {
            queue = r.queue
            at = Math.min(at, r.runAt)
          } else {
            others ??= new Map()
            others.set(r.queue, Math.min(others.get(r.queue) ?? Infinity, r.runAt))
          }
        }
        j++
      }
    }
    if (queue !== null) bus.notify(queue, at)
    if (others !== null) for (const [q, t] of others) bus.notify(q, t)
  }

  /** Wakes the Dispatchers of what committed outcomes made due (a retry, a wait, a child's parent). */
  const wakeAfterOutcomes = (finishes: ReadonlyArray<Extract<Message, { _tag: "Finish" }>>, applied: ReadonlyArray<boolean>) => {
    // A child's end may have made its parent due, on a queue not known here: one wake-up per batch.
    let childAt: number | null = null
    for (const [j, m] of finishes.entries()) {
      if (!applied[j]) continue
      if (m.outcome.kind === "retry") bus.notify(m.queue, m.outcome.runAt)
      if (m.outcome.kind === "park") {
        bus.notify(m.queue, m.outcome.runAt)
        // A wait already over (its children ended, its signal came) was made due now.
        if (m.outcome.wait.kind !== "sleep") bus.notify(m.queue, m.outcome.now)
      }
      if ((m.outcome.parentId ?? null) !== null) childAt = m.outcome.now
    }
    if (childAt !== null) bus.notifyEvery(childAt)
  }

  /**
   * The hand-off (docs/queues.md, "Hand-off"): a slot of an idle in-process worker for
   * each new row that could start at once — no idempotency or dedupe key (those may not
   * insert), due `now`. A queue that had no free slot for one row gets none for the next.
   */
  const reserveSlots = (rows: ReadonlyArray<InsertRequest>, now: number) =>
    Effect.gen(function*() {
      const full = new Set<string>()
      const slots: Array<HandoffSlot | null> = []
      for (const r of rows) {
        let slot: HandoffSlot | null = null
        if (r.idempotencyKey === null && (r.dedupeKey ?? null) === null && r.runAt <= now && !full.has(r.queue)) {
          slot = yield* bus.reserveHandoff(r.queue, r.job)
          if (slot === null) full.add(r.queue)
        }
        slots.push(slot)
      }
      return slots
    })

  /**
   * Commits the enqueues of a batch. Without a reserved slot, one durable insert. With
   * some (the hand-off), the insert starts what it can (Store.executionsInsertStarting),
   * committed without waiting for the disk; each started row runs on its slot — its
   * handler at once — while the WAL's fsync runs off this thread (Store.syncCommitted),
   * and only that makes the batch's result a success. Every slot
   * not used is given back, also when the insert fails or the fiber dies mid-way.
   */
  const insertAll = (inserts: ReadonlyArray<Extract<Message, { _tag: "Insert" }>>): Effect.Effect<Exit.Exit<InsertStarted, StoreError>> => {
    const rows = inserts.flatMap((m) => m.rows)
    if (!bus.hasHandoffs()) return Effect.exit(Effect.map(store.executionsInsert(rows), startedNone))
    const pending = new Set<HandoffSlot>()
    const giveBack = Effect.suspend(() => Effect.forEach([...pending], (slot) => (pending.delete(slot), slot.cancel), { discard: true }))
    return Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const slots = yield* reserveSlots(rows, now)
      for (const s of slots) if (s !== null) pending.add(s)
      if (pending.size === 0) return yield* Effect.exit(Effect.map(store.executionsInsert(rows), startedNone))
      const offers = slots.map((s) => (s === null ? null : { workerId: s.workerId, leaseMs: s.leaseMs, now, jobs: s.jobs }))
      const exit = yield* Effect.exit(store.executionsInsertStarting(rows, offers))
      if (exit._tag === "Failure") return exit
      const { started } = exit.value
      // Each started handler runs at once, on this fiber, and the fsync is asked for after
      // them: the answer waits for the fsync anyway, and a handler started on the
      // scheduler's next turn instead began 0.15–0.3 ms later at FULL (bench/RESULTS.md,
      // nineteenth pass). An acknowledged hand-off has begun its handler.
      for (const [j, s] of slots.entries()) {
        const execution = started[j]
        if (s === null || !execution) continue
        pending.delete(s)
        yield* s.start(execution)
      }
      yield* giveBack
      // A failed fsync: the rows are committed (and may run) but not known durable — the
      // callers get the StoreError, as for a commit whose end was not seen.
      const synced = yield* Effect.exit(store.syncCommitted)
      return synced._tag === "Success" ? exit : Exit.failCause(synced.cause)
    }).pipe(Effect.onExit(() => giveBack))
  }

  /**
   * Runs a caller's follow-up, once: a crash after some follow-ups ran (failAll) does not
   * run them again. One that fails or dies is logged; the batch's others still run.
   */
  const followUp = (m: Extract<Message, { _tag: "Finish" }>, exit: Exit.Exit<boolean, StoreError>) =>
    Effect.suspend(() => {
      if (m.followed) return Effect.void
      m.followed = true
      return Effect.catchCause(m.then(exit), (cause) => followUpFailed(m, cause))
    })
  const followUpFailed = (m: Extract<Message, { _tag: "Finish" }>, cause: Cause.Cause<unknown>) =>
    Effect.logError(`the follow-up of ${m.outcome.id}'s outcome failed`, cause)

  const loop = Effect.gen(function*() {
    while (true) {
      const batch = yield* Queue.takeAll(mailbox).pipe(Effect.catchCause(() => Effect.succeed(null)))
      if (batch === null) return
      committing = true
      yield* commit(batch).pipe(
        Effect.onError((cause) => failAll(batch, cause)),
        Effect.ensuring(Effect.sync(() => (committing = false)))
      )
    }
  })

  /**
   * After a crash mid-batch: every caller of the batch still waiting gets a StoreError
   * (a follow-up that already ran is not run again).
   */
  const failAll = (batch: ReadonlyArray<Message>, cause: Cause.Cause<unknown>) =>
    Effect.gen(function*() {
      const error = Exit.fail(crashed(cause))
      for (const m of batch) {
        if (m._tag === "Insert") m.reply(error)
        else yield* followUp(m, error)
      }
    })

  // Forked into the owner's scope; the finalizer below (run first) ends the mailbox and
  // waits for the loop to drain it, so every acknowledged write is committed first.
  const fiber = yield* Effect.forkScoped(supervise("Recorder", Effect.uninterruptible(loop)))
  yield* Effect.addFinalizer(() => Effect.suspend(() => ((open = false), Queue.end(mailbox))).pipe(Effect.andThen(Fiber.await(fiber))))

  /**
   * Inline: an enqueue that finds the Recorder idle (nothing in its mailbox, no batch
   * being committed, the Recorder not stopping), on a store whose writes end on this
   * thread (SQLite), with no hand-off to offer (no in-process worker waiting for work),
   * is committed here, on the caller's stack: the same insert and wake-ups as a batch
   * of one, without the mailbox hop and the Recorder fiber's resumption on the next
   * turn of the scheduler (one-by-one enqueue: bench/RESULTS.md, sixteenth pass). It is
   * still one writer at a time: the JS thread runs this or a batch, never both. It does
   * not wait for a write lock another connection holds (that may be the caller's own
   * open transaction on the file, which no wait here could outlast): the enqueue then
   * goes to the mailbox, as before. A failure answers as the batch's would, a crash
   * included. The answer is given before this returns, so a Promise caller's `then`
   * runs after the microtask that lets the next caller inline again.
   */
  const inlineInsert = (rows: ReadonlyArray<InsertRequest>, reply: (exit: Exit.Exit<ReadonlyArray<InsertResult>, StoreError>) => void): boolean => {
    const insertNow = store.executionsInsertInline
    if (insertNow === null || !open || committing || inlinedThisTurn || Queue.sizeUnsafe(mailbox) > 0 || bus.hasHandoffs()) return false
    // Callers that come together (fibers started at once, a Promise.all) still share one
    // transaction: after an inline insert, the next until the microtasks run goes to the
    // mailbox, and everything that joins it before the Recorder's turn is one batch.
    inlinedThisTurn = true
    queueMicrotask(() => (inlinedThisTurn = false))
    committing = true
    let exit: Exit.Exit<ReadonlyArray<InsertResult> | null, StoreError>
    try {
      exit = Effect.runSyncExitWith(context)(insertNow(rows))
    } catch (defect) {
      exit = Exit.die(defect)
    } finally {
      committing = false
    }
    // Another connection holds the write lock: the mailbox, whose batch waits for it.
    if (exit._tag === "Success" && exit.value === null) return false
    const answer: Exit.Exit<ReadonlyArray<InsertResult>, StoreError> = exit._tag === "Success"
      ? Exit.succeed(exit.value ?? [])
      : Cause.hasFails(exit.cause) ? Exit.failCause(exit.cause) : Exit.fail(crashed(exit.cause))
    // Answered first, then the wake-ups, as in a batch: a wake-up listener's defect is
    // logged (the loop's supervisor would log it) and does not undo a committed insert.
    reply(answer)
    if (answer._tag === "Success") {
      try {
        wakeAfterInserts([{ _tag: "Insert", rows, reply }], startedNone(answer.value))
      } catch (defect) {
        Effect.runForkWith(context)(
          Effect.logError("a wake-up after an inline insert failed", Cause.die(defect)).pipe(Effect.annotateLogs("actor", "Recorder"))
        )
      }
    }
    return true
  }

  const insertUnsafe: Recorder["insertUnsafe"] = (rows, reply) =>
    inlineInsert(rows, reply) || Queue.offerUnsafe(mailbox, { _tag: "Insert", rows, reply })

  /**
   * Sends a message built around `reply` (`send` waits for room, false once the Recorder
   * has stopped) and waits for that reply.
   */
  const roundTrip = <A>(send: (reply: (exit: Exit.Exit<A, StoreError>) => void) => Effect.Effect<boolean>): Effect.Effect<A, StoreError> =>
    Effect.suspend(() => {
      const reply = Deferred.makeUnsafe<A, StoreError>()
      return Effect.flatMap(send((exit) => Deferred.doneUnsafe(reply, exit)), (accepted) => (accepted ? Deferred.await(reply) : Effect.fail(stopped)))
    })

  /**
   * An insert's round trip: straight into the mailbox when it has room (the common
   * case), else waiting for room; fails when the Recorder has stopped.
   */
  const insert: Recorder["insert"] = (rows) =>
    Effect.callback<ReadonlyArray<InsertResult>, StoreError>((resume) => {
      if (!insertUnsafe(rows, resume)) resume(roundTrip((reply) => Queue.offer(mailbox, { _tag: "Insert", rows, reply })))
    })

  const submit: Recorder["submit"] = (outcome, queue, then) => Queue.offer(mailbox, { _tag: "Finish", outcome, queue, then, stored: undefined, followed: false })
  const offer: Recorder["offer"] = (outcome, queue, then, stored) =>
    Queue.offerUnsafe(mailbox, { _tag: "Finish", outcome, queue, then, stored, followed: false })

  return {
    insert: (rows) => (rows.length === 0 ? Effect.succeed([]) : insert(rows)),
    insertUnsafe: (rows, reply) => (rows.length === 0 ? (reply(Exit.succeed([])), true) : insertUnsafe(rows, reply)),
    finish: (outcome, queue) => roundTrip<boolean>((reply) => submit(outcome, queue, (exit) => Effect.sync(() => reply(exit)))),
    submit,
    offer
  } satisfies Recorder
})
