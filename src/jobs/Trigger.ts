/**
 * When a Schedule fires: pure next-fire arithmetic for cron expressions and fixed
 * intervals. Nothing here waits or reads the clock; the Scheduler asks "what is the
 * first fire strictly after t?" and sleeps through Effect's Clock.
 *
 * Cron uses croner only as a calculator of wall-clock matches: it runs at UTC offset 0
 * over "wall time" (local time written as if it were UTC), and this module maps wall
 * times to instants in the schedule's IANA zone itself, so daylight-saving rules are
 * ours and stated once (croner 9's own zone handling differs between zones, and it has
 * no option for gaps — its `legacyMode` is about day-of-month/day-of-week):
 * - a wall time inside a spring-forward gap does not exist. A *fixed-time* expression
 *   (its seconds, minute and hour fields do not start with `*`, as Vixie cron decides)
 *   that matches a time in the gap fires once at the first instant after the gap
 *   (Vixie cron's rule), so a daily 02:30 never loses a day; a *wildcard* expression
 *   (`* * * * *`, `0 * * * *`, or a step such as every 20 minutes of hour 2) simply has no
 *   fire in the gap. A jump of more than {@link maxCatchUpGapMs} (a zone moving across
 *   the date line) is not DST and catches nothing up: those wall times and days do not
 *   exist there.
 * - a wall time repeated by a fall-back overlap fires once, at its first occurrence,
 *   unless the hour field is `*` (the pattern runs every hour), which keeps its
 *   real-time cadence through both passes of the repeated hour (OCPS 1.4 §4.3.1,
 *   croner 10 release notes).
 * Zones are assumed to change offset at most once a day: from 1990 to 2100 every IANA
 * zone keeps at least 6 days 23 hours between changes (Asia/Gaza's predicted
 * Ramadan suspensions of DST, e.g. October 2040, are the closest).
 *
 * Intervals fire at `anchorAt + k·everyMs` for integer k, so a restart never shifts them.
 */
import { Cron } from "croner"
import { Data } from "effect"

/** A cron trigger: 5 or 6 fields (seconds first, optional) or a croner nickname, evaluated in an IANA zone. */
export interface CronTrigger {
  readonly _tag: "Cron"
  readonly expression: string
  readonly timezone: string
}

/** A fixed-interval trigger, anchored so fires are `anchorAt + k·everyMs`. */
export interface IntervalTrigger {
  readonly _tag: "Interval"
  readonly everyMs: number
  readonly anchorAt: number
}

/** Either trigger. */
export type Trigger = CronTrigger | IntervalTrigger

/** A cron expression croner cannot parse, or one Roster refuses. */
export class InvalidCron extends Data.TaggedError("InvalidCron")<{
  readonly expression: string
  readonly message: string
}> {}

/** A timezone the runtime's time zone database does not know. */
export class InvalidTimezone extends Data.TaggedError("InvalidTimezone")<{
  readonly timezone: string
  readonly message: string
}> {}

/** An interval that is not a whole number of milliseconds of at least one second. */
export class InvalidInterval extends Data.TaggedError("InvalidInterval")<{
  readonly everyMs: number
  readonly message: string
}> {}

/** The smallest interval accepted: fires are recorded per (schedule, due ms), one second apart at least. */
export const minIntervalMs = 1_000

/** A cron trigger (unchecked; see {@link validate}). */
export const cron = (expression: string, timezone = "UTC"): CronTrigger => ({ _tag: "Cron", expression: expression.trim(), timezone })

/** An interval trigger (unchecked; see {@link validate}). */
export const interval = (everyMs: number, anchorAt = 0): IntervalTrigger => ({ _tag: "Interval", everyMs, anchorAt })

const nicknames = new Set(["@yearly", "@annually", "@monthly", "@weekly", "@daily", "@hourly"])

/** Checks an IANA timezone name against the runtime's time zone database. */
export const validateTimezone = (timezone: string): InvalidTimezone | undefined => {
  if (typeof timezone !== "string" || timezone.trim() === "") {
    return new InvalidTimezone({ timezone: String(timezone), message: "timezone must be a non-empty IANA name such as \"UTC\" or \"Europe/Berlin\"" })
  }
  try {
    formatter(timezone)
    return undefined
  } catch {
    return new InvalidTimezone({ timezone, message: `unknown timezone "${timezone}" (use an IANA name such as "UTC" or "Europe/Berlin")` })
  }
}

/** Checks a cron expression (and its timezone): syntax, field count, and that it fires at all. */
export const validateCron = (expression: string, timezone = "UTC"): InvalidCron | InvalidTimezone | undefined => {
  const expr = typeof expression === "string" ? expression.trim() : ""
  const fail = (message: string) => new InvalidCron({ expression: String(expression), message: `invalid cron "${expression}": ${message}` })
  if (expr === "") return fail("it is empty")
  if (expr.startsWith("@")) {
    if (!nicknames.has(expr.toLowerCase())) return fail(`unknown nickname; use one of ${[...nicknames].join(", ")}`)
  } else {
    const fields = expr.split(/\s+/).length
    if (fields !== 5 && fields !== 6) {
      return fail(`expected 5 fields (minute hour day-of-month month day-of-week) or 6 (seconds first), got ${fields}`)
    }
    // croner 9 replaces "?" with the time the process started, so fires would move on every restart.
    if (expr.includes("?")) return fail("\"?\" is not supported (croner reads it as the process start time); use *")
  }
  let compiledCron: Cron
  try {
    compiledCron = new Cron(expr, { utcOffset: 0, paused: true })
  } catch (cause) {
    return fail(cause instanceof Error ? cause.message.replace(/^CronPattern: /, "") : String(cause))
  }
  if (compiledCron.nextRun(new Date(Date.UTC(2000, 0, 1))) === null) return fail("it never fires")
  return validateTimezone(timezone)
}

/** Checks any trigger; undefined when it is usable. */
export const validate = (trigger: Trigger): InvalidCron | InvalidTimezone | InvalidInterval | undefined => {
  if (trigger._tag === "Cron") return validateCron(trigger.expression, trigger.timezone)
  if (!Number.isInteger(trigger.everyMs) || trigger.everyMs < minIntervalMs) {
    return new InvalidInterval({ everyMs: trigger.everyMs, message: `interval must be a whole number of milliseconds >= ${minIntervalMs}, got ${trigger.everyMs}` })
  }
  if (!Number.isInteger(trigger.anchorAt)) {
    return new InvalidInterval({ everyMs: trigger.everyMs, message: `interval anchor must be an integer epoch ms, got ${trigger.anchorAt}` })
  }
  return undefined
}

// --- wall clock ---------------------------------------------------------------------

const formatters = new Map<string, Intl.DateTimeFormat>()
const formatter = (timezone: string): Intl.DateTimeFormat => {
  let f = formatters.get(timezone)
  if (!f) {
    f = new Intl.DateTimeFormat("en-US", {
      timeZone: timezone,
      hourCycle: "h23",
      year: "numeric",
      month: "numeric",
      day: "numeric",
      hour: "numeric",
      minute: "numeric",
      second: "numeric"
    })
    formatters.set(timezone, f)
  }
  return f
}

const utcZones = new Set(["UTC", "Etc/UTC", "Etc/UCT", "Etc/GMT", "GMT", "Etc/Universal", "Etc/Zulu", "UCT", "Universal", "Zulu"])

/** The zone's offset from UTC at instant `at`, in ms (local wall time = at + offset). */
export const offsetAt = (timezone: string, at: number): number => {
  const second = at - (((at % 1000) + 1000) % 1000)
  const parts = formatter(timezone).formatToParts(new Date(second))
  let y = 0, mo = 1, d = 1, h = 0, mi = 0, s = 0
  for (const p of parts) {
    switch (p.type) {
      case "year": y = Number(p.value); break
      case "month": mo = Number(p.value); break
      case "day": d = Number(p.value); break
      case "hour": h = Number(p.value); break
      case "minute": mi = Number(p.value); break
      case "second": s = Number(p.value); break
    }
  }
  return Date.UTC(y, mo - 1, d, h, mi, s) - second
}

const compiledCache = new Map<string, Cron>()
const compiled = (expression: string): Cron => {
  let c = compiledCache.get(expression)
  if (!c) {
    if (compiledCache.size >= 1000) compiledCache.clear()
    c = new Cron(expression, { utcOffset: 0, paused: true })
    compiledCache.set(expression, c)
  }
  return c
}

/** The first wall time matching the pattern strictly after `wall` (both as UTC-written ms). */
const nextWall = (c: Cron, wall: number): number | null => c.nextRun(new Date(wall))?.getTime() ?? null

const fieldsOf = (expression: string): ReadonlyArray<string> => {
  if (expression.startsWith("@")) return expression.toLowerCase() === "@hourly" ? ["0", "*"] : ["0", "0"]
  const fields = expression.split(/\s+/)
  return fields.length === 6 ? fields : ["0", ...fields]
}

const hourIsWildcard = (expression: string): boolean => {
  const hour = fieldsOf(expression)[2]
  return hour === "*" || hour === "*/1" || hour === "0-23"
}

/**
 * Whether the expression names fixed times of day: Vixie cron's test, no `*` at the
 * start of its seconds, minute or hour field. Only these catch up a spring-forward gap.
 */
export const isFixedTime = (expression: string): boolean => fieldsOf(expression).slice(0, 3).every((f) => !f.startsWith("*"))

/**
 * The largest forward jump that is caught up (Vixie cron's three hours). Every DST
 * change is at most two hours; a larger jump removes a whole day (Pacific/Apia, 30
 * December 2011), and a day that does not exist has nothing to run.
 */
export const maxCatchUpGapMs = 3 * 3_600_000

/** How far apart offsets are sampled when looking for a change (see the module comment). */
const scanStepMs = 86_400_000

/** The first instant in (from, to] whose offset is not `offset` (the offset at `from`), or null. */
const firstOffsetChange = (timezone: string, from: number, to: number, offset: number): number | null => {
  let lo = from
  while (lo < to) {
    const hi = Math.min(lo + scanStepMs, to)
    if (offsetAt(timezone, hi) !== offset) {
      let a = lo, b = hi
      while (b - a > 1) {
        const mid = Math.floor((a + b) / 2)
        if (offsetAt(timezone, mid) === offset) a = mid
        else b = mid
      }
      return b
    }
    lo = hi
  }
  return null
}

/** Whether wall time `wall`, reached at `at` with offset `offset`, already happened earlier (a fall-back repeat). */
const repeatsEarlier = (timezone: string, wall: number, at: number, offset: number): boolean => {
  for (const probe of [at - 3 * 3_600_000, at - 26 * 3_600_000]) {
    const before = offsetAt(timezone, probe)
    if (before > offset) {
      const earlier = wall - before
      if (earlier < at && offsetAt(timezone, earlier) === before) return true
    }
  }
  return false
}

const maxSteps = 100_000

const nextCronAfter = (trigger: CronTrigger, after: number): number | null => {
  const c = compiled(trigger.expression)
  const tz = trigger.timezone
  if (utcZones.has(tz)) return nextWall(c, after)
  const everyHour = hourIsWildcard(trigger.expression)
  const fixedTime = isFixedTime(trigger.expression)
  // Fires strictly after `t`; `offset` holds from `segment` (<= t + 1) until the next change.
  let t = after
  let segment = after
  let offset = offsetAt(tz, after)
  for (let step = 0; step < maxSteps; step++) {
    // Within one offset segment, instants and wall times move together.
    const wall = nextWall(c, t + offset)
    if (wall === null) return null
    const candidate = wall - offset
    const change = firstOffsetChange(tz, segment, candidate, offset)
    if (change !== null) {
      // The candidate lies past this segment: no fire before the change.
      const next = offsetAt(tz, change)
      const gap = next - offset
      if (fixedTime && gap > 0 && gap <= maxCatchUpGapMs) {
        // Wall times [change + offset, change + next) do not exist; one of them matched: run it right after the gap.
        const missing = nextWall(c, change + offset - 1)
        if (missing !== null && missing < change + next) return change
      }
      t = change - 1
      segment = change
      offset = next
      continue
    }
    if (everyHour || !repeatsEarlier(tz, wall, candidate, offset)) return candidate
    t = candidate
    segment = candidate
  }
  throw new Error(`cron "${trigger.expression}" in ${tz}: no fire found after ${maxSteps} steps from ${new Date(after).toISOString()}`)
}

/** The first fire strictly after `after` (epoch ms), or null if the trigger never fires again. */
export const nextFireAfter = (trigger: Trigger, after: number): number | null => {
  if (trigger._tag === "Cron") return nextCronAfter(trigger, after)
  const { anchorAt, everyMs } = trigger
  return anchorAt + (Math.floor((after - anchorAt) / everyMs) + 1) * everyMs
}

/** Fires in (fromExclusive, toInclusive], ascending, at most `cap` of them (the earliest). */
export const firesBetween = (trigger: Trigger, fromExclusive: number, toInclusive: number, cap = Number.POSITIVE_INFINITY): Array<number> => {
  const out: Array<number> = []
  let t = fromExclusive
  while (out.length < cap) {
    const next = nextFireAfter(trigger, t)
    if (next === null || next > toInclusive) break
    out.push(next)
    t = next
  }
  return out
}

/** The latest `count` fires in (fromExclusive, toInclusive], ascending, and whether older ones exist in that window. */
export const lastFiresBetween = (
  trigger: Trigger,
  fromExclusive: number,
  toInclusive: number,
  count: number
): { readonly fires: ReadonlyArray<number>; readonly more: boolean } => {
  if (toInclusive <= fromExclusive) return { fires: [], more: false }
  if (count <= 0) {
    const first = nextFireAfter(trigger, fromExclusive)
    return { fires: [], more: first !== null && first <= toInclusive }
  }
  if (trigger._tag === "Interval") {
    const { anchorAt, everyMs } = trigger
    const kFirst = Math.floor((fromExclusive - anchorAt) / everyMs) + 1
    const kLast = Math.floor((toInclusive - anchorAt) / everyMs)
    const fires: Array<number> = []
    for (let k = Math.max(kFirst, kLast - count + 1); k <= kLast; k++) fires.push(anchorAt + k * everyMs)
    return { fires, more: kLast - kFirst + 1 > count }
  }
  // Widen a window back from `toInclusive` until it holds `count` fires, never
  // enumerating more than a bounded number: an outage may span millions of fires.
  const budget = 8 * count
  let inner = 0
  let outer: number | undefined
  let span = 60_000 * count
  for (;;) {
    const lo = Math.max(fromExclusive, toInclusive - span)
    const fires = firesBetween(trigger, lo, toInclusive, budget + 1)
    if (fires.length > budget) {
      outer = span
      span = inner + Math.floor((outer - inner) / 2)
      continue
    }
    if (fires.length >= count || lo === fromExclusive) {
      const last = fires.slice(-count)
      let more = fires.length > count
      if (!more && lo > fromExclusive) {
        const first = nextFireAfter(trigger, fromExclusive)
        more = first !== null && first <= lo
      }
      return { fires: last, more }
    }
    inner = span
    span = outer === undefined ? span * 2 : inner + Math.floor((outer - inner) / 2)
  }
}
