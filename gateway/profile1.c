/*
 * Profile 1 requests from the NCS: mosReqObj and mosReqAll.
 *
 * mosReqAll is acknowledged at once; then, on our own lower link (each
 * message waiting for its mosAck):
 *   pause 0  one mosListAll, streamed from the catalog page by page, so a
 *            large catalog is never one giant message in memory;
 *   pause N  one mosObj every N seconds (or ms: mos_req_all_pause_unit).
 */
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "gateway/gateway.h"

#define LISTALL_PAGE	32

/* A running mosReqAll with pause > 0. */
struct reqall {
	struct ncs		*ncs;
	int64_t			 pause_ms;
	char			*cursor;	/* last objID sent */
	size_t			 count;
	struct event		*timer;
	struct link_msg		*msg;		/* waiting for its mosAck */
};

/* The streamed mosListAll (owned by its link_msg). */
struct listall_gen {
	struct gwdb		*db;
	char			*ncs;
	int			 state;		/* 0 head, 1 objects, 2 tail,
	    3 done */
	char			*cursor;
	size_t			 count;
};

/* mosReqObj -> that mosObj, or a NACK naming the unknown objID. */
void
profile1_req_obj(struct gw *gw, struct conn *c, struct ncs *ncs,
    const struct mos_msg *m)
{
	struct catalog_asset	 a;
	struct mos_msg		*r = NULL;
	const char		*obj_id = m->u.mos_req_obj.obj_id;
	char			 text[300], *err = NULL;
	int32_t			 id = m->has_message_id ? m->message_id : 0;
	int			 rc;

	if (obj_id == NULL || *obj_id == '\0') {
		dispatch_reply(c, reply_mos_ack(gw->cfg->mos_id,
		    ncs->conf->ncs_id, id, NULL, false,
		    "mosReqObj without objID"), "nack");
		return;
	}
	rc = catalog_get(gw->db, obj_id, &a);
	if (rc == QUEUE_OK && !a.deleted &&
	    (r = catalog_mos_obj(&a, a.status, &err)) == NULL) {
		log_event(LL_ERROR, "reqobj.error", "obj=%s error=%s",
		    log_q(obj_id), log_q(err));
		snprintf(text, sizeof text, "Object %s cannot be sent: %s",
		    obj_id, err);
		dispatch_reply(c, reply_mos_ack(gw->cfg->mos_id,
		    ncs->conf->ncs_id, id, obj_id, false, text), "nack");
		free(err);
	} else if (r != NULL) {
		r->mos_id = mos_msg_strdup(r, gw->cfg->mos_id);
		r->ncs_id = mos_msg_strdup(r, m->ncs_id != NULL ? m->ncs_id :
		    ncs->conf->ncs_id);
		r->has_message_id = id != 0;
		r->message_id = id;
		dispatch_reply(c, r, "reply");
	} else {
		if (rc == QUEUE_OK || rc == QUEUE_ENOTFOUND)
			snprintf(text, sizeof text, "Unknown object: %s",
			    obj_id);
		else
			snprintf(text, sizeof text, "Internal error: catalog: "
			    "%s", queue_strerror(rc));
		dispatch_reply(c, reply_mos_ack(gw->cfg->mos_id,
		    ncs->conf->ncs_id, id, obj_id, false, text), "nack");
	}
	catalog_asset_clear(&a);
}

/* Append UTF-8 text in the wire encoding. */
static void
listall_text(struct evbuffer *out, const char *s, enum mos_enc enc)
{
	struct sbuf	sb = { NULL, 0, 0 };

	if (enc == MOS_ENC_UTF16BE) {
		util_utf8_to_utf16be(&sb, s, strlen(s));
		evbuffer_add(out, sb.s, sb.len);
		sbuf_free(&sb);
	} else
		evbuffer_add(out, s, strlen(s));
}

/* Append the <mosObj>...</mosObj> element of one catalog row. */
static int
listall_obj(struct evbuffer *out, const struct catalog_asset *a,
    enum mos_enc enc)
{
	struct mos_buf	 b = { NULL, 0, 0 };
	struct mos_msg	*m;
	ssize_t		 from, to;
	char		 err[256], *cause = NULL;
	int		 rc = -1;

	if ((m = catalog_mos_obj(a, a->status, &cause)) == NULL) {
		log_event(LL_ERROR, "reqall.error", "obj=%s error=%s",
		    log_q(a->obj_id), log_q(cause));
		free(cause);
		return -1;
	}
	m->mos_id = "x";
	m->ncs_id = "x";
	if (mos_write(m, enc, &b, err, sizeof err) == 0 &&
	    (from = util_find_enc(b.data, b.len, "<mosObj", enc,
	    false)) >= 0 &&
	    (to = util_find_enc(b.data, b.len, "</mosObj>", enc,
	    true)) > from) {
		evbuffer_add(out, b.data + from, (size_t)(to - from));
		rc = 0;
	} else
		log_event(LL_ERROR, "reqall.error", "obj=%s error=%s",
		    log_q(a->obj_id), log_q(err));
	mos_buf_free(&b);
	mos_msg_free(m);
	return rc;
}

/* The next page of objects; moves to the tail when the catalog ends. */
static int
listall_page(struct listall_gen *g, struct evbuffer *out, enum mos_enc enc)
{
	struct catalog_asset	a[LISTALL_PAGE];
	size_t			n, i;
	int			rc;

	if ((rc = catalog_list(g->db, g->cursor, false, a, nitems(a), &n)) !=
	    QUEUE_OK) {
		log_event(LL_ERROR, "reqall.error", "ncs=%s error=%s", g->ncs,
		    log_q(queue_strerror(rc)));
		return -1;
	}
	for (i = 0; i < n; i++) {
		if (listall_obj(out, &a[i], enc) == 0)
			g->count++;
	}
	if (n > 0) {
		free(g->cursor);
		g->cursor = xstrdup(a[n - 1].obj_id);
	}
	for (i = 0; i < n; i++)
		catalog_asset_clear(&a[i]);
	if (n < nitems(a))
		g->state = 2;
	return 1;
}

/* link_gen_fn for mosListAll: head, pages of objects, tail. */
static int
listall_fill(void *arg, struct evbuffer *out, bool restart, enum mos_enc enc,
    const char *mos_id, const char *ncs_id, int32_t message_id)
{
	struct listall_gen	*g = arg;
	struct sbuf		 sb = { NULL, 0, 0 };

	if (restart) {
		free(g->cursor);
		g->cursor = NULL;
		g->count = 0;
		g->state = 0;
	}
	switch (g->state) {
	case 0:
		sbuf_puts(&sb, "<mos><mosID>");
		sbuf_xml_text(&sb, mos_id);
		sbuf_puts(&sb, "</mosID><ncsID>");
		sbuf_xml_text(&sb, ncs_id);
		sbuf_printf(&sb, "</ncsID><messageID>%d</messageID>"
		    "<mosListAll>",
		    (int)message_id);
		listall_text(out, sb.s, enc);
		sbuf_free(&sb);
		g->state = 1;
		return 1;
	case 1:
		return listall_page(g, out, enc);
	case 2:
		listall_text(out, "</mosListAll></mos>", enc);
		g->state = 3;
		log_event(LL_INFO, "reqall.done", "ncs=%s pause=0 count=%zu",
		    g->ncs, g->count);
		return 0;
	default:
		return 0;
	}
}

/* Free the generator with its link_msg. */
static void
listall_free(void *arg)
{
	struct listall_gen	*g = arg;

	free(g->cursor);
	free(g->ncs);
	free(g);
}

/* The NCS answered the mosListAll. */
static void
listall_cb(void *arg, struct link_msg *lm, enum link_result res,
    const struct mos_msg *reply)
{
	struct listall_gen	*g = lm->gen_arg;

	(void)arg;
	if (res != LINK_REPLY || reply->type != MOS_T_MOS_ACK ||
	    reply->u.mos_ack.status == NULL ||
	    strcmp(reply->u.mos_ack.status, "ACK") != 0)
		log_event(LL_WARN, "reqall.nacked", "ncs=%s result=%s text=%s",
		    g->ncs, res == LINK_REPLY ? "nack" : "cancelled",
		    log_q(res == LINK_REPLY && reply->type == MOS_T_MOS_ACK ?
		    reply->u.mos_ack.status_description : NULL));
}

/* Stop a paced mosReqAll. */
void
profile1_req_all_stop(struct ncs *ncs)
{
	struct reqall	*r = ncs->reqall;

	if (r == NULL)
		return;
	if (r->msg != NULL)
		r->msg->arg = NULL;	/* its answer is ignored */
	event_free(r->timer);
	free(r->cursor);
	free(r);
	ncs->reqall = NULL;
}

static void	reqall_next_cb(evutil_socket_t, short, void *);

/* The NCS answered one paced mosObj: the next after the pause. */
static void
reqall_obj_cb(void *arg, struct link_msg *lm, enum link_result res,
    const struct mos_msg *reply)
{
	struct reqall	*r = arg;
	struct timeval	 tv;

	(void)lm;
	if (r == NULL)
		return;		/* stopped meanwhile */
	r->msg = NULL;
	if (res != LINK_REPLY) {
		profile1_req_all_stop(r->ncs);
		return;
	}
	if (reply->type != MOS_T_MOS_ACK || reply->u.mos_ack.status == NULL ||
	    strcmp(reply->u.mos_ack.status, "ACK") != 0)
		log_event(LL_WARN, "reqall.nacked", "ncs=%s obj=%s",
		    r->ncs->conf->name, log_q(r->cursor));
	tv.tv_sec = (time_t)(r->pause_ms / 1000);
	tv.tv_usec = (suseconds_t)(r->pause_ms % 1000) * 1000;
	evtimer_add(r->timer, &tv);
}

/* Send the next object of a paced mosReqAll, or finish. */
static void
reqall_next_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct reqall		*r = arg;
	struct catalog_asset	 a;
	struct mos_msg		*m;
	struct timeval		 retry = { 0, 100000 }, now = { 0, 0 };
	char			*err = NULL;
	size_t			 n = 0;
	int			 rc;

	(void)fd;
	(void)ev;
	rc = catalog_list(r->ncs->gw->db, r->cursor, false, &a, 1, &n);
	if (rc == QUEUE_EBUSY) {
		evtimer_add(r->timer, &retry);
		return;
	}
	if (rc != QUEUE_OK || n == 0) {
		log_event(rc == QUEUE_OK ? LL_INFO : LL_ERROR, "reqall.done",
		    "ncs=%s pause=%lld count=%zu%s", r->ncs->conf->name,
		    (long long)r->pause_ms, r->count, rc == QUEUE_OK ? "" :
		    " error=catalog");
		profile1_req_all_stop(r->ncs);
		return;
	}
	free(r->cursor);
	r->cursor = xstrdup(a.obj_id);
	if ((m = catalog_mos_obj(&a, a.status, &err)) == NULL) {
		/* a row that cannot be sent: say so, go on with the next */
		log_event(LL_ERROR, "reqall.error", "ncs=%s obj=%s error=%s",
		    r->ncs->conf->name, log_q(a.obj_id), log_q(err));
		free(err);
		catalog_asset_clear(&a);
		evtimer_add(r->timer, &now);
		return;
	}
	catalog_asset_clear(&a);
	r->count++;
	r->msg = link_msg_new(m, reqall_obj_cb, r);
	ncs_send(r->ncs, GW_PORT_LOWER, r->msg);
}

/* mosReqAll -> ACK now, then the objects on our lower link. */
void
profile1_req_all(struct gw *gw, struct conn *c, struct ncs *ncs,
    const struct mos_msg *m)
{
	struct listall_gen	*g;
	struct link_msg		*lm;
	struct reqall		*r;
	struct timeval		 now = { 0, 0 };
	int64_t			 pause = m->u.mos_req_all.has_pause ?
				    m->u.mos_req_all.pause : 0;

	dispatch_reply(c, reply_mos_ack(gw->cfg->mos_id, m->ncs_id != NULL ?
	    m->ncs_id : ncs->conf->ncs_id, m->has_message_id ? m->message_id :
	    0, "0", true, ""), "reply");
	profile1_req_all_stop(ncs);
	if (!gw->cfg->pause_ms)
		pause *= 1000;
	log_event(LL_INFO, "reqall.start", "ncs=%s pause_ms=%lld",
	    ncs->conf->name, (long long)pause);
	if (pause == 0) {
		g = xcalloc(1, sizeof *g);
		g->db = gw->db;
		g->ncs = xstrdup(ncs->conf->name);
		lm = link_msg_new(NULL, listall_cb, NULL);
		lm->type = MOS_T_MOS_LIST_ALL;
		lm->gen = listall_fill;
		lm->gen_arg = g;
		lm->gen_free = listall_free;
		ncs_send(ncs, GW_PORT_LOWER, lm);
		return;
	}
	r = xcalloc(1, sizeof *r);
	r->ncs = ncs;
	r->pause_ms = pause;
	if ((r->timer = evtimer_new(gw->base, reqall_next_cb, r)) == NULL)
		fatalx("evtimer_new failed");
	ncs->reqall = r;
	evtimer_add(r->timer, &now);
}
