/**
 * What a waiting execution waits for (DESIGN §7, orchestration). A handler parks its
 * execution with `ctx.sleep`, `ctx.awaitChildren` or `ctx.waitForSignal`: the execution
 * leaves the worker (no slot, no lease, no attempt charged), is stored `waiting` with
 * this value, and is due again — claimable like any queued execution — at its `run_at`:
 * the end of the sleep or of the signal's timeout, or at once when the last awaited child
 * ends or the signal arrives (the store moves `run_at` to that moment).
 */
import { maxTime } from "./TimeRange.ts"

/** One wait, as stored (JSON) with the execution. */
export type Wait =
  | { readonly kind: "sleep"; readonly step: string; readonly until: number }
  | { readonly kind: "children"; readonly step: string; readonly ids: ReadonlyArray<string> }
  | { readonly kind: "signal"; readonly step: string; readonly signal: string; readonly until: number | null }

/** When a wait is due by the clock alone (children and a signal without timeout: never, until woken). */
export const dueAtOf = (wait: Wait): number =>
  wait.kind === "sleep" ? wait.until : wait.kind === "signal" && wait.until !== null ? wait.until : maxTime

/** A stored wait, or null (not JSON, or not a wait: shown as nothing rather than failing a read). */
export const parseWait = (text: string | null | undefined): Wait | null => {
  if (text === null || text === undefined) return null
  try {
    const w = JSON.parse(text) as Wait
    return typeof w === "object" && w !== null && (w.kind === "sleep" || w.kind === "children" || w.kind === "signal") ? w : null
  } catch {
    return null
  }
}

/** A wait as one line: "sleep until 2026-12-03T10:00:00.000Z", "3 children", "signal "confirm" until …". */
export const waitText = (wait: Wait): string => {
  const at = (t: number) => new Date(t).toISOString()
  switch (wait.kind) {
    case "sleep":
      return `sleep "${wait.step}" until ${at(wait.until)}`
    case "children":
      return `${wait.ids.length} ${wait.ids.length === 1 ? "child" : "children"} to end (step "${wait.step}")`
    case "signal":
      return `signal "${wait.signal}"${wait.until === null ? "" : ` until ${at(wait.until)}`}`
  }
}

/** One signal sent to an execution. */
export interface Signal {
  readonly executionId: string
  readonly seq: number
  readonly name: string
  /** JSON text of the payload as sent. */
  readonly payload: string
  readonly sentAt: number
  /** When a wait took it; null while kept for a wait to come. */
  readonly consumedAt: number | null
}

/** What a signal send did. */
export type SignalSendResult =
  | { readonly _tag: "Kept" } // stored for a wait to come (or one that has not taken it yet)
  | { readonly _tag: "Woke" } // the execution was waiting for it: due now
  | { readonly _tag: "Ended"; readonly state: string } // refused: the execution has ended
  | { readonly _tag: "Missing" } // refused: no such execution

/** How a child ended, as `ctx.awaitChildren` returns it: its decoded result, or its error. */
export type ChildOutcome =
  | { readonly id: string; readonly job: string; readonly state: "succeeded"; readonly result: unknown; readonly error: null }
  | { readonly id: string; readonly job: string; readonly state: "failed" | "cancelled"; readonly result: null; readonly error: { readonly tag: string; readonly message: string } | null }
