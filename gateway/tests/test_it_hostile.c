/*
 * Integration: hostile peers against a real mosgw, every one on loopback
 * (sources bound to other addresses of 127.0.0.0/8, all of which the
 * default allow-list lets in).
 *
 * Sockets that trickle whitespace or say nothing are closed at
 * handshake_timeout, and until then a newcomer evicts the oldest of them
 * when a cap is full, so the NCS always gets in; a trusted connection is
 * never evicted, but one that only trickles whitespace after its valid
 * frame is idle; max_conn_per_addr holds one source to its share; the
 * allow-lists refuse at accept and once a frame names an NCS. 500
 * slowloris sockets from ten addresses leave the NCS connecting and its
 * heartbeats answered (the latency is printed). A flood of frames with an
 * unknown (mosID, ncsID) pair grows the database by a bounded amount, and
 * history_max_bytes keeps the history under its budget.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <sys/socket.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/store.h"
#include "gateway/tests/itutil.h"

#define WAIT_MS		5000
#define PROMPT_MS	1000	/* a heartbeat answered without starving */
#define TRICKLE		8	/* sockets on the lower port, as in the field */
#define TRICKLE_MS	250	/* one byte each this often */
#define CLOSE_MS	15000	/* generous: a timer due in 1-2 s fired */
#define LORIS_SOCKS	500
#define LORIS_ADDRS	10	/* 127.0.0.2 ... 127.0.0.11 */
#define LORIS_RUN_MS	60000	/* bound on the attacker thread */
#define LORIS_ROUNDS	5
#define FLOOD_MB	100	/* MOSGW_FLOOD_MB overrides (the 1 GB figure) */
#define FLOOD_DESC	29000	/* characters: about 58 KB a frame */
#define FLOOD_PER_CONN	16	/* frames before the gateway closes */
#define FLOOD_CONNS	20000	/* bound on connections */
#define FLOOD_MS	600000	/* bound on the flood */
#define GROWTH_MAX	(1 << 20)	/* database growth allowed */
#define BIG_DESC_LEN	24000
#define BUDGET		(1 << 20)	/* history_max_bytes = 1m */
#define CATCH_UP_MS	30000	/* history stored up to a frame */

#ifndef nitems
#define nitems(a)	(sizeof (a) / sizeof (a)[0])
#endif

/* The gateway closes stray sockets within two seconds. */
static int
setup_handshake(void **state)
{
	return itutil_setup_gateway(state, "handshake_timeout = 2\n");
}

/* A two-second idle timeout. */
static int
setup_idle(void **state)
{
	return itutil_setup_gateway(state, "idle_timeout = 2\n");
}

/* One second for the silent ones on the query port. */
static int
setup_handshake_fast(void **state)
{
	return itutil_setup_gateway(state, "handshake_timeout = 1\n");
}

/* Three connections per source address. */
static int
setup_per_addr(void **state)
{
	return itutil_setup_gateway(state, "max_conn_per_addr = 3\n"
	    "handshake_timeout = 60\n");
}

/* Three connections per port. */
static int
setup_per_port(void **state)
{
	return itutil_setup_gateway(state, "max_conn_per_port = 3\n"
	    "handshake_timeout = 60\n");
}

/* n1 (the peer) allows its host only; n2 (OTHER) allows 127.0.0.2. */
static int
setup_allow(void **state)
{
	struct gwproc_opts	o;

	memset(&o, 0, sizeof o);
	o.nncs = 2;
	o.ncs[0].extra = "allow = hosts\n";
	o.ncs[1].ncs_id = "OTHER";
	o.ncs[1].lower_port = gwproc_free_port();
	o.ncs[1].upper_port = gwproc_free_port();
	o.ncs[1].extra = "allow = 127.0.0.2\npublish = false\n";
	return itutil_setup_opts(state, MOS_ENC_UTF16BE, &o);
}

/* A one-MiB history budget. */
static int
setup_budget(void **state)
{
	struct gwproc_opts	o;

	memset(&o, 0, sizeof o);
	o.nncs = 1;
	o.database_extra = "history_max_bytes = 1m\n";
	return itutil_setup_opts(state, MOS_ENC_UTF16BE, &o);
}

/*
 * The rig's NCS dials port and gets a heartbeat answered; the time from
 * the dial to the answer in *ms. The connection number, or -1.
 */
static int
ncs_connects(struct gwrig *r, enum ncspeer_port port, int64_t *ms)
{
	const struct ncspeer_frame	*f;
	int64_t				 t0 = ncspeer_now_ms();
	int				 c;

	if ((c = gwrig_dial(r, port)) <= 0)
		return -1;
	f = gwrig_request(r, c, MOS_T_HEARTBEAT, WAIT_MS);
	*ms = ncspeer_now_ms() - t0;
	fprintf(stderr, "NCS on port %d: %s after %lld ms\n", (int)port,
	    f != NULL ? "answered" : "no answer", (long long)*ms);
	return f != NULL && f->msg != NULL &&
	    f->msg->type == MOS_T_HEARTBEAT ? c : -1;
}

/* A heartbeat on c answered; its latency in *ms. */
static bool
heartbeat_ok(struct gwrig *r, int c, int64_t *ms)
{
	const struct ncspeer_frame	*f;
	int64_t				 t0 = ncspeer_now_ms();

	f = gwrig_request(r, c, MOS_T_HEARTBEAT, WAIT_MS);
	*ms = ncspeer_now_ms() - t0;
	return f != NULL && f->msg != NULL && f->msg->type == MOS_T_HEARTBEAT;
}

/* Has the gateway closed fd (without waiting)? */
static bool
peer_closed(int fd)
{
	struct pollfd	pfd = { .fd = fd, .events = POLLIN };
	char		buf[256];
	ssize_t		n;

	if (poll(&pfd, 1, 0) != 1)
		return false;
	n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
	return n == 0 || (n == -1 && errno != EAGAIN && errno != EINTR);
}

/* reqMachInfo as ncs_id from a raw socket: is listMachInfo the answer? */
static bool
raw_mach_info(struct gwrig *r, int fd, const char *ncs_id)
{
	struct mos_msg	*m, *reply;
	bool		 ok;

	m = ncspeer_msg(r->ncs, MOS_T_REQ_MACH_INFO);
	if (ncs_id != NULL)
		m->ncs_id = ncs_id;
	reply = itutil_exchange(fd, m, WAIT_MS);
	ok = reply != NULL && reply->type == MOS_T_LIST_MACH_INFO;
	mos_msg_free(reply);
	mos_msg_free(m);
	return ok;
}

/*
 * Eight sockets trickle one space every 250 ms into the lower port (junk
 * before <mos>: no frame deadline, and every byte used to reset the idle
 * timer), which used to hold all eight slots for as long as they kept it
 * up. The NCS gets in at once (the oldest stray goes), and every stray is
 * closed at handshake_timeout (2 s) although it keeps sending.
 */
static void
test_trickle_closed(void **state)
{
	struct gwrig	*r = *state;
	int		 fd[TRICKLE], i, c;
	int64_t		 ms, end;
	long		 mark = (long)gwproc_log_size(r->gw);

	for (i = 0; i < TRICKLE; i++) {
		fd[i] = itutil_dial("127.0.0.2", r->gw->lower_port, 0);
		GWRIG_CHECK(r, fd[i] != -1);
		GWRIG_CHECK(r, send(fd[i], " ", 1, MSG_NOSIGNAL) == 1);
	}
	GWRIG_CHECK(r, gwproc_log_wait(r->gw, mark, WAIT_MS,
	    "event=conn.accept", "peer=127.0.0.2", (char *)NULL) != -1);
	c = ncs_connects(r, NCSPEER_LOWER, &ms);
	GWRIG_CHECK(r, c > 0 && ms < PROMPT_MS);

	end = ncspeer_now_ms() + 3000;		/* past the deadline */
	while (ncspeer_now_ms() < end) {
		for (i = 0; i < TRICKLE; i++)
			if (!peer_closed(fd[i]))
				send(fd[i], " ", 1, MSG_NOSIGNAL);
		usleep(TRICKLE_MS * 1000);
	}
	for (i = 0; i < TRICKLE; i++) {
		GWRIG_CHECK(r, itutil_wait_eof(fd[i], CLOSE_MS) == 0);
		close(fd[i]);
	}
	GWRIG_CHECK(r, gwproc_log_wait(r->gw, mark, WAIT_MS,
	    "event=conn.close", "reason=handshake-timeout",
	    (char *)NULL) != -1);
	GWRIG_CHECK(r, gwproc_log_count(r->gw, mark, "event=conn.close",
	    "reason=evicted", (char *)NULL) <= 1);
	GWRIG_CHECK(r, ncs_connects(r, NCSPEER_LOWER, &ms) > 0);
}

/*
 * A peer that sent a valid frame, then only whitespace (outside a frame)
 * is idle: closed at idle_timeout (2 s) although bytes keep coming, while
 * a connection that keeps sending frames stays.
 */
static void
test_trusted_trickle(void **state)
{
	struct gwrig	*r = *state;
	int64_t		 end, ms;
	int		 fd, c;
	long		 mark = (long)gwproc_log_size(r->gw);

	GWRIG_CHECK(r, (fd = itutil_dial("127.0.0.2", r->gw->upper_port,
	    0)) != -1);
	GWRIG_CHECK(r, raw_mach_info(r, fd, NULL));
	GWRIG_CHECK(r, (c = ncs_connects(r, NCSPEER_UPPER, &ms)) > 0);
	end = ncspeer_now_ms() + CLOSE_MS;
	while (ncspeer_now_ms() < end && !peer_closed(fd)) {
		send(fd, " ", 1, MSG_NOSIGNAL);
		GWRIG_CHECK(r, heartbeat_ok(r, c, &ms));
		usleep(TRICKLE_MS * 1000);
	}
	GWRIG_CHECK(r, peer_closed(fd));
	close(fd);
	GWRIG_CHECK(r, gwproc_log_wait(r->gw, mark, WAIT_MS,
	    "event=conn.close", "peer=127.0.0.2", "reason=idle-timeout",
	    (char *)NULL) != -1);
	GWRIG_CHECK(r, heartbeat_ok(r, c, &ms));
}

/*
 * Eight silent sockets on the query port used to hold it forever (no idle
 * timeout there): the NCS gets in, and they are closed at
 * handshake_timeout.
 */
static void
test_silent_query(void **state)
{
	struct gwrig	*r = *state;
	int		 fd[TRICKLE], i, c;
	int64_t		 ms;
	long		 mark = (long)gwproc_log_size(r->gw);

	for (i = 0; i < TRICKLE; i++)
		GWRIG_CHECK(r, (fd[i] = itutil_dial("127.0.0.2",
		    r->gw->query_port, 0)) != -1);
	GWRIG_CHECK(r, gwproc_log_wait(r->gw, mark, WAIT_MS,
	    "event=conn.accept", "port=query", (char *)NULL) != -1);
	c = ncs_connects(r, NCSPEER_QUERY, &ms);
	GWRIG_CHECK(r, c > 0 && ms < PROMPT_MS);
	for (i = 0; i < TRICKLE; i++) {
		GWRIG_CHECK(r, itutil_wait_eof(fd[i], CLOSE_MS) == 0);
		close(fd[i]);
	}
	GWRIG_CHECK(r, heartbeat_ok(r, c, &ms));
}

/*
 * max_conn_per_addr = 3: a fourth and fifth silent socket from one address
 * replace that address's oldest two; a fourth from an address whose three
 * are trusted is refused with the key to change; other addresses are not
 * affected.
 */
static void
test_per_addr(void **state)
{
	struct gwrig	*r = *state;
	int		 fd[5], tr[4], i, c;
	int64_t		 ms;
	long		 mark = (long)gwproc_log_size(r->gw);

	for (i = 0; i < 5; i++) {
		GWRIG_CHECK(r, (fd[i] = itutil_dial("127.0.0.3", i % 2 == 0 ?
		    r->gw->lower_port : r->gw->upper_port, 0)) != -1);
		mark = gwproc_log_wait(r->gw, mark, WAIT_MS,
		    "event=conn.accept", "peer=127.0.0.3", (char *)NULL);
		GWRIG_CHECK(r, mark != -1);
	}
	GWRIG_CHECK(r, itutil_wait_eof(fd[0], WAIT_MS) == 0);
	GWRIG_CHECK(r, itutil_wait_eof(fd[1], WAIT_MS) == 0);
	for (i = 2; i < 5; i++)
		GWRIG_CHECK(r, !peer_closed(fd[i]));

	for (i = 0; i < 3; i++) {
		GWRIG_CHECK(r, (tr[i] = itutil_dial("127.0.0.4",
		    r->gw->lower_port, 0)) != -1);
		GWRIG_CHECK(r, raw_mach_info(r, tr[i], NULL));
	}
	mark = (long)gwproc_log_size(r->gw);
	GWRIG_CHECK(r, (tr[3] = itutil_dial("127.0.0.4", r->gw->upper_port,
	    0)) != -1);
	GWRIG_CHECK(r, itutil_wait_eof(tr[3], WAIT_MS) == 0);
	GWRIG_CHECK(r, gwproc_log_wait(r->gw, mark, WAIT_MS,
	    "event=conn.reject", "reason=max_conn_per_addr",
	    "key=\"[gateway] max_conn_per_addr\"", (char *)NULL) != -1);
	for (i = 0; i < 3; i++)
		GWRIG_CHECK(r, raw_mach_info(r, tr[i], NULL));
	c = ncs_connects(r, NCSPEER_LOWER, &ms);
	GWRIG_CHECK(r, c > 0);
	for (i = 0; i < 5; i++)
		close(fd[i]);
	for (i = 0; i < 4; i++)
		close(tr[i]);
}

/*
 * max_conn_per_port = 3 with three trusted NCS connections: a newcomer is
 * refused (never one of them evicted); with one slot held by a silent
 * socket instead, the NCS's newcomer evicts that.
 */
static void
test_trusted_kept(void **state)
{
	struct gwrig	*r = *state;
	int		 c[3], i, fd;
	int64_t		 ms;
	long		 mark;

	for (i = 0; i < 3; i++)
		GWRIG_CHECK(r, (c[i] = ncs_connects(r, NCSPEER_LOWER,
		    &ms)) > 0);
	mark = (long)gwproc_log_size(r->gw);
	GWRIG_CHECK(r, (fd = itutil_dial("127.0.0.2", r->gw->lower_port,
	    0)) != -1);
	GWRIG_CHECK(r, itutil_wait_eof(fd, WAIT_MS) == 0);
	close(fd);
	GWRIG_CHECK(r, gwproc_log_wait(r->gw, mark, WAIT_MS,
	    "event=conn.reject", "reason=max_conn_per_port",
	    "key=\"[gateway] max_conn_per_port\"", (char *)NULL) != -1);
	for (i = 0; i < 3; i++)
		GWRIG_CHECK(r, heartbeat_ok(r, c[i], &ms));

	ncspeer_close(r->ncs, c[0], false);
	GWRIG_CHECK(r, gwproc_log_wait(r->gw, mark, WAIT_MS,
	    "event=conn.close", "reason=eof", (char *)NULL) != -1);
	GWRIG_CHECK(r, (fd = itutil_dial("127.0.0.2", r->gw->lower_port,
	    0)) != -1);
	GWRIG_CHECK(r, gwproc_log_wait(r->gw, mark, WAIT_MS,
	    "event=conn.accept", "peer=127.0.0.2", (char *)NULL) != -1);
	GWRIG_CHECK(r, (c[0] = ncs_connects(r, NCSPEER_LOWER, &ms)) > 0);
	GWRIG_CHECK(r, itutil_wait_eof(fd, WAIT_MS) == 0);
	close(fd);
	GWRIG_CHECK(r, gwproc_log_wait(r->gw, mark, WAIT_MS,
	    "event=conn.close", "reason=evicted", "peer=127.0.0.2",
	    (char *)NULL) != -1);
	for (i = 0; i < 3; i++)
		GWRIG_CHECK(r, heartbeat_ok(r, c[i], &ms));
}

/*
 * n1 allows its host (127.0.0.1), n2 allows 127.0.0.2. From 127.0.0.3:
 * refused at accept. From 127.0.0.2: a frame for n1 closes the connection
 * (nothing answered), one for n2 is answered. From 127.0.0.1: n1 answered,
 * n2 refused.
 */
static void
test_allow_lists(void **state)
{
	struct gwrig	*r = *state;
	int		 fd, c;
	int64_t		 ms;
	long		 mark = (long)gwproc_log_size(r->gw);

	GWRIG_CHECK(r, (fd = itutil_dial("127.0.0.3", r->gw->lower_port,
	    0)) != -1);
	GWRIG_CHECK(r, itutil_wait_eof(fd, WAIT_MS) == 0);
	close(fd);
	GWRIG_CHECK(r, gwproc_log_wait(r->gw, mark, WAIT_MS,
	    "event=conn.reject", "peer=127.0.0.3", "reason=not-allowed",
	    "key=\"allow in an [ncs.NAME] section\"", (char *)NULL) != -1);
	GWRIG_CHECK(r, gwproc_log_count(r->gw, mark, "event=conn.accept",
	    "peer=127.0.0.3", (char *)NULL) == 0);

	mark = (long)gwproc_log_size(r->gw);
	sleep(1);	/* past the one-line-a-second limit of conn.reject */
	GWRIG_CHECK(r, (fd = itutil_dial("127.0.0.2", r->gw->lower_port,
	    0)) != -1);
	GWRIG_CHECK(r, !raw_mach_info(r, fd, NULL));
	GWRIG_CHECK(r, itutil_wait_eof(fd, WAIT_MS) == 0);
	close(fd);
	GWRIG_CHECK(r, gwproc_log_wait(r->gw, mark, WAIT_MS,
	    "event=conn.reject", "reason=not-allowed", "ncs=n1",
	    "key=\"[ncs.n1] allow\"", (char *)NULL) != -1);
	GWRIG_CHECK(r, (fd = itutil_dial("127.0.0.2", r->gw->lower_port,
	    0)) != -1);
	GWRIG_CHECK(r, raw_mach_info(r, fd, "OTHER"));
	close(fd);

	GWRIG_CHECK(r, (c = ncs_connects(r, NCSPEER_UPPER, &ms)) > 0);
	GWRIG_CHECK(r, (fd = itutil_dial("127.0.0.1", r->gw->lower_port,
	    0)) != -1);
	GWRIG_CHECK(r, !raw_mach_info(r, fd, "OTHER"));
	GWRIG_CHECK(r, itutil_wait_eof(fd, WAIT_MS) == 0);
	close(fd);
	GWRIG_CHECK(r, heartbeat_ok(r, c, &ms));
}

/* The slowloris attacker: sockets kept open and trickling, reopened. */
struct loris {
	uint16_t	 port[3];	/* the gateway's, copied */
	int		 fd[LORIS_SOCKS];
	atomic_bool	 stop;
	atomic_long	 connects;
	atomic_long	 closed;
	atomic_long	 bytes;
};

/* Open socket i (non-blocking connect) from its address to its port. */
static void
loris_open(struct loris *l, int i)
{
	struct sockaddr_in	sin;
	int			fd;

	l->fd[i] = -1;
	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0)) == -1)
		return;
	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK + 2 + i % LORIS_ADDRS);
	if (bind(fd, (struct sockaddr *)&sin, sizeof sin) == -1) {
		close(fd);
		return;
	}
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons(l->port[i % nitems(l->port)]);
	if (connect(fd, (struct sockaddr *)&sin, sizeof sin) == -1 &&
	    errno != EINPROGRESS) {
		close(fd);
		return;
	}
	l->fd[i] = fd;
	atomic_fetch_add(&l->connects, 1);
}

/*
 * Every second: one space on every open socket, and the ones the gateway
 * closed opened again. Until told to stop, at most LORIS_RUN_MS.
 */
static void *
loris_run(void *arg)
{
	struct loris	*l = arg;
	int64_t		 end = ncspeer_now_ms() + LORIS_RUN_MS;
	int		 i, t;

	for (i = 0; i < LORIS_SOCKS; i++)
		loris_open(l, i);
	while (!atomic_load(&l->stop) && ncspeer_now_ms() < end) {
		for (t = 0; t < 10 && !atomic_load(&l->stop); t++)
			usleep(100000);
		for (i = 0; i < LORIS_SOCKS; i++) {
			if (l->fd[i] == -1)
				continue;
			if (!peer_closed(l->fd[i]) && send(l->fd[i], " ", 1,
			    MSG_NOSIGNAL) == 1) {
				atomic_fetch_add(&l->bytes, 1);
				continue;
			}
			close(l->fd[i]);
			l->fd[i] = -1;
			atomic_fetch_add(&l->closed, 1);
		}
		for (i = 0; i < LORIS_SOCKS; i++)
			if (l->fd[i] == -1)
				loris_open(l, i);
	}
	for (i = 0; i < LORIS_SOCKS; i++)
		if (l->fd[i] != -1)
			close(l->fd[i]);
	return NULL;
}

/*
 * 500 slowloris sockets from ten addresses on all three ports, reopened as
 * they are closed: the NCS connects (dial to first answer) and its
 * heartbeats are answered, each within a bound that proves it is not
 * starved (the figures are printed).
 */
static void
test_slowloris_500(void **state)
{
	struct gwrig	*r = *state;
	struct loris	*l;
	pthread_t	 th;
	int64_t		 ms, worst_connect = 0, worst_hb = 0;
	int		 i, k, c, lines;
	long		 mark = (long)gwproc_log_size(r->gw);

	l = calloc(1, sizeof *l);
	GWRIG_CHECK(r, l != NULL);
	l->port[0] = r->gw->lower_port;
	l->port[1] = r->gw->upper_port;
	l->port[2] = r->gw->query_port;
	GWRIG_CHECK(r, pthread_create(&th, NULL, loris_run, l) == 0);
	GWRIG_CHECK(r, gwproc_log_wait(r->gw, mark, WAIT_MS,
	    "event=conn.accept", (char *)NULL) != -1);
	sleep(2);	/* let it settle into trickling */
	for (k = 0; k < LORIS_ROUNDS; k++) {
		c = ncs_connects(r, k % 2 == 0 ? NCSPEER_LOWER : NCSPEER_UPPER,
		    &ms);
		if (ms > worst_connect)
			worst_connect = ms;
		GWRIG_CHECK(r, c > 0 && ms < PROMPT_MS);
		for (i = 0; i < 5; i++) {
			GWRIG_CHECK(r, heartbeat_ok(r, c, &ms));
			if (ms > worst_hb)
				worst_hb = ms;
			GWRIG_CHECK(r, ms < PROMPT_MS);
			usleep(100000);
		}
		ncspeer_close(r->ncs, c, false);
	}
	atomic_store(&l->stop, true);
	pthread_join(th, NULL);
	lines = gwproc_log_count(r->gw, mark, "event=conn.accept",
	    (char *)NULL) + gwproc_log_count(r->gw, mark, "event=conn.close",
	    (char *)NULL);
	fprintf(stderr, "slowloris: %d sockets from %d addresses, %ld "
	    "connects, %ld closed by the gateway, %ld bytes trickled; NCS "
	    "connect-to-answer worst %lld ms, heartbeat worst %lld ms; %d "
	    "conn.accept/close lines logged\n", LORIS_SOCKS, LORIS_ADDRS,
	    atomic_load(&l->connects), atomic_load(&l->closed),
	    atomic_load(&l->bytes), (long long)worst_connect,
	    (long long)worst_hb, lines);
	/* the log is not flooded: accept/close lines are budgeted */
	GWRIG_CHECK(r, lines * 4 < atomic_load(&l->connects));
	free(l);
	GWRIG_CHECK(r, (c = ncs_connects(r, NCSPEER_QUERY, &ms)) > 0);
}

/* Is the gateway's database on PostgreSQL? */
static bool
db_pg(struct queue *q)
{
	return store_driver(queue_db(q)) == STORE_POSTGRESQL;
}

/*
 * The logical size of the gateway's database (pages in use), bytes; on
 * PostgreSQL the database's size (times one).
 */
static int64_t
db_size(struct gwrig *r, struct queue *q)
{
	struct store_stmt	*st;
	int64_t		 v[2] = { -1, 1 };
	const char	*sql[2] = { "PRAGMA page_count", "PRAGMA page_size" };
	int		 i;

	if (db_pg(q))
		sql[0] = "SELECT pg_database_size(current_database())";
	for (i = 0; i < (db_pg(q) ? 1 : 2); i++) {
		GWRIG_CHECK(r, store_prepare(queue_db(q), sql[i], 0, &st) ==
		    STORE_OK);
		if (store_step(st) == STORE_ROW)
			v[i] = store_column_int64(st, 0);
		store_finalize(st);
	}
	return v[0] * v[1];
}

/* The first column of a one-row query on the gateway's database. */
static int64_t
db_int(struct queue *q, const char *sql)
{
	struct store_stmt	*st;
	int64_t		 v = -1;

	if (store_prepare(queue_db(q), sql, 0, &st) != STORE_OK)
		return -1;
	if (store_step(st) == STORE_ROW)
		v = store_column_int64(st, 0);
	store_finalize(st);
	return v;
}

/*
 * Wait until the rig's NCS's heartbeat, sent now, is in history: what the
 * gateway received before it is stored by then. 0, or -1.
 */
static int
history_caught_up(struct gwrig *r, struct queue *q)
{
	const struct ncspeer_frame	*f;
	char				 sql[200];
	int64_t				 end;
	int				 c;

	if ((c = gwrig_dial(r, NCSPEER_LOWER)) <= 0 ||
	    (f = gwrig_request(r, c, MOS_T_HEARTBEAT, WAIT_MS)) == NULL)
		return -1;
	snprintf(sql, sizeof sql, "SELECT count(*) FROM history WHERE "
	    "dir = 'out' AND type = 'heartbeat' AND message_id = %d AND "
	    "port = 'lower' AND ncs = 'n1' AND conn = (SELECT max(conn) FROM "
	    "history)", (int)f->message_id);
	end = ncspeer_now_ms() + CATCH_UP_MS;
	while (db_int(q, sql) < 1) {
		if (ncspeer_now_ms() >= end)
			return -1;
		usleep(20000);
	}
	ncspeer_close(r->ncs, c, false);
	return 0;
}

/*
 * 100 MB (MOSGW_FLOOD_MB) of 58 KB mosObj frames with a pair that is not
 * configured, 16 per connection (then the gateway closes it), from one
 * address: the database grows by less than 1 MB; what is stored is
 * summaries of at most 256 bytes of XML, and fewer than the frames.
 */
static void
test_unknown_pair_flood(void **state)
{
	struct gwrig	*r = *state;
	struct queue	*q;
	struct mos_msg	*m;
	struct mos_buf	 buf = { 0 };
	const char	*env = getenv("MOSGW_FLOOD_MB");
	char		*desc, err[256];
	int64_t		 target, sent = 0, size0, size1, t0, end;
	long		 frames = 0, conns = 0, rows, longest, nacks;
	int		 fd, i;

	target = (int64_t)(env != NULL ? atoi(env) : FLOOD_MB) << 20;
	GWRIG_CHECK(r, target > 0 && (q = gwproc_queue(r->gw)) != NULL);
	GWRIG_CHECK(r, history_caught_up(r, q) == 0);
	size0 = db_size(r, q);

	GWRIG_CHECK(r, (desc = malloc(FLOOD_DESC + 1)) != NULL);
	memset(desc, 'x', FLOOD_DESC);
	desc[FLOOD_DESC] = '\0';
	m = ncspeer_msg(r->ncs, MOS_T_MOS_OBJ);
	m->ncs_id = "STRANGER";
	m->u.mos_obj.obj_id = "FLOOD";
	m->u.mos_obj.obj_slug = "flood";
	m->u.mos_obj.obj_type = "VIDEO";
	m->u.mos_obj.obj_tb.v = 50;
	m->u.mos_obj.obj_tb.set = true;
	m->u.mos_obj.obj_rev = 1;
	m->u.mos_obj.has_obj_rev = true;
	m->u.mos_obj.status = "NEW";
	m->u.mos_obj.obj_air = "READY";
	m->u.mos_obj.description = desc;
	GWRIG_CHECK(r, mos_write(m, MOS_ENC_UTF16BE, &buf, err,
	    sizeof err) == 0);
	mos_msg_free(m);
	free(desc);

	t0 = ncspeer_now_ms();
	end = t0 + FLOOD_MS;
	while (sent < target && conns < FLOOD_CONNS &&
	    ncspeer_now_ms() < end) {
		GWRIG_CHECK(r, (fd = itutil_dial("127.0.0.5",
		    r->gw->lower_port, 0)) != -1);
		conns++;
		for (i = 0; i < FLOOD_PER_CONN; i++) {
			if (itutil_write(fd, buf.data, buf.len, WAIT_MS) != 0)
				break;
			sent += (int64_t)buf.len;
			frames++;
		}
		GWRIG_CHECK(r, itutil_wait_eof(fd, WAIT_MS) == 0);
		close(fd);
	}
	GWRIG_CHECK(r, sent >= target);
	GWRIG_CHECK(r, history_caught_up(r, q) == 0);
	size1 = db_size(r, q);
	rows = (long)db_int(q, "SELECT count(*) FROM history WHERE outcome "
	    "LIKE 'unknown-pair %'");
	longest = (long)db_int(q, db_pg(q) ? "SELECT max(octet_length(xml)) "
	    "FROM history WHERE outcome LIKE 'unknown-pair %'" :
	    "SELECT max(length(CAST(xml AS BLOB))) FROM "
	    "history WHERE outcome LIKE 'unknown-pair %'");
	nacks = (long)db_int(q, "SELECT count(*) FROM history WHERE "
	    "outcome = 'nack' AND ncs = ''");
	fprintf(stderr, "unknown pair: %lld MB in %ld frames of %zu bytes over "
	    "%ld connections in %lld ms; database %lld -> %lld bytes "
	    "(+%lld); %ld summaries (longest XML %ld bytes), %ld NACKs "
	    "recorded\n", (long long)(sent >> 20), frames, buf.len, conns,
	    (long long)(ncspeer_now_ms() - t0), (long long)size0,
	    (long long)size1, (long long)(size1 - size0), rows, longest,
	    nacks);
	GWRIG_CHECK(r, size0 > 0 && size1 - size0 < GROWTH_MAX);
	GWRIG_CHECK(r, rows >= 1 && rows < frames / 10);
	GWRIG_CHECK(r, longest > 0 && longest <= 256);
	GWRIG_CHECK(r, nacks <= rows);
	GWRIG_CHECK(r, gwproc_log_count(r->gw, 0, "event=conn.close",
	    "reason=untrusted-frames", (char *)NULL) >= 1);
	mos_buf_free(&buf);
	queue_close(q);
}

/*
 * history_max_bytes = 1m and about 2.5 MB of replies recorded: the oldest
 * rows go (a db.prune line with history_size), the history comes back
 * under the budget, not far under it, and the newest rows stay.
 */
static void
test_history_budget(void **state)
{
	struct gwrig			*r = *state;
	const struct ncspeer_frame	*f = NULL;
	struct queue			*q;
	struct mos_msg			*m;
	char				*desc, sql[200];
	int64_t				 bytes, end;
	int				 c, i;

	GWRIG_CHECK(r, (desc = malloc(BIG_DESC_LEN + 1)) != NULL);
	memset(desc, 'd', BIG_DESC_LEN);
	desc[BIG_DESC_LEN] = '\0';
	GWRIG_CHECK(r, gwproc_mosctl(r->gw, NULL, "asset", "put", "BIG",
	    "--slug", "Big", "--description", desc, (char *)NULL) == 0);
	free(desc);
	GWRIG_CHECK(r, (q = gwproc_queue(r->gw)) != NULL);
	GWRIG_CHECK(r, (c = gwrig_dial(r, NCSPEER_QUERY)) > 0);
	for (i = 0; i < 100; i++) {
		m = ncspeer_msg(r->ncs, MOS_T_MOS_REQ_OBJ);
		m->u.mos_req_obj.obj_id = "BIG";
		f = ncspeer_request(r->ncs, c, m, WAIT_MS);
		GWRIG_CHECK(r, f != NULL && f->msg != NULL &&
		    f->msg->type == MOS_T_MOS_OBJ);
	}
	GWRIG_CHECK(r, gwproc_log_wait(r->gw, 0, WAIT_MS, "event=db.prune",
	    (char *)NULL) != -1);
	end = ncspeer_now_ms() + 15000;
	do {
		usleep(100000);
		bytes = db_int(q, db_pg(q) ? "SELECT sum(octet_length(xml) + "
		    "octet_length(outcome) + octet_length(type) + "
		    "octet_length(ncs) + 48) FROM history" :
		    "SELECT sum(length(CAST(xml AS BLOB)) + "
		    "length(CAST(outcome AS BLOB)) + "
		    "length(CAST(type AS BLOB)) + "
		    "length(CAST(ncs AS BLOB)) + 48) FROM history");
	} while (bytes > BUDGET && ncspeer_now_ms() < end);
	fprintf(stderr, "history: %lld bytes counted, budget %d\n",
	    (long long)bytes, BUDGET);
	GWRIG_CHECK(r, bytes > BUDGET / 2 && bytes <= BUDGET);
	GWRIG_CHECK(r, db_int(q, "SELECT min(id) FROM history") > 1);
	snprintf(sql, sizeof sql, "SELECT count(*) FROM history WHERE "
	    "type = 'mosObj' AND message_id = %d", (int)f->message_id);
	GWRIG_CHECK(r, db_int(q, sql) == 1);
	queue_close(q);
}

/* The it_hostile suite. */
int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_trickle_closed,
		    setup_handshake, itutil_teardown),
		cmocka_unit_test_setup_teardown(test_trusted_trickle,
		    setup_idle, itutil_teardown),
		cmocka_unit_test_setup_teardown(test_silent_query,
		    setup_handshake_fast, itutil_teardown),
		cmocka_unit_test_setup_teardown(test_per_addr, setup_per_addr,
		    itutil_teardown),
		cmocka_unit_test_setup_teardown(test_trusted_kept,
		    setup_per_port, itutil_teardown),
		cmocka_unit_test_setup_teardown(test_allow_lists, setup_allow,
		    itutil_teardown),
		cmocka_unit_test_setup_teardown(test_slowloris_500,
		    itutil_setup, itutil_teardown),
		cmocka_unit_test_setup_teardown(test_unknown_pair_flood,
		    itutil_setup, itutil_teardown),
		cmocka_unit_test_setup_teardown(test_history_budget,
		    setup_budget, itutil_teardown),
	};

	return cmocka_run_group_tests_name("it_hostile", tests, NULL, NULL);
}
