/*
 * The writer: a round trip (write, then parse) gives an equal model for
 * every message type, in UTF-8 and UTF-16BE; DTD order; escaping; errors.
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

/* Write m in enc, parse it back leniently, and require an equal model. */
static void
round_trip(const struct mos_msg *m, enum mos_enc enc, const char *what)
{
	struct mos_buf		 out = { NULL, 0, 0 }, again = { NULL, 0, 0 };
	struct mos_msg		*back;
	struct mos_error	 err;
	char			 ebuf[256];

	if (mos_write(m, enc, &out, ebuf, sizeof ebuf) != 0)
		fail_msg("%s: write: %s", what, ebuf);
	if (enc == MOS_ENC_UTF8)
		assert_memory_equal(out.data, "<mos>", 5);
	else
		assert_memory_equal(out.data, "\0<\0m\0o\0s\0>", 10);
	if (mos_parse(out.data, out.len, enc, MOS_LENIENT, &back, &err) != 0)
		fail_msg("%s: reparse: %s", what, err.msg);
	if (!mos_msg_equal(m, back))
		fail_msg("%s: the model changed in a %s round trip", what,
		    mos_enc_name(enc));
	/* Writing the re-read model gives the same bytes. */
	assert_int_equal(mos_write(back, enc, &again, ebuf, sizeof ebuf), 0);
	assert_int_equal(again.len, out.len);
	assert_memory_equal(again.data, out.data, out.len);
	mos_msg_free(back);
	mos_buf_free(&out);
	mos_buf_free(&again);
}

/* Every fixture survives the round trip, and every type is covered. */
static void
test_round_trip_all_types(void **state)
{
	char		**files;
	size_t		  n, i;
	struct mos_msg	 *m;
	int		  seen[MOS_T__COUNT] = { 0 }, t;

	(void)state;
	files = mostest_list(mostest_fixtures(), ".xml", &n);
	assert_true(n >= MOS_T__COUNT);
	for (i = 0; i < n; i++) {
		m = mostest_parse_file(files[i], MOS_LENIENT);
		seen[m->type]++;
		round_trip(m, MOS_ENC_UTF8, files[i]);
		round_trip(m, MOS_ENC_UTF16BE, files[i]);
		mos_msg_free(m);
	}
	for (t = 0; t < MOS_T__COUNT; t++) {
		if (seen[t] == 0)
			fail_msg("no fixture of type %s", mos_type_name(t));
	}
	mostest_list_free(files, n);
}

/* Elements come out in DTD order whatever order they arrived in. */
static void
test_dtd_order(void **state)
{
	static const char *const order[] = { "<roID>", "<roSlug>",
	    "<roChannel>", "<roEdStart>", "<roEdDur>", "<macroIn>",
	    "<mosExternalMetadata>", "<mosScope>", "<mosSchema>",
	    "<mosPayload>" };
	struct mos_msg	*m;
	struct mos_buf	 out = { NULL, 0, 0 };
	const char	*p, *q;
	size_t		 i;

	(void)state;
	m = mostest_parse_str("<mos><messageID>3</messageID><ncsID>N</ncsID>"
	    "<mosID>M</mosID><roMetadataReplace><mosExternalMetadata>"
	    "<mosPayload>x</mosPayload><mosSchema>s</mosSchema><mosScope>"
	    "STORY</mosScope></mosExternalMetadata><macroIn>in</macroIn>"
	    "<roEdDur>00:01:00</roEdDur><roEdStart>2024-01-01T10:00:00"
	    "</roEdStart><roChannel>C</roChannel><roSlug>S</roSlug><roID>R"
	    "</roID></roMetadataReplace></mos>");
	assert_int_equal(mos_write(m, MOS_ENC_UTF8, &out, NULL, 0), 0);
	p = strstr(mostest_cstr(&out), "<mosID>M</mosID><ncsID>N</ncsID>"
	    "<messageID>3</messageID><roMetadataReplace>");
	assert_non_null(p);
	for (i = 0; i < sizeof order / sizeof order[0]; i++) {
		q = strstr(p, order[i]);
		if (q == NULL || q < p)
			fail_msg("%s out of order in %s", order[i], out.data);
		p = q;
	}
	mos_buf_free(&out);
	mos_msg_free(m);
}

/* A message built through the API the way the gateway builds them. */
static struct mos_msg *
build_mos_obj(const char *slug, const char *tech)
{
	struct mos_msg	*m = mos_msg_new(MOS_T_MOS_OBJ);
	struct mos_obj	*o = &m->u.mos_obj;

	m->mos_id = "mam.example.mos";
	m->ncs_id = "ncs.example";
	m->has_message_id = true;
	m->message_id = 77;
	o->obj_id = "A-1";
	o->obj_slug = slug;
	o->obj_type = "VIDEO";
	mos_dec_parse("29.97", &o->obj_tb);
	o->has_obj_rev = true;
	o->obj_rev = 2;
	o->status = "UPDATED";
	o->obj_air = "READY";
	mos_time_now(&o->changed);
	o->description = mos_msg_xml_text(m, "plain & <simple>");
	o->obj_paths = mos_msg_alloc(m, sizeof *o->obj_paths);
	o->obj_paths->obj_path.v = mos_msg_calloc(m, 1,
	    sizeof *o->obj_paths->obj_path.v);
	o->obj_paths->obj_path.n = 1;
	o->obj_paths->obj_path.v[0].tech_description = tech;
	o->obj_paths->obj_path.v[0].url = "\\\\srv\\clip.mxf";
	return m;
}

/* Text and attribute escaping survive the round trip. */
static void
test_escaping(void **state)
{
	struct mos_msg	*m;
	struct mos_buf	 out = { NULL, 0, 0 };

	(void)state;
	m = build_mos_obj("a & b < c > d \"e\" 'f'\r\n\tg",
	    "say \"hi\" & <go>\t\n\r now");
	round_trip(m, MOS_ENC_UTF8, "escaping");
	round_trip(m, MOS_ENC_UTF16BE, "escaping");
	assert_int_equal(mos_write(m, MOS_ENC_UTF8, &out, NULL, 0), 0);
	mostest_cstr(&out);
	assert_non_null(strstr((char *)out.data, "<objSlug>a &amp; b &lt; c "
	    "&gt; d \"e\" 'f'&#13;\n\tg</objSlug>"));
	assert_non_null(strstr((char *)out.data, "techDescription=\"say "
	    "&quot;hi&quot; &amp; &lt;go&gt;&#9;&#10;&#13; now\""));
	assert_non_null(strstr((char *)out.data,
	    "<description>plain &amp; &lt;simple&gt;</description>"));
	assert_non_null(strstr((char *)out.data, "<objTB>29.97</objTB>"));
	mos_buf_free(&out);
	mos_msg_free(m);
}

/* What XML cannot carry is refused with a message naming the field. */
static void
test_write_errors(void **state)
{
	struct mos_msg	*m;
	struct mos_buf	 out = { NULL, 0, 0 };
	char		 ebuf[256];

	(void)state;
	mostest_buf_add(&out, "keep");
	m = build_mos_obj("bell\a", "t");
	assert_int_equal(mos_write(m, MOS_ENC_UTF8, &out, ebuf, sizeof ebuf),
	    -1);
	assert_string_equal(ebuf, "mosObj: objSlug holds a control character "
	    "that XML 1.0 cannot carry");
	assert_int_equal(out.len, 4);
	mos_msg_free(m);
	m = build_mos_obj("bad \xff utf8", "t");
	assert_int_equal(mos_write(m, MOS_ENC_UTF16BE, &out, ebuf, sizeof ebuf),
	    -1);
	assert_string_equal(ebuf, "mosObj: objSlug is not valid UTF-8");
	m->u.mos_obj.obj_slug = "ok";
	m->u.mos_obj.obj_paths->obj_path.v[0].tech_description = "\x01";
	assert_int_equal(mos_write(m, MOS_ENC_UTF8, &out, ebuf, sizeof ebuf),
	    -1);
	assert_non_null(strstr(ebuf, "mosObj/objPaths/objPath: "
	    "techDescription holds a control"));
	m->u.mos_obj.obj_paths->obj_path.v[0].tech_description = "t";
	m->u.mos_obj.obj_id = NULL;
	assert_int_equal(mos_write(m, MOS_ENC_UTF8, &out, ebuf, sizeof ebuf),
	    -1);
	assert_string_equal(ebuf, "mosObj: objID missing");
	m->u.mos_obj.obj_id = "A";
	m->message_id = 0;
	assert_int_equal(mos_write(m, MOS_ENC_UTF8, &out, ebuf, sizeof ebuf),
	    -1);
	assert_non_null(strstr(ebuf, "messageID"));
	m->message_id = 1;
	assert_int_equal(mos_write(m, MOS_ENC_AUTO, &out, ebuf, sizeof ebuf),
	    -1);
	assert_int_equal(out.len, 4);
	/* A NULL errbuf is fine. */
	m->u.mos_obj.obj_id = NULL;
	assert_int_equal(mos_write(m, MOS_ENC_UTF8, &out, NULL, 0), -1);
	assert_int_equal(out.len, 4);
	mos_msg_free(m);
	mos_buf_free(&out);
}

/* UTF-16BE output: no BOM, surrogate pairs for characters past U+FFFF. */
static void
test_utf16_output(void **state)
{
	static const uint8_t	 fire[] = { 0xd8, 0x3d, 0xdd, 0x25 };
	static const uint8_t	 ae[] = { 0x00, 0xc6, 0x00, 0x3c };
	struct mos_msg		*m;
	struct mos_buf		 out = { NULL, 0, 0 };
	size_t			 i;
	int			 found = 0, found_ae = 0;

	(void)state;
	m = build_mos_obj("\xc3\x86<\xf0\x9f\x94\xa5", "t");
	assert_int_equal(mos_write(m, MOS_ENC_UTF16BE, &out, NULL, 0), 0);
	assert_int_equal(out.len % 2, 0);
	assert_int_equal(out.data[0], 0);
	assert_int_equal(out.data[1], '<');
	for (i = 0; i + 4 <= out.len; i += 2) {
		found |= memcmp(out.data + i, fire, 4) == 0;
		found_ae |= memcmp(out.data + i, ae, 4) == 0;
	}
	assert_true(found);
	assert_false(found_ae);	/* '<' after Æ was escaped */
	mos_msg_free(m);
	mos_buf_free(&out);
}

/* Frames append to the buffer; messages built from scratch round-trip. */
static void
test_built_messages(void **state)
{
	struct mos_msg		*m;
	struct mos_ro_ack	*a;
	struct mos_buf		 out = { NULL, 0, 0 };
	char			 ebuf[256];
	size_t			 first;

	(void)state;
	m = mos_msg_new(MOS_T_HEARTBEAT);
	m->mos_id = "M";
	m->ncs_id = "N";
	mos_time_now(&m->u.heartbeat.time);
	assert_int_equal(mos_write(m, MOS_ENC_UTF8, &out, NULL, 0), 0);
	first = out.len;
	round_trip(m, MOS_ENC_UTF16BE, "heartbeat");
	mos_msg_free(m);
	m = mos_msg_new(MOS_T_RO_ACK);
	a = &m->u.ro_ack;
	a->ro_id = "R";
	a->ro_status = "OK";
	a->entries.v = mos_msg_calloc(m, 2, sizeof *a->entries.v);
	a->entries.n = 2;
	a->entries.v[0].story_id = "S";
	a->entries.v[0].status = "READY";
	a->entries.v[1].obj_id = "O";
	a->entries.v[1].status = "PLAY";
	round_trip(m, MOS_ENC_UTF8, "roAck");
	a->entries.v[1].obj_id = NULL;
	a->entries.v[1].status = NULL;
	assert_int_equal(mos_write(m, MOS_ENC_UTF8, &out, ebuf, sizeof ebuf),
	    -1);
	assert_string_equal(ebuf, "roAck: entries entry 2 is empty");
	a->entries.n = 1;
	assert_int_equal(mos_write(m, MOS_ENC_UTF8, &out, NULL, 0), 0);
	assert_memory_equal(out.data + first, "<mos><roAck><roID>R</roID>", 26);
	mos_msg_free(m);
	m = mos_msg_new(MOS_T_LIST_MACH_INFO);
	m->u.list_mach_info.profiles[0] = 1;
	m->u.list_mach_info.profiles[1] = 0;
	m->u.list_mach_info.device_type = "MOS";
	round_trip(m, MOS_ENC_UTF8, "listMachInfo container");
	m->u.list_mach_info.profiles_flat = true;
	m->u.list_mach_info.device_type = NULL;
	round_trip(m, MOS_ENC_UTF8, "listMachInfo flat");
	mos_msg_free(m);
	m = mos_msg_new(MOS_T_UNKNOWN);
	m->type_name = "roItemStat";
	m->u.unknown.xml = "<roID>R</roID>";
	round_trip(m, MOS_ENC_UTF8, "unknown");
	m->type_name = "ro\xd2\xa4Stat";	/* non-ASCII names are XML names too */
	round_trip(m, MOS_ENC_UTF16BE, "unknown, non-ASCII name");
	m->type_name = "bad name";
	assert_int_equal(mos_write(m, MOS_ENC_UTF8, &out, NULL, 0), -1);
	mos_msg_free(m);
	mos_buf_free(&out);
}

/* Run the mosxml_write suite. */
int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip_all_types),
		cmocka_unit_test(test_dtd_order),
		cmocka_unit_test(test_escaping),
		cmocka_unit_test(test_write_errors),
		cmocka_unit_test(test_utf16_output),
		cmocka_unit_test(test_built_messages),
	};

	mos_init();
	return cmocka_run_group_tests_name("mosxml_write", tests, NULL, NULL);
}
