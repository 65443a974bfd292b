/**
 * Tracing from enqueue to run, across processes (docs/tracing.md): an app enqueues
 * inside a span with its own Tracer, a separate `roster worker --exit-when-idle` runs
 * the execution with the Tracer its roster.config.ts `services` gives, and both write
 * the spans they end to a file (tests/fixtures/trace-apps/RecordingTracer.ts). The run's
 * span must continue the enqueue's trace; an enqueue outside any span stores nothing
 * and its run is a trace of its own. On SQLite, and on PostgreSQL when
 * ROSTER_TEST_PG_URL is set (required under CI=true).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { Context, Effect, Schema, Tracer } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as ExecutionSpan from "../../src/actors/ExecutionSpan.ts"
import { Job } from "../../src/index.ts"
import { prepare } from "../../src/runtime/Enqueue.ts"
import * as RecordingTracer from "../fixtures/trace-apps/RecordingTracer.ts"
import { freshSchema, pgAdmin, urlWithSchema } from "../store/drivers.ts"
import { pgUrl, requireService } from "../support/env.ts"
import { bunBinary, repoRoot, spawnRoster, tail } from "../support/processes.ts"

const fixture = join(repoRoot, "tests/fixtures/trace-apps")
const apps = join(fixture, "apps")
const pg = requireService("postgres")

interface Run {
  readonly ids: { readonly traced: string; readonly untraced: string }
  readonly enqueueSpans: ReadonlyArray<RecordingTracer.RecordedSpan>
  readonly workerSpans: ReadonlyArray<RecordingTracer.RecordedSpan>
  /** `executions show --json` of each id. */
  readonly shown: Record<string, { readonly state: string; readonly traceContext?: string | null }>
  readonly workerPid: number
}

/** Enqueue in one process, run in another, on `db`; read back both processes' spans. */
const enqueueThenRun = async (db: string, dir: string): Promise<Run> => {
  const env = { ROSTER_DB: db, ROSTER_APPS_DIR: apps }
  const enqueueFile = join(dir, "enqueue-spans.ndjson")
  const workerFile = join(dir, "worker-spans.ndjson")
  const enqueued = await spawnRoster([], { cwd: dir, env: { ...env, TRACE_FILE: enqueueFile }, command: [bunBinary, join(fixture, "enqueue.ts")] }).wait(60_000)
  if (enqueued.code !== 0) throw new Error(`enqueue.ts exited ${enqueued.code}:\n${tail(enqueued.stderr)}`)
  const ids = JSON.parse(enqueued.stdout.trim()) as Run["ids"]
  // The worker starts in the fixture folder, so it loads the fixture's roster.config.ts.
  const worker = spawnRoster(["worker", "--exit-when-idle"], { cwd: fixture, env: { ...env, TRACE_FILE: workerFile } })
  const ran = await worker.wait(60_000)
  if (ran.code !== 0) throw new Error(`roster worker exited ${ran.code}:\n${tail(ran.stderr)}`)
  const shown: Record<string, Run["shown"][string]> = {}
  for (const id of [ids.traced, ids.untraced]) {
    const r = await spawnRoster(["executions", "show", id, "--json"], { cwd: dir, env }).wait(60_000)
    shown[id] = JSON.parse(r.stdout)
  }
  return { ids, enqueueSpans: await RecordingTracer.read(enqueueFile), workerSpans: await RecordingTracer.read(workerFile), shown, workerPid: worker.pid }
}

const runName = ExecutionSpan.spanName("trace/work")

const suite = (name: string, location: () => Promise<{ db: string; cleanup: () => Promise<void> }>) =>
  describe(`${name}: a run continues the trace of its enqueue across processes`, () => {
    let run: Run
    let cleanup: () => Promise<void> = async () => {}
    const dir = mkdtempSync(join(tmpdir(), "roster-tracing-"))
    beforeAll(async () => {
      const l = await location()
      cleanup = l.cleanup
      run = await enqueueThenRun(l.db, dir)
    }, 120_000)
    afterAll(async () => {
      await cleanup()
      rmSync(dir, { recursive: true, force: true })
    })

    test("both executions ran", () => {
      expect(run.shown[run.ids.traced]?.state).toBe("succeeded")
      expect(run.shown[run.ids.untraced]?.state).toBe("succeeded")
    })

    test("the run's span has the enqueue's trace id and the enqueue's span as its parent", () => {
      const request = run.enqueueSpans.find((s) => s.name === "http.request")!
      expect(request).toBeDefined()
      expect(run.shown[run.ids.traced]?.traceContext).toBe(`00-${request.traceId}-${request.spanId}-01`)
      const execute = run.workerSpans.find((s) => s.name === runName && s.attributes["roster.execution.id"] === run.ids.traced)!
      expect(execute).toBeDefined()
      expect(execute.pid).toBe(run.workerPid)
      expect(execute.pid).not.toBe(request.pid)
      expect(execute.traceId).toBe(request.traceId)
      expect(execute.parent).toEqual({ traceId: request.traceId, spanId: request.spanId, external: true })
      expect(execute).toMatchObject({
        kind: "consumer",
        sampled: true,
        exit: "Success",
        attributes: { "roster.job": "trace/work", "roster.queue": "default", "roster.attempt": 1 }
      })
    })

    test("spans the handler opens are children of the run's span", () => {
      const execute = run.workerSpans.find((s) => s.name === runName && s.attributes["roster.execution.id"] === run.ids.traced)!
      const inner = run.workerSpans.filter((s) => s.name === "trace.inner" && s.parent?.spanId === execute.spanId)
      expect(inner).toHaveLength(1)
      expect(inner[0]!.traceId).toBe(execute.traceId)
    })

    test("an enqueue outside any span stores no trace context, and its run starts a trace of its own", () => {
      expect(run.shown[run.ids.untraced]?.traceContext).toBeNull()
      const execute = run.workerSpans.find((s) => s.name === runName && s.attributes["roster.execution.id"] === run.ids.untraced)!
      expect(execute).toBeDefined()
      expect(execute.parent).toBeNull()
      expect(run.enqueueSpans.map((s) => s.traceId)).not.toContain(execute.traceId)
    })
  })

suite("sqlite", async () => {
  const dir = mkdtempSync(join(tmpdir(), "roster-tracing-db-"))
  return { db: join(dir, "roster.db"), cleanup: async () => rmSync(dir, { recursive: true, force: true }) }
})

if (pg.skip) {
  describe.skip(`postgres: ${pg.reason}`, () => {
    test("skipped", () => {})
  })
} else {
  suite("postgres", async () => {
    const base = pgUrl()!
    const schema = freshSchema("roster_trace")
    await pgAdmin(base, `CREATE SCHEMA "${schema}"`)
    return { db: urlWithSchema(base, schema), cleanup: () => pgAdmin(base, `DROP SCHEMA "${schema}" CASCADE`) }
  })
}

/** One span as an OTLP/JSON export carries it. */
interface OtlpSpan {
  readonly service: string
  readonly name: string
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId?: string
  readonly kind: number
}

describe("an app exporting with OtlpTracer (effect/observability) sees enqueue → run in one trace", () => {
  test("the enqueuing app's span and the worker's run span reach the collector in one trace", async () => {
    // A collector: OTLP/HTTP JSON on /v1/traces, kept in memory.
    const spans: Array<OtlpSpan> = []
    const collector = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: async (req) => {
        const body = (await req.json()) as {
          resourceSpans: Array<{ resource: { attributes: Array<{ key: string; value: { stringValue?: string } }> }; scopeSpans: Array<{ spans: Array<Omit<OtlpSpan, "service">> }> }>
        }
        for (const rs of body.resourceSpans) {
          const service = rs.resource.attributes.find((a) => a.key === "service.name")?.value.stringValue ?? ""
          for (const ss of rs.scopeSpans) for (const span of ss.spans) spans.push({ ...span, service })
        }
        return Response.json({})
      }
    })
    const dir = mkdtempSync(join(tmpdir(), "roster-otlp-"))
    try {
      const env = { ROSTER_DB: join(dir, "roster.db"), ROSTER_APPS_DIR: apps, OTLP_URL: `http://127.0.0.1:${collector.port}` }
      const enqueued = await spawnRoster([], { cwd: dir, env, command: [bunBinary, join(fixture, "otlp/enqueue.ts")] }).wait(60_000)
      expect(enqueued.code).toBe(0)
      const { id } = JSON.parse(enqueued.stdout.trim()) as { id: string }
      // Its roster.config.ts gives the worker OtlpTracer.layer as `services`, as docs/tracing.md shows.
      const ran = await spawnRoster(["worker", "--exit-when-idle"], { cwd: join(fixture, "otlp"), env }).wait(60_000)
      expect(ran.code).toBe(0)
      expect(ran.stderr).toContain(`executionId=${id}`)
      const request = spans.find((s) => s.service === "shop-api" && s.name === "http.request")!
      const execute = spans.find((s) => s.service === "roster-worker" && s.name === runName)!
      expect(request).toBeDefined()
      expect(execute).toBeDefined()
      expect(execute.traceId).toBe(request.traceId)
      expect(execute.parentSpanId).toBe(request.spanId)
      expect(execute.kind).toBe(5) // SPAN_KIND_CONSUMER
    } finally {
      collector.stop(true)
      rmSync(dir, { recursive: true, force: true })
    }
  }, 120_000)
})

describe("the stored trace context", () => {
  const job = Job.make({ id: "t/job", payload: Schema.Struct({ n: Schema.Number }), handler: () => Effect.void })
  const prepared = (effect: (e: Effect.Effect<string | null>) => Effect.Effect<string | null>) =>
    Effect.runSync(effect(Effect.map(Effect.orDie(prepare(job, { n: 1 }, {}, 0, 1024)), (r) => r.traceContext ?? null)))

  test("is the current span's traceparent, with the sampled flag", () => {
    const span = Tracer.externalSpan({ traceId: "4bf92f3577b34da6a3ce929d0e0e4736", spanId: "00f067aa0ba902b7", sampled: false })
    expect(prepared((e) => Effect.withParentSpan(e, span))).toBe("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00")
  })

  test("is null outside any span and under DisablePropagation", () => {
    expect(prepared((e) => e)).toBeNull()
    expect(prepared((e) => e.pipe(Effect.withSpan("quiet"), Effect.provideService(Tracer.DisablePropagation, true)))).toBeNull()
    // A span marked not to propagate is skipped for its parent, as Effect does for child spans.
    const outer = Tracer.externalSpan({ traceId: "4bf92f3577b34da6a3ce929d0e0e4736", spanId: "00f067aa0ba902b7" })
    const quiet = (e: Effect.Effect<string | null>) =>
      e.pipe(Effect.withSpan("quiet", { annotations: Context.make(Tracer.DisablePropagation, true) }), Effect.withParentSpan(outer))
    expect(prepared(quiet)).toBe("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
  })

  test("round-trips to the parent the run's span gets; an invalid value gives none", () => {
    const parent = ExecutionSpan.parentOf("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
    expect(parent).toMatchObject({ _tag: "ExternalSpan", traceId: "4bf92f3577b34da6a3ce929d0e0e4736", spanId: "00f067aa0ba902b7", sampled: true })
    for (const bad of ["", "nonsense", "00-00000000000000000000000000000000-00f067aa0ba902b7-01", "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"]) {
      expect(ExecutionSpan.parentOf(bad)).toBeUndefined()
    }
    expect(ExecutionSpan.parentOf(null)).toBeUndefined()
  })
})
