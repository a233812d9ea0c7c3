/*
 * Running orders from the NCS (Profiles 2 and 4, and mosItemReplace).
 *
 * Every change (roCreate, roReplace, roDelete, roMetadataReplace,
 * roReadyToAir, roElementAction, the deprecated roStory* and roItem*,
 * roStorySend, mosItemReplace) and every read (roReq, roReqAll) runs on the
 * bookkeeping thread (rostore.c) so that a large running order never holds
 * up the other links; the answer goes out on the connection the request
 * came on once the transaction has committed: roAck echoing the roID, with
 * the status of each of our items whose object the catalog knows (or
 * RO_STAT_UNKNOWN), or an error roStatus.
 *
 * A change the NCS sends again with the same messageID (our roAck was
 * lost) gets the answer kept with the first one (rostore_once_get) and is
 * not applied twice; the same messageID on a different message is a new
 * message (an NCS that restarted its count), logged as ro.msgid_reused.
 *
 * A message naming a running order, story or item we do not hold means the
 * two sides are out of step: after the error roStatus the running order is
 * asked for again with roReq on our upper link, and the roList rebuilds it.
 */
#include <stdlib.h>
#include <string.h>

#include "gateway/gateway.h"

/* A request waiting for the bookkeeping thread. */
struct p2_task {
	struct gw		*gw;
	char			*ncs;		/* name */
	char			*ncs_id;	/* to answer with */
	char			*mos_id;
	uint64_t		 conn;		/* answer there */
	int32_t			 message_id;
	struct mos_msg		*m;		/* owned; freed on the thread */
	enum mos_type		 type;		/* of m */
	char			*ro_id;		/* of m */
	struct ro_result	 res;
	struct mos_msg		*answer;	/* roList, roListAll */
	struct mos_msg		*reply;		/* what goes back */
	struct wire		 wire;		/* it, encoded ahead */
	enum mos_enc		 enc;		/* of the connection */
	const char		*outcome;
	int			 rc;
	bool			 from_ncs;	/* a roList of our own roReq */
	struct ro_once		 once;		/* a change: kept for resends */
	bool			 replayed;	/* a resend: the kept answer */
	bool			 reused;	/* its messageID kept for another */
	int64_t			 start_mono;
};

static void	p2_answer(struct p2_task *);

/* A roReq of ours waiting for its roList. */
struct ro_pending {
	struct ncs		*ncs;
	char			*ro_id;
	TAILQ_ENTRY(ro_pending)	 entry;
};

/* Is this a message profile2_request takes? */
bool
profile2_handles(enum mos_type t)
{
	switch (t) {
	case MOS_T_RO_CREATE:
	case MOS_T_RO_REPLACE:
	case MOS_T_RO_DELETE:
	case MOS_T_RO_REQ:
	case MOS_T_RO_METADATA_REPLACE:
	case MOS_T_RO_READY_TO_AIR:
	case MOS_T_RO_ELEMENT_ACTION:
	case MOS_T_RO_STORY_APPEND:
	case MOS_T_RO_STORY_INSERT:
	case MOS_T_RO_STORY_REPLACE:
	case MOS_T_RO_STORY_MOVE:
	case MOS_T_RO_STORY_SWAP:
	case MOS_T_RO_STORY_DELETE:
	case MOS_T_RO_STORY_MOVE_MULTIPLE:
	case MOS_T_RO_ITEM_INSERT:
	case MOS_T_RO_ITEM_REPLACE:
	case MOS_T_RO_ITEM_MOVE_MULTIPLE:
	case MOS_T_RO_ITEM_DELETE:
	case MOS_T_MOS_ITEM_REPLACE:
	case MOS_T_RO_REQ_ALL:
	case MOS_T_RO_STORY_SEND:
		return true;
	default:
		return false;
	}
}

static void
p2_task_free(struct p2_task *t)
{
	free(t->ncs);
	free(t->ncs_id);
	free(t->mos_id);
	mos_msg_free(t->m);
	free(t->ro_id);
	mos_msg_free(t->answer);
	mos_msg_free(t->reply);
	wire_clear(&t->wire);
	rostore_result_clear(&t->res, false);
	free(t);
}

/* The thread: apply or read. */
static int
p2_run(struct gwdb *g, void *arg)
{
	struct p2_task	*t = arg;
	const char	*ro_id = rostore_ro_id(t->m);

	switch (t->m->type) {
	case MOS_T_RO_REQ:
		t->rc = rostore_get(g, t->ncs, ro_id != NULL ? ro_id : "",
		    &t->answer, NULL);
		break;
	case MOS_T_RO_REQ_ALL:
		t->rc = rostore_list_all(g, t->ncs, &t->answer);
		break;
	default:
		if (t->once.message_id != 0)
			rostore_digest(t->m, t->once.digest);
		t->rc = rostore_apply_once(g, t->ncs, t->mos_id, t->m,
		    &t->once, &t->res);
		t->replayed = t->res.replayed;
		t->reused = t->res.reused;
		break;
	}
	if (!t->from_ncs)
		p2_answer(t);
	/* a large message is freed here, not on the event loop */
	mos_msg_free(t->m);
	t->m = NULL;
	return t->rc;
}

/* The roAck of a change. */
static struct mos_msg *
p2_ro_ack(struct p2_task *t)
{
	struct mos_msg			*r;
	struct mos_ro_ack_entry		*e;
	const struct ro_result		*res = &t->res;
	const char			*text = "OK";
	size_t				 i;

	if (t->rc != QUEUE_OK || res->err != RO_OK)
		text = res->text;
	r = reply_ro_ack(t->mos_id, t->ncs_id, t->message_id,
	    t->ro_id, text);
	if (res->nitems == 0)
		return r;
	if ((e = mos_msg_calloc(r, res->nitems, sizeof *e)) == NULL)
		fatalx("out of memory");
	for (i = 0; i < res->nitems; i++) {
		e[i].story_id = mos_msg_strdup(r, res->items[i].story_id);
		e[i].item_id = mos_msg_strdup(r, res->items[i].item_id);
		e[i].obj_id = mos_msg_strdup(r, res->items[i].obj_id);
		e[i].item_channel = mos_msg_strdup(r, res->items[i].channel);
		e[i].status = res->items[i].status;
	}
	r->u.ro_ack.entries.v = e;
	r->u.ro_ack.entries.n = res->nitems;
	return r;
}

/* Count the items we reported as unknown. */
static size_t
p2_unknown(const struct ro_result *res)
{
	size_t	i, n = 0;

	for (i = 0; i < res->nitems; i++)
		if (strcmp(res->items[i].status, RO_STAT_UNKNOWN) == 0)
			n++;
	return n;
}

/* The answer, built on the thread (and encoded when it has a messageID). */
static void
p2_answer(struct p2_task *t)
{
	struct mos_msg	*r;
	const char	*ro_id = t->ro_id;
	char		 text[200], err[256];

	t->outcome = "reply";
	if (t->type == MOS_T_RO_REQ || t->type == MOS_T_RO_REQ_ALL) {
		if (t->rc == QUEUE_OK) {
			r = t->answer;
			t->answer = NULL;
			r->mos_id = mos_msg_strdup(r, t->mos_id);
			r->ncs_id = mos_msg_strdup(r, t->ncs_id);
			r->has_message_id = t->message_id != 0;
			r->message_id = t->message_id;
		} else {
			if (t->rc == QUEUE_ENOTFOUND)
				snprintf(text, sizeof text, "Unknown roID %s",
				    ro_id != NULL ? ro_id : "");
			else
				snprintf(text, sizeof text, "Internal error: "
				    "database: %s", queue_strerror(t->rc));
			r = reply_ro_ack(t->mos_id, t->ncs_id, t->message_id,
			    ro_id, text);
			t->outcome = "nack";
		}
	} else {
		r = p2_ro_ack(t);
		if (t->rc != QUEUE_OK || t->res.err != RO_OK)
			t->outcome = "nack";
	}
	t->reply = r;
	if (t->message_id != 0 && wire_encode(&t->wire, r, t->enc, err,
	    sizeof err) != 0)
		wire_clear(&t->wire);	/* encoded on the loop instead */
}

/* The loop thread: answer, log, resync. */
static void
p2_done(void *arg, int rc)
{
	struct p2_task	*t = arg;
	struct gw	*gw = t->gw;
	struct conn	*c;
	struct ncs	*n;
	const char	*ro_id = t->ro_id;
	bool		 ok;

	(void)rc;
	if (t->from_ncs) {
		/* the roList we asked for: nothing to answer */
		ok = t->res.err == RO_OK && t->rc == QUEUE_OK;
		log_event(ok ? LL_INFO : LL_WARN, "ro.resync", "ncs=%s ro=%s "
		    "result=%s", log_q(t->ncs), log_q(ro_id), ok ? "rebuilt" :
		    log_q(t->res.text));
		p2_task_free(t);
		return;
	}
	ok = strcmp(t->outcome, "reply") == 0;
	if (t->reused)
		log_event(LL_WARN, "ro.msgid_reused", "ncs=%s type=%s ro=%s "
		    "message_id=%d", log_q(t->ncs), mos_type_name(t->type),
		    log_q(ro_id), (int)t->message_id);
	log_event(ok ? LL_INFO : LL_WARN, "ro.msg", "ncs=%s type=%s ro=%s "
	    "message_id=%d result=%s items=%zu unknown_objects=%zu%s ms=%lld",
	    log_q(t->ncs), mos_type_name(t->type), log_q(ro_id),
	    (int)t->message_id, ok ? "ok" : log_q(t->res.err != RO_OK ?
	    t->res.text : "error"), t->res.nitems, p2_unknown(&t->res),
	    t->replayed ? " resend=answered-again" : "",
	    (long long)(util_mono_ms() - t->start_mono));
	if ((c = dispatch_conn_find(gw, t->conn)) == NULL)
		log_event(LL_WARN, "ro.noreply", "ncs=%s type=%s ro=%s "
		    "reason=connection-closed", log_q(t->ncs),
		    mos_type_name(t->type), log_q(ro_id));
	else if (t->wire.data != NULL && t->wire.enc == conn_encoding(c))
		conn_send_wire(c, &t->wire, t->message_id, t->reply->type,
		    t->outcome);
	else {
		dispatch_reply(c, t->reply, t->outcome);
		t->reply = NULL;
	}
	if (t->res.resync && ro_id != NULL && *ro_id != '\0' &&
	    (n = ncs_find_by_name(gw, t->ncs)) != NULL)
		profile2_resync(n, ro_id);
	p2_task_free(t);
}

/* A running-order request: on the bookkeeping thread, answered after. */
void
profile2_request(struct gw *gw, struct conn *c, struct ncs *ncs,
    struct mos_msg *m)
{
	struct p2_task	*t;

	t = xcalloc(1, sizeof *t);
	t->gw = gw;
	t->ncs = xstrdup(ncs->conf->name);
	t->ncs_id = xstrdup(m->ncs_id != NULL && *m->ncs_id != '\0' ?
	    m->ncs_id : ncs->conf->ncs_id);
	t->mos_id = xstrdup(gw->cfg->mos_id);
	t->conn = c->id;
	t->enc = conn_encoding(c);
	t->message_id = m->has_message_id ? m->message_id : 0;
	t->m = m;
	t->type = m->type;
	t->ro_id = rostore_ro_id(m) != NULL ? xstrdup(rostore_ro_id(m)) : NULL;
	t->start_mono = util_mono_ms();
	/*
	 * Kept for resends: the changes applied on top of what is stored.
	 * roCreate and roReplace carry the whole running order: applied again
	 * they give the same state and answer, so a (large) one is not
	 * digested.
	 */
	switch (m->type) {
	case MOS_T_RO_REQ:
	case MOS_T_RO_REQ_ALL:
	case MOS_T_RO_CREATE:
	case MOS_T_RO_REPLACE:
		break;
	default:
		t->once.port = c->port;
		t->once.message_id = t->message_id;
		break;
	}
	dbw_submit(gw->dbw, p2_run, p2_done, t);
}

/* The answer to one of our roReqs. */
static void
p2_resync_cb(void *arg, struct link_msg *lm, enum link_result res,
    const struct mos_msg *reply)
{
	struct ro_pending	*p = arg;
	struct ncs		*n = p->ncs;
	struct gw		*gw = n->gw;
	struct p2_task		*t;
	struct mos_msg		*copy;

	TAILQ_REMOVE(&n->ro_pending, p, entry);
	if (res == LINK_REPLY && reply->type == MOS_T_RO_LIST &&
	    reply->u.ro_list.ro_id != NULL &&
	    strcmp(reply->u.ro_list.ro_id, p->ro_id) == 0 &&
	    (copy = link_take_reply(lm)) != NULL) {
		t = xcalloc(1, sizeof *t);
		t->gw = gw;
		t->ncs = xstrdup(n->conf->name);
		t->ncs_id = xstrdup(n->conf->ncs_id);
		t->mos_id = xstrdup(gw->cfg->mos_id);
		t->m = copy;
		t->type = copy->type;
		t->ro_id = xstrdup(p->ro_id);
		t->from_ncs = true;
		t->start_mono = util_mono_ms();
		dbw_submit(gw->dbw, p2_run, p2_done, t);
	} else if (res == LINK_REPLY)
		log_event(LL_WARN, "ro.resync", "ncs=%s ro=%s result=%s",
		    log_q(n->conf->name), log_q(p->ro_id),
		    reply->type == MOS_T_RO_ACK ? log_q(reply->u.ro_ack.ro_status)
		    : log_q(mos_type_name(reply->type)));
	free(p->ro_id);
	free(p);
}

/* Ask the NCS for a running order again (once at a time per roID). */
void
profile2_resync(struct ncs *n, const char *ro_id)
{
	struct ro_pending	*p;
	struct link_msg		*lm;
	struct mos_msg		*m;

	TAILQ_FOREACH(p, &n->ro_pending, entry) {
		if (strcmp(p->ro_id, ro_id) == 0)
			return;
	}
	p = xcalloc(1, sizeof *p);
	p->ncs = n;
	p->ro_id = xstrdup(ro_id);
	TAILQ_INSERT_TAIL(&n->ro_pending, p, entry);
	m = reply_new(MOS_T_RO_REQ, n->gw->cfg->mos_id, n->conf->ncs_id, 0);
	m->u.ro_req.ro_id = mos_msg_strdup(m, ro_id);
	lm = link_msg_new(m, p2_resync_cb, p);
	log_event(LL_INFO, "ro.resync", "ncs=%s ro=%s result=requested",
	    log_q(n->conf->name), log_q(ro_id));
	ncs_send(n, GW_PORT_UPPER, lm);
}
