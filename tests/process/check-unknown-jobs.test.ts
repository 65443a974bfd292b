/**
 * `roster check` surfaces queued executions of Jobs no app defines (DESIGN §2, "Which
 * worker claims what"): enqueued by one version of the apps, then checked against a
 * version that dropped the Job. It reads an existing database only — never creates one.
 */
import { describe, expect, test } from "bun:test"
import { existsSync, mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { parseJsonOutput, repoRoot, useScratch } from "../support/processes.ts"

const scratch = useScratch()

/** An apps folder with one app defining only `other/only`. */
const appsWithoutProbe = (dir: string): string => {
  const apps = join(dir, "apps")
  mkdirSync(join(apps, "other"), { recursive: true })
  writeFileSync(join(apps, "other", "jobs.ts"), `import { Effect, Schema } from "effect"
import { Job } from "${join(repoRoot, "src/index.ts")}"
export const only = Job.make({ id: "other/only", payload: Schema.Struct({}), handler: () => Effect.void })
`)
  return apps
}

describe("roster check and the database", () => {
  test("lists queued executions of Jobs the apps no longer define, and does not create a missing database", async () => {
    const s = scratch()
    const before = parseJsonOutput<{ unknownJobs: unknown; database: string }>(await s.run(["check", "--json"]))
    expect(before.unknownJobs).toBeNull()
    expect(before.database).toContain("no database")
    expect(existsSync(s.db)).toBe(false)

    for (const n of [1, 2, 3]) {
      const r = await s.run(["enqueue", "probe/record", "--payload", JSON.stringify({ n })])
      expect(r.code, r.stderr).toBe(0)
    }
    const apps = appsWithoutProbe(s.dir)
    const json = parseJsonOutput<{ ok: boolean; unknownJobs: Array<{ job: string; count: number }> }>(
      await s.run(["check", "--json"], { env: { ROSTER_APPS_DIR: apps } })
    )
    expect(json.unknownJobs).toEqual([{ job: "probe/record", count: 3 }])
    const text = await s.run(["check"], { env: { ROSTER_APPS_DIR: apps } })
    expect(text.code).toBe(0)
    expect(text.stdout).toContain("warning: 3 queued execution(s) of probe/record, which no app defines")
    // With the apps that define it, nothing is reported.
    expect(parseJsonOutput<{ unknownJobs: Array<unknown> }>(await s.run(["check", "--json"])).unknownJobs).toEqual([])
  })
})
