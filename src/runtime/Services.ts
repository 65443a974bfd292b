/**
 * The services a worker's handlers run with (DESIGN §7). Built once per worker, in
 * the worker's scope, before its actors start, so they close after in-flight work:
 * - config `services`: a Layer for every app's handlers;
 * - `apps/<app>/services.ts`: its default-exported Layer, for that app's handlers
 *   (it may use what config `services` provides);
 * - what the embedding app provides to `Roster.layer` (the context the worker starts in);
 * - `Client`, so a handler may enqueue follow-up work; Roster's own Jobs (app `roster`)
 *   also get the `Store`.
 * Roster's internals (Store, Core, the worker's Scope) and the CLI's platform services
 * are taken out of what a handler inherits: a handler uses only what its type says,
 * and a service nobody provides fails the attempt permanently, naming the service.
 */
import { Cause, Context, Effect, Layer, Scope } from "effect"
import { FileSystem } from "effect/FileSystem"
import { Path } from "effect/Path"
import { ChildProcessSpawner } from "effect/process/ChildProcessSpawner"
import { Stdio } from "effect/Stdio"
import { Terminal } from "effect/Terminal"
import { InvalidDefinition } from "../jobs/errors.ts"
import { ScheduleStore } from "../store/ScheduleStore.ts"
import { Store } from "../store/Store.ts"
import type { HandlerContexts } from "../actors/WorkerPool.ts"
import { Core } from "./Core.ts"

/** The first line of why a Layer could not be built. */
const firstLine = (cause: Cause.Cause<unknown>): string => {
  const failure = Cause.findErrorOption(cause)
  const value = failure._tag === "Some" ? failure.value : Cause.squash(cause)
  const text = value instanceof Error || (typeof value === "object" && value !== null && "message" in value)
    ? String((value as { message: unknown }).message)
    : String(value)
  return text.split("\n")[0] ?? text
}

/** Builds `layer` in `scope` on top of `context`; a failure is one InvalidDefinition naming `file`. */
const buildIn = (layer: Layer.Any, scope: Scope.Scope, context: Context.Context<never>, file: string, what: string) =>
  Layer.buildWithScope(layer as Layer.Layer<any, any, any>, scope).pipe(
    Effect.updateContext((_: Context.Context<never>) => context as Context.Context<any>),
    Effect.catchCause((cause) =>
      Effect.fail(new InvalidDefinition({ file, message: `cannot build ${what} (${file}): ${firstLine(cause)}` }))
    )
  ) as unknown as Effect.Effect<Context.Context<never>, InvalidDefinition>

/** Builds every app's services in the current scope and returns each app's handler context. */
export const build = Effect.fnUntraced(function*() {
  const core = yield* Core
  const store = yield* Store
  const scope = yield* Scope.Scope
  const inherited = Context.omit(Store, ScheduleStore, Core, Scope.Scope, FileSystem, Path, Stdio, Terminal, ChildProcessSpawner)(
    yield* Effect.context<never>()
  ) as Context.Context<never>
  const shared = core.config.services === undefined
    ? inherited
    : Context.merge(inherited, yield* buildIn(core.config.services, scope, inherited, "roster.config.ts", "the services of roster.config.ts"))
  const byApp = new Map<string, Context.Context<never>>()
  for (const [app, services] of core.registry.services) {
    byApp.set(app, Context.merge(shared, yield* buildIn(services.layer, scope, shared, services.file, `the services of app "${app}"`)))
  }
  byApp.set("roster", Context.add(shared, Store, store) as Context.Context<never>)
  const contexts: HandlerContexts = (app) => byApp.get(app) ?? shared
  return contexts
})
