/*
 * The daemon: startup, the flush transaction (history, completions, claims),
 * housekeeping (reaper, pruning), SIGHUP reload and orderly shutdown.
 *
 * The flush transaction and housekeeping run on the bookkeeping thread
 * (dbw.c); one flush at a time: what comes in meanwhile waits for the next,
 * which starts as soon as the running one is done. So under load a flush
 * carries what a whole transaction's time brought, and when idle a few ms
 * of it (GW_FLUSH_MS).
 */
#include <sys/stat.h>

#include <errno.h>
#include <libgen.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/dns.h>
#include <event2/event.h>

#include "gateway/gateway.h"

#define GW_FLUSH_MS		5
#define GW_FLUSH_RETRY_MS	50
#define GW_HOUSEKEEPING_MS	1000
#define GW_START_TRY_MS		2000	/* start-up: one wait for a lock */
#define GW_PRUNE_MS		60000
#define GW_PRUNE_BUDGET_MS	20
#define GW_STOP_POLL_MS		20
#define GW_STOP_MAX_MS		10000
#define GW_IDLE_MIN_MS		12500
#define GW_IDLE_QUIET_MS	300000	/* query port, no heartbeats */
#define GW_NCS_RETRY_MS		200	/* recording the NCS list again */
#define GW_SUMMARY_SLOTS	1024	/* sources tracked for summaries */
#define GW_SUMMARY_RATE		(1.0 / 6)	/* per source: 10 a minute */
#define GW_SUMMARY_BURST	20
#define GW_SUMMARY_ALL_RATE	2.0	/* all sources: 120 a minute */
#define GW_SUMMARY_ALL_BURST	200

/* Milliseconds as a timeval. */
static struct timeval
gw_tv(int64_t ms)
{
	struct timeval	tv;

	tv.tv_sec = (time_t)(ms / 1000);
	tv.tv_usec = (suseconds_t)(ms % 1000) * 1000;
	return tv;
}

/* libevent's own warnings go to our log. */
static void
gw_libevent_log(int severity, const char *msg)
{
	log_event(severity >= EVENT_LOG_ERR ? LL_ERROR :
	    severity >= EVENT_LOG_WARN ?
	    LL_WARN : LL_DEBUG, "libevent", "msg=%s", log_q(msg));
}

/* A new connection number (unique across restarts, see gw_flush). */
uint64_t
gw_conn_id(struct gw *gw)
{
	return gw->conn_seq++;
}

/*
 * Idle timeout of an inbound connection: idle_timeout if set (every port);
 * else on lower and upper 2.5 x the NCS's heartbeat_interval (the largest
 * one before the NCS is known) but at least GW_IDLE_MIN_MS, since a peer
 * heartbeats at its own pace (Sofie's library: every 5 s at the fastest);
 * GW_IDLE_QUIET_MS on the query port (NCSs do not heartbeat it) and
 * without heartbeats.
 */
int64_t
gw_idle_ms(struct gw *gw, const struct ncs *n, enum gw_port port)
{
	const struct gw_config	*cfg = gw->cfg;
	int64_t			 hb = 0;
	size_t			 i;

	if (cfg->idle_timeout_ms > 0)
		return cfg->idle_timeout_ms;
	if (port == GW_PORT_QUERY)
		return GW_IDLE_QUIET_MS;
	if (n != NULL)
		hb = n->conf->heartbeat_ms;
	else {
		for (i = 0; i < cfg->nncs; i++) {
			if (cfg->ncs[i].heartbeat_ms > hb)
				hb = cfg->ncs[i].heartbeat_ms;
		}
	}
	if (hb == 0)
		return GW_IDLE_QUIET_MS;
	return hb * 5 / 2 > GW_IDLE_MIN_MS ? hb * 5 / 2 : GW_IDLE_MIN_MS;
}

/* One flush transaction: what it stores, and the results. */
struct gw_batch {
	struct gw		*gw;		/* the loop thread's */
	struct history_rec	*recs;
	size_t			 nrecs;
	struct pub_work_list	 works;
	int64_t			 conn_next;	/* 0: unchanged */
	char			 errmsg[256];	/* SQLite's, on failure */
};

/* Arm the flush timer: history and completions commit a few ms later. */
void
gw_flush_soon(struct gw *gw)
{
	struct timeval	tv = gw_tv(GW_FLUSH_MS);

	if (gw->flush_armed || gw->flush_ev == NULL)
		return;
	evtimer_add(gw->flush_ev, &tv);
	gw->flush_armed = true;
}

/* Start a flush on the next turn of the loop (unless waiting to retry). */
void
gw_flush_now(struct gw *gw)
{
	struct timeval	tv = { 0, 0 };

	if (gw->flush_hold || gw->flush_ev == NULL)
		return;
	evtimer_add(gw->flush_ev, &tv);
	gw->flush_armed = true;
}

/*
 * The bookkeeping thread: pending history rows, the publishers' work
 * (completions, delivery markers, failures, releases, leases, claims of the
 * next jobs), the connection counter; one transaction.
 */
static int
gw_flush_run(struct gwdb *g, void *arg)
{
	struct gw_batch	*b = arg;
	int64_t		 bytes = 0;
	size_t		 i;
	int		 rc;

	if ((rc = queue_tx_begin(g->q)) != QUEUE_OK)
		goto fail;
	if ((rc = history_store(g, b->recs, b->nrecs)) != QUEUE_OK ||
	    (rc = publisher_run(g, &b->works)) != QUEUE_OK ||
	    (b->conn_next != 0 && (rc = gwdb_meta_put(g, "conn_next",
	    b->conn_next)) != QUEUE_OK)) {
		util_strlcpy(b->errmsg, gwdb_errmsg(g), sizeof b->errmsg);
		queue_tx_rollback(g->q);
		return rc;
	}
	if ((rc = queue_tx_commit(g->q)) == QUEUE_OK) {
		for (i = 0; i < b->nrecs; i++)
			bytes += history_rec_bytes(&b->recs[i]);
		history_account(g, bytes);
		return rc;
	}
fail:
	util_strlcpy(b->errmsg, gwdb_errmsg(g), sizeof b->errmsg);
	return rc;
}

/* Back on the loop: results out, or everything kept for a retry. */
static void
gw_flush_done(void *arg, int rc)
{
	struct gw_batch	*b = arg;
	struct gw	*gw = b->gw;
	struct timeval	 tv = gw_tv(GW_FLUSH_RETRY_MS);
	bool		 again = gw->flush_again;

	gw->flushing = false;
	gw->flush_again = false;
	gw->flush_rc = rc;
	if (rc == QUEUE_OK) {
		history_recs_free(b->recs, b->nrecs);
		if (b->conn_next != 0)
			gw->conn_saved = (uint64_t)b->conn_next;
		publisher_settle(gw, &b->works, true);
	} else {
		history_put_back(gw->hist, b->recs, b->nrecs);
		publisher_settle(gw, &b->works, false);
		log_event_rl(rc == QUEUE_EBUSY ? LL_DEBUG : LL_WARN, "db.error",
		    queue_strerror(rc), "op=flush error=%s msg=%s",
		    log_q(queue_strerror(rc)), log_q(b->errmsg));
		gw->flush_hold = true;
		evtimer_add(gw->flush_ev, &tv);
		gw->flush_armed = true;
	}
	free(b);
	if (again && !gw->flush_hold)
		gw_flush_now(gw);
}

/* Hand what is pending to the bookkeeping thread (one flush at a time). */
static void
gw_flush_start(struct gw *gw)
{
	struct gw_batch	*b;

	if (gw->dbw == NULL)
		return;
	if (gw->flushing) {
		gw->flush_again = true;
		return;
	}
	evtimer_del(gw->flush_ev);
	gw->flush_armed = false;
	b = xcalloc(1, sizeof *b);
	b->gw = gw;
	TAILQ_INIT(&b->works);
	history_take(gw->hist, &b->recs, &b->nrecs);
	publisher_collect(gw, &b->works);
	if (gw->conn_seq != gw->conn_saved)
		b->conn_next = (int64_t)gw->conn_seq;
	if (b->nrecs == 0 && TAILQ_EMPTY(&b->works) && b->conn_next == 0) {
		free(b->recs);
		free(b);
		return;
	}
	gw->flushing = true;
	dbw_submit(gw->dbw, gw_flush_run, gw_flush_done, b);
}

/* Flush and wait for it (shutdown). */
int
gw_flush(struct gw *gw)
{
	if (gw->dbw == NULL)
		return QUEUE_OK;
	dbw_wait(gw->dbw);		/* the flush running, if any */
	gw->flush_hold = false;
	gw->flush_rc = QUEUE_OK;
	gw_flush_start(gw);
	dbw_wait(gw->dbw);
	return gw->flush_rc;
}

/* Flush timer. */
static void
gw_flush_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct gw	*gw = arg;

	(void)fd;
	(void)ev;
	gw->flush_armed = false;
	gw->flush_hold = false;
	gw_flush_start(gw);
}

/* Housekeeping on the bookkeeping thread, and what it did. */
struct gw_house {
	struct gw	*gw;
	bool		 minute;
	int64_t		 done_ms;
	int64_t		 failed_ms;
	int64_t		 history_ms;
	int64_t		 history_max;
	int64_t		 events_ms;
	int64_t		 events_max;
	size_t		 events;
	size_t		 reaped;
	size_t		 jobs;
	size_t		 history;
	size_t		 history_size;	/* pruned for history_max_bytes */
	bool		 more;
};

/* The bookkeeping thread: reaper, pruning. */
static int
gw_house_run(struct gwdb *g, void *arg)
{
	struct gw_house	*h = arg;

	queue_reap(g->q, &h->reaped);
	if (h->minute)
		queue_prune(g->q, h->done_ms, h->failed_ms, &h->jobs);
	if (h->minute || h->more)
		events_prune(g, h->events_ms, h->events_max, &h->events);
	if (h->minute || h->more)
		h->more = history_prune(g, h->history_ms, GW_PRUNE_BUDGET_MS,
		    &h->history) == QUEUE_EXISTS;
	history_prune_size(g, h->history_max, GW_PRUNE_BUDGET_MS,
	    &h->history_size);
	return QUEUE_OK;
}

/* Back on the loop: log what was done. */
static void
gw_house_done(void *arg, int rc)
{
	struct gw_house	*h = arg;
	struct gw	*gw = h->gw;

	(void)rc;
	gw->house_busy = false;
	gw->prune_more = h->more;
	if (h->reaped > 0)
		log_event(LL_INFO, "job.reaped", "jobs=%zu", h->reaped);
	if (h->jobs > 0 || h->history > 0 || h->history_size > 0 ||
	    h->events > 0)
		log_event(LL_INFO, "db.prune", "jobs=%zu history=%zu "
		    "history_size=%zu events=%zu more=%s", h->jobs, h->history,
		    h->history_size, h->events, h->more ? "yes" : "no");
	free(h);
}

/*
 * The database file was unlinked or replaced: whatever is written now
 * goes nowhere anyone will read. Stop at once (no final flush) and exit
 * nonzero. Closing still checkpoints into the file we had open and removes
 * its -wal and -shm, which must not be left at the path for another file.
 */
static void
gw_db_lost(struct gw *gw, const char *why)
{
	log_event(LL_ERROR, "db.lost", "db=%s reason=%s action=exit "
	    "note=%s", log_q(gw->cfg->db_path), why, log_q("the database "
	    "file is no longer at its path; restart mosgw on the right file"));
	fprintf(stderr, "mosgw: database %s is no longer at its path (%s); "
	    "exiting\n", gw->cfg->db_path, why);
	gw->db_lost = true;
	gw->stopping = true;
	gw->exit_code = 1;
	event_base_loopexit(gw->base, NULL);
}

/*
 * Check that the database file is still at its path; return expired
 * leases every second; prune old jobs and history every
 * minute. History is pruned at most GW_PRUNE_BUDGET_MS at a time (so a large
 * backlog never holds up the flushes for long) and again every second until
 * done. Every second, history over history_max_bytes loses its oldest rows
 * (GW_PRUNE_BUDGET_MS at a time too); its size is counted once, by the
 * first of these, then kept as rows are committed and deleted.
 */
static void
gw_housekeeping_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct gw	*gw = arg;
	struct gw_house	*h;
	const char	*why;
	int64_t		 now = util_mono_ms();

	(void)fd;
	(void)ev;
	if (gw->stopping || gw->db_lost)
		return;
	/* a file only: PostgreSQL has no file to lose */
	if (gw->hold.fd != -1 &&
	    (why = gwdb_hold_lost(&gw->hold, gw->cfg->db_path)) != NULL) {
		gw_db_lost(gw, why);
		return;
	}
	ckpt_report(gw->ckpt);
	if (gw->house_busy || gw->dbw == NULL)
		return;
	h = xcalloc(1, sizeof *h);
	h->gw = gw;
	h->minute = gw->last_prune_mono == 0 ||
	    now - gw->last_prune_mono >= GW_PRUNE_MS;
	if (h->minute)
		gw->last_prune_mono = now;
	h->more = gw->prune_more;
	h->done_ms = gw->cfg->done_retention_ms;
	h->failed_ms = gw->cfg->failed_retention_ms;
	h->history_ms = gw->cfg->history_retention_ms;
	h->history_max = gw->cfg->history_max_bytes;
	h->events_ms = gw->cfg->ev_retention_ms;
	h->events_max = gw->cfg->ev_max_events;
	gw->house_busy = true;
	dbw_submit(gw->dbw, gw_house_run, gw_house_done, h);
}

/* Set a policy on the bookkeeping thread's queue. */
static int
gw_policy_run(struct gwdb *g, void *arg)
{
	return queue_set_policy(g->q, CATALOG_KIND_PUBLISH, arg);
}

/* Free the policy copy. */
static void
gw_policy_done(void *arg, int rc)
{
	(void)rc;
	free(arg);
}

/* The queue policy for deliveries, from the configuration (both queues). */
static void
gw_set_policy(struct gw *gw)
{
	struct queue_policy	pol, *copy;

	memset(&pol, 0, sizeof pol);
	pol.max_attempts = 10;
	pol.backoff_base_ms = gw->cfg->backoff_base_ms;
	pol.backoff_cap_ms = gw->cfg->backoff_max_ms;
	pol.jitter_pct = 10;
	pol.lease_ms = gw->cfg->lease_ms;
	queue_set_policy(gw->db->q, CATALOG_KIND_PUBLISH, &pol);
	if (gw->dbw != NULL) {
		copy = xmalloc(sizeof *copy);
		*copy = pol;
		dbw_submit(gw->dbw, gw_policy_run, gw_policy_done, copy);
	}
}

/* Open (or reopen) the listener of one port if its address changed. */
static int
gw_listen(struct gw *gw, enum gw_port p, const struct gw_config *old,
    char **cause)
{
	const struct gw_config	*cfg = gw->cfg;
	struct listener		*l;
	int			 port, oldport;

	port = p == GW_PORT_LOWER ? cfg->lower_port : p == GW_PORT_UPPER ?
	    cfg->upper_port : cfg->query_port;
	if (old != NULL) {
		oldport = p == GW_PORT_LOWER ? old->lower_port :
		    p == GW_PORT_UPPER ? old->upper_port : old->query_port;
		if (oldport == port && strcmp(old->listen, cfg->listen) == 0)
			return 0;
	}
	listener_free(gw->listeners[p]);
	gw->listeners[p] = NULL;
	if (port == 0)
		return 0;
	if ((l = listener_new(gw, p, cfg->listen, port, cause)) == NULL)
		return -1;
	gw->listeners[p] = l;
	return 0;
}

/* A bookkeeping task ended: events may have committed (events.c). */
static void
gw_db_after(void *arg, dbw_run_fn ran)
{
	struct gw	*gw = arg;

	if (ran != events_pump_run)
		events_wake(gw->events);
}

/*
 * The checkpointer of an SQLite database, asked by the daemon's
 * connections (o's too, for the bookkeeping thread's); PostgreSQL has no
 * write-ahead log of ours to copy back.
 */
static int
gw_open_ckpt(struct gw *gw, struct gwdb_opts *o, char **cause)
{
	char	*err = NULL;

	if (o->driver == STORE_POSTGRESQL)
		return 0;
	if ((gw->ckpt = ckpt_new(o->path, o->sync_normal, &err)) == NULL) {
		xasprintf(cause, "database %s: %s", o->path, err != NULL ?
		    err : "?");
		free(err);
		return -1;
	}
	queue_set_checkpointer(gw->db->q, ckpt_poke, gw->ckpt);
	o->ckpt_fn = ckpt_poke;
	o->ckpt_arg = gw->ckpt;
	return 0;
}

/*
 * One try at the start-up writes: open (the schema), take back the jobs
 * of the previous run (SQLite), record the NCS list. A queue code; on
 * error *err says why and the database is closed.
 */
static int
gw_db_try(struct gw *gw, struct gwdb_opts *o, size_t *orphans, char **err)
{
	int	rc;

	*orphans = 0;
	if ((rc = gwdb_open(&gw->db, o, err)) != QUEUE_OK)
		return rc;
	/*
	 * The hold says no other daemon runs on this file: the jobs that
	 * workers named like ours hold are a dead life's (kill -9, crash).
	 * On PostgreSQL other instances may be running: an NCS's jobs are
	 * taken back by its next owner (owner.c), the others wait for their
	 * leases.
	 */
	if (o->driver != STORE_POSTGRESQL && (rc = queue_release_orphans(
	    gw->db->q, GW_WORKER_PREFIX, NULL, orphans)) != QUEUE_OK)
		xasprintf(err, "cannot take back the jobs of the previous run: "
		    "%s", queue_errmsg(gw->db->q));
	else if ((rc = gwdb_sync_ncs(gw->db, gw->cfg)) != QUEUE_OK)
		xasprintf(err, "cannot record the NCS list: %s",
		    gwdb_errmsg(gw->db));
	if (rc != QUEUE_OK) {
		gwdb_close(gw->db);
		gw->db = NULL;
	}
	return rc;
}

/*
 * The start-up writes. Other instances starting on the same PostgreSQL
 * database (or a mosctl) may hold the writer lock meanwhile, a schema
 * migration for longer than busy_timeout: wait for them, in tries of at
 * most GW_START_TRY_MS, until start_wait has passed, saying so once.
 */
static int
gw_db_start(struct gw *gw, struct gwdb_opts *o, const char *where,
    size_t *orphans, char **cause)
{
	int64_t	 t0 = util_mono_ms(), left;
	char	*err = NULL;
	size_t	 len;
	int	 busy = o->busy_ms, rc;
	bool	 said = false;

	while ((rc = gw_db_try(gw, o, orphans, &err)) == QUEUE_EBUSY &&
	    (left = gw->cfg->start_wait_ms - (util_mono_ms() - t0)) > 0) {
		if (!said)
			log_event(LL_INFO, "db.wait", "db=%s wait_max_ms=%lld "
			    "note=%s", log_q(where),
			    (long long)gw->cfg->start_wait_ms, log_q("the "
			    "database's writer lock is held by another "
			    "connection (an instance starting or migrating "
			    "the schema): waiting for it"));
		said = true;
		free(err);
		err = NULL;
		o->busy_ms = (int)(left < GW_START_TRY_MS ? left :
		    GW_START_TRY_MS);
	}
	o->busy_ms = busy;
	if (rc == QUEUE_OK && (rc = queue_set_busy(gw->db->q, busy)) !=
	    QUEUE_OK)
		xasprintf(&err, "%s", queue_errmsg(gw->db->q));
	if (rc == QUEUE_OK)
		return 0;
	/* the queue's message may name the file already */
	len = strlen(where);
	if (err != NULL && strncmp(err, where, len) == 0 && err[len] == ':')
		xasprintf(cause, "database %s", err);
	else
		xasprintf(cause, "database %s: %s%s", where, err != NULL ? err :
		    "?", rc == QUEUE_EBUSY && said ? " (after waiting "
		    "[database] start_wait for another connection's writes)" :
		    "");
	free(err);
	return -1;
}

/* Open the database and record the NCSs. */
static int
gw_open_db(struct gw *gw, char **cause)
{
	struct gwdb_opts	 o;
	char			*err = NULL, *dir, *d, *dsn, where[512];
	int64_t			 v = 1, t0;
	size_t			 n = 0;

	memset(&o, 0, sizeof o);
	o.driver = (enum store_driver)gw->cfg->db_driver;
	o.path = gw->cfg->db_path;
	o.dsn = gw->cfg->db_dsn;
	o.sync_normal = gw->cfg->sync_normal != 0;
	o.busy_ms = (int)gw->cfg->busy_ms;
	/*
	 * An instance cut off in the middle of a transaction must not keep
	 * the writer lock from the one that takes its NCSs over (owner.c).
	 */
	o.idle_tx_ms = (int)(gw->cfg->takeover_ms / 2 > 1000 ?
	    gw->cfg->takeover_ms / 2 : 1000);
	o.check = gw->cfg->start_check;
	/* what messages name: the file, or the dsn without a password */
	if (o.driver == STORE_POSTGRESQL) {
		dsn = store_dsn_redact(o.dsn);
		snprintf(where, sizeof where, "%s", dsn != NULL ? dsn : "?");
		free(dsn);
		goto open;
	}
	snprintf(where, sizeof where, "%s", o.path);
	/* its own directory is made when missing (mosgw -n checked the parent) */
	dir = xstrdup(o.path);
	d = dirname(dir);
	if (access(d, F_OK) != 0 && errno == ENOENT) {
		if (mkdir(d, 0750) != 0) {
			xasprintf(cause, "database %s: cannot create its "
			    "directory %s: %s", o.path, d, strerror(errno));
			free(dir);
			return -1;
		}
		log_event(LL_INFO, "db.mkdir", "dir=%s", log_q(d));
	}
	free(dir);
	if (gwdb_hold(&gw->hold, o.path, &err) != 0) {
		xasprintf(cause, "database %s: %s%s", o.path, err,
		    access(o.path, F_OK) != 0 && errno == ENOENT ?
		    " (does its directory exist?)" : "");
		free(err);
		return -1;
	}
open:
	t0 = util_mono_ms();
	if (gw_db_start(gw, &o, where, &n, cause) != 0)
		return -1;
	log_event(LL_INFO, "db.open", "db=%s check=%s ms=%lld",
	    log_q(where), o.check ? "ok" : "off",
	    (long long)(util_mono_ms() - t0));
	o.check = false;
	if (n > 0)
		log_event(LL_INFO, "job.orphans", "jobs=%zu note=%s", n,
		    log_q("claimed by the previous run, back in the queue"));
	if (!o.sync_normal && gwdb_relax(gw->db, true) != QUEUE_OK) {
		xasprintf(cause, "database %s: cannot set synchronous: %s",
		    where, gwdb_errmsg(gw->db));
		return -1;
	}
	if (gw_open_ckpt(gw, &o, cause) != 0)
		return -1;
	if ((gw->dbw = dbw_new(gw->base, &o, !o.sync_normal, &err)) == NULL) {
		xasprintf(cause, "database %s: %s", where, err != NULL ? err :
		    "?");
		free(err);
		return -1;
	}
	gw_set_policy(gw);
	gw->events = events_new(gw);
	dbw_set_after(gw->dbw, gw_db_after, gw);
	if (gwdb_meta_get(gw->db, "conn_next", &v) != QUEUE_OK || v < 1)
		v = 1;
	gw->conn_seq = gw->conn_saved = (uint64_t)v;
	return 0;
}

static void	gw_signal_cb(evutil_socket_t, short, void *);
static void	gw_ncs_cb(evutil_socket_t, short, void *);
static void	gw_stop_cb(evutil_socket_t, short, void *);

/* Events of the daemon itself: signals and timers. */
static void
gw_events(struct gw *gw)
{
	static const int	 sigs[] = { SIGTERM, SIGINT, SIGHUP };
	struct timeval		 tv = gw_tv(GW_HOUSEKEEPING_MS);
	size_t			 i;

	for (i = 0; i < nitems(sigs); i++) {
		gw->sig[i] = evsignal_new(gw->base, sigs[i], gw_signal_cb, gw);
		if (gw->sig[i] == NULL || evsignal_add(gw->sig[i], NULL) != 0)
			fatalx("cannot install signal %d", sigs[i]);
	}
	gw->housekeeping = event_new(gw->base, -1, EV_PERSIST,
	    gw_housekeeping_cb, gw);
	gw->flush_ev = evtimer_new(gw->base, gw_flush_cb, gw);
	gw->stop_ev = event_new(gw->base, -1, EV_PERSIST, gw_stop_cb, gw);
	gw->ncs_ev = evtimer_new(gw->base, gw_ncs_cb, gw);
	if (gw->housekeeping == NULL || gw->flush_ev == NULL ||
	    gw->stop_ev == NULL || gw->ncs_ev == NULL)
		fatalx("event_new failed");
	event_add(gw->housekeeping, &tv);
}

/* Start everything: database, listeners, links. NULL and *cause on failure. */
struct gw *
gw_new(struct gw_config *cfg, char **cause)
{
	struct gw	*gw;
	struct ncs	*n;
	size_t		 i;
	int		 p;

	signal(SIGPIPE, SIG_IGN);
	gw = xcalloc(1, sizeof *gw);
	gw->cfg = cfg;
	gw->hold.fd = -1;
	gw->started_ms = util_now_ms();
	TAILQ_INIT(&gw->ncs);
	TAILQ_INIT(&gw->pub_retry);
	TAILQ_INIT(&gw->sessions);
	gw->hist_src = srclim_new(GW_SUMMARY_SLOTS, GW_SUMMARY_RATE,
	    GW_SUMMARY_BURST);
	bucket_init(&gw->hist_all, GW_SUMMARY_ALL_RATE, GW_SUMMARY_ALL_BURST);
	event_set_log_callback(gw_libevent_log);
	if ((gw->base = event_base_new()) == NULL)
		fatalx("event_base_new failed");
	if ((gw->dns = evdns_base_new(gw->base,
	    EVDNS_BASE_INITIALIZE_NAMESERVERS)) ==
	    NULL && (gw->dns = evdns_base_new(gw->base, 0)) == NULL)
		fatalx("evdns_base_new failed");
	gw_events(gw);
	if (gw_open_db(gw, cause) != 0)
		goto fail;
	gw->hist = history_new(gw->db, cfg->history);
	for (p = 0; p < GW_NPORTS; p++) {
		if (gw_listen(gw, (enum gw_port)p, NULL, cause) != 0)
			goto fail;
	}
	if (cfg->api_port != 0 && (gw->api = api_new(gw, cause)) == NULL)
		goto fail;
	if ((gw->owner = owner_new(gw, cause)) == NULL)
		goto fail;
	gw->wake = wake_new(gw);
	for (i = 0; i < cfg->nncs; i++) {
		n = ncs_new(gw, &cfg->ncs[i]);
		TAILQ_INSERT_TAIL(&gw->ncs, n, entry);
		ncs_start(n);
	}
	gw->isync = isync_new(gw);
	isync_kick(gw->isync);
	webhooks_configure(gw);
	log_event(LL_INFO, "start", "version=%s pid=%d mos_id=%s db=%s ncs=%zu "
	    "synchronous=%s instance=%s", MOSGW_VERSION, (int)getpid(),
	    log_q(cfg->mos_id), log_q(cfg->db_path), cfg->nncs,
	    cfg->sync_normal ? "normal" : "full", log_q(cfg->instance));
	gw->notify = notify_new(gw->base);
	return gw;
fail:
	gw->cfg = NULL;		/* the caller still owns it */
	gw_free(gw);
	return NULL;
}

/* Free everything (after gw_run). */
void
gw_free(struct gw *gw)
{
	struct ncs	*n;
	size_t		 i;

	if (gw == NULL)
		return;
	notify_free(gw->notify);
	session_close_all(gw, "shutdown");
	while ((n = TAILQ_FIRST(&gw->ncs)) != NULL) {
		TAILQ_REMOVE(&gw->ncs, n, entry);
		ncs_free(n);
	}
	for (i = 0; i < GW_NPORTS; i++)
		listener_free(gw->listeners[i]);
	if (gw->hist != NULL && gw->flush_ev != NULL && !gw->db_lost)
		gw_flush(gw);
	api_stop(gw->api);
	isync_free(gw->isync);	/* freed by its step's done, if one runs */
	webhooks_free(gw);
	if (gw->dbw != NULL)
		dbw_set_after(gw->dbw, NULL, NULL);
	dbw_free(gw->dbw);	/* answers the API requests still running */
	owner_free(gw->owner);	/* after the links: the locks go now */
	wake_free(gw->wake);
	api_free(gw->api);
	events_free(gw->events);
	publisher_works_free(&gw->pub_retry);
	history_free(gw->hist);
	srclim_free(gw->hist_src);
	if (gw->db != NULL)
		queue_set_checkpointer(gw->db->q, NULL, NULL);
	ckpt_free(gw->ckpt);	/* after the last commit that may ask */
	gwdb_close(gw->db);
	gwdb_hold_release(&gw->hold);
	sbuf_free(&gw->scratch);
	for (i = 0; i < nitems(gw->sig); i++) {
		if (gw->sig[i] != NULL)
			event_free(gw->sig[i]);
	}
	if (gw->housekeeping != NULL)
		event_free(gw->housekeeping);
	if (gw->flush_ev != NULL)
		event_free(gw->flush_ev);
	if (gw->stop_ev != NULL)
		event_free(gw->stop_ev);
	if (gw->ncs_ev != NULL)
		event_free(gw->ncs_ev);
	if (gw->dns != NULL)
		evdns_base_free(gw->dns, 0);
	if (gw->base != NULL)
		event_base_free(gw->base);
	config_free(gw->cfg);
	free(gw);
}

/* Run until stopped. */
int
gw_run(struct gw *gw)
{
	notify_state("READY=1\nSTATUS=listening, %zu NCS configured",
	    gw->cfg->nncs);
	event_base_dispatch(gw->base);
	return gw->exit_code;
}

/* Shutdown, step 2: once the in-flight acks are in (or the deadline passed). */
static void
gw_stop_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct gw	*gw = arg;
	struct ncs	*n;
	bool		 busy = false;

	(void)fd;
	(void)ev;
	/* A mosObj in flight on a link that is down gets no ack: no wait. */
	for (n = TAILQ_FIRST(&gw->ncs); n != NULL; n = TAILQ_NEXT(n, entry))
		busy = busy || (publisher_busy(n->pub) &&
		    link_is_up(ncs_active_link(n, GW_PORT_LOWER)));
	if (busy && util_mono_ms() < gw->stop_deadline)
		return;
	event_del(gw->stop_ev);
	gw_flush(gw);
	session_close_all(gw, "shutdown");
	while ((n = TAILQ_FIRST(&gw->ncs)) != NULL) {
		TAILQ_REMOVE(&gw->ncs, n, entry);
		ncs_free(n);
	}
	gw_flush(gw);
	log_event(LL_INFO, "shutdown", "phase=done in_flight_abandoned=%s",
	    busy ? "yes" : "no");
	event_base_loopexit(gw->base, NULL);
}

/*
 * Stop: no new connections or claims; the messages in flight get their
 * acks (up to one ack_timeout, at most 10 s), completions are committed,
 * claimed jobs not sent are given back, links closed. A second signal
 * stops at once.
 */
void
gw_stop(struct gw *gw)
{
	struct timeval	 tv = gw_tv(GW_STOP_POLL_MS);
	struct ncs	*n;
	int64_t		 wait = 0;
	int		 p;

	if (gw->stopping) {
		gw->stop_deadline = 0;
		return;
	}
	gw->stopping = true;
	notify_state("STOPPING=1");
	log_event(LL_INFO, "shutdown", "phase=begin");
	for (p = 0; p < GW_NPORTS; p++) {
		listener_free(gw->listeners[p]);
		gw->listeners[p] = NULL;
	}
	api_stop(gw->api);
	for (n = TAILQ_FIRST(&gw->ncs); n != NULL; n = TAILQ_NEXT(n, entry)) {
		profile1_req_all_stop(n);
		publisher_release_all(n->pub);
		if (n->conf->ack_timeout_ms > wait)
			wait = n->conf->ack_timeout_ms;
	}
	gw->stop_deadline = util_mono_ms() + (wait < GW_STOP_MAX_MS ? wait :
	    GW_STOP_MAX_MS);
	event_add(gw->stop_ev, &tv);
}

/* Apply the NCS sections of a new configuration. */
static void
gw_reload_ncs(struct gw *gw, struct gw_config *cfg)
{
	const struct ncs_conf	*c;
	struct ncs		*n, *next;
	size_t			 i;

	for (n = TAILQ_FIRST(&gw->ncs); n != NULL; n = next) {
		next = TAILQ_NEXT(n, entry);
		c = config_find_ncs(cfg, n->conf->name);
		if (c != NULL && config_ncs_equal(c, n->conf))
			continue;
		log_event(LL_INFO, "config.reload", "ncs=%s action=%s",
		    n->conf->name, c == NULL ? "removed" : "changed");
		TAILQ_REMOVE(&gw->ncs, n, entry);
		session_forget_ncs(gw, n);
		ncs_free(n);
	}
	for (i = 0; i < cfg->nncs; i++) {
		if (ncs_find_by_name(gw, cfg->ncs[i].name) != NULL)
			continue;
		n = ncs_new(gw, &cfg->ncs[i]);
		TAILQ_INSERT_TAIL(&gw->ncs, n, entry);
		ncs_start(n);
	}
	owner_ncs_changed(gw->owner);
}

/*
 * Record the configured NCSs (enabled flags, an initial sync for a new
 * one), then let the syncs run. The bookkeeping thread may hold the file
 * for a while (a large import): then again a little later, until it is
 * done.
 */
static void
gw_record_ncs(struct gw *gw)
{
	struct timeval	tv = gw_tv(GW_NCS_RETRY_MS);
	int		rc;

	evtimer_del(gw->ncs_ev);
	if ((rc = gwdb_sync_ncs(gw->db, gw->cfg)) != QUEUE_OK) {
		log_event_rl(rc == QUEUE_EBUSY ? LL_INFO : LL_ERROR,
		    "db.error", "sync-ncs", "op=sync-ncs error=%s msg=%s "
		    "note=retried", log_q(queue_strerror(rc)),
		    log_q(queue_errmsg(gw->db->q)));
		evtimer_add(gw->ncs_ev, &tv);
		return;
	}
	isync_kick(gw->isync);
}

/* The retry timer of gw_record_ncs. */
static void
gw_ncs_cb(evutil_socket_t fd, short ev, void *arg)
{
	(void)fd;
	(void)ev;
	if (!((struct gw *)arg)->stopping)
		gw_record_ncs(arg);
}

/* SIGHUP: reload the file; apply it only if it validates. */
void
gw_reload(struct gw *gw)
{
	struct gw_config	*cfg, *old = gw->cfg;
	char			*errs = NULL, *line, *save = NULL, *cause =
	    NULL;
	int			 p;

	if ((cfg = config_load(old->file, &errs)) == NULL) {
		for (line = strtok_r(errs, "\n", &save); line != NULL;
		    line = strtok_r(NULL, "\n", &save))
			log_event(LL_ERROR, "config.error", "msg=%s",
			    log_q(line));
		log_event(LL_ERROR, "config.reload", "file=%s result=rejected "
		    "note=the-running-configuration-stays", log_q(old->file));
		free(errs);
		return;
	}
	if (cfg->db_driver != old->db_driver ||
	    strcmp(cfg->db_path, old->db_path) != 0 ||
	    strcmp(cfg->db_dsn, old->db_dsn) != 0 ||
	    cfg->sync_normal != old->sync_normal ||
	    cfg->busy_ms != old->busy_ms ||
	    cfg->start_wait_ms != old->start_wait_ms)
		log_event(LL_WARN, "config.reload",
		    "note=database-settings-apply-at-restart");
	if (strcmp(cfg->instance, old->instance) != 0 ||
	    cfg->takeover_ms != old->takeover_ms)
		log_event(LL_WARN, "config.reload",
		    "note=instance-and-takeover-apply-at-restart");
	/* the running ones stay (owner.c, worker names) */
	free(cfg->instance);
	cfg->instance = xstrdup(old->instance);
	cfg->takeover_ms = old->takeover_ms;
	if (cfg->log_level != old->log_level ||
	    strcmp(cfg->log_target, old->log_target) != 0 ||
	    (strcmp(cfg->log_target, "stderr") != 0 &&
	    strcmp(cfg->log_target, "syslog") != 0)) {	/* reopen: rotation */
		if (log_open((enum log_level)cfg->log_level, cfg->log_target,
		    &cause) != 0) {
			log_event(LL_ERROR, "config.error", "msg=%s",
			    log_q(cause));
			free(cause);
		}
	}
	log_set_rate((unsigned)cfg->log_rate_burst, cfg->log_rate_ms);
	if (strcmp(cfg->api_listen, old->api_listen) != 0 ||
	    cfg->api_port != old->api_port ||
	    cfg->api_max_header != old->api_max_header ||
	    cfg->api_max_body != old->api_max_body ||
	    cfg->api_deadline_ms != old->api_deadline_ms ||
	    cfg->api_max_conn != old->api_max_conn)
		log_event(LL_WARN, "config.reload",
		    "note=api-settings-but-tokens-apply-at-restart");
	log_set_format((enum log_format)cfg->log_format);
	gw->cfg = cfg;
	api_reload(gw->api, cfg);
	history_set_enabled(gw->hist, cfg->history);
	gw_set_policy(gw);
	for (p = 0; p < GW_NPORTS; p++) {
		if (gw_listen(gw, (enum gw_port)p, old, &cause) != 0) {
			log_event(LL_ERROR, "config.error", "msg=%s",
			    log_q(cause));
			free(cause);
			cause = NULL;
		}
	}
	gw_reload_ncs(gw, cfg);
	webhooks_configure(gw);
	gw_record_ncs(gw);
	log_event(LL_INFO, "config.reload", "file=%s result=applied ncs=%zu",
	    log_q(cfg->file), cfg->nncs);
	config_free(old);
}

/* Signals: TERM/INT stop, HUP reloads. */
static void
gw_signal_cb(evutil_socket_t sig, short ev, void *arg)
{
	struct gw	*gw = arg;

	(void)ev;
	if (sig == SIGHUP) {
		if (!gw->stopping) {
			notify_state("RELOADING=1");
			gw_reload(gw);
			notify_state("READY=1");
		}
		return;
	}
	log_event(LL_INFO, "shutdown", "signal=%s",
	    sig == SIGTERM ? "TERM" : "INT");
	gw_stop(gw);
}
