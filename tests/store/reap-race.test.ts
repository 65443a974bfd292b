/**
 * The Reaper cannot overrule a heartbeat. It lists expired leases (`executionsExpired`)
 * and writes each recovery later, through the Recorder; a worker that was only slow may
 * heartbeat in between. A recovery (an outcome with `expired: true`) therefore applies
 * only while the lease is still expired at the Reaper's `now` as it is written — on
 * every driver — and otherwise changes nothing and reports false, which the Reaper
 * counts as "not recovered", not as an error. Times are plain numbers, except in the
 * Reaper's own sweep, which runs on the TestClock.
 */
import { PgClient } from "@effect/sql-pg"
import { afterEach, beforeEach, describe, expect, test } from "bun:test"
import { Deferred, Effect, Fiber, Redacted } from "effect"
import { TestClock } from "effect/testing"
import * as Reaper from "../../src/actors/Reaper.ts"
import type { Recorder } from "../../src/actors/Recorder.ts"
import * as Failure from "../../src/jobs/Failure.ts"
import type { Registry } from "../../src/jobs/Registry.ts"
import * as RetryPolicy from "../../src/jobs/RetryPolicy.ts"
import { Store, type Outcome } from "../../src/store/Store.ts"
import type { Execution } from "../../src/store/Execution.ts"
import { drivers, urlWithSchema, withStore, type StoreFixture } from "./drivers.ts"
import { row } from "./rows.ts"

const leaseMs = 30_000
const claimedAt = 1_000
const expiresAt = claimedAt + leaseMs

/** The Reaper's recovery of `e` at `now`, as Reaper.sweep builds it. */
const recovery = (e: Execution, now: number, kind: "retry" | "failed" = "retry"): Outcome => {
  const base = { id: e.id, workerId: e.leaseOwner!, attempt: e.attempt, now, startedAt: e.startedAt ?? now, error: Failure.leaseExpired, expired: true }
  return kind === "retry" ? { ...base, kind: "retry", runAt: now } : { ...base, kind: "failed" }
}

for (const driver of drivers) {
  describe(`a Reaper's recovery against a heartbeat (${driver.name})`, () => {
    let f: StoreFixture
    beforeEach(() => {
      f = driver.make()
    })
    afterEach(async () => {
      await f.dispose()
    })

    const claimed = async (n = 1, attempts = 3) => {
      const rows = Array.from({ length: n }, () => row({ retry: RetryPolicy.exponential({ attempts, initial: 1000, jitter: false }).snapshot }))
      await withStore(f, (s) => s.executionsInsert(rows))
      const es = await withStore(f, (s) => s.executionsClaim({ queue: "default", jobs: ["app/job"], workerId: "w1", limit: n, now: claimedAt, leaseMs }))
      expect(es).toHaveLength(n)
      return es
    }
    const get = (id: string) => withStore(f, (s) => s.executionsGet(id))
    const heartbeat = (now: number, ids?: ReadonlyArray<string>) => withStore(f, (s) => s.executionsHeartbeat({ workerId: "w1", now, leaseMs, ids }))
    const finish = (...outcomes: ReadonlyArray<Outcome>) => withStore(f, (s) => s.executionsFinish(outcomes))

    test("a lease renewed after the Reaper listed it is not recovered: the write changes nothing and reports false", async () => {
      const [e] = await claimed()
      const now = expiresAt + 5_000
      const listed = await withStore(f, (s) => s.executionsExpired({ now, limit: 10 }))
      expect(listed.map((x) => x.id)).toEqual([e!.id])
      // The worker was slow, not dead: its heartbeat lands before the Reaper writes.
      expect((await heartbeat(now)).held.map((h) => h.id)).toEqual([e!.id])
      expect(await finish(recovery(listed[0]!, now))).toEqual([false])

      const after = await get(e!.id)
      expect(after).toMatchObject({ state: "running", attempt: 1, leaseOwner: "w1", leaseExpiresAt: now + leaseMs, error: null })
      expect(await withStore(f, (s) => s.attemptsList(e!.id))).toEqual([])
      // The worker's own outcome still applies: its run was never taken from it.
      expect(await finish({ kind: "succeeded", id: e!.id, workerId: "w1", attempt: 1, result: null, now: now + 1_000, startedAt: claimedAt })).toEqual([true])
      expect((await get(e!.id))!.state).toBe("succeeded")
    })

    test("a renewed lease on its last attempt is not failed either", async () => {
      const [e] = await claimed(1, 1)
      const now = expiresAt + 1
      const [listed] = await withStore(f, (s) => s.executionsExpired({ now, limit: 10 }))
      await heartbeat(now)
      expect(await finish(recovery(listed!, now, "failed"))).toEqual([false])
      expect(await get(e!.id)).toMatchObject({ state: "running", attempt: 1, leaseOwner: "w1", finishedAt: null })
      expect(await withStore(f, (s) => s.attemptsList(e!.id))).toEqual([])
    })

    test("a lease still expired is recovered as before, and its worker's late outcome is then dropped", async () => {
      const [e] = await claimed()
      const now = expiresAt + 5_000
      const [listed] = await withStore(f, (s) => s.executionsExpired({ now, limit: 10 }))
      expect(await finish(recovery(listed!, now))).toEqual([true])
      expect(await get(e!.id)).toMatchObject({ state: "queued", attempt: 1, leaseOwner: null, leaseExpiresAt: null })
      expect((await withStore(f, (s) => s.attemptsList(e!.id))).map((a) => a.outcome)).toEqual(["lease_expired"])
      // A heartbeat after the recovery holds nothing, and the late outcome is fenced off.
      expect((await heartbeat(now + 1)).held).toEqual([])
      expect(await finish({ kind: "succeeded", id: e!.id, workerId: "w1", attempt: 1, result: null, now: now + 2, startedAt: claimedAt })).toEqual([false])
    })

    test("expired means lease_expires_at < now, in the listing and in the write alike", async () => {
      const [e] = await claimed()
      expect(await withStore(f, (s) => s.executionsExpired({ now: expiresAt, limit: 10 }))).toEqual([])
      const [snapshot] = await withStore(f, (s) => s.executionsExpired({ now: expiresAt + 1, limit: 10 }))
      // A recovery written with a `now` at which the lease is not yet past its expiry changes nothing.
      expect(await finish(recovery(snapshot!, expiresAt))).toEqual([false])
      expect((await get(e!.id))!.state).toBe("running")
      expect(await finish(recovery(snapshot!, expiresAt + 1))).toEqual([true])
    })

    test("in one batch, with a worker's outcomes, only the leases still expired are recovered", async () => {
      const [renewed, dead, done, failing] = await claimed(4)
      const now = expiresAt + 5_000
      const listed = await withStore(f, (s) => s.executionsExpired({ now, limit: 10 }))
      expect(listed).toHaveLength(4)
      const byId = new Map(listed.map((x) => [x.id, x]))
      // The worker heartbeats only the two it still runs; then one batch carries its
      // own outcomes for those (which are not held to the expiry) and two recoveries.
      await heartbeat(now, [renewed!.id, done!.id])
      const applied = await finish(
        recovery(byId.get(renewed!.id)!, now),
        recovery(byId.get(dead!.id)!, now),
        { kind: "succeeded", id: done!.id, workerId: "w1", attempt: 1, result: null, now, startedAt: claimedAt },
        { kind: "retry", id: failing!.id, workerId: "w1", attempt: 1, runAt: now + 1_000, error: { tag: "Boom", message: "boom", retryable: true, pretty: "" }, now, startedAt: claimedAt }
      )
      expect(applied).toEqual([false, true, true, true])
      expect((await get(renewed!.id))!).toMatchObject({ state: "running", leaseExpiresAt: now + leaseMs })
      expect((await get(dead!.id))!).toMatchObject({ state: "queued", error: { tag: "LeaseExpired" } })
      expect((await get(done!.id))!.state).toBe("succeeded")
      expect((await get(failing!.id))!).toMatchObject({ state: "queued", error: { tag: "Boom" } })
    })

    if (driver.name === "postgres") {
      test("a heartbeat committed while the recovery waits for the row's lock wins: the check is made on the row as written", async () => {
        const [e] = await claimed()
        const now = expiresAt + 5_000
        const [listed] = await withStore(f, (s) => s.executionsExpired({ now, limit: 10 }))
        const location = f.location
        if (location.driver !== "postgres") throw new Error("unreachable")
        const applied = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
          const sql = yield* PgClient.PgClient
          const locked = yield* Deferred.make<void>()
          const commit = yield* Deferred.make<void>()
          // The worker's heartbeat, in a transaction that holds the row until told to commit.
          const heartbeat = yield* Effect.forkScoped(sql.withTransaction(Effect.gen(function*() {
            yield* sql`UPDATE roster_executions SET lease_expires_at = ${now + leaseMs} WHERE id = ${e!.id} AND lease_owner = 'w1'`
            yield* Deferred.succeed(locked, undefined)
            yield* Deferred.await(commit)
          })))
          yield* Deferred.await(locked)
          const reap = yield* Effect.forkScoped(Effect.promise(() => finish(recovery(listed!, now))))
          // Wait until the recovery's UPDATE is blocked on that row lock, then commit the heartbeat.
          for (let i = 0; ; i++) {
            const [w] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`
            if ((w?.n ?? 0) > 0) break
            if (i > 200) throw new Error("the recovery never waited for the row lock")
            yield* Effect.sleep("25 millis")
          }
          yield* Deferred.succeed(commit, undefined)
          yield* Fiber.join(heartbeat)
          return yield* Fiber.join(reap)
        }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(urlWithSchema(location.url, location.schema)), maxConnections: 2 })))))
        expect(applied).toEqual([false])
        expect(await get(e!.id)).toMatchObject({ state: "running", attempt: 1, leaseOwner: "w1", leaseExpiresAt: now + leaseMs })
        expect(await withStore(f, (s) => s.attemptsList(e!.id))).toEqual([])
      })
    }
  })

  describe(`the Reaper's sweep (${driver.name})`, () => {
    let f: StoreFixture
    beforeEach(() => {
      f = driver.make()
    })
    afterEach(async () => {
      await f.dispose()
    })

    test("a heartbeat between the listing and the write: not recovered, no error, the execution keeps running", async () => {
      await withStore(f, (s) => s.executionsInsert([row()]))
      const [e] = await withStore(f, (s) => s.executionsClaim({ queue: "default", jobs: ["app/job"], workerId: "w1", limit: 1, now: claimedAt, leaseMs }))
      const result = await f.run(Effect.gen(function*() {
        const store = yield* Store
        yield* TestClock.setTime(expiresAt + 5_000)
        const writes: Array<boolean> = []
        // A Recorder that lets the worker's heartbeat land first, as a slow write path would.
        const recorder: Pick<Recorder, "insert" | "finish"> = {
          insert: (rows) => store.executionsInsert(rows),
          finish: (outcome) =>
            Effect.gen(function*() {
              yield* store.executionsHeartbeat({ workerId: "w1", now: outcome.now, leaseMs })
              const [applied = false] = yield* store.executionsFinish([outcome])
              writes.push(applied)
              return applied
            })
        }
        // sweep reads only `jobs` from the registry (an unknown Job falls back to the stored policy).
        const registry = { jobs: new Map() } as unknown as Registry
        const recovered = yield* Reaper.sweep({ registry, recorder })
        return { recovered, writes, after: yield* store.executionsGet(e!.id) }
      }).pipe(Effect.provide(TestClock.layer())))
      expect(result.recovered).toBe(0)
      expect(result.writes).toEqual([false])
      expect(result.after).toMatchObject({ state: "running", attempt: 1, leaseOwner: "w1", leaseExpiresAt: expiresAt + 5_000 + leaseMs })
    })
  })
}
