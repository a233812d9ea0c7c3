/*
 * mosproxy: a chaos proxy for the fault tests (never part of mosgw).
 *
 *   mosproxy -t HOST:PORT [-l PORT] [-s SEED]
 *
 * Listens on 127.0.0.1:PORT (0 = a free port) and forwards every connection
 * to HOST:PORT, byte for byte, until told otherwise on its control port
 * (127.0.0.1, a free port). When both are open it prints one line
 * "mosproxy listen=P control=C" on stdout. A control connection takes one
 * command a line and answers each with one line, "ok ..." or "error ...":
 *
 *   dir up|down|both     which direction the commands below act on
 *                        (up: client to target, down: target to client)
 *   chunk N              write at most N bytes per send(), each after the
 *                        previous one left (0 = as read)
 *   chunk random MIN MAX sizes drawn from the seeded generator
 *   delay MS             hold each write MS milliseconds
 *   stall | resume       stop forwarding (keep buffering) | go on
 *   cut rst|fin N        after N more bytes, close every connection:
 *                        rst resets both sides, fin closes them
 *   blackhole on|off     new and open connections: read and discard
 *                        everything, send nothing, close nothing
 *   drop                 close every open connection now (FIN)
 *   reset                every mode off (dir both)
 *   stats                "ok conns=N open=N up=BYTES down=BYTES cuts=N"
 *   quit                 exit
 *
 * The proxy stops reading from a side while more than 4 MiB wait to be
 * written to the other.
 */
#include <sys/types.h>
#include <sys/socket.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

#define PROXY_HIGH	(4u << 20)	/* stop reading the other side above */
#define EXIT_USAGE	64

enum { UP = 0, DOWN = 1 };

/* What a direction does with its bytes. */
struct mode {
	size_t		 chunk;		/* 0 = as read */
	size_t		 chunk_min;	/* random when chunk_max > 0 */
	size_t		 chunk_max;
	int		 delay_ms;
	bool		 stall;
	int		 cut;		/* 0 none, 1 rst, 2 fin */
	uint64_t	 cut_left;
};

struct pair;

/* One direction of a pair: from src to dst. */
struct half {
	struct pair		*p;
	int			 dir;
	struct bufferevent	*src;
	struct bufferevent	*dst;
	struct evbuffer		*pend;	/* read, not yet written */
	struct event		*timer;	/* delay */
	bool			 waiting;	/* a chunk is being written */
	bool			 delayed;	/* the delay has passed */
	bool			 eof;	/* src ended */
};

struct pair {
	struct bufferevent	*cli;
	struct bufferevent	*tgt;
	struct half		 h[2];
	bool			 connected;
	bool			 dead;
	struct pair		*next;
};

static struct event_base	*base;
static struct sockaddr_in	 target;
static struct pair		*pairs;
static struct mode		 modes[2];
static bool			 dirs[2] = { true, true };
static bool			 blackhole;
static uint64_t			 nconns, bytes[2], ncuts;
static uint64_t			 rng = 88172645463325252ULL;

static void	pair_close(struct pair *, bool rst);
static void	half_pump(struct half *);

/* xorshift64: the seeded generator for random chunk sizes. */
static uint64_t
rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Free the pairs closed since the last pass. */
static void
pairs_reap(void)
{
	struct pair	**pp, *p;
	int		  i;

	for (pp = &pairs; (p = *pp) != NULL;) {
		if (!p->dead) {
			pp = &p->next;
			continue;
		}
		*pp = p->next;
		for (i = 0; i < 2; i++) {
			evbuffer_free(p->h[i].pend);
			event_free(p->h[i].timer);
		}
		free(p);
	}
}

/* Close a socket at once; with rst the peer gets a reset. */
static void
bev_close(struct bufferevent *bev, bool rst)
{
	struct linger	l = { 1, 0 };
	evutil_socket_t	fd;

	if (bev == NULL)
		return;
	fd = bufferevent_getfd(bev);
	if (rst && fd >= 0)
		(void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
	bufferevent_free(bev);
}

/* Close both sides of a pair; freed on the next reap. */
static void
pair_close(struct pair *p, bool rst)
{
	int	i;

	if (p->dead)
		return;
	p->dead = true;
	for (i = 0; i < 2; i++)
		if (p->h[i].timer != NULL)
			event_del(p->h[i].timer);
	bev_close(p->cli, rst);
	bev_close(p->tgt, rst);
	p->cli = p->tgt = NULL;
}

/* Cut every open connection. */
static void
cut_all(bool rst)
{
	struct pair	*p;

	for (p = pairs; p != NULL; p = p->next)
		pair_close(p, rst);
	ncuts++;
}

/* How many bytes the next write of this direction may take. */
static size_t
next_chunk(const struct mode *m, size_t avail)
{
	size_t	n = avail;

	if (m->chunk_max > 0)
		n = m->chunk_min + rnd() % (m->chunk_max - m->chunk_min + 1);
	else if (m->chunk > 0)
		n = m->chunk;
	if (n > avail)
		n = avail;
	if (m->cut != 0 && n > m->cut_left)
		n = (size_t)m->cut_left;
	return n;
}

/* Move what the mode allows from pend to dst. */
static void
half_pump(struct half *h)
{
	struct mode	*m = &modes[h->dir];
	struct timeval	 tv;
	size_t		 n, avail;

	if (h->p->dead || !h->p->connected || h->waiting || m->stall ||
	    blackhole)
		return;
	avail = evbuffer_get_length(h->pend);
	if (m->cut != 0 && m->cut_left == 0) {
		/* wait until the bytes before the cut have left */
		if (evbuffer_get_length(bufferevent_get_output(h->dst)) == 0) {
			m->cut_left = 0;
			cut_all(m->cut == 1);
			m->cut = 0;
		}
		return;
	}
	if (avail == 0) {
		if (h->eof && evbuffer_get_length(
		    bufferevent_get_output(h->dst)) == 0)
			pair_close(h->p, false);
		return;
	}
	if (m->delay_ms > 0 && !h->delayed) {
		tv.tv_sec = m->delay_ms / 1000;
		tv.tv_usec = (m->delay_ms % 1000) * 1000;
		if (!evtimer_pending(h->timer, NULL))
			evtimer_add(h->timer, &tv);
		return;
	}
	h->delayed = false;
	n = next_chunk(m, avail);
	evbuffer_remove_buffer(h->pend, bufferevent_get_output(h->dst), n);
	bytes[h->dir] += n;
	if (m->cut != 0)
		m->cut_left -= n;
	/* one send() per chunk: wait for it to leave before the next */
	if (m->chunk > 0 || m->chunk_max > 0 || m->delay_ms > 0 || m->cut != 0)
		h->waiting = true;
	if (evbuffer_get_length(h->pend) < PROXY_HIGH)
		bufferevent_enable(h->src, EV_READ);
	if (!h->waiting)
		half_pump(h);
}

/* The delay of a direction has passed. */
static void
half_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct half	*h = arg;

	(void)fd;
	(void)what;
	h->delayed = true;
	half_pump(h);
	pairs_reap();
}

/* The half reading from this bufferevent. */
static struct half *
half_of(struct pair *p, struct bufferevent *bev)
{
	return bev == p->cli ? &p->h[UP] : &p->h[DOWN];
}

/* Bytes arrived on one side. */
static void
read_cb(struct bufferevent *bev, void *arg)
{
	struct pair	*p = arg;
	struct half	*h = half_of(p, bev);

	if (blackhole) {
		evbuffer_drain(bufferevent_get_input(bev),
		    evbuffer_get_length(bufferevent_get_input(bev)));
		return;
	}
	evbuffer_add_buffer(h->pend, bufferevent_get_input(bev));
	if (evbuffer_get_length(h->pend) >= PROXY_HIGH)
		bufferevent_disable(bev, EV_READ);
	half_pump(h);
	pairs_reap();
}

/* A side's output drained: the next chunk towards it may go. */
static void
write_cb(struct bufferevent *bev, void *arg)
{
	struct pair	*p = arg;
	struct half	*h = &p->h[bev == p->cli ? DOWN : UP];

	h->waiting = false;
	half_pump(h);
	pairs_reap();
}

/* Connected, ended or failed. */
static void
event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct pair	*p = arg;
	struct half	*h;

	if (what & BEV_EVENT_CONNECTED) {
		p->connected = true;
		(void)setsockopt(bufferevent_getfd(bev), IPPROTO_TCP,
		    TCP_NODELAY, &(int){ 1 }, sizeof(int));
		half_pump(&p->h[UP]);
		half_pump(&p->h[DOWN]);
	} else if (what & BEV_EVENT_EOF && !blackhole) {
		h = half_of(p, bev);
		h->eof = true;
		half_pump(h);
	} else if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
		pair_close(p, (what & BEV_EVENT_ERROR) != 0);
	}
	pairs_reap();
}

/* A new client: connect to the target (unless blackholed). */
static void
accept_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,
    int salen, void *arg)
{
	struct pair	*p;
	int		 i;

	(void)l;
	(void)sa;
	(void)salen;
	(void)arg;
	if ((p = calloc(1, sizeof *p)) == NULL) {
		close(fd);
		return;
	}
	nconns++;
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int){ 1 },
	    sizeof(int));
	p->cli = bufferevent_socket_new(base, fd, BEV_OPT_CLOSE_ON_FREE);
	p->tgt = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
	for (i = 0; i < 2; i++) {
		p->h[i].p = p;
		p->h[i].dir = i;
		p->h[i].pend = evbuffer_new();
		p->h[i].timer = evtimer_new(base, half_timer_cb, &p->h[i]);
	}
	p->h[UP].src = p->h[DOWN].dst = p->cli;
	p->h[UP].dst = p->h[DOWN].src = p->tgt;
	bufferevent_setcb(p->cli, read_cb, write_cb, event_cb, p);
	bufferevent_setcb(p->tgt, read_cb, write_cb, event_cb, p);
	bufferevent_enable(p->cli, EV_READ | EV_WRITE);
	p->next = pairs;
	pairs = p;
	if (blackhole)
		return;		/* like a peer that never answers */
	bufferevent_enable(p->tgt, EV_READ | EV_WRITE);
	if (bufferevent_socket_connect(p->tgt, (struct sockaddr *)&target,
	    sizeof target) != 0)
		pair_close(p, false);
}

/* Parse a decimal count; -1 if it is not one. */
static long long
num(const char *s)
{
	char		*end;
	long long	 v;

	if (s == NULL)
		return -1;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < 0)
		return -1;
	return v;
}

/* Run one control command; the answer goes to out. */
static void
command(char *line, struct evbuffer *out)
{
	char		*w[4] = { NULL, NULL, NULL, NULL };
	char		*save = NULL, *t;
	struct pair	*p;
	long long	 a, b;
	int		 n = 0, i;

	for (t = strtok_r(line, " \t\r", &save); t != NULL && n < 4;
	    t = strtok_r(NULL, " \t\r", &save))
		w[n++] = t;
	if (n == 0) {
		evbuffer_add_printf(out, "error empty command\n");
		return;
	}
	if (strcmp(w[0], "dir") == 0 && n == 2) {
		dirs[UP] = strcmp(w[1], "up") == 0 || strcmp(w[1], "both") == 0;
		dirs[DOWN] = strcmp(w[1], "down") == 0 ||
		    strcmp(w[1], "both") == 0;
		if (!dirs[UP] && !dirs[DOWN]) {
			dirs[UP] = dirs[DOWN] = true;
			evbuffer_add_printf(out, "error dir up|down|both\n");
			return;
		}
	} else if (strcmp(w[0], "chunk") == 0 && n == 2 &&
	    (a = num(w[1])) >= 0) {
		for (i = 0; i < 2; i++)
			if (dirs[i]) {
				modes[i].chunk = (size_t)a;
				modes[i].chunk_max = 0;
			}
	} else if (strcmp(w[0], "chunk") == 0 && n == 4 &&
	    strcmp(w[1], "random") == 0 && (a = num(w[2])) > 0 &&
	    (b = num(w[3])) >= a) {
		for (i = 0; i < 2; i++)
			if (dirs[i]) {
				modes[i].chunk_min = (size_t)a;
				modes[i].chunk_max = (size_t)b;
			}
	} else if (strcmp(w[0], "delay") == 0 && n == 2 &&
	    (a = num(w[1])) >= 0 && a <= 3600000) {
		for (i = 0; i < 2; i++)
			if (dirs[i])
				modes[i].delay_ms = (int)a;
	} else if ((strcmp(w[0], "stall") == 0 ||
	    strcmp(w[0], "resume") == 0) && n == 1) {
		for (i = 0; i < 2; i++)
			if (dirs[i])
				modes[i].stall = w[0][0] == 's';
	} else if (strcmp(w[0], "cut") == 0 && n == 3 &&
	    (strcmp(w[1], "rst") == 0 || strcmp(w[1], "fin") == 0) &&
	    (a = num(w[2])) >= 0) {
		for (i = 0; i < 2; i++)
			if (dirs[i]) {
				modes[i].cut = w[1][0] == 'r' ? 1 : 2;
				modes[i].cut_left = (uint64_t)a;
			}
	} else if (strcmp(w[0], "blackhole") == 0 && n == 2 &&
	    (strcmp(w[1], "on") == 0 || strcmp(w[1], "off") == 0)) {
		blackhole = strcmp(w[1], "on") == 0;
	} else if (strcmp(w[0], "drop") == 0 && n == 1) {
		cut_all(false);
	} else if (strcmp(w[0], "reset") == 0 && n == 1) {
		memset(modes, 0, sizeof modes);
		dirs[UP] = dirs[DOWN] = true;
		blackhole = false;
	} else if (strcmp(w[0], "stats") == 0 && n == 1) {
		a = 0;
		for (p = pairs; p != NULL; p = p->next)
			a += !p->dead;
		evbuffer_add_printf(out, "ok conns=%llu open=%lld up=%llu "
		    "down=%llu cuts=%llu\n", (unsigned long long)nconns, a,
		    (unsigned long long)bytes[UP],
		    (unsigned long long)bytes[DOWN],
		    (unsigned long long)ncuts);
		return;
	} else if (strcmp(w[0], "quit") == 0 && n == 1) {
		event_base_loopexit(base, NULL);
	} else {
		evbuffer_add_printf(out, "error unknown command or bad "
		    "arguments: %s\n", w[0]);
		return;
	}
	evbuffer_add_printf(out, "ok\n");
	/* a mode changed: let every direction move again */
	for (p = pairs; p != NULL; p = p->next)
		for (i = 0; i < 2 && !p->dead; i++)
			half_pump(&p->h[i]);
	pairs_reap();
}

/* Control lines. */
static void
ctl_read_cb(struct bufferevent *bev, void *arg)
{
	char	*line;
	size_t	 len;

	(void)arg;
	while ((line = evbuffer_readln(bufferevent_get_input(bev), &len,
	    EVBUFFER_EOL_CRLF)) != NULL) {
		command(line, bufferevent_get_output(bev));
		free(line);
	}
	if (evbuffer_get_length(bufferevent_get_input(bev)) > 4096)
		bufferevent_free(bev);
}

/* A control connection ended. */
static void
ctl_event_cb(struct bufferevent *bev, short what, void *arg)
{
	(void)what;
	(void)arg;
	bufferevent_free(bev);
}

/* A new control connection. */
static void
ctl_accept_cb(struct evconnlistener *l, evutil_socket_t fd,
    struct sockaddr *sa, int salen, void *arg)
{
	struct bufferevent	*bev;

	(void)l;
	(void)sa;
	(void)salen;
	(void)arg;
	bev = bufferevent_socket_new(base, fd, BEV_OPT_CLOSE_ON_FREE);
	bufferevent_setcb(bev, ctl_read_cb, NULL, ctl_event_cb, NULL);
	bufferevent_enable(bev, EV_READ | EV_WRITE);
}

/* Listen on 127.0.0.1:port; *bound gets the port. */
static struct evconnlistener *
listen_on(int port, evconnlistener_cb cb, int *bound)
{
	struct sockaddr_in	 sin;
	socklen_t		 len = sizeof sin;
	struct evconnlistener	*l;

	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons((uint16_t)port);
	l = evconnlistener_new_bind(base, cb, NULL, LEV_OPT_CLOSE_ON_FREE |
	    LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC, 64,
	    (struct sockaddr *)&sin, sizeof sin);
	if (l == NULL)
		return NULL;
	if (getsockname(evconnlistener_get_fd(l), (struct sockaddr *)&sin,
	    &len) == -1) {
		evconnlistener_free(l);
		return NULL;
	}
	*bound = ntohs(sin.sin_port);
	return l;
}

static void
usage(void)
{
	fprintf(stderr, "usage: mosproxy -t HOST:PORT [-l PORT] [-s SEED]\n");
	exit(EXIT_USAGE);
}

/* Parse the target HOST:PORT (numeric IPv4). */
static int
parse_target(const char *s)
{
	char		 host[64];
	const char	*colon = strrchr(s, ':');
	long long	 port;

	if (colon == NULL || (size_t)(colon - s) >= sizeof host)
		return -1;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = '\0';
	port = num(colon + 1);
	if (port < 1 || port > 65535)
		return -1;
	memset(&target, 0, sizeof target);
	target.sin_family = AF_INET;
	target.sin_port = htons((uint16_t)port);
	return inet_pton(AF_INET, host, &target.sin_addr) == 1 ? 0 : -1;
}

int
main(int argc, char *argv[])
{
	struct evconnlistener	*l, *c;
	long long		 v;
	int			 ch, port = 0, lport, cport;
	bool			 have_target = false;

	while ((ch = getopt(argc, argv, "l:s:t:")) != -1) {
		switch (ch) {
		case 'l':
			if ((v = num(optarg)) < 0 || v > 65535)
				usage();
			port = (int)v;
			break;
		case 's':
			if ((v = num(optarg)) < 0)
				usage();
			rng ^= (uint64_t)v * 0x9E3779B97F4A7C15ULL;
			if (rng == 0)
				rng = 1;
			break;
		case 't':
			if (parse_target(optarg) != 0) {
				fprintf(stderr, "mosproxy: bad target %s "
				    "(want IPv4:PORT)\n", optarg);
				exit(EXIT_USAGE);
			}
			have_target = true;
			break;
		default:
			usage();
		}
	}
	if (!have_target || optind != argc)
		usage();
	signal(SIGPIPE, SIG_IGN);
	if ((base = event_base_new()) == NULL)
		return 1;
	if ((l = listen_on(port, accept_cb, &lport)) == NULL ||
	    (c = listen_on(0, ctl_accept_cb, &cport)) == NULL) {
		fprintf(stderr, "mosproxy: listen: %s\n", strerror(errno));
		return 1;
	}
	printf("mosproxy listen=%d control=%d\n", lport, cport);
	fflush(stdout);
	event_base_dispatch(base);
	cut_all(false);
	pairs_reap();
	evconnlistener_free(l);
	evconnlistener_free(c);
	event_base_free(base);
	return 0;
}
