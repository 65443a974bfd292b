/**
 * The README's quick start works as written on a fresh checkout (issue 8): the two
 * commands are read from the README, a fresh `git clone` of this repository's HEAD is
 * made in a temporary folder, and the commands run there verbatim with `bash -c`.
 *
 * - The commands are the two lines of the first ```sh block under "## Quick start"
 *   (`<command>   # comment`). If the block is missing or has changed shape the test
 *   fails and says what it expected, rather than testing something else.
 * - The clone is of HEAD: only committed work is tested (commit before running this).
 * - `npm install && npm start` runs as is. npm's cache (~/.npm) is shared with this
 *   machine's, which makes the install faster without changing the command. The demo
 *   must exit 0 and its output show Jobs succeeding, a retry, a permanent failure and
 *   the demo Schedule firing.
 * - `npm test` runs verbatim with a narrowing appended: `npm test -- tests/jobs`. The
 *   whole suite inside the suite would recurse and double CI time. `npm test` is
 *   `bun run typecheck && bun test …`, and npm appends the extra arguments to the last
 *   command, so the type-check of the whole clone (`tsc --noEmit`) still runs in full
 *   and `bun test` runs one folder of the clone's tests. ROSTER_QUICKSTART_NESTED=1 is
 *   set for that run and makes this test skip itself there, should the narrowing ever
 *   include it.
 * - Children get this environment minus ROSTER_*, npm_* (set when the suite itself runs
 *   under `npm test`; `npm_config_local_prefix` would point the nested npm at this
 *   checkout), INIT_CWD and NODE_ENV — what a fresh shell would have.
 */
import { describe, expect, test } from "bun:test"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { repoRoot, spawnRoster, tail } from "../support/processes.ts"

const nested = process.env.ROSTER_QUICKSTART_NESTED === "1"
const narrowing = "-- tests/jobs"

/** The quick-start commands of the README, or an error that says what was expected. */
const quickStartCommands = (readme: string): { install: string; test: string } => {
  const expected = "README.md must keep, under \"## Quick start\", one ```sh block of exactly two lines: " +
    "`npm install && npm start   # ...` and `npm test   # ...`"
  const section = readme.split(/^## Quick start$/m)[1]?.split(/^## /m)[0]
  const block = section === undefined ? undefined : /^```sh\n([\s\S]*?)^```$/m.exec(section)?.[1]
  if (block === undefined) throw new Error(`${expected}; no such block found`)
  const lines = block.split("\n").filter((l) => l.trim() !== "").map((l) => l.split(/\s+#\s/)[0]!.trim())
  if (lines.length !== 2 || !/^npm install\b.*&& npm start$/.test(lines[0]!) || !/^npm test$/.test(lines[1]!)) {
    throw new Error(`${expected}; found:\n${block}`)
  }
  return { install: lines[0]!, test: lines[1]! }
}

/** This process's environment as a fresh shell would have it. */
const freshEnv = (): Record<string, string> => {
  const env: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) {
    if (v === undefined || k.startsWith("ROSTER_") || k.toLowerCase().startsWith("npm_") || k === "INIT_CWD" || k === "NODE_ENV") continue
    env[k] = v
  }
  return env
}

/** Runs `bash -c <command>` in `cwd`. */
const bash = (command: string, cwd: string, env: Record<string, string>, timeoutMs: number) =>
  spawnRoster([command], { cwd, env, command: ["bash", "-c"], onlyEnv: true }).wait(timeoutMs)

describe("README quick start", () => {
  test("reads its two commands from the README", () => {
    const commands = quickStartCommands(readFileSync(join(repoRoot, "README.md"), "utf8"))
    expect(commands).toEqual({ install: "npm install && npm start", test: "npm test" })
    expect(() => quickStartCommands("# Roster\n\n## Quick start\n\nnothing here\n")).toThrow(/no such block/)
  })

  test.skipIf(nested)("runs verbatim in a fresh clone: the demo shows successes, a retry and a Schedule firing; the tests pass", async () => {
    const commands = quickStartCommands(readFileSync(join(repoRoot, "README.md"), "utf8"))
    const dir = mkdtempSync(join(tmpdir(), "roster-quickstart-"))
    try {
      const env = freshEnv()
      const clone = join(dir, "roster")
      const cloned = await bash(`git clone --quiet ${JSON.stringify(repoRoot)} ${JSON.stringify(clone)}`, dir, env, 60_000)
      expect(cloned.code, cloned.stderr).toBe(0)

      const demo = await bash(commands.install, clone, env, 240_000)
      const output = `${demo.stdout}\n${demo.stderr}`
      expect(demo.code, tail(output, 60)).toBe(0)
      expect(demo.stdout).toMatch(/demo\/noop +succeeded +attempts: succeeded\n/)
      expect(demo.stdout).toMatch(/demo\/flaky +succeeded +attempts: retrying → retrying → succeeded\n/)
      expect(demo.stdout).toMatch(/demo\/broken +failed +attempts: failed +error: demo\/broken always fails\n/)
      expect(demo.stdout).toMatch(/scheduler +schedule demo\/every-two-seconds: fire \S+ enqueued \S+/)
      expect(demo.stdout).toMatch(/demo\/noop +succeeded +attempts: succeeded +fire \S+ of demo\/every-two-seconds\n/)
      expect(demo.stdout).toContain("scheduler exited with code 0, worker exited with code 0")
      expect(demo.stdout).toMatch(/Summary: \d+ executions succeeded \(1 after a retry\), 1 failed permanently, demo\/every-two-seconds fired and ran \d+ times\./)

      const tests = await bash(`${commands.test} ${narrowing}`, clone, { ...env, ROSTER_QUICKSTART_NESTED: "1" }, 240_000)
      const testOutput = `${tests.stdout}\n${tests.stderr}`
      expect(tests.code, tail(testOutput, 60)).toBe(0)
      expect(testOutput).toContain("tsc --noEmit")
      expect(testOutput).toMatch(/\b[1-9]\d* pass\b/)
      expect(testOutput).toMatch(/\b0 fail\b/)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }, 600_000)
})
