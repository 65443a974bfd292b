/**
 * The worker's Prometheus endpoint: `GET /metrics` on 127.0.0.1 (`roster worker
 * --metrics-port N`) answers every Effect metric of the process in the text
 * exposition format — executions by job, queue and outcome, handler durations, lease
 * recoveries, actor restarts, dropped log lines — plus the queue gauges below.
 *
 * Queue gauges are computed on scrape, from one read of the store
 * (`executionsQueueStats`), so they cost nothing between scrapes. They describe the
 * whole store, not this worker: every worker reports the same values, so aggregate
 * them with `max`, not `sum`. A queue seen once keeps being reported (as 0) after its
 * executions are gone, so a series never just disappears.
 *
 * The text is Effect's own `PrometheusMetrics.format`; the server is `Bun.serve`, not
 * `PrometheusMetrics.layerHttp`, which needs an `HttpRouter` and a platform HTTP server
 * the worker does not otherwise run.
 */
import { Clock, Data, Effect } from "effect"
import { PrometheusMetrics } from "effect/observability"
import * as Metrics from "../actors/Metrics.ts"
import { Store } from "../store/Store.ts"

/** The metrics endpoint could not start (e.g. the port is taken). */
export class MetricsServerError extends Data.TaggedError("MetricsServerError")<{ readonly message: string }> {}

/** The content type of the text exposition format. */
export const contentType = "text/plain; version=0.0.4; charset=utf-8"

/** Options of {@link serve}. */
export interface MetricsServerOptions {
  readonly port: number
  /** Bind address (default 127.0.0.1: metrics are not for the open network). */
  readonly host?: string | undefined
}

/** Makes the scrape: refreshes the queue gauges, then renders every metric. */
export const makeScrape = Effect.fnUntraced(function*() {
  const store = yield* Store
  const seen = new Set<string>()
  yield* Metrics.exposeCounters
  return Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const stats = yield* store.executionsQueueStats({ now }).pipe(
      Effect.tapError((e) => Effect.logWarning(`metrics: queue gauges not refreshed: ${e.message}`)),
      Effect.orElseSucceed(() => undefined)
    )
    if (stats !== undefined) {
      const byQueue = new Map(stats.map((s) => [s.queue, s]))
      for (const s of stats) seen.add(s.queue)
      for (const queue of seen) {
        const s = byQueue.get(queue)
        yield* Metrics.queueObserved(queue, {
          queued: s?.counts.queued ?? 0,
          running: s?.counts.running ?? 0,
          oldestDueAgeMs: s?.oldestDueAt == null ? 0 : Math.max(0, now - s.oldestDueAt)
        })
      }
    }
    return yield* PrometheusMetrics.format()
  })
})

/** Serves `GET /metrics` in the current scope; stops when the scope closes. */
export const serve = Effect.fnUntraced(function*(options: MetricsServerOptions) {
  const host = options.host ?? "127.0.0.1"
  const scrape = yield* makeScrape()
  const context = yield* Effect.context<never>()
  const run = Effect.runPromiseWith(context)
  const respond = (req: Request): Promise<Response> | Response => {
    const path = new URL(req.url).pathname
    if (path !== "/metrics") return new Response("not found; metrics are at /metrics\n", { status: 404 })
    if (req.method !== "GET" && req.method !== "HEAD") return new Response("method not allowed\n", { status: 405, headers: { allow: "GET, HEAD" } })
    return run(scrape).then((body) => new Response(body, { headers: { "content-type": contentType, "cache-control": "no-store" } }))
  }
  const server = yield* Effect.acquireRelease(
    Effect.try({
      try: () => Bun.serve({ hostname: host, port: options.port, fetch: respond }),
      catch: (cause) => new MetricsServerError({ message: `cannot serve metrics on ${host}:${options.port}: ${(cause as Error).message}` })
    }),
    (s) => Effect.promise(() => s.stop(true))
  )
  const url = `${server.url.toString().replace(/\/$/, "")}/metrics`
  yield* Effect.logInfo(`metrics on ${url}`)
  return { url, port: server.port ?? options.port }
})

