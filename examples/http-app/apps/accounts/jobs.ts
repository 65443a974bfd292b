/**
 * The http-app's Job: the welcome email a signup enqueues in its own transaction. The
 * email provider is a stand-in (a log line); its idempotency key is the step key, so
 * a retry after a crash mid-send would not email twice with a real provider.
 */
import { Effect, Schema } from "effect"
import { Job } from "roster"

export const welcomeEmail = Job.make({
  id: "accounts/welcome-email",
  label: "Welcome email",
  payload: Schema.Struct({ userId: Schema.String, email: Schema.String }),
  handler: ({ email }, ctx) =>
    ctx.step(
      "send",
      Effect.as(Effect.log(`welcome email to ${email} (idempotency key ${ctx.stepKey("send")})`), { sentTo: email })
    )
})
