/*
 * MOS times, durations and exact decimals: parsing, formatting and their
 * edge cases, strict against lenient.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "mosxml/mosxml.h"

/* Parse s in mode and format it back in the spec form; compare with want. */
static void
check_time_rt(const char *s, enum mos_mode mode, const char *want)
{
	struct mos_time	t;
	char		buf[64];

	if (mos_time_parse(s, mode, &t) != 0)
		fail_msg("\"%s\" did not parse", s);
	mos_time_format(&t, buf, sizeof buf);
	assert_string_equal(buf, want);
}

/* The four spec combinations of fraction and zone, and offsets. */
static void
test_time_spec_forms(void **state)
{
	(void)state;
	check_time_rt("2009-04-11T14:22:07,125Z", MOS_STRICT,
	    "2009-04-11T14:22:07,125Z");
	check_time_rt("2009-04-11T14:22:07,125-05:00", MOS_STRICT,
	    "2009-04-11T14:22:07,125-05:00");
	check_time_rt("2009-04-11T14:22:07", MOS_STRICT, "2009-04-11T14:22:07");
	check_time_rt("2009-04-11T14:22:07Z", MOS_STRICT, "2009-04-11T14:22:07Z");
	check_time_rt("2009-04-11T14:22:07.125+01:00", MOS_STRICT,
	    "2009-04-11T14:22:07,125+01:00");
	check_time_rt("2009-04-11T14:22:07,000+00:00", MOS_STRICT,
	    "2009-04-11T14:22:07,000Z");
}

/* Values of the parsed fields: wall clock as UTC, offset kept apart. */
static void
test_time_fields(void **state)
{
	struct mos_time	t;

	(void)state;
	assert_int_equal(mos_time_parse("1970-01-01T00:00:00Z", MOS_STRICT, &t),
	    0);
	assert_int_equal(t.sec, 0);
	assert_int_equal(t.flags, MOS_TIME_SET | MOS_TIME_ZONE);
	assert_int_equal(mos_time_parse("2024-02-29T23:59:59,999-05:30",
	    MOS_STRICT, &t), 0);
	assert_int_equal(t.sec, 1709251199);
	assert_int_equal(t.ms, 999);
	assert_int_equal(t.tz_min, -330);
	assert_int_equal(t.flags, MOS_TIME_SET | MOS_TIME_FRAC | MOS_TIME_ZONE);
	/* 23:59:59.999 at -05:30 is 05:29:59.999 the next day in UTC. */
	assert_int_equal(mos_time_utc_ms(&t), (1709251199LL + 330 * 60) * 1000 +
	    999);
	assert_int_equal(mos_time_parse("1969-12-31T23:59:59", MOS_STRICT, &t),
	    0);
	assert_int_equal(t.sec, -1);
	assert_int_equal(mos_time_utc_ms(&t), -1000);
}

/* Lenient extras: white space, a space for T, 1-9 digits, +hhmm, +hh. */
static void
test_time_lenient(void **state)
{
	struct mos_time	t;

	(void)state;
	check_time_rt("  2020-02-18T10:33:45\r\n", MOS_LENIENT,
	    "2020-02-18T10:33:45");
	check_time_rt("2020-02-18 10:33:45.5", MOS_LENIENT,
	    "2020-02-18T10:33:45,500");
	check_time_rt("2020-02-18T10:33:45,12", MOS_LENIENT,
	    "2020-02-18T10:33:45,120");
	check_time_rt("2020-02-18T10:33:45.123456789z", MOS_LENIENT,
	    "2020-02-18T10:33:45,123Z");
	check_time_rt("2020-02-18T10:33:45+0130", MOS_LENIENT,
	    "2020-02-18T10:33:45+01:30");
	check_time_rt("2020-02-18T10:33:45-08", MOS_LENIENT,
	    "2020-02-18T10:33:45-08:00");
	/* An empty element is "not set" in lenient mode only. */
	assert_int_equal(mos_time_parse("", MOS_LENIENT, &t), 0);
	assert_int_equal(t.flags, 0);
	assert_int_equal(mos_time_parse("  ", MOS_LENIENT, &t), 0);
	assert_int_equal(t.flags, 0);
	assert_int_equal(mos_time_parse("", MOS_STRICT, &t), -1);
	/* Strict refuses each lenient extra. */
	assert_int_equal(mos_time_parse(" 2020-02-18T10:33:45", MOS_STRICT, &t),
	    -1);
	assert_int_equal(mos_time_parse("2020-02-18 10:33:45", MOS_STRICT, &t),
	    -1);
	assert_int_equal(mos_time_parse("2020-02-18T10:33:45,12", MOS_STRICT,
	    &t), -1);
	assert_int_equal(mos_time_parse("2020-02-18T10:33:45+0130", MOS_STRICT,
	    &t), -1);
	assert_int_equal(mos_time_parse("2020-02-18T10:33:45z", MOS_STRICT, &t),
	    -1);
}

/* What no mode accepts. */
static void
test_time_bad(void **state)
{
	static const char *const bad[] = {
		"2020-13-01T00:00:00", "2020-00-10T00:00:00",
		"2021-02-29T00:00:00", "2020-04-31T00:00:00",
		"2020-01-01T24:00:00", "2020-01-01T23:60:00",
		"2020-01-01T23:59:60", "2020-01-01", "20-01-01T00:00:00",
		"2020-01-01T00:00:00,", "2020-01-01T00:00:00,1234567890",
		"2020-01-01T00:00:00+24:00", "2020-01-01T00:00:00+01:60",
		"2020-01-01T00:00:00Zjunk", "2020-01-01T00:00:00 +01:00",
		"4/15/2026 2:21:26 PM", "2020-01-01T0:00:00", "x",
	};
	struct mos_time	t;
	size_t		i;

	(void)state;
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		if (mos_time_parse(bad[i], MOS_LENIENT, &t) != -1)
			fail_msg("lenient accepted \"%s\"", bad[i]);
		if (mos_time_parse(bad[i], MOS_STRICT, &t) != -1)
			fail_msg("strict accepted \"%s\"", bad[i]);
		assert_int_equal(t.flags, 0);
	}
}

/* The ISO form for JSON keeps the offset and uses a period. */
static void
test_time_iso(void **state)
{
	struct mos_time	t, u;
	char		buf[64];

	(void)state;
	assert_int_equal(mos_time_parse("2009-04-11T14:22:07,125-05:00",
	    MOS_STRICT, &t), 0);
	mos_time_iso(&t, buf, sizeof buf);
	assert_string_equal(buf, "2009-04-11T14:22:07.125-05:00");
	assert_int_equal(mos_time_parse_iso(buf, &u), 0);
	assert_memory_equal(&t, &u, sizeof t);
	memset(&t, 0, sizeof t);
	assert_int_equal(mos_time_iso(&t, buf, sizeof buf), 0);
	assert_string_equal(buf, "");
	assert_int_equal(mos_time_format(&t, buf, sizeof buf), 0);
}

/* mos_time_now: UTC with a fraction and Z, close to time(). */
static void
test_time_now(void **state)
{
	struct mos_time	t, u;
	char		buf[64];

	(void)state;
	mos_time_now(&t);
	assert_int_equal(t.flags, MOS_TIME_SET | MOS_TIME_FRAC | MOS_TIME_ZONE);
	assert_int_equal(t.tz_min, 0);
	assert_true(t.ms >= 0 && t.ms <= 999);
	assert_true(t.sec > 1700000000);
	mos_time_format(&t, buf, sizeof buf);
	assert_int_equal(strlen(buf), strlen("2024-01-01T00:00:00,000Z"));
	assert_int_equal(mos_time_parse(buf, MOS_STRICT, &u), 0);
	assert_int_equal(t.sec, u.sec);
	assert_int_equal(t.ms, u.ms);
	assert_int_equal(t.tz_min, u.tz_min);
	assert_int_equal(t.flags, u.flags);
}

/* Durations hh:mm:ss. */
static void
test_dur(void **state)
{
	struct mos_dur	d;
	char		buf[32];

	(void)state;
	assert_int_equal(mos_dur_parse("00:58:25", MOS_STRICT, &d), 0);
	assert_true(d.set);
	assert_int_equal(d.sec, 58 * 60 + 25);
	mos_dur_format(&d, buf, sizeof buf);
	assert_string_equal(buf, "00:58:25");
	assert_int_equal(mos_dur_parse("125:00:01", MOS_STRICT, &d), 0);
	assert_int_equal(d.sec, 125 * 3600 + 1);
	mos_dur_format(&d, buf, sizeof buf);
	assert_string_equal(buf, "125:00:01");
	/* Unpadded hours (sofie-mos-connection) are fine either way. */
	assert_int_equal(mos_dur_parse("1:02:03", MOS_STRICT, &d), 0);
	mos_dur_format(&d, buf, sizeof buf);
	assert_string_equal(buf, "01:02:03");
	/* Lenient extras: mm:ss, plain seconds, white space, empty. */
	assert_int_equal(mos_dur_parse("02:03", MOS_LENIENT, &d), 0);
	assert_int_equal(d.sec, 123);
	assert_int_equal(mos_dur_parse(" 3600 ", MOS_LENIENT, &d), 0);
	assert_int_equal(d.sec, 3600);
	assert_int_equal(mos_dur_parse("", MOS_LENIENT, &d), 0);
	assert_false(d.set);
	assert_int_equal(mos_dur_parse("02:03", MOS_STRICT, &d), -1);
	assert_int_equal(mos_dur_parse("3600", MOS_STRICT, &d), -1);
	assert_int_equal(mos_dur_parse("", MOS_STRICT, &d), -1);
	/* Never: minutes or seconds over 59, one digit, signs, overflow. */
	assert_int_equal(mos_dur_parse("00:60:00", MOS_LENIENT, &d), -1);
	assert_int_equal(mos_dur_parse("00:00:7", MOS_LENIENT, &d), -1);
	assert_int_equal(mos_dur_parse("-00:00:07", MOS_LENIENT, &d), -1);
	assert_int_equal(mos_dur_parse("1193047:00:00", MOS_LENIENT, &d), -1);
	assert_int_equal(mos_dur_parse("00:00:00:00", MOS_LENIENT, &d), -1);
	assert_int_equal(mos_dur_parse("4294967296", MOS_LENIENT, &d), -1);
}

/* Exact decimals: objTB 59.94 stays 59.94. */
static void
test_dec(void **state)
{
	static const char *const good[] = { "59.94", "50", "0", "25.000",
	    "0.001", "48000", "123456789012345678", "29.97" };
	static const char *const bad[] = { "", ".5", "5.", "-1", "+1", "5,94",
	    "1e3", "59.9.4", "1234567890123456789", " 50", "0x10" };
	struct mos_dec	d, e;
	char		buf[64];
	size_t		i;

	(void)state;
	assert_int_equal(mos_dec_parse("59.94", &d), 0);
	assert_int_equal(d.v, 5994);
	assert_int_equal(d.scale, 2);
	assert_true(d.set);
	assert_true(mos_dec_to_double(&d) > 59.9399 &&
	    mos_dec_to_double(&d) < 59.9401);
	for (i = 0; i < sizeof good / sizeof good[0]; i++) {
		if (mos_dec_parse(good[i], &d) != 0)
			fail_msg("\"%s\" did not parse", good[i]);
		mos_dec_format(&d, buf, sizeof buf);
		assert_string_equal(buf, good[i]);
		assert_int_equal(mos_dec_parse(buf, &e), 0);
		assert_memory_equal(&d, &e, sizeof d);
	}
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		if (mos_dec_parse(bad[i], &d) != -1)
			fail_msg("\"%s\" parsed", bad[i]);
		assert_false(d.set);
	}
	memset(&d, 0, sizeof d);
	assert_int_equal(mos_dec_format(&d, buf, sizeof buf), 0);
}

/* Run the mosxml_time suite. */
int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_time_spec_forms),
		cmocka_unit_test(test_time_fields),
		cmocka_unit_test(test_time_lenient),
		cmocka_unit_test(test_time_bad),
		cmocka_unit_test(test_time_iso),
		cmocka_unit_test(test_time_now),
		cmocka_unit_test(test_dur),
		cmocka_unit_test(test_dec),
	};

	return cmocka_run_group_tests_name("mosxml_time", tests, NULL, NULL);
}
