/**
 * The host's own share of the latency workload's tail: no job system, only a fixed piece
 * of computation (≈ PROBE_MS of it when hot) timed after the same 1–10 ms pauses as
 * workloads.ts's latency samples. On a virtual machine the vCPU can be taken away for
 * milliseconds at a time; a window that takes 0.5 ms hot then takes several, and no job
 * system measured on that host gets a p99 below what this probe gets. index.ts runs it
 * in a child process of its own, once per repeat, and prints it as the table's last row.
 *
 *   bun bench/peers/hostProbe.ts <out.json>
 */
import { writeFileSync } from "node:fs"
import { LATENCY_N, LATENCY_SECONDS, percentile, sleep } from "./common.ts"

/** The window's length when hot, ms: about Roster's enqueue → start p50 here. */
const PROBE_MS = 0.5

let sink = 0
const work = (iterations: number): void => {
  let x = 0
  for (let i = 0; i < iterations; i++) x += Math.sqrt(i)
  sink += x
}

/** Iterations that take PROBE_MS, measured hot (median of 50 timed runs after a warm-up). */
const calibrate = (): number => {
  const trial = 10_000
  for (let k = 0; k < 200; k++) work(trial)
  const times: Array<number> = []
  for (let k = 0; k < 50; k++) {
    const t0 = performance.now()
    work(trial)
    times.push(performance.now() - t0)
  }
  return Math.max(1, Math.round(trial * (PROBE_MS / percentile(times, 50))))
}

const probe = async (): Promise<{ p50: number; p99: number; n: number }> => {
  const iterations = calibrate()
  const values: Array<number> = []
  const budgetEnd = performance.now() + LATENCY_SECONDS * 1000
  while (values.length < LATENCY_N && performance.now() < budgetEnd) {
    await sleep(1 + Math.random() * 9)
    const t0 = performance.now()
    work(iterations)
    values.push(performance.now() - t0)
  }
  return { p50: percentile(values, 50), p99: percentile(values, 99), n: values.length }
}

if (import.meta.main) {
  const out = process.argv[2]
  if (!out) {
    console.error("usage: bun bench/peers/hostProbe.ts <out.json>")
    process.exit(2)
  }
  writeFileSync(out, JSON.stringify({ ...(await probe()), sink: sink > 0 }))
  process.exit(0)
}
