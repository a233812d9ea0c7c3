/*
 * Frames encoded ahead (wire.c): the messageID spliced in later gives the
 * very bytes mos_write gives for that messageID, in both encodings, and only
 * the envelope's messageID changes; the search in encoded text and the
 * UTF-16BE to UTF-8 conversion that history uses (util.c), against the
 * codec's own converter.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/gateway.h"

#define TRAP	"<messageID>2147483647</messageID>"

/* A mosObj with paths, markup and a payload that holds a messageID. */
static struct mos_msg *
sample(void)
{
	struct catalog_asset	 a;
	struct mos_msg		*m;

	memset(&a, 0, sizeof a);
	a.obj_id = xstrdup("W-1 \xc3\xa9t\xc3\xa9");
	a.slug = xstrdup("Hotel fire \xe2\x80\x94 second edit "
	    "\xf0\x9f\x94\xa5");
	a.type = xstrdup("VIDEO");
	a.tb = xstrdup("59.94");
	a.dur = 1500;
	a.rev = 7;
	a.air = xstrdup("READY");
	a.description = xstrdup("<p>Fire &amp; smoke</p>");
	a.created_by = xstrdup("ed");
	a.changed_by = xstrdup("ed");
	catalog_add_path(&a, CATALOG_PATH, "MXF", "\\\\srv\\clips\\W-1.mxf");
	catalog_add_meta(&a, "OBJECT", "http://example.org/s", "<x>" TRAP
	    "</x>");
	m = catalog_mos_obj(&a, "UPDATED", NULL);
	catalog_asset_clear(&a);
	assert_non_null(m);
	m->mos_id = mos_msg_strdup(m, "mosgw.test");
	m->ncs_id = mos_msg_strdup(m, "NCS \xc3\xa9");
	return m;
}

/* The splice equals a direct encoding, and parses back with that id. */
static void
check_splice(enum mos_enc enc)
{
	static const int32_t	 ids[] = { 1, 9, 10, 42, 99999, 123456789,
				    MSGID_MAX };
	struct mos_msg		*m = sample(), *back;
	struct mos_buf		 direct = { NULL, 0, 0 };
	struct mos_error	 perr;
	struct wire		 w;
	struct sbuf		 sb = { NULL, 0, 0 };
	char			 err[256];
	size_t			 i;

	assert_int_equal(wire_encode(&w, m, enc, err, sizeof err), 0);
	assert_int_equal(w.enc, enc);
	for (i = 0; i < nitems(ids); i++) {
		wire_splice(&w, ids[i], &sb);
		m->has_message_id = true;
		m->message_id = ids[i];
		direct.len = 0;
		assert_int_equal(mos_write(m, enc, &direct, err, sizeof err),
		    0);
		assert_int_equal(sb.len, direct.len);
		assert_memory_equal(sb.s, direct.data, direct.len);
		assert_int_equal(mos_parse(sb.s, sb.len, enc, MOS_STRICT, &back,
		    &perr), MOS_OK);
		assert_true(back->has_message_id);
		assert_int_equal(back->message_id, ids[i]);
		/* the payload's look-alike is left as it was */
		assert_int_equal(back->u.mos_obj.ext_meta.n, 1);
		assert_non_null(strstr(
		    back->u.mos_obj.ext_meta.v[0].mos_payload, TRAP));
		mos_msg_free(back);
	}
	sbuf_free(&sb);
	mos_buf_free(&direct);
	wire_clear(&w);
	assert_null(w.data);
	wire_clear(&w);		/* twice is fine */
	mos_msg_free(m);
}

/* UTF-16BE frames. */
static void
test_splice_utf16(void **state)
{
	(void)state;
	check_splice(MOS_ENC_UTF16BE);
}

/* UTF-8 frames. */
static void
test_splice_utf8(void **state)
{
	(void)state;
	check_splice(MOS_ENC_UTF8);
}

/* A message that cannot be written is refused with a reason. */
static void
test_encode_error(void **state)
{
	struct mos_msg	*m = mos_msg_new(MOS_T_MOS_OBJ);
	struct wire	 w;
	char		 err[256] = "";

	(void)state;
	m->mos_id = "mosgw.test";
	m->ncs_id = "NCS";
	assert_int_equal(wire_encode(&w, m, MOS_ENC_UTF16BE, err, sizeof err),
	    -1);
	assert_true(err[0] != '\0');
	assert_null(w.data);
	mos_msg_free(m);
}

/* First occurrence, end of the last one, none; in both encodings. */
static void
test_find_enc(void **state)
{
	const char	*text = "<a>x</a><a>y</a>";
	struct sbuf	 wide = { NULL, 0, 0 };

	(void)state;
	assert_int_equal(util_find_enc((const uint8_t *)text, strlen(text),
	    "<a>", MOS_ENC_UTF8, false), 0);
	assert_int_equal(util_find_enc((const uint8_t *)text, strlen(text),
	    "</a>", MOS_ENC_UTF8, true), (ssize_t)strlen(text));
	assert_int_equal(util_find_enc((const uint8_t *)text, strlen(text),
	    "<b>", MOS_ENC_UTF8, false), -1);
	util_utf8_to_utf16be(&wide, text, strlen(text));
	assert_int_equal(util_find_enc((const uint8_t *)wide.s, wide.len,
	    "y", MOS_ENC_UTF16BE, false), 2 * 11);
	assert_int_equal(util_find_enc((const uint8_t *)wide.s, wide.len,
	    "</a>", MOS_ENC_UTF16BE, true), (ssize_t)wide.len);
	/* an odd offset is never a match in UTF-16 */
	assert_int_equal(util_find_enc((const uint8_t *)wide.s + 1,
	    wide.len - 1, "a", MOS_ENC_UTF16BE, false), -1);
	sbuf_free(&wide);
}

/* Our converter against the codec's, on text with runs of every length. */
static void
test_utf16_to_utf8(void **state)
{
	static const char *const pieces[] = { "a", "bc", "def", "ghij",
	    "klmnopq", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x8e\xac", " ",
	    "<tag attr=\"v\">", "\x7f", "\xc2\x80" };
	struct sbuf	 text = { NULL, 0, 0 }, wide = { NULL, 0, 0 };
	struct sbuf	 ours = { NULL, 0, 0 };
	struct mos_buf	 ref = { NULL, 0, 0 };
	char		 err[128];
	unsigned	 seed = 7;
	int		 round, i;

	(void)state;
	for (round = 0; round < 300; round++) {
		text.len = 0;
		sbuf_add(&text, "", 0);
		for (i = 0; i < round % 40; i++) {
			seed = seed * 1103515245 + 12345;
			sbuf_puts(&text, pieces[(seed >> 16) % nitems(pieces)]);
		}
		wide.len = 0;
		util_utf8_to_utf16be(&wide, text.s, text.len);
		ref.len = 0;
		assert_int_equal(mos_recode(wide.s, wide.len, MOS_ENC_UTF16BE,
		    MOS_ENC_UTF8, &ref, err, sizeof err), 0);
		ours.len = 0;
		util_utf16be_to_utf8(&ours, (const uint8_t *)wide.s, wide.len);
		assert_int_equal(ours.len, text.len);
		assert_int_equal(ref.len, text.len);
		assert_memory_equal(ours.s, text.s, text.len);
		assert_memory_equal(ref.data, text.s, text.len);
	}
	/* a lone surrogate and an odd last byte become U+FFFD */
	ours.len = 0;
	util_utf16be_to_utf8(&ours, (const uint8_t *)"\0a\0b\0c\0d\xd8\x01\0e"
	    "\0f\0g\0h\0i", 20);
	assert_string_equal(ours.s, "abcd\xef\xbf\xbd" "efghi");
	ours.len = 0;
	util_utf16be_to_utf8(&ours, (const uint8_t *)"\0a\0b\0c\0d\0", 9);
	assert_string_equal(ours.s, "abcd\xef\xbf\xbd");
	sbuf_free(&text);
	sbuf_free(&wide);
	sbuf_free(&ours);
	mos_buf_free(&ref);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_splice_utf16),
		cmocka_unit_test(test_splice_utf8),
		cmocka_unit_test(test_encode_error),
		cmocka_unit_test(test_find_enc),
		cmocka_unit_test(test_utf16_to_utf8),
	};

	mos_init();
	return cmocka_run_group_tests_name("gateway_wire", tests, NULL, NULL);
}
