/*
 * queue: backoff, attempts, permanent failure, the reaper, a restarted
 * worker's orphans, delayed jobs.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "queue/tests/qtest.h"

/* Fail the one running job of lane "a" (retryable). */
static void
fail_one(struct qtest *t, struct queue_job *j, const char *why)
{
	qtest_claim1(t->q, "a", j);
	assert_int_equal(queue_fail(t->q, j->id, j->lease_gen, why, false),
	    QUEUE_OK);
}

/* min(cap, base * 2^(attempt-1)) +-10 %, stored in run_after. */
static void
test_backoff(void **state)
{
	struct qtest		*t = *state;
	struct queue_policy	 p = { .max_attempts = 6, .backoff_base_ms = 1000,
	    .backoff_cap_ms = 8000, .jitter_pct = 10 };
	struct queue_job	 j;
	struct queue_stats	 st;
	int64_t			 id, d, want[] = { 1000, 2000, 4000, 8000, 8000 };
	int			 a;

	assert_int_equal(queue_set_policy(t->q, "publish", &p), QUEUE_OK);
	id = qtest_put(t->q, "a", "publish", 5);
	for (a = 1; a <= 5; a++) {
		fail_one(t, &j, "NACK");
		assert_int_equal(j.attempts, a);
		queue_job_clear(&j);
		assert_int_equal(queue_get(t->q, id, &j), QUEUE_OK);
		assert_int_equal(j.state, QUEUE_QUEUED);
		assert_string_equal(j.last_error, "NACK");
		d = j.run_after_ms - t->now;
		assert_in_range(d, want[a - 1] * 9 / 10, want[a - 1] * 11 / 10);
		/* Not due before run_after, due at it. */
		t->now = j.run_after_ms - 1;
		assert_int_equal(qtest_claim_n(t->q, "a", 1, NULL), 0);
		t->now = j.run_after_ms;
		queue_job_clear(&j);
	}
	fail_one(t, &j, "NACK again");
	assert_int_equal(j.attempts, 6);
	queue_job_clear(&j);
	assert_int_equal(qtest_state(t->q, id), QUEUE_FAILED);
	assert_int_equal(queue_stats(t->q, &st), QUEUE_OK);
	assert_int_equal(st.retries, 5);
	assert_int_equal(st.count[QUEUE_FAILED], 1);
	assert_int_equal(qtest_events(t->q, id, QUEUE_FAILED), 1);
}

/* The jitter spreads retries and stays within +-jitter %. */
static void
test_jitter(void **state)
{
	struct qtest		*t = *state;
	struct queue_policy	 p = { .backoff_base_ms = 10000,
	    .jitter_pct = 20 };
	struct queue_job	 jobs[50];
	int64_t			 lo = INT64_MAX, hi = 0, d, id;
	size_t			 n, i;

	assert_int_equal(queue_set_policy(t->q, NULL, &p), QUEUE_OK);
	for (i = 0; i < 50; i++)
		qtest_put(t->q, "a", "k", 5);
	assert_int_equal(queue_claim(t->q, "a", "w", 0, jobs, 50, &n),
	    QUEUE_OK);
	assert_int_equal(n, 50);
	for (i = 0; i < n; i++) {
		id = jobs[i].id;
		assert_int_equal(queue_fail(t->q, id, jobs[i].lease_gen, "e",
		    false), QUEUE_OK);
		queue_job_clear(&jobs[i]);
		assert_int_equal(queue_get(t->q, id, &jobs[i]), QUEUE_OK);
		d = jobs[i].run_after_ms - t->now;
		assert_in_range(d, 8000, 12000);
		lo = d < lo ? d : lo;
		hi = d > hi ? d : hi;
		queue_job_clear(&jobs[i]);
	}
	assert_true(hi - lo > 1000);
}

/* A permanent failure goes to FAILED at once. */
static void
test_permanent(void **state)
{
	struct qtest		*t = *state;
	struct queue_job	 j;
	int64_t			 id;

	id = qtest_put(t->q, "a", "k", 5);
	qtest_claim1(t->q, "a", &j);
	assert_int_equal(queue_fail(t->q, id, j.lease_gen, "unknown objID",
	    true), QUEUE_OK);
	queue_job_clear(&j);
	assert_int_equal(queue_get(t->q, id, &j), QUEUE_OK);
	assert_int_equal(j.state, QUEUE_FAILED);
	assert_int_equal(j.attempts, 1);
	assert_string_equal(j.last_error, "unknown objID");
	queue_job_clear(&j);
}

/*
 * Attempts are counted at claim: a job whose worker dies every time goes
 * to FAILED once its attempts are used up, by the reaper.
 */
static void
test_crash_loop(void **state)
{
	struct qtest		*t = *state;
	struct queue_enqueue_req r = { .lane = "a", .kind = "k",
	    .max_attempts = 2, .priority = 5 };
	struct queue_job	 j;
	struct queue_stats	 st;
	size_t			 n;
	int64_t			 id;

	assert_int_equal(queue_enqueue(t->q, &r, &id), QUEUE_OK);
	qtest_claim1(t->q, "a", &j);
	queue_job_clear(&j);
	t->now += 29999;
	assert_int_equal(queue_reap(t->q, &n), QUEUE_OK);
	assert_int_equal(n, 0);
	t->now += 2;
	assert_int_equal(queue_reap(t->q, &n), QUEUE_OK);
	assert_int_equal(n, 1);
	assert_int_equal(queue_get(t->q, id, &j), QUEUE_OK);
	assert_int_equal(j.state, QUEUE_QUEUED);
	assert_in_range(j.run_after_ms - t->now, 900, 1100);
	assert_non_null(strstr(j.last_error, "lease expired (worker w1)"));
	t->now = j.run_after_ms;
	queue_job_clear(&j);

	qtest_claim1(t->q, "a", &j);
	assert_int_equal(j.attempts, 2);
	queue_job_clear(&j);
	t->now += 60000;
	assert_int_equal(queue_reap(t->q, &n), QUEUE_OK);
	assert_int_equal(n, 1);
	assert_int_equal(qtest_state(t->q, id), QUEUE_FAILED);
	assert_int_equal(queue_stats(t->q, &st), QUEUE_OK);
	assert_int_equal(st.rescues, 2);
	assert_int_equal(st.retries, 0);
}

/* The reaper never touches a completed job, nor a heartbeating one. */
static void
test_reaper_guard(void **state)
{
	struct qtest		*t = *state;
	struct queue_job	 a, b;
	size_t			 n;

	qtest_put(t->q, "a", "k", 5);
	qtest_put(t->q, "a", "k", 5);
	qtest_claim1(t->q, "a", &a);
	qtest_claim1(t->q, "a", &b);
	assert_int_equal(queue_complete(t->q, a.id, a.lease_gen), QUEUE_OK);
	t->now += 25000;
	assert_int_equal(queue_heartbeat(t->q, b.id, b.lease_gen, 0), QUEUE_OK);
	t->now += 25000;
	assert_int_equal(queue_reap(t->q, &n), QUEUE_OK);
	assert_int_equal(n, 0);
	assert_int_equal(qtest_state(t->q, a.id), QUEUE_DONE);
	assert_int_equal(qtest_state(t->q, b.id), QUEUE_RUNNING);
	assert_int_equal(queue_complete(t->q, b.id, b.lease_gen), QUEUE_OK);
	queue_job_clear(&a);
	queue_job_clear(&b);
}

/* Claim one job of lane "a" as worker w. */
static void
claim_as(struct qtest *t, const char *w, struct queue_job *j)
{
	size_t	n;

	assert_int_equal(queue_claim(t->q, "a", w, 0, j, 1, &n), QUEUE_OK);
	assert_int_equal(n, 1);
}

/*
 * A restarted worker takes back at once what its previous life held (due
 * now, the attempt still counted, FAILED when used up); jobs of other
 * workers and its own current ones keep their lease; a late call of the
 * dead one is fenced off, before and after the job is claimed again.
 * queue_release_all takes back every RUNNING job.
 */
static void
test_orphans(void **state)
{
	struct qtest		*t = *state;
	struct queue_enqueue_req r = { .lane = "a", .kind = "k",
	    .max_attempts = 1, .priority = 5 };
	struct queue_job	 old1, old2, last, other, mine, again;
	struct queue_stats	 st;
	size_t			 n;
	int64_t			 id;

	qtest_put(t->q, "a", "k", 1);
	qtest_put(t->q, "a", "k", 2);
	assert_int_equal(queue_enqueue(t->q, &r, &id), QUEUE_OK);
	qtest_put(t->q, "a", "k", 8);
	qtest_put(t->q, "a", "k", 9);
	claim_as(t, "gw:100:n1", &old1);
	claim_as(t, "gw:100:n2", &old2);
	claim_as(t, "gw:100:n1", &last);	/* its only attempt */
	claim_as(t, "mosctl", &other);
	claim_as(t, "gw:200:n1", &mine);
	t->now += 10;

	assert_int_equal(queue_release_orphans(t->q, "", NULL, &n),
	    QUEUE_EINVAL);
	assert_int_equal(queue_release_orphans(t->q, "gw:", "gw:200:n1", &n),
	    QUEUE_OK);
	assert_int_equal(n, 3);
	assert_int_equal(qtest_state(t->q, old1.id), QUEUE_QUEUED);
	assert_int_equal(qtest_state(t->q, old2.id), QUEUE_QUEUED);
	assert_int_equal(qtest_state(t->q, id), QUEUE_FAILED);
	assert_int_equal(qtest_state(t->q, other.id), QUEUE_RUNNING);
	assert_int_equal(qtest_state(t->q, mine.id), QUEUE_RUNNING);
	assert_int_equal(queue_get(t->q, old1.id, &again), QUEUE_OK);
	assert_int_equal(again.attempts, 1);
	assert_true(again.run_after_ms <= t->now);
	assert_non_null(strstr(again.last_error, "worker gw:100:n1 is gone"));
	queue_job_clear(&again);
	assert_int_equal(queue_stats(t->q, &st), QUEUE_OK);
	assert_int_equal(st.rescues, 3);

	/* the dead one's late calls change nothing, before and after */
	assert_int_equal(queue_complete(t->q, old1.id, old1.lease_gen),
	    QUEUE_ELOST);
	assert_int_equal(queue_fail(t->q, old2.id, old2.lease_gen, "late",
	    false), QUEUE_ELOST);
	claim_as(t, "gw:200:n1", &again);
	assert_int_equal(again.id, old1.id);
	assert_int_equal(again.attempts, 2);
	assert_int_equal(queue_complete(t->q, old1.id, old1.lease_gen),
	    QUEUE_ELOST);
	assert_int_equal(queue_release(t->q, old1.id, old1.lease_gen, 0),
	    QUEUE_ELOST);
	assert_int_equal(qtest_state(t->q, old1.id), QUEUE_RUNNING);
	assert_int_equal(queue_complete(t->q, again.id, again.lease_gen),
	    QUEUE_OK);
	assert_int_equal(queue_complete(t->q, other.id, other.lease_gen),
	    QUEUE_OK);

	/* without self, every job of the prefix goes back */
	assert_int_equal(queue_release_orphans(t->q, "gw:", NULL, &n),
	    QUEUE_OK);
	assert_int_equal(n, 1);
	assert_int_equal(qtest_state(t->q, mine.id), QUEUE_QUEUED);

	/* every RUNNING job, whoever holds it (a database being moved) */
	queue_job_clear(&mine);
	queue_job_clear(&other);
	claim_as(t, "gw:300:n1", &mine);
	claim_as(t, "mosctl", &other);
	assert_int_equal(queue_release_all(t->q, &n), QUEUE_OK);
	assert_int_equal(n, 2);
	assert_int_equal(qtest_state(t->q, mine.id), QUEUE_QUEUED);
	assert_int_equal(qtest_state(t->q, other.id), QUEUE_QUEUED);
	assert_int_equal(queue_stats(t->q, &st), QUEUE_OK);
	assert_int_equal(st.rescues, 6);
	assert_int_equal(queue_release_all(t->q, &n), QUEUE_OK);
	assert_int_equal(n, 0);
	queue_job_clear(&old1);
	queue_job_clear(&old2);
	queue_job_clear(&last);
	queue_job_clear(&other);
	queue_job_clear(&mine);
	queue_job_clear(&again);
}

/* A delayed job is not due before its time; stats see it only when due. */
static void
test_delayed(void **state)
{
	struct qtest		*t = *state;
	struct queue_enqueue_req r = { .lane = "a", .kind = "k", .priority = 5 };
	struct queue_stats	 st;
	int64_t			 id;

	r.run_after_ms = t->now + 60000;
	assert_int_equal(queue_enqueue(t->q, &r, &id), QUEUE_OK);
	assert_int_equal(qtest_claim_n(t->q, "a", 4, NULL), 0);
	assert_int_equal(qtest_claim_n(t->q, NULL, 4, NULL), 0);
	assert_int_equal(queue_stats(t->q, &st), QUEUE_OK);
	assert_int_equal(st.count[QUEUE_QUEUED], 1);
	assert_int_equal(st.oldest_due_age_ms, 0);
	t->now += 60000 + 1500;
	assert_int_equal(queue_stats(t->q, &st), QUEUE_OK);
	assert_int_equal(st.oldest_due_age_ms, 1500);
	assert_int_equal(qtest_claim_n(t->q, "a", 4, NULL), 1);
}

/* The lease comes from the kind's policy unless the claim names one. */
static void
test_lease_policy(void **state)
{
	struct qtest		*t = *state;
	struct queue_policy	 p = { .lease_ms = 5000 };
	struct queue_job	 j[2];
	size_t			 n;

	assert_int_equal(queue_set_policy(t->q, "short", &p), QUEUE_OK);
	qtest_put(t->q, "a", "short", 1);
	qtest_put(t->q, "a", "other", 2);
	assert_int_equal(queue_claim(t->q, "a", "w", 0, j, 2, &n), QUEUE_OK);
	assert_int_equal(n, 2);
	assert_string_equal(j[0].kind, "short");
	assert_true(j[0].lease_until_ms == t->now + 5000);
	assert_true(j[1].lease_until_ms == t->now + 30000);
	assert_int_equal(queue_heartbeat(t->q, j[0].id, j[0].lease_gen, 700),
	    QUEUE_OK);
	queue_job_clear(&j[1]);
	assert_int_equal(queue_get(t->q, j[0].id, &j[1]), QUEUE_OK);
	assert_true(j[1].lease_until_ms == t->now + 700);
	queue_job_clear(&j[0]);
	queue_job_clear(&j[1]);
	qtest_put(t->q, "a", "short", 1);
	assert_int_equal(queue_claim(t->q, "a", "w", 1234, j, 1, &n), QUEUE_OK);
	assert_true(j[0].lease_until_ms == t->now + 1234);
	queue_job_clear(&j[0]);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_backoff,
		    qtest_setup, qtest_teardown),
		cmocka_unit_test_setup_teardown(test_jitter,
		    qtest_setup, qtest_teardown),
		cmocka_unit_test_setup_teardown(test_permanent,
		    qtest_setup, qtest_teardown),
		cmocka_unit_test_setup_teardown(test_crash_loop,
		    qtest_setup, qtest_teardown),
		cmocka_unit_test_setup_teardown(test_reaper_guard,
		    qtest_setup, qtest_teardown),
		cmocka_unit_test_setup_teardown(test_orphans,
		    qtest_setup, qtest_teardown),
		cmocka_unit_test_setup_teardown(test_delayed,
		    qtest_setup, qtest_teardown),
		cmocka_unit_test_setup_teardown(test_lease_policy,
		    qtest_setup, qtest_teardown),
	};

	return cmocka_run_group_tests_name("queue_retry", tests, NULL, NULL);
}
