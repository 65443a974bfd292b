/**
 * Orchestration inside one execution on the real runtime under the TestClock
 * (roster/testing): children enqueued exactly once per step name, fan-in that returns
 * every child's outcome (a failed child is an outcome), a two-day durable sleep that
 * holds no worker slot while it waits, signals kept when sent early and taken once,
 * a signal's timeout, refusals for an ended or unknown execution, and a cancel that
 * reaches the children of a waiting parent.
 */
import { describe, expect, test } from "bun:test"
import { Effect, Option, Schema } from "effect"
import { Job } from "../../src/index.ts"
import { RosterTest } from "../../src/testing/index.ts"

const run = <A, E>(body: Effect.Effect<A, E, import("effect").Scope.Scope>) => Effect.runPromise(Effect.scoped(body))

/** How often each handler body ran (module state: the runtime is in this process). */
const ran = new Map<string, number>()
const count = (key: string) => ran.set(key, (ran.get(key) ?? 0) + 1)

const square = Job.make({
  id: "orch/square",
  payload: Schema.Struct({ n: Schema.Number }),
  result: Schema.Struct({ square: Schema.Number }),
  handler: ({ n }) => (n < 0 ? Job.permanent(`negative: ${n}`) : Effect.succeed({ square: n * n }))
})

const sumSquares = Job.make({
  id: "orch/sum-squares",
  payload: Schema.Struct({ ns: Schema.Array(Schema.Number) }),
  handler: ({ ns }, ctx) =>
    Effect.gen(function*() {
      count("sum-squares")
      const ids: Array<string> = []
      for (const [i, n] of ns.entries()) ids.push(yield* ctx.enqueue(`square-${i}`, square, { n }))
      const outcomes = yield* ctx.awaitChildren("all", ids)
      count("sum-squares:after")
      return {
        sum: outcomes.reduce((s, o) => s + (o.state === "succeeded" ? (o.result as { square: number }).square : 0), 0),
        failed: outcomes.filter((o) => o.state === "failed").map((o) => o.error?.message)
      }
    })
})

const survey = Job.make({
  id: "orch/survey",
  payload: Schema.Struct({ customer: Schema.String }),
  handler: (_, ctx) =>
    Effect.gen(function*() {
      yield* ctx.step("charge", Effect.sync(() => count("survey:charge")))
      yield* ctx.sleep("two-days", "2 days")
      yield* ctx.step("send", Effect.sync(() => count("survey:send")))
      return "sent"
    })
})

const quick = Job.make({ id: "orch/quick", payload: Schema.Struct({}), handler: () => Effect.sync(() => count("quick")) })

const confirm = Job.make({
  id: "orch/confirm",
  payload: Schema.Struct({}),
  handler: (_, ctx) =>
    Effect.map(ctx.waitForSignal("confirmed", { schema: Schema.Struct({ by: Schema.String }), timeout: "1 day" }), (got) =>
      Option.match(got, { onNone: () => "gave up", onSome: (s) => `confirmed by ${s.by}` }))
})

describe("orchestration (TestClock)", () => {
  test("fan-out and fan-in: every child once, each outcome returned, a failed child is an outcome; parking charges no attempt", () =>
    run(Effect.gen(function*() {
      ran.clear()
      const t = yield* RosterTest.make({ jobs: [sumSquares, square] })
      const { id } = yield* t.enqueue(sumSquares, { ns: [1, 2, 3, -1] })
      yield* t.drain
      const parent = yield* t.execution(id)
      if (parent.state !== "succeeded") console.log(JSON.stringify(parent, null, 1))
      expect(parent.state).toBe("succeeded")
      expect(parent.result).toEqual({ sum: 14, failed: ["negative: -1"] })
      // Charged once: the runs that parked were not attempts.
      expect(parent.attempt).toBe(1)
      expect(ran.get("sum-squares:after")).toBe(1)
      const children = yield* t.executions({ parentId: id })
      expect(children).toHaveLength(4)
      expect(children.every((c) => c.parentId === id)).toBe(true)
      expect(children.map((c) => c.state).sort()).toEqual(["failed", "succeeded", "succeeded", "succeeded"])
      expect(new Set(children.map((c) => c.parentStep))).toEqual(new Set(["square-0", "square-1", "square-2", "square-3"]))
    })))

  test("a two-day sleep parks the execution: waiting, no slot held, resumed after two days without re-running its steps", () =>
    run(Effect.gen(function*() {
      ran.clear()
      const t = yield* RosterTest.make({ jobs: [survey, quick], queues: { default: { concurrency: 1 } } })
      const { id } = yield* t.enqueue(survey, { customer: "acme" })
      yield* t.drain
      const waiting = yield* t.execution(id)
      expect(waiting.state).toBe("waiting")
      expect(waiting.wait).toEqual({ kind: "sleep", step: "two-days", until: 2 * 86_400_000 })
      expect(waiting.leaseOwner).toBeNull()
      // Concurrency 1, and the sleeper holds none of it: other work runs now.
      for (let i = 0; i < 3; i++) yield* t.enqueue(quick, {})
      yield* t.drain
      expect(ran.get("quick")).toBe(3)
      yield* t.advance("47 hours")
      expect((yield* t.execution(id)).state).toBe("waiting")
      yield* t.advance("1 hour")
      const done = yield* t.execution(id)
      expect(done.state).toBe("succeeded")
      expect(done.startedAt).toBe(2 * 86_400_000)
      expect(done.attempt).toBe(1)
      expect(ran.get("survey:charge")).toBe(1)
      expect(ran.get("survey:send")).toBe(1)
    })))

  test("a signal resumes a waiting execution; one sent before the wait is kept and taken once", () =>
    run(Effect.gen(function*() {
      const t = yield* RosterTest.make({ jobs: [confirm] })
      const a = yield* t.enqueue(confirm, {})
      yield* t.drain
      expect((yield* t.execution(a.id)).state).toBe("waiting")
      expect(yield* t.run(t.client.signal(a.id, "confirmed", { by: "ops" }))).toBe("Woke")
      yield* t.drain
      const ea = yield* t.execution(a.id)
      expect(ea.result).toBe("confirmed by ops")

      // Sent before the execution ever ran: kept, then taken by its wait.
      const b = yield* t.enqueue(confirm, {}, { delayMs: 60_000 })
      expect(yield* t.run(t.client.signal(b.id, "confirmed", { by: "early" }))).toBe("Kept")
      yield* t.advance("1 minute")
      expect((yield* t.execution(b.id)).result).toBe("confirmed by early")
      const detail = yield* t.run(t.client.get(b.id))
      expect(detail!.signals.map((s) => [s.name, s.consumedAt !== null])).toEqual([["confirmed", true]])
    })))

  test("a signal's timeout ends the wait with None; a signal to an ended or unknown execution is refused", () =>
    run(Effect.gen(function*() {
      const t = yield* RosterTest.make({ jobs: [confirm] })
      const { id } = yield* t.enqueue(confirm, {})
      yield* t.drain
      yield* t.advance("1 day")
      const e = yield* t.execution(id)
      expect(e.state).toBe("succeeded")
      expect(e.result).toBe("gave up")
      const ended = yield* Effect.flip(t.client.signal(id, "confirmed", { by: "late" }))
      expect(ended._tag).toBe("InvalidTransition")
      expect(ended.message).toContain("has ended (succeeded)")
      expect((yield* Effect.flip(t.client.signal("nope", "confirmed", {})))._tag).toBe("ExecutionNotFound")
      expect((yield* Effect.flip(t.client.signal(id, "", {})))._tag).toBe("InvalidSignal")
    })))

  test("cancelling a waiting parent cancels its children that have not ended", () =>
    run(Effect.gen(function*() {
      const slow = Job.make({ id: "orch/slow", payload: Schema.Struct({}), handler: () => Effect.void })
      const parentJob = Job.make({
        id: "orch/parent",
        payload: Schema.Struct({}),
        handler: (_, ctx) =>
          Effect.gen(function*() {
            const a = yield* ctx.enqueue("a", slow, {}, { delayMs: 3_600_000 })
            const b = yield* ctx.enqueue("b", slow, {}, { delayMs: 3_600_000 })
            return yield* ctx.awaitChildren("both", [a, b])
          })
      })
      const t = yield* RosterTest.make({ jobs: [parentJob, slow] })
      const { id } = yield* t.enqueue(parentJob, {})
      yield* t.drain
      expect((yield* t.execution(id)).state).toBe("waiting")
      expect(yield* t.client.cancel(id)).toBe("cancelled")
      const children = yield* t.executions({ parentId: id })
      expect(children.map((c) => c.state)).toEqual(["cancelled", "cancelled"])
    })))
})
