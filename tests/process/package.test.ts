/**
 * The package (issue 12, DESIGN §7): `npm pack` of this checkout installs into a fresh
 * project outside it, next to `bun` and `effect`, and works there as a user runs it.
 *
 * - The tarball holds what runs — dist/ (JavaScript and declarations), README, docs —
 *   and no sources, tests, benchmarks or examples.
 * - The project is tests/fixtures/package-app copied under the OS temp folder: a strict
 *   tsconfig.json (strict, exactOptionalPropertyTypes, noUncheckedIndexedAccess,
 *   noPropertyAccessFromIndexSignature, noUnusedLocals, verbatimModuleSyntax; no
 *   skipLibCheck, no allowImportingTsExtensions), roster.config.ts, and the app `mail`,
 *   whose Job requires the Mailer of its services.ts. npm installs the tarball and the
 *   peers from the registry (through npm's cache).
 * - There `tsc --noEmit` passes — Roster's declarations check under the user's flags,
 *   and types.ts's `@ts-expect-error` lines show they are real types, roster/testing
 *   included — and the installed `roster` bin checks the app, enqueues, and runs a
 *   worker that succeeds with the Mailer's receipt; `bun run worker` (a package.json
 *   script) does the same.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { cpSync, readFileSync, rmSync } from "node:fs"
import { join } from "node:path"
import { parseJsonOutput, repoRoot, tail, type ProcessResult } from "../support/processes.ts"
import { expectOk, npmInstall, packedTarball, peerSpecs, run, tarballEntries, tempDir } from "../support/package.ts"

const fixture = join(repoRoot, "tests/fixtures/package-app")

let root: string
let tarball: string
let project: string

beforeAll(async () => {
  root = tempDir("roster-package-test-")
  tarball = await packedTarball(root)
  project = join(root, "app")
  cpSync(fixture, project, { recursive: true })
  await npmInstall(project, [tarball, ...peerSpecs])
}, 600_000)

afterAll(() => {
  rmSync(root, { recursive: true, force: true })
})

/** `npx roster <args>` in the project: the bin npm linked from the tarball. */
const roster = (args: ReadonlyArray<string>): Promise<ProcessResult> => run(["npx", "--no-install", "roster", ...args], project, 60_000)

interface Detail {
  readonly state: string
  readonly result: unknown
  readonly logs: ReadonlyArray<{ readonly message: string }>
}

const enqueue = async (to: string): Promise<string> =>
  parseJsonOutput<{ id: string }>(expectOk(await roster(["enqueue", "mail/welcome", "--payload", JSON.stringify({ to }), "--json"]))).id

const expectSent = async (id: string, to: string): Promise<void> => {
  const detail = parseJsonOutput<Detail>(expectOk(await roster(["executions", "show", id, "--json"])))
  const receipt = `sent "welcome" to ${to}`
  expect(detail).toMatchObject({ state: "succeeded", result: { receipt } })
  expect(detail.logs.map((l) => l.message)).toContain(receipt)
}

describe("the packed package", () => {
  test("ships dist (JavaScript and declarations), README and docs, and nothing of sources, tests or benchmarks", async () => {
    const entries = await tarballEntries(tarball)
    for (const required of ["package/package.json", "package/README.md", "package/dist/index.js", "package/dist/index.d.ts", "package/dist/cli/main.js", "package/dist/testing/index.js", "package/dist/testing/index.d.ts"]) {
      expect(entries).toContain(required)
    }
    const stray = entries.filter((e) => !/^package\/(package\.json|README\.md|docs\/.+\.md|dist\/.+\.(js|d\.ts))$/.test(e))
    expect(stray).toEqual([])
    expect(entries.filter((e) => e.endsWith(".d.ts")).length).toBeGreaterThan(10)
  })

  test("installs with effect and bun as peers, the bin a Bun script and exports pointing at dist", () => {
    const installed = JSON.parse(readFileSync(join(project, "node_modules/roster/package.json"), "utf8")) as {
      peerDependencies: Record<string, string>
      dependencies: Record<string, string>
      bin: Record<string, string>
      exports: Record<string, { types: string; default: string }>
    }
    expect(Object.keys(installed.peerDependencies)).toEqual(expect.arrayContaining(["effect", "bun"]))
    expect(installed.dependencies["effect"]).toBeUndefined()
    expect(installed.bin).toEqual({ roster: "./dist/cli/main.js" })
    expect(installed.exports["."]).toEqual({ types: "./dist/index.d.ts", default: "./dist/index.js" })
    expect(installed.exports["./testing"]).toEqual({ types: "./dist/testing/index.d.ts", default: "./dist/testing/index.js" })
    expect(readFileSync(join(project, "node_modules/roster/dist/cli/main.js"), "utf8").split("\n")[0]).toBe("#!/usr/bin/env bun")
  })

  test("type-checks under the project's strict tsconfig without skipLibCheck", async () => {
    const shown = JSON.parse(expectOk(await run(["npx", "--no-install", "tsc", "--showConfig", "-p", "."], project, 60_000)).stdout) as {
      compilerOptions: Record<string, unknown>
    }
    expect(shown.compilerOptions).toMatchObject({
      strict: true,
      exactOptionalPropertyTypes: true,
      noUncheckedIndexedAccess: true,
      noPropertyAccessFromIndexSignature: true,
      noUnusedLocals: true,
      verbatimModuleSyntax: true
    })
    expect(shown.compilerOptions["skipLibCheck"]).toBeUndefined()
    expect(shown.compilerOptions["allowImportingTsExtensions"]).toBeUndefined()
    expectOk(await run(["npx", "--no-install", "tsc", "--noEmit", "-p", "."], project, 180_000))
  }, 240_000)

  test("roster check, enqueue and worker --exit-when-idle run the Job with the app's service", async () => {
    const report = parseJsonOutput<{ ok: boolean; jobs: Array<{ id: string }>; schedules: Array<{ id: string }> }>(expectOk(await roster(["check", "--json"])))
    expect(report.ok).toBe(true)
    expect(report.jobs.map((j) => j.id)).toContain("mail/welcome")
    expect(report.schedules.map((s) => s.id)).toContain("mail/daily")

    const id = await enqueue("ada@example.com")
    expectOk(await roster(["worker", "--exit-when-idle"]))
    await expectSent(id, "ada@example.com")
  }, 120_000)

  test("bun run worker runs the installed bin from a package.json script", async () => {
    const id = await enqueue("grace@example.com")
    expectOk(await run(["node_modules/.bin/bun", "run", "worker", "--exit-when-idle"], project, 60_000))
    await expectSent(id, "grace@example.com")
  }, 120_000)

  test("roster/testing loads from the package", async () => {
    const r = expectOk(await run(["node_modules/.bin/bun", "-e", 'const m = await import("roster/testing"); console.log(typeof m.RosterTest.make)'], project, 60_000))
    expect(r.stdout.trim()).toBe("function")
  }, 60_000)
})
