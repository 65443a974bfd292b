/**
 * Roster's stream logger batches lines (one write per 20 ms window, not one per line),
 * writes a line that comes after a quiet spell, and writes what is left when its scope
 * closes. It sleeps between batches instead of waking every window (an idle worker's
 * CPU, bench/RESULTS.md); what is checked here is that no line is lost or delayed for it.
 */
import { describe, expect, test } from "bun:test"
import { Effect, Exit, Logger, Scope } from "effect"
import { streamLogger } from "../../src/runtime/Logging.ts"
import { waitFor } from "../support/processes.ts"

/** A stream that keeps each write: the logger's output, checked as written. */
const capture = () => {
  const writes: Array<string> = []
  return { writes, stream: { write: (text: string) => (writes.push(text), true) } as unknown as NodeJS.WriteStream }
}

const messagesOf = (writes: ReadonlyArray<string>) => writes.join("").split("\n").filter((l) => l !== "").map((l) => /message=(\S+)/.exec(l)?.[1])

describe("streamLogger", () => {
  test("lines logged together are one write; a line after a quiet spell is written too; the scope's end writes the rest", async () => {
    const { stream, writes } = capture()
    const scope = Effect.runSync(Scope.make())
    const logger = await Effect.runPromise(Scope.provide(streamLogger(stream), scope))
    const log = (...messages: Array<string>) =>
      Effect.runSync(Effect.forEach(messages, (m) => Effect.log(m)).pipe(Effect.provide(Logger.layer([logger]))))

    log("one", "two", "three")
    expect(writes).toEqual([])
    await waitFor("the first batch", () => writes.length === 1, { timeoutMs: 15_000 })
    expect(messagesOf(writes)).toEqual(["one", "two", "three"])

    await new Promise((r) => setTimeout(r, 200))
    expect(writes.length).toBe(1)
    log("four")
    await waitFor("the line after a quiet spell", () => writes.length === 2, { timeoutMs: 15_000 })
    expect(messagesOf(writes)).toEqual(["one", "two", "three", "four"])

    log("five", "six")
    await Effect.runPromise(Scope.close(scope, Exit.void))
    expect(messagesOf(writes)).toEqual(["one", "two", "three", "four", "five", "six"])
  })
})
