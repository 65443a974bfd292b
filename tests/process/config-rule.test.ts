/**
 * One configuration rule (DESIGN §7, docs/operations.md): defaults < roster.config.ts <
 * the config an embedding app passes < ROSTER_* < CLI flags. An app embedding Roster
 * (Promise API and Effect Layer) and a `roster worker` started in one folder with one
 * environment use one database — the environment's when ROSTER_DB is set, the config
 * file's otherwise — and a queue declared only in roster.config.ts exists for the
 * embedded app too. Real processes in a project folder.
 *
 * The project lives under tests/.tmp so that its `import "effect"` resolves to this
 * checkout's node_modules, as in a project with Roster installed.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test"
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { bunBinary, parseJsonOutput, repoRoot, spawnRoster, tail } from "../support/processes.ts"

let project: string
const index = JSON.stringify(join(repoRoot, "src/index.ts"))

beforeEach(() => {
  mkdirSync(join(repoRoot, "tests/.tmp"), { recursive: true })
  project = mkdtempSync(join(repoRoot, "tests/.tmp/config-rule-"))
  mkdirSync(join(project, "apps/mail"), { recursive: true })
  writeFileSync(join(project, "roster.config.ts"), `import { defineConfig } from ${index}
export default defineConfig({ db: "from-file.db", appsDir: "apps", queues: { mail: { concurrency: 2 } } })
`)
  writeFileSync(join(project, "apps/mail/jobs.ts"), `import { Effect, Schema } from "effect"
import { Job } from ${index}
export const send = Job.make({
  id: "mail/send",
  queue: "mail",
  payload: Schema.Struct({ to: Schema.String }),
  handler: ({ to }) => Effect.succeed({ sentTo: to })
})
`)
  // The app passes only its Jobs: where the database is, and the mail queue, come from the rule.
  writeFileSync(join(project, "app.ts"), `import { Effect } from "effect"
import { Client, Roster } from ${index}
import { send } from "./apps/mail/jobs.ts"
const mode = process.argv[2]
const loaded = await Effect.runPromise(Roster.loadConfig())
if (mode === "promise") {
  const roster = await Roster.open({ jobs: [send] })
  const { id } = await roster.enqueue(send, { to: "promise@example.com" })
  console.log(JSON.stringify({ id, db: loaded.db }))
  await roster.close()
} else if (mode === "effect") {
  const { id } = await Effect.runPromise(Client.use((c) => c.enqueue(send, { to: "effect@example.com" })).pipe(Effect.provide(Roster.layer({ jobs: [send] }))))
  console.log(JSON.stringify({ id, db: loaded.db }))
} else {
  // An embedded worker serves the queue declared only in roster.config.ts.
  const roster = await Roster.open({ jobs: [send] })
  const { id } = await roster.enqueue(send, { to: "embedded@example.com" })
  await roster.startWorker({ queues: ["mail"] })
  let state = ""
  for (const deadline = Date.now() + 20_000; Date.now() < deadline && state !== "succeeded";) {
    state = (await roster.get(id))?.state ?? ""
    await Bun.sleep(10)
  }
  console.log(JSON.stringify({ id, state }))
  await roster.close()
}
`)
})
afterEach(() => rmSync(project, { recursive: true, force: true }))

const app = async (mode: string, env: Record<string, string>) => {
  const p = Bun.spawn([bunBinary, "app.ts", mode], { cwd: project, env: { ...scrubbed(), ...env }, stdout: "pipe", stderr: "pipe" })
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited])
  expect(code, tail(stderr)).toBe(0)
  return JSON.parse(stdout.trim().split("\n").at(-1)!) as { id: string; db?: string; state?: string }
}

const scrubbed = () => Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("ROSTER_"))) as Record<string, string>

const roster = (args: ReadonlyArray<string>, env: Record<string, string>) => spawnRoster(args, { cwd: project, env }).wait(60_000)

/** The worker drains, then reports the execution: succeeded through the same database. */
const runByWorker = async (id: string, env: Record<string, string>) => {
  const w = await roster(["worker", "--exit-when-idle"], env)
  expect(w.code, tail(w.stderr)).toBe(0)
  const shown = await roster(["executions", "show", id, "--json"], env)
  expect(shown.code, tail(shown.stderr)).toBe(0)
  return parseJsonOutput<{ state: string; result: unknown }>(shown)
}

describe("one configuration rule", () => {
  test("with ROSTER_DB set, a Promise app, an Effect app and roster worker all use its database", async () => {
    const env = { ROSTER_DB: join(project, "from-env.db") }
    const fromPromise = await app("promise", env)
    const fromEffect = await app("effect", env)
    expect(fromPromise.db).toBe(env.ROSTER_DB)
    expect(await runByWorker(fromPromise.id, env)).toMatchObject({ state: "succeeded", result: { sentTo: "promise@example.com" } })
    expect(await runByWorker(fromEffect.id, env)).toMatchObject({ state: "succeeded", result: { sentTo: "effect@example.com" } })
    expect(existsSync(join(project, "from-file.db"))).toBe(false)
  }, 90_000)

  test("without ROSTER_DB, the app and the worker both use roster.config.ts's database", async () => {
    const { id, db } = await app("promise", {})
    expect(db).toBe("from-file.db")
    expect(await runByWorker(id, {})).toMatchObject({ state: "succeeded" })
    expect(existsSync(join(project, "from-file.db"))).toBe(true)
    expect(existsSync(join(project, "roster.db"))).toBe(false)
  }, 90_000)

  test("an embedded worker serves a queue declared only in roster.config.ts", async () => {
    expect(await app("worker", {})).toMatchObject({ state: "succeeded" })
  }, 60_000)
})
