/**
 * Helpers for process tests: run the real `roster` CLI as `bun` child processes on one
 * SQLite file in a fresh temporary folder, collect their output, wait for them with a
 * bound, and clean everything up when the test ends — no mocks.
 *
 * ```ts
 * const scratch = useScratch({ apps: fixtureApps })
 * test("...", async () => {
 *   const s = scratch()
 *   const r = await s.run(["enqueue", "probe/record", "--payload", '{"n":1}', "--json"])
 *   expect(r.code).toBe(0)
 *   const worker = s.spawn(["worker", "--exit-when-idle"])
 *   expect((await worker.wait()).code).toBe(0)
 *   expect(s.count("SELECT COUNT(*) FROM roster_executions WHERE state = 'succeeded'")).toBe(1)
 * }, 60_000)
 * ```
 *
 * Children run with the temp folder as their working directory (so a `roster.config.ts`
 * in the repo cannot leak into a test) and with every inherited `ROSTER_*` variable
 * removed; only what the test passes is set.
 */
import { Database } from "bun:sqlite"
import { afterEach, beforeEach } from "bun:test"
import { mkdtempSync, rmSync, symlinkSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"

/** The repository root. */
export const repoRoot = resolve(import.meta.dir, "../..")

/** The CLI entry point. */
export const cliEntry = join(repoRoot, "src/cli/main.ts")

/** The demo apps folder (DESIGN §5). */
export const demoApps = join(repoRoot, "examples/demo/apps")

/** Test-only apps (`probe/*`). */
export const fixtureApps = join(repoRoot, "tests/fixtures/apps")

/** The bun running the tests; children use the same binary. */
export const bunBinary = process.execPath

/** How a finished process ended. */
export interface ProcessResult {
  /** Exit code, or null when killed by a signal. */
  readonly code: number | null
  readonly signal: string | null
  readonly stdout: string
  readonly stderr: string
}

/** A running child process. */
export interface RosterProcess {
  readonly pid: number
  readonly args: ReadonlyArray<string>
  /** Sends a signal (default SIGTERM). */
  readonly kill: (signal?: NodeJS.Signals | number) => void
  /** Resolves when the process has exited and its output is fully read; kills it and rejects after `timeoutMs`. */
  readonly wait: (timeoutMs?: number) => Promise<ProcessResult>
  /** Output read so far (useful while it runs). */
  readonly stdoutSoFar: () => string
  readonly stderrSoFar: () => string
  readonly exited: boolean
}

/** Options of a spawn. */
export interface SpawnOptions {
  /** Extra environment, on top of ROSTER_DB and ROSTER_APPS_DIR. */
  readonly env?: Readonly<Record<string, string>>
  /** Text written to stdin (then closed); stdin is empty otherwise. */
  readonly stdin?: string
}

const defaultWaitMs = 60_000

const collect = (stream: ReadableStream<Uint8Array>, sink: { text: string }): Promise<void> =>
  (async () => {
    const decoder = new TextDecoder()
    for await (const chunk of stream) sink.text += decoder.decode(chunk, { stream: true })
    sink.text += decoder.decode()
  })()

const baseEnv = (): Record<string, string> => {
  const env: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) {
    if (v !== undefined && !k.startsWith("ROSTER_")) env[k] = v
  }
  return env
}

/** Every process spawnRoster started that has not exited yet. */
const live = new Set<RosterProcess>()

/**
 * Kills (SIGKILL) every process spawnRoster started that is still running and waits
 * for them: for a test's afterEach, so a test that fails half-way does not leave a
 * worker polling for the rest of the run. Whatever is left when the test process
 * exits is killed then.
 */
export const killLeftovers = (): Promise<void> => killAll([...live])

/** SIGKILLs each process still running and waits (up to 10 s each) for it to end. */
const killAll = (processes: ReadonlyArray<RosterProcess>): Promise<void> =>
  Promise.all(processes.map(async (p) => {
    if (p.exited) return
    p.kill("SIGKILL")
    await p.wait(10_000).catch(() => undefined)
  })).then(() => undefined)
process.on("exit", () => {
  for (const p of live) p.kill("SIGKILL")
})

/**
 * Spawns `bun --no-install src/cli/main.ts <args>` in `cwd` (or `command <args>`, e.g. a
 * built binary); output is collected as it comes. The environment is this process's
 * minus ROSTER_*, plus `env` — or, with `onlyEnv`, exactly `env`.
 *
 * `--no-install`: a module outside any node_modules tree would otherwise import
 * `effect` through Bun's auto-install (a second copy of Effect from the global cache, or
 * fetched from the registry on a fresh machine); with it, such an import fails loudly.
 * App files a test writes live where the checkout's packages resolve: in a Scratch's
 * folder (it links them) or under tests/.tmp.
 */
export const spawnRoster = (args: ReadonlyArray<string>, options: {
  readonly cwd: string
  readonly env: Readonly<Record<string, string>>
  readonly stdin?: string | undefined
  readonly command?: ReadonlyArray<string>
  readonly onlyEnv?: boolean
}): RosterProcess => {
  const proc = Bun.spawn([...(options.command ?? [bunBinary, "--no-install", cliEntry]), ...args], {
    cwd: options.cwd,
    env: options.onlyEnv ? { ...options.env } : { ...baseEnv(), ...options.env },
    stdin: options.stdin === undefined ? "ignore" : new Blob([options.stdin]),
    stdout: "pipe",
    stderr: "pipe"
  })
  const out = { text: "" }
  const err = { text: "" }
  const drained = Promise.all([collect(proc.stdout, out), collect(proc.stderr, err)])
  let exited = false
  const done = proc.exited.then(async (code) => {
    exited = true
    live.delete(handle)
    await drained
    const signal = proc.signalCode === null ? null : String(proc.signalCode)
    return { code: signal === null ? code : null, signal, stdout: out.text, stderr: err.text } satisfies ProcessResult
  })
  const handle: RosterProcess = {
    pid: proc.pid,
    args,
    kill: (signal = "SIGTERM") => {
      if (!exited) proc.kill(signal)
    },
    wait: async (timeoutMs = defaultWaitMs) => {
      let timer: ReturnType<typeof setTimeout> | undefined
      const timeout = new Promise<"timeout">((r) => (timer = setTimeout(() => r("timeout"), timeoutMs)))
      const result = await Promise.race([done, timeout])
      clearTimeout(timer)
      if (result !== "timeout") return result
      proc.kill("SIGKILL")
      await done
      throw new Error(`roster ${args.join(" ")} did not exit within ${timeoutMs} ms; stderr tail:\n${tail(err.text)}`)
    },
    stdoutSoFar: () => out.text,
    stderrSoFar: () => err.text,
    get exited() {
      return exited
    }
  }
  live.add(handle)
  return handle
}

/** The last lines of a text, for error messages. */
export const tail = (text: string, lines = 20): string => text.trimEnd().split("\n").slice(-lines).join("\n")

/** Polls `probe` until it returns a value other than undefined/false; fails after `timeoutMs`. */
export const waitFor = async <A>(
  what: string,
  probe: () => A | undefined | false | Promise<A | undefined | false>,
  options: { readonly timeoutMs?: number; readonly intervalMs?: number } = {}
): Promise<A> => {
  const deadline = Date.now() + (options.timeoutMs ?? 30_000)
  while (true) {
    const value = await probe()
    if (value !== undefined && value !== false) return value
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await Bun.sleep(options.intervalMs ?? 25)
  }
}

/** Writes one JSON value per line. */
export const ndjson = (values: Iterable<unknown>): string => {
  const lines: Array<string> = []
  for (const v of values) lines.push(JSON.stringify(v))
  return lines.join("\n") + "\n"
}

/** Parses a process's stdout as one JSON document, with its output in the error if it is not. */
export const parseJsonOutput = <A = any>(result: ProcessResult): A => {
  try {
    return JSON.parse(result.stdout) as A
  } catch {
    throw new Error(`stdout is not one JSON document (exit ${result.code}):\n${result.stdout}\nstderr:\n${tail(result.stderr)}`)
  }
}

/** The worker id a `roster worker` logs at start (`worker <id> serving ...`). */
export const workerIdOf = (stderr: string): string | undefined => /worker (\S+) serving/.exec(stderr)?.[1]

/**
 * A `WITH attempts AS (...)` prefix: every attempt of every execution, as
 * `executions show` reports them — the stored attempt rows, plus a succeeded attempt
 * read back from its execution where the store keeps no row of its own for it (the
 * SQLite store may record a success only on the execution, its worker in lease_owner).
 * Columns: execution_id, attempt, worker, outcome, error.
 */
export const attemptsCte = `WITH attempts AS (
  SELECT execution_id, attempt, worker, outcome, error FROM roster_attempts
  UNION ALL
  SELECT e.id, e.attempt, e.lease_owner, 'succeeded', NULL FROM roster_executions e
   WHERE e.state = 'succeeded'
     AND NOT EXISTS (SELECT 1 FROM roster_attempts a WHERE a.execution_id = e.id AND a.attempt = e.attempt))
`

/**
 * A temp folder with a database path, the processes started in it, and connections to it.
 * Its `node_modules` links to the checkout's, so an app a test writes into the folder
 * imports the same `effect` (and the same module instances) as the CLI running it.
 */
export class Scratch {
  /** The temp folder (children's working directory). */
  readonly dir: string
  /** The SQLite file every process of this scratch uses. */
  readonly db: string
  readonly apps: string
  private readonly processes: Array<RosterProcess> = []
  private connection: Database | undefined

  constructor(options: { readonly apps?: string } = {}) {
    this.dir = mkdtempSync(join(tmpdir(), "roster-process-"))
    // Removing the folder removes the link, not what it points to.
    symlinkSync(join(repoRoot, "node_modules"), join(this.dir, "node_modules"), "dir")
    this.db = join(this.dir, "roster.db")
    this.apps = options.apps ?? fixtureApps
  }

  /** The environment children get: ROSTER_DB, ROSTER_APPS_DIR and `extra`. */
  env(extra: Readonly<Record<string, string>> = {}): Record<string, string> {
    return { ROSTER_DB: this.db, ROSTER_APPS_DIR: this.apps, ...extra }
  }

  /** Starts `roster <args>`; it is killed when the test ends if still running. */
  spawn(args: ReadonlyArray<string>, options: SpawnOptions = {}): RosterProcess {
    const p = spawnRoster(args, { cwd: this.dir, env: this.env(options.env), stdin: options.stdin })
    this.processes.push(p)
    return p
  }

  /** Runs `roster <args>` to completion (bounded by `timeoutMs`). */
  run(args: ReadonlyArray<string>, options: SpawnOptions & { readonly timeoutMs?: number } = {}): Promise<ProcessResult> {
    return this.spawn(args, options).wait(options.timeoutMs)
  }

  /** A connection to the database (opened once, with busy_timeout; closed at cleanup). */
  sqlite(): Database {
    if (this.connection === undefined) {
      this.connection = new Database(this.db)
      this.connection.run("PRAGMA busy_timeout = 30000")
    }
    return this.connection
  }

  /** The single number a `SELECT COUNT(*) ...`-style query returns. */
  count(sql: string, ...params: Array<string | number>): number {
    const row = this.sqlite().query<Record<string, number>, Array<string | number>>(sql).get(...params)
    const value = row === null ? undefined : Object.values(row)[0]
    if (typeof value !== "number") throw new Error(`query returned no number: ${sql}`)
    return value
  }

  /** Rows of a query. */
  all<Row = Record<string, unknown>>(sql: string, ...params: Array<string | number>): Array<Row> {
    return this.sqlite().query<Row, Array<string | number>>(sql).all(...params)
  }

  /** Kills what is still running, closes the connection, removes the folder. */
  async cleanup(): Promise<void> {
    await killAll(this.processes)
    this.connection?.close(false)
    this.connection = undefined
    rmSync(this.dir, { recursive: true, force: true })
  }
}

/**
 * Registers hooks that give each test a fresh {@link Scratch} and clean it up after,
 * whether the test passed or not. Call at the top of a `describe` (or file); call the
 * returned function inside a test.
 */
export const useScratch = (options: { readonly apps?: string } = {}): (() => Scratch) => {
  let current: Scratch | undefined
  beforeEach(() => {
    current = new Scratch(options)
  })
  afterEach(async () => {
    const s = current
    current = undefined
    await s?.cleanup()
  })
  return () => {
    if (current === undefined) throw new Error("useScratch(): call the returned function inside a test")
    return current
  }
}
