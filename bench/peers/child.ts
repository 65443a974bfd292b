/**
 * Runs the four workloads once for one system, in a process of its own (so no system
 * shares a heap, timers or connections with another), and writes the RunResult as JSON
 * to the file BENCH_PEERS_OUT names. Started by index.ts: `bun child.ts <system id>`.
 */
import { writeFileSync } from "node:fs"
import { entries } from "./systems.ts"
import { runAll } from "./workloads.ts"

const id = process.argv[2]
const entry = entries.find((e) => e.id === id)
if (!entry) {
  console.error(`unknown system "${id}"; one of: ${entries.map((e) => e.id).join(", ")}`)
  process.exit(2)
}
const out = process.env.BENCH_PEERS_OUT
if (!out) {
  console.error("BENCH_PEERS_OUT (the result file) is not set; run bench/peers/index.ts")
  process.exit(2)
}
const result = await runAll(await entry.load())
writeFileSync(out, JSON.stringify(result))
// Libraries may leave timers or sockets behind; the result is written, so end here.
process.exit(0)
