/**
 * `roster/unstable`: Roster's internals that an advanced embedding may reach for — the
 * store drivers' contract (`Store`, `ScheduleStore`, their request and row types) and
 * the Registry builder. Unlike `roster` (src/index.ts) nothing here is a promise: any
 * release may change it, so pin the exact version if you depend on it.
 */
export { Store, StoreError } from "./store/Store.ts"
export type {
  CancelResult,
  ClaimRequest,
  ExecutionFilter,
  Fence,
  HeartbeatResult,
  InsertRequest,
  InsertResult,
  Outcome,
  QueueStats,
  StoreChange,
  StoreErrorReason,
  ThroughputBucket,
  VacuumResult
} from "./store/Store.ts"
export { ScheduleStore } from "./store/ScheduleStore.ts"
export type { FireOutcome, RecordFireRequest, RecordFireResult, ScheduleFire, ScheduleSource, ScheduleSpec, StoredSchedule, SyncResult } from "./store/ScheduleStore.ts"
export * as Registry from "./jobs/Registry.ts"
