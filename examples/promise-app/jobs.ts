/**
 * The promise-app's Job, written without Effect beyond its payload Schema: the handler
 * is a plain async function. Throwing `PermanentFailure` fails it for good; anything
 * else it throws is retried by its policy.
 */
import { Schema } from "effect"
import { Job, PermanentFailure, RetryPolicy } from "roster"

/** SHA-256 of a text, as hex. */
export const checksum = Job.make({
  id: "files/checksum",
  payload: Schema.Struct({ text: Schema.String }),
  result: Schema.Struct({ sha256: Schema.String }),
  retry: RetryPolicy.fixed({ attempts: 3, delay: "200 millis" }),
  handler: async ({ text }) => {
    if (text.length === 0) throw new PermanentFailure({ message: "nothing to hash" })
    const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text))
    return { sha256: Buffer.from(digest).toString("hex") }
  }
})
