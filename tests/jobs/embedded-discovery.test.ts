/**
 * Discovery of the apps a `roster build` binary carries: modules handed over already
 * imported go through the same validation as modules imported from disk, and replace
 * the apps folder entirely.
 */
import { describe, expect, test } from "bun:test"
import { Effect, Schema } from "effect"
import { discoverJobs, discoverSchedules, type EmbeddedApps } from "../../src/jobs/Discovery.ts"
import * as Job from "../../src/jobs/Job.ts"
import * as JobSchedule from "../../src/jobs/JobSchedule.ts"
import * as RegistryBuilder from "../../src/runtime/RegistryLoader.ts"

const job = (id: string) => Job.make({ id, payload: Schema.Struct({}), handler: () => Effect.void })

const alphaOne = job("alpha/one")
const zetaOne = job("zeta/one")
const zetaTick = JobSchedule.make({ id: "zeta/tick", job: zetaOne, payload: {}, every: "1 minute" })

const apps: EmbeddedApps = {
  appsDir: "srv/apps",
  apps: [
    { app: "zeta", modules: { "jobs.ts": { zetaOne, unrelated: 1 }, "schedules.ts": { zetaTick } } },
    { app: "alpha", modules: { "jobs.ts": { alphaOne } } }
  ]
}

describe("discovery of embedded apps", () => {
  test("finds every app's Jobs and Schedules in name order, named by their build-time files", async () => {
    const jobs = await Effect.runPromise(discoverJobs(apps))
    expect(jobs.map((j) => [j.job.id, j.file])).toEqual([["alpha/one", "srv/apps/alpha/jobs.ts"], ["zeta/one", "srv/apps/zeta/jobs.ts"]])
    const schedules = await Effect.runPromise(discoverSchedules(apps))
    expect(schedules.map((s) => [s.schedule.id, s.file])).toEqual([["zeta/tick", "srv/apps/zeta/schedules.ts"]])
  })

  test("fails as on disk on a module that exports no Job, and on a Job outside its app", async () => {
    const empty = await Effect.runPromise(Effect.flip(discoverJobs({ appsDir: "apps", apps: [{ app: "a", modules: { "jobs.ts": { nothing: 1 } } }] })))
    expect(empty.message).toBe("apps/a/jobs.ts exports no Job (export the values returned by Job.make)")
    const foreign = await Effect.runPromise(Effect.flip(discoverJobs({ appsDir: "apps", apps: [{ app: "a", modules: { "jobs.ts": { zetaOne } } }] })))
    expect(foreign.message).toBe('Job "zeta/one" in apps/a/jobs.ts must belong to app "a"')
  })

  test("replace the apps folder when the Registry is built", async () => {
    const registry = await Effect.runPromise(RegistryBuilder.build({ appsDir: "/nonexistent/apps" }, apps))
    expect([...registry.jobs.keys()]).toEqual(expect.arrayContaining(["alpha/one", "zeta/one"]))
    expect(registry.schedules.map((s) => s.schedule.id)).toEqual(["zeta/tick"])
  })
})
