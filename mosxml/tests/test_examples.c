/*
 * Every real MOS example in $MOSGW_SHARED/mos-examples and every fixture of
 * ours in fixtures/msg parses in lenient mode, as UTF-8 and as UTF-16BE;
 * our fixtures without "--quirk-" in their name also parse in strict mode
 * and are of the type their name says.
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

/* Parse a file in both encodings and one mode; both models must agree. */
static struct mos_msg *
parse_both(const char *path, enum mos_mode mode)
{
	struct mos_buf		 u16 = { NULL, 0, 0 };
	struct mos_msg		*a, *b;
	struct mos_error	 err;
	char			*buf;
	size_t			 len;

	buf = mostest_slurp(path, &len);
	if (mos_parse(buf, len, MOS_ENC_UTF8, mode, &a, &err) != MOS_OK)
		fail_msg("%s (utf8): %s", path, err.msg);
	mostest_utf16(buf, len, &u16);
	if (mos_parse(u16.data, u16.len, MOS_ENC_UTF16BE, mode, &b, &err) !=
	    MOS_OK)
		fail_msg("%s (utf16be): %s", path, err.msg);
	if (!mos_msg_equal(a, b))
		fail_msg("%s: the encodings give different models", path);
	mos_msg_free(b);
	mos_buf_free(&u16);
	free(buf);
	return a;
}

/* The type a fixture's file name announces ("roCreate--x.xml"). */
static void
check_named_type(const char *path, const struct mos_msg *m)
{
	const char	*base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	char		 name[128];

	snprintf(name, sizeof name, "%s", base);
	name[strcspn(name, "-.")] = '\0';
	if (strcmp(name, mos_type_name(m->type)) != 0)
		fail_msg("%s parsed as %s", path, mos_type_name(m->type));
}

/* Our fixtures, lenient and (unless a quirk) strict, both encodings. */
static void
test_fixtures(void **state)
{
	char		**files;
	size_t		  n, i, quirks = 0;
	struct mos_msg	 *m;

	(void)state;
	files = mostest_list(mostest_fixtures(), ".xml", &n);
	assert_true(n >= MOS_T__COUNT);
	for (i = 0; i < n; i++) {
		m = parse_both(files[i], MOS_LENIENT);
		check_named_type(files[i], m);
		mos_msg_free(m);
		if (strstr(files[i], "--quirk-") != NULL) {
			quirks++;
			continue;
		}
		m = parse_both(files[i], MOS_STRICT);
		mos_msg_free(m);
	}
	assert_true(quirks >= 5);
	printf("%zu fixtures, %zu of them lenient-only quirks\n", n, quirks);
	mostest_list_free(files, n);
}

/* The shared real-world examples, lenient; the negative one is unknown. */
static void
test_shared_examples(void **state)
{
	const char	 *dir = mostest_examples();
	char		**files;
	size_t		  n, i, unknown = 0;
	struct mos_msg	 *m;

	(void)state;
	if (dir == NULL) {
		skip();
		return;
	}
	files = mostest_list(dir, ".xml", &n);
	assert_true(n >= 30);
	for (i = 0; i < n; i++) {
		m = parse_both(files[i], MOS_LENIENT);
		if (strstr(files[i], "__invalid__") != NULL) {
			assert_int_equal(m->type, MOS_T_UNKNOWN);
			assert_string_equal(m->type_name, "roInvalidMos");
			assert_non_null(strstr(m->u.unknown.xml,
			    "<roID>RO ID</roID>"));
			unknown++;
		} else if (m->type == MOS_T_UNKNOWN)
			fail_msg("%s parsed as unknown <%s>", files[i],
			    m->type_name);
		else if (strstr(files[i], m->type_name) == NULL)
			fail_msg("%s parsed as %s", files[i], m->type_name);
		mos_msg_free(m);
	}
	assert_int_equal(unknown, 1);
	printf("%zu shared examples\n", n);
	mostest_list_free(files, n);
}

/* Run the mosxml_examples suite. */
int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fixtures),
		cmocka_unit_test(test_shared_examples),
	};

	mos_init();
	return cmocka_run_group_tests_name("mosxml_examples", tests, NULL, NULL);
}
