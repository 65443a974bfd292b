/**
 * Starts `roster dashboard` as a child process of the real CLI in a test's scratch
 * folder and waits for the line that names its URL (`--port 0` picks a free port, so
 * tests never collide). The scratch kills it when the test ends.
 */
import { existsSync } from "node:fs"
import { join } from "node:path"
import { repoRoot, tail, waitFor, type RosterProcess, type Scratch } from "../support/processes.ts"

/** The dashboard test apps (`web/fail`, `web/ok`). */
export const webApps = join(import.meta.dir, "fixtures/apps")

/** Where screenshots go (gitignored). */
export const artifacts = join(repoRoot, "test-artifacts", "dashboard")

/** A running dashboard. */
export interface Dashboard {
  readonly url: string
  readonly process: RosterProcess
}

/** Starts the dashboard with extra args and environment; resolves once it listens. */
export const startDashboard = async (
  s: Scratch,
  options: { readonly args?: ReadonlyArray<string>; readonly env?: Readonly<Record<string, string>> } = {}
): Promise<Dashboard> => {
  // The dashboard refuses a database that does not exist; a fresh scratch has none yet.
  if (!existsSync(s.db)) {
    const migrated = await s.run(["migrate"])
    if (migrated.code !== 0) throw new Error(`migrate failed (${migrated.code}):\n${tail(migrated.stderr)}`)
  }
  const proc = s.spawn(["dashboard", "--port", "0", ...(options.args ?? [])], { env: options.env ?? {} })
  const url = await waitFor("the dashboard to listen", () => {
    if (proc.exited) throw new Error(`dashboard exited early:\n${tail(proc.stderrSoFar())}`)
    return /dashboard on (http:\/\/\S+)/.exec(proc.stdoutSoFar())?.[1]
  }, { timeoutMs: 30_000 })
  return { url, process: proc }
}

/** Enqueues one execution through the CLI and returns its id. */
export const enqueue = async (s: Scratch, job: string, payload: unknown): Promise<string> => {
  const r = await s.run(["enqueue", job, "--payload", JSON.stringify(payload), "--json"])
  if (r.code !== 0) throw new Error(`enqueue failed (${r.code}):\n${tail(r.stderr)}`)
  return (JSON.parse(r.stdout) as { id: string }).id
}

/** Runs a worker until no due work is left. */
export const drain = async (s: Scratch): Promise<void> => {
  const r = await s.run(["worker", "--exit-when-idle"])
  if (r.code !== 0) throw new Error(`worker failed (${r.code}):\n${tail(r.stderr)}`)
}
