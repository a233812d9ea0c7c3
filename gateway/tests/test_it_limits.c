/*
 * Integration: the daemon's input limits against a real mosgw.
 *
 * A peer that sends requests for a large object without reading the replies
 * is no longer read from once its output passes output_high_watermark (the
 * gateway's memory stays bounded, other NCS connections are still answered)
 * and gets every reply, in order, when it starts reading; the
 * max_conn cap over all ports closes the connection over it at once and
 * leaves the others working; and a gateway out of descriptors pauses
 * accepting instead of spinning, then accepts again once descriptors are
 * free.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <linux/sockios.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gateway/tests/itutil.h"

#define WAIT_MS		5000
#define BIG_OBJ		"IT-BIG"
#define BIG_DESC_LEN	24000		/* characters: about 50 KB per reply */
#define FLOOD_REQS	3000		/* about 150 MB of replies in all */
#define FLOOD_RCVBUF	16384		/* the flooding peer's receive buffer */
#define STALL_MS	1000		/* no send progress this long: stalled */
#define FLOOD_SEND_MS	10000		/* bound on the sending phase */
#define FLOOD_READ_MS	20000		/* bound on a pause in the replies */
#define FLOOD_DRAIN_MS	300000		/* bound on reading every reply */
#define RSS_GROWTH_KB	(64 * 1024)	/* allowed growth of the gateway */
#define SETTLE_MS	500		/* watch the gateway this long */
#define CAP_CONNS	4		/* max_conn in the cap test */
#define FD_LIMIT	64		/* RLIMIT_NOFILE in the descriptor test */
#define FD_DIALS	80		/* more connections than that */
#define SPIN_CPU_S	0.3		/* CPU allowed over 2 s when paused */

/* A 64 KiB output high watermark. */
static int
setup_watermark(void **state)
{
	return itutil_setup_gateway(state, "output_high_watermark = 65536\n");
}

/* At most four inbound connections in all, eight per port. */
static int
setup_max_conn(void **state)
{
	return itutil_setup_gateway(state, "max_conn = 4\nmax_conn_per_port = 8\n");
}

/* Connection caps above what the descriptor limit allows. */
static int
setup_many_conns(void **state)
{
	return itutil_setup_gateway(state, "max_conn = 500\n"
	    "max_conn_per_port = 500\nmax_conn_per_addr = 500\n");
}

/* VmRSS of the gateway in KiB, from /proc/PID/status; -1 if unreadable. */
static long
gw_rss_kb(struct gwproc *gp)
{
	char	 path[64], line[256];
	long	 kb = -1;
	FILE	*f;

	snprintf(path, sizeof path, "/proc/%d/status", (int)gp->pid);
	if ((f = fopen(path, "r")) == NULL)
		return -1;
	while (fgets(line, sizeof line, f) != NULL)
		if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

/*
 * Bytes the kernel holds unread for the gateway on its end of our
 * connection fd (its receive queue, from /proc/net/tcp); -1 if not found.
 */
static long
gw_unread(int fd)
{
	struct sockaddr_in	 sin;
	socklen_t		 len = sizeof sin;
	char			 line[512], want[32], rem[32];
	unsigned long		 rx;
	long			 found = -1;
	FILE			*f;

	if (getsockname(fd, (struct sockaddr *)&sin, &len) == -1 ||
	    (f = fopen("/proc/net/tcp", "r")) == NULL)
		return -1;
	/* The gateway's end has our address as its remote one. */
	snprintf(want, sizeof want, "0100007F:%04X", ntohs(sin.sin_port));
	while (fgets(line, sizeof line, f) != NULL)
		if (sscanf(line, " %*d: %*s %31s %*x %*x:%lx", rem, &rx) == 2 &&
		    strcmp(rem, want) == 0) {
			found = (long)rx;
			break;
		}
	fclose(f);
	return found;
}

/*
 * Request bytes the gateway has read from our connection fd: what we sent
 * less what waits in our send queue and in its receive queue; -1.
 */
static long
gw_consumed(int fd, size_t sent)
{
	long	unread = gw_unread(fd);
	int	outq;

	if (unread == -1 || ioctl(fd, SIOCOUTQ, &outq) == -1)
		return -1;
	return (long)sent - outq - unread;
}

/* The largest VmRSS of the gateway over ms milliseconds, in KiB. */
static long
gw_rss_peak(struct gwproc *gp, int ms)
{
	int64_t	end = ncspeer_now_ms() + ms;
	long	kb, peak = gw_rss_kb(gp);

	while (ncspeer_now_ms() < end) {
		usleep(20000);
		if ((kb = gw_rss_kb(gp)) > peak)
			peak = kb;
	}
	return peak;
}

/* n mosReqObj for obj_id, written one after the other into out; ids kept. */
static void
flood_build(struct gwrig *r, const char *obj_id, int32_t *ids, size_t n,
    struct mos_buf *out)
{
	struct mos_msg	*m;
	char		 err[256];
	size_t		 i;

	for (i = 0; i < n; i++) {
		m = ncspeer_msg(r->ncs, MOS_T_MOS_REQ_OBJ);
		m->u.mos_req_obj.obj_id = obj_id;
		ids[i] = m->message_id;
		GWRIG_CHECK(r, mos_write(m, MOS_ENC_UTF16BE, out, err,
		    sizeof err) == 0);
		mos_msg_free(m);
	}
}

/*
 * Write what is left of buf (from *off) without blocking until it is all
 * written or no byte went out for STALL_MS. True if it stalled.
 */
static bool
flood_send(int fd, const struct mos_buf *buf, size_t *off)
{
	struct pollfd	pfd = { .fd = fd, .events = POLLOUT };
	int64_t		deadline = ncspeer_now_ms() + FLOOD_SEND_MS;
	ssize_t		n;

	while (*off < buf->len && ncspeer_now_ms() < deadline) {
		n = send(fd, buf->data + *off, buf->len - *off, MSG_NOSIGNAL);
		if (n > 0) {
			*off += (size_t)n;
			continue;
		}
		if (n == -1 && errno != EAGAIN && errno != EINTR)
			return false;
		if (poll(&pfd, 1, STALL_MS) == 0)
			return true;
	}
	return false;
}

/* Reply number *got must be the mosObj for ids[*got]; false if not. */
static bool
flood_check(const struct mos_frame *fr, const int32_t *ids, size_t *got)
{
	struct mos_msg	*m = NULL;
	bool		 ok;

	ok = mos_parse(fr->data, fr->len, fr->enc, MOS_LENIENT, &m,
	    NULL) == MOS_OK && m->type == MOS_T_MOS_OBJ && m->has_message_id &&
	    m->message_id == ids[*got] &&
	    strcmp(m->u.mos_obj.obj_id, BIG_OBJ) == 0;
	if (!ok)
		fprintf(stderr, "reply %zu: want mosObj %d, got %s %d\n", *got,
		    ids[*got], m != NULL ? mos_type_name(m->type) : "(no parse)",
		    m != NULL ? m->message_id : 0);
	mos_msg_free(m);
	(*got)++;
	return ok;
}

/* A heartbeat on conn answered within ms; prints how long it took. */
static bool
heartbeat_within(struct gwrig *r, int conn, int ms)
{
	const struct ncspeer_frame	*f;
	int64_t				 t0 = ncspeer_now_ms(), dt;

	f = gwrig_request(r, conn, MOS_T_HEARTBEAT, WAIT_MS);
	dt = ncspeer_now_ms() - t0;
	fprintf(stderr, "heartbeat on conn %d: %s in %lld ms\n", conn,
	    f != NULL ? "answered" : "no answer", (long long)dt);
	return f != NULL && f->msg != NULL &&
	    f->msg->type == MOS_T_HEARTBEAT && dt <= ms;
}

/*
 * Read replies (and write what is left of buf) until n replies came, each
 * the right one in order, while the NCS keeps heartbeating on conn c (as
 * an NCS does: a connection that sends nothing for 2.5 heartbeat intervals
 * is closed). The number of replies read.
 */
static size_t
flood_drain(struct gwrig *r, int c, int fd, const struct mos_buf *buf,
    size_t *off, const int32_t *ids, size_t n)
{
	struct mos_framer	*fm = mos_framer_new(MOS_ENC_AUTO, NULL);
	struct mos_frame	 fr;
	struct pollfd		 pfd = { .fd = fd };
	int64_t			 t0 = ncspeer_now_ms(), last = t0, beat = t0;
	static uint8_t		 rbuf[65536];
	size_t			 got = 0, bytes = 0;
	ssize_t			 k;

	GWRIG_CHECK(r, fm != NULL);
	/*
	 * What is checked is that every reply comes, in order, not how fast:
	 * the wait ends when the replies pause for FLOOD_READ_MS (a slow
	 * machine or a sanitizer build takes its time over 150 MB).
	 */
	while (got < n && ncspeer_now_ms() - last < FLOOD_READ_MS &&
	    ncspeer_now_ms() - t0 < FLOOD_DRAIN_MS) {
		if (ncspeer_now_ms() - beat >= 1000) {
			GWRIG_CHECK(r, heartbeat_within(r, c, WAIT_MS));
			beat = ncspeer_now_ms();
		}
		pfd.events = POLLIN | (*off < buf->len ? POLLOUT : 0);
		if (poll(&pfd, 1, 200) <= 0)
			continue;
		if ((pfd.revents & POLLOUT) && (k = send(fd, buf->data + *off,
		    buf->len - *off, MSG_NOSIGNAL)) > 0)
			*off += (size_t)k;
		if ((pfd.revents & (POLLIN | POLLHUP | POLLERR)) == 0)
			continue;
		if ((k = recv(fd, rbuf, sizeof rbuf, 0)) <= 0) {
			if (k == -1 && errno == EAGAIN)
				continue;
			fprintf(stderr, "flood connection closed after %zu "
			    "replies\n", got);
			break;
		}
		bytes += (size_t)k;
		last = ncspeer_now_ms();
		GWRIG_CHECK(r, mos_framer_feed(fm, rbuf, (size_t)k) == 0);
		while (got < n && mos_framer_next(fm, &fr) == MOS_FRAME_READY)
			if (!flood_check(&fr, ids, &got)) {
				mos_framer_free(fm);
				return got - 1;
			}
	}
	mos_framer_free(fm);
	fprintf(stderr, "flood: %zu reply bytes read\n", bytes);
	return got;
}

/*
 * The gateway has stopped reading fd (off bytes sent to it): across a
 * heartbeat answered on conn c (so its loop went round and would have
 * served fd if it read it) not one more request byte was read, while some
 * wait unread in its receive queue. Without backpressure it would keep
 * reading until nothing is left, however slow the machine; with it, the
 * count stands still. Sampled until so, within FLOOD_SEND_MS.
 */
static bool
stopped_reading(struct gwrig *r, int c, int fd, size_t off, long *used)
{
	int64_t	deadline = ncspeer_now_ms() + FLOOD_SEND_MS;
	long	before, unread;

	do {
		before = gw_consumed(fd, off);
		if (gwrig_request(r, c, MOS_T_HEARTBEAT, WAIT_MS) == NULL)
			return false;
		*used = gw_consumed(fd, off);
		unread = gw_unread(fd);
		if (before >= 0 && *used == before && unread > 0)
			return true;
	} while (ncspeer_now_ms() < deadline);
	return false;
}

/*
 * A peer sends mosReqObj for a large object without reading: the gateway
 * stops reading it (memory bounded) while it still answers another
 * connection, and the peer gets every reply in order once it reads.
 */
static void
test_watermark_backpressure(void **state)
{
	struct gwrig	*r = *state;
	struct mos_buf	 buf = { 0 };
	int32_t		*ids;
	char		*desc;
	size_t		 off = 0, got;
	long		 rss0, rss1, used = -1;
	bool		 stalled;
	int		 fd, c;

	desc = malloc(BIG_DESC_LEN + 1);
	ids = calloc(FLOOD_REQS, sizeof *ids);
	GWRIG_CHECK(r, desc != NULL && ids != NULL);
	memset(desc, 'd', BIG_DESC_LEN);
	desc[BIG_DESC_LEN] = '\0';
	GWRIG_CHECK(r, gwproc_mosctl(r->gw, NULL, "asset", "put", BIG_OBJ,
	    "--slug", "Big", "--description", desc, (char *)NULL) == 0);
	free(desc);
	flood_build(r, BIG_OBJ, ids, FLOOD_REQS, &buf);

	c = gwrig_dial(r, NCSPEER_LOWER);
	GWRIG_CHECK(r, c > 0 && heartbeat_within(r, c, WAIT_MS));
	rss0 = gw_rss_kb(r->gw);
	fd = itutil_dial(NULL, r->gw->lower_port, FLOOD_RCVBUF);
	GWRIG_CHECK(r, fd != -1);
	stalled = flood_send(fd, &buf, &off);
	rss1 = gw_rss_peak(r->gw, SETTLE_MS);
	/*
	 * It stopped reading. (Not "it read less than a share of what was
	 * sent": how much the kernel buffers take, and so what was sent,
	 * depends on the machine's memory pressure, not on the gateway.)
	 */
	GWRIG_CHECK(r, stopped_reading(r, c, fd, off, &used));
	fprintf(stderr, "flood: %zu of %zu request bytes sent (%s), %ld read "
	    "by the gateway, %ld unread, its RSS %ld -> %ld KiB\n", off,
	    buf.len, stalled ? "stalled" : "not stalled", used, gw_unread(fd),
	    rss0, rss1);
	GWRIG_CHECK(r, rss0 > 0 && rss1 > 0 && rss1 - rss0 < RSS_GROWTH_KB);
	GWRIG_CHECK(r, heartbeat_within(r, c, WAIT_MS));

	got = flood_drain(r, c, fd, &buf, &off, ids, FLOOD_REQS);
	fprintf(stderr, "flood: %zu of %d replies in order\n", got, FLOOD_REQS);
	GWRIG_CHECK(r, got == FLOOD_REQS);
	GWRIG_CHECK(r, heartbeat_within(r, c, WAIT_MS));
	close(fd);
	mos_buf_free(&buf);
	free(ids);
}

/* Ports to spread the cap test's connections over. */
static const enum ncspeer_port cap_ports[] = {
	NCSPEER_LOWER, NCSPEER_UPPER, NCSPEER_QUERY, NCSPEER_LOWER,
	NCSPEER_UPPER,
};

/*
 * max_conn = 4 over all ports: the fifth connection is accepted and closed
 * at once, with a conn.reject line; the four keep working.
 */
static void
test_max_conn(void **state)
{
	struct gwrig	*r = *state;
	int		 c[CAP_CONNS + 1], i;
	long		 mark;

	for (i = 0; i < CAP_CONNS; i++) {
		c[i] = gwrig_dial(r, cap_ports[i]);
		GWRIG_CHECK(r, c[i] > 0 && heartbeat_within(r, c[i], WAIT_MS));
	}
	mark = (long)gwproc_log_size(r->gw);
	c[CAP_CONNS] = gwrig_dial(r, cap_ports[CAP_CONNS]);
	GWRIG_CHECK(r, c[CAP_CONNS] > 0);
	GWRIG_CHECK(r, ncspeer_wait_closed(r->ncs, c[CAP_CONNS], WAIT_MS) == 0);
	GWRIG_CHECK(r, gwproc_log_wait(r->gw, mark, WAIT_MS,
	    "event=conn.reject", (char *)NULL) != -1);
	for (i = 0; i < CAP_CONNS; i++)
		GWRIG_CHECK(r, heartbeat_within(r, c[i], WAIT_MS));
	/* A freed slot is usable again. */
	ncspeer_close(r->ncs, c[0], false);
	GWRIG_CHECK(r, gwproc_log_wait(r->gw, mark, WAIT_MS,
	    "event=conn.close", (char *)NULL) != -1);
	c[0] = gwrig_dial(r, cap_ports[0]);
	GWRIG_CHECK(r, c[0] > 0 && heartbeat_within(r, c[0], WAIT_MS));
}

/*
 * Out of descriptors (RLIMIT_NOFILE 64 set on the running gateway, as
 * prlimit --nofile=64:64 does): accept is paused with a conn.reject
 * action=pause-accept line, no spinning, and connections are accepted and
 * answered again once the extra ones are closed.
 */
static void
test_out_of_fds(void **state)
{
	struct gwrig	*r = *state;
	struct rlimit	 rl = { FD_LIMIT, FD_LIMIT };
	int		 c[FD_DIALS], n, i, hb;
	double		 cpu0, cpu;
	long		 mark;

	GWRIG_CHECK(r, prlimit(r->gw->pid, RLIMIT_NOFILE, &rl, NULL) == 0);
	mark = (long)gwproc_log_size(r->gw);
	for (n = 0; n < FD_DIALS; n++)
		if ((c[n] = gwrig_dial(r, NCSPEER_QUERY)) <= 0)
			break;
	GWRIG_CHECK(r, n > FD_LIMIT - gwproc_fd_count(r->gw));
	GWRIG_CHECK(r, gwproc_log_wait(r->gw, mark, WAIT_MS,
	    "event=conn.reject", "action=pause-accept", (char *)NULL) != -1);
	fprintf(stderr, "%d connections dialed, gateway holds %d fds\n", n,
	    gwproc_fd_count(r->gw));
	cpu0 = gwproc_cpu(r->gw);
	sleep(2);
	cpu = gwproc_cpu(r->gw) - cpu0;
	fprintf(stderr, "2 s out of descriptors: %.2f s CPU\n", cpu);
	GWRIG_CHECK(r, cpu0 >= 0 && cpu < SPIN_CPU_S);

	for (i = 0; i < n; i++)
		ncspeer_close(r->ncs, c[i], false);
	hb = gwrig_dial(r, NCSPEER_QUERY);
	GWRIG_CHECK(r, hb > 0 && heartbeat_within(r, hb, WAIT_MS));
	GWRIG_CHECK(r, gwproc_fd_count(r->gw) < FD_LIMIT);
}

/* The it_limits suite. */
int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_watermark_backpressure,
		    setup_watermark, itutil_teardown),
		cmocka_unit_test_setup_teardown(test_max_conn, setup_max_conn,
		    itutil_teardown),
		cmocka_unit_test_setup_teardown(test_out_of_fds,
		    setup_many_conns, itutil_teardown),
	};

	return cmocka_run_group_tests_name("it_limits", tests, NULL, NULL);
}
