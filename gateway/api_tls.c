/*
 * HTTPS for the API: the OpenSSL context built from [api] tls_cert and
 * tls_key. TLS 1.2 at least, renegotiation off, no compression, OpenSSL's
 * default ciphers at security level 2 (no RSA keys under 2048 bits, no
 * SHA-1 signatures). The key file is refused when others may read it, or
 * its group may write it (0640 stays allowed for a group such as Debian's
 * ssl-cert). The same check runs at start, at `mosgw -n` and on SIGHUP
 * (a bad pair then keeps the previous one).
 */
#include <sys/stat.h>

#include <errno.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "gateway/gateway.h"

#define API_TLS_SECLEVEL	2

const char *
tls_err(char *buf, size_t len)
{
	unsigned long	e, last = 0;

	while ((e = ERR_get_error()) != 0)
		last = e;
	if (last == 0)
		return "unknown TLS error";
	ERR_error_string_n(last, buf, len);
	return buf;
}

SSL_CTX *
api_tls_ctx(const struct gw_config *cfg, char **cause)
{
	SSL_CTX		*ctx;
	struct stat	 st;
	char		 e[256];
	const char	*cert = cfg->api_tls_cert, *key = cfg->api_tls_key;
	bool		 mismatch;

	if (stat(key, &st) != 0) {
		xasprintf(cause, "[api] tls_key %s: %s", key, strerror(errno));
		return NULL;
	}
	if ((st.st_mode & 0037) != 0) {
		xasprintf(cause, "[api] tls_key %s: the private key is "
		    "accessible to others (mode %04o): make it 0600, or 0640 "
		    "for a group that may read it", key,
		    (unsigned)(st.st_mode & 07777));
		return NULL;
	}
	ERR_clear_error();
	if ((ctx = SSL_CTX_new(TLS_server_method())) == NULL)
		fatalx("SSL_CTX_new failed");
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_security_level(ctx, API_TLS_SECLEVEL);
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION |
	    SSL_OP_NO_COMPRESSION | SSL_OP_CIPHER_SERVER_PREFERENCE);
	if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1) {
		xasprintf(cause, "[api] tls_cert %s: not a usable PEM "
		    "certificate (%s)", cert, tls_err(e, sizeof e));
		goto fail;
	}
	if (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) == 1)
		mismatch = SSL_CTX_check_private_key(ctx) != 1;
	else if (ERR_GET_REASON(ERR_peek_last_error()) ==
	    X509_R_KEY_VALUES_MISMATCH)
		mismatch = true;
	else {
		xasprintf(cause, "[api] tls_key %s: not a usable PEM private "
		    "key (%s)", key, tls_err(e, sizeof e));
		goto fail;
	}
	if (mismatch) {
		ERR_clear_error();
		xasprintf(cause, "[api] tls_key %s does not belong to the "
		    "certificate in tls_cert %s", key, cert);
		goto fail;
	}
	return ctx;
fail:
	SSL_CTX_free(ctx);
	return NULL;
}

/* Days until the certificate expires (negative: expired). */
int
api_tls_days_left(SSL_CTX *ctx)
{
	X509	*x = SSL_CTX_get0_certificate(ctx);
	int	 days = 0, secs = 0;

	if (x == NULL || ASN1_TIME_diff(&days, &secs, NULL,
	    X509_get0_notAfter(x)) != 1)
		return 0;
	return days;
}

int
api_tls_check(const struct gw_config *cfg, char **cause)
{
	SSL_CTX	*ctx;

	if (cfg->api_port == 0 || *cfg->api_tls_cert == '\0')
		return 0;
	if ((ctx = api_tls_ctx(cfg, cause)) == NULL)
		return -1;
	SSL_CTX_free(ctx);
	return 0;
}
