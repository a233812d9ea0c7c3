/*
 * Rows 13-21: the links. An NCS that does not answer, answers wrongly,
 * refuses, goes silent, floods, or resets in the middle of a frame.
 */
#include <sys/resource.h>
#include <sys/socket.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


#include "store/store.h"
#include "faults/faults.h"

/* Short timers so that each row takes seconds. */
#define FAST_NCS	"ack_timeout = 0.3\nretries = 1\nreconnect_min = 0.1\n" \
			"reconnect_max = 0.5\n"
#define FAST_DB		"backoff_base = 0.1\nbackoff_max = 0.3\nlease = 2\n"

/* A started rig; NULL (row failed) on error. */
static struct frig *
link_rig(struct row *row, bool proxied, const char *ncs_extra)
{
	return frig_up(row, proxied, NULL, FAST_DB, ncs_extra);
}

/* mosObj frames for one objID the NCS received. */
static size_t
objs_for(struct gwrig *r, const char *obj)
{
	struct ncspeer_match	mt;

	memset(&mt, 0, sizeof mt);
	mt.type = "mosObj";
	mt.side = NCSPEER_ACCEPTED;
	mt.obj_id = obj;
	return ncspeer_count(r->ncs, &mt);
}

/* Wait for a log line with every word; true when seen. */
static bool
log_seen(struct gwrig *r, long from, int ms, const char *a, const char *b)
{
	return gwproc_log_wait(r->gw, from, ms, a, b, (char *)NULL) != -1;
}

/* Row 13: the NCS swallows every mosObj. */
void
row13_never_acks(struct row *row)
{
	struct frig		*f;
	struct ncspeer_policy	 pol;
	long			 failed;

	if ((f = link_rig(row, false, FAST_NCS "max_attempts = 3\n")) == NULL)
		return;
	memset(&pol, 0, sizeof pol);
	pol.obj = NCSPEER_OBJ_IGNORE;
	ncspeer_set_policy(f->r->ncs, &pol);
	ROW_CHECK(row, gwproc_asset_put(f->r->gw, "SILENT-1", "Never acked")
	    == 0, "mosctl asset put failed");
	failed = gwproc_wait_jobs(f->r->gw, f->r->lane, QUEUE_FAILED, 1,
	    F_DRAIN_MS);
	row_fig(row, "mosObj sent %zu; ack.timeout lines %d; link.down on lower %d",
	    objs_for(f->r, "SILENT-1"), gwproc_log_count(f->r->gw, 0,
	    "event=ack.timeout", (char *)NULL), gwproc_log_count(f->r->gw, 0,
	    "event=link.down", "port=lower", (char *)NULL));
	ROW_CHECK(row, failed == 1, "the job never became FAILED (jobs: "
	    "%ld queued, %ld running)", gwproc_job_count(f->r->gw,
	    f->r->lane, QUEUE_QUEUED), gwproc_job_count(f->r->gw, f->r->lane,
	    QUEUE_RUNNING));
	/* logged once FAILED is stored: a moment after the row shows it */
	ROW_CHECK(row, log_seen(f->r, 0, F_WAIT_MS, "event=publish.failed",
	    "acknowledgement"), "no publish.failed naming the missing "
	    "acknowledgement");
	ROW_CHECK(row, gwproc_job_count(f->r->gw, f->r->lane, -1) == 1,
	    "%ld jobs for one change", gwproc_job_count(f->r->gw, f->r->lane,
	    -1));
	row_note(row, "job FAILED after max_attempts = 3 with 'no "
	    "acknowledgement'; one job in the database");
	pol.obj = NCSPEER_OBJ_ACK;
	ncspeer_set_policy(f->r->ncs, &pol);
	ROW_CHECK(row, gwproc_asset_put(f->r->gw, "SILENT-2", "Acked") == 0,
	    "mosctl asset put failed");
	ROW_CHECK(row, gwproc_wait_idle(f->r->gw, f->r->lane, F_DRAIN_MS) == 0
	    && gwproc_job_count(f->r->gw, f->r->lane, QUEUE_DONE) == 1,
	    "delivery did not move on");
	row_note(row, "the next change was delivered");
out:
	frig_free(f);
}

/* Row 14: acks carry messageID + 1. */
void
row14_wrong_id(struct row *row)
{
	struct frig		*f;
	struct ncspeer_policy	 pol;

	if ((f = link_rig(row, false, FAST_NCS "max_attempts = 50\n")) ==
	    NULL)
		return;
	memset(&pol, 0, sizeof pol);
	pol.obj = NCSPEER_OBJ_WRONG_ID;
	ncspeer_set_policy(f->r->ncs, &pol);
	ROW_CHECK(row, gwproc_asset_put(f->r->gw, "WRONG-1", "Wrong id") == 0,
	    "mosctl asset put failed");
	ROW_CHECK(row, log_seen(f->r, 0, F_WAIT_MS, "event=msg.unpaired",
	    NULL), "no msg.unpaired warning");
	ROW_CHECK(row, log_seen(f->r, 0, F_WAIT_MS, "event=ack.timeout",
	    NULL), "no ack.timeout after the wrong ack");
	ROW_CHECK(row, gwproc_job_count(f->r->gw, f->r->lane, QUEUE_DONE) ==
	    0, "a wrong messageID counted as the ack");
	row_note(row, "wrong ack: msg.unpaired, then ack.timeout; job not "
	    "DONE");
	pol.obj = NCSPEER_OBJ_ACK;
	ncspeer_set_policy(f->r->ncs, &pol);
	ROW_CHECK(row, gwproc_wait_idle(f->r->gw, f->r->lane, F_DRAIN_MS) ==
	    0 && gwproc_job_count(f->r->gw, f->r->lane, QUEUE_DONE) == 1,
	    "not delivered once the NCS answered right");
	row_note(row, "delivered (DONE) once the NCS answered with the right "
	    "messageID");
	row_fig(row, "mosObj sent %zu (resends of one change)",
	    objs_for(f->r, "WRONG-1"));
out:
	frig_free(f);
}

/* Row 15: quirky acks, lenient and strict. */
void
row15_quirk_acks(struct row *row)
{
	struct frig		*f = NULL;
	struct ncspeer_policy	 pol;
	int			 strict, q;
	char			 extra[256], id[32];

	for (strict = 0; strict < 2; strict++) {
		snprintf(extra, sizeof extra, "%s%s", FAST_NCS
		    "max_attempts = 50\n", strict ? "mode = strict\n" : "");
		if ((f = link_rig(row, false, extra)) == NULL)
			return;
		for (q = 0; q < 2; q++) {
			memset(&pol, 0, sizeof pol);
			pol.ack_no_message_id = q == 0;
			pol.ack_empty_mos_id = q == 1;
			ncspeer_set_policy(f->r->ncs, &pol);
			snprintf(id, sizeof id, "QUIRK-%d-%d", strict, q);
			ROW_CHECK(row, gwproc_asset_put(f->r->gw, id, "q") ==
			    0, "mosctl asset put failed");
			if (!strict) {
				ROW_CHECK(row, gwproc_wait_idle(f->r->gw,
				    f->r->lane, F_DRAIN_MS) == 0,
				    "lenient: %s ack not accepted", q == 0 ?
				    "no-messageID" : "empty-mosID");
				continue;
			}
			/* strict: resent, never DONE on the quirky ack */
			ROW_CHECK(row, log_seen(f->r, 0, F_WAIT_MS,
			    "event=ack.timeout", NULL) || q == 1,
			    "strict: quirky ack not refused");
			pol.ack_no_message_id = pol.ack_empty_mos_id = false;
			ncspeer_set_policy(f->r->ncs, &pol);
			ROW_CHECK(row, gwproc_wait_idle(f->r->gw, f->r->lane,
			    F_DRAIN_MS) == 0, "strict: not delivered after "
			    "proper acks");
		}
		ROW_CHECK(row, gwproc_running(f->r->gw), "the gateway died");
		row_note(row, "%s: missing messageID %s, empty mosID %s",
		    strict ? "strict" : "lenient", strict ? "refused "
		    "(ack.timeout, resent)" : "accepted", strict ?
		    "handled, delivered after proper acks" : "accepted");
		frig_free(f);
		f = NULL;
	}
out:
	frig_free(f);
}

/* Rows of a running order in the ro table; -1. */
static int
ro_rows(struct gwproc *gw, const char *ro_id)
{
	struct store		*db;
	struct store_stmt	*st;
	int		 n = -1;

	if (store_open_file(&db, gw->db, STORE_OPEN_READONLY, NULL) ==
	    STORE_OK && store_prepare(db, "SELECT count(*) FROM ro "
	    "WHERE ro_id = ?", 0, &st) == STORE_OK) {
		store_bind_text(st, 1, ro_id, -1);
		if (store_step(st) == STORE_ROW)
			n = store_column_int(st, 0);
		store_finalize(st);
	}
	store_close(db);
	return n;
}

/* Row 16: the NCS repeats a messageID. */
void
row16_dup_inbound(struct row *row)
{
	struct frig			*f;
	struct ncspeer_match		 mt;
	char				*x;
	long				 jobs0;
	int				 c, i;

	if ((f = link_rig(row, false, NULL)) == NULL)
		return;
	ROW_CHECK(row, gwproc_asset_put(f->r->gw, "DUP-1", "Dup") == 0 &&
	    gwproc_wait_idle(f->r->gw, f->r->lane, F_WAIT_MS) == 0,
	    "setup put failed");
	jobs0 = gwproc_job_count(f->r->gw, NULL, -1);
	for (i = 0; i < 3; i++) {
		c = gwrig_dial(f->r, NCSPEER_LOWER);
		ROW_CHECK(row, c > 0, "dial failed");
		x = frame_xml(1600, "<mosReqObj><objID>DUP-1</objID>"
		    "</mosReqObj>");
		ROW_CHECK(row, ncspeer_send_xml(f->r->ncs, c, x) == 0 &&
		    (i == 2 || ncspeer_send_xml(f->r->ncs, c, x) == 0),
		    "send failed");
		free(x);
		memset(&mt, 0, sizeof mt);
		mt.conn = c;
		mt.message_id = 1600;
		mt.type = "mosObj";
		ROW_CHECK(row, ncspeer_wait_count(f->r->ncs, &mt, i == 2 ? 1 :
		    2, F_WAIT_MS) == (i == 2 ? 1u : 2u),
		    "repeated request not answered each time");
		ncspeer_close(f->r->ncs, c, false);
	}
	ROW_CHECK(row, gwproc_job_count(f->r->gw, NULL, -1) == jobs0,
	    "requests created jobs");
	row_note(row, "mosReqObj: same messageID twice on one connection, "
	    "twice more and once after reconnecting: each answered (mosObj, "
	    "same messageID); no job created");
	/* a running order resent after a lost roAck, and after a reconnect */
	for (i = 0; i < 2; i++) {
		c = gwrig_dial(f->r, NCSPEER_UPPER);
		ROW_CHECK(row, c > 0, "dial failed");
		x = frame_xml(1601, "<roCreate><roID>RO-DUP</roID><roSlug>Dup"
		    "</roSlug><story><storyID>S1</storyID></story></roCreate>");
		ROW_CHECK(row, ncspeer_send_xml(f->r->ncs, c, x) == 0 &&
		    ncspeer_send_xml(f->r->ncs, c, x) == 0, "send failed");
		free(x);
		memset(&mt, 0, sizeof mt);
		mt.conn = c;
		mt.message_id = 1601;
		mt.type = "roAck";
		ROW_CHECK(row, ncspeer_wait_count(f->r->ncs, &mt, 2, F_WAIT_MS)
		    == 2, "repeated roCreate not answered each time");
		ncspeer_close(f->r->ncs, c, false);
	}
	ROW_CHECK(row, ro_rows(f->r->gw, "RO-DUP") == 1, "running order "
	    "stored %d times", ro_rows(f->r->gw, "RO-DUP"));
	row_note(row, "roCreate sent twice with one messageID, twice more "
	    "after reconnecting: 4 roAcks, stored once");
out:
	frig_free(f);
}

struct early {
	uint16_t	port;
	int64_t		t0;
	int64_t		first_ms;	/* connect succeeded */
	int		attempts;
	bool		answered;
	bool		closed;
};

/* Dial in a tight loop until the listener answers; then a heartbeat. */
static void *
early_thread(void *arg)
{
	struct early		*e = arg;
	struct sockaddr_in	 sin;
	struct pollfd		 pfd;
	uint8_t			*d, buf[4096];
	char			*x, txt[4096];
	size_t			 len, tl = 0;
	ssize_t			 n = -1, i;
	int			 fd = -1;

	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons(e->port);
	while (ncspeer_now_ms() - e->t0 < 15000) {
		e->attempts++;
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (connect(fd, (struct sockaddr *)&sin, sizeof sin) == 0)
			break;
		close(fd);
		fd = -1;
		usleep(1000);
	}
	if (fd == -1)
		return NULL;
	e->first_ms = ncspeer_now_ms() - e->t0;
	x = frame_xml(1700, "<heartbeat><time>2026-12-01T10:00:00Z</time>"
	    "</heartbeat>");
	d = ncspeer_encode(x, MOS_ENC_UTF16BE, &len);
	free(x);
	if (d != NULL && write(fd, d, len) == (ssize_t)len) {
		pfd.fd = fd;
		pfd.events = POLLIN;
		while (poll(&pfd, 1, F_WAIT_MS) == 1 &&
		    (n = read(fd, buf, sizeof buf)) > 0) {
			for (i = 0; i < n && tl < sizeof txt - 1; i++)
				if (buf[i] != 0)
					txt[tl++] = (char)buf[i];
			txt[tl] = '\0';
			if (strstr(txt, "</mos>") != NULL) {
				e->answered = strstr(txt, "<heartbeat>") !=
				    NULL && strstr(txt, "1700") != NULL;
				break;
			}
		}
		if (n == 0)
			e->closed = true;
	}
	free(d);
	close(fd);
	return NULL;
}

/* Row 17: the NCS talks while the gateway starts, on a database to recover. */
void
row17_early(struct row *row)
{
	struct frig	*f;
	struct early	 e;
	pthread_t	 th;
	char		 id[32];
	int		 i;
	bool		 started = false;

	if ((f = link_rig(row, false, NULL)) == NULL)
		return;
	/* leave work behind: the next start has jobs to take up */
	ncspeer_down(f->r->ncs, false);
	for (i = 0; i < 30; i++) {
		snprintf(id, sizeof id, "EARLY-%d", i);
		ROW_CHECK(row, gwproc_asset_put(f->r->gw, id, "e") == 0,
		    "mosctl asset put failed");
	}
	gwproc_kill(f->r->gw);
	ROW_CHECK(row, ncspeer_up(f->r->ncs) == 0, "NCS did not come back");
	memset(&e, 0, sizeof e);
	e.port = f->r->gw->lower_port;
	e.t0 = ncspeer_now_ms();
	ROW_CHECK(row, pthread_create(&th, NULL, early_thread, &e) == 0,
	    "no thread");
	started = gwproc_start(f->r->gw) == 0;
	pthread_join(th, NULL);
	ROW_CHECK(row, started, "restart failed");
	ROW_CHECK(row, e.first_ms > 0, "never connected");
	ROW_CHECK(row, e.answered, "the first heartbeat was not answered "
	    "correctly (closed: %s)", e.closed ? "yes" : "no");
	ROW_CHECK(row, gwproc_wait_idle(f->r->gw, f->r->lane, F_DRAIN_MS) == 0,
	    "the jobs left behind were not delivered");
	row_note(row, "refused until listening (%d connect attempts), first "
	    "connection answered correctly; 30 jobs left by kill -9 "
	    "delivered", e.attempts);
	row_fig(row, "first accepted connect %lld ms after the start began",
	    (long long)e.first_ms);
out:
	frig_free(f);
}

/* Row 18: the NCS goes silent without closing anything. */
void
row18_blackhole(struct row *row)
{
	struct frig	*f;
	int64_t		 t0, detect_ms;
	long		 mark, conns0;
	char		 id[32];
	int		 i;

	if ((f = link_rig(row, true, FAST_NCS "heartbeat_interval = 1\n"
	    "max_attempts = 100\n")) == NULL)
		return;
	mark = (long)gwproc_log_size(f->r->gw);
	conns0 = (long)proxy_stat(&f->px[0], "conns");
	t0 = ncspeer_now_ms();
	ROW_CHECK(row, proxy_cmd(&f->px[0], "blackhole on") == 0 &&
	    proxy_cmd(&f->px[1], "blackhole on") == 0, "proxy refused");
	for (i = 0; i < 5; i++) {
		snprintf(id, sizeof id, "HOLE-%d", i);
		ROW_CHECK(row, gwproc_asset_put(f->r->gw, id, "h") == 0,
		    "mosctl asset put failed");
	}
	ROW_CHECK(row, log_seen(f->r, mark, 20000, "event=link.down",
	    "port=lower"), "silence never detected");
	detect_ms = ncspeer_now_ms() - t0;
	/* a few reconnects into the blackhole, then the NCS comes back */
	ROW_CHECK(row, log_seen(f->r, mark, 20000, "event=link.connecting",
	    "port=lower"), "no reconnect");
	usleep(3000000);
	ROW_CHECK(row, gwproc_job_count(f->r->gw, f->r->lane, QUEUE_DONE) == 0,
	    "a job was DONE without an ack");
	ROW_CHECK(row, proxy_cmd(&f->px[0], "blackhole off") == 0 &&
	    proxy_cmd(&f->px[1], "blackhole off") == 0 &&
	    proxy_cmd(&f->px[0], "drop") == 0 &&
	    proxy_cmd(&f->px[1], "drop") == 0, "proxy refused");
	ROW_CHECK(row, gwproc_wait_idle(f->r->gw, f->r->lane, F_DRAIN_MS) == 0
	    && gwproc_job_count(f->r->gw, f->r->lane, QUEUE_DONE) == 5,
	    "jobs not delivered after the NCS came back");
	row_note(row, "link.down on silence (heartbeat 1 s), reconnected "
	    "with backoff, 5 jobs kept pending and delivered after");
	row_fig(row, "detected after %.1f s (2.5 x heartbeat = 2.5 s); "
	    "connections through the proxy meanwhile %lld",
	    (double)detect_ms / 1000, proxy_stat(&f->px[0], "conns") -
	    conns0);
	row_note(row, "blackhole made by the chaos proxy: both connections "
	    "stay open, what mosgw sends is read and dropped, nothing comes "
	    "back, no RST or FIN reaches it (a veth between namespaces would "
	    "need addresses outside 127.0.0.0/8)");
out:
	frig_free(f);
}

/* Row 19: connection refused for a while. */
void
row19_refused(struct row *row)
{
	struct frig	*f;
	double		 cpu0, cpu1;
	long		 mark;
	int		 fds0, fds1, tries, warns, secs = row->full ? 60 : 8;

	if ((f = link_rig(row, false, "reconnect_min = 0.2\n"
	    "reconnect_max = 2\n")) == NULL)
		return;
	mark = (long)gwproc_log_size(f->r->gw);
	fds0 = gwproc_fd_count(f->r->gw);
	cpu0 = gwproc_cpu(f->r->gw);
	ncspeer_down(f->r->ncs, true);
	ROW_CHECK(row, gwproc_asset_put(f->r->gw, "REF-1", "r") == 0,
	    "mosctl asset put failed");
	usleep((useconds_t)secs * 1000000);
	cpu1 = gwproc_cpu(f->r->gw);
	fds1 = gwproc_fd_count(f->r->gw);
	tries = gwproc_log_count(f->r->gw, mark, "event=link.connecting",
	    "port=lower", (char *)NULL);
	warns = gwproc_log_count(f->r->gw, mark, "level=warn",
	    (char *)NULL);
	row_fig(row, "%d s refused: %d connect attempts on lower (fixed "
	    "0.2 s would be %d), %d warn lines, CPU %.2f s, fds %d -> %d",
	    secs, tries, secs * 5, warns, cpu1 - cpu0, fds0, fds1);
	ROW_CHECK(row, tries >= 2 && tries < secs * 5 / 2, "no backoff: %d "
	    "attempts", tries);
	ROW_CHECK(row, cpu1 - cpu0 < 0.5 * secs / 8 + 0.5, "CPU %.2f s",
	    cpu1 - cpu0);
	ROW_CHECK(row, fds1 <= fds0 + 2, "descriptors grew %d -> %d", fds0,
	    fds1);
	ROW_CHECK(row, ncspeer_up(f->r->ncs) == 0 &&
	    gwproc_wait_idle(f->r->gw, f->r->lane, F_DRAIN_MS) == 0,
	    "not delivered after the NCS came back");
	row_note(row, "backoff, bounded logs, idle CPU, stable fds; the "
	    "pending job delivered when the NCS came back");
out:
	frig_free(f);
}

/* The TCP state of a socket (TCP_ESTABLISHED, ...); -1. */
static int
tcp_state(int fd)
{
	struct tcp_info	ti;
	socklen_t	len = sizeof ti;

	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) == -1)
		return -1;
	return ti.tcpi_state;
}

/* Row 20: a connection burst, then many idle connections held. */
void
row20_conn_flood(struct row *row)
{
	struct frig	*f;
	struct rlimit	 rl = { 256, 256 }, mine;
	int		 burst = row->full ? 10000 : 2000;
	int		 hold = row->full ? 1000 : 200;
	int		*held = NULL, i, c, fd, hb = 0, nheld = 0, open_after = 0;
	int		 fds0, fds1, fds_held, syn_sent = 0;
	double		 cpu0, cpu1;
	long		 mark;
	char		 b;

	if ((f = link_rig(row, false, NULL)) == NULL)
		return;
	ROW_CHECK(row, prlimit(f->r->gw->pid, RLIMIT_NOFILE, &rl, NULL) == 0,
	    "prlimit failed");
	getrlimit(RLIMIT_NOFILE, &mine);
	if (mine.rlim_cur < (rlim_t)hold + 64 && mine.rlim_max >=
	    (rlim_t)hold + 64) {
		mine.rlim_cur = (rlim_t)hold + 64;
		setrlimit(RLIMIT_NOFILE, &mine);
	}
	c = gwrig_dial(f->r, NCSPEER_LOWER);
	ROW_CHECK(row, c > 0 && heartbeat_ok(f->r, c), "dial failed");
	mark = (long)gwproc_log_size(f->r->gw);
	fds0 = gwproc_fd_count(f->r->gw);
	cpu0 = gwproc_cpu(f->r->gw);
	for (i = 0; i < burst; i++) {
		if ((fd = dial_raw(f->r->gw->lower_port)) != -1)
			close(fd);
		if (i % 500 == 0 && heartbeat_ok(f->r, c))
			hb++;
	}
	if ((held = calloc((size_t)hold, sizeof *held)) == NULL)
		abort();
	for (i = 0; i < hold; i++)
		if ((held[i] = dial_raw(f->r->gw->upper_port)) != -1)
			nheld++;
	for (i = 0; i < 5; i++)
		if (heartbeat_ok(f->r, c))
			hb++;
	/*
	 * What the gateway holds is what counts: over its listen backlog the
	 * kernel leaves our side "connected" without the gateway ever seeing
	 * the connection, so the client's view is only a figure.
	 */
	fds_held = fds_settle(f->r->gw, fds0 + 8 + 2);
	for (i = 0; i < hold; i++) {
		if (held[i] == -1)
			continue;
		if (tcp_state(held[i]) == TCP_SYN_SENT)
			syn_sent++;
		else if (recv(held[i], &b, 1, MSG_DONTWAIT) == -1 &&
		    errno == EAGAIN)
			open_after++;
	}
	cpu1 = gwproc_cpu(f->r->gw);
	ROW_CHECK(row, fds_held <= fds0 + 8 + 2, "the gateway holds %d "
	    "descriptors with %d idle connections (%d before; limit 8 per "
	    "port)", fds_held, nheld, fds0);
	ROW_CHECK(row, gwproc_log_count(f->r->gw, mark, "event=link.down",
	    (char *)NULL) == 0, "an outbound link went down");
	ROW_CHECK(row, hb >= 5, "heartbeats stalled");
	for (i = 0; i < hold; i++)
		if (held[i] != -1)
			close(held[i]);
	fds1 = fds_settle(f->r->gw, fds0 + 2);
	ROW_CHECK(row, fds1 <= fds0 + 2, "descriptors %d -> %d", fds0, fds1);
	ROW_CHECK(row, gwproc_asset_put(f->r->gw, "FLOOD-1", "f") == 0 &&
	    gwproc_wait_idle(f->r->gw, f->r->lane, F_WAIT_MS) == 0,
	    "delivery after the flood failed");
	row_note(row, "%d connects then %d held (nofile 256): the gateway "
	    "kept at most 8, accepted and closed the rest; heartbeats "
	    "answered throughout; no link went down", burst, nheld);
	row_fig(row, "CPU %.2f s for the flood; conn.reject lines %d "
	    "(rate-limited); gateway fds %d -> %d while held -> %d after; "
	    "client side: %d open, %d connecting",
	    cpu1 - cpu0, gwproc_log_count(f->r->gw, mark, "event=conn.reject",
	    (char *)NULL), fds0, fds_held, fds1, open_after, syn_sent);
out:
	free(held);
	frig_free(f);
}

/* Row 21: resets mid-frame, inbound and on our own link. */
void
row21_rst_mid_frame(struct row *row)
{
	struct frig	*f;
	uint8_t		*d;
	char		*x, id[32];
	size_t		 len;
	long		 mark;
	int		 c, k;

	if ((f = link_rig(row, true, FAST_NCS "max_attempts = 20\n")) == NULL)
		return;
	/* inbound: the NCS resets after half a frame */
	c = gwrig_dial(f->r, NCSPEER_UPPER);
	x = frame_xml(2100, "<reqMachInfo/>");
	d = ncspeer_encode(x, MOS_ENC_UTF16BE, &len);
	free(x);
	mark = (long)gwproc_log_size(f->r->gw);
	ROW_CHECK(row, c > 0 && d != NULL && ncspeer_send_raw(f->r->ncs, c, d,
	    len / 2 + 1) == 0, "send failed");
	free(d);
	ncspeer_close(f->r->ncs, c, true);
	ROW_CHECK(row, log_seen(f->r, mark, F_WAIT_MS, "event=conn.close",
	    NULL), "no conn.close");
	c = gwrig_dial(f->r, NCSPEER_UPPER);
	ROW_CHECK(row, c > 0 && heartbeat_ok(f->r, c), "not served after");
	row_note(row, "inbound RST mid-frame: closed, nothing answered, next "
	    "connection served");
	/* outbound: the proxy cuts our mosObj after 300 bytes, RST and FIN */
	for (k = 0; k < 2; k++) {
		mark = (long)gwproc_log_size(f->r->gw);
		ROW_CHECK(row, proxy_cmd(&f->px[0], "dir up") == 0 &&
		    proxy_cmd(&f->px[0], "cut %s 300", k == 0 ? "rst" :
		    "fin") == 0, "proxy refused: %s", f->px[0].reply);
		snprintf(id, sizeof id, "CUT-%d", k);
		ROW_CHECK(row, gwproc_asset_put(f->r->gw, id, "Cut in the "
		    "middle of its mosObj") == 0, "mosctl asset put failed");
		ROW_CHECK(row, log_seen(f->r, mark, F_WAIT_MS,
		    "event=link.down", "port=lower"), "the cut was not seen");
		ROW_CHECK(row, gwproc_wait_idle(f->r->gw, f->r->lane,
		    F_DRAIN_MS) == 0 && objs_for(f->r, id) >= 1,
		    "%s: not delivered after the cut", id);
		row_note(row, "outbound %s after 300 bytes of a mosObj: link "
		    "down, reconnected, delivered", k == 0 ? "RST" : "FIN");
	}
	row_fig(row, "proxy cuts %lld; jobs DONE %ld",
	    proxy_stat(&f->px[0], "cuts"), gwproc_job_count(f->r->gw,
	    f->r->lane, QUEUE_DONE));
out:
	frig_free(f);
}
