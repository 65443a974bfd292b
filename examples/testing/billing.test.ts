/**
 * Testing your own Jobs with `roster/testing`: the real Roster runtime (an in-memory
 * SQLite store, the real worker and scheduler) on the TestClock, with a fake payment
 * gateway provided as the handler's service. Copy this file next to your app.
 */
import { describe, expect, test } from "bun:test"
import { Context, Effect, Layer, Ref } from "effect"
import fc from "fast-check"
import { RosterTest } from "roster/testing"
import { CardDeclined, chargeCard, GatewayUnavailable, nightlyCharges, PaymentGateway } from "./billing.ts"

// A fake gateway: declines customers whose id starts with "declined" and amounts over
// 5,000.00; is down for the first `outages` charges and `receiptOutages` receipts.
class FakeGateway extends Context.Service<FakeGateway, {
  readonly charges: Effect.Effect<ReadonlyArray<{ readonly customerId: string; readonly amountCents: number }>>
}>()("test/FakeGateway") {}

const fakeGateway = (options: { readonly outages?: number; readonly receiptOutages?: number } = {}) =>
  Layer.effectContext(Effect.gen(function*() {
    const charges = yield* Ref.make<ReadonlyArray<{ customerId: string; amountCents: number }>>([])
    let outages = options.outages ?? 0
    let receiptOutages = options.receiptOutages ?? 0
    const gateway = PaymentGateway.of({
      charge: ({ customerId, amountCents }) =>
        Effect.gen(function*() {
          if (outages > 0 && outages-- > 0) return yield* new GatewayUnavailable({ message: "gateway is down" })
          if (customerId.startsWith("declined") || amountCents > 500_000) return yield* new CardDeclined({ message: `card of ${customerId} declined` })
          const all = yield* Ref.updateAndGet(charges, (cs) => [...cs, { customerId, amountCents }])
          return { chargeId: `ch_${all.length}` }
        }),
      emailReceipt: () =>
        Effect.suspend(() => receiptOutages > 0 && receiptOutages-- ? Effect.fail(new GatewayUnavailable({ message: "mail server is down" })) : Effect.void)
    })
    return Context.make(PaymentGateway, gateway).pipe(Context.add(FakeGateway, { charges: Ref.get(charges) }))
  }))

/** Runs a test body as a Promise (bun:test), closing the runtime at the end. */
const run = <A, E>(body: Effect.Effect<A, E, import("effect").Scope.Scope>) => Effect.runPromise(Effect.scoped(body))

describe("billing/charge-card", () => {
  test("a gateway outage is retried with backoff (10 s, then 20 s) and the card is charged once", () =>
    run(Effect.gen(function*() {
      const t = yield* RosterTest.make({ jobs: [chargeCard], services: fakeGateway({ outages: 2 }) })
      const { id } = yield* t.enqueue(chargeCard, { customerId: "acme", amountCents: 500, currency: "EUR" })

      yield* t.drain // the first attempt runs now, and fails
      expect(yield* t.execution(id)).toMatchObject({ state: "queued", attempt: 1, runAt: 10_000, error: { tag: "GatewayUnavailable", retryable: true } })

      yield* t.advance("9 seconds") // not due yet
      expect((yield* t.execution(id)).attempt).toBe(1)
      yield* t.advance("1 second") // second attempt at 10 s, fails again: next at 10 s + 20 s
      expect(yield* t.execution(id)).toMatchObject({ state: "queued", attempt: 2, runAt: 30_000 })

      yield* t.advance("20 seconds")
      const done = yield* t.execution(id)
      expect(done).toMatchObject({ state: "succeeded", attempt: 3, result: { chargeId: "ch_1" } })
      expect(done.attempts.map((a) => [a.outcome, a.startedAt])).toEqual([["retrying", 0], ["retrying", 10_000], ["succeeded", 30_000]])
      expect(yield* t.run(FakeGateway.use((f) => f.charges))).toEqual([{ customerId: "acme", amountCents: 500 }])
    })))

  test("a failed receipt is retried without charging the card again: the charge step is not re-run", () =>
    run(Effect.gen(function*() {
      const t = yield* RosterTest.make({ jobs: [chargeCard], services: fakeGateway({ receiptOutages: 1 }) })
      const { id } = yield* t.enqueue(chargeCard, { customerId: "acme", amountCents: 500, currency: "EUR" })
      yield* t.drain
      yield* t.advance("10 seconds")
      const e = yield* t.execution(id)
      expect(e.state).toBe("succeeded")
      expect(e.steps.map((s) => [s.name, s.attempt])).toEqual([["charge", 1], ["receipt", 2]])
      expect(yield* t.run(FakeGateway.use((f) => f.charges))).toHaveLength(1)
      // Handler logs are kept with the execution (and not printed by the test).
      expect(e.logs.filter((l) => l.message.startsWith("charged acme")).map((l) => l.attempt)).toEqual([1, 2])
    })))

  test("a declined card fails at once, permanently, with the typed CardDeclined", () =>
    run(Effect.gen(function*() {
      const t = yield* RosterTest.make({ jobs: [chargeCard], services: fakeGateway() })
      const { id } = yield* t.enqueue(chargeCard, { customerId: "declined-bob", amountCents: 500, currency: "USD" })
      yield* t.drain
      expect(yield* t.execution(id)).toMatchObject({ state: "failed", attempt: 1, error: { tag: "CardDeclined", retryable: false } })
    })))
})

describe("billing/nightly-charges", () => {
  test("fires at 02:00 UTC each night once time is advanced, and each fire's charge runs", () =>
    run(Effect.gen(function*() {
      const t = yield* RosterTest.make({
        jobs: [chargeCard],
        schedules: [nightlyCharges],
        services: fakeGateway(),
        startAt: new Date("2026-03-01T00:00:00Z")
      })
      yield* t.advance("1 hour")
      expect(yield* t.fires(nightlyCharges.id)).toEqual([])

      yield* t.advance("2 days")
      const fires = yield* t.fires(nightlyCharges.id)
      expect(fires.map((f) => [new Date(f.dueAt).toISOString(), f.outcome])).toEqual([
        ["2026-03-01T02:00:00.000Z", "enqueued"],
        ["2026-03-02T02:00:00.000Z", "enqueued"]
      ])
      for (const fire of fires) {
        expect(yield* t.execution(fire.executionId!)).toMatchObject({ state: "succeeded", scheduleId: nightlyCharges.id, fireAt: fire.dueAt })
      }
    })))
})

describe("any valid charge", () => {
  // Payloads drawn from the Job's own Schema: fast-check picks a seed and a size, Effect
  // derives the value from the Schema (its checks included), so every one is valid.
  const charges = fc.noShrink(fc.tuple(fc.integer(), fc.integer({ min: 0, max: 20 })))
    .map(([seed, size]) => RosterTest.samplePayload(chargeCard, seed, size))

  test("ends succeeded, or failed permanently with CardDeclined: never stuck, never a defect", async () => {
    await fc.assert(
      fc.asyncProperty(charges, (payload) =>
        run(Effect.gen(function*() {
          const t = yield* RosterTest.make({ jobs: [chargeCard], services: fakeGateway({ outages: 1 }) })
          const { id } = yield* t.enqueue(chargeCard, payload)
          yield* t.advance("1 hour") // far past every retry of the policy
          const e = yield* t.execution(id)
          if (e.state === "succeeded") return
          expect(e).toMatchObject({ state: "failed", error: { tag: "CardDeclined", retryable: false } })
        }))),
      { numRuns: 25 }
    )
  })
})
