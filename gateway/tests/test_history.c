/*
 * History: frames recorded in memory, stored by the flush transaction (or
 * kept when it fails), listed with filters, exported as capture lines, and
 * pruned by age.
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

#define HB_UTF8 "<mos><mosID>gw</mosID><ncsID>A</ncsID>" \
	"<messageID>5</messageID>" \
	"<heartbeat><time>2026-11-29T10:00:00Z</time></heartbeat></mos>"

/* Store what is pending in one transaction, as gw_flush does. */
static void
flush(struct gwunit *u, struct history *h)
{
	assert_int_equal(queue_tx_begin(u->db->q), QUEUE_OK);
	assert_int_equal(history_flush(h), QUEUE_OK);
	assert_int_equal(queue_tx_commit(u->db->q), QUEUE_OK);
	history_committed(h);
}

/* UTF-16BE frames are stored as UTF-8 with the metadata given. */
static void
test_add_flush_list(void **state)
{
	struct gwunit		*u = *state;
	struct history		*h = history_new(u->db, true);
	struct history_filter	 f;
	struct history_rec	*v;
	struct sbuf		 wire = { NULL, 0, 0 };
	size_t			 n;

	util_utf8_to_utf16be(&wire, HB_UTF8, strlen(HB_UTF8));
	history_add(h, "a", GW_PORT_LOWER, HISTORY_IN, 7, 5, "heartbeat", "ok",
	    wire.s, wire.len, MOS_ENC_UTF16BE);
	u->now_ms += 10;
	history_add(h, "a", GW_PORT_LOWER, HISTORY_OUT, 7,
	    5, "heartbeat", "reply", HB_UTF8, strlen(HB_UTF8), MOS_ENC_UTF8);
	u->now_ms += 10;
	history_add(h, "b", GW_PORT_UPPER, HISTORY_IN, 9, 0,
	    NULL, "parse-error", "<mos>", 5, MOS_ENC_UTF8);
	assert_int_equal(history_pending(h), 3);
	assert_int_equal(gwunit_int(u, "SELECT count(*) FROM history"), 0);
	flush(u, h);
	assert_int_equal(history_pending(h), 0);
	assert_int_equal(gwunit_int(u, "SELECT count(*) FROM history"), 3);

	memset(&f, 0, sizeof f);
	assert_int_equal(history_list(u->db, &f, &v, &n), QUEUE_OK);
	assert_int_equal(n, 3);
	assert_string_equal(v[0].xml, HB_UTF8);
	assert_string_equal(v[0].ncs, "a");
	assert_int_equal(v[0].port, GW_PORT_LOWER);
	assert_int_equal(v[0].dir, HISTORY_IN);
	assert_int_equal(v[0].conn, 7);
	assert_int_equal(v[0].message_id, 5);
	assert_int_equal(v[0].t_ms, u->now_ms - 20);
	assert_string_equal(v[1].outcome, "reply");
	assert_int_equal(v[1].dir, HISTORY_OUT);
	assert_string_equal(v[2].type, "unknown");
	assert_int_equal(v[2].message_id, 0);
	history_recs_free(v, n);

	f.ncs = "a";
	f.newest_first = true;
	f.limit = 1;
	assert_int_equal(history_list(u->db, &f, &v, &n), QUEUE_OK);
	assert_int_equal(n, 1);
	assert_int_equal(v[0].dir, HISTORY_OUT);
	f.after_id = v[0].id;
	history_recs_free(v, n);
	assert_int_equal(history_list(u->db, &f, &v, &n), QUEUE_OK);
	assert_int_equal(n, 1);
	assert_int_equal(v[0].dir, HISTORY_IN);
	history_recs_free(v, n);

	memset(&f, 0, sizeof f);
	f.since_ms = u->now_ms - 10;
	f.until_ms = u->now_ms;
	assert_int_equal(history_list(u->db, &f, &v, &n), QUEUE_OK);
	assert_int_equal(n, 1);
	assert_string_equal(v[0].outcome, "reply");
	history_recs_free(v, n);
	sbuf_free(&wire);
	history_free(h);
}

/* A failed transaction keeps the rows; recording off stores nothing. */
static void
test_unflush_and_disabled(void **state)
{
	struct gwunit	*u = *state;
	struct history	*h = history_new(u->db, true);

	history_add(h, "a", GW_PORT_LOWER, HISTORY_IN, 1, 1, "heartbeat", "ok",
	    HB_UTF8, strlen(HB_UTF8), MOS_ENC_UTF8);
	assert_int_equal(queue_tx_begin(u->db->q), QUEUE_OK);
	assert_int_equal(history_flush(h), QUEUE_OK);
	queue_tx_rollback(u->db->q);
	history_unflush(h);
	assert_int_equal(history_pending(h), 1);
	assert_int_equal(gwunit_int(u, "SELECT count(*) FROM history"), 0);
	flush(u, h);
	assert_int_equal(gwunit_int(u, "SELECT count(*) FROM history"), 1);

	history_set_enabled(h, false);
	history_add(h, "a", GW_PORT_LOWER, HISTORY_IN, 1, 2, "heartbeat", "ok",
	    HB_UTF8, strlen(HB_UTF8), MOS_ENC_UTF8);
	assert_int_equal(history_pending(h), 0);
	history_free(h);
}

/* Capture lines: the documented keys, JSON escaping, non-ASCII kept. */
static void
test_capture_format(void **state)
{
	struct gwunit	*u = *state;
	struct history	*h = history_new(u->db, true);
	const char	*xml = "<mos><mosID>gw</mosID><ncsID>A</ncsID>"
			    "<messageID>9</messageID><mosAck><objID>\"q\"\\"
			    "</objID><status>NACK</status><statusDescription>"
			    "Fl\xc3\xa4" "che "
			    "\xf0\x9f\x8e\xac\nline</statusDescription>"
			    "</mosAck></mos>";
	struct sbuf	 wire = { NULL, 0, 0 };
	char		 path[400], line[2048];
	size_t		 n = 0;
	FILE		*f;
	struct history_filter filter;

	util_utf8_to_utf16be(&wire, xml, strlen(xml));
	history_add(h, "a", GW_PORT_QUERY, HISTORY_OUT, 12, 9, "mosAck", "nack",
	    wire.s, wire.len, MOS_ENC_UTF16BE);
	history_add(h, "b", GW_PORT_UPPER, HISTORY_IN, 13, 0, "roCreate", "ok",
	    "<mos/>", 6, MOS_ENC_UTF8);
	flush(u, h);
	snprintf(path, sizeof path, "%s/capture.jsonl", u->dir);
	assert_non_null(f = fopen(path, "w"));
	memset(&filter, 0, sizeof filter);
	assert_int_equal(history_export(u->db, &filter, f, &n), QUEUE_OK);
	fclose(f);
	assert_int_equal(n, 2);
	assert_non_null(f = fopen(path, "r"));
	assert_non_null(fgets(line, sizeof line, f));
	assert_string_equal(line, "{\"t\":\"2026-11-29T10:00:00.000Z\","
	    "\"ncs\":\"a\","
	    "\"port\":\"query\",\"dir\":\"out\",\"conn\":12,\"messageID\":9,"
	    "\"type\":\"mosAck\",\"xml\":\"<mos><mosID>gw</mosID>"
	    "<ncsID>A</ncsID>"
	    "<messageID>9</messageID><mosAck><objID>\\\"q\\\"\\\\</objID>"
	    "<status>NACK</status><statusDescription>Fl\xc3\xa4" "che "
	    "\xf0\x9f\x8e\xac\\nline</statusDescription></mosAck></mos>\"}\n");
	assert_non_null(fgets(line, sizeof line, f));
	assert_non_null(strstr(line, "\"port\":\"upper\",\"dir\":\"in\","
	    "\"conn\":13,"
	    "\"type\":\"roCreate\""));
	assert_null(strstr(line, "messageID"));
	assert_null(fgets(line, sizeof line, f));
	fclose(f);
	sbuf_free(&wire);
	history_free(h);
}

/* Rows older than the retention go, in batches; newer ones stay. */
static void
test_prune(void **state)
{
	struct gwunit	*u = *state;
	struct history	*h = history_new(u->db, true);
	size_t		 n = 0;
	int		 i;

	for (i = 0; i < 2500; i++)
		history_add(h, "a", GW_PORT_LOWER, HISTORY_IN, 1, i + 1,
		    "heartbeat", "ok", "<mos/>", 6, MOS_ENC_UTF8);
	flush(u, h);
	u->now_ms += 3600 * 1000;
	history_add(h, "a", GW_PORT_LOWER, HISTORY_IN, 1, 1, "heartbeat", "ok",
	    "<mos/>", 6, MOS_ENC_UTF8);
	flush(u, h);
	u->now_ms += 1000;
	assert_int_equal(history_prune(u->db, 60 * 1000, 0, &n), QUEUE_OK);
	assert_int_equal(n, 2500);
	assert_int_equal(gwunit_int(u, "SELECT count(*) FROM history"), 1);
	assert_int_equal(history_prune(u->db, 60 * 1000, 0, &n), QUEUE_OK);
	assert_int_equal(n, 0);
	history_free(h);
}

/* Add n rows of 1,060 bytes each as history counts them. */
static void
add_kilo_rows(struct history *h, int n)
{
	char	xml[1001];
	int	i;

	memset(xml, 'x', 1000);
	xml[1000] = '\0';
	for (i = 0; i < n; i++)	/* 1000 + "ok" + "heartbeat" + "a" + 48 */
		history_add(h, "a", GW_PORT_LOWER, HISTORY_IN, 1, i + 1,
		    "heartbeat", "ok", xml, 1000, MOS_ENC_UTF8);
}

/* A fresh count of the table, as history_bytes makes it. */
static int64_t
recount(struct gwunit *u)
{
	u->db->hist_counted = false;
	return history_bytes(u->db);
}

/*
 * The size is counted once, then kept as rows are stored and pruned; over
 * history_max_bytes the oldest rows go until 90 % of it is left.
 */
static void
test_prune_size(void **state)
{
	struct gwunit		*u = *state;
	struct history		*h = history_new(u->db, true);
	struct history_rec	*v;
	int64_t			 sum = 0;
	size_t			 n, i;

	add_kilo_rows(h, 200);
	flush(u, h);
	assert_int_equal(history_bytes(u->db), 200 * 1060);

	add_kilo_rows(h, 100);
	history_take(h, &v, &n);
	assert_int_equal(queue_tx_begin(u->db->q), QUEUE_OK);
	assert_int_equal(history_store(u->db, v, n), QUEUE_OK);
	assert_int_equal(queue_tx_commit(u->db->q), QUEUE_OK);
	for (i = 0; i < n; i++)
		sum += history_rec_bytes(&v[i]);
	history_recs_free(v, n);
	assert_int_equal(sum, 100 * 1060);
	history_account(u->db, sum);
	assert_int_equal(history_bytes(u->db), 300 * 1060);
	assert_int_equal(recount(u), 300 * 1060);

	assert_int_equal(history_prune_size(u->db, 400000, 0, &n), QUEUE_OK);
	assert_int_equal(n, 0);
	assert_int_equal(history_prune_size(u->db, 200000, 0, &n), QUEUE_OK);
	assert_int_equal(n, 131);	/* 318,000 down to <= 180,000 */
	assert_int_equal(gwunit_int(u, "SELECT count(*) FROM history"), 169);
	assert_int_equal(gwunit_int(u, "SELECT min(id) FROM history"), 132);
	assert_int_equal(history_bytes(u->db), 169 * 1060);
	assert_int_equal(recount(u), 169 * 1060);

	u->now_ms += 3600 * 1000;
	add_kilo_rows(h, 1);
	flush(u, h);
	history_account(u->db, 1060);
	assert_int_equal(history_prune(u->db, 60 * 1000, 0, &n), QUEUE_OK);
	assert_int_equal(n, 169);
	assert_int_equal(history_bytes(u->db), 1060);
	assert_int_equal(recount(u), 1060);
	history_free(h);
}

/* ISO times for --since/--until, and UTF-16 conversion both ways. */
static void
test_time_and_utf16(void **state)
{
	struct sbuf	a = { NULL, 0, 0 }, b = { NULL, 0, 0 };
	const char	*s = "A\xc3\xa9\xe2\x82\xac\xf0\x9f\x8e\xac";
	int64_t		 ms;
	char		 buf[32];

	(void)state;
	assert_int_equal(util_parse_iso_ms("2026-11-29T10:00:00Z", &ms), 0);
	assert_int_equal(ms, 1795946400000LL);
	assert_int_equal(util_parse_iso_ms("2026-11-29T10:00:00.5", &ms), 0);
	assert_int_equal(ms, 1795946400500LL);
	assert_int_equal(util_parse_iso_ms("2026-11-29", &ms), 0);
	assert_int_equal(util_parse_iso_ms("1795946400000", &ms), 0);
	assert_int_equal(ms, 1795946400000LL);
	assert_int_equal(util_parse_iso_ms("yesterday", &ms), -1);
	assert_int_equal(util_parse_iso_ms("2026-13-01", &ms), -1);
	util_iso_ms(1795946400123LL, buf, sizeof buf);
	assert_string_equal(buf, "2026-11-29T10:00:00.123Z");

	util_utf8_to_utf16be(&a, s, strlen(s));
	assert_int_equal(a.len, 2 * 5);	/* A é € and a surrogate pair */
	util_utf16be_to_utf8(&b, (const uint8_t *)a.s, a.len);
	assert_string_equal(b.s, s);
	sbuf_free(&b);
	util_utf16be_to_utf8(&b, (const uint8_t *)"\xd8\x00\x00\x41\x00", 5);
	assert_string_equal(b.s, "\xef\xbf\xbd" "A" "\xef\xbf\xbd");
	sbuf_free(&a);
	sbuf_free(&b);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_add_flush_list, gwunit_setup,
		    gwunit_teardown),
		cmocka_unit_test_setup_teardown(test_unflush_and_disabled,
		    gwunit_setup, gwunit_teardown),
		cmocka_unit_test_setup_teardown(test_capture_format, gwunit_setup,
		    gwunit_teardown),
		cmocka_unit_test_setup_teardown(test_prune, gwunit_setup, gwunit_teardown),
		cmocka_unit_test_setup_teardown(test_prune_size, gwunit_setup,
		    gwunit_teardown),
		cmocka_unit_test(test_time_and_utf16),
	};

	return cmocka_run_group_tests_name("gateway_history", tests, NULL,
	    NULL);
}
