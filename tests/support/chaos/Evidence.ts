/**
 * The chaos test's evidence of handler runs, kept outside the Roster store so that no
 * bug in the store can hide a run: each worker process appends one line per event to
 * its own file `<dir>/<pid>.log` with a synchronous `write(2)` the moment it happens.
 * The kernel keeps what was written when the process dies, even by SIGKILL, so after
 * the run the files say every time a handler started, finished, or ran a step.
 *
 * Line format (space-separated): `<kind> <execution id> <attempt> <pid> <epoch ms> [step]`
 * with kind `start`, `end` or `step`. A line cut short by a kill mid-write has no
 * newline and is ignored.
 */
import { openSync, readdirSync, readFileSync, writeSync } from "node:fs"
import { join } from "node:path"

/** The environment variable naming the evidence folder (set by the chaos driver for workers). */
export const evidenceDirVariable = "CHAOS_EVIDENCE_DIR"

/** What a line records. */
export type EvidenceKind = "start" | "end" | "step"

/** One recorded event of a handler. */
export interface HandlerEvent {
  readonly kind: EvidenceKind
  readonly executionId: string
  readonly attempt: number
  readonly pid: number
  readonly at: number
  /** The step's name, for `step` events. */
  readonly step: string | undefined
}

let fd: number | undefined

/** Appends one event of the current process's handler; called by the chaos fixture jobs. */
export const recordEvent = (kind: EvidenceKind, executionId: string, attempt: number, step?: string): void => {
  if (fd === undefined) {
    const dir = process.env[evidenceDirVariable]
    if (!dir) throw new Error(`chaos jobs need ${evidenceDirVariable} to record their runs`)
    fd = openSync(join(dir, `${process.pid}.log`), "a")
  }
  writeSync(fd, `${kind} ${executionId} ${attempt} ${process.pid} ${Date.now()}${step === undefined ? "" : ` ${step}`}\n`)
}

const parseLine = (line: string): HandlerEvent | undefined => {
  const [kind, executionId, attempt, pid, at, step] = line.split(" ")
  if ((kind !== "start" && kind !== "end" && kind !== "step") || !executionId || at === undefined) return undefined
  return { kind, executionId, attempt: Number(attempt), pid: Number(pid), at: Number(at), step }
}

/** Every complete event recorded in `dir`, grouped by execution id, each group in time order. */
export const readEvidence = (dir: string): Map<string, Array<HandlerEvent>> => {
  const byExecution = new Map<string, Array<HandlerEvent>>()
  for (const file of readdirSync(dir).filter((f) => f.endsWith(".log"))) {
    const text = readFileSync(join(dir, file), "utf8")
    const complete = text.slice(0, text.lastIndexOf("\n") + 1)
    for (const line of complete.split("\n")) {
      const event = line === "" ? undefined : parseLine(line)
      if (event === undefined) continue
      const list = byExecution.get(event.executionId)
      if (list === undefined) byExecution.set(event.executionId, [event])
      else list.push(event)
    }
  }
  for (const list of byExecution.values()) list.sort((a, b) => a.at - b.at || a.attempt - b.attempt)
  return byExecution
}
