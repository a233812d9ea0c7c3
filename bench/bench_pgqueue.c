/*
 * bench_pgqueue: claim+complete rate of the job queue on PostgreSQL beside a
 * bare FOR UPDATE SKIP LOCKED queue on the same server, in one table.
 *
 * Both columns run the same work: a pool of JOBS jobs (100-byte payloads)
 * filled beforehand, then N worker threads, each on its own connection,
 * claiming up to 16 jobs in one transaction and completing them in a
 * second one until the pool is empty; the rate is JOBS over the time from
 * the start to the last completion. Each cell is the median of three runs.
 *
 *   queue   queue/ (queue_claim, queue_complete_many) on a database of its
 *           own: what the gateway's publisher runs
 *   bare    a minimal table written plainly with libpq: claim = UPDATE ...
 *           WHERE id IN (SELECT id ... ORDER BY ... LIMIT 16 FOR UPDATE
 *           SKIP LOCKED) RETURNING, complete = DELETE
 *
 * The server is $MOSGW_PG_DSN (bench/run.sh starts a throwaway cluster
 * with fsync and synchronous_commit on); without one the rows say
 * "skipped: REASON". Figures only; nothing here asserts a timing.
 * PGQUEUE_BENCH_JOBS sets JOBS (default 3000).
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "bench/benchpg.c"
#include "gateway/gateway.h"
#include "queue/queue.h"
#include "store/tests/pgdb.h"

#define BATCH		16
#define PAYLOAD		100
#define MAX_WORKERS	4
#define RUNS		3
#define LANE		"bench"
#define CELL_SECS	120		/* no run goes on longer than this */

static const int	 worker_counts[] = { 1, MAX_WORKERS };
#define NROWS		(sizeof worker_counts / sizeof *worker_counts)

static char		 payload[PAYLOAD + 1];
static long		 njobs = 3000;
static const char	*dsn;		/* the bench's database */

/* Seconds of the monotonic clock. */
static double
now_s(void)
{
	return (double)util_mono_us() / 1e6;
}

/* One worker thread of a run. */
struct worker {
	pthread_barrier_t	*barrier;
	int			 index;
	double			 deadline;
	long			 done;
	double			 end;
	bool			 failed;
};

/* ------------------------------------------------------------------ */
/* The queue.                                                           */

static struct queue *
q_open(void)
{
	struct queue_opts	 o = { .driver = STORE_POSTGRESQL, .dsn = dsn,
	    .busy_ms = 30000 };
	struct queue		*q;
	char			*err = NULL;

	if (queue_open(&q, &o, &err) != QUEUE_OK) {
		fprintf(stderr, "bench_pgqueue: %s\n", err != NULL ? err :
		    "queue_open");
		free(err);
		return NULL;
	}
	return q;
}

/* The pool: njobs jobs, 100 per transaction. */
static int
q_fill(struct queue *q)
{
	struct queue_enqueue_req	r[100];
	long				i, k;

	for (i = 0; i < 100; i++)
		r[i] = (struct queue_enqueue_req){ .lane = LANE,
		    .kind = "publish", .priority = QUEUE_PRIO_DEFAULT,
		    .payload = payload, .payload_len = PAYLOAD };
	for (i = 0; i < njobs; i += k) {
		k = njobs - i < 100 ? njobs - i : 100;
		if (queue_enqueue_many(q, r, (size_t)k, NULL, NULL, NULL) !=
		    QUEUE_OK) {
			fprintf(stderr, "bench_pgqueue: enqueue: %s\n",
			    queue_errmsg(q));
			return -1;
		}
	}
	return 0;
}

static void *
q_worker(void *arg)
{
	struct worker		*w = arg;
	struct queue_job	 jobs[BATCH];
	struct queue		*q = q_open();
	int64_t			 ids[BATCH], gens[BATCH];
	char			 name[32];
	size_t			 n, i;

	snprintf(name, sizeof name, "bench%d", w->index);
	pthread_barrier_wait(w->barrier);
	w->failed = q == NULL;
	while (q != NULL && now_s() < w->deadline) {
		if (queue_claim(q, LANE, name, 60000, jobs, BATCH, &n) !=
		    QUEUE_OK) {
			w->failed = true;
			break;
		}
		if (n == 0)
			break;
		for (i = 0; i < n; i++) {
			ids[i] = jobs[i].id;
			gens[i] = jobs[i].lease_gen;
			queue_job_clear(&jobs[i]);
		}
		if (queue_complete_many(q, ids, gens, n, NULL) != QUEUE_OK) {
			w->failed = true;
			break;
		}
		w->done += (long)n;
	}
	if (w->failed && q != NULL)
		fprintf(stderr, "bench_pgqueue: %s: %s\n", name,
		    queue_errmsg(q));
	w->end = now_s();
	queue_close(q);
	return NULL;
}

/* ------------------------------------------------------------------ */
/* The bare SKIP LOCKED queue.                                          */

static const char bare_schema[] =
    "SET client_min_messages = warning; DROP TABLE IF EXISTS bare_jobs;"
    "CREATE TABLE bare_jobs (id bigserial PRIMARY KEY, lane text NOT NULL,"
    " priority int NOT NULL DEFAULT 5, run_after bigint NOT NULL DEFAULT 0,"
    " state smallint NOT NULL DEFAULT 0, worker text, payload bytea);"
    "CREATE INDEX bare_jobs_due ON bare_jobs (lane, priority, run_after, id)"
    " WHERE state = 0";

static PGconn *
bare_open(void)
{
	PGconn	*c = PQconnectdb(dsn);

	if (PQstatus(c) != CONNECTION_OK) {
		fprintf(stderr, "bench_pgqueue: %s", PQerrorMessage(c));
		PQfinish(c);
		return NULL;
	}
	return c;
}

/* Run sql (parameters p); 0 if it returned what it should. */
static int
bare_exec(PGconn *c, const char *sql, int np, const char *const *p,
    PGresult **out)
{
	PGresult	*r = np > 0 ? PQexecParams(c, sql, np, NULL, p, NULL,
			    NULL, 0) : PQexec(c, sql);
	ExecStatusType	 st = PQresultStatus(r);

	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
		fprintf(stderr, "bench_pgqueue: %s", PQerrorMessage(c));
		PQclear(r);
		return -1;
	}
	if (out != NULL)
		*out = r;
	else
		PQclear(r);
	return 0;
}

/* The pool in one statement; the table made again first. */
static int
bare_fill(PGconn *c)
{
	char		 n[32];
	const char	*p[2] = { n, payload };

	snprintf(n, sizeof n, "%ld", njobs);
	if (bare_exec(c, bare_schema, 0, NULL, NULL) != 0)
		return -1;
	return bare_exec(c, "INSERT INTO bare_jobs (lane, payload) SELECT "
	    "'" LANE "', convert_to($2, 'UTF8') FROM generate_series(1, "
	    "$1::int)", 2, p, NULL);
}

static void *
bare_worker(void *arg)
{
	struct worker	*w = arg;
	PGconn		*c = bare_open();
	PGresult	*r;
	char		 name[32], ids[BATCH * 24], *o;
	const char	*p[1];
	int		 n, i;

	snprintf(name, sizeof name, "bench%d", w->index);
	pthread_barrier_wait(w->barrier);
	w->failed = c == NULL;
	while (c != NULL && now_s() < w->deadline) {
		p[0] = name;
		if (bare_exec(c, "UPDATE bare_jobs SET state = 1, worker = $1 "
		    "WHERE id IN (SELECT id FROM bare_jobs WHERE lane = '"
		    LANE "' AND state = 0 ORDER BY priority, run_after, id "
		    "LIMIT 16 FOR UPDATE SKIP LOCKED) RETURNING id, payload",
		    1, p, &r) != 0) {
			w->failed = true;
			break;
		}
		if ((n = PQntuples(r)) == 0) {
			PQclear(r);
			break;
		}
		o = ids;
		*o++ = '{';
		for (i = 0; i < n; i++)
			o += snprintf(o, sizeof ids - (size_t)(o - ids), "%s%s",
			    i > 0 ? "," : "", PQgetvalue(r, i, 0));
		snprintf(o, sizeof ids - (size_t)(o - ids), "}");
		PQclear(r);
		p[0] = ids;
		if (bare_exec(c, "DELETE FROM bare_jobs WHERE id = "
		    "ANY($1::bigint[])", 1, p, NULL) != 0) {
			w->failed = true;
			break;
		}
		w->done += n;
	}
	w->end = now_s();
	PQfinish(c);
	return NULL;
}

/* ------------------------------------------------------------------ */

/* One run with n workers: jobs/s, or -1. */
static double
run(int n, void *(*fn)(void *))
{
	struct worker		w[MAX_WORKERS];
	pthread_t		th[MAX_WORKERS];
	pthread_barrier_t	b;
	double			start, end = 0;
	long			done = 0;
	bool			failed = false;
	int			i;

	memset(w, 0, sizeof w);
	pthread_barrier_init(&b, NULL, (unsigned)n + 1);
	start = now_s();
	for (i = 0; i < n; i++) {
		w[i].barrier = &b;
		w[i].index = i;
		w[i].deadline = start + CELL_SECS;
		if (pthread_create(&th[i], NULL, fn, &w[i]) != 0)
			exit(1);
	}
	pthread_barrier_wait(&b);
	start = now_s();
	for (i = 0; i < n; i++) {
		pthread_join(th[i], NULL);
		done += w[i].done;
		failed = failed || w[i].failed;
		end = w[i].end > end ? w[i].end : end;
	}
	pthread_barrier_destroy(&b);
	if (failed || done != njobs) {
		fprintf(stderr, "bench_pgqueue: %ld of %ld jobs done\n", done,
		    njobs);
		return -1;
	}
	return end > start ? done / (end - start) : -1;
}

static double
median(double *v)
{
	double	t;
	int	i, j;

	for (i = 1; i < RUNS; i++)
		for (j = i; j > 0 && v[j - 1] > v[j]; j--) {
			t = v[j];
			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	return v[RUNS / 2];
}

/* Both columns; 0, or -1 when a run failed. */
static int
bench(double res[NROWS][2])
{
	struct queue	*q;
	PGconn		*c;
	double		 v[RUNS];
	size_t		 row;
	int		 k;

	if ((q = q_open()) == NULL || (c = bare_open()) == NULL) {
		queue_close(q);
		return -1;
	}
	for (row = 0; row < NROWS; row++) {
		for (k = 0; k < RUNS; k++) {
			if (q_fill(q) != 0 ||
			    (v[k] = run(worker_counts[row], q_worker)) < 0)
				goto fail;
		}
		res[row][0] = median(v);
		for (k = 0; k < RUNS; k++) {
			if (bare_fill(c) != 0 ||
			    (v[k] = run(worker_counts[row], bare_worker)) < 0)
				goto fail;
		}
		res[row][1] = median(v);
	}
	queue_close(q);
	PQfinish(c);
	return 0;
fail:
	queue_close(q);
	PQfinish(c);
	return -1;
}

int
main(void)
{
	struct pgdb	 db;
	const char	*why, *s;
	double		 res[NROWS][2];
	char		 set[256], err[512];
	size_t		 row;
	int		 rc = 0;

	if ((s = getenv("PGQUEUE_BENCH_JOBS")) != NULL && atol(s) > 0)
		njobs = atol(s) < 1000000 ? atol(s) : 1000000;
	memset(payload, 'x', PAYLOAD);
	memset(&db, 0, sizeof db);
	if ((why = benchpg_why()) == NULL && pgdb_create(&db, err,
	    sizeof err) != 0)
		why = err;
	printf("pgqueue: claim+complete on PostgreSQL, %ld jobs of %d bytes "
	    "a run, claims of %d, complete in a second transaction\n", njobs,
	    PAYLOAD, BATCH);
	printf("%-40s %14s %14s\n", "jobs/s", "queue/", "bare SKIP");
	printf("%-40s %14s %14s\n", "", "(mosgw)", "LOCKED");
	if (why == NULL) {
		dsn = db.dsn;
		benchpg_settings(dsn, set, sizeof set);
		if (bench(res) != 0) {
			why = "a run failed (see above)";
			rc = 1;
		}
	}
	for (row = 0; row < NROWS; row++) {
		snprintf(err, sizeof err, "claim+complete, %d worker%s",
		    worker_counts[row], worker_counts[row] > 1 ? "s" : "");
		if (why != NULL)
			printf("%-40s skipped: %s\n", err, why);
		else
			printf("%-40s %14.0f %14.0f\n", err, res[row][0],
			    res[row][1]);
	}
	printf("queue/ does more per job: an event row per transition "
	    "(durable history), DONE jobs kept, attempts counted, a lease "
	    "with a fencing generation, lane limits and NOTIFY\n");
	if (why == NULL)
		printf("%s; median of %d runs; each worker a thread with its "
		    "own connection\n", set, RUNS);
	pgdb_drop(&db);
	return rc;
}
