/*
 * The HTTP API: evhttp on the daemon's event loop, for the MAM, its
 * workers and scripts. This file holds the server, the limits, Bearer
 * token authentication with roles, routing and the problem+json errors;
 * each resource has its own file (api_assets.c, api_queue.c, api_jobs.c,
 * api_links.c, api_history.c) with its routes in api_routes[].
 *
 * Limits are enforced in front of evhttp, by a filter bufferevent under
 * every connection (evhttp_set_bevcb): it sees the raw bytes, finds the end
 * of each request head and counts the body, and answers what is over a
 * limit itself with a problem+json reply and a lingering close (the rest
 * of the input is read and dropped until the peer closes, for at most
 * request_deadline; then the socket is shut down): 431 for a head over
 * max_header_size, 413 for a Content-Length over max_body_size, 411 for a
 * body without Content-Length (chunked), 408 for a request not complete
 * within request_deadline, 503 for a connection over max_connections.
 * So evhttp only ever sees requests within limits, and nothing it would
 * answer with a bare HTML page.
 *
 * With [api] tls_cert and tls_key the socket under the filter is an OpenSSL
 * bufferevent (api_tls.c builds its context): the filter sees plaintext
 * and every limit stays as it is; a handshake not finished within
 * tls_handshake_timeout closes the connection.
 *
 * Handlers never touch SQLite on the loop thread: they hand the work to the
 * bookkeeping thread (dbw.c) and answer from its done callback.
 */
#include <sys/socket.h>

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/http_struct.h>
#include <event2/keyvalq_struct.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <openssl/ssl.h>

#include "gateway/gateway.h"

#define API_PROBLEM_PREFIX	"urn:mosgw:problem:"
#define API_PATH_SEGS		8
#define API_TOKEN_MIN		16
#define API_TOKEN_MAX		256
#define API_HARD_HEADER_MUL	4	/* evhttp's own limit: a safety net */

struct api_token {
	char		*name;
	enum api_role	 role;
	unsigned char	 hash[SHA256_DIGEST_LENGTH];
};

enum api_conn_state {
	AC_HEAD = 0,		/* reading a request head */
	AC_BODY,		/* passing its body */
	AC_DEAD,		/* answered by us: drop the rest */
};

/* One connection, seen through the filter in front of evhttp. */
struct api_conn {
	struct api		*api;
	struct bufferevent	*under;		/* the socket (maybe TLS) */
	SSL			*ssl;		/* under TLS; owned by under */
	struct event		*deadline;
	struct event		*handshake;	/* TLS: its deadline */
	enum api_conn_state	 state;
	uint64_t		 body;		/* body bytes still to pass */
	bool			 counted;
	bool			 close_after;	/* the client asked to close */
	TAILQ_ENTRY(api_conn)	 entry;
};
TAILQ_HEAD(api_conn_list, api_conn);

struct api {
	struct gw			*gw;
	struct evhttp			*http;
	struct evhttp_bound_socket	*sock;
	struct api_token		*tokens;
	size_t				 ntokens;
	char				*tokens_file;
	int64_t				 max_header;
	int64_t				 max_body;
	int64_t				 deadline_ms;
	int				 max_conn;
	int				 nconn;
	struct api_conn_list		 conns;
	int				 port;		/* bound */
	SSL_CTX				*tls;		/* NULL: plain HTTP */
	int64_t				 handshake_ms;
	struct api_jobs			*jobs;		/* api_jobs.c */
};

static const char *const role_names[] = { "read", "write", "worker", "admin",
    NULL };

/* The reason phrase of the statuses we send. */
static const char *
api_reason(int status)
{
	switch (status) {
	case 200: return "OK";
	case 201: return "Created";
	case 202: return "Accepted";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 409: return "Conflict";
	case 411: return "Length Required";
	case 412: return "Precondition Failed";
	case 413: return "Content Too Large";
	case 415: return "Unsupported Media Type";
	case 422: return "Unprocessable Content";
	case 431: return "Request Header Fields Too Large";
	case 503: return "Service Unavailable";
	default: return "Error";
	}
}

const char *
api_role_name(enum api_role r)
{
	return r >= API_READ && r <= API_ADMIN ? role_names[r] : "none";
}

/* A problem+json document (RFC 9457), as text; malloc'd. */
static char *
api_problem_text(int status, const char *type, const char *title,
    const char *field, const char *detail)
{
	json_t	*o;
	char	*s, *uri;

	xasprintf(&uri, API_PROBLEM_PREFIX "%s", type);
	o = json_pack("{s:s, s:s, s:i, s:s}", "type", uri, "title", title,
	    "status", status, "detail", detail);
	if (o == NULL)
		fatalx("json_pack failed");
	if (field != NULL)
		json_object_set_new(o, "field", json_string(field));
	if ((s = json_dumps(o, JSON_COMPACT)) == NULL)
		fatalx("out of memory");
	json_decref(o);
	free(uri);
	return s;
}

/* ------------------------------------------------------------------------ */
/* Tokens */

/* Free a token table. */
static void
api_tokens_free(struct api_token *t, size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++)
		free(t[i].name);
	free(t);
}

/* Is s a name: 1..63 of A-Z a-z 0-9 _ . - ? */
bool
api_name_ok(const char *s)
{
	size_t	n = strlen(s);

	return n > 0 && n <= 63 && strspn(s, "abcdefghijklmnopqrstuvwxyz"
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") == n;
}

/*
 * Read a tokens file: "NAME ROLE TOKEN" per line, '#' comments and blank
 * lines allowed. On error -1 and *err ("FILE:LINE: ...").
 */
int
api_tokens_load(const char *file, struct api_token **out, size_t *nout,
    char **err)
{
	struct api_token	*t = NULL;
	FILE			*f;
	char			*line = NULL, *save, *name, *role, *tok, *more;
	size_t			 cap = 0, n = 0, i;
	int			 lineno = 0, r;
	bool			 bad = false;

	*out = NULL;
	*nout = 0;
	if ((f = fopen(file, "r")) == NULL) {
		xasprintf(err, "%s: %s", file, strerror(errno));
		return -1;
	}
	while (!bad && getline(&line, &cap, f) != -1) {
		lineno++;
		line[strcspn(line, "\r\n")] = '\0';
		name = strtok_r(line, " \t", &save);
		if (name == NULL || *name == '#')
			continue;
		role = strtok_r(NULL, " \t", &save);
		tok = strtok_r(NULL, " \t", &save);
		more = strtok_r(NULL, " \t", &save);
		if (role == NULL || tok == NULL || more != NULL) {
			xasprintf(err, "%s:%d: expected NAME ROLE TOKEN", file,
			    lineno);
			bad = true;
			break;
		}
		for (r = 0; role_names[r] != NULL; r++) {
			if (strcmp(role, role_names[r]) == 0)
				break;
		}
		if (!api_name_ok(name))
			xasprintf(err, "%s:%d: bad name '%s': use 1 to 63 of "
			    "A-Z a-z 0-9 _ . -", file, lineno, name);
		else if (role_names[r] == NULL)
			xasprintf(err, "%s:%d: role '%s' must be read, write, "
			    "worker or admin", file, lineno, role);
		else if (strlen(tok) < API_TOKEN_MIN ||
		    strlen(tok) > API_TOKEN_MAX)
			xasprintf(err, "%s:%d: the token of '%s' must be %d to "
			    "%d characters", file, lineno, name, API_TOKEN_MIN,
			    API_TOKEN_MAX);
		else
			goto ok;
		bad = true;
		break;
ok:
		t = xreallocarray(t, n + 1, sizeof *t);
		t[n].name = xstrdup(name);
		t[n].role = (enum api_role)r;
		SHA256((const unsigned char *)tok, strlen(tok), t[n].hash);
		for (i = 0; i < n; i++) {
			if (strcmp(t[i].name, name) == 0 ||
			    memcmp(t[i].hash, t[n].hash, sizeof t[n].hash) ==
			    0) {
				xasprintf(err, "%s:%d: the name or token of "
				    "'%s' is already used by '%s'", file,
				    lineno, name, t[i].name);
				bad = true;
			}
		}
		n++;
	}
	free(line);
	fclose(f);
	if (bad) {
		api_tokens_free(t, n);
		return -1;
	}
	*out = t;
	*nout = n;
	return 0;
}

/*
 * The token of "Basic base64(USER:TOKEN)" (any user name; a browser's
 * login), decoded into buf. NULL if it is not one.
 */
static const char *
api_basic_token(const char *b64, char *buf, size_t len)
{
	const char	*colon;
	size_t		 n = strlen(b64);
	int		 got;

	while (n > 0 && b64[n - 1] == ' ')
		n--;
	if (n == 0 || n % 4 != 0 || n / 4 * 3 + 1 > len)
		return NULL;
	if ((got = EVP_DecodeBlock((unsigned char *)buf,
	    (const unsigned char *)b64, (int)n)) < 0)
		return NULL;
	/* EVP_DecodeBlock counts the padding as zero bytes */
	if (n >= 1 && b64[n - 1] == '=')
		got--;
	if (n >= 2 && b64[n - 2] == '=')
		got--;
	buf[got] = '\0';
	if (strlen(buf) != (size_t)got || (colon = strchr(buf, ':')) == NULL)
		return NULL;
	return colon + 1;
}

/*
 * The token a request carries (Authorization: Bearer TOKEN, or Basic with
 * the token as the password), compared with every configured one in
 * constant time (hashes of equal length, no early exit). NULL if none.
 */
static const struct api_token *
api_auth(struct api *api, struct evhttp_request *req)
{
	const char		*h;
	const struct api_token	*found = NULL;
	unsigned char		 hash[SHA256_DIGEST_LENGTH];
	char			 basic[API_TOKEN_MAX * 2];
	size_t			 i;

	h = evhttp_find_header(evhttp_request_get_input_headers(req),
	    "Authorization");
	if (h != NULL && strncasecmp(h, "Basic ", 6) == 0) {
		h += 6;
		while (*h == ' ')
			h++;
		if ((h = api_basic_token(h, basic, sizeof basic)) == NULL)
			return NULL;
	} else if (h != NULL && strncasecmp(h, "Bearer ", 7) == 0) {
		h += 7;
		while (*h == ' ')
			h++;
	} else
		return NULL;
	SHA256((const unsigned char *)h, strlen(h), hash);
	for (i = 0; i < api->ntokens; i++) {
		if (CRYPTO_memcmp(hash, api->tokens[i].hash, sizeof hash) == 0)
			found = &api->tokens[i];
	}
	return found;
}

/* ------------------------------------------------------------------------ */
/* The filter in front of evhttp: limits */

/* The socket is written out: close our side (the lingering close). */
static void
api_conn_flushed(struct evbuffer *buf, const struct evbuffer_cb_info *info,
    void *arg)
{
	struct api_conn	*c = arg;

	if (info->n_deleted == 0 || evbuffer_get_length(buf) != 0)
		return;
	evbuffer_remove_cb(buf, api_conn_flushed, c);
	if (c->ssl != NULL)
		SSL_shutdown(c->ssl);		/* close_notify */
	shutdown(bufferevent_getfd(c->under), SHUT_WR);
}

/*
 * No more requests on this connection: what still comes is read and
 * dropped, for at most request_deadline (a client streaming a body after
 * its 413 would otherwise hold the connection for as long as it sends).
 */
static void
api_conn_linger(struct api_conn *c)
{
	struct timeval	tv;

	c->state = AC_DEAD;
	evtimer_del(c->deadline);
	tv.tv_sec = (time_t)(c->api->deadline_ms / 1000);
	tv.tv_usec = (suseconds_t)(c->api->deadline_ms % 1000) * 1000;
	evtimer_add(c->deadline, &tv);
}

/* Answer a request over a limit ourselves and drop the rest of the input. */
static void
api_conn_reject(struct api_conn *c, int status, const char *type,
    const char *title, const char *field, const char *detail)
{
	struct evbuffer	*out = bufferevent_get_output(c->under);
	char		*body, detail_status[16];

	if (c->state == AC_DEAD)
		return;
	api_conn_linger(c);
	body = api_problem_text(status, type, title, field, detail);
	evbuffer_add_printf(out, "HTTP/1.1 %d %s\r\nContent-Type: "
	    "application/problem+json\r\nContent-Length: %zu\r\n"
	    "Connection: close\r\n\r\n%s", status, api_reason(status),
	    strlen(body), body);
	free(body);
	evbuffer_add_cb(out, api_conn_flushed, c);
	bufferevent_enable(c->under, EV_WRITE);
	snprintf(detail_status, sizeof detail_status, "%d", status);
	metrics_count(MET_HTTP, "-", "-", detail_status);
	log_event(LL_INFO, "api.reject", "status=%d problem=%s", status, type);
}

/* request_deadline passed with a request incomplete, or a lingering close. */
static void
api_conn_deadline_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct api_conn	*c = arg;
	char		 detail[128];

	(void)fd;
	(void)ev;
	if (c->state == AC_DEAD) {
		/* the lingering close is over: the next read sees the end */
		shutdown(bufferevent_getfd(c->under), SHUT_RDWR);
		return;
	}
	snprintf(detail, sizeof detail, "the request was not complete within "
	    "%.1f s ([api] request_deadline)",
	    (double)c->api->deadline_ms / 1000);
	api_conn_reject(c, 408, "request-timeout", "Request not complete in "
	    "time", NULL, detail);
}

/* Content-Length and Transfer-Encoding of a request head. */
static int
api_head_scan(const char *head, size_t len, int64_t *clen, bool *te)
{
	const char	*p = head, *end = head + len, *nl, *v;
	char		*e;
	long long	 n;

	*clen = -1;
	*te = false;
	while (p < end && (nl = memchr(p, '\n', (size_t)(end - p))) != NULL) {
		p = nl + 1;
		if (end - p > 15 && strncasecmp(p, "Content-Length:", 15) ==
		    0) {
			v = p + 15;
			while (*v == ' ' || *v == '\t')
				v++;
			errno = 0;
			if (!isdigit((unsigned char)*v))
				return -1;
			n = strtoll(v, &e, 10);
			while (*e == ' ' || *e == '\t')
				e++;
			if (errno != 0 || (*e != '\r' && *e != '\n') ||
			    *clen != -1)
				return -1;	/* two of them: which one? */
			*clen = n;
		} else if (end - p > 18 && strncasecmp(p, "Transfer-Encoding:",
		    18) == 0)
			*te = true;
	}
	if (*clen == -1)
		*clen = 0;
	return 0;
}

/* The input filter: heads within max_header, bodies within max_body. */
static enum bufferevent_filter_result
api_conn_input(struct evbuffer *src, struct evbuffer *dst, ev_ssize_t lim,
    enum bufferevent_flush_mode mode, void *arg)
{
	struct api_conn		*c = arg;
	struct api		*api = c->api;
	struct evbuffer_ptr	 pos;
	struct timeval		 tv;
	char			*head, detail[160];
	size_t			 have, hlen, n;
	int64_t			 clen;
	bool			 te, moved = false;

	(void)lim;
	(void)mode;
	for (;;) {
		if (c->state == AC_DEAD) {
			evbuffer_drain(src, evbuffer_get_length(src));
			return BEV_OK;
		}
		if ((have = evbuffer_get_length(src)) == 0)
			return BEV_OK;
		if (c->state == AC_BODY) {
			n = have < c->body ? have : (size_t)c->body;
			evbuffer_remove_buffer(src, dst, n);
			moved = true;
			if ((c->body -= n) == 0) {
				c->state = AC_HEAD;
				evtimer_del(c->deadline);
			}
			continue;
		}
		if (!evtimer_pending(c->deadline, NULL)) {
			tv.tv_sec = (time_t)(api->deadline_ms / 1000);
			tv.tv_usec = (suseconds_t)(api->deadline_ms % 1000) *
			    1000;
			evtimer_add(c->deadline, &tv);
		}
		pos = evbuffer_search(src, "\r\n\r\n", 4, NULL);
		/*
		 * BEV_OK makes the filter call us again while input is left,
		 * and is what tells evhttp that there is something to read.
		 */
		if (pos.pos < 0 && have <= (size_t)api->max_header)
			return moved ? BEV_OK : BEV_NEED_MORE;
		hlen = pos.pos < 0 ? have : (size_t)pos.pos + 4;
		if (hlen > (size_t)api->max_header) {
			snprintf(detail, sizeof detail, "the request line and "
			    "headers are larger than %lld bytes ([api] "
			    "max_header_size)", (long long)api->max_header);
			api_conn_reject(c, 431, "header-too-large", "Request "
			    "header fields too large", NULL, detail);
			continue;
		}
		head = (char *)evbuffer_pullup(src, (ev_ssize_t)hlen);
		if (api_head_scan(head, hlen, &clen, &te) != 0) {
			api_conn_reject(c, 400, "bad-request", "Malformed "
			    "request", "Content-Length", "Content-Length is "
			    "not one decimal number of bytes");
			continue;
		}
		if (te) {
			api_conn_reject(c, 411, "length-required", "Length "
			    "required", "Transfer-Encoding", "a request body "
			    "needs Content-Length (chunked bodies are not "
			    "accepted)");
			continue;
		}
		if (clen > api->max_body) {
			snprintf(detail, sizeof detail, "the body is %lld "
			    "bytes, more than %lld ([api] max_body_size)",
			    (long long)clen, (long long)api->max_body);
			api_conn_reject(c, 413, "body-too-large", "Request "
			    "body too large", "Content-Length", detail);
			continue;
		}
		evbuffer_remove_buffer(src, dst, hlen);
		moved = true;
		c->body = (uint64_t)clen;
		if (clen > 0)
			c->state = AC_BODY;
		else
			evtimer_del(c->deadline);
	}
}

/*
 * The filter is freed with its connection: by evhttp, or later by libevent
 * (a connection that was just answered is finalized by the loop), then
 * after api_free has let go of it (api NULL).
 */
static void
api_conn_free(void *arg)
{
	struct api_conn	*c = arg;

	if (c->api != NULL) {
		if (c->counted)
			c->api->nconn--;
		TAILQ_REMOVE(&c->api->conns, c, entry);
	}
	evbuffer_remove_cb(bufferevent_get_output(c->under), api_conn_flushed,
	    c);
	event_free(c->deadline);
	if (c->handshake != NULL)
		event_free(c->handshake);
	free(c);
}

/*
 * TLS: the handshake is not done in time. Shut the socket down; the TLS
 * bufferevent sees the end and evhttp frees the connection.
 */
static void
api_conn_handshake_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct api_conn	*c = arg;

	(void)fd;
	(void)ev;
	if (SSL_is_init_finished(c->ssl))
		return;
	log_event(LL_INFO, "api.reject", "reason=tls-handshake-timeout "
	    "ms=%lld", (long long)c->api->handshake_ms);
	shutdown(bufferevent_getfd(c->under), SHUT_RDWR);
}

/* evhttp's new connection: the socket under our filter. */
static struct bufferevent *
api_bevcb(struct event_base *base, void *arg)
{
	struct api		*api = arg;
	struct api_conn		*c;
	struct bufferevent	*bev;
	char			 detail[128];

	struct timeval		 tv;

	c = xcalloc(1, sizeof *c);
	c->api = api;
	if (api->tls != NULL) {
		if ((c->ssl = SSL_new(api->tls)) == NULL)
			fatalx("SSL_new failed");
		c->under = bufferevent_openssl_socket_new(base, -1, c->ssl,
		    BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE);
		if (c->under == NULL || (c->handshake = evtimer_new(base,
		    api_conn_handshake_cb, c)) == NULL)
			fatalx("bufferevent_openssl_socket_new failed");
		bufferevent_openssl_set_allow_dirty_shutdown(c->under, 1);
		tv.tv_sec = (time_t)(api->handshake_ms / 1000);
		tv.tv_usec = (suseconds_t)(api->handshake_ms % 1000) * 1000;
		evtimer_add(c->handshake, &tv);
	} else if ((c->under = bufferevent_socket_new(base, -1,
	    BEV_OPT_CLOSE_ON_FREE)) == NULL)
		fatalx("bufferevent_socket_new failed");
	if ((c->deadline = evtimer_new(base, api_conn_deadline_cb, c)) == NULL)
		fatalx("evtimer_new failed");
	if ((bev = bufferevent_filter_new(c->under, api_conn_input, NULL,
	    BEV_OPT_CLOSE_ON_FREE, api_conn_free, c)) == NULL)
		fatalx("bufferevent_filter_new failed");
	TAILQ_INSERT_TAIL(&api->conns, c, entry);
	if (api->nconn >= api->max_conn) {
		snprintf(detail, sizeof detail, "more than %d connections are "
		    "open ([api] max_connections)", api->max_conn);
		api_conn_reject(c, 503, "too-many-connections", "Too many "
		    "connections", NULL, detail);
	} else {
		c->counted = true;
		api->nconn++;
	}
	return bev;
}

/* The connection of a request (NULL once the client is gone). */
static struct api_conn *
api_conn_of(struct api *api, struct evhttp_request *req)
{
	struct evhttp_connection	*evcon;
	struct bufferevent		*bev, *under;
	struct api_conn			*c;

	if ((evcon = evhttp_request_get_connection(req)) == NULL ||
	    (bev = evhttp_connection_get_bufferevent(evcon)) == NULL ||
	    (under = bufferevent_get_underlying(bev)) == NULL)
		return NULL;
	TAILQ_FOREACH(c, &api->conns, entry) {
		if (c->under == under)
			return c;
	}
	return NULL;
}

/*
 * A client that wants the connection closed after this reply: evhttp
 * would close it as soon as the reply is in the filter, before the socket
 * has it. Keep evhttp's side open and close ours once the reply is out.
 */
static void
api_keep_open(struct api *api, struct evhttp_request *req)
{
	struct evkeyvalq	*in = evhttp_request_get_input_headers(req);
	const char		*h = evhttp_find_header(in, "Connection");
	struct api_conn		*c;
	bool			 close;

	close = h != NULL ? strcasecmp(h, "close") == 0 :
	    req->major == 1 && req->minor == 0;
	if (h != NULL && strcasecmp(h, "keep-alive") == 0)
		close = false;
	if (!close || (c = api_conn_of(api, req)) == NULL)
		return;
	evhttp_remove_header(in, "Connection");
	evhttp_add_header(in, "Connection", "keep-alive");
	c->close_after = true;
}

/* ------------------------------------------------------------------------ */
/* Requests, replies */

/* Free a request context (after its reply). */
static void
api_req_free(struct api_req *r)
{
	size_t	i;

	for (i = 0; i < nitems(r->param); i++)
		free(r->param[i]);
	evhttp_clear_headers(r->query);
	free(r->query);
	if (r->stream_ev != NULL)
		event_free(r->stream_ev);
	free(r->who);
	free(r);
}

/* Log a reply and add the headers every reply carries. */
static void
api_reply_head(struct api_req *r, int status, const char *ctype)
{
	struct evkeyvalq	*h = evhttp_request_get_output_headers(r->req);
	char			 st[16];

	snprintf(st, sizeof st, "%d", status);
	metrics_count(MET_HTTP, r->route != NULL ? r->route : "-", r->method,
	    st);
	log_event(LL_DEBUG, "api.reply", "method=%s path=%s status=%d who=%s",
	    r->method, log_q(evhttp_request_get_uri(r->req)), status,
	    log_q(r->who != NULL ? r->who : "-"));
	evhttp_add_header(h, "Content-Type", ctype);
	evhttp_add_header(h, "Cache-Control", "no-store");
}

/*
 * Hand evhttp (part of) a reply through send(), then push it through the
 * filter, and close once it is out if the client asked (last).
 */
static void
api_push(struct api_req *r, bool last, void (*send)(struct api_req *,
    void *), void *arg)
{
	struct evhttp_connection *evcon;
	struct bufferevent	*bev;
	struct api_conn		*c;
	struct evbuffer		*out;

	evcon = evhttp_request_get_connection(r->req);
	bev = evcon != NULL ? evhttp_connection_get_bufferevent(evcon) : NULL;
	c = api_conn_of(r->api, r->req);
	if (bev != NULL)
		bufferevent_incref(bev);	/* c lives as long as bev */
	send(r, arg);
	if (bev == NULL)
		return;
	/*
	 * evhttp writes the reply while the filter's EV_WRITE is off and
	 * turns it on afterwards, which a filter does not notice: push it.
	 */
	bufferevent_flush(bev, EV_WRITE, BEV_FLUSH);
	if (last && c != NULL && c->close_after && c->state != AC_DEAD) {
		api_conn_linger(c);
		out = bufferevent_get_output(c->under);
		if (evbuffer_get_length(out) == 0) {
			if (c->ssl != NULL)
				SSL_shutdown(c->ssl);
			shutdown(bufferevent_getfd(c->under), SHUT_WR);
		} else
			evbuffer_add_cb(out, api_conn_flushed, c);
	}
	bufferevent_decref(bev);
}

struct api_body {
	int		 status;
	struct evbuffer	*b;
};

static void
api_send_cb(struct api_req *r, void *arg)
{
	struct api_body	*x = arg;

	evhttp_send_reply(r->req, x->status, api_reason(x->status), x->b);
}

/* Send a reply with a body of that type and free the request context. */
static void
api_send(struct api_req *r, int status, const char *ctype, const char *body,
    size_t len)
{
	struct api_body	x;

	api_reply_head(r, status, ctype);
	if ((x.b = evbuffer_new()) == NULL)
		fatalx("evbuffer_new failed");
	evbuffer_add(x.b, body, len);
	x.status = status;
	api_push(r, true, api_send_cb, &x);
	evbuffer_free(x.b);
	api_req_free(r);
}

/* ------------------------------------------------------------------------ */
/* Streamed replies (chunked): downloads built a piece at a time */

#define API_STREAM_LOW		(64 * 1024)	/* ask for more below */
#define API_STREAM_POLL_MS	5

static void
api_stream_start_cb(struct api_req *r, void *arg)
{
	(void)arg;
	evhttp_send_reply_start(r->req, 200, "OK");
}

static void
api_stream_chunk_cb(struct api_req *r, void *arg)
{
	evhttp_send_reply_chunk(r->req, arg);
}

static void
api_stream_end_cb(struct api_req *r, void *arg)
{
	(void)arg;
	evhttp_send_reply_end(r->req);
}

void
api_stream_start(struct api_req *r, const char *ctype)
{
	api_reply_head(r, 200, ctype);
	api_push(r, false, api_stream_start_cb, NULL);
}

/* Is the client still there, and has it taken most of what we sent? */
static void
api_stream_poll_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct api_req	*r = arg;
	struct api_conn	*c;
	struct timeval	 tv = { 0, API_STREAM_POLL_MS * 1000 };

	(void)fd;
	(void)ev;
	if (evhttp_request_get_connection(r->req) == NULL ||
	    (c = api_conn_of(r->api, r->req)) == NULL) {
		r->more(r->more_arg, true);
		return;
	}
	if (evbuffer_get_length(bufferevent_get_output(c->under)) >
	    API_STREAM_LOW) {
		evtimer_add(r->stream_ev, &tv);
		return;
	}
	r->more(r->more_arg, false);
}

void
api_stream_write(struct api_req *r, struct evbuffer *b,
    void (*more)(void *, bool gone), void *arg)
{
	struct timeval	tv = { 0, 0 };

	if (r->stream_ev == NULL && (r->stream_ev = evtimer_new(
	    r->api->gw->base, api_stream_poll_cb, r)) == NULL)
		fatalx("evtimer_new failed");
	r->more = more;
	r->more_arg = arg;
	if (evhttp_request_get_connection(r->req) != NULL &&
	    evbuffer_get_length(b) > 0)
		api_push(r, false, api_stream_chunk_cb, b);
	evtimer_add(r->stream_ev, &tv);	/* from the loop, not from here */
}

void
api_stream_end(struct api_req *r)
{
	if (evhttp_request_get_connection(r->req) == NULL)
		evhttp_send_reply_end(r->req);	/* gone: frees the request */
	else
		api_push(r, true, api_stream_end_cb, NULL);
	api_req_free(r);
}

/*
 * Start an open-ended streamed reply (SSE: 200, chunked) and free r: the
 * request stays open, written to with api_sse_chunk until the client goes
 * away.
 */
struct evhttp_request *
api_sse_start(struct api_req *r, const char *ctype)
{
	struct evhttp_request	*req = r->req;

	api_reply_head(r, 200, ctype);
	api_push(r, false, api_stream_start_cb, NULL);
	api_req_free(r);
	return req;
}

/* Write a piece of an SSE reply and push it to the socket. */
void
api_sse_chunk(struct evhttp_request *req, struct evbuffer *b)
{
	struct evhttp_connection *evcon = evhttp_request_get_connection(req);
	struct bufferevent	*bev;

	evhttp_send_reply_chunk(req, b);
	/* as in api_send: the filter does not see evhttp enable EV_WRITE */
	if (evcon != NULL && (bev = evhttp_connection_get_bufferevent(evcon))
	    != NULL)
		bufferevent_flush(bev, EV_WRITE, BEV_FLUSH);
}

/* Bytes of an SSE reply not yet taken by the client's socket. */
size_t
api_sse_backlog(struct evhttp_request *req)
{
	struct evhttp_connection *evcon = evhttp_request_get_connection(req);
	struct bufferevent	*bev, *under;
	size_t			 n = 0;

	if (evcon == NULL || (bev = evhttp_connection_get_bufferevent(evcon))
	    == NULL)
		return 0;
	n = evbuffer_get_length(bufferevent_get_output(bev));
	if ((under = bufferevent_get_underlying(bev)) != NULL)
		n += evbuffer_get_length(bufferevent_get_output(under));
	return n;
}

void
api_reply_body(struct api_req *r, int status, const char *ctype,
    const char *body, size_t len)
{
	api_send(r, status, ctype, body, len);
}

void
api_reply_json(struct api_req *r, int status, struct json_t *o)
{
	char	*s;

	if ((s = json_dumps(o, JSON_COMPACT)) == NULL)
		fatalx("out of memory");
	json_decref(o);
	api_send(r, status, "application/json", s, strlen(s));
	free(s);
}

void
api_problem(struct api_req *r, int status, const char *type,
    const char *title, const char *field, const char *fmt, ...)
{
	va_list	 ap;
	char	*detail, *s;

	va_start(ap, fmt);
	if (vasprintf(&detail, fmt, ap) < 0)
		fatalx("out of memory");
	va_end(ap);
	s = api_problem_text(status, type, title, field, detail);
	/* the status page: Basic, so that a browser asks for the token */
	if (status == 401)
		evhttp_add_header(evhttp_request_get_output_headers(r->req),
		    "WWW-Authenticate", r->route != NULL && strcmp(r->route,
		    "/") == 0 ? "Basic realm=\"mosgw\", charset=\"UTF-8\"" :
		    "Bearer realm=\"mosgw\"");
	if (status == 503)
		evhttp_add_header(evhttp_request_get_output_headers(r->req),
		    "Retry-After", "1");
	api_send(r, status, "application/problem+json", s, strlen(s));
	free(s);
	free(detail);
}

/* A database failure (not the client's fault): 503, try again. */
void
api_problem_db(struct api_req *r, int rc, const char *err)
{
	api_problem(r, 503, "storage-unavailable", "Storage unavailable",
	    NULL, "the database could not do it (%s%s%s); try again",
	    queue_strerror(rc), err != NULL ? ": " : "", err != NULL ? err :
	    "");
}

/* The request body as a JSON object; NULL after a 400/415 reply. */
struct json_t *
api_body_json(struct api_req *r)
{
	struct evbuffer	*b = evhttp_request_get_input_buffer(r->req);
	const char	*ct;
	json_error_t	 je;
	json_t		*o;
	size_t		 len = evbuffer_get_length(b);

	ct = evhttp_find_header(evhttp_request_get_input_headers(r->req),
	    "Content-Type");
	if (ct != NULL && strncasecmp(ct, "application/json", 16) != 0) {
		api_problem(r, 415, "unsupported-media-type", "Unsupported "
		    "media type", "Content-Type", "the body must be "
		    "application/json, not %s", ct);
		return NULL;
	}
	if (len == 0) {
		api_problem(r, 400, "malformed-json", "Malformed JSON", NULL,
		    "the request needs a JSON object as its body");
		return NULL;
	}
	o = json_loadb((const char *)evbuffer_pullup(b, -1), len,
	    JSON_REJECT_DUPLICATES, &je);
	if (o == NULL) {
		api_problem(r, 400, "malformed-json", "Malformed JSON", NULL,
		    "line %d, column %d: %s", je.line, je.column, je.text);
		return NULL;
	}
	if (!json_is_object(o)) {
		json_decref(o);
		api_problem(r, 400, "malformed-json", "Malformed JSON", NULL,
		    "the body must be a JSON object");
		return NULL;
	}
	return o;
}

/* The value of a query parameter, or NULL. */
const char *
api_query(struct api_req *r, const char *key)
{
	return evhttp_find_header(r->query, key);
}

/*
 * Every query parameter one of known (NULL-ended); else a 422 naming the
 * first other one and listing the known ones.
 */
bool
api_query_known(struct api_req *r, const char *const *known)
{
	struct evkeyval	*kv;
	char		 list[256];
	size_t		 i, len;

	TAILQ_FOREACH(kv, r->query, next) {
		for (i = 0; known[i] != NULL; i++)
			if (strcmp(kv->key, known[i]) == 0)
				break;
		if (known[i] != NULL)
			continue;
		list[0] = '\0';
		for (i = 0, len = 0; known[i] != NULL && len < sizeof list;
		    i++)
			len += (size_t)snprintf(list + len, sizeof list - len,
			    "%s%s", i > 0 ? ", " : "", known[i]);
		api_problem(r, 422, "invalid-parameter", "Invalid parameter",
		    kv->key, "unknown parameter '%s' (%s)", kv->key, list);
		return false;
	}
	return true;
}

struct gw *
api_gw(struct api_req *r)
{
	return r->api->gw;
}

/*
 * Has the client closed its connection? evhttp does not read while a
 * request is being answered, so look at the socket itself: end of file or
 * an error (data the client sent meanwhile counts as alive).
 */
bool
api_client_gone(struct api_req *r)
{
	struct api_conn	*c;
	ssize_t		 n;
	char		 b;

	if (evhttp_request_get_connection(r->req) == NULL ||
	    (c = api_conn_of(r->api, r->req)) == NULL || c->state == AC_DEAD)
		return true;
	n = recv(bufferevent_getfd(c->under), &b, 1, MSG_PEEK | MSG_DONTWAIT);
	return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK &&
	    errno != EINTR);
}

struct api_jobs *
api_jobs_of(struct api_req *r)
{
	return r->api->jobs;
}

/* ------------------------------------------------------------------------ */
/* Routing */

/* GET /healthz: no token needed. */
static void
api_healthz(struct api_req *r)
{
	struct gw	*gw = r->api->gw;

	api_reply_json(r, 200, json_pack("{s:s, s:s, s:I}", "status",
	    gw->stopping ? "stopping" : "ok", "version", MOSGW_VERSION,
	    "uptimeMs", (json_int_t)(util_now_ms() - gw->started_ms)));
}

const struct api_route api_routes[] = {
	{ "GET", "/healthz", API_PUBLIC, api_healthz },
	{ "GET", "/v1/assets", API_READ, api_assets_list },
	{ "POST", "/v1/assets:import", API_WRITE, api_assets_import },
	{ "PUT", "/v1/assets/{objID}", API_WRITE, api_asset_put },
	{ "GET", "/v1/assets/{objID}", API_READ, api_asset_get },
	{ "DELETE", "/v1/assets/{objID}", API_WRITE, api_asset_delete },
	{ "POST", "/v1/assets/{objID}/jobs", API_WRITE, api_job_submit },
	{ "GET", "/v1/queue/stats", API_READ, api_queue_stats },
	{ "GET", "/v1/links", API_READ, api_links },
	{ "GET", "/v1/history", API_READ, api_history },
	{ "GET", "/v1/jobs", API_READ, api_jobs_list },
	{ "POST", "/v1/jobs/claim", API_WORKER, api_jobs_claim },
	{ "GET", "/v1/jobs/{id}", API_READ, api_job_get },
	{ "POST", "/v1/jobs/{id}/heartbeat", API_WORKER, api_job_heartbeat },
	{ "POST", "/v1/jobs/{id}/complete", API_WORKER, api_job_complete },
	{ "POST", "/v1/jobs/{id}/fail", API_WORKER, api_job_fail },
	{ "POST", "/v1/jobs/{id}/requeue", API_ADMIN, api_job_requeue },
	{ "POST", "/v1/jobs/{id}/cancel", API_ADMIN, api_job_cancel },
	{ "POST", "/v1/jobs/{id}/rerun", API_ADMIN, api_job_rerun },
	{ "GET", "/v1/events", API_READ, api_events_get },
	/* api_status.c */
	{ "GET", "/readyz", API_PUBLIC, api_readyz },
	{ "GET", "/metrics", API_READ, api_metrics },
	{ "GET", "/", API_READ, api_status_page },
	{ NULL, NULL, API_PUBLIC, NULL },
};

static const char *
api_method_name(enum evhttp_cmd_type m)
{
	switch (m) {
	case EVHTTP_REQ_GET: return "GET";
	case EVHTTP_REQ_POST: return "POST";
	case EVHTTP_REQ_HEAD: return "HEAD";
	case EVHTTP_REQ_PUT: return "PUT";
	case EVHTTP_REQ_DELETE: return "DELETE";
	case EVHTTP_REQ_OPTIONS: return "OPTIONS";
	case EVHTTP_REQ_TRACE: return "TRACE";
	case EVHTTP_REQ_CONNECT: return "CONNECT";
	case EVHTTP_REQ_PATCH: return "PATCH";
	}
	return "?";
}

/*
 * Split a path into decoded segments. -1 on a bad escape, a NUL or a
 * control character, too many segments.
 */
static int
api_split(const char *path, char **seg, size_t max, size_t *n)
{
	const char	*p = path, *e;
	char		*raw, *dec;
	size_t		 len, i;

	*n = 0;
	if (*p != '/')
		return -1;
	while (*p == '/') {
		p++;
		if (*p == '\0' && *n > 0)
			break;			/* one trailing slash */
		e = p + strcspn(p, "/");
		if (*n == max)
			return -1;
		raw = xstrndup(p, (size_t)(e - p));
		dec = evhttp_uridecode(raw, 0, &len);
		free(raw);
		if (dec == NULL)
			return -1;
		for (i = 0; i < len; i++) {
			if ((unsigned char)dec[i] < 0x20)
				break;
		}
		if (i < len) {
			free(dec);
			return -1;
		}
		seg[(*n)++] = dec;
		p = e;
	}
	return 0;
}

/* Does a route's path match the segments? Parameters go to param[]. */
static bool
api_match(const char *pattern, char **seg, size_t nseg, char **param,
    size_t *nparam)
{
	char	*pat[API_PATH_SEGS];
	size_t	 n = 0, i;
	bool	 ok = true;

	if (api_split(pattern, pat, API_PATH_SEGS, &n) != 0)
		fatalx("bad route %s", pattern);
	*nparam = 0;
	if (n != nseg)
		ok = false;
	for (i = 0; ok && i < n; i++) {
		if (pat[i][0] == '{') {
			if (seg[i][0] == '\0')
				ok = false;
			else if (param != NULL && *nparam < 2)
				param[(*nparam)++] = seg[i];
			else
				(*nparam)++;
		} else if (strcmp(pat[i], seg[i]) != 0)
			ok = false;
	}
	for (i = 0; i < n; i++)
		free(pat[i]);
	return ok;
}

/* evhttp: every request that passed the limits. */
static void
api_dispatch(struct evhttp_request *req, void *arg)
{
	struct api		*api = arg;
	struct api_req		*r;
	const struct api_route	*rt, *hit = NULL;
	const struct api_token	*tok;
	const struct evhttp_uri	*uri = evhttp_request_get_evhttp_uri(req);
	const char		*path, *q;
	char			*seg[API_PATH_SEGS], *param[2], allow[64];
	size_t			 nseg = 0, np, i;
	bool			 path_known = false, bad;

	api_keep_open(api, req);
	r = xcalloc(1, sizeof *r);
	r->api = api;
	r->req = req;
	r->method = api_method_name(evhttp_request_get_command(req));
	r->query = xcalloc(1, sizeof *r->query);
	TAILQ_INIT(r->query);
	path = uri != NULL ? evhttp_uri_get_path(uri) : NULL;
	bad = path == NULL || api_split(path, seg, API_PATH_SEGS, &nseg) != 0;
	if (!bad && uri != NULL && (q = evhttp_uri_get_query(uri)) != NULL &&
	    evhttp_parse_query_str(q, r->query) != 0)
		bad = true;
	*allow = '\0';
	for (rt = api_routes; !bad && rt->method != NULL; rt++) {
		if (!api_match(rt->path, seg, nseg, NULL, &np))
			continue;
		path_known = true;
		if (strstr(allow, rt->method) == NULL)
			snprintf(allow + strlen(allow), sizeof allow -
			    strlen(allow), "%s%s", *allow ? ", " : "",
			    rt->method);
		if (strcmp(rt->method, r->method) == 0 && hit == NULL)
			hit = rt;
	}
	if (hit != NULL)
		r->route = hit->path;
	else if (path_known && nseg == 1 && *seg[0] == '\0')
		r->route = "/";
	if (hit != NULL && hit->role == API_PUBLIC)
		goto run;
	tok = bad ? NULL : api_auth(api, req);
	if (bad)
		api_problem(r, 400, "bad-request", "Malformed request", NULL,
		    "the path or query string is not valid (bad escape, "
		    "control character or too many segments)");
	else if (tok == NULL)
		api_problem(r, 401, "unauthorized", "Unauthorized",
		    "Authorization", api->ntokens == 0 ? "no tokens are "
		    "configured ([api] tokens)" : "a valid 'Authorization: "
		    "Bearer TOKEN' header is required");
	else if (!path_known)
		api_problem(r, 404, "not-found", "No such route", NULL,
		    "no route %s", path);
	else if (hit == NULL) {
		evhttp_add_header(evhttp_request_get_output_headers(req),
		    "Allow", allow);
		api_problem(r, 405, "method-not-allowed", "Method not allowed",
		    NULL, "%s is not allowed on %s (allowed: %s)", r->method,
		    path, allow);
	} else if (tok->role < hit->role) {
		r->who = xstrdup(tok->name);
		api_problem(r, 403, "forbidden", "Forbidden", NULL, "the "
		    "token '%s' has the role %s; %s %s needs %s", tok->name,
		    api_role_name(tok->role), r->method, hit->path,
		    api_role_name(hit->role));
	} else {
		r->who = xstrdup(tok->name);
		r->role = tok->role;
		goto run;
	}
	goto out;
run:
	api_match(hit->path, seg, nseg, param, &np);
	for (i = 0; i < np && i < nitems(r->param); i++)
		r->param[i] = xstrdup(param[i]);
	hit->fn(r);
out:
	for (i = 0; i < nseg; i++)
		free(seg[i]);
}

/* ------------------------------------------------------------------------ */
/* The server */

/* Load the tokens named by the configuration (none when unset). */
static int
api_load(struct api *api, const struct gw_config *cfg, char **cause)
{
	struct api_token	*t = NULL;
	size_t			 n = 0;

	if (*cfg->api_tokens != '\0' &&
	    api_tokens_load(cfg->api_tokens, &t, &n, cause) != 0)
		return -1;
	api_tokens_free(api->tokens, api->ntokens);
	api->tokens = t;
	api->ntokens = n;
	return 0;
}

/*
 * HTTPS as configured: a new context for new connections (those open keep
 * theirs). Turning TLS on or off needs a restart: the listener stays.
 */
static int
api_load_tls(struct api *api, const struct gw_config *cfg, bool first,
    char **cause)
{
	SSL_CTX	*ctx;
	int	 days;

	if ((*cfg->api_tls_cert != '\0') != (api->tls != NULL) && !first) {
		log_event(LL_WARN, "config.reload", "note=%s",
		    "api-tls-on-or-off-applies-at-restart");
		return 0;
	}
	if (*cfg->api_tls_cert == '\0')
		return 0;
	if ((ctx = api_tls_ctx(cfg, cause)) == NULL)
		return -1;
	SSL_CTX_free(api->tls);
	api->tls = ctx;
	api->handshake_ms = cfg->api_tls_handshake_ms;
	if ((days = api_tls_days_left(ctx)) < 0)
		log_event(LL_WARN, "api.tls", "msg=%s cert=%s", log_q("the "
		    "certificate has expired: clients will refuse it"),
		    log_q(cfg->api_tls_cert));
	else
		log_event(days < 14 ? LL_WARN : LL_INFO, "api.tls",
		    "cert=%s days_left=%d", log_q(cfg->api_tls_cert), days);
	return 0;
}

struct api *
api_new(struct gw *gw, char **cause)
{
	const struct gw_config	*cfg = gw->cfg;
	struct api		*api;
	evutil_socket_t		 fd;
	struct sockaddr_storage	 ss;
	socklen_t		 len = sizeof ss;

	api = xcalloc(1, sizeof *api);
	api->gw = gw;
	TAILQ_INIT(&api->conns);
	if (api_load(api, cfg, cause) != 0 ||
	    api_load_tls(api, cfg, true, cause) != 0 ||
	    (api->jobs = api_jobs_new(gw, cause)) == NULL)
		goto fail;
	api->max_header = cfg->api_max_header;
	api->max_body = cfg->api_max_body;
	api->deadline_ms = cfg->api_deadline_ms;
	api->max_conn = cfg->api_max_conn;
	if ((api->http = evhttp_new(gw->base)) == NULL)
		fatalx("evhttp_new failed");
	evhttp_set_bevcb(api->http, api_bevcb, api);
	evhttp_set_gencb(api->http, api_dispatch, api);
	evhttp_set_allowed_methods(api->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST |
	    EVHTTP_REQ_HEAD | EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE |
	    EVHTTP_REQ_OPTIONS | EVHTTP_REQ_TRACE | EVHTTP_REQ_CONNECT |
	    EVHTTP_REQ_PATCH);
	/* the filter answers first; these only back it up */
	evhttp_set_max_headers_size(api->http, api->max_header *
	    API_HARD_HEADER_MUL);
	evhttp_set_max_body_size(api->http, api->max_body + 1);
	/* idle keep-alive connections; past our own 408 for a request */
	evhttp_set_timeout(api->http, (int)((api->deadline_ms * 2 + 999) /
	    1000) + 1);
	if ((api->sock = evhttp_bind_socket_with_handle(api->http,
	    cfg->api_listen, (ev_uint16_t)cfg->api_port)) == NULL) {
		xasprintf(cause, "api: cannot listen on %s port %d: %s",
		    cfg->api_listen, cfg->api_port, errno == EADDRINUSE ?
		    "address in use" : strerror(errno));
		goto fail;
	}
	fd = evhttp_bound_socket_get_fd(api->sock);
	if (getsockname(fd, (struct sockaddr *)&ss, &len) == 0)
		api->port = ntohs(ss.ss_family == AF_INET6 ?
		    ((struct sockaddr_in6 *)&ss)->sin6_port :
		    ((struct sockaddr_in *)&ss)->sin_port);
	log_event(LL_INFO, "listen", "port=api addr=%s:%d tokens=%zu tls=%s",
	    cfg->api_listen, api->port, api->ntokens, api->tls != NULL ?
	    "yes" : "no");
	if (api->ntokens == 0)
		log_event(LL_WARN, "api.tokens", "msg=%s", log_q("no tokens: "
		    "only GET /healthz and GET /readyz answer ([api] "
		    "tokens)"));
	return api;
fail:
	api_free(api);
	return NULL;
}

/* Stop accepting (shutdown); requests in progress still get answers. */
void
api_stop(struct api *api)
{
	if (api == NULL)
		return;
	api_jobs_stop(api->jobs);
	if (api->sock == NULL)
		return;
	evhttp_del_accept_socket(api->http, api->sock);
	api->sock = NULL;
}

void
api_free(struct api *api)
{
	struct api_conn	*c;

	if (api == NULL)
		return;
	api_jobs_free(api->jobs);
	api_events_close_all(api->gw);
	if (api->http != NULL)
		evhttp_free(api->http);
	/* connections libevent has yet to finalize no longer count here */
	while ((c = TAILQ_FIRST(&api->conns)) != NULL) {
		TAILQ_REMOVE(&api->conns, c, entry);
		c->api = NULL;
	}
	api_tokens_free(api->tokens, api->ntokens);
	SSL_CTX_free(api->tls);
	free(api);
}

/* SIGHUP: read the tokens file again (kept as it was if it is bad). */
void
api_reload(struct api *api, const struct gw_config *cfg)
{
	char	*cause = NULL;

	if (api == NULL)
		return;
	if (api_load_tls(api, cfg, false, &cause) != 0) {
		log_event(LL_ERROR, "config.error", "msg=%s note=%s",
		    log_q(cause), "the-previous-certificate-stays");
		free(cause);
		cause = NULL;
	}
	if (api_load(api, cfg, &cause) != 0) {
		log_event(LL_ERROR, "config.error", "msg=%s note=%s",
		    log_q(cause), "the-previous-tokens-stay");
		free(cause);
		return;
	}
	log_event(LL_INFO, "api.tokens", "tokens=%zu", api->ntokens);
}
