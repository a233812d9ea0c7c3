/*
 * The messages the gateway builds (NACKs per port, heartbeat, listMachInfo)
 * written and parsed back, the 128-character bound of NACK texts, and the
 * quoting of log values.
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
#include "gateway/tests/gwunit.h"

/* Write m (UTF-16BE), parse it back (strictly if it has a messageID). */
static struct mos_msg *
round_trip(struct mos_msg *m)
{
	struct mos_buf		 buf = { NULL, 0, 0 };
	struct mos_error	 perr;
	struct mos_msg		*back = NULL;
	char			 err[256];

	if (mos_write(m, MOS_ENC_UTF16BE, &buf, err, sizeof err) != 0)
		fail_msg("mos_write: %s", err);
	if (mos_parse(buf.data, buf.len, MOS_ENC_UTF16BE, m->has_message_id ?
	    MOS_STRICT : MOS_LENIENT, &back, &perr) != MOS_OK)
		fail_msg("mos_parse: %s", perr.msg);
	mos_buf_free(&buf);
	mos_msg_free(m);
	return back;
}

/* Characters (not bytes) of a UTF-8 string. */
static size_t
chars(const char *s)
{
	size_t	n = 0;

	for (; *s != '\0'; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

/* At most 128 characters, cut at a character boundary, marked with "...". */
static void
test_bound(void **state)
{
	char	big[600], out[600];
	int	i;

	(void)state;
	reply_bound(out, sizeof out, "short\ttext");
	assert_string_equal(out, "short text");
	memset(big, 'x', 300);
	big[300] = '\0';
	reply_bound(out, sizeof out, big);
	assert_int_equal(chars(out), 128);
	assert_string_equal(out + 125, "...");
	for (i = 0; i < 150; i++)
		memcpy(big + 2 * i, "\xc3\xa9", 2);	/* e acute */
	big[300] = '\0';
	reply_bound(out, sizeof out, big);
	assert_int_equal(chars(out), 128);
	assert_int_equal(strlen(out), 125 * 2 + 3);
	memset(big, 'y', 128);
	big[128] = '\0';
	reply_bound(out, sizeof out, big);
	assert_string_equal(out, big);		/* exactly 128: kept whole */
	reply_bound(out, sizeof out, NULL);
	assert_string_equal(out, "");
}

/*
 * A NACK to a frame that did not parse echoes what could be scanned from
 * it: bytes that are not UTF-8 and control characters, in the ids or the
 * text, must not stop it from being written.
 */
static void
test_nack_broken_text(void **state)
{
	struct mos_msg	*m;

	(void)state;
	m = round_trip(reply_nack(GW_PORT_LOWER, "gw", "EN\x01PS\xff", 7,
	    "Bad message: \xc3( \xed\xa0\x80 \xef\xbf\xbe \x02 <\xf4\x90\x80\x80>"));
	assert_string_equal(m->ncs_id, "EN\xef\xbf\xbdPS\xef\xbf\xbd");
	assert_string_equal(m->u.mos_ack.status_description, "Bad message: "
	    "\xef\xbf\xbd( \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd "
	    "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd   "
	    "<\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd>");
	mos_msg_free(m);
	m = round_trip(reply_nack(GW_PORT_UPPER, "g\tw", "\x80", 8, "\xff"));
	assert_string_equal(m->mos_id, "g\tw");
	assert_string_equal(m->ncs_id, "\xef\xbf\xbd");
	assert_string_equal(m->u.ro_ack.ro_status, "\xef\xbf\xbd");
	mos_msg_free(m);
}

/* lower/query: mosAck NACK; upper: roAck with the text as roStatus. */
static void
test_nack_per_port(void **state)
{
	struct mos_msg	*m;
	char		 big[400];

	(void)state;
	m = round_trip(reply_nack(GW_PORT_LOWER, "gw", "ENPS", 42,
	    "Unsupported message: fooBar"));
	assert_int_equal(m->type, MOS_T_MOS_ACK);
	assert_string_equal(m->mos_id, "gw");
	assert_string_equal(m->ncs_id, "ENPS");
	assert_int_equal(m->message_id, 42);
	assert_string_equal(m->u.mos_ack.obj_id, "0");
	assert_string_equal(m->u.mos_ack.status, "NACK");
	assert_string_equal(m->u.mos_ack.status_description,
	    "Unsupported message: fooBar");
	mos_msg_free(m);

	m = round_trip(reply_nack(GW_PORT_QUERY, "gw", "ENPS",
	    43, "x < y & z"));
	assert_int_equal(m->type, MOS_T_MOS_ACK);
	assert_string_equal(m->u.mos_ack.status_description, "x < y & z");
	mos_msg_free(m);

	memset(big, 'r', 399);
	big[399] = '\0';
	m = round_trip(reply_nack(GW_PORT_UPPER, "gw", "ENPS", 44, big));
	assert_int_equal(m->type, MOS_T_RO_ACK);
	assert_int_equal(m->message_id, 44);
	assert_string_equal(m->u.ro_ack.ro_id, "");
	assert_int_equal(chars(m->u.ro_ack.ro_status), 128);
	mos_msg_free(m);

	m = round_trip(reply_mos_ack("gw", "ENPS", 45, "OBJ-7", false,
	    "Unknown object: OBJ-7"));
	assert_string_equal(m->u.mos_ack.obj_id, "OBJ-7");
	mos_msg_free(m);
	m = round_trip(reply_mos_ack("gw", "ENPS", 0, NULL, true, ""));
	assert_false(m->has_message_id);
	assert_string_equal(m->u.mos_ack.status, "ACK");
	mos_msg_free(m);
}

/* A heartbeat answer keeps the messageID and carries the time. */
static void
test_heartbeat(void **state)
{
	struct mos_msg	*m;

	(void)state;
	m = round_trip(reply_heartbeat("gw", "ENPS", 7));
	assert_int_equal(m->type, MOS_T_HEARTBEAT);
	assert_int_equal(m->message_id, 7);
	assert_true(m->u.heartbeat.time.flags & MOS_TIME_SET);
	assert_true(llabs(mos_time_utc_ms(&m->u.heartbeat.time) -
	    util_now_ms()) <
	    60000);
	mos_msg_free(m);
}

/*
 * listMachInfo tells the truth: profiles 0 to 4, deviceType MOS; with
 * no configuration every field is filled, ID and SN being the mosID.
 */
static void
test_list_mach_info(void **state)
{
	struct gw_config		*cfg;
	struct mos_msg			*m;
	const struct mos_list_mach_info	*l;
	int				 i;

	(void)state;
	cfg = gwunit_config("[gateway]\nmos_id = gw.mos\nmanufacturer = ACME\n"
	    "model = MAM\nsn = 123\n[ncs.a]\nncs_id = A\nhost = h\n");
	assert_non_null(cfg);
	m = round_trip(reply_list_mach_info(cfg, "A", 3, 1795946400000LL));
	assert_int_equal(m->type, MOS_T_LIST_MACH_INFO);
	assert_string_equal(m->mos_id, "gw.mos");
	l = &m->u.list_mach_info;
	assert_string_equal(l->manufacturer, "ACME");
	assert_string_equal(l->model, "MAM");
	assert_string_equal(l->sn, "123");
	assert_string_equal(l->sw_rev, MOSGW_VERSION);
	assert_string_equal(l->mos_rev, MOSGW_MOS_REV);
	assert_string_equal(l->device_type, "MOS");
	assert_int_equal(mos_time_utc_ms(&l->op_time), 1795946400000LL);
	assert_string_equal(l->id, "gw.mos");
	assert_string_equal(l->hw_rev, MOSGW_HW_REV);
	assert_string_equal(l->dom, MOSGW_DOM);
	for (i = 0; i < 8; i++)
		assert_int_equal(l->profiles[i], i <= 4 ? 1 : 0);
	mos_msg_free(m);
	config_free(cfg);

	cfg = gwunit_config("[gateway]\nmos_id = gw.mos\nid = gw-7\n"
	    "[ncs.a]\nncs_id = A\nhost = h\n");
	assert_non_null(cfg);
	m = round_trip(reply_list_mach_info(cfg, "A", 3, 1795946400000LL));
	l = &m->u.list_mach_info;
	assert_string_equal(l->id, "gw-7");
	assert_string_equal(l->sn, "gw.mos");
	mos_msg_free(m);
	config_free(cfg);
}

/* Answers are never NACKed; requests and unknown types are. */
static void
test_answer_types(void **state)
{
	(void)state;
	assert_true(reply_is_answer_type("mosAck"));
	assert_true(reply_is_answer_type("roAck"));
	assert_true(reply_is_answer_type("listMachInfo"));
	assert_false(reply_is_answer_type("heartbeat"));
	assert_false(reply_is_answer_type("mosReqObj"));
	assert_false(reply_is_answer_type("fooBar"));
	assert_false(reply_is_answer_type(""));
}

/* key=value values are quoted and escaped only when they need it. */
static void
test_log_quote(void **state)
{
	char	big[1000];

	(void)state;
	assert_string_equal(log_q("plain"), "plain");
	assert_string_equal(log_q("two words"), "\"two words\"");
	assert_string_equal(log_q("a=\"b\""), "\"a=\\\"b\\\"\"");
	assert_string_equal(log_q(""), "\"\"");
	assert_string_equal(log_q(NULL), "-");
	assert_string_equal(log_q("line\nbreak"), "\"line\\nbreak\"");
	memset(big, 'z', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	assert_true(strlen(log_q(big)) < 512);
	assert_non_null(strstr(log_q(big), "...\""));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bound),
		cmocka_unit_test(test_nack_per_port),
		cmocka_unit_test(test_nack_broken_text),
		cmocka_unit_test(test_heartbeat),
		cmocka_unit_test(test_list_mach_info),
		cmocka_unit_test(test_answer_types),
		cmocka_unit_test(test_log_quote),
	};

	mos_init();
	return cmocka_run_group_tests_name("gateway_reply", tests, NULL, NULL);
}
