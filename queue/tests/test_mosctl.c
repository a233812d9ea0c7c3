/*
 * mosctl job: the real $MOSGW_BIN/mosctl against a database this test
 * prepares: ls, show, requeue, cancel, rerun, stats, prune, the exit codes
 * for a bad id, a bad state name, a missing database (never created), and
 * init and the file's identity (foreign files refused untouched).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "store/store.h"
#include "queue/tests/qtest.h"

#define HOUR	(3600LL * 1000)
#define OUT_MAX	(64 * 1024)

struct ctl {
	struct qtest	 t;
	char		 bin[PATH_MAX];
	char		 out[OUT_MAX];	/* stdout of the last run */
	char		 err[OUT_MAX];	/* stderr of the last run */
	int64_t		 failed[2];	/* prepared jobs, see ctl_setup */
	int64_t		 done, queued, running, chain[2];
};

/* The wall clock in ms (mosctl runs on it). */
static int64_t
wall_ms(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Read a whole small file into buf. */
static void
slurp(const char *path, char *buf, size_t len)
{
	FILE	*f;
	size_t	 n = 0;

	buf[0] = '\0';
	if ((f = fopen(path, "r")) != NULL) {
		n = fread(buf, 1, len - 1, f);
		fclose(f);
	}
	buf[n] = '\0';
}

/* Run mosctl with args within 20 s; its exit status. */
#define RUN(c, ...)	run(c, __VA_ARGS__, (char *)NULL)

/* Run mosctl with args (NULL-terminated) within 20 s; its exit status. */
static int
run(struct ctl *c, ...)
{
	char	*argv[32], out[PATH_MAX + 16], err[PATH_MAX + 16];
	va_list	 ap;
	pid_t	 pid;
	int	 argc = 0, status, i, fd;

	argv[argc++] = c->bin;
	va_start(ap, c);
	while (argc < 31 && (argv[argc] = va_arg(ap, char *)) != NULL)
		argc++;
	va_end(ap);
	argv[argc] = NULL;
	snprintf(out, sizeof out, "%s/out", c->t.dir);
	snprintf(err, sizeof err, "%s/err", c->t.dir);
	assert_true((pid = fork()) >= 0);
	if (pid == 0) {
		if ((fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600)) < 0 ||
		    dup2(fd, 1) < 0 || (fd = open(err, O_WRONLY | O_CREAT |
		    O_TRUNC, 0600)) < 0 || dup2(fd, 2) < 0)
			_exit(126);
		unsetenv("MOSGW_DB");
		execv(c->bin, argv);
		_exit(127);
	}
	for (i = 0; i < 2000 && waitpid(pid, &status, WNOHANG) == 0; i++)
		usleep(10000);
	if (i == 2000) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		fail_msg("mosctl %s did not finish in 20 s", argv[1]);
	}
	slurp(out, c->out, sizeof c->out);
	slurp(err, c->err, sizeof c->err);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

/* Count the lines of the last run's stdout holding a string. */
static int
lines_with(const char *text, const char *needle)
{
	const char	*p = text, *nl;
	int		 n = 0;
	char		 line[1024];
	size_t		 len;

	while (*p != '\0') {
		nl = strchr(p, '\n');
		len = nl != NULL ? (size_t)(nl - p) : strlen(p);
		snprintf(line, sizeof line, "%.*s", (int)len, p);
		if (strstr(line, needle) != NULL)
			n++;
		p += len + (nl != NULL);
	}
	return n;
}

/* Prepare jobs: 2 FAILED (3 h old), DONE, QUEUED, RUNNING, a chain. */
static void
prepare(struct ctl *c)
{
	struct queue			*q = c->t.q;
	struct queue_enqueue_req	 r = { .lane = "ncs:ENPS1",
	    .kind = "publish", .priority = 5, .max_attempts = 2,
	    .payload = "<mos>obj A</mos>", .payload_len = 16 };
	struct queue_job		 j[3];
	size_t				 n, i;

	c->t.now = wall_ms() - 3 * HOUR;
	for (i = 0; i < 2; i++)
		assert_int_equal(queue_enqueue(q, &r, &c->failed[i]), QUEUE_OK);
	assert_int_equal(queue_claim(q, r.lane, "gw1", 0, j, 2, &n), QUEUE_OK);
	for (i = 0; i < n; i++) {
		assert_int_equal(queue_fail(q, j[i].id, j[i].lease_gen,
		    "NACK: unknown objID", true), QUEUE_OK);
		queue_job_clear(&j[i]);
	}
	c->t.now = wall_ms() - 30 * 60 * 1000;
	r.kind = "ingest";
	r.lane = "mam";
	assert_int_equal(queue_enqueue(q, &r, &c->done), QUEUE_OK);
	qtest_claim1(q, "mam", &j[0]);
	assert_int_equal(queue_complete(q, c->done, j[0].lease_gen), QUEUE_OK);
	queue_job_clear(&j[0]);
	c->t.now = wall_ms();
	assert_int_equal(queue_enqueue(q, &r, &c->running), QUEUE_OK);
	qtest_claim1(q, "mam", &j[0]);
	queue_job_clear(&j[0]);
	assert_int_equal(queue_enqueue(q, &r, &c->queued), QUEUE_OK);
	r.after_job = c->done;
	r.kind = "proxy";
	assert_int_equal(queue_enqueue(q, &r, &c->chain[0]), QUEUE_OK);
	r.after_job = c->chain[0];
	r.kind = "publish";
	assert_int_equal(queue_enqueue(q, &r, &c->chain[1]), QUEUE_OK);
}

static int
ctl_setup(void **state)
{
	struct ctl	*c;
	const char	*bin = getenv("MOSGW_BIN");

	if ((c = calloc(1, sizeof *c)) == NULL)
		return -1;
	snprintf(c->bin, sizeof c->bin, "%s/mosctl", bin != NULL && *bin !=
	    '\0' ? bin : "bin");
	if (access(c->bin, X_OK) != 0) {
		print_error("%s is not there: build it first (make, or set "
		    "MOSGW_BIN)\n", c->bin);
		free(c);
		return -1;
	}
	if (qtest_init(&c->t, true) != 0) {
		free(c);
		return -1;
	}
	*state = c;
	return 0;
}

static int
ctl_teardown(void **state)
{
	struct ctl	*c = *state;

	qtest_fini(&c->t);
	free(c);
	return 0;
}

/* ls: the table, filters, JSON lines, paging. */
static void
test_ls(void **state)
{
	struct ctl	*c = *state;

	qtest_sqlite_only(&c->t, "mosctl --db FILE");
	prepare(c);
	assert_int_equal(RUN(c, "--db", c->t.path, "job", "ls"), 0);
	assert_int_equal(lines_with(c->out, "LAST ERROR"), 1);
	assert_int_equal(lines_with(c->out, "NACK: unknown objID"), 2);
	assert_int_equal(lines_with(c->out, "after #"), 1);
	assert_int_equal(lines_with(c->out, "RUNNING"), 1);
	assert_int_equal(RUN(c, "--db", c->t.path, "job", "ls", "--state",
	    "failed"), 0);
	assert_int_equal(lines_with(c->out, "FAILED"), 2);
	assert_int_equal(lines_with(c->out, "QUEUED"), 0);
	assert_int_equal(RUN(c, "--db", c->t.path, "--json", "job", "ls",
	    "--kind", "ingest"), 0);
	assert_int_equal(lines_with(c->out, "{\"id\":"), 3);
	assert_int_equal(lines_with(c->out, "\"kind\":\"ingest\""), 3);
	assert_int_equal(RUN(c, "--db", c->t.path, "job", "ls", "--older-than",
	    "1h", "--json"), 0);
	assert_int_equal(lines_with(c->out, "\"state\":\"FAILED\""), 2);
	assert_int_equal(lines_with(c->out, "{\"id\":"), 2);
	assert_int_equal(RUN(c, "--db", c->t.path, "job", "ls", "--lane",
	    "mam", "--limit", "2"), 0);
	assert_int_equal(lines_with(c->out, "more with --after"), 1);
}

/* show: the job and its history; not found; bad id. */
static void
test_show(void **state)
{
	struct ctl	*c = *state;
	char		 id[32], want[64];

	qtest_sqlite_only(&c->t, "mosctl --db FILE");
	prepare(c);
	snprintf(id, sizeof id, "%lld", (long long)c->failed[0]);
	assert_int_equal(RUN(c, "--db", c->t.path, "job", "show", id), 0);
	snprintf(want, sizeof want, "job #%s  FAILED", id);
	assert_int_equal(lines_with(c->out, want), 1);
	assert_int_equal(lines_with(c->out, "RUNNING   -> FAILED"), 1);
	assert_int_equal(lines_with(c->out, "<mos>obj A</mos>"), 1);
	assert_int_equal(RUN(c, "--db", c->t.path, "--json", "job", "show", id), 0);
	assert_int_equal(lines_with(c->out, "\"history\":[{"), 1);
	assert_int_equal(lines_with(c->out, "\"note\":\"NACK: unknown objID\""),
	    1);
	assert_int_equal(RUN(c, "--db", c->t.path, "job", "show", "99999"), 1);
	assert_int_equal(lines_with(c->err, "no job #99999"), 1);
	assert_int_equal(RUN(c, "--db", c->t.path, "job", "show", "abc"),
	    64);
	assert_int_equal(lines_with(c->err, "bad job id 'abc'"), 1);
	assert_int_equal(RUN(c, "--db", c->t.path, "job", "show"), 64);
}

/* requeue one, many; refused from the wrong state. */
static void
test_requeue(void **state)
{
	struct ctl		*c = *state;
	struct queue_job	 j;
	char			 id[32];

	qtest_sqlite_only(&c->t, "mosctl --db FILE");
	prepare(c);
	snprintf(id, sizeof id, "#%lld", (long long)c->failed[0]);
	assert_int_equal(RUN(c, "--db", c->t.path, "job", "requeue", id,
	    "--extra-attempts", "3", "--note", "NCS back"), 0);
	assert_int_equal(lines_with(c->out, "now QUEUED"), 1);
	assert_int_equal(queue_get(c->t.q, c->failed[0], &j), QUEUE_OK);
	assert_int_equal(j.state, QUEUE_QUEUED);
	assert_int_equal(j.max_attempts, 4);
	queue_job_clear(&j);
	assert_int_equal(qtest_sql_int(c->t.q, "SELECT count(*) FROM "
	    "job_events WHERE note = 'NCS back'"), 1);
	assert_int_equal(RUN(c, "--db", c->t.path, "job", "requeue", id),
	    1);
	assert_int_equal(lines_with(c->err, "is QUEUED: cannot requeue"), 1);

	assert_int_equal(RUN(c, "--db", c->t.path, "job", "requeue"), 64);
	assert_int_equal(RUN(c, "--db", c->t.path, "job", "requeue", "--state",
	    "DONE"), 64);
	assert_int_equal(RUN(c, "--db", c->t.path, "--json", "job", "requeue",
	    "--state", "FAILED", "--kind", "publish"), 0);
	assert_string_equal(c->out, "{\"action\":\"requeued\",\"count\":1}\n");
	assert_int_equal(qtest_state(c->t.q, c->failed[1]), QUEUE_QUEUED);
	assert_int_equal(RUN(c, "--db", c->t.path, "job", "requeue", "--all"), 0);
	assert_int_equal(lines_with(c->out, "requeued: 0 jobs"), 1);
}

/* cancel: a queued job and its chain; not a DONE one. */
static void
test_cancel(void **state)
{
	struct ctl	*c = *state;
	char		 id[32];

	qtest_sqlite_only(&c->t, "mosctl --db FILE");
	prepare(c);
	snprintf(id, sizeof id, "%lld", (long long)c->chain[0]);
	assert_int_equal(RUN(c, "--db", c->t.path, "job", "cancel", id),
	    0);
	assert_int_equal(qtest_state(c->t.q, c->chain[0]), QUEUE_CANCELLED);
	assert_int_equal(qtest_state(c->t.q, c->chain[1]), QUEUE_CANCELLED);
	snprintf(id, sizeof id, "%lld", (long long)c->done);
	assert_int_equal(RUN(c, "--db", c->t.path, "job", "cancel", id),
	    1);
	assert_int_equal(lines_with(c->err, "is DONE"), 1);
	/* rerun the chain from its first step. */
	assert_int_equal(RUN(c, "--db", c->t.path, "job", "rerun", id),
	    0);
	assert_int_equal(lines_with(c->out, "re-run: 3 jobs"), 1);
	assert_int_equal(qtest_state(c->t.q, c->chain[1]), QUEUE_QUEUED);
}

/* stats in both forms. */
static void
test_stats(void **state)
{
	struct ctl	*c = *state;

	qtest_sqlite_only(&c->t, "mosctl --db FILE");
	prepare(c);
	assert_int_equal(RUN(c, "--db", c->t.path, "job", "stats"), 0);
	assert_int_equal(lines_with(c->out, "FAILED              2"), 1);
	assert_int_equal(lines_with(c->out, "RUNNING             1"), 1);
	assert_int_equal(RUN(c, "--db", c->t.path, "job", "stats", "--json"), 0);
	assert_int_equal(lines_with(c->out, "\"failed\":2,"), 1);
	assert_int_equal(lines_with(c->out, "\"queued\":3,"), 1);
	assert_int_equal(lines_with(c->out, "\"rescues\":0"), 1);
}

/* prune with ages given on the command line. */
static void
test_prune(void **state)
{
	struct ctl	*c = *state;

	qtest_sqlite_only(&c->t, "mosctl --db FILE");
	prepare(c);
	assert_int_equal(RUN(c, "--db", c->t.path, "job", "prune"), 0);
	assert_int_equal(lines_with(c->out, "pruned: 0 jobs"), 1);
	/* The DONE job has a chain waiting: kept. FAILED ones are 3 h old. */
	assert_int_equal(RUN(c, "--db", c->t.path, "job", "prune",
	    "--done-age", "10m", "--failed-age", "2h"), 0);
	assert_int_equal(lines_with(c->out, "pruned: 2 jobs"), 1);
	assert_int_equal(qtest_sql_int(c->t.q, "SELECT count(*) FROM jobs"), 5);
	assert_int_equal(RUN(c, "--db", c->t.path, "job", "prune",
	    "--done-age", "soon"), 64);
}

/* Usage and database errors have their exit codes and a message. */
static void
test_errors(void **state)
{
	struct ctl	*c = *state;
	char		 missing[PATH_MAX + 16];

	qtest_sqlite_only(&c->t, "mosctl --db FILE");
	snprintf(missing, sizeof missing, "%s/none.db", c->t.dir);
	assert_int_equal(RUN(c, "--db", missing, "job", "ls"), 74);
	assert_int_equal(lines_with(c->err, "no database at"), 1);
	assert_int_equal(lines_with(c->err, missing), 1);
	assert_int_equal(access(missing, F_OK), -1);
	assert_int_equal(RUN(c, "--db", missing, "asset", "put", "A", "--slug",
	    "typo in the path"), 74);
	assert_int_equal(lines_with(c->err, "mosctl never creates"), 1);
	assert_int_equal(access(missing, F_OK), -1);
	assert_int_equal(RUN(c, "--db", c->t.path, "job", "ls", "--state",
	    "WAITING"), 64);
	assert_int_equal(lines_with(c->err, "unknown state 'WAITING'"), 1);
	assert_int_equal(RUN(c, "--db", c->t.path, "job", "frob"), 64);
	assert_int_equal(RUN(c, "--db", c->t.path, "job"), 64);
	assert_int_equal(RUN(c, "--db", c->t.path, "job", "ls", "--bogus"), 64);
	assert_int_equal(RUN(c, "--db", c->t.path, "job", "ls", "--limit"), 64);
	assert_int_equal(RUN(c, "--db", c->t.path, "job", "cancel", "--state",
	    "FAILED", "3"), 64);
	assert_int_equal(RUN(c, "--db", c->t.path, "job", "ls", "--note", "x"),
	    64);
	assert_int_equal(lines_with(c->err, "--note goes with"), 1);
	assert_int_equal(RUN(c, "job", "ls"), 64);
	assert_int_equal(store_exec(queue_db(c->t.q), "PRAGMA user_version = "
	    "7"), STORE_OK);
	assert_int_equal(RUN(c, "--db", c->t.path, "job", "ls"), 74);
	assert_int_equal(lines_with(c->err, "newer"), 1);
}

/* A new SQLite file holding sql; its bytes in buf (n of them). */
static void
make_file(const char *path, const char *sql, char *buf, size_t len,
    size_t *n)
{
	struct store	*db;
	int	 fd;
	ssize_t	 r;

	assert_int_equal(store_open_file(&db, path, STORE_OPEN_CREATE, NULL),
	    STORE_OK);
	assert_int_equal(store_exec(db, sql), STORE_OK);
	store_close(db);
	assert_true((fd = open(path, O_RDONLY)) != -1);
	r = read(fd, buf, len);
	close(fd);
	assert_true(r > 0 && (size_t)r < len);
	*n = (size_t)r;
}

/* Is the file at path exactly these n bytes? */
static bool
same_bytes(const char *path, const char *buf, size_t n)
{
	char	 now[65536];
	int	 fd;
	ssize_t	 r;

	if ((fd = open(path, O_RDONLY)) == -1)
		return false;
	r = read(fd, now, sizeof now);
	close(fd);
	return r == (ssize_t)n && memcmp(now, buf, n) == 0;
}

/*
 * mosctl init makes a new file 0640 whatever the umask and refuses an
 * existing one; a foreign SQLite file is refused and left byte for byte
 * as it was (no -wal either); a queue file from before the mark is
 * recognised and marked.
 */
static void
test_init_identity(void **state)
{
	struct ctl	*c = *state;
	char		 path[PATH_MAX + 32], wal[PATH_MAX + 40];
	char		 buf[65536];
	struct stat	 sb;
	size_t		 n;
	mode_t		 old;

	qtest_sqlite_only(&c->t, "mosctl --db FILE");
	snprintf(path, sizeof path, "%s/new.db", c->t.dir);
	old = umask(0);
	assert_int_equal(RUN(c, "--db", path, "init"), 0);
	umask(old);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0640);
	assert_int_equal(RUN(c, "--db", path, "job", "ls"), 0);
	assert_int_equal(RUN(c, "--db", path, "init"), 1);
	assert_int_equal(lines_with(c->err, "exists"), 1);
	assert_int_equal(RUN(c, "--db", path, "init", "x"), 64);

	snprintf(path, sizeof path, "%s/foreign.db", c->t.dir);
	snprintf(wal, sizeof wal, "%s-wal", path);
	make_file(path, "CREATE TABLE photos(id, data);"
	    "INSERT INTO photos VALUES(1, 'x');", buf, sizeof buf, &n);
	assert_int_equal(RUN(c, "--db", path, "job", "ls"), 74);
	assert_int_equal(lines_with(c->err, "not a mosgw database"), 1);
	assert_int_equal(RUN(c, "--db", path, "asset", "ls"), 74);
	assert_int_equal(lines_with(c->err, "not a mosgw database"), 1);
	assert_true(same_bytes(path, buf, n));
	assert_int_equal(access(wal, F_OK), -1);

	snprintf(path, sizeof path, "%s/other-app.db", c->t.dir);
	make_file(path, "PRAGMA application_id = 1234; CREATE TABLE t(x);",
	    buf, sizeof buf, &n);
	assert_int_equal(RUN(c, "--db", path, "history", "ls"), 74);
	assert_int_equal(lines_with(c->err, "another application"), 1);
	assert_true(same_bytes(path, buf, n));

	/* the prepared file has the queue's schema and no mark */
	assert_int_equal(qtest_sql_int(c->t.q, "PRAGMA application_id"), 0);
	assert_int_equal(RUN(c, "--db", c->t.path, "job", "ls"), 0);
	assert_int_equal(qtest_sql_int(c->t.q, "PRAGMA application_id"),
	    0x4d4f5347);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_ls, ctl_setup,
		    ctl_teardown),
		cmocka_unit_test_setup_teardown(test_show, ctl_setup,
		    ctl_teardown),
		cmocka_unit_test_setup_teardown(test_requeue, ctl_setup,
		    ctl_teardown),
		cmocka_unit_test_setup_teardown(test_cancel, ctl_setup,
		    ctl_teardown),
		cmocka_unit_test_setup_teardown(test_stats, ctl_setup,
		    ctl_teardown),
		cmocka_unit_test_setup_teardown(test_prune, ctl_setup,
		    ctl_teardown),
		cmocka_unit_test_setup_teardown(test_errors, ctl_setup,
		    ctl_teardown),
		cmocka_unit_test_setup_teardown(test_init_identity, ctl_setup,
		    ctl_teardown),
	};

	return cmocka_run_group_tests_name("queue_mosctl", tests, NULL, NULL);
}
