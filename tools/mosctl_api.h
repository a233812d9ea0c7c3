/*
 * mosctl_api: mosctl's client of the gateway's HTTP API (--url, --token-file,
 * --cacert). A small blocking HTTP/1.1 client, one connection per request,
 * with OpenSSL for https:// URLs (the server certificate is verified against
 * the system's store or --cacert, and its name against the URL's host).
 */
#ifndef MOSCTL_API_H
#define MOSCTL_API_H

#include <stddef.h>

struct mosctl;
struct json_t;

#define MOSCTL_API_TIMEOUT_S	30	/* connect, each read and write */
#define MOSCTL_API_MAX_BODY	(256 * 1024 * 1024)

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
/* Free what the client keeps (TLS context, token). */
void	 mosctl_api_close(struct mosctl *);

#endif /* MOSCTL_API_H */
