/* queue: the versioned schema and its migrations (PRAGMA user_version). */
#include <stdio.h>
#include <stdlib.h>

#include "queue/queue_int.h"

/*
 * Version 1. States are integers (enum queue_state). Partial indexes keep
 * the hot paths small: jobs_due holds only claimable jobs, jobs_running
 * only leased ones, jobs_age only finished ones (for pruning). job_events
 * gets a row for every state change, written by the statement pairs of
 * sql.c in the same transaction (no triggers: they made every update of
 * jobs twice as expensive).
 */
static const char queue_schema_v1[] =
	"CREATE TABLE jobs ("
	" id INTEGER PRIMARY KEY,"
	" lane TEXT NOT NULL,"
	" kind TEXT NOT NULL,"
	" payload BLOB,"
	" state INTEGER NOT NULL DEFAULT 0 CHECK (state BETWEEN 0 AND 4),"
	" blocked INTEGER NOT NULL DEFAULT 0,"
	" priority INTEGER NOT NULL CHECK (priority BETWEEN 0 AND 9),"
	" attempts INTEGER NOT NULL DEFAULT 0,"
	" max_attempts INTEGER NOT NULL,"
	" budget INTEGER NOT NULL,"
	" run_after INTEGER NOT NULL,"
	" lease_until INTEGER NOT NULL DEFAULT 0,"
	" lease_gen INTEGER NOT NULL DEFAULT 0,"
	" worker TEXT,"
	" idem_key TEXT,"
	" coalesce_key TEXT,"
	" after_job INTEGER REFERENCES jobs (id) ON DELETE SET NULL,"
	" last_error TEXT,"
	" created INTEGER NOT NULL,"
	" updated INTEGER NOT NULL);"
	"CREATE UNIQUE INDEX jobs_idem ON jobs (idem_key)"
	" WHERE idem_key IS NOT NULL;"
	"CREATE INDEX jobs_due ON jobs (lane, priority, run_after, id)"
	" WHERE state = 0 AND blocked = 0;"
	"CREATE INDEX jobs_running ON jobs (lane, lease_until) WHERE state = 1;"
	"CREATE INDEX jobs_coalesce ON jobs (coalesce_key)"
	" WHERE state = 0 AND coalesce_key IS NOT NULL;"
	"CREATE INDEX jobs_after ON jobs (after_job) WHERE after_job IS NOT NULL;"
	"CREATE INDEX jobs_age ON jobs (state, updated) WHERE state >= 2;"
	"CREATE TABLE job_events ("
	" id INTEGER PRIMARY KEY,"
	" job_id INTEGER NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,"
	" t INTEGER NOT NULL,"
	" from_state INTEGER NOT NULL,"
	" to_state INTEGER NOT NULL,"
	" attempt INTEGER NOT NULL,"
	" worker TEXT,"
	" note TEXT);"
	"CREATE INDEX job_events_job ON job_events (job_id);"
	"CREATE TABLE job_data ("
	" job_id INTEGER NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,"
	" key TEXT NOT NULL,"
	" value BLOB,"
	" PRIMARY KEY (job_id, key)) WITHOUT ROWID;"
	"CREATE TABLE queue_counters ("
	" name TEXT PRIMARY KEY,"
	" value INTEGER NOT NULL) WITHOUT ROWID;"
	"INSERT INTO queue_counters VALUES"
	" ('retries', 0), ('rescues', 0), ('coalesced', 0);";

/* The migrations: entry i takes the schema from version i to i + 1. */
static const char *const queue_migrations[] = {
	queue_schema_v1,
};
_Static_assert(sizeof queue_migrations / sizeof queue_migrations[0] ==
    QUEUE_SCHEMA_VERSION, "one migration per schema version");

/* Read PRAGMA user_version. */
static int
queue_schema_version(struct queue *q, int *version)
{
	struct store_stmt	*s;
	int		 rc;

	rc = store_prepare(q->db, "PRAGMA user_version", 0, &s);
	if (rc != STORE_OK)
		return queue_err(q, rc, "read schema version");
	if ((rc = store_step(s)) != STORE_ROW) {
		store_finalize(s);
		return queue_err(q, rc, "read schema version");
	}
	*version = store_column_int(s, 0);
	store_finalize(s);
	return QUEUE_OK;
}

/* Apply migration `from` and set the new version, inside one transaction. */
static int
queue_schema_step(struct queue *q, int from)
{
	char	 pragma[64];
	int	 rc, cur;

	if ((rc = queue_tx_enter(q)) != QUEUE_OK)
		return rc;
	/* Another process may have migrated while we waited for the lock. */
	if ((rc = queue_schema_version(q, &cur)) == QUEUE_OK && cur == from) {
		rc = store_exec(q->db, queue_migrations[from]);
		if (rc == STORE_OK) {
			snprintf(pragma, sizeof pragma, "PRAGMA user_version = %d",
			    from + 1);
			rc = store_exec(q->db, pragma);
		}
		rc = rc == STORE_OK ? QUEUE_OK : queue_err(q, rc, "migrate");
	}
	return queue_tx_leave(q, rc);
}

/* Bring the schema to QUEUE_SCHEMA_VERSION; refuse a newer file. */
int
queue_schema_migrate(struct queue *q)
{
	int	rc, version;

	for (;;) {
		if ((rc = queue_schema_version(q, &version)) != QUEUE_OK)
			return rc;
		if (version == QUEUE_SCHEMA_VERSION)
			return QUEUE_OK;
		if (version > QUEUE_SCHEMA_VERSION || version < 0) {
			return queue_errx(q, QUEUE_EINVAL, "the database has "
			    "queue schema version %d, newer than this program "
			    "knows (%d): use a newer mosgw", version,
			    QUEUE_SCHEMA_VERSION);
		}
		if ((rc = queue_schema_step(q, version)) != QUEUE_OK)
			return rc;
	}
}
