/* queue: idempotency keys and coalescing keys. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store.h"
#include "queue/tests/qtest.h"

/* Enqueue with keys; returns the rc, *id the job. */
static int
put_keyed(struct queue *q, const char *idem, const char *coalesce,
    const char *payload, int64_t after, int64_t *id)
{
	struct queue_enqueue_req	r = {
		.lane = "ncs:A",
		.kind = "publish",
		.priority = 5,
		.idem_key = idem,
		.coalesce_key = coalesce,
		.payload = payload,
		.payload_len = payload != NULL ? strlen(payload) : 0,
		.after_job = after,
	};

	return queue_enqueue(q, &r, id);
}

/* The same idempotency key gives the same job, whatever its state. */
static void
test_idempotency(void **state)
{
	struct qtest		*t = *state;
	struct queue_job	 j;
	int64_t			 a, b, c;

	assert_int_equal(put_keyed(t->q, "ncsA:roCreate:17", NULL, "x", 0, &a),
	    QUEUE_OK);
	assert_int_equal(put_keyed(t->q, "ncsA:roCreate:17", NULL, "y", 0, &b),
	    QUEUE_EXISTS);
	assert_int_equal(a, b);
	assert_int_equal(qtest_sql_int(t->q, "SELECT count(*) FROM jobs"), 1);
	qtest_claim1(t->q, "ncs:A", &j);
	assert_memory_equal(j.payload, "x", 1);
	assert_int_equal(queue_complete(t->q, a, j.lease_gen), QUEUE_OK);
	queue_job_clear(&j);
	assert_int_equal(put_keyed(t->q, "ncsA:roCreate:17", NULL, "z", 0, &b),
	    QUEUE_EXISTS);
	assert_int_equal(a, b);
	assert_int_equal(qtest_state(t->q, a), QUEUE_DONE);

	/* Inside one caller transaction, too. */
	assert_int_equal(queue_tx_begin(t->q), QUEUE_OK);
	assert_int_equal(put_keyed(t->q, "k2", NULL, NULL, 0, &b), QUEUE_OK);
	assert_int_equal(put_keyed(t->q, "k2", NULL, NULL, 0, &c), QUEUE_EXISTS);
	assert_int_equal(b, c);
	assert_int_equal(queue_tx_commit(t->q), QUEUE_OK);
	assert_int_equal(qtest_sql_int(t->q, "SELECT count(*) FROM jobs"), 2);
	/* The index is what enforces it, and the schema says so. */
	assert_int_equal(qtest_sql_int(t->q, t->driver == STORE_POSTGRESQL ?
	    "SELECT count(*) FROM pg_indexes WHERE indexname = 'jobs_idem' AND "
	    "indexdef LIKE '%UNIQUE%'" : "SELECT count(*) FROM sqlite_master "
	    "WHERE name = 'jobs_idem' AND sql LIKE '%UNIQUE%'"), 1);
}

/* A burst of edits of one object becomes one job with the newest state. */
static void
test_coalesce(void **state)
{
	struct qtest		*t = *state;
	struct queue_job	 j;
	struct queue_stats	 st;
	struct queue_event	*ev;
	char			 note[64];
	size_t			 n;
	int64_t			 id[3], other;

	assert_int_equal(put_keyed(t->q, NULL, "obj:A@ncs1", "rev1", 0, &id[0]),
	    QUEUE_OK);
	assert_int_equal(put_keyed(t->q, NULL, "obj:B@ncs1", "B", 0, &other),
	    QUEUE_OK);
	assert_int_equal(put_keyed(t->q, NULL, "obj:A@ncs1", "rev2", 0, &id[1]),
	    QUEUE_OK);
	assert_int_equal(put_keyed(t->q, NULL, "obj:A@ncs1", "rev3", 0, &id[2]),
	    QUEUE_OK);
	assert_int_equal(qtest_state(t->q, id[0]), QUEUE_CANCELLED);
	assert_int_equal(qtest_state(t->q, id[1]), QUEUE_CANCELLED);
	assert_int_equal(qtest_state(t->q, id[2]), QUEUE_QUEUED);
	assert_int_equal(qtest_state(t->q, other), QUEUE_QUEUED);
	assert_int_equal(queue_history(t->q, id[1], &ev, &n), QUEUE_OK);
	assert_int_equal(n, 2);
	snprintf(note, sizeof note, "coalesced into #%lld", (long long)id[2]);
	assert_string_equal(ev[1].note, note);
	queue_events_free(ev, n);
	assert_int_equal(queue_stats(t->q, &st), QUEUE_OK);
	assert_int_equal(st.coalesced, 2);
	assert_int_equal(st.count[QUEUE_QUEUED], 2);

	qtest_claim1(t->q, "ncs:A", &j);
	assert_int_equal(j.id, other);
	queue_job_clear(&j);
	qtest_claim1(t->q, "ncs:A", &j);
	assert_int_equal(j.id, id[2]);
	assert_int_equal(j.payload_len, 4);
	assert_memory_equal(j.payload, "rev3", 4);
	queue_job_clear(&j);
}

/* A RUNNING job is not superseded: the new one waits behind it. */
static void
test_coalesce_running(void **state)
{
	struct qtest		*t = *state;
	struct queue_job	 j;
	struct queue_stats	 st;
	int64_t			 a, b;

	assert_int_equal(put_keyed(t->q, NULL, "obj:A@n", "rev1", 0, &a),
	    QUEUE_OK);
	qtest_claim1(t->q, "ncs:A", &j);
	assert_int_equal(put_keyed(t->q, NULL, "obj:A@n", "rev2", 0, &b),
	    QUEUE_OK);
	assert_int_equal(qtest_state(t->q, a), QUEUE_RUNNING);
	assert_int_equal(qtest_state(t->q, b), QUEUE_QUEUED);
	assert_int_equal(queue_complete(t->q, a, j.lease_gen), QUEUE_OK);
	queue_job_clear(&j);
	assert_int_equal(queue_stats(t->q, &st), QUEUE_OK);
	assert_int_equal(st.coalesced, 0);
	qtest_claim1(t->q, "ncs:A", &j);
	assert_int_equal(j.id, b);
	queue_job_clear(&j);
}

/* Jobs that waited for a superseded job wait for its successor. */
static void
test_coalesce_chain(void **state)
{
	struct qtest		*t = *state;
	struct queue_job	 j;
	int64_t			 a, dep, b, bad;

	assert_int_equal(put_keyed(t->q, NULL, "obj:A@n", "rev1", 0, &a),
	    QUEUE_OK);
	assert_int_equal(put_keyed(t->q, NULL, NULL, "then", a, &dep), QUEUE_OK);
	/* A job may not wait for the job it would supersede. */
	assert_int_equal(put_keyed(t->q, NULL, "obj:A@n", "x", a, &bad),
	    QUEUE_EINVAL);
	assert_int_equal(put_keyed(t->q, NULL, "obj:A@n", "x", dep, &bad),
	    QUEUE_EINVAL);
	assert_int_equal(qtest_state(t->q, a), QUEUE_QUEUED);

	assert_int_equal(put_keyed(t->q, NULL, "obj:A@n", "rev2", 0, &b),
	    QUEUE_OK);
	assert_int_equal(qtest_state(t->q, a), QUEUE_CANCELLED);
	assert_int_equal(queue_get(t->q, dep, &j), QUEUE_OK);
	assert_int_equal(j.after_job, b);
	assert_true(j.blocked);
	queue_job_clear(&j);
	qtest_claim1(t->q, "ncs:A", &j);
	assert_int_equal(j.id, b);
	assert_int_equal(qtest_claim_n(t->q, "ncs:A", 4, NULL), 0);
	assert_int_equal(queue_complete(t->q, b, j.lease_gen), QUEUE_OK);
	queue_job_clear(&j);
	qtest_claim1(t->q, "ncs:A", &j);
	assert_int_equal(j.id, dep);
	queue_job_clear(&j);
}

/*
 * Every job, event and counter of a queue as text (ids included), in
 * SQLite's dialect or PostgreSQL's: G(rows) joins them, Q(x) quotes.
 */
#define DUMP_SQL(G, Q) \
	"SELECT " G " FROM (" \
	"SELECT " Q("id") " || lane || kind || " Q("payload") " || state ||" \
	" blocked || priority || max_attempts || run_after ||" \
	" " Q("idem_key") " || " Q("coalesce_key") " || " Q("after_job") \
	" || created || updated AS r FROM jobs" \
	" UNION ALL SELECT 'ev' || id || ':' || job_id || ' ' || t || ' ' ||" \
	" from_state || to_state || attempt || " Q("worker") " || " \
	Q("note") " FROM job_events" \
	" UNION ALL SELECT name || '=' || value FROM queue_counters) d"
#define SQLITE_Q(x)	"quote(" x ")"
#define PG_Q(x)		"quote_nullable(" x ")"
static char *
dump(struct queue *q)
{
	static const char sqlite[] = DUMP_SQL("group_concat(r, char(10))",
	    SQLITE_Q);
	static const char pg[] = DUMP_SQL("string_agg(r, chr(10))", PG_Q);
	struct store_stmt	*st;
	char		*out;

	assert_int_equal(store_prepare(queue_db(q), store_driver(queue_db(q))
	    == STORE_POSTGRESQL ? pg : sqlite, 0, &st), STORE_OK);
	assert_int_equal(store_step(st), STORE_ROW);
	out = strdup(store_column_text(st, 0));
	store_finalize(st);
	assert_non_null(out);
	return out;
}

/*
 * queue_enqueue_many does what queue_enqueue does one request after the
 * other: the same jobs, events and counters, keys coalescing within the
 * batch and with jobs before it, an idempotency key taken, a chain.
 */
static void
test_enqueue_many(void **state)
{
	struct qtest			*t = *state, t2;
	struct queue_enqueue_req	 r[7];
	struct queue_job		 j;
	int64_t				 first, ids[7], id1;
	int				 rcs[7], rc1;
	char				*a, *b;
	size_t				 i, failed;

	assert_int_equal(qtest_init(&t2, true), 0);
	memset(r, 0, sizeof r);
	for (i = 0; i < 7; i++) {
		r[i].lane = "ncs:A";
		r[i].kind = "publish";
		r[i].priority = 5;
		r[i].payload = "p";
		r[i].payload_len = 1;
	}
	r[0].coalesce_key = "obj:A@n";		/* supersedes the older job */
	r[1].coalesce_key = "obj:B@n";
	r[2].coalesce_key = "obj:A@n";		/* supersedes r[0] */
	r[3].idem_key = "taken";		/* exists already */
	r[4].idem_key = "new";
	r[5].coalesce_key = "obj:R@n";		/* the RUNNING one stays */
	r[6].coalesce_key = "obj:C@n";		/* chained after r[1]'s job */
	/* the same start in both files */
	for (i = 0; i < 2; i++) {
		struct queue	*q = i == 0 ? t->q : t2.q;

		assert_int_equal(put_keyed(q, NULL, "obj:R@n", "run", 0,
		    &first), QUEUE_OK);
		assert_int_equal(qtest_claim_n(q, "ncs:A", 1, NULL), 1);
		assert_int_equal(put_keyed(q, NULL, "obj:A@n", "old", 0,
		    &first), QUEUE_OK);
		assert_int_equal(put_keyed(q, "taken", NULL, "t", 0, &first),
		    QUEUE_OK);
	}
	r[6].after_job = first + 2;	/* the id r[1] gets */
	for (i = 0; i < 7; i++) {
		assert_true(queue_enqueue(t->q, &r[i], &id1) >= 0);
		(void)id1;
	}
	assert_int_equal(queue_enqueue_many(t2.q, r, 7, ids, rcs, &failed),
	    QUEUE_OK);
	for (i = 0; i < 7; i++)
		assert_int_equal(rcs[i], i == 3 ? QUEUE_EXISTS : QUEUE_OK);
	assert_int_equal(ids[3], first);
	assert_int_equal(qtest_state(t2.q, first - 1), QUEUE_CANCELLED);
	assert_int_equal(qtest_state(t2.q, ids[0]), QUEUE_CANCELLED);
	assert_int_equal(qtest_state(t2.q, ids[2]), QUEUE_QUEUED);
	assert_int_equal(qtest_state(t2.q, first - 2), QUEUE_RUNNING);
	assert_int_equal(qtest_state(t2.q, ids[5]), QUEUE_QUEUED);
	assert_int_equal(queue_get(t2.q, ids[6], &j), QUEUE_OK);
	assert_true(j.blocked);
	assert_int_equal(j.after_job, ids[1]);
	queue_job_clear(&j);
	a = dump(t->q);
	b = dump(t2.q);
	assert_string_equal(a, b);
	free(a);
	free(b);

	/* all or nothing: a bad request stores none of the batch */
	r[4].idem_key = "other";
	r[5].after_job = 999999;
	rc1 = queue_enqueue_many(t2.q, r, 7, ids, rcs, &failed);
	assert_int_equal(rc1, QUEUE_ENOTFOUND);
	assert_int_equal(failed, 5);
	a = dump(t->q);
	b = dump(t2.q);
	assert_string_equal(a, b);
	free(a);
	free(b);
	r[5].after_job = 0;
	r[2].priority = 10;
	assert_int_equal(queue_enqueue_many(t2.q, r, 7, ids, rcs, &failed),
	    QUEUE_EINVAL);
	assert_int_equal(failed, 2);
	assert_int_equal(queue_enqueue_many(t2.q, r, 0, ids, rcs, &failed),
	    QUEUE_OK);
	a = dump(t2.q);
	assert_int_equal(qtest_history_breaks(t2.q), 0);
	b = dump(t->q);
	assert_string_equal(a, b);
	free(a);
	free(b);
	qtest_fini(&t2);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_idempotency,
		    qtest_setup, qtest_teardown),
		cmocka_unit_test_setup_teardown(test_coalesce,
		    qtest_setup, qtest_teardown),
		cmocka_unit_test_setup_teardown(test_coalesce_running,
		    qtest_setup, qtest_teardown),
		cmocka_unit_test_setup_teardown(test_coalesce_chain,
		    qtest_setup, qtest_teardown),
		cmocka_unit_test_setup_teardown(test_enqueue_many,
		    qtest_setup, qtest_teardown),
	};

	return cmocka_run_group_tests_name("queue_keys", tests, NULL, NULL);
}
