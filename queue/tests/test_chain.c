/* queue: chains of jobs, data between steps, re-run from a step. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "queue/tests/qtest.h"

/* Enqueue one step of lane "mam", chained after `after` (0: none). */
static int64_t
step(struct queue *q, const char *kind, int64_t after)
{
	struct queue_enqueue_req	r = { .lane = "mam", .kind = kind,
	    .priority = 5, .after_job = after };
	int64_t				id = 0;

	assert_int_equal(queue_enqueue(q, &r, &id), QUEUE_OK);
	return id;
}

/* Claim the one due job of lane "mam", check it is `want`, complete it. */
static void
run_step(struct queue *q, int64_t want)
{
	struct queue_job	j;

	qtest_claim1(q, "mam", &j);
	assert_int_equal(j.id, want);
	assert_int_equal(queue_complete(q, j.id, j.lease_gen), QUEUE_OK);
	queue_job_clear(&j);
}

/* ingest -> analyse -> publish: each step released by its predecessor. */
static void
test_chain_release(void **state)
{
	struct qtest		*t = *state;
	struct queue_job	 j;
	struct queue_event	*ev;
	char			 note[64];
	void			*val;
	size_t			 len, n;
	int64_t			 a, b, c;

	a = step(t->q, "ingest", 0);
	b = step(t->q, "analyse", a);
	c = step(t->q, "publish", b);
	assert_int_equal(queue_get(t->q, b, &j), QUEUE_OK);
	assert_true(j.blocked);
	assert_int_equal(j.after_job, a);
	queue_job_clear(&j);

	/* The step's data and its completion commit together. */
	qtest_claim1(t->q, "mam", &j);
	assert_int_equal(j.id, a);
	assert_int_equal(qtest_claim_n(t->q, "mam", 4, NULL), 0);
	assert_int_equal(queue_tx_begin(t->q), QUEUE_OK);
	assert_int_equal(queue_data_put(t->q, a, "proxy", "/media/p.mp4", 12),
	    QUEUE_OK);
	assert_int_equal(queue_complete(t->q, a, j.lease_gen), QUEUE_OK);
	assert_int_equal(queue_tx_commit(t->q), QUEUE_OK);
	queue_job_clear(&j);

	qtest_claim1(t->q, "mam", &j);
	assert_int_equal(j.id, b);
	assert_int_equal(queue_data_get(t->q, j.after_job, "proxy", &val, &len),
	    QUEUE_OK);
	assert_int_equal(len, 12);
	assert_string_equal(val, "/media/p.mp4");
	free(val);
	assert_int_equal(qtest_state(t->q, c), QUEUE_QUEUED);
	assert_int_equal(queue_complete(t->q, b, j.lease_gen), QUEUE_OK);
	queue_job_clear(&j);
	run_step(t->q, c);

	assert_int_equal(queue_history(t->q, c, &ev, &n), QUEUE_OK);
	assert_int_equal(n, 4);
	snprintf(note, sizeof note, "waiting for #%lld", (long long)b);
	assert_string_equal(ev[0].note, note);
	snprintf(note, sizeof note, "released by #%lld", (long long)b);
	assert_string_equal(ev[1].note, note);
	assert_true(ev[1].from == QUEUE_QUEUED && ev[1].to == QUEUE_QUEUED);
	queue_events_free(ev, n);
}

/* A failed step holds the rest of its chain until it is requeued. */
static void
test_chain_failed_step(void **state)
{
	struct qtest		*t = *state;
	struct queue_job	 j;
	int64_t			 a, b, late;

	a = step(t->q, "ingest", 0);
	b = step(t->q, "publish", a);
	qtest_claim1(t->q, "mam", &j);
	assert_int_equal(queue_fail(t->q, a, j.lease_gen, "no file", true),
	    QUEUE_OK);
	queue_job_clear(&j);
	assert_int_equal(qtest_claim_n(t->q, "mam", 4, NULL), 0);
	assert_int_equal(qtest_state(t->q, b), QUEUE_QUEUED);
	assert_int_equal(queue_requeue(t->q, a, 1, "file restored"), QUEUE_OK);
	run_step(t->q, a);
	run_step(t->q, b);
	/* Chained after a job that is DONE already: due at once. */
	late = step(t->q, "publish", a);
	assert_int_equal(queue_get(t->q, late, &j), QUEUE_OK);
	assert_false(j.blocked);
	queue_job_clear(&j);
	run_step(t->q, late);
	assert_int_equal(queue_enqueue(t->q, &(struct queue_enqueue_req){
	    .lane = "mam", .kind = "k", .after_job = 999 }, NULL),
	    QUEUE_ENOTFOUND);
}

/* Re-run from a step: that step and the ones after it run again. */
static void
test_rerun_from(void **state)
{
	struct qtest		*t = *state;
	struct queue_job	 j;
	char			 note[64];
	size_t			 n;
	int64_t			 a, b, c;

	a = step(t->q, "ingest", 0);
	b = step(t->q, "analyse", a);
	c = step(t->q, "publish", b);
	run_step(t->q, a);
	run_step(t->q, b);
	run_step(t->q, c);
	t->now += 1000;
	assert_int_equal(queue_rerun_from(t->q, b, NULL, &n), QUEUE_OK);
	assert_int_equal(n, 2);
	assert_int_equal(qtest_state(t->q, a), QUEUE_DONE);
	assert_int_equal(queue_get(t->q, b, &j), QUEUE_OK);
	assert_int_equal(j.state, QUEUE_QUEUED);
	assert_false(j.blocked);
	assert_int_equal(j.attempts, 1);
	assert_int_equal(j.max_attempts, 6);
	queue_job_clear(&j);
	assert_int_equal(queue_get(t->q, c, &j), QUEUE_OK);
	assert_int_equal(j.state, QUEUE_QUEUED);
	assert_true(j.blocked);
	queue_job_clear(&j);
	snprintf(note, sizeof note, "re-run from #%lld", (long long)b);
	assert_int_equal(qtest_sql_int(t->q, "SELECT count(*) FROM job_events "
	    "WHERE from_state = 2 AND to_state = 0 AND note LIKE 're-run%'"), 2);
	run_step(t->q, b);
	run_step(t->q, c);
	assert_int_equal(qtest_events(t->q, c, QUEUE_DONE), 2);

	/* Refused while a step of the chain runs; nothing changes. */
	assert_int_equal(queue_rerun_from(t->q, a, "again", &n), QUEUE_OK);
	assert_int_equal(n, 3);
	qtest_claim1(t->q, "mam", &j);
	assert_int_equal(j.id, a);
	assert_int_equal(queue_rerun_from(t->q, a, NULL, &n), QUEUE_ESTATE);
	assert_int_equal(queue_complete(t->q, a, j.lease_gen), QUEUE_OK);
	queue_job_clear(&j);
	qtest_claim1(t->q, "mam", &j);
	assert_int_equal(queue_rerun_from(t->q, a, NULL, &n), QUEUE_ESTATE);
	assert_int_equal(qtest_state(t->q, a), QUEUE_DONE);
	queue_job_clear(&j);
	assert_int_equal(queue_rerun_from(t->q, 999, NULL, &n),
	    QUEUE_ENOTFOUND);
}

/* Cancelling a step cancels the steps waiting for it. */
static void
test_cancel_chain(void **state)
{
	struct qtest		*t = *state;
	struct queue_event	*ev;
	char			 note[64];
	size_t			 n;
	int64_t			 a, b, c, other;

	a = step(t->q, "ingest", 0);
	b = step(t->q, "analyse", a);
	c = step(t->q, "publish", b);
	other = step(t->q, "ingest", 0);
	assert_int_equal(queue_cancel(t->q, a, "asset withdrawn"), QUEUE_OK);
	assert_int_equal(qtest_state(t->q, b), QUEUE_CANCELLED);
	assert_int_equal(qtest_state(t->q, c), QUEUE_CANCELLED);
	assert_int_equal(qtest_state(t->q, other), QUEUE_QUEUED);
	snprintf(note, sizeof note, "chain cancelled at #%lld", (long long)a);
	assert_int_equal(queue_history(t->q, c, &ev, &n), QUEUE_OK);
	assert_int_equal(n, 2);
	assert_string_equal(ev[1].note, note);
	queue_events_free(ev, n);
	assert_int_equal(qtest_sql_int(t->q, "SELECT count(*) FROM job_events "
	    "WHERE to_state = 4 AND note LIKE 'chain cancelled at #%'"), 2);
	assert_int_equal(qtest_sql_int(t->q, "SELECT count(*) FROM job_events "
	    "WHERE to_state = 4 AND note = 'asset withdrawn'"), 1);
}

/* Named values per job: put, overwrite, get, missing. */
static void
test_data(void **state)
{
	struct qtest	*t = *state;
	void		*val;
	size_t		 len;
	int64_t		 a;

	a = step(t->q, "ingest", 0);
	assert_int_equal(queue_data_put(t->q, a, "k", "one", 3), QUEUE_OK);
	assert_int_equal(queue_data_put(t->q, a, "k", "three", 5), QUEUE_OK);
	assert_int_equal(queue_data_put(t->q, a, "empty", NULL, 0), QUEUE_OK);
	assert_int_equal(queue_data_get(t->q, a, "k", &val, &len), QUEUE_OK);
	assert_int_equal(len, 5);
	assert_string_equal(val, "three");
	free(val);
	assert_int_equal(queue_data_get(t->q, a, "empty", &val, &len),
	    QUEUE_OK);
	assert_int_equal(len, 0);
	free(val);
	assert_int_equal(queue_data_get(t->q, a, "nope", &val, &len),
	    QUEUE_ENOTFOUND);
	assert_null(val);
	assert_int_equal(queue_data_put(t->q, 999, "k", "v", 1),
	    QUEUE_ENOTFOUND);
	assert_int_equal(qtest_sql_int(t->q, "SELECT count(*) FROM job_data"),
	    2);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_chain_release,
		    qtest_setup, qtest_teardown),
		cmocka_unit_test_setup_teardown(test_chain_failed_step,
		    qtest_setup, qtest_teardown),
		cmocka_unit_test_setup_teardown(test_rerun_from,
		    qtest_setup, qtest_teardown),
		cmocka_unit_test_setup_teardown(test_cancel_chain,
		    qtest_setup, qtest_teardown),
		cmocka_unit_test_setup_teardown(test_data,
		    qtest_setup, qtest_teardown),
	};

	return cmocka_run_group_tests_name("queue_chain", tests, NULL, NULL);
}
