/*
 * Sessions: the connections an NCS opens to our listeners. Each request is
 * answered on the socket it came on.
 *
 * A connection is trusted once it has sent a valid frame: one that parses,
 * with a configured (mosID, ncsID) pair, from an address that NCS allows.
 * Until then frames are capped at pre_handshake_frame, it must get there
 * within handshake_timeout of its accept (whatever it sends meanwhile),
 * and after SESSION_UNTRUSTED_MAX other frames it is closed.
 *
 * At accept: an address no NCS allows is refused; a cap that is full (per
 * source address, per port, in all) makes room by closing the oldest
 * connection in its scope that is not trusted yet, the newcomer's own
 * address first, after reading what that one has already sent (its first
 * valid frame may be waiting in the socket). A trusted connection is never
 * closed for a newcomer: when every one in scope is trusted, the newcomer
 * is refused. Refusals log one line a second at most, with the key to
 * change. Counting is a walk over the sessions, which max_conn bounds.
 *
 * Log levels: conn.accept, and conn.close of a connection that never sent
 * a valid frame, are debug lines (20 a second at most); the first valid
 * frame logs conn.ncs at info, and that connection's close is info too.
 */
#include <sys/socket.h>

#include <netinet/in.h>
#include <netinet/tcp.h>

#include <stdlib.h>
#include <string.h>

#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/util.h>

#include "gateway/gateway.h"

#define SESSION_UNTRUSTED_MAX	16	/* frames before a valid one */
#define SESSION_LOG_MS		1000	/* refusal lines at most this often */
#define SESSION_LOG_RATE	20	/* lines a second for untrusted ones */

static void	session_frame_cb(void *, struct conn *,
    const struct mos_frame *);
static void	session_error_cb(void *, struct conn *, const char *);

static const struct conn_ops session_ops = {
	session_frame_cb,
	session_error_cb,
	NULL,
	NULL,
};

/* Log a refusal: at most one line a second, the rest counted. */
void
session_log_refusal(enum gw_port port, const char *peer, const char *reason,
    const char *ncs, const char *key)
{
	static int64_t	last;
	static uint64_t	suppressed;
	int64_t		now = util_mono_ms();

	metrics_count(MET_CONN_REFUSED, gw_port_name(port), reason, NULL);
	if (last != 0 && now - last < SESSION_LOG_MS) {
		suppressed++;
		return;
	}
	log_event(LL_WARN, "conn.reject", "port=%s peer=%s reason=%s%s%s "
	    "key=%s suppressed=%llu", gw_port_name(port), peer, reason,
	    ncs != NULL ? " ncs=" : "", ncs != NULL ? ncs : "", log_q(key),
	    (unsigned long long)suppressed);
	last = now;
	suppressed = 0;
}

/*
 * conn.accept, and conn.close of a connection that never sent a valid
 * frame: at most SESSION_LOG_RATE lines a second, so that a flood of
 * connections cannot fill the disk through the log. True if this one may
 * be logged; *skipped then says how many were left out before it.
 */
static bool
session_log_budget(uint64_t *skipped)
{
	static struct bucket	b;
	static uint64_t		suppressed;

	if (b.burst == 0)
		bucket_init(&b, SESSION_LOG_RATE, SESSION_LOG_RATE);
	if (!bucket_take(&b, util_mono_ms())) {
		suppressed++;
		return false;
	}
	*skipped = suppressed;
	suppressed = 0;
	return true;
}

/* Refuse a connection at accept. */
static void
session_reject(enum gw_port port, evutil_socket_t fd, const char *peer,
    const char *reason, const char *key)
{
	evutil_closesocket(fd);
	session_log_refusal(port, peer, reason, NULL, key);
}

/* Does some NCS allow this address? */
static bool
session_allowed(struct gw *gw, const struct addr *src)
{
	struct ncs	*n;

	for (n = TAILQ_FIRST(&gw->ncs); n != NULL; n = TAILQ_NEXT(n, entry)) {
		if (ncs_allows(n, src))
			return true;
	}
	return false;
}

/* Sessions from this source (an IPv4 address, an IPv6 /64). */
static int
session_count_addr(struct gw *gw, const struct addr *src)
{
	struct session	*s;
	int		 n = 0;

	for (s = TAILQ_FIRST(&gw->sessions); s != NULL;
	    s = TAILQ_NEXT(s, entry)) {
		if (addr_same_source(&s->src, src))
			n++;
	}
	return n;
}

/*
 * The oldest untrusted session on port (GW_NPORTS: any port), from src if
 * it has one there, else (unless own_only) from anyone. NULL if none.
 */
static struct session *
session_victim(struct gw *gw, int port, const struct addr *src,
    bool own_only)
{
	struct session	*s, *any = NULL;

	for (s = TAILQ_FIRST(&gw->sessions); s != NULL;
	    s = TAILQ_NEXT(s, entry)) {
		if (s->trusted || (port != GW_NPORTS && (int)s->port != port))
			continue;
		if (addr_same_source(&s->src, src))
			return s;
		if (any == NULL)
			any = s;
	}
	return own_only ? NULL : any;
}

/*
 * Make room for a newcomer from src: close the oldest untrusted session in
 * scope, once what it already sent is read (it may turn out trusted, then
 * the next one is tried). False when every session in scope is trusted.
 */
static bool
session_make_room(struct gw *gw, int port, const struct addr *src,
    bool own_only)
{
	struct session	*v;
	uint64_t	 closed;

	while ((v = session_victim(gw, port, src, own_only)) != NULL) {
		closed = gw->sess_closed;
		conn_poll(v->conn);
		if (gw->sess_closed != closed)
			return true;	/* it ended while read */
		if (v->trusted)
			continue;
		session_close(v, "evicted");
		return true;
	}
	return false;
}

/* The handshake deadline passed without a valid frame. */
static void
session_handshake_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct session	*s = arg;

	(void)fd;
	(void)ev;
	session_close(s, "handshake-timeout");
}

/* A new inbound connection from a listener. */
void
session_accept(struct gw *gw, enum gw_port port, int fd,
    const struct sockaddr *sa, const char *peer)
{
	const struct gw_config	*cfg = gw->cfg;
	struct bufferevent	*bev;
	struct addr		 src;
	int			 one = 1;

	if (gw->stopping) {
		evutil_closesocket(fd);
		return;
	}
	if (addr_from_sockaddr(&src, sa) != 0 || !session_allowed(gw, &src)) {
		session_reject(port, fd, peer, "not-allowed",
		    "allow in an [ncs.NAME] section");
		return;
	}
	if (session_count_addr(gw, &src) >= cfg->max_conn_per_addr &&
	    !session_make_room(gw, GW_NPORTS, &src, true)) {
		session_reject(port, fd, peer, "max_conn_per_addr",
		    "[gateway] max_conn_per_addr");
		return;
	}
	if (gw->nsess_port[port] >= cfg->max_conn_per_port &&
	    !session_make_room(gw, (int)port, &src, false)) {
		session_reject(port, fd, peer, "max_conn_per_port",
		    "[gateway] max_conn_per_port");
		return;
	}
	if (gw->nsessions >= cfg->max_conn &&
	    !session_make_room(gw, GW_NPORTS, &src, false)) {
		session_reject(port, fd, peer, "max_conn",
		    "[gateway] max_conn");
		return;
	}
	evutil_make_socket_nonblocking(fd);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	if ((bev = bufferevent_socket_new(gw->base, fd,
	    BEV_OPT_CLOSE_ON_FREE)) == NULL) {
		evutil_closesocket(fd);
		log_event_rl(LL_ERROR, "conn.reject", "bufferevent", "port=%s "
		    "peer=%s reason=bufferevent", gw_port_name(port),
		    log_q(peer));
		return;
	}
	session_open(gw, port, bev, &src, peer);
}

/*
 * A session on a bufferevent it now owns: an accepted socket, or one end of
 * a pair fed with conn_input() (tools/fuzz/fuzz_session.c).
 */
struct session *
session_open(struct gw *gw, enum gw_port port, struct bufferevent *bev,
    const struct addr *src, const char *peer)
{
	const struct gw_config	*cfg = gw->cfg;
	struct session		*s;
	struct timeval		 tv;
	uint64_t		 skipped;

	s = xcalloc(1, sizeof *s);
	s->gw = gw;
	s->port = port;
	s->src = *src;
	if ((s->handshake = evtimer_new(gw->base, session_handshake_cb,
	    s)) == NULL)
		fatalx("evtimer_new failed");
	tv.tv_sec = (time_t)(cfg->handshake_ms / 1000);
	tv.tv_usec = (suseconds_t)(cfg->handshake_ms % 1000) * 1000;
	evtimer_add(s->handshake, &tv);
	s->conn = conn_new(gw, bev, port, MOS_ENC_AUTO,
	    (size_t)cfg->pre_handshake_frame, &session_ops, s);
	util_strlcpy(s->conn->peer, peer, sizeof s->conn->peer);
	s->conn->src = *src;
	conn_set_idle(s->conn, gw_idle_ms(gw, NULL, port));
	TAILQ_INSERT_TAIL(&gw->sessions, s, entry);
	gw->nsessions++;
	gw->nsess_port[port]++;
	/* debug: scanners and floods stay out of an info log (conn.ncs) */
	if (session_log_budget(&skipped))
		log_event(LL_DEBUG, "conn.accept", "conn=%llu port=%s peer=%s "
		    "suppressed=%llu", (unsigned long long)s->conn->id,
		    gw_port_name(port), peer, (unsigned long long)skipped);
	return s;
}

/* Close a session: log once, unlink, free. */
void
session_close(struct session *s, const char *reason)
{
	struct gw	*gw = s->gw;
	uint64_t	 skipped = 0;

	if (s->trusted || session_log_budget(&skipped))
		log_event(s->trusted ? LL_INFO : LL_DEBUG, "conn.close",
		    "conn=%llu ncs=%s port=%s peer=%s reason=%s suppressed=%llu",
		    (unsigned long long)s->conn->id,
		    log_q(s->ncs != NULL ? s->ncs->conf->name : NULL),
		    gw_port_name(s->port), s->conn->peer, log_q(reason),
		    (unsigned long long)skipped);
	TAILQ_REMOVE(&gw->sessions, s, entry);
	gw->nsessions--;
	gw->nsess_port[s->port]--;
	gw->sess_closed++;
	event_free(s->handshake);
	conn_free(s->conn);
	free(s);
}

/* Close every session (shutdown). */
void
session_close_all(struct gw *gw, const char *reason)
{
	struct session	*s;

	while ((s = TAILQ_FIRST(&gw->sessions)) != NULL)
		session_close(s, reason);
}

/* An NCS is going away (reload): sessions bound to it forget it. */
void
session_forget_ncs(struct gw *gw, struct ncs *ncs)
{
	struct session	*s;

	for (s = TAILQ_FIRST(&gw->sessions); s != NULL; s = TAILQ_NEXT(s,
	    entry)) {
		if (s->ncs == ncs)
			s->ncs = NULL;
	}
}

/* The request parsed and checked: the session learns its NCS; answer. */
static void
session_handle(struct session *s, struct conn *c, struct ncs *ncs,
    struct mos_msg *m)
{
	if (!s->trusted) {
		s->trusted = true;
		evtimer_del(s->handshake);
		conn_set_max_frame(c, (size_t)s->gw->cfg->max_frame);
	}
	if (s->ncs != ncs) {
		if (s->ncs == NULL && ncs != NULL)
			log_event_rl(LL_INFO, "conn.ncs", ncs->conf->name,
			    "conn=%llu ncs=%s port=%s peer=%s",
			    (unsigned long long)c->id, log_q(ncs->conf->name),
			    gw_port_name(s->port), log_q(c->peer));
		s->ncs = ncs;
		conn_set_idle(c, gw_idle_ms(s->gw, ncs, s->port));
	}
	dispatch_request(s->gw, c, ncs, m);
}

/* A large frame parsed on the bookkeeping thread: carry on with it. */
static void
session_parsed_cb(struct conn *c, const struct mos_frame *f,
    struct mos_msg *m, const struct mos_error *err)
{
	struct session	*s = c->arg;
	struct ncs	*ncs = s->ncs;

	if ((m = dispatch_parsed(s->gw, c, &ncs, f, m, err)) != NULL)
		session_handle(s, c, ncs, m);
}

/* One frame from the NCS: check, record, answer. */
static void
session_frame_cb(void *arg, struct conn *c, const struct mos_frame *f)
{
	struct session	*s = arg;
	struct ncs	*ncs = s->ncs;
	struct mos_msg	*m;

	if (s->trusted && s->ncs != NULL && f->len >= GW_ASYNC_BYTES) {
		dispatch_parse_async(s->gw, c, f, s->ncs->conf->mode,
		    session_parsed_cb);
		return;
	}
	if ((m = dispatch_frame(s->gw, c, &ncs, f)) == NULL) {
		if (!c->dead && !s->trusted &&
		    ++s->untrusted >= SESSION_UNTRUSTED_MAX)
			session_close(s, "untrusted-frames");
		return;
	}
	session_handle(s, c, ncs, m);
}

/* The connection ended or failed. */
static void
session_error_cb(void *arg, struct conn *c, const char *reason)
{
	(void)c;
	session_close(arg, reason);
}
