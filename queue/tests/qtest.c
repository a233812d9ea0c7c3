/* The test rig shared by the queue test suites (see qtest.h). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/store.h"
#include "queue/tests/qtest.h"

/* Make a scratch directory under $MOSGW_TMP (or /tmp). */
int
qtest_mkdtemp(char *dir, size_t len)
{
	const char	*base = getenv("MOSGW_TMP");

	if (base == NULL || *base == '\0')
		base = "/tmp";
	snprintf(dir, len, "%s/queue-test.XXXXXX", base);
	return mkdtemp(dir) == NULL ? -1 : 0;
}

/* nftw callback: remove one entry. */
static int
qtest_rm_cb(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)flag;
	(void)f;
	remove(path);
	return 0;
}

/* Remove a scratch directory and everything in it. */
void
qtest_rmtree(const char *dir)
{
	if (dir != NULL && *dir != '\0')
		nftw(dir, qtest_rm_cb, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

/* The fake clock: the int64_t the argument points at. */
int64_t
qtest_clock(void *arg)
{
	return *(int64_t *)arg;
}

/* Open (another) queue on the test's file and clock. */
int
qtest_open(struct qtest *t, struct queue **q, bool sync_normal)
{
	struct queue_opts	 o = {
		.driver = t->driver,
		.path = t->path,
		.dsn = t->pg.dsn,
		.sync_normal = sync_normal,
		.clock = qtest_clock,
		.clock_arg = &t->now,
		.seed = 42,
	};
	char			*err = NULL;
	int			 rc;

	if ((rc = queue_open(q, &o, &err)) != QUEUE_OK)
		print_error("queue_open: %s\n", err != NULL ? err : "?");
	free(err);
	return rc;
}

/* Fill t: a scratch dir, its queue path, the clock; open the queue too. */
int
qtest_init(struct qtest *t, bool open)
{
	char	why[512];

	memset(t, 0, sizeof *t);
	if (qtest_mkdtemp(t->dir, sizeof t->dir) != 0)
		return -1;
	t->driver = pgdb_driver();
	if (t->driver == STORE_POSTGRESQL &&
	    pgdb_create(&t->pg, why, sizeof why) != 0) {
		print_error("MOSGW_DB_DRIVER=postgresql: %s\n", why);
		qtest_rmtree(t->dir);
		return -1;
	}
	snprintf(t->path, sizeof t->path, "%s/queue.db", t->dir);
	t->now = QTEST_T0;
	if (open && qtest_open(t, &t->q, true) != QUEUE_OK) {
		pgdb_drop(&t->pg);
		qtest_rmtree(t->dir);
		return -1;
	}
	return 0;
}

/* One integer from an SQL query, or -1 if it fails. */
static int64_t
qtest_sql_try(struct queue *q, const char *sql)
{
	struct store_stmt	*s;
	int64_t		 v = -1;

	if (store_prepare(queue_db(q), sql, 0, &s) != STORE_OK) {
		print_error("%s: %s\n", sql, store_errmsg(queue_db(q)));
		return -1;
	}
	if (store_step(s) == STORE_ROW)
		v = store_column_int64(s, 0);
	else
		print_error("%s: %s\n", sql, store_errmsg(queue_db(q)));
	store_finalize(s);
	return v;
}

/*
 * How many breaks the job histories have (0 is right): each starts with
 * its creation (QUEUED -> QUEUED), each event starts where the last one
 * ended, and the last one ends in the job's state.
 */
int64_t
qtest_history_breaks(struct queue *q)
{
	int64_t	a, b;

	a = qtest_sql_try(q, "SELECT count(*) FROM (SELECT from_state, "
	    "to_state, lag(to_state) OVER (PARTITION BY job_id ORDER BY id) AS "
	    "prev, row_number() OVER (PARTITION BY job_id ORDER BY id) AS n "
	    "FROM job_events) AS h WHERE (n = 1 AND (from_state <> 0 OR to_state "
	    "<> 0)) OR (n > 1 AND prev <> from_state)");
	/*
	 * One pass over the events (a subquery per job ordered by event id
	 * may walk the whole table for each job where the planner has no
	 * statistics yet).
	 */
	b = qtest_sql_try(q, "SELECT count(*) FROM jobs j LEFT JOIN (SELECT "
	    "job_id, to_state, row_number() OVER (PARTITION BY job_id ORDER "
	    "BY id DESC) AS r FROM job_events) AS e ON e.job_id = j.id AND "
	    "e.r = 1 WHERE j.state IS DISTINCT FROM e.to_state");
	return a < 0 || b < 0 ? -1 : a + b;
}

/* Close t's queue and remove its dir; then check the job histories. */
void
qtest_fini(struct qtest *t)
{
	int64_t	breaks = 0;

	if (t->q != NULL)
		breaks = qtest_history_breaks(t->q);
	queue_close(t->q);
	t->q = NULL;
	pgdb_drop(&t->pg);
	qtest_rmtree(t->dir);
	if (breaks != 0)
		print_error("job histories: %lld breaks\n", (long long)breaks);
	assert_int_equal(breaks, 0);
}

/* cmocka setup: scratch dir, queue file, fake clock at QTEST_T0. */
int
qtest_setup(void **state)
{
	struct qtest	*t;

	if ((t = calloc(1, sizeof *t)) == NULL)
		return -1;
	if (qtest_init(t, true) != 0) {
		free(t);
		return -1;
	}
	*state = t;
	return 0;
}

/* cmocka teardown: close the queue, remove the scratch dir. */
int
qtest_teardown(void **state)
{
	struct qtest	*t = *state;

	if (t != NULL)
		qtest_fini(t);
	free(t);
	return 0;
}

/* Enqueue a plain job. */
int64_t
qtest_put(struct queue *q, const char *lane, const char *kind, int prio)
{
	struct queue_enqueue_req	r = {
		.lane = lane,
		.kind = kind,
		.priority = prio,
	};
	int64_t				id = 0;

	assert_int_equal(queue_enqueue(q, &r, &id), QUEUE_OK);
	assert_true(id > 0);
	return id;
}

/* Claim exactly one job. */
void
qtest_claim1(struct queue *q, const char *lane, struct queue_job *j)
{
	size_t	n = 0;

	assert_int_equal(queue_claim(q, lane, "w1", 0, j, 1, &n), QUEUE_OK);
	assert_int_equal(n, 1);
}

/* Claim up to max jobs, keep their ids, clear them. */
size_t
qtest_claim_n(struct queue *q, const char *lane, size_t max, int64_t *ids)
{
	struct queue_job	*jobs;
	size_t			 n = 0, i;

	jobs = calloc(max, sizeof *jobs);
	assert_non_null(jobs);
	assert_int_equal(queue_claim(q, lane, "w1", 0, jobs, max, &n),
	    QUEUE_OK);
	for (i = 0; i < n; i++) {
		if (ids != NULL)
			ids[i] = jobs[i].id;
		queue_job_clear(&jobs[i]);
	}
	free(jobs);
	return n;
}

/* The state of a job. */
enum queue_state
qtest_state(struct queue *q, int64_t id)
{
	struct queue_job	j;
	enum queue_state	st;

	assert_int_equal(queue_get(q, id, &j), QUEUE_OK);
	st = j.state;
	queue_job_clear(&j);
	return st;
}

/* Count the events of a job that went to state `to` (-1: all). */
size_t
qtest_events(struct queue *q, int64_t id, int to)
{
	struct queue_event	*ev;
	size_t			 n, i, c = 0;

	assert_int_equal(queue_history(q, id, &ev, &n), QUEUE_OK);
	for (i = 0; i < n; i++) {
		if (to < 0 || (int)ev[i].to == to)
			c++;
	}
	queue_events_free(ev, n);
	return c;
}

/* One integer from an SQL query. */
int64_t
qtest_sql_int(struct queue *q, const char *sql)
{
	struct store_stmt	*s;
	int64_t		 v;

	assert_int_equal(store_prepare(queue_db(q), sql, 0, &s),
	    STORE_OK);
	assert_int_equal(store_step(s), STORE_ROW);
	v = store_column_int64(s, 0);
	store_finalize(s);
	return v;
}

/* Skip the calling test on PostgreSQL, saying why. */
void
qtest_sqlite_only(const struct qtest *t, const char *why)
{
	if (t->driver != STORE_SQLITE) {
		printf("SKIP: SQLite only: %s\n", why);
		skip();
	}
}
