/**
 * Handlers with requirements (DESIGN §7): a handler uses the app's own services, given
 * by the embedding app, config `services` or `apps/<app>/services.ts`; they are built
 * once per worker and closed after in-flight work; nothing of Roster's internals is in
 * a handler's context; a service nobody provides fails the attempt permanently, naming
 * it. Real SQLite files, the real worker, real time.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test"
import { Context, Effect, Layer, Option, Schema } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Job from "../../src/jobs/Job.ts"
import { Client } from "../../src/runtime/Client.ts"
import * as Roster from "../../src/runtime/Roster.ts"
import { ScheduleStore } from "../../src/store/ScheduleStore.ts"
import { Store } from "../../src/store/Store.ts"
import { Core } from "../../src/runtime/Core.ts"
import { waitFor } from "../support/processes.ts"

class Mailer extends Context.Service<Mailer, { readonly send: (to: string) => Effect.Effect<string> }>()("test/Mailer") {}

const sent: Array<string> = []
const MailerLive = Layer.succeed(Mailer, { send: (to) => Effect.sync(() => (sent.push(to), `sent to ${to}`)) })

const welcome = Job.make({
  id: "mail/welcome",
  payload: Schema.Struct({ to: Schema.String }),
  result: Schema.String,
  handler: ({ to }) => Mailer.use((m) => m.send(to))
})

let dir: string
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "roster-services-"))
  sent.length = 0
})
afterEach(() => rmSync(dir, { recursive: true, force: true }))

/** Polls the handle until the execution has ended. */
const ended = (roster: Roster.RosterHandle, id: string) =>
  waitFor(`execution ${id} to end`, async () => {
    const e = await roster.get(id)
    return e != null && (e.state === "succeeded" || e.state === "failed" || e.state === "cancelled") && e
  }, { timeoutMs: 20_000, intervalMs: 10 })

/** In an Effect program: waits for the execution to end. */
const endedEffect = (id: string) =>
  Effect.gen(function*() {
    const client = yield* Client
    for (const deadline = Date.now() + 20_000; Date.now() < deadline;) {
      const e = yield* client.get(id)
      if (e && (e.state === "succeeded" || e.state === "failed" || e.state === "cancelled")) return e
      yield* Effect.promise(() => Bun.sleep(10))
    }
    return yield* Effect.die(new Error(`execution ${id} did not end`))
  })

describe("a handler uses the app's services", () => {
  test("Roster.layer with a worker runs a handler with the service the app provides", async () => {
    const layer = Roster.layer({ db: join(dir, "a.db"), jobs: [welcome] }, { worker: true, configDir: false }).pipe(Layer.provide(MailerLive))
    const result = await Effect.runPromise(
      Effect.gen(function*() {
        const { id } = yield* Client.use((c) => c.enqueue(welcome, { to: "ada@example.com" }))
        return yield* endedEffect(id)
      }).pipe(Effect.provide(layer))
    )
    expect(result.state).toBe("succeeded")
    expect(result.result).toBe("sent to ada@example.com")
    expect(sent).toEqual(["ada@example.com"])
  })

  test("config services reach a Promise app's handlers", async () => {
    const roster = await Roster.open({ db: join(dir, "b.db"), jobs: [welcome], services: MailerLive }, { configDir: false, logger: { output: "off" } })
    try {
      await roster.startWorker()
      const { id } = await roster.enqueue(welcome, { to: "grace@example.com" })
      expect((await ended(roster, id)).result).toBe("sent to grace@example.com")
    } finally {
      await roster.close()
    }
  })

  test("the services are built once per worker and closed after in-flight work", async () => {
    const events: Array<string> = []
    let builds = 0
    const Counted = Layer.effect(Mailer, Effect.acquireRelease(
      Effect.sync(() => (builds++, events.push("built"), { send: (to: string) => Effect.succeed(to) })),
      () => Effect.sync(() => void events.push("closed"))
    ))
    const slow = Job.make({
      id: "mail/slow",
      payload: Schema.Struct({ ms: Schema.Number }),
      handler: ({ ms }) =>
        Effect.gen(function*() {
          const m = yield* Mailer
          yield* Effect.sleep(ms)
          events.push("handler done")
          return yield* m.send("x")
        })
    })
    const roster = await Roster.open({ db: join(dir, "c.db"), jobs: [slow], services: Counted }, { configDir: false, logger: { output: "off" } })
    await roster.startWorker()
    const ids = await Promise.all([1, 2, 3].map(() => roster.enqueue(slow, { ms: 5 })))
    for (const { id } of ids) expect((await ended(roster, id)).state).toBe("succeeded")
    const { id } = await roster.enqueue(slow, { ms: 300 })
    // Running before the stop, or the stop would leave it queued (and the test would not be about in-flight work).
    await waitFor("the slow execution to start", async () => ["running", "succeeded"].includes((await roster.get(id))?.state ?? ""), { timeoutMs: 15_000, intervalMs: 5 })
    await roster.stopWorker()
    expect(builds).toBe(1)
    expect(events.slice(-2)).toEqual(["handler done", "closed"])
    expect((await roster.get(id))?.state).toBe("succeeded")
    await roster.close()
  })

  test("a services Layer that fails to build stops the worker start, saying so", async () => {
    const Broken = Layer.effect(Mailer, Effect.fail(new Error("SMTP_URL is not set")))
    const roster = await Roster.open({ db: join(dir, "d.db"), jobs: [welcome], services: Broken }, { configDir: false, logger: { output: "off" } })
    try {
      const error = await roster.startWorker().then(() => undefined, (e) => e)
      expect(error).toMatchObject({ _tag: "InvalidDefinition" })
      expect(error.message).toContain("roster.config.ts")
      expect(error.message).toContain("SMTP_URL is not set")
    } finally {
      await roster.close()
    }
  })
})

describe("nothing is slipped into a handler's context", () => {
  test("a handler finds no Store, ScheduleStore or Core, but may ask for the Client", async () => {
    const probe = Job.make({
      id: "probe/context",
      payload: Schema.Struct({}),
      handler: () =>
        Effect.gen(function*() {
          const store = yield* Effect.serviceOption(Store)
          const schedules = yield* Effect.serviceOption(ScheduleStore)
          const core = yield* Effect.serviceOption(Core)
          const client = yield* Client
          return { store: Option.isSome(store), schedules: Option.isSome(schedules), core: Option.isSome(core), client: typeof client.enqueue }
        })
    })
    const roster = await Roster.open({ db: join(dir, "e.db"), jobs: [probe] }, { configDir: false, logger: { output: "off" } })
    try {
      await roster.startWorker()
      const { id } = await roster.enqueue(probe, {})
      expect((await ended(roster, id)).result).toEqual({ store: false, schedules: false, core: false, client: "function" })
    } finally {
      await roster.close()
    }
  })

  test("a service nobody provides fails the attempt permanently, naming the service", async () => {
    // The cast is what the type system stops: at run time the worker must still say what is missing.
    const config: { db: string; jobs: ReadonlyArray<Job.Job> } = { db: join(dir, "f.db"), jobs: [welcome] }
    const roster = await Roster.open(config, { configDir: false, logger: { output: "off" } })
    try {
      await roster.startWorker()
      const { id } = await roster.enqueue(welcome, { to: "x@example.com" })
      const e = await ended(roster, id)
      expect(e.state).toBe("failed")
      expect(e.attempt).toBe(1)
      expect(e.error).toMatchObject({ tag: "MissingService", retryable: false })
      expect(e.error?.message).toContain("test/Mailer")
      expect(e.error?.message).toContain("apps/mail/services.ts")
    } finally {
      await roster.close()
    }
  })
})
