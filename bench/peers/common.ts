/**
 * What every system's adapter and the driver share: sizes from the environment, the
 * 50-byte payload, the hook a handler calls when it starts, the adapter contract, and
 * small statistics and formatting helpers.
 *
 * An adapter (one file per system) opens a fresh, empty store of its system and drives
 * it through the system's own public client; `workloads.ts` runs the same four
 * workloads against each one.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { envInt } from "../support.ts"

export { envInt }

/** bench/peers/ */
export const peersDir = import.meta.dir

/** The repository root. */
export const repoRoot = resolve(import.meta.dir, "../..")

/** Jobs per workload (enqueue 1-by-1, bulk, drain). */
export const N = envInt("BENCH_PEERS_N", 20_000)
/** Repeats per system; the table shows the median. */
export const REPEAT = Math.max(1, envInt("BENCH_PEERS_REPEAT", 3))
/** Rows per bulk-enqueue call. */
export const CHUNK = Math.max(1, envInt("BENCH_PEERS_CHUNK", 1_000))
/** Handler concurrency of the drain. */
export const CONCURRENCY = Math.max(1, envInt("BENCH_PEERS_CONCURRENCY", 50))
/** Latency samples per repeat (fewer when the time budget runs out first). */
export const LATENCY_N = envInt("BENCH_PEERS_LATENCY_N", 500)
/** Time budget of the latency workload per repeat, seconds (polling systems take ~1 s a sample). */
export const LATENCY_SECONDS = envInt("BENCH_PEERS_LATENCY_SECONDS", 30)
/** Longest wait for a drain or a single latency sample, seconds. */
export const TIMEOUT_SECONDS = envInt("BENCH_PEERS_TIMEOUT_SECONDS", 600)

/** The PostgreSQL URL the PostgreSQL systems use, if any. */
export const pgUrl = (): string | undefined => process.env.BENCH_PG_URL || process.env.ROSTER_TEST_PG_URL || undefined

/** The Redis BullMQ uses: host and port (set by index.ts, or BENCH_REDIS_URL). */
export const redisTarget = (): { host: string; port: number } | undefined => {
  const raw = process.env.BENCH_REDIS_URL
  if (!raw) return undefined
  const url = new URL(raw)
  return { host: url.hostname, port: Number(url.port || 6379) }
}

/** The job's payload: `{"i":<i>,"pad":"xx…"}`, exactly 50 bytes of JSON for 0 ≤ i < 10^34. */
export interface Payload {
  readonly i: number
  readonly pad: string
}

export const payload = (i: number): Payload => ({ i, pad: "x".repeat(35 - String(i).length) })

/** Payloads i = from … from + count − 1. */
export const payloads = (from: number, count: number): Array<Payload> => {
  const out: Array<Payload> = new Array(count)
  for (let k = 0; k < count; k++) out[k] = payload(from + k)
  return out
}

/**
 * Every handler calls `started(payload.i)` first thing, synchronously. The workload
 * sets `hook.onStart` (a counter for the drain, a timestamp for latency).
 */
export const hook: { onStart: (i: number) => void } = { onStart: () => {} }
export const started = (i: number): void => hook.onStart(i)

/** How a worker is started: for the drain (concurrency 50) or idle at the system's defaults (latency). */
export type WorkerMode = "drain" | "idle"

/** One fresh, empty store of a system, with its client open. */
export interface Store {
  /** Enqueues one job and resolves once the system acknowledged it. */
  readonly enqueue: (i: number) => Promise<void>
  /** Enqueues payloads from … from + count − 1 in one bulk call of the system. */
  readonly enqueueMany: (from: number, count: number) => Promise<void>
  /** Starts a worker running the no-op handler in this process. */
  readonly startWorker: (mode: WorkerMode) => Promise<void>
  /** How many jobs the store holds as succeeded (completed) now. */
  readonly succeeded: () => Promise<number>
  /** Stops the worker, closes the client and removes the store (file, schema, keys). */
  readonly close: () => Promise<void>
}

/** A system under test. */
export interface System {
  /** Key used on the command line and in BENCH_PEERS_ONLY. */
  readonly id: string
  /** Row label. */
  readonly label: string
  /** Why it cannot run here, if it cannot. */
  readonly unavailable: () => Promise<string | undefined>
  /** The durability setting, as the table states it. */
  readonly durability: () => Promise<string>
  /** Package and version. */
  readonly version: () => string
  /** How the drain's concurrency 50 is set, and anything else not at the system's default. */
  readonly settings: string
  readonly open: () => Promise<Store>
}

/** The version of a package installed in bench/peers/node_modules. */
export const installedVersion = (pkg: string): string =>
  (JSON.parse(readFileSync(join(peersDir, "node_modules", pkg, "package.json"), "utf8")) as { version: string }).version

/** A temp folder for one SQLite store; `cleanup` removes it. */
export const tempDir = (label: string): { readonly dir: string; readonly cleanup: () => void } => {
  const dir = mkdtempSync(join(tmpdir(), `roster-peers-${label}-`))
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) }
}

/** A logger (winston-like shape) that writes nothing: no system logs a line per job here. */
export const silentLogger = {
  error: () => {},
  warn: () => {},
  info: () => {},
  debug: () => {}
}

/** Nearest-rank percentile of a sample. */
export const percentile = (values: ReadonlyArray<number>, p: number): number => {
  if (values.length === 0) return NaN
  const sorted = Float64Array.from(values).sort()
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!
}

/** Median of the finite values (NaN when there are none). */
export const median = (values: ReadonlyArray<number>): number => {
  const sorted = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b)
  if (sorted.length === 0) return NaN
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

/** A rate with thousands separators. */
export const rate = (n: number): string => (Number.isFinite(n) ? Math.round(n).toLocaleString("en-US") : "n/a")

/** Milliseconds with sensible precision. */
export const ms = (n: number): string =>
  !Number.isFinite(n) ? "n/a" : n < 10 ? n.toFixed(2) : n < 100 ? n.toFixed(1) : Math.round(n).toLocaleString("en-US")

/** Progress on stderr (stdout carries the table). */
export const progress = (message: string): void => {
  process.stderr.write(`[peers ${new Date().toISOString().slice(11, 19)}] ${message}\n`)
}

/** Resolves after `ms` milliseconds. */
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))
