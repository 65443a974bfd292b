/**
 * Three small workflows built from one execution's steps (docs/patterns.md):
 * - `shop/fulfil-order`: charge, then ship, then wait two days and send a survey;
 * - `media/render-album`: render every photo's thumbnail in parallel (one child each)
 *   and zip them when all are done, reporting the ones that failed;
 * - `signup/await-confirmation`: email a link, then wait until the customer confirms,
 *   or give up after 24 hours.
 * The test beside it (workflows.test.ts) runs all three on the TestClock.
 */
import { Context, Data, Effect, Option, Schema } from "effect"
import { Job } from "roster"

/** What the shop needs from the outside world. */
export class Shop extends Context.Service<Shop, {
  readonly charge: (orderId: string, idempotencyKey: string) => Effect.Effect<{ readonly chargeId: string }>
  readonly ship: (orderId: string) => Effect.Effect<{ readonly trackingId: string }>
  readonly sendSurvey: (orderId: string) => Effect.Effect<void>
  readonly renderThumbnail: (photo: string) => Effect.Effect<string, ThumbnailFailed>
  readonly zip: (albumId: string, files: ReadonlyArray<string>) => Effect.Effect<string>
  readonly sendEmail: (to: string, text: string) => Effect.Effect<void>
  readonly activate: (email: string) => Effect.Effect<void>
}>()("workflows/Shop") {}

/** A photo that cannot be rendered. */
export class ThumbnailFailed extends Data.TaggedError("ThumbnailFailed")<{ readonly message: string }> {}

/** Charge, then ship, then wait two days and send a survey. */
export const fulfilOrder = Job.make({
  id: "shop/fulfil-order",
  payload: Schema.Struct({ orderId: Schema.String }),
  handler: ({ orderId }, ctx) =>
    Effect.gen(function*() {
      const shop = yield* Shop
      const { chargeId } = yield* ctx.step("charge", shop.charge(orderId, ctx.stepKey("charge")))
      const { trackingId } = yield* ctx.step("ship", shop.ship(orderId))
      // Parked for two days: no worker slot, no lease; a restart changes nothing.
      yield* ctx.sleep("two-days", "2 days")
      yield* ctx.step("survey", shop.sendSurvey(orderId))
      return { chargeId, trackingId }
    })
})

/** One thumbnail: a child of `media/render-album`. */
export const renderThumbnail = Job.make({
  id: "media/render-thumbnail",
  payload: Schema.Struct({ photo: Schema.String }),
  result: Schema.Struct({ file: Schema.String }),
  retryable: (e) => !(e instanceof ThumbnailFailed),
  handler: ({ photo }) =>
    Effect.gen(function*() {
      const shop = yield* Shop
      return { file: yield* shop.renderThumbnail(photo) }
    })
})

/** Every photo's thumbnail in parallel, then one zip of those that rendered. */
export const renderAlbum = Job.make({
  id: "media/render-album",
  payload: Schema.Struct({ albumId: Schema.String, photos: Schema.Array(Schema.String) }),
  handler: ({ albumId, photos }, ctx) =>
    Effect.gen(function*() {
      const shop = yield* Shop
      // Each child is enqueued once per step name, whatever the retries.
      const ids = yield* Effect.forEach(photos, (photo, i) => ctx.enqueue(`thumbnail-${i}`, renderThumbnail, { photo }))
      const outcomes = yield* ctx.awaitChildren("thumbnails", ids)
      const files = outcomes.flatMap((o) => (o.state === "succeeded" ? [(o.result as { file: string }).file] : []))
      const failed = outcomes.flatMap((o, i) => (o.state === "succeeded" ? [] : [photos[i]!]))
      const zip = yield* ctx.step("zip", shop.zip(albumId, files))
      return { zip, rendered: files.length, failed }
    })
})

/** Email a link, then wait until the customer confirms, or give up after 24 hours. */
export const awaitConfirmation = Job.make({
  id: "signup/await-confirmation",
  payload: Schema.Struct({ email: Schema.String }),
  handler: ({ email }, ctx) =>
    Effect.gen(function*() {
      const shop = yield* Shop
      yield* ctx.step("email", shop.sendEmail(email, `confirm: /confirm?execution=${ctx.executionId}`))
      // Resumed by client.signal(id, "confirmed", { at }) — or after 24 hours with None.
      const confirmed = yield* ctx.waitForSignal("confirmed", { schema: Schema.Struct({ at: Schema.String }), timeout: "24 hours" })
      if (Option.isNone(confirmed)) return { email, confirmed: false }
      yield* ctx.step("activate", shop.activate(email))
      return { email, confirmed: true, at: confirmed.value.at }
    })
})
