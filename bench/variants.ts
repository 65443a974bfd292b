/**
 * The shared loop of the variant experiments (claim-variants.ts, finish-variants.ts,
 * narrow-claim.ts): every variant once per round, interleaved, so drift in the
 * machine's load spreads over all of them; then one table of the median and best
 * figure per variant, and the change of each median against a baseline's.
 */
import type { Database } from "bun:sqlite"
import { makeStatements } from "../src/store/sqlite/InsertStatements.ts"
import type { InsertRequest } from "../src/store/Store.ts"
import { percentiles, progress, type Section } from "./support.ts"

/** A Job's default retry snapshot (95 bytes as JSON). */
export const defaultRetry = { attempts: 3, kind: "exponential", initialMs: 10_000, maxMs: 300_000, factor: 2, jitter: "full" } as unknown as InsertRequest["retry"]

/** Fills `db` (migrated) with n due keyless executions of `job` on queue "default", 50-byte payloads, in one transaction (not timed). */
export const fillQueued = (db: Database, options: { readonly n: number; readonly job: string; readonly now: number; readonly retry?: InsertRequest["retry"] }): void => {
  const { insertAll } = makeStatements(db)
  const pad = "x".repeat(30)
  const { now } = options
  const rows = Array.from({ length: options.n }, (_, i): InsertRequest => ({
    id: Bun.randomUUIDv7(), job: options.job, queue: "default", payload: JSON.stringify({ i, pad }), priority: 0,
    retry: options.retry ?? defaultRetry, timeoutMs: 300_000, runAt: now, now, idempotencyKey: null
  }))
  db.transaction(() => insertAll(rows)).immediate()
}

/** Runs `once(variant)` for each variant, round after round; the samples per variant. */
export const measureVariants = <V extends string>(label: string, variants: ReadonlyArray<V>, rounds: number, once: (variant: V) => number): Map<V, Array<number>> => {
  const samples = new Map<V, Array<number>>(variants.map((v) => [v, []]))
  for (let r = 0; r < rounds; r++) {
    for (const v of variants) samples.get(v)!.push(once(v))
    progress(`${label}: round ${r + 1} of ${rounds}`)
  }
  return samples
}

/** The report section of measured variants: median, best, and the change against `baseline`'s median. */
export const variantsSection = <V extends string>(options: {
  readonly title: string
  readonly unit: string
  readonly samples: Map<V, Array<number>>
  readonly baseline: V
  readonly notes: ReadonlyArray<string>
}): Section => {
  const base = percentiles(options.samples.get(options.baseline)!).p50
  return {
    title: options.title,
    headers: ["variant", `median µs/${options.unit}`, `best µs/${options.unit}`, `vs ${options.baseline}`],
    rows: [...options.samples].map(([v, s]) => {
      const p50 = percentiles(s).p50
      return [v, p50.toFixed(2), Math.min(...s).toFixed(2), `${p50 >= base ? "+" : ""}${Math.round((p50 / base - 1) * 100)}%`]
    }),
    notes: options.notes,
    checks: []
  }
}
