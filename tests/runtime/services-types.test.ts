/**
 * A forgotten service is a compile error (DESIGN §7): `tsc` on a fixture where the app
 * forgets its handlers' Mailer fails at each forgetting, naming the service, while the
 * same fixture giving it (to the Layer, through config services, or with no worker)
 * type-checks.
 */
import { describe, expect, test } from "bun:test"
import { join } from "node:path"
import { repoRoot } from "../support/processes.ts"

describe("handlers' requirements are checked by the compiler", () => {
  test("Roster.layer with a worker and Roster.open require the Jobs' services", async () => {
    const tsc = Bun.spawn([process.execPath, join(repoRoot, "node_modules/typescript/bin/tsc"), "--noEmit", "-p", join(repoRoot, "tests/fixtures/typecheck")], {
      cwd: repoRoot,
      stdout: "pipe",
      stderr: "pipe"
    })
    const out = (await new Response(tsc.stdout).text()) + (await new Response(tsc.stderr).text())
    expect(await tsc.exited).not.toBe(0)
    const errors = out.split("\n").filter((l) => /error TS\d+/.test(l))
    // Only the file that forgets the service has errors, one per forgetting.
    expect(errors.every((l) => l.startsWith("tests/fixtures/typecheck/missing-service.ts"))).toBe(true)
    expect(errors.map((l) => l.match(/\((\d+),/)?.[1])).toEqual(["8", "9"])
    expect(out).toContain("Type 'Mailer' is not assignable to type 'never'")
    expect(out).toContain("readonly services: Layer<Mailer, any, never>")
  }, 120_000)
})
