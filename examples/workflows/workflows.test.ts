/**
 * The three workflows of docs/patterns.md (workflows.ts) on the real runtime under the
 * TestClock, with a fake Shop service that records what was done.
 */
import { describe, expect, test } from "bun:test"
import { Effect, Layer } from "effect"
import { RosterTest } from "roster/testing"
import { awaitConfirmation, fulfilOrder, renderAlbum, renderThumbnail, Shop, ThumbnailFailed } from "./workflows.ts"

/** A fake Shop: every call is recorded in `done`; photos named "broken-*" fail to render. */
const fakeShop = () => {
  const done: Array<string> = []
  const layer = Layer.succeed(Shop, Shop.of({
    charge: (orderId) => Effect.sync(() => (done.push(`charge ${orderId}`), { chargeId: `ch-${orderId}` })),
    ship: (orderId) => Effect.sync(() => (done.push(`ship ${orderId}`), { trackingId: `tr-${orderId}` })),
    sendSurvey: (orderId) => Effect.sync(() => void done.push(`survey ${orderId}`)),
    renderThumbnail: (photo) =>
      photo.startsWith("broken-") ? Effect.fail(new ThumbnailFailed({ message: `cannot decode ${photo}` })) : Effect.sync(() => `${photo}.thumb.jpg`),
    zip: (albumId, files) => Effect.sync(() => (done.push(`zip ${albumId} ${files.length}`), `${albumId}.zip`)),
    sendEmail: (to) => Effect.sync(() => void done.push(`email ${to}`)),
    activate: (email) => Effect.sync(() => void done.push(`activate ${email}`))
  }))
  return { done, layer }
}

const run = <A, E>(body: Effect.Effect<A, E, import("effect").Scope.Scope>) => Effect.runPromise(Effect.scoped(body))

describe("docs/patterns.md workflows", () => {
  test("charge, then ship, then wait two days and send a survey", () =>
    run(Effect.gen(function*() {
      const shop = fakeShop()
      const t = yield* RosterTest.make({ jobs: [fulfilOrder], services: shop.layer })
      const { id } = yield* t.enqueue(fulfilOrder, { orderId: "o-1" })
      yield* t.drain
      expect((yield* t.execution(id)).state).toBe("waiting")
      expect(shop.done).toEqual(["charge o-1", "ship o-1"])
      yield* t.advance("2 days")
      const e = yield* t.execution(id)
      expect(e.state).toBe("succeeded")
      expect(e.result).toEqual({ chargeId: "ch-o-1", trackingId: "tr-o-1" })
      // Charged and shipped once, the survey sent once, two days later.
      expect(shop.done).toEqual(["charge o-1", "ship o-1", "survey o-1"])
      expect(e.finishedAt).toBe(2 * 86_400_000)
    })))

  test("render 500 thumbnails in parallel and zip them when all are done", () =>
    run(Effect.gen(function*() {
      const shop = fakeShop()
      const t = yield* RosterTest.make({ jobs: [renderAlbum, renderThumbnail], services: shop.layer, queues: { default: { concurrency: 50 } } })
      const photos = Array.from({ length: 500 }, (_, i) => (i % 100 === 7 ? `broken-${i}` : `photo-${i}`))
      const { id } = yield* t.enqueue(renderAlbum, { albumId: "trip", photos })
      yield* t.drain
      const e = yield* t.execution(id)
      expect(e.state).toBe("succeeded")
      expect(e.result).toEqual({ zip: "trip.zip", rendered: 495, failed: ["broken-7", "broken-107", "broken-207", "broken-307", "broken-407"] })
      expect(shop.done).toEqual(["zip trip 495"])
      expect((yield* t.executions({ parentId: id, limit: 1000 })).length).toBe(500)
    })), 60_000)

  test("wait until the customer confirms, or give up after 24 hours", () =>
    run(Effect.gen(function*() {
      const shop = fakeShop()
      const t = yield* RosterTest.make({ jobs: [awaitConfirmation], services: shop.layer })
      const yes = yield* t.enqueue(awaitConfirmation, { email: "ann@example.com" })
      const no = yield* t.enqueue(awaitConfirmation, { email: "bob@example.com" })
      yield* t.drain
      expect((yield* t.execution(yes.id)).state).toBe("waiting")
      yield* t.advance("3 hours")
      expect(yield* t.run(t.client.signal(yes.id, "confirmed", { at: "2026-12-01T03:00:00Z" }))).toBe("Woke")
      yield* t.drain
      expect((yield* t.execution(yes.id)).result).toEqual({ email: "ann@example.com", confirmed: true, at: "2026-12-01T03:00:00Z" })
      yield* t.advance("21 hours")
      expect((yield* t.execution(no.id)).result).toEqual({ email: "bob@example.com", confirmed: false })
      expect(shop.done).toEqual(["email ann@example.com", "email bob@example.com", "activate ann@example.com"])
    })))
})
