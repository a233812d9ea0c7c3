/*
 * The event log on a real database file: the trigger that turns job state
 * changes into job.state and asset.* events, explicit events, reading in
 * order, pruning by count and age with the pruned mark, webhook fan-out
 * with its cursor, the type filters, the webhook configuration and the
 * signature.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <jansson.h>

#include "gateway/tests/gwunit.h"

/* Enqueue a job as the gateway would; its id. */
static int64_t
enqueue(struct gwunit *u, const char *lane, const char *kind,
    const char *payload)
{
	struct queue_enqueue_req	req;
	int64_t				id = 0;

	memset(&req, 0, sizeof req);
	req.lane = lane;
	req.kind = kind;
	req.payload = payload;
	req.payload_len = strlen(payload);
	req.priority = QUEUE_PRIO_DEFAULT;
	req.max_attempts = 1;
	assert_int_equal(queue_enqueue(u->db->q, &req, &id), QUEUE_OK);
	return id;
}

static json_t *
data_of(const struct event_row *r)
{
	json_t	*o = json_loads(r->data, 0, NULL);

	assert_non_null(o);
	return o;
}

static const char *
str(json_t *o, const char *k)
{
	const char	*v = json_string_value(json_object_get(o, k));

	return v != NULL ? v : "(null)";
}

/* A publish job's life: job.state each step, asset.delivered at DONE. */
static void
test_trigger(void **state)
{
	struct gwunit		*u = *state;
	struct event_row	*r;
	struct queue_job	 j;
	size_t			 n, got;
	int64_t			 id, head, pruned;
	json_t			*o;

	id = enqueue(u, "ncs:n1", CATALOG_KIND_PUBLISH, "CLIP-1");
	assert_int_equal(queue_claim(u->db->q, "ncs:n1", "w", 0, &j, 1, &got),
	    QUEUE_OK);
	assert_int_equal(got, 1);
	assert_int_equal(catalog_delivery_put(u->db, "n1", "CLIP-1", 4,
	    "UPDATED"), QUEUE_OK);
	assert_int_equal(queue_complete(u->db->q, id, j.lease_gen), QUEUE_OK);
	queue_job_clear(&j);

	assert_int_equal(events_read(u->db, 0, 100, &r, &n), QUEUE_OK);
	assert_int_equal(n, 4);
	assert_string_equal(r[0].type, "job.state");
	o = data_of(&r[0]);
	assert_string_equal(str(o, "state"), "QUEUED");
	assert_string_equal(str(o, "objID"), "CLIP-1");
	assert_string_equal(str(o, "kind"), "publish");
	assert_int_equal(json_integer_value(json_object_get(o, "jobId")), id);
	json_decref(o);
	o = data_of(&r[1]);
	assert_string_equal(str(o, "state"), "RUNNING");
	assert_int_equal(json_integer_value(json_object_get(o, "attempt")), 1);
	json_decref(o);
	o = data_of(&r[2]);
	assert_string_equal(str(o, "state"), "DONE");
	json_decref(o);
	assert_string_equal(r[3].type, "asset.delivered");
	o = data_of(&r[3]);
	assert_string_equal(str(o, "objID"), "CLIP-1");
	assert_string_equal(str(o, "ncs"), "n1");
	assert_string_equal(str(o, "status"), "UPDATED");
	assert_int_equal(json_integer_value(json_object_get(o, "objRev")), 4);
	json_decref(o);
	assert_true(r[0].id + 3 == r[3].id && r[0].hook && r[3].hook);
	events_rows_free(r, n);

	/* a failed one: asset.failed with the error */
	id = enqueue(u, "ncs:n1", CATALOG_KIND_PUBLISH, "CLIP-2");
	assert_int_equal(queue_claim(u->db->q, "ncs:n1", "w", 0, &j, 1, &got),
	    QUEUE_OK);
	assert_int_equal(queue_fail(u->db->q, id, j.lease_gen, "NACK: full",
	    false), QUEUE_OK);
	queue_job_clear(&j);
	assert_int_equal(events_head(u->db, &head, &pruned), QUEUE_OK);
	assert_int_equal(events_read(u->db, head - 1, 100, &r, &n), QUEUE_OK);
	assert_int_equal(n, 1);
	assert_string_equal(r[0].type, "asset.failed");
	o = data_of(&r[0]);
	assert_string_equal(str(o, "error"), "NACK: full");
	assert_string_equal(str(o, "ncs"), "n1");
	json_decref(o);
	events_rows_free(r, n);

	/* a webhook's own job: logged, marked not for webhooks */
	enqueue(u, "webhook:x", "webhook:x", "{\"id\":1}");
	assert_int_equal(events_read(u->db, head, 100, &r, &n), QUEUE_OK);
	assert_int_equal(n, 1);
	assert_false(r[0].hook);
	o = data_of(&r[0]);
	assert_true(json_is_null(json_object_get(o, "objID")));
	json_decref(o);
	events_rows_free(r, n);
	/* a payload that is not text does not break the state change */
	enqueue(u, "mam", "obj-create", "\xff\xfe{");
	assert_int_equal(events_head(u->db, &head, &pruned), QUEUE_OK);
	assert_int_equal(pruned, 0);
}

/* The delivery_failed row of CLIP-1 to n1: its job id, 0 when none. */
static int64_t
failed_job(struct gwunit *u, char *error, size_t len)
{
	struct store_stmt	*st;
	int64_t			 id = 0;

	assert_int_equal(store_prepare(u->db->db, "SELECT job_id, error FROM "
	    "delivery_failed WHERE ncs = 'n1' AND obj_id = 'CLIP-1'", 0, &st),
	    STORE_OK);
	if (store_step(st) == STORE_ROW) {
		id = store_column_int64(st, 0);
		snprintf(error, len, "%s", store_column_text(st, 1) != NULL ?
		    store_column_text(st, 1) : "(null)");
	}
	store_finalize(st);
	return id;
}

/* Claim the one due job of ncs:n1 and fail it (error) or complete it. */
static void
settle(struct gwunit *u, int64_t id, const char *error)
{
	struct queue_job	j;
	size_t			got;

	assert_int_equal(queue_claim(u->db->q, "ncs:n1", "w", 0, &j, 1, &got),
	    QUEUE_OK);
	assert_int_equal(got, 1);
	assert_true(j.id == id);
	if (error != NULL)
		assert_int_equal(queue_fail(u->db->q, id, j.lease_gen, error,
		    false), QUEUE_OK);
	else
		assert_int_equal(queue_complete(u->db->q, id, j.lease_gen),
		    QUEUE_OK);
	queue_job_clear(&j);
}

/*
 * delivery_failed: a failed publish job records its error, a newer
 * failure replaces it, a completed delivery clears it; other kinds and
 * lanes leave it alone; the migration to version 8 takes the newest
 * failure not followed by an acknowledged delivery.
 */
static void
test_delivery_failed(void **state)
{
	struct gwunit		*u = *state;
	char			 e[64];
	int64_t			 id, id2, v;

	id = enqueue(u, "ncs:n1", CATALOG_KIND_PUBLISH, "CLIP-1");
	settle(u, id, "NACK: no room");
	assert_true(failed_job(u, e, sizeof e) == id);
	assert_string_equal(e, "NACK: no room");
	id2 = enqueue(u, "ncs:n1", CATALOG_KIND_PUBLISH, "CLIP-1");
	settle(u, id2, "NACK: still no room");
	assert_true(failed_job(u, e, sizeof e) == id2);
	assert_string_equal(e, "NACK: still no room");
	/* another kind, another NCS: not a delivery of CLIP-1 to n1 */
	id = enqueue(u, "ncs:n1", "obj-create", "CLIP-1");
	settle(u, id, "refused");
	enqueue(u, "ncs:n2", CATALOG_KIND_PUBLISH, "CLIP-1");
	assert_true(failed_job(u, e, sizeof e) == id2);
	id = enqueue(u, "ncs:n1", CATALOG_KIND_PUBLISH, "CLIP-1");
	assert_int_equal(catalog_delivery_put(u->db, "n1", "CLIP-1", 2,
	    "UPDATED"), QUEUE_OK);
	settle(u, id, NULL);
	assert_true(failed_job(u, e, sizeof e) == 0);

	/* from version 7: the newest failure, unless delivered after it */
	id = enqueue(u, "ncs:n1", CATALOG_KIND_PUBLISH, "CLIP-1");
	settle(u, id, "NACK: one");
	id2 = enqueue(u, "ncs:n1", CATALOG_KIND_PUBLISH, "CLIP-1");
	settle(u, id2, "NACK: two");
	assert_int_equal(gwunit_exec(u, "UPDATE delivery SET t_ms = 0"),
	    STORE_OK);
	assert_int_equal(gwunit_rewind_v8(u), STORE_OK);
	assert_int_equal(gwunit_reopen_at(u, 7, &v), QUEUE_OK);
	assert_int_equal(v, GWDB_SCHEMA_VERSION);
	assert_true(failed_job(u, e, sizeof e) == id2);
	assert_string_equal(e, "NACK: two");
	/* a delivery acknowledged after the failure: nothing failed */
	assert_int_equal(gwunit_exec(u, "UPDATE delivery SET t_ms = "
	    "9000000000000"), STORE_OK);
	assert_int_equal(gwunit_rewind_v8(u), STORE_OK);
	assert_int_equal(gwunit_reopen_at(u, 7, &v), QUEUE_OK);
	assert_true(failed_job(u, e, sizeof e) == 0);
	/* the trigger is back: failures are recorded again */
	id = enqueue(u, "ncs:n1", CATALOG_KIND_PUBLISH, "CLIP-1");
	settle(u, id, "NACK: three");
	assert_true(failed_job(u, e, sizeof e) == id);
}

/* Count and age pruning; ids are never given again. */
static void
test_prune(void **state)
{
	struct gwunit		*u = *state;
	struct event_row	*r;
	size_t			 n, i;
	int64_t			 head, pruned;
	char			 data[64];

	for (i = 0; i < 50; i++) {
		snprintf(data, sizeof data, "{\"i\":%zu}", i);
		assert_int_equal(events_add(u->db, "ro.changed", data),
		    QUEUE_OK);
	}
	assert_int_equal(events_prune(u->db, 3600000, 20, &n), QUEUE_OK);
	assert_int_equal(n, 30);
	assert_int_equal(events_head(u->db, &head, &pruned), QUEUE_OK);
	assert_int_equal(head, 50);
	assert_int_equal(pruned, 30);
	assert_int_equal(events_read(u->db, 0, 100, &r, &n), QUEUE_OK);
	assert_int_equal(n, 20);
	assert_int_equal(r[0].id, 31);
	events_rows_free(r, n);
	/* nothing more to do */
	assert_int_equal(events_prune(u->db, 3600000, 20, &n), QUEUE_OK);
	assert_int_equal(n, 0);
	/* by age: an hour later all go, and the next id is 51 */
	u->now_ms += 2 * 3600000;
	assert_int_equal(events_prune(u->db, 3600000, 20, &n), QUEUE_OK);
	assert_int_equal(n, 20);
	assert_int_equal(events_add(u->db, "ro.changed", "{}"), QUEUE_OK);
	assert_int_equal(events_read(u->db, 0, 100, &r, &n), QUEUE_OK);
	assert_int_equal(n, 1);
	assert_int_equal(r[0].id, 51);
	events_rows_free(r, n);
	assert_int_equal(events_head(u->db, &head, &pruned), QUEUE_OK);
	assert_int_equal(pruned, 50);
}

/* Fan-out: from the newest at first, then one job per match, once. */
static void
test_fan(void **state)
{
	struct gwunit		*u = *state;
	struct gw		 gw;
	struct gw_config	*cfg;
	struct webhook_fan	*f;
	size_t			 jobs;
	int64_t			 cur;

	cfg = gwunit_config("[gateway]\nmos_id = m\n[ncs.a]\nncs_id = A\n"
	    "host = 127.0.0.1\n[webhook.h1]\nurl = http://127.0.0.1:9/x\n"
	    "events = ro.changed\nsecret = s\n[webhook.h2]\n"
	    "url = http://127.0.0.1:9/y\nevents = *\nsecret = t\n");
	assert_non_null(cfg);
	assert_int_equal(events_add(u->db, "ro.changed", "{}"), QUEUE_OK);
	memset(&gw, 0, sizeof gw);
	gw.cfg = cfg;
	if ((gw.base = event_base_new()) == NULL)
		fail_msg("event_base_new");
	webhooks_configure(&gw);	/* no thread: lists only */
	assert_non_null(gw.hooks);
	f = webhooks_fan(&gw);
	assert_int_equal(webhooks_fan_run(u->db, f, &jobs), QUEUE_OK);
	assert_int_equal(jobs, 0);	/* the past is not sent */
	assert_int_equal(gwdb_meta_get(u->db, "webhook_cursor", &cur),
	    QUEUE_OK);
	assert_int_equal(cur, 1);
	assert_int_equal(events_add(u->db, "ro.changed", "{}"), QUEUE_OK);
	assert_int_equal(events_add(u->db, "link.state", "{}"), QUEUE_OK);
	assert_int_equal(webhooks_fan_run(u->db, f, &jobs), QUEUE_OK);
	assert_int_equal(jobs, 3);	/* h1: 1, h2: 2 */
	assert_int_equal(webhooks_fan_run(u->db, f, &jobs), QUEUE_OK);
	assert_int_equal(jobs, 0);
	/* the jobs' own events (QUEUED) are not fanned out again */
	assert_int_equal(gwunit_int(u, "SELECT count(*) FROM events"
	    " WHERE hook = 0"), 3);
	assert_int_equal(gwunit_int(u, "SELECT count(*) FROM jobs"
	    " WHERE lane = 'webhook:h2'"), 2);
	webhooks_fan_free(f);
	webhooks_free(&gw);
	event_base_free(gw.base);
	config_free(cfg);
}

/* A version 3 file gets the log and its trigger; its jobs go on. */
static void
test_migration(void **state)
{
	struct gwunit		*u = *state;
	struct event_row	*r;
	size_t			 n;
	int64_t			 v;

	enqueue(u, "ncs:n1", CATALOG_KIND_PUBLISH, "OLD-1");
	assert_int_equal(gwunit_exec(u, gwunit_pg(u) ?
	    "DROP TRIGGER events_job ON job_events" :
	    "DROP TRIGGER events_job"), STORE_OK);
	assert_int_equal(gwunit_exec(u, "DROP TABLE events"), STORE_OK);
	assert_int_equal(gwunit_exec(u, "DROP TABLE ro_answer"), STORE_OK);
	assert_int_equal(gwunit_rewind_v8(u), STORE_OK);
	assert_int_equal(gwunit_reopen_at(u, 4, &v), QUEUE_OK);
	assert_int_equal(v, GWDB_SCHEMA_VERSION);
	enqueue(u, "ncs:n1", CATALOG_KIND_PUBLISH, "NEW-1");
	assert_int_equal(events_read(u->db, 0, 10, &r, &n), QUEUE_OK);
	assert_int_equal(n, 1);
	assert_non_null(strstr(r[0].data, "NEW-1"));
	events_rows_free(r, n);
}

static void
test_types(void **state)
{
	unsigned	 m;
	char		*err = NULL;

	(void)state;
	assert_int_equal(events_type_mask("asset.delivered, link.state", true,
	    &m, &err), 0);
	assert_int_equal(m, EVT_ASSET_DELIVERED | EVT_LINK_STATE);
	assert_int_equal(events_type_mask("*", false, &m, &err), 0);
	assert_int_equal(m, EVT_ALL);
	assert_int_equal(events_type_mask("*", true, &m, &err), -1);
	free(err);
	assert_int_equal(events_type_mask("asset.lost", false, &m, &err), -1);
	assert_non_null(strstr(err, "asset.lost"));
	free(err);
	assert_int_equal(events_type_mask(" , ", false, &m, &err), -1);
	free(err);
}

/* The configuration refuses what cannot work, naming the line. */
static void
test_config(void **state)
{
	static const struct {
		const char	*section;
		const char	*want;
	} bad[] = {
		{ "url = https://h/x\nevents = *\nsecret = s\n"
		    "cacert = /nonexistent/ca.pem\n", "/nonexistent/ca.pem" },
		{ "url = http://h/x\nevents = *\nsecret = s\n"
		    "tls_verify = false\n", "https:// URLs only" },
		{ "url = ftp://h/x\nevents = *\nsecret = s\n", "http://" },
		{ "events = *\nsecret = s\n", "url is required" },
		{ "url = http://h/x\nsecret = s\n", "events is required" },
		{ "url = http://h/x\nevents = job.done\nsecret = s\n",
		    "job.done" },
		{ "url = http://h/x\nevents = *\n", "secret" },
		{ "url = http://h/x\nevents = *\nsecret = s\n"
		    "secret_file = /nonexistent/s\n", "one of secret" },
		{ "url = http://h/x\nevents = *\n"
		    "secret_file = /nonexistent/s\n", "/nonexistent/s" },
		{ "url = http://h/x\nevents = *\nsecret = s\ntimeout = 0\n",
		    "timeout" },
	};
	struct gw_config	*cfg;
	char			 text[512], *errs;
	size_t			 i;

	(void)state;
	for (i = 0; i < nitems(bad); i++) {
		snprintf(text, sizeof text, "[gateway]\nmos_id = m\n[ncs.a]\n"
		    "ncs_id = A\nhost = 127.0.0.1\n[webhook.w]\n%s",
		    bad[i].section);
		cfg = config_load_string("t.ini", text, &errs);
		if (cfg != NULL)
			fail_msg("accepted: %s", bad[i].section);
		if (strstr(errs, bad[i].want) == NULL ||
		    strstr(errs, "t.ini:") == NULL)
			fail_msg("'%s' lacks '%s'", errs, bad[i].want);
		free(errs);
	}
	cfg = config_load_string("t.ini", "[gateway]\nmos_id = m\n[ncs.a]\n"
	    "ncs_id = A\nhost = 127.0.0.1\n[events]\nretention = 1h\n"
	    "keepalive = 2s\n[webhook.w]\nurl = http://h:81/x?a=b\n"
	    "events = job.state\nsecret = s\n", &errs);
	assert_non_null(cfg);
	assert_int_equal(cfg->nwebhooks, 1);
	assert_int_equal(cfg->ev_retention_ms, 3600000);
	assert_int_equal(cfg->ev_keepalive_ms, 2000);
	assert_int_equal(cfg->webhooks[0].timeout_ms, 10000);
	config_free(cfg);
	cfg = config_load_string("t.ini", "[gateway]\nmos_id = m\n[ncs.a]\n"
	    "ncs_id = A\nhost = 127.0.0.1\n[webhook.bad name]\n", &errs);
	assert_null(cfg);
	assert_non_null(strstr(errs, "bad webhook name"));
	free(errs);
}

/*
 * The signature is what `printf '%s.%s' TS BODY | openssl dgst -sha256
 * -hmac SECRET` prints (docs/api.md shows a receiver doing that).
 */
static void
test_sign(void **state)
{
	char	sig[65];

	(void)state;
	webhook_sign("s3cret", "1700000000", "{\"id\":1}", 8, sig);
	assert_string_equal(sig, "ee0658aa4e37018df69c24227df01e0f680eb3b87c7f"
	    "1f9bd936e283cfe01d9b");
	webhook_sign("s3cret", "1700000001", "{\"id\":1}", 8, sig);
	assert_string_not_equal(sig, "ee0658aa4e37018df69c24227df01e0f680eb3b8"
	    "7c7f1f9bd936e283cfe01d9b");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_trigger, gwunit_setup,
		    gwunit_teardown),
		cmocka_unit_test_setup_teardown(test_prune, gwunit_setup,
		    gwunit_teardown),
		cmocka_unit_test_setup_teardown(test_fan, gwunit_setup,
		    gwunit_teardown),
		cmocka_unit_test_setup_teardown(test_delivery_failed,
		    gwunit_setup, gwunit_teardown),
		cmocka_unit_test_setup_teardown(test_migration, gwunit_setup,
		    gwunit_teardown),
		cmocka_unit_test(test_types),
		cmocka_unit_test(test_config),
		cmocka_unit_test(test_sign),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
