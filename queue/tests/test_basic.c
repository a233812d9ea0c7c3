/* queue: opening, the job life cycle, fencing, caller transactions. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <sys/stat.h>

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store.h"
#include "queue/tests/qtest.h"

/* A fresh database gets the current schema; a newer one is refused. */
static void
test_open_schema(void **state)
{
	struct qtest		*t = *state;
	struct queue		*q2 = NULL;
	struct queue_opts	 o = { .driver = t->driver, .path = t->path,
				    .dsn = t->pg.dsn };
	char			*err = NULL, missing[PATH_MAX + 16];
	bool			 pg = t->driver == STORE_POSTGRESQL;
	FILE			*f;

	assert_int_equal(qtest_sql_int(t->q, pg ? "SELECT version FROM "
	    "queue_version" : "PRAGMA user_version"), QUEUE_SCHEMA_VERSION);
	assert_int_equal(qtest_sql_int(t->q, pg ? "SELECT count(*) FROM "
	    "pg_indexes WHERE indexname = 'jobs_due' AND indexdef LIKE "
	    "'%WHERE ((state = 0) AND (blocked = 0))%'" : "SELECT count(*) "
	    "FROM sqlite_master WHERE name = 'jobs_due' AND sql LIKE "
	    "'%WHERE state = 0 AND blocked = 0%'"), 1);
	assert_int_equal(qtest_open(t, &q2, false), QUEUE_OK);
	queue_close(q2);

	assert_int_equal(store_exec(queue_db(t->q), pg ? "UPDATE queue_version "
	    "SET version = 99" : "PRAGMA user_version = 99"), STORE_OK);
	assert_int_not_equal(queue_open(&q2, &o, &err), QUEUE_OK);
	assert_null(q2);
	assert_non_null(err);
	assert_non_null(strstr(err, "newer"));
	free(err);

	if (pg) {
		/* A server that cannot be reached: an error in words. */
		o.dsn = "host=127.0.0.1 port=1 dbname=x connect_timeout=5";
		assert_int_equal(queue_open(&q2, &o, &err), QUEUE_EIO);
		assert_null(q2);
		assert_non_null(strstr(err, "host=127.0.0.1 port=1"));
		free(err);
		return;
	}

	snprintf(missing, sizeof missing, "%s/none.db", t->dir);
	o.path = missing;
	o.must_exist = true;
	assert_int_equal(queue_open(&q2, &o, &err), QUEUE_ENOTFOUND);
	assert_non_null(strstr(err, "No such file"));
	free(err);

	f = fopen(missing, "w");
	assert_non_null(f);
	fputs("this is not a database, just some text long enough to be read "
	    "as a header by sqlite, which wants one hundred bytes or so ....",
	    f);
	fclose(f);
	assert_int_equal(queue_open(&q2, &o, &err), QUEUE_EIO);
	assert_non_null(strstr(err, "not a database"));
	free(err);
}

/* QUEUED -> RUNNING -> DONE, with an event for each change. */
static void
test_life_cycle(void **state)
{
	struct qtest		*t = *state;
	struct queue_job	 j;
	int64_t			 id;

	id = qtest_put(t->q, "a", "publish", QUEUE_PRIO_DEFAULT);
	assert_int_equal(qtest_state(t->q, id), QUEUE_QUEUED);
	qtest_claim1(t->q, "a", &j);
	assert_int_equal(j.id, id);
	assert_int_equal(j.state, QUEUE_RUNNING);
	assert_int_equal(j.attempts, 1);
	assert_int_equal(j.lease_gen, 1);
	assert_int_equal(j.max_attempts, 5);
	assert_string_equal(j.worker, "w1");
	assert_string_equal(j.lane, "a");
	assert_string_equal(j.kind, "publish");
	assert_true(j.lease_until_ms == t->now + 30000);
	t->now += 10;
	assert_int_equal(queue_complete(t->q, id, j.lease_gen), QUEUE_OK);
	assert_int_equal(qtest_state(t->q, id), QUEUE_DONE);
	assert_int_equal(queue_complete(t->q, id, j.lease_gen), QUEUE_ELOST);
	assert_non_null(strstr(queue_errmsg(t->q), "no longer held"));
	assert_int_equal(qtest_events(t->q, id, -1), 3);
	assert_int_equal(qtest_events(t->q, id, QUEUE_RUNNING), 1);
	assert_int_equal(qtest_events(t->q, id, QUEUE_DONE), 1);
	queue_job_clear(&j);
}

/* The event rows say who did what when. */
static void
test_history_fields(void **state)
{
	struct qtest		*t = *state;
	struct queue_event	*ev;
	struct queue_job	 j;
	size_t			 n;
	int64_t			 id;

	id = qtest_put(t->q, "a", "k", 3);
	t->now += 100;
	qtest_claim1(t->q, "a", &j);
	t->now += 100;
	assert_int_equal(queue_fail(t->q, id, j.lease_gen, "NACK: busy",
	    false), QUEUE_OK);
	assert_int_equal(queue_history(t->q, id, &ev, &n), QUEUE_OK);
	assert_int_equal(n, 3);
	assert_int_equal(ev[0].to, QUEUE_QUEUED);
	assert_string_equal(ev[0].note, "enqueued");
	assert_true(ev[0].t_ms == QTEST_T0);
	assert_int_equal(ev[1].from, QUEUE_QUEUED);
	assert_int_equal(ev[1].to, QUEUE_RUNNING);
	assert_int_equal(ev[1].attempt, 1);
	assert_string_equal(ev[1].worker, "w1");
	assert_true(ev[1].t_ms == QTEST_T0 + 100);
	assert_int_equal(ev[2].from, QUEUE_RUNNING);
	assert_int_equal(ev[2].to, QUEUE_QUEUED);
	assert_string_equal(ev[2].note, "NACK: busy");
	assert_true(ev[2].t_ms == QTEST_T0 + 200);
	queue_events_free(ev, n);
	queue_job_clear(&j);
	assert_int_equal(queue_history(t->q, 999, &ev, &n), QUEUE_ENOTFOUND);
}

/* Heartbeats extend the lease; an old lease generation is fenced off. */
static void
test_fencing(void **state)
{
	struct qtest		*t = *state;
	struct queue_job	 j, j2;
	size_t			 n;
	int64_t			 id;

	id = qtest_put(t->q, "a", "k", 5);
	qtest_claim1(t->q, "a", &j);
	t->now += 20000;
	assert_int_equal(queue_heartbeat(t->q, id, j.lease_gen, 0), QUEUE_OK);
	assert_int_equal(queue_get(t->q, id, &j2), QUEUE_OK);
	assert_true(j2.lease_until_ms == t->now + 30000);
	queue_job_clear(&j2);
	assert_int_equal(queue_heartbeat(t->q, id, j.lease_gen + 1, 0),
	    QUEUE_ELOST);

	t->now += 30001;
	assert_int_equal(queue_reap(t->q, &n), QUEUE_OK);
	assert_int_equal(n, 1);
	assert_int_equal(queue_heartbeat(t->q, id, j.lease_gen, 0), QUEUE_ELOST);
	assert_int_equal(queue_complete(t->q, id, j.lease_gen), QUEUE_ELOST);
	assert_int_equal(queue_fail(t->q, id, j.lease_gen, "x", false),
	    QUEUE_ELOST);
	assert_int_equal(queue_release(t->q, id, j.lease_gen, 0), QUEUE_ELOST);

	t->now += 3600 * 1000;
	qtest_claim1(t->q, "a", &j2);
	assert_int_equal(j2.id, id);
	assert_int_equal(j2.lease_gen, j.lease_gen + 1);
	assert_int_equal(j2.attempts, 2);
	assert_int_equal(queue_complete(t->q, id, j.lease_gen), QUEUE_ELOST);
	assert_int_equal(qtest_state(t->q, id), QUEUE_RUNNING);
	assert_int_equal(queue_complete(t->q, id, j2.lease_gen), QUEUE_OK);
	queue_job_clear(&j);
	queue_job_clear(&j2);
}

/* release gives a job back without counting the attempt. */
static void
test_release(void **state)
{
	struct qtest		*t = *state;
	struct queue_job	 j;
	int64_t			 id;

	id = qtest_put(t->q, "a", "k", 5);
	qtest_claim1(t->q, "a", &j);
	assert_int_equal(queue_release(t->q, id, j.lease_gen, 5000), QUEUE_OK);
	queue_job_clear(&j);
	assert_int_equal(queue_get(t->q, id, &j), QUEUE_OK);
	assert_int_equal(j.state, QUEUE_QUEUED);
	assert_int_equal(j.attempts, 0);
	assert_true(j.run_after_ms == t->now + 5000);
	queue_job_clear(&j);
	assert_int_equal(qtest_claim_n(t->q, "a", 4, NULL), 0);
	t->now += 5000;
	qtest_claim1(t->q, "a", &j);
	assert_int_equal(j.attempts, 1);
	queue_job_clear(&j);
}

/* A claim by kind takes only those kinds of the lane, in claim order. */
static void
test_claim_kinds(void **state)
{
	struct qtest		*t = *state;
	struct queue_job	 j[4];
	const char		*ab[] = { "a", "b" }, *bad[] = { "x\x1fy" };
	const char		*prefix[] = { "tran" };
	int64_t			 a, b, c, other;
	size_t			 n, i;

	a = qtest_put(t->q, "mam", "a", 5);
	b = qtest_put(t->q, "mam", "b", 2);
	c = qtest_put(t->q, "mam", "transcode", 5);
	other = qtest_put(t->q, "elsewhere", "a", 5);
	assert_int_equal(queue_claim_kinds(t->q, "mam", prefix, 1, "w", 0, j,
	    4, &n), QUEUE_OK);
	assert_int_equal(n, 0);		/* whole names only */
	assert_int_equal(queue_claim_kinds(t->q, "mam", ab, 2, "w", 0, j, 4,
	    &n), QUEUE_OK);
	assert_int_equal(n, 2);
	assert_int_equal(j[0].id, b);	/* priority first */
	assert_int_equal(j[1].id, a);
	assert_int_equal(j[0].attempts, 1);
	assert_int_equal(qtest_events(t->q, a, QUEUE_RUNNING), 1);
	for (i = 0; i < n; i++)
		queue_job_clear(&j[i]);
	assert_int_equal(qtest_state(t->q, c), QUEUE_QUEUED);
	assert_int_equal(qtest_state(t->q, other), QUEUE_QUEUED);
	assert_int_equal(queue_claim_kinds(t->q, "mam", ab, 2, "w", 0, j, 4,
	    &n), QUEUE_OK);
	assert_int_equal(n, 0);
	assert_int_equal(queue_claim_kinds(t->q, "mam", bad, 1, "w", 0, j, 4,
	    &n), QUEUE_EINVAL);
	assert_int_equal(queue_claim_kinds(t->q, NULL, ab, 2, "w", 0, j, 4,
	    &n), QUEUE_EINVAL);
	assert_int_equal(queue_claim_kinds(t->q, "mam", ab, 0, "w", 0, j, 4,
	    &n), QUEUE_EINVAL);
}

/* A caller's rows and its jobs commit or roll back together. */
static void
test_caller_tx(void **state)
{
	struct qtest			*t = *state;
	struct queue_enqueue_req	 bad = { .lane = "a", .kind = "k",
	    .after_job = 4242 };
	struct store				*db = queue_db(t->q);
	int64_t				 id;

	assert_int_equal(store_exec(db, "CREATE TABLE assets (obj TEXT)"),
	    STORE_OK);
	assert_int_equal(queue_tx_begin(t->q), QUEUE_OK);
	assert_int_equal(store_exec(db, "INSERT INTO assets VALUES ('A')"),
	    STORE_OK);
	qtest_put(t->q, "a", "publish", 5);
	queue_tx_rollback(t->q);
	assert_int_equal(qtest_sql_int(t->q, "SELECT count(*) FROM assets"), 0);
	assert_int_equal(qtest_sql_int(t->q, "SELECT count(*) FROM jobs"), 0);
	assert_int_equal(qtest_sql_int(t->q, "SELECT count(*) FROM job_events"),
	    0);

	assert_int_equal(queue_tx_begin(t->q), QUEUE_OK);
	assert_int_equal(store_exec(db, "INSERT INTO assets VALUES ('B')"),
	    STORE_OK);
	id = qtest_put(t->q, "a", "publish", 5);
	/* A failed call inside rolls back only itself. */
	assert_int_equal(queue_enqueue(t->q, &bad, NULL), QUEUE_ENOTFOUND);
	qtest_put(t->q, "b", "publish", 5);
	assert_false(!store_in_tx(db));
	assert_int_equal(queue_tx_commit(t->q), QUEUE_OK);
	assert_true(!store_in_tx(db));
	assert_int_equal(qtest_sql_int(t->q, "SELECT count(*) FROM assets"), 1);
	assert_int_equal(qtest_sql_int(t->q, "SELECT count(*) FROM jobs"), 2);
	assert_int_equal(qtest_state(t->q, id), QUEUE_QUEUED);
	assert_int_equal(queue_tx_commit(t->q), QUEUE_EINVAL);

	/* A transaction the caller began on the connection itself. */
	assert_int_equal(store_begin(db, STORE_TX_WRITE), STORE_OK);
	qtest_put(t->q, "c", "publish", 5);
	assert_int_equal(queue_enqueue(t->q, &bad, NULL), QUEUE_ENOTFOUND);
	assert_false(!store_in_tx(db));
	assert_int_equal(store_exec(db, "ROLLBACK"),
	    STORE_OK);
	assert_int_equal(qtest_sql_int(t->q, "SELECT count(*) FROM jobs"), 2);
	assert_int_equal(store_exec(db, "BEGIN"), STORE_OK);
	qtest_put(t->q, "c", "publish", 5);
	assert_int_equal(store_exec(db, "COMMIT"),
	    STORE_OK);
	assert_int_equal(qtest_sql_int(t->q, "SELECT count(*) FROM jobs"), 3);
}

/*
 * complete_many: 16 at a time in one statement; where a lease was lost
 * (here: 2 jobs cancelled), each job gets its own answer and the others
 * still complete; the jobs chained after completed ones are released.
 */
static void
test_complete_many(void **state)
{
	struct qtest		*t = *state;
	struct queue_job	 jobs[20];
	int64_t			 ids[20], gens[20], after;
	int			 rcs[20];
	size_t			 n, i;

	for (i = 0; i < 20; i++)
		qtest_put(t->q, "a", "k", 5);
	after = qtest_sql_int(t->q, "SELECT max(id) FROM jobs") - 2;
	assert_int_equal(queue_enqueue(t->q, &(struct queue_enqueue_req){
	    .lane = "b", .kind = "k", .after_job = after }, NULL), QUEUE_OK);
	assert_int_equal(queue_claim(t->q, "a", "w", 0, jobs, 20, &n), QUEUE_OK);
	assert_int_equal(n, 20);
	for (i = 0; i < n; i++) {
		ids[i] = jobs[i].id;
		gens[i] = jobs[i].lease_gen;
		queue_job_clear(&jobs[i]);
	}
	assert_int_equal(queue_cancel(t->q, ids[3], NULL), QUEUE_OK);
	assert_int_equal(queue_cancel(t->q, ids[19], NULL), QUEUE_OK);
	assert_int_equal(queue_complete_many(t->q, ids, gens, n, rcs), QUEUE_OK);
	for (i = 0; i < n; i++) {
		assert_int_equal(rcs[i], i == 3 || i == 19 ? QUEUE_ELOST :
		    QUEUE_OK);
		assert_int_equal(qtest_state(t->q, ids[i]), i == 3 || i == 19 ?
		    QUEUE_CANCELLED : QUEUE_DONE);
	}
	assert_int_equal(qtest_claim_n(t->q, "b", 4, NULL), 1);
	/* All held: the fast path; again: every one lost. */
	assert_int_equal(queue_complete_many(t->q, ids, gens, 3, rcs), QUEUE_OK);
	assert_int_equal(rcs[0], QUEUE_ELOST);
	assert_int_equal(rcs[2], QUEUE_ELOST);
	assert_int_equal(qtest_events(t->q, ids[0], QUEUE_DONE), 1);
}

/* Bad arguments get QUEUE_EINVAL and a message, never a crash. */
static void
test_bad_input(void **state)
{
	struct qtest			*t = *state;
	struct queue_enqueue_req	 r = { .lane = "a", .kind = "k" };
	struct queue_job		 j;
	struct queue_policy		 p = { .jitter_pct = 101 };
	enum queue_state		 st;
	size_t				 n;

	r.priority = 10;
	assert_int_equal(queue_enqueue(t->q, &r, NULL), QUEUE_EINVAL);
	assert_non_null(strstr(queue_errmsg(t->q), "priority"));
	r.priority = -1;
	assert_int_equal(queue_enqueue(t->q, &r, NULL), QUEUE_EINVAL);
	r.priority = 0;
	r.lane = NULL;
	assert_int_equal(queue_enqueue(t->q, &r, NULL), QUEUE_EINVAL);
	r.lane = "a";
	r.payload_len = 3;
	assert_int_equal(queue_enqueue(t->q, &r, NULL), QUEUE_EINVAL);
	assert_int_equal(queue_claim(t->q, "a", "w", 0, &j, 0, &n),
	    QUEUE_EINVAL);
	assert_int_equal(queue_claim(t->q, "a", NULL, 0, &j, 1, &n),
	    QUEUE_EINVAL);
	assert_int_equal(queue_set_policy(t->q, "k", &p), QUEUE_EINVAL);
	assert_int_equal(queue_set_lane_limits(t->q, "a", 2, 0, 2),
	    QUEUE_EINVAL);
	assert_int_equal(queue_get(t->q, 77, &j), QUEUE_ENOTFOUND);
	assert_int_equal(queue_state_parse("failed", &st), 0);
	assert_int_equal(st, QUEUE_FAILED);
	assert_int_equal(queue_state_parse("bogus", &st), -1);
	assert_string_equal(queue_state_name(QUEUE_CANCELLED), "CANCELLED");
	assert_string_equal(queue_strerror(QUEUE_EFULL),
	    "disk full: nothing was stored");
	assert_int_equal(qtest_sql_int(t->q, "SELECT count(*) FROM jobs"), 0);
}

/* Payload bytes come back as they went in, zeros included. */
static void
test_payload(void **state)
{
	struct qtest			*t = *state;
	static const unsigned char	 bytes[] = { 0, 1, 2, 0, 0xff, '<' };
	struct queue_enqueue_req	 r = { .lane = "a", .kind = "k",
	    .payload = bytes, .payload_len = sizeof bytes, .priority = 5 };
	struct queue_job		 j;

	assert_int_equal(queue_enqueue(t->q, &r, NULL), QUEUE_OK);
	qtest_claim1(t->q, "a", &j);
	assert_int_equal(j.payload_len, sizeof bytes);
	assert_memory_equal(j.payload, bytes, sizeof bytes);
	queue_job_clear(&j);
	queue_job_clear(NULL);
}

/* What a checkpointer was asked. */
struct ckpt_seen {
	int	calls;
	int	frames;
};

static void
ckpt_seen_fn(void *arg, int frames)
{
	struct ckpt_seen	*s = arg;

	s->calls++;
	s->frames = frames;
}

/* One caller transaction of 16 pages in a table of ours. */
static void
ckpt_commit(struct queue *q)
{
	assert_int_equal(queue_tx_begin(q), QUEUE_OK);
	assert_int_equal(store_exec(queue_db(q), "INSERT INTO big VALUES "
	    "(zeroblob(16 * 4096))"), STORE_OK);
	assert_int_equal(queue_tx_commit(q), QUEUE_OK);
}

/* The sizes of the database file and of its WAL. */
static void
ckpt_sizes(const struct qtest *t, off_t *db, off_t *wal)
{
	struct stat	sb;
	char		path[PATH_MAX + 64];

	assert_int_equal(stat(t->path, &sb), 0);
	*db = sb.st_size;
	snprintf(path, sizeof path, "%s-wal", t->path);
	assert_int_equal(stat(path, &sb), 0);
	*wal = sb.st_size;
}

/*
 * With a checkpointer the connection asks it once per
 * QUEUE_CHECKPOINT_PAGES of WAL growth and copies nothing back itself,
 * until QUEUE_CHECKPOINT_CAP, where it checkpoints and the WAL starts
 * over. Without one it checkpoints at QUEUE_CHECKPOINT_PAGES.
 */
static void
test_checkpointer(void **state)
{
	struct qtest		*t = *state;
	struct ckpt_seen	 seen = { 0, 0 };
	const off_t		 frame = 4096 + 24;
	off_t			 db, wal, db0, wal0;
	int			 i, first;

	if (t->driver != STORE_SQLITE) {
		printf("SKIP: no write-ahead log to checkpoint on %s\n",
		    store_driver_name(t->driver));
		skip();
	}
	assert_int_equal(store_exec(queue_db(t->q), "CREATE TABLE big "
	    "(b BLOB)"), STORE_OK);
	ckpt_sizes(t, &db0, &wal0);
	queue_set_checkpointer(t->q, ckpt_seen_fn, &seen);
	for (i = 0; i < 200 && seen.calls == 0; i++)
		ckpt_commit(t->q);
	assert_int_equal(seen.calls, 1);
	assert_true(seen.frames >= QUEUE_CHECKPOINT_PAGES);
	first = seen.frames;
	ckpt_commit(t->q);
	assert_int_equal(seen.calls, 1);
	for (i = 0; i < 200 && seen.calls == 1; i++)
		ckpt_commit(t->q);
	assert_int_equal(seen.calls, 2);
	assert_true(seen.frames >= first + QUEUE_CHECKPOINT_PAGES);
	/* nothing was copied back: the blobs are in the WAL alone */
	ckpt_sizes(t, &db, &wal);
	assert_int_equal(db, db0);
	assert_true(wal >= seen.frames * frame);

	/* at the cap the connection checkpoints, and the WAL starts over */
	for (i = 0; i < 200; i++)
		ckpt_commit(t->q);
	ckpt_sizes(t, &db, &wal);
	assert_true(db >= db0 + (off_t)QUEUE_CHECKPOINT_CAP / 2 * 4096);
	assert_true(wal <= (QUEUE_CHECKPOINT_CAP + 32) * frame);

	/*
	 * Without a checkpointer, the connection checkpoints itself: 150
	 * commits of 16 pages, and the WAL file never grows past what it
	 * reached above.
	 */
	queue_set_checkpointer(t->q, NULL, NULL);
	first = seen.calls;
	for (i = 0; i < 150; i++)
		ckpt_commit(t->q);
	assert_int_equal(seen.calls, first);
	ckpt_sizes(t, &db0, &wal0);
	assert_true(wal0 <= wal);
	assert_true(db0 > db);
}

/* Wait (at most 20 s) for q's wake-up fd; then what queue_woken says. */
static int
wait_woken(struct queue *q)
{
	struct pollfd	pfd;
	int		n, i;

	for (i = 0; i < 200; i++) {
		pfd.fd = queue_wake_fd(q);
		pfd.events = POLLIN;
		assert_true(pfd.fd >= 0);
		assert_true(poll(&pfd, 1, 100) >= 0);
		if ((n = queue_woken(q)) != 0)
			return n;
	}
	return 0;
}

/*
 * The owner's wake-up: jobs enqueued by another connection, or made due
 * again by an operator, wake it on PostgreSQL; SQLite has nothing to watch.
 */
static void
test_wake(void **state)
{
	struct qtest		*t = *state;
	struct queue		*other;
	struct queue_job	 j;
	int64_t			 id;

	if (t->driver == STORE_SQLITE) {
		assert_int_equal(queue_wake_fd(t->q), -1);
		assert_int_equal(queue_woken(t->q), 0);
		return;
	}
	assert_true(queue_wake_fd(t->q) >= 0);
	assert_int_equal(queue_woken(t->q), 0);
	assert_int_equal(qtest_open(t, &other, true), QUEUE_OK);
	id = qtest_put(other, "a", "publish", 5);
	assert_int_equal(wait_woken(t->q), 1);
	assert_int_equal(queue_woken(t->q), 0);

	/* a claim or a completion does not wake; a requeue does */
	qtest_claim1(t->q, "a", &j);
	assert_int_equal(queue_fail(other, id, j.lease_gen, "nack", true),
	    QUEUE_OK);
	queue_job_clear(&j);
	assert_int_equal(queue_requeue(other, id, 1, "retry by hand"),
	    QUEUE_OK);
	assert_int_equal(wait_woken(t->q), 1);
	queue_close(other);
}

/*
 * PostgreSQL: the queue's session ends (a restart, a failover): the call
 * that finds out fails, the next one works in a new session, with the
 * kind's policy loaded there again.
 */
static void
test_lost_session(void **state)
{
	struct qtest		*t = *state;
	struct queue_policy	 p = { .lease_ms = 7000 };
	struct store_conf	 c = { STORE_POSTGRESQL, NULL, t->pg.dsn };
	struct store		*adm;
	struct queue_job	 j;
	size_t			 n = 0;
	char			*err = NULL;
	int			 rc;

	if (t->driver != STORE_POSTGRESQL) {
		printf("SKIP: PostgreSQL only: a server session that ends\n");
		skip();
	}
	assert_int_equal(queue_set_policy(t->q, "publish", &p), QUEUE_OK);
	qtest_put(t->q, "a", "publish", 5);
	assert_int_equal(store_open(&adm, &c, 0, &err), STORE_OK);
	assert_int_equal(store_exec(adm, "SELECT pg_terminate_backend(pid) "
	    "FROM pg_stat_activity WHERE datname = current_database() AND "
	    "pid <> pg_backend_pid()"), STORE_OK);
	store_close(adm);
	rc = queue_claim(t->q, "a", "w1", 0, &j, 1, &n);
	if (rc != QUEUE_OK) {
		assert_int_equal(rc, QUEUE_EIO);
		assert_non_null(strstr(queue_errmsg(t->q), "lost"));
		qtest_claim1(t->q, "a", &j);
	} else
		assert_int_equal(n, 1);
	assert_int_equal(j.lease_until_ms, t->now + 7000);
	assert_int_equal(queue_complete(t->q, j.id, j.lease_gen), QUEUE_OK);
	queue_job_clear(&j);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_open_schema,
		    qtest_setup, qtest_teardown),
		cmocka_unit_test_setup_teardown(test_life_cycle,
		    qtest_setup, qtest_teardown),
		cmocka_unit_test_setup_teardown(test_history_fields,
		    qtest_setup, qtest_teardown),
		cmocka_unit_test_setup_teardown(test_fencing,
		    qtest_setup, qtest_teardown),
		cmocka_unit_test_setup_teardown(test_release,
		    qtest_setup, qtest_teardown),
		cmocka_unit_test_setup_teardown(test_claim_kinds,
		    qtest_setup, qtest_teardown),
		cmocka_unit_test_setup_teardown(test_caller_tx,
		    qtest_setup, qtest_teardown),
		cmocka_unit_test_setup_teardown(test_complete_many,
		    qtest_setup, qtest_teardown),
		cmocka_unit_test_setup_teardown(test_bad_input,
		    qtest_setup, qtest_teardown),
		cmocka_unit_test_setup_teardown(test_wake, qtest_setup,
		    qtest_teardown),
		cmocka_unit_test_setup_teardown(test_lost_session, qtest_setup,
		    qtest_teardown),
		cmocka_unit_test_setup_teardown(test_payload,
		    qtest_setup, qtest_teardown),
		cmocka_unit_test_setup_teardown(test_checkpointer,
		    qtest_setup, qtest_teardown),
	};

	return cmocka_run_group_tests_name("queue_basic", tests, NULL, NULL);
}
