/**
 * The dashboard's orchestration views in a real browser (Chromium at ROSTER_TEST_CHROMIUM),
 * on executions a real `roster worker` parked: a parent's page shows what it waits for
 * (its children) and a children table counted by state, linked to the executions list
 * filtered by parent; a child's page links its parent and shows its signal wait; a
 * signal sent through the CLI shows on the page (taken); the list filters by state
 * waiting; the overview counts waiting executions; a waiting parent is cancelled from its
 * page, with its waiting children. Apps: tests/fixtures/signal-apps.
 * Screenshots go to test-artifacts/dashboard/.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test"
import { mkdirSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { BrowserContext, Page } from "playwright-core"
import { launchChromium, requireService } from "../support/env.ts"
import { repoRoot, tail, useScratch, waitFor } from "../support/processes.ts"
import { artifacts, enqueue, startDashboard } from "./DashboardProcess.ts"

const browser = requireService("chromium")
const signalApps = join(repoRoot, "tests/fixtures/signal-apps")

describe.skipIf(browser.skip)("dashboard: parents, children, waits and signals", () => {
  const scratch = useScratch({ apps: signalApps })
  let context: BrowserContext | undefined
  let userDataDir: string | undefined

  const open = async (): Promise<Page> => {
    userDataDir = mkdtempSync(join(tmpdir(), "roster-chromium-"))
    context = await launchChromium(userDataDir, { viewport: { width: 1280, height: 900 } })
    return context.newPage()
  }
  const shot = (page: Page, name: string) => page.screenshot({ path: join(artifacts, `${name}.png`), fullPage: true })

  beforeEach(() => mkdirSync(artifacts, { recursive: true }))
  afterEach(async () => {
    await context?.close()
    context = undefined
    if (userDataDir) rmSync(userDataDir, { recursive: true, force: true })
  })

  test("a waiting parent's children and wait; a child's parent link, signal wait and signals", async () => {
    const s = scratch()
    const parent = await enqueue(s, "sig/parent", { count: 22 })
    const worker = s.spawn(["worker"], { env: { ROSTER_POLL_MS: "200" } })
    await waitFor("the parent and its 22 children to wait", () => s.count("SELECT COUNT(*) FROM roster_executions WHERE state = 'waiting'") === 23, { timeoutMs: 60_000 })
      .catch((e) => { throw new Error(`${e}\n${tail(worker.stderrSoFar())}`) })
    const children = s.all<{ id: string; parent_step: string }>("SELECT id, parent_step FROM roster_executions WHERE parent_id = ? ORDER BY id", parent)
    const { url } = await startDashboard(s)
    const page = await open()

    await page.goto(`${url}/executions/${parent}`)
    expect(await page.locator(".kv tr", { hasText: "State" }).locator(".badge").textContent()).toBe("waiting")
    expect(await page.locator(".wait").textContent()).toBe('22 children to end (step "all")')
    const card = page.locator(".card.children")
    expect(await card.locator("tbody tr").count()).toBe(21)
    expect(await card.locator("tbody tr").last().textContent()).toContain("and 2 more")
    expect(await card.locator(".child-count").allTextContents()).toEqual(["waiting 22"])
    // Newest first: the last child enqueued heads the table.
    expect(await card.locator("tbody tr").first().locator("a").getAttribute("href")).toBe(`/executions/${children[21]!.id}`)
    expect(await card.locator("tbody tr").first().textContent()).toContain("child-21")
    await shot(page, "execution-parent-waiting")

    // "All 22 children" opens the list filtered by parent.
    await card.getByRole("link", { name: "All 22 children →" }).click()
    await page.waitForURL((u) => u.pathname === "/executions" && u.searchParams.get("parent") === parent)
    expect(await page.locator(".parent-filter").textContent()).toContain(`Children of ${parent}`)
    expect(await page.locator("main table tbody tr").count()).toBe(22)
    expect(await page.locator(".actions").first().textContent()).toContain("waiting (22)")
    // The state filter keeps the parent (a hidden field) and offers waiting.
    expect(await page.locator("select[name=state] option").allTextContents()).toContain("waiting")
    await page.locator("select[name=state]").selectOption("succeeded")
    await page.getByRole("button", { name: "Filter" }).click()
    await page.waitForURL((u) => u.searchParams.get("state") === "succeeded")
    expect(new URL(page.url()).searchParams.get("parent")).toBe(parent)
    expect(await page.locator("main table tbody tr").textContent()).toContain("No executions match")
    await shot(page, "executions-children")

    // The whole list filtered by state waiting: the parent and its children.
    await page.goto(`${url}/executions?state=waiting`)
    expect(await page.locator("main table tbody tr").count()).toBe(23)
    expect(await page.locator("main table tbody .badge").allTextContents()).toEqual(Array(23).fill("waiting"))

    // A child: its parent link and step, its signal wait; then a signal taken.
    const child = children[0]!
    await page.goto(`${url}/executions/${child.id}`)
    const parentRow = page.locator(".kv tr", { hasText: "Parent" })
    expect(await parentRow.locator(`a[href="/executions/${parent}"]`).count()).toBe(1)
    expect(await parentRow.textContent()).toContain("step child-0")
    expect(await page.locator(".wait").textContent()).toMatch(/^signal "approve" until \d{4}-\d\d-\d\dT[\d:.]+Z$/)
    expect(await page.locator(".card.signals").count()).toBe(0)
    await shot(page, "execution-child-waiting")

    const sent = await s.run(["executions", "signal", child.id, "approve", "--payload", '{"by":"<b>ann</b>"}'])
    expect(sent.code, sent.stderr).toBe(0)
    const ended = await s.run(["executions", "wait", child.id, "--timeout", "30s"])
    expect(ended.code, ended.stderr).toBe(0)
    await page.goto(`${url}/executions/${child.id}`)
    expect(await page.locator(".kv tr", { hasText: "State" }).locator(".badge").textContent()).toBe("succeeded")
    expect(await page.locator(".wait").count()).toBe(0)
    const signals = page.locator(".card.signals tbody tr")
    expect(await signals.count()).toBe(1)
    expect(await signals.locator("td").first().textContent()).toBe("approve")
    expect(await signals.textContent()).not.toContain("kept")
    // The payload is text, not markup.
    expect(await signals.locator("pre").textContent()).toContain('{"by":"<b>ann</b>"}')
    expect(await page.locator(".card.signals b").count()).toBe(0)
    await shot(page, "execution-child-signalled")

    // The parent counts one child succeeded; the overview counts waiting executions.
    await page.goto(`${url}/executions/${parent}`)
    expect(await page.locator(".card.children .child-count").allTextContents()).toEqual(["waiting 21", "succeeded 1"])
    await page.goto(url)
    const queues = page.locator(".card", { has: page.locator("h2", { hasText: "Queues" }) })
    const headers = await queues.locator("thead th").allTextContents()
    const column = headers.indexOf("waiting")
    expect(column).toBeGreaterThan(0)
    const cells = await queues.locator("tbody tr", { hasText: "default" }).locator("td").allTextContents()
    expect(cells[column]).toBe("22")
    expect(await queues.locator(`tbody a[href="/executions?queue=default&state=waiting"]`).count()).toBe(1)
    await shot(page, "overview-waiting")

    // A waiting parent can be cancelled from its page; the cancel reaches its waiting children.
    await page.goto(`${url}/executions/${parent}`)
    await page.getByRole("button", { name: "Cancel" }).click()
    await page.waitForURL((u) => u.pathname === `/executions/${parent}`)
    expect(await page.locator(".kv tr", { hasText: "State" }).locator(".badge").textContent()).toBe("cancelled")
    expect(await page.locator(".wait").count()).toBe(0)
    expect(await page.locator(".card.children .child-count").allTextContents()).toEqual(["succeeded 1", "cancelled 21"])
  }, 180_000)
})
