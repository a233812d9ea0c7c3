/*
 * /v1/assets: the MAM publishing changes. The body of a PUT is the body of
 * a mosObj in the JSON schema of `mosmsg` (mosxml/json.c reads it, so the
 * field names, types and error places are the codec's), less what mosgw
 * owns: objID (from the path), objRev, status, created, changed. The
 * catalog change and its delivery jobs commit in one durable transaction
 * on the bookkeeping thread, which also claims the deliveries for the
 * publishers and builds their mosObj; the reply is sent from its done
 * callback, when the mosObj joins the publishers' windows.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <jansson.h>

#include "gateway/gateway.h"
#include "mosxml/mosjson.h"
#include "mosxml/schema.h"

#define ASSET_LIST_MAX		1000
#define ASSET_LIST_DEFAULT	100
#define ASSET_Q_MAX		1000	/* bytes of a search (q=) */
#define IMPORT_TX_MAX		2000	/* assets per import transaction */
#define IMPORT_TX_MIN		50
#define IMPORT_TX_FIRST		100
#define IMPORT_TX_US		25000	/* the aim for one transaction */

static const char *const owned_keys[] = { "objID", "objRev", "status",
    "created", "changed" };

/* What a task on the bookkeeping thread needs and gives back. */
struct asset_task {
	struct api_req		*r;
	struct gw		*gw;
	struct catalog_asset	 a;		/* put: the asset */
	char			*obj_id;
	char			*by;
	int			 if_match;	/* -1 = none */
	int			 cur_rev;	/* the row's, for a 412 */
	char			*err;
	json_t			*out;		/* the answer's body */
	char			*after;		/* list */
	size_t			 limit;
	char			*q;		/* list: a search */
	int64_t			 offset;	/* of the search's page */
	struct pub_work_list	 claims;	/* put, delete: its mosObj */
};

static void
asset_task_free(struct asset_task *t)
{
	catalog_asset_clear(&t->a);
	free(t->obj_id);
	free(t->by);
	free(t->err);
	free(t->after);
	free(t->q);
	if (t->out != NULL)
		json_decref(t->out);
	publisher_offer(t->gw, &t->claims, false);
	free(t);
}

/* A statement per NCS about one object (?1); finalize it. A queue_rc. */
static int
asset_stmt(struct gwdb *g, const char *sql, const char *obj_id,
    struct store_stmt **st)
{
	int	rc;

	if ((rc = store_prepare(g->db, sql, 0, st)) != STORE_OK)
		return gwdb_rc(rc);
	store_bind_text(*st, 1, obj_id, -1);
	return QUEUE_OK;
}

/* New publish jobs of an object just put (inside the transaction). */
static int
asset_jobs(struct gwdb *g, const char *obj_id, json_t *jobs)
{
	struct store_stmt	*st = gwdb_stmt(g, ST_ASSET_JOBS);
	const char	*lane;
	int		 rc;

	store_bind_text(st, 1, obj_id, -1);
	while ((rc = store_step(st)) == STORE_ROW) {
		lane = store_column_text(st, 1);
		if (strncmp(lane, CATALOG_LANE_PREFIX,
		    strlen(CATALOG_LANE_PREFIX)) == 0)
			lane += strlen(CATALOG_LANE_PREFIX);
		json_array_append_new(jobs, json_pack("{s:I, s:s, s:s}",
		    "jobId", (json_int_t)store_column_int64(st, 0), "ncs",
		    lane, "status", "QUEUED"));
	}
	store_reset(st);
	return rc == STORE_DONE ? QUEUE_OK : gwdb_rc(rc);
}

/* A failure that undoes the whole transaction (not one change's). */
static bool
asset_db_failed(int rc)
{
	return rc == QUEUE_EBUSY || rc == QUEUE_EFULL || rc == QUEUE_EIO;
}

/*
 * Inside the caller's transaction: put a (a->obj_id NULL: delete obj_id,
 * by whom) if the asset's objRev is if_match (-1: any), and list its new
 * delivery jobs. *cur_rev gets the objRev it had (0: none or deleted);
 * QUEUE_ESTATE when it is not if_match. *out: {"objID","objRev","jobs"}.
 */
int
api_asset_apply(struct gwdb *g, const char *obj_id,
    const struct catalog_asset *a, const char *by, int if_match,
    int *cur_rev, struct json_t **out, char **err)
{
	struct catalog_asset	 cur;
	json_t			*jobs;
	int			 rc, rev;

	*cur_rev = 0;
	rc = catalog_get(g, obj_id, &cur);
	if (rc == QUEUE_OK) {
		*cur_rev = cur.deleted ? 0 : cur.rev;
		catalog_asset_clear(&cur);
	} else if (rc != QUEUE_ENOTFOUND)
		return rc;
	if (if_match >= 0 && if_match != *cur_rev)
		return QUEUE_ESTATE;
	if (a->obj_id != NULL)
		rc = catalog_store(g, a, &rev, NULL, err);
	else
		rc = catalog_delete(g, obj_id, by, &rev, NULL, err);
	if (rc != QUEUE_OK)
		return rc;
	jobs = json_array();
	if ((rc = asset_jobs(g, obj_id, jobs)) != QUEUE_OK) {
		json_decref(jobs);
		return rc;
	}
	*out = json_pack("{s:s, s:i, s:o}", "objID", obj_id, "objRev", rev,
	    "jobs", jobs);
	return QUEUE_OK;
}

/*
 * One put or delete, with If-Match, in a savepoint of the batch's
 * transaction: a change refused (412, 404, 422) is undone alone.
 */
static int
asset_change_one(struct gwdb *g, struct asset_task *t)
{
	int			 rc;

	if ((rc = queue_tx_begin(g->q)) != QUEUE_OK)
		return rc;
	rc = api_asset_apply(g, t->obj_id, &t->a, t->by, t->if_match,
	    &t->cur_rev, &t->out, &t->err);
	if (rc == QUEUE_OK)
		rc = queue_tx_commit(g->q);
	else
		queue_tx_rollback(g->q);
	return rc;
}

/*
 * The deliveries of the changes that were stored are claimed for the
 * publishers in the same transaction (a savepoint of its own: if the claim
 * fails, the changes still commit and a flush claims their jobs later),
 * one claim per NCS made by the first change stored: its answer comes
 * first, and the others' right after it in the same turn of the loop.
 */
static void
asset_claim(struct gwdb *g, void **args, const int *rcs, size_t n)
{
	struct asset_task	*t, *first = NULL;
	size_t			 i;
	int			 rc;

	for (i = 0; i < n; i++) {
		t = args[i];
		if (rcs[i] != QUEUE_OK)
			continue;
		if (first == NULL)
			first = t;
		else
			publisher_claims_merge(&first->claims, &t->claims);
	}
	if (first == NULL || queue_tx_begin(g->q) != QUEUE_OK)
		return;
	for (i = 0, rc = QUEUE_OK; i < n && rc == QUEUE_OK; i++) {
		t = args[i];
		if (rcs[i] == QUEUE_OK)
			rc = publisher_claims_run(g, &t->claims);
	}
	if (rc == QUEUE_OK)
		rc = queue_tx_commit(g->q);
	else
		queue_tx_rollback(g->q);
	for (i = 0; rc != QUEUE_OK && i < n; i++) {
		t = args[i];
		publisher_claims_undo(&t->claims);
	}
}

/*
 * Group commit: the puts and deletes queued together share one durable
 * transaction (one fsync), each in its own savepoint; every answer waits
 * for the commit.
 */
static void
asset_change_batch(struct gwdb *g, void **args, int *rcs, size_t n)
{
	struct asset_task	*t;
	size_t			 i;
	int			 rc;

	if ((rc = gwdb_durable(g, true)) == QUEUE_OK &&
	    (rc = queue_tx_begin(g->q)) == QUEUE_OK) {
		for (i = 0; i < n && !asset_db_failed(rc); i++)
			rc = rcs[i] = asset_change_one(g, args[i]);
		if (!asset_db_failed(rc))
			asset_claim(g, args, rcs, n);
		if (asset_db_failed(rc))
			queue_tx_rollback(g->q);
		else
			rc = queue_tx_commit(g->q);
	}
	gwdb_durable(g, false);
	if (rc == QUEUE_OK || !asset_db_failed(rc))
		return;
	/* nothing of it was stored */
	for (i = 0; i < n; i++) {
		t = args[i];
		if (t->out != NULL)
			json_decref(t->out);
		t->out = NULL;
		rcs[i] = rc;
		if (t->err == NULL)
			t->err = xstrdup(gwdb_errmsg(g));
	}
}

/* New deliveries are queued: the publishers claim them now. */
void
api_asset_wake(struct gw *gw)
{
	struct ncs	*n;

	for (n = TAILQ_FIRST(&gw->ncs); n != NULL; n = TAILQ_NEXT(n, entry))
		publisher_pump(n->pub);
	gw_flush_now(gw);
}

/* Back on the loop: answer, wake the publishers. */
static void
asset_change_done(void *arg, int rc)
{
	struct asset_task	*t = arg;

	if (rc == QUEUE_OK) {
		/* a flush claims what the change's own claims did not */
		if (!publisher_offer(t->gw, &t->claims, true))
			api_asset_wake(t->gw);
		api_reply_json(t->r, 202, t->out);
		t->out = NULL;
	} else if (rc == QUEUE_ESTATE)
		api_problem(t->r, 412, "precondition-failed", "objRev "
		    "mismatch", "If-Match", "the asset's objRev is %d, not %d",
		    t->cur_rev, t->if_match);
	else if (rc == QUEUE_ENOTFOUND)
		api_problem(t->r, 404, "not-found", "No such asset", "objID",
		    "no asset '%s' (or already deleted)", t->obj_id);
	else if (rc == QUEUE_EINVAL)
		api_problem(t->r, 422, "invalid-asset", "Invalid asset", NULL,
		    "%s", t->err != NULL ? t->err : "invalid");
	else
		api_problem_db(t->r, rc, t->err);
	asset_task_free(t);
}

/* If-Match: "N" or N; -1 when absent; -2 when not a number. */
static int
asset_if_match(struct api_req *r)
{
	const char	*h;
	char		*e;
	long		 v;

	h = evhttp_find_header(evhttp_request_get_input_headers(r->req),
	    "If-Match");
	if (h == NULL)
		return -1;
	if (*h == '"')
		h++;
	v = strtol(h, &e, 10);
	if (e == h || (*e != '\0' && strcmp(e, "\"") != 0) || v < 0 ||
	    v > CATALOG_REV_MAX)
		return -2;
	return (int)v;
}

/* A copy of s, or NULL. */
static char *
asset_dup(const char *s)
{
	return s != NULL ? xstrdup(s) : NULL;
}

/* The mosObj body read by the codec, as a catalog asset. */
static void
asset_from_obj(struct catalog_asset *a, const struct mos_obj *o,
    const char *who)
{
	const struct mos_obj_paths	*p = o->obj_paths;
	char				 tb[64];
	size_t				 i;

	memset(a, 0, sizeof *a);
	a->obj_id = xstrdup(o->obj_id);
	a->slug = asset_dup(o->obj_slug);
	a->type = xstrdup(o->obj_type != NULL ? o->obj_type : "VIDEO");
	if (o->obj_tb.set) {
		mos_dec_format(&o->obj_tb, tb, sizeof tb);
		a->tb = xstrdup(tb);
	} else
		a->tb = xstrdup("50");
	a->dur = o->has_obj_dur ? o->obj_dur : 0;
	a->air = xstrdup(o->obj_air != NULL ? o->obj_air : "READY");
	a->abstract = asset_dup(o->mos_abstract);
	a->description = asset_dup(o->description);
	a->group = asset_dup(o->obj_group);
	a->changed_by = xstrdup(o->changed_by != NULL ? o->changed_by : who);
	a->created_by = xstrdup(o->created_by != NULL ? o->created_by :
	    a->changed_by);
	for (i = 0; p != NULL && i < p->obj_path.n; i++)
		catalog_add_path(a, CATALOG_PATH,
		    p->obj_path.v[i].tech_description, p->obj_path.v[i].url);
	for (i = 0; p != NULL && i < p->obj_proxy_path.n; i++)
		catalog_add_path(a, CATALOG_PROXY,
		    p->obj_proxy_path.v[i].tech_description,
		    p->obj_proxy_path.v[i].url);
	for (i = 0; p != NULL && i < p->obj_metadata_path.n; i++)
		catalog_add_path(a, CATALOG_METADATA,
		    p->obj_metadata_path.v[i].tech_description,
		    p->obj_metadata_path.v[i].url);
	for (i = 0; i < o->ext_meta.n; i++)
		catalog_add_meta(a, o->ext_meta.v[i].mos_scope,
		    o->ext_meta.v[i].mos_schema, o->ext_meta.v[i].mos_payload);
}

/*
 * The field a codec error is about: "body/objPaths/objPath[0]: ..." gives
 * "objPaths/objPath[0]", 'body: unknown key "x"' gives "x"; else "".
 */
static void
asset_field(const char *err, char *field, size_t len)
{
	const char	*p, *q;

	*field = '\0';
	if (strncmp(err, "body/", 5) == 0 && (p = strchr(err, ':')) != NULL)
		snprintf(field, len, "%.*s", (int)(p - err - 5), err + 5);
	else if (strncmp(err, "body: unknown key \"", 19) == 0 &&
	    (q = strchr(err + 19, '"')) != NULL)
		snprintf(field, len, "%.*s", (int)(q - err - 19), err + 19);
}

/*
 * A body (the fields of a PUT) as a catalog asset: 0, or -1 with *detail
 * (malloc'd) and the field it is about in field ("" if none).
 */
int
api_asset_read(struct json_t *body, const char *obj_id, const char *who,
    struct catalog_asset *a, char *field, size_t flen, char **detail)
{
	struct mos_msg	*m;
	json_t		*wrap, *id;
	char		 errbuf[256];
	size_t		 i;

	*field = '\0';
	for (i = 0; i < nitems(owned_keys); i++) {
		if (json_object_get(body, owned_keys[i]) != NULL) {
			snprintf(field, flen, "%s", owned_keys[i]);
			xasprintf(detail, "%s is set by mosgw and may not be "
			    "in the body", owned_keys[i]);
			return -1;
		}
	}
	if (!json_is_string(json_object_get(body, "objSlug"))) {
		snprintf(field, flen, "objSlug");
		xasprintf(detail, "objSlug (a string) is required");
		return -1;
	}
	if ((id = json_string(obj_id)) == NULL) {
		snprintf(field, flen, "objID");
		xasprintf(detail, "objID is not valid UTF-8");
		return -1;
	}
	json_object_set_new(body, "objID", id);
	wrap = json_pack("{s:s, s:O}", "type", "mosObj", "body", body);
	m = mos_msg_from_json_value(wrap, errbuf, sizeof errbuf);
	json_decref(wrap);
	json_object_del(body, "objID");
	if (m == NULL) {
		asset_field(errbuf, field, flen);
		*detail = xstrdup(errbuf);
		return -1;
	}
	asset_from_obj(a, &m->u.mos_obj, who);
	mos_msg_free(m);
	if (catalog_validate(a, detail) != QUEUE_OK) {
		catalog_asset_clear(a);
		return -1;
	}
	return 0;
}

/* A PUT body as a catalog asset: 0, or -1 once a 422 has been sent. */
static int
asset_parse(struct api_req *r, json_t *body, const char *obj_id,
    struct catalog_asset *a)
{
	char	 field[128], *detail = NULL;

	if (api_asset_read(body, obj_id, r->who, a, field, sizeof field,
	    &detail) == 0)
		return 0;
	api_problem(r, 422, "invalid-asset", "Invalid asset",
	    *field != '\0' ? field : NULL, "%s", detail);
	free(detail);
	return -1;
}

/* Check the objID of the path. */
static bool
asset_id_ok(struct api_req *r)
{
	size_t	len = strlen(r->param[0]);

	if (len <= 128)
		return true;
	api_problem(r, 422, "invalid-asset", "Invalid asset", "objID",
	    "objID is %zu bytes, at most 128", len);
	return false;
}

/* A change task with If-Match read; NULL once a 4xx has been sent. */
static struct asset_task *
asset_task_new(struct api_req *r)
{
	struct asset_task	*t;
	int			 im;

	if (!asset_id_ok(r))
		return NULL;
	if ((im = asset_if_match(r)) == -2) {
		api_problem(r, 400, "bad-request", "Malformed request",
		    "If-Match", "If-Match must be the objRev, e.g. \"3\"");
		return NULL;
	}
	t = xcalloc(1, sizeof *t);
	t->r = r;
	t->gw = api_gw(r);
	t->if_match = im;
	t->obj_id = xstrdup(r->param[0]);
	t->by = xstrdup(r->who);
	return t;
}

/* PUT /v1/assets/{objID} */
void
api_asset_put(struct api_req *r)
{
	struct asset_task	*t;
	json_t			*body;

	if ((t = asset_task_new(r)) == NULL)
		return;
	if ((body = api_body_json(r)) == NULL) {
		asset_task_free(t);
		return;
	}
	if (asset_parse(r, body, t->obj_id, &t->a) != 0) {
		json_decref(body);
		asset_task_free(t);
		return;
	}
	json_decref(body);
	publisher_tickets(t->gw, 1, &t->claims);
	dbw_submit_batch(t->gw->dbw, asset_change_batch, asset_change_done, t);
}

/* DELETE /v1/assets/{objID} */
void
api_asset_delete(struct api_req *r)
{
	struct asset_task	*t;

	if ((t = asset_task_new(r)) == NULL)
		return;
	publisher_tickets(t->gw, 1, &t->claims);
	dbw_submit_batch(t->gw->dbw, asset_change_batch, asset_change_done, t);
}

/* An asset as JSON: the mosObj body of the codec, deleted flag added. */
static json_t *
asset_json(const struct catalog_asset *a)
{
	struct mos_msg	*m;
	json_t		*o, *body;
	char		*s, *err = NULL;

	if ((m = catalog_mos_obj(a, a->status, &err)) == NULL) {
		/* A stored row that makes no mosObj: say why. */
		o = json_pack("{s:s,s:s}", "objID", a->obj_id, "error",
		    err != NULL ? err : "out of memory");
		free(err);
		return o;
	}
	s = mos_msg_to_json(m);
	mos_msg_free(m);
	o = s != NULL ? json_loads(s, 0, NULL) : NULL;
	free(s);
	if (o == NULL || (body = json_object_get(o, "body")) == NULL) {
		if (o != NULL)
			json_decref(o);
		return json_pack("{s:s}", "objID", a->obj_id);
	}
	json_incref(body);
	json_decref(o);
	json_object_set_new(body, "deleted", json_boolean(a->deleted));
	return body;
}

/* Delivery per NCS: what was last acknowledged, what is queued. */
static int
asset_delivery(struct gwdb *g, const char *obj_id, json_t *out)
{
	struct store_stmt	*st;
	json_t			*failed;
	char			 at[40];
	int			 rc;

	/* a first NEW on its way (CATALOG_SENDING) is not acknowledged yet */
	if ((rc = asset_stmt(g, "SELECT n.name, d.rev, d.status, "
	    "d.t_ms, j.id, f.job_id, f.rev, f.error, f.t_ms FROM ncs n "
	    "LEFT JOIN delivery d ON d.ncs = n.name AND d.obj_id = ?1 "
	    "AND d.status <> '" CATALOG_SENDING "' "
	    "LEFT JOIN jobs j ON j.coalesce_key = 'obj:' || ?1 || '@' || "
	    "n.name AND j.state = 0 LEFT JOIN delivery_failed f ON "
	    "f.ncs = n.name AND f.obj_id = ?1 WHERE n.enabled = 1 ORDER BY "
	    "n.name", obj_id, &st)) != QUEUE_OK)
		return rc;
	while ((rc = store_step(st)) == STORE_ROW) {
		failed = json_null();
		if (!store_column_is_null(st, 5)) {
			util_iso_ms(store_column_int64(st, 8), at, sizeof at);
			failed = json_pack("{s:I, s:o, s:s?, s:s}", "jobId",
			    (json_int_t)store_column_int64(st, 5), "objRev",
			    store_column_is_null(st, 6) ? json_null() :
			    json_integer(store_column_int(st, 6)), "error",
			    store_column_text(st, 7), "at", at);
		}
		json_array_append_new(out, json_pack("{s:s, s:o, s:o, s:o, "
		    "s:o}", "ncs", store_column_text(st, 0),
		    "deliveredRev", store_column_is_null(st, 1) ?
		    json_null() : json_integer(store_column_int(st, 1)),
		    "deliveredStatus", store_column_is_null(st,
		    2) ? json_null() :
		    json_string(store_column_text(st, 2)),
		    "pendingJobId", store_column_is_null(st, 4) ?
		    json_null() : json_integer(store_column_int64(st, 4)),
		    "failed", failed));
	}
	store_finalize(st);
	return rc == STORE_DONE ? QUEUE_OK : gwdb_rc(rc);
}

/* GET one asset on the bookkeeping thread. */
static int
asset_get_run(struct gwdb *g, void *arg)
{
	struct asset_task	*t = arg;
	json_t			*d;
	int			 rc;

	if ((rc = catalog_get(g, t->obj_id, &t->a)) != QUEUE_OK)
		return rc;
	t->out = asset_json(&t->a);
	d = json_array();
	json_object_set_new(t->out, "delivery", d);
	return asset_delivery(g, t->obj_id, d);
}

/*
 * GET a page on the bookkeeping thread: in objID order from after on, or
 * with q the page of the search's ranked results from offset on, with
 * their total; "next" names where the next page starts.
 */
static int
asset_list_run(struct gwdb *g, void *arg)
{
	struct asset_task	*t = arg;
	struct search_query	 sq;
	struct catalog_asset	*v;
	json_t			*items;
	size_t			 n = 0, i;
	int64_t			 total = 0;
	int			 rc;

	v = xcalloc(t->limit, sizeof *v);
	if (t->q != NULL) {
		memset(&sq, 0, sizeof sq);
		sq.text = t->q;
		sq.offset = t->offset;
		rc = search_run(g, &sq, v, t->limit, &n, &total, &t->err);
	} else
		rc = catalog_list(g, t->after, false, v, t->limit, &n);
	if (rc != QUEUE_OK) {
		free(v);
		return rc;
	}
	items = json_array();
	for (i = 0; i < n; i++) {
		json_array_append_new(items, asset_json(&v[i]));
		catalog_asset_clear(&v[i]);
	}
	t->out = json_pack("{s:o}", "assets", items);
	if (t->q != NULL) {
		json_object_set_new(t->out, "total", json_integer(total));
		if (t->offset + (int64_t)n < total && n > 0)
			json_object_set_new(t->out, "next", json_sprintf(
			    "%lld", (long long)(t->offset + (int64_t)n)));
	} else if (n == t->limit && n > 0)
		json_object_set_new(t->out, "next", json_copy(json_object_get(
		    json_array_get(items, n - 1), "objID")));
	free(v);
	return QUEUE_OK;
}

/* Back on the loop: the asset or the page. */
static void
asset_read_done(void *arg, int rc)
{
	struct asset_task	*t = arg;

	if (rc == QUEUE_OK) {
		api_reply_json(t->r, 200, t->out);
		t->out = NULL;
	} else if (rc == QUEUE_ENOTFOUND)
		api_problem(t->r, 404, "not-found", "No such asset", "objID",
		    "no asset '%s'", t->obj_id);
	else
		api_problem_db(t->r, rc, t->err);
	asset_task_free(t);
}

/* GET /v1/assets/{objID} */
void
api_asset_get(struct api_req *r)
{
	struct asset_task	*t;

	if (!asset_id_ok(r))
		return;
	t = xcalloc(1, sizeof *t);
	t->r = r;
	t->obj_id = xstrdup(r->param[0]);
	dbw_submit(api_gw(r)->dbw, asset_get_run, asset_read_done, t);
}

/*
 * The search of GET /v1/assets?q=: at most ASSET_Q_MAX bytes of UTF-8
 * with a word in it; with it, after is the next of the page before (a
 * count of results); false once a 422 is sent.
 */
static bool
asset_q_ok(struct api_req *r, const char *q, const char *after,
    int64_t *offset)
{
	size_t		 len = strlen(q);
	char		*e;
	long long	 v;

	if (len > ASSET_Q_MAX || mos_utf8_check(q, len) != 0) {
		api_problem(r, 422, "invalid-parameter", "Invalid parameter",
		    "q", "q must be UTF-8 text of at most %d bytes",
		    ASSET_Q_MAX);
		return false;
	}
	if (!search_has_word(q)) {
		api_problem(r, 422, "invalid-parameter", "Invalid parameter",
		    "q", "q has no word to search for (letters or digits)");
		return false;
	}
	*offset = 0;
	if (after == NULL)
		return true;
	errno = 0;
	v = strtoll(after, &e, 10);
	if (e == after || *e != '\0' || *after == '-' || *after == '+' ||
	    errno != 0 || v > INT32_MAX) {
		api_problem(r, 422, "invalid-parameter", "Invalid parameter",
		    "after", "with q, after must be the next of the page "
		    "before (a count of results, 0 to %d)", INT32_MAX);
		return false;
	}
	*offset = v;
	return true;
}

/* GET /v1/assets?after=&limit=&q= */
void
api_assets_list(struct api_req *r)
{
	static const char *const known[] = { "after", "limit", "q", NULL };
	struct asset_task	*t;
	const char		*after = api_query(r, "after");
	const char		*lim = api_query(r, "limit");
	const char		*q = api_query(r, "q");
	char			*e;
	long			 n = ASSET_LIST_DEFAULT;
	int64_t			 offset = 0;

	if (!api_query_known(r, known))
		return;
	if (q != NULL && !asset_q_ok(r, q, after, &offset))
		return;
	if (lim != NULL) {
		n = strtol(lim, &e, 10);
		if (e == lim || *e != '\0' || n < 1 || n > ASSET_LIST_MAX) {
			api_problem(r, 422, "invalid-parameter", "Invalid "
			    "parameter", "limit", "limit must be 1 to %d",
			    ASSET_LIST_MAX);
			return;
		}
	}
	t = xcalloc(1, sizeof *t);
	t->r = r;
	t->after = after != NULL && q == NULL ? xstrdup(after) : NULL;
	t->q = q != NULL ? xstrdup(q) : NULL;
	t->offset = offset;
	t->limit = (size_t)n;
	dbw_submit(api_gw(r)->dbw, asset_list_run, asset_read_done, t);
}

/* ------------------------------------------------------------------------ */
/*
 * POST /v1/assets:import: the NDJSON body is read a line at a time from
 * the request's buffer (its bytes are dropped as they are read) in slices
 * of IMPORT_SLICE lines per turn of the loop, so that the links are never
 * held up for long; the assets checked make chunks, each stored in one
 * durable transaction on the bookkeeping thread (catalog_store_many) while
 * the next chunk is parsed. At most one chunk is stored and one waits: the
 * memory is the body not read yet and two chunks. A chunk is sized from
 * how long the last transaction took, so that one transaction holds the
 * database for about IMPORT_TX_US: the PUTs, completions and history rows
 * queued behind the import wait for one such transaction, not for all.
 */

/* One line of an import. */
struct import_item {
	struct catalog_asset	 a;
	size_t			 line;
};

/* Up to IMPORT_TX_MAX assets, stored in one transaction. */
struct import_chunk {
	struct import_task	*t;
	struct import_item	*items;
	size_t			 nitems;
	size_t			 max;		/* full at this many */
	size_t			 accepted;
	json_t			*refused;	/* refused by the database */
	int64_t			 tx_us;		/* its transaction took */
	bool			 one_by_one;	/* stored by import_run_each */
};

struct import_task {
	struct api_req		*r;
	struct gw		*gw;
	struct evbuffer		*in;		/* the body, read as parsed */
	struct event		*ev;		/* the next slice */
	size_t			 line;
	bool			 eof;		/* every line is parsed */
	struct import_chunk	*cur;		/* being filled */
	struct import_chunk	*ready;		/* full, waiting */
	bool			 storing;	/* a chunk on the thread */
	int			 rc;		/* the first failure */
	json_t			*refused;	/* [{"line","detail"}] */
	size_t			 accepted;
	size_t			 chunk_max;	/* the size of the next chunk */
	size_t			 ntx;		/* transactions committed */
	size_t			 one_by_one;	/* of them, one asset at a time */
	int64_t			 tx_max_us;	/* the longest of them */
};

#define IMPORT_SLICE	64	/* lines parsed per turn of the loop */

/* A line refused. */
static void
import_refuse(json_t *refused, size_t line, const char *fmt, ...)
{
	va_list	 ap;
	char	*d;

	va_start(ap, fmt);
	if (vasprintf(&d, fmt, ap) < 0)
		fatalx("out of memory");
	va_end(ap);
	json_array_append_new(refused, json_pack("{s:I, s:s}", "line",
	    (json_int_t)line, "detail", d));
	free(d);
}

static struct import_chunk *
import_chunk_new(struct import_task *t)
{
	struct import_chunk	*c;

	c = xcalloc(1, sizeof *c);
	c->t = t;
	c->max = t->chunk_max;
	c->items = xcalloc(c->max, sizeof *c->items);
	c->refused = json_array();
	return c;
}

static void
import_chunk_free(struct import_chunk *c)
{
	size_t	i;

	if (c == NULL)
		return;
	for (i = 0; i < c->nitems; i++)
		catalog_asset_clear(&c->items[i].a);
	free(c->items);
	json_decref(c->refused);
	free(c);
}

/*
 * A chunk whose batch store was refused (a constraint of the database):
 * again one asset at a time, each in its own savepoint, so that only the
 * assets the database refuses are refused, by line.
 */
static int
import_run_each(struct gwdb *g, struct import_chunk *c)
{
	struct import_item	*it;
	size_t			 i;
	char			*err;
	int			 rc = QUEUE_OK, prc;

	for (i = 0; i < c->nitems && rc == QUEUE_OK; i++) {
		it = &c->items[i];
		err = NULL;
		prc = catalog_store(g, &it->a, NULL, NULL, &err);
		if (prc == QUEUE_EINVAL) {
			import_refuse(c->refused, it->line, "%s", err);
			it->line = 0;
		} else if (prc != QUEUE_OK)
			rc = prc;
		free(err);
	}
	return rc;
}

/*
 * The bookkeeping thread: one chunk in one durable transaction, stored by
 * catalog_store_many; how long the transaction held the database.
 */
static int
import_run(struct gwdb *g, void *arg)
{
	struct import_chunk		 *c = arg;
	const struct catalog_asset	**v;
	size_t				  i;
	char				 *err = NULL;
	int64_t				  t0;
	int				  rc;

	if ((rc = gwdb_durable(g, true)) != QUEUE_OK)
		return rc;
	v = xcalloc(c->nitems, sizeof *v);
	for (i = 0; i < c->nitems; i++)
		v[i] = &c->items[i].a;
	t0 = util_mono_us();
	if ((rc = queue_tx_begin(g->q)) != QUEUE_OK)
		goto out;
	if ((rc = catalog_store_many(g, v, c->nitems, &err)) == QUEUE_EINVAL) {
		c->one_by_one = true;
		rc = import_run_each(g, c);
	}
	if (rc != QUEUE_OK) {
		queue_tx_rollback(g->q);
		goto out;
	}
	if ((rc = queue_tx_commit(g->q)) != QUEUE_OK)
		goto out;
	c->tx_us = util_mono_us() - t0;
	for (i = 0; i < c->nitems; i++) {
		if (c->items[i].line != 0)
			c->accepted++;
	}
out:
	gwdb_durable(g, false);
	free(v);
	free(err);
	return rc;
}

static void	import_chunk_done(void *, int);

/* Hand a full chunk to the thread, or keep it waiting behind the one there. */
static void
import_store(struct import_task *t, struct import_chunk *c)
{
	if (t->storing) {
		t->ready = c;
		return;
	}
	t->storing = true;
	dbw_submit(t->gw->dbw, import_run, import_chunk_done, c);
}

/* Everything is stored (or the database stopped it): answer. */
static void
import_finish(struct import_task *t)
{
	if (t->accepted > 0)
		api_asset_wake(t->gw);
	log_event(LL_INFO, "api.import", "accepted=%zu refused=%zu "
	    "transactions=%zu one_by_one=%zu longest_tx_ms=%.1f status=%s",
	    t->accepted, json_array_size(t->refused), t->ntx, t->one_by_one,
	    t->tx_max_us / 1000.0, t->rc == QUEUE_OK ? "ok" :
	    queue_strerror(t->rc));
	if (t->rc == QUEUE_OK)
		api_reply_json(t->r, 200, json_pack("{s:I, s:O}", "accepted",
		    (json_int_t)t->accepted, "refused", t->refused));
	else
		api_problem(t->r, 503, "storage-unavailable", "Storage "
		    "unavailable", NULL, "the database stopped the import "
		    "after %zu assets (%s); the lines after them were not "
		    "stored: send them again", t->accepted,
		    queue_strerror(t->rc));
	import_chunk_free(t->cur);
	import_chunk_free(t->ready);
	event_free(t->ev);
	json_decref(t->refused);
	free(t);
}

/* Parse on in the next turn of the loop. */
static void
import_resume(struct import_task *t)
{
	event_active(t->ev, EV_TIMEOUT, 0);
}

/*
 * The size of the next chunks from the time c held the database: the
 * fsync of the commit is paid once per chunk, the rest per asset, so
 * n * IMPORT_TX_US / time converges on transactions of IMPORT_TX_US.
 */
static void
import_size(struct import_task *t, const struct import_chunk *c)
{
	int64_t	us = c->tx_us > 0 ? c->tx_us : 1, n;

	t->ntx++;
	t->one_by_one += c->one_by_one;
	if (us > t->tx_max_us)
		t->tx_max_us = us;
	n = (int64_t)c->nitems * IMPORT_TX_US / us;
	if (n > (int64_t)c->nitems * 2)
		n = (int64_t)c->nitems * 2;
	if (c->nitems < c->max && n > (int64_t)t->chunk_max)
		n = (int64_t)t->chunk_max;	/* the last, short chunk */
	t->chunk_max = n < IMPORT_TX_MIN ? IMPORT_TX_MIN : n > IMPORT_TX_MAX ?
	    IMPORT_TX_MAX : (size_t)n;
}

/* A chunk is stored: its counts, the next chunk, more parsing. */
static void
import_chunk_done(void *arg, int rc)
{
	struct import_chunk	*c = arg;
	struct import_task	*t = c->t;
	struct import_chunk	*next;

	t->storing = false;
	if (rc == QUEUE_OK) {
		import_size(t, c);
		t->accepted += c->accepted;
		json_array_extend(t->refused, c->refused);
		if (c->accepted > 0)
			api_asset_wake(t->gw);
	} else if (t->rc == QUEUE_OK)
		t->rc = rc;
	import_chunk_free(c);
	if ((next = t->ready) != NULL) {
		t->ready = NULL;
		if (t->rc == QUEUE_OK)
			import_store(t, next);
		else
			import_chunk_free(next);
	}
	if (t->rc != QUEUE_OK && !t->storing)
		import_finish(t);
	else if (t->eof && !t->storing && t->cur == NULL)
		import_finish(t);
	else
		import_resume(t);
}

/* One NDJSON line into the chunk being filled, or a refusal. */
static void
import_line(struct import_task *t, const char *s, size_t len, size_t line)
{
	struct catalog_asset	 a;
	struct import_chunk	*c;
	json_error_t		 je;
	json_t			*o, *id;
	char			 field[128], *detail = NULL, *obj_id;

	o = json_loadb(s, len, JSON_REJECT_DUPLICATES, &je);
	if (o == NULL || !json_is_object(o)) {
		import_refuse(t->refused, line, "not a JSON object%s%s",
		    o == NULL ? ": " : "", o == NULL ? je.text : "");
		if (o != NULL)
			json_decref(o);
		return;
	}
	id = json_object_get(o, "objID");
	if (!json_is_string(id) || json_string_length(id) == 0 ||
	    json_string_length(id) > 128) {
		import_refuse(t->refused, line, "objID: a string of 1 to 128 "
		    "bytes is required");
		json_decref(o);
		return;
	}
	obj_id = xstrdup(json_string_value(id));
	json_object_del(o, "objID");
	if (api_asset_read(o, obj_id, t->r->who, &a, field, sizeof field,
	    &detail) != 0) {
		import_refuse(t->refused, line, "%s", detail);
		free(detail);
	} else {
		if (t->cur == NULL)
			t->cur = import_chunk_new(t);
		c = t->cur;
		c->items[c->nitems].a = a;
		c->items[c->nitems++].line = line;
	}
	free(obj_id);
	json_decref(o);
}

/* The next line of the body (malloc'd, without its end), or NULL. */
static char *
import_next_line(struct import_task *t, size_t *len)
{
	char	*s;
	size_t	 n;

	if ((s = evbuffer_readln(t->in, len, EVBUFFER_EOL_LF)) != NULL)
		return s;
	/* the last line may have no newline */
	if ((n = evbuffer_get_length(t->in)) == 0)
		return NULL;
	s = xmalloc(n + 1);
	evbuffer_remove(t->in, s, n);
	s[n] = '\0';
	*len = n;
	return s;
}

/* A slice of lines; a full chunk goes to the thread. */
static void
import_slice_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct import_task	*t = arg;
	char			*s;
	size_t			 len, i;

	(void)fd;
	(void)ev;
	if (t->rc != QUEUE_OK)
		return;
	for (i = 0; i < IMPORT_SLICE && (t->cur == NULL ||
	    t->cur->nitems < t->cur->max); i++) {
		if ((s = import_next_line(t, &len)) == NULL) {
			t->eof = true;
			break;
		}
		t->line++;
		if (len > 0 && s[len - 1] == '\r')
			len--;
		if (len > 0)
			import_line(t, s, len, t->line);
		free(s);
	}
	if (t->cur != NULL && (t->eof || t->cur->nitems == t->cur->max)) {
		if (t->ready != NULL)
			return;		/* the chunk waits for room */
		import_store(t, t->cur);
		t->cur = NULL;
	}
	if (!t->eof)
		import_resume(t);
	else if (!t->storing && t->cur == NULL && t->ready == NULL)
		import_finish(t);
}

/* POST /v1/assets:import: NDJSON, one asset a line with its objID. */
void
api_assets_import(struct api_req *r)
{
	struct import_task	*t;
	const char		*ct;

	ct = evhttp_find_header(evhttp_request_get_input_headers(r->req),
	    "Content-Type");
	if (ct != NULL && strncasecmp(ct, "application/x-ndjson", 20) != 0 &&
	    strncasecmp(ct, "application/jsonl", 17) != 0) {
		api_problem(r, 415, "unsupported-media-type", "Unsupported "
		    "media type", "Content-Type", "the body must be "
		    "application/x-ndjson, not %s", ct);
		return;
	}
	t = xcalloc(1, sizeof *t);
	t->r = r;
	t->gw = api_gw(r);
	t->in = evhttp_request_get_input_buffer(r->req);
	t->refused = json_array();
	t->chunk_max = IMPORT_TX_FIRST;
	if ((t->ev = event_new(t->gw->base, -1, 0, import_slice_cb, t)) ==
	    NULL)
		fatalx("event_new failed");
	import_resume(t);
}
