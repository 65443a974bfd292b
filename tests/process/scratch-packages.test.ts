/**
 * App files a process test writes into its Scratch folder import the checkout's packages:
 * the same `effect` (one copy, the CLI's) as the `roster` process that loads them, never
 * a copy Bun's auto-install would fetch or take from its global cache (which is how a
 * second Effect came to load in such apps, slowly enough on a loaded machine to pass
 * ROSTER_LOAD_TIMEOUT_MS). The CLI children run with `--no-install`, so an app outside
 * any node_modules tree fails to load instead of installing.
 */
import { describe, expect, test } from "bun:test"
import { mkdirSync, realpathSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { bunBinary, repoRoot, spawnRoster, useScratch } from "../support/processes.ts"

describe("a Scratch folder's packages", () => {
  const scratch = useScratch()

  test("a module written into it resolves effect to the checkout's node_modules", async () => {
    const s = scratch()
    const file = join(s.dir, "apps", "probe", "where.ts")
    mkdirSync(join(s.dir, "apps", "probe"), { recursive: true })
    writeFileSync(file, `import { realpathSync } from "node:fs"\nconsole.log(realpathSync(new URL(import.meta.resolve("effect")).pathname))\n`)
    const r = await spawnRoster([], { cwd: s.dir, env: {}, command: [bunBinary, "--no-install", file] }).wait(30_000)
    expect(r.code, r.stderr).toBe(0)
    expect(r.stdout.trim()).toBe(realpathSync(join(repoRoot, "node_modules/effect/dist/index.js")))
  }, 60_000)
})
