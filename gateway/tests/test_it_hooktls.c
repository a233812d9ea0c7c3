/*
 * Integration: webhooks to https:// URLs from the real mosgw, received by
 * hookrx.c over TLS on loopback, with certificates made at run time
 * (tlscert.c): a certificate authority A, the receiver's certificate from
 * A for 127.0.0.1 and localhost, one from another authority B, one from A
 * for another host. Delivered with cacert = A (SNI sent for a name, not
 * for an address, IPv4 or IPv6) and with tls_verify = false (a warning in the log);
 * refused for B's certificate (retried with the reason in the job's
 * history, then delivered once the receiver serves A's), refused for the
 * wrong host (FAILED after its attempts); a receiver that accepts TCP but
 * never shakes hands times out without holding up the other webhooks.
 */
#include <sys/socket.h>

#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>

#include "gateway/tests/hookrx.h"
#include "gateway/tests/itutil.h"
#include "gateway/tests/tlscert.h"

#define SECRET		"hook-tls-secret-7"
#define WAIT_MS		20000
#define STALL_MAX	16	/* connections the stalled receiver holds */

/* The certificates of the suite (made once). */
static char	 dir[512];

/* The receivers of a test, and its [webhook.*] sections. */
static struct hook_rx	 rx[3];
static int		 nrx;
static char		 sections[4096];

/* A receiver that accepts TCP connections and never answers. */
struct stall {
	int		 fd;
	uint16_t	 port;
	int		 held[STALL_MAX];
	int		 n;
	volatile int	 stop;
	pthread_t	 th;
};
static struct stall	 stall;

/* dir/name.pem */
static const char *
file(const char *name)
{
	static char	buf[4][640];
	static int	i;

	i = (i + 1) % 4;
	snprintf(buf[i], sizeof buf[i], "%s/%s.pem", dir, name);
	return buf[i];
}

static int
make_cert(const char *name, const char *san, const struct tlscert *ca,
    struct tlscert *out)
{
	struct tlscert	c;
	char		key[64];
	int		rc;

	if (tlscert_make(&c, name, san, ca, san == NULL) != 0)
		return -1;
	snprintf(key, sizeof key, "%s-key", name);
	rc = tlscert_write(&c, file(name), file(key));
	if (out != NULL && rc == 0)
		*out = c;
	else
		tlscert_clear(&c);
	return rc;
}

/* A and B, A's certificates for 127.0.0.1 and for another host, B's. */
static int
group_setup(void **state)
{
	struct tlscert	 a, b;
	const char	*tmp = getenv("MOSGW_TMP");
	int		 rc;

	(void)state;
	snprintf(dir, sizeof dir, "%s/hooktls.XXXXXX", tmp != NULL ? tmp :
	    "/tmp");
	if (mkdtemp(dir) == NULL)
		return -1;
	if (make_cert("ca-a", NULL, NULL, &a) != 0)
		return -1;
	if (make_cert("ca-b", NULL, NULL, &b) != 0) {
		tlscert_clear(&a);
		return -1;
	}
	rc = make_cert("good", "IP:127.0.0.1,DNS:localhost,IP:::1", &a,
	    NULL) |
	    make_cert("other-ca", "IP:127.0.0.1,DNS:localhost", &b, NULL) |
	    make_cert("other-host", "IP:127.0.0.2,DNS:other.example", &a,
	    NULL);
	tlscert_clear(&a);
	tlscert_clear(&b);
	return rc;
}

static int
group_teardown(void **state)
{
	static const char *const names[] = { "ca-a", "ca-b", "good",
	    "other-ca", "other-host" };
	char	key[64];
	size_t	i;

	(void)state;
	for (i = 0; i < sizeof names / sizeof names[0]; i++) {
		unlink(file(names[i]));
		snprintf(key, sizeof key, "%s-key", names[i]);
		unlink(file(key));
	}
	rmdir(dir);
	return 0;
}

/* Start a receiver on addr (NULL: 127.0.0.1) serving the certificate. */
static struct hook_rx *
rx_start_on(const char *addr, const char *name)
{
	struct hook_rx	*h = &rx[nrx++];
	char		 key[64];

	snprintf(key, sizeof key, "%s-key", name);
	hookrx_start(h, addr, 0, file(name), file(key));
	return h;
}

static struct hook_rx *
rx_start(const char *name)
{
	return rx_start_on(NULL, name);
}

/* Can a socket be bound to ::1 here? */
static bool
has_ipv6_loopback(void)
{
	struct sockaddr_in6	sin6;
	int			fd, rc;

	if ((fd = socket(AF_INET6, SOCK_STREAM, 0)) == -1)
		return false;
	memset(&sin6, 0, sizeof sin6);
	sin6.sin6_family = AF_INET6;
	sin6.sin6_addr = in6addr_loopback;
	rc = bind(fd, (struct sockaddr *)&sin6, sizeof sin6);
	close(fd);
	return rc == 0;
}

static void
rx_set_cert(struct hook_rx *h, const char *name)
{
	char	key[64];

	snprintf(key, sizeof key, "%s-key", name);
	hookrx_set_cert(h, file(name), file(key));
}

static void *
stall_main(void *arg)
{
	struct stall	*s = arg;
	struct pollfd	 p;
	int		 fd;

	p.fd = s->fd;
	p.events = POLLIN;
	while (!s->stop) {
		if (poll(&p, 1, 50) != 1)
			continue;
		if ((fd = accept(s->fd, NULL, NULL)) == -1)
			continue;
		if (s->n < STALL_MAX)
			s->held[s->n++] = fd;	/* read nothing, say nothing */
		else
			close(fd);
	}
	return NULL;
}

static void
stall_start(struct stall *s)
{
	struct sockaddr_in	sin;
	socklen_t		len = sizeof sin;

	memset(s, 0, sizeof *s);
	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((s->fd = socket(AF_INET, SOCK_STREAM, 0)) == -1 ||
	    bind(s->fd, (struct sockaddr *)&sin, sizeof sin) != 0 ||
	    listen(s->fd, STALL_MAX) != 0 ||
	    getsockname(s->fd, (struct sockaddr *)&sin, &len) != 0)
		abort();
	s->port = ntohs(sin.sin_port);
	if (pthread_create(&s->th, NULL, stall_main, s) != 0)
		abort();
}

static void
stall_stop(struct stall *s)
{
	int	i;

	s->stop = 1;
	pthread_join(s->th, NULL);
	for (i = 0; i < s->n; i++)
		close(s->held[i]);
	close(s->fd);
}

/* Append a [webhook.NAME] section. */
static void __attribute__((format(printf, 2, 3)))
section(const char *name, const char *fmt, ...)
{
	size_t	len = strlen(sections);
	va_list	ap;

	snprintf(sections + len, sizeof sections - len, "[webhook.%s]\n"
	    "events = asset.delivered\nsecret = " SECRET "\n", name);
	len = strlen(sections);
	va_start(ap, fmt);
	vsnprintf(sections + len, sizeof sections - len, fmt, ap);
	va_end(ap);
}

/* Stop the receivers of a test. */
static void
receivers_stop(void)
{
	int	i;

	for (i = 0; i < nrx; i++)
		hookrx_stop(&rx[i]);
	nrx = 0;
	if (stall.port != 0)
		stall_stop(&stall);
	memset(&stall, 0, sizeof stall);
	*sections = '\0';
}

static int
setup_rig(void **state)
{
	struct gwproc_opts	o;

	memset(&o, 0, sizeof o);
	o.database_extra = "backoff_base = 100ms\nbackoff_max = 500ms\n";
	o.sections_extra = sections;
	if (itutil_setup_opts(state, MOS_ENC_UTF16BE, &o) != 0) {
		receivers_stop();
		return -1;
	}
	return 0;
}

static int
teardown(void **state)
{
	int	rc = itutil_teardown(state);

	receivers_stop();
	return rc;
}

/*
 * Does localhost name only 127.0.0.1 here? Then a webhook can reach a
 * receiver on 127.0.0.1 by that name (SNI is sent for names only).
 */
static bool
localhost_is_v4(void)
{
	struct addrinfo	 hints, *res, *ai;
	bool		 ok = true;

	memset(&hints, 0, sizeof hints);
	hints.ai_socktype = SOCK_STREAM;
	if (getaddrinfo("localhost", "80", &hints, &res) != 0)
		return false;
	for (ai = res; ai != NULL; ai = ai->ai_next)
		if (ai->ai_family != AF_INET || ((struct sockaddr_in *)
		    ai->ai_addr)->sin_addr.s_addr != htonl(INADDR_LOOPBACK))
			ok = false;
	freeaddrinfo(res);
	return ok;
}

/* Does a note of the history of some job of the lane contain text? */
static bool
history_has(struct gwrig *r, const char *lane, const char *text)
{
	struct queue		*q;
	struct queue_filter	 flt;
	struct queue_job	*jobs = NULL;
	struct queue_event	*ev;
	size_t			 n = 0, ne, i, k;
	bool			 found = false;

	if ((q = gwproc_queue(r->gw)) == NULL)
		return false;
	memset(&flt, 0, sizeof flt);
	flt.state = -1;
	flt.lane = lane;
	if (queue_list(q, &flt, &jobs, &n) == QUEUE_OK) {
		for (i = 0; i < n && !found; i++) {
			if (queue_history(q, jobs[i].id, &ev, &ne) != QUEUE_OK)
				continue;
			for (k = 0; k < ne; k++)
				if (ev[k].note != NULL &&
				    strstr(ev[k].note, text) != NULL)
					found = true;
			queue_events_free(ev, ne);
		}
		queue_jobs_free(jobs, n);
	}
	queue_close(q);
	return found;
}

/* The POST from rx with that Host header, or NULL. */
static struct hook_req *
rx_find(struct hook_rx *h, const char *host)
{
	int	i;

	for (i = 0; i < hookrx_count(h) && i < HOOKRX_MAX; i++)
		if (strcmp(h->req[i].host, host) == 0)
			return &h->req[i];
	return NULL;
}

/* ------------------------------------------------------------------------ */

static bool	named;		/* localhost usable for the SNI check */
static bool	ipv6;		/* ::1 usable */

static int
setup_https(void **state)
{
	struct hook_rx	*good = rx_start("good");
	struct hook_rx	*other = rx_start("other-ca");

	section("tls", "url = https://127.0.0.1:%u/hook?x=1\ncacert = %s\n"
	    "timeout = 5\n", good->port, file("ca-a"));
	if ((named = localhost_is_v4()))
		section("named", "url = https://localhost:%u/named\n"
		    "cacert = %s\ntimeout = 5\n", good->port, file("ca-a"));
	section("insecure", "url = https://127.0.0.1:%u/\n"
	    "tls_verify = false\ntimeout = 5\n", other->port);
	if ((ipv6 = has_ipv6_loopback()))
		section("v6", "url = https://[::1]:%u/v6\ncacert = %s\n"
		    "timeout = 5\n", rx_start_on("::1", "good")->port,
		    file("ca-a"));
	return setup_rig(state);
}

/*
 * Delivered over TLS, signed, with the Host header of the URL; SNI for a
 * name, none for an address; tls_verify = false delivers to a certificate
 * of another authority, with a warning at load.
 */
static void
test_https(void **state)
{
	struct gwrig	*r = *state;
	struct hook_req	*q;
	char		 host[64], want[160];

	GWRIG_CHECK(r, gwproc_log_count(r->gw, 0, "level=warn",
	    "event=webhook.config", "webhook=insecure", "tls_verify=false",
	    (char *)NULL) == 1);
	GWRIG_CHECK(r, gwproc_asset_put(r->gw, "TLS-1", "secure") == 0);
	GWRIG_CHECK(r, gwproc_wait_jobs(r->gw, "webhook:tls", QUEUE_DONE, 1,
	    WAIT_MS) == 1);
	GWRIG_CHECK(r, gwproc_wait_jobs(r->gw, "webhook:insecure",
	    QUEUE_DONE, 1, WAIT_MS) == 1);
	snprintf(host, sizeof host, "127.0.0.1:%u", rx[0].port);
	q = rx_find(&rx[0], host);
	assert_non_null(q);
	assert_int_equal(q->status, 200);
	assert_string_equal(q->sni, "");
	hookrx_expect(SECRET, q->ts, q->body, want, sizeof want);
	assert_string_equal(q->sig, want);
	assert_non_null(strstr(q->body, "\"objID\":\"TLS-1\""));
	assert_int_equal(hookrx_count(&rx[1]), 1);
	if (ipv6) {
		GWRIG_CHECK(r, gwproc_wait_jobs(r->gw, "webhook:v6",
		    QUEUE_DONE, 1, WAIT_MS) == 1);
		snprintf(host, sizeof host, "[::1]:%u", rx[2].port);
		q = rx_find(&rx[2], host);
		assert_non_null(q);
		assert_string_equal(q->sni, "");
	} else
		print_message("SKIP: no ::1 here: https://[::1] not checked\n");
	if (!named) {
		print_message("SKIP: localhost does not name 127.0.0.1 alone "
		    "here: SNI not checked\n");
		return;
	}
	GWRIG_CHECK(r, gwproc_wait_jobs(r->gw, "webhook:named", QUEUE_DONE,
	    1, WAIT_MS) == 1);
	snprintf(host, sizeof host, "localhost:%u", rx[0].port);
	q = rx_find(&rx[0], host);
	assert_non_null(q);
	assert_string_equal(q->sni, "localhost");
}

static int
setup_other_ca(void **state)
{
	struct hook_rx	*h = rx_start("other-ca");

	section("tls", "url = https://127.0.0.1:%u/\ncacert = %s\n"
	    "timeout = 5\nmax_attempts = 1000\n", h->port, file("ca-a"));
	return setup_rig(state);
}

/*
 * A certificate from another authority: each attempt fails in the
 * handshake, the reason in the log and the job's history, and is
 * retried; once the receiver serves A's certificate the job is DONE.
 */
static void
test_other_ca(void **state)
{
	struct gwrig	*r = *state;

	GWRIG_CHECK(r, gwproc_asset_put(r->gw, "TLS-2", "refused") == 0);
	GWRIG_CHECK(r, gwproc_log_wait(r->gw, 0, WAIT_MS,
	    "event=webhook.retry", "webhook=tls", "attempt=2",
	    "unable to get local issuer certificate", (char *)NULL) != -1);
	GWRIG_CHECK(r, history_has(r, "webhook:tls",
	    "unable to get local issuer certificate"));
	GWRIG_CHECK(r, gwproc_job_count(r->gw, "webhook:tls", QUEUE_DONE) ==
	    0);
	assert_int_equal(hookrx_count(&rx[0]), 0);
	rx_set_cert(&rx[0], "good");
	GWRIG_CHECK(r, gwproc_wait_jobs(r->gw, "webhook:tls", QUEUE_DONE, 1,
	    WAIT_MS) == 1);
	assert_int_equal(hookrx_count(&rx[0]), 1);
	assert_int_equal(rx[0].req[0].status, 200);
}

static int
setup_wrong_host(void **state)
{
	struct hook_rx	*h = rx_start("other-host");

	section("tls", "url = https://127.0.0.1:%u/\ncacert = %s\n"
	    "timeout = 5\nmax_attempts = 2\n", h->port, file("ca-a"));
	return setup_rig(state);
}

/* A's certificate for another host: FAILED after its two attempts. */
static void
test_wrong_host(void **state)
{
	struct gwrig	*r = *state;

	GWRIG_CHECK(r, gwproc_asset_put(r->gw, "TLS-3", "elsewhere") == 0);
	GWRIG_CHECK(r, gwproc_wait_jobs(r->gw, "webhook:tls", QUEUE_FAILED,
	    1, WAIT_MS) == 1);
	GWRIG_CHECK(r, history_has(r, "webhook:tls", "IP address mismatch"));
	GWRIG_CHECK(r, gwproc_log_count(r->gw, 0, "event=webhook.retry",
	    "webhook=tls", "IP address mismatch", (char *)NULL) == 2);
	assert_int_equal(hookrx_count(&rx[0]), 0);
}

static int
setup_stall(void **state)
{
	struct hook_rx	*h = rx_start("good");

	stall_start(&stall);
	section("slow", "url = https://127.0.0.1:%u/\ncacert = %s\n"
	    "timeout = 600\nmax_attempts = 1\n", stall.port, file("ca-a"));
	section("stall", "url = https://127.0.0.1:%u/\ncacert = %s\n"
	    "timeout = 1\nmax_attempts = 2\n", stall.port, file("ca-a"));
	section("tls", "url = https://127.0.0.1:%u/\ncacert = %s\n"
	    "timeout = 5\n", h->port, file("ca-a"));
	return setup_rig(state);
}

/*
 * A receiver that accepts TCP and never shakes hands: its attempts end
 * at the webhook's timeout (FAILED after two, the reason recorded), and
 * while one waits the other webhooks and the NCS deliveries go on.
 */
static void
test_stall(void **state)
{
	struct gwrig	*r = *state;

	GWRIG_CHECK(r, gwproc_asset_put(r->gw, "TLS-4", "one") == 0);
	GWRIG_CHECK(r, gwproc_wait_jobs(r->gw, "webhook:tls", QUEUE_DONE, 1,
	    WAIT_MS) == 1);
	GWRIG_CHECK(r, gwproc_asset_put(r->gw, "TLS-5", "two") == 0);
	GWRIG_CHECK(r, gwproc_wait_jobs(r->gw, "webhook:tls", QUEUE_DONE, 2,
	    WAIT_MS) == 2);
	GWRIG_CHECK(r, gwproc_wait_idle(r->gw, r->lane, WAIT_MS) == 0);
	GWRIG_CHECK(r, gwproc_wait_jobs(r->gw, "webhook:stall", QUEUE_FAILED,
	    2, WAIT_MS) == 2);
	GWRIG_CHECK(r, history_has(r, "webhook:stall",
	    "no TLS handshake with"));
	/* the first event's POST to "slow" still waits for its handshake */
	GWRIG_CHECK(r, gwproc_jobs_pending(r->gw, "webhook:slow") == 2);
	GWRIG_CHECK(r, gwproc_job_count(r->gw, "webhook:slow", QUEUE_RUNNING)
	    == 1);
	assert_int_equal(hookrx_count(&rx[0]), 2);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_https, setup_https,
		    teardown),
		cmocka_unit_test_setup_teardown(test_other_ca, setup_other_ca,
		    teardown),
		cmocka_unit_test_setup_teardown(test_wrong_host,
		    setup_wrong_host, teardown),
		cmocka_unit_test_setup_teardown(test_stall, setup_stall,
		    teardown),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
