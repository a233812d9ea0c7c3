/*
 * tlscert: throwaway certificates for the TLS tests, made at run time with
 * the OpenSSL API (no key is ever kept in the repository): self-signed
 * ones, certificate authorities, and certificates they issue. EC P-256
 * keys, valid from a minute ago for a day.
 */
#ifndef TLSCERT_H
#define TLSCERT_H

#include <stdbool.h>

struct tlscert {
	struct evp_pkey_st	*key;
	struct x509_st		*x;
};

/*
 * A certificate for cn with the subjectAltName san ("IP:127.0.0.1",
 * "DNS:a.example,IP:127.0.0.2"; NULL: none), issued by issuer (NULL:
 * self-signed); ca makes it a certificate authority. 0, or -1.
 */
int	tlscert_make(struct tlscert *, const char *cn, const char *san,
	    const struct tlscert *issuer, bool ca);
/* The certificate and the key (0600) as PEM files. 0, or -1. */
int	tlscert_write(const struct tlscert *, const char *cert,
	    const char *key);
void	tlscert_clear(struct tlscert *);

/* A self-signed certificate for 127.0.0.1 written as PEM. 0, or -1. */
int	tlscert_pair(const char *cert, const char *key);

#endif
