/*
 * itutil: setup and teardown shared by the integration suites, and raw
 * connections from a chosen loopback address (itutil.h).
 */
#include <sys/socket.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <errno.h>
#include <stdarg.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gateway/tests/itutil.h"
#include "store/store.h"

/* A rig from options; the peer writes enc. */
int
itutil_setup_opts(void **state, enum mos_enc enc, const struct gwproc_opts *o)
{
	*state = gwrig_new_opts(enc, o);
	return *state == NULL ? -1 : 0;
}

/* The usual rig with these [gateway] lines. */
int
itutil_setup_gateway(void **state, const char *gateway_extra)
{
	struct gwproc_opts	o;

	memset(&o, 0, sizeof o);
	o.gateway_extra = gateway_extra;
	return itutil_setup_opts(state, MOS_ENC_UTF16BE, &o);
}

/* The usual rig with these NCS lines. */
int
itutil_setup_ncs(void **state, enum mos_enc enc, const char *ncs_extra)
{
	*state = gwrig_new(enc, ncs_extra);
	return *state == NULL ? -1 : 0;
}

/* The usual rig. */
int
itutil_setup(void **state)
{
	return itutil_setup_ncs(state, MOS_ENC_UTF16BE, NULL);
}

/* Stop the gateway, expecting exit status 0, and the peer. */
int
itutil_teardown(void **state)
{
	struct gwrig	*r = *state;
	int		 st;

	st = gwproc_stop(r->gw);
	if (st != 0)
		gwrig_dump(r, "SIGTERM exit status", __FILE__, __LINE__);
	gwrig_free(r);
	return st == 0 ? 0 : -1;
}

/* An envelope in UTF-8 text around body, with that pair and messageID. */
char *
itutil_frame_text(const char *mos_id, const char *ncs_id, int id,
    const char *body)
{
	char	*s;

	if (asprintf(&s, "<mos><mosID>%s</mosID><ncsID>%s</ncsID>"
	    "<messageID>%d</messageID>%s</mos>", mos_id, ncs_id, id, body) == -1)
		abort();
	return s;
}

/* Send UTF-8 text on conn, wait for the reply with messageID id. */
const struct ncspeer_frame *
itutil_send_text(struct gwrig *r, int conn, int id, const char *text,
    int timeout_ms)
{
	struct ncspeer_match	mt = { .conn = conn, .message_id = id };

	mt.from = ncspeer_nframes(r->ncs);
	if (ncspeer_send_xml(r->ncs, conn, text) != 0)
		return NULL;
	return ncspeer_wait(r->ncs, &mt, timeout_ms);
}

/* A connection from src to 127.0.0.1:port. */
int
itutil_dial(const char *src, uint16_t port, int rcvbuf)
{
	struct sockaddr_in	sin;
	struct pollfd		pfd;
	int			fd, err = 0;
	socklen_t		len = sizeof err;

	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0)) == -1)
		return -1;
	if (rcvbuf > 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	if (src != NULL && (inet_pton(AF_INET, src, &sin.sin_addr) != 1 ||
	    bind(fd, (struct sockaddr *)&sin, sizeof sin) == -1))
		goto fail;
	sin.sin_port = htons(port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&sin, sizeof sin) == -1 &&
	    errno != EINPROGRESS)
		goto fail;
	pfd.fd = fd;
	pfd.events = POLLOUT;
	if (poll(&pfd, 1, 5000) != 1 ||
	    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == -1 || err != 0)
		goto fail;
	return fd;
fail:
	close(fd);
	return -1;
}

/* Write everything, waiting for room. */
int
itutil_write(int fd, const void *data, size_t len, int timeout_ms)
{
	struct pollfd	pfd = { .fd = fd, .events = POLLOUT };
	int64_t		end = ncspeer_now_ms() + timeout_ms;
	const char	*p = data;
	ssize_t		n;

	while (len > 0) {
		n = send(fd, p, len, MSG_NOSIGNAL);
		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n == -1 && errno != EAGAIN && errno != EINTR)
			return -1;
		if (ncspeer_now_ms() >= end || poll(&pfd, 1, 100) == -1)
			return -1;
	}
	return 0;
}

/* Request, and the reply with the same messageID. */
struct mos_msg *
itutil_exchange(int fd, const struct mos_msg *m, int timeout_ms)
{
	struct mos_buf		 buf = { 0 };
	struct mos_framer	*fm;
	struct mos_frame	 fr;
	struct mos_msg		*r = NULL;
	struct pollfd		 pfd = { .fd = fd, .events = POLLIN };
	int64_t			 end = ncspeer_now_ms() + timeout_ms;
	uint8_t			 rbuf[16384];
	char			 err[256];
	ssize_t			 n;

	if (mos_write(m, MOS_ENC_UTF16BE, &buf, err, sizeof err) != 0 ||
	    itutil_write(fd, buf.data, buf.len, timeout_ms) != 0 ||
	    (fm = mos_framer_new(MOS_ENC_AUTO, NULL)) == NULL) {
		mos_buf_free(&buf);
		return NULL;
	}
	mos_buf_free(&buf);
	while (r == NULL && ncspeer_now_ms() < end) {
		if (poll(&pfd, 1, 100) <= 0)
			continue;
		if ((n = recv(fd, rbuf, sizeof rbuf, 0)) == -1 &&
		    (errno == EAGAIN || errno == EINTR))
			continue;
		if (n <= 0 || mos_framer_feed(fm, rbuf, (size_t)n) != 0)
			break;
		while (r == NULL && mos_framer_next(fm, &fr) ==
		    MOS_FRAME_READY) {
			if (mos_parse(fr.data, fr.len, fr.enc, MOS_LENIENT, &r,
			    NULL) != MOS_OK)
				r = NULL;
			else if (!r->has_message_id ||
			    r->message_id != m->message_id) {
				mos_msg_free(r);
				r = NULL;
			}
		}
	}
	mos_framer_free(fm);
	return r;
}

/* Wait for the other side's close. */
int
itutil_wait_eof(int fd, int timeout_ms)
{
	struct pollfd	pfd = { .fd = fd, .events = POLLIN };
	int64_t		end = ncspeer_now_ms() + timeout_ms;
	char		buf[16384];
	ssize_t		n;

	while (ncspeer_now_ms() < end) {
		if (poll(&pfd, 1, 100) <= 0)
			continue;
		n = recv(fd, buf, sizeof buf, 0);
		if (n == 0 || (n == -1 && errno != EAGAIN && errno != EINTR))
			return 0;
	}
	return -1;
}

/* A mosAck with that status and text in its description. */
bool
itutil_is_ack(const struct ncspeer_frame *f, const char *status,
    const char *text)
{
	const struct mos_ack	*a;

	if (f == NULL || f->msg == NULL || f->msg->type != MOS_T_MOS_ACK)
		return false;
	a = &f->msg->u.mos_ack;
	if (a->status == NULL || strcmp(a->status, status) != 0)
		return false;
	return text == NULL || (a->status_description != NULL &&
	    strstr(a->status_description, text) != NULL);
}

/* Write text to a file in the gateway's directory; its path in buf. */
int
itutil_write_file(struct gwrig *r, const char *name, const char *text,
    char *buf, size_t len)
{
	FILE	*f;

	snprintf(buf, len, "%s/%s", r->gw->dir, name);
	if ((f = fopen(buf, "w")) == NULL)
		return -1;
	fputs(text, f);
	return fclose(f) == 0 ? 0 : -1;
}

long
itutil_event_ids(struct gwrig *r, const char *type, int64_t after,
    int64_t *ids, size_t max)
{
	struct store		*db;
	struct store_stmt	*st;
	long			 n = 0;
	int			 rc;

	if ((db = gwproc_store(r->gw, STORE_OPEN_READONLY)) == NULL)
		return -1;
	store_busy_timeout(db, 5000);
	if (store_prepare(db, "SELECT id FROM events WHERE id > ?1 AND"
	    " (CAST(?2 AS TEXT) IS NULL OR type = ?2) ORDER BY id", 0, &st) !=
	    STORE_OK) {
		fprintf(stderr, "events: %s\n", store_errmsg(db));
		store_close(db);
		return -1;
	}
	store_bind_int64(st, 1, after);
	if (type != NULL)
		store_bind_text(st, 2, type, -1);
	else
		store_bind_null(st, 2);
	while ((rc = store_step(st)) == STORE_ROW && (size_t)n < max)
		ids[n++] = store_column_int64(st, 0);
	if (rc != STORE_ROW && rc != STORE_DONE)
		n = -1;
	store_finalize(st);
	store_close(db);
	return n;
}

char *
itutil_mosctl_url(struct gwrig *r, const char *tok, int want,
    const char *needle, ...)
{
	char	*argv[21], url[64], cmd[512], *out = NULL, *err = NULL;
	va_list	 ap;
	size_t	 at = 0;
	int	 n = 0, st;

	va_start(ap, needle);
	while (n < 20 && (argv[n] = va_arg(ap, char *)) != NULL) {
		at += (size_t)snprintf(cmd + at, at < sizeof cmd ?
		    sizeof cmd - at : 0, "%s%s", n > 0 ? " " : "", argv[n]);
		n++;
	}
	va_end(ap);
	argv[n] = NULL;
	snprintf(url, sizeof url, "http://127.0.0.1:%u", r->gw->api_port);
	st = gwproc_mosctl_cmd(r->gw, &out, &err, "--url", url,
	    "--token-file", tok, argv[0], argv[1], argv[2], argv[3], argv[4],
	    argv[5], argv[6], argv[7], argv[8], argv[9], argv[10], argv[11],
	    argv[12], argv[13], argv[14], argv[15], argv[16], argv[17],
	    argv[18], argv[19], (char *)NULL);
	if (st != want || out == NULL || err == NULL ||
	    strstr(st == 0 ? out : err, needle) == NULL) {
		fprintf(stderr, "mosctl %s: exit %d (want %d, '%s')\nout: %s\n"
		    "err: %s\n", n > 0 ? cmd : "", st, want, needle,
		    out != NULL ? out : "", err != NULL ? err : "");
		free(out);
		out = NULL;
	}
	free(err);
	return out;
}

/* How often needle occurs in s. */
int
itutil_count(const char *s, const char *needle)
{
	int	n = 0;

	while ((s = strstr(s, needle)) != NULL) {
		n++;
		s += strlen(needle);
	}
	return n;
}

bool
itutil_loop_stalled(int64_t slowest, int64_t took)
{
	return slowest * 4 >= took && slowest >= ITUTIL_STALL_MIN_MS;
}

/* Heartbeats on conn until done(arg): how many, and the slowest answer. */
int
itutil_heartbeats_until(struct gwrig *r, int conn, bool (*done)(void *),
    void *arg, int timeout_ms, int64_t *max_ms)
{
	const struct ncspeer_frame	*f;
	int64_t				 end, t0, dt;
	int				 n = 0;

	*max_ms = 0;
	end = ncspeer_now_ms() + timeout_ms;
	while (!done(arg) && ncspeer_now_ms() < end) {
		t0 = ncspeer_now_ms();
		f = gwrig_request(r, conn, MOS_T_HEARTBEAT, timeout_ms);
		if (f == NULL || f->msg == NULL ||
		    f->msg->type != MOS_T_HEARTBEAT)
			return -1;
		dt = ncspeer_now_ms() - t0;
		if (dt > *max_ms)
			*max_ms = dt;
		n++;
	}
	return n;
}
