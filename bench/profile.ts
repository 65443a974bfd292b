/**
 * Where a worker's time goes: the drain of benchmark 1, run in-process through
 * `Roster.layer(config, { worker })` with the SQLite profiler of `sqlprofile.ts`
 * installed, so the wall time splits into SQLite work — each statement, each
 * transaction and its BEGIN/COMMIT (the fsync) — and everything else on the one JS
 * thread: Effect fibers, semaphore, FiberMap, actor mailboxes, payload decode, result
 * encode, the handler, logging.
 *
 * Env: BENCH_PROFILE_N (default 50000), BENCH_CONCURRENCY (default 50),
 * BENCH_DRAIN_JOBS (default demo/noop,bench/noop).
 */
import { Effect, Layer, Logger } from "effect"
import { closeSync, openSync, writeSync } from "node:fs"
import { Client, Roster } from "../src/index.ts"
import type { RosterConfig } from "../src/index.ts"
import { install, profileHeaders, profileRows, totalMs } from "./sqlprofile.ts"
import { benchApps, count, demoApps, envInt, ms, openReader, progress, rate, report, sampleRss, type Section, tempDb } from "./support.ts"

const n = envInt("BENCH_PROFILE_N", 50_000)
const concurrency = envInt("BENCH_CONCURRENCY", 50)
const jobs = (process.env.BENCH_DRAIN_JOBS ?? "demo/noop,bench/noop").split(",").map((s) => s.trim())

/** Drains `n` executions of `job` in-process and returns the timing split. */
export const profileOnce = async (job: string): Promise<Section> => {
  const profile = install()
  const tmp = tempDb("profile")
  const logFd = openSync(`${tmp.dir}/worker.log`, "w")
  try {
    const config: RosterConfig = { db: tmp.db, appsDir: job.startsWith("bench/") ? benchApps : demoApps }
    // Like the CLI: one logfmt line per log, written synchronously (to a file here, not a terminal).
    const logger = Logger.layer([Logger.map(Logger.formatLogFmt, (line) => void writeSync(logFd, line + "\n"))])
    await Effect.runPromise(Effect.gen(function*() {
      const client = yield* Client
      for (let i = 0; i < n; i += 10_000) {
        const items = []
        for (let j = i; j < Math.min(n, i + 10_000); j++) items.push({ job, payload: { n: j } })
        yield* client.enqueueMany(items)
      }
    }).pipe(Effect.provide(Roster.layer(config).pipe(Layer.provideMerge(logger)))))

    const reader = openReader(tmp.db)
    profile.ignored.add(reader)
    const left = reader.query<{ n: number }, []>("SELECT count(*) AS n FROM roster_executions WHERE state IN ('queued', 'running')")
    profile.reset()
    const rss = sampleRss()
    const cpuBefore = process.cpuUsage()
    const started = performance.now()
    await Effect.runPromise(Effect.gen(function*() {
      while ((left.get()?.n ?? 0) > 0) yield* Effect.sleep(200)
    }).pipe(Effect.provide(Roster.layer(config, { worker: { concurrency } }).pipe(Layer.provideMerge(logger)))))
    const processMs = performance.now() - started
    const cpu = process.cpuUsage(cpuBefore)
    const cpuMs = (cpu.user + cpu.system) / 1000
    const peakRssMb = rss.stop()
    const span = reader.query<{ first: number; last: number; done: number }, []>(
      "SELECT min(started_at) AS first, max(finished_at) AS last, count(*) AS done FROM roster_executions WHERE state = 'succeeded'"
    ).get()!
    reader.close()
    // The drain proper: first start to last finish (start-up and shutdown excluded).
    const wallMs = Math.max(1, span.last - span.first)
    const sqliteMs = totalMs(profile)
    progress(`profile ${job}: ${rate((span.done / wallMs) * 1000)} jobs/s in-process`)
    return {
      title: `5. Where the time goes: in-process drain of ${count(n)} × ${job}, concurrency ${concurrency}`,
      headers: profileHeaders,
      rows: [
        ...profileRows(profile, wallMs, span.done),
        ["all SQLite work", "", "", sqliteMs.toFixed(0), `${((sqliteMs / wallMs) * 100).toFixed(1)}%`, ((sqliteMs / span.done) * 1000).toFixed(1), ""],
        ["outside SQLite (Effect runtime, actors, decode/encode, handler, logging)", "", "", (wallMs - sqliteMs).toFixed(0), `${(((wallMs - sqliteMs) / wallMs) * 100).toFixed(1)}%`, (((wallMs - sqliteMs) / span.done) * 1000).toFixed(1), ""]
      ],
      notes: [
        `drained ${count(span.done)} at ${rate((span.done / wallMs) * 1000)} jobs/s in-process (first start → last finish ${ms(wallMs)} ms); the worker layer's whole life incl. start-up and shutdown was ${ms(processMs)} ms, CPU ${ms(cpuMs)} ms (${Math.round((cpuMs / processMs) * 100)}% of one core); peak RSS ${Math.round(peakRssMb)} MiB.`,
        "SQLite rows count start-up statements too (migrations, schedule sync), which fall outside the drain span; shares are of the drain span.",
        "a statement's time includes its commit when it runs outside a transaction (the claim UPDATE is one such autocommit statement)."
      ],
      checks: []
    }
  } finally {
    closeSync(logFd)
    tmp.cleanup()
  }
}

/** Profiles each job. */
export const run = async (): Promise<ReadonlyArray<Section>> => {
  const sections: Array<Section> = []
  for (const job of jobs) sections.push(await profileOnce(job))
  return sections
}

if (import.meta.main) report(await run())
