/**
 * Misfire policies as a pure plan: after a simulated 3-hour outage each policy decides
 * the fires it should, a fire due now (or within the tolerance) is on time, missed rows
 * are capped, and a property test checks random crons, zones, outages and policies
 * against the policy's definition.
 */
import { describe, expect, test } from "bun:test"
import fc from "fast-check"
import * as FirePlan from "../../src/jobs/FirePlan.ts"
import * as Trigger from "../../src/jobs/Trigger.ts"

const at = (iso: string) => Date.parse(iso)
const hourly = Trigger.cron("0 * * * *")
const lastHandled = at("2024-05-01T09:00:00Z")
const backAt = at("2024-05-01T12:20:00Z") // three hourly fires (10:00, 11:00, 12:00) came due while down

const decisions = (p: FirePlan.Plan) => p.decisions.map((d) => `${new Date(d.dueAt).toISOString().slice(11, 16)} ${d.outcome}`)

describe("after a 3-hour outage", () => {
  test("once: the most recent missed fire runs late, older ones are recorded missed", () => {
    const p = FirePlan.plan({ trigger: hourly, after: lastHandled, now: backAt, misfire: FirePlan.misfire("once") })
    expect(decisions(p)).toEqual(["10:00 missed", "11:00 missed", "12:00 enqueue"])
    expect(p.nextDueAt).toBe(at("2024-05-01T13:00:00Z"))
    expect(p.truncated).toBe(false)
  })

  test("skip: no late run; every missed fire is recorded missed", () => {
    const p = FirePlan.plan({ trigger: hourly, after: lastHandled, now: backAt, misfire: FirePlan.misfire("skip") })
    expect(decisions(p)).toEqual(["10:00 missed", "11:00 missed", "12:00 missed"])
    expect(p.nextDueAt).toBe(at("2024-05-01T13:00:00Z"))
  })

  test("all: every missed fire runs late, up to the cap; older ones are missed", () => {
    const all = FirePlan.plan({ trigger: hourly, after: lastHandled, now: backAt, misfire: FirePlan.misfire("all") })
    expect(decisions(all)).toEqual(["10:00 enqueue", "11:00 enqueue", "12:00 enqueue"])
    const capped = FirePlan.plan({ trigger: hourly, after: lastHandled, now: backAt, misfire: FirePlan.misfire("all", 2) })
    expect(decisions(capped)).toEqual(["10:00 missed", "11:00 enqueue", "12:00 enqueue"])
  })
})

describe("on time is not a misfire", () => {
  test("a fire due exactly now is enqueued even under skip", () => {
    const p = FirePlan.plan({ trigger: hourly, after: lastHandled, now: at("2024-05-01T12:00:00Z"), misfire: FirePlan.misfire("skip") })
    expect(decisions(p)).toEqual(["10:00 missed", "11:00 missed", "12:00 enqueue"])
  })

  test("a fire late by less than the tolerance is on time; by more, it is a misfire", () => {
    const within = FirePlan.plan({ trigger: hourly, after: at("2024-05-01T11:00:00Z"), now: at("2024-05-01T12:00:45Z"), misfire: FirePlan.misfire("skip") })
    expect(decisions(within)).toEqual(["12:00 enqueue"])
    const beyond = FirePlan.plan({ trigger: hourly, after: at("2024-05-01T11:00:00Z"), now: at("2024-05-01T12:01:01Z"), misfire: FirePlan.misfire("skip") })
    expect(decisions(beyond)).toEqual(["12:00 missed"])
    const strict = FirePlan.plan({ trigger: hourly, after: at("2024-05-01T11:00:00Z"), now: at("2024-05-01T12:00:00.001Z"), misfire: FirePlan.misfire("skip"), toleranceMs: 0 })
    expect(decisions(strict)).toEqual(["12:00 missed"])
  })

  test("once: a fire on time is the catch-up run, so no extra late run is made", () => {
    const p = FirePlan.plan({ trigger: hourly, after: lastHandled, now: at("2024-05-01T12:00:10Z"), misfire: FirePlan.misfire("once") })
    expect(decisions(p)).toEqual(["10:00 missed", "11:00 missed", "12:00 enqueue"])
    expect(p.decisions.filter((d) => d.outcome === "enqueue").length).toBe(1)
  })

  test("nothing is decided before the next fire comes due", () => {
    const p = FirePlan.plan({ trigger: hourly, after: at("2024-05-01T12:00:00Z"), now: at("2024-05-01T12:30:00Z"), misfire: FirePlan.misfire("once") })
    expect(p.decisions).toEqual([])
    expect(p.nextDueAt).toBe(at("2024-05-01T13:00:00Z"))
  })
})

describe("missed rows are capped", () => {
  test("a per-minute schedule down for 3 hours records only the latest 100 misses", () => {
    const p = FirePlan.plan({ trigger: Trigger.cron("* * * * *"), after: lastHandled, now: at("2024-05-01T12:00:30Z"), misfire: FirePlan.misfire("skip"), toleranceMs: 0 })
    expect(p.decisions.length).toBe(100)
    expect(p.decisions.every((d) => d.outcome === "missed")).toBe(true)
    expect(p.decisions[0]!.dueAt).toBe(at("2024-05-01T10:21:00Z"))
    expect(p.decisions[99]!.dueAt).toBe(at("2024-05-01T12:00:00Z"))
    expect(p.truncated).toBe(true)
  })
})

// --- property -----------------------------------------------------------------------

const expression = fc.tuple(
  fc.constantFrom("*", "*/5", "*/15", "0", "30", "0,30", "10-20"),
  fc.constantFrom("*", "*", "*/2", "2", "1-3", "9-17"),
  fc.constantFrom("*", "*", "*", "1-20"),
  fc.constantFrom("*", "*", "*", "3,4,10,11"),
  fc.constantFrom("*", "*", "*", "1-5")
).map((f) => f.join(" "))
const zones = ["UTC", "Europe/Berlin", "America/New_York", "Australia/Sydney", "Asia/Kolkata"]
const policy = fc.oneof(
  fc.constant(FirePlan.misfire("once")),
  fc.constant(FirePlan.misfire("skip")),
  fc.integer({ min: 1, max: 20 }).map((cap) => FirePlan.misfire("all", cap))
)
const takeLast = <A>(xs: ReadonlyArray<A>, n: number) => (n <= 0 ? [] : xs.slice(-n))

/** The policy's definition, by enumerating every fire of the window. */
const spec = (trigger: Trigger.Trigger, after: number, now: number, m: FirePlan.Misfire, tolerance: number, missedCap: number) => {
  const fires = Trigger.firesBetween(trigger, after, now)
  const late = fires.filter((d) => d < now - tolerance)
  const onTime = fires.filter((d) => d >= now - tolerance)
  const lateRuns = m.policy === "skip" ? [] : m.policy === "once" ? (onTime.length > 0 ? [] : takeLast(late, 1)) : takeLast(late, m.cap)
  const missed = late.filter((d) => !lateRuns.includes(d))
  const recorded = takeLast(missed, missedCap)
  const decisions = [
    ...recorded.map((dueAt) => ({ dueAt, outcome: "missed" as const })),
    ...lateRuns.map((dueAt) => ({ dueAt, outcome: "enqueue" as const })),
    ...onTime.map((dueAt) => ({ dueAt, outcome: "enqueue" as const }))
  ].sort((a, b) => a.dueAt - b.dueAt)
  return { decisions, truncated: missed.length > recorded.length }
}

describe("the plan follows the policy (property)", () => {
  test("for random crons, zones, outages and policies the planned fires equal the policy's definition, without duplicates", () => {
    fc.assert(
      fc.property(
        expression,
        fc.constantFrom(...zones),
        fc.integer({ min: at("2024-01-01T00:00:00Z"), max: at("2024-12-31T00:00:00Z") }),
        fc.integer({ min: 0, max: 6 * 3_600_000 }),
        policy,
        fc.integer({ min: 0, max: 120_000 }),
        fc.integer({ min: 0, max: 30 }),
        (expr, tz, after, outage, m, tolerance, missedCap) => {
          const trigger = Trigger.cron(expr, tz)
          const now = after + outage
          const p = FirePlan.plan({ trigger, after, now, misfire: m, toleranceMs: tolerance, missedRecordCap: missedCap })
          const expected = spec(trigger, after, now, m, tolerance, missedCap)
          expect(p.decisions).toEqual(expected.decisions)
          expect(p.truncated).toBe(expected.truncated)
          expect(new Set(p.decisions.map((d) => d.dueAt)).size).toBe(p.decisions.length)
          expect(p.nextDueAt).toBe(Trigger.nextFireAfter(trigger, now))
        }
      ),
      { numRuns: 400 }
    )
  })
})
