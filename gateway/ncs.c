/*
 * One configured NCS at run time: its links (lower and upper, to the primary
 * and, if configured, to the buddy), its messageID counters, the queues of
 * our outgoing messages per port, and its publisher.
 *
 * Messages wait in ncs->q[port] and go out on the active target's link. On
 * failover they simply wait for the other target's link: the pending
 * message moves with them. Without hot_standby the standby target's links
 * stay connected and heartbeated, so the gateway knows where it can go;
 * with hot_standby the sleeping target is not contacted at all until the
 * active one fails.
 *
 * Switching (link.failover):
 *   - the active lower link goes down and the other is up (hot standby:
 *     whenever the active lower link goes down);
 *   - the standby lower link comes up while the active one is down;
 *   - ENPS buddy sentences (mos-protocol.md section 6): "Buddy server cannot
 *     respond because main server is available" -> primary; "Main server
 *     back on line but not yet updated with most recent data" -> buddy, and
 *     stay there until the buddy fails or says the first sentence;
 *   - back to the primary when it has been up and answering heartbeats for
 *     max(2 x heartbeat_interval, reconnect_min) and nothing is in flight.
 */
#include <sys/socket.h>

#include <stdlib.h>
#include <string.h>

#include <event2/bufferevent.h>
#include <event2/event.h>

#include "gateway/gateway.h"

#define NCS_TICK_MS	250

/* The ncsID on the wire for a target. */
const char *
ncs_wire_id(const struct ncs *n, int target)
{
	if (target == 1 && *n->conf->buddy_ncs_id != '\0')
		return n->conf->buddy_ncs_id;
	return n->conf->ncs_id;
}

/* Is a buddy configured? */
bool
ncs_has_buddy(const struct ncs *n)
{
	return *n->conf->buddy_host != '\0';
}

/* The link of the active target for a port (lower or upper). */
struct link *
ncs_active_link(struct ncs *n, enum gw_port port)
{
	return n->link[n->active][port == GW_PORT_LOWER ? 0 : 1];
}

/* Periodic checks. */
static void
ncs_tick_cb(evutil_socket_t fd, short ev, void *arg)
{
	(void)fd;
	(void)ev;
	ncs_tick(arg);
}

/* messageIDs are there again: the link that waited for one goes on. */
static void
ncs_msgid_ready(void *arg, enum gw_port port)
{
	link_kick(ncs_active_link(arg, port));
}

/* Remember one address of host or buddy_host (for `hosts`). */
static void
ncs_add_host(struct ncs *n, const struct addr *a)
{
	size_t	i;

	for (i = 0; i < n->nhosts; i++) {
		if (addr_equal(&n->hosts[i], a))
			return;
	}
	if (n->nhosts < nitems(n->hosts))
		n->hosts[n->nhosts++] = *a;
	else	/* a name that resolves to many: the oldest goes */
		n->hosts[n->nhosts_next++ % nitems(n->hosts)] = *a;
}

/*
 * A link of ours connected: the address host or buddy_host resolved to is
 * one of the NCS's own (numeric ones are known from the start).
 */
void
ncs_learn_host(struct ncs *n, struct conn *c)
{
	struct sockaddr_storage	ss;
	socklen_t		len = sizeof ss;
	struct addr		a;

	if (getpeername(bufferevent_getfd(c->bev), (struct sockaddr *)&ss,
	    &len) == 0 && addr_from_sockaddr(&a, (struct sockaddr *)&ss) == 0)
		ncs_add_host(n, &a);
}

/* May a peer at this address speak for this NCS ([ncs.NAME] allow)? */
bool
ncs_allows(const struct ncs *n, const struct addr *a)
{
	return acl_match(&n->allow, a, n->hosts, n->nhosts);
}

/* The runtime state for a configured NCS (links not started yet). */
struct ncs *
ncs_new(struct gw *gw, const struct ncs_conf *conf)
{
	struct ncs	*n;
	struct addr	 a;
	char		*err;
	int		 t, p;

	n = xcalloc(1, sizeof *n);
	n->gw = gw;
	n->conf = config_ncs_dup(conf);
	if (acl_parse(&n->allow, conf->allow, &err) != 0)
		fatalx("[ncs.%s] allow: %s", conf->name, err);	/* checked */
	if (addr_parse(&a, conf->host) == 0)
		ncs_add_host(n, &a);
	if (addr_parse(&a, conf->buddy_host) == 0)
		ncs_add_host(n, &a);
	n->mid[0] = msgid_new(gw->db, conf->name, GW_PORT_LOWER, MSGID_BLOCK);
	n->mid[1] = msgid_new(gw->db, conf->name, GW_PORT_UPPER, MSGID_BLOCK);
	for (p = 0; p < 2; p++)
		msgid_set_worker(n->mid[p], gw->dbw, ncs_msgid_ready, n);
	TAILQ_INIT(&n->q[0]);
	TAILQ_INIT(&n->q[1]);
	TAILQ_INIT(&n->ro_pending);
	for (t = 0; t < (ncs_has_buddy(n) ? 2 : 1); t++) {
		for (p = 0; p < 2; p++)
			n->link[t][p] = link_new(n, t, p == 0 ? GW_PORT_LOWER :
			    GW_PORT_UPPER);
	}
	if (conf->query_port != 0)
		n->qlink = link_new(n, 0, GW_PORT_QUERY);
	n->pub = publisher_new(n);
	n->rostat = rostat_new(n);
	n->tick_ev = event_new(gw->base, -1, EV_PERSIST, ncs_tick_cb, n);
	if (n->tick_ev == NULL)
		fatalx("event_new failed");
	return n;
}

/*
 * Start: the links open once this instance owns the NCS (at once on
 * SQLite; see owner.c).
 */
void
ncs_start(struct ncs *n)
{
	struct timeval	tv = { 0, NCS_TICK_MS * 1000 };

	n->active = 0;
	event_add(n->tick_ev, &tv);
	log_event(LL_INFO, "ncs.start", "ncs=%s ncs_id=%s host=%s buddy=%s "
	    "publish=%s", n->conf->name, log_q(n->conf->ncs_id),
	    log_q(n->conf->host), log_q(ncs_has_buddy(n) ? n->conf->buddy_host :
	    "-"), n->conf->publish ? "yes" : "no");
	owner_ncs_start(n->gw->owner, n);
}

/* Connect: the primary, and the buddy too unless it is a hot standby. */
static void
ncs_links_on(struct ncs *n)
{
	int	p;

	n->active = 0;
	for (p = 0; p < 2; p++) {
		link_enable(n->link[0][p], true);
		if (ncs_has_buddy(n) && !n->conf->hot_standby)
			link_enable(n->link[1][p], true);
	}
	if (n->qlink != NULL)
		link_enable(n->qlink, true);
}

/* Ours from now on, or no longer (see gateway.h). */
void
ncs_set_owned(struct ncs *n, bool on, int64_t epoch, const char *reason)
{
	struct link	*l;
	int		 t, p;

	if (on) {
		if (n->owned && n->epoch == epoch)
			return;
		n->owned = true;
		n->epoch = epoch;
		ncs_links_on(n);
		return;
	}
	if (!n->owned)
		return;
	n->owned = false;
	profile1_req_all_stop(n);
	for (t = 0; t < 3; t++) {
		for (p = 0; p < 2; p++) {
			l = t < 2 ? n->link[t][p] : p == 0 ? n->qlink : NULL;
			if (l == NULL)
				continue;
			link_enable(l, false);
			util_strlcpy(l->reason, reason, sizeof l->reason);
		}
	}
	ncs_cancel_all(n);
	publisher_release_all(n->pub);
	gw_flush_soon(n->gw);
}

/* Cancel every queued message: its owner gets LINK_CANCELLED. */
void
ncs_cancel_all(struct ncs *n)
{
	struct link_msg	*lm;
	int		 p;

	for (p = 0; p < 2; p++) {
		while ((lm = TAILQ_FIRST(&n->q[p])) != NULL) {
			TAILQ_REMOVE(&n->q[p], lm, entry);
			if (lm->cb != NULL)
				lm->cb(lm->arg, lm, LINK_CANCELLED, NULL);
			link_msg_free(lm);
		}
	}
}

/* Stop and free: links closed, queued messages cancelled, jobs released. */
void
ncs_free(struct ncs *n)
{
	int	t, p;

	if (n == NULL)
		return;
	profile1_req_all_stop(n);
	profile3_forget(n);
	publisher_release_all(n->pub);
	for (t = 0; t < 2; t++) {
		for (p = 0; p < 2; p++)
			link_free(n->link[t][p]);
	}
	link_free(n->qlink);
	ncs_cancel_all(n);
	rostat_free(n->rostat);
	publisher_free(n->pub);
	msgid_free(n->mid[0]);
	msgid_free(n->mid[1]);
	event_free(n->tick_ev);
	acl_clear(&n->allow);
	log_event(LL_INFO, "ncs.stop", "ncs=%s", n->conf->name);
	config_ncs_free(n->conf);
	free(n);
}

/* Queue a message for the active link of a port. */
void
ncs_send(struct ncs *n, enum gw_port port, struct link_msg *lm)
{
	TAILQ_INSERT_TAIL(&n->q[port == GW_PORT_LOWER ? 0 : 1], lm, entry);
	link_kick(ncs_active_link(n, port));
}

/* Nothing in flight (heartbeats aside) and nothing queued. */
bool
ncs_idle(const struct ncs *n)
{
	const struct link	*l;
	int			 t, p;

	if (!TAILQ_EMPTY(&n->q[0]) || !TAILQ_EMPTY(&n->q[1]))
		return false;
	for (t = 0; t < 2; t++) {
		for (p = 0; p < 2; p++) {
			l = n->link[t][p];
			if (l != NULL && l->inflight != NULL && !l->inflight_hb)
				return false;
		}
	}
	return true;
}

/* Make `to` the active target. */
void
ncs_switch(struct ncs *n, int to, const char *reason)
{
	int	from = n->active, p;

	if (to == from || !ncs_has_buddy(n))
		return;
	n->active = to;
	if (to == 0)
		n->hold_buddy = false;
	log_event(LL_WARN, "link.failover", "ncs=%s from=%s to=%s reason=%s",
	    n->conf->name, from == 0 ? "primary" : "buddy",
	    to == 0 ? "primary" : "buddy", log_q(reason));
	for (p = 0; p < 2; p++) {
		link_release(n->link[from][p]);
		if (n->conf->hot_standby) {
			link_enable(n->link[to][p], true);
			link_enable(n->link[from][p], false);
		}
		link_kick(n->link[to][p]);
	}
	if (link_is_up(n->link[to][0]))
		publisher_pump(n->pub);
	else
		publisher_link_down(n->pub);
}

/* A link changed state: publisher and failover decisions. */
void
ncs_link_changed(struct ncs *n, struct link *l)
{
	struct link	*act, *oth;

	events_link(n->gw, l);
	if (l->port == GW_PORT_LOWER && l->target == n->active) {
		if (link_is_up(l))
			publisher_pump(n->pub);
		else
			publisher_link_down(n->pub);
	}
	if (l->port == GW_PORT_UPPER && l->target == n->active &&
	    l->state == LINK_UP && !n->gw->stopping) {
		profile4_link_up(n);
		rostat_pump(n->rostat);
	}
	if (!ncs_has_buddy(n) || l->port != GW_PORT_LOWER || n->gw->stopping)
		return;
	act = n->link[n->active][0];
	oth = n->link[1 - n->active][0];
	if (l == act && l->state == LINK_DOWN) {
		if (n->active == 1)
			n->hold_buddy = false;
		if (n->conf->hot_standby || link_is_up(oth))
			ncs_switch(n, 1 - n->active, n->active == 0 ?
			    "primary-down" : "buddy-down");
	} else if (l == oth && link_is_up(l) && !link_is_up(act) &&
	    !n->conf->hot_standby)
		ncs_switch(n, 1 - n->active, n->active == 0 ? "primary-down" :
		    "buddy-down");
}

/* An ENPS buddy sentence in a NACK: where to go, or -1. */
int
ncs_buddy_target(struct ncs *n, struct link *l, const char *text)
{
	(void)l;
	if (!ncs_has_buddy(n) || text == NULL)
		return -1;
	if (strcasestr(text, "cannot respond because main server is "
	    "available") != NULL)
		return n->active == 1 ? 0 : -1;
	if (strcasestr(text, "not yet updated") != NULL &&
	    strcasestr(text, "main server") != NULL && n->active == 0) {
		n->hold_buddy = true;
		return 1;
	}
	return -1;
}

/* Periodic: return to a primary that has been healthy long enough. */
void
ncs_tick(struct ncs *n)
{
	struct link	*p, *b;
	int64_t		 hb = n->conf->heartbeat_ms, wait;
	int		 t;

	if (!ncs_has_buddy(n) || n->active != 1 || n->hold_buddy ||
	    n->conf->hot_standby || n->gw->stopping)
		return;
	p = n->link[0][0];
	wait = 2 * hb > n->conf->reconnect_min_ms ? 2 * hb :
	    n->conf->reconnect_min_ms;
	if (p->state != LINK_UP || util_mono_ms() - p->up_mono < wait ||
	    (hb > 0 && p->hb_ok == 0))
		return;
	for (t = 0; t < 2; t++) {
		b = n->link[1][t];
		if (b->inflight != NULL && !b->inflight_hb)
			return;	/* wait until nothing is in flight there */
	}
	ncs_switch(n, 0, "primary-healthy");
}

/* The NCS whose ncsID (or buddy ncsID) this is. */
struct ncs *
ncs_find_by_wire_id(struct gw *gw, const char *id)
{
	struct ncs	*n;

	for (n = TAILQ_FIRST(&gw->ncs); n != NULL; n = TAILQ_NEXT(n, entry)) {
		if (strcmp(n->conf->ncs_id, id) == 0 ||
		    (*n->conf->buddy_ncs_id != '\0' &&
		    strcmp(n->conf->buddy_ncs_id, id) == 0))
			return n;
	}
	return NULL;
}

/* The NCS with this section name. */
struct ncs *
ncs_find_by_name(struct gw *gw, const char *name)
{
	struct ncs	*n;

	for (n = TAILQ_FIRST(&gw->ncs); n != NULL; n = TAILQ_NEXT(n, entry)) {
		if (strcmp(n->conf->name, name) == 0)
			return n;
	}
	return NULL;
}
