/*
 * Integration: several mosgw instances on one PostgreSQL database, one
 * scripted NCS. Each NCS's outbound links belong to one instance at a time
 * (owner.c).
 *
 *   kill     three instances; the owner is killed with SIGKILL while a
 *            batch of changes is being published, HA_KILLS times (each
 *            time started again so that three keep competing): every
 *            object ends delivered at its newest objRev, no object's
 *            objRev ever goes back on the wire, no job fails, and the NCS
 *            never has two gateway connections on one port at once.
 *   cut      two instances, the owner reaching PostgreSQL through a TCP
 *            proxy of the test that stops forwarding without closing: the
 *            owner drops its links, the other takes them over, and the NCS
 *            never sees both at once. /v1/links and /metrics say who owns
 *            the NCS. Once the database is back both stop cleanly.
 *   notify   two instances that look for due jobs by themselves only once
 *            an hour (notify_poll) and send no heartbeats: changes PUT
 *            through the instance that does not own the NCS reach the NCS
 *            through the owner, woken by the database's notifications;
 *            again after the listeners' sessions were terminated on the
 *            server (each instance listens again).
 *   ro       one NCS connected to both instances at once sends interleaved
 *            running-order changes to one running order on the two
 *            connections: every one is acknowledged OK and the running
 *            order ends as applying them one after the other gives (each
 *            connection's changes touch stories of their own, so every
 *            order of commits gives the same); then the same roStorySwap
 *            (one messageID, a resend) reaches both instances at once,
 *            ten times: it is applied once each time, and both are
 *            answered OK.
 *   renew    one instance owning three NCSs renews them all every period
 *            (one statement); an epoch changed under it for one NCS (as a
 *            new owner would) makes it drop that one only, and take it
 *            again at a new epoch, while the others stay as they were.
 *   freeze   three instances; the owner is frozen (SIGSTOP) while a batch
 *            is published, its connections left open, HA_FREEZES times:
 *            another instance takes over and delivers, changes PUT through
 *            a live instance meanwhile are delivered too; then the frozen
 *            one goes on (SIGCONT) with its timers and sockets all due at
 *            once. The NCS receives no frame on the frozen instance's old
 *            connections after the new owner's first connection was
 *            accepted (each frame's arrival time, each connection's accept
 *            time); the old instance logs owner.drop, closes them and stays
 *            a non-owner; the answer the NCS gave it for the mosObj it had
 *            in flight (held until it was frozen) is settled by nobody but
 *            the new owner; every object ends at its newest objRev.
 *   restart  two instances on a cluster of the test's own (tools/pgtest.sh),
 *            PostgreSQL restarted while a batch is published: an owner
 *            again, every change committed before delivered at its newest
 *            objRev, no job failed, no two connections on one port.
 *
 * The takeover times measured are printed (not asserted). kill and cut need
 * a server ($MOSGW_PG_DSN, which make check provides), restart the server's
 * programs; each is skipped, saying why, without them.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <netinet/in.h>
#include <netinet/tcp.h>

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gateway/gateway.h"
#include "gateway/tests/gwproc.h"
#include "gateway/tests/httpc.h"
#include "gateway/tests/itutil.h"

#define WAIT_MS		20000
#define HA_KILLS	20		/* owner kills in one run */
#define HA_OBJS		20		/* objects changed between kills */
#define HA_TAKEOVER	"2s"
#define HA_TOKEN	"reader-token-0123456789abcdef0123456789"
#define HA_WTOKEN	"writer-token-0123456789abcdef0123456789"
#define HA_MAX		3
#define HA_FREEZES	3		/* owner freezes in one run */
#define HA_LIVE_OBJS	5		/* objects PUT through a live instance */
#define HA_OLD_MAX	8
#define HA_START_ROUNDS	4		/* starts of all at once, x2 */

struct ha {
	struct pgdb	 db;
	struct ncspeer	*ncs;
	struct gwproc	*gw[HA_MAX];
	size_t		 ngw;
	char		 names[HA_MAX][16];
	char		 gwextra[HA_MAX][128];
	bool		 quiet;		/* notify: no poll, no heartbeats */
	bool		 many;		/* renew: n2 and n3 too (no peer) */
	bool		 fast_hb;	/* freeze: heartbeats every 0.2 s */
	bool		 dflt_busy;	/* start: busy_timeout as by default */
	char		 hooks[256];	/* [webhook.rx] or "" */
	struct hole	*hole;		/* its receiver */
	uint16_t	 nowhere[2];	/* their ports: nothing listens */
	char		 dsn[HA_MAX][1100];
	char		 cluster[400];	/* a cluster of the test's own */
	bool		 own;		/* started there */
	bool		 skip;		/* none could be had */
	struct store	*s;		/* the test's own look at the table */
	struct gwdb	*g;		/* to change the catalog */
	struct proxy	*proxy;
};

/* A listening socket on a free port of 127.0.0.1; -1 on failure. */
static int
ha_listen(uint16_t *port)
{
	struct sockaddr_in	sin;
	socklen_t		len = sizeof sin;
	int			fd, one = 1;

	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
	    bind(fd, (struct sockaddr *)&sin, sizeof sin) != 0 ||
	    listen(fd, 16) != 0 ||
	    getsockname(fd, (struct sockaddr *)&sin, &len) != 0) {
		close(fd);
		return -1;
	}
	*port = ntohs(sin.sin_port);
	return fd;
}

/* A test's server: its mutex, listening socket and thread. 0 or -1. */
static int
ha_serve(pthread_mutex_t *mu, int *lfd, uint16_t *port, pthread_t *th,
    void *(*fn)(void *), void *arg)
{
	pthread_mutex_init(mu, NULL);
	if ((*lfd = ha_listen(port)) == -1)
		return -1;
	if (pthread_create(th, NULL, fn, arg) != 0) {
		close(*lfd);
		return -1;
	}
	return 0;
}

/* Set a flag that a thread of the test reads under its mutex. */
static void
ha_flag(pthread_mutex_t *mu, bool *flag, bool on)
{
	pthread_mutex_lock(mu);
	*flag = on;
	pthread_mutex_unlock(mu);
}

/* ------------------------------------------------------------------------ */
/*
 * A webhook receiver that holds every request it accepts unanswered (the
 * connection open) until told to answer: from then on it answers 200 to
 * the requests of connections it accepts, and still holds the others.
 */

#define HOLE_CONNS	32

struct hole {
	int		 lfd;
	uint16_t	 port;
	pthread_t	 thread;
	pthread_mutex_t	 mu;
	bool		 answer;	/* new connections are answered */
	bool		 stop;
	int		 fd[HOLE_CONNS];
	bool		 ans[HOLE_CONNS];	/* this one is answered */
	char		 buf[HOLE_CONNS][4096];
	size_t		 len[HOLE_CONNS];
	int		 answered;
};

/* A whole request in buf (headers, then Content-Length bytes)? */
static bool
hole_complete(const char *buf, size_t len)
{
	const char	*e, *cl;

	if ((e = memmem(buf, len, "\r\n\r\n", 4)) == NULL)
		return false;
	cl = strcasestr(buf, "content-length:");
	return (size_t)(e + 4 - buf) + (cl != NULL && cl < e ?
	    (size_t)atoi(cl + 15) : 0) <= len;
}

static void *
hole_main(void *arg)
{
	static const char	 ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 0"
	    "\r\nConnection: close\r\n\r\n";
	struct hole		*p = arg;
	struct pollfd		 pfd[HOLE_CONNS + 1];
	ssize_t			 r;
	size_t			 i, n;
	int			 fd;

	for (;;) {
		pthread_mutex_lock(&p->mu);
		if (p->stop) {
			pthread_mutex_unlock(&p->mu);
			break;
		}
		pfd[0].fd = p->lfd;
		pfd[0].events = POLLIN;
		for (i = 0, n = 1; i < HOLE_CONNS; i++, n++) {
			pfd[n].fd = p->fd[i];
			pfd[n].events = POLLIN;
		}
		pthread_mutex_unlock(&p->mu);
		if (poll(pfd, n, 50) <= 0)
			continue;
		pthread_mutex_lock(&p->mu);
		if ((pfd[0].revents & POLLIN) &&
		    (fd = accept4(p->lfd, NULL, NULL, SOCK_CLOEXEC)) != -1) {
			for (i = 0; i < HOLE_CONNS && p->fd[i] != -1; i++)
				;
			if (i == HOLE_CONNS)
				close(fd);
			else {
				p->fd[i] = fd;
				p->ans[i] = p->answer;
				p->len[i] = 0;
			}
		}
		for (i = 0; i < HOLE_CONNS; i++) {
			if (p->fd[i] == -1 || !(pfd[i + 1].revents &
			    (POLLIN | POLLHUP | POLLERR)))
				continue;
			r = recv(p->fd[i], p->buf[i] + p->len[i],
			    sizeof p->buf[i] - 1 - p->len[i], MSG_DONTWAIT);
			if (r <= 0 && !(r == -1 && errno == EAGAIN)) {
				close(p->fd[i]);
				p->fd[i] = -1;
				continue;
			}
			if (r > 0)
				p->len[i] += (size_t)r;
			p->buf[i][p->len[i]] = '\0';
			if (p->ans[i] && hole_complete(p->buf[i], p->len[i])) {
				if (send(p->fd[i], ok, sizeof ok - 1,
				    MSG_NOSIGNAL) > 0)
					p->answered++;
				close(p->fd[i]);
				p->fd[i] = -1;
			} else if (p->len[i] + 1 >= sizeof p->buf[i])
				p->len[i] = 0;	/* held: only read */
		}
		pthread_mutex_unlock(&p->mu);
	}
	return NULL;
}

static struct hole *
hole_new(void)
{
	struct hole	*p;
	size_t		 i;

	if ((p = calloc(1, sizeof *p)) == NULL)
		return NULL;
	for (i = 0; i < HOLE_CONNS; i++)
		p->fd[i] = -1;
	if (ha_serve(&p->mu, &p->lfd, &p->port, &p->thread, hole_main,
	    p) != 0) {
		free(p);
		return NULL;
	}
	return p;
}

static void
hole_free(struct hole *p)
{
	size_t	i;

	if (p == NULL)
		return;
	ha_flag(&p->mu, &p->stop, true);
	pthread_join(p->thread, NULL);
	for (i = 0; i < HOLE_CONNS; i++)
		if (p->fd[i] != -1)
			close(p->fd[i]);
	close(p->lfd);
	pthread_mutex_destroy(&p->mu);
	free(p);
}

/* ------------------------------------------------------------------------ */
/* A TCP proxy to PostgreSQL that can stop forwarding without closing. */

#define PROXY_PAIRS	32

struct proxy {
	int		 lfd;
	uint16_t	 port;
	uint16_t	 upstream;
	pthread_t	 thread;
	pthread_mutex_t	 mu;
	bool		 frozen;
	bool		 stop;
	int		 a[PROXY_PAIRS];	/* accepted */
	int		 b[PROXY_PAIRS];	/* to the server */
};

/* Copy what is readable on from to to; -1 when either side ended. */
static int
proxy_copy(int from, int to)
{
	char	buf[16384];
	ssize_t	n, w, off;

	n = recv(from, buf, sizeof buf, MSG_DONTWAIT);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n <= 0)
		return -1;
	for (off = 0; off < n; off += w) {
		if ((w = send(to, buf + off, (size_t)(n - off),
		    MSG_NOSIGNAL)) <= 0)
			return -1;
	}
	return 0;
}

/* A new pair (thread only); closed at once when there is no room. */
static void
proxy_add(struct proxy *p, int fd, int up)
{
	int	k;

	for (k = 0; k < PROXY_PAIRS && p->a[k] != -1; k++)
		;
	if (k == PROXY_PAIRS) {
		close(fd);
		close(up);
		return;
	}
	p->a[k] = fd;
	p->b[k] = up;
}

static void *
proxy_main(void *arg)
{
	struct proxy		*p = arg;
	struct pollfd		 pfd[1 + 2 * PROXY_PAIRS];
	struct sockaddr_in	 sin;
	bool			 frozen;
	int			 i, n, fd, up, idx[1 + 2 * PROXY_PAIRS];

	for (;;) {
		pthread_mutex_lock(&p->mu);
		frozen = p->frozen;
		if (p->stop) {
			pthread_mutex_unlock(&p->mu);
			break;
		}
		pthread_mutex_unlock(&p->mu);
		n = 0;
		pfd[n].fd = p->lfd;
		pfd[n].events = POLLIN;
		idx[n++] = -1;
		for (i = 0; i < PROXY_PAIRS && !frozen; i++) {
			if (p->a[i] == -1)
				continue;
			pfd[n].fd = p->a[i];
			pfd[n].events = POLLIN;
			idx[n++] = i;
			pfd[n].fd = p->b[i];
			pfd[n].events = POLLIN;
			idx[n++] = PROXY_PAIRS + i;
		}
		if (poll(pfd, (nfds_t)n, 50) <= 0)
			continue;
		for (i = 0; i < n; i++) {
			if (pfd[i].revents == 0)
				continue;
			if (idx[i] == -1) {
				if ((fd = accept(p->lfd, NULL, NULL)) == -1)
					continue;
				memset(&sin, 0, sizeof sin);
				sin.sin_family = AF_INET;
				sin.sin_port = htons(p->upstream);
				sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
				up = socket(AF_INET, SOCK_STREAM, 0);
				if (up == -1 || connect(up, (struct sockaddr *)
				    &sin, sizeof sin) != 0) {
					close(fd);
					if (up != -1)
						close(up);
					continue;
				}
				proxy_add(p, fd, up);
				continue;
			}
			fd = idx[i] % PROXY_PAIRS;
			if (p->a[fd] == -1)
				continue;
			if ((idx[i] < PROXY_PAIRS ? proxy_copy(p->a[fd],
			    p->b[fd]) : proxy_copy(p->b[fd], p->a[fd])) != 0) {
				close(p->a[fd]);
				close(p->b[fd]);
				p->a[fd] = p->b[fd] = -1;
			}
		}
	}
	return NULL;
}

static struct proxy *
proxy_new(uint16_t upstream)
{
	struct proxy	*p;
	int		 i;

	if ((p = calloc(1, sizeof *p)) == NULL)
		return NULL;
	p->upstream = upstream;
	for (i = 0; i < PROXY_PAIRS; i++)
		p->a[i] = p->b[i] = -1;
	if (ha_serve(&p->mu, &p->lfd, &p->port, &p->thread, proxy_main,
	    p) != 0) {
		free(p);
		return NULL;
	}
	return p;
}

static void
proxy_freeze(struct proxy *p, bool on)
{
	ha_flag(&p->mu, &p->frozen, on);
}

static void
proxy_free(struct proxy *p)
{
	int	i;

	if (p == NULL)
		return;
	ha_flag(&p->mu, &p->stop, true);
	pthread_join(p->thread, NULL);
	for (i = 0; i < PROXY_PAIRS; i++) {
		if (p->a[i] != -1) {
			close(p->a[i]);
			close(p->b[i]);
		}
	}
	close(p->lfd);
	pthread_mutex_destroy(&p->mu);
	free(p);
}

/* ------------------------------------------------------------------------ */

static int64_t
now_ms(void)
{
	return ncspeer_now_ms();
}

static void
sleep_ms(int ms)
{
	nanosleep(&(struct timespec){ ms / 1000, (ms % 1000) * 1000000L },
	    NULL);
}

static void
ha_dump(struct ha *h, const char *what, int line)
{
	size_t	i;

	fprintf(stderr, "==== %s:%d: failed: %s\n", __FILE__, line, what);
	for (i = 0; i < h->ngw; i++)
		if (h->gw[i] != NULL)
			gwproc_log_dump(h->gw[i], h->names[i]);
}

#define CHECK(h, cond) do {						\
	if (!(cond)) {							\
		ha_dump((h), #cond, __LINE__);				\
		fail_msg("%s:%d: %s", __FILE__, __LINE__, #cond);	\
	}								\
} while (0)

/* The owner row of n1: its instance's index (-1: none) and epoch. */
static int
ha_owner(struct ha *h, int64_t *epoch)
{
	struct store_stmt	*st;
	const char		*who;
	size_t			 i;
	int			 rc, idx = -1;

	*epoch = 0;
	if (store_prepare(h->s, "SELECT instance, epoch FROM mosgw_owner "
	    "WHERE ncs = 'n1'", 0, &st) != STORE_OK)
		return -1;	/* not made yet */
	if ((rc = store_step(st)) == STORE_ROW) {
		who = store_column_text(st, 0);
		*epoch = store_column_int64(st, 1);
		for (i = 0; i < h->ngw; i++)
			if (who != NULL && strcmp(who, h->names[i]) == 0)
				idx = (int)i;
	}
	store_finalize(st);
	return idx;
}

/* Wait until n1 has an owner with an epoch above after. */
static int
ha_wait_owner(struct ha *h, int64_t after, int64_t *epoch, int timeout_ms)
{
	int64_t	end = now_ms() + timeout_ms;
	int	idx;

	do {
		if ((idx = ha_owner(h, epoch)) >= 0 && *epoch > after)
			return idx;
		sleep_ms(10);
	} while (now_ms() < end);
	return -1;
}

/* The newest lower connection the gateways opened to the NCS, or -1. */
static int
ha_lower(struct ha *h)
{
	return ncspeer_conn_of(h->ncs, NCSPEER_LOWER, NCSPEER_ACCEPTED);
}

/* Wait for a lower connection newer than conn; its number, or -1. */
static int
ha_wait_lower(struct ha *h, int conn, int timeout_ms)
{
	int64_t	end = now_ms() + timeout_ms;
	int	c;

	do {
		if ((c = ha_lower(h)) > conn)
			return c;
		sleep_ms(5);
	} while (now_ms() < end);
	return -1;
}

/* One more gateway (not started) on the shared database. */
static struct gwproc *
ha_gw(struct ha *h, size_t i, const char *dsn)
{
	struct gwproc_opts	o;

	snprintf(h->names[i], sizeof h->names[i], "ha-%c", (char)('a' + i));
	snprintf(h->gwextra[i], sizeof h->gwextra[i], "instance = ha-%c\n"
	    "takeover = " HA_TAKEOVER "\n", (char)('a' + i));
	if (strlen(dsn) >= sizeof h->dsn[i])
		return NULL;
	memmove(h->dsn[i], dsn, strlen(dsn) + 1);
	memset(&o, 0, sizeof o);
	o.pg_dsn = h->dsn[i];
	o.gateway_extra = h->gwextra[i];
	/* several instances share the writer lock: wait for it longer */
	o.database_extra = h->quiet ? "backoff_base = 0.1\nbackoff_max = "
	    "0.5\nbusy_timeout = 5\nnotify_poll = 1h\n" : h->dflt_busy ?
	    "backoff_base = 0.1\nbackoff_max = 0.5\n" : "backoff_base = "
	    "0.1\nbackoff_max = 0.5\nbusy_timeout = 5\n";
	o.log_level = "info";
	o.sections_extra = h->hooks[0] != '\0' ? h->hooks : NULL;
	o.api_tokens = "reader read " HA_TOKEN "\nwriter write " HA_WTOKEN
	    "\n";
	o.nncs = 1;
	if (h->many) {
		o.nncs = 3;
		o.ncs[1].ncs_id = "N2";
		o.ncs[2].ncs_id = "N3";
		o.ncs[1].lower_port = o.ncs[2].lower_port = h->nowhere[0];
		o.ncs[1].upper_port = o.ncs[2].upper_port = h->nowhere[1];
		o.ncs[1].extra = o.ncs[2].extra = "reconnect_min = 1\n"
		    "reconnect_max = 5\ninitial_sync = none\n";
	}
	o.ncs[0].lower_port = ncspeer_port(h->ncs, NCSPEER_LOWER);
	o.ncs[0].upper_port = ncspeer_port(h->ncs, NCSPEER_UPPER);
	o.ncs[0].extra = h->quiet ? "heartbeat_interval = 0\nack_timeout = "
	    "2\nreconnect_min = 0.1\nreconnect_max = 0.3\nmax_attempts = "
	    "1000\ninitial_sync = none\n" : h->fast_hb ? "heartbeat_interval "
	    "= 0.2\nack_timeout = 2\nreconnect_min = 0.1\nreconnect_max = "
	    "0.3\nmax_attempts = 1000\ninitial_sync = none\n" :
	    "heartbeat_interval = 1\nack_timeout = 2\nreconnect_min = 0.1\n"
	    "reconnect_max = 0.3\nmax_attempts = 1000\ninitial_sync = none\n";
	if (h->ngw <= i)
		h->ngw = i + 1;
	return h->gw[i] = gwproc_new(&o);
}

/* The peer, the first instance on dsn, and the test's connections. */
static int
setup_on(struct ha *h, const char *dsn)
{
	struct ncspeer_opts	 po;
	struct store_conf	 c;
	struct gwdb_opts	 go;
	char			*err = NULL;

	memset(&po, 0, sizeof po);
	po.mos_id = "mosgw.test";
	po.ncs_id = "NCSPEER";
	if ((h->ncs = ncspeer_new(&po)) == NULL)
		return -1;
	memset(&c, 0, sizeof c);
	c.driver = STORE_POSTGRESQL;
	c.dsn = dsn;
	if (store_open(&h->s, &c, 0, &err) != STORE_OK) {
		fprintf(stderr, "store_open: %s\n", err);
		free(err);
		return -1;
	}
	/* the first instance makes the schema; then the test's connection */
	if (ha_gw(h, 0, dsn) == NULL || gwproc_start(h->gw[0]) != 0)
		return -1;
	memset(&go, 0, sizeof go);
	go.driver = STORE_POSTGRESQL;
	go.dsn = dsn;
	go.busy_ms = 5000;
	go.must_exist = true;
	if (gwdb_open(&h->g, &go, &err) != QUEUE_OK) {
		fprintf(stderr, "gwdb_open: %s\n", err != NULL ? err : "?");
		free(err);
		return -1;
	}
	return 0;
}

/* Without a server the test is skipped: NULL state. */
static bool
ha_no_server(void **state)
{
	if (getenv("MOSGW_PG_DSN") != NULL && *getenv("MOSGW_PG_DSN") != '\0')
		return false;
	printf("SKIP: several instances need a PostgreSQL server "
	    "(MOSGW_PG_DSN is unset)\n");
	*state = NULL;
	return true;
}

static int
setup_full(void **state, bool quiet, bool many, bool fast_hb,
    struct hole *hole)
{
	struct ha	*h;
	char		 why[512];

	if (ha_no_server(state)) {
		hole_free(hole);
		return 0;
	}
	if ((h = calloc(1, sizeof *h)) == NULL)
		return -1;
	*state = h;
	h->quiet = quiet;
	h->many = many;
	h->fast_hb = fast_hb;
	if ((h->hole = hole) != NULL)
		snprintf(h->hooks, sizeof h->hooks, "[webhook.rx]\nurl = "
		    "http://127.0.0.1:%u/\nevents = *\nsecret = s\n"
		    "timeout = 600\nmax_attempts = 5\n", hole->port);
	h->nowhere[0] = gwproc_free_port();
	h->nowhere[1] = gwproc_free_port();
	if (pgdb_create(&h->db, why, sizeof why) != 0) {
		fprintf(stderr, "PostgreSQL: %s\n", why);
		return -1;
	}
	return setup_on(h, h->db.dsn);
}

static int
setup_as(void **state, bool quiet, bool many, bool fast_hb)
{
	return setup_full(state, quiet, many, fast_hb, NULL);
}

static int
setup_with(void **state, struct hole *hole)
{
	return setup_full(state, false, false, false, hole);
}

static int
setup(void **state)
{
	return setup_as(state, false, false, false);
}

/* One instance with three NCSs. */
static int
setup_many(void **state)
{
	return setup_as(state, false, true, false);
}

/* Heartbeats every 0.2 s: something of each link's is due after a freeze. */
static int
setup_fast_hb(void **state)
{
	return setup_as(state, false, false, true);
}

/* The peer only: the test starts every instance itself. */
static int
setup_bare(void **state)
{
	struct ncspeer_opts	 po;
	struct ha		*h;

	if (ha_no_server(state))
		return 0;
	if ((h = calloc(1, sizeof *h)) == NULL)
		return -1;
	*state = h;
	h->dflt_busy = true;
	memset(&po, 0, sizeof po);
	po.mos_id = "mosgw.test";
	po.ncs_id = "NCSPEER";
	return (h->ncs = ncspeer_new(&po)) != NULL ? 0 : -1;
}

/* Two instances delivering webhook jobs to a receiver that holds them. */
static int
setup_hooks(void **state)
{
	struct hole	*p;

	if ((p = hole_new()) == NULL)
		return -1;
	/* a lease of ten minutes: only a release takes a job back sooner */
	return setup_with(state, p);
}

/* Instances that find jobs only through notifications. */
static int
setup_quiet(void **state)
{
	return setup_as(state, true, false, false);
}

/* tools/pgtest.sh CMD on the test's own cluster; its exit status. */
static int
ha_pgtest(struct ha *h, const char *cmd)
{
	char	line[1400];
	int	st;

	snprintf(line, sizeof line, "timeout 120 sh '%s/tools/pgtest.sh' %s "
	    "'%s/pg' >'%s/pgtest.out' 2>'%s/pgtest.err'",
	    getenv("MOSGW_TOP") != NULL ? getenv("MOSGW_TOP") : ".", cmd,
	    h->cluster, h->cluster, h->cluster);
	st = system(line);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* A cluster of the test's own (it restarts it), the database "postgres". */
static int
setup_cluster(void **state)
{
	struct ha	*h;
	const char	*tmp = getenv("MOSGW_TMP");
	char		 path[600], *dsn, *nl;

	if ((h = calloc(1, sizeof *h)) == NULL)
		return -1;
	*state = h;
	snprintf(h->cluster, sizeof h->cluster, "%s/mosgw-ha.XXXXXX",
	    tmp != NULL && *tmp != '\0' ? tmp : "/tmp");
	if (mkdtemp(h->cluster) == NULL || chmod(h->cluster, 0755) != 0)
		return -1;
	if (ha_pgtest(h, "start") != 0) {
		snprintf(path, sizeof path, "%s/pgtest.err", h->cluster);
		dsn = gwproc_read_file(path);
		printf("SKIP: no PostgreSQL cluster of its own: %s\n", dsn);
		free(dsn);
		h->skip = true;
		return 0;
	}
	h->own = true;
	snprintf(path, sizeof path, "%s/pg/dsn", h->cluster);
	dsn = gwproc_read_file(path);
	if ((nl = strchr(dsn, '\n')) != NULL)
		*nl = '\0';
	snprintf(h->db.dsn, sizeof h->db.dsn, "%s", dsn);
	free(dsn);
	if (h->db.dsn[0] == '\0')
		return -1;
	return setup_on(h, h->db.dsn);
}

static int
teardown(void **state)
{
	struct ha	*h = *state;
	char		 cmd[600];
	size_t		 i;

	if (h == NULL)
		return 0;
	for (i = 0; i < h->ngw; i++) {
		/* a test that failed may have left one frozen */
		if (h->gw[i] != NULL)
			gwproc_signal(h->gw[i], SIGCONT);
		gwproc_free(h->gw[i]);
	}
	proxy_free(h->proxy);
	ncspeer_free(h->ncs);
	/* after the gateways: a held connection ends with its gateway */
	hole_free(h->hole);
	gwdb_close(h->g);
	store_close(h->s);
	pgdb_drop(&h->db);
	if (h->own)
		ha_pgtest(h, "stop");
	if (h->cluster[0] != '\0' && getenv("MOSGW_KEEP") == NULL) {
		snprintf(cmd, sizeof cmd, "rm -rf '%s'", h->cluster);
		if (system(cmd) != 0)
			fprintf(stderr, "cannot remove %s\n", h->cluster);
	}
	free(h);
	return 0;
}

/* Change objects HA0..HA(n-1) (new objRevs) in one transaction. */
static int
ha_put(struct ha *h, int round)
{
	struct catalog_asset	 a;
	char			 id[32], slug[64], *err = NULL;
	int			 i, rc;

	memset(&a, 0, sizeof a);
	a.type = xstrdup("VIDEO");
	a.tb = xstrdup("50");
	a.air = xstrdup("READY");
	a.created_by = xstrdup("test");
	a.changed_by = xstrdup("test");
	rc = queue_tx_begin(h->g->q);
	for (i = 0; i < HA_OBJS && rc == QUEUE_OK; i++) {
		snprintf(id, sizeof id, "HA%02d", i);
		snprintf(slug, sizeof slug, "round %d", round);
		free(a.obj_id);
		free(a.slug);
		a.obj_id = xstrdup(id);
		a.slug = xstrdup(slug);
		rc = catalog_put(h->g, &a, NULL, NULL, &err);
	}
	if (rc == QUEUE_OK)
		rc = queue_tx_commit(h->g->q);
	else {
		fprintf(stderr, "catalog_put: %s\n", err != NULL ? err : "?");
		queue_tx_rollback(h->g->q);
	}
	free(err);
	catalog_asset_clear(&a);
	return rc;
}

/* mosObj frames received so far. */
static size_t
ha_objs(struct ha *h)
{
	struct ncspeer_match	m;

	memset(&m, 0, sizeof m);
	m.type = "mosObj";
	m.side = NCSPEER_ACCEPTED;
	return ncspeer_count(h->ncs, &m);
}

/*
 * The NCS answers each mosObj 15 ms late (a batch takes a while on the
 * wire); m matches the mosObj it receives.
 */
static void
ha_slow_acks(struct ha *h, struct ncspeer_match *m)
{
	struct ncspeer_policy	pol;

	memset(m, 0, sizeof *m);
	m->type = "mosObj";
	m->side = NCSPEER_ACCEPTED;
	memset(&pol, 0, sizeof pol);
	pol.ack_delay_ms = 15;
	ncspeer_set_policy(h->ncs, &pol);
}

static int
cmp_i64(const void *a, const void *b)
{
	int64_t	x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Every object PREFIX00..PREFIX(n-1) (at most HA_OBJS): its last mosObj has
 * the catalog's objRev, none went back.
 */
static void
ha_check_revs_of(struct ha *h, const char *prefix, int n)
{
	const struct ncspeer_frame	*f;
	struct catalog_asset		 a;
	uint32_t			 last[HA_OBJS] = { 0 };
	size_t				 i, nf = ncspeer_nframes(h->ncs);
	size_t				 plen = strlen(prefix);
	const char			*oid;
	char				 id[32];
	int				 k, back = 0;

	for (i = 0; i < nf; i++) {
		f = ncspeer_frame_at(h->ncs, i);
		if (f->msg == NULL || strcmp(f->type_name, "mosObj") != 0 ||
		    (oid = f->msg->u.mos_obj.obj_id) == NULL ||
		    strncmp(oid, prefix, plen) != 0 ||
		    sscanf(oid + plen, "%d", &k) != 1 || k < 0 || k >= n)
			continue;
		if (f->msg->u.mos_obj.obj_rev < last[k])
			back++;
		last[k] = f->msg->u.mos_obj.obj_rev;
	}
	CHECK(h, back == 0);
	for (k = 0; k < n; k++) {
		snprintf(id, sizeof id, "%s%02d", prefix, k);
		memset(&a, 0, sizeof a);
		CHECK(h, catalog_get(h->g, id, &a) == QUEUE_OK);
		if ((uint32_t)a.rev != last[k])
			fprintf(stderr, "%s: catalog objRev %d, last sent %u\n",
			    id, a.rev, last[k]);
		CHECK(h, (uint32_t)a.rev == last[k]);
		catalog_asset_clear(&a);
	}
}

static void
ha_check_revs(struct ha *h)
{
	ha_check_revs_of(h, "HA", HA_OBJS);
}

/*
 * Instances started at the same moment, each by a thread of its own that
 * stays until it has stopped its instance (the instance is its child:
 * gwproc kills it when the thread that started it ends).
 */
struct ha_starters {
	struct ha		*h;
	pthread_barrier_t	 b;
	pthread_mutex_t		 mu;
	pthread_cond_t		 cv;
	pthread_t		 t[HA_MAX];
	int			 rc[HA_MAX];	/* start, then stop */
	size_t			 started;
	bool			 stop;
};

struct ha_starter {
	struct ha_starters	*all;
	size_t			 i;
};

static void *
ha_starter_main(void *arg)
{
	struct ha_starter	*me = arg;
	struct ha_starters	*a = me->all;
	size_t			 i = me->i;
	int			 rc;

	pthread_barrier_wait(&a->b);
	rc = gwproc_start(a->h->gw[i]);
	pthread_mutex_lock(&a->mu);
	a->rc[i] = rc;
	a->started++;
	pthread_cond_broadcast(&a->cv);
	while (!a->stop)
		pthread_cond_wait(&a->cv, &a->mu);
	pthread_mutex_unlock(&a->mu);
	rc = rc == 0 ? gwproc_stop(a->h->gw[i]) : -1;
	pthread_mutex_lock(&a->mu);
	a->rc[i] = rc;
	pthread_mutex_unlock(&a->mu);
	free(me);
	return NULL;
}

/* Start every instance at the same moment: how many answer /readyz 200. */
static size_t
ha_start_all(struct ha *h, struct ha_starters *a)
{
	struct ha_starter	*me;
	struct httpc_resp	 resp;
	size_t			 i, ready = 0;

	memset(a, 0, sizeof *a);
	a->h = h;
	pthread_mutex_init(&a->mu, NULL);
	pthread_cond_init(&a->cv, NULL);
	if (pthread_barrier_init(&a->b, NULL, (unsigned)h->ngw) != 0)
		fail_msg("pthread_barrier_init");
	for (i = 0; i < h->ngw; i++) {
		me = calloc(1, sizeof *me);
		if (me == NULL)
			fail_msg("calloc");
		me->all = a;
		me->i = i;
		if (pthread_create(&a->t[i], NULL, ha_starter_main, me) != 0)
			fail_msg("pthread_create");
	}
	/* each start is bounded (gwproc) */
	pthread_mutex_lock(&a->mu);
	while (a->started < h->ngw)
		pthread_cond_wait(&a->cv, &a->mu);
	pthread_mutex_unlock(&a->mu);
	for (i = 0; i < h->ngw; i++) {
		memset(&resp, 0, sizeof resp);
		if (a->rc[i] == 0 && httpc_once(h->gw[i]->api_port, "GET",
		    "/readyz", NULL, NULL, NULL, &resp) == 0 &&
		    resp.status == 200)
			ready++;
		else
			fprintf(stderr, "%s: start %s, /readyz %d %s\n",
			    h->names[i], a->rc[i] == 0 ? "ok" : "failed",
			    resp.status, resp.body != NULL ? resp.body : "");
		httpc_resp_clear(&resp);
	}
	return ready;
}

/* Stop what ha_start_all started: how many stopped cleanly. */
static size_t
ha_stop_all(struct ha *h, struct ha_starters *a, int *waited)
{
	size_t	i, ok = 0;

	for (i = 0; i < h->ngw; i++)
		*waited += gwproc_log_count(h->gw[i], 0, "event=db.wait",
		    (char *)NULL) > 0;
	pthread_mutex_lock(&a->mu);
	a->stop = true;
	pthread_cond_broadcast(&a->cv);
	pthread_mutex_unlock(&a->mu);
	for (i = 0; i < h->ngw; i++) {
		pthread_join(a->t[i], NULL);
		ok += a->rc[i] == 0;
	}
	pthread_barrier_destroy(&a->b);
	pthread_mutex_destroy(&a->mu);
	pthread_cond_destroy(&a->cv);
	return ok;
}

/*
 * Three instances started at the same moment, with the default busy
 * timeout, on a fresh database and then on the one they made: all three
 * come up, a few times over.
 */
static void
test_start_together(void **state)
{
	struct ha		*h = *state;
	struct ha_starters	 a;
	char			 why[512];
	size_t			 i, ready;
	int			 round, waited = 0;

	if (h == NULL) {
		skip();
		return;
	}
	for (round = 0; round < HA_START_ROUNDS; round++) {
		for (i = 0; i < h->ngw; i++) {
			gwproc_free(h->gw[i]);
			h->gw[i] = NULL;
		}
		pgdb_drop(&h->db);
		CHECK(h, pgdb_create(&h->db, why, sizeof why) == 0);
		for (i = 0; i < HA_MAX; i++)
			CHECK(h, ha_gw(h, i, h->db.dsn) != NULL);
		/* a fresh database: each migrates it, or waits for who does */
		ready = ha_start_all(h, &a);
		CHECK(h, ha_stop_all(h, &a, &waited) == HA_MAX);
		CHECK(h, ready == HA_MAX);
		/* the database made: each writes its start-up rows */
		ready = ha_start_all(h, &a);
		CHECK(h, ha_stop_all(h, &a, &waited) == HA_MAX);
		CHECK(h, ready == HA_MAX);
	}
	printf("ha: %d starts of %d instances at the same moment (a fresh "
	    "database, then the same again), all ready; %d of %d instances "
	    "logged a wait for another's start-up\n", 2 * HA_START_ROUNDS,
	    HA_MAX, waited, 2 * HA_START_ROUNDS * HA_MAX);
}

/*
 * The webhook job that instance name's workers hold: its id (0: none),
 * worker and lease generation.
 */
static int64_t
ha_hook_held(struct ha *h, const char *name, char *worker, size_t len,
    int64_t *gen)
{
	struct store_stmt	*st;
	char			 like[64];
	int64_t			 id = 0;

	snprintf(like, sizeof like, GW_HOOK_WORKER_PREFIX "%s/%%", name);
	if (store_prepare(h->s, "SELECT id, worker, lease_gen FROM jobs WHERE "
	    "state = 1 AND kind = 'webhook:rx' AND worker LIKE ?1 ORDER BY id "
	    "LIMIT 1", 0, &st) != STORE_OK)
		return 0;
	store_bind_text(st, 1, like, -1);
	if (store_step(st) == STORE_ROW) {
		id = store_column_int64(st, 0);
		snprintf(worker, len, "%s", store_column_text(st, 1) != NULL ?
		    store_column_text(st, 1) : "");
		*gen = store_column_int64(st, 2);
	}
	store_finalize(st);
	return id;
}

/* A job's state, worker and lease generation; -1 when not found. */
static int
ha_job(struct ha *h, int64_t id, char *worker, size_t len, int64_t *gen)
{
	struct store_stmt	*st;
	int			 state = -1;

	if (store_prepare(h->s, "SELECT state, coalesce(worker, ''), lease_gen "
	    "FROM jobs WHERE id = ?1", 0, &st) != STORE_OK)
		return -1;
	store_bind_int64(st, 1, id);
	if (store_step(st) == STORE_ROW) {
		state = store_column_int(st, 0);
		snprintf(worker, len, "%s", store_column_text(st, 1));
		*gen = store_column_int64(st, 2);
	}
	store_finalize(st);
	return state;
}

static int	ha_api_put(struct ha *, size_t, const char *);

/*
 * Two instances each hold a webhook job (the receiver holds the POST, the
 * lease is ten minutes); one is killed and started again with the same
 * name: its previous life's job is back in the queue at once and
 * delivered by the new life, while the other instance's stays with it.
 */
static void
test_restart_releases(void **state)
{
	struct ha	*h = *state;
	char		 wa[160], wb[160], w[160], obj[16];
	int64_t		 ja = 0, jb = 0, ga, gb, g, end, t0, took;
	int		 i, st;

	if (h == NULL) {
		skip();
		return;
	}
	CHECK(h, ha_gw(h, 1, h->db.dsn) != NULL && gwproc_start(h->gw[1]) ==
	    0);
	/* events, each a webhook job (events = *) */
	for (i = 0; i < 6; i++) {
		snprintf(obj, sizeof obj, "HK%d", i);
		CHECK(h, ha_api_put(h, (size_t)i % 2, obj) == 0);
	}
	end = now_ms() + WAIT_MS;
	do {
		if (ja == 0)
			ja = ha_hook_held(h, "ha-a", wa, sizeof wa, &ga);
		if (jb == 0)
			jb = ha_hook_held(h, "ha-b", wb, sizeof wb, &gb);
		if (ja == 0 || jb == 0)
			sleep_ms(20);
	} while ((ja == 0 || jb == 0) && now_ms() < end);
	CHECK(h, ja > 0 && jb > 0);
	gwproc_kill(h->gw[0]);
	/* from now on the receiver answers new connections */
	ha_flag(&h->hole->mu, &h->hole->answer, true);
	t0 = now_ms();
	CHECK(h, gwproc_start(h->gw[0]) == 0);
	/* the dead life's job delivered, long before its lease would end */
	end = now_ms() + WAIT_MS;
	while ((st = ha_job(h, ja, w, sizeof w, &g)) != QUEUE_DONE &&
	    now_ms() < end)
		sleep_ms(20);
	took = now_ms() - t0;
	CHECK(h, st == QUEUE_DONE);
	CHECK(h, gwproc_log_count(h->gw[0], 0, "event=job.orphans",
	    "instance=ha-a", (char *)NULL) == 1);
	/* the live instance's job is still its own, at the same claim */
	CHECK(h, ha_job(h, jb, w, sizeof w, &g) == QUEUE_RUNNING);
	CHECK(h, strcmp(w, wb) == 0 && g == gb);
	CHECK(h, ha_hook_held(h, "ha-b", w, sizeof w, &g) == jb);
	printf("ha: an instance killed holding a webhook job (lease 605 s) "
	    "and started again: the job delivered %lld ms after the restart "
	    "began; the other instance's held job untouched\n",
	    (long long)took);
}

/* Kill the owner mid-publish, again and again. */
static void
test_kill_owner(void **state)
{
	struct ha		*h = *state;
	struct ncspeer_stats	 st;
	struct ncspeer_match	 m;
	int64_t			 epoch = 0, ep, t_kill, took[HA_KILLS];
	size_t			 i, before;
	int			 owner, next, conn, round;

	if (h == NULL) {
		skip();
		return;
	}
	ha_slow_acks(h, &m);
	for (i = 1; i < HA_MAX; i++)
		CHECK(h, ha_gw(h, i, h->db.dsn) != NULL &&
		    gwproc_start(h->gw[i]) == 0);
	CHECK(h, (owner = ha_wait_owner(h, 0, &epoch, WAIT_MS)) >= 0);
	CHECK(h, (conn = ha_wait_lower(h, 0, WAIT_MS)) > 0);
	for (round = 0; round < HA_KILLS; round++) {
		before = ha_objs(h);
		CHECK(h, ha_put(h, round) == QUEUE_OK);
		/* mid-publish: some of this batch are out, most are not */
		CHECK(h, ncspeer_wait_count(h->ncs, &m, before + 3, WAIT_MS) >=
		    before + 3);
		t_kill = now_ms();
		gwproc_kill(h->gw[owner]);
		CHECK(h, (next = ha_wait_owner(h, epoch, &ep, WAIT_MS)) >= 0);
		CHECK(h, next != owner);
		CHECK(h, (conn = ha_wait_lower(h, conn, WAIT_MS)) > 0);
		took[round] = now_ms() - t_kill;
		epoch = ep;
		CHECK(h, gwproc_start(h->gw[owner]) == 0);
		owner = next;
	}
	CHECK(h, gwproc_wait_idle(h->gw[owner], "ncs:n1", 60000) == 0);
	CHECK(h, gwproc_job_count(h->gw[owner], "ncs:n1", QUEUE_FAILED) == 0);
	ha_check_revs(h);
	ncspeer_stats(h->ncs, &st);
	CHECK(h, st.overlaps == 0);
	qsort(took, HA_KILLS, sizeof *took, cmp_i64);
	printf("ha: %d kills of the owner mid-publish, takeover " HA_TAKEOVER
	    ": kill to the new owner's lower link p50 %lld ms, max %lld ms; "
	    "%llu gateway connections, none overlapping\n", HA_KILLS,
	    (long long)took[HA_KILLS / 2], (long long)took[HA_KILLS - 1],
	    (unsigned long long)st.accepted);
}

/* The owner cut off from the database: it lets go, the other takes over. */
static void
test_cut_off(void **state)
{
	struct ha		*h = *state;
	struct ncspeer_stats	 st;
	struct httpc_resp	 resp;
	char			 dsn[1200], *q;
	int64_t			 epoch = 0, ep, t_cut, t_drop, t_take;
	uint16_t		 pgport;
	int			 owner, conn, next, conn2;
	const char		*p;

	if (h == NULL) {
		skip();
		return;
	}
	/* ha-a (started by setup) owns n1 */
	CHECK(h, (owner = ha_wait_owner(h, 0, &epoch, WAIT_MS)) == 0);
	CHECK(h, (conn = ha_wait_lower(h, 0, WAIT_MS)) > 0);
	gwproc_kill(h->gw[0]);
	/* ha-a again, through the proxy */
	/* pgdb's dsn is key='value' pairs: a later port overrides */
	p = strstr(h->db.dsn, "port='");
	CHECK(h, p != NULL && (pgport = (uint16_t)atoi(p + 6)) > 0);
	CHECK(h, strstr(h->db.dsn, "host='127.0.0.1'") != NULL);
	CHECK(h, (h->proxy = proxy_new(pgport)) != NULL);
	snprintf(dsn, sizeof dsn, "%s port=%u", h->db.dsn, h->proxy->port);
	gwproc_free(h->gw[0]);
	CHECK(h, ha_gw(h, 0, dsn) != NULL && gwproc_start(h->gw[0]) == 0);
	CHECK(h, (owner = ha_wait_owner(h, epoch, &epoch, WAIT_MS)) == 0);
	CHECK(h, (conn = ha_wait_lower(h, conn, WAIT_MS)) > 0);
	CHECK(h, ha_gw(h, 1, h->db.dsn) != NULL && gwproc_start(h->gw[1]) ==
	    0);
	/* both say ha-a owns n1 */
	CHECK(h, gwproc_log_wait(h->gw[1], 0, WAIT_MS, "event=listen",
	    (char *)NULL) >= 0);
	memset(&resp, 0, sizeof resp);
	CHECK(h, httpc_once(h->gw[0]->api_port, "GET", "/v1/links", HA_TOKEN,
	    NULL, NULL, &resp) == 0 && resp.status == 200);
	CHECK(h, strstr(resp.body, "\"instance\": \"ha-a\"") != NULL ||
	    strstr(resp.body, "\"instance\":\"ha-a\"") != NULL);
	CHECK(h, strstr(resp.body, "\"ours\": true") != NULL ||
	    strstr(resp.body, "\"ours\":true") != NULL);
	httpc_resp_clear(&resp);
	CHECK(h, httpc_once(h->gw[0]->api_port, "GET", "/metrics", HA_TOKEN,
	    NULL, NULL, &resp) == 0 && resp.status == 200);
	CHECK(h, strstr(resp.body, "mosgw_ncs_owned{ncs=\"n1\",instance="
	    "\"ha-a\"} 1") != NULL);
	httpc_resp_clear(&resp);

	t_cut = now_ms();
	proxy_freeze(h->proxy, true);
	CHECK(h, ncspeer_wait_closed(h->ncs, conn, WAIT_MS) == 0);
	t_drop = now_ms();
	CHECK(h, (next = ha_wait_owner(h, epoch, &ep, WAIT_MS)) == 1);
	CHECK(h, (conn2 = ha_wait_lower(h, conn, WAIT_MS)) > conn);
	t_take = now_ms();
	CHECK(h, gwproc_log_count(h->gw[0], 0, "event=owner.drop",
	    (char *)NULL) >= 1);
	ncspeer_stats(h->ncs, &st);
	CHECK(h, st.overlaps == 0);

	/* ha-b says it owns n1 now, in /v1/links and /metrics */
	memset(&resp, 0, sizeof resp);
	CHECK(h, httpc_once(h->gw[1]->api_port, "GET", "/metrics", HA_TOKEN,
	    NULL, NULL, &resp) == 0 && resp.status == 200);
	CHECK(h, strstr(resp.body, "mosgw_ncs_owned{ncs=\"n1\",instance="
	    "\"ha-b\"} 1") != NULL);
	httpc_resp_clear(&resp);
	CHECK(h, httpc_once(h->gw[1]->api_port, "GET", "/v1/links", HA_TOKEN,
	    NULL, NULL, &resp) == 0 && resp.status == 200);
	q = strstr(resp.body, "\"owner\"");
	CHECK(h, q != NULL && strstr(q, "ha-b") != NULL);
	httpc_resp_clear(&resp);
	/* a change made now reaches the NCS through the new owner */
	CHECK(h, ha_put(h, 100) == QUEUE_OK);
	CHECK(h, gwproc_wait_idle(h->gw[1], "ncs:n1", WAIT_MS) == 0);
	ha_check_revs(h);
	printf("ha: owner cut off from PostgreSQL (takeover " HA_TAKEOVER "): "
	    "links dropped after %lld ms, the other instance's lower link up "
	    "after %lld ms\n", (long long)(t_drop - t_cut),
	    (long long)(t_take - t_cut));
	/* the database back: both stop cleanly (sessions and threads end) */
	proxy_freeze(h->proxy, false);
	CHECK(h, gwproc_stop(h->gw[1]) == 0);
	CHECK(h, gwproc_stop(h->gw[0]) == 0);
}

/* PUT objID with that slug through instance i (an HTTP 202). */
static int
ha_api_put_slug(struct ha *h, size_t i, const char *obj_id, const char *slug)
{
	struct httpc_resp	 resp;
	char			 path[96], body[160];
	int			 st;

	snprintf(path, sizeof path, "/v1/assets/%s", obj_id);
	memset(&resp, 0, sizeof resp);
	snprintf(body, sizeof body, "{\"objSlug\":\"%s\",\"objTB\":50}",
	    slug);
	if (httpc_once(h->gw[i]->api_port, "PUT", path, HA_WTOKEN, NULL,
	    body, &resp) != 0)
		return -1;
	st = resp.status;
	if (st != 202)
		fprintf(stderr, "PUT %s: %d %s\n", path, st, resp.body != NULL ?
		    resp.body : "");
	httpc_resp_clear(&resp);
	return st == 202 ? 0 : -1;
}

static int
ha_api_put(struct ha *h, size_t i, const char *obj_id)
{
	return ha_api_put_slug(h, i, obj_id, "woken");
}

/* Sessions of the database whose last statement was a LISTEN. */
static int
ha_listeners(struct ha *h, bool terminate)
{
	struct store_stmt	*st;
	int			 n = 0;

	if (store_prepare(h->s, terminate ? "SELECT pg_terminate_backend(pid) "
	    "FROM pg_stat_activity WHERE datname = current_database() AND "
	    "query LIKE 'LISTEN%' AND pid <> pg_backend_pid()" : "SELECT pid "
	    "FROM pg_stat_activity WHERE datname = current_database() AND "
	    "query LIKE 'LISTEN%' AND pid <> pg_backend_pid()", 0, &st) !=
	    STORE_OK)
		return -1;
	while (store_step(st) == STORE_ROW)
		n++;
	store_finalize(st);
	return n;
}

/*
 * Changes through the instance that does not own n1, ten times, each after
 * the owner's last claim found nothing: with no poll within the hour and no
 * heartbeats, only a notification makes the owner claim them.
 */
static void
test_notify(void **state)
{
	struct ha		*h = *state;
	struct ncspeer_match	 m;
	struct ncspeer_stats	 st;
	int64_t			 epoch = 0, t0, took, worst = 0;
	char			 id[32];
	size_t			 other;
	int			 owner, conn, round, n, listeners;

	if (h == NULL) {
		skip();
		return;
	}
	CHECK(h, ha_gw(h, 1, h->db.dsn) != NULL && gwproc_start(h->gw[1]) ==
	    0);
	CHECK(h, (owner = ha_wait_owner(h, 0, &epoch, WAIT_MS)) >= 0);
	CHECK(h, (conn = ha_wait_lower(h, 0, WAIT_MS)) > 0);
	other = owner == 0 ? 1 : 0;
	/* both listen */
	t0 = now_ms();
	while ((listeners = ha_listeners(h, false)) < 2 && now_ms() - t0 <
	    WAIT_MS)
		sleep_ms(20);
	CHECK(h, listeners == 2);
	memset(&m, 0, sizeof m);
	m.type = "mosObj";
	m.side = NCSPEER_ACCEPTED;
	for (round = 0; round < 10; round++) {
		if (round == 5) {
			/* the listeners' sessions end; they listen again */
			CHECK(h, ha_listeners(h, true) == 2);
			t0 = now_ms();
			do
				sleep_ms(20);
			while ((listeners = ha_listeners(h, false)) < 2 &&
			    now_ms() - t0 < WAIT_MS);
			CHECK(h, listeners == 2);
		}
		/* the owner's claims after the last delivery are done */
		sleep_ms(300);
		snprintf(id, sizeof id, "WOKEN%d", round);
		m.obj_id = id;
		t0 = now_ms();
		CHECK(h, ha_api_put(h, other, id) == 0);
		n = (int)ncspeer_wait_count(h->ncs, &m, 1, WAIT_MS);
		took = now_ms() - t0;
		if (n < 1)
			fprintf(stderr, "%s not delivered within %d ms\n", id,
			    WAIT_MS);
		CHECK(h, n == 1);
		if (took > worst)
			worst = took;
	}
	/* one owner all along, on one connection */
	CHECK(h, ha_owner(h, &epoch) == owner);
	CHECK(h, ha_lower(h) == conn);
	CHECK(h, gwproc_log_count(h->gw[owner], 0, "event=owner.drop",
	    (char *)NULL) == 0);
	ncspeer_stats(h->ncs, &st);
	CHECK(h, st.overlaps == 0);
	printf("ha: changes PUT through the instance that does not own the "
	    "NCS, found through notifications only: PUT to mosObj at most "
	    "%lld ms over 10 (5 after the listeners were terminated)\n",
	    (long long)worst);
}

/* ------------------------------------------------------------------------ */
/* Running-order changes through two instances at once. */

#define RO_STEPS	40
#define RO_MAXS		(RO_STEPS + 8)

/* A message sent from a thread of its own: its roStatus in *out. */
struct ro_resend {
	int		 fd;
	int		 id;
	const char	*body;
	char		**out;
};

static char	*ro_send(int, int, const char *);

static void *
ro_resend_main(void *arg)
{
	struct ro_resend	*r = arg;

	*r->out = ro_send(r->fd, r->id, r->body);
	return NULL;
}

/* One connection's changes, and what they should do (its own block). */
struct ro_side {
	struct ha	*h;
	int		 fd;
	char		 w;		/* 'A' or 'B': its stories' prefix */
	const char	*anchor;	/* its stories go before this one */
	const char	*anchor_item;	/* its items go before this one */
	int		 id;		/* next messageID */
	char		 block[RO_MAXS][16];	/* its stories, in order */
	int		 nblock;
	char		 items[RO_STEPS][16];	/* items into the anchor */
	int		 nitems;
	int		 sent;
	int		 bad;		/* answers not OK */
	char		 why[256];
};

/* Send body on fd with messageID id: the roAck's roStatus, or NULL. */
static char *
ro_send(int fd, int id, const char *body)
{
	struct mos_msg	*m, *r;
	char		*text, *status = NULL;

	text = itutil_frame_text("mosgw.test", "NCSPEER", id, body);
	if (mos_parse(text, strlen(text), MOS_ENC_UTF8, MOS_LENIENT, &m,
	    NULL) != MOS_OK) {
		free(text);
		return NULL;
	}
	free(text);
	r = itutil_exchange(fd, m, WAIT_MS);
	mos_msg_free(m);
	if (r != NULL && r->type == MOS_T_RO_ACK &&
	    r->u.ro_ack.ro_status != NULL)
		status = strdup(r->u.ro_ack.ro_status);
	mos_msg_free(r);
	return status;
}

static int
ro_find(struct ro_side *s, const char *id)
{
	int	i;

	for (i = 0; i < s->nblock; i++)
		if (strcmp(s->block[i], id) == 0)
			return i;
	return -1;
}

/* One change, applied to the model once acknowledged OK. */
static void
ro_change(struct ro_side *s, const char *body)
{
	char	*st;

	s->sent++;
	st = ro_send(s->fd, s->id++, body);
	if (st == NULL || strcmp(st, "OK") != 0) {
		if (s->bad++ == 0)
			snprintf(s->why, sizeof s->why, "%s: %s", body,
			    st != NULL ? st : "(no roAck)");
	}
	free(st);
}

static void *
ro_side_main(void *arg)
{
	struct ro_side	*s = arg;
	char		 body[512], id[16], a[16], b[16], tmp[16];
	int		 i, k, x, y;

	for (i = 1; i <= RO_STEPS && s->bad == 0; i++) {
		snprintf(id, sizeof id, "%c%d", s->w, i);
		snprintf(body, sizeof body, "<roStoryInsert><roID>RACE</roID>"
		    "<storyID>%s</storyID><story><storyID>%s</storyID>"
		    "<storySlug>%s</storySlug></story></roStoryInsert>",
		    s->anchor, id, id);
		ro_change(s, body);
		memcpy(s->block[s->nblock++], id, sizeof id);
		snprintf(a, sizeof a, "%c%d", s->w, i - 2);
		if (i % 3 == 0 && (k = ro_find(s, a)) >= 0) {
			/* move it before the story two steps older */
			snprintf(body, sizeof body, "<roStoryMove><roID>RACE"
			    "</roID><storyID>%s</storyID><storyID>%s</storyID>"
			    "</roStoryMove>", id, a);
			ro_change(s, body);
			x = ro_find(s, id);
			memmove(s->block[k + 1], s->block[k],
			    (size_t)(x - k) * sizeof s->block[0]);
			memcpy(s->block[k], id, sizeof id);
		}
		snprintf(a, sizeof a, "%c%d", s->w, i - 1);
		snprintf(b, sizeof b, "%c%d", s->w, i - 4);
		if (i % 5 == 0 && (x = ro_find(s, a)) >= 0 &&
		    (y = ro_find(s, b)) >= 0) {
			snprintf(body, sizeof body, "<roStorySwap><roID>RACE"
			    "</roID><storyID>%s</storyID><storyID>%s</storyID>"
			    "</roStorySwap>", a, b);
			ro_change(s, body);
			memcpy(tmp, s->block[x], sizeof tmp);
			memcpy(s->block[x], s->block[y], sizeof tmp);
			memcpy(s->block[y], tmp, sizeof tmp);
		}
		if (i % 4 == 0) {
			snprintf(tmp, sizeof tmp, "%c%dI", s->w, i);
			snprintf(body, sizeof body, "<roElementAction operation="
			    "\"INSERT\"><roID>RACE</roID><element_target>"
			    "<storyID>%s</storyID><itemID>%s</itemID>"
			    "</element_target><element_source><item><itemID>%s"
			    "</itemID><objID>OBJ</objID></item></element_source>"
			    "</roElementAction>", s->anchor, s->anchor_item,
			    tmp);
			ro_change(s, body);
			memcpy(s->items[s->nitems++], tmp, sizeof tmp);
		}
		snprintf(a, sizeof a, "%c%d", s->w, i - 6);
		if (i % 7 == 0 && (k = ro_find(s, a)) >= 0) {
			snprintf(body, sizeof body, "<roStoryDelete><roID>RACE"
			    "</roID><storyID>%s</storyID></roStoryDelete>", a);
			ro_change(s, body);
			memmove(s->block[k], s->block[k + 1],
			    (size_t)(s->nblock - k - 1) * sizeof s->block[0]);
			s->nblock--;
		}
	}
	return NULL;
}

/* "ID[item,...] ..." of a roList. */
static void
ro_order(const struct mos_msg *m, struct sbuf *sb)
{
	const struct mos_ro	*ro = &m->u.ro_list;
	size_t			 i, j;

	for (i = 0; i < ro->story.n; i++) {
		sbuf_printf(sb, "%s%s[", i > 0 ? " " : "",
		    ro->story.v[i].story_id);
		for (j = 0; j < ro->story.v[i].item.n; j++)
			sbuf_printf(sb, "%s%s", j > 0 ? "," : "",
			    ro->story.v[i].item.v[j].item_id);
		sbuf_puts(sb, "]");
	}
}

/* The model: A's block, S0 with A's items, B's block, S1 with B's, S2. */
static void
ro_model_order(struct ro_side *s, struct sbuf *sb)
{
	int	i, k;

	for (k = 0; k < 2; k++) {
		for (i = 0; i < s[k].nblock; i++)
			sbuf_printf(sb, "%s[] ", s[k].block[i]);
		sbuf_printf(sb, "%s[", s[k].anchor);
		for (i = 0; i < s[k].nitems; i++)
			sbuf_printf(sb, "%s,", s[k].items[i]);
		sbuf_printf(sb, "%s] ", s[k].anchor_item);
	}
	sbuf_puts(sb, "S2[]");
}

static void
test_ro_two_instances(void **state)
{
	struct ha	*h = *state;
	struct ro_side	 side[2];
	struct ro_resend rs;		/* the thread's: outlives the CHECK */
	struct mos_msg	*m = NULL;
	struct sbuf	 got = { NULL, 0, 0 }, want = { NULL, 0, 0 };
	pthread_t	 th[2];
	char		*st[2];
	const char	*swap = "<roStorySwap><roID>RACE</roID><storyID>S2"
	    "</storyID><storyID>S1</storyID></roStorySwap>";
	int		 k, round, fd[2];

	if (h == NULL) {
		skip();
		return;
	}
	CHECK(h, ha_gw(h, 1, h->db.dsn) != NULL && gwproc_start(h->gw[1]) ==
	    0);
	for (k = 0; k < 2; k++)
		CHECK(h, (fd[k] = itutil_dial(NULL, h->gw[k]->upper_port, 0)) >=
		    0);
	st[0] = ro_send(fd[0], 10, "<roCreate><roID>RACE</roID><roSlug>race"
	    "</roSlug><story><storyID>S0</storyID><item><itemID>I0</itemID>"
	    "<objID>OBJ</objID></item></story><story><storyID>S1</storyID>"
	    "<item><itemID>I1</itemID><objID>OBJ</objID></item></story>"
	    "<story><storyID>S2</storyID></story></roCreate>");
	CHECK(h, st[0] != NULL && strcmp(st[0], "OK") == 0);
	free(st[0]);
	memset(side, 0, sizeof side);
	for (k = 0; k < 2; k++) {
		side[k].h = h;
		side[k].fd = fd[k];
		side[k].w = k == 0 ? 'A' : 'B';
		side[k].anchor = k == 0 ? "S0" : "S1";
		side[k].anchor_item = k == 0 ? "I0" : "I1";
		side[k].id = k == 0 ? 1000 : 5000;
	}
	for (k = 0; k < 2; k++)
		CHECK(h, pthread_create(&th[k], NULL, ro_side_main,
		    &side[k]) == 0);
	for (k = 0; k < 2; k++)
		pthread_join(th[k], NULL);
	for (k = 0; k < 2; k++) {
		if (side[k].bad > 0)
			fprintf(stderr, "%c: %d of %d not OK, first: %s\n",
			    side[k].w, side[k].bad, side[k].sent, side[k].why);
		CHECK(h, side[k].bad == 0);
	}
	CHECK(h, rostore_get(h->g, "n1", "RACE", &m, NULL) == QUEUE_OK);
	ro_order(m, &got);
	mos_msg_free(m);
	ro_model_order(side, &want);
	if (strcmp(got.s, want.s) != 0)
		fprintf(stderr, "running order:\n got  %s\n want %s\n", got.s,
		    want.s);
	CHECK(h, strcmp(got.s, want.s) == 0);

	/* one change resent to the other instance at once: applied once */
	for (round = 0; round < 10; round++) {
		rs = (struct ro_resend){ fd[1], 9000 + round, swap, &st[1] };
		CHECK(h, pthread_create(&th[1], NULL, ro_resend_main, &rs) ==
		    0);
		st[0] = ro_send(fd[0], 9000 + round, swap);
		pthread_join(th[1], NULL);
		CHECK(h, st[0] != NULL && strcmp(st[0], "OK") == 0);
		CHECK(h, st[1] != NULL && strcmp(st[1], "OK") == 0);
		free(st[0]);
		free(st[1]);
		/* S1 and S2 change places once a round */
		CHECK(h, rostore_get(h->g, "n1", "RACE", &m, NULL) ==
		    QUEUE_OK);
		k = (int)m->u.ro_list.story.n;
		CHECK(h, k >= 2 && strcmp(m->u.ro_list.story.v[k - 1].story_id,
		    round % 2 == 0 ? "S1" : "S2") == 0);
		mos_msg_free(m);
	}
	printf("ha: %d and %d running-order changes through two instances "
	    "at once, all applied once in one order; a change resent to both "
	    "at once applied once, 10 times\n", side[0].sent, side[1].sent);
	free(got.s);
	free(want.s);
	close(fd[0]);
	close(fd[1]);
}

/* The renewal time of ncs's row if ha-a owns it at epoch, else -1. */
static int64_t
ha_renewed(struct ha *h, const char *ncs, int64_t epoch)
{
	struct store_stmt	*st;
	int64_t			 v = -1;

	if (store_prepare(h->s, "SELECT renewed FROM mosgw_owner WHERE ncs = "
	    "?1 AND instance = 'ha-a' AND epoch = ?2", 0, &st) != STORE_OK)
		return -1;
	store_bind_text(st, 1, ncs, -1);
	store_bind_int64(st, 2, epoch);
	if (store_step(st) == STORE_ROW)
		v = store_column_int64(st, 0);
	store_finalize(st);
	return v;
}

/* Wait until every NCS's row (ha-a, epoch) was renewed after since[i]. */
static bool
ha_wait_renewed(struct ha *h, const int64_t *epoch, int64_t *since)
{
	static const char *const ncs[3] = { "n1", "n2", "n3" };
	int64_t			 end = now_ms() + WAIT_MS;
	int			 i, done;

	do {
		for (i = 0, done = 0; i < 3; i++)
			done += ha_renewed(h, ncs[i], epoch[i]) > since[i];
		if (done == 3)
			break;
		sleep_ms(50);
	} while (now_ms() < end);
	for (i = 0; i < 3; i++)
		since[i] = ha_renewed(h, ncs[i], epoch[i]);
	return done == 3;
}

static void
test_renew_many(void **state)
{
	struct ha	*h = *state;
	int64_t		 epoch[3] = { 1, 1, 1 }, since[3] = { 0, 0, 0 };
	int		 round;

	if (h == NULL) {
		skip();
		return;
	}
	/* ha-a takes all three at epoch 1 and keeps renewing them */
	for (round = 0; round < 3; round++)
		CHECK(h, ha_wait_renewed(h, epoch, since));
	/* n2's epoch moves on under it: n2 is dropped, taken at 3 */
	CHECK(h, store_exec(h->s, "UPDATE mosgw_owner SET epoch = 2 WHERE "
	    "ncs = 'n2'") == STORE_OK);
	CHECK(h, gwproc_log_wait(h->gw[0], 0, WAIT_MS, "event=owner.drop",
	    "ncs=n2", (char *)NULL) >= 0);
	epoch[1] = 3;
	since[1] = 0;
	for (round = 0; round < 3; round++)
		CHECK(h, ha_wait_renewed(h, epoch, since));
	CHECK(h, gwproc_log_count(h->gw[0], 0, "event=owner.drop",
	    (char *)NULL) == 1);
	CHECK(h, gwproc_log_count(h->gw[0], 0, "event=owner.take", "ncs=n2",
	    (char *)NULL) == 2);
	CHECK(h, gwproc_log_count(h->gw[0], 0, "event=owner.take", "ncs=n1",
	    (char *)NULL) == 1);
	CHECK(h, gwproc_log_count(h->gw[0], 0, "event=owner.take", "ncs=n3",
	    (char *)NULL) == 1);
}

/* The highest id of the job events so far; -1 if unreadable. */
static int64_t
ha_last_event(struct ha *h)
{
	struct store_stmt	*st;
	int64_t			 v = -1;

	if (store_prepare(h->s, "SELECT coalesce(max(id), 0) FROM job_events",
	    0, &st) != STORE_OK)
		return -1;
	if (store_step(st) == STORE_ROW)
		v = store_column_int64(st, 0);
	store_finalize(st);
	return v;
}

/* n1's jobs settled (DONE) by instance i's workers in events after id. */
static long
ha_settled_by(struct ha *h, size_t i, int64_t after)
{
	struct store_stmt	*st;
	char			 like[64];
	long			 v = -1;

	snprintf(like, sizeof like, "%%ncs=n1/%s/%%", h->names[i]);
	if (store_prepare(h->s, "SELECT count(*) FROM job_events WHERE id > ?1 "
	    "AND to_state = 2 AND worker LIKE ?2", 0, &st) != STORE_OK)
		return -1;
	store_bind_int64(st, 1, after);
	store_bind_text(st, 2, like, -1);
	if (store_step(st) == STORE_ROW)
		v = (long)store_column_int64(st, 0);
	store_finalize(st);
	return v;
}

/*
 * Frames received on the connections conns[0..n), those that arrived at or
 * after from_us only when from_us >= 0 (each printed).
 */
static size_t
ha_frames_on(struct ha *h, const int *conns, int n, int64_t from_us)
{
	const struct ncspeer_frame	*f;
	size_t				 i, count = 0, nf = ncspeer_nframes(h->ncs);
	int				 k;

	for (i = 0; i < nf; i++) {
		f = ncspeer_frame_at(h->ncs, i);
		for (k = 0; k < n; k++) {
			if (f->conn != conns[k] || (from_us >= 0 &&
			    f->t_us < from_us))
				continue;
			count++;
			if (from_us >= 0)
				fprintf(stderr, "frame #%zu on old connection "
				    "%d: %s message_id=%d, %lld us after the new "
				    "owner's connection was accepted\n", f->seq,
				    f->conn, f->type_name, (int)f->message_id,
				    (long long)(f->t_us - from_us));
		}
	}
	return count;
}

/*
 * The accept time of the first connection the gateways opened to the NCS
 * after connection number after; -1 if none.
 */
static int64_t
ha_first_accepted(struct ha *h, int after)
{
	struct ncspeer_conn_info	ci;
	int				c, nc = ncspeer_nconns(h->ncs);

	for (c = after + 1; c <= nc; c++) {
		if (ncspeer_conn_info(h->ncs, c, &ci) == 0 &&
		    ci.side == NCSPEER_ACCEPTED)
			return ci.opened_us;
	}
	return -1;
}

/* Freeze the owner mid-publish; another takes over; then it goes on. */
static void
test_freeze_owner(void **state)
{
	struct ha			*h = *state;
	struct ncspeer_policy		 slow, hold;
	struct ncspeer_match		 m;
	struct ncspeer_conn_info	 ci;
	struct httpc_resp		 resp;
	int64_t				 epoch = 0, ep, t_stop, ev_take, first_us;
	int64_t				 took[HA_FREEZES];
	size_t				 i, before, on_old;
	long				 logpos;
	char				 id[32], slug[64], metric[128];
	int				 old[HA_OLD_MAX], nold, nc, c, owner, next;
	int				 live, conn, round, puts = 0;

	if (h == NULL) {
		skip();
		return;
	}
	ha_slow_acks(h, &m);
	memset(&slow, 0, sizeof slow);
	slow.ack_delay_ms = 15;
	hold = slow;
	hold.hold_after = 3;
	for (i = 1; i < HA_MAX; i++)
		CHECK(h, ha_gw(h, i, h->db.dsn) != NULL &&
		    gwproc_start(h->gw[i]) == 0);
	CHECK(h, (owner = ha_wait_owner(h, 0, &epoch, WAIT_MS)) >= 0);
	CHECK(h, (conn = ha_wait_lower(h, 0, WAIT_MS)) > 0);
	for (round = 0; round < HA_FREEZES; round++) {
		/* the NCS answers three mosObj of the batch, holds the rest */
		before = ha_objs(h);
		ncspeer_set_policy(h->ncs, &hold);
		CHECK(h, ha_put(h, round) == QUEUE_OK);
		CHECK(h, ncspeer_wait_count(h->ncs, &m, before + 4, WAIT_MS) >=
		    before + 4);
		/* the owner stands still, its fourth mosObj in flight */
		logpos = (long)gwproc_log_size(h->gw[owner]);
		CHECK(h, gwproc_signal(h->gw[owner], SIGSTOP) == 0);
		t_stop = now_ms();
		/* its connections, left open */
		nc = ncspeer_nconns(h->ncs);
		for (nold = 0, c = 1; c <= nc && nold < HA_OLD_MAX; c++) {
			if (ncspeer_conn_info(h->ncs, c, &ci) == 0 && ci.open &&
			    ci.side == NCSPEER_ACCEPTED)
				old[nold++] = c;
		}
		CHECK(h, nold >= 2);
		/* changes keep coming through a live instance meanwhile */
		live = (owner + 1) % HA_MAX;
		do {
			snprintf(id, sizeof id, "FZ%02d", puts % HA_LIVE_OBJS);
			snprintf(slug, sizeof slug, "put %d", puts++);
			CHECK(h, ha_api_put_slug(h, (size_t)live, id, slug) == 0);
			if ((next = ha_owner(h, &ep)) >= 0 && ep > epoch)
				break;
			sleep_ms(100);
		} while (now_ms() - t_stop < WAIT_MS);
		CHECK(h, next >= 0 && next != owner && ep > epoch);
		ev_take = ha_last_event(h);
		CHECK(h, ev_take >= 0);
		CHECK(h, (conn = ha_wait_lower(h, nc, WAIT_MS)) > nc);
		took[round] = now_ms() - t_stop;
		CHECK(h, (first_us = ha_first_accepted(h, nc)) > 0);
		/* the held answers go: one to the frozen owner's socket */
		ncspeer_set_policy(h->ncs, &slow);
		for (i = 0; i < HA_LIVE_OBJS; i++) {
			snprintf(id, sizeof id, "FZ%02d", puts % HA_LIVE_OBJS);
			snprintf(slug, sizeof slug, "put %d", puts++);
			CHECK(h, ha_api_put_slug(h, (size_t)live, id, slug) == 0);
		}
		CHECK(h, gwproc_wait_idle(h->gw[next], "ncs:n1", 60000) == 0);

		/* the frozen one goes on, everything of it due at once */
		on_old = ha_frames_on(h, old, nold, -1);
		CHECK(h, gwproc_signal(h->gw[owner], SIGCONT) == 0);
		CHECK(h, gwproc_log_wait(h->gw[owner], logpos, WAIT_MS,
		    "event=owner.drop", "ncs=n1", "lapsed", (char *)NULL) >= 0);
		for (c = 0; c < nold; c++)
			CHECK(h, ncspeer_wait_closed(h->ncs, old[c], WAIT_MS) ==
			    0);
		/* not one frame on them after the takeover */
		CHECK(h, ha_frames_on(h, old, nold, first_us) == 0);
		CHECK(h, ha_frames_on(h, old, nold, -1) == on_old);
		/* a non-owner now, running, and it says so */
		CHECK(h, gwproc_running(h->gw[owner]));
		CHECK(h, ha_owner(h, &ep) == next);
		memset(&resp, 0, sizeof resp);
		CHECK(h, httpc_once(h->gw[owner]->api_port, "GET", "/metrics",
		    HA_TOKEN, NULL, NULL, &resp) == 0 && resp.status == 200);
		snprintf(metric, sizeof metric, "mosgw_ncs_owned{ncs=\"n1\","
		    "instance=\"%s\"} 0", h->names[owner]);
		CHECK(h, strstr(resp.body, metric) != NULL);
		httpc_resp_clear(&resp);
		CHECK(h, gwproc_log_count(h->gw[owner], logpos,
		    "event=owner.take", (char *)NULL) == 0);
		/* fencing: nothing settled by it after the takeover */
		CHECK(h, ha_settled_by(h, (size_t)owner, ev_take) == 0);
		epoch = ep;
		owner = next;
	}
	CHECK(h, gwproc_wait_idle(h->gw[owner], "ncs:n1", 60000) == 0);
	CHECK(h, gwproc_job_count(h->gw[owner], "ncs:n1", QUEUE_FAILED) == 0);
	ha_check_revs(h);
	ha_check_revs_of(h, "FZ", HA_LIVE_OBJS);
	qsort(took, HA_FREEZES, sizeof *took, cmp_i64);
	printf("ha: %d freezes of the owner mid-publish (SIGSTOP, then "
	    "SIGCONT after the takeover), takeover " HA_TAKEOVER ": to the "
	    "new owner's lower link p50 %lld ms, max %lld ms; no frame from "
	    "a frozen owner after it, %d changes PUT meanwhile\n", HA_FREEZES,
	    (long long)took[HA_FREEZES / 2], (long long)took[HA_FREEZES - 1],
	    puts);
}

/* PostgreSQL restarts while changes are published: nothing is lost. */
static void
test_pg_restart(void **state)
{
	struct ha		*h = *state;
	struct ncspeer_stats	 st;
	struct ncspeer_match	 m;
	int64_t			 epoch = 0, ep, t0, t_up;
	size_t			 before;
	int			 owner, conn, next;

	if (h == NULL || h->skip) {
		skip();
		return;
	}
	ha_slow_acks(h, &m);
	CHECK(h, ha_gw(h, 1, h->db.dsn) != NULL &&
	    gwproc_start(h->gw[1]) == 0);
	CHECK(h, (owner = ha_wait_owner(h, 0, &epoch, WAIT_MS)) >= 0);
	CHECK(h, (conn = ha_wait_lower(h, 0, WAIT_MS)) > 0);
	before = ha_objs(h);
	CHECK(h, ha_put(h, 0) == QUEUE_OK);
	CHECK(h, ha_put(h, 1) == QUEUE_OK);
	CHECK(h, ncspeer_wait_count(h->ncs, &m, before + 3, WAIT_MS) >=
	    before + 3);
	t0 = now_ms();
	CHECK(h, ha_pgtest(h, "restart") == 0);
	/* the test's own connections notice the restart once */
	(void)store_exec(h->s, "SELECT 1");
	CHECK(h, store_exec(h->s, "SELECT 1") == STORE_OK);
	(void)queue_tx_begin(h->g->q);
	queue_tx_rollback(h->g->q);
	/* an owner again (a new epoch), and its links */
	CHECK(h, (next = ha_wait_owner(h, epoch, &ep, WAIT_MS)) >= 0);
	CHECK(h, (conn = ha_wait_lower(h, conn, WAIT_MS)) > 0);
	t_up = now_ms() - t0;
	CHECK(h, ha_put(h, 2) == QUEUE_OK);
	CHECK(h, gwproc_wait_idle(h->gw[next], "ncs:n1", 60000) == 0);
	CHECK(h, gwproc_job_count(h->gw[next], "ncs:n1", QUEUE_FAILED) == 0);
	ha_check_revs(h);
	ncspeer_stats(h->ncs, &st);
	CHECK(h, st.overlaps == 0);
	CHECK(h, gwproc_running(h->gw[0]) && gwproc_running(h->gw[1]));
	printf("ha: PostgreSQL restarted mid-publish: owner %s (epoch %lld) "
	    "then %s (epoch %lld), its lower link up %lld ms after the "
	    "restart began\n", h->names[owner], (long long)epoch,
	    h->names[next], (long long)ep, (long long)t_up);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_start_together,
		    setup_bare, teardown),
		cmocka_unit_test_setup_teardown(test_restart_releases,
		    setup_hooks, teardown),
		cmocka_unit_test_setup_teardown(test_cut_off, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_kill_owner, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_notify, setup_quiet,
		    teardown),
		cmocka_unit_test_setup_teardown(test_ro_two_instances, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_renew_many, setup_many,
		    teardown),
		cmocka_unit_test_setup_teardown(test_freeze_owner,
		    setup_fast_hb, teardown),
		cmocka_unit_test_setup_teardown(test_pg_restart, setup_cluster,
		    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
