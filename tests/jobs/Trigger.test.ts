/**
 * Next-fire arithmetic: cron in UTC and in DST zones (a fixed time in the spring gap runs
 * once right after the gap, Vixie cron's rule, while a wildcard pattern has no fire
 * there; a repeated wall time fires once, at its first occurrence, unless the hour field
 * is `*`), anchored intervals, and validation. A property test compares cron fires with
 * a brute-force minute scan of the wall clock; tests/jobs/trigger-dst.test.ts checks
 * daily and weekly fires over whole years in every DST zone.
 */
import { describe, expect, test } from "bun:test"
import fc from "fast-check"
import * as Trigger from "../../src/jobs/Trigger.ts"

const at = (iso: string) => Date.parse(iso)
const iso = (ms: number) => new Date(ms).toISOString()
const fires = (t: Trigger.Trigger, from: string, to: string) => Trigger.firesBetween(t, at(from), at(to)).map(iso)

describe("cron in UTC", () => {
  test("a 5-field expression fires at the matching minutes, strictly after the given instant", () => {
    const t = Trigger.cron("*/15 * * * *")
    expect(fires(t, "2024-01-01T00:00:00Z", "2024-01-01T01:00:00Z")).toEqual([
      "2024-01-01T00:15:00.000Z", "2024-01-01T00:30:00.000Z", "2024-01-01T00:45:00.000Z", "2024-01-01T01:00:00.000Z"
    ])
    expect(Trigger.nextFireAfter(t, at("2024-01-01T00:15:00Z"))).toBe(at("2024-01-01T00:30:00Z"))
    expect(Trigger.nextFireAfter(t, at("2024-01-01T00:14:59.999Z"))).toBe(at("2024-01-01T00:15:00Z"))
  })

  test("a 6-field expression reads its first field as seconds", () => {
    expect(fires(Trigger.cron("*/20 * * * * *"), "2024-01-01T00:00:00Z", "2024-01-01T00:01:00Z")).toEqual([
      "2024-01-01T00:00:20.000Z", "2024-01-01T00:00:40.000Z", "2024-01-01T00:01:00.000Z"
    ])
  })

  test("nicknames are croner's: @daily fires at midnight", () => {
    expect(Trigger.nextFireAfter(Trigger.cron("@daily"), at("2024-05-05T13:00:00Z"))).toBe(at("2024-05-06T00:00:00Z"))
  })

  test("UTC fires do not depend on the process's local timezone (croner 9 skips an hour with timezone: UTC)", () => {
    const original = process.env.TZ
    process.env.TZ = "Europe/Berlin"
    try {
      expect(fires(Trigger.cron("0 * * * *", "UTC"), "2024-03-31T00:30:00Z", "2024-03-31T04:30:00Z")).toEqual([
        "2024-03-31T01:00:00.000Z", "2024-03-31T02:00:00.000Z", "2024-03-31T03:00:00.000Z", "2024-03-31T04:00:00.000Z"
      ])
    } finally {
      if (original === undefined) delete process.env.TZ
      else process.env.TZ = original
    }
  })
})

describe("cron in Europe/Berlin across daylight saving", () => {
  // 2024-03-31: 02:00 CET jumps to 03:00 CEST at 01:00Z. 2024-10-27: 03:00 CEST falls back to 02:00 CET at 01:00Z.
  test("spring gap: a daily time inside the missing hour runs once, at the first instant after the gap (Vixie cron)", () => {
    expect(fires(Trigger.cron("30 2 * * *", "Europe/Berlin"), "2024-03-29T12:00:00Z", "2024-04-01T12:00:00Z")).toEqual([
      "2024-03-30T01:30:00.000Z", // 02:30 CET
      "2024-03-31T01:00:00.000Z", // 31 March has no 02:30: 03:00 CEST, right after the gap
      "2024-04-01T00:30:00.000Z" // 02:30 CEST
    ])
    // Asked from the last instant before the gap, the catch-up is still the next fire.
    expect(Trigger.nextFireAfter(Trigger.cron("30 2 * * *", "Europe/Berlin"), at("2024-03-31T00:59:59.999Z"))).toBe(at("2024-03-31T01:00:00Z"))
    expect(Trigger.nextFireAfter(Trigger.cron("30 2 * * *", "Europe/Berlin"), at("2024-03-31T01:00:00Z"))).toBe(at("2024-04-01T00:30:00Z"))
  })

  test("spring gap: several fixed times in the gap, or one also due right after it, run once", () => {
    expect(fires(Trigger.cron("0,30 2 * * *", "Europe/Berlin"), "2024-03-30T12:00:00Z", "2024-03-31T12:00:00Z")).toEqual(["2024-03-31T01:00:00.000Z"])
    expect(fires(Trigger.cron("0 2,3 * * *", "Europe/Berlin"), "2024-03-30T12:00:00Z", "2024-03-31T12:00:00Z")).toEqual(["2024-03-31T01:00:00.000Z"])
    expect(fires(Trigger.cron("0 30 2 * * *", "Europe/Berlin"), "2024-03-30T12:00:00Z", "2024-03-31T12:00:00Z")).toEqual(["2024-03-31T01:00:00.000Z"])
    expect(fires(Trigger.cron("0 2 * * 0", "Europe/Berlin"), "2024-03-30T12:00:00Z", "2024-04-08T12:00:00Z")).toEqual([
      "2024-03-31T01:00:00.000Z", "2024-04-07T00:00:00.000Z"
    ])
  })

  test("spring gap: a wildcard pattern (a field starting with *) has no fire in the gap", () => {
    expect(fires(Trigger.cron("*/20 2 * * *", "Europe/Berlin"), "2024-03-30T23:00:00Z", "2024-03-31T12:00:00Z")).toEqual([])
    expect(fires(Trigger.cron("0 * * * *", "Europe/Berlin"), "2024-03-31T00:30:00Z", "2024-03-31T02:00:00Z")).toEqual([
      "2024-03-31T01:00:00.000Z", // 03:00 CEST: 02:00 does not exist and is not made up
      "2024-03-31T02:00:00.000Z"
    ])
    expect(Trigger.isFixedTime("30 2 * * *")).toBe(true)
    expect(Trigger.isFixedTime("0-59 2 * * *")).toBe(true)
    expect(Trigger.isFixedTime("@daily")).toBe(true)
    expect(Trigger.isFixedTime("@hourly")).toBe(false)
    expect(Trigger.isFixedTime("* 30 2 * * *")).toBe(false)
    expect(Trigger.isFixedTime("0 */2 * * *")).toBe(false)
  })

})

describe("gaps of other sizes", () => {
  test("a half-hour gap (Australia/Lord_Howe) catches up at 02:30 local", () => {
    // 2024-10-06: 02:00 +10:30 jumps to 02:30 +11 at 15:30Z on 5 October.
    expect(fires(Trigger.cron("15 2 * * *", "Australia/Lord_Howe"), "2024-10-04T12:00:00Z", "2024-10-06T12:00:00Z")).toEqual([
      "2024-10-04T15:45:00.000Z", "2024-10-05T15:30:00.000Z"
    ])
  })

  test("two changes a week apart (Asia/Gaza's predicted DST suspension, October 2040) keep every fire at its wall time", () => {
    const gaza = new Intl.DateTimeFormat("en-CA", { timeZone: "Asia/Gaza", year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit", hourCycle: "h23" })
    for (const expr of ["0 12 * * *", "0 12 * * 3", "0 12 1-31/3 * *"]) {
      const got = Trigger.firesBetween(Trigger.cron(expr, "Asia/Gaza"), at("2040-10-10T00:00:00Z"), at("2040-11-05T00:00:00Z"))
      const walls = got.map((t) => gaza.format(new Date(t)))
      expect(walls.every((w) => w.endsWith("12:00")), walls.join(" | ")).toBe(true)
      expect(new Set(walls.map((w) => w.slice(0, 10))).size).toBe(got.length)
    }
    expect(Trigger.offsetAt("Asia/Gaza", at("2040-10-23T00:00:00Z")) - Trigger.offsetAt("Asia/Gaza", at("2040-10-18T00:00:00Z"))).toBe(3_600_000)
  })

  test("a day a zone skips across the date line is not made up (Pacific/Apia, 30 December 2011)", () => {
    // 29 December 23:59:59 -10 was followed by 31 December 00:00 +14.
    expect(fires(Trigger.cron("30 2 * * *", "Pacific/Apia"), "2011-12-29T00:00:00Z", "2011-12-31T00:00:00Z")).toEqual([
      "2011-12-29T12:30:00.000Z", // 29 Dec 02:30 -10
      "2011-12-30T12:30:00.000Z" // 31 Dec 02:30 +14; 30 December does not exist
    ])
  })
})

describe("cron in Europe/Berlin across daylight saving, continued", () => {

  test("spring gap: a sub-hourly pattern resumes at the first wall time after the gap", () => {
    expect(fires(Trigger.cron("*/30 * * * *", "Europe/Berlin"), "2024-03-31T00:00:00Z", "2024-03-31T02:00:00Z")).toEqual([
      "2024-03-31T00:30:00.000Z", // 01:30 CET
      "2024-03-31T01:00:00.000Z", // 03:00 CEST
      "2024-03-31T01:30:00.000Z",
      "2024-03-31T02:00:00.000Z"
    ])
  })

  test("autumn overlap: a specific time fires once, at its first occurrence", () => {
    expect(fires(Trigger.cron("30 2 * * *", "Europe/Berlin"), "2024-10-26T12:00:00Z", "2024-10-28T12:00:00Z")).toEqual([
      "2024-10-27T00:30:00.000Z", // 02:30 CEST; not again at 02:30 CET (01:30Z)
      "2024-10-28T01:30:00.000Z"
    ])
  })

  test("autumn overlap: a pattern with a fixed hour runs through the first pass only", () => {
    expect(fires(Trigger.cron("*/20 2 * * *", "Europe/Berlin"), "2024-10-26T23:00:00Z", "2024-10-27T12:00:00Z")).toEqual([
      "2024-10-27T00:00:00.000Z", "2024-10-27T00:20:00.000Z", "2024-10-27T00:40:00.000Z"
    ])
  })

  test("autumn overlap: an every-hour pattern keeps its real-time cadence through both passes", () => {
    expect(fires(Trigger.cron("0 * * * *", "Europe/Berlin"), "2024-10-26T23:30:00Z", "2024-10-27T02:00:00Z")).toEqual([
      "2024-10-27T00:00:00.000Z", // 02:00 CEST
      "2024-10-27T01:00:00.000Z", // 02:00 CET
      "2024-10-27T02:00:00.000Z" // 03:00 CET
    ])
  })

  test("a start inside the repeated hour does not fire a time already passed in its first occurrence", () => {
    // 01:10Z is 02:10 CET (second pass); 02:30 already happened at 00:30Z.
    expect(Trigger.nextFireAfter(Trigger.cron("30 2 * * *", "Europe/Berlin"), at("2024-10-27T01:10:00Z"))).toBe(at("2024-10-28T01:30:00Z"))
  })
})

describe("cron in America/New_York across daylight saving", () => {
  test("2:30 does not exist on 10 March 2024 (it runs at 3:00 EDT), and 1:30 on 3 November fires once (EDT)", () => {
    expect(fires(Trigger.cron("30 2 * * *", "America/New_York"), "2024-03-09T12:00:00Z", "2024-03-11T12:00:00Z")).toEqual([
      "2024-03-10T07:00:00.000Z", "2024-03-11T06:30:00.000Z"
    ])
    expect(fires(Trigger.cron("30 1 * * *", "America/New_York"), "2024-11-02T12:00:00Z", "2024-11-04T12:00:00Z")).toEqual([
      "2024-11-03T05:30:00.000Z", "2024-11-04T06:30:00.000Z"
    ])
  })
})

describe("intervals are anchored", () => {
  test("every 7 minutes over a simulated week fires exactly at anchor + k·7min, without drift", () => {
    const step = 7 * 60_000
    const t = Trigger.interval(step)
    const start = at("2024-03-25T00:00:00Z") + 12_345
    let now = start
    let count = 0
    for (;;) {
      const next = Trigger.nextFireAfter(t, now)!
      if (next > start + 7 * 86_400_000) break
      expect(next % step).toBe(0)
      expect(next - now).toBeLessThanOrEqual(step)
      now = next
      count++
    }
    expect(count).toBe(Math.floor((start + 7 * 86_400_000) / step) - Math.floor(start / step))
  })

  test("a restart at any instant lands on the same grid", () => {
    const t = Trigger.interval(90_000, 5_000)
    fc.assert(fc.property(fc.integer({ min: 0, max: 4e12 }), (now) => {
      const next = Trigger.nextFireAfter(t, now)!
      expect((next - 5_000) % 90_000).toBe(0)
      expect(next > now && next - now <= 90_000).toBe(true)
    }))
  })
})

describe("lastFiresBetween", () => {
  test("returns the tail of the window and says whether older fires exist", () => {
    const t = Trigger.cron("*/5 * * * *", "Europe/Berlin")
    const all = Trigger.firesBetween(t, at("2024-10-26T20:00:00Z"), at("2024-10-27T04:00:00Z"))
    const tail = Trigger.lastFiresBetween(t, at("2024-10-26T20:00:00Z"), at("2024-10-27T04:00:00Z"), 10)
    expect(tail.fires).toEqual(all.slice(-10))
    expect(tail.more).toBe(true)
    const whole = Trigger.lastFiresBetween(t, at("2024-10-26T20:00:00Z"), at("2024-10-27T04:00:00Z"), all.length)
    expect(whole).toEqual({ fires: all, more: false })
  })

  test("finds the last fires of a per-second pattern over a month without enumerating it", () => {
    const tail = Trigger.lastFiresBetween(Trigger.cron("* * * * * *"), at("2024-01-01T00:00:00Z"), at("2024-02-01T00:00:00Z"), 100)
    expect(tail.fires.length).toBe(100)
    expect(tail.fires[0]).toBe(at("2024-01-31T23:58:21Z"))
    expect(tail.fires[99]).toBe(at("2024-02-01T00:00:00Z"))
    expect(tail.more).toBe(true)
  })
})

describe("validation", () => {
  test("bad expressions are refused with a message that names the problem", () => {
    expect(Trigger.validateCron("* * * *")?.message).toContain("expected 5 fields")
    expect(Trigger.validateCron("0 0 1 1 * * 2030")?.message).toContain("got 7")
    expect(Trigger.validateCron("61 * * * *")?.message).toContain("minute")
    expect(Trigger.validateCron("0 0 31 2 *")?.message).toContain("never fires")
    expect(Trigger.validateCron("? * * * *")?.message).toContain("\"?\" is not supported")
    expect(Trigger.validateCron("@fortnightly")?._tag).toBe("InvalidCron")
    expect(Trigger.validateCron("2024-01-01T00:00:00")?._tag).toBe("InvalidCron")
  })

  test("good expressions and zones pass", () => {
    expect(Trigger.validateCron("0 9 * * MON-FRI", "Europe/Berlin")).toBeUndefined()
    expect(Trigger.validateCron("*/10 * * * * *")).toBeUndefined()
    expect(Trigger.validateCron("@hourly")).toBeUndefined()
  })

  test("an unknown timezone is an InvalidTimezone", () => {
    const e = Trigger.validateCron("0 * * * *", "Mars/Olympus")
    expect(e?._tag).toBe("InvalidTimezone")
    expect(e?.message).toContain("Mars/Olympus")
    expect(Trigger.validateTimezone("America/New_York")).toBeUndefined()
  })

  test("an interval under one second is refused", () => {
    expect(Trigger.validate(Trigger.interval(500))?._tag).toBe("InvalidInterval")
    expect(Trigger.validate(Trigger.interval(1_000))).toBeUndefined()
  })
})

// --- brute-force oracle ---------------------------------------------------------------

const wallParts = (tz: string, t: number) => {
  const d = new Date(t + Trigger.offsetAt(tz, t))
  return { minute: d.getUTCMinutes(), hour: d.getUTCHours(), day: d.getUTCDate(), month: d.getUTCMonth() + 1, weekday: d.getUTCDay(), key: d.getTime() }
}

const fieldMatches = (field: string, value: number): boolean =>
  field.split(",").some((part) => {
    const [range, stepText] = part.split("/") as [string, string | undefined]
    const step = stepText ? Number(stepText) : 1
    const [lo, hi] = range === "*" ? [0, 59] : range.includes("-") ? range.split("-").map(Number) as [number, number] : [Number(range), stepText ? 59 : Number(range)]
    return value >= lo && value <= hi && (value - lo) % step === 0
  })

/**
 * Fires by definition: each minute instant whose wall time matches, once per wall time
 * unless the hour is `*`; and, for a fixed-time expression (minute and hour not starting
 * with `*`), the first instant after a spring gap in which some wall time matched.
 */
const oracle = (expr: string, tz: string, from: number, to: number): Array<number> => {
  const [mi, h, dom, mon, dow] = expr.split(" ") as [string, string, string, string, string]
  const fixed = !mi.startsWith("*") && !h.startsWith("*")
  const matches = (w: ReturnType<typeof wallParts>) => {
    const dayOk = dom === "*" || dow === "*" ? fieldMatches(dom, w.day) && fieldMatches(dow, w.weekday) : fieldMatches(dom, w.day) || fieldMatches(dow, w.weekday)
    return fieldMatches(mi, w.minute) && fieldMatches(h, w.hour) && fieldMatches(mon, w.month) && dayOk
  }
  const out: Array<number> = []
  for (let t = Math.floor(from / 60_000) * 60_000 + 60_000; t <= to; t += 60_000) {
    const w = wallParts(tz, t)
    if (fixed) {
      const before = wallParts(tz, t - 60_000).key
      let caughtUp = false
      for (let missing = before + 60_000; missing < w.key && !caughtUp; missing += 60_000) {
        caughtUp = matches(wallParts("UTC", missing))
      }
      if (caughtUp) {
        out.push(t)
        continue
      }
    }
    if (!matches(w)) continue
    const repeated = h !== "*" && [30, 60, 90, 120].some((m) => wallParts(tz, t - m * 60_000).key === w.key)
    if (!repeated) out.push(t)
  }
  return out
}

const zones = ["UTC", "Europe/Berlin", "America/New_York", "Australia/Sydney", "Australia/Lord_Howe", "America/Santiago", "Asia/Kolkata", "America/St_Johns"]
const transitions = [
  "2024-03-31T01:00:00Z", "2024-10-27T01:00:00Z", "2024-03-10T07:00:00Z", "2024-11-03T06:00:00Z", "2024-04-06T16:00:00Z",
  "2024-10-05T16:00:00Z", "2024-04-06T15:00:00Z", "2024-09-08T04:00:00Z", "2024-04-07T03:00:00Z", "2024-06-15T00:00:00Z"
].map(at)

const minuteField = fc.oneof(fc.constant("*"), fc.constantFrom("*/5", "*/15", "*/7", "0", "30", "0,30", "10-20", "45-59/5"))
const hourField = fc.oneof(fc.constant("*"), fc.constantFrom("*/2", "0", "1", "2", "3", "1-3", "0,2,4", "23"))
const domField = fc.constantFrom("*", "*", "1", "6-8", "15")
const monthField = fc.constantFrom("*", "*", "3,4,9,10,11", "1-6")
const dowField = fc.constantFrom("*", "*", "0", "1-5", "6")
const expression = fc.tuple(minuteField, hourField, domField, monthField, dowField).map((f) => f.join(" "))
/** Each DST zone with one of its own 2024 transitions (spring and autumn). */
const zoneTransitions: ReadonlyArray<readonly [string, number]> = ([
  ["Europe/Berlin", "2024-03-31T01:00:00Z"], ["Europe/Berlin", "2024-10-27T01:00:00Z"],
  ["America/New_York", "2024-03-10T07:00:00Z"], ["America/New_York", "2024-11-03T06:00:00Z"],
  ["Australia/Sydney", "2024-10-05T16:00:00Z"], ["Australia/Sydney", "2024-04-06T16:00:00Z"],
  ["Australia/Lord_Howe", "2024-10-05T15:30:00Z"], ["Australia/Lord_Howe", "2024-04-06T15:00:00Z"],
  ["America/Santiago", "2024-09-08T04:00:00Z"], ["America/Santiago", "2024-04-07T03:00:00Z"]
] as const).map(([tz, when]) => [tz, at(when)] as const)
// Fixed times near the transitions (the Vixie catch-up after a gap, the first pass of an overlap).
const fixedExpression = fc
  .tuple(fc.constantFrom("0", "30", "0,30", "10-20", "45-59/5", "59"), fc.constantFrom("0", "1", "2", "3", "1-3", "0,2,4", "23"), domField, monthField, dowField)
  .map((f) => f.join(" "))

describe("cron matches its definition (property)", () => {
  test("fires equal a minute-by-minute scan of the zone's wall clock, around DST transitions", () => {
    fc.assert(
      fc.property(expression, fc.constantFrom(...zones), fc.constantFrom(...transitions), fc.integer({ min: -36, max: 12 }), (expr, tz, pivot, shiftH) => {
        const from = pivot + shiftH * 3_600_000
        const to = from + 36 * 3_600_000
        const got = Trigger.firesBetween(Trigger.cron(expr, tz), from, to)
        expect(got).toEqual(oracle(expr, tz, from, to))
      }),
      { numRuns: 150 }
    )
  })

  test("fixed-time expressions, whose gap times run right after the gap, equal the scan too", () => {
    fc.assert(
      fc.property(fixedExpression, fc.constantFrom(...zoneTransitions), fc.integer({ min: -30, max: 6 }), (expr, [tz, pivot], shiftH) => {
        const from = pivot + shiftH * 3_600_000
        const to = from + 36 * 3_600_000
        expect(Trigger.firesBetween(Trigger.cron(expr, tz), from, to)).toEqual(oracle(expr, tz, from, to))
      }),
      { numRuns: 100 }
    )
  })
})
