/*
 * Webhooks: each [webhook.NAME] gets the events of its types POSTed to its
 * URL as JSON, through the durable queue. The events pump (events.c) turns
 * every new event into one job per matching webhook (kind and lane
 * "webhook:NAME"), in one transaction with the cursor that says how far it
 * went (gw_meta webhook_cursor), so that an event is neither skipped nor
 * posted twice by a restart. Here, on the loop, each webhook claims its
 * next due job through the bookkeeping thread, POSTs it with evhttp's
 * client (one request at a time per webhook, kept-alive connection), and
 * settles it: 2xx is DONE, anything else (another status, a refused
 * connection, a certificate refused, no answer within timeout) is a
 * failure retried with the queue's backoff until max_attempts, then
 * FAILED, with its reason in the job's history. A timer bounds the whole
 * attempt (connection, TLS handshake, answer); after a failure the next
 * attempt starts on a new connection.
 *
 * https:// URLs go over bufferevent_openssl under evhttp: TLS 1.2 at
 * least, the receiver's certificate verified against the webhook's cacert
 * (else the system's trust store) and the URL's host (a name, sent as
 * SNI too, or an IP address); tls_verify = false turns the checks off,
 * with a warning at every load.
 *
 * Every POST is signed: X-Mosgw-Timestamp is the time of the attempt in
 * seconds, X-Mosgw-Signature "sha256=" and the hex HMAC-SHA256, keyed
 * with the secret, of the timestamp, a '.', and the body.
 *
 * Events about a webhook's own job are marked in the log (hook = 0) and
 * never fanned out, so a delivery cannot cause another one.
 */
#include <sys/queue.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>
#include <jansson.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "gateway/gateway.h"

#define WEBHOOK_CURSOR		"webhook_cursor"
#define WEBHOOK_LEASE_EXTRA_MS	5000	/* lease = timeout + this */
#define WEBHOOK_WAIT_MAX_MS	60000	/* longest sleep before a look */
#define WEBHOOK_EVHTTP_GRACE_MS	1000	/* evhttp's own timeout: after ours */
#define WEBHOOK_WHY_MAX		512	/* why an attempt failed */

struct webhook {
	struct gw		*gw;
	char			*name;
	char			*kind;		/* and lane: "webhook:NAME" */
	struct webhook_conf	*conf;		/* owned copy of the strings */
	char			*host;		/* to connect to (no brackets) */
	char			*hostport;	/* the Host header */
	char			*path;		/* with its query */
	int			 port;
	unsigned		 mask;
	char			 worker[160];
	struct evhttp_connection *conn;
	SSL			*ssl;		/* https: of conn, owned by it */
	bool			 stale;		/* conn closed or failed */
	struct evhttp_request	*req;		/* a POST in flight */
	int			 req_err;	/* evhttp's error, -1 none */
	char			 tls_why[160];	/* first certificate error */
	struct event		*deadline;	/* the attempt's timeout */
	struct event		*timer;		/* the next job falls due */
	bool			 busy;		/* a claim, POST or settle */
	bool			 dead;		/* removed: free when idle */
	/* the job being delivered */
	int64_t			 job_id;
	int64_t			 job_gen;
	int			 attempt;
	char			*body;
	size_t			 len;
	TAILQ_ENTRY(webhook)	 entry;
};
TAILQ_HEAD(webhook_list, webhook);

/* For the pump: what the webhooks want, copied for the thread. */
struct webhook_fan {
	char		**kinds;
	unsigned	*masks;
	size_t		 n;
	bool		 reset;		/* start from the newest event */
	bool		 more;		/* a full page: run again */
};

/* A claim or a settlement on the thread. */
struct wh_task {
	struct webhook		*h;
	char			*kind;
	char			*worker;
	int64_t			 lease_ms;
	struct queue_job	 job;
	size_t			 got;
	int64_t			 next_due;	/* 0: nothing queued */
	bool			 ok;
	char			 error[WEBHOOK_WHY_MAX];
};

static void	webhook_claim(struct webhook *);

/* The first line of a file, which must not be empty. */
char *
webhook_secret_load(const char *file, char **err)
{
	FILE	*f;
	char	*line = NULL;
	size_t	 cap = 0;
	ssize_t	 n;

	if ((f = fopen(file, "r")) == NULL) {
		xasprintf(err, "%s: %s", file, strerror(errno));
		return NULL;
	}
	n = getline(&line, &cap, f);
	fclose(f);
	if (n > 0)
		line[strcspn(line, "\r\n")] = '\0';
	if (n <= 0 || *line == '\0') {
		free(line);
		xasprintf(err, "%s: empty (the secret is its first line)",
		    file);
		return NULL;
	}
	return line;
}

SSL_CTX *
webhook_tls_ctx(const struct webhook_conf *c, char **err)
{
	SSL_CTX	*ctx;
	FILE	*f;
	char	 e[256];

	ERR_clear_error();
	if ((ctx = SSL_CTX_new(TLS_client_method())) == NULL)
		fatalx("SSL_CTX_new failed");
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION |
	    SSL_OP_NO_COMPRESSION);
	if (*c->cacert == '\0') {
		if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
			xasprintf(err, "the system's trust store: %s",
			    tls_err(e, sizeof e));
			goto fail;
		}
		return ctx;
	}
	if ((f = fopen(c->cacert, "r")) == NULL) {
		xasprintf(err, "%s: %s", c->cacert, strerror(errno));
		goto fail;
	}
	fclose(f);
	if (SSL_CTX_load_verify_locations(ctx, c->cacert, NULL) != 1) {
		xasprintf(err, "%s: no usable PEM certificate (%s)", c->cacert,
		    tls_err(e, sizeof e));
		goto fail;
	}
	return ctx;
fail:
	SSL_CTX_free(ctx);
	return NULL;
}

/* hex(HMAC-SHA256(secret, ts "." body)). */
void
webhook_sign(const char *secret, const char *ts, const char *body,
    size_t len, char out[65])
{
	unsigned char	 mac[EVP_MAX_MD_SIZE];
	unsigned int	 maclen = 0, i;
	char		*msg;
	size_t		 tlen = strlen(ts);

	msg = xmalloc(tlen + 1 + len);
	memcpy(msg, ts, tlen);
	msg[tlen] = '.';
	memcpy(msg + tlen + 1, body, len);
	if (HMAC(EVP_sha256(), secret, (int)strlen(secret),
	    (const unsigned char *)msg, tlen + 1 + len, mac, &maclen) == NULL)
		fatalx("HMAC failed");
	free(msg);
	for (i = 0; i < maclen && i < 32; i++)
		snprintf(out + i * 2, 3, "%02x", mac[i]);
	out[maclen < 32 ? maclen * 2 : 64] = '\0';
}

/* ------------------------------------------------------------------------ */
/* Fan-out (bookkeeping thread, from the pump) */

struct webhook_fan *
webhooks_fan(struct gw *gw)
{
	struct webhook_fan	*f;
	struct webhook		*h;

	if (gw->hooks == NULL)
		return NULL;
	f = xcalloc(1, sizeof *f);
	TAILQ_FOREACH(h, gw->hooks, entry) {
		f->kinds = xreallocarray(f->kinds, f->n + 1, sizeof *f->kinds);
		f->masks = xreallocarray(f->masks, f->n + 1, sizeof *f->masks);
		f->kinds[f->n] = xstrdup(h->kind);
		f->masks[f->n++] = h->mask;
	}
	f->reset = gw->hooks_reset;
	gw->hooks_reset = false;
	return f;
}

void
webhooks_fan_free(struct webhook_fan *f)
{
	size_t	i;

	if (f == NULL)
		return;
	for (i = 0; i < f->n; i++)
		free(f->kinds[i]);
	free(f->kinds);
	free(f->masks);
	free(f);
}

bool
webhooks_fan_more(const struct webhook_fan *f)
{
	return f != NULL && f->more;
}

/* The body of an event's POST: {"id","type","time","data"}. */
static char *
webhook_body(const struct event_row *r)
{
	struct sbuf	sb;
	char		t[40];

	memset(&sb, 0, sizeof sb);
	util_iso_ms(r->t_ms, t, sizeof t);
	sbuf_printf(&sb, "{\"id\":%lld,\"type\":", (long long)r->id);
	sbuf_json_str(&sb, r->type);
	sbuf_puts(&sb, ",\"time\":");
	sbuf_json_str(&sb, t);
	sbuf_puts(&sb, ",\"data\":");
	sbuf_puts(&sb, r->data);
	sbuf_puts(&sb, "}");
	return sb.s;
}

/* One job per matching webhook for each new event, and the cursor. */
static int
webhook_fan_rows(struct gwdb *g, struct webhook_fan *f,
    const struct event_row *rows, size_t n, size_t *jobs)
{
	struct queue_enqueue_req	 req;
	char				*body, *key;
	unsigned			 bit;
	size_t				 i, k;
	int64_t				 id;
	int				 rc = QUEUE_OK;

	for (i = 0; i < n && rc == QUEUE_OK; i++) {
		if (!rows[i].hook || (bit = events_type_bit(rows[i].type)) == 0)
			continue;
		body = NULL;
		for (k = 0; k < f->n && rc == QUEUE_OK; k++) {
			if ((f->masks[k] & bit) == 0)
				continue;
			if (body == NULL)
				body = webhook_body(&rows[i]);
			xasprintf(&key, "%s#%lld", f->kinds[k],
			    (long long)rows[i].id);
			memset(&req, 0, sizeof req);
			req.lane = f->kinds[k];
			req.kind = f->kinds[k];
			req.payload = body;
			req.payload_len = strlen(body);
			req.priority = QUEUE_PRIO_DEFAULT;
			req.idem_key = key;
			rc = queue_enqueue(g->q, &req, &id);
			if (rc == QUEUE_OK)
				(*jobs)++;
			else if (rc == QUEUE_EXISTS)
				rc = QUEUE_OK;
			free(key);
		}
		free(body);
	}
	return rc;
}

int
webhooks_fan_run(struct gwdb *g, struct webhook_fan *f, size_t *jobs)
{
	struct event_row	*rows = NULL;
	size_t			 n = 0;
	int64_t			 cursor, head, pruned;
	int			 rc;

	*jobs = 0;
	if ((rc = queue_tx_begin(g->q)) != QUEUE_OK)
		return rc;
	rc = gwdb_meta_get(g, WEBHOOK_CURSOR, &cursor);
	if (rc == QUEUE_ENOTFOUND || (rc == QUEUE_OK && f->reset)) {
		/* webhooks from none: from now on, not the past */
		if ((rc = events_head(g, &head, &pruned)) == QUEUE_OK)
			rc = gwdb_meta_put(g, WEBHOOK_CURSOR, head);
		goto out;
	}
	if (rc == QUEUE_OK)
		rc = events_read(g, cursor, EVENTS_PAGE, &rows, &n);
	if (rc == QUEUE_OK && n > 0) {
		rc = webhook_fan_rows(g, f, rows, n, jobs);
		if (rc == QUEUE_OK)
			rc = gwdb_meta_put(g, WEBHOOK_CURSOR, rows[n - 1].id);
	}
	f->more = n == EVENTS_PAGE;
	events_rows_free(rows, n);
out:
	if (rc == QUEUE_OK)
		return queue_tx_commit(g->q);
	queue_tx_rollback(g->q);
	*jobs = 0;
	return rc;
}

/* ------------------------------------------------------------------------ */
/* Delivery (loop thread) */

/*
 * Drop the connection (and a POST in flight on it, without its callback).
 * Never from one of evhttp's callbacks.
 */
static void
webhook_disconnect(struct webhook *h)
{
	struct evhttp_connection	*conn = h->conn;

	h->conn = NULL;
	h->req = NULL;
	if (conn != NULL)
		evhttp_connection_free(conn);	/* and the SSL */
	h->ssl = NULL;
	h->stale = false;
	if (h->deadline != NULL)
		evtimer_del(h->deadline);
}

/* Free a webhook (idle: nothing of it on the thread or the wire). */
static void
webhook_free(struct webhook *h)
{
	webhook_disconnect(h);
	if (h->timer != NULL)
		event_free(h->timer);
	if (h->deadline != NULL)
		event_free(h->deadline);
	free(h->name);
	free(h->kind);
	free(h->host);
	free(h->hostport);
	free(h->path);
	free(h->body);
	free(h);
}

static void
wh_task_free(struct wh_task *t)
{
	queue_job_clear(&t->job);
	free(t->kind);
	free(t->worker);
	free(t);
}

/* Settled: log, then the next job. */
static void
webhook_settled(void *arg, int rc)
{
	struct wh_task	*t = arg;
	struct webhook	*h = t->h;

	h->busy = false;
	if (rc != QUEUE_OK && rc != QUEUE_ELOST)
		log_event(LL_WARN, "webhook.error", "webhook=%s job=%lld "
		    "msg=%s", h->name, (long long)h->job_id,
		    log_q(queue_strerror(rc)));
	free(h->body);
	h->body = NULL;
	wh_task_free(t);
	if (h->dead)
		webhook_free(h);
	else
		webhook_claim(h);
}

static int
webhook_settle_run(struct gwdb *g, void *arg)
{
	struct wh_task	*t = arg;

	if (t->ok)
		return queue_complete(g->q, t->job.id, t->job.lease_gen);
	return queue_fail(g->q, t->job.id, t->job.lease_gen, t->error, false);
}

/* The attempt is over: log it and settle its job on the thread. */
static void
webhook_attempt_done(struct webhook *h, int code, const char *why)
{
	struct wh_task	*t;

	h->req = NULL;
	evtimer_del(h->deadline);
	t = xcalloc(1, sizeof *t);
	t->h = h;
	t->job.id = h->job_id;
	t->job.lease_gen = h->job_gen;
	t->ok = why == NULL;
	if (!t->ok) {
		snprintf(t->error, sizeof t->error, "%s", why);
		h->stale = true;	/* the next attempt: a new connection */
	}
	log_event(t->ok ? LL_INFO : LL_WARN, t->ok ? "webhook.done" :
	    "webhook.retry", "webhook=%s job=%lld attempt=%d status=%d%s%s",
	    h->name, (long long)h->job_id, h->attempt, code,
	    t->ok ? "" : " error=", t->ok ? "" : log_q(t->error));
	dbw_submit(h->gw->dbw, webhook_settle_run, webhook_settled, t);
}

/* Why a POST got no answer, from what evhttp and OpenSSL say. */
static void
webhook_why(struct webhook *h, char *why, size_t len)
{
	struct bufferevent	*bev;
	unsigned long		 e = 0, x;
	const char		*url = h->conf->url;

	if (*h->tls_why != '\0') {
		snprintf(why, len, "TLS: the certificate of %s is refused: %s",
		    url, h->tls_why);
		return;
	}
	if (h->ssl != NULL && h->conn != NULL &&
	    (bev = evhttp_connection_get_bufferevent(h->conn)) != NULL) {
		while ((x = bufferevent_get_openssl_error(bev)) != 0)
			e = x;
	}
	if (e != 0) {
		snprintf(why, len, "TLS with %s failed: %s", url,
		    ERR_reason_error_string(e) != NULL ?
		    ERR_reason_error_string(e) : "unknown error");
		return;
	}
	switch (h->req_err) {
	case EVREQ_HTTP_TIMEOUT:
		snprintf(why, len, "no answer from %s within %lld ms", url,
		    (long long)h->conf->timeout_ms);
		break;
	case EVREQ_HTTP_INVALID_HEADER:
	case EVREQ_HTTP_DATA_TOO_LONG:
		snprintf(why, len, "not an HTTP answer from %s", url);
		break;
	case EVREQ_HTTP_EOF:
		snprintf(why, len, "%s closed the connection without an "
		    "answer", url);
		break;
	default:
		snprintf(why, len, "no answer from %s (refused, unreachable "
		    "or closed)", url);
		break;
	}
}

/* The answer to a POST (req NULL or code 0: no answer). */
static void
webhook_resp_cb(struct evhttp_request *req, void *arg)
{
	struct webhook	*h = arg;
	char		 why[WEBHOOK_WHY_MAX];
	int		 code = req != NULL ?
	    evhttp_request_get_response_code(req) : 0;

	if (code >= 200 && code <= 299)
		webhook_attempt_done(h, code, NULL);
	else {
		if (code == 0)
			webhook_why(h, why, sizeof why);
		else
			snprintf(why, sizeof why, "HTTP %d from %s", code,
			    h->conf->url);
		webhook_attempt_done(h, code, why);
	}
}

static void
webhook_req_error_cb(enum evhttp_request_error err, void *arg)
{
	((struct webhook *)arg)->req_err = (int)err;
}

/* The attempt's time is up: drop the connection, a failed attempt. */
static void
webhook_deadline_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct webhook	*h = arg;
	char		 why[WEBHOOK_WHY_MAX];
	const char	*stage;

	(void)fd;
	(void)ev;
	if (h->req == NULL)
		return;
	if (h->ssl != NULL && SSL_in_before(h->ssl))
		stage = "no connection to";
	else if (h->ssl != NULL && !SSL_is_init_finished(h->ssl))
		stage = "no TLS handshake with";
	else
		stage = "no answer from";
	snprintf(why, sizeof why, "%s %s within %lld ms", stage,
	    h->conf->url, (long long)h->conf->timeout_ms);
	webhook_disconnect(h);
	webhook_attempt_done(h, 0, why);
}

/* The connection went away: take a new one for the next POST. */
static void
webhook_closed_cb(struct evhttp_connection *conn, void *arg)
{
	(void)conn;
	((struct webhook *)arg)->stale = true;
}

/* Is host an IP address (no SNI then)? */
static bool
webhook_is_ip(const char *host)
{
	unsigned char	a[16];

	return inet_pton(AF_INET, host, a) == 1 ||
	    inet_pton(AF_INET6, host, a) == 1;
}

/* Verification: keep the first refusal's reason for the job's history. */
static int
webhook_verify_cb(int ok, X509_STORE_CTX *xs)
{
	SSL		*ssl = X509_STORE_CTX_get_ex_data(xs,
	    SSL_get_ex_data_X509_STORE_CTX_idx());
	struct webhook	*h = ssl != NULL ? SSL_get_app_data(ssl) : NULL;
	int		 e;

	if (!ok && h != NULL && *h->tls_why == '\0') {
		e = X509_STORE_CTX_get_error(xs);
		snprintf(h->tls_why, sizeof h->tls_why, "%s (certificate "
		    "depth %d)", X509_verify_cert_error_string(e),
		    X509_STORE_CTX_get_error_depth(xs));
	}
	return ok;
}

/* A connection for the next POST: plain, or TLS under evhttp. 0, or -1. */
static int
webhook_connect(struct webhook *h)
{
	struct bufferevent	*bev = NULL;
	struct timeval		 tv;
	int64_t			 ms = h->conf->timeout_ms +
	    WEBHOOK_EVHTTP_GRACE_MS;

	if (h->conn != NULL && !h->stale)
		return 0;
	webhook_disconnect(h);
	if (h->conf->tls != NULL) {
		if ((h->ssl = SSL_new(h->conf->tls)) == NULL)
			fatalx("SSL_new failed");
		SSL_set_app_data(h->ssl, h);
		if ((!webhook_is_ip(h->host) &&
		    SSL_set_tlsext_host_name(h->ssl, h->host) != 1) ||
		    (h->conf->tls_verify && SSL_set1_host(h->ssl, h->host) !=
		    1)) {
			ERR_clear_error();
			SSL_free(h->ssl);
			h->ssl = NULL;
			return -1;
		}
		if (h->conf->tls_verify)
			SSL_set_verify(h->ssl, SSL_VERIFY_PEER,
			    webhook_verify_cb);
		else
			SSL_set_verify(h->ssl, SSL_VERIFY_NONE, NULL);
		if ((bev = bufferevent_openssl_socket_new(h->gw->base, -1,
		    h->ssl, BUFFEREVENT_SSL_CONNECTING, BEV_OPT_CLOSE_ON_FREE |
		    BEV_OPT_DEFER_CALLBACKS)) == NULL)
			fatalx("bufferevent_openssl_socket_new failed");
		bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
	}
	if ((h->conn = evhttp_connection_base_bufferevent_new(h->gw->base,
	    h->gw->dns, bev, h->host, (unsigned short)h->port)) == NULL)
		fatalx("evhttp_connection_base_bufferevent_new failed");
	/* evhttp's own timeouts are a backstop: the deadline ends first */
	tv.tv_sec = (time_t)(ms / 1000);
	tv.tv_usec = (suseconds_t)(ms % 1000) * 1000;
	evhttp_connection_set_timeout_tv(h->conn, &tv);
	evhttp_connection_set_retries(h->conn, 0);
	evhttp_connection_set_closecb(h->conn, webhook_closed_cb, h);
	return 0;
}

/* POST the claimed job. */
static void
webhook_post(struct webhook *h)
{
	struct evhttp_request	*req;
	struct evkeyvalq	*hd;
	struct timeval		 tv;
	char			 ts[32], sig[65], id[32], hv[80];
	char			 why[WEBHOOK_WHY_MAX];
	json_t			*o;

	if (webhook_connect(h) != 0) {
		snprintf(why, sizeof why, "the host of %s cannot be used for "
		    "TLS", h->conf->url);
		webhook_attempt_done(h, 0, why);
		return;
	}
	*h->tls_why = '\0';
	h->req_err = -1;
	snprintf(ts, sizeof ts, "%lld", (long long)(util_now_ms() / 1000));
	webhook_sign(h->conf->secret, ts, h->body, h->len, sig);
	/* the event id: the body's "id" */
	*id = '\0';
	if ((o = json_loadb(h->body, h->len, 0, NULL)) != NULL) {
		snprintf(id, sizeof id, "%lld", (long long)json_integer_value(
		    json_object_get(o, "id")));
		json_decref(o);
	}
	if ((req = evhttp_request_new(webhook_resp_cb, h)) == NULL)
		fatalx("evhttp_request_new failed");
	evhttp_request_set_error_cb(req, webhook_req_error_cb);
	hd = evhttp_request_get_output_headers(req);
	evhttp_add_header(hd, "Host", h->hostport);
	evhttp_add_header(hd, "Content-Type", "application/json");
	evhttp_add_header(hd, "User-Agent", "mosgw/" MOSGW_VERSION);
	evhttp_add_header(hd, WEBHOOK_ID_HEADER, id);
	evhttp_add_header(hd, WEBHOOK_TS_HEADER, ts);
	snprintf(hv, sizeof hv, "sha256=%s", sig);
	evhttp_add_header(hd, WEBHOOK_SIG_HEADER, hv);
	evbuffer_add(evhttp_request_get_output_buffer(req), h->body, h->len);
	h->req = req;
	tv.tv_sec = (time_t)(h->conf->timeout_ms / 1000);
	tv.tv_usec = (suseconds_t)(h->conf->timeout_ms % 1000) * 1000;
	evtimer_add(h->deadline, &tv);
	if (evhttp_make_request(h->conn, req, EVHTTP_REQ_POST, h->path) != 0) {
		/* the request is freed by evhttp: settle as a failure */
		h->req = NULL;
		webhook_resp_cb(NULL, h);
	}
}

/* The claim is back: POST it, or sleep until the next one falls due. */
static void
webhook_claimed(void *arg, int rc)
{
	struct wh_task	*t = arg;
	struct webhook	*h = t->h;
	struct timeval	 tv;
	int64_t		 wait;

	h->busy = false;
	if (h->dead || h->gw->stopping) {
		wh_task_free(t);
		if (h->dead)
			webhook_free(h);
		return;
	}
	if (rc == QUEUE_OK && t->got == 1) {
		h->busy = true;
		h->job_id = t->job.id;
		h->job_gen = t->job.lease_gen;
		h->attempt = t->job.attempts;
		h->len = t->job.payload_len;
		h->body = xmalloc(h->len + 1);
		memcpy(h->body, t->job.payload, h->len);
		h->body[h->len] = '\0';
		wh_task_free(t);
		webhook_post(h);
		return;
	}
	if (rc != QUEUE_OK) {
		log_event_rl(LL_WARN, "webhook.error", h->name, "webhook=%s "
		    "op=claim msg=%s", h->name, log_q(queue_strerror(rc)));
		wait = 1000;
	} else if (t->next_due > 0) {
		wait = t->next_due - util_now_ms();
		if (wait < 0)
			wait = 0;
	} else {
		wh_task_free(t);
		return;		/* nothing queued: the pump kicks us */
	}
	wh_task_free(t);
	if (wait > WEBHOOK_WAIT_MAX_MS)
		wait = WEBHOOK_WAIT_MAX_MS;
	tv.tv_sec = (time_t)(wait / 1000);
	tv.tv_usec = (suseconds_t)(wait % 1000) * 1000;
	evtimer_add(h->timer, &tv);
}

static int
webhook_claim_run(struct gwdb *g, void *arg)
{
	struct wh_task	*t = arg;
	struct store_stmt	*st;
	int		 rc;

	rc = queue_claim(g->q, t->kind, t->worker, t->lease_ms, &t->job, 1,
	    &t->got);
	if (rc != QUEUE_OK || t->got > 0)
		return rc;
	if (store_prepare(g->db, "SELECT min(run_after) FROM jobs"
	    " WHERE lane = ?1 AND state = 0 AND blocked = 0", 0, &st) !=
	    STORE_OK)
		return gwdb_rc(store_errcode(g->db));
	store_bind_text(st, 1, t->kind, -1);
	if ((rc = store_step(st)) == STORE_ROW)
		t->next_due = store_column_int64(st, 0);
	store_finalize(st);
	return rc == STORE_ROW ? QUEUE_OK : gwdb_rc(rc);
}

/* Claim the next due job (unless one is under way). */
static void
webhook_claim(struct webhook *h)
{
	struct wh_task	*t;

	if (h->busy || h->dead || h->gw->stopping || h->gw->dbw == NULL)
		return;
	evtimer_del(h->timer);
	h->busy = true;
	t = xcalloc(1, sizeof *t);
	t->h = h;
	t->kind = xstrdup(h->kind);
	t->worker = xstrdup(h->worker);
	t->lease_ms = h->conf->timeout_ms + WEBHOOK_LEASE_EXTRA_MS;
	dbw_submit(h->gw->dbw, webhook_claim_run, webhook_claimed, t);
}

static void
webhook_timer_cb(evutil_socket_t fd, short ev, void *arg)
{
	(void)fd;
	(void)ev;
	webhook_claim(arg);
}

void
webhooks_kick(struct gw *gw)
{
	struct webhook	*h;

	if (gw->hooks == NULL)
		return;
	TAILQ_FOREACH(h, gw->hooks, entry)
		webhook_claim(h);
}

/* ------------------------------------------------------------------------ */
/* Configuration */

/* A webhook from its section (the configuration was checked). */
static struct webhook *
webhook_new(struct gw *gw, struct webhook_conf *c)
{
	struct webhook		*h;
	struct evhttp_uri	*u;
	const char		*p, *q;
	char			*err = NULL;
	int			 defport;

	h = xcalloc(1, sizeof *h);
	h->gw = gw;
	h->conf = c;
	h->name = xstrdup(c->name);
	xasprintf(&h->kind, WEBHOOK_KIND_PREFIX "%s", c->name);
	snprintf(h->worker, sizeof h->worker, GW_HOOK_WORKER_PREFIX "%s/%d/%s",
	    gw->cfg->instance, (int)getpid(), h->name);
	if (events_type_mask(c->events, false, &h->mask, &err) != 0)
		fatalx("webhook %s: %s", c->name, err);
	if ((u = evhttp_uri_parse_with_flags(c->url, 0)) == NULL)
		fatalx("webhook %s: bad url", c->name);
	p = evhttp_uri_get_host(u);
	defport = c->tls != NULL ? 443 : 80;
	h->port = evhttp_uri_get_port(u) > 0 ? evhttp_uri_get_port(u) :
	    defport;
	if (h->port == defport)
		h->hostport = xstrdup(p);
	else
		xasprintf(&h->hostport, "%s:%d", p, h->port);
	/* an IPv6 address comes in brackets */
	if (*p == '[' && p[strlen(p) - 1] == ']')
		h->host = xstrndup(p + 1, strlen(p) - 2);
	else
		h->host = xstrdup(p);
	p = evhttp_uri_get_path(u);
	q = evhttp_uri_get_query(u);
	xasprintf(&h->path, "%s%s%s", p != NULL && *p != '\0' ? p : "/",
	    q != NULL ? "?" : "", q != NULL ? q : "");
	evhttp_uri_free(u);
	if ((h->timer = evtimer_new(gw->base, webhook_timer_cb, h)) == NULL ||
	    (h->deadline = evtimer_new(gw->base, webhook_deadline_cb, h)) ==
	    NULL)
		fatalx("evtimer_new failed");
	h->req_err = -1;
	return h;
}

/* Do two sections say the same? */
static bool
webhook_conf_equal(const struct webhook_conf *a, const struct webhook_conf *b)
{
	return strcmp(a->url, b->url) == 0 && strcmp(a->events,
	    b->events) == 0 && strcmp(a->secret, b->secret) == 0 &&
	    a->timeout_ms == b->timeout_ms && a->max_attempts ==
	    b->max_attempts && strcmp(a->cacert, b->cacert) == 0 &&
	    a->tls_verify == b->tls_verify;
}

/* Retire a webhook: at once if idle, else when its work comes back. */
static void
webhook_retire(struct webhook *h)
{
	h->dead = true;
	evtimer_del(h->timer);
	if (h->req != NULL) {
		/* freeing the connection cancels the POST, without callback */
		webhook_disconnect(h);
		h->busy = false;
	}
	if (!h->busy)
		webhook_free(h);
}

struct wh_policy {
	char			**kinds;
	struct queue_policy	*pol;
	size_t			 n;
	bool			 none;		/* forget the cursor */
};

static int
webhook_policy_run(struct gwdb *g, void *arg)
{
	struct wh_policy	*w = arg;
	size_t			 i;
	int			 rc = QUEUE_OK;

	for (i = 0; i < w->n && rc == QUEUE_OK; i++)
		rc = queue_set_policy(g->q, w->kinds[i], &w->pol[i]);
	if (rc == QUEUE_OK && w->none)
		rc = gwdb_rc(store_exec(g->db, "DELETE FROM gw_meta"
		    " WHERE key = '" WEBHOOK_CURSOR "'"));
	return rc;
}

static void
webhook_policy_done(void *arg, int rc)
{
	struct wh_policy	*w = arg;
	size_t			 i;

	if (rc != QUEUE_OK)
		log_event(LL_WARN, "webhook.error", "op=configure msg=%s",
		    log_q(queue_strerror(rc)));
	for (i = 0; i < w->n; i++)
		free(w->kinds[i]);
	free(w->kinds);
	free(w->pol);
	free(w);
}

/*
 * Bring the webhooks in line with the configuration: unchanged ones keep
 * going, changed or removed ones are retired (a POST in flight is
 * abandoned; its job is taken back when its lease ends, or at the next
 * start). Jobs of a removed webhook stay in the queue.
 */
void
webhooks_configure(struct gw *gw)
{
	struct gw_config	*cfg = gw->cfg;
	struct webhook_list	*old = gw->hooks, *nl;
	struct webhook		*h, *next;
	struct wh_policy	*w;
	size_t			 i;
	bool			 had = old != NULL;

	nl = xcalloc(1, sizeof *nl);
	TAILQ_INIT(nl);
	w = xcalloc(1, sizeof *w);
	for (i = 0; i < cfg->nwebhooks; i++) {
		h = NULL;
		if (old != NULL) {
			TAILQ_FOREACH(h, old, entry) {
				if (strcmp(h->name, cfg->webhooks[i].name) ==
				    0 && webhook_conf_equal(h->conf,
				    &cfg->webhooks[i]))
					break;
			}
		}
		if (h != NULL) {
			TAILQ_REMOVE(old, h, entry);
			h->conf = &cfg->webhooks[i];
		} else {
			h = webhook_new(gw, &cfg->webhooks[i]);
			log_event(LL_INFO, "webhook.config", "webhook=%s url=%s "
			    "events=%s", h->name, log_q(h->conf->url),
			    log_q(h->conf->events));
		}
		if (h->conf->tls != NULL && !h->conf->tls_verify)
			log_event(LL_WARN, "webhook.config", "webhook=%s url=%s "
			    "tls_verify=false note=%s", h->name,
			    log_q(h->conf->url), log_q("the receiver's "
			    "certificate and host name are not checked"));
		TAILQ_INSERT_TAIL(nl, h, entry);
		w->kinds = xreallocarray(w->kinds, w->n + 1, sizeof *w->kinds);
		w->pol = xreallocarray(w->pol, w->n + 1, sizeof *w->pol);
		w->kinds[w->n] = xstrdup(h->kind);
		memset(&w->pol[w->n], 0, sizeof w->pol[w->n]);
		w->pol[w->n].max_attempts = h->conf->max_attempts;
		w->pol[w->n].backoff_base_ms = cfg->backoff_base_ms;
		w->pol[w->n].backoff_cap_ms = cfg->backoff_max_ms;
		w->pol[w->n].jitter_pct = 10;
		w->pol[w->n].lease_ms = h->conf->timeout_ms +
		    WEBHOOK_LEASE_EXTRA_MS;
		w->n++;
	}
	for (h = old != NULL ? TAILQ_FIRST(old) : NULL; h != NULL; h = next) {
		next = TAILQ_NEXT(h, entry);
		TAILQ_REMOVE(old, h, entry);
		log_event(LL_INFO, "webhook.config", "webhook=%s action=retired",
		    h->name);
		webhook_retire(h);
	}
	free(old);
	if (TAILQ_EMPTY(nl)) {
		free(nl);
		nl = NULL;
	}
	gw->hooks = nl;
	/* from none to some at a reload: from now on, not the past */
	if (nl != NULL && !had && gw->started_hooks)
		gw->hooks_reset = true;
	gw->started_hooks = true;
	w->none = nl == NULL;
	if (gw->dbw != NULL)
		dbw_submit(gw->dbw, webhook_policy_run, webhook_policy_done, w);
	else
		webhook_policy_done(w, QUEUE_OK);
	webhooks_kick(gw);
	events_wake(gw->events);
}

/* Shutdown: abandon POSTs in flight, free what is idle. */
void
webhooks_free(struct gw *gw)
{
	struct webhook	*h;

	if (gw->hooks == NULL)
		return;
	while ((h = TAILQ_FIRST(gw->hooks)) != NULL) {
		TAILQ_REMOVE(gw->hooks, h, entry);
		webhook_retire(h);
	}
	free(gw->hooks);
	gw->hooks = NULL;
}
