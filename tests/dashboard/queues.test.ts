/**
 * Pausing and resuming a queue from the dashboard, through the server's handler over a
 * real SQLite store: the overview shows each queue's state with a Pause or Resume
 * button, the actions are POSTs held to the same rules as every other action (same
 * origin, and the token when one is set), the pause is stored, and a resume wakes this
 * process's Dispatchers of that queue at once.
 */
import { afterAll, describe, expect, test } from "bun:test"
import { Effect, ManagedRuntime } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { handle } from "../../src/dashboard/Server.ts"
import { Core } from "../../src/runtime/Core.ts"
import * as Roster from "../../src/runtime/Roster.ts"
import { Store } from "../../src/store/Store.ts"
import { fail, ok } from "./fixtures/apps/web/jobs.ts"

const dir = mkdtempSync(join(tmpdir(), "roster-dashboard-queues-"))
const runtime = ManagedRuntime.make(Roster.layer({ db: join(dir, "roster.db"), jobs: [fail, ok] }, { configDir: false }))
const base = "http://127.0.0.1:7460"
const token = "s3cret-token-for-queues"

const send = async (path: string, init: RequestInit = {}, withToken?: string) => {
  const response = await runtime.runPromise(handle(new Request(base + path, { ...init, headers: { host: "127.0.0.1:7460", ...init.headers } }), withToken))
  return { status: response.status, body: await response.text(), location: response.headers.get("location") }
}
const post = (path: string, headers: Record<string, string> = { origin: base }, withToken?: string) => send(path, { method: "POST", headers }, withToken)
const pausedQueues = async () => (await runtime.runPromise(Store.use((s) => s.queuesList))).filter((q) => q.paused).map((q) => q.queue)

afterAll(async () => {
  await runtime.dispose()
  rmSync(dir, { recursive: true, force: true })
})

describe("queue pause on the dashboard", () => {
  test("the overview shows each queue active with a Pause button; pausing redirects back and shows it paused with Resume", async () => {
    const before = await send("/")
    expect(before.status).toBe(200)
    expect(before.body).toContain(`<th>State</th>`)
    expect(before.body).toContain(`action="/queues/default/pause"`)

    const paused = await post("/queues/default/pause")
    expect(paused.status).toBe(303)
    expect(paused.location).toBe("/?notice=queue-paused")
    expect(await pausedQueues()).toEqual(["default"])

    const after = await send(paused.location!)
    expect(after.body).toContain("Queue paused")
    expect(after.body).toContain(`action="/queues/default/resume"`)
    expect(after.body).not.toContain(`action="/queues/default/pause"`)
    expect(after.body).toContain(`b-paused`)
  })

  test("a resume wakes this process's Dispatchers of the queue at once and shows it active again", async () => {
    const woken: Array<number> = []
    const unsubscribe = await runtime.runPromise(Core.use((core) => Effect.sync(() => core.bus.subscribe("default", (at) => woken.push(at)))))
    try {
      const resumed = await post("/queues/default/resume")
      expect(resumed.status).toBe(303)
      expect(resumed.location).toBe("/?notice=queue-resumed")
      expect(woken).toHaveLength(1)
      expect(await pausedQueues()).toEqual([])
      expect((await send("/")).body).toContain(`action="/queues/default/pause"`)
    } finally {
      unsubscribe()
    }
  })

  test("a queue paused elsewhere and declared nowhere here is listed, paused, with Resume", async () => {
    await runtime.runPromise(Store.use((s) => s.queuesPause({ queue: "elsewhere", now: Date.now() })))
    const r = await send("/")
    expect(r.body).toContain("elsewhere")
    expect(r.body).toContain(`action="/queues/elsewhere/resume"`)
    expect((await post("/queues/elsewhere/resume")).status).toBe(303)
    expect(await pausedQueues()).toEqual([])
  })

  test("a cross-origin pause is refused with 403 and changes nothing", async () => {
    expect((await post("/queues/default/pause", { origin: "http://evil.example" })).status).toBe(403)
    expect((await post("/queues/default/pause", {})).status).toBe(403)
    expect(await pausedQueues()).toEqual([])
  })

  test("with a token, a pause without it is refused and changes nothing; with it, it pauses", async () => {
    const refused = await post("/queues/default/pause", { origin: base }, token)
    expect([401, 303]).toContain(refused.status)
    expect(refused.location ?? "").not.toContain("queue-paused")
    expect(await pausedQueues()).toEqual([])
    const allowed = await post("/queues/default/pause", { origin: base, authorization: `Bearer ${token}` }, token)
    expect(allowed.status).toBe(303)
    expect(await pausedQueues()).toEqual(["default"])
    expect((await post("/queues/default/resume", { origin: base, authorization: `Bearer ${token}` }, token)).status).toBe(303)
  })
})
