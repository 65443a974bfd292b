/**
 * What every row of the bad-input table (docs/operations.md) checks: the refusal is a
 * clear line on stderr and an exit code, never a stack trace; and work acknowledged
 * before the bad input — executions whose enqueue exited 0 — is still there once the
 * condition is removed, and runs.
 */
import { expect } from "bun:test"
import { ndjson, parseJsonOutput, type ProcessResult, type Scratch, tail } from "./processes.ts"

/**
 * Exit 1, nothing on stdout, no stack trace, and a last stderr line `roster: …` that
 * matches `mentions`. A worker may log before it (logfmt lines); any other command
 * prints that one line only.
 */
export const expectRefused = (r: ProcessResult, mentions: RegExp, options: { readonly logs?: boolean } = {}) => {
  expect(r.code, r.stderr).toBe(1)
  expect(r.stdout).toBe("")
  expect(r.stderr).not.toMatch(/^\s+at /m)
  const lines = r.stderr.trimEnd().split("\n")
  const last = lines[lines.length - 1]!
  expect(last).toStartWith("roster: ")
  expect(last).toMatch(mentions)
  if (options.logs) for (const line of lines.slice(0, -1)) expect(line).toStartWith("timestamp=")
  else expect(lines, r.stderr).toHaveLength(1)
}

/** What {@link acknowledge} enqueues: `demo/noop` with `{ n }` unless told otherwise. */
export interface AcknowledgeOptions {
  readonly job?: string
  readonly payload?: (n: number) => unknown
  readonly env?: Record<string, string>
}

/** Enqueues `count` executions in one bulk that exits 0; returns their ids. */
export const acknowledge = async (s: Scratch, count: number, options: AcknowledgeOptions = {}): Promise<Array<string>> => {
  const { job = "demo/noop", payload = (n: number) => ({ n }), env = {} } = options
  const r = await s.run(["enqueue", job, "--ndjson", "-", "--json"], { stdin: ndjson(Array.from({ length: count }, (_, n) => payload(n))), env })
  expect(r.code, r.stderr).toBe(0)
  expect(parseJsonOutput(r)).toEqual({ inserted: count, existing: 0 })
  return idsOf(s, "queued", env)
}

/** Ids of the executions in `state`, sorted, as `executions list --json` reports them. */
export const idsOf = async (s: Scratch, state: string, env: Record<string, string> = {}): Promise<Array<string>> => {
  const r = await s.run(["executions", "list", "--state", state, "--limit", "10000", "--json"], { env })
  expect(r.code, r.stderr).toBe(0)
  return parseJsonOutput<Array<{ id: string }>>(r).map((e) => e.id).sort()
}

/** Runs a worker until idle and expects exactly `ids` to have succeeded: every acknowledged execution ran. */
export const expectAllRan = async (s: Scratch, ids: ReadonlyArray<string>, env: Record<string, string> = {}) => {
  const worker = await s.run(["worker", "--exit-when-idle"], { env })
  expect(worker.code, tail(worker.stderr)).toBe(0)
  expect(await idsOf(s, "succeeded", env)).toEqual([...ids].sort())
}

/** Expects a failure reported as exactly one `roster: ...` line on stderr naming every part, nothing on stdout. */
export const expectOneLineFailure = (r: ProcessResult, code: number, ...parts: Array<string>) => {
  expect(r.code, r.stderr).toBe(code)
  expect(r.stdout).toBe("")
  const lines = r.stderr.trimEnd().split("\n")
  expect(lines, r.stderr).toHaveLength(1)
  expect(lines[0]!.startsWith("roster: ")).toBe(true)
  for (const part of parts) expect(lines[0]).toContain(part)
}
