/*
 * bench_gateway: asset changes per second through the real mosgw, end to
 * end, into a fast C NCS sink on loopback, beside the ceiling measured in
 * the same run.
 *
 *   ceiling  the sink's bare ping-pong over one socket: one thread sends a
 *            pre-built mosObj (1 of 64, messageIDs 1..64), reads the whole
 *            mosAck back and checks its messageID, then the next; plain
 *            send()/recv(), TCP_NODELAY on both sides. The sink is the same
 *            ncspeer code that answers mosgw (frame, parse, reply mosAck).
 *            Measured three times (before FULL, before NORMAL, after
 *            NORMAL); the best is the ceiling. A raw echo over one socket
 *            (no sink) is shown for reference.
 *   drain    a backlog of changes in the catalog (enqueued through the
 *            catalog API) delivered by mosgw: mosObj on the wire -> mosAck
 *            -> job DONE, with synchronous=FULL and NORMAL; CPU seconds of
 *            mosgw per message from /proc/PID/stat
 *   live     changes enqueued one transaction each (catalog_put, the path of
 *            the API) while mosgw delivers them
 *   js       Sofie's @mos-connection/connector as the MOS device publishing
 *            mosObj to the same sink (conformance/interop/bench-device.js),
 *            when Node.js and the pinned library are there
 *
 * Bounded: every phase has a deadline; the whole run takes about 30 s.
 * Environment: MOSGW_BIN (mosgw), MOSGW_TOP, MOSGW_TMP; BENCH_GW_N (backlog
 * size, default 20000), BENCH_GW_LIVE (default 2000).
 */
#include "gateway/tests/ncspeer.c"
#include "gateway/tests/gwproc.c"

#include <sys/socket.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

#include <inttypes.h>
#include <pthread.h>
#include <sched.h>

#include "gateway/gateway.h"

#define PINGPONG_MS	1000
#define PINGPONG_RUNS	3
#define NFRAMES		64	/* pre-built mosObj, messageIDs 1..NFRAMES */
#define REPLY_MAX	8192
#define DRAIN_MS	20000
#define BATCH		500	/* backlog puts per transaction */

/* The pre-built frames of the ping-pong. */
struct frames {
	struct mos_buf	 obj[NFRAMES];
	/* "<messageID>N</messageID>" of obj[i], in UTF-16BE */
	uint8_t		*id[NFRAMES];
	size_t		 idlen[NFRAMES];
	struct mos_buf	 ack;		/* the mosAck of obj[0], for the echo */
};

/* Print why a measurement failed; returns -1 to pass on. */
static double
bench_fail(const char *what)
{
	fprintf(stderr, "bench_gateway: %s: %s\n", what, errno != 0 ?
	    strerror(errno) : "unexpected reply");
	return -1;
}

/* Set TCP_NODELAY, as mosgw and the sink do. */
static void
nodelay(int fd)
{
	int	one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/* Fill sin with 127.0.0.1:port. */
static void
loopback_addr(struct sockaddr_in *sin, uint16_t port)
{
	memset(sin, 0, sizeof *sin);
	sin->sin_family = AF_INET;
	sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin->sin_port = htons(port);
}

/* A blocking TCP connection to 127.0.0.1:port, or -1. */
static int
loopback_connect(uint16_t port)
{
	struct sockaddr_in	sin;
	int			fd;

	if ((fd = socket(AF_INET, SOCK_STREAM, 0)) == -1)
		return -1;
	loopback_addr(&sin, port);
	if (connect(fd, (struct sockaddr *)&sin, sizeof sin) == -1) {
		close(fd);
		return -1;
	}
	nodelay(fd);
	return fd;
}

/* A socket pair over loopback TCP (not AF_UNIX: the gateway uses TCP). */
static int
tcp_pair(int fds[2])
{
	struct sockaddr_in	sin;
	socklen_t		len = sizeof sin;
	int			l;

	if ((l = socket(AF_INET, SOCK_STREAM, 0)) == -1)
		return -1;
	loopback_addr(&sin, 0);
	fds[0] = fds[1] = -1;
	if (bind(l, (struct sockaddr *)&sin, sizeof sin) == 0 &&
	    listen(l, 1) == 0 &&
	    getsockname(l, (struct sockaddr *)&sin, &len) == 0 &&
	    (fds[0] = loopback_connect(ntohs(sin.sin_port))) != -1)
		fds[1] = accept(l, NULL, NULL);
	close(l);
	if (fds[1] == -1) {
		if (fds[0] != -1)
			close(fds[0]);
		return -1;
	}
	nodelay(fds[1]);
	return 0;
}

/* Send all of n bytes (blocking). */
static int
send_full(int fd, const uint8_t *buf, size_t n)
{
	ssize_t	w;
	size_t	off = 0;

	while (off < n) {
		if ((w = send(fd, buf + off, n - off, MSG_NOSIGNAL)) <= 0)
			return -1;
		off += (size_t)w;
	}
	return 0;
}

/* Whether buf ends with </mos> in UTF-16BE. */
static bool
ends_frame(const uint8_t *buf, size_t len)
{
	static const uint8_t end[] = { 0, '<', 0, '/', 0, 'm', 0, 'o', 0, 's',
	    0, '>' };

	return len >= sizeof end && memcmp(buf + len - sizeof end, end,
	    sizeof end) == 0;
}

/* Receive one whole frame (one at a time is in flight); its length or 0. */
static size_t
recv_frame(int fd, uint8_t *buf, size_t cap)
{
	size_t	have;
	ssize_t	r;

	errno = 0;
	for (have = 0; !ends_frame(buf, have); have += (size_t)r) {
		if (have == cap ||
		    (r = recv(fd, buf + have, cap - have, 0)) <= 0)
			return 0;
	}
	return have;
}

/* The raw echo's end of a socket pair. */
struct echo {
	const struct frames	*f;
	int			 fd;
};

/* The raw echo: a whole request in, the same mosAck bytes out. */
static void *
echo_main(void *arg)
{
	const struct echo	*e = arg;
	uint8_t			 buf[REPLY_MAX];

	while (recv_frame(e->fd, buf, sizeof buf) != 0 &&
	    send_full(e->fd, e->f->ack.data, e->f->ack.len) == 0)
		;
	return NULL;
}

/*
 * The client side of a ping-pong: frame i out, the whole reply in (with
 * frame i's messageID when check), PINGPONG_MS long. Round trips/s or -1.
 */
static double
pingpong_loop(int fd, const struct frames *f, bool check)
{
	uint8_t	buf[REPLY_MAX];
	size_t	have;
	int64_t	t0 = ncspeer_now_ms(), t;
	long	n = 0;
	int	i;

	for (;;) {
		i = (int)(n % NFRAMES);
		if (send_full(fd, f->obj[i].data, f->obj[i].len) != 0)
			return bench_fail("ping-pong: send");
		if ((have = recv_frame(fd, buf, sizeof buf)) == 0)
			return bench_fail("ping-pong: recv");
		if (check && memmem(buf, have, f->id[i], f->idlen[i]) == NULL)
			return bench_fail("ping-pong: mosAck messageID");
		n++;
		if ((n & 63) == 0 && (t = ncspeer_now_ms()) - t0 >= PINGPONG_MS)
			break;
	}
	return n * 1000.0 / (double)(t - t0);
}

/*
 * Keep the calling thread, and the threads it starts, on the CPU it runs on
 * now; *saved gets the mask to restore. 0, or -1 (then nothing changed).
 */
static int
pin_here(cpu_set_t *saved)
{
	cpu_set_t	one;
	int		cpu;

	if (pthread_getaffinity_np(pthread_self(), sizeof *saved, saved) != 0 ||
	    (cpu = sched_getcpu()) < 0)
		return -1;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	return pthread_setaffinity_np(pthread_self(), sizeof one, &one) == 0 ?
	    0 : -1;
}

/* Undo pin_here. */
static void
unpin(const cpu_set_t *saved)
{
	pthread_setaffinity_np(pthread_self(), sizeof *saved, saved);
}

/* Round trips per second over one socket to a raw echo (no sink). */
static double
pingpong_raw(const struct frames *f)
{
	struct echo	 arg;
	pthread_t	 th;
	double		 rate;
	int		 fds[2];

	if (tcp_pair(fds) != 0)
		return bench_fail("echo: socket pair");
	arg.f = f;
	arg.fd = fds[1];
	if (pthread_create(&th, NULL, echo_main, &arg) != 0) {
		close(fds[0]);
		close(fds[1]);
		return bench_fail("echo: thread");
	}
	rate = pingpong_loop(fds[0], f, false);
	shutdown(fds[0], SHUT_RDWR);
	pthread_join(th, NULL);
	close(fds[0]);
	close(fds[1]);
	return rate;
}

/* The C NCS sink: ncspeer answering every mosObj with a mosAck, quietly. */
static struct ncspeer *
sink_new(void)
{
	struct ncspeer_opts	po;

	memset(&po, 0, sizeof po);
	po.quiet = true;
	po.mos_id = "mosgw.test";
	po.ncs_id = "NCSPEER";
	return ncspeer_new(&po);
}

/*
 * Round trips per second through the sink over one socket: the raw echo
 * instead when f is NULL. one_cpu: client and sink (or echo) share a CPU.
 */
static double
pingpong(const struct frames *f, bool sink, bool one_cpu)
{
	struct ncspeer	*p = NULL;
	cpu_set_t	 saved;
	double		 rate = -1;
	bool		 pinned = one_cpu && pin_here(&saved) == 0;
	int		 fd;

	if (one_cpu && !pinned)
		fprintf(stderr, "bench_gateway: cannot pin to one CPU; the "
		    "one-CPU ping-pong runs unpinned\n");
	if (!sink)
		rate = pingpong_raw(f);
	else if ((p = sink_new()) == NULL)
		rate = -1;
	else if ((fd = loopback_connect(ncspeer_port(p, NCSPEER_LOWER))) == -1)
		bench_fail("ping-pong: connect to the sink");
	else {
		rate = pingpong_loop(fd, f, true);
		close(fd);
	}
	ncspeer_free(p);
	if (pinned)
		unpin(&saved);
	return rate;
}

/* A typical mosObj (about 1.5 KB in UTF-16BE) with messageID id. */
static struct mos_msg *
sample_obj(int32_t id)
{
	struct mos_msg	*m;
	struct mos_obj	*o;

	m = mos_msg_new(MOS_T_MOS_OBJ);
	m->mos_id = "mosgw.bench";
	m->ncs_id = "NCSSINK";
	m->has_message_id = true;
	m->message_id = id;
	o = &m->u.mos_obj;
	o->obj_id = "M000123";
	o->obj_slug = "Hotel fire: reporter package, second edit";
	o->mos_abstract = "Hotel fire, package with interview";
	o->obj_group = "News";
	o->obj_type = "VIDEO";
	o->obj_tb.v = 50;
	o->obj_tb.set = true;
	o->obj_rev = 3;
	o->has_obj_rev = true;
	o->obj_dur = 1500;
	o->has_obj_dur = true;
	o->status = "UPDATED";
	o->obj_air = "READY";
	o->created_by = "editor";
	mos_time_now(&o->created);
	o->changed_by = "editor";
	mos_time_now(&o->changed);
	o->description = "Fire at the hotel on the main square; interview with "
	    "the fire chief, shots of the evacuation, archive pictures.";
	return m;
}

/* The mosAck of sample_obj(id). */
static struct mos_msg *
sample_ack(int32_t id)
{
	struct mos_msg	*a;

	a = mos_msg_new(MOS_T_MOS_ACK);
	a->mos_id = "mosgw.bench";
	a->ncs_id = "NCSSINK";
	a->has_message_id = true;
	a->message_id = id;
	a->u.mos_ack.obj_id = "M000123";
	a->u.mos_ack.obj_rev = 3;
	a->u.mos_ack.has_obj_rev = true;
	a->u.mos_ack.status = "ACK";
	return a;
}

/* Encode m (freed here) in UTF-16BE into b, or exit. */
static void
encode_or_die(struct mos_msg *m, struct mos_buf *b)
{
	char	err[128];

	if (mos_write(m, MOS_ENC_UTF16BE, b, err, sizeof err) != 0) {
		fprintf(stderr, "bench_gateway: %s\n", err);
		exit(1);
	}
	mos_msg_free(m);
}

/* Build the ping-pong frames before any clock runs. */
static void
frames_build(struct frames *f)
{
	char	id[64];
	int	i;

	memset(f, 0, sizeof *f);
	for (i = 0; i < NFRAMES; i++) {
		encode_or_die(sample_obj(i + 1), &f->obj[i]);
		snprintf(id, sizeof id, "<messageID>%d</messageID>", i + 1);
		f->id[i] = ncspeer_encode(id, MOS_ENC_UTF16BE, &f->idlen[i]);
	}
	encode_or_die(sample_ack(1), &f->ack);
}

/* Free the frames. */
static void
frames_clear(struct frames *f)
{
	int	i;

	for (i = 0; i < NFRAMES; i++) {
		mos_buf_free(&f->obj[i]);
		free(f->id[i]);
	}
	mos_buf_free(&f->ack);
}

/* The ceiling's runs: [0] client and sink on one CPU, [1] on any. */
struct ceiling {
	double	runs[2][PINGPONG_RUNS];
	int	n;
	double	best;
};

/* One more ceiling run, both ways; keeps the best. 0 or -1. */
static int
ceiling_run(const struct frames *f, struct ceiling *c)
{
	int	k;

	for (k = 0; k < 2; k++) {
		if ((c->runs[k][c->n] = pingpong(f, true, k == 0)) < 0)
			return -1;
		if (c->runs[k][c->n] > c->best)
			c->best = c->runs[k][c->n];
	}
	c->n++;
	return 0;
}

/* A catalog row like a real clip: paths, abstract, description. */
static void
sample_asset(struct catalog_asset *a)
{
	memset(a, 0, sizeof *a);
	a->slug = xstrdup("Hotel fire: reporter package, second edit");
	a->type = xstrdup("VIDEO");
	a->tb = xstrdup("50");
	a->dur = 1500;
	a->air = xstrdup("READY");
	a->abstract = xstrdup("Hotel fire, package with interview");
	a->description = xstrdup("Fire at the hotel on the main square; "
	    "interview with the fire chief, shots of the evacuation.");
	a->group = xstrdup("News");
	a->created_by = xstrdup("bench");
	a->changed_by = xstrdup("bench");
	catalog_add_path(a, CATALOG_PATH, "MXF XDCAM HD 50",
	    "\\\\media01\\clips\\M000123.mxf");
	catalog_add_path(a, CATALOG_PROXY, "MP4 proxy",
	    "http://media01/proxy/M000123.mp4");
}

/* Put n assets (ids from first), `batch` per transaction. Seconds, or -1. */
static double
put_assets(struct gwdb *g, struct catalog_asset *a, long first, long n,
    int batch)
{
	char	 id[32], *err = NULL;
	int64_t	 t0 = ncspeer_now_ms();
	long	 i;

	for (i = 0; i < n; i++) {
		if (batch > 1 && i % batch == 0 && queue_tx_begin(g->q) != QUEUE_OK)
			return -1;
		snprintf(id, sizeof id, "BENCH-%07ld", first + i);
		free(a->obj_id);
		a->obj_id = xstrdup(id);
		if (catalog_put(g, a, NULL, NULL, &err) != QUEUE_OK) {
			fprintf(stderr, "bench_gateway: catalog_put: %s\n", err);
			free(err);
			if (batch > 1)
				queue_tx_rollback(g->q);
			return -1;
		}
		if (batch > 1 && ((i + 1) % batch == 0 || i + 1 == n) &&
		    queue_tx_commit(g->q) != QUEUE_OK)
			return -1;
	}
	return (double)(ncspeer_now_ms() - t0) / 1000.0;
}

/* DONE jobs in the database (a second connection). */
static int64_t
done_count(struct queue *q)
{
	struct queue_stats	st;

	if (queue_stats(q, &st) != QUEUE_OK)
		return -1;
	return st.count[QUEUE_DONE];
}

/* Wait until `want` jobs are DONE; the time it happened (ms), or -1. */
static int64_t
wait_done(struct queue *q, int64_t want, int64_t deadline)
{
	/* Counting jobs costs the database: poll gently, not every ms. */
	while (ncspeer_now_ms() < deadline) {
		if (done_count(q) >= want)
			return ncspeer_now_ms();
		usleep(10000);
	}
	return -1;
}

/* Wait until the sink has acknowledged `want` mosObj; the time, or -1. */
static int64_t
wait_acked(struct ncspeer *sink, uint64_t want, int64_t deadline)
{
	struct ncspeer_stats	st;

	while (ncspeer_now_ms() < deadline) {
		ncspeer_stats(sink, &st);
		if (st.acks_sent >= want)
			return ncspeer_now_ms();
		usleep(1000);
	}
	return -1;
}

struct e2e {
	double	rate;		/* changes/s, first mosObj to last DONE */
	/* first mosObj to the sink's last mosAck, per second */
	double	wire_rate;
	double	cpu_per_msg;	/* s of mosgw CPU per change */
	double	live_rate;	/* changes/s with the producer running too */
	double	put_rate;	/* catalog_put per second alone (one tx each) */
	long	n;
	long	nlive;
};

/* One end-to-end run with the given durability. 0 or -1. */
static int
e2e_run(bool sync_normal, long n, long nlive, struct e2e *r)
{
	struct ncspeer_stats	 st;
	struct gwproc_opts	 o;
	struct gwdb_opts	 go;
	struct catalog_asset	 a;
	struct ncspeer		*sink = NULL;
	struct gwproc		*gp = NULL;
	struct gwdb		*g = NULL;
	char			*err = NULL;
	double			 cpu0, cpu1;
	int64_t			 t0, t1, tw, done0;
	int			 rc = -1;

	memset(r, 0, sizeof *r);
	r->n = n;
	r->nlive = nlive;
	memset(&o, 0, sizeof o);
	o.log_level = "info";
	o.database_extra = sync_normal ? "synchronous = normal\n" :
	    "synchronous = full\n";
	o.nncs = 1;
	o.ncs[0].extra = "heartbeat_interval = 5\nack_timeout = 5\n"
	    "reconnect_min = 0.05\nreconnect_max = 0.1\n";
	sample_asset(&a);
	if ((sink = sink_new()) == NULL)
		goto out;
	o.ncs[0].lower_port = ncspeer_port(sink, NCSPEER_LOWER);
	o.ncs[0].upper_port = ncspeer_port(sink, NCSPEER_UPPER);
	/* The NCS is away while the backlog is built. */
	ncspeer_down(sink, false);
	if ((gp = gwproc_new(&o)) == NULL || gwproc_start(gp) != 0)
		goto out;
	memset(&go, 0, sizeof go);
	go.path = gp->db;
	go.sync_normal = sync_normal;
	go.busy_ms = 10000;
	if (gwdb_open(&g, &go, &err) != QUEUE_OK) {
		fprintf(stderr, "bench_gateway: gwdb_open: %s\n", err);
		goto out;
	}
	if (put_assets(g, &a, 0, n, BATCH) < 0)
		goto out;

	cpu0 = gwproc_cpu(gp);
	if (ncspeer_up(sink) != 0 || ncspeer_wait_open(sink, NCSPEER_LOWER,
	    NCSPEER_ACCEPTED, 1, 5000) != 0)
		goto out;
	t0 = ncspeer_now_ms();
	if ((tw = wait_acked(sink, (uint64_t)n, t0 + DRAIN_MS)) == -1 ||
	    (t1 = wait_done(g->q, n, t0 + DRAIN_MS)) == -1) {
		fprintf(stderr, "bench_gateway: %" PRId64 " of %ld DONE in %d ms\n",
		    done_count(g->q), n, DRAIN_MS);
		gwproc_log_dump(gp, "drain too slow");
		goto out;
	}
	cpu1 = gwproc_cpu(gp);
	ncspeer_stats(sink, &st);
	r->rate = n * 1000.0 / (double)(t1 - t0 > 0 ? t1 - t0 : 1);
	r->wire_rate = (double)st.acks_sent * 1000.0 / (double)(tw - t0 > 0 ?
	    tw - t0 : 1);
	r->cpu_per_msg = (cpu1 - cpu0) / (double)n;

	/* Live: one transaction per change while the gateway delivers. */
	done0 = done_count(g->q);
	t0 = ncspeer_now_ms();
	if ((r->put_rate = put_assets(g, &a, n, nlive, 1)) < 0)
		goto out;
	r->put_rate = nlive / (r->put_rate > 0 ? r->put_rate : 0.001);
	if ((t1 = wait_done(g->q, done0 + nlive, t0 + DRAIN_MS)) == -1)
		goto out;
	r->live_rate = nlive * 1000.0 / (double)(t1 - t0 > 0 ? t1 - t0 : 1);
	rc = gwproc_stop(gp) == 0 ? 0 : -1;
	if (rc != 0)
		fprintf(stderr, "bench_gateway: mosgw did not exit 0 on SIGTERM\n");
out:
	free(err);
	catalog_asset_clear(&a);
	gwdb_close(g);
	gwproc_free(gp);
	ncspeer_free(sink);
	return rc;
}

/* Sofie's library as the MOS device publishing to the same sink. */
static int
js_device(long n, double *rate, double *cpu_ms, char *version, size_t vlen)
{
	struct ncspeer		*sink;
	struct gwchild		 ch;
	const char		*top = getenv("MOSGW_TOP"), *l;
	char			 dir[512], probe[600], ports[2][8], count[24];
	char			 a0[] = "node", a1[] = "bench-device.js";
	char			 a2[] = "--lower", a3[] = "--upper";
	char			 a4[] = "--count";
	char			*argv[] = { a0, a1, a2, ports[0], a3, ports[1], a4,
				    count, NULL };
	int			 rc = -1;

	snprintf(dir, sizeof dir, "%s/conformance/interop",
	    top != NULL && *top != '\0' ? top : ".");
	snprintf(probe, sizeof probe,
	    "%s/node_modules/@mos-connection/connector/package.json", dir);
	if (access(probe, R_OK) != 0) {
		printf("gateway: js device not measured: run `npm ci` in %s\n",
		    dir);
		return 1;
	}
	if ((sink = sink_new()) == NULL)
		return -1;
	snprintf(ports[0], sizeof ports[0], "%u",
	    ncspeer_port(sink, NCSPEER_LOWER));
	snprintf(ports[1], sizeof ports[1], "%u",
	    ncspeer_port(sink, NCSPEER_UPPER));
	snprintf(count, sizeof count, "%ld", n);
	if (gwchild_start(&ch, dir, argv, NULL) == 0) {
		if ((l = gwchild_line(&ch, "\"rate\"", DRAIN_MS)) != NULL &&
		    (l = strstr(l, "\"rate\":")) != NULL &&
		    sscanf(l, "\"rate\":%lf", rate) == 1 &&
		    (l = strstr(l, "\"cpu_ms_per_msg\":")) != NULL &&
		    sscanf(l, "\"cpu_ms_per_msg\":%lf", cpu_ms) == 1) {
			rc = 0;
			if ((l = strstr(l, "\"node\":\"")) != NULL)
				snprintf(version, vlen, "%.*s", (int)strcspn(l + 8,
				    "\""), l + 8);
		} else
			fprintf(stderr, "bench_gateway: bench-device.js: %s\n",
			    ch.buf != NULL ? ch.buf : "(no output)");
		gwchild_clear(&ch);
	}
	ncspeer_free(sink);
	return rc;
}

/* A figure in a column of width w, or "-" when there is none (< 0). */
static void
cell(double v, int w, int prec)
{
	if (v < 0)
		printf(" %*s", w, "-");
	else
		printf(" %*.*f", w, prec, v);
}

/* a / b, or -1 (no figure) when either is missing. */
static double
ratio(double a, double b)
{
	return a > 0 && b > 0 ? a / b : -1;
}

/* One row of the table: rates, CPU, and the ratios to ceiling and JS. */
static void
row(const char *what, double acked, double done, double cpu_ms,
    double ceiling, double js)
{
	printf("gateway:   %-48s", what);
	cell(acked, 8, 0);
	cell(done, 8, 0);
	cell(cpu_ms, 7, 3);
	cell(ratio(acked, ceiling), 7, 2);
	cell(ratio(acked, js), 6, 1);
	putchar('\n');
}

/* The table: the ceiling, mosgw, the JS device, the bare socket. */
static void
report_table(const struct frames *f, const struct ceiling *c, double raw,
    const struct e2e *full, const struct e2e *normal, const char *js_label,
    double js_rate, double js_cpu)
{
	printf("gateway: one run on loopback TCP; mosObj %zu-%zu B, mosAck "
	    "about %zu B (UTF-16BE); one outstanding mosObj\n",
	    f->obj[0].len, f->obj[NFRAMES - 1].len, f->ack.len);
	printf("gateway:   %-48s %8s %8s %7s %7s %6s\n", "", "mosObj/s",
	    "DONE/s", "CPU ms", "x ceil", "x JS");
	row("ping-pong through the C NCS sink (ceiling)", c->best, -1, -1,
	    c->best, js_rate);
	row("mosgw, synchronous=FULL", full->wire_rate, full->rate,
	    full->cpu_per_msg * 1000, c->best, js_rate);
	row("mosgw, synchronous=NORMAL", normal->wire_rate, normal->rate,
	    normal->cpu_per_msg * 1000, c->best, js_rate);
	row(js_label, js_rate, -1, js_cpu, c->best, js_rate);
	row("raw echo over one socket, one CPU (no sink)", raw, -1, -1,
	    c->best, -1);
	printf("gateway: mosObj/s: acked by the sink per second; DONE/s: jobs "
	    "DONE per second; CPU ms: per message, of mosgw or node;\n"
	    "gateway: x ceil, x JS: mosObj/s over the ceiling's and over the "
	    "JS device's\n");
}

/* The ceiling's runs of one placement, on one line. */
static void
ceiling_print(const struct ceiling *c, int k, const char *how)
{
	int	i;

	printf("gateway:   %s:", how);
	for (i = 0; i < c->n; i++)
		printf(" %.0f", c->runs[k][i]);
	putchar('\n');
}

/* The table, the ceiling's runs, the comparisons, the live figures. */
static void
report(const struct frames *f, const struct ceiling *c, double raw,
    const struct e2e *full, const struct e2e *normal, const char *js_label,
    double js_rate, double js_cpu)
{
	report_table(f, c, raw, full, normal, js_label, js_rate, js_cpu);
	printf("gateway: ceiling runs in round trips/s (before FULL, before "
	    "NORMAL, after NORMAL); the best is the ceiling:\n");
	ceiling_print(c, 0, "client and sink on one CPU");
	ceiling_print(c, 1, "client and sink on any CPU");
	printf("gateway:   (on an idle machine, a ping-pong across CPUs "
	    "wakes an idle CPU at every hop: slower than the work itself)\n");
	printf("gateway: mosgw vs the JS device, end to end (DONE/s): "
	    "FULL %.1fx the rate, %.1fx less CPU per message; NORMAL %.1fx, "
	    "%.1fx\n", ratio(full->rate, js_rate),
	    ratio(js_cpu, full->cpu_per_msg * 1000),
	    ratio(normal->rate, js_rate),
	    ratio(js_cpu, normal->cpu_per_msg * 1000));
	printf("gateway: mosgw vs the ceiling: FULL %.0f%%, NORMAL %.0f%% of "
	    "the sink's bare ping-pong rate\n",
	    100 * ratio(full->wire_rate, c->best),
	    100 * ratio(normal->wire_rate, c->best));
	printf("gateway: live, %ld changes each in its own catalog_put "
	    "transaction while delivering:\n", full->nlive);
	printf("gateway:   synchronous=FULL   %8.0f changes/s end to end "
	    "(catalog_put alone %.0f/s)\n", full->live_rate, full->put_rate);
	printf("gateway:   synchronous=NORMAL %8.0f changes/s end to end "
	    "(catalog_put alone %.0f/s)\n", normal->live_rate,
	    normal->put_rate);
}

/* A positive integer from the environment, or the default. */
static long
env_long(const char *name, long def)
{
	const char	*s = getenv(name);
	long		 v;

	if (s == NULL || (v = strtol(s, NULL, 10)) <= 0)
		return def;
	return v;
}

/* Ceilings, the two end-to-end runs, the JS peer, the comparison. */
int
main(void)
{
	struct frames	 f;
	struct ceiling	 c;
	struct e2e	 full, normal;
	double		 raw, js_rate = 0, js_cpu = 0;
	char		 node[32] = "?", js_label[64];
	long		 n = env_long("BENCH_GW_N", 20000);
	long		 nlive = env_long("BENCH_GW_LIVE", 2000);

	mos_init();
	signal(SIGPIPE, SIG_IGN);
	frames_build(&f);
	memset(&c, 0, sizeof c);
	if ((raw = pingpong(&f, false, true)) < 0 ||
	    ceiling_run(&f, &c) != 0 ||
	    e2e_run(false, n, nlive, &full) != 0 ||
	    ceiling_run(&f, &c) != 0 ||
	    e2e_run(true, n, nlive, &normal) != 0 ||
	    ceiling_run(&f, &c) != 0) {
		fprintf(stderr, "bench_gateway: a measurement failed\n");
		frames_clear(&f);
		return 1;
	}
	if (js_device(n / 4, &js_rate, &js_cpu, node, sizeof node) == 0)
		snprintf(js_label, sizeof js_label, "JS device, mos-connection "
		    "4.1.1, Node %s", node);
	else {
		snprintf(js_label, sizeof js_label,
		    "JS device (issue 4, quoted, not measured)");
		js_rate = 1000;
		js_cpu = 0.8;
	}
	report(&f, &c, raw, &full, &normal, js_label, js_rate, js_cpu);
	frames_clear(&f);
	return 0;
}
