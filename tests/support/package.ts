/**
 * Roster as a user gets it (issue 12), for process tests: `npm pack` of this checkout —
 * whose `prepack` builds dist/ — made once per test process (and kept in memory, so no
 * folder outlives the test files that share it), and fresh projects outside the
 * checkout (under the OS temp folder) that install that tarball and the peers from the
 * npm registry, as a user would. npm's own cache
 * (`--prefer-offline`) keeps repeated installs fast; nothing is mocked.
 *
 * Every command runs with this environment minus ROSTER_*, npm_* (set when the suite
 * runs under `npm test`; `npm_config_local_prefix` would point a nested npm at this
 * checkout), INIT_CWD and NODE_ENV — what a user's fresh shell would have.
 */
import { expect } from "bun:test"
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { repoRoot, spawnRoster, tail, type ProcessResult, type RosterProcess } from "./processes.ts"

const ours = JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as {
  readonly version: string
  readonly devDependencies: Readonly<Record<string, string>>
}

/** The peers (and tools) a project installs next to the tarball, at the versions this checkout is tested with. */
export const peerSpecs: ReadonlyArray<string> = ["effect", "bun", "typescript", "@types/bun"].map((name) => {
  const version = ours.devDependencies[name]
  if (version === undefined) throw new Error(`package.json has no devDependency ${name}`)
  return `${name}@${version}`
})

/** The file name `npm pack` gives this checkout. */
export const tarballName = `roster-${ours.version}.tgz`

/** This process's environment as a user's fresh shell would have it. */
export const userEnv = (extra: Readonly<Record<string, string>> = {}): Record<string, string> => {
  const env: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) {
    if (v === undefined || k.startsWith("ROSTER_") || k.toLowerCase().startsWith("npm_") || k === "INIT_CWD" || k === "NODE_ENV") continue
    env[k] = v
  }
  return { ...env, ...extra }
}

/** Starts `command` in `cwd` with `userEnv()`. */
export const start = (command: ReadonlyArray<string>, cwd: string, env: Readonly<Record<string, string>> = {}): RosterProcess =>
  spawnRoster([], { command, cwd, env: userEnv(env), onlyEnv: true })

/** Runs `command` in `cwd` to its end (bounded by `timeoutMs`). */
export const run = (command: ReadonlyArray<string>, cwd: string, timeoutMs = 120_000): Promise<ProcessResult> => start(command, cwd).wait(timeoutMs)

/** Asserts a finished command exited 0, showing its output when it did not. */
export const expectOk = (r: ProcessResult): ProcessResult => {
  expect(r.code, `${tail(r.stdout)}\n${tail(r.stderr)}`).toBe(0)
  return r
}

/** Runs `command` and throws, with its output, unless it exits 0. */
export const runOk = async (command: ReadonlyArray<string>, cwd: string, timeoutMs = 120_000): Promise<ProcessResult> => {
  const r = await run(command, cwd, timeoutMs)
  if (r.code !== 0) throw new Error(`${command.join(" ")} exited ${r.code ?? r.signal} in ${cwd}:\n${tail(r.stdout)}\n${tail(r.stderr, 40)}`)
  return r
}

/** A new empty folder under the OS temp folder (outside the checkout); the test removes it. */
export const tempDir = (prefix: string): string => realpathSync(mkdtempSync(join(tmpdir(), prefix)))

let packed: Promise<Uint8Array> | undefined

/** `npm pack` of this checkout (the working tree as it is), made the first time it is asked for in this process and kept in memory. */
const packedBytes = (): Promise<Uint8Array> => {
  packed ??= (async () => {
    const dir = tempDir("roster-pack-")
    try {
      // `prepack` rebuilds dist/ in the checkout: test files running in parallel workers
      // (bun test --parallel) take turns, so no build clobbers another's.
      mkdirSync(join(repoRoot, "tests/.tmp"), { recursive: true })
      await runOk(["flock", join(repoRoot, "tests/.tmp/.pack.lock"), "npm", "pack", "--pack-destination", dir], repoRoot, 300_000)
      const tarballs = readdirSync(dir).filter((f) => f.endsWith(".tgz"))
      if (tarballs.length !== 1 || tarballs[0] !== tarballName) throw new Error(`npm pack made ${tarballs.join(", ") || "nothing"}, not ${tarballName}`)
      return new Uint8Array(readFileSync(join(dir, tarballName)))
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })()
  return packed
}

/** Writes this checkout's packed tarball into `dir` (the test's own folder) and returns its path. */
export const packedTarball = async (dir: string): Promise<string> => {
  const path = join(dir, tarballName)
  writeFileSync(path, await packedBytes())
  return path
}

/** The paths inside a tarball (`package/...`). */
export const tarballEntries = async (tarball: string): Promise<ReadonlyArray<string>> =>
  (await runOk(["tar", "-tzf", tarball], tmpdir())).stdout.split("\n").filter((l) => l !== "")

/** `npm install` in `dir`, of `specs` (or of package.json when none), through npm's cache. */
export const npmInstall = (dir: string, specs: ReadonlyArray<string> = []): Promise<ProcessResult> =>
  runOk(["npm", "install", "--prefer-offline", "--no-audit", "--no-fund", ...specs], dir, 300_000)
