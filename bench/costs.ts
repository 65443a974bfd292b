/**
 * What the pieces of a worker's per-job path cost on their own, in µs per operation:
 * the Effect primitives and library calls the WorkerPool, Recorder and CLI logger run
 * once or more per execution. Each is run many times in one fiber (or, for the fiber
 * and semaphore rows, many fibers) with nothing else going on, so the numbers are a
 * floor; they say which pieces are worth removing from the hot path.
 *
 * Env: BENCH_COSTS_N (default 100000).
 */
import { Deferred, Effect, FiberMap, Layer, Logger, Metric, Queue, Schema, Semaphore } from "effect"
import { closeSync, openSync, writeSync } from "node:fs"
import { envInt, progress, report, type Section } from "./support.ts"

const n = envInt("BENCH_COSTS_N", 100_000)

/** µs per iteration of `body` run `n` times in one fiber, after a warm-up. */
const perOp = async (body: (i: number) => Effect.Effect<unknown, unknown>, layer: Layer.Layer<never> = Layer.empty): Promise<number> => {
  const loop = (count: number) =>
    Effect.gen(function*() {
      for (let i = 0; i < count; i++) yield* body(i)
    })
  await Effect.runPromise(loop(Math.min(n, 20_000)).pipe(Effect.provide(layer)))
  const t0 = performance.now()
  await Effect.runPromise(loop(n).pipe(Effect.provide(layer)))
  return ((performance.now() - t0) / n) * 1000
}

/** µs per job of a whole pattern that handles `n` jobs itself. */
const perJob = async (pattern: (count: number) => Effect.Effect<unknown, unknown>): Promise<number> => {
  await Effect.runPromise(pattern(Math.min(n, 20_000)))
  const t0 = performance.now()
  await Effect.runPromise(pattern(n))
  return ((performance.now() - t0) / n) * 1000
}

/** Runs every measurement and returns the section. */
export const run = async (): Promise<Section> => {
  const rows: Array<[string, number, string]> = []
  const add = (what: string, us: number, where: string) => {
    rows.push([what, us, where])
    progress(`costs: ${what}: ${us.toFixed(2)} µs`)
  }
  const payloadCodec = Schema.toCodecJson(Schema.Struct({ n: Schema.Number }))
  const decodeEffect = Schema.decodeUnknownEffect(payloadCodec)
  const decodeSync = Schema.decodeUnknownSync(payloadCodec)
  const encodeEffect = Schema.encodeUnknownEffect(payloadCodec)
  const counter = Metric.counter("bench_costs_total", { incremental: true })
  const cached = Metric.withAttributes(counter, { job: "demo/noop", queue: "default", outcome: "succeeded" })

  add("baseline: Effect.void in a loop", await perOp(() => Effect.void), "")
  add("Schema decode of {n}, as an Effect (decodeUnknownEffect)", await perOp((i) => decodeEffect({ n: i })), "WorkerPool: payload decode")
  add("Schema decode of {n}, synchronously (decodeUnknownSync)", await perOp((i) => Effect.sync(() => decodeSync({ n: i }))), "alternative")
  add("Schema encode of {n} + JSON.stringify, as an Effect", await perOp((i) => Effect.map(encodeEffect({ n: i }), JSON.stringify)), "WorkerPool: result encode; Enqueue.prepare")
  add("Effect.timeoutOrElse around Effect.void (5 min timeout)", await perOp(() => Effect.void.pipe(Effect.timeoutOrElse({ duration: 300_000, orElse: () => Effect.void }))), "WorkerPool: job timeout")
  add("Metric.update(Metric.withAttributes(counter, attrs)) — attrs built per call", await perOp(() => Metric.update(Metric.withAttributes(counter, { job: "demo/noop", queue: "default", outcome: "succeeded" }), 1)), "WorkerPool: executions counter")
  add("Metric.update on a counter whose attributes are built once", await perOp(() => Metric.update(cached, 1)), "alternative")
  add("Effect.annotateLogs with 3 annotations", await perOp((i) => Effect.annotateLogs(Effect.void, { executionId: String(i), job: "demo/noop", attempt: 1 })), "WorkerPool: per-execution log annotations")
  add("Deferred.make + Deferred.succeed + Deferred.await", await perOp(() => Effect.flatMap(Deferred.make<number>(), (d) => Effect.andThen(Deferred.succeed(d, 1), Deferred.await(d)))), "Recorder: one reply per outcome")

  const devNull = openSync("/dev/null", "w")
  const logfmtToFd = Logger.layer([Logger.map(Logger.formatLogFmt, (line) => void writeSync(devNull, line + "\n"))])
  add("Effect.log, logfmt, one write(2) per line (to /dev/null)", await perOp((i) => Effect.log(`noop ${i}`), logfmtToFd), "CLI logger: one line per demo/noop run")
  const original = console.error
  console.error = () => {}
  add("Effect.log, logfmt formatting only (console.error stubbed)", await perOp((i) => Effect.log(`noop ${i}`), Logger.layer([Logger.withConsoleError(Logger.formatLogFmt)])), "CLI logger: formatting share")
  console.error = original
  closeSync(devNull)

  // A bare worker skeleton: a fiber per job in a FiberMap under a semaphore of 50,
  // outcomes through a queue to one batching fiber that replies to each (no I/O).
  add("skeleton: FiberMap fiber per job, semaphore 50, outcome via queue + Deferred reply", await perJob((count) =>
    Effect.scoped(Effect.gen(function*() {
      const sem = yield* Semaphore.make(50)
      const fibers = yield* FiberMap.make<number>()
      const mailbox = yield* Queue.unbounded<Deferred.Deferred<void>>()
      yield* Effect.forkScoped(Effect.forever(Effect.flatMap(Queue.takeAll(mailbox), (batch) => Effect.forEach(batch, (d) => Deferred.succeed(d, undefined), { discard: true }))))
      for (let i = 0; i < count; i++) {
        yield* sem.take(1)
        yield* FiberMap.run(fibers, i)(Effect.gen(function*() {
          const reply = yield* Deferred.make<void>()
          yield* Queue.offer(mailbox, reply)
          yield* Deferred.await(reply)
        }).pipe(Effect.ensuring(sem.release(1))))
      }
      yield* FiberMap.awaitEmpty(fibers)
    }))), "Budget (DESIGN §4): ≈ 5.5 µs/job")

  return {
    title: "6. Per-job costs of the pieces (one fiber, no I/O)",
    headers: ["operation", "µs per op", "where Roster runs it"],
    rows: rows.map(([what, us, where]) => [what, us.toFixed(2), where]),
    notes: [`${n.toLocaleString("en-US")} iterations each after a warm-up; a floor, measured alone.`],
    checks: []
  }
}

if (import.meta.main) report([await run()])
