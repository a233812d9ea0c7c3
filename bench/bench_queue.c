/*
 * bench_queue: the job queue's rates beside beanstalkd's, in one table.
 *
 * SQLite queue, synchronous FULL and NORMAL: enqueue (one job per commit,
 * 100 per commit) and claim+complete with 1, 2 and 4 worker threads, each
 * with its own connection: one job per transaction, claims of 16 with
 * queue_complete_many (two commits per 16 jobs), and claims of 16 whose
 * completions ride in the next claim's transaction (group commit: one
 * commit per 16 jobs). beanstalkd (started by bench/queue.sh with a binlog,
 * -f 0: fsync on every write, and -f 50) through its text protocol: put,
 * and reserve+delete with 1, 2 and 4 connections.
 *
 * Every cell is the median of three runs of a fixed time (-t, default
 * 0.4 s), each from a pool of jobs filled beforehand, so that a passing
 * load on a shared machine does not make the figure. Figures only;
 * nothing here asserts a timing.
 *
 * usage: bench_queue [-d DIR] [-t SECONDS] [-f PORT] [-n PORT]
 *   -f PORT  beanstalkd with -f 0 on 127.0.0.1:PORT
 *   -n PORT  beanstalkd with -f 50 on 127.0.0.1:PORT
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "queue/queue.h"

#define BATCH		16
#define PAYLOAD		100
#define MAX_WORKERS	4
#define LANE		"bench"
#define RUNS		3		/* a cell is the median of RUNS runs */

enum col { COL_FULL, COL_NORMAL, COL_BS_F0, COL_BS_F50, NCOLS };
enum row {
	ROW_ENQ_ONE, ROW_ENQ_100,
	ROW_ONE_1, ROW_ONE_2, ROW_ONE_4,
	ROW_BATCH_1, ROW_BATCH_2, ROW_BATCH_4,
	ROW_GROUP_1, ROW_GROUP_2, ROW_GROUP_4,
	NROWS
};
enum mode { MODE_ONE, MODE_BATCH, MODE_GROUP };

static const char *const row_names[NROWS] = {
	"enqueue, 1 per commit",
	"enqueue, 100 per commit",
	"claim+complete, 1 per commit, 1 worker",
	"                              2 workers",
	"                              4 workers",
	"claim 16 + complete_many,     1 worker",
	"                              2 workers",
	"                              4 workers",
	"claim 16 + group commit,      1 worker",
	"                              2 workers",
	"                              4 workers",
};
static const char *const col_names[NCOLS] = {
	"SQLite FULL", "SQLite NORMAL", "beanstalkd -f0", "beanstalkd -f50",
};
static const int worker_counts[3] = { 1, 2, 4 };

static double		 results[NROWS][NCOLS];	/* jobs/s; 0 = not measured */
static double		 slowest[NCOLS];	/* longest single round, s */
static double		 cell_secs = 0.4;	/* one run; a cell is RUNS */
static char		 payload[PAYLOAD + 1];	/* see main */

/* Seconds of the monotonic clock. */
static double
now_s(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* What a worker thread measures. */
struct worker {
	struct cell_run		*run;
	int			 index;
	uint64_t		 count;		/* jobs finished in the window */
	double			 end;
	double			 worst;		/* longest round, s */
	int			 rc;
};

/* One timed cell: every worker starts at the barrier, stops at deadline. */
struct cell_run {
	const char		*path;		/* SQLite file, or NULL */
	bool			 sync_normal;
	enum mode		 mode;
	int			 port;		/* beanstalkd, or 0 */
	pthread_barrier_t	 barrier;
	double			 start, deadline;
	double			 worst;		/* longest round of any worker */
};

/* ------------------------------------------------------------------ */
/* SQLite queue                                                         */

/* Open a connection for the benchmark. */
static struct queue *
sq_open(const char *path, bool sync_normal)
{
	struct queue_opts	 o = { .path = path, .sync_normal = sync_normal,
	    .busy_ms = 30000 };
	struct queue		*q;
	char			*err = NULL;

	if (queue_open(&q, &o, &err) != QUEUE_OK) {
		fprintf(stderr, "bench_queue: %s\n", err != NULL ? err : "open");
		exit(1);
	}
	return q;
}

/* Enqueue one job (inside the caller's transaction, if any). */
static int
sq_put(struct queue *q)
{
	struct queue_enqueue_req	r = { .lane = LANE, .kind = "publish",
	    .priority = QUEUE_PRIO_DEFAULT, .payload = payload,
	    .payload_len = PAYLOAD };

	return queue_enqueue(q, &r, NULL);
}

/* Enqueue n jobs, `per` per transaction; jobs/s. */
static double
sq_enqueue(struct queue *q, int per, double secs, uint64_t max)
{
	double		t0 = now_s(), t = t0;
	uint64_t	n = 0;
	int		i, rc = QUEUE_OK;

	while (rc == QUEUE_OK && n < max && (secs <= 0 || (t = now_s()) <
	    t0 + secs)) {
		if (per > 1 && (rc = queue_tx_begin(q)) != QUEUE_OK)
			break;
		for (i = 0; i < per && rc == QUEUE_OK; i++)
			rc = sq_put(q);
		if (per > 1 && rc == QUEUE_OK)
			rc = queue_tx_commit(q);
		n += (uint64_t)per;
	}
	if (rc != QUEUE_OK) {
		fprintf(stderr, "bench_queue: enqueue: %s\n", queue_errmsg(q));
		exit(1);
	}
	return n / (now_s() - t0);
}

/* Make sure at least `need` jobs are QUEUED. */
static void
sq_fill(struct queue *q, double need)
{
	struct queue_stats	st;

	if (queue_stats(q, &st) != QUEUE_OK)
		exit(1);
	if (st.count[QUEUE_QUEUED] < need)
		sq_enqueue(q, 1000, 0, (uint64_t)(need -
		    st.count[QUEUE_QUEUED]) + 1000);
}

/* Complete the jobs group mode holds; how many. */
static int
sq_complete_held(struct queue *q, struct queue_job *jobs, size_t *n)
{
	int64_t	ids[BATCH], gens[BATCH];
	size_t	i, k = *n;
	int	rc = QUEUE_OK;

	for (i = 0; i < k; i++) {
		ids[i] = jobs[i].id;
		gens[i] = jobs[i].lease_gen;
		queue_job_clear(&jobs[i]);
	}
	*n = 0;
	if (k == 1)
		rc = queue_complete(q, ids[0], gens[0]);
	else if (k > 1)
		rc = queue_complete_many(q, ids, gens, k, NULL);
	return rc == QUEUE_OK ? (int)k : -1;
}

/*
 * One round of a worker: jobs finished (committed) in it, -1 on error.
 * ONE and BATCH claim, then complete in a second transaction; GROUP
 * completes the jobs of its last claim inside the next claim's transaction.
 */
static int
sq_round(struct queue *q, enum mode mode, const char *name,
    struct queue_job *jobs, size_t *held)
{
	size_t	n;
	int	done = 0, rc;

	if (mode != MODE_GROUP) {
		if (queue_claim(q, LANE, name, 60000, jobs, mode == MODE_ONE ?
		    1 : BATCH, &n) != QUEUE_OK)
			return -1;
		return sq_complete_held(q, jobs, &n);
	}
	if (queue_tx_begin(q) != QUEUE_OK)
		return -1;
	if ((done = sq_complete_held(q, jobs, held)) < 0 ||
	    queue_claim(q, LANE, name, 60000, jobs, BATCH, &n) != QUEUE_OK) {
		queue_tx_rollback(q);
		return -1;
	}
	if ((rc = queue_tx_commit(q)) != QUEUE_OK)
		return -1;
	*held = n;
	return done;
}

/* A SQLite worker thread. */
static void *
sq_worker(void *arg)
{
	struct worker		*w = arg;
	struct cell_run		*r = w->run;
	struct queue_job	 jobs[BATCH];
	struct queue		*q = sq_open(r->path, r->sync_normal);
	char			 name[32];
	size_t			 held = 0;
	double			 t;
	int			 got;

	snprintf(name, sizeof name, "bench%d", w->index);
	pthread_barrier_wait(&r->barrier);
	while ((t = now_s()) < r->deadline) {
		got = sq_round(q, r->mode, name, jobs, &held);
		w->worst = now_s() - t > w->worst ? now_s() - t : w->worst;
		if (got < 0) {
			fprintf(stderr, "bench_queue: %s: %s\n", name,
			    queue_errmsg(q));
			w->rc = -1;
			break;
		}
		w->count += (uint64_t)got;
		if (got == 0 && held == 0)
			break;		/* the pool ran dry */
	}
	w->end = now_s();
	/* Finish what group mode still holds (outside the window). */
	sq_complete_held(q, jobs, &held);
	queue_close(q);
	return NULL;
}

/* Run one cell with n workers; jobs/s. */
static double
run_cell(struct cell_run *r, int n, void *(*fn)(void *))
{
	struct worker	w[MAX_WORKERS];
	pthread_t	th[MAX_WORKERS];
	uint64_t	total = 0;
	double		end = 0;
	int		i;

	memset(w, 0, sizeof w);
	pthread_barrier_init(&r->barrier, NULL, (unsigned)n + 1);
	for (i = 0; i < n; i++) {
		w[i].run = r;
		w[i].index = i;
		if (pthread_create(&th[i], NULL, fn, &w[i]) != 0)
			exit(1);
	}
	/* Set before the barrier, which publishes it to the workers. */
	r->start = now_s();
	r->deadline = r->start + cell_secs;
	pthread_barrier_wait(&r->barrier);
	for (i = 0; i < n; i++) {
		pthread_join(th[i], NULL);
		if (w[i].rc != 0)
			exit(1);
		total += w[i].count;
		end = w[i].end > end ? w[i].end : end;
		r->worst = w[i].worst > r->worst ? w[i].worst : r->worst;
	}
	pthread_barrier_destroy(&r->barrier);
	return end > r->start ? total / (end - r->start) : 0;
}

/* The median of RUNS figures. */
static double
median(double *v)
{
	double	t;
	int	i, j;

	for (i = 1; i < RUNS; i++) {
		for (j = i; j > 0 && v[j - 1] > v[j]; j--) {
			t = v[j];
			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	}
	return v[RUNS / 2];
}

/* Remove a database file and its WAL companions. */
static void
unlink_db(const char *path)
{
	static const char *const suffix[] = { "", "-wal", "-shm" };
	char	p[4200];
	size_t	i;

	for (i = 0; i < sizeof suffix / sizeof *suffix; i++) {
		snprintf(p, sizeof p, "%s%s", path, suffix[i]);
		unlink(p);
	}
}

/* The SQLite columns: one fresh file per durability setting. */
static void
bench_sqlite(const char *dir, bool sync_normal)
{
	struct cell_run	 r = { .sync_normal = sync_normal };
	struct queue	*q;
	char		 path[4096];
	enum col	 col = sync_normal ? COL_NORMAL : COL_FULL;
	enum mode	 modes[3] = { MODE_ONE, MODE_BATCH, MODE_GROUP };
	double		 need, v[RUNS];
	int		 m, i, k, row, per;

	snprintf(path, sizeof path, "%s/bench-%s.db", dir, sync_normal ?
	    "normal" : "full");
	unlink_db(path);
	q = sq_open(path, sync_normal);
	for (row = ROW_ENQ_ONE, per = 1; row <= ROW_ENQ_100; row++, per = 100) {
		for (k = 0; k < RUNS; k++)
			v[k] = sq_enqueue(q, per, cell_secs, UINT64_MAX);
		results[row][col] = median(v);
	}
	r.path = path;
	for (m = 0, row = ROW_ONE_1; m < 3; m++) {
		r.mode = modes[m];
		for (i = 0, need = 0; i < 3; i++, row++) {
			for (k = 0; k < RUNS; k++) {
				/* Enough work for a run, judging by the last. */
				need = need * 1.5 > 5000 ? need * 1.5 : 5000;
				sq_fill(q, need * cell_secs);
				v[k] = need = run_cell(&r, worker_counts[i],
				    sq_worker);
				slowest[col] = r.worst > slowest[col] ?
				    r.worst : slowest[col];
			}
			results[row][col] = median(v);
		}
	}
	queue_close(q);
	unlink_db(path);
}

/* ------------------------------------------------------------------ */
/* beanstalkd over its text protocol                                    */

struct bs {
	int	fd;
	char	buf[4096];
	size_t	len;
};

/* Connect to beanstalkd on 127.0.0.1:port. */
static int
bs_connect(struct bs *b, int port)
{
	struct sockaddr_in	sin = { .sin_family = AF_INET,
	    .sin_port = htons((uint16_t)port) };
	int			one = 1;

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	b->len = 0;
	if ((b->fd = socket(AF_INET, SOCK_STREAM, 0)) < 0)
		return -1;
	setsockopt(b->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	if (connect(b->fd, (struct sockaddr *)&sin, sizeof sin) != 0) {
		close(b->fd);
		return -1;
	}
	return 0;
}

/* Send a whole buffer. */
static int
bs_send(struct bs *b, const char *p, size_t len)
{
	ssize_t	n;

	while (len > 0) {
		if ((n = write(b->fd, p, len)) <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Read one reply line (without CRLF) into line. */
static int
bs_line(struct bs *b, char *line, size_t max)
{
	char	*crlf;
	ssize_t	 n;
	size_t	 l;

	for (;;) {
		if ((crlf = memmem(b->buf, b->len, "\r\n", 2)) != NULL) {
			l = (size_t)(crlf - b->buf);
			snprintf(line, max, "%.*s", (int)l, b->buf);
			memmove(b->buf, crlf + 2, b->len - l - 2);
			b->len -= l + 2;
			return 0;
		}
		if (b->len == sizeof b->buf)
			return -1;
		if ((n = read(b->fd, b->buf + b->len, sizeof b->buf - b->len))
		    <= 0)
			return -1;
		b->len += (size_t)n;
	}
}

/* put one job; 0 when INSERTED. */
static int
bs_put(struct bs *b)
{
	char	cmd[256], line[128];
	int	n;

	n = snprintf(cmd, sizeof cmd, "put 1024 0 60 %d\r\n%s\r\n", PAYLOAD,
	    payload);
	if (bs_send(b, cmd, (size_t)n) != 0 || bs_line(b, line, sizeof line) !=
	    0)
		return -1;
	return strncmp(line, "INSERTED ", 9) == 0 ? 0 : -1;
}

/* reserve one job and delete it; 1 done, 0 none left, -1 error. */
static int
bs_take(struct bs *b)
{
	char			 cmd[64], line[128];
	unsigned long long	 id;
	unsigned		 bytes;
	int			 n;

	if (bs_send(b, "reserve-with-timeout 0\r\n", 24) != 0 ||
	    bs_line(b, line, sizeof line) != 0)
		return -1;
	if (strcmp(line, "TIMED_OUT") == 0)
		return 0;
	if (sscanf(line, "RESERVED %llu %u", &id, &bytes) != 2 ||
	    bs_line(b, line, sizeof line) != 0)	/* the body, one line */
		return -1;
	n = snprintf(cmd, sizeof cmd, "delete %llu\r\n", id);
	if (bs_send(b, cmd, (size_t)n) != 0 || bs_line(b, line, sizeof line) !=
	    0)
		return -1;
	return strcmp(line, "DELETED") == 0 ? 1 : -1;
}

/* Jobs ready in the default tube. */
static long
bs_ready(struct bs *b)
{
	char		 line[64], body[4096];
	const char	*p;
	long		 ready = -1;
	size_t		 len;

	/* "OK <bytes>", then a YAML body (\n lines) ending in CRLF. */
	if (bs_send(b, "stats-tube default\r\n", 20) != 0 ||
	    bs_line(b, line, sizeof line) != 0 ||
	    sscanf(line, "OK %zu", &len) != 1 ||
	    bs_line(b, body, sizeof body) != 0)
		return -1;
	if ((p = strstr(body, "current-jobs-ready: ")) != NULL)
		ready = atol(p + 20);
	return ready;
}

/* put for secs (or until n jobs); jobs/s. */
static double
bs_putn(struct bs *b, double secs, long n)
{
	double	t0 = now_s();
	long	i;

	for (i = 0; i < n && (secs <= 0 || now_s() < t0 + secs); i++) {
		if (bs_put(b) != 0) {
			fprintf(stderr, "bench_queue: beanstalkd put failed\n");
			exit(1);
		}
	}
	return i / (now_s() - t0);
}

/* A beanstalkd worker thread: its own connection. */
static void *
bs_worker(void *arg)
{
	struct worker		*w = arg;
	struct cell_run		*r = w->run;
	struct bs		 b;
	double			 t;
	int			 got;

	if (bs_connect(&b, r->port) != 0) {
		w->rc = -1;
		pthread_barrier_wait(&r->barrier);
		return NULL;
	}
	pthread_barrier_wait(&r->barrier);
	while ((t = now_s()) < r->deadline) {
		got = bs_take(&b);
		w->worst = now_s() - t > w->worst ? now_s() - t : w->worst;
		if (got <= 0) {
			w->rc = got;
			break;
		}
		w->count++;
	}
	w->end = now_s();
	close(b.fd);
	return NULL;
}

/* A beanstalkd column. */
static void
bench_beanstalkd(int port, enum col col)
{
	struct cell_run	r = { .port = port };
	struct bs	b;
	double		need, v[RUNS];
	long		ready;
	int		i, k;

	if (port == 0)
		return;
	if (bs_connect(&b, port) != 0) {
		fprintf(stderr, "bench_queue: no beanstalkd on 127.0.0.1:%d\n",
		    port);
		return;
	}
	for (k = 0; k < RUNS; k++)
		v[k] = bs_putn(&b, cell_secs, 100000000);
	results[ROW_ENQ_ONE][col] = median(v);
	for (i = 0, need = 0; i < 3; i++) {
		for (k = 0; k < RUNS; k++) {
			need = need * 1.5 > 3000 ? need * 1.5 : 3000;
			if ((ready = bs_ready(&b)) < 0)
				exit(1);
			if (ready < need * cell_secs)
				bs_putn(&b, 0, (long)(need * cell_secs) - ready);
			v[k] = need = run_cell(&r, worker_counts[i], bs_worker);
			slowest[col] = r.worst > slowest[col] ? r.worst :
			    slowest[col];
		}
		results[ROW_ONE_1 + i][col] = median(v);
	}
	close(b.fd);
}

/* ------------------------------------------------------------------ */

/* fdatasync()s per second of this disk, 4 KiB at a time, for context. */
static double
fsync_rate(const char *dir)
{
	char	path[4096], block[4096];
	double	t0 = now_s();
	int	fd, n = 0;

	snprintf(path, sizeof path, "%s/bench-fsync", dir);
	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600)) < 0)
		return 0;
	memset(block, 'x', sizeof block);
	while (now_s() < t0 + 0.3) {
		if (pwrite(fd, block, sizeof block, (off_t)(n % 64) * 4096) < 0 ||
		    fdatasync(fd) != 0)
			break;
		n++;
	}
	close(fd);
	unlink(path);
	return n / (now_s() - t0);
}

/* A rate with thousands separators, or "-". */
static const char *
fmt_rate(double v, char *buf, size_t len)
{
	long long	n = (long long)(v + 0.5);

	if (v <= 0)
		snprintf(buf, len, "-");
	else if (n >= 1000000)
		snprintf(buf, len, "%lld,%03lld,%03lld", n / 1000000,
		    n / 1000 % 1000, n % 1000);
	else if (n >= 1000)
		snprintf(buf, len, "%lld,%03lld", n / 1000, n % 1000);
	else
		snprintf(buf, len, "%lld", n);
	return buf;
}

/* The best rate of a column among rows [from, to]. */
static double
best(enum col c, int from, int to)
{
	double	b = 0;
	int	r;

	for (r = from; r <= to; r++)
		b = results[r][c] > b ? results[r][c] : b;
	return b;
}

/* Print the table and the comparison with the aims. */
static void
report(double fsyncs)
{
	char	a[32], b[32];
	int	r, c;

	printf("queue: jobs/s, %d-byte payload, median of %d runs of %.1f s; "
	    "this disk does %s fdatasync/s\n\n", PAYLOAD, RUNS, cell_secs,
	    fmt_rate(fsyncs, a, sizeof a));
	printf("%-40s", "");
	for (c = 0; c < NCOLS; c++)
		printf(" %16s", col_names[c]);
	printf("\n");
	for (r = 0; r < NROWS; r++) {
		printf("%-40s", row_names[r]);
		for (c = 0; c < NCOLS; c++)
			printf(" %16s", fmt_rate(results[r][c], a, sizeof a));
		printf("\n");
	}
	printf("%-40s", "slowest claim+complete round (ms)");
	for (c = 0; c < NCOLS; c++) {
		snprintf(a, sizeof a, "%.1f", slowest[c] * 1000);
		printf(" %16s", slowest[c] > 0 ? a : "-");
	}
	printf("\n\nbeanstalkd rows: put; reserve+delete per connection (it has "
	    "no batch claim).\n");
	printf("claim+complete, best: FULL %s/s (aim 20,000), NORMAL %s/s (aim "
	    "60,000)\n", fmt_rate(best(COL_FULL, ROW_ONE_1, ROW_GROUP_4), a,
	    sizeof a), fmt_rate(best(COL_NORMAL, ROW_ONE_1, ROW_GROUP_4), b,
	    sizeof b));
	if (results[ROW_ONE_1][COL_BS_F0] > 0)
		printf("at equal durability (fsync per commit): SQLite FULL "
		    "%.1fx beanstalkd -f0\n", best(COL_FULL, ROW_ONE_1,
		    ROW_GROUP_4) / best(COL_BS_F0, ROW_ONE_1, ROW_ONE_4));
}

int
main(int argc, char **argv)
{
	const char	*dir = "/tmp";
	double		 fsyncs;
	int		 c, port_f0 = 0, port_f50 = 0;

	while ((c = getopt(argc, argv, "d:t:f:n:")) != -1) {
		switch (c) {
		case 'd':
			dir = optarg;
			break;
		case 't':
			if ((cell_secs = atof(optarg)) <= 0)
				cell_secs = 0.4;
			break;
		case 'f':
			port_f0 = atoi(optarg);
			break;
		case 'n':
			port_f50 = atoi(optarg);
			break;
		default:
			fprintf(stderr, "usage: bench_queue [-d DIR] [-t SECONDS] "
			    "[-f PORT] [-n PORT]\n");
			return 64;
		}
	}
	memset(payload, ' ', PAYLOAD);
	memcpy(payload, "<mos><mosObj><objID>bench</objID></mosObj></mos>", 48);
	fsyncs = fsync_rate(dir);
	bench_sqlite(dir, false);
	bench_sqlite(dir, true);
	bench_beanstalkd(port_f0, COL_BS_F0);
	bench_beanstalkd(port_f50, COL_BS_F50);
	report(fsyncs);
	return 0;
}
