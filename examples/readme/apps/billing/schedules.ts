// apps/billing/schedules.ts
import { JobSchedule } from "roster"
import { sendReminders } from "./jobs.ts"

export const weekdayReminders = JobSchedule.make({
  id: "billing/weekday-reminders",
  job: sendReminders,
  payload: { overdueDays: 14 },
  cron: "0 9 * * MON-FRI", // 09:00 Berlin time, in summer and in winter
  timezone: "Europe/Berlin",
  overlap: "skip" // no new run while the previous one is still queued or running
})
