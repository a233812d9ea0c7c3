/*
 * The running-order store: running order -> story -> item, in play order,
 * in the gateway's database (through gwdb's named statements only).
 *
 * Each level keeps its own fields as columns (IDs, slugs, channels, timing,
 * objID) for queries, and its XML as the codec wrote it (slugs, channels,
 * timing fields, mosExternalMetadata verbatim) so that a roList is rebuilt
 * exactly as it was received. Every change is one transaction: the order
 * of a story list or an item list is loaded, edited in memory (insert,
 * replace, move, delete, swap), and only the rows that changed are
 * written. A message that names an unknown running order, story or item,
 * or that would duplicate an ID, changes nothing.
 */
#include <stdlib.h>

#include <jansson.h>
#include <openssl/evp.h>

#include <string.h>

#include "gateway/gateway.h"

#define RO_DUMMY	"x"

/* One element of a story list or an item list being edited. */
struct ro_ent {
	const char		*id;
	int64_t			 old_pos;	/* -1: new */
	const struct mos_story	*story;		/* new story */
	const struct mos_item	*item;		/* new item */
};

/* A list being edited, and what it was. */
struct ro_seq {
	struct ro_ent	*e;
	size_t		 n;
	char		**old;		/* the ids as loaded (owned) */
	size_t		 nold;
	char		**gone;		/* ids removed (point into old) */
	size_t		 ngone;
};

/* An edit of one list. */
struct ro_edit {
	int			 op;		/* enum ro_op */
	bool			 items;		/* items of target_story */
	const char		*target_story;	/* NULL or "": none */
	const char		*target_item;
	const struct mos_story	*stories;
	size_t			 nstories;
	const struct mos_item	*itemv;
	size_t			 nitemv;
	const char *const	*ids;
	size_t			 nids;
};

enum ro_op {
	RO_OP_INSERT,
	RO_OP_REPLACE,
	RO_OP_MOVE,
	RO_OP_DELETE,
	RO_OP_SWAP,
};

struct ro_ctx {
	struct gwdb		*g;
	const char		*ncs;
	const char		*mos_id;	/* ours: items to report */
	int64_t			 ro;		/* row id */
	struct ro_result	*res;
};

static bool
ro_empty(const char *s)
{
	return s == NULL || *s == '\0';
}

/* Set the error of a result (the first one wins). */
static int
ro_fail(struct ro_result *res, int err, bool resync, const char *fmt, ...)
	    __attribute__((format(printf, 4, 5)));

static int
ro_fail(struct ro_result *res, int err, bool resync, const char *fmt, ...)
{
	va_list	ap;

	if (res->err == RO_OK) {
		res->err = err;
		res->resync = resync;
		va_start(ap, fmt);
		vsnprintf(res->text, sizeof res->text, fmt, ap);
		va_end(ap);
	}
	return QUEUE_EINVAL;
}

/*
 * The codec's XML for part of a message: from the first open to the end of
 * the last close (or between them with inner), UTF-8, into sb.
 */
static int
ro_frag(const struct mos_msg *m, const char *open, const char *close,
    bool inner, struct sbuf *sb)
{
	struct mos_buf	 b = { NULL, 0, 0 };
	char		 err[256];
	ssize_t		 from, to;
	int		 rc = -1;

	if (mos_write(m, MOS_ENC_UTF8, &b, err, sizeof err) == 0 &&
	    (from = util_find_enc(b.data, b.len, open, MOS_ENC_UTF8,
	    false)) >= 0 &&
	    (to = util_find_enc(b.data, b.len, close, MOS_ENC_UTF8,
	    true)) > from) {
		if (inner) {
			from += (ssize_t)strlen(open);
			to -= (ssize_t)strlen(close);
		}
		sb->len = 0;
		sbuf_add(sb, (const char *)b.data + from, (size_t)(to - from));
		rc = 0;
	}
	mos_buf_free(&b);
	return rc;
}

/* The <item> element of an item. */
static int
ro_item_xml(const struct mos_item *it, struct sbuf *sb)
{
	struct mos_msg	*m;
	int		 rc;

	if ((m = mos_msg_new(MOS_T_MOS_ITEM_REPLACE)) == NULL)
		fatalx("out of memory");
	m->mos_id = m->ncs_id = RO_DUMMY;
	m->u.mos_item_replace.ro_id = RO_DUMMY;
	m->u.mos_item_replace.story_id = RO_DUMMY;
	m->u.mos_item_replace.item = *it;
	rc = ro_frag(m, "<item>", "</item>", false, sb);
	mos_msg_free(m);
	return rc;
}

/* A story's element without its items and closing tag: "<story>...". */
static int
ro_story_xml(const struct mos_story *s, struct sbuf *sb)
{
	struct mos_msg		*m;
	struct mos_story	 head = *s;
	int			 rc;

	head.item.v = NULL;
	head.item.n = 0;
	if ((m = mos_msg_new(MOS_T_RO_LIST)) == NULL)
		fatalx("out of memory");
	m->mos_id = m->ncs_id = RO_DUMMY;
	m->u.ro_list.ro_id = RO_DUMMY;
	m->u.ro_list.ro_slug = RO_DUMMY;
	m->u.ro_list.story.v = &head;
	m->u.ro_list.story.n = 1;
	rc = ro_frag(m, "<story>", "</story>", false, sb);
	mos_msg_free(m);
	if (rc == 0)
		sb->s[sb->len -= strlen("</story>")] = '\0';
	return rc;
}

/* The fields of a running order without its stories (inner XML). */
static int
ro_head_xml(const struct mos_ro *ro, struct sbuf *sb)
{
	struct mos_msg	*m;
	int		 rc;

	if ((m = mos_msg_new(MOS_T_RO_LIST)) == NULL)
		fatalx("out of memory");
	m->mos_id = m->ncs_id = RO_DUMMY;
	m->u.ro_list = *ro;
	m->u.ro_list.story.v = NULL;
	m->u.ro_list.story.n = 0;
	if (m->u.ro_list.ro_slug == NULL)
		m->u.ro_list.ro_slug = "";
	rc = ro_frag(m, "<roList>", "</roList>", true, sb);
	mos_msg_free(m);
	return rc;
}

/* The running order's row id, or QUEUE_ENOTFOUND. */
static int
ro_find(struct gwdb *g, const char *ncs, const char *ro_id, int64_t *id)
{
	struct store_stmt	*st = gwdb_stmt(g, ST_RO_FIND);
	int		 rc;

	store_bind_text(st, 1, ncs, -1);
	store_bind_text(st, 2, ro_id, -1);
	if ((rc = store_step(st)) == STORE_ROW)
		*id = store_column_int64(st, 0);
	store_reset(st);
	if (rc == STORE_DONE)
		return QUEUE_ENOTFOUND;
	return gwdb_rc(rc);
}

/* Record an item for the roAck: its object as the catalog knows it. */
static int
ro_report(struct ro_ctx *x, const char *story_id, const struct mos_item *it)
{
	struct ro_result	*res = x->res;
	struct ro_item_stat	*s;
	struct store_stmt		*st;
	const char		*status = RO_STAT_UNKNOWN;
	int			 rc;

	if (ro_empty(it->obj_id) || (!ro_empty(it->mos_id) &&
	    x->mos_id != NULL && strcmp(it->mos_id, x->mos_id) != 0))
		return QUEUE_OK;	/* no object, or another device's */
	st = gwdb_stmt(x->g, ST_RO_ASSET_AIR);
	store_bind_text(st, 1, it->obj_id, -1);
	if ((rc = store_step(st)) == STORE_ROW &&
	    store_column_int(st, 1) == 0)
		status = strcmp(store_column_text(st, 0),
		    "READY") == 0 ? "READY" : "NOT READY";
	store_reset(st);
	if (rc != STORE_ROW && rc != STORE_DONE)
		return gwdb_rc(rc);
	res->items = xreallocarray(res->items, res->nitems + 1,
	    sizeof *res->items);
	s = &res->items[res->nitems++];
	s->story_id = xstrdup(story_id);
	s->item_id = xstrdup(it->item_id);
	s->obj_id = xstrdup(it->obj_id);
	s->channel = it->item_channel != NULL ? xstrdup(it->item_channel) :
	    NULL;
	s->status = status;
	return QUEUE_OK;
}

/* Insert one item row. */
static int
ro_item_add(struct ro_ctx *x, const char *story_id,
    const struct mos_item *it, int64_t pos, struct sbuf *sb)
{
	struct store_stmt	*st;
	int		 rc;

	if (ro_item_xml(it, sb) != 0)
		return ro_fail(x->res, RO_BAD, false, "Item %s cannot be "
		    "stored", it->item_id);
	st = gwdb_stmt(x->g, ST_RO_ITEM_ADD);
	store_bind_int64(st, 1, x->ro);
	store_bind_text(st, 2, story_id, -1);
	store_bind_text(st, 3, it->item_id, -1);
	store_bind_int64(st, 4, pos);
	store_bind_text(st, 5, it->obj_id != NULL ? it->obj_id : "", -1);
	gwdb_bind_text(st, 6, it->mos_id);
	gwdb_bind_text(st, 7, it->item_slug);
	gwdb_bind_text(st, 8, it->item_channel);
	if (it->has_item_ed_start)
		store_bind_int64(st, 9, it->item_ed_start);
	if (it->has_item_ed_dur)
		store_bind_int64(st, 10, it->item_ed_dur);
	if (it->has_item_user_timing_dur)
		store_bind_int64(st, 11, it->item_user_timing_dur);
	store_bind_text(st, 12, sb->s, (int)sb->len);
	if ((rc = gwdb_exec_stmt(x->g, st)) != QUEUE_OK)
		return rc;
	return ro_report(x, story_id, it);
}

/* The items of a new story must have distinct IDs. */
static int
ro_story_check(struct ro_ctx *x, const struct mos_story *s)
{
	size_t	i, j;

	for (i = 0; i < s->item.n; i++)
		for (j = 0; j < i; j++)
			if (strcmp(s->item.v[i].item_id,
			    s->item.v[j].item_id) == 0)
				return ro_fail(x->res, RO_DUPLICATE, false,
				    "Duplicate itemID %s in story %s",
				    s->item.v[i].item_id, s->story_id);
	return QUEUE_OK;
}

/* Insert one story row and its items. */
static int
ro_story_add(struct ro_ctx *x, const struct mos_story *s, int64_t pos,
    struct sbuf *sb)
{
	struct store_stmt	*st;
	size_t		 i;
	int		 rc;

	if ((rc = ro_story_check(x, s)) != QUEUE_OK)
		return rc;
	if (ro_story_xml(s, sb) != 0)
		return ro_fail(x->res, RO_BAD, false, "Story %s cannot be "
		    "stored", s->story_id);
	st = gwdb_stmt(x->g, ST_RO_STORY_ADD);
	store_bind_int64(st, 1, x->ro);
	store_bind_text(st, 2, s->story_id, -1);
	store_bind_int64(st, 3, pos);
	gwdb_bind_text(st, 4, s->story_slug);
	store_bind_text(st, 5, sb->s, (int)sb->len);
	if ((rc = gwdb_exec_stmt(x->g, st)) != QUEUE_OK)
		return rc;
	for (i = 0; i < s->item.n; i++)
		if ((rc = ro_item_add(x, s->story_id, &s->item.v[i],
		    (int64_t)i, sb)) != QUEUE_OK)
			return rc;
	return QUEUE_OK;
}

/* Run a statement bound to (ro, a[, b][, pos]). */
static int
ro_exec_ids(struct ro_ctx *x, enum gwdb_stmt which, const char *a,
    const char *b, int64_t pos)
{
	struct store_stmt	*st = gwdb_stmt(x->g, which);
	int		 n = 2;

	store_bind_int64(st, 1, x->ro);
	if (a != NULL)
		store_bind_text(st, n++, a, -1);
	if (b != NULL)
		store_bind_text(st, n++, b, -1);
	if (pos >= 0)
		store_bind_int64(st, n, pos);
	return gwdb_exec_stmt(x->g, st);
}

/* Load the order of a list: stories of the RO, or items of a story. */
static int
ro_seq_load(struct ro_ctx *x, const char *story_id, struct ro_seq *q)
{
	struct store_stmt	*st;
	size_t		 i;
	int		 rc;

	memset(q, 0, sizeof *q);
	st = gwdb_stmt(x->g, story_id == NULL ? ST_RO_STORY_IDS :
	    ST_RO_ITEM_IDS);
	store_bind_int64(st, 1, x->ro);
	if (story_id != NULL)
		store_bind_text(st, 2, story_id, -1);
	while ((rc = store_step(st)) == STORE_ROW) {
		q->old = xreallocarray(q->old, q->nold + 1, sizeof *q->old);
		q->old[q->nold++] = xstrdup(store_column_text(st, 0));
	}
	store_reset(st);
	q->e = xcalloc(q->nold + 1, sizeof *q->e);
	q->gone = xcalloc(q->nold + 1, sizeof *q->gone);
	for (i = 0; i < q->nold; i++) {
		q->e[i].id = q->old[i];
		q->e[i].old_pos = (int64_t)i;
	}
	q->n = q->nold;
	return rc == STORE_DONE ? QUEUE_OK : gwdb_rc(rc);
}

static void
ro_seq_free(struct ro_seq *q)
{
	size_t	i;

	for (i = 0; i < q->nold; i++)
		free(q->old[i]);
	free(q->old);
	free(q->e);
	free(q->gone);
}

/* Index of an id in the list, or -1. */
static ssize_t
ro_seq_find(const struct ro_seq *q, const char *id)
{
	size_t	i;

	for (i = 0; i < q->n; i++)
		if (strcmp(q->e[i].id, id) == 0)
			return (ssize_t)i;
	return -1;
}

/* Take element i out of the list (returned). */
static struct ro_ent
ro_seq_take(struct ro_seq *q, size_t i)
{
	struct ro_ent	e = q->e[i];

	memmove(&q->e[i], &q->e[i + 1], (q->n - i - 1) * sizeof *q->e);
	q->n--;
	return e;
}

/* Put elements at index i. */
static void
ro_seq_put(struct ro_seq *q, size_t i, const struct ro_ent *v, size_t n)
{
	q->e = xreallocarray(q->e, q->n + n + 1, sizeof *q->e);
	memmove(&q->e[i + n], &q->e[i], (q->n - i) * sizeof *q->e);
	memcpy(&q->e[i], v, n * sizeof *v);
	q->n += n;
}

/* Remove element i for good (its rows go). */
static void
ro_seq_drop(struct ro_seq *q, size_t i)
{
	struct ro_ent	e = ro_seq_take(q, i);

	if (e.old_pos >= 0)
		q->gone[q->ngone++] = q->old[e.old_pos];
}

/* What the elements of a list are called in messages. */
static const char *
ro_what(const struct ro_edit *ed)
{
	return ed->items ? "item" : "story";
}

/* An unknown element: error, and resync. */
static int
ro_unknown(struct ro_ctx *x, const struct ro_edit *ed, const char *id)
{
	return ro_fail(x->res, ed->items ? RO_UNKNOWN_ITEM : RO_UNKNOWN_STORY,
	    true, "Unknown %sID %s%s%s", ro_what(ed), id,
	    ed->items ? " in story " : "", ed->items ? ed->target_story : "");
}

/* The new elements of an INSERT or REPLACE, checked against the list. */
static int
ro_new_ents(struct ro_ctx *x, const struct ro_edit *ed,
    const struct ro_seq *q, struct ro_ent **out, size_t *n)
{
	struct ro_ent	*v;
	size_t		 i, j, cnt = ed->items ? ed->nitemv : ed->nstories;

	if (cnt == 0)
		return ro_fail(x->res, RO_BAD, false, "No %s to %s",
		    ro_what(ed), ed->op == RO_OP_INSERT ? "insert" :
		    "replace with");
	v = xcalloc(cnt, sizeof *v);
	for (i = 0; i < cnt; i++) {
		v[i].old_pos = -1;
		if (ed->items) {
			v[i].item = &ed->itemv[i];
			v[i].id = ed->itemv[i].item_id;
		} else {
			v[i].story = &ed->stories[i];
			v[i].id = ed->stories[i].story_id;
		}
		for (j = 0; j < i; j++)
			if (strcmp(v[i].id, v[j].id) == 0)
				break;
		if (j < i || ro_seq_find(q, v[i].id) >= 0) {
			ro_fail(x->res, RO_DUPLICATE, false,
			    "Duplicate %sID %s", ro_what(ed), v[i].id);
			free(v);
			return QUEUE_EINVAL;
		}
	}
	*out = v;
	*n = cnt;
	return QUEUE_OK;
}

/* The ids of a MOVE, DELETE or SWAP: known and distinct. */
static int
ro_check_ids(struct ro_ctx *x, const struct ro_edit *ed,
    const struct ro_seq *q)
{
	size_t	i, j;

	if (ed->nids == 0)
		return ro_fail(x->res, RO_BAD, false, "No %sID given",
		    ro_what(ed));
	for (i = 0; i < ed->nids; i++) {
		if (ro_empty(ed->ids[i]))
			return ro_fail(x->res, RO_BAD, false, "Empty %sID",
			    ro_what(ed));
		for (j = 0; j < i; j++)
			if (strcmp(ed->ids[i], ed->ids[j]) == 0)
				return ro_fail(x->res, RO_DUPLICATE, false,
				    "Duplicate %sIDs are not permitted",
				    ro_what(ed));
		if (ro_seq_find(q, ed->ids[i]) < 0)
			return ro_unknown(x, ed, ed->ids[i]);
	}
	return QUEUE_OK;
}

/* Edit the list in memory. */
static int
ro_seq_edit(struct ro_ctx *x, const struct ro_edit *ed, struct ro_seq *q)
{
	struct ro_ent	*v = NULL, tmp;
	const char	*target = ed->items ? ed->target_item :
			    ed->target_story;
	ssize_t		 at = (ssize_t)q->n, a, b;
	size_t		 n = 0, i;
	int		 rc;

	if (ed->op == RO_OP_INSERT || ed->op == RO_OP_REPLACE ||
	    ed->op == RO_OP_MOVE) {
		if (!ro_empty(target) && (at = ro_seq_find(q, target)) < 0)
			return ro_unknown(x, ed, target);
		if (ed->op == RO_OP_REPLACE && ro_empty(target))
			return ro_fail(x->res, RO_BAD, false, "REPLACE "
			    "without a target %sID", ro_what(ed));
	}
	switch (ed->op) {
	case RO_OP_REPLACE:
		ro_seq_drop(q, (size_t)at);
		/* FALLTHROUGH */
	case RO_OP_INSERT:
		if ((rc = ro_new_ents(x, ed, q, &v, &n)) != QUEUE_OK)
			return rc;
		ro_seq_put(q, (size_t)at, v, n);
		free(v);
		return QUEUE_OK;
	case RO_OP_MOVE:
		if ((rc = ro_check_ids(x, ed, q)) != QUEUE_OK)
			return rc;
		for (i = 0; i < ed->nids; i++)
			if (!ro_empty(target) &&
			    strcmp(ed->ids[i], target) == 0)
				return ro_fail(x->res, RO_BAD, false, "Cannot "
				    "move %s %s before itself", ro_what(ed),
				    target);
		v = xcalloc(ed->nids, sizeof *v);
		for (i = 0; i < ed->nids; i++)
			v[i] = ro_seq_take(q, (size_t)ro_seq_find(q,
			    ed->ids[i]));
		at = ro_empty(target) ? (ssize_t)q->n : ro_seq_find(q, target);
		ro_seq_put(q, (size_t)at, v, ed->nids);
		free(v);
		return QUEUE_OK;
	case RO_OP_DELETE:
		if ((rc = ro_check_ids(x, ed, q)) != QUEUE_OK)
			return rc;
		for (i = 0; i < ed->nids; i++)
			ro_seq_drop(q, (size_t)ro_seq_find(q, ed->ids[i]));
		return QUEUE_OK;
	case RO_OP_SWAP:
		if (ed->nids != 2)
			return ro_fail(x->res, RO_BAD, false, "SWAP needs "
			    "exactly two %sIDs, got %zu", ro_what(ed),
			    ed->nids);
		if ((rc = ro_check_ids(x, ed, q)) != QUEUE_OK)
			return rc;
		a = ro_seq_find(q, ed->ids[0]);
		b = ro_seq_find(q, ed->ids[1]);
		tmp = q->e[a];
		q->e[a] = q->e[b];
		q->e[b] = tmp;
		return QUEUE_OK;
	}
	return ro_fail(x->res, RO_BAD, false, "Unknown operation");
}

/* Write what changed in a list: removed rows, new rows, new positions. */
static int
ro_seq_store(struct ro_ctx *x, const struct ro_edit *ed,
    const struct ro_seq *q, struct sbuf *sb)
{
	const char	*story = ed->items ? ed->target_story : NULL;
	size_t		 i;
	int		 rc;

	for (i = 0; i < q->ngone; i++) {
		if (ed->items)
			rc = ro_exec_ids(x, ST_RO_ITEM_DEL, story, q->gone[i],
			    -1);
		else if ((rc = ro_exec_ids(x, ST_RO_STORY_ITEMS_DEL,
		    q->gone[i], NULL, -1)) == QUEUE_OK)
			rc = ro_exec_ids(x, ST_RO_STORY_DEL, q->gone[i], NULL,
			    -1);
		if (rc != QUEUE_OK)
			return rc;
	}
	for (i = 0; i < q->n; i++) {
		if (q->e[i].old_pos == (int64_t)i)
			continue;
		if (q->e[i].old_pos >= 0)
			rc = ro_exec_ids(x, ed->items ? ST_RO_ITEM_POS :
			    ST_RO_STORY_POS, ed->items ? story : q->e[i].id,
			    ed->items ? q->e[i].id : NULL, (int64_t)i);
		else if (ed->items)
			rc = ro_item_add(x, story, q->e[i].item, (int64_t)i,
			    sb);
		else
			rc = ro_story_add(x, q->e[i].story, (int64_t)i, sb);
		if (rc != QUEUE_OK)
			return rc;
	}
	return QUEUE_OK;
}

/* One edit of one list, loaded, changed and stored. */
static int
ro_edit_apply(struct ro_ctx *x, const struct ro_edit *ed)
{
	struct ro_seq	 q;
	struct ro_edit	 e = *ed;
	struct sbuf	 sb = { NULL, 0, 0 };
	const char	*story = NULL;
	struct store_stmt	*st;
	int		 rc;

	if (e.items) {
		if (ro_empty(e.target_story))
			return ro_fail(x->res, RO_BAD, false, "An item "
			    "operation needs a target storyID");
		story = e.target_story;
		st = gwdb_stmt(x->g, ST_RO_STORY_HAS);
		store_bind_int64(st, 1, x->ro);
		store_bind_text(st, 2, story, -1);
		rc = store_step(st);
		store_reset(st);
		if (rc == STORE_DONE)
			return ro_fail(x->res, RO_UNKNOWN_STORY, true,
			    "Unknown storyID %s", story);
		if (rc != STORE_ROW)
			return gwdb_rc(rc);
	}
	if ((rc = ro_seq_load(x, story, &q)) == QUEUE_OK &&
	    (rc = ro_seq_edit(x, &e, &q)) == QUEUE_OK)
		rc = ro_seq_store(x, &e, &q, &sb);
	ro_seq_free(&q);
	sbuf_free(&sb);
	return rc;
}

/* Create or replace a running order with its stories. */
static int
ro_put(struct ro_ctx *x, const struct mos_ro *ro)
{
	struct ro_edit	 ed;
	struct sbuf	 sb = { NULL, 0, 0 };
	struct store_stmt	*st;
	int64_t		 now = util_now_ms();
	int		 rc;

	if (ro_head_xml(ro, &sb) != 0) {
		sbuf_free(&sb);
		return ro_fail(x->res, RO_BAD, false, "Running order %s "
		    "cannot be stored", ro->ro_id);
	}
	rc = ro_find(x->g, x->ncs, ro->ro_id, &x->ro);
	if (rc == QUEUE_OK) {
		if ((rc = ro_exec_ids(x, ST_RO_ITEMS_DEL, NULL, NULL,
		    -1)) == QUEUE_OK)
			rc = ro_exec_ids(x, ST_RO_STORIES_DEL, NULL, NULL, -1);
		st = gwdb_stmt(x->g, ST_RO_HEAD);
	} else if (rc == QUEUE_ENOTFOUND) {
		st = gwdb_stmt(x->g, ST_RO_INSERT);
		rc = QUEUE_OK;
	} else
		st = NULL;
	if (rc == QUEUE_OK) {
		store_bind_text(st, 1, x->ncs, -1);
		store_bind_text(st, 2, ro->ro_id, -1);
		gwdb_bind_text(st, 3, ro->ro_slug);
		store_bind_text(st, 4, sb.s, (int)sb.len);
		store_bind_int64(st, 5, now);
		if ((rc = store_step(st)) == STORE_ROW)
			x->ro = store_column_int64(st, 0);
		store_reset(st);
		rc = gwdb_rc(rc);
	}
	sbuf_free(&sb);
	if (rc != QUEUE_OK || ro->story.n == 0)
		return rc;
	memset(&ed, 0, sizeof ed);
	ed.op = RO_OP_INSERT;
	ed.stories = ro->story.v;
	ed.nstories = ro->story.n;
	return ro_edit_apply(x, &ed);
}

/* Replace the fields of a running order, keeping its stories. */
static int
ro_metadata(struct ro_ctx *x, const struct mos_ro *ro)
{
	struct sbuf	 sb = { NULL, 0, 0 };
	struct store_stmt	*st;
	int		 rc;

	if (ro_head_xml(ro, &sb) != 0) {
		sbuf_free(&sb);
		return ro_fail(x->res, RO_BAD, false, "Running order %s "
		    "cannot be stored", ro->ro_id);
	}
	st = gwdb_stmt(x->g, ST_RO_HEAD);
	store_bind_text(st, 1, x->ncs, -1);
	store_bind_text(st, 2, ro->ro_id, -1);
	gwdb_bind_text(st, 3, ro->ro_slug);
	store_bind_text(st, 4, sb.s, (int)sb.len);
	store_bind_int64(st, 5, util_now_ms());
	rc = gwdb_exec_stmt(x->g, st);
	sbuf_free(&sb);
	return rc;
}

/* Delete a running order and everything in it. */
static int
ro_delete(struct ro_ctx *x)
{
	int	rc;

	if ((rc = ro_exec_ids(x, ST_RO_ITEMS_DEL, NULL, NULL, -1)) ==
	    QUEUE_OK && (rc = ro_exec_ids(x, ST_RO_STORIES_DEL, NULL, NULL,
	    -1)) == QUEUE_OK)
		rc = ro_exec_ids(x, ST_RO_DELETE, NULL, NULL, -1);
	return rc;
}

/* roElementAction as an edit. */
static int
ro_element_action(struct ro_ctx *x, const struct mos_ro_element_action *a)
{
	static const char *const ops[] = { "INSERT", "REPLACE", "MOVE",
	    "DELETE", "SWAP" };
	const struct mos_element_source	*src = &a->element_source;
	struct ro_edit			 ed;
	size_t				 i;

	memset(&ed, 0, sizeof ed);
	for (i = 0; i < nitems(ops); i++)
		if (a->operation != NULL && strcmp(a->operation, ops[i]) == 0)
			break;
	if (i == nitems(ops))
		return ro_fail(x->res, RO_BAD, false, "Unknown operation %s",
		    a->operation != NULL ? a->operation : "(none)");
	ed.op = (int)i;
	if (a->element_target != NULL) {
		ed.target_story = a->element_target->story_id;
		ed.target_item = a->element_target->item_id;
	}
	ed.stories = src->story.v;
	ed.nstories = src->story.n;
	ed.itemv = src->item.v;
	ed.nitemv = src->item.n;
	if (src->item_id.n > 0) {
		ed.ids = src->item_id.v;
		ed.nids = src->item_id.n;
	} else {
		ed.ids = src->story_id.v;
		ed.nids = src->story_id.n;
	}
	ed.items = src->item.n > 0 || src->item_id.n > 0;
	/* a story SWAP or DELETE names no target */
	if (!ed.items && (ed.op == RO_OP_SWAP || ed.op == RO_OP_DELETE))
		ed.target_story = NULL;
	return ro_edit_apply(x, &ed);
}

/* The deprecated roStory* messages as edits. */
static int
ro_story_op(struct ro_ctx *x, enum mos_type t, const struct mos_ro_story_op *o)
{
	struct ro_edit	ed;
	size_t		n = o->story_id.n;

	memset(&ed, 0, sizeof ed);
	ed.stories = o->story.v;
	ed.nstories = o->story.n;
	ed.ids = o->story_id.v;
	ed.nids = n;
	switch (t) {
	case MOS_T_RO_STORY_APPEND:
		ed.op = RO_OP_INSERT;
		break;
	case MOS_T_RO_STORY_INSERT:
	case MOS_T_RO_STORY_REPLACE:
		ed.op = t == MOS_T_RO_STORY_INSERT ? RO_OP_INSERT :
		    RO_OP_REPLACE;
		if (n != 1 || ro_empty(o->story_id.v[0]))
			return ro_fail(x->res, RO_BAD, false, "%s needs one "
			    "target storyID", mos_type_name(t));
		ed.target_story = o->story_id.v[0];
		break;
	case MOS_T_RO_STORY_MOVE:
		/* a blank or missing second storyID: to the bottom */
		if (n < 1 || n > 2)
			return ro_fail(x->res, RO_BAD, false, "roStoryMove "
			    "needs two storyIDs, got %zu", n);
		/* FALLTHROUGH */
	case MOS_T_RO_STORY_MOVE_MULTIPLE:
		if (n < 2 && t == MOS_T_RO_STORY_MOVE_MULTIPLE)
			return ro_fail(x->res, RO_BAD, false,
			    "roStoryMoveMultiple needs at least two storyIDs");
		ed.op = RO_OP_MOVE;
		if (n >= 2) {
			ed.target_story = o->story_id.v[n - 1];
			ed.nids = n - 1;
		}
		break;
	case MOS_T_RO_STORY_SWAP:
		ed.op = RO_OP_SWAP;
		break;
	case MOS_T_RO_STORY_DELETE:
		ed.op = RO_OP_DELETE;
		break;
	default:
		return ro_fail(x->res, RO_BAD, false, "Not a story operation");
	}
	return ro_edit_apply(x, &ed);
}

/* The deprecated roItem* messages as edits. */
static int
ro_item_op(struct ro_ctx *x, enum mos_type t, const struct mos_ro_item_op *o)
{
	struct ro_edit	ed;
	size_t		n = o->item_id.n;

	memset(&ed, 0, sizeof ed);
	ed.items = true;
	ed.target_story = o->story_id;
	ed.itemv = o->item.v;
	ed.nitemv = o->item.n;
	ed.ids = o->item_id.v;
	ed.nids = n;
	switch (t) {
	case MOS_T_RO_ITEM_INSERT:
	case MOS_T_RO_ITEM_REPLACE:
		ed.op = t == MOS_T_RO_ITEM_INSERT ? RO_OP_INSERT :
		    RO_OP_REPLACE;
		if (n > 1)
			return ro_fail(x->res, RO_BAD, false, "%s takes one "
			    "target itemID", mos_type_name(t));
		ed.target_item = n == 1 ? o->item_id.v[0] : NULL;
		break;
	case MOS_T_RO_ITEM_MOVE_MULTIPLE:
		if (n < 2)
			return ro_fail(x->res, RO_BAD, false,
			    "roItemMoveMultiple needs at least two itemIDs");
		ed.op = RO_OP_MOVE;
		ed.target_item = o->item_id.v[n - 1];
		ed.nids = n - 1;
		break;
	case MOS_T_RO_ITEM_DELETE:
		ed.op = RO_OP_DELETE;
		break;
	default:
		return ro_fail(x->res, RO_BAD, false, "Not an item operation");
	}
	return ro_edit_apply(x, &ed);
}

/* mosItemReplace: the item with that itemID, replaced in place. */
static int
ro_item_replace(struct ro_ctx *x, const struct mos_item_replace *r)
{
	struct ro_edit	ed;

	memset(&ed, 0, sizeof ed);
	ed.op = RO_OP_REPLACE;
	ed.items = true;
	ed.target_story = r->story_id;
	ed.target_item = r->item.item_id;
	ed.itemv = &r->item;
	ed.nitemv = 1;
	return ro_edit_apply(x, &ed);
}

/* roStorySend: the story's body, for a story we hold. */
static int
ro_story_send(struct ro_ctx *x, const struct mos_msg *m)
{
	const struct mos_ro_story_send	*s = &m->u.ro_story_send;
	struct sbuf			 sb = { NULL, 0, 0 };
	struct store_stmt			*st;
	int				 rc;

	if (ro_frag(m, "<roStorySend>", "</roStorySend>", true, &sb) != 0) {
		sbuf_free(&sb);
		return ro_fail(x->res, RO_BAD, false, "Story %s cannot be "
		    "stored", s->story_id);
	}
	st = gwdb_stmt(x->g, ST_RO_STORY_BODY);
	store_bind_int64(st, 1, x->ro);
	store_bind_text(st, 2, s->story_id, -1);
	store_bind_text(st, 3, sb.s, (int)sb.len);
	if ((rc = store_step(st)) == STORE_DONE)
		rc = ro_fail(x->res, RO_UNKNOWN_STORY, true,
		    "Unknown storyID %s", s->story_id);
	else
		rc = gwdb_rc(rc);
	store_reset(st);
	sbuf_free(&sb);
	return rc;
}

/* The roID a running-order message names, or NULL. */
const char *
rostore_ro_id(const struct mos_msg *m)
{
	switch (m->type) {
	case MOS_T_RO_CREATE:
	case MOS_T_RO_REPLACE:
	case MOS_T_RO_LIST:
	case MOS_T_RO_METADATA_REPLACE:
		return m->u.ro_create.ro_id;
	case MOS_T_RO_DELETE:
	case MOS_T_RO_REQ:
		return m->u.ro_delete.ro_id;
	case MOS_T_RO_READY_TO_AIR:
		return m->u.ro_ready_to_air.ro_id;
	case MOS_T_RO_ELEMENT_ACTION:
		return m->u.ro_element_action.ro_id;
	case MOS_T_RO_STORY_APPEND:
	case MOS_T_RO_STORY_INSERT:
	case MOS_T_RO_STORY_REPLACE:
	case MOS_T_RO_STORY_MOVE:
	case MOS_T_RO_STORY_SWAP:
	case MOS_T_RO_STORY_DELETE:
	case MOS_T_RO_STORY_MOVE_MULTIPLE:
		return m->u.ro_story_append.ro_id;
	case MOS_T_RO_ITEM_INSERT:
	case MOS_T_RO_ITEM_REPLACE:
	case MOS_T_RO_ITEM_MOVE_MULTIPLE:
	case MOS_T_RO_ITEM_DELETE:
		return m->u.ro_item_insert.ro_id;
	case MOS_T_MOS_ITEM_REPLACE:
		return m->u.mos_item_replace.ro_id;
	case MOS_T_RO_STORY_SEND:
		return m->u.ro_story_send.ro_id;
	default:
		return NULL;
	}
}

/* The change a message asks for, inside the transaction. */
static int
ro_apply_msg(struct ro_ctx *x, const struct mos_msg *m)
{
	const char	*ro_id = rostore_ro_id(m);
	struct store_stmt	*st;
	int		 rc;

	if (ro_empty(ro_id))
		return ro_fail(x->res, RO_BAD, false, "No roID");
	if (m->type == MOS_T_RO_CREATE || m->type == MOS_T_RO_REPLACE ||
	    m->type == MOS_T_RO_LIST)
		return ro_put(x, &m->u.ro_create);
	if ((rc = ro_find(x->g, x->ncs, ro_id, &x->ro)) == QUEUE_ENOTFOUND)
		return ro_fail(x->res, RO_UNKNOWN_RO, m->type != MOS_T_RO_DELETE,
		    "Unknown roID %s", ro_id);
	if (rc != QUEUE_OK)
		return rc;
	switch (m->type) {
	case MOS_T_RO_METADATA_REPLACE:
		return ro_metadata(x, &m->u.ro_metadata_replace);
	case MOS_T_RO_DELETE:
		return ro_delete(x);
	case MOS_T_RO_READY_TO_AIR:
		st = gwdb_stmt(x->g, ST_RO_AIR);
		store_bind_int64(st, 1, x->ro);
		gwdb_bind_text(st, 2, m->u.ro_ready_to_air.ro_air);
		store_bind_int64(st, 3, util_now_ms());
		return gwdb_exec_stmt(x->g, st);
	case MOS_T_RO_ELEMENT_ACTION:
		rc = ro_element_action(x, &m->u.ro_element_action);
		break;
	case MOS_T_RO_STORY_APPEND:
	case MOS_T_RO_STORY_INSERT:
	case MOS_T_RO_STORY_REPLACE:
	case MOS_T_RO_STORY_MOVE:
	case MOS_T_RO_STORY_SWAP:
	case MOS_T_RO_STORY_DELETE:
	case MOS_T_RO_STORY_MOVE_MULTIPLE:
		rc = ro_story_op(x, m->type, &m->u.ro_story_append);
		break;
	case MOS_T_RO_ITEM_INSERT:
	case MOS_T_RO_ITEM_REPLACE:
	case MOS_T_RO_ITEM_MOVE_MULTIPLE:
	case MOS_T_RO_ITEM_DELETE:
		rc = ro_item_op(x, m->type, &m->u.ro_item_insert);
		break;
	case MOS_T_MOS_ITEM_REPLACE:
		rc = ro_item_replace(x, &m->u.mos_item_replace);
		break;
	case MOS_T_RO_STORY_SEND:
		rc = ro_story_send(x, m);
		break;
	default:
		return ro_fail(x->res, RO_BAD, false, "Not a running-order "
		    "change: %s", mos_type_name(m->type));
	}
	if (rc == QUEUE_OK)
		rc = ro_exec_ids(x, ST_RO_TOUCH, NULL, NULL, util_now_ms());
	return rc;
}

/* The ro.changed event of an applied change, in its transaction. */
static int
ro_event(struct gwdb *g, const char *ncs, const struct mos_msg *m)
{
	struct sbuf	 sb;
	const char	*ro_id = rostore_ro_id(m);
	int		 rc;

	memset(&sb, 0, sizeof sb);
	sbuf_puts(&sb, "{\"ncs\":");
	sbuf_json_str(&sb, ncs);
	sbuf_puts(&sb, ",\"roID\":");
	sbuf_json_str(&sb, ro_id != NULL ? ro_id : "");
	sbuf_puts(&sb, ",\"change\":");
	sbuf_json_str(&sb, mos_type_name(m->type));
	sbuf_puts(&sb, "}");
	rc = events_add(g, "ro.changed", sb.s);
	sbuf_free(&sb);
	return rc;
}

/* A column as text ("" for NULL). */
static const char *
ro_text(struct store_stmt *st, int i)
{
	const char	*s = store_column_text(st, i);

	return s == NULL ? "" : (const char *)s;
}

/* The items of a result as JSON: [[story, item, obj, channel, status]]. */
static char *
ro_items_json(const struct ro_result *res)
{
	json_t	*a, *e;
	char	*s;
	size_t	 i;

	if ((a = json_array()) == NULL)
		fatalx("out of memory");
	for (i = 0; i < res->nitems; i++) {
		e = json_pack("[sssss?]", res->items[i].story_id,
		    res->items[i].item_id, res->items[i].obj_id,
		    res->items[i].status, res->items[i].channel);
		if (e == NULL || json_array_append_new(a, e) != 0)
			fatalx("out of memory");
	}
	if ((s = json_dumps(a, JSON_COMPACT)) == NULL)
		fatalx("out of memory");
	json_decref(a);
	return s;
}

/* The items of a kept answer back into res; -1 if the text is not ours. */
static int
ro_items_parse(struct ro_result *res, const char *text)
{
	static const char *const statuses[] = { "READY", "NOT READY",
	    RO_STAT_UNKNOWN };
	struct ro_item_stat	*it;
	json_t			*a, *e, *ch;
	const char		*story, *item, *obj, *status;
	size_t			 i, k;
	bool			 bad = false;

	if ((a = json_loads(text, 0, NULL)) == NULL)
		return -1;
	if (!json_is_array(a)) {
		json_decref(a);
		return -1;
	}
	res->items = xcalloc(json_array_size(a) + 1, sizeof *res->items);
	json_array_foreach(a, i, e) {
		if (json_unpack(e, "[ssssO]", &story, &item, &obj, &status,
		    &ch) != 0) {
			bad = true;
			break;
		}
		for (k = 0; k < nitems(statuses); k++)
			if (strcmp(status, statuses[k]) == 0)
				break;
		if (k == nitems(statuses) || (!json_is_null(ch) &&
		    !json_is_string(ch))) {
			json_decref(ch);
			bad = true;
			break;
		}
		it = &res->items[res->nitems++];
		it->story_id = xstrdup(story);
		it->item_id = xstrdup(item);
		it->obj_id = xstrdup(obj);
		it->channel = json_is_string(ch) ?
		    xstrdup(json_string_value(ch)) : NULL;
		it->status = statuses[k];
		json_decref(ch);
	}
	json_decref(a);
	if (bad) {
		rostore_result_clear(res, true);
		return -1;
	}
	return 0;
}

/*
 * The digest of a message as a resend would carry it again: SHA-256 of its
 * UTF-8 form (so the same message in the other encoding, or with other
 * white space, is the same). All zero if it cannot be written.
 */
void
rostore_digest(const struct mos_msg *m, uint8_t digest[RO_DIGEST_LEN])
{
	struct mos_buf	 b = { NULL, 0, 0 };
	struct mos_msg	 tmp = *m;
	char		 err[256];
	unsigned int	 len = RO_DIGEST_LEN;

	memset(digest, 0, RO_DIGEST_LEN);
	if (ro_empty(tmp.mos_id))
		tmp.mos_id = RO_DUMMY;
	if (ro_empty(tmp.ncs_id))
		tmp.ncs_id = RO_DUMMY;
	if (mos_write(&tmp, MOS_ENC_UTF8, &b, err, sizeof err) == 0 &&
	    EVP_Digest(b.data, b.len, digest, &len, EVP_sha256(), NULL) != 1)
		memset(digest, 0, RO_DIGEST_LEN);
	mos_buf_free(&b);
}

/*
 * The answer kept for a change (once->message_id != 0): QUEUE_OK with
 * res->items as they were, QUEUE_ENOTFOUND, or QUEUE_EXISTS when the
 * messageID was kept for a different message. Only the NCS's last change
 * can be resent (it has one message outstanding on its upper port): an
 * older one repeated after others is applied again.
 */
int
rostore_once_get(struct gwdb *g, const char *ncs, const struct ro_once *once,
    struct ro_result *res)
{
	struct store_stmt	*st;
	const void	*d;
	int		 rc;

	memset(res, 0, sizeof *res);
	st = gwdb_stmt(g, ST_RO_ANSWER_GET);
	store_bind_text(st, 1, ncs, -1);
	store_bind_int(st, 2, (int)once->port);
	store_bind_int(st, 3, once->message_id);
	store_bind_int64(st, 4, util_now_ms() - RO_ONCE_MS);
	if ((rc = store_step(st)) != STORE_ROW) {
		store_reset(st);
		return rc == STORE_DONE ? QUEUE_ENOTFOUND : gwdb_rc(rc);
	}
	d = store_column_blob(st, 0);
	if (store_column_int(st, 2) == 0)
		rc = QUEUE_ENOTFOUND;	/* not the last one: not a resend */
	else if (store_column_bytes(st, 0) != RO_DIGEST_LEN ||
	    memcmp(d, once->digest, RO_DIGEST_LEN) != 0)
		rc = QUEUE_EXISTS;
	else if (ro_items_parse(res, ro_text(st, 1)) != 0)
		rc = QUEUE_ENOTFOUND;	/* unreadable: apply it again */
	else
		rc = QUEUE_OK;
	store_reset(st);
	return rc;
}

/* Keep the answer of a change inside its transaction; trim the window. */
static int
ro_once_put(struct ro_ctx *x, const struct ro_once *once)
{
	struct store_stmt	*st;
	char		*items;
	int64_t		 id = 0, now = util_now_ms();
	int		 rc;

	items = ro_items_json(x->res);
	st = gwdb_stmt(x->g, ST_RO_ANSWER_PUT);
	store_bind_text(st, 1, x->ncs, -1);
	store_bind_int(st, 2, (int)once->port);
	store_bind_int(st, 3, once->message_id);
	store_bind_blob(st, 4, once->digest, RO_DIGEST_LEN);
	store_bind_int64(st, 5, now);
	store_bind_text(st, 6, items, -1);
	if ((rc = store_step(st)) == STORE_ROW)
		id = store_column_int64(st, 0);
	while (rc == STORE_ROW)
		rc = store_step(st);
	store_reset(st);
	free(items);
	if (rc != STORE_DONE)
		return gwdb_rc(rc);
	st = gwdb_stmt(x->g, ST_RO_ANSWER_TRIM);
	store_bind_int64(st, 1, id - RO_ONCE_KEEP);
	store_bind_int64(st, 2, now - RO_ONCE_MS);
	return gwdb_exec_stmt(x->g, st);
}

/* Apply one running-order message in one durable transaction. */
int
rostore_apply(struct gwdb *g, const char *ncs, const char *mos_id,
    const struct mos_msg *m, struct ro_result *res)
{
	return rostore_apply_once(g, ncs, mos_id, m, NULL, res);
}

/* The same, keeping its answer for resends when once is set. */
int
rostore_apply_once(struct gwdb *g, const char *ncs, const char *mos_id,
    const struct mos_msg *m, const struct ro_once *once,
    struct ro_result *res)
{
	struct ro_ctx	 x;
	struct store_stmt	*st;
	int		 rc;

	memset(res, 0, sizeof *res);
	memset(&x, 0, sizeof x);
	x.g = g;
	x.ncs = ncs;
	x.mos_id = mos_id;
	x.res = res;
	if ((rc = gwdb_durable(g, true)) != QUEUE_OK)
		return rc;
	if ((rc = queue_tx_begin(g->q)) != QUEUE_OK) {
		gwdb_durable(g, false);
		return rc;
	}
	if (once != NULL && once->message_id != 0) {
		rc = rostore_once_get(g, ncs, once, res);
		if (rc == QUEUE_OK || (rc != QUEUE_ENOTFOUND &&
		    rc != QUEUE_EXISTS)) {
			queue_tx_rollback(g->q);
			gwdb_durable(g, false);
			res->replayed = rc == QUEUE_OK;
			if (rc != QUEUE_OK)
				snprintf(res->text, sizeof res->text, "Internal "
				    "error: database: %s", queue_strerror(rc));
			return rc;
		}
		rostore_result_clear(res, false);
		res->reused = rc == QUEUE_EXISTS;
	}
	rc = ro_apply_msg(&x, m);
	if (rc == QUEUE_OK && res->err == RO_OK)
		rc = ro_event(g, ncs, m);
	if (rc == QUEUE_OK && res->err == RO_OK) {
		if (once != NULL && once->message_id != 0)
			rc = ro_once_put(&x, once);
		else {	/* a change no resend can name: the rest is older */
			st = gwdb_stmt(g, ST_RO_ANSWER_FORGET);
			store_bind_text(st, 1, ncs, -1);
			rc = gwdb_exec_stmt(g, st);
		}
	}
	if (rc == QUEUE_OK)
		rc = queue_tx_commit(g->q);
	else
		queue_tx_rollback(g->q);
	gwdb_durable(g, false);
	if (rc != QUEUE_OK && res->err == RO_OK)
		snprintf(res->text, sizeof res->text, "Internal error: "
		    "database: %s", queue_strerror(rc));
	if (res->err != RO_OK) {
		rostore_result_clear(res, true);
		return QUEUE_OK;	/* answered with an error roStatus */
	}
	return rc;
}

/* Free what a result holds (the error text stays). */
void
rostore_result_clear(struct ro_result *res, bool items_only)
{
	size_t	i;

	for (i = 0; i < res->nitems; i++) {
		free(res->items[i].story_id);
		free(res->items[i].item_id);
		free(res->items[i].obj_id);
		free(res->items[i].channel);
	}
	free(res->items);
	res->items = NULL;
	res->nitems = 0;
	if (!items_only)
		memset(res, 0, sizeof *res);
}

/*
 * A running order as a roList (envelope left empty), rebuilt from its
 * stored XML. QUEUE_ENOTFOUND if it is not held.
 */
int
rostore_get(struct gwdb *g, const char *ncs, const char *ro_id,
    struct mos_msg **out, struct rostore_info *info)
{
	struct sbuf	 sb = { NULL, 0, 0 };
	struct mos_error err;
	struct store_stmt	*st, *it;
	int64_t		 id = 0;
	int		 rc;

	*out = NULL;
	st = gwdb_stmt(g, ST_RO_GET);
	store_bind_text(st, 1, ncs, -1);
	store_bind_text(st, 2, ro_id, -1);
	if ((rc = store_step(st)) == STORE_ROW) {
		id = store_column_int64(st, 0);
		sbuf_puts(&sb, "<mos><mosID>" RO_DUMMY "</mosID><ncsID>"
		    RO_DUMMY "</ncsID><roList>");
		sbuf_puts(&sb, ro_text(st, 1));
		if (info != NULL) {
			memset(info, 0, sizeof *info);
			util_strlcpy(info->air, ro_text(st, 2),
			    sizeof info->air);
			info->confirmed = store_column_int(st, 3) != 0;
			info->changed_ms = store_column_int64(st, 4);
		}
	}
	store_reset(st);
	if (rc != STORE_ROW) {
		sbuf_free(&sb);
		return rc == STORE_DONE ? QUEUE_ENOTFOUND : gwdb_rc(rc);
	}
	st = gwdb_stmt(g, ST_RO_STORIES);
	store_bind_int64(st, 1, id);
	while ((rc = store_step(st)) == STORE_ROW) {
		sbuf_puts(&sb, ro_text(st, 1));
		it = gwdb_stmt(g, ST_RO_STORY_ITEMS);
		store_bind_int64(it, 1, id);
		store_bind_text_copy(it, 2, ro_text(st, 0), -1);
		while ((rc = store_step(it)) == STORE_ROW)
			sbuf_puts(&sb, ro_text(it, 0));
		store_reset(it);
		if (rc != STORE_DONE)
			break;
		sbuf_puts(&sb, "</story>");
		if (info != NULL)
			info->nstories++;
	}
	store_reset(st);
	if (rc != STORE_DONE) {
		sbuf_free(&sb);
		return gwdb_rc(rc);
	}
	sbuf_puts(&sb, "</roList></mos>");
	memset(&err, 0, sizeof err);
	rc = mos_parse(sb.s, sb.len, MOS_ENC_UTF8, MOS_LENIENT, out, &err);
	sbuf_free(&sb);
	if (rc != MOS_OK)
		return QUEUE_EIO;
	(*out)->mos_id = (*out)->ncs_id = NULL;
	return QUEUE_OK;
}

/*
 * The running orders held for an NCS (NULL: every NCS), in roID order.
 */
int
rostore_list(struct gwdb *g, const char *ncs, struct rostore_row **out,
    size_t *n)
{
	struct store_stmt		*st = gwdb_stmt(g, ST_RO_LIST);
	struct rostore_row	*r;
	int			 rc;

	*out = NULL;
	*n = 0;
	gwdb_bind_text(st, 1, ncs);
	while ((rc = store_step(st)) == STORE_ROW) {
		*out = xreallocarray(*out, *n + 1, sizeof **out);
		r = &(*out)[(*n)++];
		r->ncs = xstrdup(ro_text(st, 0));
		r->ro_id = xstrdup(ro_text(st, 1));
		r->slug = xstrdup(ro_text(st, 2));
		r->head = xstrdup(ro_text(st, 3));
		util_strlcpy(r->air, ro_text(st, 4), sizeof r->air);
		r->confirmed = store_column_int(st, 5) != 0;
		r->changed_ms = store_column_int64(st, 6);
		r->nstories = store_column_int64(st, 7);
		r->nitems = store_column_int64(st, 8);
	}
	store_reset(st);
	if (rc == STORE_DONE)
		return QUEUE_OK;
	rostore_rows_free(*out, *n);
	*out = NULL;
	*n = 0;
	return gwdb_rc(rc);
}

void
rostore_rows_free(struct rostore_row *r, size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++) {
		free(r[i].ncs);
		free(r[i].ro_id);
		free(r[i].slug);
		free(r[i].head);
	}
	free(r);
}

/*
 * A roListAll (envelope left empty) of the running orders held for an
 * NCS: their fields without stories.
 */
int
rostore_list_all(struct gwdb *g, const char *ncs, struct mos_msg **out)
{
	struct rostore_row	*r;
	struct sbuf		 sb = { NULL, 0, 0 };
	struct mos_error	 err;
	size_t			 n, i;
	int			 rc;

	*out = NULL;
	if ((rc = rostore_list(g, ncs, &r, &n)) != QUEUE_OK)
		return rc;
	sbuf_puts(&sb, "<mos><mosID>" RO_DUMMY "</mosID><ncsID>" RO_DUMMY
	    "</ncsID><roListAll>");
	for (i = 0; i < n; i++) {
		sbuf_puts(&sb, "<ro>");
		sbuf_puts(&sb, r[i].head);
		sbuf_puts(&sb, "</ro>");
	}
	sbuf_puts(&sb, "</roListAll></mos>");
	rostore_rows_free(r, n);
	memset(&err, 0, sizeof err);
	rc = mos_parse(sb.s, sb.len, MOS_ENC_UTF8, MOS_LENIENT, out, &err);
	sbuf_free(&sb);
	if (rc != MOS_OK)
		return QUEUE_EIO;
	(*out)->mos_id = (*out)->ncs_id = NULL;
	/* roListAll carries no macros */
	for (i = 0; i < (*out)->u.ro_list_all.ro.n; i++) {
		(*out)->u.ro_list_all.ro.v[i].macro_in = NULL;
		(*out)->u.ro_list_all.ro.v[i].macro_out = NULL;
	}
	return QUEUE_OK;
}

/*
 * After a roListAll from the NCS: every running order of that NCS not in
 * ids is marked unconfirmed (never deleted), those listed confirmed.
 */
int
rostore_confirm(struct gwdb *g, const char *ncs, const char *const *ids,
    size_t n)
{
	struct store_stmt	*st;
	size_t		 i;
	int		 rc;

	if ((rc = queue_tx_begin(g->q)) != QUEUE_OK)
		return rc;
	st = gwdb_stmt(g, ST_RO_CONFIRM);
	store_bind_text(st, 1, ncs, -1);
	store_bind_int(st, 3, 0);
	rc = gwdb_exec_stmt(g, st);
	for (i = 0; rc == QUEUE_OK && i < n; i++) {
		st = gwdb_stmt(g, ST_RO_CONFIRM);
		store_bind_text(st, 1, ncs, -1);
		store_bind_text(st, 2, ids[i], -1);
		store_bind_int(st, 3, 1);
		rc = gwdb_exec_stmt(g, st);
	}
	if (rc != QUEUE_OK) {
		queue_tx_rollback(g->q);
		return rc;
	}
	return queue_tx_commit(g->q);
}

/* Where an object is used: up to max references, in running-order order. */
int
rostore_usage(struct gwdb *g, const char *obj_id, struct rostore_use **out,
    size_t *n)
{
	struct store_stmt		*st = gwdb_stmt(g, ST_RO_USAGE);
	struct rostore_use	*u;
	int			 rc;

	*out = NULL;
	*n = 0;
	store_bind_text(st, 1, obj_id, -1);
	while ((rc = store_step(st)) == STORE_ROW) {
		*out = xreallocarray(*out, *n + 1, sizeof **out);
		u = &(*out)[(*n)++];
		u->ncs = xstrdup(ro_text(st, 0));
		u->ro_id = xstrdup(ro_text(st, 1));
		u->story_id = xstrdup(ro_text(st, 2));
		u->item_id = xstrdup(ro_text(st, 3));
		u->slug = xstrdup(ro_text(st, 4));
		u->channel = xstrdup(ro_text(st, 5));
	}
	store_reset(st);
	if (rc == STORE_DONE)
		return QUEUE_OK;
	rostore_uses_free(*out, *n);
	*out = NULL;
	*n = 0;
	return gwdb_rc(rc);
}

void
rostore_uses_free(struct rostore_use *u, size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++) {
		free(u[i].ncs);
		free(u[i].ro_id);
		free(u[i].story_id);
		free(u[i].item_id);
		free(u[i].slug);
		free(u[i].channel);
	}
	free(u);
}
