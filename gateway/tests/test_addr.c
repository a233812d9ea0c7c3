/*
 * Peer addresses: parsing and normalizing (IPv4-mapped IPv6 is IPv4),
 * allow-lists (any, hosts, loopback, addresses, CIDR prefixes of both
 * families) and token buckets, alone and per source address.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <sys/socket.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <stdlib.h>
#include <string.h>

#include "gateway/gateway.h"

/* An address that must parse. */
static struct addr
A(const char *s)
{
	struct addr	a;

	assert_int_equal(addr_parse(&a, s), 0);
	return a;
}

/* Is a the address s? */
static bool
is(const struct addr *a, const char *s)
{
	struct addr	b = A(s);

	return addr_equal(a, &b);
}

/* Do x and y count as one source? */
static bool
same_source(const char *x, const char *y)
{
	struct addr	a = A(x), b = A(y);

	return addr_same_source(&a, &b);
}

/* Is s a loopback address? */
static bool
loopback(const char *s)
{
	struct addr	a = A(s);

	return addr_is_loopback(&a);
}

/* Does the list (text) allow s, with these addresses for `hosts`? */
static bool
allows(const char *list, const char *s, const struct addr *hosts,
    size_t nhosts)
{
	struct acl	acl;
	struct addr	a = A(s);
	char		*err = NULL;
	bool		 ok;

	assert_int_equal(acl_parse(&acl, list, &err), 0);
	assert_null(err);
	ok = acl_match(&acl, &a, hosts, nhosts);
	acl_clear(&acl);
	return ok;
}

/* Parsing, formatting, mapped addresses, loopback. */
static void
test_addresses(void **state)
{
	struct sockaddr_in6	in6;
	struct sockaddr_in	in;
	struct addr		a, b;
	char			buf[64];

	(void)state;
	a = A("10.1.2.3");
	assert_int_equal(a.af, AF_INET);
	addr_format(&a, buf, sizeof buf);
	assert_string_equal(buf, "10.1.2.3");
	b = A("::ffff:10.1.2.3");
	assert_true(addr_equal(&a, &b));
	a = A("2001:db8::1");
	assert_int_equal(a.af, AF_INET6);
	addr_format(&a, buf, sizeof buf);
	assert_string_equal(buf, "2001:db8::1");
	assert_int_equal(addr_parse(&a, "example.org"), -1);
	assert_int_equal(addr_parse(&a, "10.1.2"), -1);
	assert_int_equal(addr_parse(&a, ""), -1);

	memset(&in6, 0, sizeof in6);
	in6.sin6_family = AF_INET6;
	inet_pton(AF_INET6, "::ffff:127.0.0.9", &in6.sin6_addr);
	assert_int_equal(addr_from_sockaddr(&a, (struct sockaddr *)&in6), 0);
	assert_int_equal(a.af, AF_INET);
	assert_true(is(&a, "127.0.0.9"));
	memset(&in, 0, sizeof in);
	in.sin_family = AF_INET;
	in.sin_port = htons(4000);
	inet_pton(AF_INET, "192.0.2.1", &in.sin_addr);
	assert_int_equal(addr_from_sockaddr(&a, (struct sockaddr *)&in), 0);
	assert_true(is(&a, "192.0.2.1"));
	in.sin_family = AF_UNIX;
	assert_int_equal(addr_from_sockaddr(&a, (struct sockaddr *)&in), -1);

	assert_true(loopback("127.0.0.1"));
	assert_true(loopback("127.255.0.2"));
	assert_true(loopback("::1"));
	assert_true(loopback("::ffff:127.0.0.3"));
	assert_false(loopback("128.0.0.1"));
	assert_false(loopback("::2"));

	assert_true(same_source("2001:db8:0:1::5", "2001:db8:0:1:ab::7"));
	assert_false(same_source("2001:db8:0:1::5", "2001:db8:0:2::5"));
	assert_true(same_source("10.0.0.1", "::ffff:10.0.0.1"));
	assert_false(same_source("10.0.0.1", "10.0.0.2"));
	assert_true(same_source("10.0.0.1", "::ffff:a00:1"));
	assert_false(same_source("10.0.0.1", "::a00:1"));
}

/* Every kind of entry, and what each one lets in. */
static void
test_acl_match(void **state)
{
	struct addr	hosts[2];

	(void)state;
	hosts[0] = A("10.0.0.5");
	hosts[1] = A("2001:db8::5");
	assert_true(allows("any", "203.0.113.7", NULL, 0));
	assert_true(allows("any", "2001:db8::99", NULL, 0));
	assert_true(allows("loopback", "127.0.0.2", NULL, 0));
	assert_true(allows("loopback", "::1", NULL, 0));
	assert_false(allows("loopback", "10.0.0.5", NULL, 0));
	assert_true(allows("hosts, loopback", "10.0.0.5", hosts, 2));
	assert_true(allows("hosts", "2001:db8::5", hosts, 2));
	assert_false(allows("hosts", "10.0.0.6", hosts, 2));
	assert_false(allows("hosts", "127.0.0.1", hosts, 2));
	assert_false(allows("loopback", "10.0.0.5", hosts, 2));

	assert_true(allows("10.1.0.0/16", "10.1.255.254", NULL, 0));
	assert_false(allows("10.1.0.0/16", "10.2.0.1", NULL, 0));
	assert_true(allows("10.1.2.0/23", "10.1.3.9", NULL, 0));
	assert_false(allows("10.1.2.0/23", "10.1.4.9", NULL, 0));
	assert_true(allows("192.0.2.1", "192.0.2.1", NULL, 0));
	assert_true(allows("192.0.2.1", "::ffff:192.0.2.1", NULL, 0));
	assert_false(allows("192.0.2.1", "192.0.2.2", NULL, 0));
	assert_true(allows("0.0.0.0/0", "198.51.100.1", NULL, 0));
	assert_false(allows("0.0.0.0/0", "2001:db8::1", NULL, 0));
	assert_true(allows("fd00::/8", "fdab::1", NULL, 0));
	assert_false(allows("fd00::/8", "fe80::1", NULL, 0));
	assert_true(allows("2001:db8:1::/48 10.0.0.0/8", "10.9.9.9", NULL, 0));
	assert_true(allows("2001:db8:1::/48,10.0.0.0/8", "2001:db8:1:ffff::1",
	    NULL, 0));
	assert_false(allows("2001:db8:1::/48", "2001:db8:2::1", NULL, 0));
}

/* What acl_parse refuses, with why. */
static void
test_acl_errors(void **state)
{
	static const char *const bad[][2] = {
		{ "", "empty" },
		{ " , ", "empty" },
		{ "host.example", "'host.example' is not a numeric" },
		{ "10.0.0.0/33", "prefix length must be 0..32" },
		{ "::/129", "prefix length must be 0..128" },
		{ "10.0.0.0/", "prefix length" },
		{ "10.0.0.0/x", "prefix length" },
		{ "10.0.0.0/-1", "prefix length" },
		{ "10.0.0.1/24", "has bits set past the prefix" },
		{ "fd00::1/8", "has bits set past the prefix" },
		{ "loopback 10.0.0.256", "'10.0.0.256' is not a numeric" },
	};
	struct acl	 acl;
	char		*err;
	size_t		 i;

	(void)state;
	for (i = 0; i < nitems(bad); i++) {
		err = NULL;
		assert_int_equal(acl_parse(&acl, bad[i][0], &err), -1);
		assert_non_null(err);
		if (strstr(err, bad[i][1]) == NULL)
			fail_msg("'%s': got '%s', want '%s'", bad[i][0], err,
			    bad[i][1]);
		assert_null(acl.v);
		free(err);
	}
}

/* A bucket: burst, then rate; a table keeps one per address. */
static void
test_buckets(void **state)
{
	struct bucket	 b;
	struct srclim	*s;
	struct addr	 x = A("10.0.0.1"), y = A("10.0.0.2");
	int		 i, n;

	(void)state;
	bucket_init(&b, 2.0, 3.0);
	for (n = 0; bucket_take(&b, 1000); n++)
		;
	assert_int_equal(n, 3);
	assert_false(bucket_take(&b, 1400));	/* 0.8 of a token */
	assert_true(bucket_take(&b, 1500));	/* 1.0 */
	assert_false(bucket_take(&b, 1500));
	for (n = 0; bucket_take(&b, 100000); n++)	/* capped at burst */
		;
	assert_int_equal(n, 3);

	s = srclim_new(64, 1.0, 2.0);
	for (i = 0; i < 2; i++) {
		assert_true(srclim_take(s, &x, 5000));
		assert_true(srclim_take(s, &y, 5000));
	}
	assert_false(srclim_take(s, &x, 5000));
	assert_false(srclim_take(s, &y, 5000));
	assert_true(srclim_take(s, &x, 6000));
	assert_false(srclim_take(s, &x, 6000));
	srclim_free(s);

	s = srclim_new(64, 1.0, 1.0);	/* an IPv6 /64 is one source */
	x = A("2001:db8:1:2::1");
	y = A("2001:db8:1:2:ffff::9");
	assert_true(srclim_take(s, &x, 5000));
	assert_false(srclim_take(s, &y, 5000));
	y = A("2001:db8:1:3::1");
	assert_true(srclim_take(s, &y, 5000));
	srclim_free(s);
	x = A("10.0.0.1");
	y = A("10.0.0.2");

	s = srclim_new(1, 1.0, 1.0);	/* one slot: the newcomer takes it */
	assert_true(srclim_take(s, &x, 5000));
	assert_false(srclim_take(s, &x, 5000));
	assert_true(srclim_take(s, &y, 5000));
	srclim_free(s);
}

/* The addr suite. */
int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_addresses),
		cmocka_unit_test(test_acl_match),
		cmocka_unit_test(test_acl_errors),
		cmocka_unit_test(test_buckets),
	};

	return cmocka_run_group_tests_name("addr", tests, NULL, NULL);
}
