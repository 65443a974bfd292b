/**
 * The chaos driver's producer: enqueues a seeded mix of the chaos Jobs through the
 * Promise API (`Roster.open`) in small batches while the kills go on, and remembers
 * every id the store acknowledged. Each item carries an idempotency key, so a batch
 * whose call failed is retried with the same keys and can never be counted twice or
 * leave an unacknowledged execution behind.
 */
import * as Roster from "../../../src/runtime/Roster.ts"
import type { Prng } from "./Prng.ts"
import { chaosApps } from "./Target.ts"

/** An acknowledged execution: its Job and payload, as enqueued. */
export interface AckedJob {
  readonly job: string
  readonly payload: Record<string, number>
}

/** What the producer did. */
export interface EnqueueStats {
  /** Acknowledged ids, in enqueue order. */
  readonly acked: Map<string, AckedJob>
  /** Calls that failed and were retried with the same keys. */
  readonly errors: number
  readonly lastError: string | undefined
}

/** Options of {@link enqueueAll}. */
export interface EnqueueOptions {
  readonly db: string
  readonly prng: Prng
  readonly total: number
  readonly batchSize: number
  /** Pause between batches, so the work arrives throughout the kills. */
  readonly intervalMs: number
  /** Checked before each batch: true stops early (the run failed elsewhere). */
  readonly stopped?: () => boolean
}

/** One item of the mix: mostly quick, some slow or stepped (so kills land mid-run), some flaky, a few broken. */
export const workItem = (prng: Prng): AckedJob => {
  const roll = prng.next()
  if (roll < 0.55) return { job: "chaos/quick", payload: { n: prng.int(0, 1_000_000) } }
  if (roll < 0.75) return { job: "chaos/slow", payload: { ms: prng.int(150, 600) } }
  if (roll < 0.85) return { job: "chaos/steps", payload: { ms: prng.int(100, 400) } }
  if (roll < 0.95) return { job: "chaos/flaky", payload: { failTimes: prng.int(1, 3) } }
  return { job: "chaos/broken", payload: {} }
}

const maxTries = 100

/** Enqueues `total` items in batches until all are acknowledged. */
export const enqueueAll = async (options: EnqueueOptions): Promise<EnqueueStats> => {
  const handle = await Roster.open({ db: options.db, appsDir: chaosApps })
  const acked = new Map<string, AckedJob>()
  let errors = 0
  let lastError: string | undefined
  try {
    for (let start = 0; start < options.total && !options.stopped?.(); start += options.batchSize) {
      const items = Array.from({ length: Math.min(options.batchSize, options.total - start) }, (_, i) => ({
        ...workItem(options.prng),
        key: `chaos-${start + i}`
      }))
      for (let tries = 1; ; tries++) {
        try {
          const results = await handle.enqueueMany(items.map((it) => ({ job: it.job, payload: it.payload, options: { idempotencyKey: it.key } })))
          results.forEach((r, i) => acked.set(r.id, { job: items[i]!.job, payload: items[i]!.payload }))
          break
        } catch (cause) {
          errors++
          lastError = String((cause as { message?: unknown }).message ?? cause)
          if (tries >= maxTries) throw new Error(`enqueue kept failing (${tries} tries): ${lastError}`)
          await Bun.sleep(100)
        }
      }
      await Bun.sleep(options.intervalMs)
    }
  } finally {
    await handle.close()
  }
  return { acked, errors, lastError }
}
