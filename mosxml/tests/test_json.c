/*
 * The JSON mapping of `mosmsg` (docs/mosmsg.md): every message type to JSON
 * and back to an equal model, decode|encode|decode stable, the schema's
 * details, and clear errors for bad input.
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
#include "mosxml/mosjson.h"
#include "mosxml/tests/util.h"

/* JSON of a fixture of ours. */
static char *
fixture_json(const char *name)
{
	char		 path[4096], *j;
	struct mos_msg	*m;

	snprintf(path, sizeof path, "%s/%s", mostest_fixtures(), name);
	m = mostest_parse_file(path, MOS_LENIENT);
	j = mos_msg_to_json(m);
	assert_non_null(j);
	mos_msg_free(m);
	return j;
}

/* s starts with prefix. */
static void
assert_prefix(const char *s, const char *prefix)
{
	if (strncmp(s, prefix, strlen(prefix)) != 0)
		fail_msg("\"%s\" does not start with \"%s\"", s, prefix);
}

/* Decode, then encode to wire bytes, then decode again: same JSON. */
static void
check_stable(const struct mos_msg *m, const char *what)
{
	char		*j1, *j2, *j3, ebuf[256];
	struct mos_msg	*a, *b;
	struct mos_buf	 wire = { NULL, 0, 0 };

	j1 = mos_msg_to_json(m);
	assert_non_null(j1);
	assert_null(strchr(j1, '\n'));
	if ((a = mos_msg_from_json(j1, strlen(j1), ebuf, sizeof ebuf)) == NULL)
		fail_msg("%s: from_json: %s\n%s", what, ebuf, j1);
	if (!mos_msg_equal(m, a))
		fail_msg("%s: the model changed through JSON\n%s", what, j1);
	j2 = mos_msg_to_json(a);
	assert_string_equal(j1, j2);
	if (mos_write(a, MOS_ENC_UTF16BE, &wire, ebuf, sizeof ebuf) != 0)
		fail_msg("%s: encode: %s", what, ebuf);
	assert_int_equal(mos_parse(wire.data, wire.len, MOS_ENC_UTF16BE,
	    MOS_LENIENT, &b, NULL), 0);
	j3 = mos_msg_to_json(b);
	assert_string_equal(j1, j3);
	free(j1);
	free(j2);
	free(j3);
	mos_msg_free(a);
	mos_msg_free(b);
	mos_buf_free(&wire);
}

/* Every fixture and every shared example is stable through JSON. */
static void
test_json_all(void **state)
{
	const char	*dirs[2] = { mostest_fixtures(), NULL };
	char		**files;
	size_t		  n, i, d, total = 0;
	struct mos_msg	 *m;
	int		  seen[MOS_T__COUNT] = { 0 }, t;

	(void)state;
	dirs[1] = mostest_examples();
	for (d = 0; d < 2 && dirs[d] != NULL; d++) {
		files = mostest_list(dirs[d], ".xml", &n);
		for (i = 0; i < n; i++) {
			m = mostest_parse_file(files[i], MOS_LENIENT);
			seen[m->type]++;
			check_stable(m, files[i]);
			mos_msg_free(m);
		}
		total += n;
		mostest_list_free(files, n);
	}
	assert_true(total >= MOS_T__COUNT);
	for (t = 0; t < MOS_T__COUNT; t++) {
		if (seen[t] == 0)
			fail_msg("no message of type %s", mos_type_name(t));
	}
}

/* The envelope and the shapes of values. */
static void
test_json_schema(void **state)
{
	char	*j;

	(void)state;
	j = fixture_json("mosObj.xml");
	assert_prefix(j, "{\"type\":\"mosObj\",\"mosID\":\"mam.newsroom."
	    "example.mos\",\"ncsID\":\"ncs.newsroom.example\",\"messageID\":"
	    "5020,\"body\":{\"objID\":\"MAM-00017\",");
	assert_non_null(strstr(j, "\"objTB\":59.94,\"objRev\":3,"
	    "\"objDur\":6114,"));
	assert_non_null(strstr(j, "\"objPath\":[{\"@techDescription\":"
	    "\"MPEG2 Video\",\"#text\":\"\\\\\\\\mam01\\\\media\\\\MAM-00017.mxf\"}]"));
	assert_non_null(strstr(j, "\"created\":\"2024-03-18T08:02:11.000+01:00\""));
	assert_non_null(strstr(j, "\"description\":\"<p>Fire broke out"));
	assert_non_null(strstr(j, "\"mosExternalMetadata\":[{\"mosScope\":"
	    "\"PLAYLIST\""));
	free(j);
	j = fixture_json("heartbeat--no-zone-no-fraction.xml");
	assert_non_null(strstr(j, "\"time\":\"2024-03-18T09:15:32\"}"));
	free(j);
	j = fixture_json("mosAck--quirk-nack-no-message-id.xml");
	assert_null(strstr(j, "messageID"));
	free(j);
	j = fixture_json("roElementAction--swap-items.xml");
	assert_non_null(strstr(j, "\"body\":{\"@operation\":\"SWAP\",\"roID\":"));
	assert_non_null(strstr(j, "\"element_source\":{\"itemID\":[\"ITEM-1\","
	    "\"ITEM-2\"]}"));
	free(j);
	j = fixture_json("unknown--roItemStat.xml");
	assert_prefix(j, "{\"type\":\"unknown\",\"name\":\"roItemStat\","
	    "\"mosID\"");
	assert_non_null(strstr(j, "\"body\":{\"#xml\":\"\\n\\t\\t<roID>"));
	free(j);
	j = fixture_json("listMachInfo--flat-profiles.xml");
	assert_non_null(strstr(j, "\"mosProfile0\":\"YES\",\"mosProfile1\""));
	assert_null(strstr(j, "supportedProfiles"));
	free(j);
	j = fixture_json("listMachInfo.xml");
	assert_non_null(strstr(j, "\"supportedProfiles\":{\"@deviceType\":"
	    "\"MOS\",\"mosProfile\":{\"0\":\"YES\",\"1\":\"YES\",\"2\":\"YES\","
	    "\"3\":\"NO\""));
	free(j);
	j = fixture_json("roStorySend.xml");
	assert_non_null(strstr(j, "\"storyBody\":{\"@Read1stMEMasBody\":"
	    "\"false\",\"#content\":[{\"storyPresenter\":\"Ingrid\"},"
	    "{\"storyPresenterRR\":\"15\"},{\"p\":\"Good evening."));
	assert_non_null(strstr(j, "{\"storyItem\":{\"itemID\":\"ITEM-1\""));
	free(j);
	j = fixture_json("mosObjList.xml");
	assert_non_null(strstr(j, "\"listReturnTotal\":1,\"listReturnStatus\":"
	    "\"1 object found\",\"list\":[{\"objID\":\"MAM-00017\""));
	free(j);
	j = fixture_json("roAck.xml");
	assert_non_null(strstr(j, "\"entries\":[{\"storyID\":\"STORY-1\""));
	free(j);
	j = fixture_json("roCreate.xml");
	assert_non_null(strstr(j, "\"roEdDur\":\"00:29:30\""));
	free(j);
}

/* Decimals: exact digits out, and several forms accepted back in. */
static void
test_json_decimals(void **state)
{
	static const char *const in[] = {
		"{\"type\":\"mosObj\",\"body\":{\"objID\":\"A\",\"objTB\":59.94}}",
		"{\"type\":\"mosObj\",\"body\":{\"objID\":\"A\",\"objTB\":"
		    "\"59.940\"}}",
		"{\"type\":\"mosObj\",\"body\":{\"objID\":\"A\",\"objTB\":"
		    "59.9400000}}",
	};
	const char	*in25 = "{\"type\":\"mosObj\",\"body\":{\"objID\":"
			    "\"A\",\"objTB\":25}}";
	struct mos_msg	*m;
	char		*j, ebuf[256];
	size_t		 i;

	(void)state;
	for (i = 0; i < sizeof in / sizeof in[0]; i++) {
		m = mos_msg_from_json(in[i], strlen(in[i]), ebuf, sizeof ebuf);
		if (m == NULL)
			fail_msg("%s: %s", in[i], ebuf);
		assert_true(m->u.mos_obj.obj_tb.set);
		assert_true(mos_dec_to_double(&m->u.mos_obj.obj_tb) == 59.94);
		j = mos_msg_to_json(m);
		assert_non_null(strstr(j, "\"objTB\":59.94}"));
		free(j);
		mos_msg_free(m);
	}
	m = mos_msg_from_json(in25, strlen(in25), ebuf, sizeof ebuf);
	assert_non_null(m);
	assert_int_equal(m->u.mos_obj.obj_tb.v, 25);
	assert_int_equal(m->u.mos_obj.obj_tb.scale, 0);
	mos_msg_free(m);
}

/*
 * A decimal's JSON reads back to the same JSON: a real stays a real
 * (4800.0), and one with more digits than a double holds goes out as its
 * exact digits in a string.
 */
static void
test_json_decimal_round_trip(void **state)
{
	static const struct {
		const char	*tb;		/* objTB as written in JSON */
		const char	*out;		/* as written back */
		int64_t		 v;
		int		 scale;
	} c[] = {
		{ "4800.0", "4800.0", 48000, 1 },
		{ "0.0", "0.0", 0, 1 },
		{ "1e-07", "1e-7", 1, 7 },
		{ "59.939999999999998", "59.94", 5994, 2 },
		{ "\"1234567.12345678901\"", "\"1234567.12345678901\"",
		    123456712345678901, 11 },
		{ "0.30000000000000004", "\"0.30000000000000004\"",
		    30000000000000004, 17 },
	};
	struct mos_msg	*m, *m2;
	char		 in[256], want[256], *j, *j2, ebuf[256];
	size_t		 i;

	(void)state;
	for (i = 0; i < sizeof c / sizeof c[0]; i++) {
		snprintf(in, sizeof in, "{\"type\":\"mosObj\",\"body\":"
		    "{\"objID\":\"A\",\"objTB\":%s}}", c[i].tb);
		m = mos_msg_from_json(in, strlen(in), ebuf, sizeof ebuf);
		if (m == NULL)
			fail_msg("%s: %s", in, ebuf);
		assert_int_equal(m->u.mos_obj.obj_tb.v, c[i].v);
		assert_int_equal(m->u.mos_obj.obj_tb.scale, c[i].scale);
		j = mos_msg_to_json(m);
		snprintf(want, sizeof want, "\"objTB\":%s}", c[i].out);
		if (strstr(j, want) == NULL)
			fail_msg("%s: %s, not %s", c[i].tb, j, want);
		m2 = mos_msg_from_json(j, strlen(j), ebuf, sizeof ebuf);
		assert_non_null(m2);
		j2 = mos_msg_to_json(m2);
		assert_string_equal(j, j2);
		free(j);
		free(j2);
		mos_msg_free(m);
		mos_msg_free(m2);
	}
	/* A real of more than 18 digits is refused, not rounded. */
	snprintf(in, sizeof in, "{\"type\":\"mosObj\",\"body\":"
	    "{\"objID\":\"A\",\"objTB\":1e300}}");
	assert_null(mos_msg_from_json(in, strlen(in), ebuf, sizeof ebuf));
	assert_non_null(strstr(ebuf, "not a decimal of at most 18 digits"));
}

/* Bad JSON lines are refused with a message that says where and why. */
static void
test_json_errors(void **state)
{
	static const struct {
		const char	*json;
		const char	*msg;
	} bad[] = {
		{ "not json", "JSON error" },
		{ "[1,2]", "expected a JSON object" },
		{ "{\"body\":{}}", "no message type" },
		{ "{\"type\":null,\"error\":\"XML error 5\",\"frame\":3}",
		    "records a decoding error: XML error 5" },
		{ "{\"type\":\"mosFoo\",\"body\":{}}", "not a MOS message type" },
		{ "{\"type\":\"unknown\",\"body\":{}}", "name:" },
		{ "{\"type\":\"unknown\",\"name\":\"a b\",\"body\":{}}",
		    "not an XML element name" },
		{ "{\"type\":\"unknown\",\"name\":\"9x\",\"body\":{}}",
		    "not an XML element name" },
		{ "{\"type\":\"unknown\",\"name\":\"roReq\",\"body\":{}}",
		    "is a known type" },
		{ "{\"type\":\"roStorySend\",\"body\":{\"roID\":\"R\",\"storyBody\":"
		    "{\"#content\":[{\"#text\":\"a\"},{\"#text\":\"b\"}]}}}",
		    "body/storyBody/#content[1]: #text must not be blank" },
		{ "{\"type\":\"unknown\",\"name\":\"ncsID\",\"body\":{}}",
		    "belongs to the envelope" },
		{ "{\"type\":\"roAck\",\"body\":{\"entries\":[{\"storyID\":\"S\"},"
		    "{\"itemID\":\"I\"}]}}", "entries[1]: this entry would read as "
		    "part of the one before: give it a storyID" },
		{ "{\"type\":\"roAck\",\"body\":{\"entries\":[{}]}}",
		    "body/entries[0]: an entry needs at least one field" },
		{ "{\"type\":\"reqMachInfo\",\"color\":1}", "unknown key \"color\"" },
		{ "{\"type\":\"reqMachInfo\",\"messageID\":0}", "messageID" },
		{ "{\"type\":\"reqMachInfo\",\"messageID\":\"7\"}", "messageID" },
		{ "{\"type\":\"reqMachInfo\",\"body\":[]}", "body: expected" },
		{ "{\"type\":\"mosObj\",\"body\":{\"objID\":\"A\",\"objRev\":-1}}",
		    "body/objRev: expected an integer" },
		{ "{\"type\":\"mosObj\",\"body\":{\"objID\":\"A\",\"objSulg\":\"x\"}}",
		    "body: unknown key \"objSulg\"" },
		{ "{\"type\":\"mosObj\",\"body\":{\"objSlug\":\"x\"}}",
		    "body: objID missing" },
		{ "{\"type\":\"mosObj\",\"body\":{\"objID\":null}}",
		    "body/objID: null is not a value" },
		{ "{\"type\":\"mosObj\",\"body\":{\"objID\":7}}",
		    "body/objID: expected a string" },
		{ "{\"type\":\"mosObj\",\"body\":{\"objID\":\"A\",\"created\":"
		    "\"yesterday\"}}", "body/created: expected an ISO 8601 time" },
		{ "{\"type\":\"mosObj\",\"body\":{\"objID\":\"A\",\"objTB\":-5}}",
		    "body/objTB: expected a non-negative number" },
		{ "{\"type\":\"mosObj\",\"body\":{\"objID\":\"A\",\"objPaths\":"
		    "{\"objPath\":[{\"@tech\":\"x\"}]}}}",
		    "body/objPaths/objPath[0]: unknown key \"@tech\"" },
		{ "{\"type\":\"mosObj\",\"body\":{\"objID\":\"A\","
		    "\"mosExternalMetadata\":[{\"mosSchema\":\"s\",\"mosPayload\":"
		    "\"<a><b></a>\"}]}}", "mosPayload: not a well-formed XML" },
		{ "{\"type\":\"mosObj\",\"body\":{\"objID\":\"A\",\"description\":"
		    "\"<!DOCTYPE x>\"}}", "description: not a well-formed" },
		{ "{\"type\":\"roCreate\",\"body\":{\"roID\":\"R\",\"story\":"
		    "[{\"storySlug\":\"s\"}]}}", "body/story[0]: storyID missing" },
		{ "{\"type\":\"roCreate\",\"body\":{\"roID\":\"R\",\"roEdDur\":"
		    "\"1:2:3\"}}", "body/roEdDur: expected a duration" },
		{ "{\"type\":\"listMachInfo\",\"body\":{\"supportedProfiles\":"
		    "{\"mosProfile\":{\"9\":\"YES\"}}}}", "\"9\" is not 0-7" },
		{ "{\"type\":\"roStorySend\",\"body\":{\"roID\":\"R\",\"storyBody\":"
		    "{\"#content\":[{\"q\":\"x\"}]}}}",
		    "unknown storyBody part \"q\"" },
		{ "{\"type\":\"reqMachInfo\",\"type\":\"heartbeat\"}", "JSON error" },
		{ "{\"type\":\"mosReqObj\",\"body\":{\"objID\":\"a\\u0000b\"}}",
		    "NUL" },
	};
	struct mos_msg	*m;
	char		 ebuf[256];
	size_t		 i;

	(void)state;
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		m = mos_msg_from_json(bad[i].json, strlen(bad[i].json), ebuf,
		    sizeof ebuf);
		if (m != NULL)
			fail_msg("accepted %s", bad[i].json);
		if (strstr(ebuf, bad[i].msg) == NULL)
			fail_msg("for %s: got \"%s\", want \"%s\"", bad[i].json,
			    ebuf, bad[i].msg);
	}
	assert_null(mos_msg_from_json("{", 1, NULL, 0));
}

/* A hand-written JSON line encodes to the expected XML. */
/*
 * A lenient parse of a message whose required element is missing (so its
 * struct has no key): the JSON line leaves that element out and reads back.
 */
static void
test_json_keyless_struct(void **state)
{
	struct mos_msg	*m, *a;
	char		*j1, *j2, ebuf[256];

	(void)state;
	m = mostest_parse_str("<mos><ncsReqStoryAction operation=\"NEW\">"
	    "roStorySend&gt;</ncsReqStoryAction></mos>");
	j1 = mos_msg_to_json(m);
	assert_non_null(j1);
	assert_null(strstr(j1, "roStorySend"));
	if ((a = mos_msg_from_json(j1, strlen(j1), ebuf, sizeof ebuf)) == NULL)
		fail_msg("from_json: %s\n%s", ebuf, j1);
	j2 = mos_msg_to_json(a);
	assert_string_equal(j1, j2);
	free(j1);
	free(j2);
	mos_msg_free(a);
	mos_msg_free(m);
}

static void
test_json_encode(void **state)
{
	const char	*j = "{\"type\":\"roElementAction\",\"mosID\":\"M\","
			    "\"ncsID\":\"N\",\"messageID\":31,\"body\":{"
			    "\"@operation\":\"MOVE\",\"roID\":\"R\","
			    "\"element_target\":{\"storyID\":\"S1\"},"
			    "\"element_source\":{\"storyID\":[\"S3\",\"S4\"]}}}";
	struct mos_msg	*m;
	struct mos_buf	 out = { NULL, 0, 0 };
	char		 ebuf[256];

	(void)state;
	m = mos_msg_from_json(j, strlen(j), ebuf, sizeof ebuf);
	if (m == NULL)
		fail_msg("%s", ebuf);
	assert_int_equal(mos_write(m, MOS_ENC_UTF8, &out, ebuf, sizeof ebuf), 0);
	assert_string_equal(mostest_cstr(&out), "<mos><mosID>M</mosID><ncsID>N"
	    "</ncsID><messageID>31</messageID><roElementAction operation="
	    "\"MOVE\"><roID>R</roID><element_target><storyID>S1</storyID>"
	    "</element_target><element_source><storyID>S3</storyID><storyID>"
	    "S4</storyID></element_source></roElementAction></mos>");
	mos_buf_free(&out);
	mos_msg_free(m);
}

/* Verbatim XML from JSON is stored as the parser would store it. */
static void
test_json_canonical_xml(void **state)
{
	const char	*j = "{\"type\":\"mosObj\",\"body\":{\"objID\":\"A\","
			    "\"description\":\"5 > 4 <em a='1'>x</em><tab></tab>\","
			    "\"mosExternalMetadata\":[{\"mosSchema\":\"s\","
			    "\"mosPayload\":\"<![CDATA[>]]><!--c-->\\r\"}]}}";
	struct mos_msg	*m, *b;
	struct mos_buf	 out = { NULL, 0, 0 };
	char		 ebuf[256];

	(void)state;
	m = mos_msg_from_json(j, strlen(j), ebuf, sizeof ebuf);
	if (m == NULL)
		fail_msg("%s", ebuf);
	assert_string_equal(m->u.mos_obj.description,
	    "5 &gt; 4 <em a=\"1\">x</em><tab/>");
	assert_string_equal(m->u.mos_obj.ext_meta.v[0].mos_payload,
	    "<![CDATA[>]]><!--c-->\n");	/* XML reads a CR as LF */
	assert_int_equal(mos_write(m, MOS_ENC_UTF8, &out, NULL, 0), 0);
	assert_int_equal(mos_parse(out.data, out.len, MOS_ENC_UTF8, MOS_LENIENT,
	    &b, NULL), 0);
	assert_true(mos_msg_equal(m, b));
	mos_msg_free(b);
	mos_msg_free(m);
	mos_buf_free(&out);
}

/* Every example line of docs/mosmsg.md is what the codec prints. */
static void
test_json_doc_examples(void **state)
{
	const char	*top = getenv("MOSGW_TOP");
	char		 path[4096], *doc, *line, *next, *j, ebuf[256];
	struct mos_msg	*m;
	size_t		 len, n = 0;

	(void)state;
	snprintf(path, sizeof path, "%s/docs/mosmsg.md", top ? top : ".");
	doc = mostest_slurp(path, &len);
	for (line = doc; line != NULL && *line != '\0'; line = next) {
		if ((next = strchr(line, '\n')) != NULL)
			*next++ = '\0';
		if (strncmp(line, "{\"type\":\"", 9) != 0 ||
		    strstr(line, "{...}") != NULL)
			continue;
		if ((m = mos_msg_from_json(line, strlen(line), ebuf,
		    sizeof ebuf)) == NULL)
			fail_msg("docs/mosmsg.md: %s\n%s", ebuf, line);
		j = mos_msg_to_json(m);
		if (strcmp(j, line) != 0)
			fail_msg("docs/mosmsg.md example differs from the "
			    "codec's output:\n%s\n%s", line, j);
		free(j);
		mos_msg_free(m);
		n++;
	}
	assert_true(n >= 30);
	free(doc);
}

/* Run the mosxml_json suite. */
int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_json_all),
		cmocka_unit_test(test_json_schema),
		cmocka_unit_test(test_json_decimals),
		cmocka_unit_test(test_json_decimal_round_trip),
		cmocka_unit_test(test_json_errors),
		cmocka_unit_test(test_json_keyless_struct),
		cmocka_unit_test(test_json_encode),
		cmocka_unit_test(test_json_canonical_xml),
		cmocka_unit_test(test_json_doc_examples),
	};

	mos_init();
	return cmocka_run_group_tests_name("mosxml_json", tests, NULL, NULL);
}
