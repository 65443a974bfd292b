/**
 * The Promise API's contract (docs/embedding.md): `count` takes the same filter as
 * `list`; a failed `startWorker` leaves no worker behind, so the next one starts; calls
 * after `close()` reject with the typed RosterClosed; `ctx.log` in a Promise handler is
 * persisted with the execution; the `logger` option sends Roster's own lines to stderr
 * (the default), stdout or nowhere, keeping the host app's stdout its own.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test"
import { Effect, Schema } from "effect"
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import * as Recorder from "../../src/actors/Recorder.ts"
import * as Job from "../../src/jobs/Job.ts"
import * as Roster from "../../src/runtime/Roster.ts"
import { bunBinary, repoRoot, tail, waitFor } from "../support/processes.ts"

const a = Job.make({ id: "api/a", payload: Schema.Struct({}), handler: async () => "a" })
const b = Job.make({ id: "api/b", payload: Schema.Struct({}), handler: async () => "b" })
const chatty = Job.make({
  id: "api/chatty",
  payload: Schema.Struct({ n: Schema.Number }),
  handler: async ({ n }, ctx) => {
    ctx.log(`starting ${n}`)
    await Bun.sleep(1)
    ctx.log(`odd input ${n}`, "Warn")
    return n
  }
})

let dir: string
let roster: Roster.RosterHandle
beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "roster-promise-api-"))
  roster = await Roster.open({ db: join(dir, "roster.db"), jobs: [a, b, chatty] }, { configDir: false, logger: { output: "off" } })
})
afterEach(async () => {
  await roster.close()
  rmSync(dir, { recursive: true, force: true })
})

const ended = (id: string) =>
  waitFor(`execution ${id} to end`, async () => {
    const e = await roster.get(id)
    return e != null && ["succeeded", "failed", "cancelled"].includes(e.state) && e
  }, { timeoutMs: 20_000, intervalMs: 10 })

describe("the Promise API", () => {
  test("count takes the filter list takes", async () => {
    await roster.enqueue(a, {})
    await roster.enqueue(a, {})
    await roster.enqueue(b, {}, { delayMs: 60_000 })
    expect((await roster.count({ job: "api/a" })).queued).toBe(2)
    expect((await roster.count({ job: "api/b" })).queued).toBe(1)
    expect((await roster.count()).queued).toBe(3)
    expect((await roster.list({ job: "api/a" })).length).toBe(2)
  })

  test("a startWorker that failed leaves no worker: the next one starts and runs", async () => {
    const error = await roster.startWorker({ queues: ["nope"] }).then(() => undefined, (e) => e)
    expect(error).toMatchObject({ _tag: "InvalidDefinition" })
    expect(error.message).toContain(`queue "nope" is not declared`)
    await roster.startWorker()
    const again = await roster.startWorker().then(() => undefined, (e) => e)
    expect(again).toMatchObject({ _tag: "AlreadyRunning" })
    const { id } = await roster.enqueue(a, {})
    expect((await ended(id)).result).toBe("a")
  })

  test("worker options given in code are held to the same ranges as roster.config.ts", async () => {
    const refusals = [
      [{ concurrency: 0 }, "the worker option concurrency must be"],
      [{ settings: { heartbeatMs: 0 } }, "the worker setting heartbeatMs must be"],
      [{ settings: { leaseMs: 1_000, heartbeatMs: 800 } }, "must be at least two heartbeats"]
    ] as const
    for (const [options, message] of refusals) {
      const error = await roster.startWorker(options).then(() => undefined, (e) => e)
      expect(error).toMatchObject({ _tag: "InvalidDefinition" })
      expect(error.message).toContain(message)
    }
    await roster.startWorker({ concurrency: 2 })
    const { id } = await roster.enqueue(a, {})
    expect((await ended(id)).state).toBe("succeeded")
  })

  test("calls after close reject with the typed RosterClosed", async () => {
    await roster.close()
    for (const call of [() => roster.enqueue(a, {}), () => roster.get("x"), () => roster.count(), () => roster.startWorker(), () => roster.startScheduler()]) {
      const error = await call().then(() => undefined, (e) => e)
      expect(error).toMatchObject({ _tag: "RosterClosed", message: "this Roster handle is closed" })
    }
    await roster.close() // closing twice is fine
  })

  test("enqueue refusals reject with the typed error, and a throw while preparing rejects instead of throwing", async () => {
    const unknown = await roster.enqueue("api/nope", {}).then(() => undefined, (e) => e)
    expect(unknown).toMatchObject({ _tag: "UnknownJob" })
    const invalid = await roster.enqueue(chatty, { n: "x" }).then(() => undefined, (e) => e)
    expect(invalid).toMatchObject({ _tag: "InvalidPayload", job: "api/chatty" })
    const many = await roster.enqueueMany([{ job: a, payload: {} }, { job: chatty, payload: {} }]).then(() => undefined, (e) => e)
    expect(many).toMatchObject({ _tag: "InvalidPayload", item: 2 })
    const getter = { get n(): number { throw new Error("a getter that throws") } }
    let thrown: unknown
    let pending: Promise<unknown> | undefined
    try {
      pending = roster.enqueue(chatty, getter)
    } catch (e) {
      thrown = e
    }
    expect(thrown).toBeUndefined()
    expect(await pending!.then(() => undefined, (e: Error) => e.message)).toContain("a getter that throws")
    expect((await roster.count()).queued).toBe(0)
  })

  test("more enqueues at once than the Recorder's mailbox holds all commit, each with its own id", async () => {
    const n = Recorder.capacity + 2_500
    const results = await Promise.all(Array.from({ length: n }, (_, i) => roster.enqueue(chatty, { n: i })))
    expect(new Set(results.map((r) => r.id)).size).toBe(n)
    expect(results.every((r) => r.inserted)).toBe(true)
    expect((await roster.count({ job: "api/chatty" })).queued).toBe(n)
  })

  test("ctx.log in a Promise handler is persisted with the execution, with its level", async () => {
    await roster.startWorker()
    const { id } = await roster.enqueue(chatty, { n: 7 })
    expect((await ended(id)).state).toBe("succeeded")
    // The LogSink writes in batches (every 100 ms by default).
    const e = await waitFor("both log lines", async () => {
      const now = (await roster.get(id))!
      return now.logs.length >= 2 && now
    }, { timeoutMs: 15_000, intervalMs: 10 })
    expect(e.logs.map((l) => [l.level, l.message])).toEqual([["Info", "starting 7"], ["Warn", "odd input 7"]])
    expect(e.logs.every((l) => l.attempt === 1)).toBe(true)
  })
})

describe("the logger option", () => {
  const script = (logger: string) => `import { Schema } from "effect"
import { Job, Roster } from ${JSON.stringify(join(repoRoot, "src/index.ts"))}
const job = Job.make({ id: "app/hello", payload: Schema.Struct({}), handler: async (_, ctx) => { ctx.log("from the handler") } })
const roster = await Roster.open({ db: process.argv[2], jobs: [job] }, { configDir: false${logger} })
await roster.startWorker()
const { id } = await roster.enqueue(job, {})
while ((await roster.get(id))?.state !== "succeeded") await Bun.sleep(10)
console.log("app output only")
await roster.close()
`
  const run = async (logger: string) => {
    // Under the checkout, so that its "effect" is this checkout's.
    mkdirSync(join(repoRoot, "tests/.tmp"), { recursive: true })
    const file = join(mkdtempSync(join(repoRoot, "tests/.tmp/logger-")), "app.ts")
    writeFileSync(file, script(logger))
    const p = Bun.spawn([bunBinary, file, join(dir, "logger.db")], { cwd: repoRoot, stdout: "pipe", stderr: "pipe" })
    const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited])
    rmSync(dirname(file), { recursive: true, force: true })
    expect(code, tail(stderr)).toBe(0)
    return { stdout, stderr }
  }

  test("by default Roster's lines go to stderr as logfmt and the app's stdout is its own", async () => {
    const { stdout, stderr } = await run("")
    expect(stdout).toBe("app output only\n")
    expect(stderr).toMatch(/level=INFO .*message="worker \S+ serving default×10"/)
    expect(stderr).toContain(`message="from the handler"`)
  }, 30_000)

  test("output off writes nothing, stdout writes there, and level filters", async () => {
    const off = await run(`, logger: { output: "off" }`)
    expect(off).toEqual({ stdout: "app output only\n", stderr: "" })
    const warnOnly = await run(`, logger: { level: "Warn" }`)
    expect(warnOnly.stderr).toBe("")
    const toStdout = await run(`, logger: { output: "stdout" }`)
    expect(toStdout.stdout).toContain(`message="from the handler"`)
    expect(toStdout.stderr).toBe("")
  }, 60_000)
})
