/*
 * mosctl_api: mosctl's client of the gateway's HTTP API (--url, --token-file,
 * --cacert). A small blocking HTTP/1.1 client, one connection per request,
 * with OpenSSL for https:// URLs (the server certificate is verified against
 * the system's store or --cacert, and its name against the URL's host).
 * mosctl_api_stream reads a body as it comes (an event stream).
 */
#ifndef MOSCTL_API_H
#define MOSCTL_API_H

#include <signal.h>
#include <stddef.h>

struct mosctl;
struct json_t;

#define MOSCTL_API_TIMEOUT_S	30	/* connect, each read and write */
#define MOSCTL_API_MAX_BODY	(256 * 1024 * 1024)
#define MOSCTL_API_MAX_HEAD	65536	/* a stream's status line and headers */

struct mosctl_resp {
	int	 status;
	char	*ctype;		/* Content-Type, "" if none */
	char	*body;		/* NUL-terminated */
	size_t	 len;
};

/*
 * A request to the API: path (with its query) below the URL, more header
 * lines ("Name: value\r\n" each, checked by the caller; NULL: none), a body
 * of that type (NULL: none). 0 and the response, or -1 after printing why
 * (no connection, TLS failure, malformed answer).
 */
int	 mosctl_api_request(struct mosctl *, const char *method,
	    const char *path, const char *hdrs, const char *ctype,
	    const char *body, size_t len, struct mosctl_resp *);
/*
 * GET path and parse a 2xx JSON object into *out. Another status prints the
 * problem's detail. Returns a MOSCTL_EXIT_* status (see mosctl_api_call).
 */
int	 mosctl_api_get_json(struct mosctl *, const char *path,
	    struct json_t **out);
/*
 * The same for any method, with header lines and a body as for
 * mosctl_api_request. An error status prints "mosctl: STATUS title:
 * detail" (a problem+json) and maps to an exit status as for --db:
 * 404/409/412 1, 400/413/422 64, anything else (401, 403, 5xx) 69.
 */
int	 mosctl_api_call(struct mosctl *, const char *method,
	    const char *path, const char *hdrs, const char *ctype,
	    const char *body, size_t len, struct json_t **out);
void	 mosctl_resp_clear(struct mosctl_resp *);
/* Print a JSON value compact on one line of ctl->out (--json). */
void	 mosctl_json_line(struct mosctl *, struct json_t *);

/* A body read as it arrives (GET /v1/events). */
struct mosctl_stream {
	/* each piece of the body (chunked coding undone); non-zero stops */
	int			(*fn)(void *arg, const char *, size_t);
	void			 *arg;
	int			  idle_s;	/* nothing for this long: broken */
	volatile sig_atomic_t	 *cancel;	/* set (by a signal): stop */
};
/*
 * GET path (with header lines as for mosctl_api_request) and hand a 2xx
 * body to st->fn as it arrives, until it ends, fn stops it or *cancel is
 * set: then MOSCTL_EXIT_OK. *status is the HTTP status (0: no answer;
 * -1: nothing was tried, the URL, token file or CA file is wrong). A
 * status that is not 2xx is read whole and printed as mosctl_api_call
 * does, with its exit status; a connection that fails, breaks or stays
 * silent for idle_s is printed and gives MOSCTL_EXIT_API.
 */
int	 mosctl_api_stream(struct mosctl *, const char *path,
	    const char *hdrs, const struct mosctl_stream *, int *status);
/* Free what the client keeps (TLS context, token). */
void	 mosctl_api_close(struct mosctl *);

#endif /* MOSCTL_API_H */
