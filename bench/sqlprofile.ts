/**
 * A SQLite profiler for benchmarks: once installed, every statement prepared through
 * `bun:sqlite` (`Database#query` / `#prepare`) and every `Database#transaction` is
 * timed, keyed by its SQL text. Because it hooks the driver, not Roster's Store, it
 * keeps working while the Store changes, and it sees the exact statements Roster runs.
 *
 * SQLite calls are synchronous, so the time around a call is the time the JS thread
 * spent in SQLite. A statement outside a transaction includes its own commit (and
 * fsync); for an explicit transaction, "BEGIN/COMMIT + glue" is its total time minus
 * the statements inside it: mostly the commit's WAL fsync at synchronous=FULL.
 */
import { Database } from "bun:sqlite"

/** Counters of one statement or transaction kind. */
export interface SqlStats {
  calls: number
  totalMs: number
  maxMs: number
  /** For transactions: time in the statements inside them. */
  innerMs: number
  /** For transactions: statements run inside them. */
  statements: number
}

/** The profile: statements and transactions by label. */
export interface SqlProfile {
  readonly statements: Map<string, SqlStats>
  readonly transactions: Map<string, SqlStats>
  /** Databases whose statements are not recorded (e.g. a benchmark's own reader). */
  readonly ignored: WeakSet<Database>
  reset: () => void
}

const wrappedMark = Symbol("roster-bench-wrapped")

/** A short, greppable label for a SQL text. */
export const labelOf = (sql: string): string => {
  const flat = sql.replace(/\s+/g, " ").trim()
  return flat.length > 70 ? `${flat.slice(0, 70)}…` : flat
}

const bump = (map: Map<string, SqlStats>, label: string, ms: number): SqlStats => {
  let s = map.get(label)
  if (!s) map.set(label, (s = { calls: 0, totalMs: 0, maxMs: 0, innerMs: 0, statements: 0 }))
  s.calls++
  s.totalMs += ms
  if (ms > s.maxMs) s.maxMs = ms
  return s
}

let installed: SqlProfile | undefined

/**
 * Installs the profiler (once per process) and returns it. Timing each statement costs
 * about 1 µs per call; `statements: false` times transactions only (their statement
 * counts stay zero), for hot paths such as bulk inserts where that would distort.
 */
export const install = (options: { readonly statements?: boolean } = {}): SqlProfile => {
  if (installed) return installed
  const profile: SqlProfile = {
    statements: new Map(),
    transactions: new Map(),
    ignored: new WeakSet(),
    reset: () => {
      profile.statements.clear()
      profile.transactions.clear()
    }
  }
  installed = profile
  // The transaction in progress (top level only): its statements' time and their labels.
  let current: { innerMs: number; statements: number; labels: Set<string> } | undefined

  const proto = Database.prototype as unknown as Record<string, (...args: Array<unknown>) => unknown>
  for (const method of options.statements === false ? [] : ["query", "prepare"]) {
    const original = proto[method]!
    proto[method] = function(this: Database, ...args: Array<unknown>) {
      const statement = original.apply(this, args) as Record<string | symbol, unknown>
      if (profile.ignored.has(this) || statement[wrappedMark]) return statement
      statement[wrappedMark] = true
      const label = labelOf(String(args[0]))
      for (const name of ["get", "all", "run", "values"]) {
        const call = statement[name] as (...a: Array<unknown>) => unknown
        statement[name] = function(this: unknown, ...a: Array<unknown>) {
          const t0 = performance.now()
          try {
            return call.apply(this, a)
          } finally {
            const elapsed = performance.now() - t0
            bump(profile.statements, label, elapsed)
            if (current) {
              current.innerMs += elapsed
              current.statements++
              current.labels.add(label.split(" ").slice(0, 3).join(" "))
            }
          }
        }
      }
      return statement
    }
  }

  const originalTransaction = proto.transaction!
  proto.transaction = function(this: Database, ...args: Array<unknown>) {
    const tx = originalTransaction.apply(this, args) as ((...a: Array<unknown>) => unknown) & Record<string, (...a: Array<unknown>) => unknown>
    if (profile.ignored.has(this)) return tx
    const timed = (f: (...a: Array<unknown>) => unknown) =>
      function(this: unknown, ...a: Array<unknown>) {
        if (current) return f.apply(this, a) // nested: counted in the outer transaction
        current = { innerMs: 0, statements: 0, labels: new Set() }
        const mine = current
        const t0 = performance.now()
        try {
          return f.apply(this, a)
        } finally {
          const elapsed = performance.now() - t0
          current = undefined
          const label = `transaction [${[...mine.labels].sort().join(" + ") || "empty"}]`
          const s = bump(profile.transactions, label, elapsed)
          s.innerMs += mine.innerMs
          s.statements += mine.statements
        }
      }
    const wrapped = timed(tx) as typeof tx
    for (const kind of ["deferred", "immediate", "exclusive"]) wrapped[kind] = timed(tx[kind]!)
    return wrapped
  }
  return profile
}

/** Total time in SQLite: statements outside transactions plus whole transactions. */
export const totalMs = (profile: SqlProfile): number => {
  let inner = 0
  for (const t of profile.transactions.values()) inner += t.innerMs
  let all = 0
  for (const s of profile.statements.values()) all += s.totalMs
  for (const t of profile.transactions.values()) all += t.totalMs
  return all - inner
}

/** Table rows: what, calls, per-call mean, total ms, share of `wallMs`, µs per job. */
export const profileRows = (profile: SqlProfile, wallMs: number, jobs: number): Array<Array<string>> => {
  const rows: Array<[number, Array<string>]> = []
  const fmt = (label: string, calls: number, total: number, extra = "") => [
    label,
    calls.toLocaleString("en-US"),
    (total / calls).toFixed(3),
    total.toFixed(0),
    `${((total / wallMs) * 100).toFixed(1)}%`,
    ((total / jobs) * 1000).toFixed(1),
    extra
  ]
  for (const [label, t] of profile.transactions) {
    rows.push([t.totalMs, fmt(label, t.calls, t.totalMs, `${(t.statements / t.calls).toFixed(1)} statements/tx; BEGIN/COMMIT + glue ${(t.totalMs - t.innerMs).toFixed(0)} ms (${(((t.totalMs - t.innerMs) / t.calls) * 1000).toFixed(0)} µs/tx)`)])
  }
  for (const [label, s] of profile.statements) rows.push([s.totalMs, fmt(`  ${label}`, s.calls, s.totalMs)])
  return rows.sort((a, b) => b[0] - a[0]).map(([, r]) => r)
}

/** Headers matching {@link profileRows}. */
export const profileHeaders = ["SQLite work (statements indented; a transaction's time includes its statements)", "calls", "mean ms", "total ms", "share of wall", "µs/job", "notes"]
