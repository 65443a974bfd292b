/**
 * Roster's public API. Everything not exported here may change.
 */
export * as Job from "./jobs/Job.ts"
export * as RetryPolicy from "./jobs/RetryPolicy.ts"
export * as JobSchedule from "./jobs/JobSchedule.ts"
export * as Registry from "./jobs/Registry.ts"
export * from "./jobs/errors.ts"
export * as Roster from "./runtime/Roster.ts"
export { Client } from "./runtime/Client.ts"
export type { ExecutionDetail, EnqueueError, JobRef } from "./runtime/Client.ts"
export type { EnqueueOptions } from "./runtime/Enqueue.ts"
export { defineConfig } from "./runtime/Config.ts"
export type { RosterConfig, WorkerSettings } from "./runtime/Config.ts"
export { Store, StoreError } from "./store/Store.ts"
export type { Execution, ExecutionState, ExecutionError, Attempt, Step } from "./store/Execution.ts"
export { enqueueWithin } from "./runtime/Transactional.ts"
export { Schedules } from "./runtime/Schedules.ts"
export { ScheduleStore } from "./store/ScheduleStore.ts"
