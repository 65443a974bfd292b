/**
 * A copy of what the `roster` CLI needs to run — the bun binary, `src/`, the packages
 * it loads from `node_modules`, package.json, tsconfig.json and the demo apps — in a
 * world-readable temp folder, for tests that run Roster as another user (`runuser -u
 * nobody`, since root ignores file permissions). That user may not be able to reach
 * the clone at all: a clone under `mktemp -d`, or in a home folder of mode 0700, is
 * closed to everyone but its owner, so `runuser -u nobody -- <clone>/node_modules/bun`
 * fails before Roster even starts. The copy is real (not hard links: making it readable
 * must not change the clone's own files) and is removed by {@link ReachableCopy.remove}.
 *
 * ```ts
 * const copy = reachableCopy()
 * afterAll(() => copy.remove())
 * spawnRoster(args, { cwd, env: { ...env, ROSTER_APPS_DIR: copy.demoApps }, command: ["runuser", "-u", "nobody", "--", ...copy.command] })
 * ```
 */
import { chmodSync, cpSync, mkdtempSync, readdirSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { bunBinary, repoRoot } from "./processes.ts"

/** A world-readable copy of the CLI. */
export interface ReachableCopy {
  /** The folder holding it. */
  readonly dir: string
  /** `[bun, src/cli/main.ts]` inside the copy: the argv prefix that runs `roster`. */
  readonly command: ReadonlyArray<string>
  /** The demo apps inside the copy (they import the copy's `src/index.ts`). */
  readonly demoApps: string
  readonly remove: () => void
}

/** Packages only tests, the type checker and the browser tests use; the CLI never loads them. */
const notLoaded = new Set(["bun", "bun-types", "typescript", "playwright-core", "@types", "fast-check", "pure-rand", "@oven"])

/** Copies the CLI into a fresh world-readable folder under the system temp folder. */
export const reachableCopy = (): ReachableCopy => {
  const dir = mkdtempSync(join(tmpdir(), "roster-reachable-"))
  try {
    const copy = (relative: string) => cpSync(join(repoRoot, relative), join(dir, relative), { recursive: true, dereference: true })
    for (const relative of ["src", "examples/demo/apps", "package.json", "tsconfig.json"]) copy(relative)
    for (const name of readdirSync(join(repoRoot, "node_modules"))) {
      if (!notLoaded.has(name) && !name.startsWith(".")) copy(join("node_modules", name))
    }
    const bun = join(dir, "bun")
    cpSync(bunBinary, bun)
    // Whatever the umask was at clone or install time: readable by all, folders enterable.
    const r = Bun.spawnSync(["chmod", "-R", "a+rX", dir], { stderr: "pipe" })
    if (r.exitCode !== 0) throw new Error(`chmod -R a+rX ${dir}: ${r.stderr.toString().trim()}`)
    chmodSync(bun, 0o755)
    return {
      dir,
      command: [bun, join(dir, "src/cli/main.ts")],
      demoApps: join(dir, "examples/demo/apps"),
      remove: () => rmSync(dir, { recursive: true, force: true })
    }
  } catch (cause) {
    rmSync(dir, { recursive: true, force: true })
    throw cause
  }
}
