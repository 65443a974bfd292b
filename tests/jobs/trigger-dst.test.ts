/**
 * Daylight saving never drops or doubles a daily or weekly fire. For random IANA zones
 * that change offset in a random year (1990–2100) and a random time of day, every fire
 * of the year is compared with an independent oracle built from the zone's offsets
 * alone: each local calendar day (or each week, for a weekly cron) is due exactly once —
 * at its wall time, at the first occurrence of a repeated wall time (autumn), or at the
 * first instant after a spring-forward gap that swallowed it (Vixie cron's rule). Only a
 * jump of more than three hours (a zone crossing the date line) has days with no fire,
 * because those wall times, and sometimes the whole day, do not exist.
 */
import { describe, expect, test } from "bun:test"
import fc from "fast-check"
import * as Trigger from "../../src/jobs/Trigger.ts"

const hourMs = 3_600_000
const dayMs = 86_400_000
const iso = (ms: number) => new Date(ms).toISOString()
const zones = Intl.supportedValuesOf("timeZone")

/** Whether the zone's offset changes during the year (sampled twice a month: DST lasts months). */
const changesIn = (tz: string, year: number): boolean => {
  const first = Trigger.offsetAt(tz, Date.UTC(year, 0, 1))
  for (let m = 0; m < 12; m++) {
    for (const d of [1, 16]) if (Trigger.offsetAt(tz, Date.UTC(year, m, d)) !== first) return true
  }
  return Trigger.offsetAt(tz, Date.UTC(year, 11, 31)) !== first
}

/**
 * When the wall time `wall` (local time written as UTC ms) is due in `tz`: its first
 * occurrence; inside a forward gap of at most three hours, the first instant after the
 * gap; otherwise (a larger jump) never. Assumes one offset change at most within ±36 h.
 */
const dueAt = (tz: string, wall: number): number | null => {
  const before = Trigger.offsetAt(tz, wall - 36 * hourMs)
  const after = Trigger.offsetAt(tz, wall + 36 * hourMs)
  const occurrences = [wall - before, wall - after].filter((t) => t + Trigger.offsetAt(tz, t) === wall)
  if (occurrences.length > 0) return Math.min(...occurrences)
  if (after - before > 3 * hourMs) return null
  // In the gap: the change lies in (wall - after, wall - before]; find its first instant.
  let lo = wall - after, hi = wall - before
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2)
    if (Trigger.offsetAt(tz, mid) === before) lo = mid
    else hi = mid
  }
  return hi
}

/** The oracle: one due instant per local date from 31 Dec of `year - 1` to 1 Jan of `year + 1` whose weekday matches. */
const expectedFires = (tz: string, year: number, hour: number, minute: number, weekday: number | undefined): Array<number> => {
  const out: Array<number> = []
  for (let date = Date.UTC(year - 1, 11, 31); date <= Date.UTC(year + 1, 0, 1); date += dayMs) {
    if (weekday !== undefined && new Date(date).getUTCDay() !== weekday) continue
    const due = dueAt(tz, date + hour * hourMs + minute * 60_000)
    if (due !== null) out.push(due)
  }
  return out
}

const checkYear = (tz: string, year: number, hour: number, minute: number, weekday: number | undefined) => {
  const expression = `${minute} ${hour} * * ${weekday ?? "*"}`
  const expected = expectedFires(tz, year, hour, minute, weekday)
  const got = Trigger.firesBetween(Trigger.cron(expression, tz), expected[0]! - 1, expected[expected.length - 1]!)
  const context = `${expression} in ${tz}, ${year}`
  expect(got.map(iso), context).toEqual(expected.map(iso))
  for (let i = 1; i < got.length; i++) expect(got[i]! - got[i - 1]!, context).toBeGreaterThan(weekday === undefined ? 0 : 5 * dayMs)
}

const zoneYear = fc
  .tuple(fc.constantFrom(...zones), fc.integer({ min: 1990, max: 2100 }))
  .filter(([tz, year]) => changesIn(tz, year))
// Transitions happen mostly between 22:00 and 04:00 local, on the hour or the half hour.
const hour = fc.oneof(fc.integer({ min: 0, max: 23 }), fc.constantFrom(0, 1, 2, 3, 22, 23))
const minute = fc.oneof(fc.integer({ min: 0, max: 59 }), fc.constantFrom(0, 30))

describe("daylight saving never drops or doubles a daily or weekly fire (property)", () => {
  test("a daily cron fires once per local calendar day over a whole year, in random DST zones and years", () => {
    fc.assert(fc.property(zoneYear, hour, minute, ([tz, year], h, m) => checkYear(tz, year, h, m, undefined)), { numRuns: 120 })
  })

  test("a weekly cron fires once per week over a whole year, in random DST zones and years", () => {
    fc.assert(
      fc.property(zoneYear, hour, minute, fc.integer({ min: 0, max: 6 }), ([tz, year], h, m, d) => checkYear(tz, year, h, m, d)),
      { numRuns: 120 }
    )
  })
})

/** The forward jumps of a zone in [from, to): the instant of each, and the offsets either side. */
const forwardJumps = (tz: string, from: number, to: number) => {
  const out: Array<{ at: number; before: number; after: number }> = []
  let offset = Trigger.offsetAt(tz, from)
  for (let t = from; t < to; t += dayMs) {
    const next = Trigger.offsetAt(tz, t + dayMs)
    if (next !== offset) {
      let lo = t, hi = t + dayMs
      while (hi - lo > 1) {
        const mid = Math.floor((lo + hi) / 2)
        if (Trigger.offsetAt(tz, mid) === offset) lo = mid
        else hi = mid
      }
      if (next > offset) out.push({ at: hi, before: offset, after: next })
      offset = next
    }
  }
  return out
}

describe("every spring-forward gap of every zone, 2024–2026", () => {
  test("a daily time inside the gap runs once, at the first instant after it; the days either side are untouched", () => {
    let checked = 0
    for (const tz of zones) {
      for (const jump of forwardJumps(tz, Date.UTC(2024, 0, 1), Date.UTC(2027, 0, 1))) {
        if (jump.after - jump.before > 3 * hourMs) continue
        // The first and the last missing minute of the gap, as a time of day.
        for (const missing of [jump.at + jump.before, jump.at + jump.after - 60_000]) {
          const wall = new Date(missing)
          const t = Trigger.cron(`${wall.getUTCMinutes()} ${wall.getUTCHours()} * * *`, tz)
          // Within ±30 h: the day before, the gap's day (at the jump), the day after.
          const fires = Trigger.firesBetween(t, jump.at - 30 * hourMs, jump.at + 30 * hourMs)
          expect(fires.map(iso), tz).toEqual([iso(fires[0]!), iso(jump.at), iso(fires[2]!)])
          checked++
        }
      }
    }
    expect(checked).toBeGreaterThan(500)
  })
})
