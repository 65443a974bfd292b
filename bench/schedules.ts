/**
 * Scheduler fire lag: N enabled Schedules (default 10,000), each an interval of N ms
 * with its anchor spread over the interval, so together they are due at 1,000 fires/s.
 * A real `roster scheduler` process runs for BENCH_SCHED_SECONDS (default 20) and is
 * stopped; lag = the fire's enqueue time − its due time, read from the durable fire
 * history. Also: the scheduler's CPU time and peak RSS, and how many fires it recorded.
 *
 * Env: BENCH_SCHED_N (schedules, default 10000), BENCH_SCHED_RATE (fires/s, default
 * 1000), BENCH_SCHED_SECONDS (run time, default 20).
 */
import { Effect, ManagedRuntime } from "effect"
import { layerSqliteStores } from "../src/store/sqlite/SqliteLayer.ts"
import { ScheduleStore, type ScheduleSpec } from "../src/store/ScheduleStore.ts"
import { benchApps, count, envInt, mb, ms, openReader, percentiles, progress, report, type Section, spawnRoster, tempDb, waitForText } from "./support.ts"

const n = envInt("BENCH_SCHED_N", 10_000)
const perSecond = envInt("BENCH_SCHED_RATE", 1_000)
const seconds = envInt("BENCH_SCHED_SECONDS", 20)
const everyMs = Math.round((n / perSecond) * 1000)

const main = async () => {
  const t = tempDb("schedules")
  try {
    progress(`schedules: creating ${count(n)} interval schedules of ${everyMs} ms (${perSecond} fires/s)`)
    const runtime = ManagedRuntime.make(layerSqliteStores({ path: t.db }))
    const start = Date.now() + 3_000
    await runtime.runPromise(Effect.gen(function*() {
      const store = yield* ScheduleStore
      for (let i = 0; i < n; i++) {
        const anchorAt = Math.floor((i * everyMs) / n)
        const due = start + ((anchorAt - start) % everyMs + everyMs) % everyMs
        const spec: ScheduleSpec = {
          id: `bench/s-${i}`, job: "bench/noop", payload: JSON.stringify({ n: i }), cron: null, everyMs, timezone: "UTC", enabled: true,
          misfire: "once", misfireCap: 1, overlap: "allow", anchorAt, label: "", description: "", nextDueAt: due
        }
        yield* store.schedulesUpsert({ schedule: spec, source: "studio", now: Date.now() })
      }
    }))
    await runtime.dispose()
    const stderrFile = `${t.dir}/scheduler.log`
    const scheduler = spawnRoster(["scheduler"], { db: t.db, appsDir: benchApps, stderrFile })
    await waitForText(stderrFile, "is the leader")
    progress(`schedules: scheduler leading; running ${seconds} s`)
    const from = Date.now()
    await Bun.sleep(seconds * 1000)
    scheduler.stop()
    const result = await scheduler.done
    const db = openReader(t.db)
    const fires = db.query<{ due_at: number; enqueued_at: number; outcome: string }, [number]>(
      "SELECT due_at, enqueued_at, outcome FROM roster_schedule_fires WHERE due_at >= ? ORDER BY due_at"
    ).all(from + 2_000)
    const duplicates = db.query<{ n: number }, []>(
      "SELECT COUNT(*) - COUNT(DISTINCT idempotency_key) AS n FROM roster_executions WHERE schedule_id IS NOT NULL"
    ).get()!.n
    db.close()
    const lags = fires.filter((f) => f.outcome === "enqueued").map((f) => f.enqueued_at - f.due_at)
    const p = percentiles(lags)
    const span = fires.length > 1 ? (fires[fires.length - 1]!.due_at - fires[0]!.due_at) / 1000 : 0
    const cpuShare = result.cpuMs / result.wallMs
    const section: Section = {
      title: `Schedules: ${count(n)} schedules, ${perSecond} fires/s, one \`roster scheduler\` process`,
      headers: ["schedules", "fires measured", "fires/s", "lag p50", "lag p99", "lag max", "missed/skipped", "duplicate executions", "scheduler CPU", "scheduler peak RSS"],
      rows: [[count(n), count(fires.length), String(Math.round(fires.length / Math.max(span, 1))), `${ms(p.p50)} ms`, `${ms(p.p99)} ms`, `${ms(p.max)} ms`, String(fires.length - lags.length), String(duplicates), `${Math.round(cpuShare * 100)}% of a core`, mb(result.peakRssMb)]],
      notes: [
        "lag = enqueued_at − due_at of each fire after a 2 s warm-up, from roster_schedule_fires (the durable history).",
        `scheduler CPU = its user+system time / its wall time (${Math.round(result.wallMs)} ms, start-up included).`
      ],
      checks: [{ target: "fire lag p99 ≤ 100 ms at 1,000 fires/s over 10,000 schedules", measured: `${ms(p.p99)} ms`, met: p.p99 <= 100 }]
    }
    report([section])
  } finally {
    t.cleanup()
  }
}

await main()
