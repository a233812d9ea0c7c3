/*
 * owner.c's epochs and fencing, on the database (PostgreSQL: the table
 * mosgw_owner; SQLite has one instance and never fences).
 *
 *   epochs      each new owner bumps the NCS's epoch; owner_fence accepts
 *               the current one only (0: not fenced)
 *   serialised  a new owner cannot bump the epoch while a completion's
 *               transaction that checked it is open (the store's writer
 *               lock): the check holds until that commit
 *   migration   the table is a step of the schema (version 7): a
 *               database of version 6, without the table or with the one
 *               an older daemon made at run time, migrates; on SQLite the
 *               step changes nothing but the version
 *   stale       a job claimed by the old owner's worker: the new owner
 *               takes it back (by the NCS's worker prefix, not another
 *               NCS's whose name starts the same), the old owner's
 *               completion is refused by the epoch and by the lease, and
 *               the job is delivered by the new owner
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

/* The unit on PostgreSQL (the schema has the table); skipped on SQLite. */
static struct gwunit *
pg_unit(void **state)
{
	struct gwunit	*u = *state;
	int64_t		 cur;

	if (!gwunit_pg(u)) {
		/* one instance: never fenced, no table needed */
		assert_int_equal(owner_fence(u->db, "n1", 0, &cur), QUEUE_OK);
		assert_true(cur == 0);
		printf("SKIP: epochs are PostgreSQL's (MOSGW_DB_DRIVER="
		    "postgresql)\n");
		skip();
	}
	return u;
}

/* Back to schema version 6 (drop: without the table), then open again. */
static void
reopen_from_v6(struct gwunit *u, bool drop)
{
	int64_t	v;

	if (drop)
		assert_int_equal(gwunit_exec(u, "DROP TABLE mosgw_owner"),
		    STORE_OK);
	assert_int_equal(gwunit_rewind_v8(u), STORE_OK);
	assert_int_equal(gwunit_reopen_at(u, 6, &v), QUEUE_OK);
	assert_int_equal(v, GWDB_SCHEMA_VERSION);
}

static void
test_migration(void **state)
{
	struct gwunit	*u = *state;
	int64_t		 e;

	assert_int_equal(GWDB_SCHEMA_VERSION, 8);
	if (!gwunit_pg(u)) {
		reopen_from_v6(u, false);
		return;
	}
	assert_int_equal(owner_bump(u->db->db, "n1", "gw-a", &e), STORE_OK);
	assert_true(e == 1);
	/* an older daemon made the table at run time: kept as it is */
	reopen_from_v6(u, false);
	assert_true(gwunit_int(u, "SELECT epoch FROM mosgw_owner WHERE ncs = "
	    "'n1'") == 1);
	/* version 6 without it: made by the step */
	reopen_from_v6(u, true);
	assert_true(gwunit_int(u, "SELECT count(*) FROM mosgw_owner") == 0);
	assert_int_equal(owner_bump(u->db->db, "n1", "gw-b", &e), STORE_OK);
	assert_true(e == 1);
}

static void
test_epochs(void **state)
{
	struct gwunit	*u = pg_unit(state);
	int64_t		 e1, e2, e3, cur;

	assert_int_equal(owner_bump(u->db->db, "n1", "gw-a", &e1), STORE_OK);
	assert_true(e1 == 1);
	assert_int_equal(owner_fence(u->db, "n1", e1, &cur), QUEUE_OK);
	assert_true(cur == e1);
	assert_int_equal(owner_bump(u->db->db, "n1", "gw-b", &e2), STORE_OK);
	assert_true(e2 == 2);
	assert_int_equal(owner_fence(u->db, "n1", e1, &cur), QUEUE_ELOST);
	assert_true(cur == e2);
	assert_int_equal(owner_fence(u->db, "n1", e2, &cur), QUEUE_OK);
	/* the same instance again is a new owner too */
	assert_int_equal(owner_bump(u->db->db, "n1", "gw-b", &e3), STORE_OK);
	assert_true(e3 == 3);
	assert_int_equal(owner_fence(u->db, "n1", e2, &cur), QUEUE_ELOST);
	assert_true(gwunit_int(u, "SELECT count(*) FROM mosgw_owner WHERE "
	    "ncs = 'n1' AND instance = 'gw-b' AND epoch = 3 AND renewed >= "
	    "since") == 1);
	/* an NCS nobody owned yet, and the unfenced epoch */
	assert_int_equal(owner_fence(u->db, "n2", 1, &cur), QUEUE_ELOST);
	assert_true(cur == 0);
	assert_int_equal(owner_fence(u->db, "n2", 0, &cur), QUEUE_OK);
}

static void
test_serialised(void **state)
{
	struct gwunit		*u = pg_unit(state);
	struct store_conf	 c;
	struct store		*s2;
	int64_t			 e1, e2, cur;

	memset(&c, 0, sizeof c);
	c.driver = STORE_POSTGRESQL;
	c.dsn = u->pg.dsn;
	assert_int_equal(store_open(&s2, &c, 0, NULL), STORE_OK);
	store_busy_timeout(s2, 300);
	assert_int_equal(owner_bump(s2, "n1", "gw-a", &e1), STORE_OK);
	/* a completion's transaction checks the epoch... */
	assert_int_equal(queue_tx_begin(u->db->q), QUEUE_OK);
	assert_int_equal(owner_fence(u->db, "n1", e1, &cur), QUEUE_OK);
	/* ...and no new owner comes before it commits */
	assert_int_equal(owner_bump(s2, "n1", "gw-b", &e2), STORE_BUSY);
	assert_false(store_in_tx(s2));
	assert_int_equal(queue_tx_commit(u->db->q), QUEUE_OK);
	assert_int_equal(owner_bump(s2, "n1", "gw-b", &e2), STORE_OK);
	assert_true(e2 == e1 + 1);
	assert_int_equal(queue_tx_begin(u->db->q), QUEUE_OK);
	assert_int_equal(owner_fence(u->db, "n1", e1, &cur), QUEUE_ELOST);
	queue_tx_rollback(u->db->q);
	store_close(s2);
}

/* Enqueue one job in lane and claim it as worker: its id and lease. */
static void
claim_one(struct gwunit *u, const char *lane, const char *worker,
    int64_t *id, int64_t *gen)
{
	struct queue_enqueue_req	 r;
	struct queue_job		 j;
	size_t				 n = 0;

	memset(&r, 0, sizeof r);
	r.lane = lane;
	r.kind = CATALOG_KIND_PUBLISH;
	r.payload = "OBJ1";
	r.payload_len = 4;
	r.priority = 5;
	r.max_attempts = 10;
	assert_int_equal(queue_enqueue(u->db->q, &r, id), QUEUE_OK);
	memset(&j, 0, sizeof j);
	assert_int_equal(queue_claim(u->db->q, lane, worker, 60000, &j, 1, &n),
	    QUEUE_OK);
	assert_int_equal(n, 1);
	assert_true(j.id == *id);
	*gen = j.lease_gen;
	queue_job_clear(&j);
}

static enum queue_state
state_of(struct gwunit *u, int64_t id)
{
	struct queue_job	j;
	enum queue_state	st;

	memset(&j, 0, sizeof j);
	assert_int_equal(queue_get(u->db->q, id, &j), QUEUE_OK);
	st = j.state;
	queue_job_clear(&j);
	return st;
}

static void
test_stale_completion(void **state)
{
	struct gwunit		*u = pg_unit(state);
	struct queue_job	 j;
	int64_t			 e1, e2, cur, id, gen, other, ogen;
	size_t			 n = 0;

	assert_int_equal(owner_bump(u->db->db, "n1", "gw-a", &e1), STORE_OK);
	claim_one(u, "ncs:n1", GW_NCS_WORKER_PREFIX "n1/gw-a/100", &id, &gen);
	claim_one(u, "ncs:n10", GW_NCS_WORKER_PREFIX "n10/gw-a/100", &other,
	    &ogen);
	/* gw-b takes n1 over: new epoch, then n1's jobs back */
	assert_int_equal(owner_bump(u->db->db, "n1", "gw-b", &e2), STORE_OK);
	assert_int_equal(queue_release_orphans(u->db->q, GW_NCS_WORKER_PREFIX
	    "n1/", NULL, &n), QUEUE_OK);
	assert_int_equal(n, 1);
	assert_int_equal(state_of(u, id), QUEUE_QUEUED);
	assert_int_equal(state_of(u, other), QUEUE_RUNNING);
	/* gw-a's late completion: refused in its transaction */
	assert_int_equal(queue_tx_begin(u->db->q), QUEUE_OK);
	assert_int_equal(owner_fence(u->db, "n1", e1, &cur), QUEUE_ELOST);
	assert_true(cur == e2);
	assert_int_equal(queue_complete(u->db->q, id, gen), QUEUE_ELOST);
	assert_int_equal(queue_tx_commit(u->db->q), QUEUE_OK);
	assert_int_equal(state_of(u, id), QUEUE_QUEUED);
	/* the job is gw-b's to deliver */
	memset(&j, 0, sizeof j);
	assert_int_equal(queue_claim(u->db->q, "ncs:n1", GW_NCS_WORKER_PREFIX
	    "n1/gw-b/200", 60000, &j, 1, &n), QUEUE_OK);
	assert_int_equal(n, 1);
	assert_true(j.id == id && j.lease_gen != gen);
	assert_int_equal(queue_tx_begin(u->db->q), QUEUE_OK);
	assert_int_equal(owner_fence(u->db, "n1", e2, &cur), QUEUE_OK);
	assert_int_equal(queue_complete(u->db->q, id, j.lease_gen), QUEUE_OK);
	assert_int_equal(queue_tx_commit(u->db->q), QUEUE_OK);
	assert_int_equal(state_of(u, id), QUEUE_DONE);
	queue_job_clear(&j);
	assert_int_equal(queue_complete(u->db->q, other, ogen), QUEUE_OK);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_migration, gwunit_setup,
		    gwunit_teardown),
		cmocka_unit_test_setup_teardown(test_epochs, gwunit_setup,
		    gwunit_teardown),
		cmocka_unit_test_setup_teardown(test_serialised, gwunit_setup,
		    gwunit_teardown),
		cmocka_unit_test_setup_teardown(test_stale_completion,
		    gwunit_setup, gwunit_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
