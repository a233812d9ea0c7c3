/*
 * httpc: a small HTTP/1.1 client for the API tests, on plain blocking
 * sockets with deadlines: raw requests (so that tests can send what a
 * well-behaved client never would), one response read at a time from a
 * kept-alive connection.
 */
#ifndef HTTPC_H
#define HTTPC_H

#include <stddef.h>
#include <stdint.h>

#define HTTPC_TIMEOUT_MS	10000

struct httpc_resp {
	int	 status;	/* 0: no response (closed or timed out) */
	char	*head;		/* status line and headers */
	char	*body;		/* NUL-terminated */
	size_t	 body_len;
};

/* Connect to 127.0.0.1:port. The descriptor, or -1. */
int		 httpc_connect(uint16_t port);
/* Write all of it. 0, or -1 (peer gone). */
int		 httpc_write(int fd, const void *, size_t);
/* Read one response (Content-Length or until close). 0, or -1. */
int		 httpc_read(int fd, struct httpc_resp *, int timeout_ms);
/*
 * A request on fd: method, path, Bearer token (NULL: none), extra header
 * lines ("K: V\r\n", may be NULL), a body (NULL: none) sent as
 * application/json. 0 and the response, or -1.
 */
int		 httpc_do(int fd, const char *method, const char *path,
		    const char *token, const char *headers, const char *body,
		    struct httpc_resp *);
/* The same on a new connection closed afterwards. */
int		 httpc_once(uint16_t port, const char *method, const char *path,
		    const char *token, const char *headers, const char *body,
		    struct httpc_resp *);
/*
 * POST /v1/assets:import with an NDJSON body on a new connection, answered
 * within timeout_ms (an import may take longer than other requests).
 */
int		 httpc_import(uint16_t port, const char *token,
		    const char *ndjson, int timeout_ms, struct httpc_resp *);
/* A header's value (malloc'd), or NULL. */
char		*httpc_header(const struct httpc_resp *, const char *name);
/* True once the peer has closed the connection (within timeout_ms). */
int		 httpc_closed(int fd, int timeout_ms);
void		 httpc_resp_clear(struct httpc_resp *);

#endif /* HTTPC_H */
