/*
 * hookrx: a webhook receiver for the tests (see hookrx.h).
 */
#include <sys/socket.h>

#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/ssl.h>

#include "gateway/tests/hookrx.h"

static void
hookrx_copy(char *dst, size_t len, struct evkeyvalq *h, const char *name)
{
	const char	*v = evhttp_find_header(h, name);

	snprintf(dst, len, "%s", v != NULL ? v : "");
}

/* One POST: record it, answer 500 for the first fail_first, then 200. */
static void
hookrx_cb(struct evhttp_request *req, void *arg)
{
	struct hook_rx		*rx = arg;
	struct evkeyvalq	*h = evhttp_request_get_input_headers(req);
	struct evbuffer		*in = evhttp_request_get_input_buffer(req);
	struct bufferevent	*bev;
	struct hook_req		*q;
	SSL			*ssl;
	const char		*sni;
	size_t			 len = evbuffer_get_length(in);
	int			 status;

	pthread_mutex_lock(&rx->mu);
	status = rx->n < rx->fail_first ? 500 : 200;
	if (rx->n < HOOKRX_MAX) {
		q = &rx->req[rx->n];
		q->status = status;
		hookrx_copy(q->sig, sizeof q->sig, h, "X-Mosgw-Signature");
		hookrx_copy(q->ts, sizeof q->ts, h, "X-Mosgw-Timestamp");
		hookrx_copy(q->id, sizeof q->id, h, "X-Mosgw-Event-Id");
		hookrx_copy(q->ctype, sizeof q->ctype, h, "Content-Type");
		hookrx_copy(q->host, sizeof q->host, h, "Host");
		*q->sni = '\0';
		bev = evhttp_connection_get_bufferevent(
		    evhttp_request_get_connection(req));
		if (rx->tls != NULL && bev != NULL &&
		    (ssl = bufferevent_openssl_get_ssl(bev)) != NULL &&
		    (sni = SSL_get_servername(ssl,
		    TLSEXT_NAMETYPE_host_name)) != NULL)
			snprintf(q->sni, sizeof q->sni, "%s", sni);
		if ((q->body = malloc(len + 1)) == NULL)
			abort();
		evbuffer_copyout(in, q->body, len);
		q->body[len] = '\0';
	}
	rx->n++;
	pthread_mutex_unlock(&rx->mu);
	evhttp_send_reply(req, status, status == 200 ? "OK" : "Error", NULL);
}

/* A TLS connection: the current certificate (under the lock). */
static struct bufferevent *
hookrx_bev(struct event_base *base, void *arg)
{
	struct hook_rx	*rx = arg;
	SSL		*ssl;

	pthread_mutex_lock(&rx->mu);
	ssl = SSL_new(rx->tls);
	pthread_mutex_unlock(&rx->mu);
	if (ssl == NULL)
		abort();
	return bufferevent_openssl_socket_new(base, -1, ssl,
	    BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE);
}

/* Every 50 ms: stop when told to. */
static void
hookrx_tick(evutil_socket_t fd, short ev, void *arg)
{
	struct hook_rx	*rx = arg;

	(void)fd;
	(void)ev;
	if (rx->stop)
		event_base_loopbreak(rx->base);
}

static void *
hookrx_main(void *arg)
{
	struct hook_rx	*rx = arg;

	event_base_dispatch(rx->base);
	return NULL;
}

static SSL_CTX *
hookrx_ctx(const char *cert, const char *key)
{
	SSL_CTX	*ctx;

	if ((ctx = SSL_CTX_new(TLS_server_method())) == NULL ||
	    SSL_CTX_use_certificate_chain_file(ctx, cert) != 1 ||
	    SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1) {
		fprintf(stderr, "hookrx: cannot use %s and %s\n", cert, key);
		abort();
	}
	return ctx;
}

void
hookrx_start(struct hook_rx *rx, const char *addr, int fail_first,
    const char *cert, const char *key)
{
	struct evhttp_bound_socket	*b;
	struct sockaddr_storage		 ss;
	socklen_t			 len = sizeof ss;
	struct timeval			 tv = { 0, 50000 };

	memset(rx, 0, sizeof *rx);
	rx->fail_first = fail_first;
	pthread_mutex_init(&rx->mu, NULL);
	if ((rx->base = event_base_new()) == NULL ||
	    (rx->http = evhttp_new(rx->base)) == NULL)
		abort();
	evhttp_set_gencb(rx->http, hookrx_cb, rx);
	if (cert != NULL) {
		rx->tls = hookrx_ctx(cert, key);
		evhttp_set_bevcb(rx->http, hookrx_bev, rx);
	}
	if ((b = evhttp_bind_socket_with_handle(rx->http, addr != NULL ? addr :
	    "127.0.0.1", 0)) == NULL)
		abort();
	getsockname(evhttp_bound_socket_get_fd(b), (struct sockaddr *)&ss,
	    &len);
	rx->port = ntohs(ss.ss_family == AF_INET6 ?
	    ((struct sockaddr_in6 *)&ss)->sin6_port :
	    ((struct sockaddr_in *)&ss)->sin_port);
	rx->tick = event_new(rx->base, -1, EV_PERSIST, hookrx_tick, rx);
	event_add(rx->tick, &tv);
	if (pthread_create(&rx->th, NULL, hookrx_main, rx) != 0)
		abort();
}

void
hookrx_set_cert(struct hook_rx *rx, const char *cert, const char *key)
{
	SSL_CTX	*ctx = hookrx_ctx(cert, key), *old;

	pthread_mutex_lock(&rx->mu);
	old = rx->tls;
	rx->tls = ctx;
	pthread_mutex_unlock(&rx->mu);
	SSL_CTX_free(old);		/* its connections hold a reference */
}

void
hookrx_stop(struct hook_rx *rx)
{
	int	i;

	rx->stop = 1;
	pthread_join(rx->th, NULL);
	event_free(rx->tick);
	evhttp_free(rx->http);
	event_base_free(rx->base);
	SSL_CTX_free(rx->tls);
	for (i = 0; i < rx->n && i < HOOKRX_MAX; i++)
		free(rx->req[i].body);
	pthread_mutex_destroy(&rx->mu);
}

int
hookrx_count(struct hook_rx *rx)
{
	int	n;

	pthread_mutex_lock(&rx->mu);
	n = rx->n;
	pthread_mutex_unlock(&rx->mu);
	return n;
}

void
hookrx_expect(const char *secret, const char *ts, const char *body,
    char *out, size_t len)
{
	unsigned char	 mac[EVP_MAX_MD_SIZE];
	unsigned int	 n = 0, i;
	char		*msg;

	if (asprintf(&msg, "%s.%s", ts, body) < 0)
		abort();
	HMAC(EVP_sha256(), secret, (int)strlen(secret),
	    (unsigned char *)msg, strlen(msg), mac, &n);
	free(msg);
	snprintf(out, len, "sha256=");
	for (i = 0; i < n; i++)
		snprintf(out + 7 + i * 2, len - 7 - i * 2, "%02x", mac[i]);
}
