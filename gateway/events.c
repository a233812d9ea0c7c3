/*
 * The event log: what happened to assets, jobs, links and running orders,
 * in one table of the gateway's file (events: an id that only grows, a
 * time, a type and a JSON object), read by the SSE streams (api_events.c)
 * and turned into webhook jobs (webhook.c).
 *
 * job.state, asset.delivered and asset.failed are written by a trigger on
 * the queue's job_events (gwdb.c), so they commit with the state change
 * they describe; link.state (here, from the loop) and ro.changed
 * (rostore.c, in the running order's own transaction) by events_add.
 *
 * Readers are woken, not polling: every bookkeeping task that ends (dbw.c
 * calls back after each one, and housekeeping runs one every second, which
 * also picks up what another process such as mosctl committed) may have
 * committed events, so the pump reads what is new in one task of its own:
 * it first turns new events into webhook jobs (one transaction with the
 * cursor that says how far that went), then reads the rows the slowest
 * SSE client still needs, EVENTS_PAGE at a time.
 */
#include <stdlib.h>
#include <string.h>

#include "gateway/gateway.h"

static const struct {
	const char	*name;
	unsigned	 bit;
} ev_types[] = {
	{ "asset.delivered", EVT_ASSET_DELIVERED },
	{ "asset.failed", EVT_ASSET_FAILED },
	{ "job.state", EVT_JOB_STATE },
	{ "link.state", EVT_LINK_STATE },
	{ "ro.changed", EVT_RO_CHANGED },
};

/* At most this many rows deleted by one prune (a transaction). */
#define EVENTS_PRUNE_BATCH	20000

struct events {
	struct gw	*gw;
	bool		 busy;		/* a pump on the thread */
	bool		 again;		/* something ended meanwhile */
};

/* One pump: its inputs, then what it found. */
struct ev_pump {
	struct events		*ev;
	struct webhook_fan	*fan;		/* NULL: no webhooks */
	struct event_rows	 got;		/* after: -1 no rows wanted */
	size_t			 jobs;		/* webhook jobs made */
};

unsigned
events_type_bit(const char *type)
{
	size_t	i;

	for (i = 0; i < nitems(ev_types); i++) {
		if (strcmp(ev_types[i].name, type) == 0)
			return ev_types[i].bit;
	}
	return 0;
}

/* "a, b" (or "*" unless strict) as a mask of types. */
int
events_type_mask(const char *list, bool strict, unsigned *mask, char **err)
{
	char	*copy, *tok, *save = NULL;
	unsigned bit;
	int	 rc = 0;

	*mask = 0;
	copy = xstrdup(list);
	for (tok = strtok_r(copy, ", ", &save); tok != NULL && rc == 0;
	    tok = strtok_r(NULL, ", ", &save)) {
		if (!strict && strcmp(tok, "*") == 0)
			*mask |= EVT_ALL;
		else if ((bit = events_type_bit(tok)) != 0)
			*mask |= bit;
		else {
			xasprintf(err, "unknown event type '%s' (known: "
			    "asset.delivered, asset.failed, job.state, "
			    "link.state, ro.changed%s)", tok, strict ? "" :
			    ", or *");
			rc = -1;
		}
	}
	free(copy);
	if (rc == 0 && *mask == 0) {
		xasprintf(err, "no event type given");
		rc = -1;
	}
	return rc;
}

/* Insert one event (in the caller's transaction, or on its own). */
int
events_add(struct gwdb *g, const char *type, const char *data)
{
	struct store_stmt	*st = gwdb_stmt(g, ST_EVENTS_ADD);

	store_bind_int64(st, 1, queue_now(g->q));
	store_bind_text(st, 2, type, -1);
	store_bind_text(st, 3, data, -1);
	return gwdb_exec_stmt(g, st);
}

void
events_rows_free(struct event_row *r, size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++) {
		free(r[i].type);
		free(r[i].data);
	}
	free(r);
}

/* Up to max rows with ids above after, in order. */
int
events_read(struct gwdb *g, int64_t after, size_t max, struct event_row **out,
    size_t *nout)
{
	struct store_stmt		*st = gwdb_stmt(g, ST_EVENTS_READ);
	struct event_row	*r = NULL;
	size_t			 n = 0;
	int			 rc;

	store_bind_int64(st, 1, after);
	store_bind_int64(st, 2, (int64_t)max);
	while ((rc = store_step(st)) == STORE_ROW) {
		r = xreallocarray(r, n + 1, sizeof *r);
		r[n].id = store_column_int64(st, 0);
		r[n].t_ms = store_column_int64(st, 1);
		r[n].type = xstrdup(store_column_text(st, 2));
		r[n].data = xstrdup(store_column_text(st, 3));
		r[n].hook = store_column_int(st, 4) != 0;
		n++;
	}
	store_reset(st);
	if (rc != STORE_DONE) {
		events_rows_free(r, n);
		return gwdb_rc(rc);
	}
	*out = r;
	*nout = n;
	return QUEUE_OK;
}

/* The largest id ever given, and the largest pruned. */
int
events_head(struct gwdb *g, int64_t *head, int64_t *pruned)
{
	struct store_stmt	*st = gwdb_stmt(g, ST_EVENTS_HEAD);
	int		 rc;

	if ((rc = store_step(st)) == STORE_ROW) {
		*head = store_column_int64(st, 0);
		*pruned = store_column_int64(st, 1);
	}
	store_reset(st);
	return rc == STORE_ROW ? QUEUE_OK : gwdb_rc(rc);
}

/* One int64 from a query with one parameter (0 when NULL). */
static int
events_scalar(struct gwdb *g, const char *sql, int64_t arg, int64_t *out)
{
	struct store_stmt	*st;
	int		 rc;

	if ((rc = store_prepare(g->db, sql, 0, &st)) != STORE_OK)
		return gwdb_rc(rc);
	store_bind_int64(st, 1, arg);
	if ((rc = store_step(st)) == STORE_ROW)
		*out = store_column_int64(st, 0);
	store_finalize(st);
	return rc == STORE_ROW ? QUEUE_OK : gwdb_rc(rc);
}

/*
 * Delete what is older than age_ms or beyond the newest max, oldest first,
 * at most EVENTS_PRUNE_BATCH rows; events_pruned remembers the largest id
 * deleted, so that a reader asking for less learns of the gap.
 */
int
events_prune(struct gwdb *g, int64_t age_ms, int64_t max, size_t *n)
{
	int64_t		 head, pruned, by_age = 0, oldest = 0, cut;
	struct store_stmt	*st;
	int		 rc;

	*n = 0;
	if ((rc = queue_tx_begin(g->q)) != QUEUE_OK)
		return rc;
	rc = events_head(g, &head, &pruned);
	if (rc == QUEUE_OK)
		rc = events_scalar(g, "SELECT coalesce(max(id), 0) FROM events"
		    " WHERE t_ms < ?1", queue_now(g->q) - age_ms, &by_age);
	if (rc == QUEUE_OK)
		rc = events_scalar(g, "SELECT coalesce(min(id), 0) FROM events"
		    " WHERE id > ?1", 0, &oldest);
	cut = head - max > by_age ? head - max : by_age;
	if (rc != QUEUE_OK || cut <= pruned || oldest == 0 || cut < oldest) {
		queue_tx_rollback(g->q);
		return rc;
	}
	if (cut - oldest >= EVENTS_PRUNE_BATCH)
		cut = oldest + EVENTS_PRUNE_BATCH - 1;
	if (store_prepare(g->db, "DELETE FROM events WHERE id <= ?1", 0, &st) !=
	    STORE_OK) {
		rc = gwdb_rc(store_errcode(g->db));
		queue_tx_rollback(g->q);
		return rc;
	}
	store_bind_int64(st, 1, cut);
	rc = gwdb_rc(store_step(st));
	*n = (size_t)store_changes(g->db);
	store_finalize(st);
	if (rc == QUEUE_OK)
		rc = gwdb_meta_put(g, "events_pruned", cut);
	if (rc == QUEUE_OK)
		return queue_tx_commit(g->q);
	queue_tx_rollback(g->q);
	*n = 0;
	return rc;
}

/* ------------------------------------------------------------------------ */
/* The pump */

struct events *
events_new(struct gw *gw)
{
	struct events	*ev;

	ev = xcalloc(1, sizeof *ev);
	ev->gw = gw;
	return ev;
}

void
events_free(struct events *ev)
{
	free(ev);
}

/* The bookkeeping thread: webhook jobs, then the rows the streams need. */
int
events_pump_run(struct gwdb *g, void *arg)
{
	struct ev_pump	*p = arg;
	int		 rc = QUEUE_OK;

	if (p->fan != NULL)
		rc = webhooks_fan_run(g, p->fan, &p->jobs);
	/* the head first: every row up to it is among those read then */
	if (rc == QUEUE_OK)
		rc = events_head(g, &p->got.head, &p->got.pruned);
	if (rc == QUEUE_OK && p->got.after >= 0)
		rc = events_read(g, p->got.after, EVENTS_PAGE, &p->got.rows,
		    &p->got.n);
	p->got.full = p->got.n == EVENTS_PAGE;
	return rc;
}

/* Back on the loop: hand the rows out, kick the webhooks. */
static void
events_pump_done(void *arg, int rc)
{
	struct ev_pump	*p = arg;
	struct events	*ev = p->ev;
	struct gw	*gw = ev->gw;
	bool		 more;

	ev->busy = false;
	more = false;
	if (rc == QUEUE_OK) {
		/* a full page that a client took whole: read the next */
		more = api_events_deliver(gw, &p->got) && p->got.full;
		if (p->jobs > 0)
			webhooks_kick(gw);
	} else
		log_event_rl(LL_WARN, "events.error", "pump", "msg=%s",
		    log_q(queue_strerror(rc)));
	more = more || (rc == QUEUE_OK && (ev->again ||
	    webhooks_fan_more(p->fan)));
	events_rows_free(p->got.rows, p->got.n);
	webhooks_fan_free(p->fan);
	free(p);
	ev->again = false;
	if (more)
		events_wake(ev);
}

/* Something may have committed: read it if anyone listens. */
void
events_wake(struct events *ev)
{
	struct gw	*gw;
	struct ev_pump	*p;

	if (ev == NULL || (gw = ev->gw)->stopping || gw->dbw == NULL)
		return;
	if (!api_events_listening(gw) && gw->hooks == NULL)
		return;
	if (ev->busy) {
		ev->again = true;
		return;
	}
	ev->busy = true;
	p = xcalloc(1, sizeof *p);
	p->ev = ev;
	p->got.after = api_events_after(gw);
	p->fan = webhooks_fan(gw);
	dbw_submit(gw->dbw, events_pump_run, events_pump_done, p);
}

/* ------------------------------------------------------------------------ */
/* link.state */

struct ev_add {
	char	*type;
	char	*data;
};

/* Bookkeeping thread: one event in its own transaction. */
static int
events_add_run(struct gwdb *g, void *arg)
{
	struct ev_add	*a = arg;
	int		 rc;

	if ((rc = queue_tx_begin(g->q)) != QUEUE_OK)
		return rc;
	if ((rc = events_add(g, a->type, a->data)) != QUEUE_OK) {
		queue_tx_rollback(g->q);
		return rc;
	}
	return queue_tx_commit(g->q);
}

static void
events_add_done(void *arg, int rc)
{
	struct ev_add	*a = arg;

	if (rc != QUEUE_OK)
		log_event(LL_WARN, "events.error", "type=%s msg=%s", a->type,
		    log_q(queue_strerror(rc)));
	free(a->type);
	free(a->data);
	free(a);
}

/* The link's state as an event, when it is not the one last written. */
void
events_link(struct gw *gw, struct link *l)
{
	struct ev_add	*a;
	struct sbuf	 sb;
	const char	*state;

	if (gw->dbw == NULL || gw->stopping)
		return;
	state = link_is_up(l) ? (l->state == LINK_DEGRADED ? "degraded" :
	    "up") : l->state == LINK_SLEEPING ? "sleeping" : "down";
	if (l->ev_state != NULL && strcmp(l->ev_state, state) == 0)
		return;
	l->ev_state = state;
	memset(&sb, 0, sizeof sb);
	sbuf_puts(&sb, "{\"ncs\":");
	sbuf_json_str(&sb, l->ncs->conf->name);
	sbuf_printf(&sb, ",\"port\":\"%s\",\"target\":\"%s\",\"state\":\"%s\","
	    "\"why\":", gw_port_name(l->port), l->target == 0 ? "primary" :
	    "buddy", state);
	sbuf_json_str(&sb, link_is_up(l) ? "" : l->reason);
	sbuf_puts(&sb, "}");
	a = xcalloc(1, sizeof *a);
	a->type = xstrdup("link.state");
	a->data = sb.s;
	dbw_submit(gw->dbw, events_add_run, events_add_done, a);
}
