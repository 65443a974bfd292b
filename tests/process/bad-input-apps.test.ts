/**
 * Bad input in the apps (issue 7): a Schedule with an invalid cron or an unknown
 * timezone, in schedules.ts or given to `roster schedules create`. Work acknowledged
 * before it — executions enqueued, a studio Schedule created — is kept: `check`,
 * `scheduler`, `worker` and `enqueue` on the broken apps each refuse to start with one
 * line naming the file, the Schedule and the bad value, and touch nothing; a refused
 * `schedules create` writes nothing; with the file fixed, every acknowledged execution
 * runs. (`roster check` on every other kind of broken schedules.ts is in
 * schedules-cli.test.ts.)
 */
import { afterAll, describe, expect, test } from "bun:test"
import { mkdirSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { acknowledge, expectAllRan, expectRefused } from "../support/badInput.ts"
import { parseJsonOutput, repoRoot, useScratch } from "../support/processes.ts"

/** Apps live under tests/.tmp so that their imports resolve to this repository's effect. */
const root = join(repoRoot, "tests/.tmp", `bad-input-apps-${process.pid}`)
afterAll(() => rmSync(root, { recursive: true, force: true }))

/** Writes apps/app/{jobs,schedules}.ts with one Schedule of `app/beat`; returns the apps folder and the schedules file. */
const writeApps = (name: string, schedule: string): { apps: string; file: string } => {
  const apps = join(root, name)
  const index = JSON.stringify(join(repoRoot, "src/index.ts"))
  mkdirSync(join(apps, "app"), { recursive: true })
  writeFileSync(join(apps, "app", "jobs.ts"), `import { Effect, Schema } from "effect"
import { Job } from ${index}
export const beat = Job.make({ id: "app/beat", payload: Schema.Struct({ n: Schema.Number }), handler: () => Effect.void })
`)
  const file = join(apps, "app", "schedules.ts")
  writeFileSync(file, `import { JobSchedule } from ${index}
import { beat } from "./jobs.ts"
export const nightly = JobSchedule.make({ id: "app/nightly", job: beat, payload: { n: 0 }, ${schedule} })
`)
  return { apps, file }
}

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")

describe("a schedule with an invalid cron or timezone", () => {
  const good = writeApps("good", `cron: "0 3 * * *", timezone: "Europe/Berlin"`)
  const scratch = useScratch({ apps: good.apps })

  test("in schedules.ts: check, scheduler, worker and enqueue refuse to start naming the file and the schedule; from the CLI: refused, nothing written; acknowledged work is kept and runs", async () => {
    const s = scratch()
    const ids = await acknowledge(s, 3, { job: "app/beat" })
    const studio = await s.run(["schedules", "create", "--id", "app/hourly", "--job", "app/beat", "--cron", "0 * * * *", "--payload", '{"n":1}'])
    expect(studio.code, studio.stderr).toBe(0)

    const broken: ReadonlyArray<readonly [string, string]> = [
      [`cron: "61 * * * *"`, `invalid cron "61 * * * *"`],
      [`cron: "0 9 * * *", timezone: "Mars/Olympus"`, "Mars/Olympus"]
    ]
    for (const [i, [schedule, mentions]] of broken.entries()) {
      const { apps, file } = writeApps(`broken-${i}`, schedule)
      const naming = new RegExp(`${escape(file)}: Schedule "app/nightly": .*${escape(mentions)}`)
      for (const args of [["check"], ["scheduler"], ["worker"], ["enqueue", "app/beat", "--payload", '{"n":9}']]) {
        expectRefused(await s.run(args, { env: { ROSTER_APPS_DIR: apps }, timeoutMs: 30_000 }), naming)
      }
    }

    const create = (...args: Array<string>) => s.run(["schedules", "create", "--id", "app/bad", "--job", "app/beat", ...args])
    expectRefused(await create("--cron", "61 * * * *"), /"app\/bad".*61 \* \* \* \*/)
    expectRefused(await create("--cron", "0 9 * * *", "--timezone", "Mars/Olympus"), /"app\/bad".*Mars\/Olympus/)

    // Only the studio Schedule exists (no scheduler ever started on the good apps), unchanged.
    const schedules = parseJsonOutput<Array<{ id: string; cron: string; paused: boolean }>>(await s.run(["schedules", "list", "--json"]))
    expect(schedules.map((x) => [x.id, x.cron, x.paused])).toEqual([["app/hourly", "0 * * * *", false]])
    await expectAllRan(s, ids)
  }, 90_000)
})
