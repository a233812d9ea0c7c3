/*
 * messageIDs: increasing from 1, per NCS and port, wrapping to 1 after
 * 2^31-1, and never reused after a restart (reserved blocks).
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

/* The arithmetic of the wrap. */
static void
test_advance(void **state)
{
	(void)state;
	assert_int_equal(msgid_advance(1, 1), 2);
	assert_int_equal(msgid_advance(MSGID_MAX - 1, 1), MSGID_MAX);
	assert_int_equal(msgid_advance(MSGID_MAX, 1), 1);
	assert_int_equal(msgid_advance(MSGID_MAX - 1, 3), 2);
	assert_int_equal(msgid_advance(0, 1), 1);	/* nothing stored yet */
	assert_int_equal(msgid_advance(5, 999), 1004);
}

/* From 1, increasing, one block stored per `block` ids. */
static void
test_sequence_and_blocks(void **state)
{
	struct gwunit	*u = *state;
	struct msgid	*m;
	int32_t		 i;

	m = msgid_new(u->db, "enps", GW_PORT_LOWER, 10);
	for (i = 1; i <= 25; i++)
		assert_int_equal(msgid_next(m), i);
	assert_int_equal(gwunit_int(u, "SELECT reserved_upto FROM msgid WHERE "
	    "ncs = 'enps' AND port = 'lower'"), 30);
	msgid_free(m);
}

/* A restart continues after the reserved block: no id is ever reused. */
static void
test_restart_skips_block(void **state)
{
	struct gwunit	*u = *state;
	struct msgid	*m;

	m = msgid_new(u->db, "enps", GW_PORT_LOWER, 10);
	assert_int_equal(msgid_next(m), 1);
	assert_int_equal(msgid_next(m), 2);
	msgid_free(m);		/* a crash: ids 3..10 are never used */
	m = msgid_new(u->db, "enps", GW_PORT_LOWER, 10);
	assert_int_equal(msgid_next(m), 11);
	assert_int_equal(gwunit_int(u, "SELECT reserved_upto FROM msgid WHERE "
	    "ncs = 'enps' AND port = 'lower'"), 20);
	msgid_free(m);
}

/* Per NCS and port, independent counters. */
static void
test_independent(void **state)
{
	struct gwunit	*u = *state;
	struct msgid	*a, *b, *c;

	a = msgid_new(u->db, "enps", GW_PORT_LOWER, 100);
	b = msgid_new(u->db, "enps", GW_PORT_UPPER, 100);
	c = msgid_new(u->db, "inews", GW_PORT_LOWER, 100);
	assert_int_equal(msgid_next(a), 1);
	assert_int_equal(msgid_next(a), 2);
	assert_int_equal(msgid_next(b), 1);
	assert_int_equal(msgid_next(c), 1);
	assert_int_equal(msgid_next(a), 3);
	msgid_free(a);
	msgid_free(b);
	msgid_free(c);
}

/* After 2^31-1 comes 1, and a restart after the wrap stays wrapped. */
static void
test_wrap(void **state)
{
	struct gwunit	*u = *state;
	struct msgid	*m;

	assert_int_equal(gwunit_exec(u, "INSERT INTO msgid VALUES('enps', "
	    "'lower', 2147483645)"), STORE_OK);
	m = msgid_new(u->db, "enps", GW_PORT_LOWER, 4);
	assert_int_equal(msgid_next(m), MSGID_MAX - 1);
	assert_int_equal(msgid_next(m), MSGID_MAX);
	assert_int_equal(msgid_next(m), 1);
	assert_int_equal(msgid_next(m), 2);
	assert_int_equal(gwunit_int(u, "SELECT reserved_upto FROM msgid"), 2);
	assert_int_equal(msgid_next(m), 3);
	msgid_free(m);
	m = msgid_new(u->db, "enps", GW_PORT_LOWER, 4);
	assert_int_equal(msgid_next(m), 7);
	msgid_free(m);
}

/*
 * Two counters on one NCS and port (two instances on one database) take
 * their blocks from the database: no id is handed out twice, and each
 * counter's ids still increase.
 */
static void
test_two_counters(void **state)
{
	struct gwunit	*u = *state;
	struct msgid	*a, *b;
	char		 seen[200];
	int32_t		 id, last_a = 0, last_b = 0;
	int		 i;

	memset(seen, 0, sizeof seen);
	a = msgid_new(u->db, "enps", GW_PORT_LOWER, 10);
	b = msgid_new(u->db, "enps", GW_PORT_LOWER, 10);
	for (i = 0; i < 60; i++) {
		id = msgid_next(i % 3 == 0 ? b : a);
		assert_true(id > 0 && id < (int32_t)sizeof seen);
		assert_int_equal(seen[id], 0);
		seen[id] = 1;
		if (i % 3 == 0) {
			assert_true(id > last_b);
			last_b = id;
		} else {
			assert_true(id > last_a);
			last_a = id;
		}
	}
	/* a took 1-10, b 11-20, a 21-30, ...: the stored end covers both */
	assert_true(gwunit_int(u, "SELECT reserved_upto FROM msgid") >=
	    (last_a > last_b ? last_a : last_b));
	msgid_free(a);
	msgid_free(b);
}

/* A locked database: no id (0), no reuse; it works again afterwards. */
static void
test_locked_database(void **state)
{
	struct gwunit	*u = *state;
	struct msgid		*m;
	struct store		*other;
	struct gwdb_opts	 o;

	m = msgid_new(u->db, "enps", GW_PORT_LOWER, 2);
	assert_int_equal(msgid_next(m), 1);
	assert_int_equal(msgid_next(m), 2);
	/* another connection holds the writer lock */
	gwunit_opts(u, &o);
	assert_int_equal(store_open(&other, &(struct store_conf){ o.driver,
	    o.path, o.dsn }, 0, NULL), STORE_OK);
	assert_int_equal(store_begin(other, STORE_TX_WRITE), STORE_OK);
	assert_int_equal(msgid_next(m), 0);
	assert_int_equal(store_commit(other), STORE_OK);
	store_close(other);
	assert_int_equal(msgid_next(m), 3);
	msgid_free(m);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_advance),
		cmocka_unit_test_setup_teardown(test_sequence_and_blocks, gwunit_setup,
		    gwunit_teardown),
		cmocka_unit_test_setup_teardown(test_restart_skips_block, gwunit_setup,
		    gwunit_teardown),
		cmocka_unit_test_setup_teardown(test_independent, gwunit_setup,
		    gwunit_teardown),
		cmocka_unit_test_setup_teardown(test_wrap, gwunit_setup, gwunit_teardown),
		cmocka_unit_test_setup_teardown(test_two_counters, gwunit_setup,
		    gwunit_teardown),
		cmocka_unit_test_setup_teardown(test_locked_database, gwunit_setup,
		    gwunit_teardown),
	};

	log_set_level(LL_ERROR);
	return cmocka_run_group_tests_name("gateway_msgid", tests, NULL, NULL);
}
