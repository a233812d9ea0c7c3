/*
 * One framed MOS connection, inbound or outbound: bytes from the bufferevent
 * go into the framer; at most CONN_FRAMES_PER_ROUND frames are handed to the
 * owner per callback before yielding to other connections (a zero-timeout
 * event continues). A frame deadline timer runs from the first byte of a
 * frame to its end; the idle timeout runs outside frames and starts over
 * only when a frame is complete (whitespace or junk between frames is not
 * activity). Output above the high watermark stops reading from that peer
 * until it drains.
 *
 * Owners (session.c, link.c) get frames and one error callback, after which
 * they call conn_free(). conn_free() from inside a callback is deferred.
 * Every byte written goes through conn_write, where an owner may refuse it
 * (may_write: link.c, for an NCS this instance may no longer talk to).
 *
 * The bufferevent connects and holds what could not be written at once;
 * reading is a plain read event of our own, so bytes go from the socket
 * straight into the framer. A bufferevent without a socket (one of a pair)
 * has no read event: its owner hands the bytes over with conn_input() and
 * conn_input_end().
 */
#include <sys/socket.h>

#include <netinet/in.h>
#include <netinet/tcp.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/dns.h>
#include <event2/event.h>
#include <event2/util.h>

#include "gateway/gateway.h"

#define CONN_FRAMES_PER_ROUND	32
#define CONN_INPUT_SLACK	(64 * 1024)

static void	conn_process(struct conn *);
static void	conn_eof(struct conn *);

/* Milliseconds as a timeval. */
static struct timeval
conn_tv(int64_t ms)
{
	struct timeval	tv;

	tv.tv_sec = (time_t)(ms / 1000);
	tv.tv_usec = (suseconds_t)(ms % 1000) * 1000;
	return tv;
}

/* Free everything now. */
static void
conn_destroy(struct conn *c)
{
	if (c->rd != NULL)
		event_free(c->rd);
	if (c->deadline != NULL)
		event_free(c->deadline);
	if (c->idle != NULL)
		event_free(c->idle);
	if (c->more != NULL)
		event_free(c->more);
	if (c->bev != NULL)
		bufferevent_free(c->bev);
	mos_framer_free(c->fr);
	free(c);
}

/* Leave a callback: destroy if the owner freed us meanwhile. */
static void
conn_leave(struct conn *c)
{
	if (--c->busy == 0 && c->dead)
		conn_destroy(c);
}

/* Report an error to the owner (once). */
static void
conn_fail(struct conn *c, const char *reason)
{
	if (c->dead)
		return;
	c->ops->error(c->arg, c, reason);
}

/* The frame deadline expired: the peer is too slow to finish a frame. */
static void
conn_deadline_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct conn	*c = arg;

	(void)fd;
	(void)ev;
	c->busy++;
	metrics_count(MET_FRAME_ERRORS, gw_port_name(c->port), "framing",
	    NULL);
	log_event_rl(LL_WARN, "frame.error", conn_log_key(c), "conn=%llu "
	    "ncs=%s port=%s peer=%s stage=framing error=frame-deadline "
	    "pending=%zu", (unsigned long long)c->id,
	    log_q(c->ncs), gw_port_name(c->port), log_q(c->peer),
	    mos_framer_pending(c->fr));
	conn_fail(c, "frame-deadline");
	conn_leave(c);
}

/* No complete frame for idle_ms. */
static void
conn_idle_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct conn	*c = arg;

	(void)fd;
	(void)ev;
	c->busy++;
	conn_fail(c, "idle-timeout");
	conn_leave(c);
}

/* Continue processing frames after a yield. */
static void
conn_more_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct conn	*c = arg;

	(void)fd;
	(void)ev;
	conn_process(c);
}

/* Start or stop the frame deadline as the framer is inside a frame or not. */
static void
conn_update_deadline(struct conn *c)
{
	struct timeval	tv;

	if (mos_framer_in_frame(c->fr)) {
		if (!evtimer_pending(c->deadline, NULL)) {
			tv = conn_tv(c->gw->cfg->frame_deadline_ms);
			evtimer_add(c->deadline, &tv);
		}
	} else
		evtimer_del(c->deadline);
}

/*
 * Read or not (input backpressure: the framer holds too much that is not
 * yet processed), and the idle timer: it runs while we read and the peer
 * is outside a frame (frame_deadline covers the inside), and starts over
 * only after a complete frame, a pause in reading or a new limit.
 */
static void
conn_update_reading(struct conn *c)
{
	size_t		cap = (size_t)c->gw->cfg->max_frame + CONN_INPUT_SLACK;
	bool		stop = c->paused || c->held || c->closing ||
			    mos_framer_pending(c->fr) > cap;
	struct timeval	tv = conn_tv(c->idle_ms);

	if (c->rd == NULL)
		return;
	if (stop) {
		event_del(c->rd);
		evtimer_del(c->idle);
		c->idle_fresh = true;
		return;
	}
	event_add(c->rd, NULL);
	if (c->idle_ms == 0 || mos_framer_in_frame(c->fr)) {
		evtimer_del(c->idle);
		c->idle_fresh = true;
	} else if (c->idle_fresh || !evtimer_pending(c->idle, NULL)) {
		evtimer_add(c->idle, &tv);
		c->idle_fresh = false;
	}
}

/* Hand at most max frames to the owner; true if more may be ready. */
static bool
conn_round(struct conn *c, int max)
{
	struct mos_frame	f;
	int			n, rc;

	for (n = 0; n < max && !c->dead && !c->paused && !c->held; n++) {
		rc = mos_framer_next(c->fr, &f);
		if (rc == MOS_FRAME_MORE)
			return false;
		if (rc < 0) {
			metrics_count(MET_FRAME_ERRORS, gw_port_name(c->port),
			    "framing", NULL);
			log_event_rl(LL_WARN, "frame.error", conn_log_key(c),
			    "conn=%llu ncs=%s port=%s peer=%s stage=framing "
			    "error=%s", (unsigned long long)c->id,
			    log_q(c->ncs), gw_port_name(c->port),
			    log_q(c->peer), log_q(mos_frame_strerror(rc)));
			conn_fail(c, "frame-error");
			return false;
		}
		if (c->enc == MOS_ENC_AUTO)
			c->enc = f.enc;
		evtimer_del(c->deadline);
		c->idle_fresh = true;
		c->ops->frame(c->arg, c, &f);
	}
	return n == max;
}

/* Handle a round of frames, then yield to other connections. */
static void
conn_process(struct conn *c)
{
	bool	more;

	c->busy++;
	more = conn_round(c, CONN_FRAMES_PER_ROUND);
	if (!c->dead) {
		if (more && !c->paused && !c->held)
			event_active(c->more, EV_TIMEOUT, 0);
		conn_update_deadline(c);
		conn_update_reading(c);
	}
	conn_leave(c);
}

/* Bytes from the socket into the framer; EOF, errors. */
static void
conn_read_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn	*c = arg;
	ssize_t		 n;

	(void)what;
	do
		n = recv(fd, c->gw->rbuf, sizeof c->gw->rbuf, 0);
	while (n == -1 && errno == EINTR);
	if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return;
	if (n <= 0) {
		if (n == 0)
			conn_input_end(c);
		else {
			c->busy++;
			conn_fail(c, evutil_socket_error_to_string(errno));
			conn_leave(c);
		}
		return;
	}
	conn_input(c, c->gw->rbuf, (size_t)n);
}

/* Bytes received: into the framer, then a round of frames. */
void
conn_input(struct conn *c, const void *data, size_t len)
{
	if (c->dead)
		return;
	if (mos_framer_feed(c->fr, data, len) != 0)
		fatalx("out of memory in the framer");
	conn_process(c);
}

/* The peer closed its side (see conn_eof). */
void
conn_input_end(struct conn *c)
{
	if (c->dead)
		return;
	c->busy++;
	conn_eof(c);
	conn_leave(c);
}

/* Start reading the connected socket. */
static void
conn_start_reading(struct conn *c)
{
	c->rd = event_new(c->gw->base, bufferevent_getfd(c->bev),
	    EV_READ | EV_PERSIST, conn_read_cb, c);
	if (c->rd == NULL)
		fatalx("event_new failed");
	conn_update_reading(c);
}

/* Output drained below the low watermark: resume reading, tell the owner. */
static void
conn_write_cb(struct bufferevent *bev, void *arg)
{
	struct conn	*c = arg;

	(void)bev;
	c->busy++;
	if (c->paused && !c->closing) {
		c->paused = false;
		conn_update_reading(c);
		event_active(c->more, EV_TIMEOUT, 0);
	}
	if (c->closing && conn_output_len(c) == 0)
		conn_fail(c, "eof");
	else if (c->ops->drained != NULL && !c->dead)
		c->ops->drained(c->arg, c);
	conn_leave(c);
}

/*
 * The peer closed its side: the frames already received are still handled
 * (a peer may send one message per session and half-close), a partial frame
 * is reported, and replies are written out before the owner is told.
 */
static void
conn_eof(struct conn *c)
{
	int	rc;

	c->paused = false;
	while (!c->dead && conn_round(c, CONN_FRAMES_PER_ROUND))
		;
	if (c->dead)
		return;
	/* a partial frame, an odd byte, bytes that are no frame */
	if ((rc = mos_framer_end(c->fr)) != 0) {
		metrics_count(MET_FRAME_ERRORS, gw_port_name(c->port),
		    "framing", NULL);
		log_event_rl(LL_WARN, "frame.error", conn_log_key(c),
		    "conn=%llu ncs=%s port=%s peer=%s stage=framing error=%s "
		    "pending=%zu", (unsigned long long)c->id,
		    log_q(c->ncs), gw_port_name(c->port), log_q(c->peer),
		    log_q(mos_frame_strerror(rc)), mos_framer_pending(c->fr));
	}
	evtimer_del(c->deadline);
	if (conn_output_len(c) > 0) {
		c->closing = true;
		conn_update_reading(c);
		return;
	}
	conn_fail(c, "eof");
}

/* Connected, EOF, error or timeout. */
static void
conn_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct conn	*c = arg;
	char		 reason[128];
	int		 err, one = 1, dnserr;

	c->busy++;
	if (what & BEV_EVENT_CONNECTED) {
		c->connecting = false;
		setsockopt(bufferevent_getfd(bev), IPPROTO_TCP, TCP_NODELAY,
		    &one, sizeof one);
		bufferevent_set_timeouts(bev, NULL, NULL);
		bufferevent_enable(bev, EV_WRITE);
		conn_start_reading(c);
		if (c->ops->connected != NULL)
			c->ops->connected(c->arg, c);
	} else if (what & BEV_EVENT_EOF)
		conn_eof(c);
	else if (what & BEV_EVENT_TIMEOUT)
		conn_fail(c, "connect-timeout");
	else if (what & BEV_EVENT_ERROR) {
		err = EVUTIL_SOCKET_ERROR();
		dnserr = bufferevent_socket_get_dns_error(bev);
		if (dnserr != 0)
			snprintf(reason, sizeof reason, "dns: %s",
			    evutil_gai_strerror(dnserr));
		else
			snprintf(reason, sizeof reason, "%s",
			    err != 0 ? evutil_socket_error_to_string(err) :
			    "error");
		conn_fail(c, reason);
	}
	conn_leave(c);
}

/* A connection around a bufferevent that owns its socket. */
struct conn *
conn_new(struct gw *gw, struct bufferevent *bev, enum gw_port port,
    enum mos_enc enc, size_t max_frame, const struct conn_ops *ops, void *arg)
{
	struct mos_framer_limits	 lim;
	struct conn			*c;

	c = xcalloc(1, sizeof *c);
	c->gw = gw;
	c->id = gw_conn_id(gw);
	c->port = port;
	c->bev = bev;
	c->enc = enc;
	c->ops = ops;
	c->arg = arg;
	lim.max_frame = max_frame;
	lim.max_junk = (size_t)gw->cfg->max_junk;
	if ((c->fr = mos_framer_new(enc, &lim)) == NULL)
		fatalx("out of memory (framer)");
	c->deadline = evtimer_new(gw->base, conn_deadline_cb, c);
	c->idle = evtimer_new(gw->base, conn_idle_cb, c);
	c->more = event_new(gw->base, -1, 0, conn_more_cb, c);
	c->idle_fresh = true;
	if (c->deadline == NULL || c->idle == NULL || c->more == NULL)
		fatalx("event_new failed");
	bufferevent_setcb(bev, NULL, conn_write_cb, conn_event_cb, c);
	bufferevent_setwatermark(bev, EV_WRITE,
	    (size_t)gw->cfg->output_high_watermark / 2, 0);
	bufferevent_disable(bev, EV_READ);
	bufferevent_enable(bev, EV_WRITE);
	if (bufferevent_getfd(bev) >= 0)
		conn_start_reading(c);	/* accepted: connected already */
	return c;
}

/* Free now, or as soon as the current callback returns. */
void
conn_free(struct conn *c)
{
	if (c == NULL)
		return;
	if (c->busy > 0) {
		c->dead = true;
		if (c->bev != NULL)
			bufferevent_disable(c->bev, EV_READ | EV_WRITE);
		if (c->rd != NULL)
			event_del(c->rd);
		evtimer_del(c->deadline);
		evtimer_del(c->idle);
		event_del(c->more);
		return;
	}
	conn_destroy(c);
}

/* Dial host:port; ops->connected or ops->error follows. */
int
conn_connect(struct conn *c, const char *host, int port, int64_t timeout_ms)
{
	struct timeval	tv;

	snprintf(c->peer, sizeof c->peer, "%s:%d", host, port);
	c->connecting = true;
	tv = conn_tv(timeout_ms);
	bufferevent_set_timeouts(c->bev, NULL, &tv);
	if (bufferevent_socket_connect_hostname(c->bev, c->gw->dns, AF_UNSPEC,
	    host, port) != 0)
		return -1;
	return 0;
}

/* Change the frame cap (after the first valid frame). */
void
conn_set_max_frame(struct conn *c, size_t max)
{
	struct mos_framer_limits	lim;

	lim.max_frame = max;
	lim.max_junk = (size_t)c->gw->cfg->max_junk;
	mos_framer_set_limits(c->fr, &lim);
}

/* Idle timeout (no complete frame); 0 = none (applies once connected). */
void
conn_set_idle(struct conn *c, int64_t ms)
{
	c->idle_ms = ms;
	c->idle_fresh = true;
	conn_update_reading(c);
}

/* Name the NCS for history and logs. */
void
conn_set_ncs(struct conn *c, const char *name)
{
	util_strlcpy(c->ncs, name != NULL ? name : "", sizeof c->ncs);
}

/* The rate-limit key of the connection's log lines. */
const char *
conn_log_key(struct conn *c)
{
	if (c->ncs[0] != '\0')
		return c->ncs;
	return log_host_key(c->peer, c->logkey, sizeof c->logkey);
}

/* Bytes waiting to be written. */
size_t
conn_output_len(struct conn *c)
{
	return evbuffer_get_length(bufferevent_get_output(c->bev));
}

/*
 * Straight to the socket when nothing waits before it: a reply or our next
 * message is on the wire at once, while the bookkeeping that follows it
 * runs, and the bufferevent (and its write event) is left out of the common
 * case. Returns the bytes written; an error is left for the bufferevent's
 * own write to report.
 */
static size_t
conn_write_now(struct conn *c, const void *data, size_t len)
{
	evutil_socket_t	fd = bufferevent_getfd(c->bev);
	ssize_t		n;

	if (c->connecting || fd < 0 || conn_output_len(c) > 0)
		return 0;
	do
		n = send(fd, data, len, MSG_NOSIGNAL);
	while (n == -1 && errno == EINTR);
	return n > 0 ? (size_t)n : 0;
}

/*
 * Write raw bytes; over the high watermark, stop reading this peer. The
 * owner may refuse (an outbound link whose NCS this instance may no longer
 * talk to): nothing is written, -1.
 */
int
conn_write(struct conn *c, const void *data, size_t len)
{
	size_t	done;

	if (c->dead)
		return 0;
	if (c->ops->may_write != NULL && !c->ops->may_write(c->arg, c))
		return -1;
	done = conn_write_now(c, data, len);
	if (done < len && bufferevent_write(c->bev, (const char *)data + done,
	    len - done) != 0)
		fatalx("out of memory (output buffer)");
	if (!c->paused && conn_output_len(c) >
	    (size_t)c->gw->cfg->output_high_watermark) {
		c->paused = true;
		conn_update_reading(c);
		log_event(LL_DEBUG, "conn.backpressure", "conn=%llu ncs=%s "
		    "port=%s peer=%s output=%zu", (unsigned long long)c->id,
		    log_q(c->ncs), gw_port_name(c->port), c->peer,
		    conn_output_len(c));
	}
	return 0;
}

/* The encoding of what we write. */
enum mos_enc
conn_encoding(const struct conn *c)
{
	return c->enc == MOS_ENC_AUTO ? MOS_ENC_UTF16BE : c->enc;
}

/* Write a frame, record it in history (unless record is false). */
static void
conn_put_frame(struct conn *c, const void *data, size_t len,
    enum mos_type type, int32_t message_id, const char *outcome, bool record)
{
	if (conn_write(c, data, len) != 0)
		return;		/* refused: not sent, not recorded */
	if (record)
		history_add(c->gw->hist, c->ncs, c->port, HISTORY_OUT, c->id,
		    message_id, mos_type_name(type), outcome, data, len,
		    conn_encoding(c));
	if (log_enabled(LL_DEBUG))
		log_event(LL_DEBUG, "msg.out", "conn=%llu ncs=%s port=%s "
		    "type=%s message_id=%d bytes=%zu",
		    (unsigned long long)c->id, log_q(c->ncs),
		    gw_port_name(c->port), mos_type_name(type),
		    (int)message_id, len);
	gw_flush_soon(c->gw);
}

/* Encode, record in history, write. */
int
conn_send(struct conn *c, const struct mos_msg *m, const char *outcome)
{
	return conn_send_rec(c, m, outcome, true);
}

/* Encode, write; record in history only if record is true. */
int
conn_send_rec(struct conn *c, const struct mos_msg *m, const char *outcome,
    bool record)
{
	struct mos_buf	 buf = { NULL, 0, 0 };
	char		 err[256];

	if (mos_write(m, conn_encoding(c), &buf, err, sizeof err) != 0) {
		log_event(LL_ERROR, "msg.error", "conn=%llu ncs=%s port=%s "
		    "type=%s "
		    "error=%s", (unsigned long long)c->id, log_q(c->ncs),
		    gw_port_name(c->port), mos_type_name(m->type), log_q(err));
		mos_buf_free(&buf);
		return -1;
	}
	conn_put_frame(c, buf.data, buf.len, m->type, m->has_message_id ?
	    m->message_id : 0, outcome, record);
	mos_buf_free(&buf);
	return 0;
}

/* A frame encoded ahead (in this connection's encoding), its id spliced. */
void
conn_send_wire(struct conn *c, const struct wire *w, int32_t message_id,
    enum mos_type type, const char *outcome)
{
	struct sbuf	*sb = &c->gw->scratch;

	wire_splice(w, message_id, sb);
	conn_put_frame(c, sb->s, sb->len, type, message_id, outcome, true);
}

/* Stop handing out frames and reading, or start again. */
void
conn_hold(struct conn *c, bool on)
{
	c->held = on;
	if (c->dead)
		return;
	conn_update_reading(c);
	if (!on)
		event_active(c->more, EV_TIMEOUT, 0);
}

/* Handle frames that wait in the framer (after the owner un-paused). */
void
conn_resume(struct conn *c)
{
	if (!c->dead)
		event_active(c->more, EV_TIMEOUT, 0);
}

/* Close from the owner's side: its error callback follows (once). */
void
conn_abort(struct conn *c, const char *reason)
{
	c->busy++;
	conn_fail(c, reason);
	conn_leave(c);
}

/*
 * Read what the peer has already sent, now, as if its read event had fired
 * (before the owner gives up on it). Nothing happens while reading is
 * stopped. The owner's callbacks may run, and free the connection.
 */
void
conn_poll(struct conn *c)
{
	if (c->dead || c->rd == NULL || !event_pending(c->rd, EV_READ, NULL))
		return;
	conn_read_cb(bufferevent_getfd(c->bev), EV_READ, c);
}
