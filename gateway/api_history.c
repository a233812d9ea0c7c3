/*
 * /v1/history: the frames recorded by history.c, as a JSON page with a
 * cursor, or (Accept: application/vnd.mosgw.capture+jsonl, or
 * ?format=capture) as a capture download in the JSON Lines format that
 * `mosctl history export` writes and `mosreplay play` reads. A download is
 * streamed: one page of rows is read on the bookkeeping thread and turned
 * into capture lines there, sent as a chunk, and the next page is read only
 * once the client has taken most of it.
 */
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/http.h>
#include <jansson.h>

#include "gateway/gateway.h"

#define HISTORY_CTYPE_CAPTURE	"application/vnd.mosgw.capture+jsonl"
#define HISTORY_PAGE_DEFAULT	100
#define HISTORY_PAGE_MAX	1000
#define HISTORY_CHUNK_ROWS	500	/* rows per chunk of a download */

struct history_task {
	struct api_req		*r;
	struct history_filter	 f;
	char			*ncs;
	char			*type;
	bool			 capture;
	int64_t			 left;		/* capture: rows still wanted */
	struct history_rec	*v;		/* json: the page */
	size_t			 n;
	struct sbuf		 lines;		/* capture: this chunk */
	size_t			 sent;		/* capture: rows so far */
};

static void
history_task_free(struct history_task *t)
{
	history_recs_free(t->v, t->n);
	sbuf_free(&t->lines);
	free(t->ncs);
	free(t->type);
	free(t);
}

/* Is s 1..max of the characters in set? */
static bool
history_word(const char *s, size_t max, const char *set)
{
	size_t	n = strlen(s);

	return n > 0 && n <= max && strspn(s, set) == n;
}

#define HISTORY_NAME_SET	"abcdefghijklmnopqrstuvwxyz" \
				"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-"

/* Parse and check the query; false once a 422 is sent. */
static bool
history_params(struct api_req *r, struct history_task *t)
{
	static const char *const known[] = { "ncs", "since", "until", "type",
	    "limit", "after", "format", "order", NULL };
	const char	*v, *acc;
	char		*e;
	long long	 n;

	if (!api_query_known(r, known))
		return false;
	if ((v = api_query(r, "ncs")) != NULL) {
		if (!history_word(v, 63, HISTORY_NAME_SET)) {
			api_problem(r, 422, "invalid-parameter", "Invalid "
			    "parameter", "ncs", "ncs must be an NCS name (1 to "
			    "63 of A-Z a-z 0-9 _ . -)");
			return false;
		}
		t->f.ncs = t->ncs = xstrdup(v);
	}
	if ((v = api_query(r, "type")) != NULL) {
		if (!history_word(v, 64, HISTORY_NAME_SET)) {
			api_problem(r, 422, "invalid-parameter", "Invalid "
			    "parameter", "type", "type must be a message "
			    "element such as mosObj or heartbeat");
			return false;
		}
		t->f.type = t->type = xstrdup(v);
	}
	if ((v = api_query(r, "since")) != NULL &&
	    util_parse_iso_ms(v, &t->f.since_ms) != 0) {
		api_problem(r, 422, "invalid-parameter", "Invalid parameter",
		    "since", "since must be ISO 8601 UTC (2026-11-29T10:00:00Z) "
		    "or ms since 1970");
		return false;
	}
	if ((v = api_query(r, "until")) != NULL &&
	    util_parse_iso_ms(v, &t->f.until_ms) != 0) {
		api_problem(r, 422, "invalid-parameter", "Invalid parameter",
		    "until", "until must be ISO 8601 UTC (2026-11-29T10:00:00Z) "
		    "or ms since 1970");
		return false;
	}
	if (t->f.since_ms != 0 && t->f.until_ms != 0 &&
	    t->f.until_ms <= t->f.since_ms) {
		api_problem(r, 422, "invalid-parameter", "Invalid parameter",
		    "until", "until must be later than since");
		return false;
	}
	if ((v = api_query(r, "after")) != NULL) {
		n = strtoll(v, &e, 10);
		if (*v < '0' || *v > '9' || *e != '\0' || n <= 0) {
			api_problem(r, 422, "invalid-parameter", "Invalid "
			    "parameter", "after", "after must be a message id "
			    "(a positive integer, the next of a page)");
			return false;
		}
		t->f.after_id = n;
	}
	if ((v = api_query(r, "format")) != NULL) {
		if (strcmp(v, "capture") != 0 && strcmp(v, "json") != 0) {
			api_problem(r, 422, "invalid-parameter", "Invalid "
			    "parameter", "format", "format must be json or "
			    "capture");
			return false;
		}
		t->capture = strcmp(v, "capture") == 0;
	} else if ((acc = evhttp_find_header(evhttp_request_get_input_headers(
	    r->req), "Accept")) != NULL && strstr(acc, HISTORY_CTYPE_CAPTURE) !=
	    NULL)
		t->capture = true;
	if ((v = api_query(r, "order")) != NULL) {
		if ((strcmp(v, "oldest") != 0 && strcmp(v, "newest") != 0) ||
		    (t->capture && strcmp(v, "newest") == 0)) {
			api_problem(r, 422, "invalid-parameter", "Invalid "
			    "parameter", "order", "order must be oldest or "
			    "newest (a capture is always oldest first)");
			return false;
		}
		t->f.newest_first = strcmp(v, "newest") == 0;
	}
	t->f.limit = HISTORY_PAGE_DEFAULT;
	if ((v = api_query(r, "limit")) != NULL) {
		n = strtoll(v, &e, 10);
		if (*v < '0' || *v > '9' || *e != '\0' || n < 1 ||
		    (!t->capture && n > HISTORY_PAGE_MAX)) {
			api_problem(r, 422, "invalid-parameter", "Invalid "
			    "parameter", "limit", "limit must be 1 to %d%s",
			    HISTORY_PAGE_MAX, t->capture ? "" : " (a capture "
			    "download has no upper limit)");
			return false;
		}
		t->f.limit = (int)n;
		t->left = n;
	} else if (t->capture)
		t->left = -1;		/* everything */
	return true;
}

/* On the bookkeeping thread: one page (json) or chunk (capture). */
static int
history_page_run(struct gwdb *g, void *arg)
{
	struct history_task	*t = arg;
	size_t			 i;
	int			 rc;

	history_recs_free(t->v, t->n);
	t->v = NULL;
	t->n = 0;
	if (t->capture)
		t->f.limit = t->left >= 0 && t->left < HISTORY_CHUNK_ROWS ?
		    (int)t->left : HISTORY_CHUNK_ROWS;
	rc = history_list(g, &t->f, &t->v, &t->n);
	if (rc != QUEUE_OK || !t->capture)
		return rc;
	t->lines.len = 0;
	for (i = 0; i < t->n; i++) {
		history_capture_line(&t->lines, &t->v[i]);
		sbuf_puts(&t->lines, "\n");
	}
	if (t->n > 0)
		t->f.after_id = t->v[t->n - 1].id;
	return QUEUE_OK;
}

static void	history_chunk_done(void *, int);

/* The client took the last chunk (or went away). */
static void
history_more(void *arg, bool gone)
{
	struct history_task	*t = arg;

	if (gone || t->n < (size_t)t->f.limit || t->left == 0) {
		if (gone)
			log_event(LL_INFO, "api.history", "msg=%s rows=%zu",
			    log_q("client gone during a capture download"),
			    t->sent);
		api_stream_end(t->r);
		history_task_free(t);
		return;
	}
	dbw_submit(api_gw(t->r)->dbw, history_page_run, history_chunk_done, t);
}

/* A chunk of capture lines is ready: send it. */
static void
history_chunk_done(void *arg, int rc)
{
	struct history_task	*t = arg;
	struct evbuffer		*b;

	if (rc != QUEUE_OK) {
		/* the status is sent: all a client can see is the cut */
		log_event(LL_ERROR, "api.history", "msg=%s rc=%s rows=%zu",
		    log_q("capture download cut short by a database error"),
		    queue_strerror(rc), t->sent);
		api_stream_end(t->r);
		history_task_free(t);
		return;
	}
	if ((b = evbuffer_new()) == NULL)
		fatalx("evbuffer_new failed");
	evbuffer_add(b, t->lines.s, t->lines.len);
	t->sent += t->n;
	if (t->left > 0)
		t->left -= (int64_t)t->n;
	api_stream_write(t->r, b, history_more, t);
	evbuffer_free(b);
}

/* The first chunk: answer errors as problems, else start the stream. */
static void
history_first_done(void *arg, int rc)
{
	struct history_task	*t = arg;

	if (rc != QUEUE_OK) {
		api_problem_db(t->r, rc, NULL);
		history_task_free(t);
		return;
	}
	api_stream_start(t->r, HISTORY_CTYPE_CAPTURE);
	history_chunk_done(t, rc);
}

/* A JSON page is ready. */
static void
history_list_done(void *arg, int rc)
{
	struct history_task	*t = arg;
	struct history_rec	*h;
	json_t			*a, *o;
	char			 ts[32];
	size_t			 i;

	if (rc != QUEUE_OK) {
		api_problem_db(t->r, rc, NULL);
		history_task_free(t);
		return;
	}
	a = json_array();
	for (i = 0; i < t->n; i++) {
		h = &t->v[i];
		util_iso_ms(h->t_ms, ts, sizeof ts);
		o = json_pack("{s:I, s:s, s:s, s:s, s:s, s:I, s:s, s:s?, s:s}",
		    "id", (json_int_t)h->id, "t", ts, "ncs", h->ncs, "port",
		    gw_port_name(h->port), "dir", h->dir == HISTORY_IN ? "in" :
		    "out", "conn", (json_int_t)h->conn, "type", h->type,
		    "outcome", h->outcome, "xml", h->xml);
		if (o == NULL)
			fatalx("json_pack failed");
		if (h->message_id != 0)
			json_object_set_new(o, "messageID",
			    json_integer(h->message_id));
		json_array_append_new(a, o);
	}
	o = json_pack("{s:o}", "messages", a);
	json_object_set_new(o, "next", t->n == (size_t)t->f.limit && t->n > 0 ?
	    json_integer(t->v[t->n - 1].id) : json_null());
	api_reply_json(t->r, 200, o);
	history_task_free(t);
}

/* GET /v1/history */
void
api_history(struct api_req *r)
{
	struct history_task	*t;

	t = xcalloc(1, sizeof *t);
	t->r = r;
	if (!history_params(r, t)) {
		history_task_free(t);
		return;
	}
	dbw_submit(api_gw(r)->dbw, history_page_run, t->capture ?
	    history_first_done : history_list_done, t);
}
