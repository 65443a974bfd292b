/**
 * Live workers across processes: each `roster worker` registers itself and shows in
 * `roster workers list --json` with what it serves; a clean stop (SIGTERM) removes it at
 * once; a killed one (SIGKILL) stays, marked stale once its staleness window (the
 * longer of three heartbeats and its lease) has passed. `roster check --live` fails
 * while a scheduled Job has no live worker, and passes once one serves it.
 */
import { describe, expect, test } from "bun:test"
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { parseJsonOutput, repoRoot, type Scratch, useScratch, waitFor } from "../support/processes.ts"

const scratch = useScratch()

/** Heartbeat 200 ms, lease 600 ms: a killed worker is stale 600 ms after its last refresh. */
const fast = { ROSTER_HEARTBEAT_MS: "200", ROSTER_LEASE_MS: "600" }

/** A project in the scratch folder: queues alpha and beta, one Job on each, an hourly Schedule of the beta Job. */
const project = (s: Scratch): Record<string, string> => {
  const apps = join(s.dir, "apps")
  mkdirSync(join(apps, "live"), { recursive: true })
  // The apps' `import "effect"` resolves to this checkout's (the Scratch links its node_modules).
  writeFileSync(join(s.dir, "roster.config.ts"), `export default { queues: { alpha: { concurrency: 2 }, beta: { concurrency: 1 } } }\n`)
  writeFileSync(join(apps, "live", "jobs.ts"), `import { Effect, Schema } from "effect"
import { Job } from "${join(repoRoot, "src/index.ts")}"
export const a = Job.make({ id: "live/a", queue: "alpha", payload: Schema.Struct({ n: Schema.Number }), handler: () => Effect.void })
export const b = Job.make({ id: "live/b", queue: "beta", payload: Schema.Struct({ n: Schema.Number }), handler: () => Effect.void })
`)
  writeFileSync(join(apps, "live", "schedules.ts"), `import { JobSchedule } from "${join(repoRoot, "src/index.ts")}"
import { b } from "./jobs.ts"
export const hourly = JobSchedule.make({ id: "live/hourly", job: b, payload: { n: 1 }, cron: "0 * * * *" })
`)
  return { ROSTER_APPS_DIR: apps, ...fast }
}

interface Listed {
  readonly id: string
  readonly host: string
  readonly pid: number
  readonly queues: ReadonlyArray<string>
  readonly jobs: ReadonlyArray<string>
  readonly startedAt: string
  readonly lastSeenAt: string
  readonly stale: boolean
}

const list = async (s: Scratch, env: Record<string, string>): Promise<Array<Listed>> =>
  parseJsonOutput<Array<Listed>>(await s.run(["workers", "list", "--json"], { env }))

describe("live workers", () => {
  test("two workers are listed with their queues and jobs; SIGTERM removes one, SIGKILL leaves the other stale", async () => {
    const s = scratch()
    const env = project(s)
    expect((await s.run(["migrate"], { env })).code).toBe(0)
    const alpha = s.spawn(["worker", "--queue", "alpha"], { env })
    const beta = s.spawn(["worker", "--queue", "beta"], { env })
    const both = await waitFor("two registered workers", async () => {
      const ws = await list(s, env)
      return ws.length === 2 ? ws : undefined
    }, { timeoutMs: 30_000, intervalMs: 200 })
    const byPid = new Map(both.map((w) => [w.pid, w]))
    expect(byPid.get(alpha.pid)).toMatchObject({ queues: ["alpha"], jobs: ["live/a"], stale: false })
    expect(byPid.get(beta.pid)).toMatchObject({ queues: ["beta"], jobs: ["live/b"], stale: false })
    for (const w of both) {
      expect(w.host.length).toBeGreaterThan(0)
      expect(Date.parse(w.lastSeenAt)).toBeGreaterThanOrEqual(Date.parse(w.startedAt))
    }
    // The list refreshes: last seen moves on with the heartbeat.
    const firstSeen = Date.parse(byPid.get(beta.pid)!.lastSeenAt)
    await waitFor("a refreshed last seen", async () => {
      const w = (await list(s, env)).find((x) => x.pid === beta.pid)
      return w && Date.parse(w.lastSeenAt) > firstSeen ? w : undefined
    }, { timeoutMs: 10_000, intervalMs: 200 })

    alpha.kill("SIGTERM")
    expect((await alpha.wait(30_000)).code).toBe(0)
    const afterStop = await list(s, env)
    expect(afterStop.map((w) => w.pid)).toEqual([beta.pid])

    beta.kill("SIGKILL")
    await beta.wait(10_000)
    const stale = await waitFor("the killed worker marked stale", async () => {
      const ws = await list(s, env)
      return ws.length === 1 && ws[0]!.stale ? ws[0] : undefined
    }, { timeoutMs: 10_000, intervalMs: 200 })
    expect(stale.pid).toBe(beta.pid)
  }, 90_000)

  test("check --live exits 1 while a scheduled Job has no live worker, and 0 once one serves it", async () => {
    const s = scratch()
    const env = project(s)
    expect((await s.run(["migrate"], { env })).code).toBe(0)
    const none = await s.run(["check", "--live"], { env })
    expect(none.code).toBe(1)
    expect(none.stdout).toContain("error: schedule live/hourly: no live worker serves queue beta (job live/b)")

    // A worker on the other queue does not serve it.
    const alpha = s.spawn(["worker", "--queue", "alpha"], { env })
    await waitFor("the alpha worker", async () => ((await list(s, env)).length === 1 ? true : undefined), { timeoutMs: 30_000, intervalMs: 200 })
    expect((await s.run(["check", "--live"], { env })).code).toBe(1)

    const all = s.spawn(["worker"], { env })
    await waitFor("the second worker", async () => ((await list(s, env)).length === 2 ? true : undefined), { timeoutMs: 30_000, intervalMs: 200 })
    const ok = await s.run(["check", "--live", "--json"], { env })
    expect(ok.code, ok.stderr).toBe(0)
    expect(parseJsonOutput<{ ok: boolean; live: { workers: number; unserved: Array<unknown> } }>(ok)).toMatchObject({ ok: true, live: { workers: 2, unserved: [] } })
    alpha.kill("SIGTERM")
    all.kill("SIGTERM")
    await Promise.all([alpha.wait(30_000), all.wait(30_000)])
  }, 90_000)
})
