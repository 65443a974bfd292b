/**
 * The definition language: Job ids, the Registry's checks, discovery on disk and the
 * retry policy's arithmetic.
 */
import { describe, expect, test } from "bun:test"
import { Effect, Schema } from "effect"
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { discoverJobs } from "../../src/jobs/Discovery.ts"
import * as Job from "../../src/jobs/Job.ts"
import { fromConfig } from "../../src/jobs/QueueConfig.ts"
import * as Registry from "../../src/jobs/Registry.ts"
import * as RetryPolicy from "../../src/jobs/RetryPolicy.ts"

const job = (id: string, queue?: string) => Job.make({ id, queue, payload: Schema.Struct({}), handler: () => Effect.void })

describe("Job ids", () => {
  test("ids are <app>/<job>, both kebab-case", () => {
    expect(job("billing/send-invoice").app).toBe("billing")
    for (const bad of ["billing", "Billing/send", "billing/send_invoice", "a/b/c", "/x", "x/"]) {
      expect(() => job(bad)).toThrow(/kebab-case/)
    }
  })
})

describe("Registry", () => {
  test("rejects duplicate ids, naming both files", () => {
    const r = Registry.make({ jobs: [{ job: job("a/x"), file: "apps/a/jobs.ts" }, { job: job("a/x"), file: "apps/a/other.ts" }], queues: fromConfig({}) })
    expect(Registry.isError(r) && r.message).toContain("duplicate Job id \"a/x\" (apps/a/other.ts), first defined in apps/a/jobs.ts")
  })

  test("rejects a Job on an undeclared queue", () => {
    const r = Registry.make({ jobs: [job("a/x", "emails")], queues: fromConfig({}) })
    expect(Registry.isError(r) && r.message).toContain("queue \"emails\", which is not declared")
    const ok = Registry.make({ jobs: [job("a/x", "emails")], queues: fromConfig({ emails: { concurrency: 2 } }) })
    expect(Registry.isError(ok)).toBe(false)
  })

  test("rejects bad queue names and concurrency", () => {
    expect(Registry.isError(Registry.make({ jobs: [], queues: fromConfig({ Emails: {} }) }))).toBe(true)
    expect(Registry.isError(Registry.make({ jobs: [], queues: fromConfig({ emails: { concurrency: 0 } }) }))).toBe(true)
  })
})

describe("discovery", () => {
  const withApps = async (files: Record<string, string>, body: (dir: string) => Promise<void>) => {
    // Inside the repo, so the modules resolve `effect` from its node_modules like a real app.
    mkdirSync(join(import.meta.dir, "../.tmp"), { recursive: true })
    const dir = mkdtempSync(join(import.meta.dir, "../.tmp/apps-"))
    try {
      for (const [path, text] of Object.entries(files)) {
        mkdirSync(join(dir, path, ".."), { recursive: true })
        writeFileSync(join(dir, path), text)
      }
      await body(dir)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }
  const jobModule = (id: string) => `
    import { Effect, Schema } from "effect"
    import * as Job from ${JSON.stringify(join(import.meta.dir, "../../src/jobs/Job.ts"))}
    export const j = Job.make({ id: ${JSON.stringify(id)}, payload: Schema.Struct({}), handler: () => Effect.void })
  `

  test("finds every app's Jobs in name order", async () => {
    await withApps({ "zeta/jobs.ts": jobModule("zeta/one"), "alpha/jobs.ts": jobModule("alpha/one"), "empty/README.md": "" }, async (dir) => {
      const found = await Effect.runPromise(discoverJobs(dir))
      expect(found.map((f) => f.job.id)).toEqual(["alpha/one", "zeta/one"])
    })
  })

  test("fails, naming the file, on a jobs module that exports no Job", async () => {
    await withApps({ "a/jobs.ts": "export const nothing = 1" }, async (dir) => {
      const error = await Effect.runPromise(Effect.flip(discoverJobs(dir)))
      expect(error.message).toContain(join(dir, "a/jobs.ts"))
      expect(error.message).toContain("exports no Job")
    })
  })

  test("fails on a module that does not load and on a Job outside its app folder", async () => {
    await withApps({ "a/jobs.ts": "throw new Error('syntax-ish')" }, async (dir) => {
      expect((await Effect.runPromise(Effect.flip(discoverJobs(dir)))).message).toContain("cannot load")
    })
    await withApps({ "a/jobs.ts": jobModule("b/one") }, async (dir) => {
      expect((await Effect.runPromise(Effect.flip(discoverJobs(dir)))).message).toContain("must belong to app \"a\"")
    })
  })

  test("a missing apps folder is an error", async () => {
    const error = await Effect.runPromise(Effect.flip(discoverJobs("/nonexistent/apps")))
    expect(error.message).toContain("does not exist")
  })
})

describe("RetryPolicy", () => {
  test("defaults: 3 attempts, 10 s doubling to a 5 minute cap, full jitter", () => {
    const p = RetryPolicy.defaultPolicy
    expect(p.snapshot).toMatchObject({ attempts: 3, initialMs: 10_000, maxMs: 300_000, factor: 2, jitter: "full" })
    expect([1, 2, 3, 6, 10].map((a) => RetryPolicy.ceilingMs(p.snapshot, a))).toEqual([10_000, 20_000, 40_000, 300_000, 300_000])
  })

  test("full jitter is uniform in [0, ceiling]; no jitter is the ceiling", () => {
    const p = RetryPolicy.exponential({ initial: 1_000 })
    expect(RetryPolicy.delayMs(p, 1, null, 0)).toBe(0)
    expect(RetryPolicy.delayMs(p, 1, null, 0.999999)).toBe(1_000)
    expect(RetryPolicy.delayMs(RetryPolicy.exponential({ initial: 1_000, jitter: false }), 2, null, 0.5)).toBe(2_000)
  })

  test("custom delays see the attempt and the error", () => {
    const p = RetryPolicy.custom({ attempts: 5, delay: (attempt, error) => ((error as { slow?: boolean }).slow ? attempt * 1000 : 5) })
    expect(RetryPolicy.delayMs(p, 3, { slow: true }, 0.5)).toBe(3_000)
    expect(RetryPolicy.delayMs(p, 3, {}, 0.5)).toBe(5)
    expect(p.snapshot.attempts).toBe(5)
  })

  test("attempts must be a positive integer", () => {
    expect(() => RetryPolicy.exponential({ attempts: 0 })).toThrow(RangeError)
  })
})
