/**
 * The chaos driver (issue 7): N workers and M schedulers as real `roster` processes on
 * one database, while this process enqueues a seeded mix of Jobs through `Roster.open`
 * and, every 100–500 ms (seeded), kills a random worker or scheduler with SIGKILL or
 * SIGTERM and starts a new one in its place, for a fixed number of rounds. The target
 * kind and signal come from a shuffled deck of the four pairs (worker or scheduler ×
 * SIGKILL or SIGTERM), dealt anew every four rounds, so even a short run has each kind
 * of kill; the slot within the kind is drawn at random. Then the
 * kills stop: the schedulers fire past the end of the kills and stop, the workers stop,
 * a last `roster worker --exit-when-idle` drains what is left, and the run is verified
 * (tests/support/chaos/Verify.ts) and summarised.
 *
 * Used by tests/process/chaos.test.ts (small size) and bench/chaos.ts (large size).
 */
import { type ProcessResult, spawnRoster, tail, waitFor } from "../processes.ts"
import { type ChaosSignal, Cluster, type ProcessKind } from "./Cluster.ts"
import { enqueueAll, type EnqueueStats } from "./Enqueuer.ts"
import { readEvidence } from "./Evidence.ts"
import * as Prng from "./Prng.ts"
import { StoreView } from "./StoreView.ts"
import { summaryTable } from "./Summary.ts"
import type { ChaosTarget } from "./Target.ts"
import { verify, type Verification } from "./Verify.ts"

/** The per-second schedules of the chaos app (tests/fixtures/chaos-apps/chaos/schedules.ts). */
export const perSecondSchedules = ["chaos/every-second", "chaos/cron-second"]

/** Every kind of kill: target kind × signal. */
const killPairs: ReadonlyArray<readonly [ProcessKind, ChaosSignal]> = [
  ["worker", "SIGKILL"],
  ["worker", "SIGTERM"],
  ["scheduler", "SIGKILL"],
  ["scheduler", "SIGTERM"]
]

/** The size and seed of a run. */
export interface ChaosOptions {
  readonly target: ChaosTarget
  readonly workers: number
  readonly schedulers: number
  /** `--concurrency` of each worker. */
  readonly concurrency: number
  readonly rounds: number
  /** How many executions the driver enqueues while the kills go on. */
  readonly jobs: number
  readonly seed: number
  /** Pause before each kill, ms, drawn uniformly from [min, max] (default 100–500). */
  readonly pauseMs?: readonly [number, number]
  /** Bound on the final drain (default 120 s). */
  readonly drainTimeoutMs?: number
  /** Progress lines (default: none). */
  readonly progress?: (line: string) => void
}

/** One kill of a round. */
export interface Kill {
  readonly round: number
  readonly kind: ProcessKind
  readonly signal: ChaosSignal
  readonly pid: number
  /** How the process ended: a signal name or `exit N`. */
  readonly ended: string
}

/** Wall-clock durations of a run's phases, ms. */
export interface ChaosTimings {
  readonly warmUp: number
  readonly chaos: number
  readonly settle: number
  readonly drain: number
  readonly verify: number
  readonly total: number
}

/** A finished run. */
export interface ChaosRun {
  readonly options: ChaosOptions
  readonly kills: ReadonlyArray<Kill>
  readonly enqueue: EnqueueStats
  readonly verification: Verification
  readonly timings: ChaosTimings
  /** The run's problems: the verifier's, plus a final drain that did not exit 0. */
  readonly problems: ReadonlyArray<string>
  readonly summary: string
  /** The last processes' stderr tails, for a failure message. */
  readonly logsTail: string
}

const endedAs = (r: ProcessResult | undefined): string => (r === undefined ? "running" : r.signal ?? `exit ${r.code}`)

const migrate = async (target: ChaosTarget) => {
  const r = await spawnRoster(["migrate"], { cwd: target.dir, env: target.env }).wait(60_000)
  if (r.code !== 0) throw new Error(`roster migrate failed (exit ${r.code}):\n${tail(r.stderr)}`)
}

/** Runs the chaos: start, kill and restart, settle, drain, verify. Throws only when the run cannot complete. */
export const runChaos = async (options: ChaosOptions): Promise<ChaosRun> => {
  const { target } = options
  if (options.workers < 1 || options.schedulers < 1) throw new Error("a chaos run needs at least one worker and one scheduler")
  const say = options.progress ?? (() => {})
  const [minPause, maxPause] = options.pauseMs ?? [100, 500]
  // Two streams from one seed: the kills do not depend on how the enqueues interleave with them.
  const killer = Prng.make(options.seed)
  const mix = Prng.make(options.seed ^ 0x9e3779b9)
  const t0 = Date.now()

  await migrate(target)
  const view = new StoreView(target.db)
  const cluster = new Cluster(target, { workers: options.workers, schedulers: options.schedulers, concurrency: options.concurrency })
  let aborted = false
  try {
    cluster.start()
    const lastDues = () => Promise.all(perSecondSchedules.map((id) => view.lastDue(id)))
    await waitFor("a first fire of every per-second schedule", async () => (await lastDues()).every((d) => d > 0), { timeoutMs: 60_000, intervalMs: 100 })
    const chaosStart = Date.now()
    say(`warm: ${options.workers} workers, ${options.schedulers} schedulers up; ${options.rounds} rounds of kills, ${options.jobs} jobs`)

    // Spread the enqueues over the expected length of the rounds, in batches every ~100 ms.
    const expectedMs = options.rounds * ((minPause + maxPause) / 2 + 150)
    const batchSize = Math.max(1, Math.ceil(options.jobs / Math.max(1, expectedMs / 100)))
    let enqueueFailure: unknown
    const enqueuing = enqueueAll({ db: target.db, prng: mix, total: options.jobs, batchSize, intervalMs: 100, stopped: () => aborted })
      .catch((cause) => {
        enqueueFailure = cause
        return undefined
      })

    const kills: Array<Kill> = []
    let deck: Array<readonly [ProcessKind, ChaosSignal]> = []
    for (let round = 1; round <= options.rounds; round++) {
      await Bun.sleep(killer.int(minPause, maxPause))
      if (deck.length === 0) deck = killer.shuffle(killPairs)
      const [kind, signal] = deck.pop()!
      const victim = await cluster.killAndRestart(killer.pick(cluster.slotsOf(kind)), signal)
      kills.push({ round, kind: victim.kind, signal, pid: victim.process.pid, ended: endedAs(victim.result) })
      if (round % Math.max(1, Math.floor(options.rounds / 10)) === 0) say(`round ${round}/${options.rounds}`)
    }
    const enqueue = await enqueuing
    if (enqueue === undefined) throw enqueueFailure
    const chaosEnd = Date.now()
    say(`kills over; ${enqueue.acked.size} executions acknowledged`)

    // Let the schedulers fire past the end of the kills, then stop everything in order.
    await waitFor("fires past the end of the kills", async () => (await lastDues()).every((d) => d >= chaosEnd + 1_000), { timeoutMs: 60_000, intervalMs: 100 })
    await cluster.stopAll("scheduler")
    await cluster.stopAll("worker")
    const settled = Date.now()
    const final = cluster.run("worker", ["worker", "--concurrency", String(options.concurrency), "--exit-when-idle"])
    final.result = await final.process.wait(options.drainTimeoutMs ?? 120_000)
    const drained = Date.now()
    say(`drained (${endedAs(final.result)}); verifying`)

    const executions = await view.executions()
    const fires = new Map<string, Awaited<ReturnType<StoreView["fires"]>>>()
    for (const s of await view.schedules()) fires.set(s.id, await view.fires(s.id))
    const verification = verify({
      executions,
      fires,
      perSecond: perSecondSchedules,
      evidence: readEvidence(target.evidenceDir),
      acked: enqueue.acked,
      signals: cluster.signalsByPid(),
      window: { start: chaosStart, end: chaosEnd }
    })
    const problems = [...verification.problems]
    if (final.result.code !== 0) problems.unshift(`the final worker --exit-when-idle ended ${endedAs(final.result)}`)
    const end = Date.now()
    const timings: ChaosTimings = {
      warmUp: chaosStart - t0,
      chaos: chaosEnd - chaosStart,
      settle: settled - chaosEnd,
      drain: drained - settled,
      verify: end - drained,
      total: end - t0
    }
    const run = { options, kills, enqueue, verification, timings, problems, logsTail: cluster.logsTail() }
    return { ...run, summary: summaryTable(run) }
  } catch (cause) {
    aborted = true
    throw new Error(`chaos run with seed ${options.seed} could not complete: ${(cause as Error).message ?? cause}\n${cluster.logsTail()}`)
  } finally {
    await cluster.killAll()
    await view.close()
  }
}

/** A failure message: seed, problems, summary and the processes' log tails. */
export const failureReport = (run: ChaosRun, maxProblems = 30): string =>
  [
    `chaos run failed (seed ${run.options.seed}; replay with CHAOS_SEED=${run.options.seed}):`,
    ...run.problems.slice(0, maxProblems).map((p) => `- ${p}`),
    ...(run.problems.length > maxProblems ? [`- … and ${run.problems.length - maxProblems} more`] : []),
    "",
    run.summary,
    "",
    run.logsTail
  ].join("\n")
