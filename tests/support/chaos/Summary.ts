/**
 * The summary table of a chaos run (markdown): size and seed, kills by target and
 * signal, lease recoveries, duplicates by cause, executions by final state, fires per
 * schedule, and how long each phase took.
 */
import type { ChaosRun } from "./Chaos.ts"

const n = (x: number) => x.toLocaleString("en-US")
const s = (ms: number) => `${(ms / 1_000).toFixed(1)} s`

/** Renders a run as a two-column markdown table. */
export const summaryTable = (run: Omit<ChaosRun, "summary">): string => {
  const { options, kills, enqueue, verification: v, timings } = run
  const count = (kind: string, signal: string) => kills.filter((k) => k.kind === kind && k.signal === signal).length
  const rows: Array<[string, string]> = [
    ["driver", options.target.driver],
    ["seed", String(options.seed)],
    ["processes", `${options.workers} workers (concurrency ${options.concurrency}), ${options.schedulers} schedulers`],
    ["rounds", n(options.rounds)],
    ["kills: worker SIGKILL / SIGTERM", `${count("worker", "SIGKILL")} / ${count("worker", "SIGTERM")}`],
    ["kills: scheduler SIGKILL / SIGTERM", `${count("scheduler", "SIGKILL")} / ${count("scheduler", "SIGTERM")}`],
    ["recoveries (lease expired attempts)", `${n(v.recoveries.total)} (worker sent SIGKILL ${n(v.recoveries.afterSigkill)}, SIGTERM ${n(v.recoveries.afterSigterm)}, neither ${n(v.recoveries.workerAlive)})`],
    ["handler starts", n(v.handlerStarts)],
    ["reruns the Jobs asked for (transient failures)", n(v.jobRetries)],
    ["duplicates: after a lease expiry", n(v.duplicates.leaseExpired)],
    ["duplicates: after a shutdown release", n(v.duplicates.shutdownRelease)],
    ["duplicates: unexplained", n(v.duplicates.unexplained)],
    ["acknowledged enqueues", `${n(enqueue.acked.size)} (failed calls retried: ${enqueue.errors})`],
    ["executions", `${n(v.executions)}: ${Object.entries(v.byState).sort().map(([state, c]) => `${state} ${n(c)}`).join(", ")}`],
    ["broken: failed at attempt 1 / after lease expiries", `${n(v.broken.atFirstAttempt)} / ${n(v.broken.afterLeaseExpiries)}`],
    ["attempts used up by lease expiries", n(v.exhausted)],
    ...v.fires.map((f): [string, string] => [`fires ${f.scheduleId}`, `${n(f.fires)} (${new Date(f.firstDue).toISOString()} … ${new Date(f.lastDue).toISOString()})`]),
    ["elapsed", `${s(timings.total)} (warm-up ${s(timings.warmUp)}, kills ${s(timings.chaos)}, settle ${s(timings.settle)}, drain ${s(timings.drain)}, verify ${s(timings.verify)})`],
    ["verdict", run.problems.length === 0 ? "passed" : `FAILED: ${run.problems.length} problem(s)`]
  ]
  return ["| measure | value |", "|---|---|", ...rows.map(([k, val]) => `| ${k} | ${val} |`)].join("\n")
}
