/*
 * The parser: field values of our fixtures, the envelope in all its forms,
 * vendor quirks in lenient mode and their refusal in strict mode, unknown
 * elements and messages, verbatim XML, and clear errors.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mosxml/mosxml.h"
#include "mosxml/mosjson.h"
#include "mosxml/tests/util.h"

/* A fixture of ours by file name. */
static struct mos_msg *
fixture(const char *name, enum mos_mode mode)
{
	char	path[4096];

	snprintf(path, sizeof path, "%s/%s", mostest_fixtures(), name);
	return mostest_parse_file(path, mode);
}

/* Parse a literal and expect it to fail with code; returns the error. */
static struct mos_error
parse_fail(const char *s, enum mos_mode mode, enum mos_err code)
{
	struct mos_msg		*m = NULL;
	struct mos_error	 err;
	int			 rc;

	rc = mos_parse(s, strlen(s), MOS_ENC_UTF8, mode, &m, &err);
	if (rc != (int)code)
		fail_msg("expected %s, got %s (%s) for %s", mos_err_name(code),
		    mos_err_name(rc), err.msg, s);
	assert_null(m);
	assert_int_equal(err.code, code);
	assert_true(strlen(err.msg) > 0);
	assert_null(strchr(err.msg, '\n'));
	return err;
}

/* Every field of our mosObj fixture, strict mode. */
static void
test_mos_obj_fields(void **state)
{
	struct mos_msg		*m = fixture("mosObj.xml", MOS_STRICT);
	const struct mos_obj	*o = &m->u.mos_obj;

	(void)state;
	assert_int_equal(m->type, MOS_T_MOS_OBJ);
	assert_string_equal(m->type_name, "mosObj");
	assert_string_equal(m->mos_id, "mam.newsroom.example.mos");
	assert_string_equal(m->ncs_id, "ncs.newsroom.example");
	assert_true(m->has_message_id);
	assert_int_equal(m->message_id, 5020);
	assert_string_equal(o->obj_id, "MAM-00017");
	assert_string_equal(o->obj_slug, "Harbour fire: aerials & interviews");
	assert_string_equal(o->mos_abstract,
	    "Aerials of the <b>harbour fire</b>, 1:42");
	assert_string_equal(o->obj_group, "News/Local");
	assert_string_equal(o->obj_type, "VIDEO");
	assert_int_equal(o->obj_tb.v, 5994);
	assert_int_equal(o->obj_tb.scale, 2);
	assert_true(o->has_obj_rev);
	assert_int_equal(o->obj_rev, 3);
	assert_true(o->has_obj_dur);
	assert_int_equal(o->obj_dur, 6114);
	assert_string_equal(o->status, "UPDATED");
	assert_string_equal(o->obj_air, "READY");
	assert_non_null(o->obj_paths);
	assert_int_equal(o->obj_paths->obj_path.n, 1);
	assert_string_equal(o->obj_paths->obj_path.v[0].tech_description,
	    "MPEG2 Video");
	assert_string_equal(o->obj_paths->obj_path.v[0].url,
	    "\\\\mam01\\media\\MAM-00017.mxf");
	assert_int_equal(o->obj_paths->obj_proxy_path.n, 1);
	assert_int_equal(o->obj_paths->obj_metadata_path.n, 1);
	assert_string_equal(o->obj_paths->obj_metadata_path.v[0].url,
	    "https://mam.example/api/v1/assets/MAM-00017");
	assert_string_equal(o->created_by, "Kari Nordmann");
	assert_int_equal(o->created.tz_min, 60);
	assert_int_equal(o->changed.ms, 731);
	assert_string_equal(o->changed_by, "Ole \xc3\x85s");
	assert_string_equal(o->description, "<p>Fire broke out at 06:40 in "
	    "warehouse <em>B</em>.</p><p>Interview:<tab/>harbour master, "
	    "00:45.</p>");
	assert_int_equal(o->ext_meta.n, 1);
	assert_string_equal(o->ext_meta.v[0].mos_scope, "PLAYLIST");
	assert_non_null(strstr(o->ext_meta.v[0].mos_payload,
	    "<asset id=\"MAM-00017\" kind=\"clip\">"));
	assert_non_null(strstr(o->ext_meta.v[0].mos_payload,
	    "<k>\xc3\x86\xc3\xb8\xc3\xa5 \xf0\x9f\x94\xa5</k>"));
	mos_msg_free(m);
}

/* messageID decimal, 0x hex and x hex; envelope in any order. */
static void
test_envelope_forms(void **state)
{
	struct mos_msg	*m;

	(void)state;
	m = fixture("heartbeat--hex-message-id.xml", MOS_STRICT);
	assert_int_equal(m->message_id, 0x1F40);
	assert_int_equal(m->u.heartbeat.time.tz_min, -300);
	mos_msg_free(m);
	m = fixture("heartbeat--quirk-empty-time.xml", MOS_LENIENT);
	assert_int_equal(m->message_id, 0xA5);
	assert_int_equal(m->u.heartbeat.time.flags, 0);
	mos_msg_free(m);
	m = fixture("mosObj--quirk-notready-unknown-elements.xml", MOS_LENIENT);
	assert_int_equal(m->type, MOS_T_MOS_OBJ);
	assert_int_equal(m->message_id, 0x1389);
	assert_string_equal(m->mos_id, "mam.newsroom.example.mos");
	assert_string_equal(m->ncs_id, "ncs.newsroom.example");
	mos_msg_free(m);
	m = mostest_parse_str("<mos><messageID> +42 </messageID><ncsID>N</ncsID>"
	    "<mosID>M</mosID><heartbeat><time>2024-01-01T00:00:00</time>"
	    "</heartbeat></mos>");
	assert_int_equal(m->message_id, 42);
	mos_msg_free(m);
	m = mostest_parse_str("<mos version=\"2.8\"><mosID>M</mosID><ncsID>N"
	    "</ncsID><messageID>2147483647</messageID><reqMachInfo/></mos>");
	assert_int_equal(m->message_id, 2147483647);
	assert_int_equal(m->type, MOS_T_REQ_MACH_INFO);
	mos_msg_free(m);
}

/* Lenient takes what strict refuses in the envelope. */
static void
test_envelope_strict(void **state)
{
	static const char *const lenient_only[] = {
		"<mos><mosID>M</mosID><ncsID>N</ncsID><heartbeat/></mos>",
		"<mos><mosID></mosID><ncsID>N</ncsID><messageID>1</messageID>"
		    "<reqMachInfo/></mos>",
		"<mos><mosID>M</mosID><messageID>1</messageID><reqMachInfo/>"
		    "</mos>",
		"<mos><mosID>M</mosID><ncsID>N</ncsID><messageID></messageID>"
		    "<reqMachInfo/></mos>",
	};
	struct mos_msg	*m;
	struct mos_error err;
	const char	*ka;
	size_t		 i;

	(void)state;
	for (i = 0; i < sizeof lenient_only / sizeof lenient_only[0]; i++) {
		m = mostest_parse_str(lenient_only[i]);
		mos_msg_free(m);
		err = parse_fail(lenient_only[i], MOS_STRICT, i == 0 ?
		    MOS_E_FIELD : MOS_E_ENVELOPE);
		assert_string_equal(err.env.mos_id, i == 1 ? "" : "M");
	}
	m = mostest_parse_str("<mos><mosID>M</mosID><ncsID>N</ncsID>"
	    "<messageID></messageID><reqMachInfo/></mos>");
	assert_false(m->has_message_id);
	mos_msg_free(m);
	/* keepAlive has no messageID; plug-in messages have no IDs at all. */
	ka = "<mos><mosID>M</mosID><ncsID>N</ncsID><keepAlive/></mos>";
	assert_int_equal(mos_parse(ka, strlen(ka), MOS_ENC_UTF8, MOS_STRICT,
	    &m, NULL), 0);
	assert_int_equal(m->type, MOS_T_KEEP_ALIVE);
	mos_msg_free(m);
	m = fixture("ncsItem.xml", MOS_STRICT);
	assert_null(m->mos_id);
	assert_false(m->has_message_id);
	mos_msg_free(m);
}

/* Bad messageIDs fail in both modes, with the rest of the envelope kept. */
static void
test_envelope_bad(void **state)
{
	static const char *const bad[] = { "0", "-3", "abc", "2147483648",
	    "0x80000000", "0x", "12 34" };
	char		 buf[256];
	struct mos_error err;
	size_t		 i;

	(void)state;
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		snprintf(buf, sizeof buf, "<mos><mosID>M</mosID><ncsID>N"
		    "</ncsID><messageID>%s</messageID><roReq><roID>R</roID>"
		    "</roReq></mos>", bad[i]);
		err = parse_fail(buf, MOS_LENIENT, MOS_E_ENVELOPE);
		assert_non_null(strstr(err.msg, "messageID"));
		assert_true(err.env.have_mos_id);
		assert_string_equal(err.env.ncs_id, "N");
		assert_string_equal(err.env.type_name, "roReq");
		parse_fail(buf, MOS_STRICT, MOS_E_ENVELOPE);
	}
	parse_fail("<mos><mosID>M</mosID><ncsID>N</ncsID><messageID>1"
	    "</messageID></mos>", MOS_LENIENT, MOS_E_ENVELOPE);
	parse_fail("<mos><mosID>M</mosID><mosID>M</mosID><ncsID>N</ncsID>"
	    "<messageID>1</messageID><reqMachInfo/></mos>", MOS_STRICT,
	    MOS_E_ENVELOPE);
	parse_fail("<notmos><mosID>M</mosID></notmos>", MOS_LENIENT,
	    MOS_E_ROOT);
}

/* A frame that is not XML still yields its envelope for the NACK. */
static void
test_malformed_envelope(void **state)
{
	struct mos_error	err;

	(void)state;
	err = parse_fail("<mos><mosID>mam&amp;co</mosID><ncsID>ncs</ncsID>"
	    "<messageID>0x10</messageID><mosReqObj><objID>A</objID>"
	    "</mosReqObj><broken></mos>", MOS_LENIENT, MOS_E_XML);
	assert_true(err.env.have_mos_id);
	assert_string_equal(err.env.mos_id, "mam&co");
	assert_string_equal(err.env.ncs_id, "ncs");
	assert_true(err.env.have_message_id);
	assert_int_equal(err.env.message_id, 16);
	assert_string_equal(err.env.type_name, "mosReqObj");
	assert_true(err.xml_code != 0);
	assert_true(err.line >= 1);
	assert_non_null(strstr(err.msg, "XML error"));
	err = parse_fail("<mos><ncsID>N</ncsID><messageID>7</messageID>"
	    "<roCreate><roID>R</roID><roSlug>S</roSlug><story>", MOS_LENIENT,
	    MOS_E_XML);
	assert_false(err.env.have_mos_id);
	assert_int_equal(err.env.message_id, 7);
	assert_string_equal(err.env.type_name, "roCreate");
	/* Character references, as the parser reads them; bad ones stay. */
	err = parse_fail("<mos><mosID>m&#233;&#x263A;&#;&#xD800;</mosID>"
	    "<ncsID>&#x6e;cs&#1114112;</ncsID><messageID>&#x31;&#50;"
	    "</messageID><heartbeat><broken></mos>", MOS_LENIENT, MOS_E_XML);
	assert_string_equal(err.env.mos_id,
	    "m\xc3\xa9\xe2\x98\xba&#;&#xD800;");
	assert_string_equal(err.env.ncs_id, "ncs&#1114112;");
	assert_true(err.env.have_message_id);
	assert_int_equal(err.env.message_id, 12);
}

/* Vendor quirks read in lenient mode and refused in strict mode. */
static void
test_quirks(void **state)
{
	static const char *const quirks[] = {
		"heartbeat--quirk-empty-time.xml",
		"heartbeat--quirk-no-message-id.xml",
		"listMachInfo--quirk-openmedia.xml",
		"mosAck--quirk-nack-no-message-id.xml",
		"mosObj--quirk-notready-unknown-elements.xml",
	};
	char			 path[4096], *buf;
	struct mos_msg		*m;
	size_t			 i, len;
	int			 i8;

	(void)state;
	m = fixture("mosObj--quirk-notready-unknown-elements.xml", MOS_LENIENT);
	assert_string_equal(m->u.mos_obj.obj_air, "NOT READY");
	assert_int_equal(m->u.mos_obj.created.ms, 500);
	assert_int_equal(m->u.mos_obj.created.flags,
	    MOS_TIME_SET | MOS_TIME_FRAC);
	assert_int_equal(m->u.mos_obj.changed.tz_min, 60);
	assert_string_equal(m->u.mos_obj.description, "");
	assert_null(m->u.mos_obj.obj_paths);
	mos_msg_free(m);
	m = fixture("listMachInfo--quirk-openmedia.xml", MOS_LENIENT);
	for (i8 = 0; i8 < 8; i8++)
		assert_int_equal(m->u.list_mach_info.profiles[i8], -1);
	assert_string_equal(m->u.list_mach_info.mos_rev, "2.84");
	assert_int_equal(m->u.list_mach_info.time.flags, 0);
	assert_int_equal(m->u.list_mach_info.op_time.flags, 0);
	assert_string_equal(m->mos_id, "");
	mos_msg_free(m);
	m = fixture("heartbeat--quirk-no-message-id.xml", MOS_LENIENT);
	assert_false(m->has_message_id);
	assert_int_equal(m->u.heartbeat.time.ms, 400);
	mos_msg_free(m);
	for (i = 0; i < sizeof quirks / sizeof quirks[0]; i++) {
		snprintf(path, sizeof path, "%s/%s", mostest_fixtures(),
		    quirks[i]);
		buf = mostest_slurp(path, &len);
		if (mos_parse(buf, len, MOS_ENC_UTF8, MOS_STRICT, &m, NULL) ==
		    MOS_OK)
			fail_msg("strict accepted %s", quirks[i]);
		assert_null(m);
		free(buf);
	}
}

/* Both encodings of supportedProfiles. */
static void
test_profiles(void **state)
{
	static const int8_t	 container[8] = { 1, 1, 1, 0, 1, 0, 0, 0 };
	static const int8_t	 flat[8] = { 1, 1, 1, 1, 1, 0, 1, 1 };
	struct mos_msg		*m;

	(void)state;
	m = fixture("listMachInfo.xml", MOS_STRICT);
	assert_memory_equal(m->u.list_mach_info.profiles, container, 8);
	assert_false(m->u.list_mach_info.profiles_flat);
	assert_string_equal(m->u.list_mach_info.device_type, "MOS");
	assert_int_equal(m->u.list_mach_info.default_active_x.n, 1);
	assert_string_equal(m->u.list_mach_info.default_active_x.v[0].mode,
	    "CONTAINED");
	assert_string_equal(m->u.list_mach_info.dom, "2024-01-02T00:00:00");
	mos_msg_free(m);
	m = fixture("listMachInfo--flat-profiles.xml", MOS_STRICT);
	assert_memory_equal(m->u.list_mach_info.profiles, flat, 8);
	assert_true(m->u.list_mach_info.profiles_flat);
	assert_null(m->u.list_mach_info.device_type);
	assert_string_equal(m->u.list_mach_info.dom, "4/15/2024 2:21:26 PM");
	mos_msg_free(m);
	m = mostest_parse_str("<mos><listMachInfo><mosProfile2>true"
	    "</mosProfile2><mosProfile7>0</mosProfile7></listMachInfo></mos>");
	assert_int_equal(m->u.list_mach_info.profiles[2], 1);
	assert_int_equal(m->u.list_mach_info.profiles[7], 0);
	assert_int_equal(m->u.list_mach_info.profiles[0], -1);
	mos_msg_free(m);
	parse_fail("<mos><listMachInfo><supportedProfiles deviceType=\"MOS\">"
	    "<mosProfile number=\"1\">MAYBE</mosProfile></supportedProfiles>"
	    "</listMachInfo></mos>", MOS_LENIENT, MOS_E_FIELD);
}

/* Unknown message elements parse as MOS_T_UNKNOWN with their name. */
static void
test_unknown_message(void **state)
{
	struct mos_msg	*m;
	char		 name[100], text[200];

	(void)state;
	m = fixture("unknown--roItemStat.xml", MOS_STRICT);
	assert_int_equal(m->type, MOS_T_UNKNOWN);
	assert_string_equal(m->type_name, "roItemStat");
	assert_string_equal(mos_type_name(m->type), "unknown");
	assert_int_equal(m->message_id, 2400);
	assert_non_null(strstr(m->u.unknown.xml, "<status>PLAY</status>"));
	mos_msg_free(m);
	/* A vendor element before the message does not hide it. */
	m = mostest_parse_str("<mos><vendorX><a/></vendorX><roReq><roID>R"
	    "</roID></roReq><trailer/></mos>");
	assert_int_equal(m->type, MOS_T_RO_REQ);
	assert_string_equal(m->u.ro_req.ro_id, "R");
	mos_msg_free(m);
	/*
	 * The name of an unknown message is at most 64 bytes, as its JSON
	 * form requires; a longer vendor element before a known message is
	 * only skipped.
	 */
	memset(name, 'x', sizeof name - 1);
	name[sizeof name - 1] = '\0';
	name[64] = '\0';
	snprintf(text, sizeof text, "<mos><%s/></mos>", name);
	m = mostest_parse_str(text);
	assert_int_equal(m->type, MOS_T_UNKNOWN);
	assert_int_equal(strlen(m->type_name), 64);
	mos_msg_free(m);
	name[64] = 'x';
	snprintf(text, sizeof text, "<mos><%s/></mos>", name);
	parse_fail(text, MOS_LENIENT, MOS_E_FIELD);
	snprintf(text, sizeof text, "<mos><%s/><heartbeat/></mos>", name);
	m = mostest_parse_str(text);
	assert_int_equal(m->type, MOS_T_HEARTBEAT);
	mos_msg_free(m);
}

/* roAck's repeated (storyID, itemID, objID, itemChannel?, status) group. */
static void
test_ro_ack_group(void **state)
{
	struct mos_msg		*m = fixture("roAck.xml", MOS_STRICT);
	const struct mos_ro_ack	*a = &m->u.ro_ack;

	(void)state;
	assert_string_equal(a->ro_status, "OK");
	assert_int_equal(a->entries.n, 2);
	assert_string_equal(a->entries.v[0].item_channel, "A");
	assert_string_equal(a->entries.v[0].status, "READY");
	assert_string_equal(a->entries.v[1].story_id, "STORY-2");
	assert_null(a->entries.v[1].item_channel);
	assert_string_equal(a->entries.v[1].status, "NOT READY");
	mos_msg_free(m);
	m = fixture("roAck--quirk-buddy.xml", MOS_STRICT);
	assert_string_equal(m->u.ro_ack.ro_id, "");
	assert_int_equal(m->u.ro_ack.entries.n, 0);
	mos_msg_free(m);
	/* An entry without storyID still starts a new entry at a repeat. */
	m = mostest_parse_str("<mos><roAck><roID>R</roID><roStatus>OK"
	    "</roStatus><objID>A</objID><status>S1</status><objID>B</objID>"
	    "<status>S2</status></roAck></mos>");
	assert_int_equal(m->u.ro_ack.entries.n, 2);
	assert_string_equal(m->u.ro_ack.entries.v[1].obj_id, "B");
	mos_msg_free(m);
}

/* roElementAction in every form of target and source. */
static void
test_element_action(void **state)
{
	struct mos_msg				*m;
	const struct mos_ro_element_action	*a;
	struct mos_error			 err;

	(void)state;
	m = fixture("roElementAction--insert-item.xml", MOS_STRICT);
	a = &m->u.ro_element_action;
	assert_string_equal(a->operation, "INSERT");
	assert_string_equal(a->element_target->story_id, "STORY-1");
	assert_string_equal(a->element_target->item_id, "ITEM-2");
	assert_int_equal(a->element_source.item.n, 2);
	assert_int_equal(a->element_source.item.v[0].item_ed_dur, 2700);
	assert_int_equal(a->element_source.story.n, 0);
	mos_msg_free(m);
	m = fixture("roElementAction--swap-stories.xml", MOS_STRICT);
	a = &m->u.ro_element_action;
	assert_null(a->element_target);
	assert_int_equal(a->element_source.story_id.n, 2);
	assert_string_equal(a->element_source.story_id.v[1], "STORY-2");
	mos_msg_free(m);
	m = fixture("roElementAction--insert-empty-target.xml", MOS_STRICT);
	a = &m->u.ro_element_action;
	assert_string_equal(a->element_target->story_id, "");
	assert_null(a->element_target->item_id);
	assert_int_equal(a->element_source.story.n, 1);
	mos_msg_free(m);
	m = fixture("roElementAction--delete-items.xml", MOS_STRICT);
	a = &m->u.ro_element_action;
	assert_int_equal(a->element_source.item_id.n, 2);
	assert_string_equal(a->element_source.item_id.v[1], "ITEM-3b");
	mos_msg_free(m);
	parse_fail("<mos><mosID>M</mosID><ncsID>N</ncsID><messageID>1"
	    "</messageID><roElementAction operation=\"FLIP\"><roID>R</roID>"
	    "<element_source><storyID>S</storyID></element_source>"
	    "</roElementAction></mos>", MOS_STRICT, MOS_E_FIELD);
	/* Strict: one kind of list in element_source, not none, not two. */
	err = parse_fail("<mos><mosID>M</mosID><ncsID>N</ncsID><messageID>1"
	    "</messageID><roElementAction operation=\"DELETE\"><roID>R</roID>"
	    "<element_source><storyID>S</storyID><itemID>I</itemID>"
	    "</element_source></roElementAction></mos>", MOS_STRICT,
	    MOS_E_FIELD);
	assert_non_null(strstr(err.msg, "element_source must hold exactly one"));
	parse_fail("<mos><mosID>M</mosID><ncsID>N</ncsID><messageID>1"
	    "</messageID><roElementAction operation=\"DELETE\"><roID>R</roID>"
	    "<element_source/></roElementAction></mos>", MOS_STRICT,
	    MOS_E_FIELD);
	m = mostest_parse_str("<mos><roElementAction operation=\"DELETE\">"
	    "<roID>R</roID><element_source/></roElementAction></mos>");
	mos_msg_free(m);
}

/* The deprecated roStory and roItem messages. */
static void
test_deprecated(void **state)
{
	struct mos_msg	*m;

	(void)state;
	m = fixture("roStoryMove--to-bottom.xml", MOS_STRICT);
	assert_int_equal(m->type, MOS_T_RO_STORY_MOVE);
	assert_int_equal(m->u.ro_story_move.story_id.n, 2);
	assert_string_equal(m->u.ro_story_move.story_id.v[1], "");
	mos_msg_free(m);
	m = fixture("roItemReplace.xml", MOS_STRICT);
	assert_string_equal(m->u.ro_item_replace.story_id, "STORY-1");
	assert_int_equal(m->u.ro_item_replace.item_id.n, 1);
	assert_int_equal(m->u.ro_item_replace.item.n, 1);
	assert_string_equal(m->u.ro_item_replace.item.v[0].obj_paths->
	    obj_metadata_path.v[0].url, "");
	mos_msg_free(m);
	m = fixture("roStoryInsert.xml", MOS_STRICT);
	assert_int_equal(m->u.ro_story_insert.story.n, 2);
	assert_string_equal(m->u.ro_story_insert.story.v[0].story_num, "B2");
	mos_msg_free(m);
}

/* storyBody keeps its mixed content in order. */
static void
test_story_body(void **state)
{
	static const enum mos_body_kind kinds[] = { MOS_BODY_PRESENTER,
	    MOS_BODY_PRESENTER_RR, MOS_BODY_P, MOS_BODY_P, MOS_BODY_ITEM,
	    MOS_BODY_P, MOS_BODY_TEXT, MOS_BODY_P };
	struct mos_msg			*m = fixture("roStorySend.xml",
					    MOS_STRICT);
	const struct mos_story_body	*b = &m->u.ro_story_send.story_body;
	size_t				 i;

	(void)state;
	assert_string_equal(b->read1st_mem_as_body, "false");
	assert_int_equal(b->part.n, sizeof kinds / sizeof kinds[0]);
	for (i = 0; i < b->part.n; i++)
		assert_int_equal(b->part.v[i].kind, kinds[i]);
	assert_string_equal(b->part.v[0].text, "Ingrid");
	assert_string_equal(b->part.v[2].text, "Good evening. A fire broke out "
	    "in the harbour <em>this morning</em>.");
	assert_string_equal(b->part.v[3].text, "<pi>LOOK AT CAMERA 2</pi>");
	assert_int_equal(b->part.v[4].item->obj_tb.v, 5994);
	assert_string_equal(b->part.v[4].item->mos_id,
	    "mam.newsroom.example.mos");
	assert_non_null(strstr(b->part.v[5].text, "hurt.\xc2\xa0" "Cleanup"));
	assert_non_null(strstr(b->part.v[6].text, "Text straight in storyBody"));
	assert_string_equal(b->part.v[7].text, "");
	mos_msg_free(m);
}

/* Verbatim XML keeps markup, attributes, CDATA, comments and inner <mos>. */
static void
test_verbatim(void **state)
{
	struct mos_msg	*m;
	const char	*p;

	(void)state;
	m = mostest_parse_str("<mos><mosObj><objID>A</objID>"
	    "<mosExternalMetadata><mosSchema>s</mosSchema><mosPayload>"
	    "<a x=\"1 &amp; 2\" y='&#38;&lt;&quot;'>t&amp;&#x20AC;</a>"
	    "<![CDATA[</mos> & <]]><!-- c --><?pi data?><b/>"
	    "<n:c xmlns:n=\"urn:x\" n:k=\"v\">\r&#13;</n:c>"
	    "<mos><heartbeat/></mos></mosPayload></mosExternalMetadata>"
	    "</mosObj></mos>");
	p = m->u.mos_obj.ext_meta.v[0].mos_payload;
	assert_string_equal(p, "<a x=\"1 &amp; 2\" y=\"&amp;&lt;&quot;\">"
	    "t&amp;\xe2\x82\xac</a><![CDATA[</mos> & <]]><!-- c --><?pi data?>"
	    "<b/><n:c xmlns:n=\"urn:x\" n:k=\"v\">\n&#13;</n:c>"
	    "<mos><heartbeat/></mos>");
	assert_string_equal(m->u.mos_obj.obj_id, "A");
	mos_msg_free(m);
	/* Plain text fields get the text of any markup inside them. */
	m = mostest_parse_str("<mos><mosReqObj><objID>A<b>B</b>"
	    "<![CDATA[<C>]]></objID></mosReqObj></mos>");
	assert_string_equal(m->u.mos_req_obj.obj_id, "AB<C>");
	mos_msg_free(m);
}

/* Unknown elements are skipped at every level. */
static void
test_unknown_elements(void **state)
{
	struct mos_msg	*m;

	(void)state;
	m = mostest_parse_str("<mos><roCreate><x1/><roID>R</roID><p>text</p>"
	    "<roSlug>S</roSlug><story><x2><storyID>no</storyID></x2>"
	    "<storyID>S1</storyID><item><itemID>I</itemID><x3 a=\"b\">"
	    "<objID>no</objID></x3></item></story></roCreate></mos>");
	assert_string_equal(m->u.ro_create.ro_id, "R");
	assert_int_equal(m->u.ro_create.story.n, 1);
	assert_string_equal(m->u.ro_create.story.v[0].story_id, "S1");
	assert_null(m->u.ro_create.story.v[0].item.v[0].obj_id);
	mos_msg_free(m);
}

/* Strict value checks, and errors that name the element. */
static void
test_strict_values(void **state)
{
	static const char *const fmt = "<mos><mosID>M</mosID><ncsID>N</ncsID>"
	    "<messageID>1</messageID><mosAck><objID>%s</objID><objRev>%s"
	    "</objRev><status>%s</status><statusDescription/></mosAck></mos>";
	char			 buf[1024], id[200];
	struct mos_msg		*m;
	struct mos_error	 err;

	(void)state;
	snprintf(buf, sizeof buf, fmt, "A", "1000", "ACK");
	m = mostest_parse_str(buf);
	assert_int_equal(m->u.mos_ack.obj_rev, 1000);
	mos_msg_free(m);
	err = parse_fail(buf, MOS_STRICT, MOS_E_FIELD);
	assert_non_null(strstr(err.msg, "mosAck: objRev: 1000 exceeds 999"));
	snprintf(buf, sizeof buf, fmt, "A", "1", "MAYBE");
	parse_fail(buf, MOS_STRICT, MOS_E_FIELD);
	memset(id, 'x', 129);
	id[129] = '\0';
	snprintf(buf, sizeof buf, fmt, id, "1", "ACK");
	err = parse_fail(buf, MOS_STRICT, MOS_E_FIELD);
	assert_non_null(strstr(err.msg, "objID longer than 128"));
	snprintf(buf, sizeof buf, fmt, "A", "0x10", "ACK");
	m = mostest_parse_str(buf);
	assert_int_equal(m->u.mos_ack.obj_rev, 16);
	mos_msg_free(m);
	err = parse_fail("<mos><mosObj><objID>A</objID><objDur>12s</objDur>"
	    "</mosObj></mos>", MOS_LENIENT, MOS_E_FIELD);
	assert_string_equal(err.msg, "mosObj: objDur: \"12s\" is not a number "
	    "from 0 to 4294967295");
	err = parse_fail("<mos><mosID>M</mosID><ncsID>N</ncsID><messageID>1"
	    "</messageID><roCreate><roID>R</roID><roSlug>S</roSlug><story>"
	    "<storyID>S</storyID><item><itemID>I</itemID><objID>O</objID>"
	    "<mosID>M</mosID><itemEdDur>4294967296</itemEdDur></item>"
	    "</story></roCreate></mos>", MOS_STRICT, MOS_E_FIELD);
	assert_non_null(strstr(err.msg, "roCreate/story/item: itemEdDur"));
	err = parse_fail("<mos><mosObj><objSlug>no id</objSlug></mosObj></mos>",
	    MOS_LENIENT, MOS_E_FIELD);
	assert_string_equal(err.msg, "mosObj: objID missing");
	err = parse_fail("<mos><mosID>M</mosID><ncsID>N</ncsID><messageID>1"
	    "</messageID><mosReqObj><objID>A</objID><objID>B</objID>"
	    "</mosReqObj></mos>", MOS_STRICT, MOS_E_FIELD);
	assert_non_null(strstr(err.msg, "appears twice"));
	err = parse_fail("<mos><mosID>M</mosID><ncsID>N</ncsID><messageID>1"
	    "</messageID><roCreate><roID>R</roID></roCreate></mos>",
	    MOS_STRICT, MOS_E_FIELD);
	assert_string_equal(err.msg, "roCreate: roSlug missing (strict)");
	parse_fail("<mos><roCreate><roID>R</roID><roEdStart>yesterday"
	    "</roEdStart></roCreate></mos>", MOS_LENIENT, MOS_E_FIELD);
	parse_fail("<mos><roCreate><roID>R</roID><roEdDur>1:2:3</roEdDur>"
	    "</roCreate></mos>", MOS_LENIENT, MOS_E_FIELD);
	parse_fail("<mos><mosObj><objID>A</objID><objTB>59,94</objTB>"
	    "</mosObj></mos>", MOS_LENIENT, MOS_E_FIELD);
}

/*
 * Lenient mode clamps a whole number out of range in one element, says so
 * in the warnings and keeps the rest of the message; strict refuses it;
 * what is not a number at all is refused in both.
 */
static void
test_lenient_clamp(void **state)
{
	static const char *const ro = "<mos><mosID>M</mosID><ncsID>N</ncsID>"
	    "<messageID>1</messageID><roCreate><roID>R</roID><roSlug>S"
	    "</roSlug><story><storyID>S1</storyID><item><itemID>I1</itemID>"
	    "<objID>O</objID><mosID>M</mosID><itemEdStart>-5</itemEdStart>"
	    "<itemEdDur>99999999999</itemEdDur><itemUserTimingDur>%s"
	    "</itemUserTimingDur></item><item><itemID>I2</itemID><objID>O2"
	    "</objID><mosID>M</mosID></item></story></roCreate></mos>";
	const struct mos_item	*it;
	struct mos_msg		*m;
	char			 buf[1024];

	(void)state;
	snprintf(buf, sizeof buf, ro, "25");
	m = mostest_parse_str(buf);
	assert_int_equal(m->u.ro_create.story.v[0].item.n, 2);
	it = &m->u.ro_create.story.v[0].item.v[0];
	assert_true(it->has_item_ed_start);
	assert_int_equal(it->item_ed_start, 0);
	assert_int_equal(it->item_ed_dur, 4294967295U);
	assert_int_equal(it->item_user_timing_dur, 25);
	assert_int_equal(m->warnings.n, 2);
	assert_string_equal(m->warnings.v[0], "roCreate/story/item: "
	    "itemEdStart: \"-5\" is below 0, read as 0");
	assert_string_equal(m->warnings.v[1], "roCreate/story/item: "
	    "itemEdDur: \"99999999999\" is above 4294967295, read as "
	    "4294967295");
	mos_msg_free(m);
	parse_fail(buf, MOS_STRICT, MOS_E_FIELD);
	snprintf(buf, sizeof buf, ro, "-1x");
	parse_fail(buf, MOS_LENIENT, MOS_E_FIELD);
	/* A clean message has no warnings. */
	m = fixture("roCreate.xml", MOS_LENIENT);
	assert_int_equal(m->warnings.n, 0);
	mos_msg_free(m);
}

/*
 * Identifiers lose the white space around them (a pretty-printed
 * <storyID> is the same ID as a tight one); other text keeps it.
 */
static void
test_id_whitespace(void **state)
{
	const struct mos_ro	*ro;
	const struct mos_item	*it;
	struct mos_msg		*m;

	(void)state;
	m = fixture("roCreate--enps-pretty.xml", MOS_STRICT);
	ro = &m->u.ro_create;
	assert_string_equal(ro->ro_id, "HOST;P_NEWS\\W;C45B2CF1-1");
	assert_string_equal(ro->story.v[0].story_id, "STORY 7");
	assert_string_equal(ro->story.v[0].story_slug, " Harbour fire ");
	it = &ro->story.v[0].item.v[0];
	assert_string_equal(it->item_id, "3");
	assert_string_equal(it->obj_id, "MAM-00017");
	assert_string_equal(it->mos_item_editor_prog_id, "MAM.Editor.1");
	mos_msg_free(m);
	/* Attributes, ID lists and the envelope too. */
	m = mostest_parse_str("<mos><mosID> M </mosID><ncsID>\n N\n</ncsID>"
	    "<messageID>1</messageID><mosReqObjAction operation=\"DELETE\" "
	    "objID=\" A 1 \"/></mos>");
	assert_string_equal(m->mos_id, "M");
	assert_string_equal(m->ncs_id, "N");
	assert_string_equal(m->u.mos_req_obj_action.obj_id, "A 1");
	mos_msg_free(m);
	m = mostest_parse_str("<mos><roStoryDelete><roID>R</roID><storyID> "
	    "S1</storyID><storyID>S2\t</storyID></roStoryDelete></mos>");
	assert_string_equal(m->u.ro_story_delete.story_id.v[0], "S1");
	assert_string_equal(m->u.ro_story_delete.story_id.v[1], "S2");
	mos_msg_free(m);
}

/* ENPS's mosItemEditorProgID is kept: model, writer, JSON, back. */
static void
test_item_editor_prog_id(void **state)
{
	struct mos_buf	 b = { NULL, 0, 0 };
	struct mos_msg	*m, *back = NULL;
	struct mos_error err;
	const char	*needle;
	char		 ebuf[256], *json;

	(void)state;
	m = fixture("roCreate--enps-pretty.xml", MOS_STRICT);
	assert_int_equal(mos_write(m, MOS_ENC_UTF8, &b, ebuf, sizeof ebuf), 0);
	needle = "<mosItemEditorProgID>MAM.Editor.1</mosItemEditorProgID>"
	    "<mosExternalMetadata>";
	assert_non_null(memmem(b.data, b.len, needle, strlen(needle)));
	assert_int_equal(mos_parse(b.data, b.len, MOS_ENC_UTF8, MOS_STRICT,
	    &back, &err), MOS_OK);
	assert_true(mos_msg_equal(m, back));
	json = mos_msg_to_json(m);
	assert_non_null(strstr(json, "\"mosItemEditorProgID\":"
	    "\"MAM.Editor.1\""));
	free(json);
	mos_msg_free(back);
	mos_buf_free(&b);
	mos_msg_free(m);
}

/* The same frame in UTF-8, UTF-16BE and AUTO gives the same model. */
static void
test_encodings(void **state)
{
	char		 path[4096], *buf;
	struct mos_buf	 u16 = { NULL, 0, 0 };
	struct mos_msg	*a, *b, *c, *d;
	size_t		 len;

	(void)state;
	snprintf(path, sizeof path, "%s/mosObj.xml", mostest_fixtures());
	buf = mostest_slurp(path, &len);
	mostest_utf16(buf, len, &u16);
	assert_int_equal(mos_parse(buf, len, MOS_ENC_UTF8, MOS_STRICT, &a,
	    NULL), 0);
	assert_int_equal(mos_parse(u16.data, u16.len, MOS_ENC_UTF16BE,
	    MOS_STRICT, &b, NULL), 0);
	assert_int_equal(mos_parse(u16.data, u16.len, MOS_ENC_AUTO,
	    MOS_STRICT, &c, NULL), 0);
	assert_int_equal(mos_parse(buf, len, MOS_ENC_AUTO, MOS_STRICT, &d,
	    NULL), 0);
	assert_true(mos_msg_equal(a, b));
	assert_true(mos_msg_equal(a, c));
	assert_true(mos_msg_equal(a, d));
	mos_msg_free(d);
	b->u.mos_obj.obj_rev++;
	assert_false(mos_msg_equal(a, b));
	/* The wrong encoding fails cleanly. */
	assert_int_not_equal(mos_parse(buf, len, MOS_ENC_UTF16BE, MOS_LENIENT,
	    &d, NULL), 0);
	assert_null(d);
	assert_int_not_equal(mos_parse(u16.data, u16.len, MOS_ENC_UTF8,
	    MOS_LENIENT, &d, NULL), 0);
	mos_msg_free(a);
	mos_msg_free(b);
	mos_msg_free(c);
	mos_buf_free(&u16);
	free(buf);
}

/* The model API: types, arena functions, equality. */
static void
test_model_api(void **state)
{
	struct mos_msg	*m, *n;
	char		*s;
	int		 t;

	(void)state;
	for (t = 1; t < MOS_T__COUNT; t++) {
		assert_int_equal(mos_type_from_name(mos_type_name(t)), t);
		assert_true(mos_type_profile(t) >= 0 && mos_type_profile(t) <= 7);
	}
	assert_int_equal(mos_type_from_name("roItemStat"), MOS_T_UNKNOWN);
	assert_int_equal(mos_type_profile(MOS_T_UNKNOWN), -1);
	assert_int_equal(mos_type_profile(MOS_T_RO_STORY_SEND), 4);
	m = mos_msg_new(MOS_T_LIST_MACH_INFO);
	assert_int_equal(m->u.list_mach_info.profiles[5], -1);
	assert_null(mos_msg_strdup(m, NULL));
	s = mos_msg_strndup(m, "abcdef", 3);
	assert_string_equal(s, "abc");
	assert_string_equal(mos_msg_xml_text(m, "a & <b> \"c\""),
	    "a &amp; &lt;b&gt; \"c\"");
	assert_null(mos_msg_calloc(m, SIZE_MAX / 2, 4));
	s = mos_msg_calloc(m, 100000, 10);
	assert_non_null(s);
	assert_int_equal(s[999999], 0);
	n = mos_msg_new(MOS_T_LIST_MACH_INFO);
	assert_true(mos_msg_equal(m, n));
	n->u.list_mach_info.profiles[0] = 1;
	assert_false(mos_msg_equal(m, n));
	mos_msg_free(m);
	mos_msg_free(n);
	mos_msg_free(NULL);
	assert_string_equal(mos_err_name(MOS_E_DOCTYPE), "doctype");
}

/* The parser's size cap is adjustable. */
static void
test_size_cap(void **state)
{
	const char		*s = "<mos><mosID>M</mosID><ncsID>N</ncsID>"
				    "<messageID>9</messageID><reqMachInfo/></mos>";
	struct mos_msg		*m;
	struct mos_error	 err;

	(void)state;
	mos_parse_set_max(20);
	assert_int_equal(mos_parse(s, strlen(s), MOS_ENC_UTF8, MOS_LENIENT, &m,
	    &err), MOS_E_TOO_BIG);
	assert_null(m);
	assert_int_equal(err.env.message_id, 9);
	assert_string_equal(err.env.type_name, "reqMachInfo");
	mos_parse_set_max(0);
	assert_int_equal(mos_parse(s, strlen(s), MOS_ENC_UTF8, MOS_LENIENT, &m,
	    &err), MOS_OK);
	mos_msg_free(m);
}

#define NAMES_TOTAL	1000000	/* distinct element names, over all frames */
#define NAMES_FRAME	2000	/* names per frame */

/* A heartbeat whose body holds n unknown elements named by prefix and first. */
static void
names_frame(struct mos_buf *b, int id, const char *prefix, long first, int n)
{
	char	tmp[96];
	int	i;

	b->len = 0;
	snprintf(tmp, sizeof tmp, "<mos><mosID>M</mosID><ncsID>N</ncsID>"
	    "<messageID>%d</messageID><heartbeat>", id);
	mostest_buf_add(b, tmp);
	for (i = 0; i < n; i++) {
		snprintf(tmp, sizeof tmp, "<%s%ld/>", prefix, first + i);
		mostest_buf_add(b, tmp);
	}
	mostest_buf_add(b, "</heartbeat></mos>");
}

/* Parse a names_frame; 0 when it parsed into the expected heartbeat. */
static int
names_parse(const struct mos_buf *b, int id)
{
	struct mos_msg		*m;
	struct mos_error	 err;
	int			 ok;

	if (mos_parse(b->data, b->len, MOS_ENC_UTF8, MOS_LENIENT, &m, &err) !=
	    MOS_OK) {
		print_error("frame %d: %s\n", id, err.msg);
		return -1;
	}
	ok = m->type == MOS_T_HEARTBEAT && m->message_id == id;
	mos_msg_free(m);
	return ok ? 0 : -1;
}

/*
 * The parser context a thread keeps is replaced before its dictionary
 * fills: a million distinct names over many frames all parse, and memory
 * stays flat (a kept libxml2 dictionary fails new names after about a
 * million and holds some 20 MB).
 */
static void
test_many_names(void **state)
{
	struct mos_buf	 b = { NULL, 0, 0 };
	long		 rss0 = -1, rss;
	int		 i, bad = 0;

	(void)state;
	for (i = 0; i < NAMES_TOTAL / NAMES_FRAME; i++) {
		names_frame(&b, i + 1, "distinct_name_", (long)i * NAMES_FRAME,
		    NAMES_FRAME);
		if (names_parse(&b, i + 1) != 0 && bad++ < 5)
			print_error("frame %d of distinct names failed\n", i + 1);
		if (i == 20)
			rss0 = mostest_vm_kb("VmRSS");
	}
	rss = mostest_vm_kb("VmRSS");
	mos_buf_free(&b);
	assert_int_equal(bad, 0);
	if (mostest_rss_meaningful() && rss0 > 0 && rss > 0 &&
	    rss - rss0 > 8192)
		fail_msg("RSS grew by %ld kB over %d names", rss - rss0,
		    NAMES_TOTAL);
}

/* A good frame with a namespace declared on its root. */
#define GOOD_NS		"<mos xmlns:p=\"urn:x\"><mosID>M</mosID><ncsID>N" \
			"</ncsID><messageID>7</messageID><p:q/><heartbeat/>" \
			"</mos>"
/* The same prefix used without a declaration. */
#define BAD_NS		"<mos><mosID>M</mosID><ncsID>N</ncsID>" \
			"<messageID>7</messageID><p:q/><heartbeat/></mos>"

/* A good mosAck; fails the test unless it parses with a clean error. */
static void
parse_good_ack(int id)
{
	char			 s[256], want[32];
	struct mos_msg		*m;
	struct mos_error	 err;

	snprintf(s, sizeof s, "<mos><mosID>M</mosID><ncsID>N</ncsID>"
	    "<messageID>%d</messageID><mosAck><objID>O%d</objID><objRev>1"
	    "</objRev><status>ACK</status><statusDescription/></mosAck>"
	    "</mos>", id, id);
	assert_int_equal(mos_parse(s, strlen(s), MOS_ENC_UTF8, MOS_STRICT, &m,
	    &err), MOS_OK);
	assert_int_equal(err.code, MOS_OK);
	assert_int_equal(err.xml_code, 0);
	assert_string_equal(err.msg, "");
	assert_int_equal(m->type, MOS_T_MOS_ACK);
	assert_int_equal(m->message_id, id);
	snprintf(want, sizeof want, "O%d", id);
	assert_string_equal(m->u.mos_ack.obj_id, want);
	mos_msg_free(m);
}

/* Deeply nested unknown elements, past libxml2's depth limit. */
static void
deep_frame(struct mos_buf *b, int depth)
{
	int	i;

	b->len = 0;
	mostest_buf_add(b, "<mos><mosID>M</mosID><ncsID>N</ncsID>"
	    "<messageID>1</messageID><heartbeat>");
	for (i = 0; i < depth; i++)
		mostest_buf_add(b, "<a>");
	for (i = 0; i < depth; i++)
		mostest_buf_add(b, "</a>");
	mostest_buf_add(b, "</heartbeat></mos>");
}

/*
 * mos_thread_release(): the thread's kept context and buffers go, twice in
 * a row is fine, and the next parses (good, bad, good) make them again.
 */
static void
test_thread_release(void **state)
{
	(void)state;
	mos_thread_release();
	parse_good_ack(1);
	mos_thread_release();
	mos_thread_release();
	parse_fail("<mos><mosID>M</mosID><ncsID>N", MOS_LENIENT, MOS_E_XML);
	mos_thread_release();
	parse_good_ack(2);
	parse_good_ack(3);
	mos_thread_release();
}

/*
 * A failed frame leaves nothing behind on the thread: the next frame
 * parses with a clean error, and a namespace of a frame is gone in the
 * next one.
 */
static void
test_fail_then_good(void **state)
{
	static const struct {
		const char	*s;
		enum mos_err	 code;
	} bad[] = {
		{ "<!DOCTYPE mos [<!ENTITY e \"x\">]><mos><mosID>&e;</mosID>"
		    "</mos>", MOS_E_DOCTYPE },
		{ "<mos><mosID>M</mosID><ncsID>N", MOS_E_XML },
		{ "<mos xmlns:p=\"urn:x\"><p:a><mosID>M</mosID>", MOS_E_XML },
		{ "<mos><mosID>&undefined;</mosID></mos>", MOS_E_XML },
		{ "<mos><mosID>\xe9</mosID></mos>", MOS_E_XML },
		{ BAD_NS, MOS_E_XML },
	};
	struct mos_buf		 b = { NULL, 0, 0 };
	struct mos_msg		*m;
	struct mos_error	 err;
	size_t			 i;

	(void)state;
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		parse_good_ack((int)i + 1);
		parse_fail(bad[i].s, MOS_LENIENT, bad[i].code);
		parse_good_ack((int)i + 100);
	}
	deep_frame(&b, 400);
	assert_int_equal(mos_parse(b.data, b.len, MOS_ENC_UTF8, MOS_LENIENT,
	    &m, &err), MOS_E_XML);
	assert_null(m);
	parse_good_ack(200);
	deep_frame(&b, 100);
	assert_int_equal(mos_parse(b.data, b.len, MOS_ENC_UTF8, MOS_LENIENT,
	    &m, &err), MOS_OK);
	mos_msg_free(m);
	/* Over 64 KiB of UTF-8 (parsed in place, not copied), whole and cut. */
	names_frame(&b, 5, "big_frame_name_", 0, 4000);
	assert_true(b.len > 64 * 1024);
	assert_int_equal(names_parse(&b, 5), 0);
	assert_int_equal(mos_parse(b.data, b.len - 8, MOS_ENC_UTF8,
	    MOS_LENIENT, &m, &err), MOS_E_XML);
	assert_null(m);
	assert_int_equal(err.env.message_id, 5);
	parse_good_ack(201);
	mos_buf_free(&b);
	/* A kept context: a declaration does not outlive its frame. */
	m = mostest_parse_str(GOOD_NS);
	mos_msg_free(m);
	parse_fail(BAD_NS, MOS_LENIENT, MOS_E_XML);
	m = mostest_parse_str(GOOD_NS);
	mos_msg_free(m);
	parse_good_ack(300);
}

struct thread_job {
	const struct mos_buf	*frame;
	const struct mos_msg	*want;
	int			 id;
	int			 bad;
};

#define THREAD_FRAMES	1200	/* past one context's frame budget */

/*
 * Parse the same frame many times, with failed frames and frames of new
 * names of this thread's own between; count results that differ.
 */
static void *
thread_parse(void *arg)
{
	struct thread_job	*j = arg;
	struct mos_buf		 b = { NULL, 0, 0 };
	struct mos_msg		*m;
	char			 prefix[16];
	int			 i;

	snprintf(prefix, sizeof prefix, "t%d_", j->id);
	for (i = 0; i < THREAD_FRAMES; i++) {
		if (i % 7 == 3) {
			if (mos_parse(BAD_NS, strlen(BAD_NS), MOS_ENC_UTF8,
			    MOS_LENIENT, &m, NULL) != MOS_E_XML || m != NULL)
				j->bad++;
			continue;
		}
		if (i % 5 == 1) {
			names_frame(&b, i + 1, prefix, (long)i * 100, 100);
			if (names_parse(&b, i + 1) != 0)
				j->bad++;
			continue;
		}
		if (mos_parse(j->frame->data, j->frame->len, MOS_ENC_UTF16BE,
		    MOS_STRICT, &m, NULL) != MOS_OK || !mos_msg_equal(m, j->want))
			j->bad++;
		mos_msg_free(m);
	}
	mos_buf_free(&b);
	return NULL;
}

/*
 * Parsing is thread-safe: four threads at once, each with its own kept
 * parser context, get the same model and the same failures.
 */
static void
test_threads(void **state)
{
	struct thread_job	 jobs[4];
	pthread_t		 th[4];
	struct mos_msg		*want;
	struct mos_buf		 u16 = { NULL, 0, 0 };
	char			 path[4096], *buf;
	size_t			 len;
	int			 i, started;

	(void)state;
	snprintf(path, sizeof path, "%s/roStorySend.xml", mostest_fixtures());
	buf = mostest_slurp(path, &len);
	mostest_utf16(buf, len, &u16);
	want = mostest_parse_file(path, MOS_STRICT);
	for (started = 0; started < 4; started++) {
		jobs[started].frame = &u16;
		jobs[started].want = want;
		jobs[started].id = started;
		jobs[started].bad = 0;
		if (pthread_create(&th[started], NULL, thread_parse,
		    &jobs[started]) != 0)
			break;
	}
	for (i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	assert_int_equal(started, 4);
	for (i = 0; i < 4; i++)
		assert_int_equal(jobs[i].bad, 0);
	mos_msg_free(want);
	mos_buf_free(&u16);
	free(buf);
}

/* Run the mosxml_parse suite. */
int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mos_obj_fields),
		cmocka_unit_test(test_envelope_forms),
		cmocka_unit_test(test_envelope_strict),
		cmocka_unit_test(test_envelope_bad),
		cmocka_unit_test(test_malformed_envelope),
		cmocka_unit_test(test_quirks),
		cmocka_unit_test(test_profiles),
		cmocka_unit_test(test_unknown_message),
		cmocka_unit_test(test_ro_ack_group),
		cmocka_unit_test(test_element_action),
		cmocka_unit_test(test_deprecated),
		cmocka_unit_test(test_story_body),
		cmocka_unit_test(test_verbatim),
		cmocka_unit_test(test_unknown_elements),
		cmocka_unit_test(test_strict_values),
		cmocka_unit_test(test_encodings),
		cmocka_unit_test(test_model_api),
		cmocka_unit_test(test_size_cap),
		cmocka_unit_test(test_many_names),
		cmocka_unit_test(test_fail_then_good),
		cmocka_unit_test(test_thread_release),
		cmocka_unit_test(test_threads),
		cmocka_unit_test(test_lenient_clamp),
		cmocka_unit_test(test_id_whitespace),
		cmocka_unit_test(test_item_editor_prog_id),
	};

	mos_init();
	return cmocka_run_group_tests_name("mosxml_parse", tests, NULL, NULL);
}
