/*
 * Integration: asset changes from many keep-alive clients at once, which
 * the gateway commits in shared transactions (group commit). Every answer
 * must be the change's own: objRev in sequence per asset, If-Match
 * conflicts (412) and unknown assets (404) refused alone while the changes
 * around them commit, every job answered present in the queue, and the
 * NCS given the last revision of every asset.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gateway/tests/httpc.h"
#include "gateway/tests/itutil.h"

#define TOK		"batch-write-token-0123456789"
#define NCLIENTS	12
#define ROUNDS		15
#define WAIT_MS		60000

static const char tokens[] = "mam write " TOK "\n";

/* What one client saw. */
struct client {
	uint16_t	port;
	int		id;
	char		err[256];	/* "" = all as expected */
	int64_t		jobs[ROUNDS];	/* jobIds of its own asset's PUTs */
	int		shared_ok;	/* 202s for SHARED */
	int		shared_412;
	int		shared_revs[ROUNDS];
};

static int
setup(void **state)
{
	struct gwproc_opts	o;

	memset(&o, 0, sizeof o);
	o.api_tokens = tokens;
	o.log_level = "info";
	return itutil_setup_opts(state, MOS_ENC_UTF16BE, &o);
}

/* A request on the client's connection; the body as JSON (NULL if none). */
static json_t *
call(int fd, const char *method, const char *path, const char *ifm,
    const char *body, int *status)
{
	struct httpc_resp	 r;
	char			 hdr[64];
	json_t			*o = NULL;

	*hdr = '\0';
	if (ifm != NULL)
		snprintf(hdr, sizeof hdr, "If-Match: \"%s\"\r\n", ifm);
	memset(&r, 0, sizeof r);
	*status = 0;
	if (httpc_do(fd, method, path, TOK, *hdr != '\0' ? hdr : NULL, body,
	    &r) != 0)
		return NULL;
	*status = r.status;
	if (r.body != NULL)
		o = json_loads(r.body, 0, NULL);
	httpc_resp_clear(&r);
	return o;
}

/* The current objRev of SHARED, as this client reads it. */
static int
shared_rev(int fd)
{
	json_t	*o;
	int	 st, rev = -1;

	if ((o = call(fd, "GET", "/v1/assets/SHARED", NULL, NULL, &st)) !=
	    NULL) {
		if (st == 200)
			rev = (int)json_integer_value(json_object_get(o,
			    "objRev"));
		json_decref(o);
	}
	return rev;
}

/* One client: its own asset in sequence, SHARED with If-Match, a 404. */
static void *
client_main(void *arg)
{
	struct client	*c = arg;
	json_t		*o, *jobs;
	char		 path[64], body[64], ifm[16], nope[64];
	int		 fd, k, st, rev, got;

	if ((fd = httpc_connect(c->port)) == -1) {
		snprintf(c->err, sizeof c->err, "cannot connect");
		return NULL;
	}
	snprintf(path, sizeof path, "/v1/assets/G-%02d", c->id);
	snprintf(nope, sizeof nope, "/v1/assets/NOPE-%02d", c->id);
	for (k = 1; k <= ROUNDS && *c->err == '\0'; k++) {
		snprintf(body, sizeof body, "{\"objSlug\":\"client %d round "
		    "%d\"}", c->id, k);
		snprintf(ifm, sizeof ifm, "%d", k - 1);
		o = call(fd, "PUT", path, ifm, body, &st);
		got = o != NULL ? (int)json_integer_value(json_object_get(o,
		    "objRev")) : -1;
		jobs = o != NULL ? json_object_get(o, "jobs") : NULL;
		if (st != 202 || got != k || json_array_size(jobs) != 1)
			snprintf(c->err, sizeof c->err, "PUT %s round %d: "
			    "status %d objRev %d jobs %zu", path, k, st, got,
			    json_array_size(jobs));
		else
			c->jobs[k - 1] = json_integer_value(json_object_get(
			    json_array_get(jobs, 0), "jobId"));
		if (o != NULL)
			json_decref(o);
		/* SHARED: If-Match the revision just read; others race */
		if ((rev = shared_rev(fd)) < 0) {
			snprintf(c->err, sizeof c->err, "GET SHARED failed");
			break;
		}
		snprintf(ifm, sizeof ifm, "%d", rev);
		o = call(fd, "PUT", "/v1/assets/SHARED", ifm, body, &st);
		got = o != NULL ? (int)json_integer_value(json_object_get(o,
		    "objRev")) : -1;
		if (st == 202 && got == rev + 1)
			c->shared_revs[c->shared_ok++] = got;
		else if (st == 412)
			c->shared_412++;
		else
			snprintf(c->err, sizeof c->err, "PUT SHARED If-Match "
			    "%d: status %d objRev %d", rev, st, got);
		if (o != NULL)
			json_decref(o);
		o = call(fd, "DELETE", nope, NULL, NULL, &st);
		if (st != 404)
			snprintf(c->err, sizeof c->err, "DELETE %s: status %d",
			    nope, st);
		if (o != NULL)
			json_decref(o);
	}
	close(fd);
	return NULL;
}

static int
int_cmp(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

/* Concurrent clients: every answer right, every job there. */
static void
test_concurrent_changes(void **state)
{
	struct gwrig		*r = *state;
	struct client		 c[NCLIENTS];
	pthread_t		 th[NCLIENTS];
	struct queue		*q;
	struct queue_job	 job;
	struct ncspeer_match	 m = { .type = "mosObj",
				    .side = NCSPEER_ACCEPTED };
	const struct ncspeer_frame *f;
	int			 revs[NCLIENTS * ROUNDS], nrev = 0, i, k, st;
	int			 fd, final;
	char			 id[32];

	fd = httpc_connect(r->gw->api_port);
	GWRIG_CHECK(r, fd != -1);
	json_decref(call(fd, "PUT", "/v1/assets/SHARED", "0",
	    "{\"objSlug\":\"shared\"}", &st));
	GWRIG_CHECK(r, st == 202);
	memset(c, 0, sizeof c);
	for (i = 0; i < NCLIENTS; i++) {
		c[i].port = r->gw->api_port;
		c[i].id = i;
		GWRIG_CHECK(r, pthread_create(&th[i], NULL, client_main,
		    &c[i]) == 0);
	}
	for (i = 0; i < NCLIENTS; i++)
		pthread_join(th[i], NULL);
	for (i = 0; i < NCLIENTS; i++) {
		if (*c[i].err != '\0') {
			gwrig_dump(r, "client", __FILE__, __LINE__);
			fail_msg("client %d: %s", i, c[i].err);
		}
		for (k = 0; k < c[i].shared_ok; k++)
			revs[nrev++] = c[i].shared_revs[k];
		assert_int_equal(c[i].shared_ok + c[i].shared_412, ROUNDS);
	}
	/* the SHARED revisions handed out: 2, 3, ... each once */
	qsort(revs, (size_t)nrev, sizeof *revs, int_cmp);
	for (i = 0; i < nrev; i++)
		assert_int_equal(revs[i], i + 2);
	final = shared_rev(fd);
	assert_int_equal(final, nrev + 1);
	close(fd);

	/* every job answered is in the queue */
	q = gwproc_queue(r->gw);
	GWRIG_CHECK(r, q != NULL);
	for (i = 0; i < NCLIENTS; i++) {
		for (k = 0; k < ROUNDS; k++) {
			memset(&job, 0, sizeof job);
			assert_int_equal(queue_get(q, c[i].jobs[k], &job),
			    QUEUE_OK);
			snprintf(id, sizeof id, "G-%02d", i);
			assert_int_equal(job.payload_len, strlen(id));
			assert_memory_equal(job.payload, id, strlen(id));
			queue_job_clear(&job);
		}
	}
	queue_close(q);

	/* the NCS gets the last revision of each asset */
	for (i = 0; i < NCLIENTS; i++) {
		snprintf(id, sizeof id, "G-%02d", i);
		m.obj_id = id;
		for (;;) {
			GWRIG_CHECK(r, (f = ncspeer_wait(r->ncs, &m, WAIT_MS)) !=
			    NULL);
			if (f->msg->u.mos_obj.obj_rev == ROUNDS)
				break;
			m.from = f->seq + 1;
		}
		m.from = 0;
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_concurrent_changes, setup,
		    itutil_teardown),
	};

	mos_init();
	return cmocka_run_group_tests_name("gateway_it_apibatch", tests, NULL,
	    NULL);
}
