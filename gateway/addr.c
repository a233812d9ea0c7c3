/*
 * Peer addresses: a source address in one form (an IPv4-mapped IPv6
 * address counts as the IPv4 one), the allow-lists of the [ncs.NAME]
 * sections (addresses and CIDR prefixes, `hosts`, `loopback`, `any`), and
 * token buckets, alone or one per source address, for what unauthenticated
 * peers may cost us.
 */
#include <sys/socket.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/gateway.h"

#define ADDR_LIST_MAX	256	/* entries in one allow-list */

/* The address of a socket address (port left out). 0, or -1 if not IP. */
int
addr_from_sockaddr(struct addr *a, const struct sockaddr *sa)
{
	const struct sockaddr_in	*in;
	const struct sockaddr_in6	*in6;

	memset(a, 0, sizeof *a);
	if (sa->sa_family == AF_INET) {
		in = (const struct sockaddr_in *)(const void *)sa;
		a->af = AF_INET;
		memcpy(a->a, &in->sin_addr, 4);
		return 0;
	}
	if (sa->sa_family != AF_INET6)
		return -1;
	in6 = (const struct sockaddr_in6 *)(const void *)sa;
	if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) {
		a->af = AF_INET;
		memcpy(a->a, in6->sin6_addr.s6_addr + 12, 4);
		return 0;
	}
	a->af = AF_INET6;
	memcpy(a->a, &in6->sin6_addr, 16);
	return 0;
}

/* A numeric IPv4 or IPv6 address. 0, or -1. */
int
addr_parse(struct addr *a, const char *s)
{
	struct sockaddr_in6	in6;

	memset(a, 0, sizeof *a);
	if (inet_pton(AF_INET, s, a->a) == 1) {
		a->af = AF_INET;
		return 0;
	}
	memset(&in6, 0, sizeof in6);
	in6.sin6_family = AF_INET6;
	if (inet_pton(AF_INET6, s, &in6.sin6_addr) != 1)
		return -1;
	return addr_from_sockaddr(a, (const struct sockaddr *)&in6);
}

/* The address as text. */
void
addr_format(const struct addr *a, char *buf, size_t len)
{
	if (a->af == 0 || inet_ntop(a->af, a->a, buf, (socklen_t)len) == NULL)
		snprintf(buf, len, "?");
}

/* The same address? */
bool
addr_equal(const struct addr *x, const struct addr *y)
{
	return x->af == y->af && memcmp(x->a, y->a, x->af == AF_INET ? 4 :
	    16) == 0;
}

/*
 * The same source, as caps and rate limits count them: the same IPv4
 * address, or the same IPv6 /64 (one site's hosts share it, and whoever
 * has one address of it has them all).
 */
bool
addr_same_source(const struct addr *x, const struct addr *y)
{
	return x->af == y->af && memcmp(x->a, y->a, x->af == AF_INET ? 4 :
	    8) == 0;
}

/* Do the first bits of two addresses of the same family agree? */
static bool
addr_prefix_match(const struct addr *net, int bits, const struct addr *a)
{
	int	full = bits / 8, rest = bits % 8;
	uint8_t	mask;

	if (net->af != a->af)
		return false;
	if (memcmp(net->a, a->a, (size_t)full) != 0)
		return false;
	if (rest == 0)
		return true;
	mask = (uint8_t)(0xff << (8 - rest));
	return (net->a[full] & mask) == (a->a[full] & mask);
}

/* 127.0.0.0/8 or ::1. */
bool
addr_is_loopback(const struct addr *a)
{
	static const uint8_t	one6[16] = { [15] = 1 };

	if (a->af == AF_INET)
		return a->a[0] == 127;
	return a->af == AF_INET6 && memcmp(a->a, one6, 16) == 0;
}

/* One entry: an address, or an address/bits with no host bits set. */
static int
acl_parse_net(struct acl_net *n, char *tok, char **err)
{
	char	*slash, *end;
	long	 bits;
	int	 max;
	struct addr	masked;

	if ((slash = strchr(tok, '/')) != NULL)
		*slash = '\0';
	if (addr_parse(&n->addr, tok) != 0) {
		xasprintf(err, "'%s' is not a numeric IPv4 or IPv6 address "
		    "(or any, hosts, loopback)", tok);
		return -1;
	}
	max = n->addr.af == AF_INET ? 32 : 128;
	n->bits = max;
	if (slash == NULL)
		return 0;
	bits = strtol(slash + 1, &end, 10);
	if (slash[1] == '\0' || *end != '\0' || !isdigit((unsigned char)
	    slash[1]) || bits < 0 || bits > max) {
		xasprintf(err, "'%s/%s': the prefix length must be 0..%d", tok,
		    slash + 1, max);
		return -1;
	}
	n->bits = (int)bits;
	memset(&masked, 0, sizeof masked);
	masked.af = n->addr.af;
	memcpy(masked.a, n->addr.a, (size_t)(bits / 8));
	if (bits % 8 != 0)
		masked.a[bits / 8] = (uint8_t)(n->addr.a[bits / 8] &
		    (0xff << (8 - bits % 8)));
	if (!addr_equal(&masked, &n->addr)) {
		xasprintf(err, "'%s/%ld' has bits set past the prefix", tok,
		    bits);
		return -1;
	}
	return 0;
}

/*
 * Parse an allow-list: entries separated by commas or blanks, each `any`,
 * `hosts`, `loopback`, an address or a CIDR prefix. 0, or -1 and *err.
 */
int
acl_parse(struct acl *acl, const char *text, char **err)
{
	char		*copy, *tok, *save = NULL;
	struct acl_net	 n;

	memset(acl, 0, sizeof *acl);
	*err = NULL;
	copy = xstrdup(text);
	for (tok = strtok_r(copy, ", \t", &save); tok != NULL;
	    tok = strtok_r(NULL, ", \t", &save)) {
		if (strcmp(tok, "any") == 0)
			acl->any = true;
		else if (strcmp(tok, "hosts") == 0)
			acl->hosts = true;
		else if (strcmp(tok, "loopback") == 0)
			acl->loopback = true;
		else if (acl->n == ADDR_LIST_MAX) {
			xasprintf(err, "more than %d addresses", ADDR_LIST_MAX);
			break;
		} else if (acl_parse_net(&n, tok, err) != 0)
			break;
		else {
			acl->v = xreallocarray(acl->v, acl->n + 1,
			    sizeof *acl->v);
			acl->v[acl->n++] = n;
		}
	}
	free(copy);
	if (*err == NULL && !acl->any && !acl->hosts && !acl->loopback &&
	    acl->n == 0)
		xasprintf(err, "empty (use any, hosts, loopback, addresses or "
		    "prefixes)");
	if (*err != NULL) {
		acl_clear(acl);
		return -1;
	}
	return 0;
}

/* Free an allow-list. */
void
acl_clear(struct acl *acl)
{
	free(acl->v);
	memset(acl, 0, sizeof *acl);
}

/* Does the list allow a? hosts: the NCS's own addresses (for `hosts`). */
bool
acl_match(const struct acl *acl, const struct addr *a,
    const struct addr *hosts, size_t nhosts)
{
	size_t	i;

	if (acl->any)
		return true;
	if (acl->loopback && addr_is_loopback(a))
		return true;
	for (i = 0; acl->hosts && i < nhosts; i++) {
		if (addr_equal(&hosts[i], a))
			return true;
	}
	for (i = 0; i < acl->n; i++) {
		if (addr_prefix_match(&acl->v[i].addr, acl->v[i].bits, a))
			return true;
	}
	return false;
}

/* A full bucket: burst tokens, rate per second. */
void
bucket_init(struct bucket *b, double rate, double burst)
{
	b->rate = rate;
	b->burst = burst;
	b->tokens = burst;
	b->last_ms = 0;
}

/* Take one token if there is one (refilled for the time since last). */
bool
bucket_take(struct bucket *b, int64_t now_ms)
{
	if (b->last_ms != 0 && now_ms > b->last_ms) {
		b->tokens += (double)(now_ms - b->last_ms) * b->rate / 1000.0;
		if (b->tokens > b->burst)
			b->tokens = b->burst;
	}
	b->last_ms = now_ms;
	if (b->tokens < 1.0)
		return false;
	b->tokens -= 1.0;
	return true;
}

/* One bucket per source address, in a table of this many slots. */
struct srclim {
	struct srclim_slot {
		struct addr	 addr;
		struct bucket	 b;
	}		*v;
	size_t		 n;
	double		 rate;
	double		 burst;
};

/*
 * Buckets per source: a direct-mapped table, so memory stays fixed however
 * many addresses turn up; two addresses on the same slot share its bucket
 * until one of them takes it over (the newcomer starts full, as a peer not
 * seen for a while would).
 */
struct srclim *
srclim_new(size_t slots, double rate, double burst)
{
	struct srclim	*s;

	s = xcalloc(1, sizeof *s);
	s->v = xcalloc(slots, sizeof *s->v);
	s->n = slots;
	s->rate = rate;
	s->burst = burst;
	return s;
}

/* Free the table. */
void
srclim_free(struct srclim *s)
{
	if (s == NULL)
		return;
	free(s->v);
	free(s);
}

/* FNV-1a over the family and the source's bytes (IPv6: its /64). */
static uint32_t
srclim_hash(const struct addr *a)
{
	uint32_t	h = 2166136261u;
	size_t		i, len = a->af == AF_INET ? 4 : 8;

	h = (h ^ (uint32_t)a->af) * 16777619u;
	for (i = 0; i < len; i++)
		h = (h ^ a->a[i]) * 16777619u;
	return h;
}

/* Take a token from the bucket of a's source. */
bool
srclim_take(struct srclim *s, const struct addr *a, int64_t now_ms)
{
	struct srclim_slot	*sl = &s->v[srclim_hash(a) % s->n];

	if (!addr_same_source(&sl->addr, a) || sl->b.burst == 0) {
		sl->addr = *a;
		bucket_init(&sl->b, s->rate, s->burst);
	}
	return bucket_take(&sl->b, now_ms);
}
