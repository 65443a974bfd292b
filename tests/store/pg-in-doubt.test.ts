/**
 * Writes in doubt on PostgreSQL (src/store/postgres/InDoubt.ts), through a TCP proxy
 * the test can cut: a claim whose reply is lost after it committed leaves no execution
 * leased to nobody, and an outcome that could not be written while the server was
 * unreachable is written once it is back — so neither is stuck behind a heartbeat that
 * keeps extending leases the worker does not run.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test"
import type { Socket, TCPSocketListener } from "bun"
import { Effect, Exit, ManagedRuntime } from "effect"
import * as RetryPolicy from "../../src/jobs/RetryPolicy.ts"
import { layerPostgres } from "../../src/store/postgres/PgStore.ts"
import type { InsertRequest } from "../../src/store/Store.ts"
import { Store } from "../../src/store/Store.ts"
import { pgUrl, requireService } from "../support/env.ts"
import { postgres, withStore, type StoreFixture } from "./drivers.ts"

const pg = requireService("postgres")

type Mode = "pass" | "swallow-replies" | "refuse"

/** A TCP proxy to the test server whose traffic the test controls. */
const startProxy = (target: URL) => {
  let mode: Mode = "pass"
  const open = new Set<Socket<any>>()
  const listener: TCPSocketListener<{ server?: Socket<any>; pending: Array<Uint8Array> }> = Bun.listen({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open(client) {
        client.data = { pending: [] }
        if (mode === "refuse") return void client.end()
        open.add(client)
        void Bun.connect({
          hostname: target.hostname,
          port: Number(target.port || 5432),
          socket: {
            open(server) {
              open.add(server)
              client.data.server = server
              for (const chunk of client.data.pending) server.write(chunk)
              client.data.pending = []
            },
            data(_server, chunk) {
              if (mode === "pass") client.write(chunk)
            },
            close() {
              client.end()
            },
            error() {
              client.end()
            }
          }
        })
      },
      data(client, chunk) {
        if (client.data.server) client.data.server.write(chunk)
        else client.data.pending.push(chunk.slice())
      },
      close(client) {
        client.data.server?.end()
      }
    }
  })
  return {
    port: listener.port,
    set: (m: Mode) => void (mode = m),
    /** Drops every open connection, as a server restart or a network cut does. */
    cut: () => {
      for (const s of open) s.terminate()
      open.clear()
    },
    stop: () => listener.stop(true)
  }
}

let seq = 0
const row = (): InsertRequest => ({
  id: Bun.randomUUIDv7("hex", 1_000 + ++seq),
  job: "app/job",
  queue: "default",
  payload: "{}",
  priority: 0,
  retry: RetryPolicy.fixed({ attempts: 3, delay: 1000 }).snapshot,
  timeoutMs: 60_000,
  runAt: 100,
  now: 100,
  idempotencyKey: null
})

const claim = (workerId: string, now: number, limit = 10) => ({ queue: "default", jobs: ["app/job"], workerId, limit, now, leaseMs: 30_000 })

describe.skipIf(pg.skip)("writes in doubt (postgres)", () => {
  let f: StoreFixture
  let proxy: ReturnType<typeof startProxy>
  let viaProxy: ManagedRuntime.ManagedRuntime<Store, unknown>
  beforeEach(async () => {
    f = postgres(pgUrl()!).make()
    await withStore(f, (s) => s.migrate)
    const target = new URL(pgUrl()!)
    proxy = startProxy(target)
    const url = new URL(pgUrl()!)
    url.host = `127.0.0.1:${proxy.port}`
    const location = f.location as Extract<StoreFixture["location"], { driver: "postgres" }>
    // No retry window: every failure surfaces at once, as after a long outage.
    viaProxy = ManagedRuntime.make(layerPostgres({ url: url.toString(), schema: location.schema, reconnectWindowMs: 0, poolSize: 2 }))
    await viaProxy.runPromise(Effect.void)
  })
  afterEach(async () => {
    proxy.set("pass")
    await viaProxy.dispose()
    proxy.stop()
    await f.dispose()
  })

  const viaProxyStore = <A, E>(body: (s: Store["Service"]) => Effect.Effect<A, E>) => viaProxy.runPromise(Effect.exit(Store.use(body)))

  /** Inserts `n` rows, then claims them as w1 at 1,000 with the reply swallowed and the connection cut: the claim commits, w1 never learns. */
  const loseClaim = async (n: number): Promise<ReadonlyArray<InsertRequest>> => {
    // Opens the claim's connection while replies still pass.
    await viaProxyStore((s) => s.executionsClaim(claim("w1", 500)))
    const rows = Array.from({ length: n }, row)
    await withStore(f, (s) => s.executionsInsert(rows))
    proxy.set("swallow-replies")
    const lost = viaProxyStore((s) => s.executionsClaim(claim("w1", 1_000)))
    await Bun.sleep(300)
    proxy.cut()
    expect(Exit.isFailure(await lost)).toBe(true)
    return rows
  }

  /** With replies passing again, w1's next claim at 2,000 (retried while the pool reconnects). */
  const claimAgain = async () => {
    proxy.set("pass")
    let again = await viaProxyStore((s) => s.executionsClaim(claim("w1", 2_000)))
    for (let tries = 0; Exit.isFailure(again) && tries < 5; tries++) again = await viaProxyStore((s) => s.executionsClaim(claim("w1", 2_000)))
    expect(Exit.isSuccess(again)).toBe(true)
    return Exit.isSuccess(again) ? again.value : []
  }

  test("a claim that committed but lost its reply is released before the next claim, not left leased to nobody", async () => {
    const rows = await loseClaim(3)
    // The claim committed: the rows are leased to w1, which never received them.
    const leased = await withStore(f, (s) => s.executionsList({ state: "running" }))
    expect(leased.map((e) => e.leaseOwner)).toEqual(["w1", "w1", "w1"])

    const claimed = await claimAgain()
    expect(claimed.map((e) => e.id).sort()).toEqual(rows.map((r) => r.id).sort())
    // Released without charging the lost attempt, then claimed afresh.
    expect(claimed.map((e) => [e.attempt, e.startedAt])).toEqual([[1, 2_000], [1, 2_000], [1, 2_000]])
  }, 20_000)

  test("a claim in doubt of an execution asked to cancel meanwhile ends it cancelled, not queued", async () => {
    const rows = await loseClaim(2)
    // Running (leased to w1, which never got it): a cancel is a request.
    const cancel = await withStore(f, (s) => s.executionsCancel({ id: rows[0]!.id, now: 1_500 }))
    expect(cancel).toBe("requested")

    expect((await claimAgain()).map((e) => e.id)).toEqual([rows[1]!.id])
    const cancelled = await withStore(f, (s) => s.executionsGet(rows[0]!.id))
    expect([cancelled?.state, cancelled?.attempt, cancelled?.finishedAt]).toEqual(["cancelled", 0, 1_000])
  }, 20_000)

  test("a claim in doubt does not release what a successful claim of the same millisecond got", async () => {
    const first = [row(), row()]
    await withStore(f, (s) => s.executionsInsert(first))
    const ok = await viaProxyStore((s) => s.executionsClaim(claim("w1", 1_000)))
    expect(Exit.isSuccess(ok) ? ok.value.length : 0).toBe(2)
    const third = row()
    await withStore(f, (s) => s.executionsInsert([third]))
    proxy.set("swallow-replies")
    const lost = viaProxyStore((s) => s.executionsClaim(claim("w1", 1_000)))
    await Bun.sleep(300)
    proxy.cut()
    expect(Exit.isFailure(await lost)).toBe(true)
    expect(await withStore(f, (s) => s.executionsGet(third.id))).toMatchObject({ state: "running", leaseOwner: "w1", startedAt: 1_000 })
    proxy.set("pass")
    let next = await viaProxyStore((s) => s.executionsClaim(claim("w1", 3_000)))
    for (let tries = 0; Exit.isFailure(next) && tries < 5; tries++) next = await viaProxyStore((s) => s.executionsClaim(claim("w1", 3_000)))
    expect(Exit.isSuccess(next)).toBe(true)
    for (const r of first) {
      expect(await withStore(f, (s) => s.executionsGet(r.id))).toMatchObject({ state: "running", leaseOwner: "w1", attempt: 1, startedAt: 1_000 })
    }
    // Only the lost claim's row was released, and claimed again.
    expect(await withStore(f, (s) => s.executionsGet(third.id))).toMatchObject({ state: "running", attempt: 1, startedAt: 3_000 })
  }, 20_000)

  test("an outcome that could not be written is written, fenced, once the server is reachable again", async () => {
    await withStore(f, (s) => s.executionsInsert([row(), row()]))
    const claimed = await viaProxyStore((s) => s.executionsClaim(claim("w1", 1_000)))
    const [a, b] = Exit.isSuccess(claimed) ? claimed.value : []
    proxy.set("refuse")
    proxy.cut()
    const failed = await viaProxyStore((s) => s.executionsFinish([
      { kind: "succeeded", id: a!.id, workerId: "w1", attempt: 1, result: '"done"', now: 1_500, startedAt: 1_000 },
      { kind: "failed", id: b!.id, workerId: "w1", attempt: 1, error: { tag: "E", message: "no", retryable: false, pretty: "" }, now: 1_500, startedAt: 1_000 }
    ]))
    expect(Exit.isFailure(failed)).toBe(true)
    expect((await withStore(f, (s) => s.executionsGet(a!.id)))!.state).toBe("running")

    proxy.set("pass")
    // The next heartbeat that gets through (the first may meet a pooled connection the
    // cut closed) writes the kept outcomes first, so it holds (and extends) nothing.
    let hb = await viaProxyStore((s) => s.executionsHeartbeat({ workerId: "w1", now: 2_000, leaseMs: 30_000 }))
    for (let tries = 0; Exit.isFailure(hb) && tries < 5; tries++) {
      hb = await viaProxyStore((s) => s.executionsHeartbeat({ workerId: "w1", now: 2_000, leaseMs: 30_000 }))
    }
    expect(Exit.isSuccess(hb) ? hb.value.held : undefined).toEqual([])
    expect(await withStore(f, (s) => s.executionsGet(a!.id))).toMatchObject({ state: "succeeded", result: "done", finishedAt: 1_500 })
    expect(await withStore(f, (s) => s.executionsGet(b!.id))).toMatchObject({ state: "failed", finishedAt: 1_500 })
    expect((await withStore(f, (s) => s.attemptsList(b!.id))).map((x) => x.outcome)).toEqual(["failed"])
  }, 20_000)
})
