/**
 * A PostgreSQL cluster of a test's own: initdb in a fresh folder, started on a free
 * loopback port. A test that restarts or stops "the server" does it to this one, never
 * to the shared ROSTER_TEST_PG_URL server the other test files (running alongside, under
 * `bun test --parallel`) are using.
 *
 * The binaries come from `ROSTER_TEST_PG_BIN` (a folder holding initdb and pg_ctl) or,
 * unset, the newest /usr/lib/postgresql/N/bin. Run as root, the cluster belongs to
 * `ROSTER_TEST_PG_USER` (default `postgres`), as initdb refuses to run as root.
 */
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync, appendFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

const nonEmpty = (value: string | undefined): string | undefined =>
  value === undefined || value.trim() === "" ? undefined : value

/** The folder holding initdb and pg_ctl, or undefined (under CI=true: throws). */
export const pgBinDir = (): string | undefined => {
  const fromEnv = nonEmpty(process.env.ROSTER_TEST_PG_BIN)
  const candidates = fromEnv !== undefined
    ? [fromEnv]
    : (existsSync("/usr/lib/postgresql") ? readdirSync("/usr/lib/postgresql") : [])
        .filter((v) => /^\d+$/.test(v)).sort((a, b) => Number(b) - Number(a))
        .map((v) => `/usr/lib/postgresql/${v}/bin`)
  const found = candidates.find((d) => existsSync(join(d, "initdb")) && existsSync(join(d, "pg_ctl")))
  if (found === undefined && process.env.CI === "true") {
    throw new Error(`no PostgreSQL binaries (initdb, pg_ctl) in ${fromEnv ?? "/usr/lib/postgresql/*/bin"}; set ROSTER_TEST_PG_BIN`)
  }
  return found
}

const freePort = (): number => {
  const server = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } })
  const port = server.port
  server.stop(true)
  return port
}

const userIdOf = (name: string): { uid: number; gid: number } | undefined => {
  const r = Bun.spawnSync(["id", "-u", name], { stdout: "pipe", stderr: "ignore" })
  const g = Bun.spawnSync(["id", "-g", name], { stdout: "pipe", stderr: "ignore" })
  if (r.exitCode !== 0 || g.exitCode !== 0) return undefined
  return { uid: Number(r.stdout.toString().trim()), gid: Number(g.stdout.toString().trim()) }
}

export interface PrivateCluster {
  /** postgres://…/postgres on the cluster. */
  readonly url: string
  /** `pg_ctl restart` (fast), waiting until it is up again. */
  readonly restart: () => Promise<void>
  readonly stop: () => Promise<void>
  readonly start: () => Promise<void>
  /** Stops the server (immediately) and removes its folder. */
  readonly destroy: () => Promise<void>
}

/** initdb + start; about a second on this machine. */
export const startPrivateCluster = async (bin: string): Promise<PrivateCluster> => {
  const root = process.getuid?.() === 0
  const user = root ? nonEmpty(process.env.ROSTER_TEST_PG_USER) ?? "postgres" : undefined
  const owner = user === undefined ? undefined : userIdOf(user)
  if (user !== undefined && owner === undefined) throw new Error(`run as root, a private PostgreSQL cluster needs the OS user ${user}`)
  const dir = mkdtempSync(join(tmpdir(), "roster-private-pg-"))
  const data = join(dir, "data")
  const log = join(dir, "server.log")
  if (owner !== undefined) chownSync(dir, owner.uid, owner.gid)
  const asUser = user === undefined ? [] : ["runuser", "-u", user, "--"]

  const run = async (argv: ReadonlyArray<string>) => {
    const proc = Bun.spawn([...asUser, ...argv], { cwd: dir, stdin: "ignore", stdout: "ignore", stderr: "pipe" })
    const stderr = await new Response(proc.stderr).text()
    const code = await proc.exited
    if (code !== 0) throw new Error(`${argv.join(" ")} exited ${code}: ${stderr}`)
  }
  // -l: the server's output goes to the log, never to (and holding open) our pipes.
  const pgCtl = (...args: Array<string>) => run([join(bin, "pg_ctl"), "-D", data, "-l", log, ...args])

  await run([join(bin, "initdb"), "-D", data, "-U", "postgres", "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-instructions"])
  const port = freePort()
  appendFileSync(join(data, "postgresql.conf"), [
    "",
    "listen_addresses = '127.0.0.1'",
    `port = ${port}`,
    `unix_socket_directories = '${dir}'`,
    "max_connections = 100",
    "fsync = off",
    ""
  ].join("\n"))
  writeFileSync(join(data, "pg_hba.conf"), "local all all trust\nhost all all 127.0.0.1/32 trust\n")
  await pgCtl("start", "-w", "-t", "60")
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    restart: () => pgCtl("restart", "-w", "-t", "60", "-m", "fast"),
    stop: () => pgCtl("stop", "-w", "-m", "fast"),
    start: () => pgCtl("start", "-w", "-t", "60"),
    destroy: async () => {
      await pgCtl("stop", "-w", "-m", "immediate").catch(() => undefined)
      rmSync(dir, { recursive: true, force: true })
    }
  }
}
