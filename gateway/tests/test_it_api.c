/*
 * Integration: the HTTP API of the real mosgw on loopback, with a scripted
 * NCS on its links: tokens and roles, routing, problem+json errors, the
 * limits (431, 413, 411, 408, 503), assets (PUT, GET, DELETE, list,
 * search) and the queue statistics, with good and bad input; and the MOS
 * links answering heartbeats at once while the API imports, lists and
 * searches as fast as it can.
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

#define TOK_READ	"read-token-0123456789"
#define TOK_WRITE	"write-token-0123456789"
#define TOK_ADMIN	"admin-token-0123456789"
#define MAX_CONN	4
#define DEADLINE_MS	10000

static const char tokens[] =
    "# test tokens\n"
    "reader read " TOK_READ "\n"
    "writer write " TOK_WRITE "\n"
    "\n"
    "boss admin " TOK_ADMIN "\n";

static int
setup(void **state)
{
	struct gwproc_opts	o;

	memset(&o, 0, sizeof o);
	o.api_tokens = tokens;
	o.api_extra = "max_header_size = 2048\nmax_body_size = 4096\n"
	    "request_deadline = 1\nmax_connections = 4\n";
	return itutil_setup_opts(state, MOS_ENC_UTF16BE, &o);
}

/* As setup, with the default body limit (16 MiB): large imports. */
static int
setup_load(void **state)
{
	struct gwproc_opts	o;

	memset(&o, 0, sizeof o);
	o.api_tokens = tokens;
	return itutil_setup_opts(state, MOS_ENC_UTF16BE, &o);
}

/* As setup, with a body limit that takes an import of a few thousand. */
static int
setup_import(void **state)
{
	struct gwproc_opts	o;

	memset(&o, 0, sizeof o);
	o.api_tokens = tokens;
	o.api_extra = "max_body_size = 1m\n";
	return itutil_setup_opts(state, MOS_ENC_UTF16BE, &o);
}

static uint16_t
api_port(void **state)
{
	return ((struct gwrig *)*state)->gw->api_port;
}

/* The body of a response as JSON (asserted to be an object). */
static json_t *
body_json(const struct httpc_resp *r)
{
	json_t	*o = json_loads(r->body, 0, NULL);

	if (o == NULL || !json_is_object(o))
		fail_msg("not a JSON object: %s", r->body);
	return o;
}

/*
 * Assert a problem+json answer: status, the type's slug, title, detail
 * (holding `detail_has` if not NULL) and the field (if not NULL).
 */
static void
check_problem(const struct httpc_resp *r, int status, const char *slug,
    const char *detail_has, const char *field)
{
	json_t		*o;
	char		*ct, type[128];
	const char	*d;

	if (r->status != status)
		fail_msg("status %d, not %d: %s", r->status, status, r->body);
	ct = httpc_header(r, "Content-Type");
	assert_non_null(ct);
	assert_string_equal(ct, "application/problem+json");
	free(ct);
	o = body_json(r);
	snprintf(type, sizeof type, "urn:mosgw:problem:%s", slug);
	assert_string_equal(json_string_value(json_object_get(o, "type")),
	    type);
	assert_int_equal(json_integer_value(json_object_get(o, "status")),
	    status);
	assert_non_null(json_string_value(json_object_get(o, "title")));
	d = json_string_value(json_object_get(o, "detail"));
	assert_non_null(d);
	if (detail_has != NULL && strstr(d, detail_has) == NULL)
		fail_msg("detail '%s' lacks '%s'", d, detail_has);
	if (field != NULL)
		assert_string_equal(json_string_value(json_object_get(o,
		    "field")), field);
	json_decref(o);
}

/* Assert that a header is there and holds `has`. */
static void
check_header(const struct httpc_resp *r, const char *name, const char *has)
{
	char	*v = httpc_header(r, name);

	if (v == NULL || strstr(v, has) == NULL)
		fail_msg("header %s: '%s' lacks '%s'", name, v != NULL ? v :
		    "(none)", has);
	free(v);
}

/* One request on a new connection; asserts that an answer came. */
static void
req(void **state, const char *method, const char *path, const char *token,
    const char *headers, const char *body, struct httpc_resp *r)
{
	if (httpc_once(api_port(state), method, path, token, headers, body,
	    r) != 0) {
		gwrig_dump(*state, "no HTTP answer", __FILE__, __LINE__);
		fail_msg("%s %s: no answer", method, path);
	}
}

/* GET /healthz without a token; the daemon's other methods need one. */
static void
test_healthz(void **state)
{
	struct httpc_resp	 r;
	json_t			*o;

	req(state, "GET", "/healthz", NULL, NULL, NULL, &r);
	assert_int_equal(r.status, 200);
	o = body_json(&r);
	assert_string_equal(json_string_value(json_object_get(o, "status")),
	    "ok");
	json_decref(o);
	httpc_resp_clear(&r);

	req(state, "DELETE", "/healthz", NULL, NULL, NULL, &r);
	check_problem(&r, 401, "unauthorized", NULL, "Authorization");
	httpc_resp_clear(&r);
	req(state, "DELETE", "/healthz", TOK_ADMIN, NULL, NULL, &r);
	check_problem(&r, 405, "method-not-allowed", "DELETE", NULL);
	check_header(&r, "Allow", "GET");
	httpc_resp_clear(&r);
}

/* 401 without or with a bad token; 403 for a role that may not. */
static void
test_auth(void **state)
{
	struct httpc_resp	 r;
	json_t			*o;

	req(state, "GET", "/v1/queue/stats", NULL, NULL, NULL, &r);
	check_problem(&r, 401, "unauthorized", "Bearer", "Authorization");
	check_header(&r, "WWW-Authenticate", "Bearer");
	httpc_resp_clear(&r);

	req(state, "GET", "/v1/queue/stats", "read-token-0123456788", NULL,
	    NULL, &r);
	check_problem(&r, 401, "unauthorized", NULL, NULL);
	httpc_resp_clear(&r);
	req(state, "GET", "/v1/queue/stats", "read", NULL, NULL, &r);
	check_problem(&r, 401, "unauthorized", NULL, NULL);
	httpc_resp_clear(&r);
	req(state, "GET", "/v1/queue/stats", NULL, "Authorization: Basic "
	    "cmVhZDpyZWFk\r\n", NULL, &r);
	check_problem(&r, 401, "unauthorized", NULL, NULL);
	httpc_resp_clear(&r);
	/* an unknown route says 401 before 404 */
	req(state, "GET", "/v1/nothing", NULL, NULL, NULL, &r);
	check_problem(&r, 401, "unauthorized", NULL, NULL);
	httpc_resp_clear(&r);

	req(state, "GET", "/v1/queue/stats", TOK_READ, NULL, NULL, &r);
	assert_int_equal(r.status, 200);
	o = body_json(&r);
	assert_true(json_is_integer(json_object_get(json_object_get(o,
	    "count"), "QUEUED")));
	json_decref(o);
	httpc_resp_clear(&r);

	req(state, "PUT", "/v1/assets/X1", TOK_READ, NULL,
	    "{\"objSlug\":\"x\"}", &r);
	check_problem(&r, 403, "forbidden", "write", NULL);
	httpc_resp_clear(&r);
	req(state, "DELETE", "/v1/assets/X1", TOK_READ, NULL, NULL, &r);
	check_problem(&r, 403, "forbidden", "reader", NULL);
	httpc_resp_clear(&r);
}

/* 404 for unknown routes, 405 with Allow, 400 for a bad path. */
static void
test_routes(void **state)
{
	struct httpc_resp	 r;

	req(state, "GET", "/v1/nothing", TOK_READ, NULL, NULL, &r);
	check_problem(&r, 404, "not-found", "/v1/nothing", NULL);
	httpc_resp_clear(&r);
	req(state, "GET", "/v1/assets/A/B", TOK_READ, NULL, NULL, &r);
	check_problem(&r, 404, "not-found", NULL, NULL);
	httpc_resp_clear(&r);
	req(state, "PATCH", "/v1/assets/A", TOK_ADMIN, NULL, NULL, &r);
	check_problem(&r, 405, "method-not-allowed", "PATCH", NULL);
	check_header(&r, "Allow", "PUT");
	check_header(&r, "Allow", "DELETE");
	httpc_resp_clear(&r);
	req(state, "POST", "/v1/queue/stats", TOK_ADMIN, NULL, "{}", &r);
	check_problem(&r, 405, "method-not-allowed", NULL, NULL);
	httpc_resp_clear(&r);
	req(state, "GET", "/v1/assets/A%00B", TOK_READ, NULL, NULL, &r);
	check_problem(&r, 400, "bad-request", NULL, NULL);
	httpc_resp_clear(&r);
}

/* A raw request (len 0: a string) on a new connection; answer and close. */
static void
raw(void **state, const char *text, size_t len, struct httpc_resp *r)
{
	int	fd;

	assert_true((fd = httpc_connect(api_port(state))) >= 0);
	assert_int_equal(httpc_write(fd, text, len != 0 ? len : strlen(text)),
	    0);
	if (httpc_read(fd, r, HTTPC_TIMEOUT_MS) != 0) {
		gwrig_dump(*state, "no HTTP answer", __FILE__, __LINE__);
		fail_msg("no answer to %.60s", text);
	}
	assert_true(httpc_closed(fd, HTTPC_TIMEOUT_MS));
	close(fd);
}

/* POST an NDJSON body as the writer. */
static void
raw_import(void **state, const char *body, struct httpc_resp *r)
{
	if (httpc_import(api_port(state), TOK_WRITE, body,
	    HTTPC_TIMEOUT_MS * 3, r) != 0) {
		gwrig_dump(*state, "no HTTP answer", __FILE__, __LINE__);
		fail_msg("no answer to the import");
	}
}

/* Over a limit: 431, 413, 411, 408, 503, each problem+json. */
static void
test_limits(void **state)
{
	struct httpc_resp	 r;
	char			 big[4096];
	int			 fds[MAX_CONN], fd, i;
	int64_t			 t0;

	memset(big, 'h', sizeof big);
	memcpy(big, "GET /healthz HTTP/1.1\r\nX-Big: ", 30);
	memcpy(big + sizeof big - 4, "\r\n\r\n", 4);
	raw(state, big, sizeof big, &r);
	check_problem(&r, 431, "header-too-large", "max_header_size", NULL);
	check_header(&r, "Connection", "close");
	httpc_resp_clear(&r);

	/* the head alone: the body is never read */
	raw(state, "PUT /v1/assets/A HTTP/1.1\r\nAuthorization: Bearer "
	    TOK_WRITE "\r\nContent-Length: 5000\r\n\r\n", 0, &r);
	check_problem(&r, 413, "body-too-large", "5000", "Content-Length");
	httpc_resp_clear(&r);

	raw(state, "PUT /v1/assets/A HTTP/1.1\r\nTransfer-Encoding: chunked"
	    "\r\n\r\n5\r\nhello\r\n0\r\n\r\n", 0, &r);
	check_problem(&r, 411, "length-required", NULL, "Transfer-Encoding");
	httpc_resp_clear(&r);

	raw(state, "GET /healthz HTTP/1.1\r\nContent-Length: x1\r\n\r\n", 0,
	    &r);
	check_problem(&r, 400, "bad-request", NULL, "Content-Length");
	httpc_resp_clear(&r);
	raw(state, "PUT /v1/assets/A HTTP/1.1\r\nContent-Length: 2\r\n"
	    "Content-length: 12\r\n\r\n{}", 0, &r);
	check_problem(&r, 400, "bad-request", "one", "Content-Length");
	httpc_resp_clear(&r);

	/* half a request: 408 after request_deadline (1 s) */
	t0 = ncspeer_now_ms();
	raw(state, "GET /healthz HTTP/1.1\r\nHost: x\r\n", 0, &r);
	check_problem(&r, 408, "request-timeout", "request_deadline", NULL);
	assert_true(ncspeer_now_ms() - t0 >= 900);
	httpc_resp_clear(&r);
	/* a body that stops short, the same */
	raw(state, "PUT /v1/assets/A HTTP/1.1\r\nContent-Length: 100\r\n\r\n"
	    "{\"objSlug\"", 0, &r);
	check_problem(&r, 408, "request-timeout", NULL, NULL);
	httpc_resp_clear(&r);

	/* max_connections kept-alive connections, then one more */
	for (i = 0; i < MAX_CONN; i++) {
		assert_true((fds[i] = httpc_connect(api_port(state))) >= 0);
		assert_int_equal(httpc_do(fds[i], "GET", "/healthz", NULL,
		    NULL, NULL, &r), 0);
		assert_int_equal(r.status, 200);
		httpc_resp_clear(&r);
	}
	raw(state, "GET /healthz HTTP/1.1\r\n\r\n", 0, &r);
	check_problem(&r, 503, "too-many-connections", "max_connections",
	    NULL);
	httpc_resp_clear(&r);
	/* the kept-alive ones still work */
	assert_int_equal(httpc_do(fds[0], "GET", "/healthz", NULL, NULL, NULL,
	    &r), 0);
	assert_int_equal(r.status, 200);
	httpc_resp_clear(&r);
	for (i = 0; i < MAX_CONN; i++)
		close(fds[i]);
	/* once the server has seen them close, a new one is served */
	t0 = ncspeer_now_ms();
	for (;;) {
		assert_true((fd = httpc_connect(api_port(state))) >= 0);
		assert_int_equal(httpc_do(fd, "GET", "/healthz", NULL, NULL,
		    NULL, &r), 0);
		close(fd);
		if (r.status == 200)
			break;
		assert_int_equal(r.status, 503);
		httpc_resp_clear(&r);
		assert_true(ncspeer_now_ms() - t0 < DEADLINE_MS);
		usleep(20000);
	}
	httpc_resp_clear(&r);
}

/* The publish job of an asset was acknowledged by the NCS (GET polls). */
static json_t *
wait_delivered(void **state, const char *path, int rev)
{
	struct httpc_resp	 r;
	json_t			*o, *d;
	int64_t			 t0 = ncspeer_now_ms();

	for (;;) {
		req(state, "GET", path, TOK_READ, NULL, NULL, &r);
		assert_int_equal(r.status, 200);
		o = body_json(&r);
		httpc_resp_clear(&r);
		d = json_array_get(json_object_get(o, "delivery"), 0);
		assert_non_null(d);
		assert_string_equal(json_string_value(json_object_get(d,
		    "ncs")), "n1");
		if (json_integer_value(json_object_get(d, "deliveredRev")) ==
		    rev)
			return o;
		json_decref(o);
		if (ncspeer_now_ms() - t0 > DEADLINE_MS) {
			gwrig_dump(*state, "not delivered", __FILE__, __LINE__);
			fail_msg("%s: objRev %d not delivered", path, rev);
		}
		usleep(20000);
	}
}

/* PUT, GET, list, If-Match, DELETE. */
static void
test_assets(void **state)
{
	struct httpc_resp	 r;
	json_t			*o, *j;

	req(state, "PUT", "/v1/assets/CLIP-1", TOK_WRITE, NULL,
	    "{\"objSlug\":\"First clip\",\"objDur\":1500,\"objTB\":25,"
	    "\"objPaths\":{\"objPath\":[{\"@techDescription\":\"H.264\","
	    "\"#text\":\"http://media.local/clip-1.mp4\"}]},"
	    "\"description\":\"<p>a &amp; b</p>\"}", &r);
	if (r.status != 202)
		fail_msg("PUT: %d %s", r.status, r.body);
	o = body_json(&r);
	assert_string_equal(json_string_value(json_object_get(o, "objID")),
	    "CLIP-1");
	assert_int_equal(json_integer_value(json_object_get(o, "objRev")), 1);
	j = json_array_get(json_object_get(o, "jobs"), 0);
	assert_non_null(j);
	assert_true(json_integer_value(json_object_get(j, "jobId")) > 0);
	assert_string_equal(json_string_value(json_object_get(j, "ncs")),
	    "n1");
	assert_string_equal(json_string_value(json_object_get(j, "status")),
	    "QUEUED");
	json_decref(o);
	httpc_resp_clear(&r);

	o = wait_delivered(state, "/v1/assets/CLIP-1", 1);
	assert_string_equal(json_string_value(json_object_get(o, "objSlug")),
	    "First clip");
	assert_int_equal(json_integer_value(json_object_get(o, "objDur")),
	    1500);
	assert_string_equal(json_string_value(json_object_get(o,
	    "changedBy")), "writer");
	assert_string_equal(json_string_value(json_object_get(o,
	    "description")), "<p>a &amp; b</p>");
	json_decref(o);

	req(state, "PUT", "/v1/assets/CLIP-1", TOK_WRITE, "If-Match: \"7\"\r\n",
	    "{\"objSlug\":\"Second\"}", &r);
	check_problem(&r, 412, "precondition-failed", "objRev is 1",
	    "If-Match");
	httpc_resp_clear(&r);
	req(state, "PUT", "/v1/assets/CLIP-1", TOK_WRITE, "If-Match: \"1\"\r\n",
	    "{\"objSlug\":\"Second\",\"objAir\":\"NOT READY\"}", &r);
	assert_int_equal(r.status, 202);
	o = body_json(&r);
	assert_int_equal(json_integer_value(json_object_get(o, "objRev")), 2);
	json_decref(o);
	httpc_resp_clear(&r);
	json_decref(wait_delivered(state, "/v1/assets/CLIP-1", 2));

	req(state, "PUT", "/v1/assets/CLIP-2", TOK_ADMIN, NULL,
	    "{\"objSlug\":\"Two\"}", &r);
	assert_int_equal(r.status, 202);
	httpc_resp_clear(&r);
	req(state, "GET", "/v1/assets?limit=1", TOK_READ, NULL, NULL, &r);
	assert_int_equal(r.status, 200);
	o = body_json(&r);
	assert_int_equal(json_array_size(json_object_get(o, "assets")), 1);
	assert_string_equal(json_string_value(json_object_get(o, "next")),
	    "CLIP-1");
	json_decref(o);
	httpc_resp_clear(&r);
	req(state, "GET", "/v1/assets?after=CLIP-1&limit=10", TOK_READ, NULL,
	    NULL, &r);
	assert_int_equal(r.status, 200);
	o = body_json(&r);
	assert_int_equal(json_array_size(json_object_get(o, "assets")), 1);
	assert_string_equal(json_string_value(json_object_get(json_array_get(
	    json_object_get(o, "assets"), 0), "objID")), "CLIP-2");
	assert_null(json_object_get(o, "next"));
	json_decref(o);
	httpc_resp_clear(&r);

	req(state, "DELETE", "/v1/assets/CLIP-1", TOK_WRITE, NULL, NULL, &r);
	assert_int_equal(r.status, 202);
	o = body_json(&r);
	assert_int_equal(json_integer_value(json_object_get(o, "objRev")), 3);
	json_decref(o);
	httpc_resp_clear(&r);
	req(state, "DELETE", "/v1/assets/CLIP-1", TOK_WRITE, NULL, NULL, &r);
	check_problem(&r, 404, "not-found", "CLIP-1", "objID");
	httpc_resp_clear(&r);
	req(state, "GET", "/v1/assets/NOPE", TOK_READ, NULL, NULL, &r);
	check_problem(&r, 404, "not-found", "NOPE", "objID");
	httpc_resp_clear(&r);
}

/* The objIDs of a page of GET /v1/assets, joined by spaces. */
static char *
page_ids(const json_t *o)
{
	json_t	*v;
	size_t	 i, len = 0;
	char	*out;

	out = calloc(1, 4096);
	assert_non_null(out);
	json_array_foreach(json_object_get(o, "assets"), i, v) {
		len += (size_t)snprintf(out + len, 4096 - len, "%s%s",
		    i > 0 ? " " : "", json_string_value(json_object_get(v,
		    "objID")));
		assert_true(len < 4096);
	}
	return out;
}

/*
 * GET a page of a search: 200 with the total and next wanted (NULL: no
 * next); its objIDs joined by spaces, malloc'd.
 */
static char *
search_get(void **state, const char *path, long long total,
    const char *next)
{
	struct httpc_resp	 r;
	json_t			*o;
	char			*ids;

	req(state, "GET", path, TOK_READ, NULL, NULL, &r);
	print_message("%s -> %d %s\n", path, r.status, r.body);
	assert_int_equal(r.status, 200);
	o = body_json(&r);
	ids = page_ids(o);
	assert_int_equal(json_integer_value(json_object_get(o, "total")),
	    total);
	if (next == NULL)
		assert_null(json_object_get(o, "next"));
	else
		assert_string_equal(json_string_value(json_object_get(o,
		    "next")), next);
	json_decref(o);
	httpc_resp_clear(&r);
	return ids;
}

/*
 * GET /v1/assets?q=: the words searched in slug, abstract, description
 * and metadata, ranked, with the total and next; a deleted asset is not
 * found; bad searches and unknown parameters are a 422 naming them.
 */
static void
test_assets_search(void **state)
{
	static const char *const puts[][2] = {
		{ "S-1", "{\"objSlug\":\"Flood in the north\"}" },
		{ "S-2", "{\"objSlug\":\"Election night\",\"description\":"
		    "\"<p>after the flood</p>\"}" },
		{ "S-3", "{\"objSlug\":\"Flood flood flood warnings\"}" },
		{ "S-4", "{\"objSlug\":\"Weather\",\"mosAbstract\":"
		    "\"floods expected\"}" },
		{ "S-5", "{\"objSlug\":\"Flood, deleted\"}" },
	};
	static const struct {
		const char	*path;
		const char	*field;
		const char	*detail;
	} bad[] = {
		{ "/v1/assets?q=%20%2B%2B%20", "q", "no word" },
		{ "/v1/assets?q=", "q", "no word" },
		{ "/v1/assets?q=%FF%FE", "q", "UTF-8" },
		{ "/v1/assets?q=flood&after=S-1", "after", "next" },
		{ "/v1/assets?q=flood&after=-1", "after", "next" },
		{ "/v1/assets?q=flood&limit=0", "limit", NULL },
		{ "/v1/assets?colour=red", "colour", "unknown parameter" },
	};
	struct httpc_resp	 r;
	char			*ids, *first, path[1200];
	size_t			 i;

	for (i = 0; i < sizeof puts / sizeof puts[0]; i++) {
		snprintf(path, sizeof path, "/v1/assets/%s", puts[i][0]);
		req(state, "PUT", path, TOK_WRITE, NULL, puts[i][1], &r);
		assert_int_equal(r.status, 202);
		httpc_resp_clear(&r);
	}
	req(state, "DELETE", "/v1/assets/S-5", TOK_WRITE, NULL, NULL, &r);
	assert_int_equal(r.status, 202);
	httpc_resp_clear(&r);

	/* every word must match; ranked: the slug saying it thrice first */
	ids = search_get(state, "/v1/assets?q=flood", 3, NULL);
	assert_true(strncmp(ids, "S-3 ", 4) == 0);
	assert_non_null(strstr(ids, "S-1"));
	assert_non_null(strstr(ids, "S-2"));
	assert_null(strstr(ids, "S-5"));
	free(ids);
	ids = search_get(state, "/v1/assets?q=flood%20NIGHT", 1, NULL);
	assert_string_equal(ids, "S-2");
	free(ids);
	free(search_get(state, "/v1/assets?q=flood*", 4, NULL));
	ids = search_get(state, "/v1/assets?q=drought", 0, NULL);
	assert_string_equal(ids, "");
	free(ids);

	/* paging: next is a count of results, passed back as after */
	first = search_get(state, "/v1/assets?q=flood&limit=2", 3, "2");
	ids = search_get(state, "/v1/assets?q=flood&limit=2&after=2", 3,
	    NULL);
	print_message("pages: %s | %s\n", first, ids);
	assert_null(strchr(ids, ' '));
	assert_null(strstr(first, ids));
	free(ids);
	free(first);
	ids = search_get(state, "/v1/assets?q=flood&after=50", 3, NULL);
	assert_string_equal(ids, "");
	free(ids);

	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		req(state, "GET", bad[i].path, TOK_READ, NULL, NULL, &r);
		print_message("%s -> %d %s\n", bad[i].path, r.status, r.body);
		check_problem(&r, 422, "invalid-parameter", bad[i].detail,
		    bad[i].field);
		httpc_resp_clear(&r);
	}
	memset(path, 0, sizeof path);
	memcpy(path, "/v1/assets?q=", 13);
	memset(path + 13, 'a', 1001);
	req(state, "GET", path, TOK_READ, NULL, NULL, &r);
	check_problem(&r, 422, "invalid-parameter", "1000 bytes", "q");
	httpc_resp_clear(&r);
}

/* Bad PUT bodies: 400 for JSON, 415 for its type, 422 naming the field. */
static void
test_assets_bad(void **state)
{
	static const struct {
		const char	*body;
		int		 status;
		const char	*slug;
		const char	*detail;
		const char	*field;
	} cases[] = {
		{ "{", 400, "malformed-json", "line 1", NULL },
		{ "[1,2]", 400, "malformed-json", "object", NULL },
		{ "{\"objSlug\":\"a\",\"objSlug\":\"b\"}", 400,
		    "malformed-json", "duplicate", NULL },
		{ "{}", 422, "invalid-asset", "objSlug", "objSlug" },
		{ "{\"objSlug\":5}", 422, "invalid-asset", "objSlug",
		    "objSlug" },
		{ "{\"objSlug\":\"a\",\"objRev\":3}", 422, "invalid-asset",
		    "objRev", "objRev" },
		{ "{\"objSlug\":\"a\",\"status\":\"NEW\"}", 422,
		    "invalid-asset", "status", "status" },
		{ "{\"objSlug\":\"a\",\"objDur\":\"long\"}", 422,
		    "invalid-asset", "objDur", "objDur" },
		{ "{\"objSlug\":\"a\",\"colour\":\"red\"}", 422,
		    "invalid-asset", "colour", "colour" },
		{ "{\"objSlug\":\"a\",\"objType\":\"MOVIE\"}", 422,
		    "invalid-asset", "type", NULL },
		{ "{\"objSlug\":\"a\",\"description\":\"<p>open\"}", 422,
		    "invalid-asset", "well-formed", "description" },
		{ "{\"objSlug\":\"a\",\"objPaths\":{\"objPath\":[{\"#text\":"
		    "\"http://x\"}]}}", 422, "invalid-asset", "tech", NULL },
	};
	struct httpc_resp	r;
	size_t			i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		req(state, "PUT", "/v1/assets/BAD-1", TOK_WRITE, NULL,
		    cases[i].body, &r);
		print_message("case %zu: %s -> %d %s\n", i, cases[i].body,
		    r.status, r.body);
		check_problem(&r, cases[i].status, cases[i].slug,
		    cases[i].detail, cases[i].field);
		httpc_resp_clear(&r);
	}
	raw(state, "PUT /v1/assets/BAD-1 HTTP/1.1\r\nAuthorization: Bearer "
	    TOK_WRITE "\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n"
	    "Connection: close\r\n\r\n{}", 0, &r);
	check_problem(&r, 415, "unsupported-media-type", "text/plain",
	    "Content-Type");
	httpc_resp_clear(&r);
	req(state, "PUT", "/v1/assets/BAD-1", TOK_WRITE, "If-Match: x\r\n",
	    "{\"objSlug\":\"a\"}", &r);
	check_problem(&r, 400, "bad-request", NULL, "If-Match");
	httpc_resp_clear(&r);
	req(state, "GET", "/v1/assets?limit=0", TOK_READ, NULL, NULL, &r);
	check_problem(&r, 422, "invalid-parameter", NULL, "limit");
	httpc_resp_clear(&r);
	/* nothing was stored */
	req(state, "GET", "/v1/assets/BAD-1", TOK_READ, NULL, NULL, &r);
	check_problem(&r, 404, "not-found", NULL, NULL);
	httpc_resp_clear(&r);
}

/* POST /v1/assets:import: good lines stored, bad ones refused by number. */
static void
test_import(void **state)
{
	struct httpc_resp	 r;
	json_t			*o, *ref;
	char			*body, *p;
	size_t			 i, n = 2500;

	/* n good lines with a bad one at 3, 7 and 9 (line numbers from 1) */
	body = malloc(n * 80 + 512);
	assert_non_null(body);
	p = body;
	p += sprintf(p, "{\"objID\":\"IMP-0\",\"objSlug\":\"zero\"}\n");
	p += sprintf(p, "\r\n");
	p += sprintf(p, "{\"objID\":\"IMP-X\",\"objSlug\":7}\n");
	p += sprintf(p, "{\"objID\":\"IMP-1\",\"objSlug\":\"one\","
	    "\"objDur\":25}\r\n");
	for (i = 2; i < 4; i++)
		p += sprintf(p, "{\"objID\":\"IMP-%zu\",\"objSlug\":\"n\"}\n",
		    i);
	p += sprintf(p, "{\"objSlug\":\"no id\"}\n");
	p += sprintf(p, "{\"objID\":\"IMP-4\",\"objSlug\":\"x\"}\n");
	p += sprintf(p, "not json\n");
	for (i = 5; i < n; i++)
		p += sprintf(p, "{\"objID\":\"IMP-%zu\",\"objSlug\":\"n\"}\n",
		    i);
	raw_import(state, body, &r);
	free(body);
	if (r.status != 200)
		fail_msg("import: %d %s", r.status, r.body);
	o = body_json(&r);
	assert_int_equal(json_integer_value(json_object_get(o, "accepted")),
	    n);
	ref = json_object_get(o, "refused");
	assert_int_equal(json_array_size(ref), 3);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(ref,
	    0), "line")), 3);
	assert_non_null(strstr(json_string_value(json_object_get(
	    json_array_get(ref, 0), "detail")), "objSlug"));
	assert_int_equal(json_integer_value(json_object_get(json_array_get(ref,
	    1), "line")), 7);
	assert_non_null(strstr(json_string_value(json_object_get(
	    json_array_get(ref, 1), "detail")), "objID"));
	assert_int_equal(json_integer_value(json_object_get(json_array_get(ref,
	    2), "line")), 9);
	json_decref(o);
	httpc_resp_clear(&r);

	req(state, "GET", "/v1/assets/IMP-1", TOK_READ, NULL, NULL, &r);
	assert_int_equal(r.status, 200);
	o = body_json(&r);
	assert_int_equal(json_integer_value(json_object_get(o, "objDur")), 25);
	assert_string_equal(json_string_value(json_object_get(o,
	    "changedBy")), "writer");
	json_decref(o);
	httpc_resp_clear(&r);
	req(state, "GET", "/v1/assets/IMP-X", TOK_READ, NULL, NULL, &r);
	check_problem(&r, 404, "not-found", NULL, NULL);
	httpc_resp_clear(&r);
	/* every accepted asset has its delivery job */
	assert_true(gwproc_wait_jobs(((struct gwrig *)*state)->gw,
	    ((struct gwrig *)*state)->lane, -1, (long)n, DEADLINE_MS) >=
	    (long)n);

	req(state, "POST", "/v1/assets:import", TOK_READ, NULL, NULL, &r);
	check_problem(&r, 403, "forbidden", NULL, NULL);
	httpc_resp_clear(&r);
}

#define LOAD_IMPORTS	3	/* imports, one after the other */
#define LOAD_ASSETS	10000	/* assets in each (SQLite) */
#define LOAD_ASSETS_PG	2000	/* PostgreSQL: a commit is a round trip */
#define LOAD_READS	50	/* lists and searches beside them */
#define LOAD_BEAT_MS	20	/* between a heartbeat's answer and the next */

struct load {
	uint16_t	 port;
	int		 assets;	/* in each import */
	char		*body;		/* the import, made per round */
	int		 imported;	/* accepted, all rounds */
	int		 failed;	/* answers that were not 200 */
	int		 reads;
	volatile int	 running;	/* threads still at work */
	pthread_mutex_t	 mu;
};

/* The importer: LOAD_IMPORTS NDJSON bodies of LOAD_ASSETS new assets. */
static void *
load_import(void *arg)
{
	struct load		*l = arg;
	struct httpc_resp	 r;
	json_t			*o;
	size_t			 len, off;
	int			 k, i;

	len = (size_t)l->assets * 128;
	l->body = malloc(len);
	for (k = 0; l->body != NULL && k < LOAD_IMPORTS; k++) {
		for (i = 0, off = 0; i < l->assets; i++)
			off += (size_t)snprintf(l->body + off, len - off,
			    "{\"objID\":\"L%d-%05d\",\"objSlug\":\"load %d "
			    "harbour\",\"objDur\":%d}\n", k, i, i, i);
		if (httpc_import(l->port, TOK_WRITE, l->body,
		    HTTPC_TIMEOUT_MS * 12, &r) != 0 || r.status != 200 ||
		    (o = json_loads(r.body, 0, NULL)) == NULL) {
			fprintf(stderr, "import %d: %d %s\n", k, r.status,
			    r.body != NULL ? r.body : "(no answer)");
			pthread_mutex_lock(&l->mu);
			l->failed++;
			pthread_mutex_unlock(&l->mu);
			httpc_resp_clear(&r);
			continue;
		}
		pthread_mutex_lock(&l->mu);
		l->imported += (int)json_integer_value(json_object_get(o,
		    "accepted"));
		pthread_mutex_unlock(&l->mu);
		json_decref(o);
		httpc_resp_clear(&r);
	}
	free(l->body);
	pthread_mutex_lock(&l->mu);
	l->running--;
	pthread_mutex_unlock(&l->mu);
	return NULL;
}

/* A reader: pages of 1,000 and searches, as fast as they are answered. */
static void *
load_read(void *arg)
{
	struct load		*l = arg;
	struct httpc_resp	 r;
	int			 i;

	for (i = 0; i < LOAD_READS; i++) {
		if (httpc_once(l->port, "GET", i % 2 == 0 ?
		    "/v1/assets?limit=1000" :
		    "/v1/assets?q=harbour&limit=1000", TOK_READ, NULL, NULL,
		    &r) != 0 || r.status != 200) {
			pthread_mutex_lock(&l->mu);
			l->failed++;
			pthread_mutex_unlock(&l->mu);
		}
		httpc_resp_clear(&r);
		pthread_mutex_lock(&l->mu);
		l->reads++;
		pthread_mutex_unlock(&l->mu);
	}
	pthread_mutex_lock(&l->mu);
	l->running--;
	pthread_mutex_unlock(&l->mu);
	return NULL;
}

/* Done? If not, the next heartbeat goes LOAD_BEAT_MS later (an NCS paces). */
static bool
load_done(void *arg)
{
	struct load	*l = arg;
	bool		 done;

	pthread_mutex_lock(&l->mu);
	done = l->running == 0;
	pthread_mutex_unlock(&l->mu);
	if (!done)
		usleep(LOAD_BEAT_MS * 1000);
	return done;
}

/*
 * The MOS links are not held up by the API: while 30,000 assets (6,000
 * on PostgreSQL) are imported and published to the NCS, and two readers
 * list and search beside them, the NCS's heartbeats on a connection of
 * their own (one every LOAD_BEAT_MS after the answer to the last) are
 * answered, none waiting a quarter of the whole or more.
 */
static void
test_links_under_load(void **state)
{
	struct gwrig	*r = *state;
	struct load	 l;
	pthread_t	 th[3];
	int64_t		 t0, took, slowest;
	int		 hb, n, i;

	memset(&l, 0, sizeof l);
	l.port = api_port(state);
	l.assets = r->gw->driver == STORE_POSTGRESQL ? LOAD_ASSETS_PG :
	    LOAD_ASSETS;
	l.running = 3;
	pthread_mutex_init(&l.mu, NULL);
	hb = gwrig_dial(r, NCSPEER_LOWER);
	GWRIG_CHECK(r, hb > 0);
	t0 = ncspeer_now_ms();
	assert_int_equal(pthread_create(&th[0], NULL, load_import, &l), 0);
	assert_int_equal(pthread_create(&th[1], NULL, load_read, &l), 0);
	assert_int_equal(pthread_create(&th[2], NULL, load_read, &l), 0);
	n = itutil_heartbeats_until(r, hb, load_done, &l, 300000, &slowest);
	for (i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	took = ncspeer_now_ms() - t0;
	pthread_mutex_destroy(&l.mu);
	print_message("%d assets imported and %d reads in %lld ms; %d "
	    "heartbeats answered meanwhile, the slowest in %lld ms\n",
	    l.imported, l.reads, (long long)took, n, (long long)slowest);
	assert_int_equal(l.failed, 0);
	assert_int_equal(l.imported, LOAD_IMPORTS * l.assets);
	if (n < 2 || itutil_loop_stalled(slowest, took)) {
		gwrig_dump(r, "heartbeats under API load", __FILE__,
		    __LINE__);
		fail_msg("%d heartbeats in %lld ms, slowest %lld ms", n,
		    (long long)took, (long long)slowest);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_healthz, setup,
		    itutil_teardown),
		cmocka_unit_test_setup_teardown(test_auth, setup,
		    itutil_teardown),
		cmocka_unit_test_setup_teardown(test_routes, setup,
		    itutil_teardown),
		cmocka_unit_test_setup_teardown(test_limits, setup,
		    itutil_teardown),
		cmocka_unit_test_setup_teardown(test_assets, setup,
		    itutil_teardown),
		cmocka_unit_test_setup_teardown(test_assets_search, setup,
		    itutil_teardown),
		cmocka_unit_test_setup_teardown(test_assets_bad, setup,
		    itutil_teardown),
		cmocka_unit_test_setup_teardown(test_links_under_load,
		    setup_load, itutil_teardown),
		cmocka_unit_test_setup_teardown(test_import, setup_import,
		    itutil_teardown),
	};

	return cmocka_run_group_tests_name("gateway_it_api", tests, NULL,
	    NULL);
}
