/*
 * Rows 27-29: the HTTP API. Row 27 abuses it (a 1 MiB header, a 100 MiB
 * body, slow clients, a thousand connections) while a configured NCS keeps
 * a connection of its own to the gateway, whose heartbeats must keep being
 * answered, and assets keep being published to it; rows 28-29 are about
 * TLS.
 */
#include <sys/resource.h>
#include <sys/socket.h>

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "faults/faults.h"
#include "gateway/tests/httpc.h"

#define API_TOKEN	"fault-row-27-write-token"
#define API_DEADLINE_S	2	/* request_deadline */
#define API_MAX_CONN	256	/* max_connections */
#define MIB		(1024 * 1024)

/* What the configured NCS saw while the API was abused. */
struct mos_watch {
	struct gwrig	*r;
	int		 conn;		/* the NCS's own connection */
	int		 heartbeats;	/* answered */
	int		 missed;
	int64_t		 worst_ms;	/* slowest answer */
	int		 published;	/* assets put with mosctl */
	int		 delivered;	/* mosObj the NCS received for them */
	int64_t		 last_ms;	/* of the last heartbeat */
};

/* A heartbeat on the NCS's connection at most every 100 ms. */
static void
watch_beat(struct mos_watch *w)
{
	int64_t	t0 = ncspeer_now_ms();

	if (t0 - w->last_ms < 100)
		return;
	if (heartbeat_ok(w->r, w->conn)) {
		w->heartbeats++;
		if (ncspeer_now_ms() - t0 > w->worst_ms)
			w->worst_ms = ncspeer_now_ms() - t0;
	} else
		w->missed++;
	w->last_ms = ncspeer_now_ms();
}

/* Publish one asset and wait until the NCS has its mosObj. */
static void
watch_publish(struct mos_watch *w)
{
	struct ncspeer_match	mt;
	char			id[32];

	snprintf(id, sizeof id, "API-ABUSE-%d", ++w->published);
	if (gwproc_asset_put(w->r->gw, id, "abuse") != 0)
		return;
	memset(&mt, 0, sizeof mt);
	mt.type = "mosObj";
	mt.side = NCSPEER_ACCEPTED;
	mt.obj_id = id;
	if (ncspeer_wait(w->r->ncs, &mt, F_WAIT_MS) != NULL)
		w->delivered++;
}

/* The status of one response on fd (0: none within timeout_ms). */
static int
api_status(int fd, int timeout_ms)
{
	struct httpc_resp	r;
	int			status;

	memset(&r, 0, sizeof r);
	if (httpc_read(fd, &r, timeout_ms) != 0)
		status = 0;
	else
		status = r.status;
	httpc_resp_clear(&r);
	return status;
}

/*
 * Write head, then fill bytes of filler, 64 KiB every 10 ms at most, until
 * the server closes; the answer is read as soon as it arrives, heartbeats
 * meanwhile. The bytes written; *status what was answered (0: nothing),
 * *linger_ms the time from the answer to the close (-1: not closed).
 */
static long
api_push(struct mos_watch *w, uint16_t port, const char *head, long fill,
    int *status, int64_t *linger_ms)
{
	static char	 chunk[65536];
	struct pollfd	 pfd;
	int64_t		 t0 = ncspeer_now_ms(), answered = 0;
	long		 sent = 0;
	ssize_t		 n;
	size_t		 len;
	int		 fd;

	*status = 0;
	*linger_ms = -1;
	memset(chunk, 'a', sizeof chunk);
	if ((fd = httpc_connect(port)) == -1)
		return -1;
	if (httpc_write(fd, head, strlen(head)) != 0)
		goto answer;
	while (sent < fill && ncspeer_now_ms() - t0 < F_DRAIN_MS) {
		pfd.fd = fd;
		pfd.events = POLLOUT | (*status == 0 ? POLLIN : 0);
		pfd.revents = 0;
		if (poll(&pfd, 1, 100) == -1 && errno != EINTR)
			break;
		if (*status == 0 && (pfd.revents & POLLIN)) {
			if ((*status = api_status(fd, HTTPC_TIMEOUT_MS)) == 0)
				break;	/* closed without an answer */
			answered = ncspeer_now_ms();
		}
		if (pfd.revents & (POLLERR | POLLHUP))
			goto closed;
		if (pfd.revents & POLLOUT) {
			len = fill - sent < (long)sizeof chunk ?
			    (size_t)(fill - sent) : sizeof chunk;
			if ((n = send(fd, chunk, len, MSG_NOSIGNAL |
			    MSG_DONTWAIT)) == -1) {
				if (errno == EAGAIN || errno == EINTR)
					continue;
				goto closed;
			}
			sent += n;
			usleep(10000);
		}
		watch_beat(w);
	}
	goto answer;
closed:
	if (*status != 0)
		*linger_ms = ncspeer_now_ms() - answered;
answer:
	if (*status == 0)
		*status = api_status(fd, HTTPC_TIMEOUT_MS);
	close(fd);
	return sent;
}

/*
 * n clients that send a request one byte every 200 ms: each must get 408
 * once request_deadline has passed. The number answered 408.
 */
static int
api_slow(struct mos_watch *w, uint16_t port, int n, int64_t *worst_ms)
{
	static const char req[] = "GET /healthz HTTP/1.1\r\nHost: mosgw\r\n"
	    "X-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\n";
	struct pollfd	 pfd;
	int64_t		 t0 = ncspeer_now_ms(), last = 0;
	size_t		 at = 0;
	int		*fds, i, left = 0, got408 = 0;

	if ((fds = calloc((size_t)n, sizeof *fds)) == NULL)
		abort();
	for (i = 0; i < n; i++)
		if ((fds[i] = httpc_connect(port)) != -1)
			left++;
	*worst_ms = 0;
	while (left > 0 && ncspeer_now_ms() - t0 < F_DRAIN_MS) {
		if (ncspeer_now_ms() - last >= 200 && at < sizeof req - 1) {
			for (i = 0; i < n; i++)
				if (fds[i] != -1)
					(void)send(fds[i], req + at, 1,
					    MSG_NOSIGNAL | MSG_DONTWAIT);
			at++;
			last = ncspeer_now_ms();
		}
		for (i = 0; i < n; i++) {
			if (fds[i] == -1)
				continue;
			pfd.fd = fds[i];
			pfd.events = POLLIN;
			pfd.revents = 0;
			if (poll(&pfd, 1, 0) != 1)
				continue;
			if (api_status(fds[i], HTTPC_TIMEOUT_MS) == 408)
				got408++;
			if (ncspeer_now_ms() - t0 > *worst_ms)
				*worst_ms = ncspeer_now_ms() - t0;
			close(fds[i]);
			fds[i] = -1;
			left--;
		}
		watch_beat(w);
		usleep(20000);
	}
	for (i = 0; i < n; i++)
		if (fds[i] != -1)
			close(fds[i]);
	free(fds);
	return got408;
}

/*
 * n connections at once, each sending one GET /healthz: count the answers
 * by status while holding every connection the server keeps open; then
 * publish and beat while they are held.
 */
static void
api_flood(struct mos_watch *w, uint16_t port, int n, int *ok, int *busy,
    int *other)
{
	static const char req[] = "GET /healthz HTTP/1.1\r\nHost: mosgw\r\n\r\n";
	struct pollfd	*pfd;
	int64_t		 t0 = ncspeer_now_ms();
	int		*fds, *state, i, rc, left = 0, st;

	*ok = *busy = *other = 0;
	if ((fds = calloc((size_t)n, sizeof *fds)) == NULL ||
	    (state = calloc((size_t)n, sizeof *state)) == NULL ||
	    (pfd = calloc((size_t)n, sizeof *pfd)) == NULL)
		abort();
	for (i = 0; i < n; i++)
		if ((fds[i] = dial_raw(port)) != -1)
			left++;
	/* state 0: connecting, 1: request sent, 2: answered */
	while (left > 0 && ncspeer_now_ms() - t0 < F_DRAIN_MS) {
		for (i = 0; i < n; i++) {
			pfd[i].fd = state[i] == 2 ? -1 : fds[i];
			pfd[i].events = state[i] == 0 ? POLLOUT : POLLIN;
			pfd[i].revents = 0;
		}
		if ((rc = poll(pfd, (nfds_t)n, 100)) == -1 && errno != EINTR)
			break;
		for (i = 0; rc > 0 && i < n; i++) {
			if (pfd[i].revents == 0 || fds[i] == -1)
				continue;
			if (state[i] == 0 && (pfd[i].revents & POLLOUT)) {
				state[i] = 1;
				if (send(fds[i], req, sizeof req - 1,
				    MSG_NOSIGNAL) == (ssize_t)sizeof req - 1)
					continue;
			}
			/* an answer, or a close: read what there is */
			if ((st = api_status(fds[i], HTTPC_TIMEOUT_MS)) == 200)
				(*ok)++;
			else if (st == 503)
				(*busy)++;
			else
				(*other)++;
			state[i] = 2;
			left--;
		}
		watch_beat(w);
	}
	*other += left;
	/* every connection the server kept stays open meanwhile */
	for (i = 0; i < 5; i++) {
		watch_beat(w);
		usleep(100000);
	}
	watch_publish(w);
	for (i = 0; i < n; i++)
		if (fds[i] != -1)
			close(fds[i]);
	free(fds);
	free(state);
	free(pfd);
}

/*
 * Row 27: the API abused. Each abuse gets its status within its limit, and
 * the configured NCS sees nothing of it: its heartbeats answered throughout,
 * an asset published after each abuse delivered, no link down.
 */
void
row27_rest(struct row *row)
{
	char			 api_extra[256], head[512];
	struct frig		*f;
	struct mos_watch	 w;
	struct rlimit		 rl;
	struct httpc_resp	 r;
	int64_t			 slow_ms, linger_hdr, linger_body;
	long			 mark, hdr_sent, body_sent, rss0 = -1, rss1 = -1;
	int			 st_hdr, st_body, nslow = row->full ? 100 : 8;
	int			 nconn = row->full ? 1000 : 300, slow408, ok, busy;
	int			 other, fds0, fds1, fd, rc;
	uint16_t		 port;

	snprintf(api_extra, sizeof api_extra, "request_deadline = %d\n"
	    "max_connections = %d\n", API_DEADLINE_S, API_MAX_CONN);
	if ((f = frig_new_api(false, NULL, NULL, NULL, "mam write " API_TOKEN
	    "\n", api_extra)) == NULL || frig_start(f, NULL) != 0 ||
	    frig_links(f, F_WAIT_MS) != 0) {
		row_fail(row, "the rig did not start");
		frig_free(f);
		return;
	}
	getrlimit(RLIMIT_NOFILE, &rl);
	if (rl.rlim_cur < (rlim_t)nconn + 64 && rl.rlim_max >=
	    (rlim_t)nconn + 64) {
		rl.rlim_cur = (rlim_t)nconn + 64;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	port = f->r->gw->api_port;
	memset(&w, 0, sizeof w);
	w.r = f->r;
	w.conn = gwrig_dial(f->r, NCSPEER_LOWER);
	ROW_CHECK(row, w.conn > 0 && heartbeat_ok(f->r, w.conn),
	    "the NCS could not dial the gateway");
	mark = (long)gwproc_log_size(f->r->gw);
	fds0 = gwproc_fd_count(f->r->gw);
	if (rss_meaningful())
		rss0 = proc_kb(f->r->gw->pid, "VmRSS");

	/* a 1 MiB header */
	hdr_sent = api_push(&w, port, "GET /healthz HTTP/1.1\r\nX-Big: ",
	    MIB, &st_hdr, &linger_hdr);
	watch_publish(&w);
	ROW_CHECK(row, st_hdr == 431, "1 MiB header: status %d, not 431 "
	    "(%ld bytes sent)", st_hdr, hdr_sent);
	/* a 100 MiB body */
	snprintf(head, sizeof head, "PUT /v1/assets/BIG HTTP/1.1\r\n"
	    "Authorization: Bearer " API_TOKEN "\r\nContent-Type: "
	    "application/json\r\nContent-Length: %d\r\n\r\n", 100 * MIB);
	body_sent = api_push(&w, port, head, 100L * MIB, &st_body,
	    &linger_body);
	watch_publish(&w);
	ROW_CHECK(row, st_body == 413, "100 MiB body: status %d, not 413",
	    st_body);
	ROW_CHECK(row, linger_body >= 0, "the gateway read the whole 100 MiB "
	    "body without closing");
	/* slow clients */
	slow408 = api_slow(&w, port, nslow, &slow_ms);
	watch_publish(&w);
	ROW_CHECK(row, slow408 == nslow, "slow clients: %d of %d got 408",
	    slow408, nslow);
	/* a thousand connections */
	api_flood(&w, port, nconn, &ok, &busy, &other);
	ROW_CHECK(row, ok <= API_MAX_CONN && ok + busy == nconn && other == 0,
	    "%d connections: %d served, %d got 503, %d neither", nconn, ok,
	    busy, other);
	/* the API serves again once they are gone */
	rc = -1;
	for (int64_t t0 = ncspeer_now_ms(); rc != 200 &&
	    ncspeer_now_ms() - t0 < F_WAIT_MS; usleep(50000)) {
		memset(&r, 0, sizeof r);
		if ((fd = httpc_connect(port)) != -1 && httpc_do(fd, "GET",
		    "/healthz", NULL, NULL, NULL, &r) == 0)
			rc = r.status;
		if (fd != -1)
			close(fd);
		httpc_resp_clear(&r);
	}
	ROW_CHECK(row, rc == 200, "the API did not serve again after the "
	    "flood");
	fds1 = fds_settle(f->r->gw, fds0 + 2);
	if (rss0 != -1)
		rss1 = proc_kb(f->r->gw->pid, "VmRSS");

	ROW_CHECK(row, w.missed == 0 && w.heartbeats > 0, "the NCS's "
	    "heartbeats: %d missed, %d answered", w.missed, w.heartbeats);
	ROW_CHECK(row, w.delivered == w.published, "published %d assets "
	    "during the abuse, %d delivered", w.published, w.delivered);
	ROW_CHECK(row, gwproc_log_count(f->r->gw, mark, "event=link.down",
	    (char *)NULL) == 0, "a MOS link went down");
	ROW_CHECK(row, fds1 <= fds0 + 2, "descriptors %d -> %d", fds0, fds1);
	row_note(row, "431 after a 1 MiB header, 413 for a 100 MiB body "
	    "(what came of it dropped, then the connection shut), 408 for %d "
	    "slow clients, %d connections: %d served and %d got 503; the "
	    "NCS's heartbeats answered throughout, %d assets delivered "
	    "meanwhile, no link down", nslow, nconn, ok, busy, w.delivered);
	row_fig(row, "written before the gateway closed: header %ld of %d "
	    "bytes, body %ld of %d (closed %.1f s after the 413, "
	    "request_deadline %d s); slow clients answered within "
	    "%.1f s (deadline %d s); heartbeats %d, slowest %lld ms; gateway "
	    "fds %d -> %d", hdr_sent, MIB, body_sent, 100 * MIB,
	    (double)linger_body / 1000, API_DEADLINE_S,
	    (double)slow_ms / 1000, API_DEADLINE_S, w.heartbeats,
	    (long long)w.worst_ms, fds0, fds1);
	if (rss0 != -1)
		row_fig(row, "RSS %ld -> %ld kB", rss0, rss1);
out:
	frig_free(f);
}

/*
 * Rows 28-29: the MOS links have no TLS (plain TCP by the protocol); the
 * HTTP API's TLS is tested by gateway_it_tls.
 */
void
row28_tls_certs(struct row *row)
{
	row->result = ROW_NA;
	row_note(row, "not applicable to the MOS links (plain TCP); the HTTP "
	    "API's TLS (bad pairs refused at start, -n and SIGHUP) is tested "
	    "by gateway_it_tls");
}

void
row29_tls_stall(struct row *row)
{
	row->result = ROW_NA;
	row_note(row, "not applicable to the MOS links (plain TCP); the HTTP "
	    "API's TLS (handshake deadline, plaintext and TLS 1.1 refused, "
	    "renegotiation refused) is tested by gateway_it_tls");
}
