/*
 * Integration: GET /v1/history of the real mosgw after 600 assets were
 * delivered to a scripted NCS: JSON pages with a cursor (both orders),
 * filters, every parameter's 422, the streamed capture download (Accept or
 * format=capture) byte for byte the same as `mosctl --db history export`,
 * a client that leaves in the middle of a download, and `mosctl --url
 * history ls|export` printing what the --db forms print.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <sys/socket.h>

#include <jansson.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gateway/gateway.h"
#include "gateway/tests/httpc.h"
#include "gateway/tests/itutil.h"

#define TOK_READ	"read-token-0123456789"
#define TOK_WRITE	"write-token-0123456789"
#define NASSETS		600
#define WAIT_MS		30000

static const char tokens[] =
    "reader read " TOK_READ "\n"
    "writer write " TOK_WRITE "\n";

/* The rig, 600 assets delivered and their mosObj in history. */
static int
setup(void **state)
{
	struct gwproc_opts	 o;
	struct gwrig		*r;
	struct httpc_resp	 resp;
	struct sbuf		 body = { NULL, 0, 0 };
	char			*req;
	int			 i, fd, n;

	memset(&o, 0, sizeof o);
	o.api_tokens = tokens;
	o.api_extra = "max_body_size = 1m\n";
	if (itutil_setup_opts(state, MOS_ENC_UTF16BE, &o) != 0)
		return -1;
	r = *state;
	for (i = 0; i < NASSETS; i++)
		sbuf_printf(&body, "{\"objID\":\"H-%04d\",\"objSlug\":\"slug "
		    "%d\"}\n", i, i);
	n = asprintf(&req, "POST /v1/assets:import HTTP/1.1\r\n"
	    "Authorization: Bearer " TOK_WRITE "\r\nContent-Type: "
	    "application/x-ndjson\r\nContent-Length: %zu\r\n\r\n%s",
	    body.len, body.s);
	sbuf_free(&body);
	if (n < 0 || (fd = httpc_connect(r->gw->api_port)) == -1 ||
	    httpc_write(fd, req, (size_t)n) != 0 ||
	    httpc_read(fd, &resp, WAIT_MS) != 0 || resp.status != 200) {
		fprintf(stderr, "import failed\n");
		return -1;
	}
	free(req);
	close(fd);
	httpc_resp_clear(&resp);
	if (gwproc_wait_idle(r->gw, NULL, WAIT_MS) != 0)
		return -1;
	return 0;
}

/* GET path as the reader; the JSON object of a 200. */
static json_t *
get_json(void **state, const char *path, int want)
{
	struct gwrig		*r = *state;
	struct httpc_resp	 resp;
	json_t			*o;

	if (httpc_once(r->gw->api_port, "GET", path, TOK_READ, NULL, NULL,
	    &resp) != 0)
		fail_msg("GET %s: no answer", path);
	if (resp.status != want)
		fail_msg("GET %s: %d (want %d) %s", path, resp.status, want,
		    resp.body);
	o = json_loads(resp.body, 0, NULL);
	httpc_resp_clear(&resp);
	if (o == NULL)
		fail_msg("GET %s: not JSON", path);
	return o;
}

/* Wait until history holds n mosObj (the flush is batched). */
static void
wait_objs(void **state, size_t n)
{
	int64_t	 end = ncspeer_now_ms() + WAIT_MS;
	json_t	*o;
	size_t	 have;

	for (;;) {
		o = get_json(state, "/v1/history?type=mosObj&limit=1000", 200);
		have = json_array_size(json_object_get(o, "messages"));
		json_decref(o);
		if (have >= n)
			return;
		if (ncspeer_now_ms() > end)
			fail_msg("history has %zu mosObj, not %zu", have, n);
		usleep(100 * 1000);
	}
}

/* Pages of 250 mosObj, oldest first, then newest first. */
static void
test_pages(void **state)
{
	json_t		*o, *a, *m;
	char		 path[128];
	json_int_t	 next = 0, last = 0, id;
	size_t		 total = 0, i, sizes[3];
	int		 page;

	wait_objs(state, NASSETS);
	for (page = 0; page < 3; page++) {
		if (page == 0)
			snprintf(path, sizeof path,
			    "/v1/history?type=mosObj&limit=250");
		else
			snprintf(path, sizeof path, "/v1/history?type=mosObj"
			    "&limit=250&after=%lld", (long long)next);
		o = get_json(state, path, 200);
		a = json_object_get(o, "messages");
		sizes[page] = json_array_size(a);
		json_array_foreach(a, i, m) {
			id = json_integer_value(json_object_get(m, "id"));
			assert_true(id > last);
			last = id;
			assert_string_equal(json_string_value(json_object_get(m,
			    "type")), "mosObj");
			assert_string_equal(json_string_value(json_object_get(m,
			    "dir")), "out");
			assert_string_equal(json_string_value(json_object_get(m,
			    "ncs")), "n1");
			assert_string_equal(json_string_value(json_object_get(m,
			    "port")), "lower");
			assert_true(json_integer_value(json_object_get(m,
			    "messageID")) > 0);
			assert_non_null(strstr(json_string_value(
			    json_object_get(m, "xml")), "<objID>H-"));
			assert_int_equal(strlen(json_string_value(
			    json_object_get(m, "t"))), 24);
		}
		total += sizes[page];
		next = json_integer_value(json_object_get(o, "next"));
		if (page < 2)
			assert_int_equal(next, last);
		else
			assert_true(json_is_null(json_object_get(o, "next")));
		json_decref(o);
	}
	assert_int_equal(sizes[0], 250);
	assert_int_equal(sizes[1], 250);
	assert_int_equal(sizes[2], 100);
	assert_int_equal(total, NASSETS);

	o = get_json(state, "/v1/history?type=mosObj&order=newest&limit=1",
	    200);
	m = json_array_get(json_object_get(o, "messages"), 0);
	assert_int_equal(json_integer_value(json_object_get(m, "id")), last);
	json_decref(o);
	/* filters that match nothing */
	o = get_json(state, "/v1/history?ncs=other", 200);
	assert_int_equal(json_array_size(json_object_get(o, "messages")), 0);
	assert_true(json_is_null(json_object_get(o, "next")));
	json_decref(o);
	o = get_json(state, "/v1/history?type=mosObj&until=1000", 200);
	assert_int_equal(json_array_size(json_object_get(o, "messages")), 0);
	json_decref(o);
	o = get_json(state, "/v1/history?type=heartbeat&since="
	    "2026-01-01T00:00:00Z&limit=5", 200);
	assert_true(json_array_size(json_object_get(o, "messages")) >= 1);
	json_decref(o);
}

/* Every bad parameter: 422 naming it. */
static void
test_bad_params(void **state)
{
	static const struct {
		const char	*query;
		const char	*field;
	} bad[] = {
		{ "limit=0", "limit" },
		{ "limit=1001", "limit" },
		{ "limit=ten", "limit" },
		{ "after=-1", "after" },
		{ "after=0", "after" },
		{ "since=yesterday", "since" },
		{ "until=2026-13-01T00:00:00Z", "until" },
		{ "since=2000&until=1000", "until" },
		{ "type=mos%20Obj", "type" },
		{ "ncs=a%2Fb", "ncs" },
		{ "format=xml", "format" },
		{ "order=random", "order" },
		{ "format=capture&order=newest", "order" },
		{ "objID=X", "objID" },
	};
	char	 path[128];
	json_t	*o;
	size_t	 i;

	for (i = 0; i < nitems(bad); i++) {
		snprintf(path, sizeof path, "/v1/history?%s", bad[i].query);
		o = get_json(state, path, 422);
		if (strcmp(json_string_value(json_object_get(o, "field")),
		    bad[i].field) != 0)
			fail_msg("%s: field %s, not %s", path,
			    json_string_value(json_object_get(o, "field")),
			    bad[i].field);
		assert_string_equal(json_string_value(json_object_get(o,
		    "type")), "urn:mosgw:problem:invalid-parameter");
		json_decref(o);
	}
}

/* A time T after which history has rows, all before T stored. */
static int64_t
settled_time(void **state)
{
	int64_t	 t = util_now_ms(), end;
	char	 path[128];
	json_t	*o;
	size_t	 n;

	/* rows are stored in order: one at or after T means all before are */
	end = ncspeer_now_ms() + WAIT_MS;
	snprintf(path, sizeof path, "/v1/history?since=%lld&limit=1",
	    (long long)t);
	for (;;) {
		o = get_json(state, path, 200);
		n = json_array_size(json_object_get(o, "messages"));
		json_decref(o);
		if (n > 0)
			return t;
		if (ncspeer_now_ms() > end)
			fail_msg("no history row after %lld", (long long)t);
		usleep(100 * 1000);
	}
}

/* The capture download equals mosctl --db history export, byte for byte. */
static void
test_capture(void **state)
{
	struct gwrig		*r = *state;
	struct httpc_resp	 resp;
	char			 url[64], until[32], fa[320], fb[320];
	char			*a, *b, *out, *err, *ct;
	int64_t			 t;

	wait_objs(state, NASSETS);
	t = settled_time(state);
	snprintf(until, sizeof until, "%lld", (long long)t);
	snprintf(url, sizeof url, "http://127.0.0.1:%u", r->gw->api_port);
	snprintf(fa, sizeof fa, "%s/api.jsonl", r->gw->dir);
	snprintf(fb, sizeof fb, "%s/db.jsonl", r->gw->dir);
	assert_int_equal(gwproc_mosctl_cmd(r->gw, &out, &err, "--url", url,
	    "--token-file", r->gw->tokens, "history", "export", "--until",
	    until, "-o", fa, (char *)NULL), 0);
	free(out);
	free(err);
	assert_int_equal(gwproc_mosctl(r->gw, NULL, "history", "export",
	    "--until", until, "-o", fb, (char *)NULL), 0);
	a = gwproc_read_file(fa);
	b = gwproc_read_file(fb);
	/* 600 mosObj and 600 acks at least: many chunks */
	assert_true(itutil_count(a, "\n") >= 2 * NASSETS);
	if (strcmp(a, b) != 0)
		fail_msg("the API's capture (%zu bytes) differs from mosctl's "
		    "(%zu bytes)", strlen(a), strlen(b));
	free(a);
	free(b);

	/* ls over the API prints what ls on the file prints */
	assert_int_equal(gwproc_mosctl_cmd(r->gw, &a, &err, "--url", url,
	    "--token-file", r->gw->tokens, "history", "ls", "--until", until,
	    "--limit", "20", "--json", (char *)NULL), 0);
	free(err);
	assert_int_equal(gwproc_mosctl(r->gw, &b, "history", "ls", "--until",
	    until, "--limit", "20", "--json", (char *)NULL), 0);
	assert_int_equal(itutil_count(a, "\n"), 20);
	assert_string_equal(a, b);
	free(a);
	free(b);
	assert_int_equal(gwproc_mosctl_cmd(r->gw, &a, &err, "--url", url,
	    "--token-file", r->gw->tokens, "history", "ls", "--until", until,
	    "--limit", "3", (char *)NULL), 0);
	assert_int_equal(gwproc_mosctl(r->gw, &b, "history", "ls", "--until",
	    until, "--limit", "3", (char *)NULL), 0);
	assert_string_equal(a, b);
	free(a);
	free(b);
	free(err);
	/* --type: only that message, the same both ways */
	assert_int_equal(gwproc_mosctl_cmd(r->gw, &a, &err, "--url", url,
	    "--token-file", r->gw->tokens, "history", "ls", "--type",
	    "mosAck", "--until", until, "--limit", "5", "--json",
	    (char *)NULL), 0);
	assert_int_equal(gwproc_mosctl(r->gw, &b, "history", "ls", "--type",
	    "mosAck", "--until", until, "--limit", "5", "--json",
	    (char *)NULL), 0);
	assert_int_equal(itutil_count(a, "\n"), 5);
	assert_int_equal(itutil_count(a, "\"type\":\"mosAck\""), 5);
	assert_string_equal(a, b);
	free(a);
	free(b);
	free(err);

	/* Accept picks the capture too; limit caps it */
	assert_int_equal(httpc_once(r->gw->api_port, "GET",
	    "/v1/history?type=mosObj&limit=2", TOK_READ, "Accept: "
	    "application/vnd.mosgw.capture+jsonl\r\nConnection: close\r\n",
	    NULL, &resp), 0);
	assert_int_equal(resp.status, 200);
	ct = httpc_header(&resp, "Content-Type");
	assert_string_equal(ct, "application/vnd.mosgw.capture+jsonl");
	free(ct);
	assert_int_equal(itutil_count(resp.body, "\"type\":\"mosObj\""), 2);
	httpc_resp_clear(&resp);
}

/* A client that leaves mid-download: the gateway notices and goes on. */
static void
test_client_leaves(void **state)
{
	struct gwrig		*r = *state;
	struct httpc_resp	 resp;
	static const char	 req[] = "GET /v1/history?format=capture "
	    "HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " TOK_READ
	    "\r\n\r\n";
	struct pollfd		 pfd;
	char			 buf[1024];
	long			 off = (long)gwproc_log_size(r->gw);
	int			 fd;

	wait_objs(state, NASSETS);
	/* a small receive buffer: the download cannot all be in flight */
	GWRIG_CHECK(r, (fd = itutil_dial(NULL, r->gw->api_port, 4096)) >= 0);
	GWRIG_CHECK(r, itutil_write(fd, req, sizeof req - 1, WAIT_MS) == 0);
	pfd.fd = fd;
	pfd.events = POLLIN;
	GWRIG_CHECK(r, poll(&pfd, 1, WAIT_MS) == 1);
	GWRIG_CHECK(r, recv(fd, buf, sizeof buf, 0) > 0);
	close(fd);
	GWRIG_CHECK(r, gwproc_log_wait(r->gw, off, WAIT_MS,
	    "client gone during a capture download", (char *)NULL) >= 0);
	assert_int_equal(httpc_once(r->gw->api_port, "GET", "/healthz", NULL,
	    NULL, NULL, &resp), 0);
	assert_int_equal(resp.status, 200);
	httpc_resp_clear(&resp);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pages),
		cmocka_unit_test(test_bad_params),
		cmocka_unit_test(test_capture),
		cmocka_unit_test(test_client_leaves),
	};

	/* one rig for the suite: the import and its delivery take a while */
	return cmocka_run_group_tests(tests, setup, itutil_teardown);
}
