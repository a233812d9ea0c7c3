/*
 * mosctl over the HTTP API: see mosctl_api.h. Each request opens its own
 * connection (Connection: close) with deadlines on every step; the answer
 * is read to the end of its Content-Length (or chunks, or the close).
 */
#include <sys/socket.h>
#include <sys/time.h>

#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <event2/http.h>
#include <jansson.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "gateway/gateway.h"
#include "tools/mosctl.h"
#include "tools/mosctl_api.h"

struct mosctl_api {
	char		*token;
	char		*host;
	char		*base;		/* path prefix, no trailing '/' */
	int		 port;
	bool		 tls;
	SSL_CTX		*ctx;
};

/* One connection: a socket, maybe under TLS. */
struct api_conn {
	int	 fd;
	SSL	*ssl;
};

static void
api_err(struct mosctl *ctl, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
api_err(struct mosctl *ctl, const char *fmt, ...)
{
	va_list	ap;

	fprintf(ctl->err, "mosctl: ");
	va_start(ap, fmt);
	vfprintf(ctl->err, fmt, ap);
	va_end(ap);
	fputc('\n', ctl->err);
}

/* The last OpenSSL error as text. */
static const char *
api_ssl_err(void)
{
	static char	buf[256];
	unsigned long	e = ERR_get_error();

	if (e == 0)
		return "TLS failure";
	ERR_error_string_n(e, buf, sizeof buf);
	ERR_clear_error();
	return buf;
}

/*
 * The token: the file's first line that is not blank or a comment, either
 * the token alone or "NAME ROLE TOKEN" (a line of the gateway's tokens file).
 */
static char *
api_read_token(struct mosctl *ctl, const char *file)
{
	FILE	*f;
	char	*line = NULL, *tok = NULL, *w[4], *save;
	size_t	 cap = 0;
	int	 n;

	if ((f = fopen(file, "r")) == NULL) {
		api_err(ctl, "--token-file %s: %s", file, strerror(errno));
		return NULL;
	}
	while (tok == NULL && getline(&line, &cap, f) != -1) {
		line[strcspn(line, "\r\n")] = '\0';
		for (n = 0; n < 4; n++)
			if ((w[n] = strtok_r(n == 0 ? line : NULL, " \t",
			    &save)) == NULL)
				break;
		if (n == 0 || w[0][0] == '#')
			continue;
		if (n == 1)
			tok = xstrdup(w[0]);
		else if (n == 3)
			tok = xstrdup(w[2]);
		else
			break;
	}
	free(line);
	fclose(f);
	if (tok == NULL)
		api_err(ctl, "--token-file %s: no token in it (one line: the "
		    "token, or NAME ROLE TOKEN)", file);
	return tok;
}

/* Parse the URL and read the token, once. NULL after printing why. */
static struct mosctl_api *
api_open(struct mosctl *ctl)
{
	struct mosctl_api	*a;
	struct evhttp_uri	*u;
	const char		*scheme, *host, *path;

	if (ctl->api != NULL)
		return ctl->api;
	if (ctl->url == NULL || ctl->token_file == NULL) {
		api_err(ctl, "this command speaks to the gateway's API: give "
		    "--url URL and --token-file FILE (or MOSGW_URL and "
		    "MOSGW_TOKEN_FILE)");
		return NULL;
	}
	if ((u = evhttp_uri_parse(ctl->url)) == NULL ||
	    (scheme = evhttp_uri_get_scheme(u)) == NULL ||
	    (strcasecmp(scheme, "http") != 0 &&
	    strcasecmp(scheme, "https") != 0) ||
	    (host = evhttp_uri_get_host(u)) == NULL || *host == '\0' ||
	    evhttp_uri_get_query(u) != NULL) {
		api_err(ctl, "--url '%s' is not an http:// or https:// URL "
		    "(like http://127.0.0.1:8540)", ctl->url);
		if (u != NULL)
			evhttp_uri_free(u);
		return NULL;
	}
	a = xcalloc(1, sizeof *a);
	a->tls = strcasecmp(scheme, "https") == 0;
	a->host = xstrdup(host);
	if (a->host[0] == '[') {		/* [::1] */
		memmove(a->host, a->host + 1, strlen(a->host));
		a->host[strcspn(a->host, "]")] = '\0';
	}
	a->port = evhttp_uri_get_port(u);
	if (a->port <= 0)
		a->port = a->tls ? 443 : 80;
	path = evhttp_uri_get_path(u);
	a->base = xstrdup(path != NULL ? path : "");
	while (*a->base != '\0' && a->base[strlen(a->base) - 1] == '/')
		a->base[strlen(a->base) - 1] = '\0';
	evhttp_uri_free(u);
	if ((a->token = api_read_token(ctl, ctl->token_file)) == NULL)
		goto fail;
	if (a->tls) {
		if ((a->ctx = SSL_CTX_new(TLS_client_method())) == NULL)
			fatalx("SSL_CTX_new failed");
		SSL_CTX_set_min_proto_version(a->ctx, TLS1_2_VERSION);
		SSL_CTX_set_verify(a->ctx, SSL_VERIFY_PEER, NULL);
		if (ctl->cacert != NULL ? SSL_CTX_load_verify_locations(a->ctx,
		    ctl->cacert, NULL) != 1 :
		    SSL_CTX_set_default_verify_paths(a->ctx) != 1) {
			api_err(ctl, "%s: cannot load the CA certificates: %s",
			    ctl->cacert != NULL ? ctl->cacert : "system store",
			    api_ssl_err());
			goto fail;
		}
	} else if (ctl->cacert != NULL) {
		api_err(ctl, "--cacert is for https:// URLs");
		goto fail;
	}
	ctl->api = a;
	return a;
fail:
	ctl->api = a;
	mosctl_api_close(ctl);
	return NULL;
}

void
mosctl_api_close(struct mosctl *ctl)
{
	struct mosctl_api	*a = ctl->api;

	if (a == NULL)
		return;
	if (a->token != NULL)
		explicit_bzero(a->token, strlen(a->token));
	free(a->token);
	free(a->host);
	free(a->base);
	SSL_CTX_free(a->ctx);
	free(a);
	ctl->api = NULL;
}

/* Connect (and handshake). 0, or -1 after printing why. */
static int
api_connect(struct mosctl *ctl, struct mosctl_api *a, struct api_conn *c)
{
	struct addrinfo	 hints, *res, *ai;
	struct timeval	 tv = { MOSCTL_API_TIMEOUT_S, 0 };
	char		 port[16];
	int		 rc, err = 0;

	c->fd = -1;
	c->ssl = NULL;
	memset(&hints, 0, sizeof hints);
	hints.ai_socktype = SOCK_STREAM;
	snprintf(port, sizeof port, "%d", a->port);
	if ((rc = getaddrinfo(a->host, port, &hints, &res)) != 0) {
		api_err(ctl, "%s: %s", a->host, gai_strerror(rc));
		return -1;
	}
	for (ai = res; ai != NULL && c->fd == -1; ai = ai->ai_next) {
		if ((c->fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC,
		    ai->ai_protocol)) == -1) {
			err = errno;
			continue;
		}
		/* SO_SNDTIMEO bounds connect() too on Linux */
		setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
		setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
		if (connect(c->fd, ai->ai_addr, ai->ai_addrlen) != 0) {
			err = errno;
			close(c->fd);
			c->fd = -1;
		}
	}
	freeaddrinfo(res);
	if (c->fd == -1) {
		api_err(ctl, "cannot connect to %s port %d: %s (is mosgw "
		    "running with [api] port set?)", a->host, a->port,
		    strerror(err));
		return -1;
	}
	if (!a->tls)
		return 0;
	if ((c->ssl = SSL_new(a->ctx)) == NULL)
		fatalx("SSL_new failed");
	SSL_set_fd(c->ssl, c->fd);
	SSL_set_tlsext_host_name(c->ssl, a->host);
	if (SSL_set1_host(c->ssl, a->host) != 1)
		fatalx("SSL_set1_host failed");
	if (SSL_connect(c->ssl) != 1) {
		rc = (int)SSL_get_verify_result(c->ssl);
		api_err(ctl, "TLS with %s port %d failed: %s", a->host,
		    a->port, rc != X509_V_OK ?
		    X509_verify_cert_error_string(rc) : api_ssl_err());
		return -1;
	}
	return 0;
}

static void
api_disconnect(struct api_conn *c)
{
	if (c->ssl != NULL) {
		SSL_shutdown(c->ssl);
		SSL_free(c->ssl);
	}
	if (c->fd != -1)
		close(c->fd);
}

static int
api_write(struct api_conn *c, const char *p, size_t len)
{
	ssize_t	n;

	while (len > 0) {
		if (c->ssl != NULL)
			n = SSL_write(c->ssl, p, len > INT32_MAX ? INT32_MAX :
			    (int)len);
		else
			n = send(c->fd, p, len, MSG_NOSIGNAL);
		if (n <= 0) {
			if (c->ssl == NULL && n < 0 && errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Read once: the bytes read, 0 at the end, -1 on error, -2 interrupted. */
static ssize_t
api_recv(struct api_conn *c, char *buf, size_t len)
{
	ssize_t	n;

	if (c->ssl == NULL) {
		n = recv(c->fd, buf, len, 0);
		return n < 0 && errno == EINTR ? -2 : n;
	}
	n = SSL_read(c->ssl, buf, len > INT32_MAX ? INT32_MAX : (int)len);
	if (n <= 0 && SSL_get_error(c->ssl, (int)n) == SSL_ERROR_ZERO_RETURN)
		n = 0;
	else if (n <= 0 && SSL_get_error(c->ssl, (int)n) ==
	    SSL_ERROR_SYSCALL && errno == 0)
		n = 0;	/* closed without close_notify */
	return n < 0 ? -1 : n;
}

/* Read everything until the peer closes. 0, or -1 (error, timeout, too big). */
static int
api_read_all(struct api_conn *c, struct sbuf *sb)
{
	char	buf[16384];
	ssize_t	n;

	for (;;) {
		if ((n = api_recv(c, buf, sizeof buf)) == 0)
			return 0;
		if (n == -2)
			continue;
		if (n < 0)
			return -1;
		if (sb->len + (size_t)n > MOSCTL_API_MAX_BODY)
			return -1;
		sbuf_add(sb, buf, (size_t)n);
	}
}

/* Undo chunked transfer coding in place. -1 if malformed. */
static int
api_unchunk(char *p, size_t len, size_t *out)
{
	char	*r = p, *w = p, *end = p + len, *e;
	size_t	 n;

	for (;;) {
		n = strtoul(r, &e, 16);
		if (e == r || (e = strstr(e, "\r\n")) == NULL)
			return -1;
		r = e + 2;
		if (n == 0)
			break;
		if ((size_t)(end - r) < n + 2)
			return -1;
		memmove(w, r, n);
		w += n;
		r += n + 2;
	}
	*out = (size_t)(w - p);
	*w = '\0';
	return 0;
}

void
mosctl_resp_clear(struct mosctl_resp *r)
{
	free(r->ctype);
	free(r->body);
	memset(r, 0, sizeof *r);
}

/* Send a request on c (accept: the Accept header). 0, or -1 printed. */
static int
api_send(struct mosctl *ctl, struct mosctl_api *a, struct api_conn *c,
    const char *method, const char *path, const char *hdrs, const char *ctype,
    const char *body, size_t len, const char *accept)
{
	struct sbuf	sb = { 0 };
	int		rc = 0;

	sbuf_printf(&sb, "%s %s%s HTTP/1.1\r\nHost: %s:%d\r\n"
	    "Authorization: Bearer %s\r\nConnection: close\r\n"
	    "Accept: %s\r\nUser-Agent: mosctl/%s\r\n", method, a->base, path,
	    a->host, a->port, a->token, accept, MOSGW_VERSION);
	if (hdrs != NULL)
		sbuf_puts(&sb, hdrs);
	if (body != NULL)
		sbuf_printf(&sb, "Content-Type: %s\r\nContent-Length: %zu\r\n",
		    ctype, len);
	sbuf_puts(&sb, "\r\n");
	if (api_write(c, sb.s, sb.len) != 0 ||
	    (body != NULL && api_write(c, body, len) != 0)) {
		api_err(ctl, "%s %s: the connection broke while sending",
		    method, path);
		rc = -1;
	}
	explicit_bzero(sb.s, sb.len);
	sbuf_free(&sb);
	return rc;
}

/*
 * The status line and headers at the start of in (read so far): their
 * length with the blank line, 0 if not complete yet, -1 if not HTTP. Sets
 * r->status and r->ctype, *clen (-1: none) and *chunked.
 */
static long
api_head(struct sbuf *in, struct mosctl_resp *r, long *clen, bool *chunked)
{
	char	*head_end, *head, *line, *next, *v;
	long	 hlen;

	if (in->s == NULL || (head_end = strstr(in->s, "\r\n\r\n")) == NULL)
		return 0;
	if (sscanf(in->s, "HTTP/1.%*d %d", &r->status) != 1)
		return -1;
	hlen = (long)(head_end - in->s) + 4;
	head = xstrndup(in->s, (size_t)(head_end - in->s));
	*clen = -1;
	*chunked = false;
	for (line = strstr(head, "\r\n"); line != NULL; line = next) {
		line += 2;
		next = strstr(line, "\r\n");
		if (next != NULL)
			*next = '\0';
		if ((v = strchr(line, ':')) == NULL)
			continue;
		*v++ = '\0';
		v += strspn(v, " \t");
		if (strcasecmp(line, "Content-Type") == 0 && r->ctype == NULL)
			r->ctype = xstrdup(v);
		else if (strcasecmp(line, "Content-Length") == 0)
			*clen = strtol(v, NULL, 10);
		else if (strcasecmp(line, "Transfer-Encoding") == 0 &&
		    strcasestr(v, "chunked") != NULL)
			*chunked = true;
	}
	free(head);
	if (r->ctype == NULL)
		r->ctype = xstrdup("");
	return hlen;
}

/* The body after hlen bytes of a whole answer in `in`, into r. 0 or -1. */
static int
api_body(struct mosctl *ctl, const char *method, const char *path,
    struct sbuf *in, size_t hlen, long clen, bool chunked,
    struct mosctl_resp *r)
{
	size_t	blen = in->len - hlen;

	if (chunked) {
		if (api_unchunk(in->s + hlen, blen, &blen) != 0) {
			api_err(ctl, "%s %s: a malformed chunked answer",
			    method, path);
			return -1;
		}
	} else if (clen >= 0) {
		if ((size_t)clen > blen) {
			api_err(ctl, "%s %s: the answer was cut short (%zu of "
			    "%ld bytes)", method, path, blen, clen);
			return -1;
		}
		blen = (size_t)clen;
	}
	r->body = xmalloc(blen + 1);
	memcpy(r->body, in->s + hlen, blen);
	r->body[blen] = '\0';
	r->len = blen;
	return 0;
}

int
mosctl_api_request(struct mosctl *ctl, const char *method, const char *path,
    const char *hdrs, const char *ctype, const char *body, size_t len,
    struct mosctl_resp *r)
{
	struct mosctl_api	*a;
	struct api_conn		 c;
	struct sbuf		 in = { 0 };
	long			 hlen, clen;
	bool			 chunked;
	int			 rc = -1;

	memset(r, 0, sizeof *r);
	if ((a = api_open(ctl)) == NULL)
		return -1;
	if (api_connect(ctl, a, &c) != 0)
		goto out;
	if (api_send(ctl, a, &c, method, path, hdrs, ctype, body, len,
	    "application/json") != 0)
		goto out;
	if (api_read_all(&c, &in) != 0) {
		api_err(ctl, "%s %s: no complete answer within %d s (or "
		    "larger than %d bytes)", method, path, MOSCTL_API_TIMEOUT_S,
		    MOSCTL_API_MAX_BODY);
		goto out;
	}
	if ((hlen = api_head(&in, r, &clen, &chunked)) <= 0) {
		api_err(ctl, "%s %s: the answer is not HTTP (%zu bytes)",
		    method, path, in.len);
		goto out;
	}
	if (api_body(ctl, method, path, &in, (size_t)hlen, clen, chunked,
	    r) != 0)
		goto out;
	rc = 0;
out:
	api_disconnect(&c);
	sbuf_free(&in);
	if (rc != 0)
		mosctl_resp_clear(r);
	return rc;
}

/*
 * An answer that is not 2xx: print "mosctl: STATUS title: detail" (a
 * problem+json, else the body) and map the status to an exit status.
 */
static int
api_failed(struct mosctl *ctl, const char *method, const char *path,
    const struct mosctl_resp *r, json_t *o)
{
	const char	*d, *t;

	d = json_string_value(json_object_get(o, "detail"));
	t = json_string_value(json_object_get(o, "title"));
	if (t != NULL)		/* a problem+json */
		api_err(ctl, "%d %s: %s", r->status, t, d != NULL ? d :
		    "(no detail)");
	else
		api_err(ctl, "%s %s: %d %s", method, path, r->status, r->body);
	if (r->status == 404 || r->status == 409 || r->status == 412)
		return MOSCTL_EXIT_FAIL;
	if (r->status == 400 || r->status == 413 || r->status == 422)
		return MOSCTL_EXIT_USAGE;
	return MOSCTL_EXIT_API;
}

int
mosctl_api_call(struct mosctl *ctl, const char *method, const char *path,
    const char *hdrs, const char *ctype, const char *body, size_t len,
    json_t **out)
{
	struct mosctl_resp	 r;
	json_error_t		 je;
	json_t			*o;
	int			 rc;

	*out = NULL;
	if (mosctl_api_request(ctl, method, path, hdrs, ctype, body, len,
	    &r) != 0)
		return MOSCTL_EXIT_API;
	o = json_loadb(r.body, r.len, 0, &je);
	if (r.status < 200 || r.status > 299)
		rc = api_failed(ctl, method, path, &r, o);
	else if (o == NULL || !json_is_object(o)) {
		api_err(ctl, "%s %s: the answer is not a JSON object", method,
		    path);
		rc = MOSCTL_EXIT_API;
	} else {
		*out = o;
		o = NULL;
		rc = MOSCTL_EXIT_OK;
	}
	if (o != NULL)
		json_decref(o);
	mosctl_resp_clear(&r);
	return rc;
}

int
mosctl_api_get_json(struct mosctl *ctl, const char *path, json_t **out)
{
	return mosctl_api_call(ctl, "GET", path, NULL, NULL, NULL, 0, out);
}

/* One JSON value, compact, on a line of its own. */
void
mosctl_json_line(struct mosctl *ctl, json_t *o)
{
	char	*s = json_dumps(o, JSON_COMPACT | JSON_ENCODE_ANY);

	if (s != NULL)
		fprintf(ctl->out, "%s\n", s);
	free(s);
}

/* ------------------------------------------------------------------------ */
/* Streams */

/* The chunked transfer coding undone as bytes arrive. */
struct api_dechunk {
	int	 state;		/* 0 size line, 1 data, 2 its CRLF, 3 ended */
	char	 line[64];
	size_t	 llen;
	size_t	 left;
};

/*
 * Wait until c has something to read, at most idle_s seconds, looking at
 * *cancel every 200 ms: 1 readable, 0 time out, -1 cancelled.
 */
static int
api_wait(struct api_conn *c, int idle_s, volatile sig_atomic_t *cancel)
{
	struct pollfd	pfd = { .fd = c->fd, .events = POLLIN };
	int		waited = 0, n;

	if (c->ssl != NULL && SSL_pending(c->ssl) > 0)
		return 1;
	for (;;) {
		if (cancel != NULL && *cancel)
			return -1;
		if ((n = poll(&pfd, 1, 200)) > 0)
			return 1;
		if (n < 0 && errno != EINTR)
			return 1;	/* the read says what is wrong */
		if (n == 0 && (waited += 200) >= idle_s * 1000)
			return 0;
	}
}

/*
 * Feed len bytes of a body to fn, undoing the chunked coding when d is not
 * NULL: 0 to go on, 1 when fn stopped or the last chunk came, -1 malformed.
 */
static int
api_feed(struct api_dechunk *d, const char *p, size_t len,
    const struct mosctl_stream *st)
{
	size_t	n;

	if (d == NULL)
		return len == 0 || st->fn(st->arg, p, len) == 0 ? 0 : 1;
	while (len > 0) {
		if (d->state == 0 || d->state == 2) {
			if (*p != '\n') {
				if (d->llen + 1 >= sizeof d->line)
					return -1;
				d->line[d->llen++] = *p;
			} else if (d->state == 2) {
				if (d->llen > 1 || (d->llen == 1 &&
				    d->line[0] != '\r'))
					return -1;
				d->llen = 0;
				d->state = 0;
			} else {
				d->line[d->llen] = '\0';
				d->llen = 0;
				if (!isxdigit((unsigned char)d->line[0]))
					return -1;
				d->left = strtoul(d->line, NULL, 16);
				if (d->left == 0) {
					d->state = 3;
					return 1;
				}
				d->state = 1;
			}
			p++;
			len--;
			continue;
		}
		n = len < d->left ? len : d->left;
		if (st->fn(st->arg, p, n) != 0)
			return 1;
		p += n;
		len -= n;
		if ((d->left -= n) == 0)
			d->state = 2;
	}
	return 0;
}

int
mosctl_api_stream(struct mosctl *ctl, const char *path, const char *hdrs,
    const struct mosctl_stream *st, int *status)
{
	struct mosctl_api	*a;
	struct api_conn		 c;
	struct mosctl_resp	 r;
	struct api_dechunk	 dc;
	struct sbuf		 in = { 0 };
	char			 buf[16384];
	const char		*p;
	json_t			*o;
	ssize_t			 n;
	long			 hlen = 0, clen = -1;
	bool			 chunked = false;
	int			 rc = MOSCTL_EXIT_API, w, f;

	*status = -1;
	memset(&r, 0, sizeof r);
	memset(&dc, 0, sizeof dc);
	if ((a = api_open(ctl)) == NULL)
		return MOSCTL_EXIT_API;
	*status = 0;
	if (api_connect(ctl, a, &c) != 0 || api_send(ctl, a, &c, "GET", path,
	    hdrs, NULL, NULL, 0, "text/event-stream") != 0)
		goto out;
	/* the head, within the usual deadline */
	while ((hlen = api_head(&in, &r, &clen, &chunked)) == 0) {
		if ((w = api_wait(&c, MOSCTL_API_TIMEOUT_S, st->cancel)) < 0) {
			rc = MOSCTL_EXIT_OK;
			goto out;
		}
		if (w == 0 || (n = api_recv(&c, buf, sizeof buf)) == -1 ||
		    n == 0) {
			api_err(ctl, "GET %s: no answer within %d s", path,
			    MOSCTL_API_TIMEOUT_S);
			goto out;
		}
		if (in.len > MOSCTL_API_MAX_HEAD) {
			api_err(ctl, "GET %s: headers longer than %d bytes",
			    path, MOSCTL_API_MAX_HEAD);
			goto out;
		}
		if (n > 0)
			sbuf_add(&in, buf, (size_t)n);
	}
	if (hlen < 0) {
		api_err(ctl, "GET %s: the answer is not HTTP (%zu bytes)",
		    path, in.len);
		goto out;
	}
	*status = r.status;
	if (r.status < 200 || r.status > 299) {
		/* read whole, printed as the other requests */
		if (api_read_all(&c, &in) != 0 || api_body(ctl, "GET", path,
		    &in, (size_t)hlen, clen, chunked, &r) != 0) {
			api_err(ctl, "GET %s: status %d, no complete answer",
			    path, r.status);
			goto out;
		}
		o = json_loadb(r.body, r.len, 0, NULL);
		rc = api_failed(ctl, "GET", path, &r, o);
		json_decref(o);
		goto out;
	}
	/* the body as it comes: chunks undone, or up to the length or close */
	p = in.s + hlen;
	n = (ssize_t)(in.len - (size_t)hlen);
	for (;;) {
		if (clen >= 0 && !chunked && n > clen)
			n = clen;
		if ((f = api_feed(chunked ? &dc : NULL, p, (size_t)n,
		    st)) > 0)
			break;
		if (f < 0) {
			api_err(ctl, "GET %s: a malformed chunked answer", path);
			goto out;
		}
		if (clen >= 0 && !chunked && (clen -= n) == 0)
			break;
		if ((w = api_wait(&c, st->idle_s, st->cancel)) < 0)
			break;
		if (w == 0) {
			api_err(ctl, "GET %s: nothing came for %d s", path,
			    st->idle_s);
			goto out;
		}
		p = buf;
		if ((n = api_recv(&c, buf, sizeof buf)) == -2) {
			n = 0;
			continue;
		}
		if (n == 0 && !chunked && clen < 0)
			break;		/* the body ends with the connection */
		if (n <= 0) {
			api_err(ctl, "GET %s: the connection broke", path);
			goto out;
		}
	}
	rc = MOSCTL_EXIT_OK;
out:
	api_disconnect(&c);
	sbuf_free(&in);
	mosctl_resp_clear(&r);
	return rc;
}
