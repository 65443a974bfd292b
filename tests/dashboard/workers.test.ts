/**
 * The overview's Workers card, in-process over a real SQLite store: registered workers
 * with what they serve, stale ones marked, and each live Schedule whose Job no live
 * worker serves named with its queue.
 */
import { afterAll, describe, expect, test } from "bun:test"
import { Effect, ManagedRuntime } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { handle } from "../../src/dashboard/Server.ts"
import * as Roster from "../../src/runtime/Roster.ts"
import { ScheduleStore } from "../../src/store/ScheduleStore.ts"
import { Store } from "../../src/store/Store.ts"
import { fail, ok } from "./fixtures/apps/web/jobs.ts"

const dir = mkdtempSync(join(tmpdir(), "roster-dashboard-"))
const runtime = ManagedRuntime.make(Roster.layer({ db: join(dir, "roster.db"), jobs: [fail, ok] }))

afterAll(async () => {
  await runtime.dispose()
  rmSync(dir, { recursive: true, force: true })
})

const overview = async () => {
  const response = await runtime.runPromise(handle(new Request("http://127.0.0.1:7460/", { headers: { host: "127.0.0.1:7460" } }), undefined))
  return { status: response.status, body: await response.text() }
}

describe("the overview's Workers card", () => {
  test("lists workers with stale ones marked, and names a scheduled Job no live worker serves", async () => {
    const now = Date.now()
    await runtime.runPromise(Effect.gen(function*() {
      const store = yield* Store
      const schedules = yield* ScheduleStore
      yield* store.workersRegister({ worker: { id: "host-a:1:live", host: "host-a", pid: 1, queues: ["default"], jobs: ["web/fail"], version: "0.1.0", staleAfterMs: 60_000 }, now })
      yield* store.workersRegister({ worker: { id: "host-b:2:dead", host: "host-b", pid: 2, queues: ["default"], jobs: ["web/ok"], version: "0.1.0", staleAfterMs: 1_000 }, now: now - 10_000 })
      yield* schedules.schedulesUpsert({
        source: "studio",
        now,
        schedule: {
          id: "web/nightly", job: "web/ok", payload: "{}", cron: "0 3 * * *", everyMs: null, timezone: "UTC", enabled: true,
          misfire: "once", misfireCap: 100, overlap: "allow", anchorAt: 0, label: "", description: "", nextDueAt: now + 3_600_000
        }
      })
    }))
    const { status, body } = await overview()
    expect(status).toBe(200)
    const card = body.slice(body.indexOf("<h2>Workers</h2>"), body.indexOf("<h2>Recent failures</h2>"))
    expect(card).toContain("host-a:1:live")
    expect(card).toContain("host-b:2:dead")
    expect(card.match(/>stale</g)?.length).toBe(1)
    expect(card.match(/>live</g)?.length).toBe(1)
    expect(card).toContain("web/nightly</a>: no live worker serves queue default (job web/ok)")
  })
})
