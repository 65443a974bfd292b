/**
 * The demo app's Schedules: a fast interval the `npm start` demo watches fire, a
 * per-minute no-op in UTC and a weekday-morning run in a DST-observing zone.
 */
import { JobSchedule } from "../../../../src/index.ts"
import { noop } from "./jobs.ts"

/** Every 2 seconds (at even seconds since the epoch), enqueue demo/noop. */
export const everyTwoSeconds = JobSchedule.make({
  id: "demo/every-two-seconds",
  job: noop,
  payload: { n: 0 },
  every: "2 seconds",
  label: "Every two seconds"
})

/** Every minute, enqueue demo/noop. */
export const everyMinute = JobSchedule.make({
  id: "demo/every-minute",
  job: noop,
  payload: { n: 0 },
  cron: "* * * * *",
  label: "Every minute"
})

/** Weekdays at 09:00 Berlin time; at most one run at a time. */
export const morning = JobSchedule.make({
  id: "demo/morning",
  job: noop,
  payload: { n: 9 },
  cron: "0 9 * * 1-5",
  timezone: "Europe/Berlin",
  overlap: "skip",
  label: "Weekday mornings"
})
