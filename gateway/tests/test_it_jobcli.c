/*
 * Integration: mosctl job over the HTTP API of the real mosgw (submit with
 * and without an Idempotency-Key, ls following the pages, show, requeue,
 * cancel, rerun; the API's errors as "mosctl: STATUS title: detail" and
 * their exit statuses), mosctl status listing the FAILED jobs, mosctl
 * asset ls --query searching through GET /v1/assets?q=, and a worker on the
 * command line (job claim, heartbeat, complete, fail).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/tests/httpc.h"
#include "gateway/tests/itutil.h"

#define TOK_READ	"jcli-read-0123456789"
#define TOK_WRITE	"jcli-write-0123456789"
#define TOK_WORKER	"jcli-worker-0123456789"
#define TOK_ADMIN	"jcli-admin-0123456789"
#define NFAILED		22	/* more than status lists (20) */

static const char tokens[] =
    "reader read " TOK_READ "\n"
    "mam write " TOK_WRITE "\n"
    "w worker " TOK_WORKER "\n"
    "ops admin " TOK_ADMIN "\n";

/* The URL and a token file for each role. */
struct cli {
	struct gwrig	*r;
	char		 url[64];
	char		 read[320], write[320], admin[320], worker[320];
};

static int
setup(void **state)
{
	struct gwproc_opts	o;

	memset(&o, 0, sizeof o);
	o.api_tokens = tokens;
	return itutil_setup_opts(state, MOS_ENC_UTF16BE, &o);
}

static void
cli_init(void **state, struct cli *c)
{
	c->r = *state;
	snprintf(c->url, sizeof c->url, "http://127.0.0.1:%u",
	    c->r->gw->api_port);
	assert_int_equal(itutil_write_file(c->r, "rtok", TOK_READ "\n",
	    c->read, sizeof c->read), 0);
	assert_int_equal(itutil_write_file(c->r, "wtok", TOK_WRITE "\n",
	    c->write, sizeof c->write), 0);
	assert_int_equal(itutil_write_file(c->r, "atok", "ops admin "
	    TOK_ADMIN "\n", c->admin, sizeof c->admin), 0);
	assert_int_equal(itutil_write_file(c->r, "ktok", TOK_WORKER "\n",
	    c->worker, sizeof c->worker), 0);
}

/* mosctl over the API (itutil_mosctl_url), a failure if not as wanted */
#define run(c, tok, want, ...)						\
	itutil_must(itutil_mosctl_url((c)->r, (tok), (want), __VA_ARGS__))

/* The jobId of a --json answer. */
static long long
job_id_of(char *out)
{
	json_t		*o = json_loads(out, 0, NULL);
	long long	 id;

	assert_non_null(o);
	id = (long long)json_integer_value(json_object_get(o, "jobId"));
	json_decref(o);
	free(out);
	assert_true(id > 0);
	return id;
}

/* submit: a job, the same key twice, and what the API refuses. */
static void
test_submit(void **state)
{
	struct cli	 c;
	char		*out, *end, after[32];
	const char	*p;
	long long	 id, id2;

	cli_init(state, &c);
	id = job_id_of(run(&c, c.write, 0, "\"status\":\"QUEUED\"", "job",
	    "submit", "CLIP-1", "transcode", "--payload",
	    "{\"profile\":\"h264\"}", "--priority", "3", "--key", "ingest-1",
	    "--json", (char *)NULL));
	/* the same key and request: the same job */
	id2 = job_id_of(run(&c, c.write, 0, "\"jobId\"", "job", "submit",
	    "CLIP-1", "transcode", "--payload", "{\"profile\":\"h264\"}",
	    "--priority", "3", "--key", "ingest-1", "--json", (char *)NULL));
	assert_int_equal(id, id2);
	/* the same key, another request */
	free(run(&c, c.write, 1, "mosctl: 409 ", "job", "submit", "CLIP-1",
	    "proxy", "--key", "ingest-1", (char *)NULL));
	/* a chain after it, in text */
	snprintf(after, sizeof after, "%lld", id);
	out = run(&c, c.write, 0, "QUEUED (asset CLIP-1, kind proxy)", "job",
	    "submit", "CLIP-1", "proxy", "--after", after, (char *)NULL);
	/* a newer id (PostgreSQL's sequence skips those the key took) */
	assert_non_null(p = strstr(out, "job #"));
	assert_true(strtoll(p + 5, &end, 10) > id);
	assert_true(strncmp(end, ": ", 2) == 0);
	free(out);

	free(run(&c, c.read, 69, "mosctl: 403 ", "job", "submit", "CLIP-1",
	    "qc", (char *)NULL));
	free(run(&c, c.write, 64, "mosctl: 422 ", "job", "submit", "CLIP-1",
	    "publish", (char *)NULL));
	free(run(&c, c.write, 64, "mosctl: 422 ", "job", "submit", "CLIP-1",
	    "qc", "--priority", "12", (char *)NULL));
	free(run(&c, c.write, 64, "mosctl: 422 Invalid job: after: no job "
	    "999999", "job", "submit", "CLIP-1", "qc", "--after", "999999",
	    (char *)NULL));
	free(run(&c, c.write, 64, "not a JSON object", "job", "submit",
	    "CLIP-1", "qc", "--payload", "[1]", (char *)NULL));
	free(run(&c, c.write, 64, "bad --key", "job", "submit", "CLIP-1",
	    "qc", "--key", "a b", (char *)NULL));
	free(run(&c, c.write, 64, "OBJID and KIND", "job", "submit",
	    "CLIP-1", (char *)NULL));
	free(run(&c, c.write, 64, "--state does not go", "job", "submit",
	    "CLIP-1", "qc", "--state", "FAILED", (char *)NULL));
	free(run(&c, c.read, 64, "database file only", "job", "stats",
	    (char *)NULL));
}

/* ls across pages, show, requeue, cancel, rerun. */
static void
test_ls_show_admin(void **state)
{
	struct cli	 c;
	char		*out, body[128];
	int		 i;

	cli_init(state, &c);
	/* more than one page of 100 */
	for (i = 0; i < 105; i++) {
		struct httpc_resp	r;

		snprintf(body, sizeof body, "{\"kind\":\"%s\"}", i % 5 == 0 ?
		    "proxy" : "transcode");
		assert_int_equal(httpc_once(c.r->gw->api_port, "POST",
		    "/v1/assets/LS-1/jobs", TOK_WRITE, NULL, body, &r), 0);
		assert_int_equal(r.status, 202);
		httpc_resp_clear(&r);
	}
	out = run(&c, c.read, 0, "LAST ERROR", "job", "ls", (char *)NULL);
	assert_int_equal(itutil_count(out, " QUEUED "), 105);
	assert_non_null(strstr(out, "\n105 "));
	free(out);
	out = run(&c, c.read, 0, "\"jobId\":103,", "job", "ls", "--limit",
	    "103", "--json", (char *)NULL);
	assert_int_equal(itutil_count(out, "\n"), 103);
	assert_null(strstr(out, "\"jobId\":104,"));
	free(out);
	out = run(&c, c.read, 0, "proxy", "job", "ls", "--kind", "proxy",
	    "--state", "queued", (char *)NULL);
	assert_int_equal(itutil_count(out, " proxy "), 21);
	free(out);
	out = run(&c, c.read, 0, "LAST ERROR", "job", "ls", "--state",
	    "DONE", (char *)NULL);
	assert_int_equal(itutil_count(out, "\n"), 1);
	free(out);
	free(run(&c, c.read, 64, "unknown state 'BOGUS'", "job", "ls",
	    "--state", "BOGUS", (char *)NULL));
	free(run(&c, c.read, 64, "bad --limit", "job", "ls", "--limit", "0",
	    (char *)NULL));
	free(run(&c, c.read, 64, "takes no operand", "job", "ls", "7",
	    (char *)NULL));

	out = run(&c, c.read, 0, "job #7  QUEUED", "job", "show", "7",
	    (char *)NULL);
	assert_non_null(strstr(out, "lane mam  kind transcode"));
	assert_non_null(strstr(out, "history:"));
	assert_non_null(strstr(out, "-> QUEUED"));
	free(out);
	out = run(&c, c.read, 0, "\"history\":[", "job", "show", "#7",
	    "--json", (char *)NULL);
	assert_int_equal(job_id_of(out), 7);
	free(run(&c, c.read, 1, "mosctl: 404 ", "job", "show", "999999",
	    (char *)NULL));
	free(run(&c, c.read, 64, "bad job id 'x'", "job", "show", "x",
	    (char *)NULL));

	/* admin verbs: only admin tokens */
	free(run(&c, c.write, 69, "mosctl: 403 ", "job", "cancel", "7",
	    (char *)NULL));
	free(run(&c, c.admin, 0, "cancelled #7: now CANCELLED", "job",
	    "cancel", "7", (char *)NULL));
	free(run(&c, c.admin, 1, "mosctl: 409 ", "job", "cancel", "7",
	    (char *)NULL));
	free(run(&c, c.admin, 0, "requeued #7: now QUEUED", "job",
	    "requeue", "7", (char *)NULL));
	free(run(&c, c.admin, 1, "mosctl: 409 ", "job", "requeue", "7",
	    (char *)NULL));
	free(run(&c, c.admin, 1, "mosctl: 404 ", "job", "requeue", "999999",
	    (char *)NULL));
	free(run(&c, c.admin, 0, "\"state\":\"CANCELLED\"", "job", "cancel",
	    "8", "--json", (char *)NULL));
	free(run(&c, c.admin, 0, "re-run: 1 job", "job", "rerun", "8",
	    (char *)NULL));
	free(run(&c, c.admin, 1, "mosctl: 404 ", "job", "rerun", "999999",
	    (char *)NULL));
	free(run(&c, c.read, 69, "mosctl: 403 ", "job", "rerun", "8",
	    (char *)NULL));
	out = run(&c, c.read, 0, "job #8  QUEUED", "job", "show", "8",
	    (char *)NULL);
	assert_non_null(strstr(out, "rerun by ops (API)"));
	free(out);
}

/* Claim every due job of kind qc as worker w1 (at most max); the answer. */
static json_t *
claim_qc(struct cli *c, int max)
{
	struct httpc_resp	 r;
	json_t			*o;
	char			 body[128];

	snprintf(body, sizeof body, "{\"kinds\":[\"qc\"],\"worker\":\"w1\","
	    "\"max\":%d,\"lease_s\":120}", max);
	assert_int_equal(httpc_once(c->r->gw->api_port, "POST",
	    "/v1/jobs/claim", TOK_WORKER, NULL, body, &r), 0);
	if (r.status != 200)
		fail_msg("claim: %d %s", r.status, r.body);
	assert_non_null(o = json_loads(r.body, 0, NULL));
	httpc_resp_clear(&r);
	return o;
}

/* status: the FAILED jobs, at most 20 and "and N more". */
static void
test_status_failed(void **state)
{
	struct cli		 c;
	struct httpc_resp	 r;
	json_t			*o, *jobs, *j;
	char			*out, path[64], body[512], want[128];
	size_t			 i;
	int			 k;

	cli_init(state, &c);
	/* nothing failed yet: no list */
	if (gwproc_mosctl_cmd(c.r->gw, &out, NULL, "--url", c.url,
	    "--token-file", c.read, "status", (char *)NULL) < 0)
		fail_msg("mosctl status did not run");
	assert_non_null(strstr(out, "queue:"));
	assert_null(strstr(out, "failed job"));
	free(out);

	for (k = 0; k < NFAILED; k++)
		free(run(&c, c.write, 0, "QUEUED", "job", "submit", "QC-1",
		    "qc", (char *)NULL));
	o = claim_qc(&c, NFAILED);
	jobs = json_object_get(o, "jobs");
	assert_int_equal(json_array_size(jobs), NFAILED);
	json_array_foreach(jobs, i, j) {
		snprintf(path, sizeof path, "/v1/jobs/%lld/fail",
		    (long long)json_integer_value(json_object_get(j,
		    "jobId")));
		snprintf(body, sizeof body, "{\"leaseToken\":\"%s\","
		    "\"error\":\"disk full\\non vol %zu\",\"retry\":false}",
		    json_string_value(json_object_get(j, "leaseToken")), i);
		assert_int_equal(httpc_once(c.r->gw->api_port, "POST", path,
		    TOK_WORKER, NULL, body, &r), 0);
		if (r.status != 200 || strstr(r.body, "FAILED") == NULL)
			fail_msg("fail: %d %s", r.status, r.body);
		httpc_resp_clear(&r);
	}
	json_decref(o);

	/* the exit status follows the links; the list is there either way */
	if (gwproc_mosctl_cmd(c.r->gw, &out, NULL, "--url", c.url,
	    "--token-file", c.read, "status", (char *)NULL) < 0)
		fail_msg("mosctl status did not run");
	snprintf(want, sizeof want, "%d failed jobs:", NFAILED);
	if (strstr(out, want) == NULL)
		fail_msg("status: %s", out);
	assert_non_null(strstr(out, "LAST ERROR"));
	assert_non_null(strstr(out, "  1        qc           QC-1"));
	assert_non_null(strstr(out, "1/5     disk full on vol 0"));
	assert_int_equal(itutil_count(out, " QC-1 "), 20);
	snprintf(want, sizeof want, "and %d more (mosctl job ls --state "
	    "FAILED)", NFAILED - 20);
	assert_non_null(strstr(out, want));
	free(out);

	if (gwproc_mosctl_cmd(c.r->gw, &out, NULL, "--url", c.url,
	    "--token-file", c.read, "status", "--json", (char *)NULL) < 0)
		fail_msg("mosctl status --json did not run");
	assert_non_null(o = json_loads(out, 0, NULL));
	free(out);
	assert_int_equal(json_integer_value(json_object_get(o, "failedJobs")),
	    NFAILED);
	jobs = json_object_get(o, "failed");
	assert_int_equal(json_array_size(jobs), 20);
	j = json_array_get(jobs, 0);
	assert_string_equal(json_string_value(json_object_get(j, "objID")),
	    "QC-1");
	assert_string_equal(json_string_value(json_object_get(j, "error")),
	    "disk full\non vol 0");
	json_decref(o);

	/* a requeued job leaves the list */
	free(run(&c, c.admin, 0, "requeued #1: now QUEUED", "job", "requeue",
	    "1", (char *)NULL));
	if (gwproc_mosctl_cmd(c.r->gw, &out, NULL, "--url", c.url,
	    "--token-file", c.read, "status", (char *)NULL) < 0)
		fail_msg("mosctl status did not run");
	snprintf(want, sizeof want, "%d failed jobs:", NFAILED - 1);
	assert_non_null(strstr(out, want));
	assert_null(strstr(out, "  1        qc "));
	free(out);
}

/* asset ls --query: the search over the API, ranked; what it refuses. */
static void
test_asset_query(void **state)
{
	static const char *const slugs[][2] = {
		{ "Q-1", "Harbour fire" }, { "Q-2", "Fire fire harbour fire" },
		{ "Q-3", "Weather" },
	};
	struct cli	 c;
	char		*out, *second;
	size_t		 i;

	cli_init(state, &c);
	for (i = 0; i < sizeof slugs / sizeof slugs[0]; i++)
		free(run(&c, c.write, 0, "", "asset", "put", slugs[i][0],
		    "--slug", slugs[i][1], (char *)NULL));
	out = run(&c, c.read, 0, "SLUG", "asset", "ls", "--query", "FIRE",
	    (char *)NULL);
	print_message("%s", out != NULL ? out : "");
	/* ranked: the slug saying it twice first */
	assert_non_null(second = strstr(out, "\nQ-1 "));
	assert_non_null(strstr(out, "\nQ-2 "));
	assert_true(strstr(out, "\nQ-2 ") < second);
	assert_null(strstr(out, "Q-3"));
	free(out);
	out = run(&c, c.read, 0, "\"objID\":\"Q-2\"", "asset", "ls",
	    "--query", "fire", "--limit", "1", "--json", (char *)NULL);
	assert_null(strstr(out, "Q-1"));
	free(out);
	out = run(&c, c.read, 0, "\"objID\":\"Q-1\"", "asset", "ls",
	    "--query", "harb* FIRE", "--json", (char *)NULL);
	assert_non_null(strstr(out, "\"objID\":\"Q-2\""));
	assert_null(strstr(out, "Q-3"));
	free(out);
	out = run(&c, c.read, 0, "SLUG", "asset", "ls", "--query", "drought",
	    (char *)NULL);
	assert_null(strstr(out, "Q-"));
	free(out);
	free(run(&c, c.read, 64, "no word to search for", "asset", "ls",
	    "--query", "++ --", (char *)NULL));
	free(run(&c, c.read, 64, "--query takes --limit only", "asset", "ls",
	    "--query", "fire", "--after", "Q-1", (char *)NULL));
}

/* The jobId and leaseToken of the one job a claim --json printed. */
static long long
claimed(char *out, char *tok, size_t len)
{
	json_t		*o = json_loads(out, 0, NULL);
	long long	 id;

	if (o == NULL)
		fail_msg("claim --json: not one JSON object: %s", out);
	id = (long long)json_integer_value(json_object_get(o, "jobId"));
	snprintf(tok, len, "%s", json_string_value(json_object_get(o,
	    "leaseToken")));
	json_decref(o);
	free(out);
	assert_true(id > 0 && strlen(tok) > 0);
	return id;
}

/*
 * Submit a job of kind about W-1 and claim it as w2: it is that job; its
 * lease token in tok and its id (text) in ids.
 */
static void
submit_claim(struct cli *c, const char *kind, char *tok, size_t toklen,
    char *ids, size_t idslen)
{
	long long	id, id2;

	id = job_id_of(run(c, c->write, 0, "\"jobId\"", "job", "submit",
	    "W-1", kind, "--json", (char *)NULL));
	id2 = claimed(run(c, c->worker, 0, "\"leaseToken\"", "job", "claim",
	    "--kind", kind, "--worker", "w2", "--json", (char *)NULL), tok,
	    toklen);
	assert_true(id == id2);
	snprintf(ids, idslen, "%lld", id);
}

/*
 * A worker on the command line: claim, heartbeat, complete with a result
 * and an asset change, fail with and without a retry; a stale lease token,
 * nothing due, the wrong role, bad options, and --db refusing them.
 */
static void
test_worker(void **state)
{
	struct cli	 c;
	char		*out, *err, tok[300], ids[32];
	long long	 id;

	cli_init(state, &c);
	free(run(&c, c.write, 0, "", "asset", "put", "W-1", "--slug",
	    "Raw clip", (char *)NULL));
	free(run(&c, c.write, 0, "QUEUED", "job", "submit", "W-1",
	    "transcode", "--payload", "{\"profile\":\"h264\"}", (char *)NULL));
	/* the wrong role, then nothing of that kind */
	free(run(&c, c.write, 69, "mosctl: 403 ", "job", "claim", "--kind",
	    "transcode", "--worker", "w1", (char *)NULL));
	free(run(&c, c.worker, 1, "no job due", "job", "claim", "--kind",
	    "qc", "--worker", "w1", "--wait", "1s", (char *)NULL));

	out = run(&c, c.worker, 0, "\"leaseToken\"", "job", "claim", "--kind",
	    "qc", "--kind", "transcode", "--worker", "w1", "--lease", "2m",
	    "--json", (char *)NULL);
	assert_non_null(strstr(out, "\"payload\":{\"profile\":\"h264\"}"));
	id = claimed(out, tok, sizeof tok);
	snprintf(ids, sizeof ids, "%lld", id);
	free(run(&c, c.worker, 0, "lease until 20", "job", "heartbeat", ids,
	    "--lease-token", tok, "--lease", "5m", (char *)NULL));
	out = run(&c, c.worker, 0, "DONE (asset W-1 now objRev 2)", "job",
	    "complete", ids, "--lease-token", tok, "--result",
	    "{\"proxy\":\"http://media.local/w-1.mp4\"}", "--asset",
	    "{\"objSlug\":\"Transcoded clip\"}", (char *)NULL);
	free(out);
	/* the lease is spent: 409, exit 1 */
	free(run(&c, c.worker, 1, "mosctl: 409 ", "job", "complete", ids,
	    "--lease-token", tok, (char *)NULL));
	out = run(&c, c.read, 0, "Transcoded clip", "asset", "show", "W-1",
	    (char *)NULL);
	free(out);
	out = run(&c, c.read, 0, "w-1.mp4", "job", "show", ids, "--json",
	    (char *)NULL);
	free(out);

	/* fail: due again while attempts remain, then FAILED at once */
	submit_claim(&c, "qc", tok, sizeof tok, ids, sizeof ids);
	free(run(&c, c.worker, 0, "QUEUED (attempt 1, due again", "job",
	    "fail", ids, "--lease-token", tok, "--error", "disk full",
	    (char *)NULL));
	free(run(&c, c.worker, 1, "mosctl: 409 ", "job", "fail", ids,
	    "--lease-token", tok, "--error", "again", (char *)NULL));
	submit_claim(&c, "probe", tok, sizeof tok, ids, sizeof ids);
	free(run(&c, c.worker, 0, "FAILED", "job", "fail", ids,
	    "--lease-token", tok, "--error", "corrupt source", "--no-retry",
	    (char *)NULL));
	free(run(&c, c.read, 0, "corrupt source", "job", "show", ids,
	    (char *)NULL));

	/* what mosctl refuses before asking */
	free(run(&c, c.worker, 64, "needs --kind", "job", "claim", "--worker",
	    "w1", (char *)NULL));
	free(run(&c, c.worker, 64, "bad --lease '0s'", "job", "claim",
	    "--kind", "qc", "--worker", "w1", "--lease", "0s", (char *)NULL));
	free(run(&c, c.worker, 64, "bad --wait '2m'", "job", "claim",
	    "--kind", "qc", "--worker", "w1", "--wait", "2m", (char *)NULL));
	free(run(&c, c.worker, 64, "needs --lease-token", "job", "heartbeat",
	    ids, (char *)NULL));
	free(run(&c, c.worker, 64, "not a JSON object", "job", "complete",
	    ids, "--lease-token", tok, "--result", "[1]", (char *)NULL));
	free(run(&c, c.worker, 64, "needs --error", "job", "fail", ids,
	    "--lease-token", tok, (char *)NULL));
	free(run(&c, c.worker, 64, "--error does not go with job complete",
	    "job", "complete", ids, "--lease-token", tok, "--error", "x",
	    (char *)NULL));
	/* the API's own refusal of a bad worker name */
	free(run(&c, c.worker, 64, "mosctl: 422 ", "job", "claim", "--kind",
	    "qc", "--worker", "w 1", (char *)NULL));
	assert_int_equal(gwproc_mosctl_cmd(c.r->gw, &out, &err, "--db",
	    "nowhere.db", "job", "claim", "--kind", "qc", "--worker", "w1",
	    (char *)NULL), 64);
	assert_non_null(strstr(err, "works over the API only"));
	free(out);
	free(err);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_submit, setup,
		    itutil_teardown),
		cmocka_unit_test_setup_teardown(test_ls_show_admin, setup,
		    itutil_teardown),
		cmocka_unit_test_setup_teardown(test_status_failed, setup,
		    itutil_teardown),
		cmocka_unit_test_setup_teardown(test_asset_query, setup,
		    itutil_teardown),
		cmocka_unit_test_setup_teardown(test_worker, setup,
		    itutil_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
