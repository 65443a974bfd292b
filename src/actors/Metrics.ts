/**
 * Roster's Effect metrics, defined in one place so every actor counts the same way
 * and the Prometheus exporter (issue 4) has one list to read.
 */
import { Metric } from "effect"

/** Finished attempts, with attributes job, queue and outcome. */
export const executions = Metric.counter("roster_executions_total", {
  description: "attempts finished, by job, queue and outcome",
  incremental: true
})

/** Handler duration in milliseconds. */
export const durations = Metric.histogram("roster_execution_duration_ms", {
  description: "handler duration in milliseconds",
  boundaries: Metric.exponentialBoundaries({ start: 1, factor: 4, count: 10 })
})

/** Expired leases recovered by a Reaper. */
export const leaseRecoveries = Metric.counter("roster_lease_recoveries_total", {
  description: "expired leases recovered",
  incremental: true
})

/** Actors restarted by supervise() after a crash, with attribute actor. */
export const actorRestarts = Metric.counter("roster_actor_restarts_total", {
  description: "actor restarts after a crash",
  incremental: true
})

/** Handler log lines dropped because the LogSink was full. */
export const droppedLogLines = Metric.counter("roster_dropped_log_lines_total", {
  description: "handler log lines dropped under back-pressure",
  incremental: true
})
