// apps/billing/jobs.ts
import { Effect, Schema } from "effect"
import { Job, RetryPolicy } from "roster"
import { emailInvoice, renderPdf } from "./invoices.ts"

export const sendInvoice = Job.make({
  id: "billing/send-invoice",
  payload: Schema.Struct({ invoiceId: Schema.String }),
  retry: RetryPolicy.exponential({ attempts: 5, initial: "10 seconds" }),
  handler: ({ invoiceId }, ctx) =>
    Effect.gen(function*() {
      // A retry gets a completed step's stored result back instead of running it again.
      const pdf = yield* ctx.step("render", renderPdf(invoiceId))
      yield* ctx.step("email", emailInvoice(invoiceId, pdf, { idempotencyKey: ctx.stepKey("email") }))
    })
})

export const sendReminders = Job.make({
  id: "billing/send-reminders",
  payload: Schema.Struct({ overdueDays: Schema.Number }),
  handler: ({ overdueDays }) => Effect.log(`reminding customers of invoices ${overdueDays}+ days overdue`)
})
