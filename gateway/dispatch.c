/*
 * Frames from an NCS, on a session or on our own link: parse, check that the
 * (mosID, ncsID) pair is configured, record in history, and route requests
 * to the profile handlers. Whatever goes wrong is answered with the
 * protocol's negative answer where the message type allows it (mosAck NACK
 * on lower/query, roAck on upper) or logged and dropped; the connection
 * stays up.
 *
 * What an unauthenticated peer sends costs bounded disk: a frame with a
 * pair that is not configured, one from an address its NCS does not allow,
 * or one that does not parse on a connection no NCS is known on yet, is
 * recorded as a summary (type, size, peer, envelope IDs, the first
 * DISPATCH_PREFIX bytes), and only while token buckets per source address
 * and in all have a token; past them such frames (and our NACKs) are only
 * counted, in the next summary and msg.reject line.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/gateway.h"

#define DISPATCH_PREFIX	256	/* bytes of a summarized frame kept */
#define DISPATCH_ID_MAX	64	/* characters of an ID in a summary */

/* May one more unauthenticated frame be recorded and logged? */
static bool
dispatch_admit(struct gw *gw, struct conn *c)
{
	int64_t	now = util_mono_ms();

	if (srclim_take(gw->hist_src, &c->src, now) &&
	    bucket_take(&gw->hist_all, now))
		return true;
	gw->hist_skipped++;
	return false;
}

/* A short printable copy of an ID (or type) from an untrusted frame. */
static void
dispatch_short(char *dst, size_t len, const char *s)
{
	size_t	i;

	for (i = 0; s != NULL && s[i] != '\0' && i + 1 < len &&
	    i < DISPATCH_ID_MAX; i++)
		dst[i] = isgraph((unsigned char)s[i]) ? s[i] : '?';
	dst[i] = '\0';
}

/*
 * Record the summary of an unauthenticated frame: what (unknown-pair,
 * not-allowed, parse-error) with its size, peer and IDs as the outcome,
 * and the first bytes of the frame (whole characters) as its XML.
 */
static void
dispatch_summary(struct gw *gw, struct conn *c, const struct mos_frame *f,
    const char *type, int32_t message_id, const char *what,
    const char *mos_id, const char *ncs_id)
{
	char	outcome[300], tname[DISPATCH_ID_MAX + 1];
	char	mid[DISPATCH_ID_MAX + 1], nid[DISPATCH_ID_MAX + 1];
	size_t	n = f->len < DISPATCH_PREFIX ? f->len : DISPATCH_PREFIX;

	if (f->enc == MOS_ENC_UTF16BE)
		n &= ~(size_t)1;
	else
		while (n > 0 && n < f->len && (f->data[n] & 0xc0) == 0x80)
			n--;
	dispatch_short(mid, sizeof mid, mos_id);
	dispatch_short(nid, sizeof nid, ncs_id);
	dispatch_short(tname, sizeof tname, type);
	snprintf(outcome, sizeof outcome, "%s bytes=%zu peer=%s mos_id=%s "
	    "ncs_id=%s skipped=%llu", what, f->len, c->peer, mid, nid,
	    (unsigned long long)gw->hist_skipped);
	history_add(gw->hist, c->ncs, c->port, HISTORY_IN, c->id, message_id,
	    tname, outcome, f->data, n, f->enc);
	gw_flush_soon(gw);
}

/* Record an incoming frame. */
static void
dispatch_history(struct gw *gw, struct conn *c, const struct mos_frame *f,
    const char *type, int32_t message_id, const char *outcome)
{
	history_add(gw->hist, c->ncs, c->port, HISTORY_IN, c->id, message_id,
	    type, outcome, f->data, f->len, f->enc);
	gw_flush_soon(gw);
}

/* Send a negative answer; log and record it if record. */
static void
dispatch_nack(struct gw *gw, struct conn *c, const char *ncs_id,
    int32_t message_id, const char *type, const char *text, bool record)
{
	struct mos_msg	*r;

	r = reply_nack(c->port, gw->cfg->mos_id, ncs_id, message_id, text);
	if (record)
		log_event_rl(LL_WARN, "msg.nack", conn_log_key(c), "conn=%llu "
		    "ncs=%s port=%s type=%s message_id=%d reason=%s",
		    (unsigned long long)c->id, log_q(c->ncs),
		    gw_port_name(c->port), log_q(type), (int)message_id,
		    log_q(text));
	conn_send_rec(c, r, "nack", record);
	mos_msg_free(r);
}

/* A frame that did not parse: NACK if the envelope could be read. */
static void
dispatch_bad_frame(struct gw *gw, struct conn *c, const struct mos_frame *f,
    const struct mos_error *err)
{
	const struct mos_envelope	*env = &err->env;
	char				 text[300];
	int32_t				 id = env->have_message_id ?
					    env->message_id : 0;
	bool				 record = true;

	metrics_count(MET_FRAME_ERRORS, gw_port_name(c->port), "parse", NULL);
	if (c->ncs[0] != '\0')
		dispatch_history(gw, c, f, env->type_name, id, "parse-error");
	else if ((record = dispatch_admit(gw, c)))
		dispatch_summary(gw, c, f, env->type_name, id, "parse-error",
		    env->have_mos_id ? env->mos_id : NULL,
		    env->have_ncs_id ? env->ncs_id : NULL);
	if (record)
		log_event_rl(LL_WARN, "frame.error", conn_log_key(c),
		    "conn=%llu ncs=%s port=%s peer=%s stage=parse type=%s "
		    "message_id=%d code=%s error=%s", (unsigned long long)c->id,
		    log_q(c->ncs), gw_port_name(c->port), log_q(c->peer),
		    log_q(env->type_name),
		    (int)id, mos_err_name(err->code), log_q(err->msg));
	if (reply_is_answer_type(env->type_name) || !env->have_mos_id ||
	    !env->have_ncs_id) {
		if (record)
			log_event_rl(LL_INFO, "msg.drop", conn_log_key(c),
			    "conn=%llu port=%s reason=%s",
			    (unsigned long long)c->id,
			    gw_port_name(c->port),
			    reply_is_answer_type(env->type_name) ?
			    "answer-type" : "no-envelope");
		return;
	}
	snprintf(text, sizeof text, "Bad message: %s", err->msg);
	dispatch_nack(gw, c, env->ncs_id, id, env->type_name, text, record);
}

/* A frame whose (mosID, ncsID) pair is not configured. */
static void
dispatch_unknown_pair(struct gw *gw, struct conn *c,
    const struct mos_frame *f, const struct mos_msg *m)
{
	char	text[400];
	int32_t	id = m->has_message_id ? m->message_id : 0;
	bool	record;

	metrics_count(MET_FRAME_ERRORS, gw_port_name(c->port), "envelope",
	    NULL);
	if ((record = dispatch_admit(gw, c))) {
		dispatch_summary(gw, c, f, m->type_name, id, "unknown-pair",
		    m->mos_id, m->ncs_id);
		log_event(LL_WARN, "msg.reject", "conn=%llu port=%s peer=%s "
		    "type=%s mos_id=%s ncs_id=%s reason=unknown-pair "
		    "skipped=%llu", (unsigned long long)c->id,
		    gw_port_name(c->port), c->peer, log_q(m->type_name),
		    log_q(m->mos_id), log_q(m->ncs_id),
		    (unsigned long long)gw->hist_skipped);
		gw->hist_skipped = 0;
	}
	if (reply_is_answer_type(m->type_name))
		return;
	snprintf(text, sizeof text, "MosDevice not found: mosID '%s' with "
	    "ncsID '%s' is not configured here", m->mos_id != NULL ?
	    m->mos_id : "", m->ncs_id != NULL ? m->ncs_id : "");
	dispatch_nack(gw, c, m->ncs_id, id, m->type_name, text, record);
}

/* A frame for n from an address n does not allow: summary, close. */
static void
dispatch_not_allowed(struct gw *gw, struct conn *c,
    const struct mos_frame *f, const struct mos_msg *m, struct ncs *n)
{
	char	key[100];

	if (dispatch_admit(gw, c))
		dispatch_summary(gw, c, f, m->type_name, m->has_message_id ?
		    m->message_id : 0, "not-allowed", m->mos_id, m->ncs_id);
	snprintf(key, sizeof key, "[ncs.%s] allow", n->conf->name);
	session_log_refusal(c->port, c->peer, "not-allowed", n->conf->name,
	    key);
	conn_abort(c, "not-allowed");
}

/* Empty or absent. */
static bool
dispatch_empty(const char *s)
{
	return s == NULL || *s == '\0';
}

/*
 * The NCS a parsed message belongs to, or NULL if its pair is not configured.
 */
struct ncs *
dispatch_pair(struct gw *gw, struct ncs *hint, const struct mos_msg *m)
{
	struct ncs	*n = NULL;
	bool		 lenient;

	if (!dispatch_empty(m->ncs_id))
		n = ncs_find_by_wire_id(gw, m->ncs_id);
	else if (hint != NULL && hint->conf->mode == MOS_LENIENT)
		n = hint;	/* a reply without ncsID on our own link */
	if (n == NULL)
		return NULL;
	lenient = n->conf->mode == MOS_LENIENT;
	if (m->mos_id != NULL && strcmp(m->mos_id, gw->cfg->mos_id) == 0)
		return n;
	if (lenient && dispatch_empty(m->mos_id))
		return n;	/* ENPS acks with an empty mosID */
	return NULL;
}

/* Parse with the NCS's mode; re-parse strictly once a strict NCS is known. */
struct mos_msg *
dispatch_parse(struct gw *gw, struct ncs *hint, const struct mos_frame *f,
    struct mos_error *err)
{
	struct mos_msg	*m = NULL;
	struct ncs	*n;
	enum mos_mode	 mode = hint != NULL ? hint->conf->mode : MOS_LENIENT;

	if (mos_parse(f->data, f->len, f->enc, mode, &m, err) != MOS_OK)
		return NULL;
	if (hint == NULL && m->ncs_id != NULL &&
	    (n = ncs_find_by_wire_id(gw, m->ncs_id)) != NULL &&
	    n->conf->mode == MOS_STRICT) {
		mos_msg_free(m);
		m = NULL;
		if (mos_parse(f->data, f->len, f->enc, MOS_STRICT, &m,
		    err) != MOS_OK)
			return NULL;
	}
	return m;
}

/* Parse, check the pair, record; NULL when answered or dropped here. */
struct mos_msg *
dispatch_frame(struct gw *gw, struct conn *c, struct ncs **ncsp,
    const struct mos_frame *f)
{
	struct mos_error	 err;
	struct mos_msg		*m;

	memset(&err, 0, sizeof err);
	m = dispatch_parse(gw, *ncsp, f, &err);
	return dispatch_parsed(gw, c, ncsp, f, m, &err);
}

/* The same for a frame parsed elsewhere (m, or NULL and err). */
struct mos_msg *
dispatch_parsed(struct gw *gw, struct conn *c, struct ncs **ncsp,
    const struct mos_frame *f, struct mos_msg *m, const struct mos_error *err)
{
	struct ncs		*n;
	int32_t			 id;
	size_t			 i;

	if (m == NULL) {
		dispatch_bad_frame(gw, c, f, err);
		return NULL;
	}
	id = m->has_message_id ? m->message_id : 0;
	if ((n = dispatch_pair(gw, *ncsp, m)) == NULL) {
		dispatch_unknown_pair(gw, c, f, m);
		mos_msg_free(m);
		return NULL;
	}
	if (c->src.af != 0 && !ncs_allows(n, &c->src)) {
		dispatch_not_allowed(gw, c, f, m, n);
		mos_msg_free(m);
		return NULL;
	}
	if (c->ncs[0] == '\0')
		conn_set_ncs(c, n->conf->name);
	dispatch_history(gw, c, f, m->type_name, id, "ok");
	for (i = 0; i < m->warnings.n; i++)
		log_event(LL_WARN, "msg.repaired", "conn=%llu ncs=%s port=%s "
		    "type=%s message_id=%d what=%s", (unsigned long long)c->id,
		    log_q(n->conf->name), gw_port_name(c->port),
		    log_q(m->type_name), (int)id, log_q(m->warnings.v[i]));
	if (log_enabled(LL_DEBUG))
		log_event(LL_DEBUG, "msg.in", "conn=%llu ncs=%s port=%s "
		    "type=%s "
		    "message_id=%d bytes=%zu", (unsigned long long)c->id,
		    log_q(n->conf->name), gw_port_name(c->port),
		    log_q(m->type_name), (int)id, f->len);
	*ncsp = n;
	return m;
}

/* A large frame being parsed on the bookkeeping thread. */
struct dispatch_async {
	struct gw		*gw;
	uint64_t		 conn;
	uint8_t			*data;
	size_t			 len;
	enum mos_enc		 enc;
	enum mos_mode		 mode;
	dispatch_parsed_fn	 done;
	struct mos_msg		*m;
	struct mos_error	 err;
};

/* The thread: parse (and nothing else). */
static int
dispatch_async_run(struct gwdb *g, void *arg)
{
	struct dispatch_async	*p = arg;

	(void)g;
	memset(&p->err, 0, sizeof p->err);
	return mos_parse(p->data, p->len, p->enc, p->mode, &p->m, &p->err);
}

/* Parsed: the connection goes on, and its owner has the message. */
static void
dispatch_async_done(void *arg, int rc)
{
	struct dispatch_async	*p = arg;
	struct mos_frame	 f;
	struct conn		*c;

	(void)rc;
	if ((c = dispatch_conn_find(p->gw, p->conn)) != NULL) {
		conn_hold(c, false);
		memset(&f, 0, sizeof f);
		f.data = p->data;
		f.len = p->len;
		f.enc = p->enc;
		p->done(c, &f, p->m, &p->err);
	} else
		mos_msg_free(p->m);
	free(p->data);
	free(p);
}

/*
 * Parse a large frame (a 10 MB roCreate, or the roList of our roReq) on the
 * bookkeeping thread, so that the other links go on meanwhile. The
 * connection is held until then, so its frames keep their order; done gets
 * the message (or NULL and the error) if the connection is still open.
 */
void
dispatch_parse_async(struct gw *gw, struct conn *c, const struct mos_frame *f,
    enum mos_mode mode, dispatch_parsed_fn done)
{
	struct dispatch_async	*p;

	p = xcalloc(1, sizeof *p);
	p->gw = gw;
	p->conn = c->id;
	p->data = xmalloc(f->len);
	memcpy(p->data, f->data, f->len);
	p->len = f->len;
	p->enc = f->enc;
	p->mode = mode;
	p->done = done;
	conn_hold(c, true);
	dbw_submit(gw->dbw, dispatch_async_run, dispatch_async_done, p);
}

/* The connection with that number (a session or a link), if still open. */
struct conn *
dispatch_conn_find(struct gw *gw, uint64_t id)
{
	struct session	*s;
	struct ncs	*n;
	struct link	*l;
	int		 t, p;

	TAILQ_FOREACH(s, &gw->sessions, entry) {
		if (s->conn != NULL && s->conn->id == id)
			return s->conn;
	}
	TAILQ_FOREACH(n, &gw->ncs, entry) {
		for (t = 0; t < 2; t++) {
			for (p = 0; p < 2; p++) {
				l = n->link[t][p];
				if (l != NULL && l->conn != NULL &&
				    l->conn->id == id)
					return l->conn;
			}
		}
		if (n->qlink != NULL && n->qlink->conn != NULL &&
		    n->qlink->conn->id == id)
			return n->qlink->conn;
	}
	return NULL;
}

/* Send a reply and free it. */
int
dispatch_reply(struct conn *c, struct mos_msg *m, const char *outcome)
{
	int	rc;

	rc = conn_send(c, m, outcome);
	mos_msg_free(m);
	return rc;
}

/* A request answered here and now. */
static void
dispatch_answer(struct gw *gw, struct conn *c, struct ncs *ncs,
    const struct mos_msg *m)
{
	char	text[200];

	switch (m->type) {
	case MOS_T_HEARTBEAT:
		profile0_heartbeat(gw, c, ncs, m);
		return;
	case MOS_T_REQ_MACH_INFO:
		profile0_req_mach_info(gw, c, ncs, m);
		return;
	case MOS_T_MOS_REQ_OBJ:
		profile1_req_obj(gw, c, ncs, m);
		return;
	case MOS_T_MOS_REQ_ALL:
		profile1_req_all(gw, c, ncs, m);
		return;
	case MOS_T_MOS_REQ_SEARCHABLE_SCHEMA:
		profile3_req_searchable_schema(gw, c, ncs, m);
		return;
	case MOS_T_KEEP_ALIVE:
		return;		/* MOS 4.0: no reply */
	default:
		break;
	}
	if (reply_is_answer_type(m->type_name)) {
		log_event(LL_INFO, "msg.unpaired", "conn=%llu ncs=%s port=%s "
		    "type=%s message_id=%d", (unsigned long long)c->id,
		    log_q(ncs->conf->name), gw_port_name(c->port),
		    log_q(m->type_name),
		    m->has_message_id ? (int)m->message_id : 0);
		return;
	}
	snprintf(text, sizeof text, "Unsupported message: %s",
	    m->type_name != NULL ? m->type_name : mos_type_name(m->type));
	dispatch_nack(gw, c, m->ncs_id, m->has_message_id ? m->message_id : 0,
	    m->type_name, text, true);
}

/*
 * A request from an NCS: the profile handler answers on the same socket
 * (running orders and Profile 3's changes and searches after their work
 * on the bookkeeping thread).
 */
void
dispatch_request(struct gw *gw, struct conn *c, struct ncs *ncs,
    struct mos_msg *m)
{
	switch (m->type) {
	case MOS_T_MOS_OBJ_CREATE:
		profile3_obj_create(gw, c, ncs, m);
		return;
	case MOS_T_MOS_REQ_OBJ_ACTION:
		profile3_req_obj_action(gw, c, ncs, m);
		return;
	case MOS_T_MOS_REQ_OBJ_LIST:
		profile3_req_obj_list(gw, c, ncs, m);
		return;
	default:
		break;
	}
	if (profile2_handles(m->type)) {
		profile2_request(gw, c, ncs, m);
		return;
	}
	dispatch_answer(gw, c, ncs, m);
	mos_msg_free(m);
}
