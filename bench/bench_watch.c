/*
 * bench_watch: what watching costs. The publish rate of the real mosgw
 * (a backlog of asset changes delivered to a fast C NCS sink on loopback,
 * first mosObj to last job DONE) in two set-ups measured in the same run,
 * alternately:
 *
 *   plain    [log] format = logfmt (the default) at level info, nobody
 *            scraping
 *   watched  [log] format = json at level info (one publish.acked line per
 *            asset), GET /metrics scraped every second by a thread
 *
 * Each set-up runs BENCH_WATCH_ROUNDS times (default 2) with a backlog of
 * BENCH_WATCH_N changes (default 20000); the best rate of each is printed
 * with the difference. Figures are printed, never asserted. Every phase
 * has a deadline.
 */
#include "gateway/tests/ncspeer.c"
#include "gateway/tests/gwproc.c"
#include "gateway/tests/httpc.c"

#include <inttypes.h>
#include <pthread.h>

#include "gateway/gateway.h"

#define TOKEN		"bench-read-token-0123456789"
#define DRAIN_MS	60000
#define BATCH		500
#define SCRAPE_MS	1000

struct scraper {
	pthread_t	 th;
	uint16_t	 port;
	volatile bool	 stop;
	long		 scrapes;
	long		 bad;
	size_t		 bytes;
};

/* The scraping thread: GET /metrics every second until told to stop. */
static void *
scrape_main(void *arg)
{
	struct scraper		*s = arg;
	struct httpc_resp	 r;
	int64_t			 next = ncspeer_now_ms();

	while (!s->stop) {
		if (ncspeer_now_ms() < next) {
			usleep(10000);
			continue;
		}
		next += SCRAPE_MS;
		if (httpc_once(s->port, "GET", "/metrics", TOKEN, NULL, NULL,
		    &r) == 0 && r.status == 200) {
			s->scrapes++;
			s->bytes = r.body_len;
		} else
			s->bad++;
		httpc_resp_clear(&r);
	}
	return NULL;
}

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

/* Put n assets, BATCH per transaction. 0 or -1. */
static int
put_assets(struct gwdb *g, long n)
{
	struct catalog_asset	 a;
	char			 id[32], *err = NULL;
	long			 i;
	int			 rc = 0;

	memset(&a, 0, sizeof a);
	a.slug = xstrdup("Hotel fire: reporter package, second edit");
	a.type = xstrdup("VIDEO");
	a.tb = xstrdup("50");
	a.dur = 1500;
	a.air = xstrdup("READY");
	a.created_by = xstrdup("bench");
	a.changed_by = xstrdup("bench");
	catalog_add_path(&a, CATALOG_PATH, "MXF XDCAM HD 50",
	    "\\\\media01\\clips\\M000123.mxf");
	for (i = 0; i < n && rc == 0; i++) {
		if (i % BATCH == 0 && queue_tx_begin(g->q) != QUEUE_OK)
			rc = -1;
		snprintf(id, sizeof id, "BENCH-%07ld", i);
		free(a.obj_id);
		a.obj_id = xstrdup(id);
		if (rc == 0 && catalog_put(g, &a, NULL, NULL, &err) !=
		    QUEUE_OK) {
			fprintf(stderr, "bench_watch: catalog_put: %s\n", err);
			queue_tx_rollback(g->q);
			rc = -1;
		}
		if (rc == 0 && ((i + 1) % BATCH == 0 || i + 1 == n) &&
		    queue_tx_commit(g->q) != QUEUE_OK)
			rc = -1;
	}
	free(err);
	catalog_asset_clear(&a);
	return rc;
}

/* Jobs DONE (a second connection), -1 on error. */
static int64_t
done_count(struct queue *q)
{
	struct queue_stats	st;

	return queue_stats(q, &st) == QUEUE_OK ? st.count[QUEUE_DONE] : -1;
}

struct result {
	double	rate;		/* changes a second */
	double	cpu;		/* mosgw CPU seconds per 1000 changes */
	long	scrapes;
	long	bad;
	size_t	bytes;		/* of the last exposition */
	long	log_bytes;
};

/* One drain of n changes. 0 or -1. */
static int
drain(bool watched, long n, struct result *res)
{
	struct gwproc_opts	 o;
	struct gwdb_opts	 go;
	struct scraper		 sc;
	struct ncspeer		*sink = NULL;
	struct gwproc		*gp = NULL;
	struct gwdb		*g = NULL;
	char			*err = NULL;
	double			 cpu0;
	int64_t			 t0, t1 = -1;
	int			 rc = -1;
	bool			 scraping = false;

	memset(res, 0, sizeof *res);
	memset(&sc, 0, sizeof sc);
	memset(&o, 0, sizeof o);
	o.log_level = "info";
	o.log_extra = watched ? "format = json\n" : "format = logfmt\n";
	o.api_tokens = "prometheus read " TOKEN "\n";
	o.database_extra = "synchronous = normal\n";
	o.nncs = 1;
	o.ncs[0].extra = "heartbeat_interval = 5\nack_timeout = 5\n"
	    "reconnect_min = 0.05\nreconnect_max = 0.1\n";
	if ((sink = sink_new()) == NULL)
		goto out;
	o.ncs[0].lower_port = ncspeer_port(sink, NCSPEER_LOWER);
	o.ncs[0].upper_port = ncspeer_port(sink, NCSPEER_UPPER);
	ncspeer_down(sink, false);	/* away while the backlog is built */
	if ((gp = gwproc_new(&o)) == NULL || gwproc_start(gp) != 0)
		goto out;
	memset(&go, 0, sizeof go);
	go.path = gp->db;
	go.sync_normal = true;
	go.busy_ms = 10000;
	if (gwdb_open(&g, &go, &err) != QUEUE_OK) {
		fprintf(stderr, "bench_watch: gwdb_open: %s\n", err);
		goto out;
	}
	if (put_assets(g, n) != 0)
		goto out;
	if (watched) {
		sc.port = gp->api_port;
		if (pthread_create(&sc.th, NULL, scrape_main, &sc) != 0)
			goto out;
		scraping = true;
	}
	cpu0 = gwproc_cpu(gp);
	if (ncspeer_up(sink) != 0)
		goto out;
	t0 = ncspeer_now_ms();
	while (ncspeer_now_ms() < t0 + DRAIN_MS) {
		if (done_count(g->q) >= n) {
			t1 = ncspeer_now_ms();
			break;
		}
		usleep(10000);
	}
	if (t1 == -1) {
		fprintf(stderr, "bench_watch: %" PRId64 " of %ld DONE in %d "
		    "ms\n", done_count(g->q), n, DRAIN_MS);
		goto out;
	}
	res->cpu = (gwproc_cpu(gp) - cpu0) * 1000.0 / (double)n;
	res->rate = (double)n * 1000.0 / (double)(t1 - t0 > 0 ? t1 - t0 : 1);
	res->log_bytes = (long)gwproc_log_size(gp);
	rc = 0;
out:
	if (scraping) {
		sc.stop = true;
		pthread_join(sc.th, NULL);
		res->scrapes = sc.scrapes;
		res->bad = sc.bad;
		res->bytes = sc.bytes;
	}
	free(err);
	gwdb_close(g);
	if (gp != NULL && gwproc_stop(gp) != 0 && rc == 0) {
		fprintf(stderr, "bench_watch: mosgw did not exit 0\n");
		rc = -1;
	}
	gwproc_free(gp);
	ncspeer_free(sink);
	return rc;
}

static long
env_long(const char *name, long def)
{
	const char	*v = getenv(name);
	long		 n;

	return v != NULL && (n = atol(v)) > 0 ? n : def;
}

int
main(void)
{
	struct result	 r, best[2];
	long		 n = env_long("BENCH_WATCH_N", 20000);
	long		 rounds = env_long("BENCH_WATCH_ROUNDS", 2);
	long		 i;
	int		 k;

	mos_init();
	signal(SIGPIPE, SIG_IGN);
	memset(best, 0, sizeof best);
	for (i = 0; i < rounds; i++) {
		for (k = 0; k < 2; k++) {
			if (drain(k == 1, n, &r) != 0) {
				fprintf(stderr, "bench_watch: a measurement "
				    "failed\n");
				return 1;
			}
			if (r.rate > best[k].rate)
				best[k] = r;
		}
	}
	printf("watch: publish rate, %ld changes, best of %ld each, "
	    "alternating\n", n, rounds);
	printf("  %-52s %10s %12s\n", "", "changes/s", "CPU s/1000");
	printf("  %-52s %10.0f %12.3f\n", "plain (logfmt at info, no scrape)",
	    best[0].rate, best[0].cpu);
	printf("  %-52s %10.0f %12.3f\n", "watched (json at info, /metrics "
	    "every 1 s)", best[1].rate, best[1].cpu);
	printf("  watched vs plain: %+.1f %% rate; %ld scrapes (%ld failed) "
	    "of %zu bytes; log %ld bytes vs %ld\n", best[0].rate > 0 ?
	    (best[1].rate - best[0].rate) * 100.0 / best[0].rate : 0.0,
	    best[1].scrapes, best[1].bad, best[1].bytes, best[1].log_bytes,
	    best[0].log_bytes);
	return 0;
}
