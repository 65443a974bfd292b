/**
 * `Client.waitFor` and the Promise API's `waitFor` (docs/embedding.md): a waiter is
 * woken by the commit of the outcome — this process's through the Recorder, another
 * connection's through the change watcher — and reads the row once per wake-up, never
 * on a timer. Reads are counted through a decorated real SQLite store.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test"
import { Effect, Fiber, Layer, Logger, Schema, type Scope } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Job from "../../src/jobs/Job.ts"
import * as Registry from "../../src/jobs/Registry.ts"
import { fromConfig } from "../../src/jobs/QueueConfig.ts"
import * as ClientModule from "../../src/runtime/Client.ts"
import type { RosterConfig } from "../../src/runtime/Config.ts"
import * as Core from "../../src/runtime/Core.ts"
import * as Roster from "../../src/runtime/Roster.ts"
import * as Worker from "../../src/runtime/Worker.ts"
import { Store } from "../../src/store/Store.ts"

const { Client } = ClientModule

/** A gate a handler waits on, opened by the test. */
let gate: ReturnType<typeof Promise.withResolvers<void>>
const gated = Job.make({ id: "wait/gated", payload: Schema.Struct({}), handler: async () => (await gate.promise, "done") })
const broken = Job.make({ id: "wait/broken", payload: Schema.Struct({}), handler: () => Job.permanent("no luck") })

let dir: string
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "roster-wait-for-"))
  gate = Promise.withResolvers<void>()
})
afterEach(() => rmSync(dir, { recursive: true, force: true }))

/** Runs `body` over Client + Core + a real SQLite store whose `executionsGet` calls are counted. */
const run = <A, E>(body: (reads: { count: number }) => Effect.Effect<A, E, ClientModule.Client | Core.Core | Store | Scope.Scope>) => {
  const config: RosterConfig = { db: join(dir, "roster.db") }
  const registry = Registry.make({ jobs: [gated, broken], queues: fromConfig(undefined) })
  if (Registry.isError(registry)) throw new Error(registry.message)
  const reads = { count: 0 }
  const counted = Layer.effect(
    Store,
    Effect.gen(function*() {
      const store = yield* Store
      return Store.of({ ...store, executionsGet: (id) => Effect.suspend(() => (reads.count++, store.executionsGet(id))) })
    })
  ).pipe(Layer.provide(Roster.layerStore(config)))
  const layer = ClientModule.layer.pipe(
    Layer.provideMerge(Core.layer(config, registry)),
    Layer.provideMerge(counted),
    // The broken Job fails on purpose: no console output.
    Layer.provideMerge(Layer.succeed(Logger.CurrentLoggers, new Set()))
  )
  return Effect.runPromise(Effect.scoped(Effect.provide(body(reads), layer)))
}

const startWorker = Worker.start({ settings: { logFlushMs: 0 } })

describe("waiting for an execution in process", () => {
  test("a waiter wakes when the worker records the outcome and returns the execution", async () => {
    const { execution, readsWhileRunning } = await run((reads) =>
      Effect.gen(function*() {
        const client = yield* Client
        yield* startWorker
        const { id } = yield* client.enqueue(gated, {})
        const waiter = yield* Effect.forkChild(client.waitFor(id, { timeout: "10 seconds" }))
        yield* Effect.sleep(500)
        expect(waiter.pollUnsafe()).toBeUndefined()
        const readsWhileRunning = reads.count
        gate.resolve()
        return { execution: yield* Fiber.join(waiter), readsWhileRunning }
      }))
    expect(execution).toMatchObject({ state: "succeeded", result: "done" })
    // The first read, and one after the claim's commit at most: no reads on a timer.
    expect(readsWhileRunning).toBeLessThanOrEqual(3)
  }, 20_000)

  test("a failed execution is returned as it ended", async () => {
    const execution = await run(() =>
      Effect.gen(function*() {
        const client = yield* Client
        const { id } = yield* client.enqueue(broken, {})
        yield* startWorker
        return yield* client.waitFor(id, { timeout: "10 seconds" })
      }))
    expect(execution.state).toBe("failed")
    expect(execution.error?.message).toContain("no luck")
  }, 20_000)

  test("an already-ended execution returns at once, with one read", async () => {
    const { execution, reads } = await run((reads) =>
      Effect.gen(function*() {
        const client = yield* Client
        const { id } = yield* client.enqueue(gated, {})
        yield* client.cancel(id)
        const before = reads.count
        const execution = yield* client.waitFor(id, { timeout: 1_000 })
        return { execution, reads: reads.count - before }
      }))
    expect(execution.state).toBe("cancelled")
    expect(reads).toBe(1)
  })

  test("the timeout fails with WaitTimeout; the execution goes on", async () => {
    const { error, state } = await run(() =>
      Effect.gen(function*() {
        const client = yield* Client
        const { id } = yield* client.enqueue(gated, {})
        const error = yield* Effect.flip(client.waitFor(id, { timeout: "200 millis" }))
        return { error, state: (yield* client.get(id))?.state }
      }))
    expect(error).toMatchObject({ _tag: "WaitTimeout", timeoutMs: 200 })
    expect(error.message).toContain("had not ended after 200 ms")
    expect(state).toBe("queued")
  })

  test("an unknown id fails with ExecutionNotFound", async () => {
    const error = await run(() => Effect.flip(Client.use((c) => c.waitFor("nope", { timeout: 1_000 }))))
    expect(error).toMatchObject({ _tag: "ExecutionNotFound", id: "nope", message: "no execution nope" })
  })

  test("an idle database costs no reads while waiting: a 10 s wait reads twice at most until the cancel commits", async () => {
    const { execution, idleReads } = await run((reads) =>
      Effect.gen(function*() {
        const client = yield* Client
        const { id } = yield* client.enqueue(gated, {})
        const before = reads.count
        const waiter = yield* Effect.forkChild(client.waitFor(id, { timeout: "10 seconds" }))
        yield* Effect.sleep(1_500)
        const idleReads = reads.count - before
        yield* client.cancel(id)
        return { execution: yield* Fiber.join(waiter), idleReads }
      }))
    // The first read, and one when the change watcher starts watching.
    expect(idleReads).toBeGreaterThanOrEqual(1)
    expect(idleReads).toBeLessThanOrEqual(2)
    expect(execution.state).toBe("cancelled")
  }, 20_000)

  test("another connection's commit wakes the waiter through the change watcher", async () => {
    const execution = await run(() =>
      Effect.gen(function*() {
        const client = yield* Client
        const { id } = yield* client.enqueue(gated, {})
        const waiter = yield* Effect.forkChild(client.waitFor(id, { timeout: "10 seconds" }))
        yield* Effect.sleep(200)
        // A second store on the same file: its commit is another connection's.
        yield* Effect.scoped(Effect.flatMap(Layer.build(Roster.layerStore({ db: join(dir, "roster.db") })), (context) =>
          Effect.flatMap(Effect.clockWith((c) => c.currentTimeMillis), (now) =>
            Store.use((s) => s.executionsCancel({ id, now })).pipe(Effect.provide(context)))))
        return yield* Fiber.join(waiter)
      }))
    expect(execution.state).toBe("cancelled")
  }, 20_000)
})

describe("the Promise API's waitFor", () => {
  test("resolves with the ended execution, rejects with WaitTimeout and ExecutionNotFound", async () => {
    const roster = await Roster.open({ db: join(dir, "promise.db"), jobs: [gated] }, { configDir: false, logger: { output: "off" } })
    try {
      const { id } = await roster.enqueue(gated, {})
      expect(await roster.waitFor(id, { timeout: 100 }).catch((e) => e)).toMatchObject({ _tag: "WaitTimeout", id })
      expect(await roster.waitFor("nope").catch((e) => e)).toMatchObject({ _tag: "ExecutionNotFound" })
      await roster.startWorker()
      const waiting = roster.waitFor(id, { timeout: "10 seconds" })
      gate.resolve()
      expect(await waiting).toMatchObject({ id, state: "succeeded", result: "done" })
    } finally {
      await roster.close()
    }
  }, 20_000)
})
