/**
 * `roster schedules preview` (DESIGN §7) as a user runs it, a real process without a
 * database: the next fires of a cron expression in its zone (the Vixie catch-up after a
 * spring gap, one fire in the autumn overlap) or of an interval, as ISO-8601 UTC
 * instants, equal to what the Scheduler's Trigger functions compute; and every bad
 * input refused with one line — exit 2 for usage (flags, --count, --from), exit 1 for a
 * trigger `schedules create` would refuse too.
 */
import { describe, expect, test } from "bun:test"
import { existsSync } from "node:fs"
import * as Trigger from "../../src/jobs/Trigger.ts"
import { parseJsonOutput, type ProcessResult, useScratch } from "../support/processes.ts"
import { expectOneLineFailure } from "../support/badInput.ts"

const scratch = useScratch()


const preview = async (...args: Array<string>): Promise<Array<string>> => {
  const r = await scratch().run(["schedules", "preview", ...args, "--json"])
  expect(r.code, r.stderr).toBe(0)
  return parseJsonOutput(r)
}

describe("schedules preview lists the fires the Scheduler would make", () => {
  test("a daily 02:30 in Europe/Berlin: 03:00 CEST on 31 March 2024 (the gap), once on 27 October (the overlap)", async () => {
    expect(await preview("--cron", "30 2 * * *", "--timezone", "Europe/Berlin", "--from", "2024-03-29T12:00:00Z", "--count", "4")).toEqual([
      "2024-03-30T01:30:00.000Z", "2024-03-31T01:00:00.000Z", "2024-04-01T00:30:00.000Z", "2024-04-02T00:30:00.000Z"
    ])
    expect(await preview("--cron", "30 2 * * *", "--timezone", "Europe/Berlin", "--from", "2024-10-26T14:00:00+02:00", "--count", "2")).toEqual([
      "2024-10-27T00:30:00.000Z", "2024-10-28T01:30:00.000Z"
    ])
    // Nothing was opened or created: preview needs no database.
    expect(existsSync(scratch().db)).toBe(false)
  })

  test("the output equals Trigger.firesBetween, the function the Scheduler plans with", async () => {
    const from = "2024-11-02T00:00:00Z"
    const got = await preview("--cron", "*/20 1 * * *", "--timezone", "America/New_York", "--from", from, "--count", "7")
    const expected = Trigger.firesBetween(Trigger.cron("*/20 1 * * *", "America/New_York"), Date.parse(from), Number.MAX_SAFE_INTEGER, 7)
    expect(got).toEqual(expected.map((t) => new Date(t).toISOString()))
    expect(got).toHaveLength(7)
  })

  test("an interval is anchored at the Unix epoch; fires are strictly after --from; the default is 10 fires after now", async () => {
    expect(await preview("--every-ms", "900000", "--from", "2024-03-29T12:15:00Z", "--count", "2")).toEqual(["2024-03-29T12:30:00.000Z", "2024-03-29T12:45:00.000Z"])
    const before = Date.now()
    const fires = await preview("--cron", "0 * * * *")
    expect(fires).toHaveLength(10)
    expect(Date.parse(fires[0]!)).toBeGreaterThan(before - 1)
    expect(Date.parse(fires[0]!) - before).toBeLessThanOrEqual(3_600_000)
  })

  test("without --json, one row per fire: the UTC instant and the wall time in the zone", async () => {
    const r = await scratch().run(["schedules", "preview", "--cron", "30 2 * * *", "--timezone", "Europe/Berlin", "--from", "2024-03-30T12:00:00Z", "--count", "1"])
    expect(r.code, r.stderr).toBe(0)
    expect(r.stdout).toContain("2024-03-31T01:00:00.000Z")
    expect(r.stdout).toContain("2024-03-31 03:00:00")
  })
})

describe("schedules preview refuses bad input with one line", () => {
  test("usage (exit 2): no trigger or both, --timezone with an interval, --count out of 1..1000, a bad --from or --every-ms", async () => {
    const s = scratch()
    const cases: Array<[Array<string>, string]> = [
      [[], "give exactly one of --cron or --every-ms"],
      [["--cron", "0 * * * *", "--every-ms", "60000"], "give exactly one of --cron or --every-ms"],
      [["--every-ms", "60000", "--timezone", "Europe/Berlin"], "--timezone applies to --cron only"],
      [["--cron", "0 * * * *", "--count", "0"], "--count must be a whole number from 1 to 1000"],
      [["--cron", "0 * * * *", "--count", "1001"], "got \"1001\""],
      [["--cron", "0 * * * *", "--count", "ten"], "got \"ten\""],
      [["--cron", "0 * * * *", "--from", "yesterday"], "--from must be an ISO 8601 instant"],
      [["--cron", "0 * * * *", "--from", "2024-02-30T00:00:00Z"], "2024-02-30"],
      [["--cron", "0 * * * *", "--from", "2024-03-01T00:00:00"], "with Z or an offset"],
      [["--cron", "0 * * * *", "--from", "1969-12-31T23:59:59Z"], "in 1970-01-01T00:00:00.000Z to 9999-12-31T23:59:59.999Z"],
      [["--every-ms", "1.5"], "--every-ms must be a whole number of milliseconds"]
    ]
    for (const [args, message] of cases) expectOneLineFailure(await s.run(["schedules", "preview", ...args]), 2, message)
  })

  test("a trigger schedules create refuses (exit 1): bad cron, unknown zone, interval under a second", async () => {
    const s = scratch()
    expectOneLineFailure(await s.run(["schedules", "preview", "--cron", "61 * * * *"]), 1, "invalid cron \"61 * * * *\"", "minute")
    expectOneLineFailure(await s.run(["schedules", "preview", "--cron", "0 9 * * *", "--timezone", "Mars/Olympus"]), 1, "unknown timezone \"Mars/Olympus\"")
    expectOneLineFailure(await s.run(["schedules", "preview", "--every-ms", "500"]), 1, ">= 1000")
  })
})
