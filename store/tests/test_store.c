/* store: driver names, dsn checks, and the SQLite backend through store.h. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/store.h"

struct fix {
	char		 dir[256];
	char		 path[300];
	struct store	*s;
};

static int
setup(void **state)
{
	const char	*base = getenv("MOSGW_TMP");
	struct fix	*f;
	char		*err = NULL;

	if (base == NULL || *base == '\0')
		base = "/tmp";
	if ((f = calloc(1, sizeof *f)) == NULL)
		return -1;
	snprintf(f->dir, sizeof f->dir, "%s/store-test.XXXXXX", base);
	if (mkdtemp(f->dir) == NULL) {
		free(f);
		return -1;
	}
	snprintf(f->path, sizeof f->path, "%s/t.db", f->dir);
	if (store_open_file(&f->s, f->path, STORE_OPEN_CREATE, &err) !=
	    STORE_OK) {
		print_error("store_open_file: %s\n", err != NULL ? err : "?");
		free(err);
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
	char		 p[320];

	store_close(f->s);
	unlink(f->path);
	snprintf(p, sizeof p, "%s-journal", f->path);
	unlink(p);
	rmdir(f->dir);
	free(f);
	return 0;
}

/* Driver names parse and print; only sqlite is built in here. */
static void
test_drivers(void **state)
{
	enum store_driver	d;

	(void)state;
	assert_int_equal(store_driver_parse("sqlite", &d), 0);
	assert_int_equal(d, STORE_SQLITE);
	assert_int_equal(store_driver_parse("postgresql", &d), 0);
	assert_int_equal(d, STORE_POSTGRESQL);
	assert_int_equal(store_driver_parse("mysql", &d), -1);
	assert_int_equal(store_driver_parse("SQLite", &d), -1);
	assert_string_equal(store_driver_name(STORE_POSTGRESQL), "postgresql");
	assert_true(store_driver_available(STORE_SQLITE));
}

/* A driver that is not built in is refused with words saying so. */
static void
test_driver_missing(void **state)
{
	struct store_conf	 c = { STORE_POSTGRESQL, NULL, "dbname=x" };
	struct store		*s = (struct store *)state;
	char			*err = NULL;

	(void)state;
	if (store_driver_available(STORE_POSTGRESQL))
		skip();
	assert_int_equal(store_open(&s, &c, 0, &err), STORE_CANTOPEN);
	assert_null(s);
	assert_non_null(err);
	assert_non_null(strstr(err, "postgresql is not built into"));
	free(err);
}

/* Connection strings: both forms accepted, a password refused. */
static void
test_dsn_check(void **state)
{
	static const char *const ok[] = {
		"dbname=mosgw",
		"host=/run/postgresql dbname=mosgw user=mosgw",
		"host = 127.0.0.1 port=5432 dbname='my db' application_name=x",
		"passfile=/etc/mosgw/pgpass dbname=mosgw",
		"postgresql://mosgw@db.example/mosgw?sslmode=require",
		"postgres:///mosgw?host=/tmp",
		"postgresql://host1:5432,host2:5433/mosgw",
	};
	static const char *const password[] = {
		"dbname=mosgw password=secret",
		"password = 's e c'",
		"postgresql://mosgw:secret@db/mosgw",
		"postgresql://db/mosgw?sslmode=disable&password=secret",
		"postgresql://db/mosgw?pass%77ord=secret",
	};
	static const char *const bad[] = {
		"", "   ", "dbname", "=x", "dbname='unterminated",
	};
	const char	*why;
	size_t		 i;

	(void)state;
	assert_non_null(store_dsn_check(NULL));
	for (i = 0; i < sizeof ok / sizeof *ok; i++) {
		why = store_dsn_check(ok[i]);
		if (why != NULL)
			fail_msg("%s: %s", ok[i], why);
	}
	for (i = 0; i < sizeof password / sizeof *password; i++) {
		why = store_dsn_check(password[i]);
		assert_non_null(why);
		assert_non_null(strstr(why, "password"));
	}
	for (i = 0; i < sizeof bad / sizeof *bad; i++)
		assert_non_null(store_dsn_check(bad[i]));
}

/* Redaction keeps everything but the passwords. */
static void
test_dsn_redact(void **state)
{
	static const char *const cases[][2] = {
		{ "dbname=a password=secret user=b",
		    "dbname=a password=* user=b" },
		{ "password='x y\\' z' host=h", "password=* host=h" },
		{ "postgresql://u:secret@h/db", "postgresql://u:*@h/db" },
		{ "postgresql://u@h/db?password=secret&sslmode=require",
		    "postgresql://u@h/db?password=*&sslmode=require" },
		{ "dbname=plain", "dbname=plain" },
	};
	char	*r;
	size_t	 i;

	(void)state;
	for (i = 0; i < sizeof cases / sizeof *cases; i++) {
		r = store_dsn_redact(cases[i][0]);
		assert_non_null(r);
		assert_string_equal(r, cases[i][1]);
		free(r);
	}
}

/* Prepare, bind every type, step, read every type back. */
static void
test_roundtrip(void **state)
{
	struct fix		*f = *state;
	struct store_stmt	*st;
	static const unsigned char blob[] = { 0, 1, 0xff, 0 };
	char			 text[16];

	assert_int_equal(store_driver(f->s), STORE_SQLITE);
	assert_non_null(store_sqlite(f->s));
	assert_int_equal(store_exec(f->s, "CREATE TABLE t(i INTEGER, "
	    "b INTEGER, s TEXT, x BLOB, n TEXT); CREATE TABLE u(v)"),
	    STORE_OK);
	assert_int_equal(store_prepare(f->s, "INSERT INTO t VALUES "
	    "(?1, ?2, ?3, ?4, ?5)", STORE_KEEP, &st), STORE_OK);
	assert_ptr_equal(store_stmt_store(st), f->s);
	snprintf(text, sizeof text, "héllo");
	store_bind_int(st, 1, -7);
	store_bind_int64(st, 2, INT64_C(1) << 40);
	store_bind_text_copy(st, 3, text, -1);
	memset(text, 0, sizeof text);	/* the copy was bound */
	store_bind_blob(st, 4, blob, (int)sizeof blob);
	store_bind_null(st, 5);
	assert_int_equal(store_step(st), STORE_DONE);
	assert_int_equal(store_changes(f->s), 1);
	/* reset clears the bindings: the next row is all NULL */
	assert_int_equal(store_reset(st), STORE_OK);
	assert_int_equal(store_step(st), STORE_DONE);
	store_finalize(st);

	assert_int_equal(store_prepare(f->s, "SELECT i, b, s, x, n FROM t "
	    "ORDER BY rowid", 0, &st), STORE_OK);
	assert_int_equal(store_column_count(st), 5);
	assert_string_equal(store_column_name(st, 2), "s");
	assert_int_equal(store_step(st), STORE_ROW);
	assert_int_equal(store_column_int(st, 0), -7);
	assert_int_equal(store_column_int64(st, 1), INT64_C(1) << 40);
	assert_string_equal(store_column_text(st, 2), "héllo");
	assert_int_equal(store_column_bytes(st, 3), (int)sizeof blob);
	assert_memory_equal(store_column_blob(st, 3), blob, sizeof blob);
	assert_true(store_column_is_null(st, 4));
	assert_false(store_column_is_null(st, 0));
	assert_null(store_column_text(st, 4));
	assert_int_equal(store_step(st), STORE_ROW);
	assert_true(store_column_is_null(st, 0));
	assert_int_equal(store_column_int64(st, 0), 0);
	assert_int_equal(store_step(st), STORE_DONE);
	store_finalize(st);
	store_finalize(NULL);
}

/* Transactions: begin, in_tx, commit and rollback keep or undo work. */
static void
test_tx(void **state)
{
	struct fix		*f = *state;
	struct store_stmt	*st;

	assert_int_equal(store_exec(f->s, "CREATE TABLE t(v)"), STORE_OK);
	assert_false(store_in_tx(f->s));
	assert_int_equal(store_begin(f->s, STORE_TX_WRITE), STORE_OK);
	assert_true(store_in_tx(f->s));
	assert_int_equal(store_exec(f->s, "INSERT INTO t VALUES (1)"),
	    STORE_OK);
	assert_int_equal(store_commit(f->s), STORE_OK);
	assert_false(store_in_tx(f->s));
	assert_int_equal(store_begin(f->s, STORE_TX_READ), STORE_OK);
	assert_int_equal(store_exec(f->s, "INSERT INTO t VALUES (2)"),
	    STORE_OK);
	assert_int_equal(store_rollback(f->s), STORE_OK);
	assert_int_equal(store_prepare(f->s, "SELECT count(*), sum(v) FROM t",
	    0, &st), STORE_OK);
	assert_int_equal(store_step(st), STORE_ROW);
	assert_int_equal(store_column_int(st, 0), 1);
	assert_int_equal(store_column_int(st, 1), 1);
	store_finalize(st);
	/* a transaction begun by SQL text ends by store_rollback too */
	assert_int_equal(store_exec(f->s, "BEGIN"), STORE_OK);
	assert_true(store_in_tx(f->s));
	assert_int_equal(store_rollback(f->s), STORE_OK);
	assert_false(store_in_tx(f->s));
}

/* Errors map to STORE_* codes with SQLite's words. */
static void
test_errors(void **state)
{
	struct fix		*f = *state;
	struct store_stmt	*st = (struct store_stmt *)f;
	struct store		*other, *ro;
	char			*err = NULL;

	assert_int_equal(store_prepare(f->s, "SELEKT 1", 0, &st),
	    STORE_ERROR);
	assert_null(st);
	assert_non_null(strstr(store_errmsg(f->s), "syntax error"));
	assert_int_equal(store_errcode(f->s), STORE_ERROR);

	assert_int_equal(store_exec(f->s, "CREATE TABLE k(v UNIQUE)"),
	    STORE_OK);
	assert_int_equal(store_exec(f->s, "INSERT INTO k VALUES (1)"),
	    STORE_OK);
	assert_int_equal(store_prepare(f->s, "INSERT INTO k VALUES (?1)", 0,
	    &st), STORE_OK);
	store_bind_int(st, 1, 1);
	assert_int_equal(store_step(st), STORE_CONSTRAINT);
	assert_int_equal(store_errcode(f->s), STORE_CONSTRAINT);
	store_reset(st);
	assert_int_equal(store_bind_int(st, 9, 1), STORE_MISMATCH);
	store_finalize(st);

	/* a writer holds the file: another connection is busy */
	assert_int_equal(store_open_file(&other, f->path, 0, &err), STORE_OK);
	assert_int_equal(store_busy_timeout(other, 10), STORE_OK);
	assert_int_equal(store_begin(f->s, STORE_TX_WRITE), STORE_OK);
	assert_int_equal(store_begin(other, STORE_TX_WRITE), STORE_BUSY);
	assert_int_equal(store_errcode(other), STORE_BUSY);
	assert_int_equal(store_rollback(f->s), STORE_OK);
	store_close(other);

	assert_int_equal(store_open_file(&ro, f->path, STORE_OPEN_READONLY,
	    &err), STORE_OK);
	assert_int_equal(store_exec(ro, "INSERT INTO k VALUES (2)"),
	    STORE_READONLY);
	store_close(ro);

	/* a missing file without STORE_OPEN_CREATE: an error in words */
	assert_int_equal(store_open_file(&other, "/nonexistent/dir/x.db", 0,
	    &err), STORE_CANTOPEN);
	assert_null(other);
	assert_non_null(err);
	free(err);
	err = NULL;
	assert_int_equal(store_open_file(&other, "", 0, &err),
	    STORE_CANTOPEN);
	free(err);
	assert_string_equal(store_errmsg(NULL), "no database connection");
	store_close(NULL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_drivers),
		cmocka_unit_test(test_driver_missing),
		cmocka_unit_test(test_dsn_check),
		cmocka_unit_test(test_dsn_redact),
		cmocka_unit_test_setup_teardown(test_roundtrip, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_tx, setup, teardown),
		cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
	};

	return cmocka_run_group_tests_name("store", tests, NULL, NULL);
}
