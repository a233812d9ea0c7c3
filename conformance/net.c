/*
 * Blocking TCP for mosreplay: every connect, accept and read has a deadline
 * (poll), every write goes out whole. Frames are cut by the codec's framer.
 */
#include <sys/socket.h>
#include <sys/types.h>

#include <netinet/in.h>
#include <netinet/tcp.h>

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conformance/replay.h"

/* A port number 1..65535, or -1. */
static int
net_port(const char *s)
{
	char	*end;
	long	 v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < 1 || v > 65535)
		return -1;
	return (int)v;
}

/* Parse "[HOST:]LOWER:UPPER[:QUERY]". */
int
net_parse_ports(const char *spec, bool with_host, char *host, size_t hlen,
    int ports[GW_NPORTS], char *err, size_t elen)
{
	char	*copy, *p, *f[5];
	size_t	 n = 0, i, first;

	copy = xstrdup(spec);
	p = copy;
	/* An IPv6 host is written in brackets: [::1]:10540:10541 */
	if (with_host && *p == '[') {
		if ((f[0] = strchr(p, ']')) == NULL || f[0][1] != ':')
			goto bad;
		*f[0] = '\0';
		util_strlcpy(host, p + 1, hlen);
		p = f[0] + 2;
		n = 1;
		f[0] = host;
	}
	while (n < nitems(f)) {
		f[n++] = p;
		if ((p = strchr(p, ':')) == NULL)
			break;
		*p++ = '\0';
	}
	if (p != NULL)
		goto bad;
	first = with_host ? 1 : 0;
	if (n < first + 2 || n > first + 3)
		goto bad;
	if (with_host && f[0] != host)
		util_strlcpy(host, f[0], hlen);
	if (with_host && *host == '\0')
		goto bad;
	for (i = 0; i < GW_NPORTS; i++)
		ports[i] = 0;
	for (i = first; i < n; i++) {
		if ((ports[i - first] = net_port(f[i])) < 0)
			goto bad;
	}
	free(copy);
	return 0;
bad:
	snprintf(err, elen, "'%s' is not %sLOWER:UPPER[:QUERY] (ports 1 to "
	    "65535)", spec, with_host ? "HOST:" : "");
	free(copy);
	return -1;
}

/* Wait for fd to be ready; 1, 0 on timeout, -1 on error. */
static int
net_wait(int fd, short events, int timeout_ms)
{
	struct pollfd	pfd = { fd, events, 0 };
	int64_t		end = util_mono_ms() + timeout_ms, left;
	int		rc;

	for (;;) {
		left = end - util_mono_ms();
		if (left < 0)
			left = 0;
		rc = poll(&pfd, 1, (int)left);
		if (rc >= 0 || errno != EINTR)
			return rc > 0 ? 1 : rc;
		if (left == 0)
			return 0;
	}
}

/* Connect with a deadline; the socket is left blocking. */
int
net_connect(const char *host, int port, int timeout_ms)
{
	struct addrinfo	 hints, *res, *ai;
	char		 serv[16];
	int		 fd = -1, one = 1, soerr;
	socklen_t	 sl;

	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	snprintf(serv, sizeof serv, "%d", port);
	if (getaddrinfo(host, serv, &hints, &res) != 0) {
		errno = EHOSTUNREACH;
		return -1;
	}
	for (ai = res; ai != NULL; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC |
		    SOCK_NONBLOCK, ai->ai_protocol);
		if (fd == -1)
			continue;
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
			break;
		if (errno == EINPROGRESS && net_wait(fd, POLLOUT,
		    timeout_ms) == 1) {
			sl = sizeof soerr;
			if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr,
			    &sl) == 0 && soerr == 0)
				break;
			errno = soerr != 0 ? soerr : ETIMEDOUT;
		} else if (errno == EINPROGRESS)
			errno = ETIMEDOUT;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd == -1)
		return -1;
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	return fd;
}

/* Listen on host:port. */
int
net_listen(const char *host, int port)
{
	struct addrinfo	 hints, *res;
	char		 serv[16];
	int		 fd, one = 1;

	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE;
	snprintf(serv, sizeof serv, "%d", port);
	if (getaddrinfo(host, serv, &hints, &res) != 0) {
		errno = EADDRNOTAVAIL;
		return -1;
	}
	fd = socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC,
	    res->ai_protocol);
	if (fd != -1 && (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one,
	    sizeof one) == -1 || bind(fd, res->ai_addr, res->ai_addrlen) == -1 ||
	    listen(fd, 16) == -1)) {
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	return fd;
}

/* The local port of a socket, 0 on error. */
int
net_local_port(int fd)
{
	struct sockaddr_storage	ss;
	socklen_t		sl = sizeof ss;

	if (getsockname(fd, (struct sockaddr *)&ss, &sl) == -1)
		return 0;
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

/* Accept with a deadline. */
int
net_accept(int lfd, int timeout_ms)
{
	int	fd, one = 1;

	if (net_wait(lfd, POLLIN, timeout_ms) != 1) {
		errno = ETIMEDOUT;
		return -1;
	}
	if ((fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC)) == -1)
		return -1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	return fd;
}

/* Write it all, chunk bytes per send when chunk is set. */
int
net_write(int fd, const void *data, size_t len, size_t chunk)
{
	const uint8_t	*p = data;
	size_t		 want;
	ssize_t		 n;

	while (len > 0) {
		want = chunk != 0 && chunk < len ? chunk : len;
		n = send(fd, p, want, MSG_NOSIGNAL);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
		if (chunk != 0 && len > 0)
			usleep(200);	/* let each piece leave on its own */
	}
	return 0;
}

/* A connection with a framer that decides the encoding itself. */
void
rconn_init(struct rconn *r, int fd)
{
	memset(r, 0, sizeof *r);
	r->fd = fd;
	if ((r->fr = mos_framer_new(MOS_ENC_AUTO, NULL)) == NULL)
		fatalx("out of memory");
}

/* Close and free. */
void
rconn_close(struct rconn *r)
{
	if (r->fd != -1)
		close(r->fd);
	r->fd = -1;
	mos_framer_free(r->fr);
	r->fr = NULL;
}

/* The next frame within timeout_ms. */
int
rconn_next(struct rconn *r, struct mos_frame *out, int timeout_ms)
{
	uint8_t	 buf[65536];
	int64_t	 end = util_mono_ms() + timeout_ms, left;
	ssize_t	 n;
	int	 rc;

	for (;;) {
		rc = mos_framer_next(r->fr, out);
		if (rc == MOS_FRAME_READY)
			return 1;
		if (rc != MOS_FRAME_MORE) {
			snprintf(r->err, sizeof r->err, "%s",
			    mos_framer_errmsg(r->fr));
			return -1;
		}
		if (r->eof) {
			rc = mos_framer_end(r->fr);
			snprintf(r->err, sizeof r->err, "%s", rc == 0 ?
			    "the peer closed the connection" :
			    mos_framer_errmsg(r->fr));
			return -1;
		}
		left = end - util_mono_ms();
		if (left <= 0 || net_wait(r->fd, POLLIN, (int)left) != 1)
			return 0;
		n = recv(r->fd, buf, sizeof buf, 0);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0) {
			r->eof = true;
			continue;
		}
		if (mos_framer_feed(r->fr, buf, (size_t)n) != 0)
			fatalx("out of memory");
	}
}
