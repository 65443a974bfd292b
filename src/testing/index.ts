/**
 * `roster/testing`: run your Jobs and Schedules on the real Roster runtime — an
 * in-memory SQLite store and the real actors — on the TestClock. See docs/testing.md.
 */
export * as RosterTest from "./RosterTest.ts"
export { DrainTimeout } from "./Quiescence.ts"
export type { RosterTestHandle } from "./PromiseApi.ts"
export type { TestExecution, TestLog, TestStep } from "./TestExecution.ts"
