/*
 * Integration: the database file's identity and integrity, and its modes.
 *
 * The gateway exits nonzero within seconds when its file is unlinked or
 * replaced under it; refuses at start a file with one damaged page, a
 * foreign SQLite file (left byte for byte as it was) and a file another
 * gateway is running on; creates its database, -wal, -shm and log 0640
 * even with umask 0.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <sys/stat.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/store.h"
#include "gateway/tests/itutil.h"

#define EXIT_MS		15000	/* housekeeping checks every second */
#define PAGE		4096

/* Kill whatever still runs (some tests leave it dead on purpose). */
static int
teardown(void **state)
{
	gwrig_free(*state);
	return 0;
}

/* Wait until the gateway has exited; its exit status, or -1. */
static int
wait_exit(struct gwproc *gp)
{
	int64_t	deadline = ncspeer_now_ms() + EXIT_MS;

	while (gwproc_running(gp)) {
		if (ncspeer_now_ms() >= deadline)
			return -1;
		usleep(20 * 1000);
	}
	return gp->last_status;
}

/* Does the current run's stderr or log hold text? */
static bool
said(struct gwproc *gp, const char *text)
{
	char	*log = gwproc_log_text(gp), *err = gwproc_read_file(gp->errlog);
	bool	 yes = strstr(log, text) != NULL || strstr(err, text) != NULL;

	free(log);
	free(err);
	return yes;
}

/* The file unlinked under the gateway: it notices and exits 1. */
static void
test_unlinked(void **state)
{
	struct gwrig	*r = *state;

	GWRIG_CHECK(r, gwproc_asset_put(r->gw, "U-1", "before") == 0);
	GWRIG_CHECK(r, unlink(r->gw->db) == 0);
	GWRIG_CHECK(r, wait_exit(r->gw) == 1);
	GWRIG_CHECK(r, gwproc_log_count(r->gw, 0, "event=db.lost",
	    "reason=unlinked", (char *)NULL) == 1);
	GWRIG_CHECK(r, said(r->gw, "is no longer at its path (unlinked)"));
}

/* Another file renamed over its path: it notices and exits 1. */
static void
test_replaced(void **state)
{
	struct gwrig	*r = *state;
	char		 other[320];
	struct store		*db;

	snprintf(other, sizeof other, "%s/other.db", r->gw->dir);
	GWRIG_CHECK(r, store_open_file(&db, other, STORE_OPEN_CREATE, NULL) ==
	    STORE_OK);
	GWRIG_CHECK(r, store_exec(db, "CREATE TABLE t(x)") == STORE_OK);
	store_close(db);
	GWRIG_CHECK(r, rename(other, r->gw->db) == 0);
	GWRIG_CHECK(r, wait_exit(r->gw) == 1);
	GWRIG_CHECK(r, gwproc_log_count(r->gw, 0, "event=db.lost",
	    "reason=replaced", (char *)NULL) == 1);
}

/* One page of the jobs table overwritten: refused at start. */
static void
test_damaged_page(void **state)
{
	struct gwrig	*r = *state;
	char		 page[PAGE];
	struct store		*db;
	struct store_stmt	*st;
	int		 root = 0, fd, i;

	for (i = 0; i < 40; i++) {
		snprintf(page, sizeof page, "D-%02d", i);
		GWRIG_CHECK(r, gwproc_asset_put(r->gw, page, "to damage") == 0);
	}
	GWRIG_CHECK(r, gwproc_stop(r->gw) == 0);
	GWRIG_CHECK(r, store_open_file(&db, r->gw->db, STORE_OPEN_CREATE,
	    NULL) == STORE_OK);
	GWRIG_CHECK(r, store_prepare(db, "SELECT rootpage FROM "
	    "sqlite_schema WHERE name = 'jobs'", 0, &st) == STORE_OK);
	if (store_step(st) == STORE_ROW)
		root = store_column_int(st, 0);
	store_finalize(st);
	store_close(db);
	GWRIG_CHECK(r, root > 1);
	memset(page, 0x5a, sizeof page);
	GWRIG_CHECK(r, (fd = open(r->gw->db, O_WRONLY)) != -1);
	GWRIG_CHECK(r, pwrite(fd, page, sizeof page,
	    (off_t)(root - 1) * PAGE) == PAGE);
	close(fd);
	GWRIG_CHECK(r, gwproc_start(r->gw) == -1);
	GWRIG_CHECK(r, r->gw->last_status == 1);
	GWRIG_CHECK(r, said(r->gw, "damaged"));
}

/* A foreign SQLite file at the path: refused, not one byte changed. */
static void
test_foreign_file(void **state)
{
	struct gwrig	*r = *state;
	char		 before[65536], after[65536], wal[320];
	ssize_t		 n, m;
	struct store		*db;
	int		 fd;

	GWRIG_CHECK(r, gwproc_stop(r->gw) == 0);
	unlink(r->gw->db);
	GWRIG_CHECK(r, store_open_file(&db, r->gw->db, STORE_OPEN_CREATE,
	    NULL) == STORE_OK);
	GWRIG_CHECK(r, store_exec(db, "CREATE TABLE invoices(id, total);"
	    "INSERT INTO invoices VALUES (1, 99)") ==
	    STORE_OK);
	store_close(db);
	GWRIG_CHECK(r, (fd = open(r->gw->db, O_RDONLY)) != -1);
	n = read(fd, before, sizeof before);
	close(fd);
	GWRIG_CHECK(r, n > 0 && n < (ssize_t)sizeof before);
	GWRIG_CHECK(r, gwproc_start(r->gw) == -1);
	GWRIG_CHECK(r, r->gw->last_status == 1);
	GWRIG_CHECK(r, said(r->gw, "not a mosgw database"));
	GWRIG_CHECK(r, (fd = open(r->gw->db, O_RDONLY)) != -1);
	m = read(fd, after, sizeof after);
	close(fd);
	GWRIG_CHECK(r, m == n && memcmp(before, after, (size_t)n) == 0);
	snprintf(wal, sizeof wal, "%s-wal", r->gw->db);
	GWRIG_CHECK(r, access(wal, F_OK) == -1);
}

/* A second gateway on the same file is refused; the first carries on. */
static void
test_second_gateway(void **state)
{
	struct gwrig		*r = *state;
	struct gwproc_opts	 o;
	struct gwproc		*second;
	char			 extra[400];

	memset(&o, 0, sizeof o);
	snprintf(extra, sizeof extra, "path = %s\n", r->gw->db);
	o.database_extra = extra;
	o.nncs = 1;
	o.ncs[0].lower_port = ncspeer_port(r->ncs, NCSPEER_LOWER);
	o.ncs[0].upper_port = ncspeer_port(r->ncs, NCSPEER_UPPER);
	GWRIG_CHECK(r, (second = gwproc_new(&o)) != NULL);
	GWRIG_CHECK(r, gwproc_start(second) == -1);
	GWRIG_CHECK(r, second->last_status == 1);
	GWRIG_CHECK(r, said(second, "another mosgw is running"));
	gwproc_free(second);
	GWRIG_CHECK(r, gwproc_running(r->gw));
	GWRIG_CHECK(r, gwproc_asset_put(r->gw, "S-1", "still served") == 0);
	GWRIG_CHECK(r, gwproc_wait_idle(r->gw, r->lane, 10000) == 0);
	GWRIG_CHECK(r, gwproc_stop(r->gw) == 0);
}

/* The mode of a file (-1 if absent). */
static int
mode_of(const char *path)
{
	struct stat	sb;

	return stat(path, &sb) == 0 ? (int)(sb.st_mode & 0777) : -1;
}

/* Created 0640 under umask 0: the database, its -wal and -shm, the log. */
static void
test_modes(void **state)
{
	struct gwrig	*r;
	char		 wal[320], shm[320];
	mode_t		 old;
	int		 rc;

	old = umask(0);
	rc = itutil_setup(state);
	umask(old);
	assert_int_equal(rc, 0);
	r = *state;
	GWRIG_CHECK(r, gwproc_asset_put(r->gw, "M-1", "modes") == 0);
	GWRIG_CHECK(r, gwproc_wait_idle(r->gw, r->lane, 10000) == 0);
	snprintf(wal, sizeof wal, "%s-wal", r->gw->db);
	snprintf(shm, sizeof shm, "%s-shm", r->gw->db);
	GWRIG_CHECK(r, mode_of(r->gw->db) == 0640);
	GWRIG_CHECK(r, mode_of(wal) == 0640);
	GWRIG_CHECK(r, mode_of(shm) == 0640);
	GWRIG_CHECK(r, mode_of(r->gw->log) == 0640);
	GWRIG_CHECK(r, gwproc_stop(r->gw) == 0);
}

/* Nothing to set up: test_modes starts its own rig under umask 0. */
static int
setup_none(void **state)
{
	*state = NULL;
	return 0;
}

/* The it_dbfile suite. */
int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_unlinked, itutil_setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_replaced, itutil_setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_damaged_page, itutil_setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_foreign_file, itutil_setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_second_gateway,
		    itutil_setup, teardown),
		cmocka_unit_test_setup_teardown(test_modes, setup_none,
		    teardown),
	};

	return cmocka_run_group_tests_name("it_dbfile", tests, NULL, NULL);
}
