/**
 * Queue pause through the Promise API (the Client's pauseQueue, resumeQueue and queues):
 * an embedded worker claims nothing from a paused queue while another queue runs, an
 * enqueue is still accepted, and a resume in this process wakes its Dispatcher at once
 * — long before its poll interval, which is set to a minute here so only the wake-up
 * can explain the run.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test"
import { Schema } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Job from "../../src/jobs/Job.ts"
import * as Roster from "../../src/runtime/Roster.ts"

const mail = Job.make({ id: "pause/mail", queue: "mail", payload: Schema.Struct({}), handler: async () => "mailed" })
const other = Job.make({ id: "pause/other", payload: Schema.Struct({}), handler: async () => "done" })

let dir: string
let roster: Roster.RosterHandle
beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "roster-queues-pause-"))
  roster = await Roster.open(
    { db: join(dir, "roster.db"), jobs: [mail, other], queues: { mail: { concurrency: 2 } }, worker: { pollMs: 60_000 } },
    { configDir: false, logger: { output: "off" } }
  )
})
afterEach(async () => {
  await roster.close()
  rmSync(dir, { recursive: true, force: true })
})

const stateAfter = async (id: string, ms: number, until?: string) => {
  const deadline = Date.now() + ms
  let state = ""
  while (Date.now() < deadline) {
    state = (await roster.get(id))?.state ?? ""
    if (state === until) break
    await Bun.sleep(10)
  }
  return state
}

describe("queue pause in the Promise API", () => {
  test("a paused queue runs nothing while another runs; a resume runs it at once; queues() shows both states", async () => {
    expect(await roster.pauseQueue("mail")).toBe(true)
    expect(await roster.pauseQueue("mail")).toBe(false)
    await roster.startWorker()
    const paused = await roster.enqueue(mail, {})
    const running = await roster.enqueue(other, {})
    expect(await stateAfter(running.id, 10_000, "succeeded")).toBe("succeeded")
    expect(await stateAfter(paused.id, 500)).toBe("queued")

    const listed = await roster.queues()
    expect(listed.find((q) => q.name === "mail")).toMatchObject({ declared: true, paused: true, concurrency: 2, globalConcurrency: null, rateLimit: null, queued: 1, running: 0 })
    expect(listed.find((q) => q.name === "default")).toMatchObject({ paused: false, pausedAt: null, queued: 0 })

    const resumedAt = Date.now()
    expect(await roster.resumeQueue("mail")).toBe(true)
    expect(await stateAfter(paused.id, 10_000, "succeeded")).toBe("succeeded")
    expect(Date.now() - resumedAt).toBeLessThan(5_000)
    expect(await roster.resumeQueue("mail")).toBe(false)
    expect((await roster.queues()).find((q) => q.name === "mail")).toMatchObject({ paused: false, pausedAt: null })
  }, 60_000)

  test("a queue no config declares can be paused and is listed as not declared", async () => {
    expect(await roster.pauseQueue("elsewhere")).toBe(true)
    expect((await roster.queues()).find((q) => q.name === "elsewhere")).toMatchObject({ declared: false, paused: true, concurrency: null })
  })
})
