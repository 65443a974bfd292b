/**
 * Roster's public API: what an app needs to define Jobs and Schedules, run and embed
 * Roster, enqueue and inspect executions, and handle its errors (tests use
 * `roster/testing`). Everything not exported here may change. The store drivers'
 * contract (`Store`, `ScheduleStore`) and the Registry builder are deliberately not
 * here: they are in `roster/unstable` (src/unstable.ts), free to change in any release.
 */
export * as Job from "./jobs/Job.ts"
export * as RetryPolicy from "./jobs/RetryPolicy.ts"
export * as JobSchedule from "./jobs/JobSchedule.ts"
export * from "./jobs/errors.ts"
export * as Roster from "./runtime/Roster.ts"
export { Client } from "./runtime/Client.ts"
export type { ExecutionDetail, EnqueueError, JobRef, WaitOptions } from "./runtime/Client.ts"
export type { EnqueueOptions } from "./runtime/Enqueue.ts"
export { defineConfig } from "./runtime/Config.ts"
export type { RosterConfig, WorkerSettings } from "./runtime/Config.ts"
// StoreError is what a Client operation fails with when the database does; the Store itself is unstable.
export { StoreError } from "./store/Store.ts"
export type { Execution, ExecutionState, ExecutionError, Attempt, Step } from "./store/Execution.ts"
// What Client.queues() returns: one queue's pause state, concurrency and counts.
export type { QueueSummary } from "./store/QueueRules.ts"
export { enqueueWithin } from "./runtime/Transactional.ts"
export { Schedules } from "./runtime/Schedules.ts"
export { ScheduleNotFound, ScheduleReadOnly, ScheduleSourceConflict } from "./store/ScheduleStore.ts"
export { enqueueWithinSql } from "./runtime/TransactionalPg.ts"
