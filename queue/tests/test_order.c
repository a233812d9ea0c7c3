/* queue: claim order, batch claims, lanes, the reserved urgent budget. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>

#include "queue/tests/qtest.h"

/* Strict priority order, then run_after, then id. */
static void
test_priority_order(void **state)
{
	struct qtest			*t = *state;
	struct queue_enqueue_req	 r = { .lane = "a", .kind = "k" };
	int64_t				 id[7], got[7];
	size_t				 i;

	id[0] = qtest_put(t->q, "a", "k", 5);
	id[1] = qtest_put(t->q, "a", "k", 1);
	id[2] = qtest_put(t->q, "a", "k", 9);
	id[3] = qtest_put(t->q, "a", "k", 1);
	id[4] = qtest_put(t->q, "a", "k", 0);
	/* Same priority: the earlier run_after first, whatever the id. */
	r.priority = 5;
	r.run_after_ms = t->now - 1000;
	assert_int_equal(queue_enqueue(t->q, &r, &id[5]), QUEUE_OK);
	r.priority = 9;
	r.run_after_ms = t->now - 5000;
	assert_int_equal(queue_enqueue(t->q, &r, &id[6]), QUEUE_OK);
	for (i = 0; i < 7; i++)
		assert_int_equal(qtest_claim_n(t->q, "a", 1, &got[i]), 1);
	assert_int_equal(got[0], id[4]);
	assert_int_equal(got[1], id[1]);
	assert_int_equal(got[2], id[3]);
	assert_int_equal(got[3], id[5]);
	assert_int_equal(got[4], id[0]);
	assert_int_equal(got[5], id[6]);
	assert_int_equal(got[6], id[2]);
	assert_int_equal(qtest_claim_n(t->q, "a", 1, NULL), 0);
}

/* A batch claim takes up to max jobs in one statement, in claim order. */
static void
test_batch_claim(void **state)
{
	struct qtest		*t = *state;
	struct queue_job	 jobs[16];
	size_t			 n, i;

	for (i = 0; i < 40; i++)
		qtest_put(t->q, "a", "k", (int)(9 - i % 10));
	assert_int_equal(queue_claim(t->q, "a", "w", 0, jobs, 16, &n),
	    QUEUE_OK);
	assert_int_equal(n, 16);
	for (i = 0; i < n; i++) {
		assert_int_equal(jobs[i].state, QUEUE_RUNNING);
		assert_int_equal(jobs[i].lease_gen, 1);
		if (i > 0) {
			assert_true(jobs[i - 1].priority < jobs[i].priority ||
			    (jobs[i - 1].priority == jobs[i].priority &&
			    jobs[i - 1].id < jobs[i].id));
		}
		queue_job_clear(&jobs[i]);
	}
	/* 4 each of priorities 0..3 make the first 16. */
	assert_int_equal(qtest_sql_int(t->q, "SELECT max(priority) FROM jobs "
	    "WHERE state = 1"), 3);
	assert_int_equal(qtest_claim_n(t->q, "a", 16, NULL), 16);
	assert_int_equal(qtest_claim_n(t->q, "a", 16, NULL), 8);
	assert_int_equal(qtest_claim_n(t->q, "a", 16, NULL), 0);
	assert_int_equal(qtest_sql_int(t->q, "SELECT count(*) FROM job_events "
	    "WHERE to_state = 1"), 40);
}

/* A lane's jobs go only to that lane's workers; NULL takes any lane. */
static void
test_lanes(void **state)
{
	struct qtest	*t = *state;
	int64_t		 a, b, c, got[3];

	a = qtest_put(t->q, "ncs:A", "k", 5);
	b = qtest_put(t->q, "ncs:B", "k", 2);
	c = qtest_put(t->q, "ncs:A", "k", 7);
	assert_int_equal(qtest_claim_n(t->q, "ncs:C", 4, NULL), 0);
	assert_int_equal(qtest_claim_n(t->q, "ncs:A", 1, got), 1);
	assert_int_equal(got[0], a);
	assert_int_equal(qtest_claim_n(t->q, NULL, 3, got), 2);
	assert_int_equal(got[0], b);
	assert_int_equal(got[1], c);
}

/*
 * max_running 4 with 2 slots kept for priority <= 1: a flood of low
 * priority work takes 2 slots; urgent work still gets the other 2.
 */
static void
test_reserved_budget(void **state)
{
	struct qtest	*t = *state;
	struct queue	*q2;
	int64_t		 low[10], urgent[3], got[10];
	size_t		 i;

	assert_int_equal(queue_set_lane_limits(t->q, "a", 4, 1, 2), QUEUE_OK);
	for (i = 0; i < 10; i++)
		low[i] = qtest_put(t->q, "a", "k", 5);
	assert_int_equal(qtest_claim_n(t->q, "a", 10, got), 2);
	assert_int_equal(got[0], low[0]);
	assert_int_equal(qtest_claim_n(t->q, "a", 10, NULL), 0);
	for (i = 0; i < 3; i++)
		urgent[i] = qtest_put(t->q, "a", "k", i == 0 ? 0 : 1);
	assert_int_equal(qtest_claim_n(t->q, "a", 10, got), 2);
	assert_int_equal(got[0], urgent[0]);
	assert_int_equal(got[1], urgent[1]);
	assert_int_equal(qtest_claim_n(t->q, "a", 10, NULL), 0);

	/* A slot that frees goes to the waiting urgent job, not to low. */
	assert_int_equal(queue_complete(t->q, low[0], 1), QUEUE_OK);
	assert_int_equal(qtest_claim_n(t->q, "a", 10, got), 1);
	assert_int_equal(got[0], urgent[2]);
	/* 4 running (1 low, 3 urgent): nothing; then 2 free: 0 low yet. */
	assert_int_equal(queue_complete(t->q, urgent[0], 1), QUEUE_OK);
	assert_int_equal(queue_complete(t->q, urgent[1], 1), QUEUE_OK);
	assert_int_equal(qtest_claim_n(t->q, "a", 10, got), 0);
	assert_int_equal(queue_complete(t->q, urgent[2], 1), QUEUE_OK);
	assert_int_equal(qtest_claim_n(t->q, "a", 10, got), 1);
	assert_int_equal(got[0], low[2]);

	/* The count comes from the file: another connection obeys it too. */
	assert_int_equal(qtest_open(t, &q2, true), QUEUE_OK);
	assert_int_equal(queue_set_lane_limits(q2, "a", 4, 1, 2), QUEUE_OK);
	assert_int_equal(qtest_claim_n(q2, "a", 10, NULL), 0);
	/* Without limits the lane is open; 0 = unlimited. */
	assert_int_equal(queue_set_lane_limits(q2, "a", 0, 1, 0), QUEUE_OK);
	assert_int_equal(qtest_claim_n(q2, "a", 10, NULL), 7);
	queue_close(q2);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_priority_order,
		    qtest_setup, qtest_teardown),
		cmocka_unit_test_setup_teardown(test_batch_claim,
		    qtest_setup, qtest_teardown),
		cmocka_unit_test_setup_teardown(test_lanes,
		    qtest_setup, qtest_teardown),
		cmocka_unit_test_setup_teardown(test_reserved_budget,
		    qtest_setup, qtest_teardown),
	};

	return cmocka_run_group_tests_name("queue_order", tests, NULL, NULL);
}
