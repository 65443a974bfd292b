/**
 * The scheduler embedded in an app (DESIGN §7): `Roster.layer(config, { scheduler: true })`
 * and the Promise API's `startScheduler` / `stopScheduler` run the same runtime as
 * `roster scheduler`: the config's Schedules are synced as file schedules, fires are
 * durable, and two embedded schedulers on one database elect one leader, so no fire is
 * doubled; when the leader stops, the standby takes over. Real SQLite files, real time.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test"
import { Effect, Layer, Schema } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Job from "../../src/jobs/Job.ts"
import * as JobSchedule from "../../src/jobs/JobSchedule.ts"
import { Client } from "../../src/runtime/Client.ts"
import * as Roster from "../../src/runtime/Roster.ts"
import { Schedules } from "../../src/runtime/Schedules.ts"
import { waitFor } from "../support/processes.ts"

const tick = Job.make({ id: "clock/tick", payload: Schema.Struct({}), handler: () => Effect.void })
const everySecond = JobSchedule.make({ id: "clock/every-second", job: tick, payload: {}, every: "1 second" })

let dir: string
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "roster-embedded-scheduler-"))
})
afterEach(() => rmSync(dir, { recursive: true, force: true }))

const config = () => ({ db: join(dir, "roster.db"), jobs: [tick], schedules: [everySecond] })

/** The schedule's row and fire history, read through a Layer of their own. */
const readSchedules = () =>
  Effect.runPromise(
    Effect.gen(function*() {
      const list = yield* Schedules.list()
      const history = yield* Schedules.history(everySecond.id, 500)
      const executions = yield* Client.use((c) => c.list({ scheduleId: everySecond.id, limit: 500 }))
      return { list, history, executions }
    }).pipe(Effect.provide(Roster.layer(config(), { configDir: false })))
  )

/** The same, or undefined while the schedule is not synced yet (for polling). */
const readSchedulesOnceSynced = () => readSchedules().catch(() => undefined)

const expectNoDoubledFire = (history: ReadonlyArray<{ readonly dueAt: number; readonly outcome: string }>) => {
  const dues = history.map((f) => f.dueAt)
  expect(new Set(dues).size).toBe(dues.length)
}

describe("an embedded scheduler", () => {
  test("Roster.layer with scheduler and worker: the config's Schedule is synced, fires, and its executions run", async () => {
    const layer = Roster.layer(config(), { scheduler: true, worker: true, configDir: false, logger: { output: "off" } })
    // Wait for what is asked (two fires, both run), not for a fixed time: a loaded machine
    // may fire late, and a fire just before the layer closes may not have run yet.
    const ranTwo = () =>
      waitFor("two fires, both run", async () => {
        const read = await readSchedulesOnceSynced()
        return read !== undefined && read.history.length >= 2 && read.executions.filter((e) => e.state === "succeeded").length >= 2
      }, { timeoutMs: 20_000, intervalMs: 100 })
    await Effect.runPromise(Effect.scoped(Effect.flatMap(Layer.build(layer), () => Effect.promise(ranTwo))))
    const { list, history, executions } = await readSchedules()
    expect(list.find((s) => s.id === everySecond.id)).toMatchObject({ source: "file", job: tick.id })
    expect(history.length).toBeGreaterThanOrEqual(2)
    expectNoDoubledFire(history)
    expect(history.every((f) => f.outcome === "enqueued")).toBe(true)
    // Every fire enqueued exactly one execution; each ran, or was fired as the layer closed
    // and waits, queued, for the next worker (a stopping worker finishes what it started).
    expect(executions.length).toBe(history.length)
    expect(executions.filter((e) => e.state === "succeeded").length).toBeGreaterThanOrEqual(2)
    expect(executions.every((e) => e.state === "succeeded" || e.state === "queued")).toBe(true)
  }, 30_000)

  test("two Promise apps on one database: one leader, no doubled fire, and the standby takes over when the leader stops", async () => {
    const quiet = { configDir: false as const, logger: { output: "off" as const } }
    const a = await Roster.open(config(), quiet)
    const b = await Roster.open(config(), quiet)
    try {
      const lease = { leaseTtlMs: 1_500, pollMs: 200 }
      await a.startScheduler(lease)
      await b.startScheduler(lease)
      await a.startWorker()
      const second = await b.startScheduler().then(() => undefined, (e) => e)
      expect(second).toMatchObject({ _tag: "AlreadyRunning" })
      await waitFor("two fires from the leader", async () => ((await readSchedulesOnceSynced())?.history.length ?? 0) >= 2, {
        timeoutMs: 20_000,
        intervalMs: 100
      })
      await a.stopScheduler()
      const stoppedAt = Date.now()
      await waitFor("a fire from the standby", async () => (await readSchedulesOnceSynced())?.history.some((f) => f.dueAt > stoppedAt), {
        timeoutMs: 20_000,
        intervalMs: 100
      })
      await b.stopScheduler()
      const { history } = await readSchedules()
      expectNoDoubledFire(history)
      expect(history.filter((f) => f.dueAt < stoppedAt).length).toBeGreaterThanOrEqual(2)
      // B was a standby; it fired only after A's lease lapsed.
      expect(history.filter((f) => f.dueAt > stoppedAt).length).toBeGreaterThanOrEqual(1)
    } finally {
      await a.close()
      await b.close()
    }
  }, 30_000)
})
