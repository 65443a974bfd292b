/**
 * Numbered migrations of the SQLite store. Each runs once, in order, inside the same
 * `BEGIN IMMEDIATE` transaction that reads the applied version, so two processes
 * starting at once serialise on the write lock and the second finds nothing to do.
 * Never edit a released migration; add the next number.
 */

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
CREATE INDEX roster_executions_lease ON roster_executions (lease_owner) WHERE state = 'running';
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
  }
]
