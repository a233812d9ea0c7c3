/*
 * The initial sync: an NCS new to the database ([ncs.NAME] initial_sync =
 * all, the default) receives every asset of the catalog as a mosObj,
 * through the same durable queue as the live changes.
 *
 * gwdb_sync_ncs gives an NCS seen for the first time a row in ncs_sync
 * (isync_record). While its state is 'running', a step on the bookkeeping
 * thread enqueues the next ISYNC_BATCH assets in objID order after
 * after_obj, once fewer than ISYNC_LOW of its sync jobs wait in the queue,
 * and moves after_obj in the same transaction: a restart resumes where the
 * last step stopped, and the queue keeps what was enqueued. When no asset
 * is left the state is 'done' and stays so.
 *
 * Sync jobs are ordinary deliveries (lane "ncs:NAME", kind publish, the
 * coalesce key of the object) at QUEUE_PRIO_LOW: the publisher claims the
 * live changes first, keeps at most a few sync jobs in its window (lane
 * limits, publisher.c) and sends the live ones ahead of them. A live change
 * to an object whose sync job still waits supersedes it (the mosObj is
 * built from the catalog when claimed: the newest revision); an object that
 * already has a waiting delivery or was delivered to that NCS is skipped.
 */
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "gateway/gateway.h"

#define ISYNC_BATCH	500	/* assets enqueued per step and NCS */
#define ISYNC_LOW	500	/* enqueue more below this many waiting */
#define ISYNC_NEXT_MS	20	/* next step after one that enqueued */
#define ISYNC_POLL_MS	200	/* next step while the queue drains */
#define ISYNC_RETRY_MS	1000	/* after a database error */

/* What a step did for one NCS. */
struct isync_res {
	char	*ncs;
	int64_t	 queued;	/* jobs enqueued by this step */
	bool	 first;		/* the step that began it */
	bool	 done;		/* every asset is enqueued */
};

/* One step on the bookkeeping thread. */
struct isync_step {
	struct isync		*s;
	struct isync_res	*v;
	size_t			 n;
	bool			 more;	/* some NCS is still running */
	char			 err[256];
};

struct isync {
	struct gw	*gw;
	struct event	*ev;
	bool		 busy;		/* a step on the thread */
	bool		 again;		/* kicked meanwhile */
	bool		 gone;		/* freed while busy */
};

/* Record an NCS the first time it is configured (inside gwdb_sync_ncs). */
int
isync_record(struct gwdb *g, const struct ncs_conf *c)
{
	struct store_stmt	*st = gwdb_stmt(g, ST_SYNC_NEW);

	store_bind_text(st, 1, c->name, -1);
	store_bind_text(st, 2, c->initial_sync == NCS_SYNC_ALL ? "running" :
	    "none", -1);
	store_bind_int64(st, 3, queue_now(g->q));
	return gwdb_exec_stmt(g, st);
}

/* The sync jobs of an NCS waiting in the queue (counted up to ISYNC_LOW). */
static int
isync_waiting(struct gwdb *g, const char *lane, int64_t *n)
{
	struct store_stmt	*st = gwdb_stmt(g, ST_SYNC_WAITING);
	int		 rc;

	store_bind_text(st, 1, lane, -1);
	store_bind_int(st, 2, QUEUE_PRIO_LOW);
	store_bind_int(st, 3, ISYNC_LOW);
	if ((rc = store_step(st)) == STORE_ROW)
		*n = store_column_int64(st, 0);
	store_reset(st);
	return rc == STORE_ROW ? QUEUE_OK : gwdb_rc(rc);
}

/* Up to ISYNC_BATCH live objIDs after `after`, in order. */
static int
isync_next(struct gwdb *g, const char *after, char ***ids, size_t *n)
{
	struct store_stmt	*st = gwdb_stmt(g, ST_SYNC_NEXT);
	int		 rc = STORE_DONE;

	*ids = xcalloc(ISYNC_BATCH, sizeof **ids);
	*n = 0;
	store_bind_text(st, 1, after, -1);
	store_bind_int(st, 2, ISYNC_BATCH);
	while (*n < ISYNC_BATCH && (rc = store_step(st)) == STORE_ROW)
		(*ids)[(*n)++] = xstrdup(store_column_text(st,
		    0));
	store_reset(st);
	return rc == STORE_ROW || rc == STORE_DONE ? QUEUE_OK : gwdb_rc(rc);
}

/* Does the object need no sync job (delivered, or a delivery waits)? */
static int
isync_skip(struct gwdb *g, const char *ncs, const char *obj_id,
    const char *key, bool *skip)
{
	struct store_stmt	*st = gwdb_stmt(g, ST_SYNC_SKIP);
	int		 rc;

	store_bind_text(st, 1, ncs, -1);
	store_bind_text(st, 2, obj_id, -1);
	store_bind_text(st, 3, key, -1);
	if ((rc = store_step(st)) == STORE_ROW)
		*skip = store_column_int(st, 0) != 0;
	store_reset(st);
	return rc == STORE_ROW ? QUEUE_OK : gwdb_rc(rc);
}

/* Enqueue the sync job of one object. */
static int
isync_enqueue(struct gwdb *g, const char *ncs, const char *lane,
    const char *obj_id, int max_attempts, int64_t *queued)
{
	char	*key;
	bool	 skip = false, added = false;
	int	 rc;

	xasprintf(&key, "obj:%s@%s", obj_id, ncs);
	if ((rc = isync_skip(g, ncs, obj_id, key, &skip)) == QUEUE_OK &&
	    !skip)
		rc = catalog_enqueue_one(g, lane, CATALOG_KIND_PUBLISH, key,
		    obj_id, QUEUE_PRIO_LOW, max_attempts, &added);
	if (added)
		(*queued)++;
	free(key);
	return rc;
}

/* One NCS: the next batch if few of its sync jobs wait. */
static int
isync_one(struct gwdb *g, struct isync_res *res, const char *after,
    int max_attempts, bool *more)
{
	struct store_stmt	*st;
	char		*lane, **ids = NULL;
	size_t		 n = 0, i;
	int64_t		 waiting = 0;
	int		 rc;

	xasprintf(&lane, CATALOG_LANE_PREFIX "%s", res->ncs);
	res->first = *after == '\0';
	if ((rc = isync_waiting(g, lane, &waiting)) != QUEUE_OK ||
	    waiting >= ISYNC_LOW) {
		*more = true;
		free(lane);
		return rc;
	}
	rc = isync_next(g, after, &ids, &n);
	for (i = 0; rc == QUEUE_OK && i < n; i++)
		rc = isync_enqueue(g, res->ncs, lane, ids[i], max_attempts,
		    &res->queued);
	if (rc == QUEUE_OK) {
		res->done = n < ISYNC_BATCH;
		st = gwdb_stmt(g, ST_SYNC_MOVE);
		store_bind_text(st, 1, res->ncs, -1);
		store_bind_text(st, 2, n > 0 ? ids[n - 1] : after, -1);
		store_bind_int64(st, 3, res->queued);
		store_bind_int(st, 4, res->done ? 1 : 0);
		store_bind_int64(st, 5, queue_now(g->q));
		rc = gwdb_exec_stmt(g, st);
		*more = *more || !res->done;
	}
	for (i = 0; i < n; i++)
		free(ids[i]);
	free(ids);
	free(lane);
	return rc;
}

/* The bookkeeping thread: one transaction over every running NCS. */
static int
isync_run(struct gwdb *g, void *arg)
{
	struct isync_step	*s = arg;
	struct store_stmt		*st;
	char			**after = NULL;
	int			*max = NULL;
	size_t			 i;
	int			 rc;

	if ((rc = queue_tx_begin(g->q)) != QUEUE_OK)
		goto fail;
	st = gwdb_stmt(g, ST_SYNC_RUNNING);
	while ((rc = store_step(st)) == STORE_ROW) {
		s->v = xreallocarray(s->v, s->n + 1, sizeof *s->v);
		after = xreallocarray(after, s->n + 1, sizeof *after);
		max = xreallocarray(max, s->n + 1, sizeof *max);
		memset(&s->v[s->n], 0, sizeof *s->v);
		s->v[s->n].ncs = xstrdup(store_column_text(st,
		    0));
		after[s->n] = xstrdup(store_column_text(st, 1));
		max[s->n++] = store_column_int(st, 2);
	}
	store_reset(st);
	rc = rc == STORE_DONE ? QUEUE_OK : gwdb_rc(rc);
	for (i = 0; rc == QUEUE_OK && i < s->n; i++)
		rc = isync_one(g, &s->v[i], after[i], max[i], &s->more);
	for (i = 0; i < s->n; i++)
		free(after[i]);
	free(after);
	free(max);
	if (rc != QUEUE_OK) {
		util_strlcpy(s->err, gwdb_errmsg(g), sizeof s->err);
		queue_tx_rollback(g->q);
		return rc;
	}
	if ((rc = queue_tx_commit(g->q)) == QUEUE_OK)
		return rc;
fail:
	util_strlcpy(s->err, gwdb_errmsg(g), sizeof s->err);
	return rc;
}

/* Arm the next step after ms. */
static void
isync_later(struct isync *s, int64_t ms)
{
	struct timeval	tv;

	tv.tv_sec = (time_t)(ms / 1000);
	tv.tv_usec = (suseconds_t)(ms % 1000) * 1000;
	evtimer_add(s->ev, &tv);
}

/* Back on the loop: log, wake the publishers, plan the next step. */
static void
isync_done(void *arg, int rc)
{
	struct isync_step	*st = arg;
	struct isync		*s = st->s;
	struct isync_res	*r;
	struct ncs		*n;
	int64_t			 queued = 0;
	size_t			 i;

	s->busy = false;
	for (i = 0; i < st->n; i++) {
		r = &st->v[i];
		queued += rc == QUEUE_OK ? r->queued : 0;
		if (rc == QUEUE_OK && (r->first || r->done))
			log_event(LL_INFO, "ncs.sync", "ncs=%s phase=%s "
			    "queued=%lld", r->ncs, r->done ? "enqueued" :
			    "start", (long long)r->queued);
		free(r->ncs);
	}
	free(st->v);
	if (s->gone) {
		event_free(s->ev);
		free(s);
		free(st);
		return;
	}
	if (rc != QUEUE_OK) {
		log_event_rl(rc == QUEUE_EBUSY ? LL_DEBUG : LL_WARN, "db.error",
		    "isync", "op=initial-sync error=%s msg=%s",
		    log_q(queue_strerror(rc)), log_q(st->err));
		isync_later(s, ISYNC_RETRY_MS);
	} else if (s->again) {
		s->again = false;
		isync_later(s, 0);
	} else if (st->more)
		isync_later(s, queued > 0 ? ISYNC_NEXT_MS : ISYNC_POLL_MS);
	if (queued > 0) {
		for (n = TAILQ_FIRST(&s->gw->ncs); n != NULL;
		    n = TAILQ_NEXT(n, entry))
			publisher_pump(n->pub);
	}
	free(st);
}

/* The timer: a step, unless one runs or the daemon stops. */
static void
isync_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct isync		*s = arg;
	struct isync_step	*st;

	(void)fd;
	(void)ev;
	if (s->gw->stopping || s->gw->dbw == NULL)
		return;
	if (s->busy) {
		s->again = true;
		return;
	}
	st = xcalloc(1, sizeof *st);
	st->s = s;
	s->busy = true;
	dbw_submit(s->gw->dbw, isync_run, isync_done, st);
}

/* The loop's side, idle until kicked. */
struct isync *
isync_new(struct gw *gw)
{
	struct isync	*s;

	s = xcalloc(1, sizeof *s);
	s->gw = gw;
	if ((s->ev = evtimer_new(gw->base, isync_cb, s)) == NULL)
		fatalx("event_new failed");
	return s;
}

/* Free (a step still on the thread frees it when done). */
void
isync_free(struct isync *s)
{
	if (s == NULL)
		return;
	evtimer_del(s->ev);
	if (s->busy) {
		s->gone = true;
		return;
	}
	event_free(s->ev);
	free(s);
}

/* The NCS list was recorded (start, SIGHUP): look for syncs to run. */
void
isync_kick(struct isync *s)
{
	if (s != NULL)
		isync_later(s, 0);
}
