/**
 * Metrics: Effect metrics render in the Prometheus text format (Effect's own
 * PrometheusMetrics, which the endpoint serves), every store operation is counted and
 * timed by the one instrumented Store, and a real
 * `roster worker --metrics-port 0` serves them at /metrics on 127.0.0.1 with the
 * executions counted per job, queue and outcome, the duration histogram and the queue
 * gauges read from the store.
 */
import { describe, expect, test } from "bun:test"
import { Effect, Metric } from "effect"
import { PrometheusMetrics } from "effect/observability"
import * as Metrics from "../../src/actors/Metrics.ts"
import { type Store, StoreError } from "../../src/store/Store.ts"
import { demoApps, tail, useScratch, waitFor } from "../support/processes.ts"

/** The samples of an exposition text: `name{labels}` → value. */
const parse = (text: string): Map<string, number> => {
  const out = new Map<string, number>()
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue
    const i = line.lastIndexOf(" ")
    out.set(line.slice(0, i), Number(line.slice(i + 1)))
  }
  return out
}

describe("Prometheus text format", () => {
  test("counters, gauges and histograms render with HELP, TYPE, labels in attribute order and cumulative buckets", async () => {
    const text = await Effect.runPromise(
      Effect.gen(function*() {
        const counter = Metric.counter("jobs_total", { description: "jobs\ndone", incremental: true })
        yield* Metric.update(Metric.withAttributes(Metric.gauge("depth"), { queue: "a" }), 5)
        yield* Metric.update(Metric.withAttributes(counter, { job: "x/y", queue: "a" }), 2)
        yield* Metric.update(Metric.withAttributes(counter, { job: "x/y", queue: "b\"q" }), 1)
        const histogram = Metric.histogram("took_ms", { boundaries: [10, 100] })
        for (const v of [5, 50, 500]) yield* Metric.update(histogram, v)
        return yield* PrometheusMetrics.format()
      }).pipe(Effect.provideService(Metric.MetricRegistry, new Map()))
    )
    expect(text).toBe([
      "# TYPE depth gauge",
      "depth{queue=\"a\"} 5",
      "# HELP jobs_total jobs\\ndone",
      "# TYPE jobs_total counter",
      "jobs_total{job=\"x/y\",queue=\"a\"} 2",
      "jobs_total{job=\"x/y\",queue=\"b\\\"q\"} 1",
      "# TYPE took_ms histogram",
      "took_ms_bucket{le=\"10\"} 1",
      "took_ms_bucket{le=\"100\"} 2",
      "took_ms_bucket{le=\"+Inf\"} 3",
      "took_ms_sum 555",
      "took_ms_count 3",
      ""
    ].join("\n"))
  })
})

describe("the instrumented Store", () => {
  test("counts every operation by outcome and times it, and leaves its answer as it was", async () => {
    const fake = {
      migrate: Effect.void,
      executionsGet: (id: string) => Effect.succeed({ id }),
      executionsClaim: () => Effect.fail(new StoreError({ message: "locked" }))
    } as unknown as Store["Service"]
    const { got, claim, samples } = await Effect.runPromise(
      Effect.gen(function*() {
        const store = Metrics.instrumentStore(fake)
        yield* store.migrate
        const got = yield* store.executionsGet("a")
        yield* store.executionsGet("b")
        const claim = yield* Effect.flip(store.executionsClaim({ queue: "q", jobs: ["x/y"], workerId: "w", limit: 1, now: 0, leaseMs: 1 }))
        return { got, claim, samples: parse(yield* PrometheusMetrics.format()) }
      }).pipe(Effect.provideService(Metric.MetricRegistry, new Map()))
    )
    expect(got).toEqual({ id: "a" } as never)
    expect(claim.message).toBe("locked")
    expect(samples.get("roster_store_operations_total{operation=\"migrate\",outcome=\"ok\"}")).toBe(1)
    expect(samples.get("roster_store_operations_total{operation=\"executionsGet\",outcome=\"ok\"}")).toBe(2)
    expect(samples.get("roster_store_operations_total{operation=\"executionsClaim\",outcome=\"error\"}")).toBe(1)
    expect(samples.get("roster_store_operation_duration_ms_count{operation=\"executionsGet\"}")).toBe(2)
  })
})

describe("roster worker --metrics-port", () => {
  const scratch = useScratch({ apps: demoApps })

  test("serves executions per job, queue and outcome with the right counts, durations and queue gauges", async () => {
    const s = scratch()
    const enqueue = async (job: string, payload: unknown) => expect((await s.run(["enqueue", job, "--payload", JSON.stringify(payload)])).code).toBe(0)
    for (let n = 0; n < 3; n++) await enqueue("demo/noop", { n })
    await enqueue("demo/broken", {})
    await enqueue("demo/flaky", { failTimes: 1 })
    await enqueue("demo/sleep", { ms: 60_000 })

    const worker = s.spawn(["worker", "--metrics-port", "0"], { env: { ROSTER_GRACE_MS: "200" } })
    const url = await waitFor("the metrics endpoint", () => {
      if (worker.exited) throw new Error(`worker exited:\n${tail(worker.stderrSoFar())}`)
      return /metrics on (http:\/\/\S+\/metrics)/.exec(worker.stderrSoFar())?.[1]
    })
    expect(url).toStartWith("http://127.0.0.1:")
    await waitFor("the executions to finish", () => s.count("SELECT COUNT(*) FROM roster_executions WHERE state IN ('succeeded', 'failed')") === 5)
    await waitFor("the sleep to start", () => s.count("SELECT COUNT(*) FROM roster_executions WHERE state = 'running'") === 1)

    const response = await fetch(url)
    expect(response.status).toBe(200)
    expect(response.headers.get("content-type")).toContain("text/plain; version=0.0.4")
    const text = await response.text()
    const samples = parse(text)
    const executions = (job: string, outcome: string) => samples.get(`roster_executions_total{job="${job}",outcome="${outcome}",queue="default"}`)
    expect(executions("demo/noop", "succeeded")).toBe(3)
    expect(executions("demo/broken", "failed")).toBe(1)
    expect(executions("demo/flaky", "retry")).toBe(1)
    expect(executions("demo/flaky", "succeeded")).toBe(1)
    expect(executions("demo/noop", "failed")).toBeUndefined()
    expect(text).toContain("# TYPE roster_executions_total counter")
    expect(text).toContain("# TYPE roster_execution_duration_ms histogram")
    expect(samples.get("roster_execution_duration_ms_count")).toBe(6)
    expect(samples.get("roster_execution_duration_ms_bucket{le=\"+Inf\"}")).toBe(6)
    expect(samples.get("roster_queue_depth{queue=\"default\",state=\"running\"}")).toBe(1)
    expect(samples.get("roster_queue_depth{queue=\"default\",state=\"queued\"}")).toBe(0)
    expect(samples.get("roster_queue_oldest_due_age_ms{queue=\"default\"}")).toBe(0)
    expect(samples.get("roster_lease_recoveries_total")).toBe(0)
    expect(samples.get("roster_dropped_log_lines_total")).toBe(0)
    expect(samples.get("roster_store_operations_total{operation=\"executionsClaim\",outcome=\"ok\"}")).toBeGreaterThan(0)
    expect(text).toContain("# TYPE roster_store_operation_duration_ms histogram")

    expect((await fetch(url.replace("/metrics", "/other"))).status).toBe(404)
    worker.kill("SIGTERM")
    // The sleeping handler is released on shutdown (grace period shortened).
    expect((await worker.wait()).code).toBe(0)
  }, 90_000)
})
