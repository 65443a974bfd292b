/**
 * Schedule definitions: ids, exactly one trigger, policies with their defaults, the
 * payload checked against the target Job's Schema, and the validation that discovery
 * and `roster check` run (duplicates, unknown Jobs).
 */
import { describe, expect, test } from "bun:test"
import { Effect, Schema } from "effect"
import * as Job from "../../src/jobs/Job.ts"
import * as JobSchedule from "../../src/jobs/JobSchedule.ts"
import { InvalidDefinition } from "../../src/jobs/errors.ts"

const send = Job.make({ id: "billing/send", payload: Schema.Struct({ to: Schema.String, at: Schema.Date }), handler: () => Effect.void })

describe("JobSchedule.make", () => {
  test("defaults: UTC, enabled, misfire once, overlap allow, label = id", () => {
    const s = JobSchedule.make({ id: "billing/nightly", job: send, payload: { to: "a", at: new Date(0) }, cron: "0 3 * * *" })
    expect(s.trigger).toEqual({ _tag: "Cron", expression: "0 3 * * *", timezone: "UTC" })
    expect([s.enabled, s.misfire, s.overlap, s.label, s.job, s.app, s.name]).toEqual([
      true, { policy: "once", cap: 1 }, "allow", "billing/nightly", "billing/send", "billing", "nightly"
    ])
    expect(JobSchedule.isJobSchedule(s)).toBe(true)
    expect(JobSchedule.isJobSchedule(send)).toBe(false)
  })

  test("every is an interval anchored at the epoch; all alone means a cap of 100", () => {
    const s = JobSchedule.make({ id: "billing/poll", job: "billing/send", payload: {}, every: "90 seconds", misfire: "all" })
    expect(s.trigger).toEqual({ _tag: "Interval", everyMs: 90_000, anchorAt: 0 })
    expect(s.misfire).toEqual({ policy: "all", cap: 100 })
    expect(JobSchedule.make({ id: "billing/p2", job: "billing/send", payload: {}, every: 60_000, misfire: { all: { cap: 5 } } }).misfire)
      .toEqual({ policy: "all", cap: 5 })
  })

  test("malformed definitions throw with a message naming the schedule", () => {
    const base = { job: "billing/send", payload: {} }
    expect(() => JobSchedule.make({ ...base, id: "Billing/Nightly", cron: "0 3 * * *" })).toThrow("kebab-case")
    expect(() => JobSchedule.make({ ...base, id: "billing/both", cron: "0 3 * * *", every: "1 hour" })).toThrow("exactly one of cron and every")
    expect(() => JobSchedule.make({ ...base, id: "billing/none" })).toThrow("exactly one of cron and every")
    expect(() => JobSchedule.make({ ...base, id: "billing/bad", cron: "0 25 * * *" })).toThrow("billing/bad")
    expect(() => JobSchedule.make({ ...base, id: "billing/tz", cron: "0 3 * * *", timezone: "Europe/Atlantis" })).toThrow("unknown timezone")
    expect(() => JobSchedule.make({ ...base, id: "billing/fast", every: "100 millis" })).toThrow(">= 1000")
    expect(() => JobSchedule.make({ ...base, id: "billing/cap", cron: "0 3 * * *", misfire: { all: { cap: 0 } } })).toThrow("cap >= 1")
  })

  test("a payload the Job's Schema rejects is refused at definition", () => {
    expect(() =>
      // @ts-expect-error the payload is typed by the Job's Schema
      JobSchedule.make({ id: "billing/nightly", job: send, payload: { to: 42, at: new Date(0) }, cron: "0 3 * * *" })
    ).toThrow("payload does not match Job \"billing/send\"")
  })

  test("the payload is encoded with the Job's JSON codec", () => {
    const s = JobSchedule.make({ id: "billing/nightly", job: send, payload: { to: "a", at: new Date(0) }, cron: "0 3 * * *" })
    expect(JobSchedule.encodePayload(s, send)).toBe(JSON.stringify({ to: "a", at: "1970-01-01T00:00:00.000Z" }))
  })
})

describe("validateSchedules", () => {
  const jobs = new Map([["billing/send", send as Job.Job]])
  const ok = JobSchedule.make({ id: "billing/a", job: "billing/send", payload: { to: "a", at: new Date(0) }, cron: "0 3 * * *" })

  test("returns each schedule with its encoded payload", () => {
    const r = JobSchedule.validateSchedules({ schedules: [ok], jobs })
    expect(r).toEqual([{ schedule: ok, payload: JSON.stringify({ to: "a", at: "1970-01-01T00:00:00.000Z" }), file: undefined }])
  })

  test("refuses two schedules with one id, naming both files", () => {
    const r = JobSchedule.validateSchedules({ schedules: [{ schedule: ok, file: "apps/billing/schedules.ts" }, { schedule: ok, file: "apps/other/schedules.ts" }], jobs })
    expect(r).toBeInstanceOf(InvalidDefinition)
    expect((r as InvalidDefinition).message).toBe("duplicate Schedule id \"billing/a\" (apps/other/schedules.ts), first defined in apps/billing/schedules.ts")
  })

  test("refuses a schedule whose Job is unknown, or whose payload does not match", () => {
    const ghost = JobSchedule.make({ id: "billing/ghost", job: "billing/gone", payload: {}, cron: "0 3 * * *" })
    expect((JobSchedule.validateSchedules({ schedules: [ghost], jobs }) as InvalidDefinition).message).toContain("unknown Job \"billing/gone\"")
    const bad = JobSchedule.make({ id: "billing/bad", job: "billing/send", payload: { to: 1 }, cron: "0 3 * * *" })
    expect((JobSchedule.validateSchedules({ schedules: [bad], jobs }) as InvalidDefinition).message).toContain("Schedule \"billing/bad\": payload does not match")
  })
})
