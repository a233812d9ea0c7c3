/*
 * queue: faults from outside. Disk full on a small tmpfs: QUEUE_EFULL,
 * nothing half-stored, no corruption, and the queue works again once space
 * returns. A second process holding the write lock: a clear QUEUE_EBUSY
 * within the budget, reads still served, success once it lets go.
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
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "store/store.h"
#include "queue/tests/qtest.h"

#define PAYLOAD_LEN	(64 * 1024)
#define FILLER_LEN	(768 * 1024)

struct faults {
	struct qtest	 t;
	char		 mnt[PATH_MAX + 16];
	char		 filler[PATH_MAX + 32];
	bool		 mounted;
	pid_t		 pid;
	int		 ctl;		/* write end: tells the child to let go */
};

static int
faults_setup(void **state)
{
	struct faults	*f;

	if ((f = calloc(1, sizeof *f)) == NULL)
		return -1;
	if (qtest_init(&f->t, false) != 0) {
		free(f);
		return -1;
	}
	f->ctl = -1;
	*state = f;
	return 0;
}

/* Stop the lock holder, close, unmount, remove: even after a failure. */
static int
faults_teardown(void **state)
{
	struct faults	*f = *state;

	if (f->ctl >= 0)
		close(f->ctl);
	if (f->pid > 0) {
		kill(f->pid, SIGKILL);
		waitpid(f->pid, NULL, 0);
	}
	queue_close(f->t.q);
	f->t.q = NULL;
	if (f->mounted && umount(f->mnt) != 0)
		umount2(f->mnt, MNT_DETACH);
	qtest_fini(&f->t);
	free(f);
	return 0;
}

/* The text of PRAGMA integrity_check. */
static void
assert_intact(struct queue *q)
{
	struct store_stmt	*s;

	assert_int_equal(store_prepare(queue_db(q), "PRAGMA integrity_check", 0,
	    &s), STORE_OK);
	assert_int_equal(store_step(s), STORE_ROW);
	assert_string_equal(store_column_text(s, 0), "ok");
	store_finalize(s);
}

/* Enqueue a 64 KiB job whose bytes say its number. */
static int
put_big(struct queue *q, unsigned char *buf, int tag, int64_t *id)
{
	struct queue_enqueue_req r = { .lane = "a", .kind = "k", .priority = 5,
	    .payload = buf, .payload_len = PAYLOAD_LEN };

	memset(buf, tag & 0xff, PAYLOAD_LEN);
	return queue_enqueue(q, &r, id);
}

/* Write a file of len bytes. */
static void
write_file(const char *path, size_t len)
{
	FILE	*fp;
	char	 block[4096];
	size_t	 i;

	memset(block, 'f', sizeof block);
	assert_non_null(fp = fopen(path, "w"));
	for (i = 0; i < len; i += sizeof block)
		assert_int_equal(fwrite(block, 1, sizeof block, fp),
		    sizeof block);
	assert_int_equal(fclose(fp), 0);
}

/* Every job the queue said it stored is there, byte for byte. */
static void
assert_stored(struct queue *q, const int64_t *ids, int n)
{
	struct queue_job	j;
	int			i;

	assert_int_equal(qtest_sql_int(q, "SELECT count(*) FROM jobs"), n);
	for (i = 0; i < n; i++) {
		assert_int_equal(queue_get(q, ids[i], &j), QUEUE_OK);
		assert_int_equal(j.payload_len, PAYLOAD_LEN);
		assert_int_equal(((unsigned char *)j.payload)[PAYLOAD_LEN - 1],
		    i & 0xff);
		queue_job_clear(&j);
	}
}

/* Disk full: EFULL, nothing half-stored, intact, resumes when space returns. */
static void
test_disk_full(void **state)
{
	struct faults		*f = *state;
	struct queue_job	 j;
	unsigned char		*buf;
	int64_t			 ids[64], id;
	size_t			 n;
	int			 i, rc = QUEUE_OK, stored = 0;

	qtest_sqlite_only(&f->t, "a file on a full file system (the server's "
	    "disk is the server's)");
	snprintf(f->mnt, sizeof f->mnt, "%s/mnt", f->t.dir);
	assert_int_equal(mkdir(f->mnt, 0700), 0);
	if (mount("tmpfs", f->mnt, "tmpfs", 0, "size=2m") != 0) {
		print_message("SKIP: cannot mount a 2 MiB tmpfs (%s); the disk "
		    "full test needs root\n", strerror(errno));
		skip();
	}
	f->mounted = true;
	snprintf(f->filler, sizeof f->filler, "%s/filler", f->mnt);
	write_file(f->filler, FILLER_LEN);
	snprintf(f->t.path, sizeof f->t.path, "%s/queue.db", f->mnt);
	assert_int_equal(qtest_open(&f->t, &f->t.q, false), QUEUE_OK);
	assert_non_null(buf = malloc(PAYLOAD_LEN));

	for (i = 0; i < 64 && rc == QUEUE_OK; i++) {
		if ((rc = put_big(f->t.q, buf, stored, &id)) == QUEUE_OK)
			ids[stored++] = id;
	}
	print_message("disk full after %d jobs: %s\n", stored,
	    queue_errmsg(f->t.q));
	assert_int_equal(rc, QUEUE_EFULL);
	assert_true(stored > 0);
	assert_non_null(strstr(queue_errmsg(f->t.q), "full"));
	assert_true(!store_in_tx(queue_db(f->t.q)));
	assert_intact(f->t.q);
	assert_stored(f->t.q, ids, stored);

	/* Inside a caller transaction: the caller learns, rolls back. */
	assert_int_equal(queue_tx_begin(f->t.q), QUEUE_OK);
	rc = QUEUE_OK;
	for (i = 0; i < 4 && rc == QUEUE_OK; i++)
		rc = put_big(f->t.q, buf, 0, NULL);
	if (rc == QUEUE_OK)
		rc = queue_tx_commit(f->t.q);
	else
		queue_tx_rollback(f->t.q);
	assert_int_equal(rc, QUEUE_EFULL);
	assert_intact(f->t.q);
	assert_stored(f->t.q, ids, stored);

	/* Space returns: the same connection works again. */
	assert_int_equal(unlink(f->filler), 0);
	assert_int_equal(put_big(f->t.q, buf, stored, &id), QUEUE_OK);
	ids[stored++] = id;
	assert_int_equal(queue_claim(f->t.q, "a", "w", 0, &j, 1, &n), QUEUE_OK);
	assert_int_equal(n, 1);
	assert_int_equal(queue_complete(f->t.q, j.id, j.lease_gen), QUEUE_OK);
	queue_job_clear(&j);
	assert_intact(f->t.q);
	assert_stored(f->t.q, ids, stored);
	queue_close(f->t.q);
	f->t.q = NULL;
	assert_int_equal(qtest_open(&f->t, &f->t.q, false), QUEUE_OK);
	assert_stored(f->t.q, ids, stored);
	assert_int_equal(qtest_sql_int(f->t.q, "SELECT count(*) FROM jobs "
	    "WHERE state = 2"), 1);
	free(buf);
}

/*
 * The child: BEGIN IMMEDIATE on its own connection, say 'L', hold the lock
 * until told (a byte or EOF on ctl) or hold_ms pass, then COMMIT.
 */
static void
lock_holder(const char *path, int report, int ctl, int hold_ms)
{
	struct pollfd	 pfd = { .fd = ctl, .events = POLLIN };
	struct store		*db;

	if (store_open_file(&db, path, STORE_OPEN_CREATE, NULL) != STORE_OK ||
	    store_exec(db, "BEGIN IMMEDIATE; INSERT INTO queue_counters "
	    "VALUES ('holder', 1)") != STORE_OK)
		_exit(2);
	if (write(report, "L", 1) != 1)
		_exit(3);
	poll(&pfd, 1, hold_ms);
	if (store_exec(db, "COMMIT") != STORE_OK)
		_exit(4);
	store_close(db);
	_exit(0);
}

/* Fork a lock holder; return when it holds the lock. */
static void
start_holder(struct faults *f, int hold_ms)
{
	struct pollfd	pfd;
	int		rep[2], ctl[2];
	char		c;

	assert_int_equal(pipe(rep), 0);
	assert_int_equal(pipe(ctl), 0);
	assert_true((f->pid = fork()) >= 0);
	if (f->pid == 0) {
		close(rep[0]);
		close(ctl[1]);
		lock_holder(f->t.path, rep[1], ctl[0], hold_ms);
	}
	close(rep[1]);
	close(ctl[0]);
	f->ctl = ctl[1];
	pfd.fd = rep[0];
	pfd.events = POLLIN;
	assert_int_equal(poll(&pfd, 1, 10000), 1);
	assert_int_equal(read(rep[0], &c, 1), 1);
	assert_int_equal(c, 'L');
	close(rep[0]);
}

/* Wait for the lock holder to exit cleanly. */
static void
stop_holder(struct faults *f)
{
	int	status;

	close(f->ctl);
	f->ctl = -1;
	assert_int_equal(waitpid(f->pid, &status, 0), f->pid);
	f->pid = 0;
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* Milliseconds of the monotonic clock. */
static int64_t
mono_ms(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Open the test's queue on the fake clock with a lock budget. */
static void
open_budget(struct faults *f, int busy_ms)
{
	struct queue_opts	 o = { .path = f->t.path, .busy_ms = busy_ms,
	    .clock = qtest_clock, .clock_arg = &f->t.now };
	char			*err = NULL;

	assert_int_equal(queue_open(&f->t.q, &o, &err), QUEUE_OK);
	free(err);
}

/* Another process holds the write lock: EBUSY within the budget. */
static void
test_busy(void **state)
{
	struct faults		*f = *state;
	struct queue_stats	 st;
	struct queue_job	 j;
	size_t			 n;
	int64_t			 t0, ms, id;

	/* Create the file, then let go of it before forking. */
	open_budget(f, 300);
	qtest_put(f->t.q, "a", "k", 5);
	queue_close(f->t.q);
	f->t.q = NULL;

	start_holder(f, 20000);
	open_budget(f, 300);
	t0 = mono_ms();
	assert_int_equal(queue_enqueue(f->t.q, &(struct queue_enqueue_req){
	    .lane = "a", .kind = "k" }, &id), QUEUE_EBUSY);
	ms = mono_ms() - t0;
	print_message("EBUSY after %lld ms (budget 300): %s\n", (long long)ms,
	    queue_errmsg(f->t.q));
	assert_in_range(ms, 250, 3000);
	assert_non_null(strstr(queue_errmsg(f->t.q), "locked"));
	assert_int_equal(queue_claim(f->t.q, "a", "w", 0, &j, 1, &n),
	    QUEUE_EBUSY);
	/* Readers are not blocked by a writer (WAL). */
	assert_int_equal(queue_stats(f->t.q, &st), QUEUE_OK);
	assert_int_equal(st.count[QUEUE_QUEUED], 1);
	stop_holder(f);

	assert_int_equal(queue_enqueue(f->t.q, &(struct queue_enqueue_req){
	    .lane = "a", .kind = "k" }, &id), QUEUE_OK);
	assert_int_equal(qtest_sql_int(f->t.q, "SELECT count(*) FROM jobs"), 2);
	assert_int_equal(qtest_sql_int(f->t.q, "SELECT value FROM "
	    "queue_counters WHERE name = 'holder'"), 1);
	assert_intact(f->t.q);
}

/* A lock held for less than the budget is waited out: no error at all. */
static void
test_busy_waited_out(void **state)
{
	struct faults	*f = *state;
	int64_t		 t0, ms;

	open_budget(f, 5000);
	qtest_put(f->t.q, "a", "k", 5);
	queue_close(f->t.q);
	f->t.q = NULL;

	start_holder(f, 200);
	open_budget(f, 5000);
	t0 = mono_ms();
	qtest_put(f->t.q, "a", "k", 5);
	assert_int_equal(qtest_claim_n(f->t.q, "a", 4, NULL), 2);
	ms = mono_ms() - t0;
	print_message("waited %lld ms for a 200 ms lock\n", (long long)ms);
	assert_in_range(ms, 100, 4000);
	stop_holder(f);
}

/*
 * Two connections of one process: the second writer waits its turn on the
 * process's lock of the file, within its budget, and never hangs.
 */
static void
test_busy_in_process(void **state)
{
	struct faults	*f = *state;
	struct queue	*q2;
	int64_t		 t0, ms;

	open_budget(f, 200);
	q2 = f->t.q;
	f->t.q = NULL;
	open_budget(f, 200);
	assert_int_equal(queue_tx_begin(f->t.q), QUEUE_OK);
	qtest_put(f->t.q, "a", "k", 5);
	t0 = mono_ms();
	assert_int_equal(queue_enqueue(q2, &(struct queue_enqueue_req){
	    .lane = "a", .kind = "k" }, NULL), QUEUE_EBUSY);
	ms = mono_ms() - t0;
	assert_in_range(ms, 150, 3000);
	assert_non_null(strstr(queue_errmsg(q2), "another thread of this "
	    "process"));
	assert_int_equal(queue_tx_commit(f->t.q), QUEUE_OK);
	qtest_put(q2, "a", "k", 5);
	assert_int_equal(qtest_sql_int(q2, "SELECT count(*) FROM jobs"), 2);
	queue_close(q2);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_disk_full,
		    faults_setup, faults_teardown),
		cmocka_unit_test_setup_teardown(test_busy,
		    faults_setup, faults_teardown),
		cmocka_unit_test_setup_teardown(test_busy_waited_out,
		    faults_setup, faults_teardown),
		cmocka_unit_test_setup_teardown(test_busy_in_process,
		    faults_setup, faults_teardown),
	};

	return cmocka_run_group_tests_name("queue_faults", tests, NULL, NULL);
}
