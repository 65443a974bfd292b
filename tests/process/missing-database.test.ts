/**
 * A read pointed at a database file that does not exist (issue 13): `executions
 * list|show|logs|count`, `schedules list|show|history`, changes to existing work
 * (`executions cancel|retry`, `schedules pause|resume|trigger|update|delete`) and the
 * dashboard say there is none, exit 1 and create nothing — no file, no folder — so a
 * typo in ROSTER_DB is not answered with an empty database. Commands that write new
 * work (enqueue, migrate, worker, schedules create) still create it.
 */
import { describe, expect, test } from "bun:test"
import { existsSync } from "node:fs"
import { join } from "node:path"
import { expectRefused } from "../support/badInput.ts"
import { demoApps, parseJsonOutput, useScratch } from "../support/processes.ts"

/** Every command that must not create the database, with the arguments it needs. */
const refusing: ReadonlyArray<ReadonlyArray<string>> = [
  ["executions", "list", "--json"],
  ["executions", "show", "0190c6c0-0000-7000-8000-000000000000", "--json"],
  ["executions", "logs", "0190c6c0-0000-7000-8000-000000000000"],
  ["executions", "count", "--json"],
  ["executions", "cancel", "0190c6c0-0000-7000-8000-000000000000"],
  ["executions", "retry", "--state", "failed"],
  ["schedules", "list", "--json"],
  ["schedules", "show", "demo/every-minute", "--json"],
  ["schedules", "history", "demo/every-minute"],
  ["schedules", "pause", "demo/every-minute"],
  ["schedules", "resume", "demo/every-minute"],
  ["schedules", "trigger", "demo/every-minute"],
  ["schedules", "update", "demo/studio", "--cron", "* * * * *"],
  ["schedules", "delete", "demo/studio"],
  ["dashboard", "--port", "0"]
]

describe("a database file that does not exist", () => {
  const scratch = useScratch({ apps: demoApps })

  test("reads, changes to existing work and the dashboard: one line naming the path, exit 1, nothing created", async () => {
    const s = scratch()
    const db = join(s.dir, "typo", "roster.db")
    const line = new RegExp(`^roster: no database at ${db.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")} \\(nothing has been enqueued there yet; check ROSTER_DB`)
    for (const args of refusing) {
      expectRefused(await s.run(args, { env: { ROSTER_DB: db }, timeoutMs: 30_000 }), line)
      expect(existsSync(join(s.dir, "typo")), `${args.join(" ")} created the folder`).toBe(false)
    }
    // A relative path is named as the file it would have been, from the working directory.
    expectRefused(await s.run(["executions", "count"], { env: { ROSTER_DB: "nope.db" } }), new RegExp(`no database at ${s.dir.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}/nope\\.db `))
    expect(existsSync(join(s.dir, "nope.db"))).toBe(false)
  }, 120_000)

  test("enqueue, migrate and schedules create still create it; then the reads answer", async () => {
    const s = scratch()
    const first = await s.run(["enqueue", "demo/noop", "--payload", '{"n":1}', "--json"])
    expect(first.code, first.stderr).toBe(0)
    expect(existsSync(s.db)).toBe(true)
    const counted = await s.run(["executions", "count", "--json"])
    expect(counted.code, counted.stderr).toBe(0)
    expect(parseJsonOutput(counted)).toMatchObject({ queued: 1 })

    for (const [name, args] of [["migrated.db", ["migrate"]], ["studio.db", ["schedules", "create", "--id", "demo/studio", "--job", "demo/noop", "--cron", "0 * * * *", "--payload", '{"n":1}']]] as const) {
      const db = join(s.dir, "fresh", name)
      const r = await s.run(args, { env: { ROSTER_DB: db } })
      expect(r.code, r.stderr).toBe(0)
      expect(existsSync(db)).toBe(true)
      const listed = await s.run(["schedules", "list", "--json"], { env: { ROSTER_DB: db } })
      expect(listed.code, listed.stderr).toBe(0)
    }
  }, 60_000)
})
