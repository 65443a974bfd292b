/**
 * A Dispatcher's wake-ups are coalesced before its mailbox (src/actors/DueWakeups.ts):
 * however many due wake-ups come while one is pending, the mailbox holds one; wake-ups
 * due later always pass; once the mailbox is taken, the next due one passes again.
 */
import { describe, expect, test } from "bun:test"
import * as DueWakeups from "../../src/actors/DueWakeups.ts"

describe("DueWakeups", () => {
  const setUp = () => {
    const offered: Array<number> = []
    let now = 1_000
    const wakeups = DueWakeups.make((dueAt) => offered.push(dueAt), () => now)
    return { offered, wakeups, at: (t: number) => (now = t) }
  }

  test("100,000 due wake-ups while one is pending leave one in the mailbox", () => {
    const { offered, wakeups } = setUp()
    for (let i = 0; i < 100_000; i++) wakeups.wake(1_000 - (i % 3))
    expect(offered).toEqual([1_000])
  })

  test("wake-ups due later pass whatever is pending, in order", () => {
    const { offered, wakeups } = setUp()
    wakeups.wake(900)
    wakeups.wake(5_000)
    wakeups.wake(2_000)
    wakeups.wake(1_000)
    expect(offered).toEqual([900, 5_000, 2_000])
  })

  test("once the mailbox is taken, the next due wake-up passes again", () => {
    const { offered, wakeups, at } = setUp()
    wakeups.wake(1_000)
    wakeups.wake(1_000)
    wakeups.taken()
    at(3_000)
    wakeups.wake(2_000) // due later when first asked for, due now at 3,000
    wakeups.wake(2_500)
    expect(offered).toEqual([1_000, 2_000])
  })
})
