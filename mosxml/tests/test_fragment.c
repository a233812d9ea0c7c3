/*
 * mos_fragment_check(): verbatim-XML fragments checked on their own, as
 * the content of their element. Good fragments pass and come back in the
 * form the parser reads them; hostile ones (closing the element, CDATA,
 * comment and PI tricks, entities, DOCTYPE, stray markup, bad encodings)
 * are refused with a message that names the element and the offset; an
 * accepted fragment in a written mosObj reads back as itself.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mosxml/mosxml.h"
#include "mosxml/tests/util.h"

struct frag_case {
	const char	*elem;
	const char	*in;
	const char	*want;	/* accepted: the normal form; refused: in msg */
};

/* Check in as elem; returns 0 or -1 and the normal form or the message. */
static int
check(const char *elem, const char *in, size_t len, enum mos_mode mode,
    char *out, size_t outlen)
{
	struct mos_buf	canon = { NULL, 0, 0 };
	int		rc;

	out[0] = '\0';
	rc = mos_fragment_check(elem, in, len, mode, &canon, out, outlen);
	if (rc == 0)
		snprintf(out, outlen, "%s", canon.data != NULL ?
		    (const char *)canon.data : "");
	mos_buf_free(&canon);
	return rc;
}

/* Fragments that pass, and what the parser will read back. */
static void
test_fragment_good(void **state)
{
	static const struct frag_case cases[] = {
		{ "mosAbstract", "", "" },
		{ "mosAbstract", "plain text", "plain text" },
		{ "mosAbstract", "<b>Bold</b> &amp; <i>it</i><br/>",
		    "<b>Bold</b> &amp; <i>it</i><br/>" },
		{ "mosAbstract", "<a href='x'>l</a><br></br>",
		    "<a href=\"x\">l</a><br/>" },
		{ "mosAbstract", "&lt;objID&gt; &#65;&#x42; &quot;&apos;",
		    "&lt;objID&gt; AB \"'" },
		{ "mosAbstract", "<![CDATA[</mosAbstract><objID>X</objID>]]>",
		    "<![CDATA[</mosAbstract><objID>X</objID>]]>" },
		{ "mosAbstract", "<!-- </mosAbstract> -->x",
		    "<!-- </mosAbstract> -->x" },
		{ "mosAbstract", "<?pi </mosAbstract>?>x", "<?pi </mosAbstract>?>x" },
		{ "mosAbstract", "<mosAbstract>nested</mosAbstract>",
		    "<mosAbstract>nested</mosAbstract>" },
		{ "mosAbstract", "a\r\nb \xc3\xa9\xe2\x82\xac\xf0\x9f\x8e\xac",
		    "a\nb \xc3\xa9\xe2\x82\xac\xf0\x9f\x8e\xac" },
		{ "mosAbstract", "<x:a xmlns:x=\"urn:x\" x:b=\"&amp;\"/>",
		    "<x:a xmlns:x=\"urn:x\" x:b=\"&amp;\"/>" },
		{ "mosPayload", "<x:a xmlns:x=\"urn:a&amp;b\"/>",
		    "<x:a xmlns:x=\"urn:a&amp;b\"/>" },
		{ "description", "Line one<p>two <em>three</em><tab/>four</p>",
		    "Line one<p>two <em>three</em><tab/>four</p>" },
		{ "description", "<tab></tab><p></p>", "<tab/><p/>" },
		{ "mosPayload", "<asset id=\"MAM-1\"><dur>12</dur></asset>",
		    "<asset id=\"MAM-1\"><dur>12</dur></asset>" },
		{ "p", "<pi>Anchor: </pi>text <em>x</em>",
		    "<pi>Anchor: </pi>text <em>x</em>" },
	};
	char	out[512];
	size_t	i;

	(void)state;
	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		if (check(cases[i].elem, cases[i].in, strlen(cases[i].in),
		    MOS_STRICT, out, sizeof out) != 0)
			fail_msg("%s \"%s\" refused: %s", cases[i].elem,
			    cases[i].in, out);
		if (strcmp(out, cases[i].want) != 0)
			fail_msg("%s \"%s\" reads back as \"%s\", not \"%s\"",
			    cases[i].elem, cases[i].in, out, cases[i].want);
		/* the normal form is a fixed point */
		assert_int_equal(check(cases[i].elem, cases[i].want,
		    strlen(cases[i].want), MOS_STRICT, out, sizeof out), 0);
		assert_string_equal(out, cases[i].want);
	}
}

/* Fragments that must be refused, and what the message says. */
static void
test_fragment_hostile(void **state)
{
	static const struct frag_case cases[] = {
		{ "mosAbstract", "</mosAbstract><objID>EVIL2</objID><mosAbstract>",
		    "mosAbstract: closes its element at offset 0" },
		{ "mosAbstract", "ok</mosAbstract ><objID>E</objID>",
		    "mosAbstract: closes its element at offset 2" },
		{ "description", "</description><objID>EVIL</objID><description>",
		    "description: closes its element at offset 0" },
		{ "mosPayload", "x</mosPayload></mosExternalMetadata><objID>E"
		    "</objID><mosExternalMetadata><mosPayload>",
		    "mosPayload: closes its element at offset 1" },
		{ "mosAbstract", "ab</objID>",
		    "mosAbstract: end tag at offset 2 closes an element it did "
		    "not open" },
		{ "mosAbstract", "<a>", "mosAbstract: not a well-formed XML "
		    "fragment at offset" },
		{ "mosAbstract", "<a></b>", "mosAbstract: not a well-formed" },
		{ "mosAbstract", "a ]]> b", "Sequence ']]>' not allowed" },
		{ "mosAbstract", "<![CDATA[x]]]]><![CDATA[>]]></mosAbstract>",
		    "mosAbstract: closes its element" },
		{ "mosAbstract", "<![CDATA[ </mosAbstract>", "mosAbstract: not a "
		    "well-formed" },
		{ "mosAbstract", "<!-- x -- y --></mosAbstract>", "mosAbstract: "
		    "not a well-formed" },
		{ "mosAbstract", "<!-- </mosAbstract>", "mosAbstract: not a "
		    "well-formed" },
		{ "mosAbstract", "<?pi </mosAbstract>", "mosAbstract: not a "
		    "well-formed" },
		{ "mosAbstract", "<?xml version=\"1.0\"?>", "mosAbstract: not a "
		    "well-formed" },
		{ "mosAbstract", "&e;", "Entity 'e' not defined" },
		{ "mosAbstract", "&#0;", "invalid xmlChar value 0" },
		{ "mosAbstract", "&#xD800;", "invalid xmlChar value" },
		{ "mosAbstract", "&lt", "mosAbstract: not a well-formed" },
		{ "mosAbstract", "a < b", "mosAbstract: not a well-formed XML "
		    "fragment at offset" },
		{ "mosAbstract", "a & b", "mosAbstract: not a well-formed" },
		{ "mosAbstract", "<!DOCTYPE x [<!ENTITY e \"</mosAbstract>\">]>&e;",
		    "mosAbstract: not a well-formed" },
		{ "mosAbstract", "<a b='<'/>", "mosAbstract: not a well-formed" },
		{ "mosAbstract", "<a b=\"1\" b=\"2\"/>", "mosAbstract: not a "
		    "well-formed" },
		{ "mosAbstract", "<x:a/>", "Namespace prefix x on a is not "
		    "defined" },
		{ "mosAbstract", "\x01", "mosAbstract: control character at "
		    "offset 0" },
		{ "mosAbstract", "ok\xff", "mosAbstract: invalid UTF-8" },
		{ "mosAbstract", "\xed\xa0\x80", "mosAbstract: invalid UTF-8" },
		{ "mosAbstract", "\xc0\xbc", "mosAbstract: invalid UTF-8 (or a "
		    "surrogate or U+FFFE/FFFF) at offset 0" },
		{ "mosAbstract", "\xef\xbf\xbe", "mosAbstract: invalid UTF-8" },
		{ "description", "<b>x</b>", "description: <b> is not allowed, "
		    "only text, <p>, <em> and <tab/> (offset 0)" },
		{ "description", "x<p class=\"a\">y</p>", "description: <p> takes "
		    "no attributes (offset 1)" },
		{ "description", "<p><p>y</p></p>", "description: <p> inside <p> "
		    "(offset 3)" },
		{ "description", "<tab>x</tab>", "description: <tab/> must be "
		    "empty" },
		{ "description", "a<!--c-->", "description: comments and "
		    "processing instructions are not allowed" },
		{ "description", "<?pi x?>", "description: comments and "
		    "processing instructions are not allowed" },
		{ "description", "<a:p xmlns:a=\"u\"/>", "description: <a:p> is "
		    "not allowed" },
	};
	char	out[512];
	size_t	i;

	(void)state;
	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		if (check(cases[i].elem, cases[i].in, strlen(cases[i].in),
		    MOS_STRICT, out, sizeof out) == 0)
			fail_msg("%s \"%s\" accepted as \"%s\"", cases[i].elem,
			    cases[i].in, out);
		if (strstr(out, cases[i].want) == NULL)
			fail_msg("%s \"%s\": message \"%s\" lacks \"%s\"",
			    cases[i].elem, cases[i].in, out, cases[i].want);
	}
	/* plain text is judged without the parser, the same way */
	assert_int_equal(mos_fragment_check("description", "a ]]> b", 7,
	    MOS_STRICT, NULL, out, sizeof out), -1);
	assert_string_equal(out, "description: not a well-formed XML fragment "
	    "at offset 2: Sequence ']]>' not allowed in content");
	assert_int_equal(mos_fragment_check("description", "a ] ]> b", 8,
	    MOS_STRICT, NULL, out, sizeof out), 0);
	/* A NUL inside the given length, and odd element names. */
	assert_int_equal(check("mosAbstract", "a\0</mosAbstract>", 16,
	    MOS_STRICT, out, sizeof out), -1);
	assert_string_equal(out, "mosAbstract: NUL character at offset 1");
	assert_int_equal(check("a><b", "x", 1, MOS_STRICT, out, sizeof out),
	    -1);
	assert_non_null(strstr(out, "is not an element name"));
}

/* Lenient: no description rules, no depth cap of its own. */
static void
test_fragment_modes(void **state)
{
	const char	*loose = "<b class=\"x\">y</b><!--c-->";
	char		 out[512], deep[4 * (MOS_FRAGMENT_DEPTH + 1) * 2 + 1], *p;
	int		 i;

	(void)state;
	assert_int_equal(check("description", loose, strlen(loose),
	    MOS_LENIENT, out, sizeof out), 0);
	assert_string_equal(out, "<b class=\"x\">y</b><!--c-->");
	/* the element boundary holds in both modes */
	assert_int_equal(check("description", "</description><x>", 17,
	    MOS_LENIENT, out, sizeof out), -1);
	p = deep;
	for (i = 0; i <= MOS_FRAGMENT_DEPTH; i++)
		p += sprintf(p, "<a>");
	for (i = 0; i <= MOS_FRAGMENT_DEPTH; i++)
		p += sprintf(p, "</a>");
	assert_int_equal(check("mosPayload", deep, strlen(deep), MOS_STRICT,
	    out, sizeof out), -1);
	assert_non_null(strstr(out, "nested deeper than"));
	assert_int_equal(check("mosPayload", deep, strlen(deep), MOS_LENIENT,
	    out, sizeof out), 0);
}

/* The fields of a mosObj that hold fragments, by element name. */
static const char **
obj_field(struct mos_msg *m, const char *elem)
{
	struct mos_obj	*o = &m->u.mos_obj;

	if (strcmp(elem, "mosAbstract") == 0)
		return &o->mos_abstract;
	if (strcmp(elem, "description") == 0)
		return &o->description;
	return &o->ext_meta.v[0].mos_payload;
}

/*
 * Accepted fragments pasted into a mosObj by the writer read back as
 * themselves, with one objID; the injection the check refuses would have
 * given the parser a second objID.
 */
static void
test_fragment_in_message(void **state)
{
	static const char *const good[][2] = {
		{ "mosAbstract", "<b>x</b><![CDATA[</mosAbstract>]]>" },
		{ "description", "<p>a<em>b</em><tab/></p>" },
		{ "mosPayload", "<a x=\"&lt;\"><!--</mosPayload>--></a>" },
	};
	const char	*evil = "</mosAbstract><objID>EVIL2</objID><mosAbstract>";
	struct mos_msg	*m, *back;
	struct mos_buf	 out = { NULL, 0, 0 };
	char		 msg[256];
	size_t		 i;
	int		 e;

	(void)state;
	for (e = 0; e < 2; e++)
		for (i = 0; i < sizeof good / sizeof good[0]; i++) {
			m = mostest_parse_str("<mos><mosID>M</mosID><ncsID>N"
			    "</ncsID><messageID>1</messageID><mosObj><objID>"
			    "RIGHT</objID><objSlug>s</objSlug><objType>VIDEO</objType>"
			    "<objTB>50</objTB>"
			    "<objRev>1</objRev><objDur>1</objDur><status>NEW"
			    "</status><objAir>READY</objAir><createdBy>u"
			    "</createdBy><created>2026-12-01T10:00:00,000Z"
			    "</created><changedBy>u</changedBy><changed>"
			    "2026-12-01T10:00:00,000Z</changed><description/>"
			    "<mosExternalMetadata><mosSchema>s</mosSchema>"
			    "<mosPayload/></mosExternalMetadata></mosObj></mos>");
			assert_int_equal(mos_fragment_check(good[i][0],
			    good[i][1], strlen(good[i][1]), MOS_STRICT, NULL,
			    msg, sizeof msg), 0);
			*obj_field(m, good[i][0]) = good[i][1];
			out.len = 0;
			assert_int_equal(mos_write(m, e ? MOS_ENC_UTF16BE :
			    MOS_ENC_UTF8, &out, msg, sizeof msg), 0);
			assert_int_equal(mos_parse(out.data, out.len, e ?
			    MOS_ENC_UTF16BE : MOS_ENC_UTF8, MOS_STRICT, &back,
			    NULL), MOS_OK);
			assert_string_equal(back->u.mos_obj.obj_id, "RIGHT");
			assert_string_equal(*obj_field(back, good[i][0]),
			    good[i][1]);
			mos_msg_free(back);
			mos_msg_free(m);
		}
	/* What the whole-message view alone lets through. */
	m = mostest_parse_str("<mos><mosID>M</mosID><ncsID>N</ncsID><mosObj>"
	    "<objID>RIGHT</objID></mosObj></mos>");
	m->u.mos_obj.mos_abstract = evil;
	out.len = 0;
	assert_int_equal(mos_write(m, MOS_ENC_UTF8, &out, msg, sizeof msg), 0);
	assert_int_equal(mos_parse(out.data, out.len, MOS_ENC_UTF8,
	    MOS_LENIENT, &back, NULL), MOS_OK);
	assert_string_equal(back->u.mos_obj.obj_id, "EVIL2");
	mos_msg_free(back);
	mos_msg_free(m);
	assert_int_equal(mos_fragment_check("mosAbstract", evil, strlen(evil),
	    MOS_LENIENT, NULL, msg, sizeof msg), -1);
	mos_buf_free(&out);
}

/* Run the mosxml_fragment suite. */
int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fragment_good),
		cmocka_unit_test(test_fragment_hostile),
		cmocka_unit_test(test_fragment_modes),
		cmocka_unit_test(test_fragment_in_message),
	};

	mos_init();
	return cmocka_run_group_tests_name("mosxml_fragment", tests, NULL,
	    NULL);
}
