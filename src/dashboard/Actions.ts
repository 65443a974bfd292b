/**
 * What an operator can do from the dashboard, each a POST answered by a 303 redirect
 * to the page showing the result:
 * - retry a failed or cancelled execution (Client.retry: a new execution with the same
 *   payload, linked by `retryOf`);
 * - cancel a queued execution, or ask a running one to stop (Client.cancel);
 * - pause or resume a schedule (resuming continues from the next fire after now; fires
 *   while paused are not caught up);
 * - run a schedule now: an ordinary execution of its Job with its payload, linked to
 *   the schedule by `scheduleId` (no fire time, no idempotency key), written through
 *   the Recorder like any enqueue (`Schedules.trigger`, as `roster schedules trigger`).
 *   It counts for the overlap policy while it runs.
 * - pause or resume a queue (Client.pauseQueue / resumeQueue): stored, so every worker
 *   on the database stops or resumes claiming from it; any queue the overview lists may
 *   be paused, declared in this dashboard's config or not.
 * The dashboard itself runs nothing: workers claim these executions as usual.
 */
import { Effect } from "effect"
import { Client } from "../runtime/Client.ts"
import { Schedules } from "../runtime/Schedules.ts"
import type { Handler } from "./Http.ts"
import { redirect } from "./Http.ts"
import { q } from "./Html.ts"
import { schedulePath } from "./pages/Schedules.ts"

/** POST /executions/:id/retry */
export const retryExecution: Handler = (_ctx, [id = ""]) =>
  Effect.map(Client.use((c) => c.retry(id)), (r) => redirect(`/executions/${q(r.id)}`, "retried"))

/** POST /executions/:id/cancel */
export const cancelExecution: Handler = (_ctx, [id = ""]) =>
  Effect.map(Client.use((c) => c.cancel(id)), (result) =>
    redirect(`/executions/${q(id)}`, result === "cancelled" ? "cancelled" : result === "requested" ? "cancel-requested" : "already-finished"))

/** POST /schedules/:id/pause */
export const pauseSchedule: Handler = (_ctx, [id = ""]) => Effect.as(Schedules.pause(id), redirect(schedulePath(id), "paused"))

/** POST /schedules/:id/resume */
export const resumeSchedule: Handler = (_ctx, [id = ""]) => Effect.as(Schedules.resume(id), redirect(schedulePath(id), "resumed"))

/** POST /queues/:name/pause */
export const pauseQueue: Handler = (_ctx, [name = ""]) => Effect.as(Client.use((c) => c.pauseQueue(name)), redirect("/", "queue-paused"))

/** POST /queues/:name/resume */
export const resumeQueue: Handler = (_ctx, [name = ""]) => Effect.as(Client.use((c) => c.resumeQueue(name)), redirect("/", "queue-resumed"))

/** POST /schedules/:id/run */
export const runSchedule: Handler = (_ctx, [id = ""]) => Effect.map(Schedules.trigger(id), (r) => redirect(`/executions/${q(r.id)}`, "ran"))
