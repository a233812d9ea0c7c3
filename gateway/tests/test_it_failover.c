/*
 * Integration: buddy failover and return, and the hot-standby option.
 *
 * Two scripted NCS peers play a primary and its buddy (same ncsID). When the
 * primary goes away the gateway moves to the buddy and delivers there; when
 * the primary is back and the buddy answers with the ENPS sentence "Buddy
 * server cannot respond because main server is available", deliveries go to
 * the primary again. With hot_standby the sleeping buddy gets no heartbeats.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/tests/gwproc.h"

#define WAIT_MS		10000
#define BUDDY_SENTENCE	\
	"Buddy server cannot respond because main server is available"

struct pair {
	struct ncspeer	*primary;
	struct ncspeer	*buddy;
	struct gwproc	*gw;
	const char	*lane;
};

/* Print both peers and the gateway's log. */
static void
pair_dump(struct pair *p, const char *what, int line)
{
	fprintf(stderr, "==== %s:%d: failed: %s\n", __FILE__, line, what);
	ncspeer_dump(p->primary, "primary");
	ncspeer_dump(p->buddy, "buddy");
	gwproc_log_dump(p->gw, what);
}

#define CHECK(p, cond) do {						\
	if (!(cond)) {							\
		pair_dump((p), #cond, __LINE__);			\
		fail_msg("%s:%d: %s", __FILE__, __LINE__, #cond);	\
	}								\
} while (0)

/* Two peers and a gateway whose NCS has the second as its buddy. */
static int
pair_setup(void **state, const char *extra)
{
	struct ncspeer_opts	 po;
	struct gwproc_opts	 o;
	struct pair		*p;

	if ((p = calloc(1, sizeof *p)) == NULL)
		return -1;
	*state = p;
	p->lane = "ncs:n1";
	memset(&po, 0, sizeof po);
	po.mos_id = "mosgw.test";
	po.ncs_id = "NCSPEER";
	if ((p->primary = ncspeer_new(&po)) == NULL ||
	    (p->buddy = ncspeer_new(&po)) == NULL)
		return -1;
	memset(&o, 0, sizeof o);
	o.database_extra = "backoff_base = 0.2\nbackoff_max = 1\n";
	o.nncs = 1;
	o.ncs[0].lower_port = ncspeer_port(p->primary, NCSPEER_LOWER);
	o.ncs[0].upper_port = ncspeer_port(p->primary, NCSPEER_UPPER);
	o.ncs[0].buddy_lower_port = ncspeer_port(p->buddy, NCSPEER_LOWER);
	o.ncs[0].buddy_upper_port = ncspeer_port(p->buddy, NCSPEER_UPPER);
	o.ncs[0].extra = extra;
	if ((p->gw = gwproc_new(&o)) == NULL || gwproc_start(p->gw) != 0)
		return -1;
	if (ncspeer_wait_open(p->primary, NCSPEER_LOWER, NCSPEER_ACCEPTED, 1,
	    WAIT_MS) != 0) {
		pair_dump(p, "the primary was not connected", __LINE__);
		return -1;
	}
	return 0;
}

/* Primary and buddy with fast heartbeats and reconnects. */
static int
setup(void **state)
{
	return pair_setup(state, "heartbeat_interval = 0.3\nack_timeout = 0.5\n"
	    "retries = 1\nreconnect_min = 0.1\nreconnect_max = 0.3\n"
	    "breaker_threshold = 3\n");
}

/* The same with the OpenMedia-style hot standby. */
static int
setup_hot_standby(void **state)
{
	return pair_setup(state, "heartbeat_interval = 0.3\nack_timeout = 0.5\n"
	    "retries = 1\nreconnect_min = 0.1\nreconnect_max = 0.3\n"
	    "breaker_threshold = 3\nhot_standby = true\n");
}

/* Stop the gateway (exit 0 expected) and both peers. */
static int
teardown(void **state)
{
	struct pair	*p = *state;
	int		 st = 0;

	if (p == NULL)
		return 0;
	if (p->gw != NULL && (st = gwproc_stop(p->gw)) != 0)
		pair_dump(p, "SIGTERM exit status", __LINE__);
	gwproc_free(p->gw);
	ncspeer_free(p->primary);
	ncspeer_free(p->buddy);
	free(p);
	return st == 0 ? 0 : -1;
}

/* Wait for a mosObj for obj_id at peer n. */
static const struct ncspeer_frame *
wait_obj(struct ncspeer *n, const char *obj_id, int timeout_ms)
{
	struct ncspeer_match	mt = { .type = "mosObj", .side = NCSPEER_ACCEPTED,
				    .obj_id = obj_id };

	return ncspeer_wait(n, &mt, timeout_ms);
}

/* Primary gone: the buddy takes the deliveries; primary back: it returns. */
static void
test_failover_and_return(void **state)
{
	struct pair		*p = *state;
	struct ncspeer_policy	 pol;

	CHECK(p, gwproc_asset_put(p->gw, "FO-1", "To the primary") == 0);
	CHECK(p, wait_obj(p->primary, "FO-1", WAIT_MS) != NULL);
	CHECK(p, gwproc_wait_jobs(p->gw, p->lane, QUEUE_DONE, 1, WAIT_MS) == 1);

	ncspeer_down(p->primary, true);
	CHECK(p, ncspeer_wait_open(p->buddy, NCSPEER_LOWER, NCSPEER_ACCEPTED, 1,
	    WAIT_MS) == 0);
	CHECK(p, gwproc_log_wait(p->gw, 0, WAIT_MS, "event=link.failover",
	    (char *)NULL) != -1);
	CHECK(p, gwproc_asset_put(p->gw, "FO-2", "To the buddy") == 0);
	CHECK(p, wait_obj(p->buddy, "FO-2", WAIT_MS) != NULL);
	CHECK(p, gwproc_wait_jobs(p->gw, p->lane, QUEUE_DONE, 2, WAIT_MS) == 2);

	/* The primary is back; the buddy now refuses with the ENPS sentence. */
	memset(&pol, 0, sizeof pol);
	pol.obj = NCSPEER_OBJ_NACK;
	pol.nack_text = BUDDY_SENTENCE;
	ncspeer_set_policy(p->buddy, &pol);
	CHECK(p, ncspeer_up(p->primary) == 0);
	CHECK(p, ncspeer_wait_open(p->primary, NCSPEER_LOWER, NCSPEER_ACCEPTED,
	    1, WAIT_MS) == 0);
	CHECK(p, gwproc_asset_put(p->gw, "FO-3", "Back to the primary") == 0);
	CHECK(p, wait_obj(p->primary, "FO-3", WAIT_MS) != NULL);
	CHECK(p, gwproc_wait_jobs(p->gw, p->lane, QUEUE_DONE, 3, WAIT_MS) == 3);
	CHECK(p, gwproc_job_count(p->gw, p->lane, QUEUE_FAILED) == 0);
}

/* A delivery pending when the primary stops answering moves to the buddy. */
static void
test_pending_moves_to_buddy(void **state)
{
	struct pair		*p = *state;
	struct ncspeer_policy	 pol;

	/* The primary takes the mosObj but never answers it ... */
	memset(&pol, 0, sizeof pol);
	pol.obj = NCSPEER_OBJ_IGNORE;
	ncspeer_set_policy(p->primary, &pol);
	CHECK(p, gwproc_asset_put(p->gw, "FO-P", "Stuck at the primary") == 0);
	CHECK(p, wait_obj(p->primary, "FO-P", WAIT_MS) != NULL);
	/* ... then stops answering heartbeats too. */
	pol.no_heartbeat_reply = true;
	ncspeer_set_policy(p->primary, &pol);
	CHECK(p, wait_obj(p->buddy, "FO-P", WAIT_MS) != NULL);
	CHECK(p, gwproc_wait_jobs(p->gw, p->lane, QUEUE_DONE, 1, WAIT_MS) == 1);
}

/* hot_standby: no heartbeats to the sleeping buddy while the primary is up. */
static void
test_hot_standby(void **state)
{
	struct pair		*p = *state;
	struct ncspeer_stats	 st;
	struct ncspeer_match	 hb = { .type = "heartbeat",
				    .side = NCSPEER_ACCEPTED };

	/* Several heartbeat intervals with the primary healthy. */
	CHECK(p, ncspeer_wait_count(p->primary, &hb, 4, WAIT_MS) >= 4);
	ncspeer_stats(p->buddy, &st);
	CHECK(p, st.heartbeats == 0);
	CHECK(p, st.objs == 0);

	ncspeer_down(p->primary, true);
	CHECK(p, ncspeer_wait_open(p->buddy, NCSPEER_LOWER, NCSPEER_ACCEPTED, 1,
	    WAIT_MS) == 0);
	CHECK(p, gwproc_asset_put(p->gw, "HS-1", "To the woken buddy") == 0);
	CHECK(p, wait_obj(p->buddy, "HS-1", WAIT_MS) != NULL);
	CHECK(p, gwproc_wait_jobs(p->gw, p->lane, QUEUE_DONE, 1, WAIT_MS) == 1);
	CHECK(p, ncspeer_wait_count(p->buddy, &hb, 1, WAIT_MS) >= 1);
}

/* The it_failover suite. */
int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_failover_and_return, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_pending_moves_to_buddy,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_hot_standby,
		    setup_hot_standby, teardown),
	};

	return cmocka_run_group_tests_name("it_failover", tests, NULL, NULL);
}
