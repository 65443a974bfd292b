/**
 * `npm start`: the demo end to end on embedded SQLite, laid out as Roster runs in
 * production — a scheduler process and a worker process (`roster scheduler`,
 * `roster worker`) sharing one database file, and this script enqueueing through the
 * Promise API. It shows Jobs succeeding, a transient failure retried until it
 * succeeds, a permanent failure kept with its error, and a Schedule
 * (`demo/every-two-seconds`) firing; then it stops both processes with SIGTERM, prints
 * what was recorded and exits 0 (non-zero if anything did not happen). About 6 s.
 */
import { mkdirSync, rmSync } from "node:fs"
import { join, relative } from "node:path"
import { Roster } from "../../src/index.ts"
import { startRoster } from "./process.ts"

const root = join(import.meta.dir, "../..")
const appsDir = join(import.meta.dir, "apps")
const dataDir = join(import.meta.dir, ".data")
const db = join(dataDir, "demo.db")
const scheduleId = "demo/every-two-seconds"
const firesToSee = 3
const deadlineMs = 60_000

rmSync(dataDir, { recursive: true, force: true })
mkdirSync(dataDir, { recursive: true })
console.log(`Roster demo on ${relative(root, db)} (embedded SQLite)\n`)
const roster = await Roster.open({ db, appsDir }) // creates and migrates the file

console.log("1. a scheduler process and a worker process start (their log lines follow, as they come):")
const scheduler = startRoster("scheduler", { root, db, appsDir })
const worker = startRoster("worker", { root, db, appsDir })
await Promise.all([scheduler.ready(/is the leader/), worker.ready(/ serving /)])

console.log("\n2. this script enqueues through the Promise API (Roster.open); the repeated idempotency key returns the same execution:")
const enqueued = [
  ["demo/noop", { n: 1 }, {}],
  ["demo/noop", { n: 2 }, { idempotencyKey: "noop-2" }],
  ["demo/noop", { n: 2 }, { idempotencyKey: "noop-2" }],
  ["demo/sleep", { ms: 300 }, {}],
  ["demo/flaky", { failTimes: 2 }, {}],
  ["demo/broken", {}, {}]
] as const
const ids = new Set<string>()
for (const [job, payload, options] of enqueued) {
  const r = await roster.enqueue(job, payload, options)
  ids.add(r.id)
  console.log(`   ${job.padEnd(11)} ${JSON.stringify(payload).padEnd(15)} → ${r.id} inserted=${r.inserted}`)
}
try {
  await roster.enqueue("demo/noop", { n: "not a number" })
} catch (e) {
  console.log(`   an invalid payload is refused, nothing written: ${(e as Error).message}`)
}

console.log(`\n3. waiting until those have finished and ${scheduleId} has fired ${firesToSee} times …`)
const finished = (state: string) => state === "succeeded" || state === "failed" || state === "cancelled"
const started = Date.now()
while (true) {
  const mine = (await roster.list()).filter((e) => ids.has(e.id))
  const fired = await roster.list({ scheduleId, state: "succeeded" })
  if (mine.every((e) => finished(e.state)) && fired.length >= firesToSee) break
  if (Date.now() - started > deadlineMs) {
    console.log(`   not done after ${deadlineMs / 1000} s; stopping`)
    break
  }
  await Bun.sleep(100)
}

console.log("\n4. both processes are stopped with SIGTERM (graceful: in-flight work finishes or is released):")
const [schedulerCode, workerCode] = await Promise.all([scheduler.stop(), worker.stop()])
console.log(`   scheduler exited with code ${schedulerCode}, worker exited with code ${workerCode}`)

console.log("\n5. what was recorded (oldest first):")
const all = [...(await roster.list())].reverse()
for (const e of all) {
  const detail = await roster.get(e.id)
  const attempts = detail!.attempts.map((a) => a.outcome).join(" → ")
  const origin = e.scheduleId ? `  fire ${new Date(e.fireAt!).toISOString().slice(11, 23)} of ${e.scheduleId}` : ""
  console.log(`   ${e.job.padEnd(11)} ${e.state.padEnd(9)} attempts: ${attempts}${e.error ? `  error: ${e.error.message}` : ""}${origin}`)
}
const succeeded = all.filter((e) => e.state === "succeeded")
const retried = succeeded.filter((e) => e.attempt > 1)
const failed = all.filter((e) => e.state === "failed")
const fires = all.filter((e) => e.scheduleId === scheduleId && e.state === "succeeded")
await roster.close()

console.log(
  `\nSummary: ${succeeded.length} executions succeeded (${retried.length} after a retry), ${failed.length} failed permanently, ` +
    `${scheduleId} fired and ran ${fires.length} times.`
)
console.log(`Inspect it yourself: ROSTER_DB=${relative(root, db)} npm run roster -- executions list`)
const ok = schedulerCode === 0 && workerCode === 0 && retried.length > 0 && failed.length > 0 && fires.length >= firesToSee
process.exit(ok ? 0 : 1)
