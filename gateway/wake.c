/*
 * wake: the publishers learn that jobs arrived (PostgreSQL).
 *
 * The queue's triggers notify a channel when jobs are added, or become due
 * again by an update, from any process or instance (queue_wake_fd). One
 * listener per process, on the loop: a notification makes the publisher of
 * every NCS this instance owns claim (publisher_woken). With a working
 * listener the publishers look for due jobs by themselves only every
 * [database] notify_poll (a safety net, and for jobs whose run_after comes
 * later); while it is down they poll every PUB_POLL_MS as on SQLite.
 *
 * A lost listener connection is opened again at once inside queue_woken()
 * (a terminated session, a restarted server); when that fails it is tried
 * again with backoff (WAKE_RETRY_MIN_MS doubling to WAKE_RETRY_MAX_MS),
 * logged once when it goes down (wake.down, rate-limited) and once when it
 * is back (wake.up). On SQLite there is no listener: wake_new() is NULL.
 */
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "gateway/gateway.h"

#define WAKE_RETRY_MIN_MS	200
#define WAKE_RETRY_MAX_MS	5000

struct wake {
	struct gw	*gw;
	struct event	*ev;		/* the listener's descriptor */
	struct event	*retry;		/* connect again */
	int64_t		 backoff_ms;
	bool		 up;
	bool		 down;		/* logged as down */
};

static void	wake_read_cb(evutil_socket_t, short, void *);

/* Every owned NCS's publisher claims. */
static void
wake_publishers(struct gw *gw)
{
	struct ncs	*n;

	for (n = TAILQ_FIRST(&gw->ncs); n != NULL; n = TAILQ_NEXT(n, entry))
		if (n->owned && n->pub != NULL)
			publisher_woken(n->pub);
}

/* The listener is gone: poll as without one, try again later. */
static void
wake_lost(struct wake *w, const char *why)
{
	struct timeval	tv;
	bool		was = w->up;

	if (w->ev != NULL) {
		event_free(w->ev);
		w->ev = NULL;
	}
	w->up = false;
	if (!w->down) {
		w->down = true;
		log_event_rl(LL_WARN, "wake.down", "listener", "error=%s "
		    "retry_ms=%lld note=%s", log_q(why),
		    (long long)w->backoff_ms, log_q("the publishers poll "
		    "until it is back"));
	}
	tv.tv_sec = (time_t)(w->backoff_ms / 1000);
	tv.tv_usec = (suseconds_t)(w->backoff_ms % 1000) * 1000;
	evtimer_add(w->retry, &tv);
	w->backoff_ms *= 2;
	if (w->backoff_ms > WAKE_RETRY_MAX_MS)
		w->backoff_ms = WAKE_RETRY_MAX_MS;
	if (was)
		wake_publishers(w->gw);		/* from the slow poll to fast */
}

/* Watch the listener's descriptor (again: it changes with a connection). */
static bool
wake_watch(struct wake *w)
{
	struct queue	*q = w->gw->db->q;
	int		 fd;

	if ((fd = queue_wake_fd(q)) < 0) {
		wake_lost(w, queue_errmsg(q));
		return false;
	}
	w->ev = event_new(w->gw->base, fd, EV_READ, wake_read_cb, w);
	if (w->ev == NULL)
		fatalx("event_new failed");
	event_add(w->ev, NULL);
	if (!w->up) {
		w->up = true;
		w->backoff_ms = WAKE_RETRY_MIN_MS;
		if (w->down)
			log_event(LL_INFO, "wake.up", "note=%s", log_q("job "
			    "notifications again"));
		w->down = false;
		/* what came while it was down is unknown */
		wake_publishers(w->gw);
	}
	return true;
}

/* Notifications (or the connection ended). */
static void
wake_read_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct wake	*w = arg;
	int		 k;

	(void)fd;
	(void)ev;
	/* the descriptor may be closed and reused by a new connection */
	event_free(w->ev);
	w->ev = NULL;
	if ((k = queue_woken(w->gw->db->q)) < 0) {
		wake_lost(w, queue_errmsg(w->gw->db->q));
		return;
	}
	if (!wake_watch(w))
		return;
	if (k > 0)
		wake_publishers(w->gw);
}

/* Connect again (after a failure). */
static void
wake_retry_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct wake	*w = arg;

	(void)fd;
	(void)ev;
	if (w->gw->stopping)
		return;
	/* a lost connection is made again here; none: made by wake_watch */
	if (queue_woken(w->gw->db->q) < 0) {
		wake_lost(w, queue_errmsg(w->gw->db->q));
		return;
	}
	(void)wake_watch(w);
}

struct wake *
wake_new(struct gw *gw)
{
	struct wake	*w;

	if (gw->cfg->db_driver != STORE_POSTGRESQL)
		return NULL;
	w = xcalloc(1, sizeof *w);
	w->gw = gw;
	w->backoff_ms = WAKE_RETRY_MIN_MS;
	if ((w->retry = evtimer_new(gw->base, wake_retry_cb, w)) == NULL)
		fatalx("event_new failed");
	(void)wake_watch(w);
	return w;
}

void
wake_free(struct wake *w)
{
	if (w == NULL)
		return;
	if (w->ev != NULL)
		event_free(w->ev);
	event_free(w->retry);
	free(w);
}

/* Do notifications work now (false: SQLite, or the listener is down)? */
bool
wake_listening(const struct wake *w)
{
	return w != NULL && w->up;
}
