/*
 * httpc: a small HTTP/1.1 client for the API tests (see httpc.h).
 */
#include <sys/socket.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "gateway/tests/httpc.h"

static int64_t
httpc_now(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int
httpc_connect(uint16_t port)
{
	struct sockaddr_in	sin;
	int			fd, one = 1;

	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_port = htons(port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&sin, sizeof sin) != 0) {
		close(fd);
		return -1;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	return fd;
}

int
httpc_write(int fd, const void *buf, size_t len)
{
	const char	*p = buf;
	ssize_t		 n;

	while (len > 0) {
		if ((n = send(fd, p, len, MSG_NOSIGNAL)) < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Wait for input until the deadline. 1 readable, 0 timed out. */
static int
httpc_wait(int fd, int64_t deadline)
{
	struct pollfd	pfd = { fd, POLLIN, 0 };
	int64_t		left;
	int		rc;

	for (;;) {
		if ((left = deadline - httpc_now()) <= 0)
			return 0;
		rc = poll(&pfd, 1, (int)left);
		if (rc > 0)
			return 1;
		if (rc < 0 && errno != EINTR)
			return 0;
	}
}

/* Content-Length of a head, or -1. */
static long
httpc_clen(const char *head)
{
	const char	*p = head;

	while ((p = strchr(p, '\n')) != NULL) {
		p++;
		if (strncasecmp(p, "Content-Length:", 15) == 0)
			return strtol(p + 15, NULL, 10);
	}
	return -1;
}

int
httpc_read(int fd, struct httpc_resp *r, int timeout_ms)
{
	int64_t	 deadline = httpc_now() + timeout_ms;
	char	*buf = NULL, *end, *nb;
	size_t	 len = 0, cap = 0, hlen = 0;
	long	 clen = -1;
	ssize_t	 n;

	memset(r, 0, sizeof r[0]);
	for (;;) {
		if (hlen > 0 && clen >= 0 && len >= hlen + (size_t)clen)
			break;
		if (!httpc_wait(fd, deadline))
			goto fail;
		if (cap - len < 65536) {
			cap = cap * 2 + 65536;
			if ((nb = realloc(buf, cap + 1)) == NULL)
				abort();
			buf = nb;
		}
		if ((n = recv(fd, buf + len, cap - len, 0)) < 0) {
			if (errno == EINTR)
				continue;
			if (hlen > 0 && clen < 0)
				break;
			goto fail;
		}
		if (n == 0) {
			if (hlen > 0 && clen < 0)
				break;
			goto fail;
		}
		len += (size_t)n;
		buf[len] = '\0';
		if (hlen == 0 && (end = strstr(buf, "\r\n\r\n")) != NULL) {
			hlen = (size_t)(end - buf) + 4;
			*end = '\0';
			clen = httpc_clen(buf);
			*end = '\r';
		}
	}
	if (clen < 0)
		clen = (long)(len - hlen);
	if (strncmp(buf, "HTTP/1.", 7) != 0)
		goto fail;
	r->status = atoi(buf + 9);
	if ((r->head = strndup(buf, hlen)) == NULL ||
	    (r->body = malloc((size_t)clen + 1)) == NULL)
		abort();
	memcpy(r->body, buf + hlen, (size_t)clen);
	r->body[clen] = '\0';
	r->body_len = (size_t)clen;
	free(buf);
	return 0;
fail:
	free(buf);
	return -1;
}

/* A request with its body's content type, answered within timeout_ms. */
static int
httpc_request(int fd, const char *method, const char *path, const char *token,
    const char *headers, const char *ctype, const char *body, int timeout_ms,
    struct httpc_resp *r)
{
	char	*req;
	int	 n, rc;

	n = asprintf(&req, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\n%s%s%s%s"
	    "%s%s%s%s%.0zu%s\r\n%s", method, path,
	    token != NULL ? "Authorization: Bearer " : "",
	    token != NULL ? token : "", token != NULL ? "\r\n" : "",
	    headers != NULL ? headers : "",
	    body != NULL ? "Content-Type: " : "",
	    body != NULL ? ctype : "", body != NULL ? "\r\n" : "",
	    body != NULL ? "Content-Length: " : "",
	    body != NULL ? strlen(body) : 0, body != NULL ? "\r\n" : "",
	    body != NULL ? body : "");
	if (n < 0)
		abort();
	rc = httpc_write(fd, req, (size_t)n);
	free(req);
	if (rc != 0)
		return -1;
	return httpc_read(fd, r, timeout_ms);
}

int
httpc_do(int fd, const char *method, const char *path, const char *token,
    const char *headers, const char *body, struct httpc_resp *r)
{
	return httpc_request(fd, method, path, token, headers,
	    "application/json", body, HTTPC_TIMEOUT_MS, r);
}

int
httpc_import(uint16_t port, const char *token, const char *ndjson,
    int timeout_ms, struct httpc_resp *r)
{
	int	fd, rc;

	if ((fd = httpc_connect(port)) == -1)
		return -1;
	rc = httpc_request(fd, "POST", "/v1/assets:import", token, NULL,
	    "application/x-ndjson", ndjson, timeout_ms, r);
	close(fd);
	return rc;
}

int
httpc_once(uint16_t port, const char *method, const char *path,
    const char *token, const char *headers, const char *body,
    struct httpc_resp *r)
{
	int	fd, rc;

	memset(r, 0, sizeof r[0]);
	if ((fd = httpc_connect(port)) == -1)
		return -1;
	rc = httpc_do(fd, method, path, token, headers, body, r);
	close(fd);
	return rc;
}

char *
httpc_header(const struct httpc_resp *r, const char *name)
{
	const char	*p = r->head;
	size_t		 n = strlen(name);

	while (p != NULL && (p = strchr(p, '\n')) != NULL) {
		p++;
		if (strncasecmp(p, name, n) == 0 && p[n] == ':') {
			p += n + 1;
			while (*p == ' ')
				p++;
			return strndup(p, strcspn(p, "\r\n"));
		}
	}
	return NULL;
}

int
httpc_closed(int fd, int timeout_ms)
{
	int64_t	deadline = httpc_now() + timeout_ms;
	char	buf[4096];
	ssize_t	n;

	while (httpc_wait(fd, deadline)) {
		n = recv(fd, buf, sizeof buf, 0);
		if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
			return 1;
	}
	return 0;
}

void
httpc_resp_clear(struct httpc_resp *r)
{
	free(r->head);
	free(r->body);
	memset(r, 0, sizeof r[0]);
}
