/*
 * bench_api: the HTTP API of the real mosgw (synchronous = full) beside
 * the HTTP ceiling of this machine, measured in the same run with the same
 * client.
 *
 *   ceiling   an evhttp server in this process whose handler answers 202
 *             with a small JSON body and does nothing else
 *   latency   PUTs paced at BENCH_API_RATE a second (default 1000) over
 *             BENCH_API_PACED keep-alive connections (default 4), each to
 *             a new objID: the time from sending the PUT to its 202, and
 *             to the scripted NCS receiving the mosObj (PUT-to-wire; the
 *             NCS's receipt time is taken before it parses the frame).
 *             Against the ceiling only the first applies.
 *   rate      BENCH_API_CLIENTS keep-alive clients (default 32), each
 *             sending PUTs one after the other for BENCH_API_SECS seconds
 *             (default 3): answers a second; concurrent PUTs share commits
 *   import    BENCH_API_IMPORT assets (default 20000) in one NDJSON POST,
 *             with one client sending PUTs one after the other beside it
 *             (their answer times: what a transaction of the import makes
 *             others wait), the longest transaction of the import (from
 *             the gateway's log) and the machine's load average;
 *             BENCH_API_PROBE=0: no PUTs beside it
 *   drivers   the latency and rate phases again against mosgw on
 *             PostgreSQL (the server of $MOSGW_PG_DSN, a database of its
 *             own; bench/run.sh starts a throwaway cluster with fsync and
 *             synchronous_commit on), with a scripted NCS of its own: one
 *             line per store in one table, with the rate at which the
 *             rate phase's mosObj reached the NCS ("skipped: REASON"
 *             without a server)
 *   fsync     the floor of a durable commit: BENCH_API_FSYNCS times
 *             (default 1000) a 4 KiB append to a file beside the database
 *             and fdatasync(2), as SQLite's WAL commit with synchronous =
 *             full does at the least; measured just before the paced PUTs
 *
 * Figures only: nothing here is asserted. Every phase is bounded in time.
 * Environment: MOSGW_BIN, MOSGW_TOP, MOSGW_TMP as for the tests.
 */
#include "gateway/tests/ncspeer.c"
#include "gateway/tests/gwproc.c"
#include "gateway/tests/httpc.c"
#include "bench/benchpg.c"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>

#define TOK		"bench-api-token-0123456789abcdef"
#define WIRE_WAIT_MS	30000
#define MAX_CLIENTS	256

static int	rate = 1000, paced = 4, nclients = 32, secs = 3, nimport = 20000;
static int	nfsync = 1000;

/* ------------------------------------------------------------------------ */
/* The ceiling: evhttp answering at once. */

struct null_server {
	struct event_base	*base;
	struct evhttp		*http;
	struct event		*tick;
	uint16_t		 port;
	pthread_t		 th;
	volatile int		 stop;	/* the loop looks every 20 ms */
};

static void
null_tick(evutil_socket_t fd, short ev, void *arg)
{
	struct null_server	*s = arg;

	(void)fd;
	(void)ev;
	if (s->stop)
		event_base_loopbreak(s->base);
}

static void
null_cb(struct evhttp_request *req, void *arg)
{
	struct evbuffer	*b = evbuffer_new();

	(void)arg;
	evbuffer_add_printf(b, "{\"objID\":\"X\",\"objRev\":1,\"jobs\":[]}");
	evhttp_add_header(evhttp_request_get_output_headers(req),
	    "Content-Type", "application/json");
	evhttp_send_reply(req, 202, "Accepted", b);
	evbuffer_free(b);
}

static void *
null_main(void *arg)
{
	struct null_server	*s = arg;

	event_base_dispatch(s->base);
	return NULL;
}

static int
null_start(struct null_server *s)
{
	struct evhttp_bound_socket	*bs;
	struct timeval			 tv = { 0, 20000 };
	struct sockaddr_in		 sin;
	socklen_t			 len = sizeof sin;

	memset(s, 0, sizeof *s);
	if ((s->base = event_base_new()) == NULL ||
	    (s->http = evhttp_new(s->base)) == NULL)
		return -1;
	evhttp_set_gencb(s->http, null_cb, NULL);
	evhttp_set_allowed_methods(s->http, EVHTTP_REQ_GET | EVHTTP_REQ_PUT |
	    EVHTTP_REQ_POST);
	if ((bs = evhttp_bind_socket_with_handle(s->http, "127.0.0.1", 0)) ==
	    NULL || getsockname(evhttp_bound_socket_get_fd(bs),
	    (struct sockaddr *)&sin, &len) != 0)
		return -1;
	s->port = ntohs(sin.sin_port);
	if ((s->tick = event_new(s->base, -1, EV_PERSIST, null_tick, s)) ==
	    NULL || event_add(s->tick, &tv) != 0)
		return -1;
	return pthread_create(&s->th, NULL, null_main, s) == 0 ? 0 : -1;
}

static void
null_stop(struct null_server *s)
{
	s->stop = 1;
	pthread_join(s->th, NULL);
	event_free(s->tick);
	evhttp_free(s->http);
	event_base_free(s->base);
}

/* ------------------------------------------------------------------------ */
/* The client. */

static int64_t
now_us(void)
{
	return ncspeer_now_us();
}

/* One PUT on a kept-alive connection; the status (0: none). */
static int
put(int fd, const char *obj_id)
{
	struct httpc_resp	 r;
	char			 path[96], body[160];
	int			 st;

	snprintf(path, sizeof path, "/v1/assets/%s", obj_id);
	snprintf(body, sizeof body, "{\"objSlug\":\"Bench %s\",\"objDur\":"
	    "1500,\"objTB\":50}", obj_id);
	memset(&r, 0, sizeof r);
	if (httpc_do(fd, "PUT", path, TOK, NULL, body, &r) != 0)
		return 0;
	st = r.status;
	httpc_resp_clear(&r);
	return st;
}

/* A paced sender: its share of the PUTs at their times. */
struct pacer {
	uint16_t	 port;
	int		 idx;		/* 0 .. paced-1 */
	int		 n;		/* PUTs in all (every pacer) */
	int64_t		 t0;
	const char	*prefix;
	int64_t		*sent;		/* per PUT: when sent (us) */
	int64_t		*answered;	/* and when answered */
	int		 errors;
};

static void *
pacer_main(void *arg)
{
	struct pacer	*p = arg;
	struct timespec	 ts;
	char		 id[64];
	int64_t		 due, now;
	int		 fd, i;

	if ((fd = httpc_connect(p->port)) == -1) {
		p->errors = p->n;
		return NULL;
	}
	for (i = p->idx; i < p->n; i += paced) {
		due = p->t0 + (int64_t)i * 1000000 / rate;
		if ((now = now_us()) < due) {
			ts.tv_sec = (due - now) / 1000000;
			ts.tv_nsec = (long)((due - now) % 1000000) * 1000;
			nanosleep(&ts, NULL);
		}
		snprintf(id, sizeof id, "%s%06d", p->prefix, i);
		p->sent[i] = now_us();
		if (put(fd, id) != 202)
			p->errors++;
		p->answered[i] = now_us();
	}
	close(fd);
	return NULL;
}

static int
cmp64(const void *a, const void *b)
{
	int64_t	x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* p50 and p99 of n values (sorted here), in ms. */
static void
pcts(int64_t *v, int n, double *p50, double *p99)
{
	qsort(v, (size_t)n, sizeof *v, cmp64);
	*p50 = n > 0 ? v[n / 2] / 1000.0 : -1;
	*p99 = n > 0 ? v[(n * 99) / 100 < n ? (n * 99) / 100 : n - 1] /
	    1000.0 : -1;
}

/*
 * Paced PUTs: answer latency, and with an NCS peer the PUT-to-wire
 * latency. Returns the number of errors.
 */
static int
paced_run(uint16_t port, struct ncspeer *ncs, const char *prefix, int n,
    double *a50, double *a99, double *w50, double *w99)
{
	struct pacer		 p[MAX_CLIENTS];
	pthread_t		 th[MAX_CLIENTS];
	struct ncspeer_match	 m = { .type = "mosObj",
				    .side = NCSPEER_ACCEPTED };
	const struct ncspeer_frame *f;
	int64_t			*sent, *ans, *lat;
	char			 id[64];
	int			 i, errors = 0, nw = 0;

	sent = calloc((size_t)n, sizeof *sent);
	ans = calloc((size_t)n, sizeof *ans);
	lat = calloc((size_t)n, sizeof *lat);
	if (sent == NULL || ans == NULL || lat == NULL)
		abort();
	for (i = 0; i < paced; i++) {
		p[i].port = port;
		p[i].idx = i;
		p[i].n = n;
		p[i].t0 = now_us() + 20000;
		p[i].prefix = prefix;
		p[i].sent = sent;
		p[i].answered = ans;
		p[i].errors = 0;
		if (i > 0)
			p[i].t0 = p[0].t0;
		pthread_create(&th[i], NULL, pacer_main, &p[i]);
	}
	for (i = 0; i < paced; i++) {
		pthread_join(th[i], NULL);
		errors += p[i].errors;
	}
	for (i = 0; i < n; i++)
		lat[i] = ans[i] - sent[i];
	pcts(lat, n, a50, a99);
	*w50 = *w99 = -1;
	if (ncs != NULL) {
		for (i = 0; i < n; i++) {
			snprintf(id, sizeof id, "%s%06d", prefix, i);
			m.obj_id = id;
			if ((f = ncspeer_wait(ncs, &m, WIRE_WAIT_MS)) == NULL) {
				errors++;
				continue;
			}
			lat[nw++] = f->t_us - sent[i];
		}
		pcts(lat, nw, w50, w99);
	}
	free(sent);
	free(ans);
	free(lat);
	return errors;
}

/* A client of the rate phase: PUTs one after the other until the end. */
struct hammer {
	uint16_t	port;
	int		idx;
	int64_t		end;
	const char	*prefix;
	long		ok;
	long		errors;
};

static void *
hammer_main(void *arg)
{
	struct hammer	*h = arg;
	char		 id[64];
	int		 fd;
	long		 i;

	if ((fd = httpc_connect(h->port)) == -1) {
		h->errors++;
		return NULL;
	}
	for (i = 0; now_us() < h->end; i++) {
		snprintf(id, sizeof id, "%s%03d-%06ld", h->prefix, h->idx, i);
		if (put(fd, id) == 202)
			h->ok++;
		else
			h->errors++;
	}
	close(fd);
	return NULL;
}

/*
 * Answers a second with nclients clients; *errors gets the failures, *oks
 * (if not NULL) the answers.
 */
static double
rate_run(uint16_t port, const char *prefix, long *errors, long *oks)
{
	struct hammer	h[MAX_CLIENTS];
	pthread_t	th[MAX_CLIENTS];
	int64_t		t0 = now_us(), end = t0 + (int64_t)secs * 1000000;
	long		ok = 0;
	int		i;

	*errors = 0;
	for (i = 0; i < nclients; i++) {
		memset(&h[i], 0, sizeof h[i]);
		h[i].port = port;
		h[i].idx = i;
		h[i].end = end;
		h[i].prefix = prefix;
		pthread_create(&th[i], NULL, hammer_main, &h[i]);
	}
	for (i = 0; i < nclients; i++) {
		pthread_join(th[i], NULL);
		ok += h[i].ok;
		*errors += h[i].errors;
	}
	if (oks != NULL)
		*oks = ok;
	return ok / ((double)(now_us() - t0) / 1e6);
}

/* What the latency and rate phases measure on one gateway. */
struct pubfig {
	double	a50, a99, w50, w99;	/* PUT answer and PUT-to-wire, ms */
	double	rate;			/* PUTs/s, many clients */
	double	wire;			/* their mosObj/s reaching the NCS */
	double	cpu;			/* the gateway's CPU s in the rate phase */
	long	errors;
};

/*
 * The paced PUTs, then the rate phase; the wire rate is the rate phase's
 * PUTs over the time from its start to the last of their mosObj at the NCS.
 */
static void
pub_run(struct gwproc *gp, struct ncspeer *ncs, struct pubfig *f, int n)
{
	struct ncspeer_match		 m = { .type = "mosObj",
					    .side = NCSPEER_ACCEPTED };
	const struct ncspeer_frame	*fr;
	size_t				 before, i, nf;
	int64_t				 t0, last = 0;
	double				 cpu0;
	long				 rerr, oks;

	memset(f, 0, sizeof *f);
	f->errors = paced_run(gp->api_port, ncs, "L-", n, &f->a50, &f->a99,
	    &f->w50, &f->w99);
	gwproc_wait_idle(gp, "ncs:n1", WIRE_WAIT_MS);
	before = ncspeer_count(ncs, &m);
	cpu0 = gwproc_cpu(gp);
	t0 = now_us();
	f->rate = rate_run(gp->api_port, "R-", &rerr, &oks);
	f->cpu = gwproc_cpu(gp) - cpu0;
	f->errors += rerr;
	/* every PUT answered 202 made one mosObj */
	ncspeer_wait_count(ncs, &m, before + (size_t)oks, WIRE_WAIT_MS * 4);
	nf = ncspeer_nframes(ncs);
	for (i = 0; i < nf; i++) {
		fr = ncspeer_frame_at(ncs, i);
		if (strcmp(fr->type_name, "mosObj") == 0 && fr->t_us > last)
			last = fr->t_us;
	}
	if (last > t0)
		f->wire = (double)(ncspeer_count(ncs, &m) - before) /
		    ((double)(last - t0) / 1e6);
	gwproc_wait_idle(gp, "ncs:n1", WIRE_WAIT_MS * 4);
}

/* A scripted NCS and mosgw with one NCS section for it, links up. */
static struct gwproc *
gw_start(struct ncspeer **ncsp, struct gwproc_opts *o, const char *tokens)
{
	struct ncspeer_opts	 po;
	struct ncspeer		*ncs;
	struct gwproc		*gp;

	memset(&po, 0, sizeof po);
	po.mos_id = "mosgw.bench";
	po.ncs_id = "NCSBENCH";
	po.enc = MOS_ENC_UTF16BE;
	if ((*ncsp = ncs = ncspeer_new(&po)) == NULL)
		return NULL;
	memset(o, 0, sizeof *o);
	o->mos_id = "mosgw.bench";
	o->log_level = "info";
	o->database_extra = "synchronous = full\nhistory = off\n";
	o->api_tokens = tokens;
	o->api_extra = "max_connections = 1024\n";
	o->nncs = 1;
	o->ncs[0].ncs_id = "NCSBENCH";
	o->ncs[0].lower_port = ncspeer_port(ncs, NCSPEER_LOWER);
	o->ncs[0].upper_port = ncspeer_port(ncs, NCSPEER_UPPER);
	if ((gp = gwproc_new(o)) == NULL || gwproc_start(gp) != 0 ||
	    ncspeer_wait_open(ncs, NCSPEER_LOWER, NCSPEER_ACCEPTED, 1,
	    GWPROC_LINK_MS) != 0) {
		gwproc_free(gp);
		return NULL;
	}
	return gp;
}

/* PUTs one after the other while the import runs: their answer times. */
struct prober {
	uint16_t	 port;
	volatile int	 stop;
	int64_t		*lat;		/* us */
	int		 n, cap, errors;
};

static void *
prober_main(void *arg)
{
	struct prober	*p = arg;
	char		 id[64];
	int64_t		 t0;
	int		 fd;

	if ((fd = httpc_connect(p->port)) == -1) {
		p->errors++;
		return NULL;
	}
	while (!p->stop && p->n < p->cap) {
		snprintf(id, sizeof id, "P-%06d", p->n);
		t0 = now_us();
		if (put(fd, id) != 202)
			p->errors++;
		p->lat[p->n++] = now_us() - t0;
	}
	close(fd);
	return NULL;
}

/* The 1-minute load average of the machine. */
static double
loadavg(void)
{
	double	l = -1;
	FILE	*f;

	if ((f = fopen("/proc/loadavg", "r")) != NULL) {
		if (fscanf(f, "%lf", &l) != 1)
			l = -1;
		fclose(f);
	}
	return l;
}

/* The import: assets a second (0 on failure). */
static double
import_run(uint16_t port)
{
	struct httpc_resp	 r;
	char			*body, *req, *p;
	size_t			 cap = (size_t)nimport * 320 + 1;
	int64_t			 t0;
	int			 fd, i, len;
	double			 s;

	if ((body = malloc(cap)) == NULL)
		abort();
	p = body;
	for (i = 0; i < nimport; i++)
		p += snprintf(p, cap - (size_t)(p - body), "{\"objID\":"
		    "\"IMP-%07d\",\"objSlug\":\"Imported clip %d\",\"objDur\":"
		    "%d,\"objTB\":50,\"description\":\"A clip of the bench\","
		    "\"objPaths\":{\"objPath\":[{\"@techDescription\":\"H.264\","
		    "\"#text\":\"http://media/i%d.mp4\"}]}}\n", i, i, 1000 + i,
		    i);
	len = asprintf(&req, "POST /v1/assets:import HTTP/1.1\r\nHost: x\r\n"
	    "Authorization: Bearer " TOK "\r\nContent-Type: "
	    "application/x-ndjson\r\nContent-Length: %zu\r\n\r\n%s",
	    strlen(body), body);
	free(body);
	if (len < 0 || (fd = httpc_connect(port)) == -1)
		abort();
	memset(&r, 0, sizeof r);
	t0 = now_us();
	if (httpc_write(fd, req, (size_t)len) != 0 ||
	    httpc_read(fd, &r, 120000) != 0 || r.status != 200 ||
	    strstr(r.body, "\"refused\":[]") == NULL) {
		fprintf(stderr, "bench_api: import: %d %s\n", r.status,
		    r.body != NULL ? r.body : "");
		s = 0;
	} else
		s = nimport / ((double)(now_us() - t0) / 1e6);
	close(fd);
	free(req);
	httpc_resp_clear(&r);
	return s;
}

/*
 * The fsync floor on the file system of the database (dir): 4 KiB appended
 * and fdatasync'd n times; p50 and p99 in ms (-1 if the file fails).
 */
static void
fsync_run(const char *dir, int n, double *p50, double *p99)
{
	static const char	 page[4096];
	int64_t			*v, t;
	char			 path[512];
	int			 fd, i;

	*p50 = *p99 = -1;
	snprintf(path, sizeof path, "%s/fsync-floor.%d", dir, (int)getpid());
	if ((v = calloc((size_t)n, sizeof *v)) == NULL)
		abort();
	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
	    0600)) == -1) {
		fprintf(stderr, "bench_api: %s: %s\n", path, strerror(errno));
		free(v);
		return;
	}
	for (i = 0; i < n; i++) {
		t = now_us();
		if (pwrite(fd, page, sizeof page, (off_t)i * (off_t)sizeof page)
		    != (ssize_t)sizeof page || fdatasync(fd) != 0) {
			fprintf(stderr, "bench_api: %s: %s\n", path,
			    strerror(errno));
			break;
		}
		v[i] = now_us() - t;
	}
	if (i == n)
		pcts(v, n, p50, p99);
	close(fd);
	unlink(path);
	free(v);
}

/* CPU seconds of each thread of the gateway (up to max); how many. */
static size_t
thread_cpu(struct gwproc *gp, double *v, size_t max)
{
	char			 path[300], buf[1024], *p;
	unsigned long long	 ut, st;
	struct dirent		*de;
	DIR			*d;
	FILE			*f;
	size_t			 n = 0, len;

	snprintf(path, sizeof path, "/proc/%d/task", (int)gp->pid);
	if ((d = opendir(path)) == NULL)
		return 0;
	while ((de = readdir(d)) != NULL && n < max) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "/proc/%d/task/%s/stat",
		    (int)gp->pid, de->d_name);
		if ((f = fopen(path, "r")) == NULL)
			continue;
		len = fread(buf, 1, sizeof buf - 1, f);
		fclose(f);
		buf[len] = '\0';
		if ((p = strrchr(buf, ')')) != NULL && sscanf(p + 2, "%*c %*d "
		    "%*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut,
		    &st) == 2)
			v[n++] = (double)(ut + st) /
			    (double)sysconf(_SC_CLK_TCK);
	}
	closedir(d);
	return n;
}

/* One line of the table of stores. */
static void
pub_line(const char *name, const struct pubfig *f)
{
	printf("%-34s %6.2f /%7.2f %6.2f /%7.2f %9.0f %10.0f\n", name, f->w50,
	    f->w99, f->a50, f->a99, f->rate, f->wire);
}

static int
env_int(const char *name, int def, int max)
{
	const char	*s = getenv(name);
	int		 v;

	if (s == NULL || (v = atoi(s)) < 1)
		return def;
	return v > max ? max : v;
}

int
main(void)
{
	struct null_server	 ns;
	struct ncspeer		*ncs;
	struct gwproc_opts	 o;
	struct gwproc		*gp;
	struct pubfig		 sq, pg;
	const char		*why;
	double			 na50, na99, nw50, nw99, nrate;
	double			 f50, f99;
	double			 imp, t0[8], t1[8], tcpu = 0;
	double			 tmax = 0, txmax = -1, pr50, pr99, prmax;
	double			 load0, load1;
	struct prober		 pr;
	pthread_t		 prth;
	char			*log, *l;
	int			 ntx = 0, probe;
	size_t			 nt, i;
	long			 nerr;
	int			 e1, n;
	char			 tokens[128], pgset[256];

	rate = env_int("BENCH_API_RATE", rate, 100000);
	paced = env_int("BENCH_API_PACED", paced, MAX_CLIENTS);
	nclients = env_int("BENCH_API_CLIENTS", nclients, MAX_CLIENTS);
	secs = env_int("BENCH_API_SECS", secs, 60);
	nimport = env_int("BENCH_API_IMPORT", nimport, 1000000);
	nfsync = env_int("BENCH_API_FSYNCS", nfsync, 1000000);
	n = rate * secs;
	signal(SIGPIPE, SIG_IGN);
	mos_init();

	/* the ceiling first, alone on the machine */
	if (null_start(&ns) != 0) {
		fprintf(stderr, "bench_api: cannot start the evhttp server\n");
		return 1;
	}
	e1 = paced_run(ns.port, NULL, "N-", n, &na50, &na99, &nw50, &nw99);
	nrate = rate_run(ns.port, "NR-", &nerr, NULL);
	null_stop(&ns);

	snprintf(tokens, sizeof tokens, "bench write %s\n", TOK);
	setenv("MOSGW_DB_DRIVER", "sqlite", 1);
	if ((gp = gw_start(&ncs, &o, tokens)) == NULL) {
		fprintf(stderr, "bench_api: the gateway did not start\n");
		return 1;
	}
	fsync_run(gp->dir, nfsync, &f50, &f99);
	pub_run(gp, ncs, &sq, n);
	/* the import's CPU per thread (the threads' order stays) */
	load0 = loadavg();
	memset(&pr, 0, sizeof pr);
	pr.port = gp->api_port;
	pr.cap = 100000;
	if ((pr.lat = calloc((size_t)pr.cap, sizeof *pr.lat)) == NULL)
		abort();
	probe = getenv("BENCH_API_PROBE") == NULL ||
	    strcmp(getenv("BENCH_API_PROBE"), "0") != 0;
	nt = thread_cpu(gp, t0, 8);
	if (probe)
		pthread_create(&prth, NULL, prober_main, &pr);
	imp = import_run(gp->api_port);
	pr.stop = 1;
	if (probe)
		pthread_join(prth, NULL);
	load1 = loadavg();
	pcts(pr.lat, pr.n, &pr50, &pr99);
	prmax = pr.n > 0 ? pr.lat[pr.n - 1] / 1000.0 : -1;
	free(pr.lat);
	/* the longest transaction of the import, from the gateway's log */
	if ((log = gwproc_log_text(gp)) != NULL &&
	    (l = strstr(log, "event=api.import")) != NULL &&
	    (l = strstr(l, "longest_tx_ms=")) != NULL)
		txmax = atof(l + 14);
	if (log != NULL && (l = strstr(log, "event=api.import")) != NULL &&
	    (l = strstr(l, "transactions=")) != NULL)
		ntx = atoi(l + 13);
	free(log);
	if (thread_cpu(gp, t1, 8) == nt)
		for (i = 0; i < nt; i++) {
			tcpu += t1[i] - t0[i];
			if (t1[i] - t0[i] > tmax)
				tmax = t1[i] - t0[i];
		}

	printf("api: synchronous=full, history off, one scripted NCS acking "
	    "every mosObj; ceiling: an evhttp handler that only answers\n");
	printf("%-44s %14s %14s %14s\n", "", "mosgw", "evhttp null",
	    "bare fsync");
	printf("%-44s %6.2f /%6.2f %6.2f /%6.2f %6.2f /%6.2f\n", "PUT answer ms "
	    "p50 / p99 (paced)", sq.a50, sq.a99, na50, na99, f50, f99);
	printf("%-44s %6.2f /%6.2f %14s %6.2f /%6.2f\n", "PUT-to-wire ms p50 / "
	    "p99 (paced)", sq.w50, sq.w99, "-", f50, f99);
	printf("%-44s %14.0f %14.0f\n", "PUTs/s, many keep-alive clients",
	    sq.rate, nrate);
	printf("%-44s %14.0f %14s\n", "imported assets/s (one NDJSON POST)",
	    imp, "-");
	if (tmax > 0)
		printf("%-44s %7.1f /%6.1f %14s\n", "import CPU us/asset: all / "
		    "busiest thread", tcpu * 1e6 / nimport, tmax * 1e6 /
		    nimport, "-");
	printf("%-44s %14.1f %14s\n", "import: longest transaction ms", txmax,
	    "-");
	printf("%-44s %6.2f /%6.2f %14s\n", "PUT answer ms during the import "
	    "p50 / max", pr50, prmax, "-");
	printf("paced: %d PUTs at %d/s over %d connections; rate: %d "
	    "clients for %d s (mosgw CPU %.2f s); import: %d assets in %d "
	    "transactions, %d PUTs beside it; load average %.1f before the "
	    "import, %.1f after (%ld cores); bare fsync: %d x (4 KiB append "
	    "+ fdatasync) beside the database, just before the paced PUTs\n",
	    n, rate, paced, nclients, secs, sq.cpu, nimport, ntx, pr.n,
	    load0, load1, sysconf(_SC_NPROCESSORS_ONLN), nfsync);
	if (e1 > 0 || nerr > 0 || sq.errors > 0 || pr.errors > 0)
		printf("errors: paced %d (null), rate %ld (null), paced and "
		    "rate %ld (mosgw), PUTs beside the import %d\n", e1, nerr,
		    sq.errors, pr.errors);
	gwproc_free(gp);
	ncspeer_free(ncs);

	/* the same phases on PostgreSQL */
	if ((why = benchpg_why()) == NULL) {
		benchpg_settings(getenv("MOSGW_PG_DSN"), pgset, sizeof pgset);
		setenv("MOSGW_DB_DRIVER", "postgresql", 1);
		if ((gp = gw_start(&ncs, &o, tokens)) == NULL)
			why = "the gateway did not start on PostgreSQL";
		else
			pub_run(gp, ncs, &pg, n);
		gwproc_free(gp);
		ncspeer_free(ncs);
	}
	printf("api: the same client and scripted NCS against mosgw on each "
	    "store (history off)\n");
	printf("%-34s %15s %15s %9s %10s\n", "", "PUT-to-wire ms", "PUT answer "
	    "ms", "PUTs/s", "mosObj/s");
	printf("%-34s %15s %15s %9s %10s\n", "", "p50 / p99", "p50 / p99",
	    "(rate)", "to the NCS");
	pub_line("SQLite (synchronous = full)", &sq);
	if (why == NULL)
		pub_line("PostgreSQL (one server, loopback)", &pg);
	else
		printf("%-34s skipped: %s\n", "PostgreSQL (one server, loopback)",
		    why);
	if (why == NULL)
		printf("PostgreSQL: %s; mosgw CPU in the rate phase %.2f s "
		    "(SQLite %.2f s)\n", pgset, pg.cpu, sq.cpu);
	if (why == NULL && pg.errors > 0)
		printf("errors on PostgreSQL: %ld\n", pg.errors);
	return 0;
}
