/**
 * Input that must be refused, in-process: times outside Roster's range (1970 to 9999),
 * delays that are negative or fractional, priorities no store holds, payloads nested
 * deeper than 64 levels — each a typed error through the Effect Client and the Promise
 * API, with nothing written; a bulk refusal names its item. And every stored time and
 * value turns into text without a throw and without growing with its depth.
 */
import { afterAll, describe, expect, test } from "bun:test"
import { Effect, Schema } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Job from "../../src/jobs/Job.ts"
import * as JobSchedule from "../../src/jobs/JobSchedule.ts"
import { encodeJobPayload } from "../../src/jobs/JobSchedule.ts"
import { documentJson, depthOf, maxPayloadDepth, prettyJson } from "../../src/jobs/JsonText.ts"
import * as RetryPolicy from "../../src/jobs/RetryPolicy.ts"
import { isoTime, isStorableTime, maxDelayMs, maxTime, timeText } from "../../src/jobs/TimeRange.ts"
import { Client } from "../../src/runtime/Client.ts"
import * as Roster from "../../src/runtime/Roster.ts"
import { Store } from "../../src/store/Store.ts"
import { fireKey } from "../../src/store/ScheduleStore.ts"
import { clockTime, shownJson, time } from "../../src/dashboard/Format.ts"
import { runOnTestClock } from "../support/runtime.ts"

const any = Job.make({
  id: "t/any",
  payload: Schema.Struct({ data: Schema.Json }),
  handler: () => Effect.void
})

const nested = (levels: number): unknown => {
  let v: unknown = 1
  for (let i = 0; i < levels; i++) v = [v]
  return v
}

const total = Effect.map(Store.use((s) => s.executionsCount({})), (c) => Object.values(c).reduce((a, b) => a + b, 0))

/** Enqueues with `options` on a TestClock (at 0); returns the exit and how many rows exist after. */
const tryEnqueue = (payload: unknown, options: Record<string, unknown>) =>
  runOnTestClock([any], Effect.gen(function*() {
    const exit = yield* Effect.exit(Client.use((c) => c.enqueue(any, payload, options)))
    return { exit, n: yield* total }
  }))

describe("times have a range: 1970-01-01T00:00:00.000Z to 9999-12-31T23:59:59.999Z", () => {
  test("runAt outside the range, fractional, or an invalid Date is refused with InvalidEnqueueOption and nothing written", async () => {
    for (const runAt of [maxTime + 1, -1, 9_000_000_000_000_000, 1.5, Number.NaN, Infinity, new Date("nope"), new Date(8.64e15)]) {
      const { exit, n } = await tryEnqueue({ data: 1 }, { runAt })
      expect(exit._tag, String(runAt)).toBe("Failure")
      if (exit._tag === "Failure") {
        const e = exit.cause.reasons[0] as unknown as { error: { _tag: string; option: string; message: string } }
        expect(e.error).toMatchObject({ _tag: "InvalidEnqueueOption", option: "runAt" })
        expect(e.error.message).toContain("9999-12-31T23:59:59.999Z")
      }
      expect(n).toBe(0)
    }
  })

  test("the ends of the range are accepted", async () => {
    for (const runAt of [0, maxTime, new Date(maxTime)]) {
      const { exit, n } = await tryEnqueue({ data: 1 }, { runAt })
      expect(exit._tag).toBe("Success")
      expect(n).toBe(1)
    }
  })

  test("delayMs must be a whole number >= 0 ending inside the range", async () => {
    for (const delayMs of [-1, 0.5, Number.NaN, 9_000_000_000_000_000, maxTime + 1]) {
      const { exit, n } = await tryEnqueue({ data: 1 }, { delayMs })
      expect(exit._tag, String(delayMs)).toBe("Failure")
      expect(JSON.stringify(exit)).toContain("InvalidEnqueueOption")
      expect(n).toBe(0)
    }
    const { exit } = await tryEnqueue({ data: 1 }, { delayMs: maxTime })
    expect(exit._tag).toBe("Success")
  })

  test("priority must be a 32-bit integer (PostgreSQL's integer column)", async () => {
    for (const priority of [2 ** 31, -(2 ** 31) - 1, 1.5, Number.NaN]) {
      const { exit, n } = await tryEnqueue({ data: 1 }, { priority })
      expect(JSON.stringify(exit), String(priority)).toContain("\"option\":\"priority\"")
      expect(n).toBe(0)
    }
    for (const priority of [2 ** 31 - 1, -(2 ** 31)]) expect((await tryEnqueue({ data: 1 }, { priority })).exit._tag).toBe("Success")
  })

  test("retry delays are whole milliseconds, at most one hundred years", () => {
    const factor = RetryPolicy.exponential({ initial: 1000, factor: 1.5, jitter: false })
    expect(RetryPolicy.delayMs(factor, 2, null, 0)).toBe(1500)
    expect(Number.isInteger(RetryPolicy.delayMs(factor, 3, null, 0))).toBe(true)
    expect(RetryPolicy.delayMs(RetryPolicy.custom({ attempts: 3, delay: () => Infinity }), 1, null, 0)).toBe(maxDelayMs)
    expect(RetryPolicy.delayMs(RetryPolicy.custom({ attempts: 3, delay: () => Number.NaN }), 1, null, 0)).toBe(0)
    expect(RetryPolicy.delayMs(RetryPolicy.fixed({ delay: 1e15 }), 1, null, 0)).toBe(maxDelayMs)
  })
})

describe("a Job's timeout and priority are values every execution can store", () => {
  test("Job.make refuses an infinite or fractional timeout and a priority past 32 bits", () => {
    const make = (over: Record<string, unknown>) => () => Job.make({ id: "t/bad", payload: Schema.Struct({}), handler: () => Effect.void, ...over })
    expect(make({ timeout: Infinity })).toThrow(/timeout must be a whole number of milliseconds from 1 to 100 years/)
    expect(make({ timeout: 0.5 })).toThrow(/timeout must be/)
    expect(make({ priority: 2 ** 31 })).toThrow(/priority must be a whole number from -2147483648 to 2147483647/)
    expect(make({ timeout: "100 days", priority: -5 })).not.toThrow()
  })

  test("ids are at most 200 characters; a misfire cap at most 10,000", () => {
    const long = `t/${"a".repeat(199)}`
    expect(() => Job.make({ id: long, payload: Schema.Struct({}), handler: () => Effect.void })).toThrow(/at most 200 characters, got 201/)
    expect(() => JobSchedule.make({ id: long, job: any, every: "1 minute", payload: { data: 1 } })).toThrow(/at most 200 characters/)
    expect(() => JobSchedule.make({ id: "t/s", job: any, every: "1 minute", payload: { data: 1 }, misfire: { all: { cap: 10_001 } } })).toThrow(/cap >= 1 and <= 10000/)
    expect(() => JobSchedule.make({ id: "t/s", job: any, every: "1 minute", payload: { data: 1 }, misfire: { all: { cap: 10_000 } } })).not.toThrow()
  })
})

describe("every stored time becomes text without a throw", () => {
  test("isoTime, the dashboard's time and clockTime accept any number", () => {
    for (const ms of [9_000_000_000_000_000, -9e15, Number.NaN, Infinity, 1.5, Number.MAX_VALUE]) {
      expect(() => isoTime(ms)).not.toThrow()
      expect(() => time(ms)).not.toThrow()
      expect(() => clockTime(ms)).not.toThrow()
      expect(() => fireKey("a/b", ms)).not.toThrow()
    }
    expect(isoTime(9_000_000_000_000_000)).toBe("out-of-range time 9000000000000000")
    expect(isoTime(8.64e15)).toBe("+275760-09-13T00:00:00.000Z")
    expect(timeText(maxTime)).toBe("9999-12-31 23:59:59")
    expect(timeText(0)).toBe("1970-01-01 00:00:00")
    expect(isStorableTime(maxTime)).toBe(true)
    expect(isStorableTime(maxTime + 1)).toBe(false)
  })
})

describe("payload nesting is bounded at 64 levels", () => {
  test("a payload nested deeper than 64 levels is refused with PayloadTooDeep; 64 is accepted", async () => {
    // { data: [[…]] }: the struct is one level, so data may nest 63.
    const ok = await tryEnqueue({ data: nested(maxPayloadDepth - 1) }, {})
    expect(ok.exit._tag).toBe("Success")
    for (const levels of [maxPayloadDepth, 20_000]) {
      const { exit, n } = await tryEnqueue({ data: nested(levels) }, {})
      expect(JSON.stringify(exit)).toContain("PayloadTooDeep")
      expect(n).toBe(0)
    }
  })

  test("a file Schedule's payload nested deeper than 64 levels is an InvalidDefinition", () => {
    expect(encodeJobPayload(any, { data: nested(100) })).toMatchObject({ _tag: "InvalidDefinition", message: expect.stringContaining("nests deeper than 64 levels") })
    expect(typeof encodeJobPayload(any, { data: nested(10) })).toBe("string")
  })

  test("depthOf stops counting past its limit", () => {
    expect(depthOf(1)).toBe(0)
    expect(depthOf({ a: 1 })).toBe(1)
    expect(depthOf([[], {}])).toBe(2)
    expect(depthOf(nested(20_000))).toBe(maxPayloadDepth + 1)
  })

  test("pretty JSON of a deep value stays its size and is the same value; a page shows at most 64 KiB of it", () => {
    const deep = { payload: nested(20_000) }
    const text = documentJson(deep)
    expect(text.length).toBeLessThan(100_000)
    expect(JSON.stringify(JSON.parse(text))).toBe(JSON.stringify(deep))
    const shallow = { a: [1, { b: "x", c: null }], e: {}, f: [] }
    expect(documentJson(shallow)).toBe(JSON.stringify(shallow, null, 2))
    expect(prettyJson(shallow).text).toBe(JSON.stringify(shallow, null, 2))
    const big = { text: "x".repeat(1_000_000) }
    const shown = shownJson(big, "roster executions show ID --json").text
    expect(shown.length).toBeLessThan(70_000)
    expect(shown).toContain("roster executions show ID --json")
    expect(shownJson({ a: 1 }, "cmd").text).not.toContain("cmd")
  })
})

describe("bulk enqueue is all or nothing", () => {
  test("enqueueMany refuses at the first bad item, names it, and writes none", async () => {
    const { error, n } = await runOnTestClock([any], Effect.gen(function*() {
      const error = yield* Effect.flip(Client.use((c) => c.enqueueMany([
        { job: any, payload: { data: 1 } },
        { job: any, payload: { data: 2 }, options: { delayMs: -1 } },
        { job: any, payload: { data: nested(100) } }
      ])))
      return { error, n: yield* total }
    }))
    expect(error).toMatchObject({ _tag: "InvalidEnqueueOption", item: 2 })
    expect(error.message).toStartWith("item 2 of 3: ")
    expect(n).toBe(0)
  })
})

describe("the Promise API refuses the same input", () => {
  const dir = mkdtempSync(join(tmpdir(), "roster-times-"))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  test("Roster.open's enqueue and enqueueMany reject with the typed error and write nothing", async () => {
    const roster = await Roster.open({ db: join(dir, "roster.db"), jobs: [any] }, { configDir: false, logger: { output: "off" } })
    try {
      await expect(roster.enqueue(any, { data: 1 }, { runAt: 9_000_000_000_000_000 })).rejects.toMatchObject({ _tag: "InvalidEnqueueOption", option: "runAt" })
      await expect(roster.enqueue(any, { data: 1 }, { delayMs: 9_000_000_000_000_000 })).rejects.toMatchObject({ _tag: "InvalidEnqueueOption", option: "delayMs" })
      await expect(roster.enqueue(any, { data: nested(20_000) })).rejects.toMatchObject({ _tag: "PayloadTooDeep", limit: 64 })
      await expect(roster.enqueueMany([{ job: any, payload: { data: 1 } }, { job: any, payload: { data: "x" }, options: { runAt: -5 } }]))
        .rejects.toMatchObject({ _tag: "InvalidEnqueueOption", item: 2 })
      expect(await roster.list()).toEqual([])
    } finally {
      await roster.close()
    }
  })
})
