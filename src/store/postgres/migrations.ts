/**
 * Numbered migrations of the PostgreSQL store, its own series (independent of
 * SQLite's). They run inside one transaction that first takes a transaction-level
 * advisory lock, so processes starting at once serialise: one applies them, the others
 * wait for its commit and find nothing to do. Never edit a released migration; add the
 * next number.
 *
 * Types: times are epoch milliseconds in BIGINT; ids, jobs and queues compare with
 * `COLLATE "C"` (byte order), so claim order, list order and paging are the same as on
 * SQLite whatever the database's locale. Payloads, results and errors are kept as the
 * exact JSON text they were written with (TEXT, not jsonb, which would reorder keys).
 */

import { claimGlobalFunctionSql, claimLimitedFunctionSql, rateFreesAtFunctionSql } from "./PgClaimFunction.ts"

/** One migration: a version number and its statements, run in order. */
export interface Migration {
  readonly version: number
  readonly name: string
  readonly statements: ReadonlyArray<string>
}

/** Key of the advisory lock migrations run under ('rost' as a 32-bit class, then a number). */
export const migrationLockKey = [0x726f7374, 1] as const

/** The bookkeeping table, created under the lock before anything else. */
export const migrationsTableSql = `CREATE TABLE IF NOT EXISTS roster_migrations (
  version INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  applied_at BIGINT NOT NULL
)`

/** All migrations, in order. */
export const migrations: ReadonlyArray<Migration> = [
  {
    version: 1,
    name: "executions and attempts",
    statements: [
      `CREATE TABLE roster_executions (
  id TEXT COLLATE "C" PRIMARY KEY,
  job TEXT COLLATE "C" NOT NULL,
  queue TEXT COLLATE "C" NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('queued','running','succeeded','failed','cancelled')),
  payload TEXT NOT NULL,
  priority INTEGER NOT NULL,
  attempt INTEGER NOT NULL DEFAULT 0,
  max_attempts INTEGER NOT NULL,
  retry TEXT NOT NULL,
  timeout_ms BIGINT NOT NULL,
  run_at BIGINT NOT NULL,
  created_at BIGINT NOT NULL,
  started_at BIGINT,
  finished_at BIGINT,
  -- The worker of the latest attempt. The lease is live only while state = 'running';
  -- the owner is kept afterwards so a succeeded attempt needs no row of its own.
  lease_owner TEXT,
  lease_expires_at BIGINT,
  cancel_requested BOOLEAN NOT NULL DEFAULT false,
  idempotency_key TEXT,
  schedule_id TEXT COLLATE "C",
  fire_at BIGINT,
  retry_of TEXT,
  result TEXT,
  error TEXT
)`,
      // The claim index matches the claim order exactly: priority DESC, run_at, id.
      `CREATE INDEX roster_executions_claim ON roster_executions (queue, priority DESC, run_at, id) WHERE state = 'queued'`,
      `CREATE UNIQUE INDEX roster_executions_idempotency ON roster_executions (job, idempotency_key) WHERE idempotency_key IS NOT NULL`,
      // Serves the Reaper (expired leases) and the heartbeat (a worker's running rows).
      `CREATE INDEX roster_executions_expiry ON roster_executions (lease_expires_at) WHERE state = 'running'`,
      `CREATE TABLE roster_attempts (
  execution_id TEXT COLLATE "C" NOT NULL,
  attempt INTEGER NOT NULL,
  worker TEXT NOT NULL,
  started_at BIGINT NOT NULL,
  finished_at BIGINT NOT NULL,
  outcome TEXT NOT NULL,
  error TEXT,
  PRIMARY KEY (execution_id, attempt)
)`,
      `CREATE TABLE roster_steps (
  execution_id TEXT COLLATE "C" NOT NULL,
  name TEXT COLLATE "C" NOT NULL,
  output TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  created_at BIGINT NOT NULL,
  PRIMARY KEY (execution_id, name)
)`
    ]
  },
  {
    version: 2,
    name: "schedules, fires and leases",
    statements: [
      `CREATE TABLE roster_schedules (
  id TEXT COLLATE "C" PRIMARY KEY,
  source TEXT NOT NULL CHECK (source IN ('file','studio','system')),
  job TEXT NOT NULL,
  payload TEXT NOT NULL,
  cron TEXT,
  every_ms BIGINT,
  timezone TEXT NOT NULL DEFAULT 'UTC',
  enabled BOOLEAN NOT NULL DEFAULT true,
  paused BOOLEAN NOT NULL DEFAULT false,
  misfire TEXT NOT NULL CHECK (misfire IN ('once','skip','all')),
  misfire_cap INTEGER NOT NULL,
  overlap TEXT NOT NULL CHECK (overlap IN ('allow','skip')),
  label TEXT NOT NULL DEFAULT '',
  description TEXT NOT NULL DEFAULT '',
  anchor_at BIGINT NOT NULL DEFAULT 0,
  next_due_at BIGINT,
  last_due_at BIGINT,
  retired_at BIGINT,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  CHECK ((cron IS NULL) <> (every_ms IS NULL))
)`,
      `CREATE INDEX roster_schedules_due ON roster_schedules (next_due_at) WHERE retired_at IS NULL AND enabled AND NOT paused`,
      `CREATE TABLE roster_schedule_fires (
  schedule_id TEXT COLLATE "C" NOT NULL,
  due_at BIGINT NOT NULL,
  enqueued_at BIGINT NOT NULL,
  outcome TEXT NOT NULL CHECK (outcome IN ('enqueued','skipped','missed')),
  execution_id TEXT,
  error TEXT,
  PRIMARY KEY (schedule_id, due_at)
)`,
      `CREATE TABLE roster_leases (
  name TEXT PRIMARY KEY,
  owner TEXT NOT NULL,
  expires_at BIGINT NOT NULL
)`,
      // The overlap check: is an execution of this schedule still queued or running?
      `CREATE INDEX roster_executions_schedule_active ON roster_executions (schedule_id, id) WHERE schedule_id IS NOT NULL AND state IN ('queued','running')`
    ]
  },
  {
    version: 3,
    name: "execution logs",
    statements: [
      // seq keeps lines in the order they were appended (SQLite's rowid).
      `CREATE TABLE roster_logs (
  seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  execution_id TEXT COLLATE "C" NOT NULL,
  attempt INTEGER NOT NULL,
  at BIGINT NOT NULL,
  level TEXT NOT NULL,
  message TEXT NOT NULL,
  annotations TEXT
)`,
      `CREATE INDEX roster_logs_execution ON roster_logs (execution_id, attempt)`,
      // Lines a LogSink dropped under back-pressure, counted per attempt.
      `CREATE TABLE roster_log_drops (
  execution_id TEXT COLLATE "C" NOT NULL,
  attempt INTEGER NOT NULL,
  dropped INTEGER NOT NULL,
  PRIMARY KEY (execution_id, attempt)
)`
    ]
  },
  {
    version: 4,
    name: "execution trace context",
    statements: [
      // The enqueue's W3C traceparent; the run's span continues it (NULL: no span at enqueue).
      `ALTER TABLE roster_executions ADD COLUMN trace_context TEXT`
    ]
  },
  {
    version: 5,
    name: "queue pause",
    statements: [
      // One row per queue that was ever paused, declared in some config or not. A paused
      // queue claims nothing (the claim reads this row in the same statement).
      `CREATE TABLE roster_queues (
  name TEXT COLLATE "C" PRIMARY KEY,
  paused BOOLEAN NOT NULL DEFAULT false,
  paused_at BIGINT
)`
    ]
  },
  {
    version: 6,
    name: "live workers",
    statements: [
      // One row per worker process: registered at start, refreshed every heartbeat, deleted
      // at a clean stop; a killed worker's row stays, stale, until pruned (see WorkerRules.ts).
      `CREATE TABLE roster_workers (
  id TEXT COLLATE "C" PRIMARY KEY,
  host TEXT NOT NULL,
  pid INTEGER NOT NULL,
  queues TEXT NOT NULL,
  jobs TEXT NOT NULL,
  version TEXT NOT NULL,
  started_at BIGINT NOT NULL,
  last_seen_at BIGINT NOT NULL,
  stale_after_ms BIGINT NOT NULL
)`
    ]
  },
  {
    version: 7,
    name: "flow control and dedupe modes",
    statements: [
      // Per-key concurrency and per-key rate limits: the keys an enqueue computed from the
      // payload (NULL: the Job limits no key). The limits themselves are the workers' config.
      `ALTER TABLE roster_executions ADD COLUMN concurrency_key TEXT COLLATE "C"`,
      `ALTER TABLE roster_executions ADD COLUMN rate_key TEXT COLLATE "C"`,
      // A dedupe key held only while its execution is queued or running (modes "active" and
      // "replace", see docs/jobs.md): the partial unique index lets it go when the execution ends.
      `ALTER TABLE roster_executions ADD COLUMN dedupe_key TEXT COLLATE "C"`,
      `CREATE UNIQUE INDEX roster_executions_dedupe ON roster_executions (job, dedupe_key)
  WHERE dedupe_key IS NOT NULL AND state IN ('queued','running')`,
      // Starts counted by rate limits (sliding window log): n starts of scope, counted until
      // expires_at (start time + period). Claims of a limited queue add and prune them.
      `CREATE TABLE roster_rate_starts (
  queue TEXT COLLATE "C" NOT NULL,
  scope TEXT COLLATE "C" NOT NULL,
  expires_at BIGINT NOT NULL,
  n INTEGER NOT NULL
)`,
      `CREATE INDEX roster_rate_starts_queue ON roster_rate_starts (queue, expires_at)`,
      `CREATE INDEX roster_rate_starts_expiry ON roster_rate_starts (expires_at)`
    ]
  },
  {
    version: 8,
    name: "orchestration: waiting, children, signals",
    statements: [
      `ALTER TABLE roster_executions DROP CONSTRAINT IF EXISTS roster_executions_state_check`,
      `ALTER TABLE roster_executions ADD CONSTRAINT roster_executions_state_check
  CHECK (state IN ('queued','running','waiting','succeeded','failed','cancelled'))`,
      // A child enqueued by ctx.enqueue: its parent and the step name (unique per parent).
      `ALTER TABLE roster_executions ADD COLUMN parent_id TEXT COLLATE "C"`,
      `ALTER TABLE roster_executions ADD COLUMN parent_step TEXT COLLATE "C"`,
      // What a waiting execution waits for (JSON, see jobs/Wait.ts); kept after it resumes.
      `ALTER TABLE roster_executions ADD COLUMN wait TEXT`,
      // The claim index now also holds waiting executions, due when their wait ends.
      `DROP INDEX roster_executions_claim`,
      `CREATE INDEX roster_executions_claim ON roster_executions (queue, priority DESC, run_at, id) WHERE state IN ('queued','waiting')`,
      `DROP INDEX roster_executions_schedule_active`,
      `CREATE INDEX roster_executions_schedule_active ON roster_executions (schedule_id, id) WHERE schedule_id IS NOT NULL AND state IN ('queued','running','waiting')`,
      `DROP INDEX roster_executions_dedupe`,
      `CREATE UNIQUE INDEX roster_executions_dedupe ON roster_executions (job, dedupe_key)
  WHERE dedupe_key IS NOT NULL AND state IN ('queued','running','waiting')`,
      `CREATE UNIQUE INDEX roster_executions_child ON roster_executions (parent_id, parent_step) WHERE parent_id IS NOT NULL`,
      // Signals sent to an execution, in order; a wait consumes the oldest unconsumed of its name.
      `CREATE TABLE roster_signals (
  execution_id TEXT COLLATE "C" NOT NULL,
  seq BIGSERIAL,
  name TEXT COLLATE "C" NOT NULL,
  payload TEXT NOT NULL,
  sent_at BIGINT NOT NULL,
  consumed_at BIGINT,
  PRIMARY KEY (execution_id, seq)
)`
    ]
  },
  {
    version: 9,
    name: "the limited claim as one server-side function",
    // PgClaimFunction.ts: the rules of FlowRules.ts run where the rows are, one round trip per claim.
    statements: [rateFreesAtFunctionSql, claimLimitedFunctionSql]
  },
  {
    version: 10,
    name: "the global-only limited claim as its own function",
    // A database already at 9 gets the new function, and roster_claim_limited's newer body
    // (the update by primary key, the json result): CREATE OR REPLACE of the same text is harmless.
    statements: [claimLimitedFunctionSql, claimGlobalFunctionSql]
  },
  {
    version: 11,
    name: "the global-only limited claim by the row versions it locked",
    // roster_claim_global's newer body: the UPDATE reaches the rows its scan locked by
    // ctid, as the plain claim does (PgStore.ts), not by id through the primary key again.
    statements: [claimGlobalFunctionSql]
  }
]
