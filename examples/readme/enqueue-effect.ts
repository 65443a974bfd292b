// enqueue-effect.ts — from an Effect program
import { Effect } from "effect"
import { Roster } from "roster"
import { sendInvoice } from "./apps/billing/jobs.ts"

const program = Effect.gen(function*() {
  const roster = yield* Roster.Client
  const { id, inserted } = yield* roster.enqueue(sendInvoice, { invoiceId: "inv_42" }, { idempotencyKey: "invoice:inv_42" })
  yield* Effect.log(`execution ${id} (new: ${inserted})`)
})

// Opens (and migrates) roster.db; Roster.layer(config, { worker: true }) would also run a worker here.
Effect.runPromise(program.pipe(Effect.provide(Roster.layer({ db: "roster.db", jobs: [sendInvoice] }))))
