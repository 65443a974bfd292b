/**
 * External services for tests (PostgreSQL, Chromium), configured by environment:
 *
 * - `ROSTER_TEST_PG_URL`   e.g. `postgres://postgres@127.0.0.1:55432/roster_test`
 * - `ROSTER_TEST_CHROMIUM` e.g. `/usr/bin/chromium`
 * - `ROSTER_TEST_PG_CTL`, `ROSTER_TEST_PG_DATA`, `ROSTER_TEST_PG_USER`, `ROSTER_TEST_PG_LOG`
 *   (optional) let a test restart the server; see {@link pgRestartCommand}.
 *
 * `.ci/run` starts a throwaway cluster and sets all of them. Locally, a missing service
 * skips its tests with one warning; under `CI=true` a missing service is an error, so CI
 * can never pass by silently skipping them.
 *
 * ```ts
 * const pg = requireService("postgres")
 * describe.skipIf(pg.skip)("postgres store", () => { ... })
 * ```
 */

type Service = "postgres" | "chromium"

const services: Record<Service, { envVar: string; label: string; example: string }> = {
  postgres: {
    envVar: "ROSTER_TEST_PG_URL",
    label: "PostgreSQL",
    example: "postgres://user@127.0.0.1:5432/roster_test",
  },
  chromium: { envVar: "ROSTER_TEST_CHROMIUM", label: "browser", example: "/usr/bin/chromium" },
}

const nonEmpty = (value: string | undefined): string | undefined =>
  value === undefined || value.trim() === "" ? undefined : value

/** The PostgreSQL URL for tests, or `undefined` when not configured. */
export const pgUrl = (): string | undefined => nonEmpty(process.env.ROSTER_TEST_PG_URL)

/** The Chromium executable for browser tests, or `undefined` when not configured. */
export const chromiumPath = (): string | undefined => nonEmpty(process.env.ROSTER_TEST_CHROMIUM)

const warned = new Set<Service>()

/**
 * Whether the tests needing `name` should run. Throws when the service is missing and
 * `CI=true`; otherwise a missing service means `skip: true` (warned once per service).
 */
export const requireService = (name: Service): { skip: boolean; reason: string } => {
  const { envVar, label, example } = services[name]
  if (nonEmpty(process.env[envVar]) !== undefined) return { skip: false, reason: "" }
  if (process.env.CI === "true") throw new Error(`${envVar} is required when CI=true`)
  const reason = `skipping ${label} tests: set ${envVar}=${example} to run them`
  if (!warned.has(name)) {
    warned.add(name)
    console.warn(reason)
  }
  return { skip: true, reason }
}

/**
 * argv that restarts the test PostgreSQL server (`pg_ctl restart -w`), run as the
 * cluster's OS user when we are root; `undefined` unless `ROSTER_TEST_PG_CTL` and
 * `ROSTER_TEST_PG_DATA` are set (under `CI=true` their absence throws). Passes `-l $ROSTER_TEST_PG_LOG` when set: a server
 * started without `-l` keeps the spawner's stdout/stderr open, so piped output never
 * ends. (`.ci/run`'s `ROSTER_TEST_PG_CTL` is a wrapper that always adds `-l`.)
 */
export const pgRestartCommand = (): Array<string> | undefined => {
  const pgCtl = nonEmpty(process.env.ROSTER_TEST_PG_CTL)
  const dataDir = nonEmpty(process.env.ROSTER_TEST_PG_DATA)
  if (pgCtl === undefined || dataDir === undefined) {
    // As for a missing service: under CI the server restart and outage tests must run, not skip.
    if (process.env.CI === "true") throw new Error("ROSTER_TEST_PG_CTL and ROSTER_TEST_PG_DATA are required when CI=true")
    return undefined
  }
  const user = nonEmpty(process.env.ROSTER_TEST_PG_USER)
  const asUser = user !== undefined && process.getuid?.() === 0 ? ["runuser", "-u", user, "--"] : []
  const log = nonEmpty(process.env.ROSTER_TEST_PG_LOG)
  const logArgs = log === undefined ? [] : ["-l", log]
  return [...asUser, pgCtl, "-D", dataDir, ...logArgs, "restart", "-w", "-m", "fast"]
}

/**
 * Starts headless Chromium (ROSTER_TEST_CHROMIUM) with a fresh profile in `userDataDir`,
 * with the flags this machine's closed network needs (no background networking).
 */
export const launchChromium = async (userDataDir: string, options: { readonly viewport?: { readonly width: number; readonly height: number } } = {}) => {
  const { chromium } = await import("playwright-core")
  return chromium.launchPersistentContext(userDataDir, {
    executablePath: chromiumPath()!,
    args: ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    ...(options.viewport ? { viewport: options.viewport } : {})
  })
}
