/**
 * The flow keys (per-key concurrency, per-key rate limit) of a row whose payload is
 * already encoded: a Schedule's fire and a schedule run by hand store JSON text the
 * Job's Schema made, so the keys are computed from that text decoded again.
 */
import { flowKeysOf } from "./FlowLimits.ts"
import type { Job } from "./Job.ts"
import { jsonCodecOf } from "./JsonCodec.ts"

/** No flow keys: the Job limits no key. */
export const noFlowKeys = { concurrencyKey: null, rateKey: null } as const

/**
 * The keys of an encoded payload. A fire cannot be refused like an enqueue (its
 * Schedule was accepted), so a payload that no longer decodes or a key function that
 * throws gives no key: the execution then runs limited by its queue only, and its
 * handler meets the same bad payload.
 */
export const storedFlowKeysOf = (job: Job, payloadText: string): { readonly concurrencyKey: string | null; readonly rateKey: string | null } => {
  if (job.flow.concurrency === undefined && job.flow.rateLimit?.key === undefined) return noFlowKeys
  try {
    const decoded = jsonCodecOf(job.payload).decode(JSON.parse(payloadText))
    if (decoded._tag === "Failure") return noFlowKeys
    const keys = flowKeysOf(job.id, job.flow, decoded.value)
    return typeof keys === "string" ? noFlowKeys : keys
  } catch {
    return noFlowKeys
  }
}
