/**
 * Numbered migrations of the SQLite store. Each runs once, in order, inside the same
 * `BEGIN IMMEDIATE` transaction that reads the applied version, so two processes
 * starting at once serialise on the write lock and the second finds nothing to do.
 * Never edit a released migration; add the next number.
 */

import { displacedBelow, idShapeGlob, rowidSql } from "./ExecutionRowid.ts"

/** One migration: a version number and its statements. */
export interface Migration {
  readonly version: number
  readonly name: string
  readonly sql: string
}

/** All migrations, in order. */
export const migrations: ReadonlyArray<Migration> = [
  {
    version: 1,
    name: "executions and attempts",
    sql: `
CREATE TABLE roster_executions (
  id TEXT PRIMARY KEY,
  job TEXT NOT NULL,
  queue TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('queued','running','succeeded','failed','cancelled')),
  payload TEXT NOT NULL,
  priority INTEGER NOT NULL,
  attempt INTEGER NOT NULL DEFAULT 0,
  max_attempts INTEGER NOT NULL,
  retry TEXT NOT NULL,
  timeout_ms INTEGER NOT NULL,
  run_at INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  started_at INTEGER,
  finished_at INTEGER,
  -- The worker of the latest attempt. The lease is live only while state = 'running';
  -- the owner is kept afterwards so a succeeded attempt needs no row of its own.
  lease_owner TEXT,
  lease_expires_at INTEGER,
  cancel_requested INTEGER NOT NULL DEFAULT 0,
  idempotency_key TEXT,
  schedule_id TEXT,
  fire_at INTEGER,
  retry_of TEXT,
  result TEXT,
  error TEXT
) STRICT;
-- The claim index matches the claim order exactly: priority DESC, run_at, id.
CREATE INDEX roster_executions_claim ON roster_executions (queue, priority DESC, run_at, id) WHERE state = 'queued';
CREATE UNIQUE INDEX roster_executions_idempotency ON roster_executions (job, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX roster_executions_expiry ON roster_executions (lease_expires_at) WHERE state = 'running';
CREATE TABLE roster_attempts (
  execution_id TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  worker TEXT NOT NULL,
  started_at INTEGER NOT NULL,
  finished_at INTEGER NOT NULL,
  outcome TEXT NOT NULL,
  error TEXT,
  PRIMARY KEY (execution_id, attempt)
) STRICT, WITHOUT ROWID;
CREATE TABLE roster_steps (
  execution_id TEXT NOT NULL,
  name TEXT NOT NULL,
  output TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (execution_id, name)
) STRICT, WITHOUT ROWID;
`
  },
  {
    version: 2,
    name: "schedules, fires and leases",
    sql: `
CREATE TABLE roster_schedules (
  id TEXT PRIMARY KEY,
  source TEXT NOT NULL CHECK (source IN ('file','studio','system')),
  job TEXT NOT NULL,
  payload TEXT NOT NULL,
  cron TEXT,
  every_ms INTEGER,
  timezone TEXT NOT NULL DEFAULT 'UTC',
  enabled INTEGER NOT NULL DEFAULT 1,
  paused INTEGER NOT NULL DEFAULT 0,
  misfire TEXT NOT NULL CHECK (misfire IN ('once','skip','all')),
  misfire_cap INTEGER NOT NULL,
  overlap TEXT NOT NULL CHECK (overlap IN ('allow','skip')),
  label TEXT NOT NULL DEFAULT '',
  description TEXT NOT NULL DEFAULT '',
  anchor_at INTEGER NOT NULL DEFAULT 0,
  next_due_at INTEGER,
  last_due_at INTEGER,
  retired_at INTEGER,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  CHECK ((cron IS NULL) <> (every_ms IS NULL))
) STRICT;
CREATE INDEX roster_schedules_due ON roster_schedules (next_due_at) WHERE retired_at IS NULL AND enabled = 1 AND paused = 0;
CREATE TABLE roster_schedule_fires (
  schedule_id TEXT NOT NULL,
  due_at INTEGER NOT NULL,
  enqueued_at INTEGER NOT NULL,
  outcome TEXT NOT NULL CHECK (outcome IN ('enqueued','skipped','missed')),
  execution_id TEXT,
  error TEXT,
  PRIMARY KEY (schedule_id, due_at)
) STRICT, WITHOUT ROWID;
CREATE TABLE roster_leases (
  name TEXT PRIMARY KEY,
  owner TEXT NOT NULL,
  expires_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
-- The overlap check: is an execution of this schedule still queued or running?
CREATE INDEX roster_executions_schedule_active ON roster_executions (schedule_id, id) WHERE schedule_id IS NOT NULL AND state IN ('queued','running');
`
  },
  {
    version: 3,
    name: "execution logs",
    sql: `
CREATE TABLE roster_logs (
  execution_id TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  at INTEGER NOT NULL,
  level TEXT NOT NULL,
  message TEXT NOT NULL,
  annotations TEXT
) STRICT;
CREATE INDEX roster_logs_execution ON roster_logs (execution_id, attempt);
-- Lines a LogSink dropped under back-pressure, counted per attempt.
CREATE TABLE roster_log_drops (
  execution_id TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  dropped INTEGER NOT NULL,
  PRIMARY KEY (execution_id, attempt)
) STRICT, WITHOUT ROWID;
`
  },
  {
    version: 4,
    name: "execution trace context",
    sql: `
-- The enqueue's W3C traceparent; the run's span continues it (NULL: no span at enqueue).
ALTER TABLE roster_executions ADD COLUMN trace_context TEXT;
`
  },
  {
    version: 5,
    name: "queue pause",
    sql: `
-- One row per queue that was ever paused, declared in some config or not. A paused
-- queue claims nothing (the claim reads this row in the same statement).
CREATE TABLE roster_queues (
  name TEXT PRIMARY KEY,
  paused INTEGER NOT NULL DEFAULT 0,
  paused_at INTEGER
) STRICT, WITHOUT ROWID;
`
  },
  {
    version: 6,
    name: "live workers",
    sql: `
-- One row per worker process: registered at start, refreshed every heartbeat, deleted at
-- a clean stop; a killed worker's row stays, stale, until pruned (see WorkerRules.ts).
CREATE TABLE roster_workers (
  id TEXT PRIMARY KEY,
  host TEXT NOT NULL,
  pid INTEGER NOT NULL,
  queues TEXT NOT NULL,
  jobs TEXT NOT NULL,
  version TEXT NOT NULL,
  started_at INTEGER NOT NULL,
  last_seen_at INTEGER NOT NULL,
  stale_after_ms INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
`
  },
  {
    version: 7,
    name: "flow control and dedupe modes",
    sql: `
-- Per-key concurrency and per-key rate limits: the keys an enqueue computed from the
-- payload (NULL: the Job limits no key). The limits themselves are the workers' config.
ALTER TABLE roster_executions ADD COLUMN concurrency_key TEXT;
ALTER TABLE roster_executions ADD COLUMN rate_key TEXT;
-- A dedupe key held only while its execution is queued or running (modes "active" and
-- "replace", see docs/jobs.md): the partial unique index lets it go when the execution ends.
ALTER TABLE roster_executions ADD COLUMN dedupe_key TEXT;
CREATE UNIQUE INDEX roster_executions_dedupe ON roster_executions (job, dedupe_key)
  WHERE dedupe_key IS NOT NULL AND state IN ('queued','running');
-- Starts counted by rate limits (sliding window log): n starts of scope, counted until
-- expires_at (start time + period). Claims of a limited queue add and prune them.
CREATE TABLE roster_rate_starts (
  queue TEXT NOT NULL,
  scope TEXT NOT NULL,
  expires_at INTEGER NOT NULL,
  n INTEGER NOT NULL
) STRICT;
CREATE INDEX roster_rate_starts_queue ON roster_rate_starts (queue, expires_at);
CREATE INDEX roster_rate_starts_expiry ON roster_rate_starts (expires_at);
`
  },
  {
    version: 8,
    name: "orchestration: waiting, children, signals",
    // SQLite cannot change a CHECK constraint: the table is rebuilt with the new state and
    // columns (same data, same ids and rowids), and its indexes made again — the claim
    // index now also holds waiting executions, due at the time their wait ends.
    sql: `
CREATE TABLE roster_executions_v8 (
  id TEXT PRIMARY KEY,
  job TEXT NOT NULL,
  queue TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('queued','running','waiting','succeeded','failed','cancelled')),
  payload TEXT NOT NULL,
  priority INTEGER NOT NULL,
  attempt INTEGER NOT NULL DEFAULT 0,
  max_attempts INTEGER NOT NULL,
  retry TEXT NOT NULL,
  timeout_ms INTEGER NOT NULL,
  run_at INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  started_at INTEGER,
  finished_at INTEGER,
  -- The worker of the latest attempt. The lease is live only while state = 'running';
  -- the owner is kept afterwards so a succeeded attempt needs no row of its own.
  lease_owner TEXT,
  lease_expires_at INTEGER,
  cancel_requested INTEGER NOT NULL DEFAULT 0,
  idempotency_key TEXT,
  schedule_id TEXT,
  fire_at INTEGER,
  retry_of TEXT,
  result TEXT,
  error TEXT,
  trace_context TEXT,
  concurrency_key TEXT,
  rate_key TEXT,
  dedupe_key TEXT,
  -- A child enqueued by ctx.enqueue: its parent and the step name (unique per parent).
  parent_id TEXT,
  parent_step TEXT,
  -- What a waiting execution waits for (JSON, see jobs/Wait.ts); kept after it resumes.
  wait TEXT
) STRICT;
INSERT INTO roster_executions_v8 (rowid, id, job, queue, state, payload, priority, attempt, max_attempts, retry, timeout_ms,
  run_at, created_at, started_at, finished_at, lease_owner, lease_expires_at, cancel_requested, idempotency_key, schedule_id,
  fire_at, retry_of, result, error, trace_context, concurrency_key, rate_key, dedupe_key)
SELECT rowid, id, job, queue, state, payload, priority, attempt, max_attempts, retry, timeout_ms,
  run_at, created_at, started_at, finished_at, lease_owner, lease_expires_at, cancel_requested, idempotency_key, schedule_id,
  fire_at, retry_of, result, error, trace_context, concurrency_key, rate_key, dedupe_key
  FROM roster_executions;
DROP TABLE roster_executions;
ALTER TABLE roster_executions_v8 RENAME TO roster_executions;
-- The claim index matches the claim order exactly: priority DESC, run_at, id.
CREATE INDEX roster_executions_claim ON roster_executions (queue, priority DESC, run_at, id) WHERE state IN ('queued','waiting');
CREATE UNIQUE INDEX roster_executions_idempotency ON roster_executions (job, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX roster_executions_expiry ON roster_executions (lease_expires_at) WHERE state = 'running';
CREATE INDEX roster_executions_schedule_active ON roster_executions (schedule_id, id) WHERE schedule_id IS NOT NULL AND state IN ('queued','running','waiting');
CREATE UNIQUE INDEX roster_executions_dedupe ON roster_executions (job, dedupe_key)
  WHERE dedupe_key IS NOT NULL AND state IN ('queued','running','waiting');
CREATE UNIQUE INDEX roster_executions_child ON roster_executions (parent_id, parent_step) WHERE parent_id IS NOT NULL;
-- Signals sent to an execution, in order; a wait consumes the oldest unconsumed of its name.
CREATE TABLE roster_signals (
  execution_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  name TEXT NOT NULL,
  payload TEXT NOT NULL,
  sent_at INTEGER NOT NULL,
  consumed_at INTEGER,
  PRIMARY KEY (execution_id, seq)
) STRICT, WITHOUT ROWID;
`
  },
  {
    version: 9,
    name: "claim index without the id",
    // Ties on (priority, run_at) are broken by rowid, the order rows were stored in, which
    // every index entry ends with anyway. The id (36 characters of text) in each entry made
    // the index three times wider: bulk insert measured 16-19% faster without it
    // (bench/RESULTS.md, eleventh pass).
    sql: `
DROP INDEX roster_executions_claim;
-- The claim index matches the claim order exactly: priority DESC, run_at, rowid.
CREATE INDEX roster_executions_claim ON roster_executions (queue, priority DESC, run_at) WHERE state IN ('queued','waiting');
`
  },
  {
    version: 10,
    name: "rowid from the id, no index of the id",
    // The table is rebuilt (SQLite cannot drop a PRIMARY KEY): each row's rowid, now the
    // column seq, is made from its id (ExecutionRowid.ts), and the id's own index is gone.
    // A row whose rowid another row already has (ids made in one millisecond by two
    // processes), or whose id is not a UUIDv7, is displaced: it gets a rowid below
    // displacedBelow and is found by the small partial index of such rows' ids.
    sql: `
CREATE TABLE roster_executions_v10 (
  id TEXT NOT NULL,
  job TEXT NOT NULL,
  queue TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('queued','running','waiting','succeeded','failed','cancelled')),
  payload TEXT NOT NULL,
  priority INTEGER NOT NULL,
  attempt INTEGER NOT NULL DEFAULT 0,
  max_attempts INTEGER NOT NULL,
  retry TEXT NOT NULL,
  timeout_ms INTEGER NOT NULL,
  run_at INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  started_at INTEGER,
  finished_at INTEGER,
  lease_owner TEXT,
  lease_expires_at INTEGER,
  cancel_requested INTEGER NOT NULL DEFAULT 0,
  idempotency_key TEXT,
  schedule_id TEXT,
  fire_at INTEGER,
  retry_of TEXT,
  result TEXT,
  error TEXT,
  trace_context TEXT,
  concurrency_key TEXT,
  rate_key TEXT,
  dedupe_key TEXT,
  parent_id TEXT,
  parent_step TEXT,
  wait TEXT,
  -- The rowid: made from the id (ExecutionRowid.ts), or below ${displacedBelow} for a displaced row.
  seq INTEGER PRIMARY KEY
) STRICT;
INSERT INTO roster_executions_v10 (seq, id, job, queue, state, payload, priority, attempt, max_attempts, retry, timeout_ms,
  run_at, created_at, started_at, finished_at, lease_owner, lease_expires_at, cancel_requested, idempotency_key, schedule_id,
  fire_at, retry_of, result, error, trace_context, concurrency_key, rate_key, dedupe_key, parent_id, parent_step, wait)
SELECT CASE WHEN shaped AND first THEN rowid_of ELSE ${displacedBelow} - ROW_NUMBER() OVER (PARTITION BY shaped AND first ORDER BY old_rowid) END,
  id, job, queue, state, payload, priority, attempt, max_attempts, retry, timeout_ms,
  run_at, created_at, started_at, finished_at, lease_owner, lease_expires_at, cancel_requested, idempotency_key, schedule_id,
  fire_at, retry_of, result, error, trace_context, concurrency_key, rate_key, dedupe_key, parent_id, parent_step, wait
  FROM (SELECT *, rowid AS old_rowid, ${rowidSql("id")} AS rowid_of, id GLOB '${idShapeGlob}' AS shaped,
               ROW_NUMBER() OVER (PARTITION BY id GLOB '${idShapeGlob}', ${rowidSql("id")} ORDER BY rowid) = 1 AS first
          FROM roster_executions)
 ORDER BY old_rowid;
DROP TABLE roster_executions;
ALTER TABLE roster_executions_v10 RENAME TO roster_executions;
CREATE INDEX roster_executions_claim ON roster_executions (queue, priority DESC, run_at) WHERE state IN ('queued','waiting');
CREATE UNIQUE INDEX roster_executions_idempotency ON roster_executions (job, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX roster_executions_expiry ON roster_executions (lease_expires_at) WHERE state = 'running';
CREATE INDEX roster_executions_schedule_active ON roster_executions (schedule_id, id) WHERE schedule_id IS NOT NULL AND state IN ('queued','running','waiting');
CREATE UNIQUE INDEX roster_executions_dedupe ON roster_executions (job, dedupe_key)
  WHERE dedupe_key IS NOT NULL AND state IN ('queued','running','waiting');
CREATE UNIQUE INDEX roster_executions_child ON roster_executions (parent_id, parent_step) WHERE parent_id IS NOT NULL;
CREATE UNIQUE INDEX roster_executions_displaced ON roster_executions (id) WHERE seq < ${displacedBelow};
`
  }
]
