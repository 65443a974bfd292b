/**
 * The dashboard in a real browser (playwright-core driving Debian's chromium at
 * ROSTER_TEST_CHROMIUM): a failure enqueued and run through the real CLI shows on the
 * overview, its page shows the logs and the error, retry from the page creates a new
 * execution, markup in a payload renders as text, a queue's limits and held-back
 * counts show on the overview and a held-back execution's page says why it waits,
 * schedules can be run now and paused,
 * and a token-protected dashboard signs a browser in once. Screenshots are saved under
 * test-artifacts/dashboard/.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test"
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { BrowserContext, Page } from "playwright-core"
import { launchChromium, requireService } from "../support/env.ts"
import { useScratch, waitFor } from "../support/processes.ts"
import { artifacts, drain, enqueue, startDashboard, webApps } from "./DashboardProcess.ts"

const browser = requireService("chromium")

/** Markup an attacker might put in a payload: it must show as text and never run. */
const xss = "<script>window.__xss=1</script><img src=x onerror=window.__xss=2>"

describe.skipIf(browser.skip)("dashboard in a browser", () => {
  const scratch = useScratch({ apps: webApps })
  let context: BrowserContext | undefined
  let userDataDir: string | undefined

  const open = async (): Promise<Page> => {
    userDataDir = mkdtempSync(join(tmpdir(), "roster-chromium-"))
    context = await launchChromium(userDataDir, { viewport: { width: 1280, height: 900 } })
    const page = await context.newPage()
    const dialogs: Array<string> = []
    page.on("dialog", (d) => (dialogs.push(d.message()), void d.dismiss()))
    ;(page as Page & { dialogs?: Array<string> }).dialogs = dialogs
    return page
  }

  const shot = (page: Page, name: string) => page.screenshot({ path: join(artifacts, `${name}.png`), fullPage: true })

  beforeEach(() => mkdirSync(artifacts, { recursive: true }))
  afterEach(async () => {
    await context?.close()
    context = undefined
    if (userDataDir) rmSync(userDataDir, { recursive: true, force: true })
  })

  test("a failed execution: overview, logs and error, retry from the page, markup shown as text", async () => {
    const s = scratch()
    const failedId = await enqueue(s, "web/fail", { note: xss })
    await enqueue(s, "web/ok", { n: 1 })
    await drain(s)
    const { url } = await startDashboard(s)
    const page = await open()

    await page.goto(url)
    const failures = page.locator(".card", { has: page.locator("h2", { hasText: "Recent failures" }) })
    expect(await failures.textContent()).toContain("web/fail")
    expect(await failures.locator(`a[href="/executions/${failedId}"]`).count()).toBe(1)
    expect(await page.locator(".stat").nth(2).textContent()).toBe("2")
    await shot(page, "overview")

    await failures.locator(`a[href="/executions/${failedId}"]`).click()
    await page.waitForURL(`${url}/executions/${failedId}`)
    const main = page.locator("main")
    expect(await main.locator(".card", { hasText: "Error" }).first().textContent()).toContain(`PermanentFailure: could not handle ${xss}`)
    const logs = page.locator(".card", { has: page.locator("h2", { hasText: "Logs" }) })
    expect(await logs.textContent()).toContain(`handling ${xss}`)
    const payload = page.locator(".card", { has: page.locator("h2", { hasText: "Payload" }) })
    expect(await payload.locator("pre").textContent()).toContain(xss)

    // The markup is text: nothing ran, no element was created from it.
    expect(await page.evaluate("typeof window.__xss")).toBe("undefined")
    expect(await page.evaluate("document.querySelectorAll('script, main img').length")).toBe(0)
    expect((page as Page & { dialogs?: Array<string> }).dialogs).toEqual([])
    await shot(page, "execution-failed")

    await page.getByRole("button", { name: "Retry" }).click()
    await page.waitForURL((u) => u.pathname.startsWith("/executions/") && !u.pathname.endsWith(failedId))
    expect(await page.locator(".notice").textContent()).toContain("Retry enqueued")
    const retries = s.all<{ id: string; state: string; payload: string }>("SELECT id, state, payload FROM roster_executions WHERE retry_of = ?", failedId)
    expect(retries).toHaveLength(1)
    expect(retries[0]!.state).toBe("queued")
    expect(JSON.parse(retries[0]!.payload)).toEqual({ note: xss })
    expect(new URL(page.url()).pathname).toBe(`/executions/${retries[0]!.id}`)
    expect(await main.textContent()).toContain(`Retry of${failedId}`)
    await shot(page, "execution-retried")

    await page.goto(`${url}/executions?state=failed`)
    expect(await page.locator("tbody tr").count()).toBe(1)
    await page.goto(`${url}/executions`)
    expect(await page.locator("tbody tr").count()).toBe(3)
    await shot(page, "executions")
    expect(await page.evaluate("typeof window.__xss")).toBe("undefined")
  }, 120_000)

  test("queue limits and held-back counts on the overview; why a due execution has not started on its page", async () => {
    const s = scratch()
    // The scratch folder is the processes' working directory: its roster.config.ts gives the queue limits.
    writeFileSync(join(s.dir, "roster.config.ts"), `export default { queues: { default: { concurrency: 5, globalConcurrency: 4, rateLimit: { limit: 2, period: "1 hour" } } } }\n`)
    const ids = [] as Array<string>
    for (const n of [1, 2, 3, 4]) ids.push(await enqueue(s, "web/ok", { n }))
    const worker = s.spawn(["worker"], { env: { ROSTER_POLL_MS: "200" } })
    await waitFor("two starts to use up the rate limit", () => s.count("SELECT COUNT(*) FROM roster_executions WHERE state = 'succeeded'") === 2, { timeoutMs: 60_000 })
      .catch((e) => { throw new Error(`${e}\n${worker.stderrSoFar()}`) })
    const { url } = await startDashboard(s)
    const page = await open()

    await page.goto(url)
    const queues = page.locator(".card", { has: page.locator("h2", { hasText: "Queues" }) })
    const row = queues.locator("tbody tr", { hasText: "default" })
    expect(await queues.locator("thead").textContent()).toContain("Held back")
    expect(await row.locator(".limit").allTextContents()).toEqual(["5 per worker", "4 global", "2 per 1h"])
    expect(await row.locator(".held").allTextContents()).toEqual(["2 rate limit"])
    await shot(page, "overview-limits")

    const held = s.all<{ id: string }>("SELECT id FROM roster_executions WHERE state = 'queued' ORDER BY id")
    expect(held).toHaveLength(2)
    await page.goto(`${url}/executions/${held[0]!.id}`)
    expect(await page.locator(".waiting-for").textContent()).toMatch(/^rate limit 2 per 1h reached; next start allowed at \d{4}-\d\d-\d\dT[\d:.]+Z$/)
    await shot(page, "execution-held-back")
    await page.goto(`${url}/executions/${ids[0]}`)
    expect(await page.locator(".waiting-for").count()).toBe(0)
  }, 120_000)

  test("schedules: run now enqueues a linked execution; pause and resume", async () => {
    const s = scratch()
    const created = await s.run(["schedules", "create", "--id", "web/hourly", "--job", "web/ok", "--cron", "0 * * * *", "--payload", '{"n":7}'])
    expect(created.code).toBe(0)
    const { url } = await startDashboard(s)
    const page = await open()

    await page.goto(`${url}/schedules`)
    const row = page.locator("tr", { hasText: "web/hourly" })
    expect(await row.locator(".badge").textContent()).toBe("active")
    await shot(page, "schedules")

    await row.getByRole("button", { name: "Run now" }).click()
    await page.waitForURL((u) => u.pathname.startsWith("/executions/"))
    const runs = s.all<{ id: string; payload: string; fire_at: number | null }>("SELECT id, payload, fire_at FROM roster_executions WHERE schedule_id = 'web/hourly'")
    expect(runs).toHaveLength(1)
    expect(JSON.parse(runs[0]!.payload)).toEqual({ n: 7 })
    expect(runs[0]!.fire_at).toBeNull()
    expect(new URL(page.url()).pathname).toBe(`/executions/${runs[0]!.id}`)

    await page.goto(`${url}/schedules/web/hourly`)
    await page.getByRole("button", { name: "Pause" }).click()
    await page.waitForURL((u) => u.pathname === "/schedules/web/hourly")
    expect(s.count("SELECT paused FROM roster_schedules WHERE id = 'web/hourly'")).toBe(1)
    expect(await page.locator("h2", { hasText: "Latest executions" }).count()).toBe(1)
    await shot(page, "schedule-paused")
    await page.getByRole("button", { name: "Resume" }).click()
    await page.waitForURL((u) => u.pathname === "/schedules/web/hourly")
    expect(s.count("SELECT paused FROM roster_schedules WHERE id = 'web/hourly'")).toBe(0)
  }, 120_000)

  test("with a token, a browser signs in once and keeps a session cookie", async () => {
    const s = scratch()
    const token = "browser-test-token-0123456789"
    const { url } = await startDashboard(s, { env: { ROSTER_DASHBOARD_TOKEN: token } })
    const page = await open()

    const first = await page.goto(`${url}/executions`)
    expect(first?.status()).toBe(401)
    await page.locator("input[name=token]").fill("wrong")
    await page.getByRole("button", { name: "Sign in" }).click()
    expect(await page.locator(".notice").textContent()).toContain("not right")
    await page.locator("input[name=token]").fill(token)
    await page.getByRole("button", { name: "Sign in" }).click()
    await page.waitForURL(`${url}/executions`)
    expect(await page.locator("h1").textContent()).toBe("Executions")

    const cookie = (await context!.cookies(url)).find((c) => c.name === "roster_session")
    expect(cookie?.httpOnly).toBe(true)
    expect(cookie?.sameSite).toBe("Strict")
    expect(cookie?.value).not.toContain(token)
    expect((await page.goto(url))?.status()).toBe(200)

    await page.getByRole("button", { name: "Sign out" }).click()
    expect((await page.goto(url))?.status()).toBe(401)
  }, 120_000)
})
