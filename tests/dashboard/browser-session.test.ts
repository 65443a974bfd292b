/**
 * Sessions and the sign-in redirect in a real browser (playwright-core driving Debian's
 * chromium at ROSTER_TEST_CHROMIUM) against the real `roster dashboard`: a sign-in
 * whose `next` was tampered into `/<TAB>/evil.example` lands on the dashboard, not on
 * another origin; after Sign out, the old cookie put back into the browser is refused;
 * a restarted dashboard refuses the cookie of the one before.
 */
import { afterEach, describe, expect, test } from "bun:test"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { BrowserContext, Page } from "playwright-core"
import { launchChromium, requireService } from "../support/env.ts"
import { useScratch } from "../support/processes.ts"
import { startDashboard, webApps } from "./DashboardProcess.ts"

const browser = requireService("chromium")
const token = "browser-session-token-0123456789"

describe.skipIf(browser.skip)("dashboard sessions in a browser", () => {
  const scratch = useScratch({ apps: webApps })
  let context: BrowserContext | undefined
  let userDataDir: string | undefined

  const open = async (): Promise<Page> => {
    userDataDir = mkdtempSync(join(tmpdir(), "roster-chromium-"))
    context = await launchChromium(userDataDir)
    return context.newPage()
  }
  afterEach(async () => {
    await context?.close()
    context = undefined
    if (userDataDir) rmSync(userDataDir, { recursive: true, force: true })
  })

  /** A scratch with a migrated database, so the dashboard has something to open. */
  const migrated = async () => {
    const s = scratch()
    const r = await s.run(["migrate"])
    expect(r.code).toBe(0)
    return s
  }

  const signIn = async (page: Page, url: string, next?: string) => {
    await page.goto(`${url}/login`)
    // Tamper with the hidden field as a hostile link or page could have made it.
    if (next !== undefined) await page.locator("input[name=next]").evaluate((el, v) => ((el as unknown as { value: string }).value = v), next)
    await page.locator("input[name=token]").fill(token)
    await page.getByRole("button", { name: "Sign in" }).click()
    await page.waitForLoadState()
  }

  test("a next of /<TAB>/evil.example lands on the dashboard's overview", async () => {
    const s = await migrated()
    const { url } = await startDashboard(s, { env: { ROSTER_DASHBOARD_TOKEN: token } })
    const page = await open()
    const requested: Array<string> = []
    page.on("request", (r) => void requested.push(r.url()))
    await signIn(page, url, "/\t/evil.example")
    expect(new URL(page.url()).origin).toBe(new URL(url).origin)
    expect(new URL(page.url()).pathname).toBe("/")
    expect(await page.locator("h1").first().textContent()).not.toBe("Sign in")
    expect(requested.filter((u) => u.includes("evil.example"))).toEqual([])
  }, 120_000)

  test("after Sign out the same cookie, put back, is refused; a restarted dashboard refuses the old one", async () => {
    const s = await migrated()
    const first = await startDashboard(s, { env: { ROSTER_DASHBOARD_TOKEN: token } })
    const page = await open()
    await signIn(page, first.url)
    const cookie = (await context!.cookies(first.url)).find((c) => c.name === "roster_session")!
    expect((await page.goto(first.url))?.status()).toBe(200)
    await page.getByRole("button", { name: "Sign out" }).click()
    await page.waitForLoadState()
    expect((await context!.cookies(first.url)).find((c) => c.name === "roster_session")).toBeUndefined()
    await context!.addCookies([cookie])
    expect((await page.goto(first.url))?.status()).toBe(401)

    await signIn(page, first.url)
    const live = (await context!.cookies(first.url)).find((c) => c.name === "roster_session")!
    expect((await page.goto(first.url))?.status()).toBe(200)
    first.process.kill()
    await first.process.wait()
    // Cookies are not per port: the browser sends the same one to the new dashboard.
    const second = await startDashboard(s, { env: { ROSTER_DASHBOARD_TOKEN: token } })
    expect((await context!.cookies(second.url)).find((c) => c.name === "roster_session")?.value).toBe(live.value)
    expect((await page.goto(second.url))?.status()).toBe(401)
  }, 120_000)
})
