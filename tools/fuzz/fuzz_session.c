/*
 * fuzz_session: a whole gateway session without a socket. The gateway is
 * made once (gw_new on a SQLite file in a temporary directory, no listeners,
 * its NCSs' links never started) with a small catalog; each input opens a
 * session on one end of a bufferevent pair (session_open), hands it the
 * stream in chunks (conn_input), runs the event loop and the bookkeeping
 * thread until nothing is left to do, ends the session, and checks:
 *
 *   - nothing crashes or leaks, and the gateway is the same afterwards;
 *   - nothing is logged at level error (an answer that could not be
 *     written, a database error);
 *   - every frame the gateway sends frames, parses, carries our mosID, is
 *     in the session's encoding and is an answer (never a request of ours);
 *   - every answer pairs with a request of this session (same messageID);
 *     a positive one (anything but mosAck NACK, roAck other than OK) only
 *     for a request type with a row in fs_rules[], whose check must hold
 *     against the committed database (a connection of our own) at the
 *     moment the answer is written;
 *   - once flushed (every FS_CHECK_EVERY inputs, and at exit) the history
 *     holds every positive answer each session received (answers to
 *     frames of no known NCS are left out of it on purpose).
 *
 * A handler that acknowledges something new (roCreate, mosObjCreate, ...)
 * needs a row in fs_rules[] saying what must be stored when it does, and,
 * if that state can pile up from input to input, a line in fs_reset().
 *
 * Input: one configuration byte, then the stream.
 *   bits 0-1  port: 0 lower, 1 upper, 2 query, 3 lower
 *   bits 2-4  chunking pattern (fuzz_chunk)
 *   bit  5    the peer closes its side at the end (else the gateway closes)
 *   bit  6    the peer reads nothing until the end (output backpressure)
 */
#include <sys/stat.h>

#include <netinet/in.h>

#include <errno.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "gateway/gateway.h"
#include "tools/fuzz/fuzz.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);
int	LLVMFuzzerInitialize(int *, char ***);

#define FS_MOS_ID	"mam.newsroom.example.mos"
#define FS_SETTLE_MAX	100000		/* loop passes per settle */
#define FS_CHECK_EVERY	64		/* inputs between history checks */

/* lower_port etc. and api_port are set to 0 (no listeners) before gw_new. */
static const char fs_conf[] =
    "[gateway]\n"
    "mos_id = " FS_MOS_ID "\n"
    "pre_handshake_frame = 4096\n"
    "max_frame = 262144\n"
    "max_junk = 1024\n"
    "frame_deadline = 86400\n"
    "output_high_watermark = 4096\n"
    "[database]\n"
    "path = %s/fuzz.db\n"
    "synchronous = normal\n"
    "[log]\n"
    "level = error\n"
    "[ncs.a]\n"
    "ncs_id = ncs.newsroom.example\n"
    "host = 127.0.0.1\n"
    "[ncs.b]\n"
    "ncs_id = ENPS-PROD\n"
    "buddy_ncs_id = ENPS-BUDDY\n"
    "host = 127.0.0.1\n"
    "buddy_host = 127.0.0.2\n"
    "mode = strict\n"
    "encoding = utf8\n"
    "[ncs.c]\n"
    "ncs_id = NCS.SEED\n"
    "host = 127.0.0.1\n"
    "publish = false\n";

/*
 * A frame the session sent, in order, as the harness parsed it: a request,
 * or (m NULL) one that does not parse but that the gateway NACKs.
 */
struct fs_req {
	struct mos_msg	*m;
	int32_t		 id;		/* 0 = none */
	bool		 answered;
	bool		 positive;	/* answered positively */
	bool		 unknown;	/* of no NCS, as modelled: refused at
					   once, "MosDevice not found" */
	struct ncs	*read_ncs;	/* the session's when the gateway read
					   it, as modelled (fs.hint) */
	struct ncs	*ncs;		/* the session's when answered */
};

/* A check run when a positive answer is written; false and why if broken. */
typedef bool	(*fs_check_fn)(const struct fs_req *, const struct mos_msg *,
		    const struct mos_frame *, char *, size_t);

/* What a request type may be answered with, positively, and what it means. */
struct fs_rule {
	enum mos_type	 req;
	enum mos_type	 answer;
	fs_check_fn	 check;		/* NULL: nothing stored to check */
	bool		 deferred;	/* check once the loop settled */
};

static bool	fs_obj_stored(const struct fs_req *, const struct mos_msg *,
		    const struct mos_frame *, char *, size_t);
static bool	fs_reqall_queued(const struct fs_req *, const struct mos_msg *,
		    const struct mos_frame *, char *, size_t);
static bool	fs_ro_stored(const struct fs_req *, const struct mos_msg *,
		    const struct mos_frame *, char *, size_t);
static bool	fs_ro_listed(const struct fs_req *, const struct mos_msg *,
		    const struct mos_frame *, char *, size_t);
static bool	fs_p3_stored(const struct fs_req *, const struct mos_msg *,
		    const struct mos_frame *, char *, size_t);
static bool	fs_p3_listed(const struct fs_req *, const struct mos_msg *,
		    const struct mos_frame *, char *, size_t);

static const struct fs_rule fs_rules[] = {
	{ MOS_T_HEARTBEAT, MOS_T_HEARTBEAT, NULL, false },
	{ MOS_T_REQ_MACH_INFO, MOS_T_LIST_MACH_INFO, NULL, false },
	{ MOS_T_MOS_REQ_OBJ, MOS_T_MOS_OBJ, fs_obj_stored, false },
	{ MOS_T_MOS_REQ_ALL, MOS_T_MOS_ACK, fs_reqall_queued, true },
	/* Running orders: roAck OK once the change is committed. */
	{ MOS_T_RO_CREATE, MOS_T_RO_ACK, fs_ro_stored, false },
	{ MOS_T_RO_REPLACE, MOS_T_RO_ACK, fs_ro_stored, false },
	{ MOS_T_RO_DELETE, MOS_T_RO_ACK, fs_ro_stored, false },
	{ MOS_T_RO_METADATA_REPLACE, MOS_T_RO_ACK, fs_ro_stored, false },
	{ MOS_T_RO_READY_TO_AIR, MOS_T_RO_ACK, fs_ro_stored, false },
	{ MOS_T_RO_ELEMENT_ACTION, MOS_T_RO_ACK, fs_ro_stored, false },
	{ MOS_T_RO_STORY_APPEND, MOS_T_RO_ACK, fs_ro_stored, false },
	{ MOS_T_RO_STORY_INSERT, MOS_T_RO_ACK, fs_ro_stored, false },
	{ MOS_T_RO_STORY_REPLACE, MOS_T_RO_ACK, fs_ro_stored, false },
	{ MOS_T_RO_STORY_MOVE, MOS_T_RO_ACK, fs_ro_stored, false },
	{ MOS_T_RO_STORY_SWAP, MOS_T_RO_ACK, fs_ro_stored, false },
	{ MOS_T_RO_STORY_DELETE, MOS_T_RO_ACK, fs_ro_stored, false },
	{ MOS_T_RO_STORY_MOVE_MULTIPLE, MOS_T_RO_ACK, fs_ro_stored, false },
	{ MOS_T_RO_ITEM_INSERT, MOS_T_RO_ACK, fs_ro_stored, false },
	{ MOS_T_RO_ITEM_REPLACE, MOS_T_RO_ACK, fs_ro_stored, false },
	{ MOS_T_RO_ITEM_MOVE_MULTIPLE, MOS_T_RO_ACK, fs_ro_stored, false },
	{ MOS_T_RO_ITEM_DELETE, MOS_T_RO_ACK, fs_ro_stored, false },
	{ MOS_T_MOS_ITEM_REPLACE, MOS_T_RO_ACK, fs_ro_stored, false },
	{ MOS_T_RO_STORY_SEND, MOS_T_RO_ACK, fs_ro_stored, false },
	{ MOS_T_RO_REQ, MOS_T_RO_LIST, fs_ro_listed, false },
	{ MOS_T_RO_REQ_ALL, MOS_T_RO_LIST_ALL, fs_ro_listed, false },
	/* Placeholders and search: mosAck ACK once the asset is committed. */
	{ MOS_T_MOS_OBJ_CREATE, MOS_T_MOS_ACK, fs_p3_stored, false },
	{ MOS_T_MOS_REQ_OBJ_ACTION, MOS_T_MOS_ACK, fs_p3_stored, false },
	{ MOS_T_MOS_REQ_SEARCHABLE_SCHEMA, MOS_T_MOS_LIST_SEARCHABLE_SCHEMA,
	    NULL, false },
	{ MOS_T_MOS_REQ_OBJ_LIST, MOS_T_MOS_OBJ_LIST, fs_p3_listed, false },
};

/* A deferred check: a positive answer and the request it answered. */
struct fs_later {
	const struct fs_rule	*rule;
	size_t			 req;
	struct mos_msg		*answer;
};

static struct {
	char			 dir[256];
	char			 db[300];
	char			 log[300];	/* the gateway's, level error */
	struct addr		 src;		/* of every session: 127.0.0.1 */
	off_t			 logged;
	struct gw		*gw;
	struct gwdb		*view;		/* committed state only */
	struct session		*sess;		/* NULL once closed */
	uint64_t		 conn_id;
	enum mos_enc		 enc;		/* of the session's output */
	struct bufferevent	*pair[2];	/* [0] the gateway's */
	struct mos_framer	*in;		/* the requests */
	struct ncs		*hint;		/* the session's NCS, as modelled */
	int			 framing;	/* in's error, or 0 */
	struct mos_framer	*out;		/* the answers */
	struct fs_req		*reqs;
	size_t			 nreqs;
	size_t			 capreqs;
	struct fs_later		*later;
	size_t			 nlater;
	size_t			 caplater;
	size_t			 answers;	/* positive ones */
	struct {
		uint64_t	 conn;
		size_t		 answers;
	}			 done[FS_CHECK_EVERY];	/* since the check */
	size_t			 ndone;
} fs;

/* ------------------------------------------------------------------------ */
/* Rules. */

/* mosReqObj -> mosObj: exactly the committed row, as the catalog builds it. */
static bool
fs_obj_stored(const struct fs_req *r, const struct mos_msg *a,
    const struct mos_frame *f, char *why, size_t len)
{
	struct catalog_asset	 row;
	struct mos_msg		*m;
	struct mos_buf		 b = { NULL, 0, 0 };
	char			 err[256], *cause = NULL;
	bool			 ok = false;
	int			 rc;

	memset(&row, 0, sizeof row);
	if (r->m->u.mos_req_obj.obj_id == NULL || a->u.mos_obj.obj_id == NULL ||
	    strcmp(r->m->u.mos_req_obj.obj_id, a->u.mos_obj.obj_id) != 0) {
		snprintf(why, len, "mosObj for another objID");
		return false;
	}
	if ((rc = catalog_get(fs.view, a->u.mos_obj.obj_id, &row)) != QUEUE_OK ||
	    row.deleted) {
		snprintf(why, len, "mosObj %s not in the committed catalog (%s)",
		    a->u.mos_obj.obj_id, rc == QUEUE_OK ? "deleted" :
		    queue_strerror(rc));
		catalog_asset_clear(&row);
		return false;
	}
	if ((m = catalog_mos_obj(&row, row.status, &cause)) == NULL) {
		snprintf(why, len, "the committed row makes no mosObj: %s",
		    cause != NULL ? cause : "?");
		free(cause);
		catalog_asset_clear(&row);
		return false;
	}
	m->mos_id = a->mos_id;
	m->ncs_id = a->ncs_id;
	m->has_message_id = a->has_message_id;
	m->message_id = a->message_id;
	if (mos_write(m, f->enc, &b, err, sizeof err) != 0)
		snprintf(why, len, "the committed row does not write: %s", err);
	else if (b.len != f->len || memcmp(b.data, f->data, b.len) != 0)
		snprintf(why, len, "mosObj %s differs from the committed row",
		    row.obj_id);
	else
		ok = true;
	mos_buf_free(&b);
	mos_msg_free(m);
	catalog_asset_clear(&row);
	return ok;
}

static struct ncs	*fs_req_ncs(const struct fs_req *);

/*
 * A retry: an earlier request of the session of that type and messageID,
 * for the same NCS, was acknowledged; the gateway keeps its last answers
 * per NCS and gives the same one again (it also compares what the two
 * ask, which is not modelled here).
 */
static bool
fs_p3_retry(const struct fs_req *r)
{
	const struct fs_req	*e;

	if (r->id == 0)
		return false;
	for (e = fs.reqs; e < r; e++) {
		if (e->positive && e->id == r->id && e->m->type == r->m->type &&
		    fs_req_ncs(e) == fs_req_ncs(r))
			return true;
	}
	return false;
}

/*
 * Changes are applied on the bookkeeping thread one after the other and
 * answered once committed, so a later mosReqObjAction of the session on
 * the same object may be committed when an answer is written: the state is
 * then checked only for the last one on that objID.
 */
static bool
fs_p3_last(const struct fs_req *r, const char *obj_id)
{
	const struct fs_req	*e;
	const char		*id;

	for (e = r + 1; e < fs.reqs + fs.nreqs; e++) {
		if (e->m == NULL || e->m->type != MOS_T_MOS_REQ_OBJ_ACTION)
			continue;
		id = e->m->u.mos_req_obj_action.obj_id;
		if (id != NULL && strcmp(id, obj_id) == 0)
			return false;
	}
	return true;
}

/*
 * mosObjCreate / mosReqObjAction ACK: the objID acknowledged is in the
 * committed catalog (NEW, UPDATE), or gone from it (DELETE).
 */
static bool
fs_p3_stored(const struct fs_req *r, const struct mos_msg *a,
    const struct mos_frame *f, char *why, size_t len)
{
	struct catalog_asset	 row;
	const char		*op = "NEW", *id = a->u.mos_ack.obj_id;
	bool			 gone, del;
	int			 rc;

	(void)f;
	if (a->u.mos_ack.status == NULL ||
	    strcmp(a->u.mos_ack.status, "ACK") != 0)
		return true;
	if (r->m->type == MOS_T_MOS_REQ_OBJ_ACTION &&
	    r->m->u.mos_req_obj_action.operation != NULL)
		op = r->m->u.mos_req_obj_action.operation;
	if (id == NULL || *id == '\0') {
		snprintf(why, len, "%s acknowledged without an objID", op);
		return false;
	}
	memset(&row, 0, sizeof row);
	rc = catalog_get(fs.view, id, &row);
	gone = rc == QUEUE_ENOTFOUND || (rc == QUEUE_OK && row.deleted);
	catalog_asset_clear(&row);
	if (rc != QUEUE_OK && rc != QUEUE_ENOTFOUND) {
		snprintf(why, len, "catalog_get %s: %s", id, queue_strerror(rc));
		return false;
	}
	del = strcmp(op, "DELETE") == 0;
	if (gone != del && (fs_p3_retry(r) || !fs_p3_last(r, id))) {
		/* A kept answer, or a later change already committed. */
		return true;
	}
	if (gone != del) {
		snprintf(why, len, "%s of %s acknowledged, the committed catalog "
		    "%s it", op, id, gone ? "does not have" : "still has");
		return false;
	}
	return true;
}

/* mosObjList: every object listed is in the committed catalog. */
static bool
fs_p3_listed(const struct fs_req *r, const struct mos_msg *a,
    const struct mos_frame *f, char *why, size_t len)
{
	struct catalog_asset	 row;
	const char		*id;
	size_t			 i;
	int			 rc;

	(void)r;
	(void)f;
	for (i = 0; i < a->u.mos_obj_list.list.n; i++) {
		id = a->u.mos_obj_list.list.v[i].obj_id;
		memset(&row, 0, sizeof row);
		rc = id != NULL ? catalog_get(fs.view, id, &row) :
		    QUEUE_ENOTFOUND;
		if (rc != QUEUE_OK || row.deleted) {
			snprintf(why, len, "mosObjList lists %s, not in the "
			    "committed catalog", id != NULL ? id : "(none)");
			catalog_asset_clear(&row);
			return false;
		}
		catalog_asset_clear(&row);
	}
	return true;
}

/*
 * The NCS a request came from: its ncsID, else the session's when the
 * gateway read it. Each frame naming an NCS binds the session to it, so
 * the session's NCS when the answer is read can be another one: with the
 * peer reading nothing until the end, every answer is read after the last
 * frame.
 */
static struct ncs *
fs_req_ncs(const struct fs_req *r)
{
	struct ncs	*n = NULL;

	if (r->m->ncs_id != NULL && *r->m->ncs_id != '\0')
		n = ncs_find_by_wire_id(fs.gw, r->m->ncs_id);
	if (n == NULL)
		n = r->read_ncs;
	return n != NULL ? n : r->ncs;
}

/* mosReqAll ACK: a mosListAll or a paced mosReqAll waits for that NCS. */
static bool
fs_reqall_queued(const struct fs_req *r, const struct mos_msg *a,
    const struct mos_frame *f, char *why, size_t len)
{
	struct link_msg	*lm;
	struct ncs	*n;

	(void)f;
	if (a->u.mos_ack.status == NULL ||
	    strcmp(a->u.mos_ack.status, "ACK") != 0)
		return true;
	if ((n = fs_req_ncs(r)) == NULL) {
		snprintf(why, len, "mosReqAll acknowledged for no NCS");
		return false;
	}
	if (n->reqall != NULL)
		return true;
	TAILQ_FOREACH(lm, &n->q[0], entry) {
		if (lm->type == MOS_T_MOS_LIST_ALL)
			return true;
	}
	snprintf(why, len, "mosReqAll acknowledged, nothing queued for %s",
	    n->conf->name);
	return false;
}

/* Room for one more element in an array of n with room for *cap. */
static void *
fs_grow(void *v, size_t n, size_t *cap, size_t size)
{
	if (n < *cap)
		return v;
	*cap = *cap * 2 + 16;
	return xreallocarray(v, *cap, size);
}

/*
 * Running-order changes are applied on the bookkeeping thread one after the
 * other while their answers wait for the loop, so a later request of the
 * session may already be committed when an answer is written: the state is
 * then checked only for the last request of the session on that running
 * order (on any, with ro_id NULL), where it must be exactly the request's.
 */
static bool
fs_ro_last(const struct fs_req *r, const char *ro_id)
{
	const char	*id;
	size_t		 i;

	for (i = (size_t)(r - fs.reqs) + 1; i < fs.nreqs; i++) {
		if (fs.reqs[i].m == NULL || !profile2_handles(fs.reqs[i].m->type))
			continue;
		id = rostore_ro_id(fs.reqs[i].m);
		if (ro_id == NULL || (id != NULL && strcmp(id, ro_id) == 0))
			return false;
	}
	return true;
}

/*
 * roAck OK to a change: for the roID the request names, the committed store
 * holds the running order (none after roDelete).
 */
static bool
fs_ro_stored(const struct fs_req *r, const struct mos_msg *a,
    const struct mos_frame *f, char *why, size_t len)
{
	const char	*ro_id = rostore_ro_id(r->m);
	struct mos_msg	*ro = NULL;
	struct ncs	*n;
	int		 rc;

	(void)f;
	if (ro_id == NULL || a->u.ro_ack.ro_id == NULL ||
	    strcmp(ro_id, a->u.ro_ack.ro_id) != 0) {
		snprintf(why, len, "roAck for roID '%s', the request names '%s'",
		    a->u.ro_ack.ro_id != NULL ? a->u.ro_ack.ro_id : "",
		    ro_id != NULL ? ro_id : "");
		return false;
	}
	if ((n = fs_req_ncs(r)) == NULL) {
		snprintf(why, len, "acknowledged for no NCS");
		return false;
	}
	if (!fs_ro_last(r, ro_id))
		return true;
	rc = rostore_get(fs.view, n->conf->name, ro_id, &ro, NULL);
	mos_msg_free(ro);
	if (r->m->type == MOS_T_RO_DELETE ? rc == QUEUE_ENOTFOUND :
	    rc == QUEUE_OK)
		return true;
	snprintf(why, len, "running order %s of %s: %s in the committed store",
	    ro_id, n->conf->name, rc == QUEUE_OK ? "still" : rc ==
	    QUEUE_ENOTFOUND ? "not" : queue_strerror(rc));
	return false;
}

/*
 * roList to roReq, roListAll to roReqAll: what the committed store holds
 * for that NCS (that running order, as many running orders).
 */
static bool
fs_ro_listed(const struct fs_req *r, const struct mos_msg *a,
    const struct mos_frame *f, char *why, size_t len)
{
	struct rostore_row	*rows = NULL;
	struct mos_msg		*ro = NULL;
	const char		*ro_id = rostore_ro_id(r->m);
	struct ncs		*n;
	size_t			 nrows = 0;
	int			 rc;

	(void)f;
	if ((n = fs_req_ncs(r)) == NULL) {
		snprintf(why, len, "answered for no NCS");
		return false;
	}
	if (r->m->type == MOS_T_RO_REQ) {
		if (!fs_ro_last(r, ro_id != NULL ? ro_id : ""))
			return true;
		rc = rostore_get(fs.view, n->conf->name, ro_id != NULL ?
		    ro_id : "", &ro, NULL);
		mos_msg_free(ro);
		if (rc == QUEUE_OK && a->u.ro_list.ro_id != NULL &&
		    ro_id != NULL && strcmp(a->u.ro_list.ro_id, ro_id) == 0)
			return true;
		snprintf(why, len, "roList %s of %s: %s",
		    a->u.ro_list.ro_id != NULL ? a->u.ro_list.ro_id : "",
		    n->conf->name, rc == QUEUE_OK ? "another roID" :
		    queue_strerror(rc));
		return false;
	}
	if (!fs_ro_last(r, NULL))
		return true;
	if ((rc = rostore_list(fs.view, n->conf->name, &rows, &nrows)) !=
	    QUEUE_OK || nrows != a->u.ro_list_all.ro.n) {
		snprintf(why, len, "roListAll of %zu running orders, %zu in the "
		    "committed store of %s (%s)", a->u.ro_list_all.ro.n, nrows,
		    n->conf->name, queue_strerror(rc));
		rostore_rows_free(rows, nrows);
		return false;
	}
	rostore_rows_free(rows, nrows);
	return true;
}

/* ------------------------------------------------------------------------ */
/* Requests and answers. */

/* The caps of the session's framer: frame (a gateway setting) and max_junk. */
static void
fs_in_limits(int64_t frame)
{
	struct mos_framer_limits	lim;

	lim.max_frame = (size_t)frame;
	lim.max_junk = (size_t)fs.gw->cfg->max_junk;
	mos_framer_set_limits(fs.in, &lim);
}

/*
 * Frame and parse what the session sent so far, as the gateway will. Its
 * framer's caps: pre_handshake_frame until the first frame of a configured
 * pair from an address that NCS allows (the session is then trusted), then
 * max_frame; max_junk before each frame. A frame is parsed as
 * dispatch_frame parses it: in the mode of the NCS the session is bound to
 * by then (the last such frame's), strictly again for a strict NCS it
 * names; a strict parse that fails is NACKed with the messageID of the
 * envelope, which may differ from a lenient parse's. After a framing error
 * the gateway closes the session: nothing more is recorded.
 *
 * Frames it never answers (answers themselves, bad frames without an
 * envelope) are left out; a bad frame with one stays, for the NACK it gets,
 * so that the NACK does not take the place of a later request with the same
 * messageID.
 */
static void
fs_requests(const uint8_t *p, size_t n)
{
	struct mos_frame	 f;
	struct mos_msg		*m;
	struct mos_error	 err;
	struct ncs		*ncs;
	const char		*type;
	int32_t			 id;
	int			 rc;

	if (mos_framer_feed(fs.in, p, n) != 0)
		abort();
	while ((rc = mos_framer_next(fs.in, &f)) == MOS_FRAME_READY) {
		memset(&err, 0, sizeof err);
		ncs = NULL;
		if ((m = dispatch_parse(fs.gw, fs.hint, &f, &err)) != NULL) {
			type = m->type_name;
			id = m->has_message_id ? m->message_id : 0;
			if ((ncs = dispatch_pair(fs.gw, fs.hint, m)) != NULL &&
			    ncs_allows(ncs, &fs.src)) {
				if (fs.hint == NULL)
					fs_in_limits(fs.gw->cfg->max_frame);
				fs.hint = ncs;
			}
		} else {
			if (!err.env.have_mos_id || !err.env.have_ncs_id)
				continue;
			type = err.env.type_name;
			id = err.env.have_message_id ? err.env.message_id : 0;
		}
		if (reply_is_answer_type(type)) {
			mos_msg_free(m);
			continue;
		}
		fs.reqs = fs_grow(fs.reqs, fs.nreqs, &fs.capreqs,
		    sizeof *fs.reqs);
		fs.reqs[fs.nreqs].m = m;
		fs.reqs[fs.nreqs].id = id;
		fs.reqs[fs.nreqs].answered = false;
		fs.reqs[fs.nreqs].positive = false;
		fs.reqs[fs.nreqs].unknown = m != NULL && ncs == NULL;
		fs.reqs[fs.nreqs].read_ncs = fs.hint;
		fs.nreqs++;
	}
	if (rc < 0)
		fs.framing = rc;
}

/* Is an answer negative (NACK, roAck with an error)? */
static bool
fs_negative(const struct mos_msg *a)
{
	if (a->type == MOS_T_MOS_ACK)
		return a->u.mos_ack.status == NULL ||
		    strcmp(a->u.mos_ack.status, "ACK") != 0;
	if (a->type == MOS_T_RO_ACK)
		return a->u.ro_ack.ro_status == NULL ||
		    strcmp(a->u.ro_ack.ro_status, "OK") != 0;
	return false;
}

/* Both set and equal. */
static bool
fs_same(const char *a, const char *b)
{
	return a != NULL && b != NULL && strcmp(a, b) == 0;
}

/*
 * How well answer a fits request r by the object both name (a mosObj or a
 * mosAck; a mosReqObj, or a mosReqObjAction on an existing object): 2 the
 * same object, or neither names one (a NACK of a frame that does not
 * parse, say); 1 only one of them names one; 0 two different objects.
 * Requests without a messageID all share 0, and a NACK sent at once
 * overtakes the answers that wait for their commit, so this is what tells
 * their answers apart, as it does for an NCS.
 */
static int
fs_fit(const struct fs_req *r, const struct mos_msg *a)
{
	const char	*want = NULL, *got = NULL;

	if (r->m != NULL && r->m->type == MOS_T_MOS_REQ_OBJ)
		want = r->m->u.mos_req_obj.obj_id;
	else if (r->m != NULL && r->m->type == MOS_T_MOS_REQ_OBJ_ACTION)
		want = r->m->u.mos_req_obj_action.obj_id;
	if (want != NULL && *want == '\0')
		want = NULL;
	if (a->type == MOS_T_MOS_OBJ)
		got = a->u.mos_obj.obj_id;
	else if (a->type == MOS_T_MOS_ACK)
		got = a->u.mos_ack.obj_id;
	if (got != NULL && *got == '\0')
		got = NULL;
	if (want == NULL && got == NULL)
		return 2;
	if (want == NULL || got == NULL)
		return 1;
	return strcmp(want, got) == 0 ? 2 : 0;
}

/* An open request with that messageID other than the i-th; nreqs if none. */
static size_t
fs_open_other(size_t i, int32_t id)
{
	size_t	j;

	for (j = 0; j < fs.nreqs; j++) {
		if (j != i && !fs.reqs[j].answered && fs.reqs[j].id == id)
			return j;
	}
	return fs.nreqs;
}

/* Pair a positive answer with the first open request a rule allows. */
static void
fs_positive(const struct mos_msg *a, const struct mos_frame *f)
{
	const struct fs_rule	*rule;
	char			 why[300];
	int32_t			 id = a->has_message_id ? a->message_id : 0;
	size_t			 i, j = 0, k;
	int			 pass;

	/*
	 * An open request for the answer's object, then one where either
	 * names none, then any open request (a wrong object fails its check);
	 * else one a NACK was taken for while another request with that
	 * messageID is open: the NACK was that one's (a NACK sent at once
	 * overtakes an answer that waits for a commit).
	 */
	for (pass = 0; pass < 4; pass++)
	for (i = 0; i < fs.nreqs; i++) {
		if (fs.reqs[i].m == NULL || fs.reqs[i].id != id)
			continue;
		if (pass < 3 ? fs.reqs[i].answered ||
		    fs_fit(&fs.reqs[i], a) < 2 - pass :
		    !fs.reqs[i].answered || fs.reqs[i].positive ||
		    (j = fs_open_other(i, id)) == fs.nreqs)
			continue;
		for (k = 0; k < nitems(fs_rules); k++) {
			rule = &fs_rules[k];
			if (rule->req == fs.reqs[i].m->type &&
			    rule->answer == a->type)
				break;
		}
		/*
		 * A roAck names its running order: answers to changes that
		 * wait for their commit may be overtaken (a resent change
		 * gets its kept answer at once).
		 */
		if (k == nitems(fs_rules) || (a->type == MOS_T_RO_ACK &&
		    !fs_same(rostore_ro_id(fs.reqs[i].m), a->u.ro_ack.ro_id)))
			continue;
		if (pass == 3)
			fs.reqs[j].answered = true;
		fs.reqs[i].answered = fs.reqs[i].positive = true;
		fs.reqs[i].ncs = fs.sess != NULL ? fs.sess->ncs : NULL;
		if (rule->check == NULL)
			return;
		if (rule->deferred) {
			fs.later = fs_grow(fs.later, fs.nlater, &fs.caplater,
			    sizeof *fs.later);
			fs.later[fs.nlater].rule = rule;
			fs.later[fs.nlater].req = i;
			if ((fs.later[fs.nlater].answer = mos_msg_new(a->type)) ==
			    NULL)
				abort();
			/* Only the mosAck's status is looked at later. */
			fs.later[fs.nlater].answer->u.mos_ack.status =
			    mos_msg_strdup(fs.later[fs.nlater].answer,
			    a->u.mos_ack.status);
			fs.nlater++;
			return;
		}
		why[0] = '\0';
		if (!rule->check(&fs.reqs[i], a, f, why, sizeof why))
			FUZZ_FAIL("fuzz_session: %s answered %s without the "
			    "state behind it: %s\n", mos_type_name(rule->req),
			    mos_type_name(a->type), why);
		return;
	}
	FUZZ_FAIL("fuzz_session: positive %s (messageID %d) answers no "
	    "request of the session with a rule in fs_rules[]\n",
	    mos_type_name(a->type), a->has_message_id ? (int)a->message_id : 0);
}

/* A NACK saying that the frame's mosID and ncsID are not configured. */
static bool
fs_unknown_nack(const struct mos_msg *a)
{
	const char	*text = NULL;

	if (a->type == MOS_T_MOS_ACK)
		text = a->u.mos_ack.status_description;
	else if (a->type == MOS_T_RO_ACK)
		text = a->u.ro_ack.ro_status;
	return text != NULL && strncmp(text, "MosDevice not found",
	    strlen("MosDevice not found")) == 0;
}

/*
 * Mark answered (a NACK) the first open request with that messageID for
 * the NACK's object, else the first where either names none, else the
 * first open one. A frame of no configured NCS gets its own NACK at once,
 * naming no object (objID 0), and only such a frame gets one: those NACKs
 * go to such frames in order, the others to the other requests (else a
 * NACK of an unknown frame could take the place of a later mosReqAll's,
 * whose ACK also says objID 0).
 */
static void
fs_negative_answer(const struct mos_msg *a)
{
	int32_t	id = a->has_message_id ? a->message_id : 0;
	bool	unknown = fs_unknown_nack(a);
	size_t	i;
	int	pass;

	for (pass = 0; pass < 3; pass++)
	for (i = 0; i < fs.nreqs; i++) {
		if (!fs.reqs[i].answered && fs.reqs[i].id == id &&
		    fs.reqs[i].unknown == unknown &&
		    fs_fit(&fs.reqs[i], a) >= 2 - pass) {
			fs.reqs[i].answered = true;
			return;
		}
	}
}

/* One frame the gateway wrote. */
static void
fs_answer(const struct mos_frame *f)
{
	struct mos_msg		*a;
	struct mos_error	 err;

	if (f->enc != fs.enc)
		FUZZ_FAIL("fuzz_session: an answer in %s on a %s session\n",
		    mos_enc_name(f->enc), mos_enc_name(fs.enc));
	if (mos_parse(f->data, f->len, f->enc, MOS_LENIENT, &a,
	    &err) != MOS_OK) {
		FUZZ_FAIL("fuzz_session: the gateway wrote a frame that does "
		    "not parse: %s: %s\n", mos_err_name(err.code), err.msg);
		return;
	}
	if (a->mos_id == NULL || strcmp(a->mos_id, FS_MOS_ID) != 0)
		FUZZ_FAIL("fuzz_session: %s without our mosID\n",
		    mos_type_name(a->type));
	if (a->type != MOS_T_HEARTBEAT && a->type != MOS_T_LIST_MACH_INFO &&
	    a->type != MOS_T_MOS_OBJ && !reply_is_answer_type(a->type_name))
		FUZZ_FAIL("fuzz_session: %s sent on a session\n",
		    mos_type_name(a->type));
	else if (fs_negative(a))
		fs_negative_answer(a);
	else {
		fs.answers++;
		fs_positive(a, f);
	}
	mos_msg_free(a);
}

/*
 * Bytes the gateway wrote, as they arrive at the peer's end: at once, while
 * the handler that wrote them is still running.
 */
static void
fs_out_cb(struct evbuffer *buf, const struct evbuffer_cb_info *info,
    void *arg)
{
	struct mos_frame	 f;
	unsigned char		*p;
	size_t			 len = evbuffer_get_length(buf);
	int			 rc;

	(void)arg;
	if (info->n_added == 0 || info->n_added > len)
		return;
	if (fs.sess != NULL)
		fs.enc = conn_encoding(fs.sess->conn);
	if ((p = evbuffer_pullup(buf, -1)) == NULL ||
	    mos_framer_feed(fs.out, p + len - info->n_added,
	    info->n_added) != 0)
		abort();
	while ((rc = mos_framer_next(fs.out, &f)) == MOS_FRAME_READY)
		fs_answer(&f);
	if (rc < 0)
		FUZZ_FAIL("fuzz_session: the gateway's output does not frame: "
		    "%s\n", mos_framer_errmsg(fs.out));
}

/* ------------------------------------------------------------------------ */
/* The gateway. */

/*
 * Run the loop until nothing is left to do; with all, wait for the
 * bookkeeping thread too (it otherwise runs its flushes alongside).
 */
static void
fs_settle(bool all)
{
	struct event_base	*base = fs.gw->base;
	int			 i;

	for (i = 0; i < FS_SETTLE_MAX; i++) {
		if (event_base_get_num_events(base,
		    EVENT_BASE_COUNT_ACTIVE) > 0)
			event_base_loop(base, EVLOOP_NONBLOCK);
		else if (all && dbw_pending(fs.gw->dbw) > 0)
			dbw_wait(fs.gw->dbw);
		else
			break;
	}
	if (i == FS_SETTLE_MAX)
		FUZZ_FAIL("fuzz_session: the loop never settles\n");
	if (TAILQ_EMPTY(&fs.gw->sessions))
		fs.sess = NULL;
	evbuffer_drain(bufferevent_get_input(fs.pair[1]),
	    evbuffer_get_length(bufferevent_get_input(fs.pair[1])));
}

/* The deferred checks, now that the loop settled. */
static void
fs_later_checks(void)
{
	struct fs_later	*l;
	char		 why[300];
	size_t		 i;

	for (i = 0; i < fs.nlater; i++) {
		l = &fs.later[i];
		why[0] = '\0';
		if (!l->rule->check(&fs.reqs[l->req], l->answer, NULL, why,
		    sizeof why))
			FUZZ_FAIL("fuzz_session: %s answered %s without the "
			    "state behind it: %s\n",
			    mos_type_name(l->rule->req),
			    mos_type_name(l->rule->answer), why);
		mos_msg_free(l->answer);
	}
	fs.nlater = 0;
}

/* Nothing new in the gateway's log: it logs only errors here. */
static void
fs_log_check(void)
{
	struct stat	 st;
	FILE		*f;
	char		 line[512];

	if (stat(fs.log, &st) != 0 || st.st_size == fs.logged)
		return;
	if ((f = fopen(fs.log, "r")) != NULL) {
		fseeko(f, fs.logged, SEEK_SET);
		while (fgets(line, sizeof line, f) != NULL)
			FUZZ_FAIL("fuzz_session: the gateway logged an error: "
			    "%s", line);
		fclose(f);
	}
	fs.logged = st.st_size;
}

/*
 * Whatever an input may leave behind that the next must not see: messages
 * queued for the NCSs (their links never come up), the answers kept for
 * retries of mosObjCreate and mosReqObjAction (a retry in a later input
 * would get an answer given before that input's changes), running orders
 * (deleted as an NCS would, with roDelete).
 */
static void
fs_reset(void)
{
	struct rostore_row	*rows = NULL;
	struct ro_result	 res;
	struct mos_msg		*m;
	struct ncs		*n;
	size_t			 nrows = 0, i;

	TAILQ_FOREACH(n, &fs.gw->ncs, entry) {
		profile1_req_all_stop(n);
		ncs_cancel_all(n);
		profile3_forget(n);	/* answers kept for retries */
	}
	for (i = 0; i < fs.nreqs; i++) {
		if (fs.reqs[i].m != NULL && profile2_handles(fs.reqs[i].m->type))
			break;
	}
	if (i == fs.nreqs)
		return;
	if (rostore_list(fs.view, NULL, &rows, &nrows) != QUEUE_OK)
		abort();
	for (i = 0; i < nrows; i++) {
		if ((m = mos_msg_new(MOS_T_RO_DELETE)) == NULL)
			abort();
		m->u.ro_delete.ro_id = mos_msg_strdup(m, rows[i].ro_id);
		memset(&res, 0, sizeof res);
		if (rostore_apply(fs.view, rows[i].ncs, FS_MOS_ID, m, &res) !=
		    QUEUE_OK || res.err != RO_OK) {
			fprintf(stderr, "fuzz_session: roDelete %s: %s\n",
			    rows[i].ro_id, res.text);
			abort();
		}
		rostore_result_clear(&res, false);
		mos_msg_free(m);
	}
	rostore_rows_free(rows, nrows);
}

/* The catalog fs_catalog() makes; trimmed back to it by fs_history_clear(). */
#define FS_SEED_IDS	"'MAM-00017', 'MAM-00018', 'MAM-00019', " \
			"'MAM-00020', 'SEED-1', '0'"

/*
 * What inputs leave behind and nothing takes back (the links never start):
 * placeholders made by mosObjCreate with their jobs for the MAM, the
 * delivery jobs of every change, and the events of all those jobs. Left
 * alone, a long run's file grew by a megabyte every few thousand inputs
 * and every input got slower with it (16,000 placeholders, 300,000 events
 * after 1.5 million); what an input does must not depend on how long the
 * run has gone on.
 */
static const char fs_trim_sql[] =
    "DELETE FROM asset_fts WHERE rowid IN (SELECT id FROM asset_key"
    " WHERE obj_id NOT IN (" FS_SEED_IDS "));"
    "DELETE FROM asset_paths WHERE obj_id NOT IN (" FS_SEED_IDS ");"
    "DELETE FROM asset_meta WHERE obj_id NOT IN (" FS_SEED_IDS ");"
    "DELETE FROM delivery WHERE obj_id NOT IN (" FS_SEED_IDS ");"
    "DELETE FROM assets WHERE obj_id NOT IN (" FS_SEED_IDS ");"
    "DELETE FROM asset_key WHERE obj_id NOT IN (" FS_SEED_IDS ");"
    "DELETE FROM job_data WHERE job_id IN"
    " (SELECT id FROM jobs WHERE state <> 1);"
    "DELETE FROM job_events WHERE job_id IN"
    " (SELECT id FROM jobs WHERE state <> 1);"
    "DELETE FROM jobs WHERE state <> 1;"
    "DELETE FROM events;"
    "DELETE FROM history;";

/*
 * On the bookkeeping thread: delete the history rows and what piles up
 * (fs_trim_sql) in one transaction, and have the thread's connection count
 * the history's bytes again (it prunes the oldest rows beyond
 * history_max_bytes by that count, which rows deleted by another
 * connection would still be part of).
 */
static int
fs_history_clear(struct gwdb *g, void *arg)
{
	(void)arg;
	if (store_exec(g->db, "BEGIN IMMEDIATE") != STORE_OK ||
	    store_exec(g->db, fs_trim_sql) != STORE_OK ||
	    store_exec(g->db, "COMMIT") != STORE_OK) {
		fprintf(stderr, "fuzz_session: %s\n", store_errmsg(g->db));
		if (store_in_tx(g->db))
			store_rollback(g->db);
		return QUEUE_EIO;
	}
	g->hist_counted = false;
	return history_bytes(g) < 0 ? QUEUE_EIO : QUEUE_OK;
}

/* Back on the loop: the result. */
static void
fs_history_cleared(void *arg, int rc)
{
	*(int *)arg = rc;
}

/*
 * Every FS_CHECK_EVERY inputs (a flush is a round trip to the bookkeeping
 * thread): flush, then the history must hold at least the positive answers
 * each session received. The rows are deleted afterwards, with what the
 * inputs left behind (fs_trim_sql), so the file stays small.
 */
static void
fs_history(void)
{
	struct history_filter	 flt;
	struct history_rec	*recs;
	size_t			 n, i, k, out[FS_CHECK_EVERY];
	int64_t			 after = 0;
	int			 rc = QUEUE_EIO;

	if (gw_flush(fs.gw) != QUEUE_OK)
		FUZZ_FAIL("fuzz_session: a flush failed\n");
	memset(out, 0, sizeof out);
	memset(&flt, 0, sizeof flt);
	flt.limit = 1000;
	do {
		flt.after_id = after;
		if (history_list(fs.view, &flt, &recs, &n) != QUEUE_OK)
			abort();
		for (i = 0; i < n; i++) {
			after = recs[i].id;
			for (k = 0; k < fs.ndone; k++) {
				if (recs[i].conn == fs.done[k].conn &&
				    recs[i].dir == HISTORY_OUT)
					out[k]++;
			}
		}
		history_recs_free(recs, n);
	} while (n == (size_t)flt.limit);
	for (k = 0; k < fs.ndone; k++) {
		if (out[k] < fs.done[k].answers)
			FUZZ_FAIL("fuzz_session: %zu positive answers sent, %zu frames in the "
			    "history\n", fs.done[k].answers, out[k]);
	}
	fs.ndone = 0;
	dbw_submit(fs.gw->dbw, fs_history_clear, fs_history_cleared, &rc);
	dbw_wait(fs.gw->dbw);
	if (rc != QUEUE_OK)
		abort();
}

/* Remove the temporary directory. */
static void
fs_cleanup(void)
{
	char	path[400];

	if (fs.ndone > 0)
		fs_history();
	gw_free(fs.gw);
	gwdb_close(fs.view);
	mos_framer_free(fs.in);
	mos_framer_free(fs.out);
	free(fs.reqs);
	free(fs.later);
	snprintf(path, sizeof path, "%s-wal", fs.db);
	unlink(path);
	snprintf(path, sizeof path, "%s-shm", fs.db);
	unlink(path);
	unlink(fs.db);
	log_close();
	mos_thread_release();
	unlink(fs.log);
	rmdir(fs.dir);
}

/* A few catalog rows for mosReqObj and mosReqAll (one deleted). */
static void
fs_catalog(void)
{
	static const char *const ids[] = { "MAM-00017", "MAM-00018",
	    "MAM-00019", "MAM-00020", "SEED-1", "0" };
	struct catalog_asset	 a;
	char			*err = NULL;
	size_t			 i;

	for (i = 0; i < nitems(ids); i++) {
		memset(&a, 0, sizeof a);
		a.obj_id = xstrdup(ids[i]);
		a.slug = xstrdup(i % 2 ? "Fish & <chips>" : "Weather");
		a.type = xstrdup(i % 2 ? "VIDEO" : "STILL");
		a.tb = xstrdup(i % 2 ? "59.94" : "50");
		a.dur = (int64_t)i * 1000;
		a.air = xstrdup(i % 3 ? "READY" : "NOT READY");
		a.description = xstrdup("<p>Fish &amp; <em>chips</em></p>");
		a.abstract = i % 2 ? xstrdup("An <b>abstract</b>") : NULL;
		a.changed_by = xstrdup("fuzz");
		catalog_add_path(&a, CATALOG_PATH, "MPEG2 Video",
		    "\\\\srv\\media\\clip.mxf");
		catalog_add_path(&a, CATALOG_PROXY, "WM9 750Kbps",
		    "http://srv/proxy/clip.wmv");
		catalog_add_meta(&a, "OBJECT", "http://schema.example/1",
		    "<a b=\"1\">x &amp; y</a>");
		if (catalog_put(fs.gw->db, &a, NULL, NULL, &err) != QUEUE_OK) {
			fprintf(stderr, "fuzz_session: catalog: %s\n", err);
			exit(1);
		}
		catalog_asset_clear(&a);
	}
	if (catalog_delete(fs.gw->db, "MAM-00020", "fuzz", NULL, NULL,
	    &err) != QUEUE_OK) {
		fprintf(stderr, "fuzz_session: catalog: %s\n", err);
		exit(1);
	}
}

/*
 * The gateway, once: no listeners, NCSs whose links are never started. Its
 * file goes in $MOSGW_TMP (make check), else /dev/shm, where commits cost
 * nothing.
 */
int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct gw_config	*cfg;
	struct gwdb_opts	 o;
	struct sockaddr_in	 sin;
	struct ncs		*n;
	const char		*tmp = getenv("MOSGW_TMP");	/* tests */
	char			*text, *errs = NULL;
	size_t			 i, nncs;

	(void)argc;
	(void)argv;
	if (tmp == NULL || *tmp == '\0' || access(tmp, W_OK) != 0)
		tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
	snprintf(fs.dir, sizeof fs.dir, "%s/fuzz_session.XXXXXX", tmp);
	if (mkdtemp(fs.dir) == NULL) {
		fprintf(stderr, "fuzz_session: %s: %s\n", fs.dir,
		    strerror(errno));
		exit(1);
	}
	snprintf(fs.db, sizeof fs.db, "%s/fuzz.db", fs.dir);
	if (xasprintf(&text, fs_conf, fs.dir) == -1 ||
	    (cfg = config_load_string("fuzz_session", text, &errs)) == NULL) {
		fprintf(stderr, "fuzz_session: %s", errs);
		exit(1);
	}
	free(text);
	snprintf(fs.log, sizeof fs.log, "%s/log", fs.dir);
	if (log_open(LL_ERROR, fs.log, &errs) != 0) {
		fprintf(stderr, "fuzz_session: %s\n", errs);
		exit(1);
	}
	cfg->lower_port = cfg->upper_port = cfg->query_port = 0;
	cfg->api_port = 0;		/* nor the API's (8540 may be taken) */
	nncs = cfg->nncs;
	cfg->nncs = 0;			/* gw_new would start their links */
	if ((fs.gw = gw_new(cfg, &errs)) == NULL) {
		fprintf(stderr, "fuzz_session: %s\n", errs);
		exit(1);
	}
	cfg->nncs = nncs;
	for (i = 0; i < nitems(fs.gw->sig); i++) {
		event_free(fs.gw->sig[i]);	/* libFuzzer's handlers again */
		fs.gw->sig[i] = NULL;
	}
	if (gwdb_sync_ncs(fs.gw->db, cfg) != QUEUE_OK)
		abort();
	for (i = 0; i < cfg->nncs; i++) {
		n = ncs_new(fs.gw, &cfg->ncs[i]);
		TAILQ_INSERT_TAIL(&fs.gw->ncs, n, entry);
	}
	fs_catalog();
	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (addr_from_sockaddr(&fs.src, (struct sockaddr *)&sin) != 0)
		abort();
	memset(&o, 0, sizeof o);
	o.path = fs.db;
	o.busy_ms = 1000;
	if (gwdb_open(&fs.view, &o, &errs) != QUEUE_OK) {
		fprintf(stderr, "fuzz_session: %s\n", errs);
		exit(1);
	}
	atexit(fs_cleanup);
	return 0;
}

/* One input: configuration byte, then the stream. */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum gw_port ports[4] = { GW_PORT_LOWER, GW_PORT_UPPER,
	    GW_PORT_QUERY, GW_PORT_LOWER };
	/* The gateway's answers: any size the harness can hold. */
	struct mos_framer_limits lim = { 1u << 20, 1u << 20 };
	uint32_t		 rng;
	size_t			 at = 0, k, i;
	bool			 eof, stall;
	unsigned int		 pattern;

	if (size < 1 || size > FUZZ_MAX_INPUT)
		return 0;
	if (fs.gw == NULL)
		LLVMFuzzerInitialize(NULL, NULL);
	pattern = (data[0] >> 2) & 7;
	if (size > 4096 && pattern <= 3)
		pattern = 4;	/* a loop pass per byte: too slow */
	eof = (data[0] & 0x20) != 0;
	stall = (data[0] & 0x40) != 0;
	rng = (uint32_t)size * 2654435761u + data[0] + 1;
	data++;
	size--;

	if ((fs.in = mos_framer_new(MOS_ENC_AUTO, NULL)) == NULL ||
	    (fs.out = mos_framer_new(MOS_ENC_AUTO, &lim)) == NULL ||
	    bufferevent_pair_new(fs.gw->base, BEV_OPT_DEFER_CALLBACKS,
	    fs.pair) != 0)
		abort();
	fs_in_limits(fs.gw->cfg->pre_handshake_frame);
	fs.hint = NULL;
	fs.framing = 0;
	fs.nreqs = fs.answers = 0;
	fs.enc = MOS_ENC_UTF16BE;
	evbuffer_add_cb(bufferevent_get_input(fs.pair[1]), fs_out_cb, NULL);
	if (stall)
		bufferevent_disable(fs.pair[1], EV_READ);
	else
		bufferevent_enable(fs.pair[1], EV_READ);
	fs.sess = session_open(fs.gw, ports[data[-1] & 3], fs.pair[0], &fs.src,
	    "127.0.0.1:0");
	fs.conn_id = fs.sess->conn->id;

	while (at < size && fs.sess != NULL) {
		k = fuzz_chunk(pattern, &rng, size - at);
		if (k > size - at)
			k = size - at;
		fs_requests(data + at, k);
		conn_input(fs.sess->conn, data + at, k);
		at += k;
		fs_settle(false);
		fs_later_checks();
	}
	if (stall) {
		bufferevent_enable(fs.pair[1], EV_READ);
		fs_settle(false);
		fs_later_checks();
	}
	fs_settle(true);	/* answers that wait for the thread */
	fs_later_checks();
	if (fs.sess != NULL && eof) {
		conn_input_end(fs.sess->conn);
		fs_settle(true);
		fs_later_checks();
	}
	if (fs.sess != NULL && fs.framing != 0)
		FUZZ_FAIL("fuzz_session: the session's stream does not frame "
		    "(%s), the gateway kept the session\n",
		    mos_frame_strerror(fs.framing));
	if (fs.sess != NULL) {
		session_close(fs.sess, "fuzz");
		fs.sess = NULL;
	}
	fs_reset();
	fs_log_check();
	fs.done[fs.ndone].conn = fs.conn_id;
	fs.done[fs.ndone].answers = fs.answers;
	if (++fs.ndone == FS_CHECK_EVERY)
		fs_history();

	bufferevent_free(fs.pair[1]);
	/* Freed bufferevents are finalised by the loop: within this input. */
	event_base_loop(fs.gw->base, EVLOOP_NONBLOCK);
	for (i = 0; i < fs.nreqs; i++)
		mos_msg_free(fs.reqs[i].m);
	mos_framer_free(fs.in);
	mos_framer_free(fs.out);
	fs.in = fs.out = NULL;
	/*
	 * The thread's parser context is kept from input to input, as the
	 * daemon keeps it from frame to frame (detect_leaks is off here).
	 */
	return 0;
}
