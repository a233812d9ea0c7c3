/*
 * Integration: events out of the real mosgw. GET /v1/events as
 * Server-Sent Events (read here from a raw socket, chunked encoding
 * undone by hand): asset.delivered after the scripted NCS acks, and
 * asset.failed after a NACK; a reconnect with Last-Event-ID gets exactly
 * the events it missed; link.state when the NCS goes away; tokens,
 * parameters and the client limit; ": caught-up" once the backlog is
 * sent. Webhooks: a receiver in this process
 * (hookrx.c: evhttp on a thread of its own, loopback) that fails the first POSTs
 * and then accepts; every POST's signature is checked with OpenSSL.
 */
#include <sys/socket.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <jansson.h>

#include "gateway/tests/hookrx.h"
#include "gateway/tests/httpc.h"
#include "gateway/tests/itutil.h"

#define TOK_READ	"read-token-0123456789"
#define TOK_WRITE	"write-token-0123456789"
#define SECRET		"hook-secret-42"
#define WAIT_MS		15000

static const char tokens[] =
    "reader read " TOK_READ "\n"
    "writer write " TOK_WRITE "\n";

/* ------------------------------------------------------------------------ */
/* An SSE client on a raw socket */

struct sse {
	int	 fd;
	char	*raw;		/* bytes read, not yet de-chunked */
	size_t	 rlen;
	char	*txt;		/* the event stream, de-chunked */
	size_t	 tlen;
	int	 state;		/* 0 size line, 1 data, 2 CRLF, 3 ended */
	size_t	 left;
	int	 keepalives;
	int	 events;	/* returned by sse_next */
	int	 caught_ups;	/* ": caught-up ID" comments */
	int64_t	 caught_id;	/* the last one's ID */
	int	 caught_after;	/* events before the first */
};

struct sse_ev {
	int64_t	 id;		/* -1: none */
	char	 type[64];
	char	 data[4096];
};

/* Append n bytes to a growing buffer. */
static void
grow(char **buf, size_t *len, const char *p, size_t n)
{
	if ((*buf = realloc(*buf, *len + n + 1)) == NULL)
		abort();
	memcpy(*buf + *len, p, n);
	*len += n;
	(*buf)[*len] = '\0';
}

/* Drop the first n bytes of a buffer. */
static void
shift(char *buf, size_t *len, size_t n)
{
	memmove(buf, buf + n, *len - n);
	*len -= n;
	buf[*len] = '\0';
}

/* Move what is complete in raw through the chunked decoding into txt. */
static void
sse_dechunk(struct sse *s)
{
	char	*nl, *end;
	size_t	 n;

	for (;;) {
		if (s->state == 0) {
			if (s->rlen == 0 ||
			    (nl = memchr(s->raw, '\n', s->rlen)) == NULL)
				return;
			s->left = strtoul(s->raw, &end, 16);
			shift(s->raw, &s->rlen, (size_t)(nl - s->raw) + 1);
			s->state = s->left == 0 ? 3 : 1;
		} else if (s->state == 1) {
			n = s->rlen < s->left ? s->rlen : s->left;
			if (n == 0)
				return;
			grow(&s->txt, &s->tlen, s->raw, n);
			shift(s->raw, &s->rlen, n);
			if ((s->left -= n) == 0)
				s->state = 2;
		} else if (s->state == 2) {
			if (s->rlen < 2)
				return;
			shift(s->raw, &s->rlen, 2);
			s->state = 0;
		} else
			return;
	}
}

/* Read what comes within timeout_ms (until ms have passed): 0, -1 closed. */
static int
sse_fill(struct sse *s, int timeout_ms)
{
	struct pollfd	pfd = { .fd = s->fd, .events = POLLIN };
	char		buf[8192];
	ssize_t		n;

	if (poll(&pfd, 1, timeout_ms) <= 0)
		return 0;
	if ((n = read(s->fd, buf, sizeof buf)) <= 0)
		return -1;
	grow(&s->raw, &s->rlen, buf, (size_t)n);
	return 0;
}

/*
 * Ask for a stream: its status (s is then open, a 200 checked to be a
 * chunked text/event-stream), or -1 without an answer.
 */
static int
sse_try(struct sse *s, uint16_t port, const char *path, const char *extra)
{
	char		 req[1024], *e;
	int		 status;
	int64_t		 t0 = ncspeer_now_ms();

	memset(s, 0, sizeof *s);
	if ((s->fd = httpc_connect(port)) == -1)
		fail_msg("cannot connect to the API");
	snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n"
	    "Authorization: Bearer " TOK_READ "\r\nAccept: text/event-stream"
	    "\r\n%s\r\n", path, extra != NULL ? extra : "");
	assert_int_equal(httpc_write(s->fd, req, strlen(req)), 0);
	while ((s->raw == NULL || (e = strstr(s->raw, "\r\n\r\n")) == NULL)) {
		if (ncspeer_now_ms() - t0 > WAIT_MS || sse_fill(s, 200) != 0)
			return -1;
	}
	*e = '\0';
	if (strncmp(s->raw, "HTTP/1.1 ", 9) != 0)
		return -1;
	status = atoi(s->raw + 9);
	if (status == 200 && (strstr(s->raw, "text/event-stream") == NULL ||
	    strstr(s->raw, "chunked") == NULL))
		fail_msg("not an event stream: %s", s->raw);
	shift(s->raw, &s->rlen, (size_t)(e - s->raw) + 4);
	sse_dechunk(s);
	return status;
}

/* Open a stream, asserting 200. */
static void
sse_open(struct sse *s, uint16_t port, const char *path, const char *extra)
{
	int	status = sse_try(s, port, path, extra);

	if (status != 200)
		fail_msg("GET %s: status %d, not 200", path, status);
}

static void
sse_close(struct sse *s)
{
	close(s->fd);
	free(s->raw);
	free(s->txt);
	memset(s, 0, sizeof *s);
	s->fd = -1;
}

/*
 * The next event (comments and "retry:" blocks counted or skipped) within
 * timeout_ms: 0, or -1 on timeout or end of stream.
 */
static int
sse_next(struct sse *s, int timeout_ms, struct sse_ev *ev)
{
	int64_t	 t0 = ncspeer_now_ms();
	char	*end, *line, *nl, *block;
	size_t	 blen;
	bool	 any;

	for (;;) {
		while (s->txt != NULL && (end = strstr(s->txt, "\n\n")) !=
		    NULL) {
			blen = (size_t)(end - s->txt) + 2;
			block = strndup(s->txt, blen);
			shift(s->txt, &s->tlen, blen);
			memset(ev, 0, sizeof *ev);
			ev->id = -1;
			any = false;
			for (line = block; *line != '\0'; line = nl + 1) {
				nl = strchr(line, '\n');
				*nl = '\0';
				if (strcmp(line, ": keepalive") == 0)
					s->keepalives++;
				else if (strncmp(line, ": caught-up ", 12) ==
				    0) {
					if (s->caught_ups++ == 0)
						s->caught_after = s->events;
					s->caught_id = strtoll(line + 12, NULL,
					    10);
				}
				else if (strncmp(line, "id: ", 4) == 0)
					ev->id = strtoll(line + 4, NULL, 10);
				else if (strncmp(line, "event: ", 7) == 0) {
					snprintf(ev->type, sizeof ev->type,
					    "%s", line + 7);
					any = true;
				} else if (strncmp(line, "data: ", 6) == 0)
					snprintf(ev->data, sizeof ev->data,
					    "%s", line + 6);
			}
			free(block);
			if (any) {
				s->events++;
				return 0;
			}
		}
		if (s->state == 3 || ncspeer_now_ms() - t0 > timeout_ms)
			return -1;
		if (sse_fill(s, 100) != 0)
			return -1;
		sse_dechunk(s);
	}
}

/* A string member of an event's data. */
static const char *
ev_str(json_t *o, const char *key)
{
	const char	*v = json_string_value(json_object_get(o, key));

	return v != NULL ? v : "";
}

/*
 * Wait for an event of that type whose data has key = value (NULL: any);
 * every event seen before it goes through seen (may be NULL). The data as
 * JSON, or a failure.
 */
static json_t *
sse_wait(struct gwrig *r, struct sse *s, const char *type, const char *key,
    const char *value, struct sse_ev *out, void (*seen)(const struct sse_ev *,
    void *), void *arg)
{
	struct sse_ev	 ev;
	json_t		*o;
	int64_t		 t0 = ncspeer_now_ms();

	while (ncspeer_now_ms() - t0 < WAIT_MS) {
		if (sse_next(s, 500, &ev) != 0)
			continue;
		if (seen != NULL)
			seen(&ev, arg);
		if (strcmp(ev.type, type) != 0)
			continue;
		if ((o = json_loads(ev.data, 0, NULL)) == NULL)
			fail_msg("event data is not JSON: %s", ev.data);
		if (key == NULL || strcmp(ev_str(o, key), value) == 0) {
			if (out != NULL)
				*out = ev;
			return o;
		}
		json_decref(o);
	}
	gwrig_dump(r, "no event", __FILE__, __LINE__);
	fail_msg("no %s event with %s = %s", type, key != NULL ? key : "-",
	    value != NULL ? value : "-");
	return NULL;
}

static struct hook_rx	hook;
static char		hook_sections[512];

/* ------------------------------------------------------------------------ */
/* Set-ups */

static int
setup_common(void **state, const char *sections, const char *ncs_extra)
{
	struct gwproc_opts	o;

	memset(&o, 0, sizeof o);
	o.api_tokens = tokens;
	o.database_extra = "backoff_base = 100ms\nbackoff_max = 500ms\n";
	o.sections_extra = sections;
	o.ncs[0].extra = ncs_extra;
	return itutil_setup_opts(state, MOS_ENC_UTF16BE, &o);
}

static int
setup(void **state)
{
	/* one attempt: a NACK fails the delivery at once */
	return setup_common(state, "[events]\nkeepalive = 500ms\n"
	    "sse_max_clients = 3\n", "max_attempts = 1\n");
}

/* As setup, with a short request deadline. */
static int
setup_short(void **state)
{
	struct gwproc_opts	o;

	memset(&o, 0, sizeof o);
	o.api_tokens = tokens;
	o.api_extra = "request_deadline = 1\n";
	o.sections_extra = "[events]\nkeepalive = 500ms\n";
	o.ncs[0].extra = "max_attempts = 1\n";
	return itutil_setup_opts(state, MOS_ENC_UTF16BE, &o);
}

static int
setup_slow(void **state)
{
	return setup_common(state, "[events]\nsse_max_buffer = 64k\n"
	    "keepalive = 500ms\n", NULL);
}

static int
setup_hook(void **state)
{
	hookrx_start(&hook, NULL, 2, NULL, NULL);
	snprintf(hook_sections, sizeof hook_sections, "[webhook.rx]\n"
	    "url = http://127.0.0.1:%u/hook?x=1\nevents = asset.delivered\n"
	    "secret = " SECRET "\ntimeout = 2\n", hook.port);
	if (setup_common(state, hook_sections, NULL) != 0) {
		hookrx_stop(&hook);
		return -1;
	}
	return 0;
}

static int
teardown_hook(void **state)
{
	int	rc = itutil_teardown(state);

	hookrx_stop(&hook);
	return rc;
}

static uint16_t
api_port(void **state)
{
	return ((struct gwrig *)*state)->gw->api_port;
}

/* PUT an asset; asserts 202. */
static void
put_asset(void **state, const char *obj_id, const char *slug)
{
	struct httpc_resp	r;
	char			path[128], body[256];

	snprintf(path, sizeof path, "/v1/assets/%s", obj_id);
	snprintf(body, sizeof body, "{\"objSlug\":\"%s\"}", slug);
	if (httpc_once(api_port(state), "PUT", path, TOK_WRITE, NULL, body,
	    &r) != 0 || r.status != 202)
		fail_msg("PUT %s: %d %s", path, r.status, r.body != NULL ?
		    r.body : "");
	httpc_resp_clear(&r);
}

/*
 * The delivery to n1 of GET /v1/assets/{objID}: its "failed" member (a
 * new reference; JSON null when nothing failed) and its deliveredRev.
 */
static json_t *
delivery_failed(void **state, const char *obj_id, json_int_t *rev)
{
	struct httpc_resp	 r;
	json_t			*o, *d, *f;
	char			 path[128];

	snprintf(path, sizeof path, "/v1/assets/%s", obj_id);
	if (httpc_once(api_port(state), "GET", path, TOK_READ, NULL, NULL,
	    &r) != 0 || r.status != 200)
		fail_msg("GET %s: %d %s", path, r.status, r.body != NULL ?
		    r.body : "");
	o = json_loads(r.body, 0, NULL);
	assert_non_null(o);
	d = json_array_get(json_object_get(o, "delivery"), 0);
	assert_string_equal(json_string_value(json_object_get(d, "ncs")),
	    "n1");
	*rev = json_integer_value(json_object_get(d, "deliveredRev"));
	f = json_incref(json_object_get(d, "failed"));
	assert_non_null(f);
	json_decref(o);
	httpc_resp_clear(&r);
	return f;
}

/* ------------------------------------------------------------------------ */
/* Tests */

struct job_seen {
	char	obj[32];
	int	queued, running, done;
};

static void
note_job(const struct sse_ev *ev, void *arg)
{
	struct job_seen	*j = arg;
	json_t		*o;

	if (strcmp(ev->type, "job.state") != 0 ||
	    (o = json_loads(ev->data, 0, NULL)) == NULL)
		return;
	if (strcmp(ev_str(o, "objID"), j->obj) == 0 &&
	    strcmp(ev_str(o, "kind"), "publish") == 0) {
		j->queued += strcmp(ev_str(o, "state"), "QUEUED") == 0;
		j->running += strcmp(ev_str(o, "state"), "RUNNING") == 0;
		j->done += strcmp(ev_str(o, "state"), "DONE") == 0;
		assert_true(json_integer_value(json_object_get(o, "jobId")) >
		    0);
	}
	json_decref(o);
}

/* PUT -> job.state QUEUED, RUNNING, DONE and asset.delivered; a NACK. */
static void
test_sse_assets(void **state)
{
	struct gwrig		*r = *state;
	struct ncspeer_policy	 pol;
	struct job_seen		 js;
	struct sse		 s;
	struct sse_ev		 ev;
	json_t			*o;
	json_int_t		 rev;
	int64_t			 t0;

	sse_open(&s, api_port(state), "/v1/events", NULL);
	memset(&js, 0, sizeof js);
	snprintf(js.obj, sizeof js.obj, "EV-1");
	put_asset(state, "EV-1", "first");
	o = sse_wait(r, &s, "asset.delivered", "objID", "EV-1", &ev,
	    note_job, &js);
	GWRIG_CHECK(r, ev.id > 0);
	assert_string_equal(ev_str(o, "ncs"), "n1");
	assert_string_equal(ev_str(o, "status"), "NEW");
	assert_int_equal(json_integer_value(json_object_get(o, "objRev")), 1);
	json_decref(o);
	/* the job's DONE commits with (just before) its delivery */
	GWRIG_CHECK(r, js.queued == 1 && js.running == 1 && js.done == 1);

	/* the NCS refuses: asset.failed with its text */
	memset(&pol, 0, sizeof pol);
	pol.obj = NCSPEER_OBJ_NACK;
	pol.nack_text = "no room for EV-2";
	ncspeer_set_policy(r->ncs, &pol);
	put_asset(state, "EV-2", "second");
	o = sse_wait(r, &s, "asset.failed", "objID", "EV-2", NULL, NULL, NULL);
	assert_string_equal(ev_str(o, "ncs"), "n1");
	assert_int_equal(json_integer_value(json_object_get(o, "objRev")), 1);
	if (strstr(ev_str(o, "error"), "no room for EV-2") == NULL)
		fail_msg("asset.failed without the NACK text: %s",
		    ev_str(o, "error"));
	json_decref(o);
	/* and the asset's delivery state says so, with the NACK text */
	o = delivery_failed(state, "EV-2", &rev);
	assert_true(rev == 0);	/* null: its NEW was never acknowledged */
	if (!json_is_object(o) || strstr(ev_str(o, "error"),
	    "no room for EV-2") == NULL || json_integer_value(
	    json_object_get(o, "objRev")) != 1 || json_integer_value(
	    json_object_get(o, "jobId")) <= 0 || json_string_value(
	    json_object_get(o, "at")) == NULL)
		fail_msg("GET /v1/assets/EV-2: failed is %s",
		    json_dumps(o, JSON_COMPACT));
	json_decref(o);
	/*
	 * An idle stream lives on its keepalives (every 500 ms here) well
	 * past every timeout the API has for a connection that sends
	 * nothing (request_deadline = 1 s, evhttp's 3 s, the stream's 2 s
	 * for a stalled write).
	 */
	t0 = ncspeer_now_ms();
	s.keepalives = 0;
	while (ncspeer_now_ms() - t0 < 5000 && s.state != 3)
		(void)sse_next(&s, 300, &ev);
	GWRIG_CHECK(r, s.keepalives >= 5 && s.state != 3);
	pol.obj = NCSPEER_OBJ_ACK;
	ncspeer_set_policy(r->ncs, &pol);
	put_asset(state, "EV-3", "later");
	json_decref(sse_wait(r, &s, "job.state", "objID", "EV-3", NULL, NULL,
	    NULL));
	/* a later delivery of EV-2 clears its failure */
	put_asset(state, "EV-2", "second, again");
	json_decref(sse_wait(r, &s, "asset.delivered", "objID", "EV-2", NULL,
	    NULL, NULL));
	o = delivery_failed(state, "EV-2", &rev);
	assert_true(json_is_null(o) && rev == 2);
	json_decref(o);
	sse_close(&s);
}

struct id_log {
	int64_t	 ids[512];
	size_t	 n;
};

static void
note_id(const struct sse_ev *ev, void *arg)
{
	struct id_log	*l = arg;

	if (ev->id >= 0 && l->n < 512)
		l->ids[l->n++] = ev->id;
}

/*
 * Disconnect, change, reconnect with Last-Event-ID: every event after it,
 * once, in order, none missing (ids are consecutive); ?after= the same.
 */
static void
test_sse_resume(void **state)
{
	struct gwrig	*r = *state;
	struct sse	 s;
	struct sse_ev	 ev;
	struct id_log	 a, b;
	json_t		*o;
	char		 hdr[64], path[64];
	size_t		 i;
	int64_t		 last;

	sse_open(&s, api_port(state), "/v1/events", NULL);
	put_asset(state, "RS-1", "one");
	/* the delivery is the last event of that change */
	json_decref(sse_wait(r, &s, "asset.delivered", "objID", "RS-1", &ev,
	    NULL, NULL));
	last = ev.id;
	sse_close(&s);

	put_asset(state, "RS-2", "two");
	put_asset(state, "RS-3", "three");
	GWRIG_CHECK(r, gwproc_wait_idle(r->gw, r->lane, WAIT_MS) == 0);

	memset(&a, 0, sizeof a);
	snprintf(hdr, sizeof hdr, "Last-Event-ID: %lld\r\n", (long long)last);
	sse_open(&s, api_port(state), "/v1/events", hdr);
	json_decref(sse_wait(r, &s, "asset.delivered", "objID", "RS-3", NULL,
	    note_id, &a));
	sse_close(&s);
	GWRIG_CHECK(r, a.n >= 8);	/* 2 x (QUEUED RUNNING DONE delivered) */
	for (i = 0; i < a.n; i++) {
		if (a.ids[i] != last + 1 + (int64_t)i)
			fail_msg("event %zu has id %lld, not %lld", i,
			    (long long)a.ids[i], (long long)(last + 1 + i));
	}

	/* ?after= gives the same, with a filter */
	memset(&b, 0, sizeof b);
	snprintf(path, sizeof path, "/v1/events?after=%lld&types=asset."
	    "delivered", (long long)last);
	sse_open(&s, api_port(state), path, NULL);
	o = sse_wait(r, &s, "asset.delivered", "objID", "RS-2", &ev, note_id,
	    &b);
	json_decref(o);
	o = sse_wait(r, &s, "asset.delivered", "objID", "RS-3", NULL, note_id,
	    &b);
	json_decref(o);
	assert_int_equal(b.n, 2);
	sse_close(&s);
}

/* Read events until the first ": caught-up"; their ids into l. */
static void
sse_catch_up(struct gwrig *r, struct sse *s, struct id_log *l)
{
	struct sse_ev	 ev;
	int64_t		 t0 = ncspeer_now_ms();

	while (s->caught_ups == 0 && ncspeer_now_ms() - t0 < WAIT_MS) {
		if (sse_next(s, 200, &ev) == 0 && l != NULL)
			note_id(&ev, l);
	}
	GWRIG_CHECK(r, s->caught_ups == 1);
}

/*
 * ": caught-up ID" comes once, after the backlog, with the newest id;
 * also to a stream starting at the newest event, or past it.
 */
static void
test_sse_caught_up(void **state)
{
	struct gwrig	*r = *state;
	struct sse	 s, s2;
	struct sse_ev	 ev;
	struct id_log	 a;
	int64_t		 ids[512], t0;
	long		 n, i;

	put_asset(state, "CU-1", "one");
	put_asset(state, "CU-2", "two");
	GWRIG_CHECK(r, gwproc_wait_idle(r->gw, r->lane, WAIT_MS) == 0);
	/* the backlog: every event the log holds, then the comment */
	memset(&a, 0, sizeof a);
	sse_open(&s, api_port(state), "/v1/events?after=0", NULL);
	sse_catch_up(r, &s, &a);
	n = itutil_event_ids(r, NULL, 0, ids, 512);
	GWRIG_CHECK(r, n >= 8 && (size_t)n == a.n);
	for (i = 0; i < n; i++)
		assert_int_equal(a.ids[i], ids[i]);
	assert_int_equal(s.caught_after, n);
	assert_int_equal(s.caught_id, ids[n - 1]);

	/* at the newest: at once, no event before it, the same head */
	sse_open(&s2, api_port(state), "/v1/events", NULL);
	sse_catch_up(r, &s2, NULL);
	assert_int_equal(s2.caught_after, 0);
	assert_int_equal(s2.caught_id, ids[n - 1]);
	sse_close(&s2);
	/* past the head (a log that was reset): from the head */
	sse_open(&s2, api_port(state), "/v1/events?after=999999", NULL);
	sse_catch_up(r, &s2, NULL);
	assert_int_equal(s2.caught_after, 0);
	assert_int_equal(s2.caught_id, ids[n - 1]);

	/* what comes later comes without another comment */
	put_asset(state, "CU-3", "three");
	json_decref(sse_wait(r, &s, "asset.delivered", "objID", "CU-3", &ev,
	    NULL, NULL));
	json_decref(sse_wait(r, &s2, "asset.delivered", "objID", "CU-3", NULL,
	    NULL, NULL));
	GWRIG_CHECK(r, ev.id > ids[n - 1]);
	/* a keepalive (every 500 ms) after it: nothing else was pending */
	s.keepalives = 0;
	t0 = ncspeer_now_ms();
	while (s.keepalives == 0 && ncspeer_now_ms() - t0 < WAIT_MS)
		(void)sse_next(&s, 200, &ev);
	GWRIG_CHECK(r, s.keepalives > 0);
	assert_int_equal(s.caught_ups, 1);
	assert_int_equal(s2.caught_ups, 1);
	sse_close(&s);
	sse_close(&s2);
}

/* POST an NDJSON import of n assets SLOW-0 ... as the writer. */
static void
import(void **state, size_t n)
{
	struct httpc_resp	 r;
	char			*body, *text, *p;
	size_t			 i;
	int			 fd, len;

	if ((body = malloc(n * 64 + 1)) == NULL)
		abort();
	for (p = body, i = 0; i < n; i++)
		p += sprintf(p, "{\"objID\":\"SLOW-%zu\",\"objSlug\":\"s\"}\n",
		    i);
	len = asprintf(&text, "POST /v1/assets:import HTTP/1.1\r\n"
	    "Authorization: Bearer " TOK_WRITE "\r\nContent-Type: "
	    "application/x-ndjson\r\nContent-Length: %zu\r\n\r\n%s",
	    strlen(body), body);
	free(body);
	assert_true(len > 0);
	assert_true((fd = httpc_connect(api_port(state))) >= 0);
	assert_int_equal(httpc_write(fd, text, (size_t)len), 0);
	free(text);
	assert_int_equal(httpc_read(fd, &r, WAIT_MS * 2), 0);
	close(fd);
	if (r.status != 200 || strstr(r.body, "\"refused\":[]") == NULL)
		fail_msg("import: %d %s", r.status, r.body);
	httpc_resp_clear(&r);
}

/*
 * A connection that takes little: a small receive buffer, and a small MSS
 * so that the kernel does not give the sender a large send buffer either
 * (on loopback it would hold megabytes).
 */
static int
dial_small(uint16_t port)
{
	struct sockaddr_in	sin;
	int			fd, v;

	if ((fd = socket(AF_INET, SOCK_STREAM, 0)) == -1)
		return -1;
	v = 4096;
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof v);
	v = 536;
	setsockopt(fd, IPPROTO_TCP, TCP_MAXSEG, &v, sizeof v);
	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_port = htons(port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&sin, sizeof sin) == -1) {
		close(fd);
		return -1;
	}
	return fd;
}

struct count_log {
	int64_t	 next;		/* the id expected next */
	size_t	 delivered;
};

static void
note_seq(const struct sse_ev *ev, void *arg)
{
	struct count_log	*l = arg;

	if (ev->id < 0)
		return;
	if (ev->id != l->next)
		fail_msg("event id %lld, expected %lld", (long long)ev->id,
		    (long long)l->next);
	l->next++;
	l->delivered += strcmp(ev->type, "asset.delivered") == 0;
}

/*
 * A client that does not read is disconnected once its backlog passes
 * sse_max_buffer; it comes back with Last-Event-ID and gets everything
 * after it: consecutive ids, every delivery, no gap.
 */
static void
test_sse_slow(void **state)
{
	struct gwrig		*r = *state;
	struct count_log	 l;
	struct sse		 s;
	struct sse_ev		 ev;
	char			 req[512];
	long			 at;
	int			 fd;
	size_t			 n = 3000;

	at = (long)gwproc_log_size(r->gw);
	fd = dial_small(api_port(state));
	assert_true(fd >= 0);
	snprintf(req, sizeof req, "GET /v1/events?after=0 HTTP/1.1\r\n"
	    "Host: 127.0.0.1\r\nAuthorization: Bearer " TOK_READ "\r\n\r\n");
	assert_int_equal(httpc_write(fd, req, strlen(req)), 0);
	GWRIG_CHECK(r, gwproc_log_wait(r->gw, at, WAIT_MS, "event=api.sse",
	    "action=open", (char *)NULL) > 0);
	import(state, n);
	GWRIG_CHECK(r, gwproc_log_wait(r->gw, at, WAIT_MS * 2,
	    "event=api.sse", "action=dropped", (char *)NULL) > 0);
	close(fd);
	GWRIG_CHECK(r, gwproc_wait_idle(r->gw, r->lane, WAIT_MS * 4) == 0);

	/* it read nothing: it resumes from 0 and gets it all */
	memset(&l, 0, sizeof l);
	l.next = 1;
	sse_open(&s, api_port(state), "/v1/events", "Last-Event-ID: 0\r\n");
	while (l.delivered < n) {
		if (sse_next(&s, WAIT_MS, &ev) != 0) {
			gwrig_dump(r, "stream ended", __FILE__, __LINE__);
			fail_msg("after %zu deliveries, no more events",
			    l.delivered);
		}
		if (strcmp(ev.type, "gap") == 0)
			fail_msg("a gap: %s", ev.data);
		note_seq(&ev, &l);
	}
	sse_close(&s);
	assert_int_equal(l.delivered, n);
}

/*
 * The NCS's running-order changes: ro.changed once each is stored. A
 * change made with mosctl on the database (another process) reaches the
 * stream too.
 */
static void
test_sse_ro(void **state)
{
	struct gwrig			*r = *state;
	const struct ncspeer_frame	*f;
	struct sse			 s;
	json_t				*o;
	char				*text;
	int				 c;

	sse_open(&s, api_port(state), "/v1/events?types=ro.changed,"
	    "job.state", NULL);
	c = gwrig_dial(r, NCSPEER_UPPER);
	GWRIG_CHECK(r, c > 0);
	text = itutil_frame_text("mosgw.test", "NCSPEER", 77, "<roCreate>"
	    "<roID>R-EV</roID><roSlug>Six</roSlug><story><storyID>S1"
	    "</storyID></story></roCreate>");
	f = itutil_send_text(r, c, 77, text, WAIT_MS);
	free(text);
	GWRIG_CHECK(r, f != NULL);
	o = sse_wait(r, &s, "ro.changed", "roID", "R-EV", NULL, NULL, NULL);
	assert_string_equal(ev_str(o, "ncs"), "n1");
	assert_string_equal(ev_str(o, "change"), "roCreate");
	json_decref(o);
	GWRIG_CHECK(r, gwproc_asset_put(r->gw, "CTL-1", "by mosctl") == 0);
	o = sse_wait(r, &s, "job.state", "objID", "CTL-1", NULL, NULL, NULL);
	assert_string_equal(ev_str(o, "state"), "QUEUED");
	json_decref(o);
	sse_close(&s);
}

/* The NCS goes away: link.state down, with why; back: up. */
static void
test_sse_link(void **state)
{
	struct gwrig	*r = *state;
	struct sse	 s;
	json_t		*o;

	sse_open(&s, api_port(state), "/v1/events?types=link.state", NULL);
	ncspeer_down(r->ncs, true);
	o = sse_wait(r, &s, "link.state", "state", "down", NULL, NULL, NULL);
	assert_string_equal(ev_str(o, "ncs"), "n1");
	assert_string_equal(ev_str(o, "target"), "primary");
	GWRIG_CHECK(r, strcmp(ev_str(o, "port"), "lower") == 0 ||
	    strcmp(ev_str(o, "port"), "upper") == 0);
	GWRIG_CHECK(r, *ev_str(o, "why") != '\0');
	json_decref(o);
	assert_int_equal(ncspeer_up(r->ncs), 0);
	o = sse_wait(r, &s, "link.state", "state", "up", NULL, NULL, NULL);
	json_decref(o);
	sse_close(&s);
}

/* Tokens, parameters, methods and the number of streams. */
static void
test_sse_bad(void **state)
{
	struct httpc_resp	 r;
	struct sse		 s[3];
	int			 i, st;
	int64_t			 t0;
	uint16_t		 port = api_port(state);

	assert_int_equal(httpc_once(port, "GET", "/v1/events", NULL, NULL,
	    NULL, &r), 0);
	assert_int_equal(r.status, 401);
	httpc_resp_clear(&r);
	assert_int_equal(httpc_once(port, "GET", "/v1/events",
	    "read-token-0123456780", NULL, NULL, &r), 0);
	assert_int_equal(r.status, 401);
	httpc_resp_clear(&r);
	assert_int_equal(httpc_once(port, "POST", "/v1/events", TOK_WRITE,
	    NULL, "{}", &r), 0);
	assert_int_equal(r.status, 405);
	httpc_resp_clear(&r);
	assert_int_equal(httpc_once(port, "GET", "/v1/events?types=asset.x",
	    TOK_READ, NULL, NULL, &r), 0);
	assert_int_equal(r.status, 422);
	assert_non_null(strstr(r.body, "asset.x"));
	assert_non_null(strstr(r.body, "\"field\":\"types\""));
	httpc_resp_clear(&r);
	assert_int_equal(httpc_once(port, "GET", "/v1/events?after=-3",
	    TOK_READ, NULL, NULL, &r), 0);
	assert_int_equal(r.status, 422);
	httpc_resp_clear(&r);
	assert_int_equal(httpc_once(port, "GET", "/v1/events", TOK_READ,
	    "Last-Event-ID: 12x\r\n", NULL, &r), 0);
	assert_int_equal(r.status, 422);
	assert_non_null(strstr(r.body, "Last-Event-ID"));
	httpc_resp_clear(&r);

	/* sse_max_clients = 3: a fourth stream is refused */
	for (i = 0; i < 3; i++)
		sse_open(&s[i], port, "/v1/events", NULL);
	assert_int_equal(httpc_once(port, "GET", "/v1/events", TOK_READ, NULL,
	    NULL, &r), 0);
	assert_int_equal(r.status, 503);
	assert_non_null(strstr(r.body, "sse_max_clients"));
	httpc_resp_clear(&r);
	/* a closed stream frees its place (seen at the latest keepalive) */
	sse_close(&s[0]);
	t0 = ncspeer_now_ms();
	while ((st = sse_try(&s[0], port, "/v1/events", NULL)) == 503 &&
	    ncspeer_now_ms() - t0 < WAIT_MS) {
		sse_close(&s[0]);
		usleep(100000);
	}
	assert_int_equal(st, 200);
	for (i = 0; i < 3; i++)
		sse_close(&s[i]);
}

/*
 * A webhook whose receiver fails the first two POSTs: the third is
 * accepted, the job is DONE, nothing more is posted; every POST carries
 * the same event and a valid signature; the webhook's own job.state
 * events make no new webhook jobs.
 */
static void
test_webhook(void **state)
{
	struct gwrig	*r = *state;
	struct hook_req	*q;
	json_t		*o;
	char		 want[160];
	int64_t		 t0;
	int		 i;

	put_asset(state, "WH-1", "hooked");
	GWRIG_CHECK(r, gwproc_wait_jobs(r->gw, "webhook:rx", QUEUE_DONE, 1,
	    WAIT_MS) == 1);
	GWRIG_CHECK(r, hookrx_count(&hook) == 3);
	/* nothing more comes (the receiver's answers are events too) */
	t0 = ncspeer_now_ms();
	while (ncspeer_now_ms() - t0 < 1500)
		usleep(100000);
	GWRIG_CHECK(r, hookrx_count(&hook) == 3);
	GWRIG_CHECK(r, gwproc_job_count(r->gw, "webhook:rx", -1) == 1);
	for (i = 0; i < 3; i++) {
		q = &hook.req[i];
		assert_int_equal(q->status, i < 2 ? 500 : 200);
		assert_string_equal(q->ctype, "application/json");
		hookrx_expect(SECRET, q->ts, q->body, want, sizeof want);
		if (strcmp(q->sig, want) != 0)
			fail_msg("POST %d: signature %s, expected %s", i,
			    q->sig, want);
		o = json_loads(q->body, 0, NULL);
		assert_non_null(o);
		assert_string_equal(ev_str(o, "type"), "asset.delivered");
		assert_string_equal(ev_str(json_object_get(o, "data"),
		    "objID"), "WH-1");
		assert_int_equal(json_integer_value(json_object_get(o, "id")),
		    strtoll(q->id, NULL, 10));
		assert_string_equal(q->id, hook.req[0].id);
		json_decref(o);
	}
	/* a tampered body does not verify */
	hookrx_expect(SECRET, hook.req[2].ts, "{\"id\":0}", want, sizeof want);
	assert_string_not_equal(hook.req[2].sig, want);
	GWRIG_CHECK(r, gwproc_log_count(r->gw, 0, "event=webhook.retry",
	    "status=500", (char *)NULL) == 2);
}

static int
setup_reload(void **state)
{
	hookrx_start(&hook, NULL, 0, NULL, NULL);
	if (setup_common(state, NULL, NULL) != 0) {
		hookrx_stop(&hook);
		return -1;
	}
	return 0;
}

/*
 * SIGHUP adds a webhook: it gets the events after the reload, not the
 * earlier ones; a bad webhook section is refused and the running one
 * stays; removing it stops the posts.
 */
static void
test_webhook_reload(void **state)
{
	struct gwrig	*r = *state;
	long		 mark;
	json_t		*o;
	int64_t		 t0;

	put_asset(state, "HUP-0", "before");
	GWRIG_CHECK(r, gwproc_wait_idle(r->gw, r->lane, WAIT_MS) == 0);
	snprintf(hook_sections, sizeof hook_sections, "[webhook.rx]\n"
	    "url = http://127.0.0.1:%u/\nevents = asset.delivered\n"
	    "secret = " SECRET "\n", hook.port);
	r->gw->opts.sections_extra = hook_sections;
	GWRIG_CHECK(r, gwproc_write_config(r->gw) == 0);
	mark = (long)gwproc_log_size(r->gw);
	GWRIG_CHECK(r, gwproc_signal(r->gw, SIGHUP) == 0);
	GWRIG_CHECK(r, gwproc_log_wait(r->gw, mark, WAIT_MS,
	    "event=config.reload", "result=applied", (char *)NULL) != -1);
	put_asset(state, "HUP-1", "after");
	GWRIG_CHECK(r, gwproc_wait_jobs(r->gw, "webhook:rx", QUEUE_DONE, 1,
	    WAIT_MS) == 1);
	GWRIG_CHECK(r, hookrx_count(&hook) == 1);
	o = json_loads(hook.req[0].body, 0, NULL);
	assert_non_null(o);
	assert_string_equal(ev_str(json_object_get(o, "data"), "objID"),
	    "HUP-1");
	json_decref(o);

	/* a bad section: refused, the webhook goes on */
	r->gw->opts.sections_extra = "[webhook.rx]\nurl = ftp://x/\n"
	    "events = *\nsecret = s\n";
	GWRIG_CHECK(r, gwproc_write_config(r->gw) == 0);
	mark = (long)gwproc_log_size(r->gw);
	GWRIG_CHECK(r, gwproc_signal(r->gw, SIGHUP) == 0);
	GWRIG_CHECK(r, gwproc_log_wait(r->gw, mark, WAIT_MS,
	    "event=config.reload", "result=rejected", (char *)NULL) != -1);
	put_asset(state, "HUP-2", "still");
	GWRIG_CHECK(r, gwproc_wait_jobs(r->gw, "webhook:rx", QUEUE_DONE, 2,
	    WAIT_MS) == 2);

	/* removed: no more jobs for it */
	r->gw->opts.sections_extra = NULL;
	GWRIG_CHECK(r, gwproc_write_config(r->gw) == 0);
	mark = (long)gwproc_log_size(r->gw);
	GWRIG_CHECK(r, gwproc_signal(r->gw, SIGHUP) == 0);
	GWRIG_CHECK(r, gwproc_log_wait(r->gw, mark, WAIT_MS,
	    "event=webhook.config", "action=retired", (char *)NULL) != -1);
	put_asset(state, "HUP-3", "gone");
	GWRIG_CHECK(r, gwproc_wait_idle(r->gw, r->lane, WAIT_MS) == 0);
	t0 = ncspeer_now_ms();
	while (ncspeer_now_ms() - t0 < 1000)
		usleep(100000);
	GWRIG_CHECK(r, gwproc_job_count(r->gw, "webhook:rx", -1) == 2);
	GWRIG_CHECK(r, hookrx_count(&hook) == 2);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_sse_assets, setup_short,
		    itutil_teardown),
		cmocka_unit_test_setup_teardown(test_sse_resume, setup,
		    itutil_teardown),
		cmocka_unit_test_setup_teardown(test_sse_caught_up, setup,
		    itutil_teardown),
		cmocka_unit_test_setup_teardown(test_sse_link, setup,
		    itutil_teardown),
		cmocka_unit_test_setup_teardown(test_sse_ro, setup,
		    itutil_teardown),
		cmocka_unit_test_setup_teardown(test_sse_bad, setup,
		    itutil_teardown),
		cmocka_unit_test_setup_teardown(test_sse_slow, setup_slow,
		    itutil_teardown),
		cmocka_unit_test_setup_teardown(test_webhook, setup_hook,
		    teardown_hook),
		cmocka_unit_test_setup_teardown(test_webhook_reload,
		    setup_reload, teardown_hook),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
