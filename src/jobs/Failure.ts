/**
 * Turns how an attempt ended into a stored error and a verdict: may it be retried?
 * Permanent: `Job.permanent(...)`, an undecodable stored payload, an invalid result,
 * a service the handler requires that nothing provides (no retry can fix it), or any
 * error the Job's `retryable` predicate rejects. Transient: other failures,
 * timeouts, lost leases and defects (thrown exceptions, kept with their stack).
 */
import { Cause } from "effect"
import type { Job } from "./Job.ts"
import type { ExecutionError } from "../store/Execution.ts"

const permanentTags = new Set(["PermanentFailure", "UndecodablePayload", "InvalidResult"])

const tagOf = (error: unknown): string => {
  if (typeof error === "object" && error !== null) {
    const tag = (error as { _tag?: unknown })._tag
    if (typeof tag === "string") return tag
    if (error instanceof Error) return error.name
  }
  return typeof error
}

const messageOf = (error: unknown): string => {
  if (typeof error === "object" && error !== null && typeof (error as { message?: unknown }).message === "string") {
    return (error as { message: string }).message
  }
  try {
    return typeof error === "string" ? error : JSON.stringify(error) ?? String(error)
  } catch {
    return String(error)
  }
}

/** Classifies a failed attempt's cause. */
export const classify = (job: Job | undefined, cause: Cause.Cause<unknown>): ExecutionError => {
  const pretty = Cause.pretty(cause)
  const failure = Cause.findErrorOption(cause)
  if (failure._tag === "Some") {
    const error = failure.value
    const tag = tagOf(error)
    const retryable = !permanentTags.has(tag) && (job ? safePredicate(job, error) : true)
    return { tag, message: messageOf(error), retryable, pretty }
  }
  const defect = Cause.findDefect(cause)
  const dieValue = defect._tag === "Success" ? defect.success : undefined
  const missing = missingService(dieValue)
  if (missing !== undefined) {
    const app = job?.app ?? "<app>"
    return {
      tag: "MissingService",
      message: `${job?.id ?? "the handler"} requires the service ${missing}, which nothing provides: add it to apps/${app}/services.ts or config services`,
      retryable: false,
      pretty
    }
  }
  return { tag: "Defect", message: dieValue === undefined ? pretty.split("\n")[0] ?? "defect" : messageOf(dieValue), retryable: true, pretty }
}

/** The service key of Effect's "Service not found" defect, if that is what `u` is. */
const missingService = (u: unknown): string | undefined => {
  if (!(u instanceof Error)) return undefined
  const m = /^Service not found(?:: (.+))?$/.exec(u.message)
  return m ? m[1] ?? "(unnamed)" : undefined
}

const safePredicate = (job: Job, error: unknown): boolean => {
  try {
    return job.retryable(error)
  } catch {
    return true
  }
}

/** The error recorded when a lease expires and a Reaper recovers the execution. */
export const leaseExpired: ExecutionError = {
  tag: "LeaseExpired",
  message: "lease expired",
  retryable: true,
  pretty: "lease expired: the worker stopped heartbeating (crashed, hung or lost the database)"
}

/** The error recorded when an operator cancels a running execution. */
export const cancelled: ExecutionError = {
  tag: "Cancelled",
  message: "cancelled by request",
  retryable: false,
  pretty: "cancelled by request while running"
}
