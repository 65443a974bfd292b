/**
 * Operating-system powers some bad-input tests need, probed once: mounting (a tiny
 * tmpfs for a full disk, a read-only bind mount) and running a process as another user
 * (`runuser`, since root ignores file permissions). Like {@link requireService}, a
 * missing power skips those tests with one warning on a developer machine, and is an
 * error under `CI=true` (CI runs as root on Debian 12, where both work).
 *
 * ```ts
 * const mounting = requirePrivilege("mount")
 * describe.skipIf(mounting.skip)("a full disk", () => { ... })
 * ```
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

type Privilege = "mount" | "runuser"

const run = (argv: ReadonlyArray<string>): boolean => {
  try {
    return Bun.spawnSync([...argv], { stdout: "ignore", stderr: "ignore" }).exitCode === 0
  } catch {
    return false
  }
}

/** Mounts a tmpfs of `size` (e.g. "1m") on `dir`; throws with mount's message when it cannot. */
export const mountTmpfs = (dir: string, size: string): void => {
  const r = Bun.spawnSync(["mount", "-t", "tmpfs", "-o", `size=${size}`, "tmpfs", dir], { stderr: "pipe" })
  if (r.exitCode !== 0) throw new Error(`mount tmpfs on ${dir}: ${r.stderr.toString().trim()}`)
}

/** Changes a mount's options (e.g. "size=16m", "bind,ro"); throws when it cannot. */
export const remount = (dir: string, options: string): void => {
  const r = Bun.spawnSync(["mount", "-o", `remount,${options}`, dir], { stderr: "pipe" })
  if (r.exitCode !== 0) throw new Error(`remount ${dir} (${options}): ${r.stderr.toString().trim()}`)
}

/** Bind-mounts `source` on `target`, read-only; throws when it cannot. */
export const bindReadOnly = (source: string, target: string): void => {
  const r = Bun.spawnSync(["mount", "--bind", source, target], { stderr: "pipe" })
  if (r.exitCode !== 0) throw new Error(`bind ${source} on ${target}: ${r.stderr.toString().trim()}`)
  remount(target, "bind,ro")
}

/** Unmounts `dir` (lazily, so a straggling process cannot make it fail); never throws. */
export const unmount = (dir: string): void => {
  run(["umount", "-l", dir])
}

const probes: Record<Privilege, () => boolean> = {
  mount: () => {
    const dir = mkdtempSync(join(tmpdir(), "roster-mount-probe-"))
    try {
      mountTmpfs(dir, "64k")
      unmount(dir)
      return true
    } catch {
      return false
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  },
  runuser: () => process.getuid?.() === 0 && run(["runuser", "-u", "nobody", "--", "true"])
}

const what: Record<Privilege, string> = {
  mount: "mounting a tmpfs (run as root, or in a container with CAP_SYS_ADMIN)",
  runuser: "running a process as user nobody (run as root, with runuser)"
}

const known = new Map<Privilege, { skip: boolean; reason: string }>()

/** Whether the tests needing `name` can run: throws under `CI=true` when they cannot, else skips with a reason. */
export const requirePrivilege = (name: Privilege): { skip: boolean; reason: string } => {
  const cached = known.get(name)
  if (cached) return cached
  let result = { skip: false, reason: "" }
  if (!probes[name]()) {
    if (process.env.CI === "true") throw new Error(`these tests need ${what[name]}, required when CI=true`)
    result = { skip: true, reason: `skipping tests that need ${what[name]}: not available here` }
    console.warn(result.reason)
  }
  known.set(name, result)
  return result
}
