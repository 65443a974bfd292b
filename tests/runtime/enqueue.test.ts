/**
 * Bad input at enqueue gets a typed error and writes nothing; good input is encoded
 * with the Job's Schema; idempotency keys are trimmed and dedupe the enqueue.
 */
import { describe, expect, test } from "bun:test"
import { Effect, Schema } from "effect"
import * as Job from "../../src/jobs/Job.ts"
import { Client } from "../../src/runtime/Client.ts"
import { Store } from "../../src/store/Store.ts"
import * as Worker from "../../src/runtime/Worker.ts"
import { eventually, runOnTestClock, testSettings } from "../support/runtime.ts"

const send = Job.make({
  id: "mail/send",
  payload: Schema.Struct({ to: Schema.String, at: Schema.Date }),
  handler: ({ to, at }) => Effect.succeed({ to, at: at.toISOString() })
})

const counts = Store.use((s) => s.executionsCount({}))
const total = Effect.map(counts, (c) => Object.values(c).reduce((a, b) => a + b, 0))

describe("enqueue validation", () => {
  test("an invalid payload is a typed InvalidPayload error and nothing is written", async () => {
    const { error, n } = await runOnTestClock([send], Effect.gen(function*() {
      const error = yield* Effect.flip(Client.use((c) => c.enqueue(send, { to: 42 })))
      return { error, n: yield* total }
    }))
    expect(error._tag).toBe("InvalidPayload")
    expect(error.message).toContain("mail/send")
    expect(n).toBe(0)
  })

  test("an unknown job name is refused with UnknownJob listing the known ones", async () => {
    const { error, n } = await runOnTestClock([send], Effect.gen(function*() {
      const error = yield* Effect.flip(Client.use((c) => c.enqueue("mail/nope", {})))
      return { error, n: yield* total }
    }))
    expect(error._tag).toBe("UnknownJob")
    expect(error.message).toContain("mail/send")
    expect(n).toBe(0)
  })

  test("a payload over the limit is refused with PayloadTooLarge", async () => {
    const { error, n } = await runOnTestClock([send], Effect.gen(function*() {
      const error = yield* Effect.flip(Client.use((c) => c.enqueue(send, { to: "x".repeat(2_000), at: new Date(0) })))
      return { error, n: yield* total }
    }), { maxPayloadBytes: 1_000 })
    expect(error).toMatchObject({ _tag: "PayloadTooLarge", limit: 1_000 })
    expect(n).toBe(0)
  })

  test("the default limit is 1 MiB", async () => {
    const { error } = await runOnTestClock([send], Effect.gen(function*() {
      return { error: yield* Effect.flip(Client.use((c) => c.enqueue(send, { to: "x".repeat(1024 * 1024), at: new Date(0) }))) }
    }))
    expect(error._tag).toBe("PayloadTooLarge")
  })

  test("enqueueMany writes all or nothing: one bad item refuses the batch", async () => {
    const { error, n } = await runOnTestClock([send], Effect.gen(function*() {
      const error = yield* Effect.flip(Client.use((c) => c.enqueueMany([
        { job: send, payload: { to: "a", at: new Date(0) } },
        { job: send, payload: { to: 1 } }
      ])))
      return { error, n: yield* total }
    }))
    expect(error._tag).toBe("InvalidPayload")
    expect(n).toBe(0)
  })

  test("payloads are encoded with the Job's Schema and decoded for the handler", async () => {
    const e = await runOnTestClock([send], Effect.gen(function*() {
      yield* Worker.start({ settings: testSettings })
      const { id } = yield* Client.use((c) => c.enqueue(send, { to: "ada", at: new Date(86_400_000) }))
      yield* eventually(Effect.map(Store.use((s) => s.executionsGet(id)), (e) => e?.state === "succeeded"), "success")
      return yield* Client.use((c) => c.get(id))
    }))
    expect(e!.payload).toEqual({ to: "ada", at: "1970-01-02T00:00:00.000Z" })
    expect(e!.result).toEqual({ to: "ada", at: "1970-01-02T00:00:00.000Z" })
  })

  test("keys are trimmed, an empty key means none, and a repeated key returns the same execution", async () => {
    const r = await runOnTestClock([send], Effect.gen(function*() {
      const p = { to: "a", at: new Date(0) }
      const a = yield* Client.use((c) => c.enqueue(send, p, { idempotencyKey: " k " }))
      const b = yield* Client.use((c) => c.enqueue(send, p, { idempotencyKey: "k" }))
      const c1 = yield* Client.use((c) => c.enqueue(send, p, { idempotencyKey: "  " }))
      const c2 = yield* Client.use((c) => c.enqueue(send, p, { idempotencyKey: "" }))
      const concurrent = yield* Effect.forEach(Array.from({ length: 50 }), () => Client.use((c) => c.enqueue(send, p, { idempotencyKey: "burst" })), { concurrency: "unbounded" })
      return { a, b, c1, c2, concurrent, n: yield* total }
    }))
    expect(r.b).toEqual({ id: r.a.id, inserted: false })
    expect(r.c1.inserted && r.c2.inserted).toBe(true)
    expect(r.c1.id).not.toBe(r.c2.id)
    expect(r.concurrent.filter((x) => x.inserted)).toHaveLength(1)
    expect(new Set(r.concurrent.map((x) => x.id)).size).toBe(1)
    expect(r.n).toBe(4)
  })
})

describe("undecodable stored payloads", () => {
  test("fail permanently with UndecodablePayload and the worker carries on", async () => {
    const r = await runOnTestClock([send], Effect.gen(function*() {
      const store = yield* Store
      const good = yield* Client.use((c) => c.enqueue(send, { to: "b", at: new Date(0) }))
      const bad = "00000000-0000-7000-8000-00000000bad1"
      yield* store.executionsInsert([{ id: bad, job: "mail/send", queue: "default", payload: '{"to":5}', priority: 10, retry: send.retry.snapshot, timeoutMs: 1000, runAt: 0, now: 0, idempotencyKey: null }])
      yield* Worker.start({ settings: testSettings })
      yield* eventually(Effect.map(counts, (c) => c.succeeded === 1 && c.failed === 1), "both finished")
      return { bad: yield* store.executionsGet(bad), good: yield* store.executionsGet(good.id) }
    }))
    expect(r.bad).toMatchObject({ state: "failed", attempt: 1, error: { tag: "UndecodablePayload", retryable: false } })
    expect(r.good!.state).toBe("succeeded")
  })
})
