/**
 * The limited claim on PostgreSQL as one server-side function (migrations 9 and 10), so a claim
 * of a limited queue is one round trip, as the plain claim is, instead of six (BEGIN,
 * the advisory lock, the flow read, the scan, the claim, COMMIT): with a global limit
 * equal to the worker's own concurrency those round trips cost 40% of the drain rate.
 *
 * It is FlowRules.ts statement for statement — planRound, flowStateOf, selectClaims,
 * freesAt, scanAgain and claimRounds — run where the rows are. The store tests run both
 * stores against one model of those rules (tests/store/flow-limits.test.ts), so the
 * SQLite store (which runs the TypeScript rules) and this function cannot drift apart
 * unnoticed. In a VOLATILE PL/pgSQL function under READ COMMITTED each statement takes
 * a fresh snapshot, so every read after the advisory lock sees every claim committed
 * before it.
 *
 * Arguments: the queue, the worker's Jobs, the worker id, how many it wants, now, the
 * lease, the worker's ending ids (they hold no slot), the limits (ClaimLimits as JSON),
 * the time before which expired start rows are pruned, and the most rounds. Returns
 * `{"rows": [the claimed execution rows as JSON], "retryAt": number | null}`.
 */

/**
 * The limited claim when the only limit is the queue's global concurrency (the common
 * case, and the one whose cost the flow bench measures): FlowRules for such limits is
 * one round that takes the first `room` due rows (room = want less the live running
 * executions past the limit), so it is the plain claim's statement under the advisory
 * lock, returning the rows themselves. Same arguments as roster_claim_limited, with the
 * global limit instead of the limits' JSON.
 */
export const claimGlobalFunctionSql = `CREATE OR REPLACE FUNCTION roster_claim_global(
  p_queue text, p_jobs text[], p_worker text, p_want integer, p_now bigint, p_lease_ms bigint,
  p_ending text[], p_global integer, p_prune_before bigint
) RETURNS SETOF roster_executions LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
  room integer;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended('roster:claim:' || p_queue || ':' || current_schema(), 0));
  DELETE FROM roster_rate_starts WHERE queue = p_queue AND expires_at <= p_prune_before;
  SELECT LEAST(p_want, p_global - COUNT(*))::integer INTO room FROM roster_executions
   WHERE state = 'running' AND lease_expires_at >= p_now AND queue = p_queue
     AND NOT (lease_owner = p_worker AND id = ANY(p_ending));
  IF room <= 0 THEN
    RETURN;
  END IF;
  RETURN QUERY
    WITH claimed AS (
      UPDATE roster_executions
         SET state = 'running', attempt = attempt + 1, lease_owner = p_worker,
             lease_expires_at = p_now + p_lease_ms, started_at = p_now
       -- By the row versions the scan locked (a TID scan), as the plain claim (PgStore.ts).
       WHERE ctid = ANY(ARRAY(
         SELECT ctid FROM roster_executions
          WHERE state IN ('queued','waiting') AND queue = p_queue AND run_at <= p_now AND job = ANY(p_jobs)
            AND NOT EXISTS (SELECT 1 FROM roster_queues WHERE name = p_queue AND paused)
          ORDER BY priority DESC, run_at, id
          LIMIT room
          FOR UPDATE SKIP LOCKED))
      RETURNING *)
    SELECT * FROM claimed;
END
$fn$`

/** When the scope's live starts (stored rows with expires_at > now) allow one more start under `limit` (FlowRules.freesAt). */
export const rateFreesAtFunctionSql = `CREATE OR REPLACE FUNCTION roster_rate_frees_at(p_queue text, p_scope text, p_limit integer, p_now bigint)
RETURNS bigint LANGUAGE sql VOLATILE AS $fn$
  SELECT expires_at FROM (
    SELECT expires_at,
           SUM(n) OVER (ORDER BY expires_at ROWS UNBOUNDED PRECEDING) AS cum,
           SUM(n) OVER () AS total
      FROM roster_rate_starts
     WHERE queue = p_queue AND scope = p_scope AND expires_at > p_now) s
   WHERE total - p_limit + 1 > 0 AND cum >= total - p_limit + 1
   ORDER BY expires_at
   LIMIT 1
$fn$`

export const claimLimitedFunctionSql = `CREATE OR REPLACE FUNCTION roster_claim_limited(
  p_queue text, p_jobs text[], p_worker text, p_want integer, p_now bigint, p_lease_ms bigint,
  p_ending text[], p_limits jsonb, p_prune_before bigint, p_max_rounds integer
) RETURNS text LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
  sep constant text := chr(31);
  lim_global integer := (p_limits->>'globalConcurrency')::integer;
  q_rate jsonb := CASE WHEN jsonb_typeof(p_limits->'rateLimit') = 'object' THEN p_limits->'rateLimit' END;
  jobs_l jsonb := COALESCE(p_limits->'jobs', '{}'::jsonb);
  claimed_ids text[] := '{}';
  n_claimed integer := 0;
  retry_at bigint;
  rounds integer := 0;
  want integer;
  running_total integer;
  running_by_pair jsonb;
  used jsonb;
  blocked_pairs text[];
  blocked_rate text[];
  blocked_jobs text[];
  rate_frees bigint;
  queue_rate_free integer;
  room integer;
  open_jobs text[];
  scan_size integer;
  ids text[];
  taken_pair jsonb;
  taken_scope jsonb;
  rate_held text[];
  scanned integer;
  c record;
  jk text;
  jv jsonb;
  conc integer;
  pair text;
  scope text;
  prefix text;
  slimit integer;
  at bigint;
  n_got integer;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended('roster:claim:' || p_queue || ':' || current_schema(), 0));
  DELETE FROM roster_rate_starts WHERE queue = p_queue AND expires_at <= p_prune_before;
  IF EXISTS (SELECT 1 FROM roster_queues WHERE name = p_queue AND paused) THEN
    RETURN '{"rows":[],"retryAt":null}';
  END IF;

  WHILE rounds < p_max_rounds AND n_claimed < p_want LOOP
    rounds := rounds + 1;
    want := p_want - n_claimed;

    -- flowStateOf: live running per (job, key), less the worker's ending executions.
    SELECT COALESCE(SUM(count), 0)::integer,
           COALESCE(jsonb_object_agg(job || sep || key, count) FILTER (WHERE key IS NOT NULL), '{}'::jsonb)
      INTO running_total, running_by_pair
      FROM (SELECT job, concurrency_key AS key, COUNT(*)::integer AS count FROM roster_executions
             WHERE state = 'running' AND lease_expires_at >= p_now AND queue = p_queue
               AND NOT (lease_owner = p_worker AND id = ANY(p_ending))
             GROUP BY job, concurrency_key) r;
    SELECT COALESCE(array_agg(k), '{}') INTO blocked_pairs
      FROM jsonb_each_text(running_by_pair) e(k, v)
     WHERE (jobs_l->split_part(k, sep, 1)->>'concurrency') IS NOT NULL
       AND v::integer >= (jobs_l->split_part(k, sep, 1)->>'concurrency')::integer;
    SELECT COALESCE(jsonb_object_agg(s.scope, s.total), '{}'::jsonb) INTO used
      FROM (SELECT rs.scope, SUM(rs.n)::integer AS total FROM roster_rate_starts rs
             WHERE rs.queue = p_queue AND rs.expires_at > p_now GROUP BY rs.scope) s;

    rate_frees := NULL;
    blocked_jobs := '{}';
    blocked_rate := '{}';
    FOR jk, jv IN SELECT key, value FROM jsonb_each(jobs_l) WHERE jsonb_typeof(value->'rateLimit') = 'object' LOOP
      slimit := (jv->'rateLimit'->>'limit')::integer;
      IF NOT COALESCE((jv->'rateLimit'->>'perKey')::boolean, false) THEN
        scope := 'job' || sep || jk;
        IF COALESCE((used->>scope)::integer, 0) >= slimit THEN
          blocked_jobs := blocked_jobs || jk;
          at := roster_rate_frees_at(p_queue, scope, slimit, p_now);
          IF at IS NOT NULL AND (rate_frees IS NULL OR at < rate_frees) THEN rate_frees := at; END IF;
        END IF;
      ELSE
        prefix := 'key' || sep || jk || sep;
        FOR scope IN SELECT key FROM jsonb_each_text(used)
                      WHERE left(key, length(prefix)) = prefix AND value::integer >= slimit LOOP
          blocked_rate := blocked_rate || (jk || sep || substr(scope, length(prefix) + 1));
          at := roster_rate_frees_at(p_queue, scope, slimit, p_now);
          IF at IS NOT NULL AND (rate_frees IS NULL OR at < rate_frees) THEN rate_frees := at; END IF;
        END LOOP;
      END IF;
    END LOOP;
    queue_rate_free := NULL;
    IF q_rate IS NOT NULL THEN
      queue_rate_free := GREATEST(0, (q_rate->>'limit')::integer - COALESCE((used->>'*')::integer, 0));
      IF queue_rate_free = 0 THEN
        at := roster_rate_frees_at(p_queue, '*', (q_rate->>'limit')::integer, p_now);
        IF at IS NOT NULL AND (rate_frees IS NULL OR at < rate_frees) THEN rate_frees := at; END IF;
      END IF;
    END IF;

    -- planRound: no room, or every Job held back: done.
    room := GREATEST(0, LEAST(want, CASE WHEN lim_global IS NULL THEN NULL ELSE GREATEST(0, lim_global - running_total) END, queue_rate_free));
    open_jobs := ARRAY(SELECT j FROM unnest(p_jobs) AS u(j) WHERE NOT (j = ANY(blocked_jobs)));
    IF room = 0 OR cardinality(open_jobs) = 0 THEN
      retry_at := rate_frees;
      EXIT;
    END IF;
    scan_size := room * 4 + 16;

    -- selectClaims over the scan, in claim order.
    ids := '{}';
    taken_pair := '{}'::jsonb;
    taken_scope := '{}'::jsonb;
    rate_held := '{}';
    scanned := 0;
    FOR c IN SELECT e.id, e.job, e.concurrency_key, e.rate_key FROM roster_executions e
              WHERE e.state IN ('queued','waiting') AND e.queue = p_queue AND e.run_at <= p_now AND e.job = ANY(open_jobs)
                AND (e.concurrency_key IS NULL OR NOT ((e.job || sep || e.concurrency_key) = ANY(blocked_pairs)))
                AND (e.rate_key IS NULL OR NOT ((e.job || sep || e.rate_key) = ANY(blocked_rate)))
              ORDER BY e.priority DESC, e.run_at, e.id
              LIMIT scan_size
              FOR UPDATE SKIP LOCKED LOOP
      -- Full: the rest of the scan is not looked at (again is false whatever it held).
      EXIT WHEN cardinality(ids) >= room;
      scanned := scanned + 1;
      conc := (jobs_l->c.job->>'concurrency')::integer;
      pair := CASE WHEN c.concurrency_key IS NULL OR conc IS NULL THEN NULL ELSE c.job || sep || c.concurrency_key END;
      IF pair IS NOT NULL AND COALESCE((running_by_pair->>pair)::integer, 0) + COALESCE((taken_pair->>pair)::integer, 0) >= conc THEN
        CONTINUE;
      END IF;
      jv := jobs_l->c.job->'rateLimit';
      scope := NULL;
      IF jsonb_typeof(jv) = 'object' THEN
        scope := CASE WHEN COALESCE((jv->>'perKey')::boolean, false) THEN 'key' || sep || c.job || sep || COALESCE(c.rate_key, '')
                      ELSE 'job' || sep || c.job END;
        IF COALESCE((used->>scope)::integer, 0) + COALESCE((taken_scope->>scope)::integer, 0) >= (jv->>'limit')::integer THEN
          IF NOT (scope = ANY(rate_held)) THEN rate_held := rate_held || scope; END IF;
          CONTINUE;
        END IF;
      END IF;
      ids := ids || c.id;
      IF pair IS NOT NULL THEN
        taken_pair := taken_pair || jsonb_build_object(pair, COALESCE((taken_pair->>pair)::integer, 0) + 1);
      END IF;
      IF scope IS NOT NULL THEN
        taken_scope := taken_scope || jsonb_build_object(scope, COALESCE((taken_scope->>scope)::integer, 0) + 1);
      END IF;
    END LOOP;

    IF cardinality(ids) > 0 THEN
      UPDATE roster_executions
         SET state = 'running', attempt = attempt + 1, lease_owner = p_worker,
             lease_expires_at = p_now + p_lease_ms, started_at = p_now
       -- By id alone (the primary key): the scan locked these rows, rechecking them
       -- queued or waiting, and nobody else can change them before this commits. A state
       -- condition here let the planner of a freshly filled, not yet analysed table take
       -- the partial claim index and filter thousands of rows (9 ms of a 10 ms claim).
       WHERE id = ANY(ids);
      GET DIAGNOSTICS n_got = ROW_COUNT;
      claimed_ids := claimed_ids || ids;
      n_claimed := n_claimed + n_got;
      IF q_rate IS NOT NULL THEN
        INSERT INTO roster_rate_starts (queue, scope, expires_at, n)
        VALUES (p_queue, '*', p_now + (q_rate->>'periodMs')::bigint, cardinality(ids));
      END IF;
      INSERT INTO roster_rate_starts (queue, scope, expires_at, n)
      SELECT p_queue, t.key, p_now + (jobs_l->split_part(t.key, sep, 2)->'rateLimit'->>'periodMs')::bigint, t.value::integer
        FROM jsonb_each_text(taken_scope) t;
    END IF;

    -- Held back by a rate limit only if the round came short of what it asked.
    retry_at := NULL;
    IF cardinality(ids) < want THEN
      retry_at := rate_frees;
      IF q_rate IS NOT NULL AND cardinality(ids) >= queue_rate_free THEN
        at := roster_rate_frees_at(p_queue, '*', (q_rate->>'limit')::integer, p_now);
        IF at IS NOT NULL AND (retry_at IS NULL OR at < retry_at) THEN retry_at := at; END IF;
      END IF;
      FOREACH scope IN ARRAY rate_held LOOP
        at := roster_rate_frees_at(p_queue, scope, (jobs_l->split_part(scope, sep, 2)->'rateLimit'->>'limit')::integer, p_now);
        IF at IS NOT NULL AND (retry_at IS NULL OR at < retry_at) THEN retry_at := at; END IF;
      END LOOP;
    END IF;

    -- scanAgain: a full scan that came short of the room.
    EXIT WHEN NOT (cardinality(ids) < room AND scanned >= scan_size);
  END LOOP;
  -- json, not jsonb: building jsonb from 50 rows cost more than the claim itself.
  RETURN json_build_object('rows', (SELECT COALESCE(json_agg(e), '[]'::json) FROM roster_executions e WHERE e.id = ANY(claimed_ids)), 'retryAt', retry_at)::text;
END
$fn$`
