/*
 * Hostile input (hardening.md section 1): entity expansion, external
 * entities and DTDs (a loopback listener must see no connection), deep
 * nesting, oversized frames, bad encodings. Each is refused with a clear
 * error and the process memory stays flat.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "mosxml/mosxml.h"
#include "mosxml/tests/util.h"

#define ENVELOPE	"<mosID>M</mosID><ncsID>N</ncsID><messageID>5</messageID>"

struct harden {
	int	listen_fd;
	int	port;
	char	dir[512];
	char	secret[600];
};

/* A growing string for building attacks. */
struct str {
	char	*s;
	size_t	 len, cap;
};

/* Append n copies of s. */
static void
str_add(struct str *b, const char *s, size_t n)
{
	size_t	l = strlen(s), i;

	if (b->len + l * n + 1 > b->cap) {
		b->cap = (b->len + l * n + 1) * 2;
		b->s = realloc(b->s, b->cap);
		assert_non_null(b->s);
	}
	for (i = 0; i < n; i++) {
		memcpy(b->s + b->len, s, l);
		b->len += l;
	}
	b->s[b->len] = '\0';
}

/* Parse s in UTF-8 and UTF-16BE; both must fail with code. Returns the error. */
static struct mos_error
refused(const char *s, size_t len, enum mos_err code)
{
	struct mos_msg		*m = NULL;
	struct mos_error	 err, err16;
	struct mos_buf		 u16 = { NULL, 0, 0 };
	int			 rc;

	rc = mos_parse(s, len, MOS_ENC_UTF8, MOS_LENIENT, &m, &err);
	if (rc != (int)code)
		fail_msg("utf8: expected %s, got %s: %s", mos_err_name(code),
		    mos_err_name(rc), err.msg);
	assert_null(m);
	assert_true(strlen(err.msg) > 0);
	if (len < (4u << 20)) {
		mostest_utf16(s, len, &u16);
		rc = mos_parse(u16.data, u16.len, MOS_ENC_UTF16BE, MOS_STRICT, &m,
		    &err16);
		if (rc != (int)code)
			fail_msg("utf16: expected %s, got %s: %s",
			    mos_err_name(code), mos_err_name(rc), err16.msg);
		assert_null(m);
		mos_buf_free(&u16);
	}
	return err;
}

/* Close the listener and remove the temporary files. */
static int
teardown(void **state)
{
	struct harden	*h = *state;

	if (h == NULL)
		return 0;
	if (h->listen_fd != -1)
		close(h->listen_fd);
	if (h->secret[0] != '\0')
		unlink(h->secret);
	if (h->dir[0] != '\0')
		rmdir(h->dir);
	free(h);
	*state = NULL;
	return 0;
}

/* A loopback listener and a temporary directory holding a secret file. */
static int
setup_parts(struct harden *h)
{
	struct sockaddr_in	 sin;
	socklen_t		 sl = sizeof sin;
	const char		*tmp = getenv("MOSGW_TMP");
	FILE			*f;

	snprintf(h->dir, sizeof h->dir, "%s/harden.XXXXXX", tmp ? tmp : "/tmp");
	if (mkdtemp(h->dir) == NULL) {
		h->dir[0] = '\0';
		return -1;
	}
	snprintf(h->secret, sizeof h->secret, "%s/secret.txt", h->dir);
	if ((f = fopen(h->secret, "w")) == NULL)
		return -1;
	fputs("TOP-SECRET-CONTENT", f);
	fclose(f);
	if ((h->listen_fd = socket(AF_INET, SOCK_STREAM, 0)) == -1)
		return -1;
	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(h->listen_fd, (struct sockaddr *)&sin, sizeof sin) == -1 ||
	    listen(h->listen_fd, 8) == -1 ||
	    getsockname(h->listen_fd, (struct sockaddr *)&sin, &sl) == -1)
		return -1;
	h->port = ntohs(sin.sin_port);
	return 0;
}

/* Group setup; whatever was made is undone on failure. */
static int
setup(void **state)
{
	struct harden	*h;

	if ((h = calloc(1, sizeof *h)) == NULL)
		return -1;
	h->listen_fd = -1;
	*state = h;
	if (setup_parts(h) == -1) {
		teardown(state);
		return -1;
	}
	return 0;
}

/* Whether the listener has a connection waiting (after up to ms). */
static int
listener_hit(const struct harden *h, int ms)
{
	struct pollfd	pfd = { h->listen_fd, POLLIN, 0 };

	return poll(&pfd, 1, ms) > 0;
}

/* The classic ten-level billion laughs. */
static void
test_billion_laughs(void **state)
{
	struct str		b = { NULL, 0, 0 };
	struct mos_error	err;
	char			line[256];
	int			i;

	(void)state;
	str_add(&b, "<!DOCTYPE mos [<!ENTITY lol \"lol\">", 1);
	for (i = 1; i <= 9; i++) {
		snprintf(line, sizeof line, "<!ENTITY lol%d \"", i);
		str_add(&b, line, 1);
		if (i == 1)
			snprintf(line, sizeof line, "&lol;");
		else
			snprintf(line, sizeof line, "&lol%d;", i - 1);
		str_add(&b, line, 10);
		str_add(&b, "\">", 1);
	}
	str_add(&b, "]><mos>" ENVELOPE "<mosReqObj><objID>&lol9;</objID>"
	    "</mosReqObj></mos>", 1);
	err = refused(b.s, b.len, MOS_E_DOCTYPE);
	assert_non_null(strstr(err.msg, "DOCTYPE"));
	assert_int_equal(err.env.message_id, 5);
	assert_string_equal(err.env.type_name, "mosReqObj");
	/* Without a DOCTYPE the reference is simply undefined. */
	refused("<mos>" ENVELOPE "<mosReqObj><objID>&lol9;</objID></mosReqObj>"
	    "</mos>", strlen("<mos>" ENVELOPE "<mosReqObj><objID>&lol9;</objID>"
	    "</mosReqObj></mos>"), MOS_E_XML);
	free(b.s);
}

/* One 50 KB entity referenced 20,000 times (1 GB if expanded). */
static void
test_quadratic_blowup(void **state)
{
	struct str	b = { NULL, 0, 0 };
	long		hwm0, hwm1;

	(void)state;
	str_add(&b, "<!DOCTYPE mos [<!ENTITY a \"", 1);
	str_add(&b, "x", 50000);
	str_add(&b, "\">]><mos>" ENVELOPE "<mosObj><objID>A</objID>"
	    "<description>", 1);
	str_add(&b, "&a;", 20000);
	str_add(&b, "</description></mosObj></mos>", 1);
	mostest_vm_reset_peak();
	hwm0 = mostest_vm_kb("VmHWM");
	refused(b.s, b.len, MOS_E_DOCTYPE);
	hwm1 = mostest_vm_kb("VmHWM");
	assert_true(hwm0 > 0);
	if (hwm1 - hwm0 > 64 * 1024)
		fail_msg("peak memory grew by %ld kB", hwm1 - hwm0);
	free(b.s);
}

/* External general entity to a local file: never read. */
static void
test_external_entity(void **state)
{
	struct harden		*h = *state;
	char			 doc[2048];
	struct mos_error	 err;

	snprintf(doc, sizeof doc, "<!DOCTYPE mos [<!ENTITY x SYSTEM "
	    "\"file://%s\">]><mos>" ENVELOPE "<mosReqObj><objID>&x;</objID>"
	    "</mosReqObj></mos>", h->secret);
	err = refused(doc, strlen(doc), MOS_E_DOCTYPE);
	assert_null(strstr(err.msg, "TOP-SECRET"));
	assert_null(strstr(err.env.type_name, "TOP-SECRET"));
	/* Even a frame that only references it after an empty DOCTYPE. */
	snprintf(doc, sizeof doc, "<!DOCTYPE mos SYSTEM \"file://%s\"><mos>"
	    ENVELOPE "<reqMachInfo/></mos>", h->secret);
	refused(doc, strlen(doc), MOS_E_DOCTYPE);
}

/* External DTD and parameter entity over HTTP: no connection is made. */
static void
test_external_dtd(void **state)
{
	struct harden	*h = *state;
	struct mos_msg	*m;
	char		 doc[2048];

	snprintf(doc, sizeof doc, "<!DOCTYPE mos SYSTEM \"http://127.0.0.1:%d/"
	    "x.dtd\"><mos>" ENVELOPE "<reqMachInfo/></mos>", h->port);
	refused(doc, strlen(doc), MOS_E_DOCTYPE);
	snprintf(doc, sizeof doc, "<!DOCTYPE mos [<!ENTITY %% p SYSTEM "
	    "\"http://127.0.0.1:%d/p.ent\"> %%p;]><mos>" ENVELOPE
	    "<reqMachInfo/></mos>", h->port);
	refused(doc, strlen(doc), MOS_E_DOCTYPE);
	snprintf(doc, sizeof doc, "<mos xmlns:xi=\"http://www.w3.org/2001/"
	    "XInclude\">" ENVELOPE "<mosReqObj><objID>A</objID><xi:include "
	    "href=\"http://127.0.0.1:%d/inc.xml\"/></mosReqObj></mos>", h->port);
	/* XInclude is never processed: just an unknown element. */
	m = mostest_parse_str(doc);
	assert_string_equal(m->u.mos_req_obj.obj_id, "A");
	mos_msg_free(m);
	if (listener_hit(h, 300))
		fail_msg("the parser connected to the loopback listener");
}

/* A 10,000-deep frame fails cleanly and quickly, wherever the depth is. */
static void
test_deep_nesting(void **state)
{
	static const char *const where[] = {
		"<mosObj><objID>A</objID><mosExternalMetadata><mosSchema>s"
		    "</mosSchema><mosPayload>",
		"<mosObj><objID>A</objID><vendor>",
		"<roCreate><roID>R</roID><story><storyID>S</storyID><item>"
		    "<itemID>I</itemID><objID>",
		"<unknownThing>",
	};
	struct str		 b;
	struct mos_error	 err;
	struct timespec		 t0, t1;
	size_t			 i;

	(void)state;
	for (i = 0; i < sizeof where / sizeof where[0]; i++) {
		memset(&b, 0, sizeof b);
		str_add(&b, "<mos>" ENVELOPE, 1);
		str_add(&b, where[i], 1);
		str_add(&b, "<a>", 10000);
		str_add(&b, "</a>", 10000);
		str_add(&b, "</x></mos>", 1);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		err = refused(b.s, b.len, MOS_E_XML);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		assert_non_null(strstr(err.msg, "depth"));
		assert_int_equal(err.env.message_id, 5);
		assert_true(t1.tv_sec - t0.tv_sec < 5);
		free(b.s);
	}
}

/* A frame over the cap is refused before parsing, envelope recovered. */
static void
test_over_cap(void **state)
{
	struct str		 b = { NULL, 0, 0 };
	struct mos_error	 err;
	struct mos_msg		*m;
	struct timespec		 t0, t1;

	(void)state;
	str_add(&b, "<mos>" ENVELOPE "<mosObj><objID>A</objID><description>", 1);
	str_add(&b, "0123456789abcdef", (MOS_FRAME_MAX_DEFAULT + 4096) / 16);
	str_add(&b, "</description></mosObj></mos>", 1);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(mos_parse(b.s, b.len, MOS_ENC_UTF8, MOS_LENIENT, &m,
	    &err), MOS_E_TOO_BIG);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_null(m);
	assert_non_null(strstr(err.msg, "exceeds the cap"));
	assert_int_equal(err.env.message_id, 5);
	assert_string_equal(err.env.type_name, "mosObj");
	assert_true(t1.tv_sec - t0.tv_sec < 2);
	free(b.s);
}

/* Input that cannot be the encoding, caught before libxml2 sees it. */
static void
test_bad_encoding(void **state)
{
	static const uint8_t	odd[] = { 0, '<', 0, 'm', 0, 'o', 0, 's', 0,
	    '>', 0, '<', 0, '/', 0, 'm', 0, 'o', 0, 's', 0, '>', 0 };
	static const uint8_t	hi[] = { 0, '<', 0, 'm', 0, 'o', 0, 's', 0,
	    '>', 0xd8, 0x3d, 0, '<', 0, '/', 0, 'm', 0, 'o', 0, 's', 0, '>' };
	static const uint8_t	lo[] = { 0, '<', 0, 'm', 0, 'o', 0, 's', 0,
	    '>', 0xdd, 0x25, 0, '<', 0, '/', 0, 'm', 0, 'o', 0, 's', 0, '>' };
	static const uint8_t	nul16[] = { 0, '<', 0, 'm', 0, 'o', 0, 's', 0,
	    '>', 0, 0, 0, '<', 0, '/', 0, 'm', 0, 'o', 0, 's', 0, '>' };
	static const char	nul8[] = "<mos>" ENVELOPE "<reqMachInfo/>\0</mos>";
	static const char	bad8[] = "<mos>" ENVELOPE "<mosReqObj><objID>\xc3"
	    "(</objID></mosReqObj></mos>";
	struct mos_msg		*m;
	struct mos_error	 err;

	(void)state;
	assert_int_equal(mos_parse(odd, sizeof odd, MOS_ENC_UTF16BE,
	    MOS_LENIENT, &m, &err), MOS_E_ENCODING);
	assert_non_null(strstr(err.msg, "UTF-16BE"));
	assert_int_equal(mos_parse(hi, sizeof hi, MOS_ENC_UTF16BE, MOS_LENIENT,
	    &m, &err), MOS_E_ENCODING);
	assert_int_equal(mos_parse(lo, sizeof lo, MOS_ENC_UTF16BE, MOS_LENIENT,
	    &m, &err), MOS_E_ENCODING);
	assert_int_equal(mos_parse(nul16, sizeof nul16, MOS_ENC_UTF16BE,
	    MOS_LENIENT, &m, &err), MOS_E_ENCODING);
	assert_non_null(strstr(err.msg, "NUL"));
	assert_int_equal(mos_parse(nul8, sizeof nul8 - 1, MOS_ENC_UTF8,
	    MOS_LENIENT, &m, &err), MOS_E_ENCODING);
	assert_int_equal(err.env.message_id, 5);
	assert_int_equal(mos_parse(bad8, sizeof bad8 - 1, MOS_ENC_UTF8,
	    MOS_LENIENT, &m, &err), MOS_E_XML);
	assert_null(m);
	/* An encoding declaration cannot switch the decoder. */
	m = mostest_parse_str("<?xml version=\"1.0\" encoding=\"UTF-16\"?>"
	    "<mos>" ENVELOPE "<reqMachInfo/></mos>");
	assert_int_equal(m->type, MOS_T_REQ_MACH_INFO);
	mos_msg_free(m);
}

/* Every attack, repeated: resident memory does not grow. */
static void
test_memory_flat(void **state)
{
	long	rss0, rss1;
	int	i;

	for (i = 0; i < 3; i++) {	/* warm up allocator and caches */
		test_billion_laughs(state);
		test_deep_nesting(state);
	}
	rss0 = mostest_vm_kb("VmRSS");
	for (i = 0; i < 30; i++) {
		test_billion_laughs(state);
		test_quadratic_blowup(state);
		test_external_entity(state);
		test_deep_nesting(state);
		test_bad_encoding(state);
	}
	rss1 = mostest_vm_kb("VmRSS");
	assert_true(rss0 > 0);
	if (!mostest_rss_meaningful()) {
		/* ASan and valgrind hold freed memory back; leaks are their job. */
		printf("resident memory figures skipped under ASan/valgrind\n");
		return;
	}
	if (rss1 - rss0 > 8 * 1024)
		fail_msg("resident memory grew by %ld kB over 30 rounds",
		    rss1 - rss0);
}

/* A large legitimate frame costs about its model, not a tree. */
static void
test_large_frame_memory(void **state)
{
	struct str	 b = { NULL, 0, 0 };
	struct mos_msg	*m;
	struct mos_buf	 u16 = { NULL, 0, 0 };
	char		 item[512];
	long		 hwm0, hwm1;
	int		 i;

	(void)state;
	str_add(&b, "<mos>" ENVELOPE "<roCreate><roID>R</roID><roSlug>S"
	    "</roSlug>", 1);
	for (i = 0; i < 20000; i++) {
		snprintf(item, sizeof item, "<story><storyID>S%d</storyID><item>"
		    "<itemID>I%d</itemID><objID>O%d</objID><mosID>M</mosID>"
		    "<mosExternalMetadata><mosSchema>s</mosSchema><mosPayload>"
		    "<a n=\"%d\">payload text</a></mosPayload>"
		    "</mosExternalMetadata></item></story>", i, i, i, i);
		str_add(&b, item, 1);
	}
	str_add(&b, "</roCreate></mos>", 1);
	mostest_utf16(b.s, b.len, &u16);
	mostest_vm_reset_peak();
	hwm0 = mostest_vm_kb("VmHWM");
	assert_int_equal(mos_parse(u16.data, u16.len, MOS_ENC_UTF16BE,
	    MOS_LENIENT, &m, NULL), MOS_OK);
	hwm1 = mostest_vm_kb("VmHWM");
	assert_int_equal(m->u.ro_create.story.n, 20000);
	assert_string_equal(m->u.ro_create.story.v[19999].item.v[0].ext_meta.v[0]
	    .mos_payload, "<a n=\"19999\">payload text</a>");
	/* A DOM of this frame costs about 6.6x its size (hardening.md 1.4). */
	printf("peak grew by %ld kB for a %zu byte frame\n", hwm1 - hwm0, u16.len);
	if (mostest_rss_meaningful() && (hwm1 - hwm0) * 1024 > (long)u16.len * 3)
		fail_msg("peak grew by %ld kB for a %zu byte frame",
		    hwm1 - hwm0, u16.len);
	mos_msg_free(m);
	mos_buf_free(&u16);
	free(b.s);
}

/* Run the mosxml_harden suite. */
int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_large_frame_memory),
		cmocka_unit_test(test_billion_laughs),
		cmocka_unit_test(test_quadratic_blowup),
		cmocka_unit_test(test_external_entity),
		cmocka_unit_test(test_external_dtd),
		cmocka_unit_test(test_deep_nesting),
		cmocka_unit_test(test_over_cap),
		cmocka_unit_test(test_bad_encoding),
		cmocka_unit_test(test_memory_flat),
	};

	mos_init();
	return cmocka_run_group_tests_name("mosxml_harden", tests, setup,
	    teardown);
}
