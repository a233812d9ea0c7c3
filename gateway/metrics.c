/*
 * Metrics: counters and histograms kept in memory on the loop thread,
 * bumped where things happen (links, connections, frames, the publisher,
 * the API), and the GET /metrics answer in the Prometheus text exposition
 * format 0.0.4.
 *
 * What lives in the database (jobs by state and kind, the oldest due job,
 * retries, rescues, the file's and the history's size) is read on the
 * bookkeeping thread at most once a second and served from a cache: a
 * scrape is answered at once with the cached values and, when they are
 * older than a second, starts a refresh for the next one. Only the first
 * scrape waits for the first refresh (from its done callback: the loop
 * never waits).
 *
 * Labeled counters are kept as series of up to three label values in a
 * family; a family holds at most METRICS_SERIES_MAX series (label values
 * come from the configuration or fixed strings, this is a safety net),
 * the rest is counted in mosgw_metrics_series_dropped_total.
 */
#include <sys/stat.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>


#include "gateway/gateway.h"

#define METRICS_SERIES_MAX	256
#define METRICS_REFRESH_MS	1000
#define METRICS_KINDS_MAX	64	/* (state, kind) rows of the cache */
#define METRICS_MAX_LABELS	3

static const double ack_buckets[] = { 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
    0.5, 1, 2.5, 5, 10 };
#define METRICS_NBUCKETS	nitems(ack_buckets)

struct met_series {
	char		*key;		/* label values joined by \037 */
	char		*val[METRICS_MAX_LABELS];
	uint64_t	 n;
	/* histograms */
	uint64_t	 bucket[METRICS_NBUCKETS];	/* not cumulative */
	double		 sum;
};

struct met_family {
	const char		*name;
	const char		*type;		/* counter, histogram */
	const char		*help;
	const char		*label[METRICS_MAX_LABELS];	/* NULL-ended */
	struct met_series	*s;
	size_t			 n;
};

/* In the order of enum metric. */
static struct met_family families[] = {
	[MET_HEARTBEATS_LATE] = { "mosgw_heartbeats_late_total", "counter",
	    "Heartbeats of ours answered late or not at all (the link was "
	    "degraded or taken down).", { "ncs", "port", "target" },
	    NULL, 0 },
	[MET_ACKS] = { "mosgw_acks_total", "counter",
	    "Answers to our messages on the lower and upper ports, by result "
	    "(ack, nack) and message type.", { "ncs", "type", "result" },
	    NULL, 0 },
	[MET_ACK_TIMEOUTS] = { "mosgw_ack_timeouts_total", "counter",
	    "Messages of ours left unanswered for ack_timeout (each resend "
	    "counts).", { "ncs", "port", "type" }, NULL, 0 },
	[MET_ACK_LATENCY] = { "mosgw_ack_latency_seconds", "histogram",
	    "Time from sending a message to its ACK or NACK (heartbeats not "
	    "included).", { "ncs" }, NULL, 0 },
	[MET_LINK_DOWN] = { "mosgw_link_down_total", "counter",
	    "Links that failed or could not connect, by reason.",
	    { "ncs", "port", "reason" }, NULL, 0 },
	[MET_FRAME_ERRORS] = { "mosgw_frame_errors_total", "counter",
	    "Frames refused from peers, by stage (framing, parse, envelope).",
	    { "port", "stage" }, NULL, 0 },
	[MET_CONN_REFUSED] = { "mosgw_connections_refused_total", "counter",
	    "Inbound MOS connections refused, by reason.", { "port",
	    "reason" }, NULL, 0 },
	[MET_PUBLISH] = { "mosgw_publish_total", "counter",
	    "Deliveries of asset changes, by outcome (acked, nacked, "
	    "unacked, failed, skipped).", { "ncs", "outcome" }, NULL, 0 },
	[MET_HTTP] = { "mosgw_http_requests_total", "counter",
	    "HTTP API requests answered, by route pattern, method and "
	    "status.", { "route", "method", "status" }, NULL, 0 },
};

/* The database's part, refreshed on the bookkeeping thread. */
struct met_kind {
	int		 state;		/* enum queue_state */
	char		 kind[64];
	int64_t		 n;
};

struct met_db {
	struct queue_stats	 st;
	struct met_kind		 kinds[METRICS_KINDS_MAX];
	size_t			 nkinds;
	int64_t			 db_bytes;
	int64_t			 hist_bytes;
	int			 rc;
};

struct met_waiter {
	void			(*fn)(void *);
	void			*arg;
	struct met_waiter	*next;
};

static struct {
	uint64_t		 msgs[MOS_T__COUNT][2];
	uint64_t		 dropped;	/* series over the cap */
	struct met_db		 db;
	bool			 have_db;
	int64_t			 db_mono;	/* when db was read */
	bool			 refreshing;
	struct met_waiter	*waiters;
} met;

/* A series of a family, created if there is room; NULL if not. */
static struct met_series *
met_series(enum metric m, const char *a, const char *b, const char *c)
{
	struct met_family	*f = &families[m];
	struct met_series	*s;
	const char		*v[METRICS_MAX_LABELS] = { a, b, c };
	struct sbuf		 key = { NULL, 0, 0 };
	size_t			 i;

	for (i = 0; i < METRICS_MAX_LABELS && f->label[i] != NULL; i++) {
		if (i > 0)
			sbuf_add(&key, "\037", 1);
		sbuf_puts(&key, v[i] != NULL ? v[i] : "");
	}
	if (key.s == NULL)
		sbuf_puts(&key, "");
	for (i = 0; i < f->n; i++) {
		if (strcmp(f->s[i].key, key.s) == 0) {
			sbuf_free(&key);
			return &f->s[i];
		}
	}
	if (f->n >= METRICS_SERIES_MAX) {
		sbuf_free(&key);
		met.dropped++;
		return NULL;
	}
	f->s = xreallocarray(f->s, f->n + 1, sizeof *f->s);
	s = &f->s[f->n++];
	memset(s, 0, sizeof *s);
	s->key = key.s;
	for (i = 0; i < METRICS_MAX_LABELS && f->label[i] != NULL; i++)
		s->val[i] = xstrdup(v[i] != NULL ? v[i] : "");
	return s;
}

void
metrics_count(enum metric m, const char *a, const char *b, const char *c)
{
	struct met_series	*s;

	if ((s = met_series(m, a, b, c)) != NULL)
		s->n++;
}

void
metrics_observe(enum metric m, const char *a, double v)
{
	struct met_series	*s;
	size_t			 i;

	if ((s = met_series(m, a, NULL, NULL)) == NULL)
		return;
	s->n++;
	s->sum += v;
	for (i = 0; i < METRICS_NBUCKETS; i++) {
		if (v <= ack_buckets[i]) {
			s->bucket[i]++;
			break;
		}
	}
}

void
metrics_message(const char *type, enum history_dir dir)
{
	enum mos_type	t = type != NULL ? mos_type_from_name(type) :
	    MOS_T_UNKNOWN;

	if ((unsigned)t < MOS_T__COUNT)
		met.msgs[t][dir == HISTORY_OUT ? 1 : 0]++;
}

void
metrics_reset(void)
{
	size_t	f, i, j;

	for (f = 0; f < nitems(families); f++) {
		for (i = 0; i < families[f].n; i++) {
			free(families[f].s[i].key);
			for (j = 0; j < METRICS_MAX_LABELS; j++)
				free(families[f].s[i].val[j]);
		}
		free(families[f].s);
		families[f].s = NULL;
		families[f].n = 0;
	}
	memset(met.msgs, 0, sizeof met.msgs);
	met.dropped = 0;
	met.have_db = false;
}

/* ------------------------------------------------------------------------ */
/* Exposition */

/* A label value: backslash, double quote and newline escaped. */
void
metrics_label_value(struct sbuf *sb, const char *v)
{
	for (; *v != '\0'; v++) {
		if (*v == '\\')
			sbuf_puts(sb, "\\\\");
		else if (*v == '"')
			sbuf_puts(sb, "\\\"");
		else if (*v == '\n')
			sbuf_puts(sb, "\\n");
		else
			sbuf_add(sb, v, 1);
	}
}

/* HELP and TYPE of a family. */
static void
met_head(struct sbuf *sb, const char *name, const char *type,
    const char *help)
{
	sbuf_printf(sb, "# HELP %s %s\n# TYPE %s %s\n", name, help, name,
	    type);
}

/*
 * One sample: name{k="v",...} value. names/vals: n pairs; extra (may be
 * NULL) one more pair (le of a bucket).
 */
static void
met_sample(struct sbuf *sb, const char *name, const char *const *names,
    const char *const *vals, size_t n, const char *xk, const char *xv, double v)
{
	size_t	i;
	bool	any = false;

	sbuf_puts(sb, name);
	for (i = 0; i < n; i++) {
		sbuf_puts(sb, any ? "," : "{");
		sbuf_printf(sb, "%s=\"", names[i]);
		metrics_label_value(sb, vals[i]);
		sbuf_puts(sb, "\"");
		any = true;
	}
	if (xk != NULL) {
		sbuf_printf(sb, "%s%s=\"%s\"", any ? "," : "{", xk, xv);
		any = true;
	}
	if (any)
		sbuf_puts(sb, "}");
	if (v == floor(v) && fabs(v) < 1e15)
		sbuf_printf(sb, " %.0f\n", v);
	else
		sbuf_printf(sb, " %.9g\n", v);
}

/* A sample with label pairs given as a NULL-ended list k, v, k, v, ... */
static void
met_samplev(struct sbuf *sb, const char *name, double v, ...)
{
	const char	*names[6];
	const char	*vals[6];
	const char	*k;
	size_t		 n = 0;
	va_list		 ap;

	va_start(ap, v);
	while (n < nitems(names) && (k = va_arg(ap, const char *)) != NULL) {
		names[n] = k;
		vals[n++] = va_arg(ap, const char *);
	}
	va_end(ap);
	met_sample(sb, name, names, vals, n, NULL, NULL, v);
}

/* A family kept in memory. */
static void
met_family_render(struct sbuf *sb, const struct met_family *f)
{
	const struct met_series	*s;
	char			 name[128], le[32];
	size_t			 nl, i, b;
	uint64_t		 cum;

	for (nl = 0; nl < METRICS_MAX_LABELS && f->label[nl] != NULL; nl++)
		;
	met_head(sb, f->name, f->type, f->help);
	for (i = 0; i < f->n; i++) {
		s = &f->s[i];
		if (strcmp(f->type, "histogram") != 0) {
			met_sample(sb, f->name, f->label,
			    (const char *const *)s->val, nl, NULL, NULL,
			    (double)s->n);
			continue;
		}
		snprintf(name, sizeof name, "%s_bucket", f->name);
		for (b = 0, cum = 0; b < METRICS_NBUCKETS; b++) {
			cum += s->bucket[b];
			snprintf(le, sizeof le, "%g", ack_buckets[b]);
			met_sample(sb, name, f->label,
			    (const char *const *)s->val, nl, "le", le,
			    (double)cum);
		}
		met_sample(sb, name, f->label,
			    (const char *const *)s->val, nl, "le", "+Inf",
		    (double)s->n);
		snprintf(name, sizeof name, "%s_sum", f->name);
		met_sample(sb, name, f->label,
			    (const char *const *)s->val, nl, NULL, NULL, s->sum);
		snprintf(name, sizeof name, "%s_count", f->name);
		met_sample(sb, name, f->label,
			    (const char *const *)s->val, nl, NULL, NULL,
		    (double)s->n);
	}
}

static const char *const link_states[] = { "down", "connecting", "up",
    "degraded", "sleeping" };

/* One sample per possible state of a link (NULL: none). */
static void
met_link_state(struct sbuf *sb, const struct ncs *n, const struct link *l)
{
	size_t	k;

	if (l == NULL)
		return;
	for (k = 0; k < nitems(link_states); k++)
		met_samplev(sb, "mosgw_link_state", l->state ==
		    (enum link_state)k ? 1 : 0, "ncs", n->conf->name, "port",
		    gw_port_name(l->port), "target", l->target == 0 ?
		    "primary" : "buddy", "state", link_states[k],
		    (char *)NULL);
}

/* Who owns each NCS's links (owner.c): this instance, or which other. */
static void
met_owner(struct sbuf *sb, struct gw *gw)
{
	struct ncs	*n;
	char		 holder[80];
	int64_t		 epoch;

	met_head(sb, "mosgw_ncs_owned", "gauge", "1 while this instance "
	    "owns the NCS's outbound links (label instance: this one), else "
	    "0.");
	TAILQ_FOREACH(n, &gw->ncs, entry)
		met_samplev(sb, "mosgw_ncs_owned", n->owned ? 1 : 0, "ncs",
		    n->conf->name, "instance", owner_instance(gw->owner),
		    (char *)NULL);
	met_head(sb, "mosgw_ncs_owner_epoch", "gauge", "The owner epoch of "
	    "each NCS as this instance last saw it, labelled with the "
	    "instance that owns its links (\"\" while unknown).");
	TAILQ_FOREACH(n, &gw->ncs, entry) {
		owner_info(gw->owner, n, holder, sizeof holder, &epoch);
		met_samplev(sb, "mosgw_ncs_owner_epoch", (double)epoch, "ncs",
		    n->conf->name, "owner", holder, (char *)NULL);
	}
}

/* The links: state (one sample per possible state), heartbeats. */
static void
met_links(struct sbuf *sb, struct gw *gw)
{
	struct ncs	*n;
	struct link	*l;
	size_t		 i;
	int64_t		 now = util_now_ms();

	met_owner(sb, gw);

	met_head(sb, "mosgw_link_state", "gauge", "1 for the state each "
	    "link to an NCS is in (down, connecting, up, degraded, "
	    "sleeping), 0 for the others.");
	TAILQ_FOREACH(n, &gw->ncs, entry) {
		for (i = 0; i < 4; i++)
			met_link_state(sb, n, n->link[i / 2][i % 2]);
		met_link_state(sb, n, n->qlink);
	}
	met_head(sb, "mosgw_heartbeats_total", "counter", "Heartbeats of "
	    "ours the NCS answered, per link (since it was set up).");
	TAILQ_FOREACH(n, &gw->ncs, entry) {
		for (i = 0; i < 4; i++) {
			if ((l = n->link[i / 2][i % 2]) == NULL)
				continue;
			met_samplev(sb, "mosgw_heartbeats_total",
			    (double)l->hb_ok, "ncs", n->conf->name, "port",
			    gw_port_name(l->port), "target", l->target == 0 ?
			    "primary" : "buddy", (char *)NULL);
		}
	}
	met_head(sb, "mosgw_heartbeat_age_seconds", "gauge", "Time since the "
	    "NCS last answered a heartbeat of ours, per link (absent before "
	    "the first answer).");
	TAILQ_FOREACH(n, &gw->ncs, entry) {
		for (i = 0; i < 4; i++) {
			if ((l = n->link[i / 2][i % 2]) == NULL ||
			    l->hb_ok_ms == 0)
				continue;
			met_samplev(sb, "mosgw_heartbeat_age_seconds",
			    (double)(now - l->hb_ok_ms) / 1000, "ncs",
			    n->conf->name, "port", gw_port_name(l->port),
			    "target", l->target == 0 ? "primary" : "buddy",
			    (char *)NULL);
		}
	}
}

/* Messages by type and direction (types seen only). */
static void
met_messages(struct sbuf *sb)
{
	size_t	t, d;
	static const char *const dirs[] = { "in", "out" };

	met_head(sb, "mosgw_messages_total", "counter", "MOS messages "
	    "received (in) and sent (out), by type.");
	for (t = 0; t < MOS_T__COUNT; t++) {
		for (d = 0; d < 2; d++) {
			if (met.msgs[t][d] == 0)
				continue;
			met_samplev(sb, "mosgw_messages_total",
			    (double)met.msgs[t][d], "type",
			    mos_type_name((enum mos_type)t), "direction",
			    dirs[d], (char *)NULL);
		}
	}
}

/* The cached database part. */
static void
met_db_render(struct sbuf *sb)
{
	const struct met_db	*d = &met.db;
	char			 state[16];
	size_t			 i;
	int			 s;

	met_head(sb, "mosgw_queue_jobs", "gauge", "Jobs in the queue by "
	    "state and kind.");
	for (s = 0; s < 5; s++) {
		util_strlcpy(state, queue_state_name((enum queue_state)s),
		    sizeof state);
		for (i = 0; i < d->nkinds; i++)
			if (d->kinds[i].state == s)
				met_samplev(sb, "mosgw_queue_jobs",
				    (double)d->kinds[i].n, "state", state,
				    "kind", d->kinds[i].kind, (char *)NULL);
	}
	met_head(sb, "mosgw_queue_oldest_due_age_seconds", "gauge", "Age "
	    "of the oldest job that is due and waiting (0 if none).");
	met_samplev(sb, "mosgw_queue_oldest_due_age_seconds",
	    (double)d->st.oldest_due_age_ms / 1000, (char *)NULL);
	met_head(sb, "mosgw_queue_retries_total", "counter", "Jobs put back "
	    "to be tried again after a failure (all time, from the "
	    "database).");
	met_samplev(sb, "mosgw_queue_retries_total", (double)d->st.retries,
	    (char *)NULL);
	met_head(sb, "mosgw_queue_rescues_total", "counter", "Jobs taken "
	    "back from a worker whose lease expired (all time, from the "
	    "database).");
	met_samplev(sb, "mosgw_queue_rescues_total", (double)d->st.rescues,
	    (char *)NULL);
	met_head(sb, "mosgw_database_size_bytes", "gauge", "Size of the "
	    "database file with its write-ahead log (PostgreSQL: of the "
	    "database).");
	met_samplev(sb, "mosgw_database_size_bytes", (double)d->db_bytes,
	    (char *)NULL);
	met_head(sb, "mosgw_history_size_bytes", "gauge", "Bytes the message "
	    "history holds (as counted for [database] history_max_bytes).");
	met_samplev(sb, "mosgw_history_size_bytes", (double)d->hist_bytes,
	    (char *)NULL);
}

/* The checkpointer's counters (read now, from its thread's figures). */
static void
met_ckpt_render(struct sbuf *sb, struct ckpt *c)
{
	struct ckpt_stats	st;

	if (c == NULL)
		return;
	ckpt_stats(c, &st);
	met_head(sb, "mosgw_database_checkpoints_total", "counter",
	    "Checkpoints of the write-ahead log by result (done, busy: "
	    "another was running, failed).");
	met_samplev(sb, "mosgw_database_checkpoints_total", (double)st.done,
	    "result", "done", (char *)NULL);
	met_samplev(sb, "mosgw_database_checkpoints_total", (double)st.busy,
	    "result", "busy", (char *)NULL);
	met_samplev(sb, "mosgw_database_checkpoints_total",
	    (double)st.failed, "result", "failed", (char *)NULL);
	met_head(sb, "mosgw_database_checkpoint_seconds_total", "counter",
	    "Time the checkpointer thread spent copying the write-ahead log "
	    "back into the database file.");
	met_samplev(sb, "mosgw_database_checkpoint_seconds_total",
	    (double)st.us / 1e6, (char *)NULL);
}

void
metrics_render(struct gw *gw, struct sbuf *sb)
{
	size_t	f;

	met_head(sb, "mosgw_up", "gauge", "1 while the gateway runs.");
	met_samplev(sb, "mosgw_up", 1, (char *)NULL);
	met_head(sb, "mosgw_start_time_seconds", "gauge", "When the gateway "
	    "started, in seconds since 1970.");
	met_samplev(sb, "mosgw_start_time_seconds",
	    (double)gw->started_ms / 1000, (char *)NULL);
	met_links(sb, gw);
	met_messages(sb);
	for (f = 0; f < nitems(families); f++)
		met_family_render(sb, &families[f]);
	met_head(sb, "mosgw_inbound_connections", "gauge", "Connections the "
	    "NCSs have open to our ports.");
	met_samplev(sb, "mosgw_inbound_connections", (double)gw->nsessions,
	    (char *)NULL);
	if (met.have_db)
		met_db_render(sb);
	met_ckpt_render(sb, gw->ckpt);
	met_head(sb, "mosgw_metrics_series_dropped_total", "counter",
	    "Counter increments not kept because a family had too many "
	    "series.");
	met_samplev(sb, "mosgw_metrics_series_dropped_total",
	    (double)met.dropped, (char *)NULL);
}

/* ------------------------------------------------------------------------ */
/* The database part, on the bookkeeping thread */

/* The size of a file, 0 if it is not there. */
static int64_t
met_file_size(const char *path, const char *suffix)
{
	struct stat	 sb;
	char		*p;
	int64_t		 n = 0;

	xasprintf(&p, "%s%s", path, suffix);
	if (stat(p, &sb) == 0)
		n = (int64_t)sb.st_size;
	free(p);
	return n;
}

struct met_task {
	struct met_db	 db;
	char		*path;
};

static int
met_refresh_run(struct gwdb *g, void *arg)
{
	struct met_task	*t = arg;
	struct met_db	*d = &t->db;
	struct store_stmt	*st;
	const char	*k;
	int		 rc;

	if ((rc = queue_stats(g->q, &d->st)) != QUEUE_OK)
		return rc;
	if ((rc = store_prepare(g->db, "SELECT state, kind, count(*) "
	    "FROM jobs GROUP BY state, kind ORDER BY state, kind", 0, &st)) !=
	    STORE_OK)
		return gwdb_rc(rc);
	while ((rc = store_step(st)) == STORE_ROW &&
	    d->nkinds < METRICS_KINDS_MAX) {
		d->kinds[d->nkinds].state = store_column_int(st, 0);
		k = store_column_text(st, 1);
		util_strlcpy(d->kinds[d->nkinds].kind, k != NULL ? k : "",
		    sizeof d->kinds[d->nkinds].kind);
		d->kinds[d->nkinds++].n = store_column_int64(st, 2);
	}
	store_finalize(st);
	if (rc != STORE_ROW && rc != STORE_DONE)
		return gwdb_rc(rc);
	d->hist_bytes = history_bytes(g);
	if (d->hist_bytes < 0)
		d->hist_bytes = 0;
	if (!gwdb_is_pg(g)) {
		d->db_bytes = met_file_size(t->path, "") +
		    met_file_size(t->path, "-wal");
		return QUEUE_OK;
	}
	if ((rc = store_prepare(g->db, "SELECT pg_database_size("
	    "current_database())", 0, &st)) != STORE_OK)
		return gwdb_rc(rc);
	if ((rc = store_step(st)) == STORE_ROW)
		d->db_bytes = store_column_int64(st, 0);
	store_finalize(st);
	return rc == STORE_ROW ? QUEUE_OK : gwdb_rc(rc);
}

static void
met_refresh_done(void *arg, int rc)
{
	struct met_task		*t = arg;
	struct met_waiter	*w, *next;

	if (rc == QUEUE_OK) {
		met.db = t->db;
		met.have_db = true;
	}
	met.db.rc = rc;
	met.db_mono = util_mono_ms();
	met.refreshing = false;
	free(t->path);
	free(t);
	w = met.waiters;
	met.waiters = NULL;
	for (; w != NULL; w = next) {
		next = w->next;
		w->fn(w->arg);
		free(w);
	}
}

void
metrics_refresh(struct gw *gw, void (*fn)(void *), void *arg)
{
	struct met_task		*t;
	struct met_waiter	*w;
	bool			 fresh;

	fresh = met.have_db && util_mono_ms() - met.db_mono <
	    METRICS_REFRESH_MS;
	if (!met.refreshing && !fresh && gw->dbw != NULL && !gw->db_lost) {
		t = xcalloc(1, sizeof *t);
		t->path = xstrdup(gw->cfg->db_path);
		met.refreshing = true;
		dbw_submit(gw->dbw, met_refresh_run, met_refresh_done, t);
	}
	if (met.have_db || !met.refreshing) {
		fn(arg);
		return;
	}
	w = xcalloc(1, sizeof *w);
	w->fn = fn;
	w->arg = arg;
	w->next = met.waiters;
	met.waiters = w;
}
