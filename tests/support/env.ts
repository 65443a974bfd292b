/**
 * External services for tests (PostgreSQL, Chromium), configured by environment:
 *
 * - `ROSTER_TEST_PG_URL`   e.g. `postgres://postgres@127.0.0.1:55432/roster_test`
 * - `ROSTER_TEST_CHROMIUM` e.g. `/usr/bin/chromium`
 * - `ROSTER_TEST_PG_BIN`, `ROSTER_TEST_PG_USER` (optional): where initdb and pg_ctl are, and
 *   who owns a test's private cluster when we are root; see tests/support/privatePg.ts.
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
