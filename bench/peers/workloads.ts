/**
 * The four workloads, the same for every system, each on a fresh empty store:
 *
 * 1. enqueue one by one, each awaited until acknowledged: jobs/s over N;
 * 2. bulk enqueue in chunks of 1,000 (one bulk call each): rows/s over N;
 * 3. drain: N jobs bulk-enqueued (not timed), then a worker in this process with
 *    concurrency 50 runs the no-op handler; the clock runs from starting the worker
 *    until the store reports all N as succeeded (not merely started): jobs/s;
 * 4. enqueue → start latency: an idle worker at the system's defaults, one job at a
 *    time with a random 1–10 ms pause between them, from calling enqueue to the
 *    handler's first line (same process, performance.now()): p50 and p99 ms over up to
 *    500 samples or the time budget, whichever ends first.
 */
import {
  CHUNK,
  hook,
  LATENCY_N,
  LATENCY_SECONDS,
  N,
  percentile,
  progress,
  rate,
  ms,
  sleep,
  type Store,
  type System,
  TIMEOUT_SECONDS
} from "./common.ts"

/** One repeat's figures for one system (NaN where a workload failed). */
export interface RunResult {
  readonly system: string
  readonly enqueuePerS: number
  readonly bulkPerS: number
  readonly drainPerS: number
  readonly p50: number
  readonly p99: number
  readonly latencyN: number
  readonly errors: Record<string, string>
}

/** Payload ids of warm-up jobs (7 digits, never collide with 0 … N−1 for N < 10^6). */
const warmId = (k: number) => 1_000_000 + k

/** Opens a fresh store, runs `body`, always closes it. */
const withStore = async <A>(system: System, body: (store: Store) => Promise<A>): Promise<A> => {
  const store = await system.open()
  try {
    return await body(store)
  } finally {
    await store.close()
  }
}

/** 1. N enqueues, each awaited. */
export const enqueueEach = (system: System, n = N): Promise<number> =>
  withStore(system, async (store) => {
    for (let k = 0; k < 200; k++) await store.enqueue(warmId(k)) // JIT, prepared statements, connections
    const t0 = performance.now()
    for (let i = 0; i < n; i++) await store.enqueue(i)
    return (n / (performance.now() - t0)) * 1000
  })

/** 2. N rows in bulk calls of CHUNK. */
export const enqueueBulk = (system: System, n = N): Promise<number> =>
  withStore(system, async (store) => {
    await store.enqueueMany(warmId(0), Math.min(CHUNK, 1_000))
    const t0 = performance.now()
    for (let from = 0; from < n; from += CHUNK) await store.enqueueMany(from, Math.min(CHUNK, n - from))
    return (n / (performance.now() - t0)) * 1000
  })

/** Resolves once `check` is true, polling every `everyMs`; false if the timeout came first. */
const until = async (check: () => Promise<boolean>, everyMs: number, timeoutMs: number): Promise<boolean> => {
  const deadline = performance.now() + timeoutMs
  while (!(await check())) {
    if (performance.now() > deadline) return false
    await sleep(everyMs)
  }
  return true
}

/** `promise`, or `onTimeout()` after `timeoutMs` (the timer is cleared either way). */
const withTimeout = async <A>(promise: Promise<A>, timeoutMs: number, onTimeout: () => A): Promise<A> => {
  let timer: ReturnType<typeof setTimeout> | undefined
  try {
    return await Promise.race([promise, new Promise<A>((resolve) => (timer = setTimeout(() => resolve(onTimeout()), timeoutMs)))])
  } finally {
    clearTimeout(timer)
  }
}

/** 3. Drain N queued jobs with concurrency 50 until all are stored as succeeded. */
export const drain = (system: System, n = N): Promise<number> =>
  withStore(system, async (store) => {
    for (let from = 0; from < n; from += CHUNK) await store.enqueueMany(from, Math.min(CHUNK, n - from))
    let starts = 0
    let allStarted: () => void = () => {}
    const startedAll = new Promise<void>((resolve) => (allStarted = resolve))
    hook.onStart = () => {
      if (++starts === n) allStarted()
    }
    try {
      const t0 = performance.now()
      await store.startWorker("drain")
      // Wait on the handlers first (no store queries while the worker runs), then for the store.
      const all = await withTimeout(startedAll.then(() => true), TIMEOUT_SECONDS * 1000, () => false)
      if (!all) throw new Error(`only ${starts} of ${n} handlers started within ${TIMEOUT_SECONDS} s`)
      let stored = 0
      if (!(await until(async () => (stored = await store.succeeded()) >= n, 2, TIMEOUT_SECONDS * 1000))) {
        throw new Error(`the store shows ${stored} of ${n} succeeded ${TIMEOUT_SECONDS} s after the last start`)
      }
      return (n / (performance.now() - t0)) * 1000
    } finally {
      hook.onStart = () => {}
    }
  })

/** 4. Enqueue → handler start, one at a time into an idle worker. */
export const latency = (system: System, samples = LATENCY_N): Promise<{ p50: number; p99: number; n: number }> =>
  withStore(system, async (store) => {
    let waiting: { id: number; resolve: (at: number) => void } | undefined
    hook.onStart = (i) => {
      const at = performance.now()
      if (waiting && waiting.id === i) waiting.resolve(at)
    }
    try {
      await store.startWorker("idle")
      await sleep(200) // the worker is up and idle
      const one = async (id: number): Promise<number> => {
        const startedAt = new Promise<number>((resolve) => (waiting = { id, resolve }))
        const t0 = performance.now()
        await store.enqueue(id)
        const at = await withTimeout(startedAt, TIMEOUT_SECONDS * 1000, () => NaN)
        waiting = undefined
        if (!Number.isFinite(at)) throw new Error(`job ${id} did not start within ${TIMEOUT_SECONDS} s`)
        return at - t0
      }
      // Warm-up: up to 20 samples or a tenth of the budget, not counted.
      const warmEnd = performance.now() + (LATENCY_SECONDS * 1000) / 10
      for (let k = 0; k < 20 && performance.now() < warmEnd; k++) {
        await one(warmId(k))
        await sleep(1 + Math.random() * 9)
      }
      const values: Array<number> = []
      const budgetEnd = performance.now() + LATENCY_SECONDS * 1000
      while (values.length < samples && performance.now() < budgetEnd) {
        values.push(await one(values.length))
        await sleep(1 + Math.random() * 9)
      }
      return { p50: percentile(values, 50), p99: percentile(values, 99), n: values.length }
    } finally {
      hook.onStart = () => {}
    }
  })

/** Runs the four workloads once on `system`; a failed workload is recorded, not thrown. */
export const runAll = async (system: System): Promise<RunResult> => {
  const errors: Record<string, string> = {}
  const attempt = async <A>(name: string, body: () => Promise<A>, fallback: A): Promise<A> => {
    try {
      return await body()
    } catch (error) {
      errors[name] = error instanceof Error ? error.message : String(error)
      progress(`${system.id} ${name} failed: ${errors[name]}`)
      return fallback
    }
  }
  const enqueuePerS = await attempt("enqueue", () => enqueueEach(system), NaN)
  progress(`${system.id} enqueue 1-by-1: ${rate(enqueuePerS)}/s`)
  const bulkPerS = await attempt("bulk", () => enqueueBulk(system), NaN)
  progress(`${system.id} bulk: ${rate(bulkPerS)}/s`)
  const drainPerS = await attempt("drain", () => drain(system), NaN)
  progress(`${system.id} drain: ${rate(drainPerS)}/s`)
  const lat = await attempt("latency", () => latency(system), { p50: NaN, p99: NaN, n: 0 })
  progress(`${system.id} latency: p50 ${ms(lat.p50)} ms, p99 ${ms(lat.p99)} ms (n=${lat.n})`)
  return { system: system.id, enqueuePerS, bulkPerS, drainPerS, p50: lat.p50, p99: lat.p99, latencyN: lat.n, errors }
}
