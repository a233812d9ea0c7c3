/*
 * The log: the rate limiter of repeated events, driven by a clock the test
 * moves (no sleeping), and the escaping that keeps every line printable
 * (log_q, whole lines, sbuf_escape).
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
#include "gateway/tests/gwproc.h"
#include "gateway/tests/gwunit.h"

/* Offer n lines of (event, key) at now; how many passed, N summed. */
static int
offer(struct log_limiter *l, const char *ev, const char *key, int64_t now,
    int n, uint64_t *suppressed)
{
	uint64_t	s;
	int		i, passed = 0;

	*suppressed = 0;
	for (i = 0; i < n; i++) {
		if (log_limiter_pass(l, ev, key, now, &s)) {
			passed++;
			*suppressed += s;
		}
	}
	return passed;
}

/* burst lines per interval; the first one after carries suppressed=N. */
static void
test_limiter_burst(void **state)
{
	struct log_limiter	*l = log_limiter_new(3, 1000);
	uint64_t		 s;

	(void)state;
	assert_int_equal(offer(l, "conn.accept", "10.0.0.1", 0, 10, &s), 3);
	assert_int_equal(s, 0);
	/* still the same interval */
	assert_int_equal(offer(l, "conn.accept", "10.0.0.1", 999, 5, &s), 0);
	/* the next interval: the first line carries the 12 dropped */
	assert_true(log_limiter_pass(l, "conn.accept", "10.0.0.1", 1000, &s));
	assert_int_equal(s, 12);
	assert_true(log_limiter_pass(l, "conn.accept", "10.0.0.1", 1001, &s));
	assert_int_equal(s, 0);
	/* another key and another event have their own counts */
	assert_int_equal(offer(l, "conn.accept", "10.0.0.2", 1001, 4, &s), 3);
	assert_int_equal(offer(l, "conn.close", "10.0.0.1", 1001, 4, &s), 3);
	/* a long quiet spell: nothing owed, full burst again */
	assert_int_equal(offer(l, "conn.accept", "10.0.0.2", 1500, 1, &s), 0);
	assert_int_equal(offer(l, "conn.accept", "10.0.0.2", 60000, 3, &s), 3);
	assert_int_equal(s, 2);		/* refused at 1001 and 1500 */
	/* a clock that steps back starts a new interval */
	assert_int_equal(offer(l, "conn.accept", "10.0.0.1", 500, 3, &s), 3);
	log_limiter_free(l);
}

/*
 * One line for each of n keys "prefix.i" at now, the last key first with
 * backwards; how many passed, their suppressed=N summed in *owed.
 */
static int
spread(struct log_limiter *l, const char *prefix, int n, int64_t now,
    bool backwards, uint64_t *owed)
{
	uint64_t	s;
	char		key[32];
	int		i, k, passed = 0;

	*owed = 0;
	for (i = 0; i < n; i++) {
		k = backwards ? n - 1 - i : i;
		snprintf(key, sizeof key, "%s.%d.%d", prefix, k / 256, k % 256);
		if (log_limiter_pass(l, "conn.accept", key, now, &s)) {
			passed++;
			*owed += s;
		}
	}
	return passed;
}

/* An event over all its keys gets 10 bursts per interval. */
static void
test_limiter_event_cap(void **state)
{
	struct log_limiter	*l = log_limiter_new(2, 1000);
	uint64_t		 owed;

	(void)state;
	assert_int_equal(spread(l, "192.0", 100, 0, false, &owed), 20);
	/* the keys refused say so once they pass again (last first) */
	assert_int_equal(spread(l, "192.0", 100, 1000, true, &owed), 20);
	assert_int_equal(owed, 20);
	/* other events are not held back by this one */
	assert_true(log_limiter_pass(l, "db.error", "full", 1000, &owed));
	log_limiter_free(l);
}

/* More keys than slots: they share one slot per event, still limited. */
static void
test_limiter_many_keys(void **state)
{
	struct log_limiter	*l = log_limiter_new(1, 1000);
	uint64_t		 owed;

	(void)state;
	assert_true(spread(l, "198.51", 5000, 0, false, &owed) <= 10);
	assert_true(spread(l, "198.51", 5000, 5000, true, &owed) <= 10);
	assert_true(owed > 0);
	/* no limit at all with burst 0 */
	log_limiter_set(l, 0, 1000);
	assert_int_equal(offer(l, "conn.accept", "x", 0, 1000, &owed), 1000);
	log_limiter_free(l);
}

/* Values: quoted when needed, control bytes and bad UTF-8 as \xNN. */
static void
test_log_q_escapes(void **state)
{
	(void)state;
	assert_string_equal(log_q("caf\xc3\xa9"), "caf\xc3\xa9");
	assert_string_equal(log_q("a\x01" "b"), "\"a\\x01b\"");
	assert_string_equal(log_q("\x1b[31mred"), "\"\\x1b[31mred\"");
	assert_string_equal(log_q("tab\there\r"), "\"tab\\there\\r\"");
	assert_string_equal(log_q("bad\xff\xfe"), "\"bad\\xff\\xfe\"");
	assert_string_equal(log_q("\xc3("), "\"\\xc3(\"");
	assert_string_equal(log_q("\xed\xa0\x80"), "\"\\xed\\xa0\\x80\"");
	assert_string_equal(log_q("c1\xc2\x85"), "\"c1\\xc2\\x85\"");
	assert_string_equal(log_q("del\x7f"), "\"del\\x7f\"");
	assert_string_equal(log_q("back\\slash"), "\"back\\\\slash\"");
}

/* Whole lines: whatever a value held, the file gets printable bytes. */
static void
test_log_lines_printable(void **state)
{
	struct gwunit	*u = *state;
	struct sbuf	 sb = { NULL, 0, 0 };
	char		 path[320], *cause = NULL, *text;
	size_t		 i;

	snprintf(path, sizeof path, "%s/log", u->dir);
	assert_int_equal(log_open(LL_DEBUG, path, &cause), 0);
	log_event(LL_INFO, "test.raw", "value=%s", "x\x01y\nz\xff\xc3\xa9");
	log_set_rate(2, 60000);
	for (i = 0; i < 5; i++)
		log_event_rl(LL_WARN, "test.flood", "k", "n=%zu", i);
	log_set_rate(LOG_RL_BURST, LOG_RL_INTERVAL_MS);
	log_close();
	text = gwproc_read_file(path);
	assert_non_null(strstr(text, "value=x\\x01y\\x0az\\xff\xc3\xa9\n"));
	assert_non_null(strstr(text, "event=test.flood n=1\n"));
	assert_null(strstr(text, "n=2"));
	for (i = 0; text[i] != '\0'; i++)
		assert_true(text[i] == '\n' || (unsigned char)text[i] >= 0x20);
	free(text);
	sbuf_escape(&sb, "a\0b\x80", 4);
	assert_string_equal(sb.s, "a\\x00b\\x80");
	sbuf_free(&sb);
	assert_string_equal(log_host_key("127.0.0.1:5555", path, sizeof path),
	    "127.0.0.1");
	assert_string_equal(log_host_key("[::1]:5555", path, sizeof path),
	    "::1");
	assert_string_equal(log_host_key("host", path, sizeof path), "host");
}

/* Run the gateway_log suite. */
int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_limiter_burst),
		cmocka_unit_test(test_limiter_event_cap),
		cmocka_unit_test(test_limiter_many_keys),
		cmocka_unit_test(test_log_q_escapes),
		cmocka_unit_test_setup_teardown(test_log_lines_printable,
		    gwunit_setup, gwunit_teardown),
	};

	return cmocka_run_group_tests_name("gateway_log", tests, NULL, NULL);
}
