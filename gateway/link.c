/*
 * Our outbound connection to one NCS target (primary or buddy) and port
 * (lower or upper). It carries the gateway's own messages, exactly one
 * outstanding at a time: the next waits for the reply paired by messageID.
 *
 *   heartbeats   every heartbeat_interval when nothing else is in flight;
 *                unanswered after 1.5 x interval -> degraded, after 2.5 x
 *                -> down and reconnect
 *   ack timeout  resend with the same messageID up to `retries` times, then
 *                down and reconnect; the message goes back to the head of
 *                the NCS's queue (it may move to the buddy), or, if its
 *                owner said give_up, back to its owner (LINK_TIMEOUT)
 *   reconnect    exponential backoff from reconnect_min to reconnect_max,
 *                +-20 % jitter; after breaker_threshold failed connects the
 *                circuit breaker opens (logged once) and probes every
 *                reconnect_max
 *
 * Which link is active (primary or buddy) is decided by ncs.c.
 *
 * Every frame on a link (our messages, heartbeats, resends, replies to
 * what the NCS sends on our socket) is written through conn_write, which
 * asks link_may_write first; so does a connect. With several instances
 * (owner.c) nothing goes out unless this instance's hold of the NCS is
 * current at that moment: a frame refused there is not sent (nor recorded)
 * and the NCS's links are dropped from the loop at once, what was in
 * flight going back to its owner.
 */
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "gateway/gateway.h"

#define LINK_STREAM_CHUNK	(64 * 1024)
#define LINK_HISTORY_CAP	(1024 * 1024)

static void	link_frame_cb(void *, struct conn *, const struct mos_frame *);
static void	link_error_cb(void *, struct conn *, const char *);
static void	link_drained_cb(void *, struct conn *);
static void	link_connected_cb(void *, struct conn *);
static void	link_send_inflight(struct link *, const char *);
static void	link_ack_arm(struct link *);
static bool	link_may_write(void *, struct conn *);

static const struct conn_ops link_ops = {
	link_frame_cb,
	link_error_cb,
	link_drained_cb,
	link_connected_cb,
	link_may_write,
};

/* The name of a state, as logs and the REST API show it. */
const char *
link_state_name(enum link_state s)
{
	switch (s) {
	case LINK_DOWN:
		return "down";
	case LINK_CONNECTING:
		return "connecting";
	case LINK_UP:
		return "up";
	case LINK_DEGRADED:
		return "degraded";
	case LINK_SLEEPING:
		return "sleeping";
	}
	return "?";
}

/* Change state; `since` moves only when the state does. */
static void
link_set_state(struct link *l, enum link_state st)
{
	if (l->state != st)
		l->since_mono = util_mono_ms();
	l->state = st;
}

/* Host of this link's target. */
const char *
link_host(const struct link *l)
{
	return l->target == 0 ? l->ncs->conf->host : l->ncs->conf->buddy_host;
}

/* Port number of this link's target. */
int
link_port_number(const struct link *l)
{
	const struct ncs_conf	*c = l->ncs->conf;

	if (l->port == GW_PORT_QUERY)
		return c->query_port;
	if (l->target == 0)
		return l->port == GW_PORT_LOWER ? c->lower_port : c->upper_port;
	return l->port == GW_PORT_LOWER ? c->buddy_lower_port :
	    c->buddy_upper_port;
}

/* "primary" or "buddy". */
static const char *
link_target_name(const struct link *l)
{
	return l->target == 0 ? "primary" : "buddy";
}

/* Milliseconds as a timeval. */
static struct timeval
link_tv(int64_t ms)
{
	struct timeval	tv;

	tv.tv_sec = (time_t)(ms / 1000);
	tv.tv_usec = (suseconds_t)(ms % 1000) * 1000;
	return tv;
}

/* A message for ncs_send; m is owned from now on. */
struct link_msg *
link_msg_new(struct mos_msg *m, link_msg_cb cb, void *arg)
{
	struct link_msg	*lm;

	lm = xcalloc(1, sizeof *lm);
	lm->msg = m;
	lm->type = m != NULL ? m->type : MOS_T_UNKNOWN;
	lm->cb = cb;
	lm->arg = arg;
	return lm;
}

/* Free a message. */
void
link_msg_free(struct link_msg *lm)
{
	if (lm == NULL)
		return;
	mos_msg_free(lm->msg);
	wire_clear(&lm->wire);
	if (lm->gen_free != NULL)
		lm->gen_free(lm->gen_arg);
	free(lm);
}

/* Up (or degraded, still carrying traffic)? */
bool
link_is_up(const struct link *l)
{
	return l->state == LINK_UP || l->state == LINK_DEGRADED;
}

/* Up with nothing in flight. */
bool
link_ready(const struct link *l)
{
	return link_is_up(l) && l->inflight == NULL;
}

/* The delay before the next connect: exponential with +-20 % jitter. */
static int64_t
link_backoff(const struct link *l)
{
	const struct ncs_conf	*c = l->ncs->conf;
	int64_t			 d = c->reconnect_min_ms;
	int			 i;

	if (l->breaker)
		return c->reconnect_max_ms;
	for (i = 1; i < l->failures && d < c->reconnect_max_ms; i++)
		d *= 2;
	if (d > c->reconnect_max_ms)
		d = c->reconnect_max_ms;
	return d * (80 + random() % 41) / 100;
}

/* Move the in-flight message back to the head of the NCS's queue. */
static void
link_requeue(struct link *l)
{
	struct link_msg	*lm = l->inflight;

	evtimer_del(l->ack_ev);
	l->inflight = NULL;
	l->streaming = false;
	if (lm == NULL)
		return;
	if (l->inflight_hb) {
		l->inflight_hb = false;
		link_msg_free(lm);
		return;
	}
	lm->tries = 0;
	TAILQ_INSERT_HEAD(&l->ncs->q[l->port == GW_PORT_LOWER ? 0 : 1], lm,
	    entry);
}

/* Give the message in flight (not a heartbeat) back to the NCS queue. */
void
link_release(struct link *l)
{
	if (l->inflight != NULL && !l->inflight_hb)
		link_requeue(l);
}

/* Drop the connection (no reconnect decision here). */
static void
link_drop(struct link *l)
{
	link_requeue(l);
	evtimer_del(l->tick_ev);
	if (l->conn != NULL) {
		conn_free(l->conn);
		l->conn = NULL;
	}
}

/*
 * Any frame on this link (conn_write asks), and a connect: only while this
 * instance may talk to the NCS (owner.c); O(1).
 */
static bool
link_may_write(void *arg, struct conn *c)
{
	struct link	*l = arg;

	(void)c;
	return owner_may_talk(l->ncs->gw->owner, l->ncs);
}

/* Start connecting. */
static void
link_connect(struct link *l)
{
	struct gw		*gw = l->ncs->gw;
	struct bufferevent	*bev;
	int64_t			 timeout;

	if (!l->enabled || l->conn != NULL || gw->stopping ||
	    !owner_may_talk(gw->owner, l->ncs))
		return;
	bev = bufferevent_socket_new(gw->base, -1, BEV_OPT_CLOSE_ON_FREE);
	if (bev == NULL)
		fatalx("bufferevent_socket_new failed");
	l->conn = conn_new(gw, bev, l->port,
	    (enum mos_enc)l->ncs->conf->encoding,
	    (size_t)gw->cfg->max_frame, &link_ops, l);
	conn_set_ncs(l->conn, l->ncs->conf->name);
	timeout = l->ncs->conf->ack_timeout_ms;
	if (timeout < 1000)
		timeout = 1000;
	link_set_state(l, LINK_CONNECTING);
	log_event(l->failures == 0 ? LL_INFO : LL_DEBUG, "link.connecting",
	    "ncs=%s port=%s target=%s peer=%s:%d attempt=%d",
	    l->ncs->conf->name,
	    gw_port_name(l->port), link_target_name(l), link_host(l),
	    link_port_number(l), l->failures + 1);
	if (conn_connect(l->conn, link_host(l), link_port_number(l),
	    timeout) != 0)
		link_error_cb(l, l->conn, "connect failed");
}

/* Reconnect timer. */
static void
link_reconnect_cb(evutil_socket_t fd, short ev, void *arg)
{
	(void)fd;
	(void)ev;
	link_connect(arg);
}

/* Schedule the next connect after the backoff. */
static void
link_schedule(struct link *l)
{
	struct timeval	tv;

	if (!l->enabled || l->ncs->gw->stopping)
		return;
	tv = link_tv(l->failures == 0 ? 0 : link_backoff(l));
	evtimer_add(l->reconnect_ev, &tv);
}

/*
 * The connection failed or the peer stopped answering: log, requeue the
 * message in flight, count the failure, maybe open the breaker, let the NCS
 * decide about failover, and reconnect later.
 */
static void
link_failed(struct link *l, const char *reason)
{
	bool	was_up = link_is_up(l);

	link_drop(l);
	link_set_state(l, LINK_DOWN);
	util_strlcpy(l->reason, reason, sizeof l->reason);
	util_strlcpy(l->last_error, reason, sizeof l->last_error);
	l->failures++;
	metrics_count(MET_LINK_DOWN, l->ncs->conf->name, gw_port_name(l->port),
	    reason);
	if (was_up || l->failures == 1)
		log_event(LL_WARN, "link.down", "ncs=%s port=%s target=%s "
		    "peer=%s:%d reason=%s", l->ncs->conf->name,
		    gw_port_name(l->port), link_target_name(l), link_host(l),
		    link_port_number(l), log_q(reason));
	else
		log_event(LL_DEBUG, "link.down", "ncs=%s port=%s target=%s "
		    "reason=%s failures=%d", l->ncs->conf->name,
		    gw_port_name(l->port), link_target_name(l), log_q(reason),
		    l->failures);
	if (!l->breaker && l->failures >= l->ncs->conf->breaker_threshold) {
		l->breaker = true;
		log_event(LL_WARN, "link.breaker.open", "ncs=%s port=%s "
		    "target=%s failures=%d probe_ms=%lld", l->ncs->conf->name,
		    gw_port_name(l->port), link_target_name(l), l->failures,
		    (long long)l->ncs->conf->reconnect_max_ms);
	}
	link_schedule(l);
	ncs_link_changed(l->ncs, l);
}

/* Periodic: heartbeats and their lateness. */
static void
link_tick_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct link	*l = arg;
	struct ncs	*n = l->ncs;
	int64_t		 now = util_mono_ms(), hb = n->conf->heartbeat_ms, age;
	struct link_msg	*lm;

	(void)fd;
	(void)ev;
	if (!link_is_up(l) || hb <= 0 || l->port == GW_PORT_QUERY)
		return;		/* NCSs do not heartbeat the query port */
	if (l->inflight != NULL && l->inflight_hb) {
		age = now - l->sent_mono;
		if (age * 2 > hb * 5) {
			metrics_count(MET_HEARTBEATS_LATE, n->conf->name,
			    gw_port_name(l->port), link_target_name(l));
			log_event(LL_WARN, "heartbeat.late", "ncs=%s port=%s "
			    "target=%s ms=%lld action=down", n->conf->name,
			    gw_port_name(l->port), link_target_name(l),
			    (long long)age);
			link_failed(l, "heartbeat-timeout");
		} else if (age * 2 > hb * 3 && l->state == LINK_UP) {
			link_set_state(l, LINK_DEGRADED);
			metrics_count(MET_HEARTBEATS_LATE, n->conf->name,
			    gw_port_name(l->port), link_target_name(l));
			util_strlcpy(l->reason, "heartbeat-late",
			    sizeof l->reason);
			util_strlcpy(l->last_error, "heartbeat-late",
			    sizeof l->last_error);
			log_event(LL_WARN, "heartbeat.late", "ncs=%s port=%s "
			    "target=%s ms=%lld action=degraded", n->conf->name,
			    gw_port_name(l->port), link_target_name(l),
			    (long long)age);
			log_event(LL_WARN, "link.degraded", "ncs=%s port=%s "
			    "target=%s reason=heartbeat-late", n->conf->name,
			    gw_port_name(l->port), link_target_name(l));
			ncs_link_changed(n, l);
		}
		return;
	}
	if (l->inflight != NULL || now - l->hb_last_mono < hb)
		return;
	lm = link_msg_new(reply_heartbeat(n->gw->cfg->mos_id,
	    ncs_wire_id(n, l->target), 0), NULL, NULL);
	if ((lm->message_id = msgid_next(n->mid[l->port == GW_PORT_LOWER ?
	    0 : 1])) == 0) {
		link_msg_free(lm);
		return;
	}
	l->inflight = lm;
	l->inflight_hb = true;
	l->hb_last_mono = now;
	link_send_inflight(l, "sent");
}

/*
 * Ack timeout: resend with the same messageID, or give up on this connection.
 */
static void
link_ack_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct link	*l = arg;
	struct link_msg	*lm = l->inflight;

	(void)fd;
	(void)ev;
	if (lm == NULL || l->inflight_hb)
		return;
	metrics_count(MET_ACK_TIMEOUTS, l->ncs->conf->name,
	    gw_port_name(l->port), mos_type_name(lm->type));
	log_event(LL_WARN, "ack.timeout", "ncs=%s port=%s target=%s type=%s "
	    "message_id=%d try=%d retries=%d", l->ncs->conf->name,
	    gw_port_name(l->port), link_target_name(l), mos_type_name(lm->type),
	    (int)lm->message_id, lm->tries, l->ncs->conf->retries);
	l->timeouts++;
	if (lm->tries <= l->ncs->conf->retries) {
		link_send_inflight(l, "resent");
		return;
	}
	if (!lm->give_up) {
		link_failed(l, "ack-timeout");
		return;
	}
	/* reconnect first, so that the owner's next message waits for it */
	l->inflight = NULL;
	link_failed(l, "ack-timeout");
	if (lm->cb != NULL)
		lm->cb(lm->arg, lm, LINK_TIMEOUT, NULL);
	link_msg_free(lm);
}

/* Write more of a streamed message; the ack timer starts once it is all out. */
static void
link_stream(struct link *l, bool restart)
{
	struct link_msg		*lm = l->inflight;
	struct gw		*gw = l->ncs->gw;
	struct evbuffer		*piece;
	struct timeval		 tv;
	size_t			 high =
	    (size_t)gw->cfg->output_high_watermark / 2;
	int			 rc = 1;

	if ((piece = evbuffer_new()) == NULL)
		fatalx("evbuffer_new failed");
	if (restart)
		l->copy.len = 0;
	while (rc == 1 && l->conn != NULL && conn_output_len(l->conn) < high) {
		rc = lm->gen(lm->gen_arg, piece, restart,
		    (enum mos_enc)l->ncs->conf->encoding, gw->cfg->mos_id,
		    ncs_wire_id(l->ncs, l->target), lm->message_id);
		restart = false;
		if (rc < 0)
			break;
		while (evbuffer_get_length(piece) > 0) {
			size_t		 n = evbuffer_get_length(piece);
			const char	*p;

			if (n > LINK_STREAM_CHUNK)
				n = LINK_STREAM_CHUNK;
			p = (const char *)evbuffer_pullup(piece, (ssize_t)n);
			if (conn_write(l->conn, p, n) != 0) {
				rc = -2;	/* refused: the links go */
				break;
			}
			if (l->copy.len < LINK_HISTORY_CAP)
				sbuf_add(&l->copy, p, n);
			evbuffer_drain(piece, n);
		}
	}
	evbuffer_free(piece);
	if (rc == -2) {
		l->streaming = false;
		sbuf_free(&l->copy);
		return;
	}
	l->streaming = rc == 1;
	if (rc < 0) {
		link_failed(l, "stream-error");
		return;
	}
	if (rc == 0) {
		history_add(gw->hist, l->ncs->conf->name, l->port, HISTORY_OUT,
		    l->conn->id, lm->message_id, mos_type_name(lm->type),
		    l->copy.len >= LINK_HISTORY_CAP ? "sent-truncated" : "sent",
		    l->copy.s, l->copy.len,
		    (enum mos_enc)l->ncs->conf->encoding);
		sbuf_free(&l->copy);
		gw_flush_soon(gw);
		tv = link_tv(l->ncs->conf->ack_timeout_ms);
		evtimer_add(l->ack_ev, &tv);
	}
}

/* The message in flight cannot be encoded: its owner gets a NACK. */
static void
link_unwritable(struct link *l)
{
	struct link_msg	*lm = l->inflight;
	struct mos_msg	*nack;

	l->inflight = NULL;
	l->inflight_hb = false;
	nack = reply_mos_ack(l->ncs->gw->cfg->mos_id, l->ncs->conf->ncs_id,
	    lm->message_id, NULL, false, "the gateway could not encode this "
	    "message (see its log)");
	if (lm->cb != NULL)
		lm->cb(lm->arg, lm, LINK_REPLY, nack);
	mos_msg_free(nack);
	link_msg_free(lm);
	link_kick(l);
}

/* (Re)send the message in flight with its messageID. */
static void
link_send_inflight(struct link *l, const char *outcome)
{
	struct link_msg	*lm = l->inflight;
	struct mos_msg	*m = lm->msg;
	struct gw	*gw = l->ncs->gw;

	lm->tries++;
	lm->sends++;
	l->sent_mono = util_mono_ms();
	if (!l->inflight_hb)
		l->msgs_sent++;
	if (lm->gen != NULL) {
		link_stream(l, true);
		return;
	}
	if (lm->wire.data != NULL && lm->wire_target == l->target &&
	    lm->wire.enc == conn_encoding(l->conn))
		conn_send_wire(l->conn, &lm->wire, lm->message_id, lm->type,
		    outcome);
	else {
		m->mos_id = mos_msg_strdup(m, gw->cfg->mos_id);
		m->ncs_id = mos_msg_strdup(m, ncs_wire_id(l->ncs, l->target));
		m->has_message_id = true;
		m->message_id = lm->message_id;
		if (conn_send(l->conn, m, outcome) != 0) {
			link_unwritable(l);
			return;
		}
	}
	if (!l->inflight_hb)
		link_ack_arm(l);
}

/* Wait ack_timeout for the answer to the message in flight. */
static void
link_ack_arm(struct link *l)
{
	struct timeval	tv;

	tv = link_tv(l->ncs->conf->ack_timeout_ms);
	evtimer_add(l->ack_ev, &tv);
}

/* Take the next queued message if this is the active link and it is idle. */
void
link_kick(struct link *l)
{
	struct ncs		*n = l->ncs;
	struct link_msg_list	*q = &n->q[l->port == GW_PORT_LOWER ? 0 : 1];
	struct link_msg		*lm;

	if (!link_ready(l) || l->target != n->active ||
	    l->port == GW_PORT_QUERY)
		return;		/* nothing of ours goes on the query link */
	if ((lm = TAILQ_FIRST(q)) == NULL)
		return;
	if (lm->message_id == 0 && (lm->message_id = msgid_next(
	    n->mid[l->port == GW_PORT_LOWER ? 0 : 1])) == 0)
		return;		/* database busy: the next tick retries */
	TAILQ_REMOVE(q, lm, entry);
	l->inflight = lm;
	l->inflight_hb = false;
	link_send_inflight(l, lm->sends == 0 ? "sent" : "resent");
}

/* Connected: up, first heartbeat now, queued messages go. */
static void
link_connected_cb(void *arg, struct conn *c)
{
	struct link	*l = arg;
	struct timeval	 tv;
	int64_t		 hb = l->ncs->conf->heartbeat_ms;

	ncs_learn_host(l->ncs, c);
	if (l->breaker)
		log_event(LL_INFO, "link.breaker.close", "ncs=%s port=%s "
		    "target=%s", l->ncs->conf->name, gw_port_name(l->port),
		    link_target_name(l));
	l->breaker = false;
	link_set_state(l, LINK_UP);
	l->reason[0] = '\0';
	l->ups++;
	l->up_mono = l->rx_mono = util_mono_ms();
	l->hb_last_mono = l->up_mono - hb;	/* a heartbeat right away */
	l->hb_ok = 0;
	log_event(LL_INFO, "link.up", "ncs=%s port=%s target=%s peer=%s:%d",
	    l->ncs->conf->name, gw_port_name(l->port), link_target_name(l),
	    link_host(l), link_port_number(l));
	tv = link_tv(hb > 0 ? (hb / 4 > 10 ? hb / 4 : 10) : 1000);
	event_add(l->tick_ev, &tv);
	ncs_link_changed(l->ncs, l);
	link_kick(l);
	if (l->inflight == NULL && hb > 0)
		link_tick_cb(-1, 0, l);
}

/* Does this frame answer what is in flight? */
static bool
link_is_reply(struct link *l, const struct mos_msg *m)
{
	struct link_msg	*lm = l->inflight;
	bool		 type_ok;

	if (lm == NULL || l->streaming)
		return false;
	switch (m->type) {
	case MOS_T_HEARTBEAT:
		type_ok = l->inflight_hb;
		break;
	case MOS_T_MOS_ACK:
	case MOS_T_RO_ACK:
		type_ok = true;
		break;
	case MOS_T_LIST_MACH_INFO:
	case MOS_T_RO_LIST_ALL:
	case MOS_T_RO_LIST:
		type_ok = !l->inflight_hb;
		break;
	default:
		type_ok = false;
	}
	if (!type_ok)
		return false;
	if (m->has_message_id)
		return m->message_id == lm->message_id;
	/*
	 * lenient: no messageID is accepted with exactly one message in flight
	 */
	return l->ncs->conf->mode == MOS_LENIENT;
}

/* The NACK text of a reply, or NULL for a positive answer. */
static const char *
link_nack_text(const struct mos_msg *m)
{
	if (m->type == MOS_T_MOS_ACK && m->u.mos_ack.status != NULL &&
	    strcmp(m->u.mos_ack.status, "ACK") != 0)
		return m->u.mos_ack.status_description != NULL ?
		    m->u.mos_ack.status_description : "";
	if (m->type == MOS_T_RO_ACK && m->u.ro_ack.ro_status != NULL &&
	    strcmp(m->u.ro_ack.ro_status, "OK") != 0)
		return m->u.ro_ack.ro_status;
	return NULL;
}

/* The reply to what was in flight; true if its owner kept m. */
static bool
link_reply(struct link *l, struct mos_msg *m)
{
	struct link_msg	*lm = l->inflight;
	const char	*nack = link_nack_text(m);
	int		 to;
	bool		 kept;

	evtimer_del(l->ack_ev);
	l->failures = 0;
	if (l->inflight_hb) {
		l->inflight = NULL;
		l->inflight_hb = false;
		link_msg_free(lm);
		l->hb_ok++;
		l->hb_rx_mono = util_mono_ms();
		l->hb_ok_ms = util_now_ms();
		if (nack != NULL && (to = ncs_buddy_target(l->ncs, l,
		    nack)) >= 0)
			ncs_switch(l->ncs, to, "buddy-sentence");
		if (l->state == LINK_DEGRADED) {
			link_set_state(l, LINK_UP);
			l->reason[0] = '\0';
			log_event(LL_INFO, "link.up", "ncs=%s port=%s "
			    "target=%s "
			    "reason=heartbeat-recovered", l->ncs->conf->name,
			    gw_port_name(l->port), link_target_name(l));
			ncs_link_changed(l->ncs, l);
		}
		link_kick(l);
		return false;
	}
	if (nack != NULL && (to = ncs_buddy_target(l->ncs, l, nack)) >= 0) {
		link_requeue(l);	/* sent again on the other target */
		ncs_switch(l->ncs, to, "buddy-sentence");
		return false;
	}
	l->inflight = NULL;
	if (nack != NULL)
		l->nacks++;
	else
		l->acks++;
	metrics_observe(MET_ACK_LATENCY, l->ncs->conf->name,
	    (double)(util_mono_ms() - l->sent_mono) / 1000);
	metrics_count(MET_ACKS, l->ncs->conf->name, mos_type_name(lm->type),
	    nack != NULL ? "nack" : "ack");
	lm->reply = m;
	if (lm->cb != NULL)
		lm->cb(lm->arg, lm, LINK_REPLY, m);
	kept = lm->reply == NULL;
	link_msg_free(lm);
	link_kick(l);
	return kept;
}

/* A message on our link: a reply, or a request of the NCS on our socket. */
static void
link_message(struct link *l, struct conn *c, struct ncs *n, struct mos_msg *m)
{
	if (n == l->ncs && link_is_reply(l, m)) {
		if (link_reply(l, m))
			return;		/* its owner kept it */
	} else if (reply_is_answer_type(m->type_name))
		log_event(LL_WARN, "msg.unpaired", "ncs=%s port=%s target=%s "
		    "type=%s message_id=%d expected=%d", l->ncs->conf->name,
		    gw_port_name(l->port), link_target_name(l),
		    log_q(m->type_name),
		    m->has_message_id ? (int)m->message_id : 0,
		    l->inflight != NULL ? (int)l->inflight->message_id : 0);
	else {
		dispatch_request(n->gw, c, n, m);
		return;
	}
	mos_msg_free(m);
}

/* A large frame parsed on the bookkeeping thread: carry on with it. */
static void
link_parsed_cb(struct conn *c, const struct mos_frame *f, struct mos_msg *m,
    const struct mos_error *err)
{
	struct link	*l = c->arg;
	struct ncs	*n = l->ncs;

	l->rx_mono = util_mono_ms();
	m = dispatch_parsed(n->gw, c, &n, f, m, err);
	if (l->inflight != NULL && !l->inflight_hb &&
	    (m == NULL || n != l->ncs || !link_is_reply(l, m)))
		link_ack_arm(l);	/* not the answer: wait on */
	if (m != NULL)
		link_message(l, c, n, m);
}

/* A frame on our link (a large one is parsed off the event loop). */
static void
link_frame_cb(void *arg, struct conn *c, const struct mos_frame *f)
{
	struct link	*l = arg;
	struct ncs	*n = l->ncs;
	struct mos_msg	*m;

	l->rx_mono = util_mono_ms();
	if (f->len >= GW_ASYNC_BYTES) {
		/* most likely the answer: no resend while it is parsed */
		evtimer_del(l->ack_ev);
		dispatch_parse_async(n->gw, c, f, n->conf->mode,
		    link_parsed_cb);
		return;
	}
	if ((m = dispatch_frame(n->gw, c, &n, f)) == NULL)
		return;
	link_message(l, c, n, m);
}

/*
 * The reply being handed to the owner of the message in flight, which may
 * keep it (a large roList goes to the bookkeeping thread as it is).
 */
struct mos_msg *
link_take_reply(struct link_msg *lm)
{
	struct mos_msg	*m = lm->reply;

	lm->reply = NULL;
	return m;
}

/* The connection ended. */
static void
link_error_cb(void *arg, struct conn *c, const char *reason)
{
	(void)c;
	link_failed(arg, reason);
}

/* Output drained: continue a streamed message. */
static void
link_drained_cb(void *arg, struct conn *c)
{
	struct link	*l = arg;

	(void)c;
	if (l->streaming && l->inflight != NULL)
		link_stream(l, false);
}

/* A link for one target and port (not connected until enabled). */
struct link *
link_new(struct ncs *n, int target, enum gw_port port)
{
	struct event_base	*base = n->gw->base;
	struct link		*l;

	l = xcalloc(1, sizeof *l);
	l->ncs = n;
	l->target = target;
	l->port = port;
	l->state = LINK_SLEEPING;
	l->since_mono = util_mono_ms();
	l->reconnect_ev = evtimer_new(base, link_reconnect_cb, l);
	l->tick_ev = event_new(base, -1, EV_PERSIST, link_tick_cb, l);
	l->ack_ev = evtimer_new(base, link_ack_cb, l);
	if (l->reconnect_ev == NULL || l->tick_ev == NULL || l->ack_ev == NULL)
		fatalx("event_new failed");
	return l;
}

/* Close for good or for standby: no reconnect; the message goes back. */
void
link_close(struct link *l, const char *reason)
{
	bool	was = link_is_up(l) || l->state == LINK_CONNECTING;

	evtimer_del(l->reconnect_ev);
	link_drop(l);
	if (was)
		log_event(LL_INFO, "link.down", "ncs=%s port=%s target=%s "
		    "reason=%s", l->ncs->conf->name, gw_port_name(l->port),
		    link_target_name(l), log_q(reason));
	link_set_state(l, l->enabled ? LINK_DOWN : LINK_SLEEPING);
	util_strlcpy(l->reason, reason, sizeof l->reason);
}

/* Connect (after the backoff, if it failed before) or put to sleep. */
void
link_enable(struct link *l, bool on)
{
	if (on == l->enabled)
		return;
	l->enabled = on;
	if (on) {
		link_set_state(l, LINK_DOWN);
		link_schedule(l);
	} else
		link_close(l, "standby");
}

/* Free a link (its message, if any, goes back to the NCS queue). */
void
link_free(struct link *l)
{
	if (l == NULL)
		return;
	l->enabled = false;
	link_close(l, "removed");
	event_free(l->reconnect_ev);
	event_free(l->tick_ev);
	event_free(l->ack_ev);
	sbuf_free(&l->copy);
	free(l);
}
