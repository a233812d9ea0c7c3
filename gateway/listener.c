/*
 * Listeners for the NCSs' connections on the lower, upper and query ports.
 * Out of file descriptors (EMFILE/ENFILE), a listener is disabled and
 * re-enabled from a timer, so the accept loop never spins.
 */
#include <sys/socket.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <event2/listener.h>
#include <event2/util.h>

#include "gateway/gateway.h"

#define LISTENER_RETRY_MS	1000

struct listener {
	struct gw		*gw;
	enum gw_port		 port;
	struct evconnlistener	*evl;
	struct event		*retry;
	int			 bound;
};

/* Format an address as "ip:port". */
static void
listener_addr(const struct sockaddr *sa, char *buf, size_t len)
{
	char	ip[INET6_ADDRSTRLEN];
	int	port = 0;

	ip[0] = '\0';
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in =
		    (const struct sockaddr_in *)(const void *)sa;

		inet_ntop(AF_INET, &in->sin_addr, ip, sizeof ip);
		port = ntohs(in->sin_port);
		snprintf(buf, len, "%s:%d", ip, port);
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 =
		    (const struct sockaddr_in6 *)(const void *)sa;

		inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof ip);
		port = ntohs(in6->sin6_port);
		snprintf(buf, len, "[%s]:%d", ip, port);
	} else
		snprintf(buf, len, "?");
}

/* A new connection: the session decides whether it may stay. */
static void
listener_accept_cb(struct evconnlistener *evl, evutil_socket_t fd,
    struct sockaddr *sa, int socklen, void *arg)
{
	struct listener	*l = arg;
	char		 peer[80];

	(void)evl;
	(void)socklen;
	listener_addr(sa, peer, sizeof peer);
	session_accept(l->gw, l->port, fd, sa, peer);
}

/* Re-enable after a pause for lack of descriptors. */
static void
listener_retry_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct listener	*l = arg;

	(void)fd;
	(void)ev;
	evconnlistener_enable(l->evl);
}

/* accept() failed: pause on EMFILE/ENFILE, else log. */
static void
listener_error_cb(struct evconnlistener *evl, void *arg)
{
	struct listener	*l = arg;
	struct timeval	 tv = { LISTENER_RETRY_MS / 1000, 0 };
	int		 err = EVUTIL_SOCKET_ERROR();

	if (err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM) {
		evconnlistener_disable(evl);
		evtimer_add(l->retry, &tv);
		metrics_count(MET_CONN_REFUSED, gw_port_name(l->port),
		    "pause-accept", NULL);
		log_event_rl(LL_WARN, "conn.reject", "pause-accept", "port=%s "
		    "reason=%s action=pause-accept ms=%d",
		    gw_port_name(l->port), log_q(strerror(err)),
		    LISTENER_RETRY_MS);
		return;
	}
	log_event_rl(LL_WARN, "listen.error", strerror(err), "port=%s error=%s",
	    gw_port_name(l->port), log_q(strerror(err)));
}

/* Parse addr:port into a sockaddr. */
static int
listener_sockaddr(const char *addr, int port, struct sockaddr_storage *ss,
    socklen_t *len)
{
	struct sockaddr_in	*in = (struct sockaddr_in *)ss;
	struct sockaddr_in6	*in6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof *ss);
	if (inet_pton(AF_INET, addr, &in->sin_addr) == 1) {
		in->sin_family = AF_INET;
		in->sin_port = htons((uint16_t)port);
		*len = sizeof *in;
		return 0;
	}
	if (inet_pton(AF_INET6, addr, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t)port);
		*len = sizeof *in6;
		return 0;
	}
	return -1;
}

/* Listen on addr:port for one MOS port. */
struct listener *
listener_new(struct gw *gw, enum gw_port port, const char *addr, int portnum,
    char **cause)
{
	struct sockaddr_storage	 ss;
	socklen_t		 len;
	struct listener		*l;
	char			 where[80];

	if (listener_sockaddr(addr, portnum, &ss, &len) != 0) {
		xasprintf(cause, "%s: not a numeric address", addr);
		return NULL;
	}
	l = xcalloc(1, sizeof *l);
	l->gw = gw;
	l->port = port;
	l->evl = evconnlistener_new_bind(gw->base, listener_accept_cb, l,
	    LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC,
	    128, (struct sockaddr *)&ss, (int)len);
	if (l->evl == NULL) {
		xasprintf(cause, "cannot listen on %s port %d (%s): %s", addr,
		    portnum, gw_port_name(port), strerror(errno));
		free(l);
		return NULL;
	}
	evconnlistener_set_error_cb(l->evl, listener_error_cb);
	if ((l->retry = evtimer_new(gw->base, listener_retry_cb, l)) == NULL)
		fatalx("evtimer_new failed");
	len = sizeof ss;
	getsockname(evconnlistener_get_fd(l->evl), (struct sockaddr *)&ss,
	    &len);
	listener_addr((struct sockaddr *)&ss, where, sizeof where);
	l->bound = ntohs(ss.ss_family == AF_INET6 ?
	    ((struct sockaddr_in6 *)&ss)->sin6_port :
	    ((struct sockaddr_in *)&ss)->sin_port);
	log_event(LL_INFO, "listen", "port=%s addr=%s", gw_port_name(port),
	    where);
	return l;
}

/* Stop listening. */
void
listener_free(struct listener *l)
{
	if (l == NULL)
		return;
	evconnlistener_free(l->evl);
	event_free(l->retry);
	free(l);
}

/* Accept or refuse new connections (shutdown). */
void
listener_set_enabled(struct listener *l, bool on)
{
	if (on)
		evconnlistener_enable(l->evl);
	else {
		evconnlistener_disable(l->evl);
		evtimer_del(l->retry);
	}
}

/* The port actually bound. */
int
listener_port(const struct listener *l)
{
	return l->bound;
}
