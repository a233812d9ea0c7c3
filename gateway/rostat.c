/*
 * Status back to the NCS: when an asset's readiness changes (its objAir, its
 * arrival in the catalog, its deletion), every item of ours that references
 * it in a running order of an NCS gets a roElementStat (element ITEM, READY
 * or NOT READY) on that NCS's upper link; when its duration or paths change,
 * an NCS with mos_item_replace on gets a mosItemReplace for each such item
 * (the item as stored, with the asset's objDur, objTB and objPaths).
 *
 * The change and one job per NCS holding such items commit together with
 * the catalog write (lane "rostat:NAME", kind "rostat", payload the objID,
 * coalesced per object and NCS like the mosObj deliveries, so a burst of
 * changes is one delivery of the newest state). Per NCS one job at a time
 * is claimed on the bookkeeping thread while the upper link is up; its
 * messages are queued on the link (kept across a reconnect); when every one
 * is answered the job completes, a NACK fails it (retried with backoff up to
 * max_attempts), a shutdown gives it back.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "gateway/gateway.h"

#define ROSTAT_POLL_MS		250
#define ROSTAT_LEASE_MS		300000
/*
 * its worker name: GW_NCS_WORKER_PREFIX "NCS/INSTANCE/PID/rostat", taken
 * back at restart and by the NCS's next owner
 */
#define ROSTAT_WORKER_FMT	GW_NCS_WORKER_PREFIX "%s/%s/%d/rostat"

/* One item to tell about. */
struct rostat_item {
	char	*ro_id;
	char	*story_id;
	char	*item_id;
	char	*channel;
	char	*xml;		/* the stored <item> */
};

struct rostat {
	struct ncs		*ncs;
	struct dbw		*dbw;
	char			*lane;
	char			*name;		/* of the NCS */
	char			*worker;
	char			*mos_id;
	struct event		*timer;
	bool			 busy;		/* a job claimed or claiming */
	bool			 orphan;	/* the NCS is gone: free at done */
	int64_t			 epoch;		/* owner epoch of the claim */
	int64_t			 job_id;
	int64_t			 lease_gen;
	char			*obj_id;
	size_t			 pending;	/* messages not answered */
	bool			 nacked;
	bool			 cancelled;
	char			 text[200];
};

/* A claim (and what it needs) or a settlement on the bookkeeping thread. */
struct rostat_task {
	struct rostat		*st;
	int			 op;		/* 0 claim, 1 complete, 2 fail,
						   3 release */
	char			*lane;
	char			*name;
	char			*worker;
	char			*mos_id;
	int64_t			 epoch;		/* owner epoch of the claim */
	int64_t			 job_id;
	int64_t			 lease_gen;
	char			*text;
	bool			 got;
	bool			 replace;	/* kind itemreplace */
	char			*obj_id;
	const char		*status;
	struct mos_msg		**msgs;		/* built mosItemReplace */
	size_t			 nmsgs;
	struct rostat_item	*items;
	size_t			 nitems;
	int			 rc;
};

static void	rostat_timer_cb(evutil_socket_t, short, void *);

/*
 * Enqueue the deliveries of an object's change (inside a transaction):
 * kind ROSTAT_KIND (readiness) or ROSTAT_KIND_REPLACE (duration, paths).
 */
int
rostat_enqueue(struct gwdb *g, const char *obj_id, const char *kind)
{
	struct store_stmt	*st = gwdb_stmt(g, ST_RO_STAT_NCS);

	store_bind_text(st, 1, obj_id, -1);
	return catalog_enqueue_rows(g, st, ROSTAT_LANE_PREFIX, kind, kind,
	    obj_id, NULL);
}

/* A column as a copy ("" for NULL). */
static char *
rostat_col(struct store_stmt *st, int i)
{
	const char	*s = store_column_text(st, i);

	return xstrdup(s == NULL ? "" : (const char *)s);
}

/* A mosItemReplace: the stored item with the asset's timing and paths. */
static struct mos_msg *
rostat_replace_msg(const struct rostat_item *it,
    const struct catalog_asset *a)
{
	struct mos_msg	*m = NULL;
	struct mos_obj	 o;
	struct mos_item	*item;
	struct sbuf	 sb = { NULL, 0, 0 };

	sbuf_puts(&sb, "<mos><mosID>x</mosID><ncsID>x</ncsID>"
	    "<mosItemReplace><roID>");
	sbuf_xml_text(&sb, it->ro_id);
	sbuf_puts(&sb, "</roID><storyID>");
	sbuf_xml_text(&sb, it->story_id);
	sbuf_puts(&sb, "</storyID>");
	sbuf_puts(&sb, it->xml);
	sbuf_puts(&sb, "</mosItemReplace></mos>");
	if (mos_parse(sb.s, sb.len, MOS_ENC_UTF8, MOS_LENIENT, &m,
	    NULL) != MOS_OK) {
		sbuf_free(&sb);
		return NULL;
	}
	sbuf_free(&sb);
	if (catalog_fill_obj(m, &o, a, "UPDATED") != 0) {
		mos_msg_free(m);
		return NULL;
	}
	item = &m->u.mos_item_replace.item;
	item->obj_tb = o.obj_tb;
	item->obj_dur = o.obj_dur;
	item->has_obj_dur = true;
	item->obj_paths = o.obj_paths;
	m->mos_id = m->ncs_id = NULL;
	return m;
}

/* The mosItemReplace messages of a job (thread). */
static int
rostat_build_replace(struct gwdb *g, struct rostat_task *t)
{
	struct catalog_asset	 a;
	struct mos_msg		*m;
	size_t			 i;
	int			 rc;

	if ((rc = catalog_get(g, t->obj_id, &a)) == QUEUE_ENOTFOUND)
		return QUEUE_OK;	/* gone: nothing to replace */
	if (rc != QUEUE_OK)
		return rc;
	t->msgs = xcalloc(t->nitems + 1, sizeof *t->msgs);
	for (i = 0; !a.deleted && i < t->nitems; i++)
		if ((m = rostat_replace_msg(&t->items[i], &a)) != NULL)
			t->msgs[t->nmsgs++] = m;
	catalog_asset_clear(&a);
	return QUEUE_OK;
}

/* Claim the next job and read what it needs (thread). */
static int
rostat_claim(struct gwdb *g, struct rostat_task *t)
{
	struct queue_job	 job;
	struct rostat_item	*it;
	struct store_stmt		*st;
	size_t			 n = 0;
	int			 rc;

	memset(&job, 0, sizeof job);
	rc = queue_claim(g->q, t->lane, t->worker, ROSTAT_LEASE_MS, &job, 1,
	    &n);
	if (rc != QUEUE_OK || n == 0)
		return rc;
	t->got = true;
	t->replace = strcmp(job.kind, ROSTAT_KIND_REPLACE) == 0;
	t->job_id = job.id;
	t->lease_gen = job.lease_gen;
	t->obj_id = xstrndup(job.payload, job.payload_len);
	queue_job_clear(&job);
	t->status = "NOT READY";
	st = gwdb_stmt(g, ST_RO_ASSET_AIR);
	store_bind_text(st, 1, t->obj_id, -1);
	if (store_step(st) == STORE_ROW && store_column_int(st, 1) == 0 &&
	    strcmp(store_column_text(st, 0), "READY") == 0)
		t->status = "READY";
	store_reset(st);
	st = gwdb_stmt(g, ST_RO_STAT_ITEMS);
	store_bind_text(st, 1, t->obj_id, -1);
	store_bind_text(st, 2, t->name, -1);
	store_bind_text(st, 3, t->mos_id, -1);
	while ((rc = store_step(st)) == STORE_ROW) {
		t->items = xreallocarray(t->items, t->nitems + 1,
		    sizeof *t->items);
		it = &t->items[t->nitems++];
		it->ro_id = rostat_col(st, 0);
		it->story_id = rostat_col(st, 1);
		it->item_id = rostat_col(st, 2);
		it->channel = rostat_col(st, 3);
		it->xml = rostat_col(st, 4);
	}
	store_reset(st);
	if (rc != STORE_DONE)
		return gwdb_rc(rc);
	return t->replace ? rostat_build_replace(g, t) : QUEUE_OK;
}

/* The bookkeeping thread. */
static int
rostat_run(struct gwdb *g, void *arg)
{
	struct rostat_task	*t = arg;
	int64_t			 cur;

	switch (t->op) {
	case 0:
		t->rc = rostat_claim(g, t);
		break;
	case 1:
	case 2:
		/* only while the claim's owner epoch is the NCS's */
		if ((t->rc = queue_tx_begin(g->q)) != QUEUE_OK)
			break;
		if ((t->rc = owner_fence(g, t->name, t->epoch, &cur)) ==
		    QUEUE_OK)
			t->rc = t->op == 1 ? queue_complete(g->q, t->job_id,
			    t->lease_gen) : queue_fail(g->q, t->job_id,
			    t->lease_gen, t->text, false);
		if (t->rc == QUEUE_OK)
			t->rc = queue_tx_commit(g->q);
		else
			queue_tx_rollback(g->q);
		break;
	default:
		t->rc = queue_release(g->q, t->job_id, t->lease_gen, 0);
		break;
	}
	return t->rc;
}

static void
rostat_task_free(struct rostat_task *t)
{
	size_t	i;

	for (i = 0; i < t->nitems; i++) {
		free(t->items[i].ro_id);
		free(t->items[i].story_id);
		free(t->items[i].item_id);
		free(t->items[i].channel);
		free(t->items[i].xml);
	}
	free(t->items);
	for (i = 0; i < t->nmsgs; i++)
		mos_msg_free(t->msgs[i]);
	free(t->msgs);
	free(t->lane);
	free(t->name);
	free(t->worker);
	free(t->mos_id);
	free(t->text);
	free(t->obj_id);
	free(t);
}

static void
rostat_destroy(struct rostat *st)
{
	event_free(st->timer);
	free(st->lane);
	free(st->name);
	free(st->worker);
	free(st->mos_id);
	free(st->obj_id);
	free(st);
}

static struct rostat_task *
rostat_task_new(struct rostat *st, int op)
{
	struct rostat_task	*t;

	t = xcalloc(1, sizeof *t);
	t->st = st;
	t->op = op;
	t->lane = xstrdup(st->lane);
	t->name = xstrdup(st->name);
	t->worker = xstrdup(st->worker);
	t->mos_id = xstrdup(st->mos_id);
	t->job_id = st->job_id;
	t->lease_gen = st->lease_gen;
	/* a claim: the NCS's epoch now; a settlement: the claim's */
	t->epoch = op == 0 ? st->ncs->epoch : st->epoch;
	return t;
}

/* Look again a little later. */
static void
rostat_later(struct rostat *st, int64_t ms)
{
	struct timeval	tv = { (time_t)(ms / 1000), (suseconds_t)(ms % 1000) *
			    1000 };

	evtimer_add(st->timer, &tv);
}

/* A settlement is stored: the next job. */
static void
rostat_settled(void *arg, int rc)
{
	struct rostat_task	*t = arg;
	struct rostat		*st = t->st;

	if (st->orphan) {
		rostat_task_free(t);
		rostat_destroy(st);
		return;
	}
	if (rc != QUEUE_OK)
		log_event(LL_WARN, "rostat.lost", "ncs=%s job=%lld obj=%s "
		    "error=%s", log_q(st->name), (long long)t->job_id,
		    log_q(st->obj_id), queue_strerror(rc));
	st->busy = false;
	free(st->obj_id);
	st->obj_id = NULL;
	rostat_task_free(t);
	rostat_pump(st);
}

/* Every message of the job is answered (or cancelled): settle it. */
static void
rostat_finish(struct rostat *st)
{
	struct rostat_task	*t;

	if (st->cancelled)
		t = rostat_task_new(st, 3);
	else if (st->nacked) {
		t = rostat_task_new(st, 2);
		t->text = xstrdup(st->text);
		log_event(LL_WARN, "rostat.nacked", "ncs=%s job=%lld obj=%s "
		    "text=%s", log_q(st->name), (long long)st->job_id,
		    log_q(st->obj_id), log_q(st->text));
	} else {
		t = rostat_task_new(st, 1);
		log_event(LL_DEBUG, "rostat.acked", "ncs=%s job=%lld obj=%s",
		    log_q(st->name), (long long)st->job_id,
		    log_q(st->obj_id));
	}
	dbw_submit(st->dbw, rostat_run, rostat_settled, t);
}

/* The answer to one roElementStat. */
static void
rostat_msg_cb(void *arg, struct link_msg *lm, enum link_result res,
    const struct mos_msg *reply)
{
	struct rostat	*st = arg;
	const char	*s;

	(void)lm;
	if (res == LINK_CANCELLED)
		st->cancelled = true;
	else if (reply->type == MOS_T_RO_ACK &&
	    (s = reply->u.ro_ack.ro_status) != NULL && strcmp(s, "OK") != 0) {
		st->nacked = true;
		util_strlcpy(st->text, s, sizeof st->text);
	}
	if (--st->pending == 0)
		rostat_finish(st);
}

/* One roElementStat for an item. */
static struct mos_msg *
rostat_msg(struct rostat *st, const struct rostat_item *it,
    const char *obj_id, const char *status)
{
	struct mos_msg			*m;
	struct mos_ro_element_stat	*e;

	m = reply_new(MOS_T_RO_ELEMENT_STAT, st->mos_id, NULL, 0);
	e = &m->u.ro_element_stat;
	e->element = "ITEM";
	e->ro_id = mos_msg_strdup(m, it->ro_id);
	e->story_id = mos_msg_strdup(m, it->story_id);
	e->item_id = mos_msg_strdup(m, it->item_id);
	e->obj_id = mos_msg_strdup(m, obj_id);
	e->item_channel = it->channel[0] != '\0' ?
	    mos_msg_strdup(m, it->channel) : NULL;
	e->status = status;
	mos_time_now(&e->time);
	return m;
}

/* A job is claimed (or none was): send its messages. */
static void
rostat_claimed(void *arg, int rc)
{
	struct rostat_task	*t = arg;
	struct rostat		*st = t->st;
	struct ncs		*n = st->ncs;
	size_t			 i, sent = 0;

	if (st->orphan) {
		if (t->got) {
			/* give it back: the NCS was removed meanwhile */
			t->op = 3;
			t->st = st;
			dbw_submit(st->dbw, rostat_run, rostat_settled, t);
			return;
		}
		rostat_task_free(t);
		rostat_destroy(st);
		return;
	}
	if (rc != QUEUE_OK || !t->got) {
		if (rc != QUEUE_OK)
			log_event(LL_WARN, "db.error", "op=rostat-claim "
			    "error=%s", queue_strerror(rc));
		st->busy = false;
		rostat_task_free(t);
		rostat_later(st, ROSTAT_POLL_MS);
		return;
	}
	st->job_id = t->job_id;
	st->lease_gen = t->lease_gen;
	st->epoch = t->epoch;
	st->obj_id = xstrdup(t->obj_id);
	st->nacked = st->cancelled = false;
	st->text[0] = '\0';
	st->pending = 1;	/* held until every message is queued */
	for (i = 0; t->replace && n->conf->mos_item_replace &&
	    i < t->nmsgs; i++) {
		st->pending++;
		sent++;
		ncs_send(n, GW_PORT_UPPER, link_msg_new(t->msgs[i],
		    rostat_msg_cb, st));
		t->msgs[i] = NULL;
	}
	for (i = 0; !t->replace && i < t->nitems; i++) {
		if (!config_ro_status_on(n->conf, t->status))
			break;
		st->pending++;
		sent++;
		ncs_send(n, GW_PORT_UPPER, link_msg_new(rostat_msg(st,
		    &t->items[i], t->obj_id, t->status), rostat_msg_cb, st));
	}
	log_event(LL_INFO, "rostat.sent", "ncs=%s job=%lld obj=%s kind=%s "
	    "status=%s items=%zu sent=%zu", log_q(st->name),
	    (long long)st->job_id, log_q(st->obj_id), t->replace ?
	    ROSTAT_KIND_REPLACE : ROSTAT_KIND, t->replace ? "-" :
	    log_q(t->status), t->nitems, sent);
	rostat_task_free(t);
	if (--st->pending == 0)
		rostat_finish(st);
}

/* Claim the next job if the upper link is up and none is in hand. */
void
rostat_pump(struct rostat *st)
{
	struct link	*l;

	if (st == NULL || st->busy || st->orphan)
		return;
	l = ncs_active_link(st->ncs, GW_PORT_UPPER);
	if (l == NULL || !link_is_up(l)) {
		rostat_later(st, ROSTAT_POLL_MS);
		return;
	}
	st->busy = true;
	evtimer_del(st->timer);
	dbw_submit(st->dbw, rostat_run, rostat_claimed,
	    rostat_task_new(st, 0));
}

static void
rostat_timer_cb(evutil_socket_t fd, short ev, void *arg)
{
	(void)fd;
	(void)ev;
	rostat_pump(arg);
}

/* Status back for one NCS. */
struct rostat *
rostat_new(struct ncs *n)
{
	struct rostat	*st;

	st = xcalloc(1, sizeof *st);
	st->ncs = n;
	st->dbw = n->gw->dbw;
	st->name = xstrdup(n->conf->name);
	xasprintf(&st->worker, ROSTAT_WORKER_FMT, n->conf->name,
	    n->gw->cfg->instance, (int)getpid());
	st->mos_id = xstrdup(n->gw->cfg->mos_id);
	xasprintf(&st->lane, ROSTAT_LANE_PREFIX "%s", n->conf->name);
	if ((st->timer = evtimer_new(n->gw->base, rostat_timer_cb, st)) ==
	    NULL)
		fatalx("evtimer_new failed");
	return st;
}

/*
 * The NCS goes away (after its queued messages were cancelled): freed now,
 * or by the task still on the bookkeeping thread.
 */
void
rostat_free(struct rostat *st)
{
	if (st == NULL)
		return;
	evtimer_del(st->timer);
	if (st->busy) {
		st->orphan = true;
		st->ncs = NULL;
		return;
	}
	rostat_destroy(st);
}
