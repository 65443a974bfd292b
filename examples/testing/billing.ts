/**
 * A small billing app to show how to test your own Jobs with `roster/testing`:
 * - `billing/charge-card` charges a card through the `PaymentGateway` service, in a
 *   durable step (a retry never charges twice), then emails a receipt in a second step;
 *   a declined card fails permanently (typed `CardDeclined`), a gateway outage is
 *   retried with backoff;
 * - `billing/nightly-charges` charges a subscription every night at 02:00 UTC.
 * The test beside it (billing.test.ts) runs all of it on the TestClock.
 */
import { Context, Data, Effect, Schema } from "effect"
import { Job, JobSchedule, RetryPolicy } from "roster"

/** The bank said no: retrying will not help. */
export class CardDeclined extends Data.TaggedError("CardDeclined")<{ readonly message: string }> {}

/** The gateway or the mail server is down for now: worth retrying. */
export class GatewayUnavailable extends Data.TaggedError("GatewayUnavailable")<{ readonly message: string }> {}

/** What the app needs from a payment provider. */
export class PaymentGateway extends Context.Service<PaymentGateway, {
  /** Charges a card; `idempotencyKey` makes a repeated request a no-op at the provider. */
  readonly charge: (req: { readonly customerId: string; readonly amountCents: number; readonly currency: string; readonly idempotencyKey: string }) => Effect.Effect<{ readonly chargeId: string }, CardDeclined | GatewayUnavailable>
  readonly emailReceipt: (req: { readonly customerId: string; readonly chargeId: string }) => Effect.Effect<void, GatewayUnavailable>
}>()("billing/PaymentGateway") {}

/** A charge request. */
export const Charge = Schema.Struct({
  customerId: Schema.String.check(Schema.isNonEmpty()),
  amountCents: Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 1_000_000 })),
  currency: Schema.Literals(["EUR", "USD"])
})

/** Charges a card once, then emails the receipt. */
export const chargeCard = Job.make({
  id: "billing/charge-card",
  payload: Charge,
  result: Schema.Struct({ chargeId: Schema.String }),
  retry: RetryPolicy.exponential({ attempts: 5, initial: "10 seconds", max: "5 minutes", jitter: false }),
  retryable: (error) => !(error instanceof CardDeclined),
  handler: ({ customerId, amountCents, currency }, ctx) =>
    Effect.gen(function*() {
      const gateway = yield* PaymentGateway
      const { chargeId } = yield* ctx.step(
        "charge",
        gateway.charge({ customerId, amountCents, currency, idempotencyKey: ctx.stepKey("charge") })
      )
      yield* Effect.log(`charged ${customerId} ${amountCents} ${currency}: ${chargeId}`)
      yield* ctx.step("receipt", gateway.emailReceipt({ customerId, chargeId }))
      return { chargeId }
    })
})

/** The nightly subscription charge. */
export const nightlyCharges = JobSchedule.make({
  id: "billing/nightly-charges",
  job: chargeCard,
  payload: { customerId: "acme", amountCents: 4_900, currency: "EUR" },
  cron: "0 2 * * *"
})
