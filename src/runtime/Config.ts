/**
 * Configuration, one rule for every way Roster starts (docs/operations.md):
 * defaults < `roster.config.ts` (or the one a `roster build` binary carries) < the
 * config an embedding app passes to `Roster.layer` / `Roster.open` < `ROSTER_*`
 * environment variables < CLI flags. Everything has a default, so an app with only an
 * `apps/` folder runs on `roster.db` in the working directory, and an app and a
 * `roster worker` started in one folder with one environment use one database. The
 * completed config is checked against ConfigRules.ts: a setting that cannot work is
 * refused at start, naming it and where it came from.
 */
import type { QueueInput } from "../jobs/QueueConfig.ts"
import { Effect, Layer } from "effect"
import { existsSync } from "node:fs"
import { resolve } from "node:path"
import type { Job } from "../jobs/Job.ts"
import type { JobSchedule } from "../jobs/JobSchedule.ts"
import { importModule, LoadTimeout } from "../jobs/Discovery.ts"
import { InvalidDefinition } from "../jobs/errors.ts"
import { checkConfig, configVariables, describeValue, envSetting, envText, parseEnvNumber, readEnvSetting, workerEnv, type Source } from "./ConfigRules.ts"
import * as Env from "./Env.ts"

/** Tuning of a worker process; defaults follow DESIGN §2. */
export interface WorkerSettings {
  /** Lease length (default 30 s). */
  readonly leaseMs: number
  /** Heartbeat interval (default 10 s). */
  readonly heartbeatMs: number
  /** Longest sleep of an idle Dispatcher (default 1 s). */
  readonly pollMs: number
  /** How often the change watcher looks for other processes' commits while the database is written (default 5 ms; 0 disables). */
  readonly watchMs: number
  /** How often expired leases are looked for (default 5 s). */
  readonly reapMs: number
  /** How often the executions table's dead row versions are counted, and vacuumed when enough built up (PostgreSQL; default 2 s; 0 disables). */
  readonly vacuumMs: number
  /** How long in-flight handlers may run after SIGTERM before they are interrupted and released (default 30 s). */
  readonly graceMs: number
  /** Most executions claimed in one statement (default 100). */
  readonly batchSize: number
  /** Handler log lines that may wait to be written before new ones are dropped (default 10,000). */
  readonly logCapacity: number
  /** How long the LogSink gathers lines before writing them (default 100 ms). */
  readonly logFlushMs: number
}

/** The whole configuration, as written in roster.config.ts. */
export interface RosterConfig {
  /** Database path, or a postgres:// URL (default `roster.db`). */
  readonly db?: string
  /** Folder of apps (`<app>/jobs.ts`, `<app>/schedules.ts`); default `apps`. */
  readonly appsDir?: string
  /** Jobs built in code, for apps that embed Roster; when given, appsDir is not scanned. */
  readonly jobs?: ReadonlyArray<Job<any, any, any>>
  /** Schedules built in code (with `jobs`); otherwise discovered in `<appsDir>/<app>/schedules.ts`. */
  readonly schedules?: ReadonlyArray<JobSchedule>
  /** How long finished executions (with attempts, steps and logs) are kept; defaults 7 days / 30 days. */
  readonly retention?: { readonly succeededMs?: number; readonly failedMs?: number }
  /** Queues and their per-process concurrency; `default` always exists. */
  readonly queues?: Readonly<Record<string, QueueInput>>
  /** Largest accepted encoded payload in bytes (default 1 MiB). */
  readonly maxPayloadBytes?: number
  /** SQLite durability: FULL (default) or NORMAL. */
  readonly synchronous?: "FULL" | "NORMAL"
  readonly worker?: Partial<WorkerSettings>
  /**
   * Services for every app's handlers, built once per worker process (beside each
   * app's own `apps/<app>/services.ts`) and closed at shutdown after in-flight work.
   */
  readonly services?: Layer.Layer<never, any, never>
}

/** Typed helper for roster.config.ts. */
export const defineConfig = (config: RosterConfig): RosterConfig => config

/** Worker defaults. */
export const defaultWorkerSettings: WorkerSettings = {
  leaseMs: 30_000,
  heartbeatMs: 10_000,
  pollMs: 1_000,
  watchMs: 5,
  reapMs: 5_000,
  vacuumMs: 2_000,
  graceMs: 30_000,
  batchSize: 100,
  logCapacity: 10_000,
  logFlushMs: 100
}

// Parsed only; anything but digits is NaN, which checkConfig refuses naming the variable and its text.
const envNumber = (env: Env.Env, name: string): number | undefined => {
  const raw = envText(env, name)
  return raw === undefined ? undefined : parseEnvNumber(raw)
}

/** Applies ROSTER_* overrides (a snapshot read by Env.ts) to a config; a ROSTER_SYNCHRONOUS that is neither FULL nor NORMAL is refused. */
export const withEnv = (config: RosterConfig, env: Env.Env): RosterConfig | InvalidDefinition => {
  const worker: Partial<Record<keyof WorkerSettings, number>> = { ...config.worker }
  for (const [key, variable] of Object.entries(workerEnv) as Array<[keyof WorkerSettings, string]>) {
    const n = envNumber(env, variable)
    if (n !== undefined) worker[key] = n
  }
  const sync = env.get("ROSTER_SYNCHRONOUS")
  if (sync !== undefined && sync !== "FULL" && sync !== "NORMAL") return new InvalidDefinition({ message: `ROSTER_SYNCHRONOUS must be FULL or NORMAL, got "${sync}"` })
  return {
    ...config,
    db: env.get("ROSTER_DB") || config.db,
    appsDir: env.get("ROSTER_APPS_DIR") || config.appsDir,
    synchronous: (sync as "FULL" | "NORMAL" | undefined) ?? config.synchronous,
    maxPayloadBytes: envNumber(env, "ROSTER_MAX_PAYLOAD_BYTES") ?? config.maxPayloadBytes,
    worker
  }
}

/** Resolved worker settings. */
export const workerSettings = (config: RosterConfig): WorkerSettings => ({ ...defaultWorkerSettings, ...config.worker })

/**
 * Applies the environment to a config and checks the result (ConfigRules.ts): a
 * malformed ROSTER_* value or a setting out of its range is an InvalidDefinition naming
 * it and where it came from (`sources`, lowest first: the layers the config was made of).
 * Also the check every ROSTER_* number not kept in the config gets at start.
 */
export const applyEnv = (config: RosterConfig, sources: ReadonlyArray<Source> = [{ label: "the config", config }]) =>
  Effect.gen(function*() {
    const env = yield* Env.read(configVariables)
    const applied = withEnv(config, env)
    if (applied instanceof InvalidDefinition) return yield* applied
    const refusal = checkConfig(applied, sources, env) ?? envOnlyRefusal(env)
    if (refusal) return yield* refusal
    return applied
  })

const envOnlyRefusal = (env: Env.Env): InvalidDefinition | undefined =>
  (["ROSTER_SCHEDULER_POLL_MS", "ROSTER_SCHEDULER_LEASE_MS", "ROSTER_SCHEDULER_TOLERANCE_MS", "ROSTER_IDLE_HORIZON_MS", "ROSTER_LOAD_TIMEOUT_MS"] as const)
    .map((name) => envSetting(env, name)).find((r): r is InvalidDefinition => typeof r !== "number")

/** Loads `roster.config.ts` from `cwd` if present, then applies the environment. */
export const load = (cwd: string = process.cwd()) => Effect.flatMap(loadSource(cwd), (file) => applyEnv(file.config, [file]))

/**
 * Lays `over` on top of `under`: a key `over` sets wins; `queues` and `worker` merge
 * key by key, so a queue declared only in roster.config.ts still exists; both
 * `services` Layers are provided.
 */
export const merge = (under: RosterConfig, over: RosterConfig): RosterConfig => {
  const defined = Object.fromEntries(Object.entries(over).filter(([, v]) => v !== undefined)) as RosterConfig
  return {
    ...under,
    ...defined,
    queues: under.queues || over.queues ? { ...under.queues, ...over.queues } : undefined,
    worker: under.worker || over.worker ? { ...under.worker, ...over.worker } : undefined,
    retention: under.retention || over.retention ? { ...under.retention, ...over.retention } : undefined,
    services: under.services && over.services ? Layer.merge(under.services, over.services) : over.services ?? under.services
  }
}

/** Where an embedding app's config is completed from: roster.config.ts in `dir` (default the working directory), or none. */
export type ConfigDir = string | false

/** The config an embedding app runs with: roster.config.ts under the app's own config, then ROSTER_*. */
export const resolveEmbedded = (config: RosterConfig, dir: ConfigDir = process.cwd()) =>
  Effect.gen(function*() {
    const file = dir === false ? { label: "roster.config.ts", config: {} } : yield* loadSource(dir)
    return yield* applyEnv(merge(file.config, config), [file, { label: "the config given to Roster.layer / Roster.open", config }])
  })

/** `roster.config.ts` in `cwd` as written (no environment), or `{}` when there is none. */
export const loadFile = (cwd: string) => Effect.map(loadSource(cwd), (source) => source.config)

/**
 * `roster.config.ts` in `cwd` as a config layer, named by its path. A module that does
 * not finish loading within ROSTER_LOAD_TIMEOUT_MS (a top-level await that never
 * settles) and a default export that is not a config object are refused naming the file.
 */
const loadSource = (cwd: string) =>
  Effect.gen(function*() {
    const file = resolve(cwd, "roster.config.ts")
    if (!existsSync(file)) return { label: file, file, config: {} } satisfies Source
    const timeoutMs = yield* readEnvSetting("ROSTER_LOAD_TIMEOUT_MS")
    const mod = yield* importModule(file).pipe(Effect.provideService(LoadTimeout, timeoutMs))
    if (mod.default === undefined) return yield* new InvalidDefinition({ file, message: `${file} must \`export default defineConfig({...})\`` })
    const config = mod.default
    if (config === null || typeof config !== "object" || Array.isArray(config) || Layer.isLayer(config)) {
      return yield* new InvalidDefinition({ file, message: `${file} must \`export default defineConfig({...})\`; its default export is ${Layer.isLayer(config) ? "a Layer" : describeValue(config)}` })
    }
    return { label: file, file, config: config as RosterConfig } satisfies Source
  })
