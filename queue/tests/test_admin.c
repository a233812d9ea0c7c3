/* queue: operator actions: requeue, cancel, list, stats, prune. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "store/store.h"
#include "queue/tests/qtest.h"

/* Enqueue n jobs of a kind, run them, and finish each as `end`. */
static void
make_jobs(struct queue *q, const char *kind, size_t n, enum queue_state end,
    int64_t *ids)
{
	struct queue_enqueue_req	 r = { .lane = "a", .kind = kind,
	    .priority = 5, .max_attempts = 1 };
	struct queue_job		*jobs;
	size_t				 got, i;

	assert_int_equal(queue_tx_begin(q), QUEUE_OK);
	for (i = 0; i < n; i++)
		assert_int_equal(queue_enqueue(q, &r, NULL), QUEUE_OK);
	assert_int_equal(queue_tx_commit(q), QUEUE_OK);
	if (end == QUEUE_QUEUED)
		return;
	assert_non_null(jobs = calloc(n, sizeof *jobs));
	assert_int_equal(queue_claim(q, "a", "w", 0, jobs, n, &got), QUEUE_OK);
	assert_int_equal(got, n);
	assert_int_equal(queue_tx_begin(q), QUEUE_OK);
	for (i = 0; i < n; i++) {
		if (end == QUEUE_DONE)
			assert_int_equal(queue_complete(q, jobs[i].id,
			    jobs[i].lease_gen), QUEUE_OK);
		else if (end == QUEUE_FAILED)
			assert_int_equal(queue_fail(q, jobs[i].id,
			    jobs[i].lease_gen, "NACK", false), QUEUE_OK);
		if (ids != NULL)
			ids[i] = jobs[i].id;
		queue_job_clear(&jobs[i]);
	}
	assert_int_equal(queue_tx_commit(q), QUEUE_OK);
	free(jobs);
}

/* FAILED -> QUEUED raising max_attempts; the history stays. */
static void
test_requeue(void **state)
{
	struct qtest		*t = *state;
	struct queue_job	 j;
	struct queue_event	*ev;
	size_t			 n;
	int64_t			 id;

	make_jobs(t->q, "k", 1, QUEUE_FAILED, &id);
	assert_int_equal(queue_get(t->q, id, &j), QUEUE_OK);
	assert_int_equal(j.state, QUEUE_FAILED);
	assert_int_equal(j.attempts, 1);
	queue_job_clear(&j);
	t->now += 500;
	assert_int_equal(queue_requeue(t->q, id, 3, "NCS fixed"), QUEUE_OK);
	assert_int_equal(queue_get(t->q, id, &j), QUEUE_OK);
	assert_int_equal(j.state, QUEUE_QUEUED);
	assert_int_equal(j.attempts, 1);
	assert_int_equal(j.max_attempts, 4);
	assert_true(j.run_after_ms == t->now);
	assert_string_equal(j.last_error, "NACK");
	queue_job_clear(&j);
	assert_int_equal(queue_history(t->q, id, &ev, &n), QUEUE_OK);
	assert_int_equal(n, 4);
	assert_int_equal(ev[2].to, QUEUE_FAILED);
	assert_int_equal(ev[3].from, QUEUE_FAILED);
	assert_int_equal(ev[3].to, QUEUE_QUEUED);
	assert_string_equal(ev[3].note, "NCS fixed");
	queue_events_free(ev, n);
	assert_int_equal(queue_requeue(t->q, id, 0, NULL), QUEUE_ESTATE);
	assert_non_null(strstr(queue_errmsg(t->q), "is QUEUED"));
	assert_int_equal(queue_requeue(t->q, 12345, 0, NULL), QUEUE_ENOTFOUND);
	assert_int_equal(queue_requeue(t->q, id, -1, NULL), QUEUE_EINVAL);

	/* extra 0: the job's own allowance again (1 here). */
	assert_int_equal(qtest_claim_n(t->q, "a", 1, NULL), 1);
	assert_int_equal(queue_cancel(t->q, id, NULL), QUEUE_OK);
	assert_int_equal(queue_requeue(t->q, id, 0, NULL), QUEUE_OK);
	assert_int_equal(queue_get(t->q, id, &j), QUEUE_OK);
	assert_int_equal(j.max_attempts, 3);
	queue_job_clear(&j);
}

/* Requeue many, by filter, across several batches. */
static void
test_requeue_many(void **state)
{
	struct qtest		*t = *state;
	struct queue_filter	 f = { .state = QUEUE_FAILED, .kind = "a" };
	struct queue_stats	 st;
	size_t			 n;

	make_jobs(t->q, "a", 1203, QUEUE_FAILED, NULL);
	make_jobs(t->q, "b", 10, QUEUE_FAILED, NULL);
	f.limit = 7;
	assert_int_equal(queue_requeue_many(t->q, &f, 1, "first 7", &n),
	    QUEUE_OK);
	assert_int_equal(n, 7);
	f.limit = 0;
	assert_int_equal(queue_requeue_many(t->q, &f, 2, NULL, &n), QUEUE_OK);
	assert_int_equal(n, 1196);
	assert_int_equal(queue_stats(t->q, &st), QUEUE_OK);
	assert_int_equal(st.count[QUEUE_QUEUED], 1203);
	assert_int_equal(st.count[QUEUE_FAILED], 10);
	assert_int_equal(qtest_sql_int(t->q, "SELECT count(*) FROM jobs WHERE "
	    "kind = 'a' AND max_attempts = 3"), 1196);
	f.state = QUEUE_DONE;
	assert_int_equal(queue_requeue_many(t->q, &f, 0, NULL, &n),
	    QUEUE_EINVAL);
	f.state = -1;
	f.kind = NULL;
	assert_int_equal(queue_requeue_many(t->q, &f, 0, NULL, &n), QUEUE_OK);
	assert_int_equal(n, 10);
}

/* Cancel from QUEUED, RUNNING, FAILED; not from DONE or CANCELLED. */
static void
test_cancel(void **state)
{
	struct qtest		*t = *state;
	struct queue_job	 j;
	int64_t			 queued, done, failed;

	make_jobs(t->q, "k", 1, QUEUE_DONE, &done);
	make_jobs(t->q, "k", 1, QUEUE_FAILED, &failed);
	queued = qtest_put(t->q, "a", "k", 5);
	assert_int_equal(queue_cancel(t->q, queued, NULL), QUEUE_OK);
	assert_int_equal(queue_cancel(t->q, failed, NULL), QUEUE_OK);
	assert_int_equal(queue_cancel(t->q, done, NULL), QUEUE_ESTATE);
	assert_non_null(strstr(queue_errmsg(t->q), "is DONE"));
	assert_int_equal(queue_cancel(t->q, queued, NULL), QUEUE_ESTATE);
	assert_int_equal(queue_cancel(t->q, 999, NULL), QUEUE_ENOTFOUND);

	/* A running job: its worker finds it lost. */
	qtest_put(t->q, "a", "k", 5);
	qtest_claim1(t->q, "a", &j);
	assert_int_equal(queue_cancel(t->q, j.id, "stop it"), QUEUE_OK);
	assert_int_equal(queue_complete(t->q, j.id, j.lease_gen), QUEUE_ELOST);
	assert_int_equal(queue_heartbeat(t->q, j.id, j.lease_gen, 0),
	    QUEUE_ELOST);
	assert_int_equal(qtest_state(t->q, j.id), QUEUE_CANCELLED);
	queue_job_clear(&j);
}

/* Filters: state, kind, lane, age, paging. */
static void
test_list(void **state)
{
	struct qtest		*t = *state;
	struct queue_filter	 f = { .state = -1 };
	struct queue_job	*jobs;
	size_t			 n;
	int64_t			 old, x;

	old = qtest_put(t->q, "c", "ingest", 5);
	t->now += 3600 * 1000;
	qtest_put(t->q, "c", "publish", 5);
	x = qtest_put(t->q, "b", "publish", 5);
	make_jobs(t->q, "publish", 2, QUEUE_FAILED, NULL);

	assert_int_equal(queue_list(t->q, &f, &jobs, &n), QUEUE_OK);
	assert_int_equal(n, 5);
	assert_true(jobs[0].id < jobs[1].id);
	queue_jobs_free(jobs, n);
	f.state = QUEUE_FAILED;
	assert_int_equal(queue_list(t->q, &f, &jobs, &n), QUEUE_OK);
	assert_int_equal(n, 2);
	assert_string_equal(jobs[0].last_error, "NACK");
	queue_jobs_free(jobs, n);
	f.state = -1;
	f.lane = "b";
	assert_int_equal(queue_list(t->q, &f, &jobs, &n), QUEUE_OK);
	assert_int_equal(n, 1);
	assert_int_equal(jobs[0].id, x);
	queue_jobs_free(jobs, n);
	f.lane = NULL;
	f.kind = "ingest";
	assert_int_equal(queue_list(t->q, &f, &jobs, &n), QUEUE_OK);
	assert_int_equal(n, 1);
	queue_jobs_free(jobs, n);
	f.kind = NULL;
	f.older_than_ms = 10 * 60 * 1000;
	assert_int_equal(queue_list(t->q, &f, &jobs, &n), QUEUE_OK);
	assert_int_equal(n, 1);
	assert_int_equal(jobs[0].id, old);
	queue_jobs_free(jobs, n);
	f.older_than_ms = 0;
	f.limit = 2;
	f.after_id = old;
	assert_int_equal(queue_list(t->q, &f, &jobs, &n), QUEUE_OK);
	assert_int_equal(n, 2);
	assert_int_equal(jobs[0].id, old + 1);
	queue_jobs_free(jobs, n);
	f.limit = -1;
	assert_int_equal(queue_list(t->q, &f, &jobs, &n), QUEUE_EINVAL);
}

/* Counts by state, oldest due job, retries, rescues, coalesced. */
static void
test_stats(void **state)
{
	struct qtest			*t = *state;
	struct queue_enqueue_req	 r = { .lane = "a", .kind = "k",
	    .priority = 5, .coalesce_key = "c" };
	struct queue_stats		 st;
	struct queue_job		 j;
	size_t				 n;

	make_jobs(t->q, "k", 3, QUEUE_DONE, NULL);
	make_jobs(t->q, "k", 2, QUEUE_FAILED, NULL);
	assert_int_equal(queue_enqueue(t->q, &r, NULL), QUEUE_OK);
	assert_int_equal(queue_enqueue(t->q, &r, NULL), QUEUE_OK);
	t->now += 7000;
	qtest_put(t->q, "a", "k", 0);
	qtest_claim1(t->q, "a", &j);
	t->now += 40000;
	assert_int_equal(queue_reap(t->q, &n), QUEUE_OK);
	queue_job_clear(&j);
	assert_int_equal(queue_stats(t->q, &st), QUEUE_OK);
	assert_int_equal(st.count[QUEUE_DONE], 3);
	assert_int_equal(st.count[QUEUE_FAILED], 2);
	assert_int_equal(st.count[QUEUE_CANCELLED], 1);
	assert_int_equal(st.count[QUEUE_QUEUED], 2);
	assert_int_equal(st.count[QUEUE_RUNNING], 0);
	assert_int_equal(st.oldest_due_age_ms, 47000);
	assert_int_equal(st.rescues, 1);
	assert_int_equal(st.coalesced, 1);
	assert_int_equal(st.retries, 0);
}

/* Old DONE and FAILED go, in batches, over the matching index. */
static void
test_prune(void **state)
{
	struct qtest	*t = *state;
	size_t		 n;
	int64_t		 ids[3], parent, child;

	make_jobs(t->q, "k", 1205, QUEUE_DONE, NULL);
	make_jobs(t->q, "k", 3, QUEUE_FAILED, ids);
	assert_int_equal(queue_data_put(t->q, ids[0], "x", "y", 1), QUEUE_OK);
	/* A DONE parent stays while its child is FAILED. */
	make_jobs(t->q, "k", 1, QUEUE_DONE, &parent);
	assert_int_equal(queue_enqueue(t->q, &(struct queue_enqueue_req){
	    .lane = "a", .kind = "k", .after_job = parent, .max_attempts = 1 },
	    &child), QUEUE_OK);
	assert_int_equal(qtest_claim_n(t->q, "a", 1, NULL), 1);
	assert_int_equal(queue_fail(t->q, child, 1, "x", true), QUEUE_OK);
	t->now += 12 * 3600 * 1000;
	make_jobs(t->q, "k", 10, QUEUE_DONE, NULL);

	t->now += 12 * 3600 * 1000 + 1;
	assert_int_equal(queue_prune(t->q, 0, 0, &n), QUEUE_OK);
	assert_int_equal(n, 1205);
	assert_int_equal(qtest_sql_int(t->q, "SELECT count(*) FROM jobs "
	    "WHERE state = 2"), 11);
	assert_int_equal(qtest_state(t->q, parent), QUEUE_DONE);
	assert_int_equal(qtest_sql_int(t->q, "SELECT count(*) FROM job_events "
	    "WHERE job_id NOT IN (SELECT id FROM jobs)"), 0);

	/* Negative age: keep that class. */
	t->now += 7LL * 24 * 3600 * 1000;
	assert_int_equal(queue_prune(t->q, -1, -1, &n), QUEUE_OK);
	assert_int_equal(n, 0);
	assert_int_equal(queue_prune(t->q, -1, 0, &n), QUEUE_OK);
	assert_int_equal(n, 4);
	assert_int_equal(qtest_sql_int(t->q, "SELECT count(*) FROM job_data"),
	    0);
	assert_int_equal(queue_prune(t->q, 0, 0, &n), QUEUE_OK);
	assert_int_equal(n, 11);
	assert_int_equal(qtest_sql_int(t->q, "SELECT count(*) FROM jobs"), 0);
	assert_int_equal(qtest_sql_int(t->q, "SELECT count(*) FROM job_events"),
	    0);
}

/* The prune and claim statements use the partial indexes. */
static void
test_plans(void **state)
{
	struct qtest	*t = *state;
	struct store_stmt	*s;
	const char	*sql[] = {
		"EXPLAIN QUERY PLAN SELECT j.id FROM jobs j INDEXED BY jobs_age "
		"WHERE j.state >= 2 AND j.state = 2 AND j.updated < 5",
		"EXPLAIN QUERY PLAN SELECT id FROM jobs INDEXED BY jobs_due "
		"WHERE state = 0 AND blocked = 0 AND lane = 'a' AND priority "
		"BETWEEN 0 AND 9 AND run_after <= 5 ORDER BY priority, "
		"run_after, id LIMIT 16",
	};
	size_t		 i;

	qtest_sqlite_only(t, "the SQLite query plans of INDEXED BY");
	char		 plan[512];

	for (i = 0; i < sizeof sql / sizeof *sql; i++) {
		assert_int_equal(store_prepare(queue_db(t->q), sql[i], 0, &s),
		    STORE_OK);
		plan[0] = '\0';
		while (store_step(s) == STORE_ROW)
			strncat(plan, store_column_text(s, 3),
			    sizeof plan - strlen(plan) - 1);
		store_finalize(s);
		assert_non_null(strstr(plan, "SEARCH"));
		assert_null(strstr(plan, "TEMP B-TREE"));
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_requeue,
		    qtest_setup, qtest_teardown),
		cmocka_unit_test_setup_teardown(test_requeue_many,
		    qtest_setup, qtest_teardown),
		cmocka_unit_test_setup_teardown(test_cancel,
		    qtest_setup, qtest_teardown),
		cmocka_unit_test_setup_teardown(test_list,
		    qtest_setup, qtest_teardown),
		cmocka_unit_test_setup_teardown(test_stats,
		    qtest_setup, qtest_teardown),
		cmocka_unit_test_setup_teardown(test_prune,
		    qtest_setup, qtest_teardown),
		cmocka_unit_test_setup_teardown(test_plans,
		    qtest_setup, qtest_teardown),
	};

	return cmocka_run_group_tests_name("queue_admin", tests, NULL, NULL);
}
