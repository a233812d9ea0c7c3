/*
 * Integration: the publisher's window of jobs claimed and encoded ahead.
 *
 * An object changed again while its earlier delivery is still in the window
 * or in flight is delivered after it, as UPDATED with the newer objRev
 * (never NEW twice, never a stale revision after a newer one); a link lost
 * with a full window gives the window back and, once the NCS is back, every
 * change arrives (at least once, the one in flight perhaps twice, nothing
 * lost or FAILED); a large backlog is drained in queue order with
 * increasing messageIDs.
 *
 * A change made through the API has its delivery claimed in the change's
 * own transaction: when the 202 comes, the job is already RUNNING for the
 * gateway (no flush or poll between the commit and the send); a change of
 * an object whose earlier delivery is still in flight is given back and
 * sent after that delivery's ACK, as UPDATED.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "gateway/gateway.h"
#include "gateway/tests/httpc.h"
#include "gateway/tests/itutil.h"

#define WAIT_MS		10000
#define TOK		"window-write-token-0123456789"

/* A connection of our own to the gateway's database file, or NULL. */
static struct gwdb *
db_open(struct gwrig *r)
{
	struct gwdb_opts	 o;
	struct gwdb		*g = NULL;
	char			*err = NULL;

	gwproc_db_opts(r->gw, &o);
	if (gwdb_open(&g, &o, &err) != QUEUE_OK) {
		fprintf(stderr, "gwdb_open: %s\n", err);
		free(err);
		return NULL;
	}
	return g;
}

/* Put objects "<prefix>NNN" for the numbers given, in one transaction. */
static int
put_many(struct gwrig *r, const char *prefix, const int *nums, size_t n)
{
	struct catalog_asset	 a;
	struct gwdb		*g;
	char			 id[64], *err = NULL;
	size_t			 i;
	int			 rc;

	if ((g = db_open(r)) == NULL)
		return -1;
	memset(&a, 0, sizeof a);
	a.slug = xstrdup("Window test");
	a.type = xstrdup("VIDEO");
	a.tb = xstrdup("50");
	a.air = xstrdup("READY");
	a.created_by = xstrdup("test");
	a.changed_by = xstrdup("test");
	rc = queue_tx_begin(g->q);
	for (i = 0; i < n && rc == QUEUE_OK; i++) {
		snprintf(id, sizeof id, "%s%03d", prefix, nums[i]);
		free(a.obj_id);
		a.obj_id = xstrdup(id);
		rc = catalog_put(g, &a, NULL, NULL, &err);
	}
	if (rc == QUEUE_OK)
		rc = queue_tx_commit(g->q);
	else {
		fprintf(stderr, "catalog_put: %s\n", err != NULL ? err : "?");
		queue_tx_rollback(g->q);
	}
	free(err);
	catalog_asset_clear(&a);
	gwdb_close(g);
	return rc == QUEUE_OK ? 0 : -1;
}

/* Put objects prefix000 .. prefix(n-1). */
static int
put_range(struct gwrig *r, const char *prefix, int n)
{
	int	*nums, i, rc;

	if ((nums = calloc((size_t)n, sizeof *nums)) == NULL)
		return -1;
	for (i = 0; i < n; i++)
		nums[i] = i;
	rc = put_many(r, prefix, nums, (size_t)n);
	free(nums);
	return rc;
}

/* The mosObj frames the NCS got on the gateway's link, in order. */
static size_t
objs(struct gwrig *r, const struct ncspeer_frame **out, size_t max)
{
	const struct ncspeer_frame	*f;
	size_t				 i, n = 0;

	for (i = 0; i < ncspeer_nframes(r->ncs) && n < max; i++) {
		f = ncspeer_frame_at(r->ncs, i);
		if (f->side == NCSPEER_ACCEPTED && f->port == NCSPEER_LOWER &&
		    f->msg != NULL && f->msg->type == MOS_T_MOS_OBJ)
			out[n++] = f;
	}
	return n;
}

/* The deliveries of one object: statuses and revisions in order. */
static size_t
deliveries(const struct ncspeer_frame **v, size_t n, const char *obj_id,
    const struct mos_obj **out, size_t max)
{
	size_t	i, k = 0;

	for (i = 0; i < n && k < max; i++) {
		if (strcmp(v[i]->msg->u.mos_obj.obj_id, obj_id) == 0)
			out[k++] = &v[i]->msg->u.mos_obj;
	}
	return k;
}

/* Changes to objects in the window and in flight: NEW, then UPDATED. */
static void
test_change_while_in_window(void **state)
{
	static const int		 again[] = { 0, 1, 20, 29 };
	struct gwrig			*r = *state;
	struct ncspeer_policy		 pol;
	struct ncspeer_match		 mt = { .type = "mosObj",
					    .port = NCSPEER_LOWER,
					    .side = NCSPEER_ACCEPTED,
					    .obj_id = "WIN-001" };
	const struct ncspeer_frame	*v[64];
	const struct mos_obj		*d[8];
	char				 id[32];
	size_t				 n, k, i, j;

	memset(&pol, 0, sizeof pol);
	pol.ack_delay_ms = 50;
	ncspeer_set_policy(r->ncs, &pol);
	GWRIG_CHECK(r, put_range(r, "WIN-", 30) == 0);
	/* WIN-000 is acked, WIN-001 in flight, the rest in the window */
	GWRIG_CHECK(r, ncspeer_wait(r->ncs, &mt, WAIT_MS) != NULL);
	GWRIG_CHECK(r, put_many(r, "WIN-", again, nitems(again)) == 0);
	GWRIG_CHECK(r, gwproc_wait_jobs(r->gw, r->lane, QUEUE_DONE, 34,
	    WAIT_MS) == 34);
	GWRIG_CHECK(r, gwproc_wait_idle(r->gw, r->lane, WAIT_MS) == 0);
	GWRIG_CHECK(r, gwproc_job_count(r->gw, r->lane, QUEUE_FAILED) == 0);
	n = objs(r, v, nitems(v));
	GWRIG_CHECK(r, n == 34);
	for (i = 0; i < 30; i++) {
		snprintf(id, sizeof id, "WIN-%03zu", i);
		k = deliveries(v, n, id, d, nitems(d));
		GWRIG_CHECK(r, k >= 1);
		GWRIG_CHECK(r, strcmp(d[0]->status, "NEW") == 0 &&
		    d[0]->obj_rev == 1);
		for (j = 1; j < k; j++) {
			GWRIG_CHECK(r, strcmp(d[j]->status, "UPDATED") == 0);
			GWRIG_CHECK(r, d[j]->obj_rev >= d[j - 1]->obj_rev);
		}
		GWRIG_CHECK(r, d[k - 1]->obj_rev == (i == 0 || i == 1 ||
		    i == 20 || i == 29 ? 2u : 1u));
	}
	/* WIN-020 was still waiting in the window: its change waited too */
	GWRIG_CHECK(r, gwproc_log_wait(r->gw, 0, WAIT_MS,
	    "event=publish.deferred", (char *)NULL) != -1);
}

/* The link lost with a full window: nothing is lost, nothing FAILED. */
static void
test_link_lost_with_window(void **state)
{
	struct gwrig			*r = *state;
	static const struct ncspeer_frame *v[1200];
	const struct mos_obj		*d[8];
	struct ncspeer_match		 mt = { .type = "mosObj",
					    .port = NCSPEER_LOWER,
					    .side = NCSPEER_ACCEPTED,
					    .obj_id = "LOST-050" };
	char				 id[32];
	size_t				 n, k, i, j, twice = 0;

	GWRIG_CHECK(r, put_range(r, "LOST-", 400) == 0);
	GWRIG_CHECK(r, ncspeer_wait(r->ncs, &mt, WAIT_MS) != NULL);
	ncspeer_down(r->ncs, true);
	GWRIG_CHECK(r, gwproc_log_wait(r->gw, 0, WAIT_MS,
	    "event=link.down", "port=lower", (char *)NULL) != -1);
	GWRIG_CHECK(r, ncspeer_up(r->ncs) == 0);
	GWRIG_CHECK(r, gwproc_wait_jobs(r->gw, r->lane, QUEUE_DONE, 400,
	    3 * WAIT_MS) == 400);
	GWRIG_CHECK(r, gwproc_wait_idle(r->gw, r->lane, WAIT_MS) == 0);
	GWRIG_CHECK(r, gwproc_job_count(r->gw, r->lane, QUEUE_FAILED) == 0);
	n = objs(r, v, nitems(v));
	for (i = 0; i < 400; i++) {
		snprintf(id, sizeof id, "LOST-%03zu", i);
		k = deliveries(v, n, id, d, nitems(d));
		GWRIG_CHECK(r, k >= 1);
		for (j = 0; j < k; j++)
			GWRIG_CHECK(r, strcmp(d[j]->status, "NEW") == 0 &&
			    d[j]->obj_rev == 1);
		twice += k > 1;
	}
	/* only what was in flight when the link went may come twice */
	GWRIG_CHECK(r, twice <= 1);
}

/* A backlog drains in queue order, messageIDs increasing. */
static void
test_backlog_order(void **state)
{
	struct gwrig			*r = *state;
	static const struct ncspeer_frame *v[1200];
	char				 id[32];
	size_t				 n, i;

	GWRIG_CHECK(r, put_range(r, "ORD-", 1000) == 0);
	GWRIG_CHECK(r, gwproc_wait_jobs(r->gw, r->lane, QUEUE_DONE, 1000,
	    3 * WAIT_MS) == 1000);
	n = objs(r, v, nitems(v));
	GWRIG_CHECK(r, n == 1000);
	for (i = 0; i < n; i++) {
		snprintf(id, sizeof id, "ORD-%03zu", i);
		GWRIG_CHECK(r, strcmp(v[i]->msg->u.mos_obj.obj_id, id) == 0);
		GWRIG_CHECK(r, i == 0 || v[i]->message_id >
		    v[i - 1]->message_id);
	}
}

/* The gateway with a write token for the API. */
static int
setup_api(void **state)
{
	struct gwproc_opts	o;

	memset(&o, 0, sizeof o);
	o.api_tokens = "mam write " TOK "\n";
	o.log_level = "info";
	return itutil_setup_opts(state, MOS_ENC_UTF16BE, &o);
}

/* PUT an asset through the API: the jobId of its delivery, or -1. */
static int64_t
api_put(struct gwrig *r, const char *obj_id)
{
	struct httpc_resp	 resp;
	json_t			*o, *job;
	char			 path[96];
	int64_t			 id = -1;

	snprintf(path, sizeof path, "/v1/assets/%s", obj_id);
	memset(&resp, 0, sizeof resp);
	if (httpc_once(r->gw->api_port, "PUT", path, TOK, NULL,
	    "{\"objSlug\":\"Window test\",\"objDur\":100,\"objTB\":50}",
	    &resp) != 0 || resp.status != 202 ||
	    (o = json_loads(resp.body, 0, NULL)) == NULL) {
		fprintf(stderr, "PUT %s: %d %s\n", obj_id, resp.status,
		    resp.body != NULL ? resp.body : "");
		httpc_resp_clear(&resp);
		return -1;
	}
	if ((job = json_array_get(json_object_get(o, "jobs"), 0)) != NULL)
		id = json_integer_value(json_object_get(job, "jobId"));
	json_decref(o);
	httpc_resp_clear(&resp);
	return id;
}

/* The job as committed in the database file: state, and whose. */
static int
job_state(struct gwrig *r, int64_t id, char *worker, size_t len)
{
	struct queue_job	 j;
	struct gwdb		*g;
	int			 st = -1;

	if ((g = db_open(r)) == NULL)
		return -1;
	memset(&j, 0, sizeof j);
	if (queue_get(g->q, id, &j) == QUEUE_OK) {
		st = (int)j.state;
		snprintf(worker, len, "%s", j.worker != NULL ? j.worker : "");
	}
	queue_job_clear(&j);
	gwdb_close(g);
	return st;
}

/*
 * Answered means claimed: the delivery of a PUT is RUNNING for the
 * gateway's publisher when the 202 arrives (the NCS holds its answers, so
 * nothing has settled it since), also while an earlier one is in flight;
 * both go out in order once the NCS answers.
 */
static void
test_put_claimed_in_its_commit(void **state)
{
	struct gwrig			*r = *state;
	struct ncspeer_policy		 pol;
	struct ncspeer_match		 mt = { .type = "mosObj",
					    .port = NCSPEER_LOWER,
					    .side = NCSPEER_ACCEPTED };
	const struct ncspeer_frame	*v[8];
	char				 who[128], want[64], pid[24];
	int64_t				 a, b;

	memset(&pol, 0, sizeof pol);
	pol.ack_delay_ms = -1;
	ncspeer_set_policy(r->ncs, &pol);
	/* the publisher's worker: mosgw:ncs=NCS/INSTANCE/PID */
	snprintf(want, sizeof want, GW_NCS_WORKER_PREFIX "n1/");
	snprintf(pid, sizeof pid, "/%d", (int)r->gw->pid);
	GWRIG_CHECK(r, (a = api_put(r, "TICKET-A")) > 0);
	GWRIG_CHECK(r, job_state(r, a, who, sizeof who) == QUEUE_RUNNING);
	GWRIG_CHECK(r, strncmp(who, want, strlen(want)) == 0);
	GWRIG_CHECK(r, strlen(who) > strlen(pid) &&
	    strcmp(who + strlen(who) - strlen(pid), pid) == 0);
	mt.obj_id = "TICKET-A";
	GWRIG_CHECK(r, ncspeer_wait(r->ncs, &mt, WAIT_MS) != NULL);
	/* A is in flight, unanswered: B waits in the window, claimed */
	GWRIG_CHECK(r, (b = api_put(r, "TICKET-B")) > 0);
	GWRIG_CHECK(r, job_state(r, b, who, sizeof who) == QUEUE_RUNNING);
	GWRIG_CHECK(r, strncmp(who, want, strlen(want)) == 0);
	GWRIG_CHECK(r, strlen(who) > strlen(pid) &&
	    strcmp(who + strlen(who) - strlen(pid), pid) == 0);
	pol.ack_delay_ms = 0;
	ncspeer_set_policy(r->ncs, &pol);
	GWRIG_CHECK(r, gwproc_wait_jobs(r->gw, r->lane, QUEUE_DONE, 2,
	    WAIT_MS) == 2);
	GWRIG_CHECK(r, gwproc_wait_idle(r->gw, r->lane, WAIT_MS) == 0);
	GWRIG_CHECK(r, objs(r, v, nitems(v)) == 2);
	GWRIG_CHECK(r, strcmp(v[0]->msg->u.mos_obj.obj_id, "TICKET-A") == 0);
	GWRIG_CHECK(r, strcmp(v[1]->msg->u.mos_obj.obj_id, "TICKET-B") == 0);
	GWRIG_CHECK(r, strcmp(v[1]->msg->u.mos_obj.status, "NEW") == 0);
}

/*
 * A PUT of an object whose NEW is in flight: its delivery, claimed in the
 * PUT's commit, is given back and goes out after the ACK as UPDATED with
 * the new objRev (never NEW twice).
 */
static void
test_put_while_in_flight(void **state)
{
	struct gwrig			*r = *state;
	struct ncspeer_policy		 pol;
	struct ncspeer_match		 mt = { .type = "mosObj",
					    .port = NCSPEER_LOWER,
					    .side = NCSPEER_ACCEPTED,
					    .obj_id = "FLIGHT" };
	const struct ncspeer_frame	*v[8];
	const struct mos_obj		*d[8];
	size_t				 n;

	memset(&pol, 0, sizeof pol);
	pol.ack_delay_ms = -1;
	ncspeer_set_policy(r->ncs, &pol);
	GWRIG_CHECK(r, api_put(r, "FLIGHT") > 0);
	GWRIG_CHECK(r, ncspeer_wait(r->ncs, &mt, WAIT_MS) != NULL);
	GWRIG_CHECK(r, api_put(r, "FLIGHT") > 0);
	pol.ack_delay_ms = 0;
	ncspeer_set_policy(r->ncs, &pol);
	GWRIG_CHECK(r, gwproc_wait_jobs(r->gw, r->lane, QUEUE_DONE, 2,
	    WAIT_MS) == 2);
	GWRIG_CHECK(r, gwproc_wait_idle(r->gw, r->lane, WAIT_MS) == 0);
	GWRIG_CHECK(r, gwproc_job_count(r->gw, r->lane, QUEUE_FAILED) == 0);
	n = objs(r, v, nitems(v));
	GWRIG_CHECK(r, deliveries(v, n, "FLIGHT", d, nitems(d)) == 2);
	GWRIG_CHECK(r, strcmp(d[0]->status, "NEW") == 0 && d[0]->obj_rev == 1);
	GWRIG_CHECK(r, strcmp(d[1]->status, "UPDATED") == 0 &&
	    d[1]->obj_rev == 2);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_change_while_in_window,
		    itutil_setup, itutil_teardown),
		cmocka_unit_test_setup_teardown(test_link_lost_with_window,
		    itutil_setup, itutil_teardown),
		cmocka_unit_test_setup_teardown(test_backlog_order,
		    itutil_setup, itutil_teardown),
		cmocka_unit_test_setup_teardown(test_put_claimed_in_its_commit,
		    setup_api, itutil_teardown),
		cmocka_unit_test_setup_teardown(test_put_while_in_flight,
		    setup_api, itutil_teardown),
	};

	mos_init();
	return cmocka_run_group_tests_name("gateway_it_window", tests, NULL,
	    NULL);
}
