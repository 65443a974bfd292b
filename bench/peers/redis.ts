/**
 * A private redis-server for the BullMQ rows: bound to 127.0.0.1 on a free port, no
 * persistence (`--appendonly no --save ""`), its files in a temp folder; stopped (and
 * the folder removed) by `stop`, or when this process exits.
 */
import Redis from "ioredis"
import { createServer } from "node:net"
import { sleep, tempDir } from "./common.ts"

/** A free TCP port on 127.0.0.1. */
const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address ? address.port : 0
      server.close(() => resolve(port))
    })
  })

export interface RedisServer {
  readonly url: string
  readonly pid: number
  readonly stop: () => Promise<void>
}

/** Starts redis-server; undefined (with the reason) when there is none on PATH. */
export const startRedis = async (): Promise<RedisServer | string> => {
  const binary = Bun.which("redis-server")
  if (!binary) return "redis-server not found (apt-get install -y redis-server, or set BENCH_REDIS_URL)"
  const port = await freePort()
  const tmp = tempDir("redis")
  const proc = Bun.spawn(
    [binary, "--bind", "127.0.0.1", "--port", String(port), "--save", "", "--appendonly", "no", "--dir", tmp.dir, "--daemonize", "no", "--loglevel", "warning"],
    { stdin: "ignore", stdout: "ignore", stderr: "inherit" }
  )
  let stopped = false
  const stop = async () => {
    if (stopped) return
    stopped = true
    proc.kill("SIGTERM")
    await proc.exited
    tmp.cleanup()
  }
  process.on("exit", () => {
    if (!stopped) proc.kill("SIGKILL")
  })
  const url = `redis://127.0.0.1:${port}`
  for (let tries = 0; tries < 100; tries++) {
    const client = new Redis(port, "127.0.0.1", { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null })
    client.on("error", () => {})
    try {
      await client.connect()
      if ((await client.ping()) === "PONG") {
        client.disconnect()
        return { url, pid: proc.pid, stop }
      }
    } catch {
      // not up yet
    }
    client.disconnect()
    await sleep(50)
  }
  await stop()
  return `redis-server did not answer on port ${port}`
}

/** "Redis 7.0.15, no persistence (appendonly no, save "")", read from the server. */
export const redisDurability = async (url: string): Promise<string> => {
  const client = new Redis(url, { maxRetriesPerRequest: 1 })
  try {
    const info = await client.info("server")
    const version = /redis_version:(\S+)/.exec(info)?.[1] ?? "?"
    const aof = ((await client.config("GET", "appendonly")) as Array<string>)[1] ?? "?"
    const save = ((await client.config("GET", "save")) as Array<string>)[1] ?? "?"
    const persistence = aof === "no" && save === "" ? "no persistence" : `persistence: appendonly ${aof}, save "${save}"`
    return `Redis ${version}, ${persistence} (appendonly ${aof}, save "${save}")`
  } finally {
    client.disconnect()
  }
}
