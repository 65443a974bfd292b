// scratch: one-by-one at NORMAL, store alone vs Roster, µs a call
import { Effect } from "effect"
import { join } from "node:path"
import * as RetryPolicy from "../../src/jobs/RetryPolicy.ts"
import { applyMigrations, openDatabase } from "../../src/store/sqlite/SqliteConnection.ts"
import { makeSqliteStore } from "../../src/store/sqlite/SqliteStore.ts"
import { Roster } from "../../src/index.ts"
import { payload, tempDir } from "./common.ts"
import { noop, openOptions } from "./roster.ts"
const N = 20000
const storeAlone = async () => {
  const tmp = tempDir("zz")
  const db = openDatabase({ path: join(tmp.dir, "r.db"), synchronous: "NORMAL" })
  applyMigrations(db, Date.now())
  const store = makeSqliteStore(db)
  const t0 = performance.now()
  for (let i = 0; i < N; i++) {
    const now = Date.now()
    Effect.runSync(store.executionsInsert([{ id: Bun.randomUUIDv7(), job: "peers/noop", queue: "default", payload: JSON.stringify(payload(i)), priority: 0, retry: RetryPolicy.defaultPolicy.snapshot, timeoutMs: 60000, runAt: now, now, idempotencyKey: null }]))
    await Promise.resolve()
  }
  const us = (performance.now() - t0) * 1000 / N
  db.close(false); tmp.cleanup(); return us
}
const roster = async () => {
  const tmp = tempDir("zz")
  const r = await Roster.open({ db: join(tmp.dir, "r.db"), jobs: [noop], synchronous: "NORMAL" }, openOptions)
  const t0 = performance.now()
  for (let i = 0; i < N; i++) await r.enqueue(noop, payload(i))
  const us = (performance.now() - t0) * 1000 / N
  await r.close(); tmp.cleanup(); return us
}
for (let k = 0; k < 3; k++) console.log(`store ${(await storeAlone()).toFixed(1)} µs   roster ${(await roster()).toFixed(1)} µs`)
