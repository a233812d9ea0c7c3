/*
 * store: the PostgreSQL backend (store/pg.c) on a database of its own on
 * the server of $MOSGW_PG_DSN; skipped, saying why, without one.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store/store.h"
#include "store/tests/pgdb.h"

struct fix {
	struct pgdb	 db;
	struct store	*s;
};

static char	pg_missing[300];

/* A connection to the fixture's database (flags as store_open). */
static struct store *
pg_connect(struct fix *f, int flags)
{
	struct store_conf	 c = { STORE_POSTGRESQL, NULL, f->db.dsn };
	struct store		*s;
	char			*err = NULL;

	if (store_open(&s, &c, flags, &err) != STORE_OK) {
		print_error("store_open: %s\n", err != NULL ? err : "?");
		free(err);
		return NULL;
	}
	return s;
}

static int
setup(void **state)
{
	struct fix	*f;

	if (pg_missing[0] != '\0')
		return 0;
	if ((f = calloc(1, sizeof *f)) == NULL)
		return -1;
	if (pgdb_create(&f->db, pg_missing, sizeof pg_missing) != 0) {
		free(f);
		return 0;
	}
	if ((f->s = pg_connect(f, 0)) == NULL) {
		pgdb_drop(&f->db);
		free(f);
		return -1;
	}
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fix	*f = *state;

	if (f == NULL)
		return 0;
	store_close(f->s);
	pgdb_drop(&f->db);
	free(f);
	return 0;
}

/* The fixture, or the test is skipped (no server). */
static struct fix *
fix(void **state)
{
	if (*state == NULL) {
		printf("SKIP: no PostgreSQL: %s\n", pg_missing);
		skip();
	}
	return *state;
}

/* One value of a one-row query, as text (static; "NULL" for NULL). */
static const char *
q1(struct store *s, const char *sql)
{
	static char		 buf[256];
	struct store_stmt	*st;
	int			 rc;

	if (store_prepare(s, sql, 0, &st) != STORE_OK)
		return store_errmsg(s);
	if ((rc = store_step(st)) == STORE_ROW)
		snprintf(buf, sizeof buf, "%s", store_column_is_null(st, 0) ?
		    "NULL" : store_column_text(st, 0));
	else
		snprintf(buf, sizeof buf, "step %d: %s", rc, store_errmsg(s));
	store_finalize(st);
	return buf;
}

/* Prepare, bind every type, step, read every type back. */
static void
test_roundtrip(void **state)
{
	struct fix		*f = fix(state);
	struct store_stmt	*st;
	static const unsigned char blob[] = { 0, 1, 0xff, 0, '\\', '\'' };
	char			 text[16];

	assert_int_equal(store_driver(f->s), STORE_POSTGRESQL);
	assert_null(store_sqlite(f->s));
	assert_int_equal(store_exec(f->s, "CREATE TABLE t(k serial, i bigint, "
	    "b bigint, s text, x bytea, n text); CREATE TABLE u(v int)"),
	    STORE_OK);
	assert_int_equal(store_prepare(f->s, "INSERT INTO t (i, b, s, x, n) "
	    "VALUES (?1, ?2, ?3, ?4, ?5)", STORE_KEEP, &st), STORE_OK);
	assert_ptr_equal(store_stmt_store(st), f->s);
	snprintf(text, sizeof text, "héllo'x");
	store_bind_int(st, 1, -7);
	store_bind_int64(st, 2, INT64_C(1) << 40);
	assert_int_equal(store_bind_text_copy(st, 3, text, -1), STORE_OK);
	memset(text, 0, sizeof text);	/* the copy was bound */
	store_bind_blob(st, 4, blob, (int)sizeof blob);
	store_bind_null(st, 5);
	assert_int_equal(store_step(st), STORE_DONE);
	assert_int_equal(store_changes(f->s), 1);
	/* reset clears the bindings: the next row is all NULL */
	assert_int_equal(store_reset(st), STORE_OK);
	assert_int_equal(store_step(st), STORE_DONE);
	/* a text by length (not NUL-ended there), an empty blob */
	assert_int_equal(store_reset(st), STORE_OK);
	store_bind_text(st, 3, "abcdef", 3);
	store_bind_blob(st, 4, "", 0);
	assert_int_equal(store_step(st), STORE_DONE);
	store_finalize(st);

	assert_int_equal(store_prepare(f->s, "SELECT i, b, s, x, n FROM t "
	    "ORDER BY k", 0, &st), STORE_OK);
	assert_int_equal(store_column_count(st), 5);	/* before a step */
	assert_string_equal(store_column_name(st, 2), "s");
	assert_int_equal(store_step(st), STORE_ROW);
	assert_int_equal(store_column_int(st, 0), -7);
	assert_int_equal(store_column_int64(st, 1), INT64_C(1) << 40);
	assert_string_equal(store_column_text(st, 2), "héllo'x");
	assert_int_equal(store_column_bytes(st, 2), (int)strlen("héllo'x"));
	assert_int_equal(store_column_bytes(st, 3), (int)sizeof blob);
	assert_memory_equal(store_column_blob(st, 3), blob, sizeof blob);
	assert_true(store_column_is_null(st, 4));
	assert_false(store_column_is_null(st, 0));
	assert_null(store_column_text(st, 4));
	assert_int_equal(store_step(st), STORE_ROW);
	assert_true(store_column_is_null(st, 0));
	assert_int_equal(store_column_int64(st, 0), 0);
	assert_null(store_column_blob(st, 3));
	assert_int_equal(store_step(st), STORE_ROW);
	assert_string_equal(store_column_text(st, 2), "abc");
	assert_false(store_column_is_null(st, 3));
	assert_int_equal(store_column_bytes(st, 3), 0);
	assert_int_equal(store_step(st), STORE_DONE);
	/* stepping again runs it again */
	assert_int_equal(store_step(st), STORE_ROW);
	store_finalize(st);
	store_finalize(NULL);
}

/* Placeholders: ?, ?NNN, gaps, and ? where it is not one. */
static void
test_placeholders(void **state)
{
	struct fix		*f = fix(state);
	struct store_stmt	*st;
	char			 many[700];
	int			 i;

	/* ?3 and ?1 used, ?2 bound but unused (as SQLite allows) */
	assert_int_equal(store_prepare(f->s, "SELECT ?3 || '?' || \"?\" || "
	    "?1 || $$?1$$ -- ? not a parameter\n FROM (SELECT 'q' AS \"?\") "
	    "x /* ?9 */", 0, &st), STORE_OK);
	store_bind_text(st, 1, "a", -1);
	assert_int_equal(store_bind_int(st, 2, 5), STORE_OK);
	store_bind_text(st, 3, "c", -1);
	assert_int_equal(store_bind_int(st, 4, 5), STORE_MISMATCH);
	assert_int_equal(store_bind_int(st, 0, 5), STORE_MISMATCH);
	assert_int_equal(store_step(st), STORE_ROW);
	assert_string_equal(store_column_text(st, 0), "c?qa?1");
	store_finalize(st);

	/* bare ? count up from the highest so far */
	assert_int_equal(store_prepare(f->s, "SELECT 0 + ? + ?, 0 + ?5 - ?", 0,
	    &st),
	    STORE_OK);
	store_bind_int(st, 1, 1);
	store_bind_int(st, 2, 2);
	store_bind_int(st, 5, 10);
	store_bind_int(st, 6, 4);
	assert_int_equal(store_step(st), STORE_ROW);
	assert_int_equal(store_column_int(st, 0), 3);
	assert_int_equal(store_column_int(st, 1), 6);
	store_finalize(st);

	assert_int_equal(store_prepare(f->s, "SELECT ?0", 0, &st),
	    STORE_ERROR);
	assert_null(st);

	/* 300 bare ?: "$300," is 2.5 times as long as "?," */
	strcpy(many, "SELECT coalesce(?");
	for (i = 1; i < 300; i++)
		strcat(many, ",?");
	strcat(many, ")");
	assert_int_equal(store_prepare(f->s, many, 0, &st), STORE_OK);
	store_bind_text(st, 300, "last", -1);
	assert_int_equal(store_step(st), STORE_ROW);
	assert_string_equal(store_column_text(st, 0), "last");
	store_finalize(st);
}

/* Booleans and numbers read as SQLite would give them. */
static void
test_types(void **state)
{
	struct fix		*f = fix(state);
	struct store_stmt	*st;

	assert_int_equal(store_prepare(f->s, "SELECT true, false, 2.7::float8, "
	    "'12abc', -3.5::numeric, 9223372036854775807", 0, &st), STORE_OK);
	assert_int_equal(store_step(st), STORE_ROW);
	assert_int_equal(store_column_int(st, 0), 1);
	assert_string_equal(store_column_text(st, 0), "1");
	assert_int_equal(store_column_int(st, 1), 0);
	assert_string_equal(store_column_text(st, 1), "0");
	assert_int_equal(store_column_int(st, 2), 2);
	assert_int_equal(store_column_int(st, 3), 12);
	assert_int_equal(store_column_int(st, 4), -3);
	assert_int_equal(store_column_int64(st, 5), INT64_MAX);
	store_finalize(st);
}

/* Transactions: begin, in_tx, commit, rollback; an error aborts one. */
static void
test_tx(void **state)
{
	struct fix	*f = fix(state);

	assert_int_equal(store_exec(f->s, "CREATE TABLE t(v int UNIQUE)"),
	    STORE_OK);
	assert_false(store_in_tx(f->s));
	assert_int_equal(store_begin(f->s, STORE_TX_WRITE), STORE_OK);
	assert_true(store_in_tx(f->s));
	assert_int_equal(store_begin(f->s, STORE_TX_WRITE), STORE_ERROR);
	assert_int_equal(store_exec(f->s, "INSERT INTO t VALUES (1)"),
	    STORE_OK);
	assert_int_equal(store_commit(f->s), STORE_OK);
	assert_false(store_in_tx(f->s));
	assert_int_equal(store_begin(f->s, STORE_TX_READ), STORE_OK);
	assert_int_equal(store_exec(f->s, "INSERT INTO t VALUES (2)"),
	    STORE_OK);
	assert_int_equal(store_rollback(f->s), STORE_OK);
	assert_string_equal(q1(f->s, "SELECT count(*) || ':' || sum(v) "
	    "FROM t"), "1:1");
	/* a transaction begun by SQL text ends by store_rollback too */
	assert_int_equal(store_exec(f->s, "BEGIN"), STORE_OK);
	assert_true(store_in_tx(f->s));
	assert_int_equal(store_rollback(f->s), STORE_OK);
	assert_false(store_in_tx(f->s));
	assert_int_equal(store_rollback(f->s), STORE_ERROR);

	/* an error aborts the transaction: its COMMIT fails with that code */
	assert_int_equal(store_begin(f->s, STORE_TX_WRITE), STORE_OK);
	assert_int_equal(store_exec(f->s, "INSERT INTO t VALUES (3)"),
	    STORE_OK);
	assert_int_equal(store_exec(f->s, "INSERT INTO t VALUES (1)"),
	    STORE_CONSTRAINT);
	assert_true(store_in_tx(f->s));
	assert_int_equal(store_exec(f->s, "INSERT INTO t VALUES (4)"),
	    STORE_ERROR);
	assert_int_equal(store_commit(f->s), STORE_CONSTRAINT);
	assert_non_null(strstr(store_errmsg(f->s), "rolled back"));
	assert_false(store_in_tx(f->s));
	assert_string_equal(q1(f->s, "SELECT count(*) FROM t"), "1");
}

/* Writers are serialised by the advisory lock; a wait past the busy
 * timeout is STORE_BUSY and leaves no transaction. */
static void
test_writers(void **state)
{
	struct fix	*f = fix(state);
	struct store	*b;

	assert_non_null(b = pg_connect(f, 0));
	assert_int_equal(store_busy_timeout(b, 50), STORE_OK);
	assert_int_equal(store_begin(f->s, STORE_TX_WRITE), STORE_OK);
	/* readers are not held up */
	assert_int_equal(store_begin(b, STORE_TX_READ), STORE_OK);
	assert_int_equal(store_commit(b), STORE_OK);
	assert_int_equal(store_begin(b, STORE_TX_WRITE), STORE_BUSY);
	assert_int_equal(store_errcode(b), STORE_BUSY);
	assert_non_null(strstr(store_errmsg(b), "lock"));
	assert_false(store_in_tx(b));
	assert_int_equal(store_commit(f->s), STORE_OK);
	assert_int_equal(store_begin(b, STORE_TX_WRITE), STORE_OK);
	assert_int_equal(store_commit(b), STORE_OK);
	store_close(b);
}

/* Errors map to STORE_* codes with the server's words. */
static void
test_errors(void **state)
{
	struct fix		*f = fix(state);
	struct store_stmt	*st = (struct store_stmt *)f;
	struct store		*ro, *other;
	struct store_conf	 c = { STORE_POSTGRESQL, NULL,
				    "host=127.0.0.1 port=1 connect_timeout=5" };
	char			*err = NULL;

	assert_int_equal(store_prepare(f->s, "SELEKT 1", 0, &st),
	    STORE_ERROR);
	assert_null(st);
	assert_non_null(strstr(store_errmsg(f->s), "syntax error"));
	assert_int_equal(store_errcode(f->s), STORE_ERROR);
	/* a missing table shows at prepare, as on SQLite */
	assert_int_equal(store_prepare(f->s, "SELECT * FROM nosuch", 0, &st),
	    STORE_ERROR);
	assert_non_null(strstr(store_errmsg(f->s), "nosuch"));

	assert_int_equal(store_exec(f->s, "CREATE TABLE k(v int UNIQUE)"),
	    STORE_OK);
	assert_int_equal(store_exec(f->s, "INSERT INTO k VALUES (1)"),
	    STORE_OK);
	assert_int_equal(store_prepare(f->s, "INSERT INTO k VALUES (?1)", 0,
	    &st), STORE_OK);
	store_bind_int(st, 1, 1);
	assert_int_equal(store_step(st), STORE_CONSTRAINT);
	assert_int_equal(store_errcode(f->s), STORE_CONSTRAINT);
	assert_non_null(strstr(store_errmsg(f->s), "23505"));
	store_reset(st);
	store_bind_text(st, 1, "one", -1);
	assert_int_equal(store_step(st), STORE_MISMATCH);
	store_reset(st);
	assert_int_equal(store_bind_text(st, 1, "a\0b", 3), STORE_MISMATCH);
	store_finalize(st);

	assert_non_null(ro = pg_connect(f, STORE_OPEN_READONLY));
	assert_int_equal(store_exec(ro, "INSERT INTO k VALUES (2)"),
	    STORE_READONLY);
	store_close(ro);

	assert_int_equal(store_open(&other, &c, 0, &err), STORE_CANTOPEN);
	assert_null(other);
	assert_non_null(err);
	assert_non_null(strstr(err, "PostgreSQL"));
	free(err);
	/* a password in the dsn is refused before any connection */
	c.dsn = "host=127.0.0.1 password=secret";
	assert_int_equal(store_open(&other, &c, 0, &err), STORE_CANTOPEN);
	assert_null(strstr(err, "secret"));
	free(err);
}

/* Terminate a connection's session from another one. */
static void
kill_session(struct fix *f, struct store *victim)
{
	char	sql[96];

	snprintf(sql, sizeof sql, "SELECT pg_terminate_backend(%s)",
	    q1(victim, "SELECT pg_backend_pid()"));
	assert_string_equal(q1(f->s, sql), "1");
}

/* A lost session is STORE_LOST once; the next call connects again and
 * prepared statements are prepared again. */
static void
test_reconnect(void **state)
{
	struct fix		*f = fix(state);
	struct store		*v;
	struct store_stmt	*st;
	unsigned		 gen;

	assert_int_equal(store_exec(f->s, "CREATE TABLE t(v int)"), STORE_OK);
	assert_non_null(v = pg_connect(f, 0));
	assert_int_equal(store_prepare(v, "SELECT count(*) FROM t", STORE_KEEP,
	    &st), STORE_OK);
	gen = store_session(v);
	kill_session(f, v);
	assert_int_equal(store_step(st), STORE_LOST);
	assert_int_equal(store_errcode(v), STORE_LOST);
	assert_false(store_in_tx(v));
	/* the session counter connects again and says it is a new one */
	assert_int_equal(store_session(v), gen + 1);
	assert_int_equal(store_session(v), gen + 1);
	store_reset(st);
	assert_int_equal(store_step(st), STORE_ROW);
	assert_int_equal(store_column_int(st, 0), 0);
	store_reset(st);

	/* inside a transaction: lost until rolled back, then usable */
	assert_int_equal(store_begin(v, STORE_TX_WRITE), STORE_OK);
	assert_int_equal(store_exec(v, "INSERT INTO t VALUES (1)"), STORE_OK);
	kill_session(f, v);
	assert_int_equal(store_exec(v, "INSERT INTO t VALUES (2)"),
	    STORE_LOST);
	assert_true(store_in_tx(v));
	assert_int_equal(store_exec(v, "INSERT INTO t VALUES (3)"),
	    STORE_LOST);
	assert_int_equal(store_rollback(v), STORE_OK);
	assert_false(store_in_tx(v));
	/* ended by SQL text too */
	assert_int_equal(store_begin(v, STORE_TX_WRITE), STORE_OK);
	kill_session(f, v);
	assert_int_equal(store_exec(v, "SELECT 1"), STORE_LOST);
	assert_true(store_in_tx(v));
	assert_int_equal(store_exec(v, "ROLLBACK"), STORE_OK);
	assert_false(store_in_tx(v));
	assert_int_equal(store_step(st), STORE_ROW);
	assert_int_equal(store_column_int(st, 0), 0);
	store_finalize(st);
	store_close(v);
}

/* Milliseconds of the monotonic clock. */
static int64_t
now_ms(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * A server that stops answering (its process stopped, as a network cut
 * that leaves the connection open): STORE_LOST once the lock wait and the
 * answer timeout have passed, then a new session when it answers again.
 */
static void
test_silent(void **state)
{
	struct fix	*f = fix(state);
	struct store	*v;
	int64_t		 t0, waited;
	unsigned	 gen;
	pid_t		 pid;
	int		 rc;

	assert_non_null(v = pg_connect(f, 0));
	assert_int_equal(store_busy_timeout(v, 100), STORE_OK);
	assert_int_equal(store_answer_timeout(v, 400), STORE_OK);
	assert_int_equal(store_answer_timeout(v, 0), STORE_MISMATCH);
	gen = store_session(v);
	pid = (pid_t)atol(q1(v, "SELECT pg_backend_pid()"));
	if (kill(pid, SIGSTOP) != 0) {
		printf("SKIP: cannot stop the server's process %ld: %s\n",
		    (long)pid, strerror(errno));
		store_close(v);
		skip();
	}
	t0 = now_ms();
	rc = store_exec(v, "SELECT 1");
	waited = now_ms() - t0;
	kill(pid, SIGCONT);
	assert_int_equal(rc, STORE_LOST);
	assert_non_null(strstr(store_errmsg(v), "no answer in time"));
	assert_true(waited >= 500);
	assert_int_equal(store_exec(v, "SELECT 1"), STORE_OK);
	assert_int_equal(store_session(v), gen + 1);
	store_close(v);
}

/* Wait (at most 20 s) until fd is readable; then what store_notified says. */
static int
wait_notified(struct store *s)
{
	struct pollfd	pfd = { store_notify_fd(s), POLLIN, 0 };
	int		n, i;

	for (i = 0; i < 200; i++) {
		assert_true(pfd.fd >= 0);
		if (poll(&pfd, 1, 100) < 0)
			return -2;
		if ((n = store_notified(s)) != 0)
			return n;
		pfd.fd = store_notify_fd(s);
	}
	return 0;
}

/* LISTEN/NOTIFY: the fd wakes the listener; a reconnection renews it. */
static void
test_notify(void **state)
{
	struct fix	*f = fix(state);
	struct store	*l;

	assert_non_null(l = pg_connect(f, 0));
	assert_int_equal(store_listen(l, "Jobs"), STORE_MISMATCH);
	assert_int_equal(store_listen(l, "jobs; drop"), STORE_MISMATCH);
	assert_int_equal(store_listen(l, "mosgw_jobs"), STORE_OK);
	assert_int_equal(store_notified(l), 0);
	assert_int_equal(store_exec(f->s, "NOTIFY mosgw_jobs; NOTIFY other"),
	    STORE_OK);
	assert_int_equal(wait_notified(l), 1);
	assert_int_equal(store_notified(l), 0);
	/* one per transaction for a channel and payload */
	assert_int_equal(store_exec(f->s, "BEGIN; NOTIFY mosgw_jobs; "
	    "NOTIFY mosgw_jobs; COMMIT"), STORE_OK);
	assert_int_equal(wait_notified(l), 1);

	/* the session ends: the fd wakes, the listener connects again */
	kill_session(f, l);
	assert_true(wait_notified(l) >= 1);
	assert_true(store_notify_fd(l) >= 0);
	assert_int_equal(store_exec(f->s, "NOTIFY mosgw_jobs"), STORE_OK);
	assert_int_equal(wait_notified(l), 1);
	store_close(l);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_roundtrip, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_placeholders, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_types, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tx, setup, teardown),
		cmocka_unit_test_setup_teardown(test_writers, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reconnect, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_notify, setup, teardown),
		cmocka_unit_test_setup_teardown(test_silent, setup, teardown),
	};

	return cmocka_run_group_tests_name("store_pg", tests, NULL, NULL);
}
