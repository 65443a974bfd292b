/**
 * Roster from a plain async program (no Effect code): `Roster.open` gives the Promise
 * API. It enqueues three checksums (one of them bound to fail), runs a worker in this
 * process, waits for the executions to finish, lists them and closes.
 *
 *   npx bun examples/promise-app/main.ts      (ROSTER_DB picks another database)
 */
import { mkdirSync, rmSync } from "node:fs"
import { dirname, join } from "node:path"
import { Roster } from "roster"
import { checksum } from "./jobs.ts"

const db = process.env.ROSTER_DB ?? join(import.meta.dir, ".data", "promise-app.db")
// Start from an empty database so every run prints the same story.
rmSync(db, { force: true })
rmSync(`${db}-wal`, { force: true })
rmSync(`${db}-shm`, { force: true })
mkdirSync(dirname(db), { recursive: true })

const roster = await Roster.open({ db, jobs: [checksum] })

const ids: Array<string> = []
for (const text of ["hello", "world", ""]) {
  const { id } = await roster.enqueue(checksum, { text })
  ids.push(id)
  console.log(`enqueued ${id} for ${JSON.stringify(text)}`)
}

await roster.startWorker()
// Each wait ends when the worker commits that execution's outcome.
await Promise.all(ids.map((id) => roster.waitFor(id, { timeout: "30 seconds" })))
await roster.stopWorker()

for (const e of await roster.list({ job: checksum.id })) {
  const outcome = e.state === "succeeded" ? `sha256=${(e.result as { sha256: string }).sha256}` : `error: ${e.error?.message}`
  console.log(`${e.id} ${e.state.padEnd(9)} ${JSON.stringify((e.payload as { text: string }).text).padEnd(7)} ${outcome}`)
}
console.log(`counts: ${JSON.stringify(await roster.count())}`)
await roster.close()
