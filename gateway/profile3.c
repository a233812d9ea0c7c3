/*
 * Profile 3 requests from the NCS, answered on the socket they came on (the
 * query port when the NCS uses it, else the lower port):
 *
 *   mosObjCreate, mosReqObjAction NEW   a placeholder asset (NOT READY) with
 *       a new objID, its mosObj deliveries, and an "obj-create" job in the
 *       "mam" lane for the MAM's worker, in one transaction; mosAck ACK
 *       carries the new objID and objRev
 *   mosReqObjAction UPDATE / DELETE     the same for an existing asset
 *       ("obj-update", "obj-delete" jobs)
 *   mosReqSearchableSchema              mosListSearchableSchema
 *   mosReqObjList                       mosObjList, one page of a search
 *       (search.c) with listReturnStart/End/Total
 *
 * The database work of these (the change and its commit, the search and
 * the building of the mosObjList) runs on the bookkeeping thread, so that a
 * slow search never holds up the other links; the answer goes out on the
 * loop thread once the thread is done, and for a change only after its
 * commit. A retry of a change still on the thread is answered, right after
 * it, with its answer.
 */
#include <stdlib.h>
#include <string.h>

#include "gateway/gateway.h"

#define P3_TRIES	3	/* database busy: tries before a NACK */
#define P3_RECENT	16	/* answers kept per NCS for retries */

/*
 * The last answers to NEW / UPDATE / DELETE, per NCS: a retry (the same
 * messageID and the same request, as an NCS resends after its timeout) gets
 * the same answer again instead of a second placeholder.
 */
struct p3_answer {
	int32_t		 message_id;	/* 0 = empty slot */
	bool		 pending;	/* on the thread: no answer yet */
	char		*key;		/* what the request asked */
	char		*obj_id;
	int		 rev;
	bool		 ok;
	char		*text;
};

struct p3_recent {
	struct p3_answer	 a[P3_RECENT];
	size_t			 next;
};

/* A request on the bookkeeping thread. */
struct p3_task {
	struct gw		*gw;
	char			*ncs;		/* name */
	char			*mos_id;
	uint64_t		 conn;		/* answer there */
	struct mos_msg		*m;		/* the request (owned) */
	const char		*op;		/* NEW, UPDATE, DELETE */
	char			*user;
	char			*key;		/* p3_key, NULL: a search */
	bool			 replay;	/* a retry: the kept answer */
	char			*obj_id;	/* result of a change */
	int			 rev;
	char			*err;
	int			 rc;
	struct mos_msg		*reply;		/* result of a search */
	const char		*outcome;
	char			*warn;		/* a search error, to log */
	int64_t			 total;
	size_t			 returned;
};

/* The ncsID to answer with: the request's, else the NCS's own. */
static const char *
p3_ncs_id(struct ncs *ncs, const struct mos_msg *m)
{
	return m->ncs_id != NULL && *m->ncs_id != '\0' ? m->ncs_id :
	    ncs->conf->ncs_id;
}

/* Answer with a mosAck (c NULL: the connection is gone, log only). */
static void
p3_ack(struct gw *gw, struct conn *c, const char *ncs_name,
    const char *ncs_id, const struct mos_msg *m, const char *obj_id, int rev,
    bool ok, const char *text)
{
	struct mos_msg	*r;

	if (!ok)
		log_event(LL_WARN, "p3.nack", "ncs=%s type=%s obj=%s reason=%s",
		    ncs_name, log_q(m->type_name), log_q(obj_id),
		    log_q(text));
	if (c == NULL) {
		log_event(LL_WARN, "p3.noreply", "ncs=%s type=%s obj=%s "
		    "reason=connection-closed", ncs_name, log_q(m->type_name),
		    log_q(obj_id));
		return;
	}
	r = reply_mos_ack(gw->cfg->mos_id, ncs_id,
	    m->has_message_id ? m->message_id : 0, obj_id, ok, text);
	r->u.mos_ack.obj_rev = (uint32_t)rev;
	dispatch_reply(c, r, ok ? "reply" : "nack");
}

/* Set a string field when the message has it. */
static void
p3_set(char **dst, const char *v)
{
	if (v == NULL)
		return;
	free(*dst);
	*dst = xstrdup(v);
}

/* Copy what the message sets onto an asset (the rest stays). */
static void
p3_apply(struct catalog_asset *a, const struct mos_obj_action *o,
    const char *user)
{
	char	tb[32];
	size_t	i;

	if (o->obj_slug != NULL && *o->obj_slug != '\0')
		p3_set(&a->slug, o->obj_slug);
	p3_set(&a->abstract, o->mos_abstract);
	p3_set(&a->group, o->obj_group);
	if (o->obj_type != NULL && *o->obj_type != '\0')
		p3_set(&a->type, o->obj_type);
	if (o->obj_tb.set) {
		mos_dec_format(&o->obj_tb, tb, sizeof tb);
		p3_set(&a->tb, tb);
	}
	if (o->has_obj_dur)
		a->dur = o->obj_dur;
	p3_set(&a->description, o->description);
	p3_set(&a->changed_by, user);
	if (o->ext_meta.n > 0) {
		for (i = 0; i < a->nmeta; i++) {
			free(a->meta[i].scope);
			free(a->meta[i].schema);
			free(a->meta[i].payload);
		}
		a->nmeta = 0;
		for (i = 0; i < o->ext_meta.n; i++)
			catalog_add_meta(a, o->ext_meta.v[i].mos_scope,
			    o->ext_meta.v[i].mos_schema,
			    o->ext_meta.v[i].mos_payload);
	}
}

/* The user a change is recorded for: the message's, else the NCS's name. */
static const char *
p3_user(struct ncs *ncs, const struct mos_obj_action *o, bool create)
{
	const char	*u = create ? o->created_by : o->changed_by;

	if (u == NULL || *u == '\0')
		u = create ? o->changed_by : o->created_by;
	return u != NULL && *u != '\0' ? u : ncs->conf->name;
}

/* The job for the MAM's worker (inside the caller's transaction). */
static int
p3_job(struct gwdb *g, const char *ncs, const char *kind, const char *op,
    const char *obj_id, const char *user, int32_t message_id)
{
	struct queue_enqueue_req	 req;
	struct sbuf			 p = { NULL, 0, 0 };
	int64_t				 id;
	int				 rc;

	sbuf_puts(&p, "{\"operation\":");
	sbuf_json_str(&p, op);
	sbuf_puts(&p, ",\"objID\":");
	sbuf_json_str(&p, obj_id);
	sbuf_puts(&p, ",\"ncs\":");
	sbuf_json_str(&p, ncs);
	sbuf_puts(&p, ",\"user\":");
	sbuf_json_str(&p, user);
	sbuf_printf(&p, ",\"messageID\":%d}", (int)message_id);
	memset(&req, 0, sizeof req);
	req.lane = PROFILE3_LANE;
	req.kind = kind;
	req.payload = p.s;
	req.payload_len = p.len;
	req.priority = 3;
	rc = queue_enqueue(g->q, &req, &id);
	sbuf_free(&p);
	return rc == QUEUE_EXISTS ? QUEUE_OK : rc;
}

/* A new objID: PROFILE3_ID_PREFIX and the next number not in the catalog. */
static int
p3_new_id(struct gwdb *g, char **out)
{
	struct catalog_asset	 a;
	int64_t			 seq = 0;
	int			 rc;

	*out = NULL;
	rc = gwdb_meta_get(g, "placeholder_seq", &seq);
	if (rc != QUEUE_OK && rc != QUEUE_ENOTFOUND)
		return rc;
	for (;;) {
		seq++;
		free(*out);
		xasprintf(out, PROFILE3_ID_PREFIX "%06lld", (long long)seq);
		if ((rc = catalog_get(g, *out, &a)) != QUEUE_ENOTFOUND) {
			catalog_asset_clear(&a);
			if (rc != QUEUE_OK)
				return rc;
			continue;	/* taken (even as a tombstone) */
		}
		return gwdb_meta_put(g, "placeholder_seq", seq);
	}
}

/*
 * One NEW / UPDATE / DELETE in one transaction (on the bookkeeping thread):
 * the catalog, the mosObj deliveries, the MAM's job. t->obj_id gets the
 * objID, t->rev its objRev, t->err what went wrong.
 */
static int
p3_change(struct gwdb *g, struct p3_task *t, const struct mos_obj_action *o)
{
	const struct mos_msg	*m = t->m;
	struct catalog_asset	 a;
	const char		*kind, *op = t->op, *user = t->user;
	char			**err = &t->err;
	int			 rc;

	memset(&a, 0, sizeof a);
	if ((rc = queue_tx_begin(g->q)) != QUEUE_OK) {
		xasprintf(err, "database: %s", queue_strerror(rc));
		return rc;
	}
	if (strcmp(op, "NEW") == 0) {
		kind = PROFILE3_KIND_CREATE;
		if ((rc = p3_new_id(g, &t->obj_id)) != QUEUE_OK)
			goto dberr;
		a.obj_id = xstrdup(t->obj_id);
		a.air = xstrdup("NOT READY");
		a.type = xstrdup("OTHER");
		a.created_by = xstrdup(user);
		p3_apply(&a, o, user);
		rc = catalog_put(g, &a, &t->rev, NULL, err);
	} else if (strcmp(op, "UPDATE") == 0) {
		kind = PROFILE3_KIND_UPDATE;
		t->obj_id = xstrdup(o->obj_id);
		if ((rc = catalog_get(g, o->obj_id, &a)) == QUEUE_OK &&
		    a.deleted)
			rc = QUEUE_ENOTFOUND;
		if (rc == QUEUE_ENOTFOUND) {
			xasprintf(err, "Unknown object: %s", o->obj_id);
			goto fail;
		}
		if (rc != QUEUE_OK)
			goto dberr;
		p3_apply(&a, o, user);
		rc = catalog_put(g, &a, &t->rev, NULL, err);
	} else {
		kind = PROFILE3_KIND_DELETE;
		t->obj_id = xstrdup(o->obj_id);
		rc = catalog_delete(g, o->obj_id, user, &t->rev, NULL, err);
		if (rc == QUEUE_ENOTFOUND) {
			free(*err);
			xasprintf(err, "Unknown object: %s", o->obj_id);
		}
	}
	if (rc != QUEUE_OK)
		goto fail;
	rc = p3_job(g, t->ncs, kind, op, t->obj_id, user, m->has_message_id ?
	    m->message_id : 0);
	if (rc != QUEUE_OK)
		goto dberr;
	if ((rc = queue_tx_commit(g->q)) != QUEUE_OK)
		xasprintf(err, "database commit: %s", queue_strerror(rc));
	goto out;
dberr:
	xasprintf(err, "database: %s", queue_strerror(rc));
fail:
	queue_tx_rollback(g->q);
out:
	catalog_asset_clear(&a);
	return rc;
}

/* Free one kept answer. */
static void
p3_answer_clear(struct p3_answer *a)
{
	free(a->key);
	free(a->obj_id);
	free(a->text);
	memset(a, 0, sizeof *a);
}

/* Forget the kept answers of an NCS. */
void
profile3_forget(struct ncs *ncs)
{
	size_t	i;

	if (ncs->p3recent == NULL)
		return;
	for (i = 0; i < P3_RECENT; i++)
		p3_answer_clear(&ncs->p3recent->a[i]);
	free(ncs->p3recent);
	ncs->p3recent = NULL;
}

/* What a request asks, as one string: equal strings, the same request. */
static char *
p3_key(const struct mos_obj_action *o, const char *op)
{
	struct sbuf	sb = { NULL, 0, 0 };
	char		tb[32] = "";
	size_t		i;

	if (o->obj_tb.set)
		mos_dec_format(&o->obj_tb, tb, sizeof tb);
	sbuf_printf(&sb, "%s\x1f%s\x1f%s\x1f%s\x1f%s\x1f%s\x1f%u:%d\x1f%s\x1f%s"
	    "\x1f%s\x1f%s", op, o->obj_id != NULL ? o->obj_id : "",
	    o->obj_slug != NULL ? o->obj_slug : "",
	    o->obj_group != NULL ? o->obj_group : "",
	    o->obj_type != NULL ? o->obj_type : "", tb, o->obj_dur,
	    o->has_obj_dur, o->created_by != NULL ? o->created_by : "",
	    o->changed_by != NULL ? o->changed_by : "",
	    o->mos_abstract != NULL ? o->mos_abstract : "",
	    o->description != NULL ? o->description : "");
	for (i = 0; i < o->ext_meta.n; i++)
		sbuf_printf(&sb, "\x1f%s\x1f%s", o->ext_meta.v[i].mos_schema,
		    o->ext_meta.v[i].mos_payload);
	return sb.s;
}

/* The kept (or pending) answer to this very request, or NULL. */
static struct p3_answer *
p3_recent_find(struct ncs *ncs, int32_t message_id, const char *key)
{
	size_t	i;

	if (ncs->p3recent == NULL || message_id == 0)
		return NULL;
	for (i = 0; i < P3_RECENT; i++) {
		if (ncs->p3recent->a[i].message_id == message_id &&
		    strcmp(ncs->p3recent->a[i].key, key) == 0)
			return &ncs->p3recent->a[i];
	}
	return NULL;
}

/* A slot for the answer to this request, pending until p3_recent_set. */
static void
p3_recent_add(struct ncs *ncs, int32_t message_id, const char *key)
{
	struct p3_answer	*a;

	if (message_id == 0)
		return;
	if (ncs->p3recent == NULL)
		ncs->p3recent = xcalloc(1, sizeof *ncs->p3recent);
	a = &ncs->p3recent->a[ncs->p3recent->next];
	ncs->p3recent->next = (ncs->p3recent->next + 1) % P3_RECENT;
	p3_answer_clear(a);
	a->message_id = message_id;
	a->pending = true;
	a->key = xstrdup(key);
}

/* The answer of a change, kept (keep) or forgotten (worth a retry). */
static void
p3_recent_set(struct ncs *ncs, int32_t message_id, const char *key,
    bool keep, const char *obj_id, int rev, bool ok, const char *text)
{
	struct p3_answer	*a;

	if (ncs == NULL || (a = p3_recent_find(ncs, message_id, key)) == NULL)
		return;
	if (!keep) {
		p3_answer_clear(a);
		return;
	}
	a->pending = false;
	a->obj_id = obj_id != NULL ? xstrdup(obj_id) : NULL;
	a->rev = rev;
	a->ok = ok;
	a->text = xstrdup(text);
}

static void
p3_task_free(struct p3_task *t)
{
	free(t->ncs);
	free(t->mos_id);
	mos_msg_free(t->m);
	free(t->user);
	free(t->key);
	free(t->obj_id);
	free(t->err);
	mos_msg_free(t->reply);
	free(t->warn);
	free(t);
}

/* A task for the request m (taken) that came on c. */
static struct p3_task *
p3_task_new(struct gw *gw, struct conn *c, struct ncs *ncs,
    struct mos_msg *m)
{
	struct p3_task	*t;

	t = xcalloc(1, sizeof *t);
	t->gw = gw;
	t->ncs = xstrdup(ncs->conf->name);
	t->mos_id = xstrdup(gw->cfg->mos_id);
	t->conn = c->id;
	t->m = m;
	return t;
}

/* The thread: the change, tried again while the database is busy. */
static int
p3_change_run(struct gwdb *g, void *arg)
{
	struct p3_task			*t = arg;
	const struct mos_obj_action	*o;
	int				 tries;

	if (t->replay)
		return QUEUE_OK;
	o = t->m->type == MOS_T_MOS_OBJ_CREATE ? &t->m->u.mos_obj_create :
	    &t->m->u.mos_req_obj_action;
	t->rc = QUEUE_EBUSY;
	for (tries = 0; t->rc == QUEUE_EBUSY && tries < P3_TRIES; tries++) {
		free(t->obj_id);
		free(t->err);
		t->obj_id = t->err = NULL;
		t->rc = p3_change(g, t, o);
	}
	return t->rc;
}

/* The loop thread: answer the change (committed or not), keep the answer. */
static void
p3_change_done(void *arg, int rc)
{
	struct p3_task			*t = arg;
	const struct mos_obj_action	*o;
	const struct p3_answer		*done;
	struct ncs			*ncs;
	struct conn			*c;
	const char			*ack, *ncs_id;
	int32_t				 id = t->m->has_message_id ?
					    t->m->message_id : 0;

	(void)rc;
	ncs = ncs_find_by_name(t->gw, t->ncs);
	c = dispatch_conn_find(t->gw, t->conn);
	ncs_id = t->m->ncs_id != NULL && *t->m->ncs_id != '\0' ?
	    t->m->ncs_id : ncs != NULL ? ncs->conf->ncs_id : "";
	o = t->m->type == MOS_T_MOS_OBJ_CREATE ? &t->m->u.mos_obj_create :
	    &t->m->u.mos_req_obj_action;
	if (t->replay) {
		done = ncs != NULL ? p3_recent_find(ncs, id, t->key) : NULL;
		if (done == NULL || done->pending)
			p3_ack(t->gw, c, t->ncs, ncs_id, t->m, o->obj_id, 0,
			    false, "The first request with this messageID "
			    "failed on a busy database: send it again");
		else {
			log_event(LL_INFO, "p3.retry", "ncs=%s op=%s "
			    "message_id=%d obj=%s", t->ncs, t->op, (int)id,
			    log_q(done->obj_id));
			p3_ack(t->gw, c, t->ncs, ncs_id, t->m, done->obj_id,
			    done->rev, done->ok, done->text);
		}
	} else if (t->rc == QUEUE_OK) {
		log_event(LL_INFO, "p3.change", "ncs=%s op=%s obj=%s rev=%d "
		    "user=%s", t->ncs, t->op, log_q(t->obj_id), t->rev,
		    log_q(t->user));
		ack = strcmp(t->op, "NEW") == 0 ? "Placeholder created" :
		    strcmp(t->op, "UPDATE") == 0 ? "Updated" : "Deleted";
		p3_recent_set(ncs, id, t->key, true, t->obj_id, t->rev, true,
		    ack);
		p3_ack(t->gw, c, t->ncs, ncs_id, t->m, t->obj_id, t->rev, true,
		    ack);
	} else {
		if (t->obj_id == NULL && o->obj_id != NULL)
			t->obj_id = xstrdup(o->obj_id);
		ack = t->err != NULL ? t->err : queue_strerror(t->rc);
		/* A busy database is worth a retry; a refusal is final. */
		p3_recent_set(ncs, id, t->key, t->rc != QUEUE_EBUSY, t->obj_id,
		    0, false, ack);
		p3_ack(t->gw, c, t->ncs, ncs_id, t->m, t->obj_id, 0, false,
		    ack);
	}
	p3_task_free(t);
}

/*
 * NEW (mosObjCreate too), UPDATE or DELETE: checked here, changed on the
 * bookkeeping thread, answered after. Takes m.
 */
static void
p3_obj_action(struct gw *gw, struct conn *c, struct ncs *ncs,
    struct mos_msg *m, const struct mos_obj_action *o, const char *op)
{
	struct p3_task	*t;
	char		 text[300];
	const char	*bad = NULL;
	int32_t		 id = m->has_message_id ? m->message_id : 0;

	if (strcmp(op, "NEW") == 0) {
		if (o->obj_slug == NULL || *o->obj_slug == '\0' ||
		    !o->obj_tb.set)
			bad = "A new object needs objSlug and objTB";
	} else if (strcmp(op, "UPDATE") == 0 || strcmp(op, "DELETE") == 0) {
		if (o->obj_id == NULL || *o->obj_id == '\0') {
			snprintf(text, sizeof text, "%s needs the objID "
			    "attribute", op);
			bad = text;
		}
	} else {
		snprintf(text, sizeof text, "Unknown operation '%.40s' (NEW, "
		    "UPDATE or DELETE)", op);
		bad = text;
	}
	if (bad != NULL) {
		p3_ack(gw, c, ncs->conf->name, p3_ncs_id(ncs, m), m,
		    strcmp(op, "NEW") == 0 ? NULL : o->obj_id, 0, false, bad);
		mos_msg_free(m);
		return;
	}
	t = p3_task_new(gw, c, ncs, m);
	t->op = strcmp(op, "NEW") == 0 ? "NEW" : strcmp(op, "UPDATE") == 0 ?
	    "UPDATE" : "DELETE";
	t->user = xstrdup(p3_user(ncs, o, strcmp(op, "NEW") == 0));
	t->key = p3_key(o, op);
	if (p3_recent_find(ncs, id, t->key) != NULL)
		t->replay = true;	/* answered after the first one */
	else
		p3_recent_add(ncs, id, t->key);
	dbw_submit(gw->dbw, p3_change_run, p3_change_done, t);
}

/* mosObjCreate -> a placeholder, mosAck with its objID. Takes m. */
void
profile3_obj_create(struct gw *gw, struct conn *c, struct ncs *ncs,
    struct mos_msg *m)
{
	p3_obj_action(gw, c, ncs, m, &m->u.mos_obj_create, "NEW");
}

/* mosReqObjAction NEW | UPDATE | DELETE -> mosAck. Takes m. */
void
profile3_req_obj_action(struct gw *gw, struct conn *c, struct ncs *ncs,
    struct mos_msg *m)
{
	const struct mos_obj_action	*o = &m->u.mos_req_obj_action;

	p3_obj_action(gw, c, ncs, m, o, o->operation != NULL ? o->operation :
	    "");
}

/* mosReqSearchableSchema -> mosListSearchableSchema. */
void
profile3_req_searchable_schema(struct gw *gw, struct conn *c,
    struct ncs *ncs, const struct mos_msg *m)
{
	struct mos_msg	*r;

	r = reply_new(MOS_T_MOS_LIST_SEARCHABLE_SCHEMA, gw->cfg->mos_id,
	    p3_ncs_id(ncs, m), m->has_message_id ? m->message_id : 0);
	r->u.mos_list_searchable_schema.username = mos_msg_strdup(r,
	    m->u.mos_req_searchable_schema.username != NULL ?
	    m->u.mos_req_searchable_schema.username : "");
	r->u.mos_list_searchable_schema.mos_schema = PROFILE3_SCHEMA;
	dispatch_reply(c, r, "reply");
}

/* The search a mosReqObjList asks for; -1 and *err if it cannot be read. */
static int
p3_query(const struct mos_req_obj_list *rq, struct search_query *q,
    char **err)
{
	const struct mos_search_field	*f;
	size_t				 g, i;

	memset(q, 0, sizeof *q);
	q->text = rq->general_search;
	for (g = 0; g < rq->search_group.n; g++) {
		for (i = 0; i < rq->search_group.v[g].search_field.n; i++) {
			f = &rq->search_group.v[g].search_field.v[i];
			if (search_add_field(q, (int)g, f->xpath,
			    f->sort_by_order, f->sort_type, err) != 0)
				return -1;
		}
	}
	return 0;
}

/* The thread: one page of the search and the total, as a mosObjList. */
static int
p3_list_run(struct gwdb *g, void *arg)
{
	struct p3_task			*t = arg;
	const struct mos_req_obj_list	*rq = &t->m->u.mos_req_obj_list;
	struct catalog_asset		 a[PROFILE3_PAGE_MAX];
	struct search_query		 q;
	struct mos_obj_list		*ol;
	struct mos_msg			*r;
	char				*err = NULL, text[200];
	int64_t				 start, end, total = 0;
	size_t				 n = 0, i, want;
	int				 rc = QUEUE_OK, tries;

	r = t->reply;
	ol = &r->u.mos_obj_list;
	start = rq->has_list_return_start && rq->list_return_start > 0 ?
	    rq->list_return_start : 1;
	end = rq->has_list_return_end && rq->list_return_end > 0 ?
	    rq->list_return_end : start + PROFILE3_PAGE_DEFAULT - 1;
	if (end < start)
		end = start - 1;
	if (end - start + 1 > PROFILE3_PAGE_MAX)
		end = start + PROFILE3_PAGE_MAX - 1;
	want = (size_t)(end - start + 1);
	if (p3_query(rq, &q, &err) == 0) {
		q.offset = start - 1;
		rc = QUEUE_EBUSY;
		for (tries = 0; rc == QUEUE_EBUSY && tries < P3_TRIES;
		    tries++) {
			free(err);
			err = NULL;
			rc = search_run(g, &q, a, want, &n, &total, &err);
		}
	} else
		rc = QUEUE_EINVAL;
	search_query_clear(&q);
	ol->has_list_return_start = ol->has_list_return_end = true;
	ol->has_list_return_total = true;
	ol->list_return_total = (uint32_t)(total > UINT32_MAX ? UINT32_MAX :
	    total);
	if (rc != QUEUE_OK) {
		reply_bound(text, sizeof text, err != NULL ? err :
		    queue_strerror(rc));
		ol->list_return_status = mos_msg_strdup(r, text);
		t->warn = xstrdup(text);
	} else if (n == 0) {
		if (total == 0)
			ol->list_return_status = "No objects match";
		else {
			snprintf(text, sizeof text, "Start %lld is past the "
			    "last result (%lld)", (long long)start,
			    (long long)total);
			ol->list_return_status = mos_msg_strdup(r, text);
		}
	} else {
		ol->list_return_start = (uint32_t)start;
		ol->list_return_end = (uint32_t)(start + (int64_t)n - 1);
		ol->list.v = mos_msg_calloc(r, n, sizeof *ol->list.v);
		if (ol->list.v == NULL)
			fatalx("out of memory");
		for (i = 0; i < n; i++) {
			if (catalog_fill_obj(r, &ol->list.v[ol->list.n], &a[i],
			    a[i].status) == 0)
				ol->list.n++;
		}
	}
	for (i = 0; i < n; i++)
		catalog_asset_clear(&a[i]);
	free(err);
	t->total = total;
	t->returned = n;
	return rc;
}

/* The loop thread: send the page. */
static void
p3_list_done(void *arg, int rc)
{
	struct p3_task			*t = arg;
	const struct mos_req_obj_list	*rq = &t->m->u.mos_req_obj_list;
	struct conn			*c;

	(void)rc;
	if (t->warn != NULL)
		log_event(LL_WARN, "p3.search", "ncs=%s query_id=%s error=%s",
		    t->ncs, log_q(rq->query_id), log_q(t->warn));
	if (log_enabled(LL_DEBUG))
		log_event(LL_DEBUG, "p3.search", "ncs=%s query_id=%s total=%lld "
		    "returned=%zu", t->ncs, log_q(rq->query_id),
		    (long long)t->total, t->returned);
	if ((c = dispatch_conn_find(t->gw, t->conn)) == NULL)
		log_event(LL_WARN, "p3.noreply", "ncs=%s type=mosReqObjList "
		    "query_id=%s reason=connection-closed", t->ncs,
		    log_q(rq->query_id));
	else {
		dispatch_reply(c, t->reply, "reply");
		t->reply = NULL;
	}
	p3_task_free(t);
}

/*
 * mosReqObjList -> mosObjList: one page of the search, and the total,
 * searched on the bookkeeping thread. Takes m.
 */
void
profile3_req_obj_list(struct gw *gw, struct conn *c, struct ncs *ncs,
    struct mos_msg *m)
{
	const struct mos_req_obj_list	*rq = &m->u.mos_req_obj_list;
	struct mos_obj_list		*ol;
	struct p3_task			*t;
	struct mos_msg			*r;

	r = reply_new(MOS_T_MOS_OBJ_LIST, gw->cfg->mos_id, p3_ncs_id(ncs, m),
	    m->has_message_id ? m->message_id : 0);
	ol = &r->u.mos_obj_list;
	ol->username = mos_msg_strdup(r, rq->username != NULL ? rq->username :
	    "");
	ol->query_id = mos_msg_strdup(r, rq->query_id != NULL ? rq->query_id :
	    "");
	t = p3_task_new(gw, c, ncs, m);
	t->reply = r;
	dbw_submit(gw->dbw, p3_list_run, p3_list_done, t);
}
