/*
 * Integration: the HTTP API over TLS ([api] tls_cert, tls_key) of the real
 * mosgw, with a throwaway self-signed certificate made at run time by the
 * OpenSSL API (tlscert.c). HTTPS accepted
 * (with the limits still answering), plain HTTP, TLS 1.1 and
 * renegotiation refused, a
 * stalled handshake closed at its deadline while the MOS links go on,
 * mosctl over https:// verifying the certificate (a request and the
 * event stream), bad pairs refused by
 * `mosgw -n` and kept out by SIGHUP, a new pair taken by SIGHUP.
 */
#include <sys/stat.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "gateway/tests/httpc.h"
#include "gateway/tests/itutil.h"
#include "gateway/tests/tlscert.h"

#define TOK_READ	"read-token-0123456789"
#define WAIT_MS		15000
#define STALLED		8	/* connections that never shake hands */

static const char tokens[] = "reader read " TOK_READ "\n";

struct tls_rig {
	struct gwrig	*r;
	char		 dir[PATH_MAX];		/* the certificates */
	char		 cert[PATH_MAX + 16];
	char		 key[PATH_MAX + 16];
	char		 extra[2 * PATH_MAX + 256];
};

static int
setup(void **state)
{
	struct tls_rig		*t;
	struct gwproc_opts	 o;
	const char		*tmp = getenv("MOSGW_TMP");

	t = calloc(1, sizeof *t);
	snprintf(t->dir, sizeof t->dir, "%s/tls.XXXXXX", tmp != NULL ? tmp :
	    "/tmp");
	if (mkdtemp(t->dir) == NULL) {
		free(t);
		return -1;
	}
	snprintf(t->cert, sizeof t->cert, "%s/cert.pem", t->dir);
	snprintf(t->key, sizeof t->key, "%s/key.pem", t->dir);
	if (tlscert_pair(t->cert, t->key) != 0) {
		free(t);
		return -1;
	}
	snprintf(t->extra, sizeof t->extra, "tls_cert = %s\ntls_key = %s\n"
	    "tls_handshake_timeout = 2\nmax_header_size = 2048\n", t->cert,
	    t->key);
	memset(&o, 0, sizeof o);
	o.api_tokens = tokens;
	o.api_extra = t->extra;
	if ((t->r = gwrig_new_opts(MOS_ENC_UTF16BE, &o)) == NULL) {
		free(t);
		return -1;
	}
	*state = t;
	return 0;
}

static int
teardown(void **state)
{
	struct tls_rig	*t = *state;
	char		 p[PATH_MAX + 32];
	int		 rc;

	*state = t->r;
	rc = itutil_teardown(state);
	unlink(t->cert);
	unlink(t->key);
	snprintf(p, sizeof p, "%s/o_cert.pem", t->dir);
	unlink(p);
	snprintf(p, sizeof p, "%s/o_key.pem", t->dir);
	unlink(p);
	snprintf(p, sizeof p, "%s/old.pem", t->dir);
	unlink(p);
	rmdir(t->dir);
	free(t);
	return rc;
}

/*
 * A TLS client connection to the API: cafile verifies the server (NULL: no
 * verification), version bounds (0 = library's). *ssl, or NULL with
 * the reason in err.
 */
static SSL *
tls_dial(struct tls_rig *t, const char *cafile, int minv, int maxv,
    char *err, size_t errlen)
{
	SSL_CTX		*ctx;
	SSL		*ssl;
	unsigned long	 e;
	int		 fd;

	*err = '\0';
	if ((ctx = SSL_CTX_new(TLS_client_method())) == NULL)
		return NULL;
	if (minv != 0 && minv < TLS1_2_VERSION) {
		/* old protocols need the lowest security level to be offered */
		SSL_CTX_set_security_level(ctx, 0);
		SSL_CTX_set_cipher_list(ctx, "DEFAULT:@SECLEVEL=0");
	}
	SSL_CTX_set_min_proto_version(ctx, minv);
	SSL_CTX_set_max_proto_version(ctx, maxv);
	if (cafile != NULL) {
		SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
		if (SSL_CTX_load_verify_locations(ctx, cafile, NULL) != 1)
			fail_msg("cannot load %s", cafile);
	}
	if ((fd = httpc_connect(t->r->gw->api_port)) == -1)
		fail_msg("cannot connect to the API port");
	ssl = SSL_new(ctx);
	SSL_CTX_free(ctx);		/* ssl keeps a reference */
	SSL_set_fd(ssl, fd);
	if (cafile != NULL)
		SSL_set1_host(ssl, "127.0.0.1");
	ERR_clear_error();
	if (SSL_connect(ssl) != 1) {
		e = ERR_peek_last_error();
		snprintf(err, errlen, "%s (reason %d, verify %ld)",
		    e != 0 ? ERR_reason_error_string(e) : "closed",
		    ERR_GET_REASON(e), SSL_get_verify_result(ssl));
		ERR_clear_error();
		SSL_free(ssl);
		close(fd);
		return NULL;
	}
	return ssl;
}

static void
tls_close(SSL *ssl)
{
	int	fd = SSL_get_fd(ssl);

	SSL_free(ssl);
	close(fd);
}

/* Send a raw request and read everything until the server closes. */
static char *
tls_exchange(SSL *ssl, const char *req)
{
	char	*buf = NULL, *nb;
	size_t	 len = 0;
	char	 chunk[4096];
	int	 n;

	if (SSL_write(ssl, req, (int)strlen(req)) != (int)strlen(req))
		fail_msg("SSL_write failed");
	while ((n = SSL_read(ssl, chunk, sizeof chunk)) > 0) {
		if ((nb = realloc(buf, len + (size_t)n + 1)) == NULL)
			abort();
		buf = nb;
		memcpy(buf + len, chunk, (size_t)n);
		len += (size_t)n;
		buf[len] = '\0';
	}
	return buf != NULL ? buf : strdup("");
}

/* HTTPS works: a route, the version, a limit answered inside TLS. */
static void
test_https(void **state)
{
	struct tls_rig	*t = *state;
	SSL		*ssl;
	char		 err[256], *resp, *big;

	ssl = tls_dial(t, t->cert, 0, 0, err, sizeof err);
	if (ssl == NULL)
		fail_msg("handshake: %s", err);
	assert_true(SSL_version(ssl) >= TLS1_2_VERSION);
	resp = tls_exchange(ssl, "GET /v1/links HTTP/1.1\r\nHost: x\r\n"
	    "Authorization: Bearer " TOK_READ "\r\nConnection: close\r\n\r\n");
	if (strncmp(resp, "HTTP/1.1 200", 12) != 0 ||
	    strstr(resp, "\"links\":[") == NULL)
		fail_msg("GET /v1/links over TLS: %s", resp);
	free(resp);
	tls_close(ssl);

	/* the limits filter still sees every request: 431 over TLS */
	ssl = tls_dial(t, t->cert, 0, 0, err, sizeof err);
	assert_non_null(ssl);
	big = malloc(4200);
	memset(big, 'a', 4096);
	memcpy(big, "GET /healthz HTTP/1.1\r\nX: ", 26);
	memcpy(big + 4096, "\r\n\r\n", 5);
	resp = tls_exchange(ssl, big);
	if (strncmp(resp, "HTTP/1.1 431", 12) != 0 ||
	    strstr(resp, "max_header_size") == NULL)
		fail_msg("an oversized head over TLS: %s", resp);
	free(resp);
	free(big);
	tls_close(ssl);
}

/* Plain HTTP on the TLS port gets no HTTP answer; TLS 1.1 is refused. */
static void
test_refused(void **state)
{
	struct tls_rig		*t = *state;
	struct httpc_resp	 r;
	char			 err[256];
	SSL			*ssl;
	unsigned long		 e;

	memset(&r, 0, sizeof r);
	httpc_once(t->r->gw->api_port, "GET", "/healthz", NULL, NULL, NULL,
	    &r);
	assert_int_equal(r.status, 0);
	httpc_resp_clear(&r);

	ssl = tls_dial(t, t->cert, TLS1_1_VERSION, TLS1_1_VERSION, err,
	    sizeof err);
	if (ssl != NULL)
		fail_msg("a TLS 1.1 handshake succeeded");
	/* the server's protocol_version alert, not our own library's refusal */
	if (strstr(err, "protocol version") == NULL)
		fail_msg("TLS 1.1: %s", err);

	/* renegotiation (TLS 1.2) is refused */
	ssl = tls_dial(t, t->cert, TLS1_2_VERSION, TLS1_2_VERSION, err,
	    sizeof err);
	assert_non_null(ssl);
	assert_int_equal(SSL_renegotiate(ssl), 1);
	ERR_clear_error();
	assert_int_not_equal(SSL_do_handshake(ssl), 1);
	/* the server's no_renegotiation alert */
	e = ERR_peek_last_error();
	assert_true(e != 0);
	assert_string_equal(ERR_reason_error_string(e), "no renegotiation");
	tls_close(ssl);

	/* TLS 1.3 is offered too */
	ssl = tls_dial(t, NULL, TLS1_3_VERSION, 0, err, sizeof err);
	assert_non_null(ssl);
	tls_close(ssl);
}

/*
 * Connections that never shake hands are closed at the handshake
 * deadline; meanwhile the MOS links answer and deliver.
 */
static void
test_handshake_deadline(void **state)
{
	struct tls_rig		*t = *state;
	struct gwrig		*r = t->r;
	struct ncspeer_match	 m;
	int			 fd[STALLED], i, conn;
	long			 off = (long)gwproc_log_size(r->gw);

	for (i = 0; i < STALLED; i++)
		GWRIG_CHECK(r, (fd[i] = httpc_connect(r->gw->api_port)) != -1);
	/* half a ClientHello on one of them */
	GWRIG_CHECK(r, httpc_write(fd[0], "\x16\x03\x01\x02\x00\x01", 6) ==
	    0);
	conn = gwrig_dial(r, NCSPEER_LOWER);
	GWRIG_CHECK(r, conn >= 0);
	GWRIG_CHECK(r, gwrig_request(r, conn, MOS_T_HEARTBEAT, WAIT_MS) !=
	    NULL);
	GWRIG_CHECK(r, gwproc_asset_put(r->gw, "TLS-1", "slug") == 0);
	memset(&m, 0, sizeof m);
	m.type = "mosObj";
	m.obj_id = "TLS-1";
	GWRIG_CHECK(r, ncspeer_wait(r->ncs, &m, WAIT_MS) != NULL);
	for (i = 0; i < STALLED; i++) {
		GWRIG_CHECK(r, httpc_closed(fd[i], WAIT_MS));
		close(fd[i]);
	}
	GWRIG_CHECK(r, gwproc_log_count(r->gw, off, "tls-handshake-timeout",
	    (char *)NULL) == STALLED);
}

/* Run mosctl; its exit status, stdout and stderr (both malloc'd). */
static int
mosctl(struct tls_rig *t, char **out, char **err, const char *url,
    const char *cacert)
{
	if (cacert != NULL)
		return gwproc_mosctl_cmd(t->r->gw, out, err, "--url", url,
		    "--token-file", t->r->gw->tokens, "--cacert", cacert,
		    "links", (char *)NULL);
	return gwproc_mosctl_cmd(t->r->gw, out, err, "--url", url,
	    "--token-file", t->r->gw->tokens, "links", (char *)NULL);
}

/* mosctl over https: verified against --cacert, refused without it. */
static void
test_mosctl_https(void **state)
{
	struct tls_rig	*t = *state;
	char		 url[64], out_url[64], *out, *err;
	int		 st;

	snprintf(url, sizeof url, "https://127.0.0.1:%u", t->r->gw->api_port);
	st = mosctl(t, &out, &err, url, t->cert);
	if (st != 0 || strstr(out, "lower") == NULL)
		fail_msg("mosctl links over https: %d %s %s", st, out, err);
	free(out);
	free(err);
	/* the event stream too: the links' events, then the end */
	st = gwproc_mosctl_cmd(t->r->gw, &out, &err, "--url", url,
	    "--token-file", t->r->gw->tokens, "--cacert", t->cert, "events",
	    "--types", "link.state", (char *)NULL);
	if (st != 0 || strstr(out, "  link.state  {\"ncs\":") == NULL)
		fail_msg("mosctl events over https: %d %s %s", st, out, err);
	free(out);
	free(err);
	st = mosctl(t, &out, &err, url, NULL);
	if (st != 69 || strstr(err, "certificate") == NULL)
		fail_msg("without --cacert: %d %s", st, err);
	free(out);
	free(err);
	/* the certificate names 127.0.0.1, not localhost */
	snprintf(out_url, sizeof out_url, "https://localhost:%u",
	    t->r->gw->api_port);
	st = mosctl(t, &out, &err, out_url, t->cert);
	if (st != 69 || strstr(err, "TLS") == NULL)
		fail_msg("wrong name: %d %s", st, err);
	free(out);
	free(err);
	/* http:// to the TLS port: no HTTP answer */
	snprintf(out_url, sizeof out_url, "http://127.0.0.1:%u",
	    t->r->gw->api_port);
	st = mosctl(t, &out, &err, out_url, NULL);
	if (st != 69)
		fail_msg("http to the https port: %d %s", st, err);
	free(out);
	free(err);
}

/* mosgw -n on the rig's configuration: exit status; stderr in *err. */
static int
check_config(struct tls_rig *t, char **err)
{
	struct gwchild	 ch;
	char		 path[PATH_MAX], errlog[PATH_MAX + 32];
	char		 a1[] = "-n", a2[] = "-c", *argv[5];
	int		 st;

	snprintf(errlog, sizeof errlog, "%s/check.err", t->dir);
	unlink(errlog);
	snprintf(path, sizeof path, "%s/mosgw", gwproc_bindir());
	argv[0] = path;
	argv[1] = a1;
	argv[2] = a2;
	argv[3] = t->r->gw->conf;
	argv[4] = NULL;
	if (gwchild_start(&ch, NULL, argv, errlog) != 0)
		return -1;
	st = gwchild_wait(&ch, WAIT_MS);
	gwchild_clear(&ch);
	*err = gwproc_read_file(errlog);
	unlink(errlog);
	return st;
}

/* Write the configuration with these [api] TLS lines, then mosgw -n. */
static void
expect_bad(struct tls_rig *t, const char *lines, const char *has)
{
	char	*err;
	int	 st;

	t->r->gw->opts.api_extra = lines;
	assert_int_equal(gwproc_write_config(t->r->gw), 0);
	st = check_config(t, &err);
	if (st != 1 || strstr(err, has) == NULL)
		fail_msg("mosgw -n: status %d, stderr '%s' lacks '%s'", st,
		    err, has);
	free(err);
}

/*
 * Bad pairs: refused by mosgw -n with the reason; on SIGHUP the old pair
 * stays. A good new pair is taken by SIGHUP for new connections.
 */
static void
test_config_reload(void **state)
{
	struct tls_rig	*t = *state;
	struct gwrig	*r = t->r;
	char		 lines[4][2 * PATH_MAX + 128], ocert[PATH_MAX + 32];
	char		 okey[PATH_MAX + 32], old[PATH_MAX + 32], err[256];
	char		*pem;
	SSL		*ssl;
	FILE		*f;
	long		 off;

	snprintf(ocert, sizeof ocert, "%s/o_cert.pem", t->dir);
	snprintf(okey, sizeof okey, "%s/o_key.pem", t->dir);
	snprintf(old, sizeof old, "%s/old.pem", t->dir);
	/* another pair: its key does not match our certificate */
	assert_int_equal(tlscert_pair(ocert, okey), 0);
	snprintf(lines[0], sizeof lines[0], "tls_cert = %s\ntls_key = %s\n",
	    t->cert, okey);
	expect_bad(t, lines[0], "does not belong to the certificate");
	chmod(okey, 0644);
	expect_bad(t, lines[0], "accessible to others (mode 0644)");
	chmod(okey, 0600);
	snprintf(lines[1], sizeof lines[1], "tls_cert = %s/none.pem\n"
	    "tls_key = %s\n", t->dir, t->key);
	expect_bad(t, lines[1], "not a usable PEM certificate");
	snprintf(lines[2], sizeof lines[2], "tls_cert = %s\n", t->cert);
	expect_bad(t, lines[2], "tls_cert and tls_key go together");
	snprintf(lines[3], sizeof lines[3], "tls_cert = %s\ntls_key = %s\n",
	    t->key, t->key);
	expect_bad(t, lines[3], "tls_cert");

	/* SIGHUP with a bad pair: the running one stays */
	off = (long)gwproc_log_size(r->gw);
	r->gw->opts.api_extra = lines[0];
	assert_int_equal(gwproc_write_config(r->gw), 0);
	GWRIG_CHECK(r, gwproc_signal(r->gw, SIGHUP) == 0);
	GWRIG_CHECK(r, gwproc_log_wait(r->gw, off, WAIT_MS,
	    "the-previous-certificate-stays", (char *)NULL) >= 0);
	ssl = tls_dial(t, t->cert, 0, 0, err, sizeof err);
	if (ssl == NULL)
		fail_msg("after a bad SIGHUP: %s", err);
	tls_close(ssl);

	/* a new pair in the same files: new connections get it */
	pem = gwproc_read_file(t->cert);
	assert_non_null(f = fopen(old, "w"));
	fputs(pem, f);
	fclose(f);
	free(pem);
	assert_int_equal(tlscert_pair(t->cert, t->key), 0);
	off = (long)gwproc_log_size(r->gw);
	r->gw->opts.api_extra = t->extra;
	assert_int_equal(gwproc_write_config(r->gw), 0);
	GWRIG_CHECK(r, gwproc_signal(r->gw, SIGHUP) == 0);
	GWRIG_CHECK(r, gwproc_log_wait(r->gw, off, WAIT_MS, "event=api.tls",
	    "days_left=", (char *)NULL) >= 0);
	ssl = tls_dial(t, t->cert, 0, 0, err, sizeof err);
	if (ssl == NULL)
		fail_msg("the new certificate: %s", err);
	tls_close(ssl);
	/* the previous certificate no longer verifies the server */
	ssl = tls_dial(t, old, 0, 0, err, sizeof err);
	assert_null(ssl);
	if (strstr(err, "certificate verify failed") == NULL)
		fail_msg("with the old certificate: %s", err);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_https, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_handshake_deadline, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_mosctl_https, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_config_reload, setup,
		    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
