/*
 * Sessions: the connections an NCS opens to our listeners. Each request is
 * answered on the socket it came on. Until the first frame with a
 * configured (mosID, ncsID) pair, frames are capped at pre_handshake_frame;
 * connection caps (per port and global) refuse the excess by accepting and
 * closing at once, with a rate-limited log line.
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

/* Frames from a known NCS this large are parsed off the event loop. */
#define SESSION_ASYNC_BYTES	(256 * 1024)

static void	session_frame_cb(void *, struct conn *,
    const struct mos_frame *);
static void	session_error_cb(void *, struct conn *, const char *);

static const struct conn_ops session_ops = {
	session_frame_cb,
	session_error_cb,
	NULL,
	NULL,
};

/* Refuse a connection over a cap; log at most once a second. */
static void
session_reject(struct gw *gw, enum gw_port port, evutil_socket_t fd,
    const char *peer, const char *reason)
{
	static int64_t	last;
	static uint64_t	suppressed;
	int64_t		now = util_mono_ms();

	(void)gw;
	evutil_closesocket(fd);
	if (now - last < 1000) {
		suppressed++;
		return;
	}
	log_event(LL_WARN, "conn.reject", "port=%s peer=%s reason=%s "
	    "suppressed=%llu", gw_port_name(port), peer, reason,
	    (unsigned long long)suppressed);
	last = now;
	suppressed = 0;
}

/* A new inbound connection from a listener. */
void
session_accept(struct gw *gw, enum gw_port port, int fd, const char *peer)
{
	struct bufferevent	*bev;
	struct session		*s;
	int			 one = 1;

	if (gw->stopping) {
		evutil_closesocket(fd);
		return;
	}
	if (gw->nsessions >= gw->cfg->max_conn) {
		session_reject(gw, port, fd, peer, "max_conn");
		return;
	}
	if (gw->nsess_port[port] >= gw->cfg->max_conn_per_port) {
		session_reject(gw, port, fd, peer, "max_conn_per_port");
		return;
	}
	evutil_make_socket_nonblocking(fd);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	if ((bev = bufferevent_socket_new(gw->base, fd,
	    BEV_OPT_CLOSE_ON_FREE)) ==
	    NULL) {
		evutil_closesocket(fd);
		log_event(LL_ERROR, "conn.reject", "port=%s peer=%s "
		    "reason=bufferevent", gw_port_name(port), peer);
		return;
	}
	s = xcalloc(1, sizeof *s);
	s->gw = gw;
	s->port = port;
	s->conn = conn_new(gw, bev, port, MOS_ENC_AUTO,
	    (size_t)gw->cfg->pre_handshake_frame, &session_ops, s);
	util_strlcpy(s->conn->peer, peer, sizeof s->conn->peer);
	conn_set_idle(s->conn, gw_idle_ms(gw, NULL, port));
	TAILQ_INSERT_TAIL(&gw->sessions, s, entry);
	gw->nsessions++;
	gw->nsess_port[port]++;
	log_event(LL_INFO, "conn.accept", "conn=%llu port=%s peer=%s",
	    (unsigned long long)s->conn->id, gw_port_name(port), peer);
}

/* Close a session: log once, unlink, free. */
void
session_close(struct session *s, const char *reason)
{
	struct gw	*gw = s->gw;

	log_event(LL_INFO, "conn.close", "conn=%llu ncs=%s port=%s peer=%s "
	    "reason=%s", (unsigned long long)s->conn->id,
	    log_q(s->ncs != NULL ? s->ncs->conf->name : NULL),
	    gw_port_name(s->port), s->conn->peer, log_q(reason));
	TAILQ_REMOVE(&gw->sessions, s, entry);
	gw->nsessions--;
	gw->nsess_port[s->port]--;
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

/* A large frame being parsed on the bookkeeping thread. */
struct session_parse {
	struct gw		*gw;
	uint64_t		 conn;
	uint8_t			*data;
	size_t			 len;
	enum mos_enc		 enc;
	enum mos_mode		 mode;
	struct mos_msg		*m;
	struct mos_error	 err;
};

/* The request parsed and checked: the session learns its NCS; answer. */
static void
session_handle(struct session *s, struct conn *c, struct ncs *ncs,
    struct mos_msg *m)
{
	if (!s->trusted) {
		s->trusted = true;
		conn_set_max_frame(c, (size_t)s->gw->cfg->max_frame);
	}
	if (s->ncs != ncs) {
		s->ncs = ncs;
		conn_set_idle(c, gw_idle_ms(s->gw, ncs, s->port));
	}
	dispatch_request(s->gw, c, ncs, m);
}

/* The thread: parse. */
static int
session_parse_run(struct gwdb *g, void *arg)
{
	struct session_parse	*p = arg;

	(void)g;
	memset(&p->err, 0, sizeof p->err);
	return mos_parse(p->data, p->len, p->enc, p->mode, &p->m, &p->err);
}

/* Parsed: carry on as with any frame, and let the connection go on. */
static void
session_parse_done(void *arg, int rc)
{
	struct session_parse	*p = arg;
	struct session		*s;
	struct mos_frame	 f;
	struct mos_msg		*m;
	struct ncs		*ncs;

	(void)rc;
	TAILQ_FOREACH(s, &p->gw->sessions, entry) {
		if (s->conn->id == p->conn)
			break;
	}
	if (s != NULL) {
		conn_hold(s->conn, false);
		memset(&f, 0, sizeof f);
		f.data = p->data;
		f.len = p->len;
		f.enc = p->enc;
		ncs = s->ncs;
		if ((m = dispatch_parsed(s->gw, s->conn, &ncs, &f, p->m,
		    &p->err)) != NULL)
			session_handle(s, s->conn, ncs, m);
	} else
		mos_msg_free(p->m);
	free(p->data);
	free(p);
}

/*
 * A large frame from a known NCS (a 10 MB roCreate) is parsed on the
 * bookkeeping thread, so the other links go on meanwhile; its connection
 * is held until then, so its frames keep their order.
 */
static void
session_parse_async(struct session *s, struct conn *c,
    const struct mos_frame *f)
{
	struct session_parse	*p;

	p = xcalloc(1, sizeof *p);
	p->gw = s->gw;
	p->conn = c->id;
	p->data = xmalloc(f->len);
	memcpy(p->data, f->data, f->len);
	p->len = f->len;
	p->enc = f->enc;
	p->mode = s->ncs->conf->mode;
	conn_hold(c, true);
	dbw_submit(s->gw->dbw, session_parse_run, session_parse_done, p);
}

/* One frame from the NCS: check, record, answer. */
static void
session_frame_cb(void *arg, struct conn *c, const struct mos_frame *f)
{
	struct session	*s = arg;
	struct ncs	*ncs = s->ncs;
	struct mos_msg	*m;

	if (s->trusted && s->ncs != NULL && f->len >= SESSION_ASYNC_BYTES) {
		session_parse_async(s, c, f);
		return;
	}
	if ((m = dispatch_frame(s->gw, c, &ncs, f)) == NULL)
		return;
	session_handle(s, c, ncs, m);
}

/* The connection ended or failed. */
static void
session_error_cb(void *arg, struct conn *c, const char *reason)
{
	(void)c;
	session_close(arg, reason);
}
