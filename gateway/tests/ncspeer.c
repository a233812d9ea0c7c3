/* ncspeer: a scripted NCS on loopback for the integration tests (ncspeer.h). */
#include <sys/socket.h>
#include <sys/types.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gateway/tests/ncspeer.h"

#define NCSPEER_READ_SIZE	65536
/* a write that cannot progress this long fails */
#define NCSPEER_WRITE_MS	5000
#define NCSPEER_CONNECT_MS	2000
/* waiting for the thread to close something */
#define NCSPEER_CLOSE_MS	2000
/* the poll loop wakes at least this often */
#define NCSPEER_TICK_MS		200
/* listeners: lower, upper, query */
#define NCSPEER_NLISTEN		3

struct ncspeer_conn {
	int			 id;
	int			 fd;		/* -1 once closed */
	enum ncspeer_port	 port;
	enum ncspeer_side	 side;
	struct mos_framer	*framer;
	/* held while writing or closing fd */
	pthread_mutex_t		 wlock;
	/* 1 close, 2 reset: asked by the test */
	int			 close_req;
	int64_t			 opened_us;	/* accepted or dialed */
};

struct ncspeer_delayed {
	int64_t		 due_ms;
	int		 conn;
	uint8_t		*data;
	size_t		 len;
};

struct ncspeer {
	char			*mos_id;
	char			*ncs_id;
	enum mos_enc		 enc;
	bool			 quiet;
	int64_t			 rx_us;		/* the frame being handled */

	pthread_t		 thread;
	bool			 started;
	pthread_mutex_t		 mtx;
	pthread_cond_t		 cv;
	int			 wake[2];
	bool			 stop;

	/* lower, upper, query listeners; -1 when down */
	int			 lfd[NCSPEER_NLISTEN];
	/* while down: the same ports held, bound but not listening */
	int			 hfd[NCSPEER_NLISTEN];
	uint16_t		 lport[NCSPEER_NLISTEN];
	bool			 listening;
	int			 down_req;	/* 1 down, 2 down with resets */

	struct ncspeer_conn	**conns;
	size_t			 nconns;
	struct ncspeer_frame	**frames;
	size_t			 nframes;
	struct ncspeer_delayed	*delayed;
	size_t			 ndelayed;

	struct ncspeer_policy	 pol;
	struct mos_msg		**ros;		/* running orders we hold */
	size_t			 nros;
	char			*nack_text;
	int			 nacked;
	int			 answered;	/* mosObj, since the policy */
	int32_t			 next_id;
	struct ncspeer_stats	 st;
	uint8_t			 rbuf[NCSPEER_READ_SIZE];
};

static const char *ncspeer_port_names[] = { "?", "lower", "upper", "query" };

/* Print a diagnostic line prefixed with the peer's name. */
static void __attribute__((format(printf, 1, 2)))
ncspeer_warn(const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	fputs("ncspeer: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/* Allocate or die: a test rig has no use for half-built state. */
static void *
ncspeer_xrealloc(void *p, size_t n, size_t size)
{
	if (size != 0 && n > SIZE_MAX / size)
		abort();
	if ((p = realloc(p, n * size == 0 ? 1 : n * size)) == NULL)
		abort();
	return p;
}

/* strdup that aborts on failure and keeps NULL. */
static char *
ncspeer_xstrdup(const char *s)
{
	char	*d;

	if (s == NULL)
		return NULL;
	if ((d = strdup(s)) == NULL)
		abort();
	return d;
}

/* Milliseconds on the monotonic clock. */
int64_t
ncspeer_now_ms(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Microseconds on the monotonic clock. */
int64_t
ncspeer_now_us(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Sleep for us microseconds, resuming after signals. */
static void
ncspeer_usleep(int us)
{
	struct timespec	ts = { us / 1000000, (long)(us % 1000000) * 1000 };

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

/* Wake the poll loop. */
static void
ncspeer_wakeup(struct ncspeer *p)
{
	char	c = 0;

	if (write(p->wake[1], &c, 1) == -1 && errno != EAGAIN)
		ncspeer_warn("wake: %s", strerror(errno));
}

/* Wait on the condition variable until the absolute monotonic deadline. */
static bool
ncspeer_cond_wait(struct ncspeer *p, int64_t deadline)
{
	struct timespec	ts;
	int64_t		now = ncspeer_now_ms(), left;

	if (now >= deadline)
		return false;
	left = deadline - now;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += left / 1000;
	ts.tv_nsec += (left % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_cond_timedwait(&p->cv, &p->mtx, &ts);
	return true;
}

/* Make fd non-blocking and, for TCP, send every write at once. */
static void
ncspeer_sockopts(int fd)
{
	int	one = 1;

	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	fcntl(fd, F_SETFD, FD_CLOEXEC);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/*
 * A socket bound to 127.0.0.1:port (0 = any), not yet listening; *bound gets
 * the port. SO_REUSEADDR lets it bind beside our own connections in
 * TIME_WAIT; SO_REUSEPORT lets a second one hold the port while the first
 * still listens, so that going down never lets go of it.
 */
static int
ncspeer_bind(uint16_t port, uint16_t *bound)
{
	struct sockaddr_in	sin;
	socklen_t		len = sizeof sin;
	int			fd, one = 1;

	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons(port);
	if (bind(fd, (struct sockaddr *)&sin, sizeof sin) == -1 ||
	    getsockname(fd, (struct sockaddr *)&sin, &len) == -1) {
		close(fd);
		return -1;
	}
	*bound = ntohs(sin.sin_port);
	return fd;
}

/* Make a bound socket (or a fresh one on port) listen; the socket or -1. */
static int
ncspeer_listen(int fd, uint16_t port, uint16_t *bound)
{
	if ((fd != -1 || (fd = ncspeer_bind(port, bound)) != -1) &&
	    listen(fd, 16) == 0) {
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
		return fd;
	}
	ncspeer_warn("listen on 127.0.0.1:%u: %s", port, strerror(errno));
	if (fd != -1)
		close(fd);
	return -1;
}

/* Add a connection to the table (mtx held). */
static struct ncspeer_conn *
ncspeer_conn_add(struct ncspeer *p, int fd, enum ncspeer_port port,
    enum ncspeer_side side)
{
	struct ncspeer_conn	*c;

	if ((c = calloc(1, sizeof *c)) == NULL)
		abort();
	c->fd = fd;
	c->port = port;
	c->side = side;
	c->opened_us = ncspeer_now_us();
	if ((c->framer = mos_framer_new(MOS_ENC_AUTO, NULL)) == NULL)
		abort();
	pthread_mutex_init(&c->wlock, NULL);
	p->conns = ncspeer_xrealloc(p->conns, p->nconns + 1, sizeof *p->conns);
	p->conns[p->nconns++] = c;
	c->id = (int)p->nconns;
	pthread_cond_broadcast(&p->cv);
	return c;
}

/* Connection number id, or NULL. */
static struct ncspeer_conn *
ncspeer_conn_get(struct ncspeer *p, int id)
{
	if (id < 1 || (size_t)id > p->nconns)
		return NULL;
	return p->conns[id - 1];
}

/* Close a connection's socket (thread only, mtx held); rst sends a reset. */
static void
ncspeer_conn_shut(struct ncspeer *p, struct ncspeer_conn *c, bool rst)
{
	struct linger	lg = { 1, 0 };

	pthread_mutex_lock(&c->wlock);
	if (c->fd != -1) {
		if (rst)
			setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
		close(c->fd);
		c->fd = -1;
	}
	pthread_mutex_unlock(&c->wlock);
	pthread_cond_broadcast(&p->cv);
}

/* Write all of data on c in pieces of chunk bytes, with a deadline per step. */
static int
ncspeer_conn_write(struct ncspeer_conn *c, const uint8_t *data, size_t len,
    size_t chunk, int pause_us)
{
	struct pollfd	pfd;
	size_t		off = 0, n;
	ssize_t		w;
	int		rc = 0;

	pthread_mutex_lock(&c->wlock);
	while (off < len) {
		if (c->fd == -1) {
			rc = -1;
			break;
		}
		n = len - off;
		if (chunk != 0 && n > chunk)
			n = chunk;
		w = send(c->fd, data + off, n, MSG_NOSIGNAL);
		if (w == -1 && (errno == EAGAIN || errno == EINTR)) {
			pfd.fd = c->fd;
			pfd.events = POLLOUT;
			if (poll(&pfd, 1, NCSPEER_WRITE_MS) <= 0) {
				rc = -1;
				break;
			}
			continue;
		}
		if (w <= 0) {
			rc = -1;
			break;
		}
		off += (size_t)w;
		if (pause_us > 0 && off < len)
			ncspeer_usleep(pause_us);
	}
	pthread_mutex_unlock(&c->wlock);
	return rc;
}

/* Encode m in the peer's encoding; returns malloc'd bytes or NULL. */
static uint8_t *
ncspeer_write_msg(struct ncspeer *p, const struct mos_msg *m, size_t *len)
{
	struct mos_buf	 b = { NULL, 0, 0 };
	char		 err[256];
	uint8_t		*out;

	if (mos_write(m, p->enc, &b, err, sizeof err) != 0) {
		ncspeer_warn("cannot write %s: %s", mos_type_name(m->type), err);
		mos_buf_free(&b);
		return NULL;
	}
	if ((out = malloc(b.len == 0 ? 1 : b.len)) == NULL)
		abort();
	memcpy(out, b.data, b.len);
	*len = b.len;
	mos_buf_free(&b);
	return out;
}

/* Send a reply now, or queue it for later (thread, mtx held). */
static void
ncspeer_reply(struct ncspeer *p, struct ncspeer_conn *c, struct mos_msg *m,
    int delay_ms)
{
	struct ncspeer_delayed	*d;
	uint8_t			*data;
	size_t			 len;

	data = ncspeer_write_msg(p, m, &len);
	mos_msg_free(m);
	if (data == NULL)
		return;
	if (delay_ms != 0) {
		p->delayed = ncspeer_xrealloc(p->delayed, p->ndelayed + 1,
		    sizeof *p->delayed);
		d = &p->delayed[p->ndelayed++];
		/* < 0: held until the next ncspeer_set_policy() */
		d->due_ms = delay_ms > 0 ? ncspeer_now_ms() + delay_ms :
		    INT64_MAX;
		d->conn = c->id;
		d->data = data;
		d->len = len;
		return;
	}
	if (ncspeer_conn_write(c, data, len, p->pol.write_chunk,
	    p->pol.chunk_pause_us) != 0)
		ncspeer_warn("conn %d: reply not written", c->id);
	free(data);
}

/* Send the delayed replies that are due (thread, mtx held). */
static void
ncspeer_run_delayed(struct ncspeer *p)
{
	struct ncspeer_conn	*c;
	int64_t			 now = ncspeer_now_ms();
	size_t			 i = 0;

	while (i < p->ndelayed) {
		if (p->delayed[i].due_ms > now) {
			i++;
			continue;
		}
		c = ncspeer_conn_get(p, p->delayed[i].conn);
		if (ncspeer_conn_write(c, p->delayed[i].data, p->delayed[i].len,
		    p->pol.write_chunk, p->pol.chunk_pause_us) != 0)
			ncspeer_warn("conn %d: delayed reply not written", c->id);
		free(p->delayed[i].data);
		p->delayed[i] = p->delayed[--p->ndelayed];
	}
}

/* A reply envelope: the request's mosID, ncsID and messageID. */
static struct mos_msg *
ncspeer_reply_msg(const struct mos_msg *req, enum mos_type type)
{
	struct mos_msg	*m;

	if ((m = mos_msg_new(type)) == NULL)
		abort();
	m->mos_id = mos_msg_strdup(m, req->mos_id);
	m->ncs_id = mos_msg_strdup(m, req->ncs_id);
	m->has_message_id = req->has_message_id;
	m->message_id = req->message_id;
	return m;
}

/* listMachInfo describing this peer. */
static struct mos_msg *
ncspeer_mach_info(const struct mos_msg *req)
{
	struct mos_msg			*m;
	struct mos_list_mach_info	*li;
	int				 i;

	m = ncspeer_reply_msg(req, MOS_T_LIST_MACH_INFO);
	li = &m->u.list_mach_info;
	li->manufacturer = "mosgw";
	li->model = "ncspeer";
	li->hw_rev = "1";
	li->sw_rev = "1";
	li->dom = "2026-01-01";
	li->sn = "1";
	li->id = "ncspeer";
	mos_time_now(&li->time);
	li->mos_rev = "2.8.5";
	li->device_type = "NCS";
	for (i = 0; i < 8; i++)
		li->profiles[i] = i < 2 ? 1 : 0;
	return m;
}

/* The mosAck for a mosObj or mosListAll, as the policy says. */
static void
ncspeer_answer_obj(struct ncspeer *p, struct ncspeer_conn *c,
    const struct mos_msg *req)
{
	struct mos_msg	*m;
	struct mos_ack	*a;
	bool		 nack = false;
	int		 delay = 0;

	if (req->type == MOS_T_MOS_OBJ) {
		delay = p->pol.ack_delay_ms;
		if (p->pol.hold_after > 0 && p->answered++ >= p->pol.hold_after)
			delay = -1;
		p->st.objs++;
		if (p->nacked < p->pol.nack_first) {
			p->nacked++;
			nack = true;
		} else if (p->pol.obj == NCSPEER_OBJ_IGNORE)
			return;
		else
			nack = p->pol.obj == NCSPEER_OBJ_NACK;
	}
	m = ncspeer_reply_msg(req, MOS_T_MOS_ACK);
	a = &m->u.mos_ack;
	if (req->type == MOS_T_MOS_OBJ) {
		a->obj_id = mos_msg_strdup(m, req->u.mos_obj.obj_id);
		a->obj_rev = req->u.mos_obj.obj_rev;
		a->has_obj_rev = req->u.mos_obj.has_obj_rev;
	} else {
		a->obj_id = "0";
		a->has_obj_rev = true;
	}
	if (nack) {
		a->status = "NACK";
		a->status_description = mos_msg_strdup(m, p->nack_text != NULL ?
		    p->nack_text : "rejected by ncspeer");
	} else {
		a->status = "ACK";
		a->status_description = "";	/* required, may be empty */
		p->st.acks_sent++;
	}
	if (!nack && req->type == MOS_T_MOS_OBJ &&
	    p->pol.obj == NCSPEER_OBJ_WRONG_ID && m->message_id < INT32_MAX)
		m->message_id++;
	if (p->pol.ack_no_message_id)
		m->has_message_id = false;
	if (p->pol.ack_empty_mos_id)
		m->mos_id = "";
	ncspeer_reply(p, c, m, delay);
}

/* A running order we hold, or NULL (mtx held). */
static const struct mos_msg *
ncspeer_ro_find(struct ncspeer *p, const char *ro_id)
{
	size_t	i;

	for (i = 0; ro_id != NULL && i < p->nros; i++)
		if (strcmp(p->ros[i]->u.ro_create.ro_id, ro_id) == 0)
			return p->ros[i];
	return NULL;
}

/* roReq, roReqAll, roElementStat, mosItemReplace from the gateway. */
static void
ncspeer_answer_ro(struct ncspeer *p, struct ncspeer_conn *c,
    const struct mos_msg *req)
{
	const struct mos_msg	*ro;
	struct mos_msg		*m;
	struct mos_ro		*v = NULL;
	size_t			 i;

	if (req->type == MOS_T_RO_REQ &&
	    (ro = ncspeer_ro_find(p, req->u.ro_req.ro_id)) != NULL) {
		m = ncspeer_reply_msg(req, MOS_T_RO_LIST);
		m->u.ro_list = ro->u.ro_create;
	} else if (req->type == MOS_T_RO_REQ_ALL && !p->pol.ro_req_all_nack) {
		m = ncspeer_reply_msg(req, MOS_T_RO_LIST_ALL);
		if (p->nros > 0 && (v = mos_msg_calloc(m, p->nros,
		    sizeof *v)) == NULL)
			abort();
		for (i = 0; i < p->nros; i++) {
			v[i] = p->ros[i]->u.ro_create;
			v[i].story.n = 0;
			v[i].macro_in = v[i].macro_out = NULL;
		}
		m->u.ro_list_all.ro.v = v;
		m->u.ro_list_all.ro.n = p->nros;
	} else {
		m = ncspeer_reply_msg(req, MOS_T_RO_ACK);
		if (req->type == MOS_T_RO_REQ)
			m->u.ro_ack.ro_id = mos_msg_strdup(m,
			    req->u.ro_req.ro_id);
		else if (req->type == MOS_T_RO_ELEMENT_STAT)
			m->u.ro_ack.ro_id = mos_msg_strdup(m,
			    req->u.ro_element_stat.ro_id);
		else if (req->type == MOS_T_MOS_ITEM_REPLACE)
			m->u.ro_ack.ro_id = mos_msg_strdup(m,
			    req->u.mos_item_replace.ro_id);
		else
			m->u.ro_ack.ro_id = "";
		m->u.ro_ack.ro_status = req->type == MOS_T_RO_REQ ?
		    "RO not found" : req->type == MOS_T_RO_REQ_ALL ?
		    "roReqAll refused by ncspeer" : "OK";
	}
	ncspeer_reply(p, c, m, 0);
}

/* Hold a running order (a roCreate; taken): roReq and roReqAll see it. */
void
ncspeer_hold_ro(struct ncspeer *p, struct mos_msg *ro)
{
	pthread_mutex_lock(&p->mtx);
	p->ros = ncspeer_xrealloc(p->ros, p->nros + 1, sizeof *p->ros);
	p->ros[p->nros++] = ro;
	pthread_mutex_unlock(&p->mtx);
}

/* Answer what the gateway sent on a connection it opened (mtx held). */
static void
ncspeer_answer(struct ncspeer *p, struct ncspeer_conn *c,
    const struct mos_msg *req)
{
	struct mos_msg	*m;

	switch (req->type) {
	case MOS_T_HEARTBEAT:
		p->st.heartbeats++;
		if (p->pol.no_heartbeat_reply)
			break;
		m = ncspeer_reply_msg(req, MOS_T_HEARTBEAT);
		mos_time_now(&m->u.heartbeat.time);
		ncspeer_reply(p, c, m, 0);
		break;
	case MOS_T_REQ_MACH_INFO:
		if (!p->pol.no_mach_info_reply)
			ncspeer_reply(p, c, ncspeer_mach_info(req), 0);
		break;
	case MOS_T_MOS_OBJ:
	case MOS_T_MOS_LIST_ALL:
		ncspeer_answer_obj(p, c, req);
		break;
	case MOS_T_RO_REQ:
	case MOS_T_RO_REQ_ALL:
	case MOS_T_RO_ELEMENT_STAT:
	case MOS_T_MOS_ITEM_REPLACE:
		ncspeer_answer_ro(p, c, req);
		break;
	default:
		break;
	}
}

/* Keep a frame in the record (mtx held); takes ownership of msg. */
static void
ncspeer_record(struct ncspeer *p, struct ncspeer_conn *c,
    const struct mos_frame *fr, struct mos_msg *msg, const struct mos_error *err)
{
	struct ncspeer_frame	*f;

	if ((f = calloc(1, sizeof *f)) == NULL)
		abort();
	f->seq = p->nframes;
	f->conn = c->id;
	f->port = c->port;
	f->side = c->side;
	f->t_ms = ncspeer_now_ms();
	f->t_us = p->rx_us;
	f->msg = msg;
	if (msg != NULL) {
		snprintf(f->type_name, sizeof f->type_name, "%s",
		    msg->type_name != NULL ? msg->type_name :
		    mos_type_name(msg->type));
		f->has_message_id = msg->has_message_id;
		f->message_id = msg->message_id;
	} else if (err != NULL) {
		snprintf(f->type_name, sizeof f->type_name, "%s",
		    err->env.type_name);
		f->has_message_id = err->env.have_message_id;
		f->message_id = err->env.message_id;
		snprintf(f->error, sizeof f->error, "%s: %s",
		    mos_err_name(err->code), err->msg);
	}
	if (fr != NULL) {
		if ((f->raw = malloc(fr->len == 0 ? 1 : fr->len)) == NULL)
			abort();
		memcpy(f->raw, fr->data, fr->len);
		f->raw_len = fr->len;
		f->enc = fr->enc;
	}
	if (getenv("NCSPEER_DEBUG") != NULL)
		ncspeer_warn("#%zu conn %d %s/%s <- %s id=%d%s%s", f->seq,
		    f->conn, ncspeer_port_names[f->port],
		    f->side == NCSPEER_ACCEPTED ? "accepted" : "dialed",
		    f->type_name[0] != '\0' ? f->type_name : "?",
		    f->message_id, f->error[0] != '\0' ? " error: " : "",
		    f->error);
	p->frames = ncspeer_xrealloc(p->frames, p->nframes + 1,
	    sizeof *p->frames);
	p->frames[p->nframes++] = f;
}

/* One complete frame off a connection (thread, mtx held). */
static void
ncspeer_frame_in(struct ncspeer *p, struct ncspeer_conn *c,
    const struct mos_frame *fr)
{
	struct mos_msg		*msg = NULL;
	struct mos_error	 err;

	memset(&err, 0, sizeof err);
	p->rx_us = ncspeer_now_us();
	p->st.frames++;
	if (mos_parse(fr->data, fr->len, fr->enc, MOS_LENIENT, &msg,
	    &err) != MOS_OK) {
		msg = NULL;
		p->st.errors++;
	}
	if (msg != NULL && c->side == NCSPEER_ACCEPTED)
		ncspeer_answer(p, c, msg);
	if (p->quiet)
		mos_msg_free(msg);
	else
		ncspeer_record(p, c, fr, msg, msg == NULL ? &err : NULL);
	pthread_cond_broadcast(&p->cv);
}

/* Record a framing error as a frame with no message, then close. */
static void
ncspeer_frame_error(struct ncspeer *p, struct ncspeer_conn *c, int rc)
{
	struct mos_error	err;

	memset(&err, 0, sizeof err);
	err.code = MOS_E_XML;
	snprintf(err.msg, sizeof err.msg, "framing: %s", mos_frame_strerror(rc));
	p->st.errors++;
	if (!p->quiet)
		ncspeer_record(p, c, NULL, NULL, &err);
	ncspeer_conn_shut(p, c, false);
}

/* Read what is there on c and handle each complete frame (mtx held). */
static void
ncspeer_conn_read(struct ncspeer *p, struct ncspeer_conn *c)
{
	struct mos_frame	fr;
	ssize_t			n;
	int			rc;

	n = recv(c->fd, p->rbuf, sizeof p->rbuf, 0);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		if ((rc = mos_framer_end(c->framer)) != 0)
			ncspeer_frame_error(p, c, rc);
		ncspeer_conn_shut(p, c, false);
		return;
	}
	if (mos_framer_feed(c->framer, p->rbuf, (size_t)n) != 0)
		abort();
	while ((rc = mos_framer_next(c->framer, &fr)) == MOS_FRAME_READY)
		ncspeer_frame_in(p, c, &fr);
	if (rc != MOS_FRAME_MORE)
		ncspeer_frame_error(p, c, rc);
}

/*
 * Is an accepted connection still open from the gateway's side (no FIN or
 * reset from it yet, whether or not we have read everything)?
 */
static bool
ncspeer_peer_open(const struct ncspeer_conn *c)
{
	struct pollfd	pfd = { c->fd, POLLRDHUP, 0 };

	if (c->fd == -1)
		return false;
	if (poll(&pfd, 1, 0) == -1)
		return true;
	return (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR)) == 0;
}

/* Accept a connection the gateway opened to one of our listeners. */
static void
ncspeer_accept(struct ncspeer *p, int which)
{
	enum ncspeer_port	port = (enum ncspeer_port)(NCSPEER_LOWER + which);
	size_t			i;
	int			fd, open = 0;

	if ((fd = accept(p->lfd[which], NULL, NULL)) == -1)
		return;
	for (i = 0; i < p->nconns; i++) {
		if (p->conns[i]->side == NCSPEER_ACCEPTED &&
		    p->conns[i]->port == port && ncspeer_peer_open(p->conns[i]))
			open++;
	}
	if (open > 0)
		p->st.overlaps++;
	ncspeer_sockopts(fd);
	ncspeer_conn_add(p, fd, (enum ncspeer_port)(NCSPEER_LOWER + which),
	    NCSPEER_ACCEPTED);
	p->st.accepted++;
}

/*
 * Close listener i but keep its port: a socket bound to it and not listening
 * refuses connections as a stopped NCS does, and no other socket on the
 * machine can take the port before we come back up (mtx held).
 */
static void
ncspeer_hold_port(struct ncspeer *p, size_t i)
{
	uint16_t	port;

	if (p->lfd[i] == -1)
		return;
	if (p->hfd[i] == -1)
		p->hfd[i] = ncspeer_bind(p->lport[i], &port);
	close(p->lfd[i]);
	p->lfd[i] = -1;
	if (p->hfd[i] == -1 &&
	    (p->hfd[i] = ncspeer_bind(p->lport[i], &port)) == -1)
		ncspeer_warn("cannot hold 127.0.0.1:%u while down: %s",
		    p->lport[i], strerror(errno));
}

/* Close listeners and every connection, as an NCS going away (mtx held). */
static void
ncspeer_go_down(struct ncspeer *p, bool rst)
{
	size_t	i;

	for (i = 0; i < NCSPEER_NLISTEN; i++)
		ncspeer_hold_port(p, i);
	for (i = 0; i < p->nconns; i++)
		ncspeer_conn_shut(p, p->conns[i], rst);
	for (i = 0; i < p->ndelayed; i++)
		free(p->delayed[i].data);
	p->ndelayed = 0;
	p->listening = false;
	p->down_req = 0;
	pthread_cond_broadcast(&p->cv);
}

/* Build the poll set; who[i] is -1 wake, -2/-3 listener, else conn index. */
static size_t
ncspeer_pollset(struct ncspeer *p, struct pollfd **pfd, long **who,
    size_t *cap)
{
	size_t	n = 0, i;

	if (*cap < p->nconns + 1 + NCSPEER_NLISTEN) {
		*cap = p->nconns + 16;
		*pfd = ncspeer_xrealloc(*pfd, *cap, sizeof **pfd);
		*who = ncspeer_xrealloc(*who, *cap, sizeof **who);
	}
	(*pfd)[n].fd = p->wake[0];
	(*pfd)[n].events = POLLIN;
	(*who)[n++] = -1;
	for (i = 0; i < NCSPEER_NLISTEN; i++) {
		if (p->lfd[i] == -1)
			continue;
		(*pfd)[n].fd = p->lfd[i];
		(*pfd)[n].events = POLLIN;
		(*who)[n++] = -2 - (long)i;
	}
	for (i = 0; i < p->nconns; i++) {
		if (p->conns[i]->fd == -1)
			continue;
		(*pfd)[n].fd = p->conns[i]->fd;
		(*pfd)[n].events = POLLIN;
		(*who)[n++] = (long)i;
	}
	return n;
}

/* Milliseconds until the next delayed reply, at most a tick. */
static int
ncspeer_poll_timeout(struct ncspeer *p)
{
	int64_t	now = ncspeer_now_ms(), t = NCSPEER_TICK_MS;
	size_t	i;

	for (i = 0; i < p->ndelayed; i++) {
		if (p->delayed[i].due_ms - now < t)
			t = p->delayed[i].due_ms - now;
	}
	return t < 0 ? 0 : (int)t;
}

/* Handle the requests of the test thread: closes and going down (mtx held). */
static void
ncspeer_requests(struct ncspeer *p)
{
	char	drain[64];
	size_t	i;

	while (read(p->wake[0], drain, sizeof drain) > 0)
		;
	if (p->down_req != 0)
		ncspeer_go_down(p, p->down_req == 2);
	for (i = 0; i < p->nconns; i++) {
		if (p->conns[i]->close_req != 0) {
			ncspeer_conn_shut(p, p->conns[i],
			    p->conns[i]->close_req == 2);
			p->conns[i]->close_req = 0;
		}
	}
}

/* The peer's thread: poll, accept, read, answer, until told to stop. */
static void *
ncspeer_main(void *arg)
{
	struct ncspeer		*p = arg;
	struct pollfd		*pfd = NULL;
	long			*who = NULL;
	size_t			 cap = 0, n, i;
	int			 timeout;

	pthread_mutex_lock(&p->mtx);
	while (!p->stop) {
		n = ncspeer_pollset(p, &pfd, &who, &cap);
		timeout = ncspeer_poll_timeout(p);
		pthread_mutex_unlock(&p->mtx);
		if (poll(pfd, n, timeout) == -1 && errno != EINTR)
			ncspeer_warn("poll: %s", strerror(errno));
		pthread_mutex_lock(&p->mtx);
		for (i = 0; i < n && !p->stop; i++) {
			if (pfd[i].revents == 0)
				continue;
			if (who[i] == -1)
				ncspeer_requests(p);
			else if (who[i] < -1 && p->lfd[-2 - who[i]] == pfd[i].fd)
				ncspeer_accept(p, (int)(-2 - who[i]));
			else if (who[i] >= 0 && p->conns[who[i]]->fd == pfd[i].fd)
				ncspeer_conn_read(p, p->conns[who[i]]);
		}
		ncspeer_run_delayed(p);
	}
	pthread_mutex_unlock(&p->mtx);
	free(pfd);
	free(who);
	return NULL;
}

/* Listen on the held, remembered or free ports (mtx held). */
static int
ncspeer_open_listeners(struct ncspeer *p)
{
	int	i;

	for (i = 0; i < NCSPEER_NLISTEN; i++) {
		p->lfd[i] = ncspeer_listen(p->hfd[i], p->lport[i],
		    &p->lport[i]);
		p->hfd[i] = -1;
		if (p->lfd[i] == -1)
			return -1;
	}
	p->listening = true;
	return 0;
}

/* Start the peer: listeners (unless no_listen) and the thread. */
struct ncspeer *
ncspeer_new(const struct ncspeer_opts *o)
{
	struct ncspeer		*p;
	pthread_condattr_t	 ca;

	mos_init();
	if ((p = calloc(1, sizeof *p)) == NULL)
		abort();
	p->mos_id = ncspeer_xstrdup(o->mos_id != NULL ? o->mos_id : "mosgw.test");
	p->ncs_id = ncspeer_xstrdup(o->ncs_id != NULL ? o->ncs_id : "NCSPEER");
	p->enc = o->enc;
	p->quiet = o->quiet;
	p->lfd[0] = p->lfd[1] = p->lfd[2] = -1;
	p->hfd[0] = p->hfd[1] = p->hfd[2] = -1;
	p->lport[0] = o->lower_port;
	p->lport[1] = o->upper_port;
	p->lport[2] = o->query_port;
	p->next_id = 1;
	p->wake[0] = p->wake[1] = -1;
	pthread_mutex_init(&p->mtx, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&p->cv, &ca);
	pthread_condattr_destroy(&ca);
	if (pipe2(p->wake, O_NONBLOCK | O_CLOEXEC) == -1 ||
	    (!o->no_listen && ncspeer_open_listeners(p) != 0)) {
		ncspeer_free(p);
		return NULL;
	}
	if (pthread_create(&p->thread, NULL, ncspeer_main, p) != 0) {
		ncspeer_warn("pthread_create failed");
		ncspeer_free(p);
		return NULL;
	}
	p->started = true;
	return p;
}

/* Stop the thread and free everything. */
void
ncspeer_free(struct ncspeer *p)
{
	size_t	i;

	if (p == NULL)
		return;
	if (p->started) {
		pthread_mutex_lock(&p->mtx);
		p->stop = true;
		ncspeer_wakeup(p);
		pthread_mutex_unlock(&p->mtx);
		pthread_join(p->thread, NULL);
	}
	ncspeer_go_down(p, false);
	for (i = 0; i < p->nconns; i++) {
		mos_framer_free(p->conns[i]->framer);
		pthread_mutex_destroy(&p->conns[i]->wlock);
		free(p->conns[i]);
	}
	for (i = 0; i < p->nframes; i++) {
		mos_msg_free(p->frames[i]->msg);
		free(p->frames[i]->raw);
		free(p->frames[i]);
	}
	free(p->conns);
	free(p->frames);
	free(p->delayed);
	for (i = 0; i < 2; i++) {
		if (p->wake[i] != -1)
			close(p->wake[i]);
	}
	for (i = 0; i < NCSPEER_NLISTEN; i++) {
		if (p->hfd[i] != -1)
			close(p->hfd[i]);
	}
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mtx);
	for (i = 0; i < p->nros; i++)
		mos_msg_free(p->ros[i]);
	free(p->ros);
	free(p->nack_text);
	free(p->mos_id);
	free(p->ncs_id);
	free(p);
}

/* Our listening port for lower, upper or query; 0 for anything else. */
uint16_t
ncspeer_port(struct ncspeer *p, enum ncspeer_port port)
{
	if (port == NCSPEER_LOWER)
		return p->lport[0];
	if (port == NCSPEER_UPPER)
		return p->lport[1];
	if (port == NCSPEER_QUERY)
		return p->lport[2];
	return 0;
}

/* The newest open connection of a port and side; -1 if none. */
int
ncspeer_conn_of(struct ncspeer *p, enum ncspeer_port port,
    enum ncspeer_side side)
{
	size_t	i;
	int	id = -1;

	pthread_mutex_lock(&p->mtx);
	for (i = 0; i < p->nconns; i++) {
		if (p->conns[i]->fd != -1 && p->conns[i]->port == port &&
		    p->conns[i]->side == side)
			id = p->conns[i]->id;
	}
	pthread_mutex_unlock(&p->mtx);
	return id;
}

/* Replace the answering policy. */
void
ncspeer_set_policy(struct ncspeer *p, const struct ncspeer_policy *pol)
{
	size_t	i;

	pthread_mutex_lock(&p->mtx);
	for (i = 0; i < p->ndelayed; i++)	/* held answers go out */
		if (p->delayed[i].due_ms == INT64_MAX)
			p->delayed[i].due_ms = ncspeer_now_ms();
	ncspeer_wakeup(p);
	free(p->nack_text);
	p->pol = *pol;
	p->nack_text = ncspeer_xstrdup(pol->nack_text);
	p->pol.nack_text = NULL;
	p->nacked = 0;
	p->answered = 0;
	pthread_mutex_unlock(&p->mtx);
}

/* Take the NCS down and wait until the thread has closed everything. */
void
ncspeer_down(struct ncspeer *p, bool rst)
{
	int64_t	deadline = ncspeer_now_ms() + NCSPEER_CLOSE_MS;

	pthread_mutex_lock(&p->mtx);
	p->down_req = rst ? 2 : 1;
	ncspeer_wakeup(p);
	while (p->down_req != 0 && ncspeer_cond_wait(p, deadline))
		;
	pthread_mutex_unlock(&p->mtx);
}

/* Bring the NCS back on the same ports. */
int
ncspeer_up(struct ncspeer *p)
{
	int	rc = 0;

	pthread_mutex_lock(&p->mtx);
	if (!p->listening)
		rc = ncspeer_open_listeners(p);
	ncspeer_wakeup(p);
	pthread_mutex_unlock(&p->mtx);
	return rc;
}

/* Copy the counters. */
void
ncspeer_stats(struct ncspeer *p, struct ncspeer_stats *st)
{
	pthread_mutex_lock(&p->mtx);
	*st = p->st;
	pthread_mutex_unlock(&p->mtx);
}

/* Connect to 127.0.0.1:port with a deadline; the socket or -1. */
static int
ncspeer_connect(uint16_t port)
{
	struct sockaddr_in	sin;
	struct pollfd		pfd;
	socklen_t		len = sizeof(int);
	int			fd, soerr = 0;

	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	ncspeer_sockopts(fd);
	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons(port);
	if (connect(fd, (struct sockaddr *)&sin, sizeof sin) == -1) {
		if (errno != EINPROGRESS)
			goto fail;
		pfd.fd = fd;
		pfd.events = POLLOUT;
		if (poll(&pfd, 1, NCSPEER_CONNECT_MS) != 1)
			goto fail;
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) == -1 ||
		    soerr != 0) {
			errno = soerr;
			goto fail;
		}
	}
	return fd;
fail:
	ncspeer_warn("connect to 127.0.0.1:%u: %s", port, strerror(errno));
	close(fd);
	return -1;
}

/* Dial the gateway; the connection number or -1. */
int
ncspeer_dial(struct ncspeer *p, enum ncspeer_port port, uint16_t gwport)
{
	struct ncspeer_conn	*c;
	int			 fd;

	if ((fd = ncspeer_connect(gwport)) == -1)
		return -1;
	pthread_mutex_lock(&p->mtx);
	c = ncspeer_conn_add(p, fd, port, NCSPEER_DIALED);
	ncspeer_wakeup(p);
	pthread_mutex_unlock(&p->mtx);
	return c->id;
}

/* Ask the thread to close conn, and wait until it has. */
void
ncspeer_close(struct ncspeer *p, int conn, bool rst)
{
	struct ncspeer_conn	*c;
	int64_t			 deadline = ncspeer_now_ms() + NCSPEER_CLOSE_MS;

	pthread_mutex_lock(&p->mtx);
	if ((c = ncspeer_conn_get(p, conn)) != NULL && c->fd != -1) {
		c->close_req = rst ? 2 : 1;
		ncspeer_wakeup(p);
		while (c->fd != -1 && ncspeer_cond_wait(p, deadline))
			;
	}
	pthread_mutex_unlock(&p->mtx);
}

/* Whether conn is still open. */
bool
ncspeer_conn_open(struct ncspeer *p, int conn)
{
	struct ncspeer_conn	*c;
	bool			 open;

	pthread_mutex_lock(&p->mtx);
	c = ncspeer_conn_get(p, conn);
	open = c != NULL && c->fd != -1;
	pthread_mutex_unlock(&p->mtx);
	return open;
}

/* Connections so far (numbered 1 to this). */
int
ncspeer_nconns(struct ncspeer *p)
{
	int	n;

	pthread_mutex_lock(&p->mtx);
	n = (int)p->nconns;
	pthread_mutex_unlock(&p->mtx);
	return n;
}

/* What is known of connection conn. 0, or -1 if there is none. */
int
ncspeer_conn_info(struct ncspeer *p, int conn, struct ncspeer_conn_info *ci)
{
	struct ncspeer_conn	*c;

	pthread_mutex_lock(&p->mtx);
	if ((c = ncspeer_conn_get(p, conn)) != NULL) {
		ci->port = c->port;
		ci->side = c->side;
		ci->open = c->fd != -1;
		ci->opened_us = c->opened_us;
	}
	pthread_mutex_unlock(&p->mtx);
	return c != NULL ? 0 : -1;
}

/* Wait until conn is closed. */
int
ncspeer_wait_closed(struct ncspeer *p, int conn, int timeout_ms)
{
	struct ncspeer_conn	*c;
	int64_t			 deadline = ncspeer_now_ms() + timeout_ms;
	int			 rc;

	pthread_mutex_lock(&p->mtx);
	while ((c = ncspeer_conn_get(p, conn)) != NULL && c->fd != -1 &&
	    ncspeer_cond_wait(p, deadline))
		;
	rc = c == NULL || c->fd == -1 ? 0 : -1;
	pthread_mutex_unlock(&p->mtx);
	return rc;
}

/* Open connections of a port and side (mtx held). */
static int
ncspeer_open_count(struct ncspeer *p, enum ncspeer_port port,
    enum ncspeer_side side)
{
	size_t	i;
	int	n = 0;

	for (i = 0; i < p->nconns; i++) {
		if (p->conns[i]->fd != -1 && p->conns[i]->port == port &&
		    p->conns[i]->side == side)
			n++;
	}
	return n;
}

/* Open connections of a port and side right now. */
int
ncspeer_count_open(struct ncspeer *p, enum ncspeer_port port,
    enum ncspeer_side side)
{
	int	n;

	pthread_mutex_lock(&p->mtx);
	n = ncspeer_open_count(p, port, side);
	pthread_mutex_unlock(&p->mtx);
	return n;
}

/* Wait until n connections of a port and side are open. */
int
ncspeer_wait_open(struct ncspeer *p, enum ncspeer_port port,
    enum ncspeer_side side, int n, int timeout_ms)
{
	int64_t	deadline = ncspeer_now_ms() + timeout_ms;
	int	rc;

	pthread_mutex_lock(&p->mtx);
	while (ncspeer_open_count(p, port, side) < n &&
	    ncspeer_cond_wait(p, deadline))
		;
	rc = ncspeer_open_count(p, port, side) >= n ? 0 : -1;
	pthread_mutex_unlock(&p->mtx);
	return rc;
}

/* A message with our envelope and a fresh messageID. */
struct mos_msg *
ncspeer_msg(struct ncspeer *p, enum mos_type type)
{
	struct mos_msg	*m;

	if ((m = mos_msg_new(type)) == NULL)
		abort();
	pthread_mutex_lock(&p->mtx);
	m->mos_id = mos_msg_strdup(m, p->mos_id);
	m->ncs_id = mos_msg_strdup(m, p->ncs_id);
	m->has_message_id = true;
	m->message_id = p->next_id++;
	pthread_mutex_unlock(&p->mtx);
	return m;
}

/* Look up conn and the policy's chunking, for a write from the test thread. */
static struct ncspeer_conn *
ncspeer_conn_for_write(struct ncspeer *p, int conn, size_t *chunk, int *pause)
{
	struct ncspeer_conn	*c;

	pthread_mutex_lock(&p->mtx);
	c = ncspeer_conn_get(p, conn);
	*chunk = p->pol.write_chunk;
	*pause = p->pol.chunk_pause_us;
	pthread_mutex_unlock(&p->mtx);
	if (c == NULL)
		ncspeer_warn("no connection %d", conn);
	return c;
}

/* Raw bytes in chunks with pauses. */
int
ncspeer_send_chunked(struct ncspeer *p, int conn, const void *data,
    size_t len, size_t chunk, int pause_us)
{
	struct ncspeer_conn	*c;
	size_t			 pchunk;
	int			 ppause;

	if ((c = ncspeer_conn_for_write(p, conn, &pchunk, &ppause)) == NULL)
		return -1;
	return ncspeer_conn_write(c, data, len, chunk, pause_us);
}

/* Raw bytes with the policy's chunking. */
int
ncspeer_send_raw(struct ncspeer *p, int conn, const void *data, size_t len)
{
	struct ncspeer_conn	*c;
	size_t			 chunk;
	int			 pause;

	if ((c = ncspeer_conn_for_write(p, conn, &chunk, &pause)) == NULL)
		return -1;
	return ncspeer_conn_write(c, data, len, chunk, pause);
}

/* Write a message in the peer's encoding. */
int
ncspeer_send(struct ncspeer *p, int conn, const struct mos_msg *m)
{
	uint8_t	*data;
	size_t	 len;
	int	 rc;

	if ((data = ncspeer_write_msg(p, m, &len)) == NULL)
		return -1;
	rc = ncspeer_send_raw(p, conn, data, len);
	free(data);
	return rc;
}

/* Write UTF-8 XML text converted to the peer's encoding. */
int
ncspeer_send_xml(struct ncspeer *p, int conn, const char *xml)
{
	uint8_t	*data;
	size_t	 len;
	int	 rc;

	if ((data = ncspeer_encode(xml, p->enc, &len)) == NULL) {
		ncspeer_warn("send_xml: bad UTF-8");
		return -1;
	}
	rc = ncspeer_send_raw(p, conn, data, len);
	free(data);
	return rc;
}

/* Send m and wait for the reply with its messageID on the same connection. */
const struct ncspeer_frame *
ncspeer_request(struct ncspeer *p, int conn, struct mos_msg *m, int timeout_ms)
{
	struct ncspeer_match	mt;
	int			rc;

	memset(&mt, 0, sizeof mt);
	mt.conn = conn;
	mt.message_id = m->message_id;
	mt.from = ncspeer_nframes(p);
	rc = ncspeer_send(p, conn, m);
	mos_msg_free(m);
	if (rc != 0)
		return NULL;
	return ncspeer_wait(p, &mt, timeout_ms);
}

/* Frames recorded so far. */
size_t
ncspeer_nframes(struct ncspeer *p)
{
	size_t	n;

	pthread_mutex_lock(&p->mtx);
	n = p->nframes;
	pthread_mutex_unlock(&p->mtx);
	return n;
}

/* Frame i, or NULL. */
const struct ncspeer_frame *
ncspeer_frame_at(struct ncspeer *p, size_t i)
{
	const struct ncspeer_frame	*f;

	pthread_mutex_lock(&p->mtx);
	f = i < p->nframes ? p->frames[i] : NULL;
	pthread_mutex_unlock(&p->mtx);
	return f;
}

/* The objID a frame carries, if it is a mosObj or mosAck. */
static const char *
ncspeer_frame_obj_id(const struct ncspeer_frame *f)
{
	if (f->msg == NULL)
		return NULL;
	if (f->msg->type == MOS_T_MOS_OBJ)
		return f->msg->u.mos_obj.obj_id;
	if (f->msg->type == MOS_T_MOS_ACK)
		return f->msg->u.mos_ack.obj_id;
	return NULL;
}

/* Whether f matches mt. */
static bool
ncspeer_matches(const struct ncspeer_frame *f, const struct ncspeer_match *mt)
{
	const char	*oid;

	if (mt->type != NULL && strcmp(mt->type, f->type_name) != 0)
		return false;
	if ((mt->port != 0 && mt->port != (int)f->port) ||
	    (mt->side != 0 && mt->side != (int)f->side) ||
	    (mt->conn != 0 && mt->conn != f->conn))
		return false;
	if (mt->message_id != 0 &&
	    (!f->has_message_id || mt->message_id != f->message_id))
		return false;
	if (mt->obj_id != NULL && ((oid = ncspeer_frame_obj_id(f)) == NULL ||
	    strcmp(oid, mt->obj_id) != 0))
		return false;
	return true;
}

/* First matching frame at or after mt->from (mtx held). */
static const struct ncspeer_frame *
ncspeer_search(struct ncspeer *p, const struct ncspeer_match *mt)
{
	size_t	i;

	for (i = mt->from; i < p->nframes; i++) {
		if (ncspeer_matches(p->frames[i], mt))
			return p->frames[i];
	}
	return NULL;
}

/* Matching frames (mtx held). */
static size_t
ncspeer_tally(struct ncspeer *p, const struct ncspeer_match *mt)
{
	size_t	i, n = 0;

	for (i = mt->from; i < p->nframes; i++) {
		if (ncspeer_matches(p->frames[i], mt))
			n++;
	}
	return n;
}

/* How many recorded frames match. */
size_t
ncspeer_count(struct ncspeer *p, const struct ncspeer_match *mt)
{
	size_t	n;

	pthread_mutex_lock(&p->mtx);
	n = ncspeer_tally(p, mt);
	pthread_mutex_unlock(&p->mtx);
	return n;
}

/* The first recorded frame that matches, or NULL. */
const struct ncspeer_frame *
ncspeer_find(struct ncspeer *p, const struct ncspeer_match *mt)
{
	const struct ncspeer_frame	*f;

	pthread_mutex_lock(&p->mtx);
	f = ncspeer_search(p, mt);
	pthread_mutex_unlock(&p->mtx);
	return f;
}

/* Wait for a matching frame until the deadline. */
const struct ncspeer_frame *
ncspeer_wait(struct ncspeer *p, const struct ncspeer_match *mt, int timeout_ms)
{
	const struct ncspeer_frame	*f;
	int64_t				 deadline = ncspeer_now_ms() + timeout_ms;

	pthread_mutex_lock(&p->mtx);
	while ((f = ncspeer_search(p, mt)) == NULL &&
	    ncspeer_cond_wait(p, deadline))
		;
	pthread_mutex_unlock(&p->mtx);
	return f;
}

/* Wait until n frames match; returns how many did. */
size_t
ncspeer_wait_count(struct ncspeer *p, const struct ncspeer_match *mt, size_t n,
    int timeout_ms)
{
	int64_t	deadline = ncspeer_now_ms() + timeout_ms;
	size_t	got;

	pthread_mutex_lock(&p->mtx);
	while ((got = ncspeer_tally(p, mt)) < n && ncspeer_cond_wait(p, deadline))
		;
	pthread_mutex_unlock(&p->mtx);
	return got;
}

/* Decode one UTF-8 sequence at *s; the code point or -1. */
static long
ncspeer_utf8_next(const unsigned char **s)
{
	const unsigned char	*p = *s;
	long			 cp;
	int			 n, i;

	if (p[0] < 0x80) {
		*s = p + 1;
		return p[0];
	}
	if ((p[0] & 0xe0) == 0xc0) {
		cp = p[0] & 0x1f;
		n = 1;
	} else if ((p[0] & 0xf0) == 0xe0) {
		cp = p[0] & 0x0f;
		n = 2;
	} else if ((p[0] & 0xf8) == 0xf0) {
		cp = p[0] & 0x07;
		n = 3;
	} else
		return -1;
	for (i = 1; i <= n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return -1;
		cp = (cp << 6) | (p[i] & 0x3f);
	}
	*s = p + n + 1;
	return cp > 0x10ffff ? -1 : cp;
}

/* UTF-8 text to UTF-8 (a copy) or UTF-16BE (with surrogate pairs). */
uint8_t *
ncspeer_encode(const char *text, enum mos_enc enc, size_t *len)
{
	const unsigned char	*s = (const unsigned char *)text;
	uint8_t			*out, *o;
	long			 cp;
	size_t			 n = strlen(text);

	if ((out = malloc(n * 4 + 1)) == NULL)
		abort();
	if (enc == MOS_ENC_UTF8) {
		memcpy(out, text, n);
		*len = n;
		return out;
	}
	for (o = out; *s != '\0'; ) {
		if ((cp = ncspeer_utf8_next(&s)) < 0) {
			free(out);
			return NULL;
		}
		if (cp >= 0x10000) {
			cp -= 0x10000;
			*o++ = (uint8_t)(0xd8 | (cp >> 18));
			*o++ = (uint8_t)(cp >> 10);
			cp = 0xdc00 | (cp & 0x3ff);
		}
		*o++ = (uint8_t)(cp >> 8);
		*o++ = (uint8_t)cp;
	}
	*len = (size_t)(o - out);
	return out;
}

/* Print the record, one line per frame, to stderr. */
void
ncspeer_dump(struct ncspeer *p, const char *label)
{
	const struct ncspeer_frame	*f;
	size_t				 i;

	pthread_mutex_lock(&p->mtx);
	fprintf(stderr, "---- ncspeer %s: %zu frames, %zu connections\n",
	    label, p->nframes, p->nconns);
	for (i = 0; i < p->nframes; i++) {
		f = p->frames[i];
		fprintf(stderr, "  #%zu t=%lld conn=%d %s/%s %s id=%d%s%s\n",
		    f->seq, (long long)f->t_ms, f->conn,
		    ncspeer_port_names[f->port],
		    f->side == NCSPEER_ACCEPTED ? "accepted" : "dialed",
		    f->type_name[0] != '\0' ? f->type_name : "?",
		    f->has_message_id ? f->message_id : -1,
		    f->error[0] != '\0' ? " error: " : "", f->error);
	}
	pthread_mutex_unlock(&p->mtx);
}
