/*
 * bench_gateway: asset changes per second through the real mosgw, end to
 * end, into a fast C NCS sink on loopback, beside the ceilings measured in
 * the same run.
 *
 *   ceiling  a bare ping-pong over one socket: a mosObj-sized frame out, a
 *            mosAck-sized frame back (raw echo, no parsing), and the same
 *            through the sink (ncspeer: framing, parsing, writing the mosAck)
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

#include "gateway/gateway.h"

#define PINGPONG_MS	1500
#define DRAIN_MS	20000
#define BATCH		500	/* backlog puts per transaction */

/* A socket pair over loopback TCP (not AF_UNIX: the gateway uses TCP). */
static int
tcp_pair(int fds[2])
{
	struct sockaddr_in	sin;
	socklen_t		len = sizeof sin;
	int			l, one = 1;

	if ((l = socket(AF_INET, SOCK_STREAM, 0)) == -1)
		return -1;
	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(l, (struct sockaddr *)&sin, sizeof sin) == -1 ||
	    listen(l, 1) == -1 ||
	    getsockname(l, (struct sockaddr *)&sin, &len) == -1 ||
	    (fds[0] = socket(AF_INET, SOCK_STREAM, 0)) == -1 ||
	    connect(fds[0], (struct sockaddr *)&sin, sizeof sin) == -1 ||
	    (fds[1] = accept(l, NULL, NULL)) == -1) {
		close(l);
		return -1;
	}
	close(l);
	setsockopt(fds[0], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	setsockopt(fds[1], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	return 0;
}

/* Read exactly n bytes (blocking). */
static int
read_full(int fd, uint8_t *buf, size_t n)
{
	ssize_t	r;
	size_t	off = 0;

	while (off < n) {
		if ((r = read(fd, buf + off, n - off)) <= 0)
			return -1;
		off += (size_t)r;
	}
	return 0;
}

/* Write all of n bytes (blocking). */
static int
write_full(int fd, const uint8_t *buf, size_t n)
{
	ssize_t	w;
	size_t	off = 0;

	while (off < n) {
		if ((w = write(fd, buf + off, n - off)) <= 0)
			return -1;
		off += (size_t)w;
	}
	return 0;
}

struct echo {
	int		 fd;
	size_t		 req_len;
	const uint8_t	*resp;
	size_t		 resp_len;
};

/* The raw echo server: read a request's bytes, write the reply's bytes. */
static void *
echo_main(void *arg)
{
	struct echo	*e = arg;
	uint8_t		*buf;

	if ((buf = malloc(e->req_len)) == NULL)
		abort();
	while (read_full(e->fd, buf, e->req_len) == 0 &&
	    write_full(e->fd, e->resp, e->resp_len) == 0)
		;
	free(buf);
	return NULL;
}

/* A typical mosObj (about 1.5 KB in UTF-16BE) and its mosAck, encoded. */
static void
sample_frames(struct mos_buf *obj, struct mos_buf *ack)
{
	struct mos_msg	*m, *a;
	struct mos_obj	*o;
	char		 err[128];

	m = mos_msg_new(MOS_T_MOS_OBJ);
	m->mos_id = "mosgw.bench";
	m->ncs_id = "NCSSINK";
	m->has_message_id = true;
	m->message_id = 4242;
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
	a = mos_msg_new(MOS_T_MOS_ACK);
	a->mos_id = "mosgw.bench";
	a->ncs_id = "NCSSINK";
	a->has_message_id = true;
	a->message_id = 4242;
	a->u.mos_ack.obj_id = "M000123";
	a->u.mos_ack.obj_rev = 3;
	a->u.mos_ack.has_obj_rev = true;
	a->u.mos_ack.status = "ACK";
	if (mos_write(m, MOS_ENC_UTF16BE, obj, err, sizeof err) != 0 ||
	    mos_write(a, MOS_ENC_UTF16BE, ack, err, sizeof err) != 0) {
		fprintf(stderr, "bench_gateway: %s\n", err);
		exit(1);
	}
	mos_msg_free(m);
	mos_msg_free(a);
}

/* Round trips per second over one socket: raw echo. */
static double
pingpong_raw(const struct mos_buf *obj, const struct mos_buf *ack)
{
	struct echo	 e;
	pthread_t	 th;
	uint8_t		*buf;
	int		 fds[2];
	int64_t		 t0;
	long		 n = 0;

	if (tcp_pair(fds) != 0 || (buf = malloc(ack->len)) == NULL)
		return 0;
	e.fd = fds[1];
	e.req_len = obj->len;
	e.resp = ack->data;
	e.resp_len = ack->len;
	pthread_create(&th, NULL, echo_main, &e);
	t0 = ncspeer_now_ms();
	do {
		if (write_full(fds[0], obj->data, obj->len) != 0 ||
		    read_full(fds[0], buf, ack->len) != 0)
			break;
		n++;
	} while (ncspeer_now_ms() - t0 < PINGPONG_MS);
	shutdown(fds[0], SHUT_RDWR);
	pthread_join(th, NULL);
	close(fds[0]);
	close(fds[1]);
	free(buf);
	return n * 1000.0 / (double)(ncspeer_now_ms() - t0);
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

/* Round trips per second through the sink: it frames, parses, acks. */
static double
pingpong_sink(const struct mos_buf *obj)
{
	struct ncspeer_opts	 po;
	struct ncspeer		*sink;
	struct sockaddr_in	 sin;
	uint8_t			 buf[8192];
	size_t			 have;
	ssize_t			 r;
	int64_t			 t0;
	long			 n = 0;
	int			 fd, one = 1;

	memset(&po, 0, sizeof po);
	po.quiet = true;
	if ((sink = ncspeer_new(&po)) == NULL)
		return 0;
	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons(ncspeer_port(sink, NCSPEER_LOWER));
	if ((fd = socket(AF_INET, SOCK_STREAM, 0)) == -1 ||
	    connect(fd, (struct sockaddr *)&sin, sizeof sin) == -1) {
		ncspeer_free(sink);
		return 0;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	t0 = ncspeer_now_ms();
	do {
		if (write_full(fd, obj->data, obj->len) != 0)
			break;
		for (have = 0; !ends_frame(buf, have); have += (size_t)r) {
			if ((r = read(fd, buf + have, sizeof buf - have)) <= 0)
				goto out;
		}
		n++;
	} while (ncspeer_now_ms() - t0 < PINGPONG_MS);
out:
	close(fd);
	ncspeer_free(sink);
	return n * 1000.0 / (double)(ncspeer_now_ms() - t0);
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
};

/* One end-to-end run with the given durability. 0 or -1. */
static int
e2e_run(bool sync_normal, long n, long nlive, struct e2e *r)
{
	struct ncspeer_opts	 po;
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
	memset(&po, 0, sizeof po);
	po.quiet = true;
	po.mos_id = "mosgw.test";
	po.ncs_id = "NCSPEER";
	memset(&o, 0, sizeof o);
	o.log_level = "info";
	o.database_extra = sync_normal ? "synchronous = normal\n" :
	    "synchronous = full\n";
	o.nncs = 1;
	o.ncs[0].extra = "heartbeat_interval = 5\nack_timeout = 5\n"
	    "reconnect_min = 0.05\nreconnect_max = 0.1\n";
	sample_asset(&a);
	if ((sink = ncspeer_new(&po)) == NULL)
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
	struct ncspeer_opts	 po;
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
	memset(&po, 0, sizeof po);
	po.quiet = true;
	po.mos_id = "bench.js";
	po.ncs_id = "NCSSINK";
	if ((sink = ncspeer_new(&po)) == NULL)
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

/* One line of end-to-end figures. */
static void
e2e_print(const char *sync, const struct e2e *r, double sink)
{
	printf("gateway:   synchronous=%s %7.0f changes/s DONE, %7.0f mosObj/s "
	    "acked, %6.3f ms CPU/msg of mosgw (%.0f%% of the sink ceiling)\n",
	    sync, r->rate, r->wire_rate, r->cpu_per_msg * 1000,
	    100 * r->rate / sink);
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
	struct mos_buf	 obj = { NULL, 0, 0 }, ack = { NULL, 0, 0 };
	struct e2e	 full, normal;
	double		 raw, sink, js_rate = 0, js_cpu = 0;
	char		 node[32] = "?";
	long		 n = env_long("BENCH_GW_N", 20000);
	long		 nlive = env_long("BENCH_GW_LIVE", 2000);
	int		 js;

	mos_init();
	signal(SIGPIPE, SIG_IGN);
	sample_frames(&obj, &ack);
	raw = pingpong_raw(&obj, &ack);
	sink = pingpong_sink(&obj);
	printf("gateway: ceiling, raw ping-pong over one socket (%zu B mosObj, "
	    "%zu B mosAck, UTF-16BE): %.0f round trips/s\n", obj.len, ack.len, raw);
	printf("gateway: ceiling, the same through the C NCS sink (frame, parse, "
	    "write mosAck): %.0f round trips/s\n", sink);
	fflush(stdout);
	if (e2e_run(false, n, nlive, &full) != 0 ||
	    e2e_run(true, n, nlive, &normal) != 0) {
		fprintf(stderr, "bench_gateway: end-to-end run failed\n");
		return 1;
	}
	printf("gateway: end to end, backlog of %ld changes (mosObj -> mosAck "
	    "-> DONE), one outstanding mosObj per port:\n", n);
	e2e_print("FULL  ", &full, sink);
	e2e_print("NORMAL", &normal, sink);
	printf("gateway: live, %ld changes each in its own catalog_put "
	    "transaction while delivering:\n", nlive);
	printf("gateway:   synchronous=FULL   %8.0f changes/s end to end "
	    "(catalog_put alone %.0f/s)\n", full.live_rate, full.put_rate);
	printf("gateway:   synchronous=NORMAL %8.0f changes/s end to end "
	    "(catalog_put alone %.0f/s)\n", normal.live_rate, normal.put_rate);
	fflush(stdout);
	js = js_device(n / 4, &js_rate, &js_cpu, node, sizeof node);
	if (js == 0)
		printf("gateway: peer, @mos-connection/connector 4.1.1 "
		    "(Node %s) as the MOS device into the same sink: "
		    "%.0f mosObj/s, %.3f ms CPU/msg\n", node, js_rate, js_cpu);
	else {
		printf("gateway: peer, a typical JavaScript MOS device (issue 4): "
		    "under 1000 mosObj/s, about 0.8 ms CPU/msg\n");
		js_rate = 1000;
		js_cpu = 0.8;
	}
	printf("gateway: mosgw vs the JS device: %.1fx the rate (FULL), "
	    "%.1fx less CPU per message\n", full.rate / js_rate,
	    js_cpu / (full.cpu_per_msg * 1000 > 0 ? full.cpu_per_msg * 1000 :
	    0.001));
	mos_buf_free(&obj);
	mos_buf_free(&ack);
	return 0;
}
