/*
 * hookrx: a webhook receiver for the tests, evhttp on a thread of its own
 * on loopback, plain HTTP or HTTPS (bufferevent_openssl). It records
 * every POST (headers, body, the SNI name under TLS) and answers 500 to
 * the first fail_first of them, then 200.
 */
#ifndef HOOKRX_H
#define HOOKRX_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define HOOKRX_MAX	32	/* POSTs recorded */

struct hook_req {
	int	 status;	/* what we answered */
	char	 sig[128];
	char	 ts[32];
	char	 id[32];
	char	 ctype[64];
	char	 host[300];	/* the Host header */
	char	 sni[256];	/* TLS: the name the client asked for */
	char	*body;
};

struct hook_rx {
	struct event_base	*base;
	struct evhttp		*http;
	struct event		*tick;
	struct ssl_ctx_st	*tls;		/* NULL: plain HTTP */
	pthread_t		 th;
	pthread_mutex_t		 mu;
	volatile int		 stop;
	int			 fail_first;
	uint16_t		 port;
	struct hook_req		 req[HOOKRX_MAX];
	int			 n;
};

/*
 * Start a receiver on a free port of addr (NULL: 127.0.0.1): HTTPS with
 * that certificate and key (PEM files), or plain HTTP when cert is NULL.
 * Aborts on failure.
 */
void	hookrx_start(struct hook_rx *, const char *addr, int fail_first,
	    const char *cert, const char *key);
/* Serve another certificate from the next connection on. */
void	hookrx_set_cert(struct hook_rx *, const char *cert, const char *key);
void	hookrx_stop(struct hook_rx *);
/* POSTs received so far. */
int	hookrx_count(struct hook_rx *);
/* The signature a receiver computes: "sha256=" hex HMAC-SHA256 of ts.body. */
void	hookrx_expect(const char *secret, const char *ts, const char *body,
	    char *out, size_t len);

#endif
