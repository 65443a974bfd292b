/**
 * The processes of a chaos run: N `roster worker` and M `roster scheduler` processes,
 * each in a slot. The driver kills the process in a slot with a signal and starts a new
 * one in its place; every process ever started is kept with the signals it was sent
 * and how it ended, so the verifier can tell which handler runs a kill explains, and a
 * failure can show the processes' own logs.
 */
import { type ProcessResult, type RosterProcess, spawnRoster, tail } from "../processes.ts"
import type { ChaosTarget } from "./Target.ts"

/** What a slot runs. */
export type ProcessKind = "worker" | "scheduler"

/** Signals the driver sends. */
export type ChaosSignal = "SIGKILL" | "SIGTERM"

/** A signal sent to a process: by the chaos rounds, or by the orderly stop at the end. */
export interface SentSignal {
  readonly signal: ChaosSignal
  readonly at: number
  readonly by: "chaos" | "stop" | "escalation"
}

/** One process started in a slot. */
export interface ProcessRecord {
  readonly kind: ProcessKind
  readonly slot: number
  readonly process: RosterProcess
  readonly startedAt: number
  readonly signals: Array<SentSignal>
  result: ProcessResult | undefined
}

/** Tuning of the processes (short leases and grace, so kills have effects within a run). */
export interface ClusterOptions {
  readonly workers: number
  readonly schedulers: number
  /** `--concurrency` of each worker. */
  readonly concurrency: number
  /** Extra environment for every process. */
  readonly env?: Readonly<Record<string, string>>
}

/** The environment knobs of a chaos run: leases recovered within ~2 s, a grace shorter than the slow jobs. */
export const chaosEnv: Readonly<Record<string, string>> = {
  ROSTER_LEASE_MS: "2000",
  ROSTER_HEARTBEAT_MS: "400",
  ROSTER_REAP_MS: "500",
  ROSTER_GRACE_MS: "200",
  ROSTER_POLL_MS: "250",
  ROSTER_SCHEDULER_LEASE_MS: "2000",
  // Fires later than this are misfires, so catch-ups after a scheduler outage go through misfire `all`.
  ROSTER_SCHEDULER_TOLERANCE_MS: "500"
}

/** How long a killed process may take to exit before it is sent SIGKILL. */
const exitWaitMs = 15_000

/** The slots and every process they ran. */
export class Cluster {
  /** Every process started, in start order. */
  readonly records: Array<ProcessRecord> = []
  private readonly slots: Array<ProcessRecord> = []

  constructor(readonly target: ChaosTarget, readonly options: ClusterOptions) {}

  /** The environment of every child. */
  env(): Record<string, string> {
    return { ...this.target.env, ...chaosEnv, ...this.options.env }
  }

  /** Starts one process per slot: schedulers first, then workers. */
  start(): void {
    for (let i = 0; i < this.options.schedulers; i++) this.slots.push(this.spawn("scheduler", this.slots.length))
    for (let i = 0; i < this.options.workers; i++) this.slots.push(this.spawn("worker", this.slots.length))
  }

  /** The slots running `kind`. */
  slotsOf(kind: ProcessKind): Array<number> {
    return this.slots.flatMap((r, slot) => (r.kind === kind ? [slot] : []))
  }

  /** Starts `roster <args>` outside the slots (e.g. the final draining worker); it is kept with the others. */
  run(kind: ProcessKind, args: ReadonlyArray<string>): ProcessRecord {
    return this.track(kind, -1, args)
  }

  /** Sends `signal` to the process in `slot`, waits for it to exit, and starts a new one in its place. */
  async killAndRestart(slot: number, signal: ChaosSignal): Promise<ProcessRecord> {
    const victim = this.slots[slot]!
    await this.stop(victim, signal, "chaos")
    const replacement = this.spawn(victim.kind, slot)
    this.slots[slot] = replacement
    return victim
  }

  /** Stops every slot's process of `kind` with SIGTERM (in parallel) and waits for them. */
  async stopAll(kind: ProcessKind): Promise<void> {
    await Promise.all(this.slots.filter((r) => r.kind === kind).map((r) => this.stop(r, "SIGTERM", "stop")))
  }

  /** Every signal sent to each pid. */
  signalsByPid(): Map<number, ReadonlyArray<SentSignal>> {
    return new Map(this.records.map((r) => [r.process.pid, r.signals]))
  }

  /** The last lines of the latest processes' stderr, for a failure message. */
  logsTail(processes = 6, lines = 15): string {
    return this.records.slice(-processes).map((r) => {
      const how = r.result === undefined ? "running" : r.result.signal ?? `exit ${r.result.code}`
      return `--- ${r.kind} pid ${r.process.pid} (${r.process.args.join(" ")}; ${how}) ---\n${tail(r.process.stderrSoFar(), lines)}`
    }).join("\n")
  }

  /** Kills whatever is still running (cleanup after a failure). */
  async killAll(): Promise<void> {
    await Promise.all(this.records.filter((r) => !r.process.exited).map((r) => this.stop(r, "SIGKILL", "stop")))
  }

  private spawn(kind: ProcessKind, slot: number): ProcessRecord {
    return this.track(kind, slot, kind === "worker" ? ["worker", "--concurrency", String(this.options.concurrency)] : ["scheduler"])
  }

  private track(kind: ProcessKind, slot: number, args: ReadonlyArray<string>): ProcessRecord {
    const proc = spawnRoster(args, { cwd: this.target.dir, env: this.env() })
    const record: ProcessRecord = { kind, slot, process: proc, startedAt: Date.now(), signals: [], result: undefined }
    this.records.push(record)
    return record
  }

  private async stop(record: ProcessRecord, signal: ChaosSignal, by: SentSignal["by"]): Promise<void> {
    if (!record.process.exited) {
      record.signals.push({ signal, at: Date.now(), by })
      record.process.kill(signal)
    }
    record.result = await record.process.wait(exitWaitMs).catch(async () => {
      // wait() sent SIGKILL itself after the bound; note it and take what the process left.
      record.signals.push({ signal: "SIGKILL", at: Date.now(), by: "escalation" })
      return record.process.wait(exitWaitMs)
    })
  }
}
