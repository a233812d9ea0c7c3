/*
 * GET /v1/events: the event log (events.c) as Server-Sent Events.
 *
 * A client starts after the id in its Last-Event-ID header (what an
 * EventSource sends when it reconnects), or ?after=, or else at the newest
 * event; ?types=a,b keeps only those types. Each event is
 *
 *	id: 42
 *	event: asset.delivered
 *	data: {"objID":"CLIP-1","objRev":2,"ncs":"ENPS1","status":"UPDATED"}
 *
 * and a comment line ": keepalive" goes out every [events] keepalive. The
 * first time a client's cursor reaches the head of the log (the backlog
 * it asked for is sent, or it started at the newest event or past it), it
 * gets the comment ": caught-up ID" once (ID = that head), so that a
 * client reading a snapshot knows where to stop. If the events after the
 * asked id have been pruned, an "event: gap" (no id) says from where the
 * stream goes on. Rows come from the events pump,
 * woken by the end of each bookkeeping task, never from a polling timer.
 *
 * Limits: [events] sse_max_clients streams (503 beyond). A client is
 * written at most sse_max_buffer ahead of what its socket has taken: the
 * rows beyond wait (its cursor stays), and when its output drains below
 * half of that the pump is woken again; a client to which nothing could
 * be written for two keepalive intervals while events were waiting for it
 * is disconnected. It resumes with Last-Event-ID, without a gap, as long
 * as the log still holds its events.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>

#include "gateway/gateway.h"

struct sse_client {
	struct gw		*gw;
	struct evhttp_request	*req;
	struct evhttp_connection *evcon;
	int64_t			 cursor;	/* last id seen; -1 = newest */
	unsigned		 mask;
	char			*who;
	struct evbuffer		*out;		/* the socket's output */
	struct evbuffer_cb_entry *drain;	/* on out */
	bool			 waiting;	/* rows left for lack of room */
	bool			 caught_up;	/* ": caught-up" sent */
	int64_t			 progress_ms;	/* last write of rows */
	TAILQ_ENTRY(sse_client)	 entry;
};
TAILQ_HEAD(sse_list, sse_client);

struct sse_hub {
	struct sse_list		 clients;
	int			 n;
	struct event		*keepalive;
};

/* Forget a client (its connection is gone or about to be). */
static void
sse_forget(struct sse_client *c)
{
	struct sse_hub	*hub = c->gw->sse;

	TAILQ_REMOVE(&hub->clients, c, entry);
	hub->n--;
	if (c->drain != NULL)
		evbuffer_remove_cb_entry(c->out, c->drain);
	free(c->who);
	free(c);
}

/* evhttp: the client's connection closed. */
static void
sse_closed_cb(struct evhttp_connection *evcon, void *arg)
{
	struct sse_client	*c = arg;

	(void)evcon;
	log_event(LL_INFO, "api.sse", "who=%s action=closed last_id=%lld",
	    log_q(c->who), (long long)c->cursor);
	/*
	 * A network failure detaches an unfinished reply from its
	 * connection instead of freeing it: ending it frees it then.
	 */
	if (evhttp_request_get_connection(c->req) == NULL)
		evhttp_send_reply_end(c->req);
	sse_forget(c);
}

/* Disconnect a client that fell too far behind. */
static void
sse_drop(struct sse_client *c, size_t backlog)
{
	struct evhttp_connection *evcon = c->evcon;

	log_event(LL_WARN, "api.sse", "who=%s action=dropped backlog=%zu "
	    "last_id=%lld note=%s", log_q(c->who), backlog,
	    (long long)c->cursor, log_q("it took nothing for two keepalive "
	    "intervals: it may resume with Last-Event-ID"));
	evhttp_connection_set_closecb(evcon, NULL, NULL);
	sse_forget(c);
	evhttp_connection_free(evcon);
}

/* Send b to c. */
static void
sse_send(struct sse_client *c, struct evbuffer *b)
{
	if (evbuffer_get_length(b) > 0)
		api_sse_chunk(c->req, b);
}

/* Room for more output to c (bytes), within sse_max_buffer. */
static size_t
sse_room(struct sse_client *c)
{
	size_t	backlog = api_sse_backlog(c->req);
	size_t	max = (size_t)c->gw->cfg->ev_sse_max_buffer;

	return backlog < max ? max - backlog : 0;
}

/* The socket took output: a waiting client that has room again reads on. */
static void
sse_drain_cb(struct evbuffer *buf, const struct evbuffer_cb_info *info,
    void *arg)
{
	struct sse_client	*c = arg;

	if (!c->waiting || info->n_deleted == 0 || evbuffer_get_length(buf) >
	    (size_t)c->gw->cfg->ev_sse_max_buffer / 2)
		return;
	c->waiting = false;
	events_wake(c->gw->events);
}

/*
 * Every keepalive: a comment to every client with room for it; a client
 * that has waited for room for two intervals is disconnected.
 */
static void
sse_keepalive_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct gw		*gw = arg;
	struct sse_client	*c, *next;
	struct evbuffer		*b;

	(void)fd;
	(void)ev;
	if ((b = evbuffer_new()) == NULL)
		fatalx("evbuffer_new failed");
	for (c = TAILQ_FIRST(&gw->sse->clients); c != NULL; c = next) {
		next = TAILQ_NEXT(c, entry);
		if (c->waiting && util_mono_ms() - c->progress_ms >
		    gw->cfg->ev_keepalive_ms * 2) {
			sse_drop(c, api_sse_backlog(c->req));
			continue;
		}
		if (sse_room(c) < 64)
			continue;
		evbuffer_add_printf(b, ": keepalive\n\n");
		sse_send(c, b);
	}
	evbuffer_free(b);
}

/* The hub, made on first use. */
static struct sse_hub *
sse_hub(struct gw *gw)
{
	struct sse_hub	*hub;
	struct timeval	 tv;

	if (gw->sse != NULL)
		return gw->sse;
	hub = xcalloc(1, sizeof *hub);
	TAILQ_INIT(&hub->clients);
	if ((hub->keepalive = event_new(gw->base, -1, EV_PERSIST,
	    sse_keepalive_cb, gw)) == NULL)
		fatalx("event_new failed");
	tv.tv_sec = (time_t)(gw->cfg->ev_keepalive_ms / 1000);
	tv.tv_usec = (suseconds_t)(gw->cfg->ev_keepalive_ms % 1000) * 1000;
	event_add(hub->keepalive, &tv);
	gw->sse = hub;
	return hub;
}

/* A non-negative event id; -1 if s is not one. */
static int64_t
sse_parse_id(const char *s)
{
	char		*end;
	long long	 v;

	if (*s < '0' || *s > '9')
		return -1;
	v = strtoll(s, &end, 10);
	return *end != '\0' || v < 0 || v == LLONG_MAX ? -1 : (int64_t)v;
}

/* GET /v1/events */
void
api_events_get(struct api_req *r)
{
	struct gw		*gw = api_gw(r);
	struct sse_hub		*hub = sse_hub(gw);
	struct sse_client	*c;
	struct evhttp_connection *evcon;
	struct evbuffer		*b;
	struct bufferevent	*bev, *under;
	struct timeval		 tv;
	const char		*types = api_query(r, "types"), *last;
	const char		*field = "Last-Event-ID";
	char			*err = NULL;
	unsigned		 mask = EVT_ALL;
	int64_t			 after = -1;

	last = evhttp_find_header(evhttp_request_get_input_headers(r->req),
	    "Last-Event-ID");
	if (last == NULL) {
		last = api_query(r, "after");
		field = "after";
	}
	if (last != NULL && (after = sse_parse_id(last)) < 0) {
		api_problem(r, 422, "invalid-parameter", "Invalid parameter",
		    field, "%s must be an event id (a non-negative integer)",
		    field);
		return;
	}
	if (types != NULL && events_type_mask(types, true, &mask, &err) != 0) {
		api_problem(r, 422, "invalid-parameter", "Invalid parameter",
		    "types", "types: %s", err);
		free(err);
		return;
	}
	if (hub->n >= gw->cfg->ev_sse_max_clients) {
		api_problem(r, 503, "too-many-streams", "Too many event "
		    "streams", NULL, "%d event streams are open ([events] "
		    "sse_max_clients)", hub->n);
		return;
	}
	if ((evcon = evhttp_request_get_connection(r->req)) == NULL) {
		api_problem(r, 400, "bad-request", "Malformed request", NULL,
		    "the connection is gone");
		return;
	}
	c = xcalloc(1, sizeof *c);
	c->gw = gw;
	c->evcon = evcon;
	c->cursor = after;
	c->mask = mask;
	c->who = xstrdup(r->who != NULL ? r->who : "-");
	evhttp_connection_set_closecb(evcon, sse_closed_cb, c);
	TAILQ_INSERT_TAIL(&hub->clients, c, entry);
	hub->n++;
	log_event(LL_INFO, "api.sse", "who=%s action=open after=%lld "
	    "types=%s", log_q(c->who), (long long)after,
	    log_q(types != NULL ? types : "*"));
	c->req = api_sse_start(r, "text/event-stream");
	c->progress_ms = util_mono_ms();
	if ((bev = evhttp_connection_get_bufferevent(evcon)) != NULL) {
		/*
		 * evhttp reads a connection while it writes a reply (to see
		 * it close), with the same timeout as writes: a client sends
		 * nothing on a stream, so no read timeout; a write that
		 * stalls for four keepalive intervals ends it.
		 */
		tv.tv_sec = (time_t)(gw->cfg->ev_keepalive_ms * 4 / 1000);
		tv.tv_usec = (suseconds_t)(gw->cfg->ev_keepalive_ms * 4 %
		    1000) * 1000;
		bufferevent_set_timeouts(bev, NULL, &tv);
		under = bufferevent_get_underlying(bev);
		c->out = bufferevent_get_output(under != NULL ? under : bev);
		c->drain = evbuffer_add_cb(c->out, sse_drain_cb, c);
	}
	if ((b = evbuffer_new()) == NULL)
		fatalx("evbuffer_new failed");
	evbuffer_add_printf(b, "retry: 3000\n\n");
	sse_send(c, b);
	evbuffer_free(b);
	events_wake(gw->events);
}

int64_t
api_events_after(struct gw *gw)
{
	struct sse_client	*c;
	int64_t			 min = -1;

	if (gw->sse == NULL)
		return -1;
	TAILQ_FOREACH(c, &gw->sse->clients, entry) {
		if (c->cursor >= 0 && (min < 0 || c->cursor < min))
			min = c->cursor;
	}
	return min;
}

bool
api_events_listening(struct gw *gw)
{
	return gw->sse != NULL && gw->sse->n > 0;
}

/*
 * New rows for the clients: each gets those after its cursor, as far as
 * its room goes. True if a client took the whole page (it may want the
 * next one).
 */
bool
api_events_deliver(struct gw *gw, const struct event_rows *er)
{
	struct sse_client	*c;
	struct evbuffer		*b;
	const struct event_row	*rows = er->rows;
	size_t			 i, n = er->n, room;
	bool			 all = false, wrote;

	if (gw->sse == NULL)
		return false;
	if ((b = evbuffer_new()) == NULL)
		fatalx("evbuffer_new failed");
	TAILQ_FOREACH(c, &gw->sse->clients, entry) {
		if (c->cursor < 0 || c->cursor > er->head) {
			/* from the newest (or past it: the log was reset) */
			c->cursor = er->head;
		} else if (er->after < 0 || c->cursor < er->after) {
			/* came while the rows were read: the next read */
			continue;
		}
		if (c->cursor < er->pruned) {
			evbuffer_add_printf(b, "event: gap\ndata: "
			    "{\"after\":%lld,\"next\":%lld}\n\n",
			    (long long)c->cursor, (long long)er->pruned + 1);
			c->cursor = er->pruned;
		}
		room = sse_room(c);
		wrote = false;
		for (i = 0; i < n; i++) {
			if (rows[i].id <= c->cursor)
				continue;
			if (evbuffer_get_length(b) >= room)
				break;
			if ((events_type_bit(rows[i].type) & c->mask) != 0)
				evbuffer_add_printf(b, "id: %lld\nevent: %s\n"
				    "data: %s\n\n", (long long)rows[i].id,
				    rows[i].type, rows[i].data);
			c->cursor = rows[i].id;
			wrote = true;
		}
		c->waiting = i < n;
		if (wrote || !c->waiting)
			c->progress_ms = util_mono_ms();
		if (n > 0 && c->cursor == rows[n - 1].id)
			all = true;
		/*
		 * At the head: its cursor is there, or it took every row up
		 * to it (ids a rolled back transaction took are never rows).
		 */
		if (!c->caught_up && !c->waiting && (c->cursor >= er->head ||
		    !er->full)) {
			evbuffer_add_printf(b, ": caught-up %lld\n\n",
			    (long long)(c->cursor > er->head ? c->cursor :
			    er->head));
			c->caught_up = true;
		}
		sse_send(c, b);
		evbuffer_drain(b, evbuffer_get_length(b));
	}
	evbuffer_free(b);
	return all;
}

/* Shutdown: end every stream. */
void
api_events_close_all(struct gw *gw)
{
	struct sse_hub		*hub = gw->sse;
	struct sse_client	*c;

	if (hub == NULL)
		return;
	while ((c = TAILQ_FIRST(&hub->clients)) != NULL) {
		evhttp_connection_set_closecb(c->evcon, NULL, NULL);
		evhttp_send_reply_end(c->req);
		sse_forget(c);
	}
	event_free(hub->keepalive);
	free(hub);
	gw->sse = NULL;
}
