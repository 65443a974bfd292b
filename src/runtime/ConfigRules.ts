/**
 * What a config may hold: the range of every numeric setting (roster.config.ts keys and
 * ROSTER_* variables), the shape of the rest, and the one rule between two settings (a
 * lease lasts at least two heartbeats). A value outside its range is refused at start
 * as an InvalidDefinition whose one line names the setting and where its value came
 * from — the variable, or the key and the file (or the config an embedding app passed)
 * — instead of a runtime that cannot work: a lease of 0 fails every execution "lease
 * expired", a heartbeat of 0 spins a core, a config that is not an object is ignored.
 * Pure: the environment comes in as a snapshot read by Env.ts, and Config.ts runs these
 * rules wherever a config is completed.
 */
import { globalConcurrencyOf, rateLimitOf } from "../jobs/FlowLimits.ts"
import { Effect, Layer } from "effect"
import { InvalidDefinition } from "../jobs/errors.ts"
import type { RosterConfig, WorkerSettings } from "./Config.ts"
import * as Env from "./Env.ts"

/** The longest timer a runtime sets in one go (2^31 − 1 ms, about 24.8 days). */
export const maxTimerMs = 2_147_483_647

/** The inclusive range of a whole-number setting; `off`, when given, is one more value, meaning "off". */
export interface Range {
  readonly min: number
  readonly max: number
  readonly unit: "ms" | "bytes" | ""
  readonly off?: number
}

const ms = (min: number, off?: number): Range => (off === undefined ? { min, max: maxTimerMs, unit: "ms" } : { min, max: maxTimerMs, unit: "ms", off })

/**
 * Worker settings. A heartbeat is one UPDATE: below 100 ms it is a write loop, not a
 * heartbeat; polls and sweeps below 10 ms are busy loops. The lease has its own rule
 * on top (at least two heartbeats, see {@link checkConfig}).
 */
export const workerRanges: Record<keyof WorkerSettings, Range> = {
  leaseMs: ms(200),
  heartbeatMs: ms(100),
  pollMs: ms(10),
  watchMs: ms(1, 0),
  reapMs: ms(10),
  vacuumMs: ms(100, 0),
  graceMs: ms(0),
  batchSize: { min: 1, max: 10_000, unit: "" },
  logCapacity: { min: 1, max: 10_000_000, unit: "" },
  logFlushMs: ms(0)
}

/** The variable that overrides each worker setting. */
export const workerEnv: Record<keyof WorkerSettings, string> = {
  leaseMs: "ROSTER_LEASE_MS",
  heartbeatMs: "ROSTER_HEARTBEAT_MS",
  pollMs: "ROSTER_POLL_MS",
  watchMs: "ROSTER_WATCH_MS",
  reapMs: "ROSTER_REAP_MS",
  vacuumMs: "ROSTER_VACUUM_MS",
  graceMs: "ROSTER_GRACE_MS",
  batchSize: "ROSTER_BATCH_SIZE",
  logCapacity: "ROSTER_LOG_CAPACITY",
  logFlushMs: "ROSTER_LOG_FLUSH_MS"
}

/** Largest encoded payload: at least one byte, at most SQLite's default string limit (10^9 bytes). */
export const payloadRange: Range = { min: 1, max: 1_000_000_000, unit: "bytes" }

/** Per-process concurrency of a queue. */
export const concurrencyRange: Range = { min: 1, max: 10_000, unit: "" }

/** Retention of finished executions: 0 deletes them at the next prune; no upper bound but a safe integer. */
export const retentionRange: Range = { min: 0, max: Number.MAX_SAFE_INTEGER, unit: "ms" }

/** ROSTER_* numbers that are not config keys, with their ranges and defaults; read where they are used. */
export const envOnly = {
  /** Longest scheduler sleep. */
  ROSTER_SCHEDULER_POLL_MS: { ...ms(10), default: 1_000 },
  /** Scheduler leader lease (renewed every third). */
  ROSTER_SCHEDULER_LEASE_MS: { ...ms(300), default: 15_000 },
  /** How late a fire may be and still be on time. */
  ROSTER_SCHEDULER_TOLERANCE_MS: { ...ms(0), default: 60_000 },
  /** `roster worker --exit-when-idle` look-ahead. */
  ROSTER_IDLE_HORIZON_MS: { ...ms(0), default: 5_000 },
  /** How long a module (roster.config.ts, jobs.ts, schedules.ts, services.ts) may take to load. */
  ROSTER_LOAD_TIMEOUT_MS: { ...ms(1), default: 30_000 }
} as const

/** A variable of {@link envOnly}. */
export type EnvOnly = keyof typeof envOnly

/** Every ROSTER_* variable a config is completed from (the dashboard token is read where the dashboard starts). */
export const configVariables: ReadonlyArray<string> = [
  "ROSTER_DB",
  "ROSTER_APPS_DIR",
  "ROSTER_SYNCHRONOUS",
  "ROSTER_MAX_PAYLOAD_BYTES",
  ...Object.values(workerEnv),
  ...Object.keys(envOnly)
]

/** One layer of a config and where it was written, for the line that refuses one of its values. */
export interface Source {
  /** e.g. `/srv/app/roster.config.ts`, or `the config given to Roster.layer / Roster.open`. */
  readonly label: string
  /** The file, when the layer is one. */
  readonly file?: string | undefined
  readonly config: RosterConfig
}

/** What a value is, in a message. */
export const describeValue = (v: unknown): string =>
  typeof v === "string" ? `the string ${JSON.stringify(v)}` : typeof v === "function" ? "a function" : Array.isArray(v) ? "an array" : v === null ? "null" : String(v)

const rangeText = (r: Range): string =>
  `a whole number${r.unit === "" ? "" : ` of ${r.unit === "ms" ? "milliseconds" : r.unit}`} from ${r.min} to ${r.max}${r.off === undefined ? "" : ` (or ${r.off}: off)`}`

const inRange = (v: unknown, r: Range): v is number =>
  typeof v === "number" && Number.isInteger(v) && ((v >= r.min && v <= r.max) || v === r.off)

/** The raw text of a variable, when it is set (blank counts as unset). */
export const envText = (env: Env.Env, name: string): string | undefined => {
  const raw = env.get(name)
  return raw === undefined || raw.trim() === "" ? undefined : raw
}

/** A variable's text as a number: only digits count; anything else is NaN, refused with the text. */
export const parseEnvNumber = (raw: string): number => (/^\d+$/.test(raw.trim()) ? Number(raw.trim()) : Number.NaN)

/** Checks a number given in code (an option of a runtime) against a range; `name` says what it is. */
export const checkOption = (value: number, range: Range, name: string): InvalidDefinition | undefined =>
  inRange(value, range) ? undefined : new InvalidDefinition({ message: `${name} must be ${rangeText(range)}, got ${describeValue(value)}` })

/** One variable of {@link envOnly} in a snapshot: its default when unset, an InvalidDefinition when out of range. */
export const envSetting = (env: Env.Env, name: EnvOnly): number | InvalidDefinition => {
  const spec = envOnly[name]
  const raw = envText(env, name)
  if (raw === undefined) return spec.default
  const n = parseEnvNumber(raw)
  return inRange(n, spec) ? n : new InvalidDefinition({ message: `${name} must be ${rangeText(spec)}, got ${JSON.stringify(raw)}` })
}

/** Reads one variable of {@link envOnly} from the environment (see {@link envSetting}). */
export const readEnvSetting = (name: EnvOnly): Effect.Effect<number, InvalidDefinition> =>
  Effect.flatMap(Env.read([name]), (env) => {
    const value = envSetting(env, name)
    return typeof value === "number" ? Effect.succeed(value) : Effect.fail(value)
  })

const get = (config: RosterConfig, path: ReadonlyArray<string>): unknown =>
  path.reduce<unknown>((o, k) => (o !== null && typeof o === "object" ? (o as Record<string, unknown>)[k] : undefined), config)

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v) && !Layer.isLayer(v)

/** Every top-level key a config may have (the compiler keeps this in step with RosterConfig). */
const topLevelKeys = {
  db: true,
  appsDir: true,
  jobs: true,
  schedules: true,
  retention: true,
  queues: true,
  maxPayloadBytes: true,
  synchronous: true,
  worker: true,
  services: true
} satisfies Record<keyof RosterConfig, true>

/**
 * Checks a completed config (environment applied) against the rules; returns the first
 * refusal, or undefined. `sources` are the layers it was made of, lowest first, so the
 * refusal can say where a value came from; a variable that is set in `env` wins over them all.
 */
export const checkConfig = (config: RosterConfig, sources: ReadonlyArray<Source>, env: Env.Env): InvalidDefinition | undefined => {
  /** Where the value at `path` came from, for the refusal. */
  const origin = (path: ReadonlyArray<string>, variable?: string): { readonly text: string; readonly env?: string; readonly file?: string | undefined } => {
    if (variable !== undefined && envText(env, variable) !== undefined) return { text: variable, env: variable }
    const key = path.join(".")
    const source = [...sources].reverse().find((s) => get(s.config, path) !== undefined)
    return source ? { text: `${key} in ${source.label}`, file: source.file } : { text: `the default ${key}` }
  }
  const refuse = (where: { readonly text: string; readonly file?: string | undefined }, message: string) =>
    new InvalidDefinition({ message: `${where.text} ${message}`, file: where.file })
  const number = (path: ReadonlyArray<string>, range: Range, variable?: string): InvalidDefinition | undefined => {
    const v = get(config, path)
    if (v === undefined || inRange(v, range)) return undefined
    const where = origin(path, variable)
    const shown = where.env !== undefined ? JSON.stringify(env.get(where.env)) : describeValue(v)
    return refuse(where, `must be ${rangeText(range)}, got ${shown}`)
  }
  const shape = (path: ReadonlyArray<string>, ok: (v: unknown) => boolean, what: string): InvalidDefinition | undefined => {
    const v = get(config, path)
    return v === undefined || ok(v) ? undefined : refuse(origin(path), `must be ${what}, got ${describeValue(v)}`)
  }
  const flow = (path: ReadonlyArray<string>, check: (v: unknown) => unknown): InvalidDefinition | undefined => {
    const v = get(config, path)
    if (v === undefined) return undefined
    const problem = check(v)
    return typeof problem === "string" ? refuse(origin(path), problem) : undefined
  }
  const keys = (path: ReadonlyArray<string>, known: ReadonlyArray<string>): InvalidDefinition | undefined => {
    const v = path.length === 0 ? config : get(config, path)
    if (!isObject(v)) return undefined
    const unknown = Object.keys(v).find((k) => !known.includes(k) && v[k] !== undefined)
    if (unknown === undefined) return undefined
    const where = origin([...path, unknown])
    return refuse(where, `is not a setting Roster knows (${path.length === 0 ? "keys" : `keys of ${path.join(".")}`}: ${known.join(", ")})`)
  }

  if (!isObject(config)) {
    const top = [...sources].reverse().find((s) => !isObject(s.config))
    return new InvalidDefinition({ message: `${top?.label ?? "the config"} is not a config: it is ${describeValue(config)} (use \`defineConfig({...})\`)`, file: top?.file })
  }
  const checks: Array<() => InvalidDefinition | undefined> = [
    () => keys([], Object.keys(topLevelKeys)),
    () => shape(["db"], (v) => typeof v === "string" && v.trim() !== "", "a database path or a postgres:// URL"),
    () => shape(["appsDir"], (v) => typeof v === "string" && v.trim() !== "", "a folder path"),
    () => shape(["jobs"], Array.isArray, "an array of Jobs"),
    () => shape(["schedules"], Array.isArray, "an array of Schedules"),
    () => shape(["services"], Layer.isLayer, "a Layer"),
    () => shape(["synchronous"], (v) => v === "FULL" || v === "NORMAL", `"FULL" or "NORMAL"`),
    () => shape(["worker"], isObject, "an object of worker settings"),
    () => shape(["retention"], isObject, "an object like { succeededMs, failedMs }"),
    () => shape(["queues"], isObject, "an object of queues, like { emails: { concurrency: 5 } }"),
    () => keys(["worker"], Object.keys(workerRanges)),
    () => keys(["retention"], ["succeededMs", "failedMs"]),
    ...Object.entries(workerRanges).map(([key, range]) => () => number(["worker", key], range, workerEnv[key as keyof WorkerSettings])),
    () => number(["maxPayloadBytes"], payloadRange, "ROSTER_MAX_PAYLOAD_BYTES"),
    () => number(["retention", "succeededMs"], retentionRange),
    () => number(["retention", "failedMs"], retentionRange),
    ...Object.keys(isObject(config.queues) ? config.queues : {}).flatMap((name) => [
      () => shape(["queues", name], isObject, "an object like { concurrency: 5 }"),
      () => keys(["queues", name], ["concurrency", "globalConcurrency", "rateLimit"]),
      () => number(["queues", name, "concurrency"], concurrencyRange),
      () => flow(["queues", name, "globalConcurrency"], globalConcurrencyOf),
      () => flow(["queues", name, "rateLimit"], rateLimitOf)
    ]),
    () => {
      // A lease that ends before the second heartbeat can be lost to one slow or missed beat.
      const lease = (get(config, ["worker", "leaseMs"]) as number | undefined) ?? 30_000
      const beat = (get(config, ["worker", "heartbeatMs"]) as number | undefined) ?? 10_000
      if (lease >= 2 * beat) return undefined
      const l = origin(["worker", "leaseMs"], workerEnv.leaseMs)
      const h = origin(["worker", "heartbeatMs"], workerEnv.heartbeatMs)
      const why = `a lease shorter than two heartbeats runs out between them and every execution fails "lease expired"`
      // Name first the one that was set: a default is not what the operator got wrong.
      return l.text.startsWith("the default ")
        ? refuse(h, `(${beat} ms) must be at most half the lease, ${l.text} (${lease} ms): ${why}`)
        : refuse(l, `(${lease} ms) must be at least twice the heartbeat, ${h.text} (${beat} ms): ${why}`)
    }
  ]
  for (const check of checks) {
    const refusal = check()
    if (refusal) return refusal
  }
  return undefined
}
