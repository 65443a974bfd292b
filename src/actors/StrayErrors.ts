/**
 * Which execution a stray error came from. A handler may leave a promise rejected with
 * no one to catch it, or throw from a timer it set: the error then reaches the process
 * (`unhandledRejection`, `uncaughtException`), not the handler's fiber. The WorkerPool
 * calls each handler inside {@link attribute}, so code the handler schedules (timers,
 * and everything after an `await` in a Promise handler) carries the execution's id in
 * its async context, and the process guard (runtime/ProcessGuard.ts) can name it. A
 * bare unhandled rejection arrives outside that context, so it cannot be named.
 */
import { AsyncLocalStorage } from "node:async_hooks"

const current = new AsyncLocalStorage<string>()

/** Runs `f` (a handler call) with `executionId` as the async context's execution. */
export const attribute = <A>(executionId: string, f: () => A): A => current.run(executionId, f)

/** The execution the currently running code was scheduled by, if it is known. */
export const currentExecution = (): string | undefined => current.getStore()
