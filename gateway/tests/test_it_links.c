/*
 * Integration: GET /v1/links of the real mosgw against a scripted NCS (up,
 * heartbeats answered, a message in flight, the NCS going away and coming
 * back), and mosctl status, links, queue stats and asset over the API
 * (tables, --json, the exit status a monitoring script relies on, and the
 * errors for a missing, doubled or unreachable API).
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
#include <unistd.h>

#include "gateway/tests/httpc.h"
#include "gateway/tests/itutil.h"

#define TOK_READ	"read-token-0123456789"
#define TOK_WRITE	"write-token-0123456789"
#define WAIT_MS		15000

static const char tokens[] =
    "reader read " TOK_READ "\n"
    "writer write " TOK_WRITE "\n";

static int
setup(void **state)
{
	struct gwproc_opts	o;

	memset(&o, 0, sizeof o);
	o.api_tokens = tokens;
	/* a mosObj stays in flight while the peer delays its ack */
	o.ncs[0].extra = "ack_timeout = 20\n";
	return itutil_setup_opts(state, MOS_ENC_UTF16BE, &o);
}

static struct gwrig *
rig(void **state)
{
	return *state;
}

/* GET /v1/links as JSON (asserts a 200 with an array of links). */
static json_t *
get_links(void **state)
{
	struct httpc_resp	 r;
	json_t			*o, *a;

	if (httpc_once(rig(state)->gw->api_port, "GET", "/v1/links", TOK_READ,
	    NULL, NULL, &r) != 0)
		fail_msg("GET /v1/links: no answer");
	if (r.status != 200)
		fail_msg("GET /v1/links: %d %s", r.status, r.body);
	o = json_loads(r.body, 0, NULL);
	httpc_resp_clear(&r);
	assert_non_null(o);
	a = json_incref(json_object_get(o, "links"));
	json_decref(o);
	assert_true(json_is_array(a));
	return a;
}

/* The link of that port and target, or NULL. */
static json_t *
find_link(json_t *a, const char *port, const char *target)
{
	json_t	*l;
	size_t	 i;

	json_array_foreach(a, i, l) {
		if (strcmp(json_string_value(json_object_get(l, "port")),
		    port) == 0 && strcmp(json_string_value(json_object_get(l,
		    "target")), target) == 0)
			return l;
	}
	return NULL;
}

/* Poll /v1/links until fn holds for the lower and upper primary links. */
static json_t *
wait_links(void **state, bool (*fn)(json_t *))
{
	int64_t	 end = ncspeer_now_ms() + WAIT_MS;
	json_t	*a;

	for (;;) {
		a = get_links(state);
		if (fn(find_link(a, "lower", "primary")) &&
		    fn(find_link(a, "upper", "primary")))
			return a;
		json_decref(a);
		if (ncspeer_now_ms() > end)
			return NULL;
		usleep(50 * 1000);
	}
}

static const char *
sget(json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

/* Up, and a heartbeat answered on it. */
static bool
up_with_hb(json_t *l)
{
	return l != NULL && strcmp(sget(l, "state"), "up") == 0 &&
	    json_is_string(json_object_get(json_object_get(l, "heartbeat"),
	    "lastReceived"));
}

static bool
not_up(json_t *l)
{
	return l != NULL && strcmp(sget(l, "state"), "up") != 0 &&
	    strcmp(sget(l, "state"), "degraded") != 0;
}

static bool
lower_busy(json_t *l)
{
	return l != NULL && (strcmp(sget(l, "port"), "upper") == 0 ||
	    json_is_object(json_object_get(l, "inFlight")));
}

/* The links of the usual rig: one NCS, lower and upper, up, answered. */
static void
test_links_up(void **state)
{
	struct httpc_resp	 r;
	json_t			*a, *l;

	/* a token is needed */
	assert_int_equal(httpc_once(rig(state)->gw->api_port, "GET",
	    "/v1/links", NULL, NULL, NULL, &r), 0);
	assert_int_equal(r.status, 401);
	httpc_resp_clear(&r);
	assert_int_equal(httpc_once(rig(state)->gw->api_port, "POST",
	    "/v1/links", TOK_WRITE, NULL, "{}", &r), 0);
	assert_int_equal(r.status, 405);
	httpc_resp_clear(&r);

	a = wait_links(state, up_with_hb);
	GWRIG_CHECK(rig(state), a != NULL);
	assert_int_equal(json_array_size(a), 2);	/* no buddy, no query */
	l = find_link(a, "lower", "primary");
	assert_string_equal(sget(l, "ncs"), "n1");
	assert_string_equal(sget(l, "ncsID"), "NCSPEER");
	assert_string_equal(sget(l, "host"), "127.0.0.1");
	assert_int_equal(json_integer_value(json_object_get(l, "portNumber")),
	    ncspeer_port(rig(state)->ncs, NCSPEER_LOWER));
	assert_true(json_is_true(json_object_get(l, "active")));
	assert_true(json_is_null(json_object_get(l, "why")));
	/* "2026-12-01T10:00:00.120Z" */
	assert_int_equal(strlen(sget(l, "since")), 24);
	assert_int_equal(strlen(sget(json_object_get(l, "heartbeat"),
	    "lastSent")), 24);
	assert_true(json_integer_value(json_object_get(json_object_get(l,
	    "heartbeat"), "answered")) >= 1);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(l,
	    "counts"), "connects")), 1);
	json_decref(a);
}

/* A mosObj waiting for its ack shows as the lower link's message in flight. */
static void
test_links_inflight(void **state)
{
	struct ncspeer_policy	 p;
	json_t			*a, *l, *fl;

	memset(&p, 0, sizeof p);
	p.ack_delay_ms = 4000;
	ncspeer_set_policy(rig(state)->ncs, &p);
	assert_int_equal(gwproc_asset_put(rig(state)->gw, "LINK-1", "slug"), 0);
	a = wait_links(state, lower_busy);
	GWRIG_CHECK(rig(state), a != NULL);
	l = find_link(a, "lower", "primary");
	fl = json_object_get(l, "inFlight");
	/* a heartbeat may be in flight first: wait for the mosObj */
	while (strcmp(sget(fl, "type"), "mosObj") != 0) {
		json_decref(a);
		a = wait_links(state, lower_busy);
		GWRIG_CHECK(rig(state), a != NULL);
		l = find_link(a, "lower", "primary");
		fl = json_object_get(l, "inFlight");
	}
	assert_true(json_integer_value(json_object_get(fl, "messageID")) > 0);
	assert_int_equal(json_integer_value(json_object_get(fl, "tries")), 1);
	assert_int_equal(strlen(sget(fl, "since")), 24);
	json_decref(a);
	/* acknowledged: counted */
	GWRIG_CHECK(rig(state), gwproc_wait_idle(rig(state)->gw, NULL,
	    WAIT_MS) == 0);
	a = get_links(state);
	l = find_link(a, "lower", "primary");
	assert_true(json_integer_value(json_object_get(json_object_get(l,
	    "counts"), "acks")) >= 1);
	assert_true(json_integer_value(json_object_get(json_object_get(l,
	    "counts"), "sent")) >= 1);
	json_decref(a);
}

/* The NCS goes away: links down with why; status says so; it comes back. */
static void
test_status_down_up(void **state)
{
	struct gwrig	*r = rig(state);
	char		 url[64], *out, *err;
	json_t		*a, *l, *o;
	int		 st;

	snprintf(url, sizeof url, "http://127.0.0.1:%u", r->gw->api_port);
	GWRIG_CHECK(r, (a = wait_links(state, up_with_hb)) != NULL);
	json_decref(a);
	st = gwproc_mosctl_cmd(r->gw, &out, &err, "--url", url, "--token-file",
	    r->gw->tokens, "status", (char *)NULL);
	if (st != 0)
		fail_msg("status %d: %s%s", st, out, err);
	assert_non_null(strstr(out, "OK: 2 NCS links up"));
	assert_non_null(strstr(out, "queue: QUEUED"));
	assert_int_equal(itutil_count(out, "\nn1 "), 2);
	free(out);
	free(err);

	ncspeer_down(r->ncs, false);
	a = wait_links(state, not_up);
	GWRIG_CHECK(r, a != NULL);
	l = find_link(a, "lower", "primary");
	assert_non_null(sget(l, "why"));
	assert_non_null(sget(l, "lastError"));
	json_decref(a);
	st = gwproc_mosctl_cmd(r->gw, &out, &err, "--url", url, "--token-file",
	    r->gw->tokens, "status", (char *)NULL);
	if (st != 1)
		fail_msg("status %d: %s%s", st, out, err);
	assert_non_null(strstr(out, "NOT OK: 2 of 2 NCS links not up"));
	assert_non_null(strstr(out, "n1 lower primary: "));
	free(out);
	free(err);
	/* --json after the verb: one object, ok false */
	st = gwproc_mosctl_cmd(r->gw, &out, NULL, "--url", url, "--token-file",
	    r->gw->tokens, "status", "--json", (char *)NULL);
	assert_int_equal(st, 1);
	o = json_loads(out, 0, NULL);
	assert_non_null(o);
	assert_true(json_is_false(json_object_get(o, "ok")));
	assert_int_equal(json_array_size(json_object_get(o, "links")), 2);
	assert_true(json_is_integer(json_object_get(o, "failedJobs")));
	json_decref(o);
	free(out);

	assert_int_equal(ncspeer_up(r->ncs), 0);
	GWRIG_CHECK(r, (a = wait_links(state, up_with_hb)) != NULL);
	l = find_link(a, "lower", "primary");
	assert_true(json_is_null(json_object_get(l, "why")));
	assert_non_null(sget(l, "lastError"));		/* kept */
	assert_true(json_integer_value(json_object_get(json_object_get(l,
	    "counts"), "connects")) >= 2);
	json_decref(a);
	st = gwproc_mosctl_cmd(r->gw, &out, NULL, "--url", url, "--token-file",
	    r->gw->tokens, "--json", "status", (char *)NULL);
	assert_int_equal(st, 0);
	o = json_loads(out, 0, NULL);
	assert_non_null(o);
	assert_true(json_is_true(json_object_get(o, "ok")));
	json_decref(o);
	free(out);
}

/* mosctl links and queue stats: tables, --json, environment variables. */
static void
test_mosctl_links_queue(void **state)
{
	struct gwrig	*r = rig(state);
	char		 url[64], env[128], *out, *line, *save;
	json_t		*o;
	int		 st, n = 0;

	snprintf(url, sizeof url, "http://127.0.0.1:%u", r->gw->api_port);
	GWRIG_CHECK(r, (o = wait_links(state, up_with_hb)) != NULL);
	json_decref(o);
	st = gwproc_mosctl_cmd(r->gw, &out, NULL, "--url", url, "--token-file",
	    r->gw->tokens, "links", (char *)NULL);
	assert_int_equal(st, 0);
	assert_non_null(strstr(out, "NCS"));
	assert_non_null(strstr(out, "HB-RECV"));
	assert_int_equal(itutil_count(out, " up "), 2);
	free(out);
	st = gwproc_mosctl_cmd(r->gw, &out, NULL, "--url", url, "--token-file",
	    r->gw->tokens, "links", "--json", (char *)NULL);
	assert_int_equal(st, 0);
	for (line = strtok_r(out, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		assert_non_null(o = json_loads(line, 0, NULL));
		assert_string_equal(sget(o, "ncs"), "n1");
		json_decref(o);
		n++;
	}
	assert_int_equal(n, 2);
	free(out);

	/* the environment instead of options; a trailing slash in the URL */
	snprintf(env, sizeof env, "%s/", url);
	setenv("MOSGW_URL", env, 1);
	setenv("MOSGW_TOKEN_FILE", r->gw->tokens, 1);
	st = gwproc_mosctl_cmd(r->gw, &out, NULL, "queue", "stats",
	    (char *)NULL);
	assert_int_equal(st, 0);
	assert_non_null(strstr(out, "queue: QUEUED 0 RUNNING 0"));
	free(out);
	st = gwproc_mosctl_cmd(r->gw, &out, NULL, "queue", "stats", "--json",
	    (char *)NULL);
	unsetenv("MOSGW_URL");
	unsetenv("MOSGW_TOKEN_FILE");
	assert_int_equal(st, 0);
	assert_non_null(o = json_loads(out, 0, NULL));
	assert_true(json_is_integer(json_object_get(json_object_get(o,
	    "count"), "DONE")));
	json_decref(o);
	free(out);
}

/* Run mosctl; assert its exit status and that stderr holds `has`. */
static void
expect(struct gwrig *r, int want, const char *has, ...)
{
	char	*argv[12] = { NULL }, *out, *err;
	va_list	 ap;
	int	 n = 0, st;

	va_start(ap, has);
	while (n < 11 && (argv[n] = va_arg(ap, char *)) != NULL)
		n++;
	va_end(ap);
	argv[n] = NULL;
	/* at most 10 arguments: enough here */
	st = gwproc_mosctl_cmd(r->gw, &out, &err, argv[0], argv[1], argv[2],
	    argv[3], argv[4], argv[5], argv[6], argv[7], argv[8], argv[9],
	    (char *)NULL);
	if (st != want || strstr(err, has) == NULL)
		fail_msg("mosctl %s: status %d (want %d), stderr '%s' lacks "
		    "'%s'", argv[n - 1], st, want, err, has);
	free(out);
	free(err);
}

/* What goes wrong says so: no API, both, bad URL, token, port. */
static void
test_mosctl_api_errors(void **state)
{
	struct gwrig	*r = rig(state);
	char		 url[64], bad_port[64], tokf[320], badtok[320];
	FILE		*f;

	snprintf(url, sizeof url, "http://127.0.0.1:%u", r->gw->api_port);
	snprintf(bad_port, sizeof bad_port, "http://127.0.0.1:%u",
	    gwproc_free_port());
	snprintf(tokf, sizeof tokf, "%s/token", r->gw->dir);
	snprintf(badtok, sizeof badtok, "%s/badtoken", r->gw->dir);
	assert_non_null(f = fopen(tokf, "w"));
	fprintf(f, "# a bare token\n\n" TOK_READ "\n");
	fclose(f);
	assert_non_null(f = fopen(badtok, "w"));
	fprintf(f, "not-the-token-0123456789\n");
	fclose(f);

	expect(r, 64, "--url URL and --token-file FILE", "--db", r->gw->db,
	    "status", (char *)NULL);
	expect(r, 64, "choose one", "--db", r->gw->db, "--url", url,
	    "--token-file", tokf, "links", (char *)NULL);
	expect(r, 64, "no database", "asset", "ls", (char *)NULL);
	expect(r, 64, "database file only", "--url", url, "--token-file",
	    tokf, "ro", "ls", (char *)NULL);
	expect(r, 64, "database file only", "--url", url, "--token-file",
	    tokf, "asset", "usage", "X", (char *)NULL);
	expect(r, 69, "--token-file FILE", "--url", url, "links",
	    (char *)NULL);
	expect(r, 69, "not an http:// or https:// URL", "--url",
	    "ftp://127.0.0.1/", "--token-file", tokf, "links", (char *)NULL);
	expect(r, 69, "No such file", "--url", url, "--token-file",
	    "/nonexistent/token", "links", (char *)NULL);
	expect(r, 69, "401", "--url", url, "--token-file", badtok, "status",
	    (char *)NULL);
	expect(r, 69, "cannot connect", "--url", bad_port, "--token-file",
	    tokf, "status", (char *)NULL);
	expect(r, 64, "unexpected 'extra'", "--url", url, "--token-file",
	    tokf, "status", "extra", (char *)NULL);
	expect(r, 64, "only verb is 'stats'", "--url", url, "--token-file",
	    tokf, "queue", "ls", (char *)NULL);
	expect(r, 0, "", "--url", url, "--token-file", tokf, "links",
	    (char *)NULL);
}

/* mosctl asset put, show, ls, delete and import over the API. */
static void
test_mosctl_assets(void **state)
{
	struct gwrig		*r = rig(state);
	struct ncspeer_match	 m;
	char			 url[64], wtok[320], rtok[320], nd[320];
	char			*out, *err;
	json_t			*o;
	int			 st;

	snprintf(url, sizeof url, "http://127.0.0.1:%u", r->gw->api_port);
	assert_int_equal(itutil_write_file(r, "wtok", TOK_WRITE "\n", wtok,
	    sizeof wtok), 0);
	assert_int_equal(itutil_write_file(r, "rtok", TOK_READ "\n", rtok,
	    sizeof rtok), 0);

	/* a read token may not put */
	st = gwproc_mosctl_cmd(r->gw, &out, &err, "--url", url, "--token-file",
	    rtok, "asset", "put", "API-1", "--slug", "First", (char *)NULL);
	if (st != 69 || strstr(err, "403") == NULL)
		fail_msg("put as reader: %d %s", st, err);
	free(out);
	free(err);
	st = gwproc_mosctl_cmd(r->gw, &out, &err, "--url", url, "--token-file",
	    wtok, "asset", "put", "API-1", "--slug", "First", "--dur", "100",
	    "--path", "http://mam/api-1.mxf", "--tech", "MXF", (char *)NULL);
	if (st != 0 || strstr(out, "asset API-1: put rev 1, 1 delivery "
	    "queued") == NULL)
		fail_msg("put: %d %s %s", st, out, err);
	free(out);
	free(err);
	memset(&m, 0, sizeof m);
	m.type = "mosObj";
	m.obj_id = "API-1";
	GWRIG_CHECK(r, ncspeer_wait(r->ncs, &m, WAIT_MS) != NULL);

	st = gwproc_mosctl_cmd(r->gw, &out, NULL, "--url", url, "--token-file",
	    rtok, "asset", "show", "API-1", "--json", (char *)NULL);
	assert_int_equal(st, 0);
	assert_non_null(o = json_loads(out, 0, NULL));
	assert_string_equal(sget(o, "objSlug"), "First");
	assert_int_equal(json_integer_value(json_object_get(o, "objDur")),
	    100);
	assert_non_null(strstr(out, "http://mam/api-1.mxf"));
	json_decref(o);
	free(out);
	st = gwproc_mosctl_cmd(r->gw, &out, NULL, "--url", url, "--token-file",
	    rtok, "asset", "show", "API-1", (char *)NULL);
	assert_int_equal(st, 0);
	assert_non_null(strstr(out, "objSlug"));
	free(out);
	st = gwproc_mosctl_cmd(r->gw, &out, &err, "--url", url, "--token-file",
	    rtok, "asset", "show", "NONE", (char *)NULL);
	if (st != 1 || strstr(err, "404") == NULL)
		fail_msg("show of nothing: %d %s", st, err);
	free(out);
	free(err);

	/* import: two good lines, one bad */
	assert_int_equal(itutil_write_file(r, "in.ndjson",
	    "{\"objID\":\"API-2\",\"objSlug\":\"b\"}\n"
	    "{\"objID\":\"API-3\"}\n"
	    "{\"objID\":\"API-4\",\"objSlug\":\"d\"}\n", nd, sizeof nd), 0);
	st = gwproc_mosctl_cmd(r->gw, &out, &err, "--url", url, "--token-file",
	    wtok, "asset", "import", nd, (char *)NULL);
	if (st != 1 || strstr(out, "2 accepted, 1 refused") == NULL ||
	    strstr(out, "line 2: ") == NULL)
		fail_msg("import: %d %s %s", st, out, err);
	free(out);
	free(err);
	st = gwproc_mosctl(r->gw, NULL, "asset", "import", nd, (char *)NULL);
	assert_int_equal(st, 64);

	st = gwproc_mosctl_cmd(r->gw, &out, NULL, "--url", url, "--token-file",
	    rtok, "asset", "ls", (char *)NULL);
	assert_int_equal(st, 0);
	assert_int_equal(itutil_count(out, "\nAPI-"), 3);
	free(out);
	st = gwproc_mosctl_cmd(r->gw, &out, NULL, "--url", url, "--token-file",
	    rtok, "asset", "ls", "--after", "API-2", "--limit", "1", "--json",
	    (char *)NULL);
	assert_int_equal(st, 0);
	assert_int_equal(itutil_count(out, "\n"), 1);
	assert_non_null(strstr(out, "\"objID\":\"API-4\""));
	free(out);

	st = gwproc_mosctl_cmd(r->gw, &out, &err, "--url", url, "--token-file",
	    wtok, "asset", "delete", "API-1", "--json", (char *)NULL);
	if (st != 0 || strstr(out, "\"op\":\"delete\",\"objID\":\"API-1\","
	    "\"rev\":2") == NULL)
		fail_msg("delete: %d %s %s", st, out, err);
	free(out);
	free(err);
	/* the file shows what the API did */
	st = gwproc_mosctl(r->gw, &out, "asset", "show", "API-1", "--json",
	    (char *)NULL);
	assert_int_equal(st, 0);
	assert_non_null(strstr(out, "\"deleted\":true"));
	free(out);
	/* checked before it leaves: a fragment that is not XML */
	st = gwproc_mosctl_cmd(r->gw, &out, &err, "--url", url, "--token-file",
	    wtok, "asset", "put", "API-5", "--slug", "x", "--abstract-xml",
	    "<b>", (char *)NULL);
	if (st != 64)
		fail_msg("bad fragment: %d %s", st, err);
	free(out);
	free(err);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_links_up, setup,
		    itutil_teardown),
		cmocka_unit_test_setup_teardown(test_links_inflight, setup,
		    itutil_teardown),
		cmocka_unit_test_setup_teardown(test_status_down_up, setup,
		    itutil_teardown),
		cmocka_unit_test_setup_teardown(test_mosctl_links_queue, setup,
		    itutil_teardown),
		cmocka_unit_test_setup_teardown(test_mosctl_api_errors, setup,
		    itutil_teardown),
		cmocka_unit_test_setup_teardown(test_mosctl_assets, setup,
		    itutil_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
