/**
 * PostgreSQL's claim order in JavaScript (ExecutionRow.sortInClaimOrder): the binary
 * insertion used for a claim's rows gives what `Array.prototype.sort` with
 * `byClaimOrder` gives, ties included, at every size around its 64-row switch.
 */
import { describe, expect, test } from "bun:test"
import type { Execution } from "../../src/store/Execution.ts"
import { byClaimOrder, sortInClaimOrder } from "../../src/store/ExecutionRow.ts"

/** A small seeded generator (mulberry32), so a failing case can be replayed. */
const seeded = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

describe("sortInClaimOrder", () => {
  test("orders as Array.prototype.sort(byClaimOrder) for 0–80 rows with tied priorities and times", () => {
    const random = seeded(17)
    for (let round = 0; round < 400; round++) {
      const n = round % 81
      // Few distinct priorities and times, so most rows tie on both and the id decides.
      const rows = Array.from({ length: n }, (_, k) => ({
        id: `01a2${Math.floor(random() * 1e6).toString(16).padStart(6, "0")}-${k}`,
        priority: Math.floor(random() * 3),
        runAt: 1_765_000_000_000 + Math.floor(random() * 3)
      }) as unknown as Execution)
      const expected = [...rows].sort(byClaimOrder)
      const sorted = sortInClaimOrder([...rows])
      expect(sorted.map((e) => e.id)).toEqual(expected.map((e) => e.id))
    }
  })

  test("sorts in place and returns the same array", () => {
    const rows = [{ id: "b", priority: 0, runAt: 1 }, { id: "a", priority: 0, runAt: 1 }] as unknown as Array<Execution>
    expect(sortInClaimOrder(rows)).toBe(rows)
    expect(rows.map((e) => e.id)).toEqual(["a", "b"])
  })
})
