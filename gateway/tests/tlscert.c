/*
 * tlscert: throwaway certificates for the TLS tests (see tlscert.h).
 */
#include <sys/stat.h>

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "gateway/tests/tlscert.h"

/* Add the extension nid = value, in the context of issuer and subject. */
static int
tlscert_ext(X509 *x, X509 *issuer, int nid, const char *value)
{
	X509_EXTENSION	*ext;
	X509V3_CTX	 v3;

	X509V3_set_ctx(&v3, issuer, x, NULL, NULL, 0);
	if ((ext = X509V3_EXT_conf_nid(NULL, &v3, nid, value)) == NULL)
		return -1;
	X509_add_ext(x, ext, -1);
	X509_EXTENSION_free(ext);
	return 0;
}

int
tlscert_make(struct tlscert *c, const char *cn, const char *san,
    const struct tlscert *issuer, bool ca)
{
	static long	 serial;
	X509_NAME	*nm;
	X509		*ix;
	EVP_PKEY	*ik;

	memset(c, 0, sizeof *c);
	if ((c->key = EVP_EC_gen("P-256")) == NULL ||
	    (c->x = X509_new()) == NULL)
		goto fail;
	X509_set_version(c->x, 2);
	ASN1_INTEGER_set(X509_get_serialNumber(c->x), (long)getpid() * 1000 +
	    ++serial);
	X509_gmtime_adj(X509_getm_notBefore(c->x), -60);
	X509_gmtime_adj(X509_getm_notAfter(c->x), 86400);
	X509_set_pubkey(c->x, c->key);
	nm = X509_get_subject_name(c->x);
	X509_NAME_add_entry_by_txt(nm, "CN", MBSTRING_ASC,
	    (const unsigned char *)cn, -1, -1, 0);
	ix = issuer != NULL ? issuer->x : c->x;
	ik = issuer != NULL ? issuer->key : c->key;
	X509_set_issuer_name(c->x, X509_get_subject_name(ix));
	if (san != NULL && tlscert_ext(c->x, ix, NID_subject_alt_name,
	    san) != 0)
		goto fail;
	if (ca && (tlscert_ext(c->x, ix, NID_basic_constraints,
	    "critical,CA:TRUE") != 0 || tlscert_ext(c->x, ix, NID_key_usage,
	    "critical,keyCertSign,cRLSign") != 0))
		goto fail;
	if (X509_sign(c->x, ik, EVP_sha256()) == 0)
		goto fail;
	return 0;
fail:
	tlscert_clear(c);
	return -1;
}

int
tlscert_write(const struct tlscert *c, const char *cert, const char *key)
{
	FILE	*f;

	if ((f = fopen(cert, "w")) == NULL)
		return -1;
	PEM_write_X509(f, c->x);
	if (fclose(f) != 0)
		return -1;
	unlink(key);
	if ((f = fopen(key, "w")) == NULL)
		return -1;
	if (fchmod(fileno(f), 0600) != 0) {
		fclose(f);
		return -1;
	}
	PEM_write_PrivateKey(f, c->key, NULL, NULL, 0, NULL, NULL);
	return fclose(f) == 0 ? 0 : -1;
}

void
tlscert_clear(struct tlscert *c)
{
	X509_free(c->x);
	EVP_PKEY_free(c->key);
	memset(c, 0, sizeof *c);
}

int
tlscert_pair(const char *cert, const char *key)
{
	struct tlscert	c;
	int		rc;

	if (tlscert_make(&c, "127.0.0.1", "IP:127.0.0.1", NULL, false) != 0)
		return -1;
	rc = tlscert_write(&c, cert, key);
	tlscert_clear(&c);
	return rc;
}
