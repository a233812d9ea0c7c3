/*
 * Integration: watching the real mosgw. GET /metrics parsed as the
 * Prometheus exposition format (promparse.c) with values that move when an
 * asset is put and acknowledged; GET /readyz ready, then not ready when the
 * database file is made read-only or removed (SQLite: on PostgreSQL the
 * database is no file), an NCS going down reported but still ready; the status page GET / with its Basic login, what it
 * shows and its escaping.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <sys/stat.h>

#include <jansson.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gateway/gateway.h"
#include "gateway/tests/httpc.h"
#include "gateway/tests/itutil.h"
#include "gateway/tests/promparse.h"

#define TOK_READ	"read-token-0123456789"
#define TOK_WRITE	"write-token-0123456789"
#define TOK_ADMIN	"admin-token-0123456789"
#define DEADLINE_MS	15000
#define NACK_TEXT	"<b>no & \"never\"</b>"

static const char tokens[] =
    "reader read " TOK_READ "\n"
    "writer write " TOK_WRITE "\n"
    "boss admin " TOK_ADMIN "\n";

static int
setup(void **state)
{
	struct gwproc_opts	o;

	memset(&o, 0, sizeof o);
	o.api_tokens = tokens;
	o.log_level = "info";
	return itutil_setup_opts(state, MOS_ENC_UTF16BE, &o);
}

/* A gateway whose NCS NACKs every mosObj, with one attempt per job. */
static int
setup_nack(void **state)
{
	struct gwproc_opts	o;
	struct ncspeer_policy	pol;
	struct gwrig		*r;

	memset(&o, 0, sizeof o);
	o.api_tokens = tokens;
	o.log_level = "info";
	o.ncs[0].extra = "max_attempts = 1\n";
	o.nncs = 1;
	if (itutil_setup_opts(state, MOS_ENC_UTF16BE, &o) != 0)
		return -1;
	r = *state;
	memset(&pol, 0, sizeof pol);
	pol.obj = NCSPEER_OBJ_NACK;
	pol.nack_text = NACK_TEXT;
	ncspeer_set_policy(r->ncs, &pol);
	return 0;
}

static uint16_t
port(void **state)
{
	return ((struct gwrig *)*state)->gw->api_port;
}

static void
req(void **state, const char *method, const char *path, const char *token,
    const char *headers, const char *body, struct httpc_resp *r)
{
	if (httpc_once(port(state), method, path, token, headers, body,
	    r) != 0) {
		gwrig_dump(*state, "no HTTP answer", __FILE__, __LINE__);
		fail_msg("%s %s: no answer", method, path);
	}
}

/* GET /metrics, checked as the exposition format. */
static void
scrape(void **state, struct prom *p)
{
	struct httpc_resp	 r;
	char			*ct;

	req(state, "GET", "/metrics", TOK_READ, NULL, NULL, &r);
	if (r.status != 200)
		fail_msg("/metrics: %d %s", r.status, r.body);
	ct = httpc_header(&r, "Content-Type");
	assert_non_null(ct);
	assert_string_equal(ct, "text/plain; version=0.0.4; charset=utf-8");
	free(ct);
	if (prom_parse(p, r.body, "mosgw_") != 0)
		fail_msg("/metrics line %d: %s\n%s", p->line, p->err, r.body);
	httpc_resp_clear(&r);
}

/* A sample's value, 0 when absent. */
static double
val(const struct prom *p, const char *name, const char *labels)
{
	bool	found;
	double	v = prom_get(p, name, labels, &found);

	return found ? v : 0;
}

/* Scrape until name{labels} reaches at least want. */
static void
wait_metric(void **state, const char *name, const char *labels, double want)
{
	struct prom	p;
	int64_t		t0 = ncspeer_now_ms();
	double		v;

	for (;;) {
		scrape(state, &p);
		v = val(&p, name, labels);
		prom_free(&p);
		if (v >= want)
			return;
		if (ncspeer_now_ms() - t0 > DEADLINE_MS) {
			gwrig_dump(*state, "metric", __FILE__, __LINE__);
			fail_msg("%s{%s} = %g, not %g", name, labels, v, want);
		}
		usleep(50000);
	}
}

static void
test_metrics(void **state)
{
	struct httpc_resp	 r;
	struct prom		 p;

	req(state, "GET", "/metrics", NULL, NULL, NULL, &r);
	assert_int_equal(r.status, 401);
	httpc_resp_clear(&r);

	scrape(state, &p);
	assert_true(val(&p, "mosgw_up", "") == 1);
	assert_true(val(&p, "mosgw_link_state",
	    "ncs=n1,port=lower,target=primary,state=up") == 1);
	assert_true(val(&p, "mosgw_link_state",
	    "ncs=n1,port=lower,target=primary,state=down") == 0);
	assert_true(val(&p, "mosgw_publish_total", "ncs=n1,outcome=acked") ==
	    0);
	prom_free(&p);

	req(state, "PUT", "/v1/assets/CLIP-1", TOK_WRITE, NULL,
	    "{\"objSlug\":\"First clip\",\"objDur\":1500,\"objTB\":25}", &r);
	if (r.status != 202)
		fail_msg("PUT: %d %s", r.status, r.body);
	httpc_resp_clear(&r);

	wait_metric(state, "mosgw_publish_total", "ncs=n1,outcome=acked", 1);
	wait_metric(state, "mosgw_queue_jobs", "state=DONE,kind=publish", 1);
	scrape(state, &p);
	assert_true(val(&p, "mosgw_publish_total", "ncs=n1,outcome=acked") ==
	    1);
	assert_true(val(&p, "mosgw_acks_total",
	    "ncs=n1,type=mosObj,result=ack") == 1);
	assert_true(val(&p, "mosgw_messages_total",
	    "type=mosObj,direction=out") >= 1);
	assert_true(val(&p, "mosgw_messages_total",
	    "type=mosAck,direction=in") >= 1);
	assert_true(val(&p, "mosgw_ack_latency_seconds_count", "ncs=n1") >=
	    1);
	assert_true(val(&p, "mosgw_ack_latency_seconds_bucket",
	    "ncs=n1,le=+Inf") >= 1);
	assert_true(val(&p, "mosgw_http_requests_total",
	    "route=/v1/assets/{objID},method=PUT,status=202") == 1);
	assert_true(val(&p, "mosgw_http_requests_total",
	    "route=/metrics,method=GET,status=401") == 1);
	assert_true(val(&p, "mosgw_queue_jobs", "state=QUEUED,kind=publish") ==
	    0);
	assert_true(val(&p, "mosgw_database_size_bytes", "") > 0);
	assert_true(val(&p, "mosgw_history_size_bytes", "") > 0);
	prom_free(&p);
}

/*
 * The write-ahead log is copied back by the checkpointer thread: an
 * import that writes well over QUEUE_CHECKPOINT_PAGES pages is followed by
 * checkpoints done there, none failed, and the time they took counted
 * (on PostgreSQL the daemon has no checkpointer: none counted).
 */
static void
test_checkpoints(void **state)
{
	struct gwrig		*rig = *state;
	struct httpc_resp	 r;
	struct prom		 p;
	struct sbuf		 nd = { NULL, 0, 0 };
	char			 text[2049], want[32];
	int			 i, n;

	/* PostgreSQL: fewer, a bound for its slower import */
	n = rig->gw->driver == STORE_SQLITE ? 1500 : 300;
	memset(text, 'a', sizeof text - 1);
	text[sizeof text - 1] = '\0';
	for (i = 0; i < n; i++)
		sbuf_printf(&nd, "{\"objID\":\"CK-%04d\",\"objSlug\":"
		    "\"Clip %d\",\"mosAbstract\":\"%d %s\"}\n", i, i, i, text);
	memset(&r, 0, sizeof r);
	if (httpc_import(port(state), TOK_WRITE, nd.s, 4 * DEADLINE_MS,
	    &r) != 0 || r.status != 200)
		fail_msg("import: %d %s", r.status, r.body != NULL ? r.body :
		    "");
	snprintf(want, sizeof want, "\"accepted\":%d", n);
	assert_non_null(strstr(r.body, want));
	httpc_resp_clear(&r);
	sbuf_free(&nd);

	/* PostgreSQL: no write-ahead log of ours, no checkpoint counted */
	if (rig->gw->driver == STORE_SQLITE)
		wait_metric(state, "mosgw_database_checkpoints_total",
		    "result=done", 1);
	scrape(state, &p);
	if (rig->gw->driver != STORE_SQLITE) {
		assert_true(val(&p, "mosgw_database_checkpoints_total",
		    "result=done") == 0);
		prom_free(&p);
		return;
	}
	assert_true(val(&p, "mosgw_database_checkpoints_total",
	    "result=failed") == 0);
	assert_true(val(&p, "mosgw_database_checkpoint_seconds_total", "") >
	    0);
	prom_free(&p);
}

/* Frames that are no MOS, and a connection from nowhere allowed. */
static void
test_metrics_errors(void **state)
{
	struct gwrig	*rig = *state;
	struct sbuf	 sb = { NULL, 0, 0 };
	char		*t;
	int		 fd;

	/* a parse error: a frame of UTF-16BE that is not well-formed */
	fd = itutil_dial(NULL, rig->gw->lower_port, 0);
	assert_true(fd >= 0);
	t = itutil_frame_text("mosgw.test", "NCSPEER", 7,
	    "<heartbeat><time>x</time><oops></heartbeat>");
	util_utf8_to_utf16be(&sb, t, strlen(t));
	assert_int_equal(itutil_write(fd, sb.s, sb.len, 5000), 0);
	sbuf_free(&sb);
	free(t);
	wait_metric(state, "mosgw_frame_errors_total",
	    "port=lower,stage=parse", 1);
	close(fd);
}

/* GET /readyz: ready, an NCS down is reported, a read-only file is not. */
static void
test_readyz(void **state)
{
	struct gwrig		*rig = *state;
	struct httpc_resp	 r;
	json_t			*o, *n;
	int64_t			 t0;

	req(state, "GET", "/readyz", NULL, NULL, NULL, &r);
	assert_int_equal(r.status, 200);
	o = json_loads(r.body, 0, NULL);
	assert_non_null(o);
	assert_string_equal(json_string_value(json_object_get(o, "status")),
	    "ready");
	n = json_array_get(json_object_get(o, "ncs"), 0);
	assert_string_equal(json_string_value(json_object_get(n, "name")),
	    "n1");
	assert_string_equal(json_string_value(json_object_get(n, "state")),
	    "up");
	json_decref(o);
	httpc_resp_clear(&r);

	/* made read-only: 503 with the reason; writable again: 200 */
	if (rig->gw->driver == STORE_SQLITE) {
		assert_int_equal(chmod(rig->gw->db, 0444), 0);
		req(state, "GET", "/readyz", NULL, NULL, NULL, &r);
		chmod(rig->gw->db, 0640);
		assert_int_equal(r.status, 503);
		o = json_loads(r.body, 0, NULL);
		assert_string_equal(json_string_value(json_object_get(o,
		    "status")), "not-ready");
		assert_string_equal(json_string_value(json_object_get(o,
		    "reason")), "database-read-only");
		json_decref(o);
		httpc_resp_clear(&r);
		req(state, "GET", "/readyz", NULL, NULL, NULL, &r);
		assert_int_equal(r.status, 200);
		httpc_resp_clear(&r);
	}

	/* the NCS goes away: still ready, the NCS reported down */
	ncspeer_down(rig->ncs, false);
	t0 = ncspeer_now_ms();
	for (;;) {
		req(state, "GET", "/readyz", NULL, NULL, NULL, &r);
		assert_int_equal(r.status, 200);
		o = json_loads(r.body, 0, NULL);
		n = json_array_get(json_object_get(o, "ncs"), 0);
		if (strcmp(json_string_value(json_object_get(n, "state")),
		    "up") != 0)
			break;
		json_decref(o);
		httpc_resp_clear(&r);
		assert_true(ncspeer_now_ms() - t0 < DEADLINE_MS);
		usleep(50000);
	}
	assert_string_equal(json_string_value(json_object_get(o, "status")),
	    "ready");
	json_decref(o);
	httpc_resp_clear(&r);
	assert_int_equal(ncspeer_up(rig->ncs), 0);
}

/*
 * The database file removed: /readyz says so until the gateway, which
 * checks the file every second, stops on its own (exit status 1).
 */
static void
test_readyz_removed(void **state)
{
	struct gwrig		*rig = *state;
	struct httpc_resp	 r;
	json_t			*o;
	char			 moved[400];
	int64_t			 t0;

	if (rig->gw->driver != STORE_SQLITE) {
		printf("SKIP: the database is not a file on %s\n",
		    store_driver_name(rig->gw->driver));
		skip();
	}
	snprintf(moved, sizeof moved, "%s.moved", rig->gw->db);
	assert_int_equal(rename(rig->gw->db, moved), 0);
	if (httpc_once(port(state), "GET", "/readyz", NULL, NULL, NULL,
	    &r) == 0 && r.status != 0) {
		assert_int_equal(r.status, 503);
		o = json_loads(r.body, 0, NULL);
		assert_string_equal(json_string_value(json_object_get(o,
		    "reason")), "database-removed");
		json_decref(o);
		httpc_resp_clear(&r);
	} else
		printf("# the gateway stopped before /readyz answered\n");
	GWRIG_CHECK(rig, gwproc_log_wait(rig->gw, 0, DEADLINE_MS,
	    "event=db.lost", (char *)NULL) >= 0);
	t0 = ncspeer_now_ms();
	while (gwproc_running(rig->gw)) {
		GWRIG_CHECK(rig, ncspeer_now_ms() - t0 < DEADLINE_MS);
		usleep(20000);
	}
	assert_int_equal(rig->gw->last_status, 1);
}

/* The gateway has stopped already: free the rig. */
static int
teardown_removed(void **state)
{
	gwrig_free(*state);
	return 0;
}

/* "Authorization: Basic ..." with this token as the password. */
static char *
basic(const char *user, const char *token)
{
	char		 plain[256], *h;
	unsigned char	 b64[400];

	snprintf(plain, sizeof plain, "%s:%s", user, token);
	EVP_EncodeBlock(b64, (const unsigned char *)plain, (int)strlen(plain));
	if (asprintf(&h, "Authorization: Basic %s\r\n", b64) < 0)
		fail_msg("out of memory");
	return h;
}

/* The status page: login, what it shows, escaping, roles. */
static void
test_page(void **state)
{
	struct gwrig		*rig = *state;
	struct httpc_resp	 r;
	char			*h, *v;
	int64_t			 t0;

	req(state, "GET", "/", NULL, NULL, NULL, &r);
	assert_int_equal(r.status, 401);
	v = httpc_header(&r, "WWW-Authenticate");
	assert_non_null(v);
	assert_true(strncmp(v, "Basic realm=\"mosgw\"", 19) == 0);
	free(v);
	httpc_resp_clear(&r);
	h = basic("someone", "wrong-token-0123456789");
	req(state, "GET", "/", NULL, h, NULL, &r);
	free(h);
	assert_int_equal(r.status, 401);
	httpc_resp_clear(&r);

	/* a job that fails: the NCS NACKs with markup in its text */
	req(state, "PUT", "/v1/assets/CLIP-X", TOK_WRITE, NULL,
	    "{\"objSlug\":\"x\",\"objDur\":10,\"objTB\":25}", &r);
	assert_int_equal(r.status, 202);
	httpc_resp_clear(&r);
	GWRIG_CHECK(rig, gwproc_wait_jobs(rig->gw, rig->lane, QUEUE_FAILED, 1,
	    DEADLINE_MS) == 1);

	h = basic("anyone", TOK_ADMIN);
	t0 = ncspeer_now_ms();
	for (;;) {
		req(state, "GET", "/", NULL, h, NULL, &r);
		assert_int_equal(r.status, 200);
		if (strstr(r.body, "data-job=") != NULL)
			break;
		httpc_resp_clear(&r);
		assert_true(ncspeer_now_ms() - t0 < DEADLINE_MS);
		usleep(50000);
	}
	free(h);
	v = httpc_header(&r, "Content-Type");
	assert_string_equal(v, "text/html; charset=utf-8");
	free(v);
	assert_non_null(strstr(r.body, "name=\"viewport\""));
	assert_non_null(strstr(r.body, "<td>n1</td>"));
	assert_non_null(strstr(r.body, "class=\"st up\">up"));
	assert_non_null(strstr(r.body, "CLIP-X"));
	assert_non_null(strstr(r.body, "&lt;b&gt;no &amp; &quot;never&quot;"
	    "&lt;/b&gt;"));
	assert_null(strstr(r.body, NACK_TEXT));
	assert_non_null(strstr(r.body, "mosObj"));
	assert_non_null(strstr(r.body, "class=\"requeue\""));
	/* no external assets */
	assert_null(strstr(r.body, "src="));
	assert_null(strstr(r.body, "<link"));
	httpc_resp_clear(&r);

	/* read: the page, without requeue buttons; Bearer works too */
	req(state, "GET", "/", TOK_READ, NULL, NULL, &r);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.body, "CLIP-X"));
	assert_null(strstr(r.body, "class=\"requeue\""));
	httpc_resp_clear(&r);
	/* Basic works on the other routes too */
	h = basic("x", TOK_READ);
	req(state, "GET", "/v1/queue/stats", NULL, h, NULL, &r);
	free(h);
	assert_int_equal(r.status, 200);
	httpc_resp_clear(&r);
	req(state, "GET", "/v1/queue/stats", NULL, "Authorization: Basic "
	    "!!notbase64\r\n", NULL, &r);
	assert_int_equal(r.status, 401);
	httpc_resp_clear(&r);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_metrics, setup,
		    itutil_teardown),
		cmocka_unit_test_setup_teardown(test_checkpoints, setup,
		    itutil_teardown),
		cmocka_unit_test_setup_teardown(test_metrics_errors, setup,
		    itutil_teardown),
		cmocka_unit_test_setup_teardown(test_readyz, setup,
		    itutil_teardown),
		cmocka_unit_test_setup_teardown(test_readyz_removed, setup,
		    teardown_removed),
		cmocka_unit_test_setup_teardown(test_page, setup_nack,
		    itutil_teardown),
	};

	return cmocka_run_group_tests_name("gateway_it_watch", tests, NULL,
	    NULL);
}
