/*
 * Integration: the jobs and workers API of the real mosgw on loopback, with
 * a scripted NCS on its links: submit (idempotency, also under concurrent
 * requests), claim with leases and long-polling, heartbeat, complete (with
 * an asset change that reaches the NCS), fail, a worker that dies holding a
 * lease, stale and foreign lease tokens, reading and paging jobs, and
 * requeue, cancel and rerun of a chain; every route with bad input.
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

#define TOK_READ	"jobs-read-0123456789"
#define TOK_WRITE	"jobs-write-0123456789"
#define TOK_WORKER	"jobs-worker-0123456789"
#define TOK_ADMIN	"jobs-admin-0123456789"
#define WAIT_MS		15000
#define NCLIENTS	8

static const char tokens[] =
    "reader read " TOK_READ "\n"
    "mam write " TOK_WRITE "\n"
    "w worker " TOK_WORKER "\n"
    "ops admin " TOK_ADMIN "\n";

static int
setup(void **state)
{
	struct gwproc_opts	o;

	memset(&o, 0, sizeof o);
	o.api_tokens = tokens;
	return itutil_setup_opts(state, MOS_ENC_UTF16BE, &o);
}

static uint16_t
port_of(void **state)
{
	return ((struct gwrig *)*state)->gw->api_port;
}

/*
 * One request on a new connection: the status; *out (if not NULL) the body
 * as JSON, or NULL when it is not JSON.
 */
static int
call(void **state, const char *method, const char *path, const char *token,
    const char *headers, const char *body, json_t **out)
{
	struct httpc_resp	r;
	int			status;

	if (httpc_once(port_of(state), method, path, token, headers, body,
	    &r) != 0 || r.status == 0) {
		gwrig_dump(*state, "no HTTP answer", __FILE__, __LINE__);
		fail_msg("%s %s: no answer", method, path);
	}
	status = r.status;
	if (out != NULL)
		*out = json_loads(r.body, 0, NULL);
	httpc_resp_clear(&r);
	return status;
}

/* A request that must answer with this status; its body as JSON. */
static json_t *
call_ok(void **state, int want, const char *method, const char *path,
    const char *token, const char *headers, const char *body)
{
	json_t	*o;
	char	*s;
	int	 st;

	st = call(state, method, path, token, headers, body, &o);
	if (st != want || o == NULL) {
		s = o != NULL ? json_dumps(o, 0) : NULL;
		fail_msg("%s %s: %d, not %d: %s", method, path, st, want,
		    s != NULL ? s : "(not JSON)");
	}
	return o;
}

/*
 * A request that must be refused: problem+json with this status, type
 * (after urn:mosgw:problem:) and field (NULL: not looked at).
 */
static void
refused(void **state, int status, const char *slug, const char *field,
    const char *method, const char *path, const char *token,
    const char *headers, const char *body)
{
	struct httpc_resp	 r;
	json_t			*o;
	char			*ct, want[128];
	const char		*t, *f;

	if (httpc_once(port_of(state), method, path, token, headers, body,
	    &r) != 0)
		fail_msg("%s %s: no answer", method, path);
	o = json_loads(r.body, 0, NULL);
	ct = httpc_header(&r, "Content-Type");
	snprintf(want, sizeof want, "urn:mosgw:problem:%s", slug);
	t = json_string_value(json_object_get(o, "type"));
	f = json_string_value(json_object_get(o, "field"));
	if (r.status != status || ct == NULL ||
	    strcmp(ct, "application/problem+json") != 0 || t == NULL ||
	    strcmp(t, want) != 0 || json_string_value(json_object_get(o,
	    "detail")) == NULL || (field != NULL && (f == NULL ||
	    strcmp(f, field) != 0)))
		fail_msg("%s %s %s: want %d %s field %s, got %d: %s", method,
		    path, body != NULL ? body : "", status, slug, field != NULL ?
		    field : "-", r.status, r.body);
	free(ct);
	json_decref(o);
	httpc_resp_clear(&r);
}

static int64_t
int_of(json_t *o, const char *key)
{
	json_t	*v = json_object_get(o, key);

	if (!json_is_integer(v))
		fail_msg("%s is not an integer", key);
	return (int64_t)json_integer_value(v);
}

static const char *
str_of(json_t *o, const char *key)
{
	const char	*s = json_string_value(json_object_get(o, key));

	if (s == NULL)
		fail_msg("%s is not a string", key);
	return s;
}

/* Submit a job; its id. */
static int64_t
submit(void **state, const char *obj_id, const char *body)
{
	json_t	*o;
	char	 path[256];
	int64_t	 id;

	snprintf(path, sizeof path, "/v1/assets/%s/jobs", obj_id);
	o = call_ok(state, 202, "POST", path, TOK_WRITE, NULL, body);
	assert_string_equal(str_of(o, "status"), "QUEUED");
	id = int_of(o, "jobId");
	json_decref(o);
	return id;
}

/* GET a job. */
static json_t *
job_get(void **state, int64_t id)
{
	char	path[64];

	snprintf(path, sizeof path, "/v1/jobs/%lld", (long long)id);
	return call_ok(state, 200, "GET", path, TOK_READ, NULL, NULL);
}

static void
check_state(void **state, int64_t id, const char *want)
{
	json_t	*o = job_get(state, id);

	if (strcmp(str_of(o, "state"), want) != 0)
		fail_msg("job %lld is %s, not %s", (long long)id,
		    str_of(o, "state"), want);
	json_decref(o);
}

/* Claim with this body; the jobs array (a reference of its own). */
static json_t *
claim(void **state, const char *body)
{
	json_t	*o, *jobs;

	o = call_ok(state, 200, "POST", "/v1/jobs/claim", TOK_WORKER, NULL,
	    body);
	jobs = json_object_get(o, "jobs");
	assert_true(json_is_array(jobs));
	json_incref(jobs);
	json_decref(o);
	return jobs;
}

/* Claim exactly one job of kind as worker; it must be job id. */
static json_t *
claim1(void **state, const char *kind, const char *worker, int lease_s,
    int wait_s, int64_t id)
{
	json_t	*jobs, *j;
	char	 body[256];

	snprintf(body, sizeof body, "{\"kinds\":[\"%s\"],\"worker\":\"%s\","
	    "\"lease_s\":%d,\"wait_s\":%d}", kind, worker, lease_s, wait_s);
	jobs = claim(state, body);
	if (json_array_size(jobs) != 1)
		fail_msg("claim %s: %zu jobs, not 1", kind,
		    json_array_size(jobs));
	j = json_array_get(jobs, 0);
	json_incref(j);
	json_decref(jobs);
	assert_int_equal(int_of(j, "jobId"), id);
	return j;
}

/* POST /v1/jobs/ID/VERB with a body; the status. */
static int
settle(void **state, int64_t id, const char *verb, const char *body,
    json_t **out)
{
	char	path[96];

	snprintf(path, sizeof path, "/v1/jobs/%lld/%s", (long long)id, verb);
	return call(state, "POST", path, TOK_WORKER, NULL, body, out);
}

/* {"leaseToken":TOKEN + rest}, malloc'd. */
static char *
with_token(json_t *job, const char *rest)
{
	char	*s;

	if (asprintf(&s, "{\"leaseToken\":\"%s\"%s%s}", str_of(job,
	    "leaseToken"), *rest != '\0' ? "," : "", rest) < 0)
		fail_msg("out of memory");
	return s;
}

/* ------------------------------------------------------------------------ */

/* Submit: the job as stored, idempotency, every bad input. */
static void
test_submit(void **state)
{
	json_t	*o, *h;
	char	 big[70000 + 64];
	int64_t	 id, pub;

	id = submit(state, "CLIP-1", "{\"kind\":\"transcode\",\"payload\":"
	    "{\"profile\":\"h264\",\"height\":720},\"priority\":3}");
	o = job_get(state, id);
	assert_string_equal(str_of(o, "lane"), "mam");
	assert_string_equal(str_of(o, "kind"), "transcode");
	assert_string_equal(str_of(o, "objID"), "CLIP-1");
	assert_string_equal(str_of(o, "state"), "QUEUED");
	assert_int_equal(int_of(o, "priority"), 3);
	assert_int_equal(int_of(json_object_get(o, "payload"), "height"),
	    720);
	h = json_object_get(o, "history");
	assert_int_equal(json_array_size(h), 1);
	assert_string_equal(str_of(json_array_get(h, 0), "to"), "QUEUED");
	json_decref(o);

	/* the same key and body: the same job; another body: 409 */
	o = call_ok(state, 202, "POST", "/v1/assets/CLIP-1/jobs", TOK_WRITE,
	    "Idempotency-Key: k-1\r\n", "{\"kind\":\"proxy\"}");
	id = int_of(o, "jobId");
	json_decref(o);
	o = call_ok(state, 200, "POST", "/v1/assets/CLIP-1/jobs", TOK_WRITE,
	    "Idempotency-Key: k-1\r\n", "{\"payload\":{},\"kind\":\"proxy\","
	    "\"priority\":5}");
	assert_int_equal(int_of(o, "jobId"), id);
	assert_string_equal(str_of(o, "status"), "QUEUED");
	json_decref(o);
	refused(state, 409, "idempotency-conflict", "Idempotency-Key", "POST",
	    "/v1/assets/CLIP-1/jobs", TOK_WRITE, "Idempotency-Key: k-1\r\n",
	    "{\"kind\":\"proxy\",\"priority\":4}");
	refused(state, 409, "idempotency-conflict", "Idempotency-Key", "POST",
	    "/v1/assets/CLIP-2/jobs", TOK_WRITE, "Idempotency-Key: k-1\r\n",
	    "{\"kind\":\"proxy\"}");
	refused(state, 400, "bad-request", "Idempotency-Key", "POST",
	    "/v1/assets/CLIP-1/jobs", TOK_WRITE, "Idempotency-Key: a b\r\n",
	    "{\"kind\":\"proxy\"}");

	/* the gateway's own kinds, and chains only between worker jobs */
	refused(state, 422, "invalid-job", "kind", "POST",
	    "/v1/assets/CLIP-1/jobs", TOK_WRITE, NULL, "{\"kind\":\"publish\"}");
	refused(state, 422, "invalid-job", "kind", "POST",
	    "/v1/assets/CLIP-1/jobs", TOK_WRITE, NULL,
	    "{\"kind\":\"obj-create\"}");
	o = call_ok(state, 202, "PUT", "/v1/assets/CLIP-1", TOK_WRITE, NULL,
	    "{\"objSlug\":\"one\"}");
	pub = int_of(json_array_get(json_object_get(o, "jobs"), 0), "jobId");
	json_decref(o);
	snprintf(big, sizeof big, "{\"kind\":\"x\",\"after\":%lld}",
	    (long long)pub);
	refused(state, 422, "invalid-job", "after", "POST",
	    "/v1/assets/CLIP-1/jobs", TOK_WRITE, NULL, big);
	refused(state, 422, "invalid-job", "after", "POST",
	    "/v1/assets/CLIP-1/jobs", TOK_WRITE, NULL,
	    "{\"kind\":\"x\",\"after\":999999}");

	/* bad input */
	refused(state, 400, "malformed-json", NULL, "POST",
	    "/v1/assets/CLIP-1/jobs", TOK_WRITE, NULL, "{\"kind\":");
	refused(state, 422, "invalid-job", "kind", "POST",
	    "/v1/assets/CLIP-1/jobs", TOK_WRITE, NULL, "{}");
	refused(state, 422, "invalid-job", "kind", "POST",
	    "/v1/assets/CLIP-1/jobs", TOK_WRITE, NULL, "{\"kind\":7}");
	refused(state, 422, "invalid-job", "kind", "POST",
	    "/v1/assets/CLIP-1/jobs", TOK_WRITE, NULL, "{\"kind\":\"a:b\"}");
	refused(state, 422, "invalid-job", "payload", "POST",
	    "/v1/assets/CLIP-1/jobs", TOK_WRITE, NULL,
	    "{\"kind\":\"x\",\"payload\":[1]}");
	refused(state, 422, "invalid-job", "priority", "POST",
	    "/v1/assets/CLIP-1/jobs", TOK_WRITE, NULL,
	    "{\"kind\":\"x\",\"priority\":10}");
	refused(state, 422, "invalid-job", "priority", "POST",
	    "/v1/assets/CLIP-1/jobs", TOK_WRITE, NULL,
	    "{\"kind\":\"x\",\"priority\":\"high\"}");
	refused(state, 422, "invalid-job", "after", "POST",
	    "/v1/assets/CLIP-1/jobs", TOK_WRITE, NULL,
	    "{\"kind\":\"x\",\"after\":-1}");
	refused(state, 422, "invalid-job", "color", "POST",
	    "/v1/assets/CLIP-1/jobs", TOK_WRITE, NULL,
	    "{\"kind\":\"x\",\"color\":1}");
	snprintf(big, sizeof big, "{\"kind\":\"x\",\"payload\":{\"s\":\"%0*d\"}}",
	    66000, 0);
	refused(state, 422, "invalid-job", "payload", "POST",
	    "/v1/assets/CLIP-1/jobs", TOK_WRITE, NULL, big);
	refused(state, 401, "unauthorized", NULL, "POST",
	    "/v1/assets/CLIP-1/jobs", NULL, NULL, "{\"kind\":\"x\"}");
	refused(state, 401, "unauthorized", NULL, "POST",
	    "/v1/assets/CLIP-1/jobs", "jobs-write-0123456780", NULL,
	    "{\"kind\":\"x\"}");
	refused(state, 403, "forbidden", NULL, "POST",
	    "/v1/assets/CLIP-1/jobs", TOK_READ, NULL, "{\"kind\":\"x\"}");
	refused(state, 404, "not-found", "id", "GET", "/v1/jobs/abc",
	    TOK_READ, NULL, NULL);
	refused(state, 404, "not-found", "id", "GET", "/v1/jobs/987654",
	    TOK_READ, NULL, NULL);
}

struct client {
	void		**state;
	const char	 *path;
	const char	 *key;
	const char	 *body;
	int		  status;
	int64_t		  id;
};

static void *
client_main(void *arg)
{
	struct client		*c = arg;
	struct httpc_resp	 r;
	json_t			*o;
	char			 hdr[128];

	snprintf(hdr, sizeof hdr, "Idempotency-Key: %s\r\n", c->key);
	if (httpc_once(port_of(c->state), "POST", c->path, TOK_WRITE, hdr,
	    c->body, &r) != 0)
		return NULL;
	c->status = r.status;
	if ((o = json_loads(r.body, 0, NULL)) != NULL) {
		c->id = (int64_t)json_integer_value(json_object_get(o,
		    "jobId"));
		json_decref(o);
	}
	httpc_resp_clear(&r);
	return NULL;
}

/* Identical requests at once: one job, one 202, the others 200. */
static void
test_idempotent_concurrent(void **state)
{
	struct client	c[NCLIENTS];
	pthread_t	th[NCLIENTS];
	json_t		*o;
	size_t		i, created = 0;

	for (i = 0; i < NCLIENTS; i++) {
		memset(&c[i], 0, sizeof c[i]);
		c[i].state = state;
		c[i].path = "/v1/assets/CLIP-9/jobs";
		c[i].key = "same-key";
		c[i].body = "{\"kind\":\"ingest\",\"payload\":{\"n\":1}}";
		assert_int_equal(pthread_create(&th[i], NULL, client_main,
		    &c[i]), 0);
	}
	for (i = 0; i < NCLIENTS; i++)
		pthread_join(th[i], NULL);
	for (i = 0; i < NCLIENTS; i++) {
		if (c[i].status != 200 && c[i].status != 202)
			fail_msg("client %zu: %d", i, c[i].status);
		if (c[i].status == 202)
			created++;
		assert_true(c[i].id > 0);
		assert_int_equal(c[i].id, c[0].id);
	}
	assert_int_equal(created, 1);
	o = call_ok(state, 200, "GET", "/v1/jobs?kind=ingest", TOK_READ, NULL,
	    NULL);
	assert_int_equal(json_array_size(json_object_get(o, "jobs")), 1);
	json_decref(o);
}

/*
 * A worker that dies holding a lease: the lease expires, another worker
 * claims the job (attempt 2); the first one's token is stale (409).
 */
static void
test_lease_expiry(void **state)
{
	json_t	*a, *b, *o;
	char	*body, forged[256];
	int64_t	 id, other;
	size_t	 n;

	id = submit(state, "CLIP-2", "{\"kind\":\"transcode\"}");
	other = submit(state, "CLIP-3", "{\"kind\":\"analyse\"}");
	a = claim1(state, "transcode", "w1", 1, 0, id);
	assert_int_equal(int_of(a, "attempt"), 1);
	assert_string_equal(str_of(a, "objID"), "CLIP-2");
	check_state(state, id, "RUNNING");
	/* w1 is gone: w2 waits for the job to come back */
	b = claim1(state, "transcode", "w2", 60, 30, id);
	assert_int_equal(int_of(b, "attempt"), 2);
	assert_string_not_equal(str_of(a, "leaseToken"), str_of(b,
	    "leaseToken"));

	body = with_token(a, "\"result\":{}");
	assert_int_equal(settle(state, id, "complete", body, NULL), 409);
	free(body);
	body = with_token(a, "");
	assert_int_equal(settle(state, id, "heartbeat", body, NULL), 409);
	free(body);
	body = with_token(a, "\"error\":\"late\"");
	assert_int_equal(settle(state, id, "fail", body, NULL), 409);
	free(body);
	/* a forged MAC, another job's id, unknown jobs */
	snprintf(forged, sizeof forged, "{\"leaseToken\":\"%lld.2.%032d\"}",
	    (long long)id, 0);
	assert_int_equal(settle(state, id, "heartbeat", forged, NULL), 409);
	body = with_token(b, "");
	assert_int_equal(settle(state, other, "heartbeat", body, NULL), 409);
	assert_int_equal(settle(state, 987654, "heartbeat", body, NULL), 404);
	refused(state, 422, "invalid-job", "leaseToken", "POST",
	    "/v1/jobs/1/heartbeat", TOK_WORKER, NULL, "{}");
	refused(state, 422, "invalid-job", "lease_s", "POST",
	    "/v1/jobs/1/heartbeat", TOK_WORKER, NULL,
	    "{\"leaseToken\":\"x\",\"lease_s\":0}");
	refused(state, 403, "forbidden", NULL, "POST", "/v1/jobs/1/heartbeat",
	    TOK_WRITE, NULL, body);

	/* w2 holds it: heartbeat, then complete with a result */
	o = NULL;
	assert_int_equal(settle(state, id, "heartbeat", body, &o), 200);
	assert_non_null(json_string_value(json_object_get(o, "leaseUntil")));
	json_decref(o);
	free(body);
	body = with_token(b, "\"result\":{\"url\":\"http://x/2.mp4\"}");
	assert_int_equal(settle(state, id, "complete", body, NULL), 200);
	assert_int_equal(settle(state, id, "complete", body, NULL), 409);
	free(body);
	o = job_get(state, id);
	assert_string_equal(str_of(o, "state"), "DONE");
	assert_int_equal(int_of(o, "attempt"), 2);
	assert_string_equal(str_of(json_object_get(o, "result"), "url"),
	    "http://x/2.mp4");
	n = json_array_size(json_object_get(o, "history"));
	assert_true(n >= 4);	/* queued, claimed, taken back, claimed, done */
	json_decref(o);
	json_decref(a);
	json_decref(b);
}

/* fail: retried with backoff, or FAILED at once; claim's bad input. */
static void
test_fail_and_claim_input(void **state)
{
	json_t	*a, *o;
	char	*body;
	int64_t	 id;

	id = submit(state, "CLIP-4", "{\"kind\":\"qc\"}");
	a = claim1(state, "qc", "w1", 60, 0, id);
	body = with_token(a, "\"error\":\"disk busy\",\"retry\":true");
	assert_int_equal(settle(state, id, "fail", body, &o), 200);
	assert_string_equal(str_of(o, "status"), "QUEUED");
	assert_non_null(json_string_value(json_object_get(o, "runAfter")));
	json_decref(o);
	free(body);
	json_decref(a);
	a = claim1(state, "qc", "w1", 60, 30, id);
	assert_int_equal(int_of(a, "attempt"), 2);
	body = with_token(a, "\"error\":\"unreadable\",\"retry\":3");
	refused(state, 422, "invalid-job", "retry", "POST",
	    "/v1/jobs/1/fail", TOK_WORKER, NULL, body);
	free(body);
	body = with_token(a, "");
	refused(state, 422, "invalid-job", "error", "POST",
	    "/v1/jobs/1/fail", TOK_WORKER, NULL, body);
	free(body);
	body = with_token(a, "\"error\":\"unreadable\",\"retry\":false");
	assert_int_equal(settle(state, id, "fail", body, &o), 200);
	assert_string_equal(str_of(o, "status"), "FAILED");
	json_decref(o);
	free(body);
	json_decref(a);
	o = job_get(state, id);
	assert_string_equal(str_of(o, "error"), "unreadable");
	json_decref(o);

	refused(state, 400, "malformed-json", NULL, "POST", "/v1/jobs/claim",
	    TOK_WORKER, NULL, "[");
	refused(state, 422, "invalid-job", "kinds", "POST", "/v1/jobs/claim",
	    TOK_WORKER, NULL, "{\"worker\":\"w\"}");
	refused(state, 422, "invalid-job", "kinds", "POST", "/v1/jobs/claim",
	    TOK_WORKER, NULL, "{\"kinds\":[],\"worker\":\"w\"}");
	refused(state, 422, "invalid-job", "kinds[1]", "POST",
	    "/v1/jobs/claim", TOK_WORKER, NULL,
	    "{\"kinds\":[\"a\",3],\"worker\":\"w\"}");
	refused(state, 422, "invalid-job", "worker", "POST", "/v1/jobs/claim",
	    TOK_WORKER, NULL, "{\"kinds\":[\"a\"],\"worker\":\"mosgw:1\"}");
	refused(state, 422, "invalid-job", "lease_s", "POST",
	    "/v1/jobs/claim", TOK_WORKER, NULL,
	    "{\"kinds\":[\"a\"],\"worker\":\"w\",\"lease_s\":3601}");
	refused(state, 422, "invalid-job", "wait_s", "POST", "/v1/jobs/claim",
	    TOK_WORKER, NULL, "{\"kinds\":[\"a\"],\"worker\":\"w\","
	    "\"wait_s\":61}");
	refused(state, 422, "invalid-job", "max", "POST", "/v1/jobs/claim",
	    TOK_WORKER, NULL, "{\"kinds\":[\"a\"],\"worker\":\"w\",\"max\":0}");
	refused(state, 422, "invalid-job", "x", "POST", "/v1/jobs/claim",
	    TOK_WORKER, NULL, "{\"kinds\":[\"a\"],\"worker\":\"w\",\"x\":0}");
	refused(state, 403, "forbidden", NULL, "POST", "/v1/jobs/claim",
	    TOK_WRITE, NULL, "{\"kinds\":[\"a\"],\"worker\":\"w\"}");
	refused(state, 401, "unauthorized", NULL, "POST", "/v1/jobs/claim",
	    NULL, NULL, "{\"kinds\":[\"a\"],\"worker\":\"w\"}");
}

struct poller {
	void		**state;
	const char	 *body;		/* NULL: a long claim of "render" */
	int		  status;
	json_t		 *out;
};

static void *
poller_main(void *arg)
{
	struct poller		*p = arg;
	struct httpc_resp	 r;

	if (httpc_once(port_of(p->state), "POST", "/v1/jobs/claim",
	    TOK_WORKER, NULL, p->body != NULL ? p->body : "{\"kinds\":"
	    "[\"render\"],\"worker\":\"lp\",\"wait_s\":40}", &r) != 0)
		return NULL;
	p->status = r.status;
	p->out = json_loads(r.body, 0, NULL);
	httpc_resp_clear(&r);
	return NULL;
}

/* A long-poll times out empty, and returns a job that arrives. */
static void
test_long_poll(void **state)
{
	struct poller	 p;
	pthread_t	 th;
	json_t		*jobs, *j;
	int64_t		 t0, id;

	t0 = ncspeer_now_ms();
	jobs = claim(state, "{\"kinds\":[\"render\"],\"worker\":\"lp\","
	    "\"wait_s\":2}");
	assert_int_equal(json_array_size(jobs), 0);
	assert_true(ncspeer_now_ms() - t0 >= 1900);
	json_decref(jobs);

	memset(&p, 0, sizeof p);
	p.state = state;
	assert_int_equal(pthread_create(&th, NULL, poller_main, &p), 0);
	usleep(300000);
	id = submit(state, "CLIP-5", "{\"kind\":\"render\"}");
	pthread_join(th, NULL);
	assert_int_equal(p.status, 200);
	jobs = json_object_get(p.out, "jobs");
	assert_int_equal(json_array_size(jobs), 1);
	j = json_array_get(jobs, 0);
	assert_int_equal(int_of(j, "jobId"), id);
	assert_string_equal(str_of(j, "objID"), "CLIP-5");
	json_decref(p.out);
	check_state(state, id, "RUNNING");

	/* a stop answers a waiting claim at once, with no jobs */
	memset(&p, 0, sizeof p);
	p.state = state;
	assert_int_equal(pthread_create(&th, NULL, poller_main, &p), 0);
	usleep(500000);
	assert_int_equal(gwproc_stop(((struct gwrig *)*state)->gw), 0);
	pthread_join(th, NULL);
	assert_int_equal(p.status, 200);
	assert_int_equal(json_array_size(json_object_get(p.out, "jobs")), 0);
	json_decref(p.out);
}

/* At most 64 claims wait at once; the next one is told to come back. */
static void
test_long_poll_bound(void **state)
{
	struct gwrig	*rig = *state;
	struct poller	 p[64];
	pthread_t	 th[64];
	size_t		 i;

	for (i = 0; i < 64; i++) {
		memset(&p[i], 0, sizeof p[i]);
		p[i].state = state;
		p[i].body = "{\"kinds\":[\"idle\"],\"worker\":\"many\","
		    "\"wait_s\":60}";
		assert_int_equal(pthread_create(&th[i], NULL, poller_main,
		    &p[i]), 0);
	}
	if (gwproc_log_wait(rig->gw, 0, WAIT_MS, "job.claim.wait",
	    "waiting=64", (char *)NULL) < 0) {
		gwrig_dump(rig, "64 claims do not wait", __FILE__, __LINE__);
		fail_msg("64 claims do not wait");
	}
	refused(state, 503, "too-many-claims", "wait_s", "POST",
	    "/v1/jobs/claim", TOK_WORKER, NULL, "{\"kinds\":[\"idle\"],"
	    "\"worker\":\"one-more\",\"wait_s\":5}");
	/* one that need not wait is answered */
	json_decref(claim(state, "{\"kinds\":[\"idle\"],\"worker\":\"w\"}"));
	assert_int_equal(gwproc_stop(rig->gw), 0);
	for (i = 0; i < 64; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(p[i].status, 200);
		assert_int_equal(json_array_size(json_object_get(p[i].out,
		    "jobs")), 0);
		json_decref(p[i].out);
	}
}

/*
 * A waiting claim whose client goes away claims nothing for it: a job
 * submitted afterwards stays QUEUED for the next worker.
 */
static void
test_long_poll_gone(void **state)
{
	const char	*body = "{\"kinds\":[\"gone\"],\"worker\":\"dead\","
	    "\"wait_s\":20}";
	char		 req[512];
	json_t		*a;
	int64_t		 id;
	int		 fd;

	snprintf(req, sizeof req, "POST /v1/jobs/claim HTTP/1.1\r\nHost: x\r\n"
	    "Authorization: Bearer " TOK_WORKER "\r\nContent-Type: "
	    "application/json\r\nContent-Length: %zu\r\n\r\n%s",
	    strlen(body), body);
	fd = httpc_connect(port_of(state));
	assert_true(fd >= 0);
	assert_int_equal(httpc_write(fd, req, strlen(req)), 0);
	usleep(300000);
	close(fd);
	usleep(300000);
	id = submit(state, "CLIP-10", "{\"kind\":\"gone\"}");
	usleep(1500000);	/* past the parked claim's next try */
	check_state(state, id, "QUEUED");
	a = claim1(state, "gone", "alive", 60, 0, id);
	assert_int_equal(int_of(a, "attempt"), 1);
	json_decref(a);
}

/*
 * A completion with an asset change: the catalog and the mosObj UPDATED
 * to the NCS, in the transaction of the completion; a bad asset changes
 * nothing (422) and the job stays held.
 */
static void
test_complete_asset(void **state)
{
	struct gwrig			*rig = *state;
	struct ncspeer_match		 mt = { .type = "mosObj",
	    .port = NCSPEER_LOWER, .side = NCSPEER_ACCEPTED,
	    .obj_id = "CLIP-7" };
	const struct ncspeer_frame	*f;
	json_t				*a, *o;
	char				*body, path[64];
	int64_t				 id;

	o = call_ok(state, 202, "PUT", "/v1/assets/CLIP-7", TOK_WRITE, NULL,
	    "{\"objSlug\":\"Raw clip\"}");
	json_decref(o);
	f = ncspeer_wait(rig->ncs, &mt, WAIT_MS);
	assert_non_null(f);
	mt.from = f->seq + 1;

	id = submit(state, "CLIP-7", "{\"kind\":\"proxy\"}");
	a = claim1(state, "proxy", "w1", 60, 0, id);
	snprintf(path, sizeof path, "/v1/jobs/%lld/complete", (long long)id);
	body = with_token(a, "\"asset\":{\"objSlug\":\"Bad\",\"description\":"
	    "\"<p>open\"}");
	refused(state, 422, "invalid-asset", NULL, "POST", path,
	    TOK_WORKER, NULL, body);
	free(body);
	body = with_token(a, "\"asset\":{\"objSlug\":\"Bad\",\"colour\":1}");
	refused(state, 422, "invalid-asset", "asset/colour", "POST", path,
	    TOK_WORKER, NULL, body);
	free(body);
	body = with_token(a, "\"asset\":[]");
	refused(state, 422, "invalid-asset", "asset", "POST", path,
	    TOK_WORKER, NULL, body);
	free(body);
	body = with_token(a, "\"result\":\"done\"");
	refused(state, 422, "invalid-job", "result", "POST", path,
	    TOK_WORKER, NULL, body);
	free(body);
	check_state(state, id, "RUNNING");

	body = with_token(a, "\"result\":{\"proxy\":\"http://m/7.mp4\"},"
	    "\"asset\":{\"objSlug\":\"Proxy ready\",\"objDur\":2500,"
	    "\"objPaths\":{\"objProxyPath\":[{\"@techDescription\":\"WM\","
	    "\"#text\":\"http://m/7.mp4\"}]}}");
	assert_int_equal(settle(state, id, "complete", body, &o), 200);
	free(body);
	assert_string_equal(str_of(o, "status"), "DONE");
	assert_int_equal(int_of(json_object_get(o, "asset"), "objRev"), 2);
	assert_string_equal(str_of(json_object_get(o, "asset"), "objID"),
	    "CLIP-7");
	json_decref(o);
	json_decref(a);

	f = ncspeer_wait(rig->ncs, &mt, WAIT_MS);
	if (f == NULL) {
		gwrig_dump(rig, "no mosObj", __FILE__, __LINE__);
		fail_msg("the NCS got no mosObj for the completion");
	}
	assert_non_null(f->msg);
	assert_string_equal(f->msg->u.mos_obj.obj_slug, "Proxy ready");
	assert_string_equal(f->msg->u.mos_obj.status, "UPDATED");
	assert_int_equal(f->msg->u.mos_obj.obj_rev, 2);
	assert_int_equal(f->msg->u.mos_obj.obj_dur, 2500);
	o = call_ok(state, 200, "GET", "/v1/assets/CLIP-7", TOK_READ, NULL,
	    NULL);
	assert_string_equal(str_of(o, "objSlug"), "Proxy ready");
	assert_string_equal(str_of(o, "changedBy"), "w");
	json_decref(o);

	/* another asset named in the completion */
	id = submit(state, "CLIP-7", "{\"kind\":\"proxy\"}");
	a = claim1(state, "proxy", "w1", 60, 0, id);
	body = with_token(a, "\"asset\":{\"objID\":\"CLIP-8\",\"objSlug\":"
	    "\"Derived\"}");
	assert_int_equal(settle(state, id, "complete", body, &o), 200);
	assert_string_equal(str_of(json_object_get(o, "asset"), "objID"),
	    "CLIP-8");
	assert_int_equal(int_of(json_object_get(o, "asset"), "objRev"), 1);
	json_decref(o);
	free(body);
	json_decref(a);
	mt.obj_id = "CLIP-8";
	mt.from = 0;
	assert_non_null(ncspeer_wait(rig->ncs, &mt, WAIT_MS));
}

/* A chain of three: blocked steps, requeue, cancel, rerun; listing. */
static void
test_chain_admin(void **state)
{
	json_t	*a, *o;
	char	*body, b[128], path[96];
	int64_t	 j1, j2, j3;

	j1 = submit(state, "CLIP-6", "{\"kind\":\"step1\"}");
	snprintf(b, sizeof b, "{\"kind\":\"step2\",\"after\":%lld}",
	    (long long)j1);
	j2 = submit(state, "CLIP-6", b);
	snprintf(b, sizeof b, "{\"kind\":\"step3\",\"after\":%lld}",
	    (long long)j2);
	j3 = submit(state, "CLIP-6", b);
	o = job_get(state, j2);
	assert_true(json_is_true(json_object_get(o, "blocked")));
	assert_int_equal(int_of(o, "after"), j1);
	json_decref(o);
	a = claim(state, "{\"kinds\":[\"step2\",\"step3\"],\"worker\":\"w\"}");
	assert_int_equal(json_array_size(a), 0);	/* blocked */
	json_decref(a);

	a = claim1(state, "step1", "w", 60, 0, j1);
	body = with_token(a, "");
	assert_int_equal(settle(state, j1, "complete", body, NULL), 200);
	free(body);
	json_decref(a);
	a = claim1(state, "step2", "w", 60, 0, j2);
	body = with_token(a, "");
	assert_int_equal(settle(state, j2, "complete", body, NULL), 200);
	free(body);
	json_decref(a);
	a = claim1(state, "step3", "w", 60, 0, j3);
	body = with_token(a, "\"error\":\"no\",\"retry\":false");
	assert_int_equal(settle(state, j3, "fail", body, NULL), 200);
	free(body);
	json_decref(a);

	snprintf(path, sizeof path, "/v1/jobs/%lld/requeue", (long long)j3);
	refused(state, 403, "forbidden", NULL, "POST", path, TOK_WORKER, NULL,
	    NULL);
	o = call_ok(state, 200, "POST", path, TOK_ADMIN, NULL, NULL);
	assert_string_equal(str_of(o, "state"), "QUEUED");
	json_decref(o);
	snprintf(path, sizeof path, "/v1/jobs/%lld/requeue", (long long)j1);
	refused(state, 409, "invalid-transition", NULL, "POST", path,
	    TOK_ADMIN, NULL, NULL);
	snprintf(path, sizeof path, "/v1/jobs/%lld/cancel", (long long)j3);
	o = call_ok(state, 200, "POST", path, TOK_ADMIN, NULL, NULL);
	assert_string_equal(str_of(o, "state"), "CANCELLED");
	json_decref(o);
	refused(state, 409, "invalid-transition", NULL, "POST", path,
	    TOK_ADMIN, NULL, NULL);

	/* rerun from step 1: all three again, the later ones blocked */
	snprintf(path, sizeof path, "/v1/jobs/%lld/rerun", (long long)j1);
	o = call_ok(state, 200, "POST", path, TOK_ADMIN, NULL, NULL);
	assert_string_equal(str_of(o, "state"), "QUEUED");
	assert_int_equal(int_of(o, "rerun"), 3);
	json_decref(o);
	o = job_get(state, j3);
	assert_string_equal(str_of(o, "state"), "QUEUED");
	assert_true(json_is_true(json_object_get(o, "blocked")));
	json_decref(o);
	a = claim1(state, "step1", "w", 60, 0, j1);
	assert_int_equal(int_of(a, "attempt"), 2);
	json_decref(a);
	snprintf(path, sizeof path, "/v1/jobs/%lld/rerun", (long long)j1);
	refused(state, 409, "invalid-transition", NULL, "POST", path,
	    TOK_ADMIN, NULL, NULL);
	refused(state, 404, "not-found", "id", "POST", "/v1/jobs/987654/rerun",
	    TOK_ADMIN, NULL, NULL);
	refused(state, 404, "not-found", "id", "POST", "/v1/jobs/x/cancel",
	    TOK_ADMIN, NULL, NULL);

	/* listing: filters and the cursor */
	o = call_ok(state, 200, "GET", "/v1/jobs?state=running&kind=step1",
	    TOK_READ, NULL, NULL);
	assert_int_equal(json_array_size(json_object_get(o, "jobs")), 1);
	assert_int_equal(int_of(json_array_get(json_object_get(o, "jobs"), 0),
	    "jobId"), j1);
	json_decref(o);
	o = call_ok(state, 200, "GET", "/v1/jobs?kind=step2&limit=1",
	    TOK_READ, NULL, NULL);
	assert_int_equal(int_of(o, "next"), j2);
	json_decref(o);
	snprintf(path, sizeof path, "/v1/jobs?after=%lld&limit=1",
	    (long long)j2);
	o = call_ok(state, 200, "GET", path, TOK_READ, NULL, NULL);
	assert_int_equal(int_of(json_array_get(json_object_get(o, "jobs"), 0),
	    "jobId"), j3);
	json_decref(o);
	refused(state, 422, "invalid-parameter", "state", "GET",
	    "/v1/jobs?state=SLEEPING", TOK_READ, NULL, NULL);
	refused(state, 422, "invalid-parameter", "limit", "GET",
	    "/v1/jobs?limit=0", TOK_READ, NULL, NULL);
	refused(state, 422, "invalid-parameter", "after", "GET",
	    "/v1/jobs?after=x", TOK_READ, NULL, NULL);
	refused(state, 401, "unauthorized", NULL, "GET", "/v1/jobs", NULL,
	    NULL, NULL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_submit, setup,
		    itutil_teardown),
		cmocka_unit_test_setup_teardown(test_idempotent_concurrent,
		    setup, itutil_teardown),
		cmocka_unit_test_setup_teardown(test_lease_expiry, setup,
		    itutil_teardown),
		cmocka_unit_test_setup_teardown(test_fail_and_claim_input,
		    setup, itutil_teardown),
		cmocka_unit_test_setup_teardown(test_long_poll, setup,
		    itutil_teardown),
		cmocka_unit_test_setup_teardown(test_long_poll_bound, setup,
		    itutil_teardown),
		cmocka_unit_test_setup_teardown(test_long_poll_gone, setup,
		    itutil_teardown),
		cmocka_unit_test_setup_teardown(test_complete_asset, setup,
		    itutil_teardown),
		cmocka_unit_test_setup_teardown(test_chain_admin, setup,
		    itutil_teardown),
	};

	return cmocka_run_group_tests_name("gateway_it_jobs", tests, NULL,
	    NULL);
}
