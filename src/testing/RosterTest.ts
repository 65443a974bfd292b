/**
 * The `RosterTest` namespace: the test runtime (`make`, or `open` for async tests),
 * payloads drawn from a Job's Schema for property tests, and the errors and shapes a
 * test reads.
 */
export { type AnyJob, defaultSettings, make, type Options, type Requirements, type RosterTest, type ServicesCheck, type StartError } from "./TestRuntime.ts"
export { open, type RosterTestHandle } from "./PromiseApi.ts"
export { payloadArbitrary, samplePayload } from "./Payloads.ts"
export { DrainTimeout } from "./Quiescence.ts"
export type { TestExecution, TestLog, TestStep } from "./TestExecution.ts"
