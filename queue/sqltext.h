/*
 * queue: the text of every cached statement, in both dialects. sql.c
 * includes this file twice, inside the initializers of its SQLite and its
 * PostgreSQL table, with these macros defined for the dialect:
 *
 *   IX(index)      SQLite: INDEXED BY index; PostgreSQL: nothing
 *   SKIP_LOCKED    PostgreSQL: FOR UPDATE SKIP LOCKED (claims); SQLite:
 *                  nothing (its writer holds the whole file)
 *   INSTR(s, t)    the position of t in s (instr, strpos)
 *   US             the character 31 (char(31), chr(31))
 *   I(n), T(n)     parameter ?n, as bigint or text where PostgreSQL cannot
 *                  tell its type from the text
 *   CTE(name)      the rows of a common table expression, after IN
 *
 * The PostgreSQL texts also run queue_lease_ms() and queue_backoff_ms(),
 * which the PostgreSQL schema defines over the connection's policies.
 *
 * Without statistics the planner prefers the (state, updated) index; the hot
 * paths name their partial index (INDEXED BY), and a unary + keeps a state
 * term from steering a rowid lookup onto an index.
 *
 * Events are written by the statements themselves rather than by triggers:
 * a trigger on jobs, even an empty one, doubled the cost of every update.
 * Each state change is a pair: EV_ logs (job_id, t, from, to, attempt,
 * worker, note) for the rows that WHERE matches, then the UPDATE with the
 * same WHERE and the same parameters, in the same transaction.
 */
#define EV_INSERT \
	"INSERT INTO job_events (job_id, t, from_state, to_state, attempt, " \
	"worker, note) "
#define CHAIN_BELOW(p) \
	"WITH RECURSIVE d(id) AS (SELECT id FROM jobs WHERE after_job = " p \
	" UNION SELECT j.id FROM jobs j JOIN d ON j.after_job = d.id) "
/* The due jobs a claim takes: ?2 now, ?4 lane, ?5..?6 priorities, ?7 max. */
#define DUE(lane) \
	"(SELECT id FROM jobs" IX("jobs_due") " WHERE state = 0 AND " \
	"blocked = 0" lane " AND priority BETWEEN ?5 AND ?6 AND " \
	"run_after <= ?2 ORDER BY priority, run_after, id LIMIT ?7" \
	SKIP_LOCKED ")"
#define KINDS_IN \
	" AND lane = ?4 AND " INSTR("?8", US " || kind || " US) " > 0"
#define CLAIM_SET \
	"UPDATE jobs SET state = 1, attempts = attempts + 1, " \
	"lease_gen = lease_gen + 1, worker = ?1, lease_until = ?2 + " \
	"CASE WHEN ?3 > 0 THEN ?3 ELSE queue_lease_ms(kind) END, " \
	"updated = ?2 WHERE id IN "
#define BLOCKED_NOW \
	"coalesce((SELECT CASE WHEN p.state <> 2 THEN 1 ELSE 0 END " \
	"FROM jobs p WHERE p.id = jobs.after_job), 0)"
#define RETRY_STATE(permanent) \
	"CASE WHEN " permanent "attempts >= max_attempts THEN 3 ELSE 0 END"
#define RETRY_AT(permanent, now) \
	"CASE WHEN " permanent "attempts >= max_attempts THEN run_after " \
	"ELSE " now " + queue_backoff_ms(kind, attempts) END"
#define REAP_NOTE "'lease expired (worker ' || coalesce(worker, '?') || ')'"
#define ORPHAN_NOTE "'worker ' || coalesce(worker, '?') || ' is gone'"

/* Fenced updates of a claimed job: ?1 id, ?2 lease_gen, ?3 now, ?4, ?5. */
#define FENCE	" FROM jobs WHERE id = ?1 AND lease_gen = ?2 AND +state = 1"
#define FENCE_U	" WHERE id = ?1 AND lease_gen = ?2 AND +state = 1"
#define DEPS	" WHERE after_job = ?1 AND +state = 0 AND blocked = 1"
#define EXPIRED	" WHERE state = 1 AND lease_until < ?1"
#define ORPHANED \
	" WHERE state = 1 AND substr(worker, 1, length(" T(2) ")) = ?2 AND " \
	"worker <> ?3"
#define SAME_KEY " WHERE coalesce_key = ?3 AND state = 0 AND id <> " I(1)
/* Up to 16 jobs at once: ?11..?26 their ids, ?31..?46 their leases. */
#define IDS16 \
	"(?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, " \
	"?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26)"
#define GENS16 \
	"WHEN ?11 THEN " I(31) " WHEN ?12 THEN ?32 WHEN ?13 THEN ?33 " \
	"WHEN ?14 THEN ?34 WHEN ?15 THEN ?35 WHEN ?16 THEN ?36 " \
	"WHEN ?17 THEN ?37 WHEN ?18 THEN ?38 WHEN ?19 THEN ?39 " \
	"WHEN ?20 THEN ?40 WHEN ?21 THEN ?41 WHEN ?22 THEN ?42 " \
	"WHEN ?23 THEN ?43 WHEN ?24 THEN ?44 WHEN ?25 THEN ?45 " \
	"WHEN ?26 THEN ?46 " \
	"END"
#define FENCE16 \
	" WHERE id IN " IDS16 " AND lease_gen = CASE id " GENS16 \
	" AND +state = 1"
#define DEPS16 \
	" WHERE after_job IN " IDS16 " AND +state = 0 AND blocked = 1"
/* Operator updates: ?1 a number, ?2 now, ?3 note, ?4 the job. */
#define REQUEUEABLE	" WHERE id = ?4 AND +state IN (3, 4)"
#define CANCELLABLE	" WHERE id = ?4 AND +state IN (0, 1, 3)"
#define RERUN_ROOT	" WHERE id = ?1 AND +state IN (2, 3, 4)"
#define RERUN_DESC	" WHERE id IN " CTE("d") " AND (+state IN (2, 3, 4) OR blocked = 0)"

	[ST_BEGIN] = "BEGIN IMMEDIATE",
	[ST_COMMIT] = "COMMIT",
	[ST_ROLLBACK] = "ROLLBACK",
	[ST_SAVEPOINT] = "SAVEPOINT queue_sp",
	[ST_RELEASE_SP] = "RELEASE queue_sp",
	[ST_ROLLBACK_SP] = "ROLLBACK TO queue_sp",

	[ST_INSERT] = "INSERT INTO jobs (lane, kind, payload, state, blocked, "
	    "priority, max_attempts, budget, run_after, idem_key, coalesce_key, "
	    "after_job, created, updated) VALUES (?1, ?2, ?3, 0, ?4, ?5, ?6, "
	    "?6, ?7, ?8, ?9, ?10, ?11, ?11) ON CONFLICT DO NOTHING RETURNING id",
	[ST_EVENT] = EV_INSERT "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
	[ST_IDEM_LOOKUP] = "SELECT id FROM jobs WHERE idem_key = ?1",
	[ST_PARENT] = "SELECT state, coalesce_key FROM jobs WHERE id = ?1",
	[ST_CYCLE_CHECK] = "WITH RECURSIVE a(id) AS (SELECT " I(1) " UNION "
	    "SELECT j.after_job FROM jobs j JOIN a ON j.id = a.id "
	    "WHERE j.after_job IS NOT NULL) SELECT count(*) FROM jobs "
	    "WHERE id IN " CTE("a") " AND +state = 0 AND coalesce_key = ?2",
	/* Coalescing: ?1 the new job, ?2 now, ?3 the key. */
	[ST_REPOINT] = "UPDATE jobs SET after_job = ?1 WHERE +state = 0 AND "
	    "after_job IN (SELECT id FROM jobs" IX("jobs_coalesce")
	    SAME_KEY ")",
	[ST_EV_COALESCE] = EV_INSERT "SELECT id, ?2, 0, 4, attempts, worker, "
	    "'coalesced into #' || " I(1) " FROM jobs" IX("jobs_coalesce")
	    SAME_KEY,
	[ST_COALESCE] = "UPDATE jobs" IX("jobs_coalesce") " SET state = 4, "
	    "blocked = 0, updated = ?2" SAME_KEY,
	/* Is there a job for the new one (?1) to supersede, with key ?3? */
	[ST_COALESCE_PROBE] = "SELECT 1 FROM jobs" IX("jobs_coalesce")
	    SAME_KEY " LIMIT 1",
	/* The QUEUED events of the jobs ?1..?3 of a batch; ?2 now. */
	[ST_EV_ENQUEUED] = EV_INSERT "SELECT id, ?2, 0, 0, 0, NULL, CASE WHEN "
	    "blocked <> 0 THEN 'waiting for #' || after_job ELSE 'enqueued' "
	    "END FROM jobs WHERE id BETWEEN ?1 AND ?3 ORDER BY id",
	[ST_COUNTER_ADD] = "UPDATE queue_counters SET value = value + ?2 "
	    "WHERE name = ?1",

	/*
	 * Claims: ?1 worker, ?2 now, ?3 lease, ?4 lane, ?5..?6 priorities, ?7
	 * max. The twin's subquery picks the same rows: a total order, in the
	 * same write transaction. Any lane: the whole index, sorted.
	 */
	[ST_EV_CLAIM_LANE] = EV_INSERT "SELECT id, ?2, 0, 1, attempts + 1, ?1, "
	    "NULL FROM jobs WHERE id IN " DUE(" AND lane = ?4"),
	[ST_CLAIM_LANE] = CLAIM_SET DUE(" AND lane = ?4") " RETURNING "
	    QUEUE_JOB_COLS,
	[ST_EV_CLAIM_ANY] = EV_INSERT "SELECT id, ?2, 0, 1, attempts + 1, ?1, "
	    "NULL FROM jobs WHERE id IN " DUE(""),
	[ST_CLAIM_ANY] = CLAIM_SET DUE("") " RETURNING " QUEUE_JOB_COLS,
	/* Of a lane, only some kinds: ?8 "\x1fa\x1fb\x1f" (char(31) around each). */
	[ST_EV_CLAIM_KINDS] = EV_INSERT "SELECT id, ?2, 0, 1, attempts + 1, "
	    "?1, NULL FROM jobs WHERE id IN " DUE(KINDS_IN),
	[ST_CLAIM_KINDS] = CLAIM_SET DUE(KINDS_IN) " RETURNING " QUEUE_JOB_COLS,
	[ST_RUNNING_COUNT] = "SELECT count(*) FROM jobs" IX("jobs_running") " "
	    "WHERE state = 1 AND lane = ?1",

	[ST_HEARTBEAT] = "UPDATE jobs SET lease_until = ?3 + CASE WHEN ?4 > 0 "
	    "THEN ?4 ELSE queue_lease_ms(kind) END" FENCE_U,
	[ST_EV_COMPLETE] = EV_INSERT "SELECT id, ?3, 1, 2, attempts, worker, "
	    "NULL" FENCE,
	[ST_COMPLETE] = "UPDATE jobs SET state = 2, lease_until = 0, "
	    "updated = ?3" FENCE_U,
	/* ?4: permanent; ?5: the error. */
	[ST_EV_FAIL] = EV_INSERT "SELECT id, ?3, 1, " RETRY_STATE("?4 OR ")
	    ", attempts, worker, ?5" FENCE,
	[ST_FAIL] = "UPDATE jobs SET state = " RETRY_STATE("?4 OR ")
	    ", run_after = " RETRY_AT("?4 OR ", "?3") ", lease_until = 0, "
	    "last_error = ?5, updated = ?3" FENCE_U,
	/* ?4: the delay. */
	[ST_EV_RELEASE_JOB] = EV_INSERT "SELECT id, ?3, 1, 0, attempts - 1, "
	    "worker, 'released by worker'" FENCE,
	[ST_RELEASE_JOB] = "UPDATE jobs SET state = 0, attempts = attempts - 1, "
	    "run_after = " I(3) " + " I(4) ", lease_until = 0, updated = ?3"
	    FENCE_U,
	[ST_EV_COMPLETE16] = EV_INSERT "SELECT id, ?3, 1, 2, attempts, worker, "
	    "NULL FROM jobs" FENCE16,
	[ST_COMPLETE16] = "UPDATE jobs SET state = 2, lease_until = 0, "
	    "updated = ?3" FENCE16,
	[ST_EV_RELEASE_DEPS16] = EV_INSERT "SELECT id, ?3, 0, 0, attempts, "
	    "worker, 'released by #' || after_job FROM jobs" IX("jobs_after")
	    DEPS16,
	[ST_RELEASE_DEPS16] = "UPDATE jobs" IX("jobs_after") " SET "
	    "blocked = 0, updated = ?3" DEPS16,
	/* Jobs chained after ?1, now DONE; ?2 now. */
	[ST_EV_RELEASE_DEPS] = EV_INSERT "SELECT id, ?2, 0, 0, attempts, "
	    "worker, 'released by #' || " I(1) " FROM jobs" DEPS,
	[ST_RELEASE_DEPS] = "UPDATE jobs SET blocked = 0, updated = ?2" DEPS,
	/* ?1 now. */
	[ST_EV_REAP] = EV_INSERT "SELECT id, ?1, 1, " RETRY_STATE("")
	    ", attempts, worker, " REAP_NOTE " FROM jobs"
	    IX("jobs_running") EXPIRED,
	[ST_REAP] = "UPDATE jobs" IX("jobs_running") " SET state = "
	    RETRY_STATE("") ", run_after = " RETRY_AT("", "?1") ", "
	    "lease_until = 0, last_error = " REAP_NOTE ", updated = ?1" EXPIRED,
	/* ?1 now, ?2 the workers' prefix, ?3 the caller's own worker. */
	[ST_EV_ORPHANS] = EV_INSERT "SELECT id, ?1, 1, " RETRY_STATE("")
	    ", attempts, worker, " ORPHAN_NOTE " FROM jobs"
	    IX("jobs_running") ORPHANED,
	[ST_ORPHANS] = "UPDATE jobs" IX("jobs_running") " SET state = "
	    RETRY_STATE("") ", lease_until = 0, last_error = " ORPHAN_NOTE
	    ", updated = ?1" ORPHANED,

	[ST_GET] = "SELECT " QUEUE_JOB_COLS " FROM jobs WHERE id = ?1",
	[ST_STATE_OF] = "SELECT state FROM jobs WHERE id = ?1",
	[ST_HISTORY] = "SELECT job_id, t, from_state, to_state, attempt, worker, "
	    "note FROM job_events WHERE job_id = ?1 ORDER BY id",

	[ST_EV_REQUEUE] = EV_INSERT "SELECT id, ?2, state, 0, attempts, NULL, "
	    "?3 FROM jobs" REQUEUEABLE,
	[ST_REQUEUE] = "UPDATE jobs SET state = 0, blocked = " BLOCKED_NOW ", "
	    "max_attempts = attempts + CASE WHEN ?1 > 0 THEN ?1 ELSE budget END, "
	    "run_after = ?2, worker = NULL, lease_until = 0, updated = ?2"
	    REQUEUEABLE,
	[ST_EV_CANCEL] = EV_INSERT "SELECT id, ?2, state, 4, attempts, worker, "
	    "?3 FROM jobs" CANCELLABLE,
	[ST_CANCEL] = "UPDATE jobs SET state = 4, blocked = 0, lease_until = 0, "
	    "updated = ?2" CANCELLABLE,
	[ST_EV_CANCEL_CHAIN] = CHAIN_BELOW("?4") EV_INSERT "SELECT id, ?2, "
	    "state, 4, attempts, worker, ?3 FROM jobs WHERE id IN " CTE("d") " AND "
	    "+state = 0",
	[ST_CANCEL_CHAIN] = CHAIN_BELOW("?4") "UPDATE jobs SET state = 4, "
	    "blocked = 0, updated = ?2 WHERE id IN " CTE("d") " AND +state = 0",
	[ST_RERUN_CHECK] = CHAIN_BELOW("?1") "SELECT count(*) FROM jobs "
	    "WHERE (id = " I(1) " OR id IN " CTE("d") ") AND +state = 1",
	[ST_EV_RERUN_ROOT] = EV_INSERT "SELECT id, ?2, state, 0, attempts, "
	    "NULL, ?3 FROM jobs" RERUN_ROOT,
	[ST_RERUN_ROOT] = "UPDATE jobs SET state = 0, blocked = " BLOCKED_NOW ", "
	    "max_attempts = attempts + budget, run_after = ?2, worker = NULL, "
	    "lease_until = 0, updated = ?2" RERUN_ROOT,
	[ST_EV_RERUN_DESC] = CHAIN_BELOW("?1") EV_INSERT "SELECT id, ?2, state, "
	    "0, attempts, NULL, ?3 FROM jobs" RERUN_DESC,
	[ST_RERUN_DESC] = CHAIN_BELOW("?1") "UPDATE jobs SET state = 0, "
	    "blocked = 1, max_attempts = attempts + budget, run_after = ?2, "
	    "worker = NULL, lease_until = 0, updated = ?2" RERUN_DESC,

	[ST_STATE_COUNTS] = "SELECT state, count(*) FROM jobs GROUP BY state",
	[ST_OLDEST_DUE] = "SELECT min(run_after) FROM jobs" IX("jobs_due")
	    " WHERE state = 0 AND blocked = 0 AND run_after <= ?1",
	[ST_COUNTERS] = "SELECT name, value FROM queue_counters",
	[ST_PRUNE] = "DELETE FROM jobs WHERE id IN (SELECT j.id FROM jobs j "
	    IX("jobs_age") " WHERE j.state >= 2 AND j.state = ?1 AND "
	    "j.updated < ?2 AND NOT EXISTS (SELECT 1 FROM jobs c WHERE "
	    "c.after_job = j.id AND c.state IN (0, 1, 3)) LIMIT ?3)",
	[ST_DATA_PUT] = "INSERT INTO job_data (job_id, key, value) "
	    "VALUES (?1, ?2, ?3) ON CONFLICT (job_id, key) "
	    "DO UPDATE SET value = excluded.value",
	[ST_DATA_GET] = "SELECT value FROM job_data WHERE job_id = ?1 AND key = ?2",
