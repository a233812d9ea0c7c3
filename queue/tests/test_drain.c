/*
 * queue: many workers at once. 4 threads and 2 processes drain 20,000 jobs
 * (each claim is logged to a file per worker, then counted: no duplicate,
 * none lost); a worker killed with SIGKILL mid-job loses its job to the
 * reaper, and the job finishes exactly once more.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "queue/tests/qtest.h"

#define DRAIN_JOBS	20000
#define DRAIN_THREADS	4
#define DRAIN_PROCS	2
#define DRAIN_WORKERS	(DRAIN_THREADS + DRAIN_PROCS)
#define DRAIN_BATCH	8

struct drain {
	struct qtest	 t;
	pid_t		 pids[DRAIN_PROCS];
};

struct worker {
	const struct qtest *t;	/* the database */
	char		 log[PATH_MAX + 32];
	char		 name[32];
	int		 rc;		/* 0, or the queue rc that stopped it */
	size_t		 claimed;
};

/* Open a queue on the real clock, for a worker of another thread/process. */
static int
worker_open(const struct qtest *t, struct queue **q)
{
	struct queue_opts	 o = { .driver = t->driver, .path = t->path,
	    .dsn = t->pg.dsn, .sync_normal = true,
	    .busy_ms = 20000 };
	char			*err = NULL;
	int			 rc;

	rc = queue_open(q, &o, &err);
	free(err);
	return rc;
}

/* Claim 1..DRAIN_BATCH jobs at a time, log "id gen", complete them. */
static int
worker_drain(struct worker *w, struct queue *q, FILE *log)
{
	struct queue_job	jobs[DRAIN_BATCH];
	int64_t			ids[DRAIN_BATCH], gens[DRAIN_BATCH];
	size_t			n, i, round;
	int			rc;

	for (round = 0; round < DRAIN_JOBS; round++) {
		rc = queue_claim(q, "d", w->name, 300000, jobs,
		    1 + round % DRAIN_BATCH, &n);
		if (rc != QUEUE_OK || n == 0)
			return rc;
		for (i = 0; i < n; i++) {
			fprintf(log, "%lld %lld\n", (long long)jobs[i].id,
			    (long long)jobs[i].lease_gen);
			ids[i] = jobs[i].id;
			gens[i] = jobs[i].lease_gen;
			queue_job_clear(&jobs[i]);
		}
		w->claimed += n;
		if ((rc = queue_complete_many(q, ids, gens, n, NULL)) !=
		    QUEUE_OK)
			return rc;
	}
	return QUEUE_EINVAL;	/* more rounds than jobs: something loops */
}

/* One worker: its own connection and its own log file. */
static void *
worker_main(void *arg)
{
	struct worker	*w = arg;
	struct queue	*q = NULL;
	FILE		*log;

	if ((log = fopen(w->log, "w")) == NULL) {
		w->rc = QUEUE_EIO;
		return NULL;
	}
	if ((w->rc = worker_open(w->t, &q)) == QUEUE_OK)
		w->rc = worker_drain(w, q, log);
	if (w->rc != QUEUE_OK)
		fprintf(log, "error %d %s\n", w->rc, queue_errmsg(q));
	queue_close(q);
	if (fclose(log) != 0 && w->rc == QUEUE_OK)
		w->rc = QUEUE_EIO;
	return NULL;
}

/* Read every worker log; count claims per job id. */
static void
count_claims(struct worker *w, size_t nw, unsigned char *seen, size_t *total,
    size_t *dups)
{
	FILE		*f;
	long long	 id, gen;
	char		 line[128];
	size_t		 i;

	*total = *dups = 0;
	for (i = 0; i < nw; i++) {
		assert_non_null(f = fopen(w[i].log, "r"));
		while (fgets(line, sizeof line, f) != NULL) {
			if (sscanf(line, "%lld %lld", &id, &gen) != 2) {
				print_error("%s: %s", w[i].log, line);
				fail();
			}
			assert_in_range(id, 1, DRAIN_JOBS);
			assert_int_equal(gen, 1);
			if (seen[id]++ > 0)
				(*dups)++;
			(*total)++;
		}
		fclose(f);
	}
}

static int
drain_setup(void **state)
{
	struct drain	*d;

	if ((d = calloc(1, sizeof *d)) == NULL)
		return -1;
	if (qtest_init(&d->t, false) != 0) {
		free(d);
		return -1;
	}
	*state = d;
	return 0;
}

/* Stop any child still running (a failed test), then clean up. */
static int
drain_teardown(void **state)
{
	struct drain	*d = *state;
	size_t		 i;

	for (i = 0; i < DRAIN_PROCS; i++) {
		if (d->pids[i] > 0) {
			kill(d->pids[i], SIGKILL);
			waitpid(d->pids[i], NULL, 0);
		}
	}
	qtest_fini(&d->t);
	free(d);
	return 0;
}

/* Wait for a child with a deadline; its exit status, or -1. */
static int
wait_child(pid_t *pid, int seconds)
{
	int	status, i;
	pid_t	r;

	for (i = 0; i < seconds * 100; i++) {
		if ((r = waitpid(*pid, &status, WNOHANG)) == *pid) {
			*pid = 0;
			return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
		}
		if (r < 0)
			return -1;
		usleep(10000);
	}
	return -1;
}

/* 4 threads and 2 processes drain 20,000 jobs: 0 duplicates, 0 lost. */
static void
test_drain(void **state)
{
	struct drain	*d = *state;
	struct queue_enqueue_req r = { .lane = "d", .kind = "k", .priority = 5 };
	struct worker	 w[DRAIN_WORKERS];
	pthread_t	 th[DRAIN_THREADS];
	unsigned char	*seen;
	size_t		 i, total, dups, lost;

	assert_int_equal(qtest_open(&d->t, &d->t.q, true), QUEUE_OK);
	assert_int_equal(queue_tx_begin(d->t.q), QUEUE_OK);
	for (i = 0; i < DRAIN_JOBS; i++) {
		r.priority = (int)(i % 10);
		assert_int_equal(queue_enqueue(d->t.q, &r, NULL), QUEUE_OK);
	}
	assert_int_equal(queue_tx_commit(d->t.q), QUEUE_OK);
	/* No SQLite connection may cross a fork. */
	queue_close(d->t.q);
	d->t.q = NULL;

	memset(w, 0, sizeof w);
	for (i = 0; i < DRAIN_WORKERS; i++) {
		w[i].t = &d->t;
		snprintf(w[i].log, sizeof w[i].log, "%s/w%zu.log", d->t.dir, i);
		snprintf(w[i].name, sizeof w[i].name, "%s%zu", i <
		    DRAIN_THREADS ? "thread" : "proc", i);
	}
	/* Fork first: a child of a threaded process may only exec or exit. */
	for (i = 0; i < DRAIN_PROCS; i++) {
		assert_true((d->pids[i] = fork()) >= 0);
		if (d->pids[i] == 0) {
			worker_main(&w[DRAIN_THREADS + i]);
			_exit(w[DRAIN_THREADS + i].rc == QUEUE_OK ? 0 : 1);
		}
	}
	for (i = 0; i < DRAIN_THREADS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, worker_main,
		    &w[i]), 0);
	for (i = 0; i < DRAIN_THREADS; i++)
		pthread_join(th[i], NULL);
	for (i = 0; i < DRAIN_PROCS; i++)
		assert_int_equal(wait_child(&d->pids[i], 60), 0);
	assert_int_equal(qtest_open(&d->t, &d->t.q, true), QUEUE_OK);
	for (i = 0; i < DRAIN_THREADS; i++) {
		if (w[i].rc != QUEUE_OK)
			print_error("%s: %s\n", w[i].name, queue_strerror(w[i].rc));
		assert_int_equal(w[i].rc, QUEUE_OK);
	}

	assert_non_null(seen = calloc(DRAIN_JOBS + 1, 1));
	count_claims(w, DRAIN_WORKERS, seen, &total, &dups);
	for (i = 1, lost = 0; i <= DRAIN_JOBS; i++)
		lost += seen[i] == 0;
	free(seen);
	print_message("drained %zu jobs: %zu duplicates, %zu lost; claims "
	    "per thread %zu %zu %zu %zu\n", total, dups, lost, w[0].claimed,
	    w[1].claimed, w[2].claimed, w[3].claimed);
	assert_int_equal(dups, 0);
	assert_int_equal(lost, 0);
	assert_int_equal(total, DRAIN_JOBS);
	assert_int_equal(qtest_sql_int(d->t.q, "SELECT count(*) FROM jobs "
	    "WHERE state = 2 AND attempts = 1"), DRAIN_JOBS);
	assert_int_equal(qtest_sql_int(d->t.q, "SELECT count(*) FROM "
	    "job_events WHERE to_state = 1"), DRAIN_JOBS);
	assert_int_equal(qtest_sql_int(d->t.q, "SELECT count(DISTINCT worker) "
	    "FROM jobs"), DRAIN_WORKERS);
}

/* The child: claim the job with a short lease, say so, then hang. */
static void
victim(const struct qtest *t, int fd)
{
	struct queue		*q;
	struct queue_job	 j;
	size_t			 n = 0;
	char			 buf[64];
	int			 len;

	if (worker_open(t, &q) != QUEUE_OK ||
	    queue_claim(q, "k", "victim", 300, &j, 1, &n) != QUEUE_OK || n != 1)
		_exit(2);
	len = snprintf(buf, sizeof buf, "%lld\n", (long long)j.lease_gen);
	if (write(fd, buf, (size_t)len) != len)
		_exit(3);
	for (;;)
		pause();
}

/* Read the child's line within 10 s. */
static long long
read_gen(int fd)
{
	struct pollfd	pfd = { .fd = fd, .events = POLLIN };
	char		buf[64];
	ssize_t		n;

	assert_int_equal(poll(&pfd, 1, 10000), 1);
	assert_true((n = read(fd, buf, sizeof buf - 1)) > 0);
	buf[n] = '\0';
	return atoll(buf);
}

/* SIGKILL mid-job: the job comes back after the lease, runs once more. */
static void
test_sigkill(void **state)
{
	struct drain		*d = *state;
	struct queue_policy	 p = { .backoff_base_ms = 50 };
	struct queue_job	 j;
	struct queue_stats	 st;
	struct queue_event	*ev;
	size_t			 n, i;
	long long		 gen;
	int64_t			 id;
	int			 fds[2];

	assert_int_equal(worker_open(&d->t, &d->t.q), QUEUE_OK);
	id = qtest_put(d->t.q, "k", "publish", 5);
	queue_close(d->t.q);
	d->t.q = NULL;
	assert_int_equal(pipe(fds), 0);
	assert_true((d->pids[0] = fork()) >= 0);
	if (d->pids[0] == 0) {
		close(fds[0]);
		victim(&d->t, fds[1]);
	}
	close(fds[1]);
	gen = read_gen(fds[0]);
	close(fds[0]);
	assert_int_equal(worker_open(&d->t, &d->t.q), QUEUE_OK);
	assert_int_equal(queue_set_policy(d->t.q, NULL, &p), QUEUE_OK);
	assert_int_equal(qtest_state(d->t.q, id), QUEUE_RUNNING);
	assert_int_equal(kill(d->pids[0], SIGKILL), 0);
	assert_int_equal(waitpid(d->pids[0], NULL, 0), d->pids[0]);
	d->pids[0] = 0;

	/* Reap and claim until it is ours (lease 300 ms + ~50 ms backoff). */
	for (i = 0, n = 0; i < 500 && n == 0; i++) {
		usleep(10000);
		assert_int_equal(queue_reap(d->t.q, NULL), QUEUE_OK);
		assert_int_equal(queue_claim(d->t.q, "k", "rescuer", 0, &j, 1,
		    &n), QUEUE_OK);
	}
	assert_int_equal(n, 1);
	assert_int_equal(j.id, id);
	assert_int_equal(j.attempts, 2);
	assert_int_equal(j.lease_gen, gen + 1);
	assert_int_equal(queue_complete(d->t.q, id, gen), QUEUE_ELOST);
	assert_int_equal(queue_complete(d->t.q, id, j.lease_gen), QUEUE_OK);
	queue_job_clear(&j);

	assert_int_equal(queue_stats(d->t.q, &st), QUEUE_OK);
	assert_int_equal(st.rescues, 1);
	assert_int_equal(st.count[QUEUE_DONE], 1);
	assert_int_equal(queue_history(d->t.q, id, &ev, &n), QUEUE_OK);
	assert_int_equal(n, 5);
	assert_string_equal(ev[1].worker, "victim");
	assert_int_equal(ev[2].to, QUEUE_QUEUED);
	assert_non_null(strstr(ev[2].note, "lease expired (worker victim)"));
	assert_string_equal(ev[3].worker, "rescuer");
	assert_int_equal(ev[4].to, QUEUE_DONE);
	queue_events_free(ev, n);
	assert_int_equal(qtest_events(d->t.q, id, QUEUE_DONE), 1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_drain,
		    drain_setup, drain_teardown),
		cmocka_unit_test_setup_teardown(test_sigkill,
		    drain_setup, drain_teardown),
	};

	return cmocka_run_group_tests_name("queue_drain", tests, NULL, NULL);
}
