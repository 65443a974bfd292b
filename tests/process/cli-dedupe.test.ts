/**
 * `roster enqueue --idempotency-key K --dedupe MODE` through a real process: `replace`
 * rewrites the queued execution (`--json` adds `replaced`), `active` returns it, an
 * unknown mode is a usage error and a mode without a key is refused with one line.
 */
import { describe, expect, test } from "bun:test"
import { demoApps, parseJsonOutput, useScratch } from "../support/processes.ts"

describe("enqueue --dedupe", () => {
  const scratch = useScratch({ apps: demoApps })

  test("replace rewrites the queued execution; active returns it; forever output is unchanged", async () => {
    const s = scratch()
    const enqueue = (n: number, ...flags: Array<string>) =>
      s.run(["enqueue", "demo/noop", "--payload", JSON.stringify({ n }), "--idempotency-key", "digest", ...flags])
    const first = parseJsonOutput<{ id: string; inserted: boolean; replaced: boolean }>(await enqueue(1, "--dedupe", "replace", "--json"))
    expect(first).toEqual({ id: expect.any(String), inserted: true, replaced: false })
    const second = await enqueue(2, "--dedupe", "replace", "--delay-ms", "60000", "--json")
    expect(second.code).toBe(0)
    expect(parseJsonOutput(second)).toEqual({ id: first.id, inserted: false, replaced: true })
    expect(parseJsonOutput(await enqueue(3, "--dedupe", "active", "--json"))).toEqual({ id: first.id, inserted: false, replaced: false })
    const text = await enqueue(4, "--dedupe", "replace")
    expect(text.stdout).toContain(`replaced the queued demo/noop ${first.id}`)
    expect(s.all("SELECT id, payload, idempotency_key, dedupe_key FROM roster_executions")).toEqual([
      { id: first.id, payload: '{"n":4}', idempotency_key: null, dedupe_key: "digest" }
    ])
    // The same text as a forever key is another key; its --json keeps { id, inserted }.
    const forever = parseJsonOutput<{ id: string }>(await enqueue(5, "--json"))
    expect(Object.keys(forever).sort()).toEqual(["id", "inserted"])
    expect(forever.id).not.toBe(first.id)
  }, 60_000)

  test("an unknown mode is a usage error; a mode without a key is refused", async () => {
    const s = scratch()
    const unknown = await s.run(["enqueue", "demo/noop", "--payload", "{}", "--idempotency-key", "k", "--dedupe", "debounce"])
    expect(unknown.code).toBe(2)
    const keyless = await s.run(["enqueue", "demo/noop", "--payload", "{}", "--dedupe", "active"])
    expect(keyless.code).toBe(1)
    expect(keyless.stderr).toContain('dedupe "active" for demo/noop needs an idempotencyKey')
    expect(s.all("SELECT id FROM roster_executions")).toEqual([])
  }, 60_000)
})
