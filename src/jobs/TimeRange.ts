/**
 * The range of times Roster stores, and how any stored number becomes text. A time is
 * epoch milliseconds, a whole number from 1970-01-01T00:00:00.000Z to
 * 9999-12-31T23:59:59.999Z: every ISO 8601 text in that range has a four-digit year,
 * both stores hold it in a 64-bit integer, and a delay of one hundred years from any
 * time this side of 9899 stays inside it. Every entry — enqueue's `runAt` and
 * `delayMs`, a schedule's next fire — refuses a time outside it (see Enqueue.ts and
 * Schedules.ts); every surface that prints a stored time goes through {@link isoTime}
 * or {@link timeText}, which never throw, whatever a row written by an older version
 * or by hand holds.
 */

/** The earliest time Roster stores: 1970-01-01T00:00:00.000Z. */
export const minTime = 0

/** The latest time Roster stores: 9999-12-31T23:59:59.999Z. */
export const maxTime = 253_402_300_799_999

/** The longest retry delay: one hundred years (a longer one is cut to it). */
export const maxDelayMs = 100 * 365.25 * 86_400_000

/** The range as people read it, for messages. */
export const rangeText = "1970-01-01T00:00:00.000Z to 9999-12-31T23:59:59.999Z"

/** Whether `ms` is a time Roster stores: a whole number within the range. */
export const isStorableTime = (ms: unknown): ms is number => typeof ms === "number" && Number.isInteger(ms) && ms >= minTime && ms <= maxTime

/** The largest magnitude a JavaScript Date holds (±100,000,000 days from the epoch). */
const dateLimit = 8.64e15

/**
 * ISO 8601 text of a stored time, for any number: years outside 0000–9999 use the
 * extended form (`+275760-09-13T00:00:00.000Z`); a number no Date can hold (beyond
 * ±8.64e15 ms, not finite, fractional junk) becomes `out-of-range time <n>` instead of
 * throwing `RangeError: Invalid Date`.
 */
export const isoTime = (ms: number): string =>
  typeof ms === "number" && Number.isFinite(ms) && Math.abs(ms) <= dateLimit ? new Date(Math.trunc(ms)).toISOString() : `out-of-range time ${String(ms)}`

/** {@link isoTime}, keeping null as null (the JSON shape of optional times). */
export const isoTimeOrNull = (ms: number | null): string | null => (ms === null ? null : isoTime(ms))

/** `2024-05-01 12:03:04` (UTC) for a time in years 0000–9999; the whole {@link isoTime} text otherwise. */
export const timeText = (ms: number): string => {
  const iso = isoTime(ms)
  return /^\d{4}-/.test(iso) ? iso.replace("T", " ").slice(0, 19) : iso
}
