/**
 * `npm start`: the demo end to end on embedded SQLite. Enqueues the demo Jobs through
 * the Promise API, runs a real worker process (`roster worker --exit-when-idle`) over
 * them, and prints what happened: successes, a transient failure retried until it
 * succeeds, and a permanent failure recorded with its error.
 */
import { mkdirSync, rmSync } from "node:fs"
import { join } from "node:path"
import { Roster } from "../../src/index.ts"

const root = join(import.meta.dir, "../..")
const appsDir = join(import.meta.dir, "apps")
const dataDir = join(import.meta.dir, ".data")
const db = join(dataDir, "demo.db")

rmSync(dataDir, { recursive: true, force: true })
mkdirSync(dataDir, { recursive: true })

console.log(`Roster demo — database ${db}\n`)
const roster = await Roster.open({ db, appsDir })
const enqueued = [
  await roster.enqueue("demo/noop", { n: 1 }),
  await roster.enqueue("demo/noop", { n: 2 }, { idempotencyKey: "noop-2" }),
  await roster.enqueue("demo/noop", { n: 2 }, { idempotencyKey: "noop-2" }),
  await roster.enqueue("demo/sleep", { ms: 300 }),
  await roster.enqueue("demo/flaky", { failTimes: 2 }),
  await roster.enqueue("demo/broken", {})
]
console.log("1. enqueued (the repeated idempotency key returns the same execution):")
for (const r of enqueued) console.log(`   ${r.id}  inserted=${r.inserted}`)
try {
  await roster.enqueue("demo/noop", { n: "not a number" })
} catch (e) {
  console.log(`\n2. an invalid payload is refused, nothing written:\n   ${(e as Error).message}`)
}
await roster.close()

console.log("\n3. a worker process runs them (`roster worker --exit-when-idle`):")
const worker = Bun.spawn([process.execPath, join(root, "src/cli/main.ts"), "worker", "--exit-when-idle"], {
  cwd: root,
  env: { ...process.env, ROSTER_DB: db, ROSTER_APPS_DIR: appsDir },
  stdout: "inherit",
  stderr: "pipe"
})
for await (const chunk of worker.stderr.pipeThrough(new TextDecoderStream())) {
  for (const line of chunk.split("\n")) {
    const m = /level=(\w+).*?message="([^"]*)"/.exec(line)
    if (m) console.log(`   ${m[1]!.padEnd(5)} ${m[2]}`)
  }
}
const code = await worker.exited
console.log(`   worker exited with code ${code}`)

const after = await Roster.open({ db, appsDir })
console.log("\n4. what was recorded:")
for (const e of [...(await after.list())].reverse()) {
  const detail = await after.get(e.id)
  const attempts = detail!.attempts.map((a) => a.outcome).join(" → ")
  console.log(`   ${e.job.padEnd(12)} ${e.state.padEnd(9)} attempts: ${attempts}${e.error ? `  error: ${e.error.message}` : ""}`)
}
console.log(`\n   counts: ${JSON.stringify(await after.count())}`)
await after.close()
console.log(`\nInspect it yourself: ROSTER_DB=${db} bun run roster executions list`)
process.exit(code === 0 ? 0 : 1)
