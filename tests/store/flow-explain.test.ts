/**
 * Why due work has not started (store/FlowExplain.ts): one cause per execution in the
 * documented order (paused > queue rate > global concurrency > Job rate > key
 * concurrency > key rate), the held-back counts per cause, and the one-line reasons of
 * `executions show`. The pure functions first, then the store read they count from
 * (queuesHeldBack) on every driver, with real claims making the limits bite.
 */
import { describe, expect, test } from "bun:test"
import { heldBackOf, holdCauseOf, limitsOfQueue, periodText, rateLimitView, whyNotStarted } from "../../src/store/FlowExplain.ts"
import { type ClaimLimits, flowStateOf, jobScope, keyScope, queueScope } from "../../src/store/FlowRules.ts"
import type { LiveWorker, QueueFlow } from "../../src/store/Store.ts"
import { drivers, freshStoreEach, type StoreFixture, withStore } from "./drivers.ts"
import { row } from "./rows.ts"

const none: ClaimLimits = { globalConcurrency: null, rateLimit: null, jobs: {} }
const flow = (over: Partial<QueueFlow> = {}): QueueFlow => ({ paused: false, running: [], starts: [], ...over })
const now = 10_000

const worker = (over: Partial<LiveWorker> = {}): LiveWorker => ({
  id: "w1", host: "h", pid: 1, queues: ["default"], jobs: ["app/job"], version: "0", staleAfterMs: 30_000,
  startedAt: 0, lastSeenAt: now, stale: false, ...over
})

const queued = (over: Partial<{ state: string; runAt: number; job: string; queue: string; concurrencyKey: string | null; rateKey: string | null }> = {}) => ({
  state: "queued", runAt: now, job: "app/job", queue: "default", concurrencyKey: null, rateKey: null, ...over
})

describe("periods and rate limits as shown", () => {
  test("a period is written in the largest whole unit", () => {
    expect([60_000, 90_000, 3_600_000, 86_400_000, 1_000, 1_500, 1, 7 * 86_400_000].map(periodText))
      .toEqual(["1m", "90s", "1h", "1d", "1s", "1500ms", "1ms", "7d"])
  })

  test("a rate limit view keeps limit and periodMs and adds the period text", () => {
    expect(rateLimitView({ limit: 100, periodMs: 60_000 })).toEqual({ limit: 100, periodMs: 60_000, period: "1m" })
    expect(rateLimitView(null)).toBeNull()
    expect(rateLimitView(undefined)).toBeNull()
  })
})

describe("one cause per execution, in order", () => {
  const everything: ClaimLimits = {
    globalConcurrency: 1,
    rateLimit: { limit: 1, periodMs: 60_000 },
    jobs: { "app/job": { concurrency: 1, rateLimit: { limit: 1, periodMs: 60_000, perKey: false } } }
  }
  const full = flowStateOf(everything, [{ job: "app/job", key: "k", count: 1 }], [{ scope: queueScope, expiresAt: now + 1, n: 1 }, { scope: jobScope("app/job"), expiresAt: now + 1, n: 1 }], now)
  const row = { job: "app/job", keyAtLimit: true, rateKeyAtLimit: true }

  test("paused wins over every limit", () => {
    expect(holdCauseOf(true, everything, full, row)).toBe("paused")
  })

  test("then the queue's rate limit, then global concurrency, then the Job's rate limit, then the key's concurrency, then the key's rate", () => {
    expect(holdCauseOf(false, everything, full, row)).toBe("queueRate")
    const noQueueRate = { ...everything, rateLimit: null }
    expect(holdCauseOf(false, noQueueRate, flowStateOf(noQueueRate, [{ job: "app/job", key: "k", count: 1 }], [{ scope: jobScope("app/job"), expiresAt: now + 1, n: 1 }], now), row)).toBe("globalConcurrency")
    const jobRate = { ...noQueueRate, globalConcurrency: null }
    expect(holdCauseOf(false, jobRate, flowStateOf(jobRate, [], [{ scope: jobScope("app/job"), expiresAt: now + 1, n: 1 }], now), row)).toBe("jobRate")
    expect(holdCauseOf(false, jobRate, flowStateOf(jobRate, [], [], now), row)).toBe("keyConcurrency")
    expect(holdCauseOf(false, jobRate, flowStateOf(jobRate, [], [], now), { ...row, keyAtLimit: false })).toBe("keyRate")
    expect(holdCauseOf(false, jobRate, flowStateOf(jobRate, [], [], now), { job: "app/job", keyAtLimit: false, rateKeyAtLimit: false })).toBeNull()
  })

  test("a queue without limits holds nothing back but its pause", () => {
    const state = flowStateOf(none, [{ job: "app/job", key: null, count: 50 }], [], now)
    expect(holdCauseOf(false, none, state, { job: "app/job", keyAtLimit: false, rateKeyAtLimit: false })).toBeNull()
    expect(holdCauseOf(true, none, state, { job: "app/job", keyAtLimit: false, rateKeyAtLimit: false })).toBe("paused")
  })
})

describe("held-back counts", () => {
  const limits: ClaimLimits = { globalConcurrency: 3, rateLimit: null, jobs: { "app/keyed": { concurrency: 1, rateLimit: { limit: 2, periodMs: 1_000, perKey: true } } } }
  const due = [
    { job: "app/keyed", keyAtLimit: true, rateKeyAtLimit: false, count: 2 },
    { job: "app/keyed", keyAtLimit: false, rateKeyAtLimit: true, count: 3 },
    { job: "app/keyed", keyAtLimit: true, rateKeyAtLimit: true, count: 1 },
    { job: "app/plain", keyAtLimit: false, rateKeyAtLimit: false, count: 4 }
  ]

  test("each due execution counts under its first cause; free ones count only as due", () => {
    const read = { flow: flow({ running: [{ job: "app/keyed", key: "a", count: 1 }] }), due }
    expect(heldBackOf(limits, read, now)).toEqual({ due: 10, heldBack: { paused: 0, globalConcurrency: 0, keyConcurrency: 3, rateLimit: 3 } })
  })

  test("at the global limit every due execution counts under global concurrency; paused, under paused", () => {
    const atLimit = { flow: flow({ running: [{ job: "app/plain", key: null, count: 3 }] }), due }
    expect(heldBackOf(limits, atLimit, now).heldBack).toEqual({ paused: 0, globalConcurrency: 10, keyConcurrency: 0, rateLimit: 0 })
    expect(heldBackOf(limits, { ...atLimit, flow: { ...atLimit.flow, paused: true } }, now).heldBack).toEqual({ paused: 10, globalConcurrency: 0, keyConcurrency: 0, rateLimit: 0 })
  })

  test("nothing due: all zero", () => {
    expect(heldBackOf(limits, { flow: flow(), due: [] }, now)).toEqual({ due: 0, heldBack: { paused: 0, globalConcurrency: 0, keyConcurrency: 0, rateLimit: 0 } })
  })
})

describe("whyNotStarted", () => {
  const workers = [worker()]

  test("not queued, or not due yet: null", () => {
    expect(whyNotStarted(queued({ state: "running" }), none, flow(), now, workers)).toBeNull()
    expect(whyNotStarted(queued({ state: "succeeded" }), none, flow(), now, workers)).toBeNull()
    expect(whyNotStarted(queued({ runAt: now + 1 }), none, flow({ paused: true }), now, workers)).toBeNull()
  })

  test("queue paused", () => {
    expect(whyNotStarted(queued(), { ...none, globalConcurrency: 1 }, flow({ paused: true, running: [{ job: "app/job", key: null, count: 1 }] }), now, workers)).toBe("queue paused")
  })

  test("the queue's rate limit, with when the next start is allowed", () => {
    const limits = { ...none, rateLimit: { limit: 2, periodMs: 60_000 } }
    const starts = [{ scope: queueScope, expiresAt: now + 5_000, n: 1 }, { scope: queueScope, expiresAt: now + 9_000, n: 1 }]
    expect(whyNotStarted(queued(), limits, flow({ starts }), now, workers))
      .toBe(`rate limit 2 per 1m reached; next start allowed at ${new Date(now + 5_000).toISOString()}`)
  })

  test("global limit, with how many run", () => {
    const limits = { ...none, globalConcurrency: 4 }
    expect(whyNotStarted(queued(), limits, flow({ running: [{ job: "app/job", key: null, count: 3 }, { job: "app/other", key: null, count: 1 }] }), now, workers))
      .toBe("global limit 4 reached (4 running)")
  })

  test("the Job's rate limit, as a whole and per key", () => {
    const whole: ClaimLimits = { ...none, jobs: { "app/job": { concurrency: null, rateLimit: { limit: 1, periodMs: 3_600_000, perKey: false } } } }
    expect(whyNotStarted(queued(), whole, flow({ starts: [{ scope: jobScope("app/job"), expiresAt: now + 100, n: 1 }] }), now, workers))
      .toBe(`Job rate limit 1 per 1h reached; next start allowed at ${new Date(now + 100).toISOString()}`)
    const perKey: ClaimLimits = { ...none, jobs: { "app/job": { concurrency: null, rateLimit: { limit: 1, periodMs: 1_000, perKey: true } } } }
    const starts = [{ scope: keyScope("app/job", "acme"), expiresAt: now + 200, n: 1 }]
    expect(whyNotStarted(queued({ rateKey: "acme" }), perKey, flow({ starts }), now, workers))
      .toBe(`Job rate limit 1 per 1s for key "acme" reached; next start allowed at ${new Date(now + 200).toISOString()}`)
    // Another key is not held back.
    expect(whyNotStarted(queued({ rateKey: "other" }), perKey, flow({ starts }), now, workers)).toBe("waiting for a free worker slot")
  })

  test("a key at its concurrency limit", () => {
    const limits: ClaimLimits = { ...none, jobs: { "app/job": { concurrency: 1, rateLimit: null } } }
    const running = [{ job: "app/job", key: "cust-1", count: 1 }]
    expect(whyNotStarted(queued({ concurrencyKey: "cust-1" }), limits, flow({ running }), now, workers)).toBe(`key "cust-1" at its limit 1 (1 running)`)
    expect(whyNotStarted(queued({ concurrencyKey: "cust-2" }), limits, flow({ running }), now, workers)).toBe("waiting for a free worker slot")
  })

  test("no limit holds it: waiting for a worker slot, or for a live worker serving the queue", () => {
    expect(whyNotStarted(queued(), none, flow(), now, workers)).toBe("waiting for a free worker slot")
    expect(whyNotStarted(queued(), none, flow(), now, [])).toBe("no live worker serves queue default (job app/job)")
    expect(whyNotStarted(queued(), none, flow(), now, [worker({ stale: true })])).toBe("no live worker serves queue default (job app/job)")
    expect(whyNotStarted(queued({ queue: "mail" }), none, flow(), now, workers)).toBe("no live worker serves queue mail (job app/job)")
  })
})

describe("limitsOfQueue", () => {
  test("takes the queue's limits and those of its own Jobs that declare any", () => {
    const flowOf = (limit?: number) => ({ concurrency: limit === undefined ? undefined : { key: () => "k", limit }, rateLimit: undefined })
    const registry = {
      queues: new Map([["mail", { globalConcurrency: 2, rateLimit: { limit: 5, periodMs: 1_000 } }]]),
      jobs: new Map([
        ["a/keyed", { id: "a/keyed", queue: "mail", flow: flowOf(1) }],
        ["a/plain", { id: "a/plain", queue: "mail", flow: flowOf() }],
        ["a/elsewhere", { id: "a/elsewhere", queue: "default", flow: flowOf(3) }]
      ])
    }
    expect(limitsOfQueue(registry, "mail")).toEqual({ globalConcurrency: 2, rateLimit: { limit: 5, periodMs: 1_000 }, jobs: { "a/keyed": { concurrency: 1, rateLimit: null } } })
    expect(limitsOfQueue(registry, "unknown")).toEqual(none)
  })
})

for (const driver of drivers) {
  describe(`queuesHeldBack (${driver.name})`, () => {
    let f!: StoreFixture
    freshStoreEach(driver, (fixture) => (f = fixture))

    const limits: ClaimLimits = {
      globalConcurrency: 10,
      rateLimit: null,
      jobs: { "app/job": { concurrency: 1, rateLimit: { limit: 1, periodMs: 60_000, perKey: true } } }
    }
    const claimAll = (at: number) =>
      withStore(f, (s) => s.executionsClaimLimited({ queue: "default", jobs: ["app/job"], workerId: "w1", limit: 10, now: at, leaseMs: 30_000, limits }))

    test("groups due queued rows by Job and by whether their keys are at a limit, counted per cause", async () => {
      const rows = [
        row({ concurrencyKey: "a", rateKey: "r1" }), row({ concurrencyKey: "a", rateKey: "r2" }), row({ concurrencyKey: "a", rateKey: "r1" }),
        row({ concurrencyKey: "b", rateKey: "r1" }),
        row({ concurrencyKey: "c", rateKey: "r3" }), row({ concurrencyKey: "c", rateKey: "r3" }),
        row({ job: "app/plain" }),
        row({ concurrencyKey: "d", rateKey: "r4", runAt: 50_000 })
      ]
      await withStore(f, (s) => s.executionsInsert(rows))
      // Takes a (key a, r1) and c (r3): b is held by r1's rate, the second a's by key a, the second c's by key c.
      const claimed = (await claimAll(1_000)).executions.map((e) => e.id)
      expect(claimed).toEqual([rows[0]!.id, rows[4]!.id])
      const read = await withStore(f, (s) => s.queuesHeldBack({ queue: "default", now: 1_000, limits }))
      expect(read.flow.paused).toBe(false)
      expect(read.due).toEqual([
        { job: "app/job", keyAtLimit: false, rateKeyAtLimit: true, count: 1 },
        { job: "app/job", keyAtLimit: true, rateKeyAtLimit: false, count: 1 },
        { job: "app/job", keyAtLimit: true, rateKeyAtLimit: true, count: 2 },
        { job: "app/plain", keyAtLimit: false, rateKeyAtLimit: false, count: 1 }
      ])
      // The row due later is not counted; app/plain is not held (no limit of its own).
      expect(heldBackOf(limits, read, 1_000)).toEqual({ due: 5, heldBack: { paused: 0, globalConcurrency: 0, keyConcurrency: 3, rateLimit: 1 } })

      await withStore(f, (s) => s.queuesPause({ queue: "default", now: 1_100 }))
      const paused = await withStore(f, (s) => s.queuesHeldBack({ queue: "default", now: 1_200, limits }))
      expect(heldBackOf(limits, paused, 1_200)).toEqual({ due: 5, heldBack: { paused: 5, globalConcurrency: 0, keyConcurrency: 0, rateLimit: 0 } })
    })

    test("another queue's rows and rows not queued are not counted", async () => {
      await withStore(f, (s) => s.executionsInsert([row({ queue: "mail" }), row()]))
      await claimAll(1_000)
      const read = await withStore(f, (s) => s.queuesHeldBack({ queue: "default", now: 1_000, limits: { globalConcurrency: 1, rateLimit: null, jobs: {} } }))
      expect(read.due).toEqual([])
      expect(read.flow.running).toEqual([{ job: "app/job", key: null, count: 1 }])
      const mail = await withStore(f, (s) => s.queuesHeldBack({ queue: "mail", now: 1_000, limits: none }))
      expect(heldBackOf(none, mail, 1_000)).toEqual({ due: 1, heldBack: { paused: 0, globalConcurrency: 0, keyConcurrency: 0, rateLimit: 0 } })
    })
  })
}
