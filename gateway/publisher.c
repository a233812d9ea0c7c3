/*
 * The publisher of one NCS: delivery jobs of lane "ncs:NAME" become mosObj
 * messages, one outstanding at a time on the NCS's active lower link, built
 * from the catalog row as it is when the job is claimed (NEW, UPDATED or
 * DELETED with the row's objRev); a job completes only on the matching
 * mosAck ACK.
 *
 * The loop thread only sends and receives. Everything that touches the
 * database happens in the flush transaction on the bookkeeping thread
 * (dbw.c, gw.c), a few ms later and in parallel with the links:
 *
 *   window   up to PUB_WINDOW jobs claimed ahead, each with its mosObj
 *            built from the catalog and encoded (wire.c), so that on a
 *            mosAck the next mosObj goes out at once; the claim is made
 *            whenever the window has room, in the flush transaction
 *   ops      what the loop thread decided since the last flush: completions
 *            (group commit, with the delivery table: last acked status per
 *            NCS and object), failures after a NACK (retry with backoff,
 *            FAILED after max_attempts, the NACK text kept in the job's
 *            history), releases, lease renewals of the window
 *
 * A job is claimed only when no job of the same object is in the window or
 * in flight (else it goes back to the queue at once), so its status (NEW or
 * UPDATED) is read after the earlier delivery of that object was settled.
 *
 *   tickets  an asset change of the API claims its delivery in its own
 *            transaction (publisher_tickets, _claims_run, _offer), so the
 *            mosObj leaves once that one commit is durable; such a job
 *            whose object turns out busy on the loop thread goes back
 *            (pub_obj_busy), and so does one of a flush's claim.
 * A link that goes down keeps the message in flight (resent with its
 * messageID when a link comes back) and gives the window back to the queue.
 * A mosObj the NCS never answers (no mosAck after `retries` resends, and
 * the link reconnects) is a failed attempt like a NACK: the job goes back
 * with backoff, or is FAILED at max_attempts, and later jobs go on.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "gateway/gateway.h"

#define PUB_WINDOW	512	/* jobs claimed and prepared ahead, at most */
#define PUB_CLAIM_MIN	32	/* claim once the window has this much room */
/*
 * Nothing was due: claim again after PUB_POLL_MS, or after [database]
 * notify_poll while job notifications work (wake.c). A notification makes
 * a claim at once, but at most one per PUB_POLL_MS after a claim that
 * found nothing (the releases of a claim notify too).
 */
#define PUB_POLL_MS	50
#define PUB_RETRY_MS	200
/*
 * Jobs below the default priority (the initial sync, isync.c) RUNNING at
 * once, window and flight together: the rest of the lane's PUB_WINDOW + 1
 * is kept for live changes, which also go ahead of them in the window.
 */
#define PUB_LOW_AHEAD	16

/* What a claimed job becomes, decided on the bookkeeping thread. */
enum pub_action {
	PUB_SEND = 0,	/* msg (and wire) is the mosObj */
	PUB_SKIP,	/* a tombstone the NCS never had: complete it */
	PUB_FAIL,	/* permanent failure, why says it */
	PUB_RETRY,	/* the catalog could not be read: given back */
};

struct pub_job {
	int64_t		 id;
	int64_t		 gen;
	int64_t		 epoch;		/* the NCS's owner epoch at the claim */
	char		*obj_id;
	int		 prio;		/* the job's priority */
	int		 attempts;
	int		 max_attempts;
	bool		 lost;
	enum pub_action	 action;
	struct mos_msg	*msg;
	struct wire	 wire;
	int		 target;	/* whose ncsID the wire carries */
	int		 rev;
	char		 status[16];
	char		 why[256];	/* PUB_FAIL */
};

enum pub_op_kind {
	PUB_OP_DONE = 0,	/* complete; obj_id set: record the delivery */
	PUB_OP_FAIL,		/* retry with backoff or FAILED */
	PUB_OP_RELEASE,		/* back to the queue, no attempt counted */
	PUB_OP_LEASE,		/* renew the lease */
	PUB_OP_FENCED,		/* refused: claimed under an older owner */
};

/* One thing for the database to do with a job; rc is the result. */
struct pub_op {
	enum pub_op_kind kind;
	int64_t		 id;
	int64_t		 gen;
	int64_t		 epoch;		/* the job's claim epoch */
	char		*obj_id;
	char		*text;		/* FAIL: the NACK text */
	bool		 permanent;
	int		 attempts;
	int		 max_attempts;
	int		 rev;
	char		 status[16];
	int64_t		 ms;		/* RELEASE: delay; LEASE: lease */
	int		 rc;
};

struct pub_ops {
	struct pub_op	*v;
	size_t		 n;
	size_t		 cap;
};

/* What one publisher hands to one flush transaction (self-contained). */
struct pub_work {
	struct publisher	*owner;	/* NULL once it is gone */
	char			*ncs;
	char			*lane;
	char			*worker;
	int64_t			 epoch;		/* the NCS's owner epoch */
	struct pub_ops		 ops;
	/* the claim: want > 0 */
	size_t			 want;
	int64_t			 lease_ms;
	char			*mos_id;
	char			*ncs_id;
	int			 target;
	enum mos_enc		 enc;
	char			**busy;	/* objects in the window or in flight */
	size_t			 nbusy;
	/* its result */
	struct pub_job		*jobs;
	size_t			 njobs;
	size_t			 deferred;	/* busy objects given back */
	size_t			 fenced;	/* ops of a stale owner refused */
	TAILQ_ENTRY(pub_work)	 entry;
};

struct publisher {
	struct ncs	*ncs;
	char		 lane[96];
	char		 worker[128];
	struct pub_job	 win[PUB_WINDOW];	/* a ring */
	size_t		 head;
	size_t		 count;
	struct pub_job	 cur;
	bool		 has_cur;
	struct pub_ops	 ops;
	struct pub_work	*flying;	/* in the flush transaction now */
	bool		 claimed_none;	/* the last claim found nothing */
	bool		 woken;		/* notified since the last claim */
	int64_t		 none_mono;	/* when a claim last found nothing */
	int64_t		 poll_mono;	/* poll_ev fires then (0: not armed) */
	struct event	*poll_ev;
	struct event	*lease_ev;
};

/* Milliseconds as a timeval. */
static struct timeval
pub_tv(int64_t ms)
{
	struct timeval	tv;

	tv.tv_sec = (time_t)(ms / 1000);
	tv.tv_usec = (suseconds_t)(ms % 1000) * 1000;
	return tv;
}

/* A database error that undoes the whole transaction. */
static bool
pub_fatal(int rc)
{
	return rc == QUEUE_EBUSY || rc == QUEUE_EFULL || rc == QUEUE_EIO;
}

/* Free what a job holds. */
static void
pub_job_clear(struct pub_job *j)
{
	free(j->obj_id);
	j->obj_id = NULL;
	mos_msg_free(j->msg);
	j->msg = NULL;
	wire_clear(&j->wire);
}

/* A new op at the end of the list (zeroed but for kind and j's claim). */
static struct pub_op *
pub_op_add(struct pub_ops *o, enum pub_op_kind kind, const struct pub_job *j)
{
	struct pub_op	*op;

	if (o->n == o->cap) {
		o->cap = o->cap == 0 ? 64 : o->cap * 2;
		o->v = xreallocarray(o->v, o->cap, sizeof *o->v);
	}
	op = &o->v[o->n++];
	memset(op, 0, sizeof *op);
	op->kind = kind;
	if (j != NULL) {
		op->id = j->id;
		op->gen = j->gen;
		op->epoch = j->epoch;
	}
	return op;
}

/* Free the ops. */
static void
pub_ops_clear(struct pub_ops *o)
{
	size_t	i;

	for (i = 0; i < o->n; i++) {
		free(o->v[i].obj_id);
		free(o->v[i].text);
	}
	free(o->v);
	memset(o, 0, sizeof *o);
}

/* Move every op of from to the end of to. */
static void
pub_ops_move(struct pub_ops *to, struct pub_ops *from)
{
	size_t	i;

	if (to->n == 0) {
		free(to->v);
		*to = *from;
		memset(from, 0, sizeof *from);
		return;
	}
	for (i = 0; i < from->n; i++)
		*pub_op_add(to, from->v[i].kind, NULL) = from->v[i];
	free(from->v);
	memset(from, 0, sizeof *from);
}

/* Give a job back to the queue (in the next flush). */
static void
pub_op_release(struct pub_ops *o, const struct pub_job *j, int64_t delay_ms)
{
	if (!j->lost)
		pub_op_add(o, PUB_OP_RELEASE, j)->ms = delay_ms;
}

/* Forget the claim of a work and what it claimed. */
static void
pub_work_unclaim(struct pub_work *w)
{
	size_t	i;

	for (i = 0; i < w->nbusy; i++)
		free(w->busy[i]);
	free(w->busy);
	w->busy = NULL;
	w->nbusy = 0;
	for (i = 0; i < w->njobs; i++)
		pub_job_clear(&w->jobs[i]);
	free(w->jobs);
	w->jobs = NULL;
	w->njobs = w->deferred = w->want = 0;
}

/* Free a work with all it holds. */
static void
pub_work_free(struct pub_work *w)
{
	if (w->owner != NULL && w->owner->flying == w)
		w->owner->flying = NULL;
	pub_ops_clear(&w->ops);
	pub_work_unclaim(w);
	free(w->ncs);
	free(w->lane);
	free(w->worker);
	free(w->mos_id);
	free(w->ncs_id);
	free(w);
}

/* Free a list of works (shutdown). */
void
publisher_works_free(struct pub_work_list *l)
{
	struct pub_work	*w;

	while ((w = TAILQ_FIRST(l)) != NULL) {
		TAILQ_REMOVE(l, w, entry);
		pub_work_free(w);
	}
}

/* A work for the ops of a publisher that is going away. */
static void
pub_orphan(struct gw *gw, const char *ncs, struct pub_ops *ops)
{
	struct pub_work	*w;

	if (ops->n == 0)
		return;
	w = xcalloc(1, sizeof *w);
	w->ncs = xstrdup(ncs);
	pub_ops_move(&w->ops, ops);
	TAILQ_INSERT_TAIL(&gw->pub_retry, w, entry);
	gw_flush_soon(gw);
}

/* ------------------------------------------------------------------------ */
/* The loop thread: the window and the link. */

/* Claim more? The link is up and the window has room. */
static bool
pub_wants_claim(const struct publisher *p)
{
	const struct ncs	*n = p->ncs;
	size_t			 room = PUB_WINDOW - p->count;

	if (!n->conf->publish || n->gw->stopping || p->flying != NULL ||
	    !link_is_up(n->link[n->active][0]))
		return false;
	return room >= PUB_CLAIM_MIN || p->count == 0;
}

/* Time to claim (nothing was due last time): a flush now. */
static void
pub_poll_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct publisher	*p = arg;

	(void)fd;
	(void)ev;
	p->poll_mono = 0;
	if (pub_wants_claim(p))
		gw_flush_now(p->ncs->gw);
}

/*
 * Nothing was due at the last claim: claim again after the poll interval,
 * or, once notified, PUB_POLL_MS after that claim (sooner than a timer
 * already armed).
 */
static void
pub_poll_arm(struct publisher *p)
{
	struct gw	*gw = p->ncs->gw;
	struct timeval	 tv;
	int64_t		 now = util_mono_ms(), at;

	if (p->woken)
		at = p->none_mono + PUB_POLL_MS;
	else
		at = now + (wake_listening(gw->wake) ? gw->cfg->notify_poll_ms :
		    PUB_POLL_MS);
	if (at < now)
		at = now;
	if (p->poll_mono != 0 && p->poll_mono <= at &&
	    evtimer_pending(p->poll_ev, NULL))
		return;
	p->poll_mono = at;
	tv = pub_tv(at - now);
	evtimer_add(p->poll_ev, &tv);
}

/* Renew the leases of the window and of the job in flight. */
static void
pub_lease_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct publisher	*p = arg;
	int64_t			 lease = p->ncs->gw->cfg->lease_ms;
	size_t			 i;
	struct pub_job		*j;

	(void)fd;
	(void)ev;
	for (i = 0; i <= p->count; i++) {
		j = i < p->count ? &p->win[(p->head + i) % PUB_WINDOW] :
		    (p->has_cur ? &p->cur : NULL);
		if (j != NULL && !j->lost)
			pub_op_add(&p->ops, PUB_OP_LEASE, j)->ms =
			    lease;
	}
	if (p->ops.n > 0)
		gw_flush_soon(p->ncs->gw);
}

/* The lane's limits on the bookkeeping thread's queue (which claims). */
static int
pub_limits_run(struct gwdb *g, void *arg)
{
	return queue_set_lane_limits(g->q, arg, PUB_WINDOW + 1,
	    QUEUE_PRIO_DEFAULT, PUB_WINDOW + 1 - PUB_LOW_AHEAD);
}

/* Free the lane name. */
static void
pub_limits_done(void *arg, int rc)
{
	(void)rc;
	free(arg);
}

/* The publisher of an NCS. */
struct publisher *
publisher_new(struct ncs *n)
{
	struct publisher	*p;
	struct timeval		 tv;

	p = xcalloc(1, sizeof *p);
	p->ncs = n;
	snprintf(p->lane, sizeof p->lane, CATALOG_LANE_PREFIX "%s",
	    n->conf->name);
	snprintf(p->worker, sizeof p->worker, GW_NCS_WORKER_PREFIX "%s/%s/%d",
	    n->conf->name, n->gw->cfg->instance, (int)getpid());
	p->poll_ev = evtimer_new(n->gw->base, pub_poll_cb, p);
	p->lease_ev = event_new(n->gw->base, -1, EV_PERSIST, pub_lease_cb, p);
	if (p->poll_ev == NULL || p->lease_ev == NULL)
		fatalx("event_new failed");
	tv = pub_tv(n->gw->cfg->lease_ms / 3);
	event_add(p->lease_ev, &tv);
	if (n->gw->dbw != NULL)
		dbw_submit(n->gw->dbw, pub_limits_run, pub_limits_done,
		    xstrdup(p->lane));
	return p;
}

/* Give every job of the window back (in the next flush). */
static void
pub_release_window(struct publisher *p)
{
	struct pub_job	*j;

	while (p->count > 0) {
		j = &p->win[p->head];
		pub_op_release(&p->ops, j, 0);
		pub_job_clear(j);
		p->head = (p->head + 1) % PUB_WINDOW;
		p->count--;
	}
	p->head = 0;
	if (p->ops.n > 0)
		gw_flush_soon(p->ncs->gw);
}

/* Free; what is left for the database goes with the next flush. */
void
publisher_free(struct publisher *p)
{
	if (p == NULL)
		return;
	pub_release_window(p);
	if (p->has_cur)
		pub_op_release(&p->ops, &p->cur, 0);
	pub_job_clear(&p->cur);
	pub_orphan(p->ncs->gw, p->ncs->conf->name, &p->ops);
	if (p->flying != NULL)
		p->flying->owner = NULL;
	event_free(p->poll_ev);
	event_free(p->lease_ev);
	free(p);
}

/* A completion for the next flush; mark: record the delivery. */
static void
pub_done_add(struct publisher *p, struct pub_job *j, bool mark)
{
	struct pub_op	*op;

	op = pub_op_add(&p->ops, PUB_OP_DONE, j);
	if (mark) {
		op->obj_id = j->obj_id;
		j->obj_id = NULL;
		op->rev = j->rev;
		util_strlcpy(op->status, j->status, sizeof op->status);
	}
	pub_job_clear(j);
	gw_flush_soon(p->ncs->gw);
}

/*
 * Fail a job: event says why (publish.nacked, publish.unacked); the job
 * retries with backoff, and publish.failed follows once it is stored as
 * FAILED.
 */
static void
pub_fail(struct publisher *p, struct pub_job *j, const char *event,
    const char *text, bool permanent)
{
	struct pub_op	*op;

	metrics_count(MET_PUBLISH, p->ncs->conf->name, strrchr(event, '.') + 1,
	    NULL);
	log_event(LL_WARN, event, "ncs=%s job=%lld obj=%s "
	    "attempt=%d max_attempts=%d text=%s%s", p->ncs->conf->name,
	    (long long)j->id, log_q(j->obj_id), j->attempts, j->max_attempts,
	    log_q(text), j->lost ? " error=job-not-updated" : "");
	if (!j->lost) {
		op = pub_op_add(&p->ops, PUB_OP_FAIL, j);
		op->obj_id = j->obj_id;
		j->obj_id = NULL;
		op->text = xstrdup(text);
		op->permanent = permanent;
		op->attempts = j->attempts;
		op->max_attempts = j->max_attempts;
		gw_flush_soon(p->ncs->gw);
	}
	pub_job_clear(j);
}

/* An ACK: the next mosObj goes out first, then the bookkeeping of this one. */
static void
pub_acked(struct publisher *p, int32_t message_id)
{
	struct pub_job	done = p->cur;

	memset(&p->cur, 0, sizeof p->cur);
	metrics_count(MET_PUBLISH, p->ncs->conf->name, "acked", NULL);
	publisher_pump(p);
	/* one info line per delivered asset (heartbeats stay at debug) */
	if (log_enabled(LL_INFO))
		log_event(LL_INFO, "publish.acked", "ncs=%s job=%lld obj=%s "
		    "rev=%d status=%s message_id=%d", p->ncs->conf->name,
		    (long long)done.id, log_q(done.obj_id), done.rev,
		    done.status, (int)message_id);
	if (!done.lost)
		pub_done_add(p, &done, true);
	else
		pub_job_clear(&done);
}

/* The NCS answered our mosObj (or it was cancelled). */
static void
pub_reply_cb(void *arg, struct link_msg *lm, enum link_result res,
    const struct mos_msg *reply)
{
	struct publisher	*p = arg;
	struct pub_job		*j = &p->cur;
	const char		*text;
	char			 why[64];

	p->has_cur = false;
	if (res == LINK_CANCELLED) {
		pub_op_release(&p->ops, j, 0);
		pub_job_clear(j);
		gw_flush_soon(p->ncs->gw);
		return;
	}
	if (res == LINK_TIMEOUT) {
		/* the attempt counts: a new one, with a new messageID, later */
		snprintf(why, sizeof why, "no acknowledgement after %d "
		    "attempt%s", j->attempts, j->attempts == 1 ? "" : "s");
		pub_fail(p, j, "publish.unacked", why, false);
		publisher_pump(p);
		return;
	}
	if (reply->type == MOS_T_MOS_ACK && reply->u.mos_ack.status != NULL &&
	    strcmp(reply->u.mos_ack.status, "ACK") == 0) {
		pub_acked(p, lm->message_id);
		return;
	}
	if (reply->type == MOS_T_MOS_ACK)
		text = reply->u.mos_ack.status_description;
	else if (reply->type == MOS_T_RO_ACK)
		text = reply->u.ro_ack.ro_status;
	else
		text = reply->type_name;
	pub_fail(p, j, "publish.nacked", text != NULL && *text != '\0' ? text :
	    "NACK", false);
	publisher_pump(p);
}

/* Send one job of the window as a mosObj (or settle it at once). */
static void
pub_send(struct publisher *p, struct pub_job *j)
{
	struct ncs	*n = p->ncs;
	struct link_msg	*lm;

	if (j->lost) {
		pub_job_clear(j);
		return;
	}
	switch (j->action) {
	case PUB_FAIL:
		pub_fail(p, j, "publish.nacked", j->why, true);
		return;
	case PUB_RETRY:
		log_event(LL_WARN, "publish.retry", "ncs=%s job=%lld obj=%s "
		    "error=catalog-read", n->conf->name, (long long)j->id,
		    log_q(j->obj_id));
		pub_job_clear(j);
		return;
	case PUB_SKIP:
		metrics_count(MET_PUBLISH, n->conf->name, "skipped", NULL);
		log_event(LL_INFO, "publish.skipped", "ncs=%s job=%lld obj=%s "
		    "reason=deleted-before-delivery", n->conf->name,
		    (long long)j->id, log_q(j->obj_id));
		pub_done_add(p, j, false);
		return;
	case PUB_SEND:
		break;
	}
	p->cur = *j;
	memset(j, 0, sizeof *j);
	p->has_cur = true;
	lm = link_msg_new(p->cur.msg, pub_reply_cb, p);
	lm->give_up = true;
	p->cur.msg = NULL;
	lm->wire = p->cur.wire;
	lm->wire_target = p->cur.target;
	memset(&p->cur.wire, 0, sizeof p->cur.wire);
	if (log_enabled(LL_DEBUG))
		log_event(LL_DEBUG, "publish.sent", "ncs=%s job=%lld obj=%s "
		    "rev=%d status=%s attempt=%d", n->conf->name,
		    (long long)p->cur.id, log_q(p->cur.obj_id), p->cur.rev,
		    p->cur.status, p->cur.attempts);
	ncs_send(n, GW_PORT_LOWER, lm);
}

/* Send what can be sent; ask for a claim when the window has room. */
void
publisher_pump(struct publisher *p)
{
	struct ncs	*n = p->ncs;
	struct pub_job	 j;

	if (!n->conf->publish || n->gw->stopping)
		return;
	while (!p->has_cur && p->count > 0 &&
	    link_is_up(ncs_active_link(n, GW_PORT_LOWER))) {
		j = p->win[p->head];
		memset(&p->win[p->head], 0, sizeof j);
		p->head = (p->head + 1) % PUB_WINDOW;
		p->count--;
		pub_send(p, &j);
	}
	if (!pub_wants_claim(p))
		return;
	if (p->count > 0 || p->has_cur)
		gw_flush_soon(n->gw);
	else if (!p->claimed_none)
		gw_flush_now(n->gw);
	else
		pub_poll_arm(p);
}

/* Jobs may have arrived (a notification, wake.c): claim them. */
void
publisher_woken(struct publisher *p)
{
	p->woken = true;
	publisher_pump(p);
}

/* The active lower link went down: the window goes back to the queue. */
void
publisher_link_down(struct publisher *p)
{
	evtimer_del(p->poll_ev);
	p->poll_mono = 0;
	pub_release_window(p);
}

/* Stop: release what is claimed and not in flight. */
void
publisher_release_all(struct publisher *p)
{
	publisher_link_down(p);
}

/* A message of ours is in flight. */
bool
publisher_busy(const struct publisher *p)
{
	return p->has_cur;
}

/* The objIDs in the window and in flight, for the claim. */
static void
pub_busy_list(struct publisher *p, struct pub_work *w)
{
	size_t	i;

	w->busy = xreallocarray(NULL, p->count + 1, sizeof *w->busy);
	for (i = 0; i < p->count; i++) {
		if (p->win[(p->head + i) % PUB_WINDOW].obj_id != NULL)
			w->busy[w->nbusy++] = xstrdup(p->win[(p->head + i) %
			    PUB_WINDOW].obj_id);
	}
	if (p->has_cur && p->cur.obj_id != NULL)
		w->busy[w->nbusy++] = xstrdup(p->cur.obj_id);
}

/* A work of p's NCS that claims up to want jobs (busy list left empty). */
static struct pub_work *
pub_work_new(struct publisher *p, size_t want)
{
	struct ncs	*n = p->ncs;
	struct pub_work	*w;

	w = xcalloc(1, sizeof *w);
	w->ncs = xstrdup(n->conf->name);
	w->epoch = n->epoch;
	if (want == 0)
		return w;
	w->want = want;
	w->lane = xstrdup(p->lane);
	w->worker = xstrdup(p->worker);
	w->lease_ms = n->gw->cfg->lease_ms;
	w->mos_id = xstrdup(n->gw->cfg->mos_id);
	w->target = n->active;
	w->ncs_id = xstrdup(ncs_wire_id(n, n->active));
	w->enc = n->conf->encoding == MOS_ENC_UTF8 ? MOS_ENC_UTF8 :
	    MOS_ENC_UTF16BE;
	return w;
}

/* What one publisher has for this flush, or NULL. */
static struct pub_work *
pub_take(struct publisher *p)
{
	struct pub_work	*w;
	bool		 claim = pub_wants_claim(p);

	if (p->flying != NULL || (p->ops.n == 0 && !claim))
		return NULL;
	w = pub_work_new(p, claim ? PUB_WINDOW - p->count : 0);
	w->owner = p;
	pub_ops_move(&w->ops, &p->ops);
	if (claim) {
		pub_busy_list(p, w);
		evtimer_del(p->poll_ev);
		p->poll_mono = 0;
		p->woken = false;	/* the claim sees what was notified */
	}
	p->flying = w;
	return w;
}

/*
 * Claims that ride along in the transaction of an asset change (want jobs
 * of each NCS whose publisher can send now), so that the change's mosObj
 * leaves as soon as that transaction is durable, without a flush of its
 * own: publisher_claims_run() inside the transaction, publisher_offer()
 * after it. The busy objects are checked on the loop thread when the jobs
 * are offered, not here.
 */
void
publisher_tickets(struct gw *gw, size_t want, struct pub_work_list *l)
{
	struct ncs	*n;
	struct pub_work	*w;

	TAILQ_INIT(l);
	for (n = TAILQ_FIRST(&gw->ncs); n != NULL; n = TAILQ_NEXT(n, entry)) {
		if (!n->conf->publish || gw->stopping || want == 0 ||
		    n->pub->count >= PUB_WINDOW ||
		    !link_is_up(ncs_active_link(n, GW_PORT_LOWER)))
			continue;
		w = pub_work_new(n->pub, want);
		TAILQ_INSERT_TAIL(l, w, entry);
	}
}

/* Every publisher's work, and what earlier flushes left, into l. */
void
publisher_collect(struct gw *gw, struct pub_work_list *l)
{
	struct ncs	*n;
	struct pub_work	*w;

	TAILQ_CONCAT(l, &gw->pub_retry, entry);
	for (n = TAILQ_FIRST(&gw->ncs); n != NULL; n = TAILQ_NEXT(n, entry)) {
		if ((w = pub_take(n->pub)) != NULL)
			TAILQ_INSERT_TAIL(l, w, entry);
	}
}

/* ------------------------------------------------------------------------ */
/* The bookkeeping thread, inside the flush transaction. */

/* Completions (one statement per 16) and their delivery rows. */
static int
pub_run_done(struct gwdb *g, struct pub_work *w)
{
	int64_t		*ids, *gens;
	int		*rcs;
	size_t		 i, n = 0;
	int		 rc = QUEUE_OK;

	ids = xreallocarray(NULL, w->ops.n, sizeof *ids);
	gens = xreallocarray(NULL, w->ops.n, sizeof *gens);
	rcs = xreallocarray(NULL, w->ops.n, sizeof *rcs);
	for (i = 0; i < w->ops.n && rc == QUEUE_OK; i++) {
		if (w->ops.v[i].kind != PUB_OP_DONE)
			continue;
		ids[n] = w->ops.v[i].id;
		gens[n++] = w->ops.v[i].gen;
		if (w->ops.v[i].obj_id != NULL)
			rc = catalog_delivery_put(g, w->ncs, w->ops.v[i].obj_id,
			    w->ops.v[i].rev, w->ops.v[i].status);
	}
	if (rc == QUEUE_OK && n > 0)
		rc = queue_complete_many(g->q, ids, gens, n, rcs);
	for (i = 0, n = 0; rc == QUEUE_OK && i < w->ops.n; i++) {
		if (w->ops.v[i].kind == PUB_OP_DONE)
			w->ops.v[i].rc = rcs[n++];
	}
	free(ids);
	free(gens);
	free(rcs);
	return rc;
}

/*
 * Fencing: an op of a job claimed under another owner epoch than the
 * NCS's current one is refused (QUEUE_ELOST) and the job stays for the
 * owner that took the NCS over; so is a claim made for a stale owner.
 */
static int
pub_run_fence(struct gwdb *g, struct pub_work *w)
{
	struct pub_op	*op;
	int64_t		 cur = 0;
	size_t		 i, n = 0;
	int		 rc;

	for (i = 0; i < w->ops.n; i++) {
		if (w->ops.v[i].epoch != 0)
			break;
	}
	if (i == w->ops.n && w->epoch == 0)
		return QUEUE_OK;
	rc = owner_fence(g, w->ncs, w->epoch != 0 ? w->epoch :
	    w->ops.v[i].epoch, &cur);
	if (rc != QUEUE_OK && rc != QUEUE_ELOST)
		return rc;
	for (i = 0; i < w->ops.n; i++) {
		op = &w->ops.v[i];
		if (op->epoch != 0 && op->epoch != cur &&
		    op->kind != PUB_OP_RELEASE) {
			op->rc = QUEUE_ELOST;
			op->kind = PUB_OP_FENCED;
			n++;
		}
	}
	if (w->epoch != 0 && w->epoch != cur)
		w->want = 0;
	w->fenced = n;
	return QUEUE_OK;
}

/* Every op of a work. */
static int
pub_run_ops(struct gwdb *g, struct pub_work *w)
{
	struct pub_op	*op;
	size_t		 i;
	int		 rc;

	if ((rc = pub_run_fence(g, w)) != QUEUE_OK ||
	    (rc = pub_run_done(g, w)) != QUEUE_OK)
		return rc;
	for (i = 0; i < w->ops.n; i++) {
		op = &w->ops.v[i];
		switch (op->kind) {
		case PUB_OP_DONE:
		case PUB_OP_FENCED:
			continue;
		case PUB_OP_FAIL:
			op->rc = queue_fail(g->q, op->id, op->gen, op->text,
			    op->permanent);
			break;
		case PUB_OP_RELEASE:
			op->rc = queue_release(g->q, op->id, op->gen, op->ms);
			break;
		case PUB_OP_LEASE:
			op->rc = queue_heartbeat(g->q, op->id, op->gen, op->ms);
			break;
		}
		if (pub_fatal(op->rc))
			return op->rc;
	}
	return QUEUE_OK;
}

/*
 * Decide what a claimed job becomes, from the catalog row and what the NCS
 * last acknowledged, and build and encode its mosObj.
 */
static void
pub_prepare(struct gwdb *g, const struct pub_work *w, struct pub_job *j)
{
	struct catalog_asset	 a;
	const char		*status;
	char			 last[16], err[256], *why = NULL;
	int			 rc;

	if ((rc = catalog_get(g, j->obj_id, &a)) == QUEUE_ENOTFOUND) {
		j->action = PUB_FAIL;
		util_strlcpy(j->why, "objID not in the catalog", sizeof j->why);
		return;
	}
	if (rc != QUEUE_OK || catalog_delivery_get(g, w->ncs, j->obj_id, last,
	    sizeof last) != QUEUE_OK) {
		j->action = PUB_RETRY;
		catalog_asset_clear(&a);
		return;
	}
	j->rev = a.rev;
	if ((status = catalog_delivery_status(&a, last)) == NULL) {
		j->action = PUB_SKIP;
		util_strlcpy(j->status, "DELETED", sizeof j->status);
	} else if ((j->msg = catalog_mos_obj(&a, status, &why)) == NULL) {
		/* e.g. a row stored before fragments were checked on entry */
		j->action = PUB_FAIL;
		snprintf(j->why, sizeof j->why, "catalog row refused: %s", why);
		free(why);
	} else {
		/*
		 * Before an object's first delivery leaves, note in this
		 * (committed-before-send) transaction that the NCS may have
		 * it, so a crash before its ACK is recorded can never make a
		 * later deletion look unnecessary.
		 */
		if (strcmp(status, "NEW") == 0 &&
		    strcmp(last, CATALOG_SENDING) != 0 &&
		    catalog_delivery_put(g, w->ncs, j->obj_id, a.rev,
		    CATALOG_SENDING) != QUEUE_OK) {
			j->action = PUB_RETRY;
			mos_msg_free(j->msg);
			j->msg = NULL;
			catalog_asset_clear(&a);
			return;
		}
		j->action = PUB_SEND;
		util_strlcpy(j->status, status, sizeof j->status);
		j->msg->mos_id = mos_msg_strdup(j->msg, w->mos_id);
		j->msg->ncs_id = mos_msg_strdup(j->msg, w->ncs_id);
		j->target = w->target;
		/* if it cannot be encoded, the send says so (as a NACK) */
		if (wire_encode(&j->wire, j->msg, w->enc, err, sizeof err) != 0)
			wire_clear(&j->wire);
	}
	catalog_asset_clear(&a);
}

/* For bsearch and qsort over the busy objIDs. */
static int
pub_strcmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* One claimed job: prepared, or given back. Returns a queue_rc. */
static int
pub_run_job(struct gwdb *g, struct pub_work *w, struct queue_job *qj)
{
	struct pub_job	*j = &w->jobs[w->njobs];
	int		 rc;

	memset(j, 0, sizeof *j);
	j->id = qj->id;
	j->gen = qj->lease_gen;
	j->epoch = w->epoch;
	j->obj_id = xstrndup(qj->payload != NULL ? qj->payload : "",
	    qj->payload_len);
	j->prio = qj->priority;
	j->attempts = qj->attempts;
	j->max_attempts = qj->max_attempts;
	if (w->nbusy > 0 && bsearch(&j->obj_id, w->busy, w->nbusy,
	    sizeof *w->busy, pub_strcmp) != NULL) {
		/* an earlier delivery of this object is not settled yet */
		rc = queue_release(g->q, j->id, j->gen, 0);
		w->deferred++;
		pub_job_clear(j);
		return pub_fatal(rc) ? rc : QUEUE_OK;
	}
	w->njobs++;
	pub_prepare(g, w, j);
	if (j->action == PUB_RETRY &&
	    pub_fatal(rc = queue_release(g->q, j->id, j->gen, PUB_RETRY_MS)))
		return rc;
	return QUEUE_OK;
}

/* Claim the next jobs and prepare them. */
static int
pub_run_claim(struct gwdb *g, struct pub_work *w)
{
	struct queue_job	*jobs;
	size_t			 cnt = 0, i;
	int			 rc;

	jobs = xcalloc(w->want, sizeof *jobs);
	rc = queue_claim(g->q, w->lane, w->worker, w->lease_ms, jobs, w->want,
	    &cnt);
	if (rc != QUEUE_OK) {
		free(jobs);
		return rc;
	}
	w->jobs = xreallocarray(NULL, cnt + 1, sizeof *w->jobs);
	if (w->nbusy > 1)
		qsort(w->busy, w->nbusy, sizeof *w->busy, pub_strcmp);
	for (i = 0; i < cnt && rc == QUEUE_OK; i++)
		rc = pub_run_job(g, w, &jobs[i]);
	for (i = 0; i < cnt; i++)
		queue_job_clear(&jobs[i]);
	free(jobs);
	return rc;
}

/* Run every work of the flush (inside its transaction). */
int
publisher_run(struct gwdb *g, struct pub_work_list *l)
{
	struct pub_work	*w;
	int		 rc;

	for (w = TAILQ_FIRST(l); w != NULL; w = TAILQ_NEXT(w, entry)) {
		if ((rc = pub_run_ops(g, w)) != QUEUE_OK)
			return rc;
		if (w->want > 0 && (rc = pub_run_claim(g, w)) != QUEUE_OK)
			return rc;
	}
	return QUEUE_OK;
}

/*
 * The claims of publisher_tickets(), inside the caller's transaction; on
 * failure nothing of them is kept (the caller rolls back what they did).
 */
int
publisher_claims_run(struct gwdb *g, struct pub_work_list *l)
{
	struct pub_work	*w;
	int		 rc;

	TAILQ_FOREACH(w, l, entry) {
		if (w->want > 0 && (rc = pub_run_claim(g, w)) != QUEUE_OK) {
			publisher_claims_undo(l);
			return rc;
		}
	}
	return QUEUE_OK;
}

/*
 * Bookkeeping thread: the claims of from made by those of into (one claim
 * per NCS for changes committed together): for each NCS in both, into's
 * claim wants from's jobs too and from's wants none.
 */
void
publisher_claims_merge(struct pub_work_list *into, struct pub_work_list *from)
{
	struct pub_work	*w, *to;

	TAILQ_FOREACH(w, from, entry) {
		TAILQ_FOREACH(to, into, entry) {
			if (strcmp(to->ncs, w->ncs) == 0 && to->want > 0)
				break;
		}
		if (to != NULL) {
			to->want += w->want;
			w->want = 0;
		}
	}
}

/* Forget what publisher_claims_run() claimed (it was rolled back). */
void
publisher_claims_undo(struct pub_work_list *l)
{
	struct pub_work	*w;

	TAILQ_FOREACH(w, l, entry)
		pub_work_unclaim(w);
}

/* ------------------------------------------------------------------------ */
/* The loop thread, after the flush transaction. */

/* A job of the window or in flight, by id and lease generation. */
static struct pub_job *
pub_find(struct publisher *p, int64_t id, int64_t gen)
{
	struct pub_job	*j;
	size_t		 i;

	if (p->has_cur && p->cur.id == id && p->cur.gen == gen)
		return &p->cur;
	for (i = 0; i < p->count; i++) {
		j = &p->win[(p->head + i) % PUB_WINDOW];
		if (j->id == id && j->gen == gen)
			return j;
	}
	return NULL;
}

/* What the ops did: FAILED jobs and lost leases are logged. */
static void
pub_ops_results(struct pub_work *w)
{
	struct publisher	*p = w->owner;
	struct pub_job		*j;
	struct pub_op		*op;
	size_t			 i;

	if (w->fenced > 0)
		log_event(LL_WARN, "publish.fenced", "ncs=%s ops=%zu reason=%s",
		    w->ncs, w->fenced, log_q("claimed under an older owner "
		    "epoch: the jobs stay for the current owner"));
	for (i = 0; i < w->ops.n; i++) {
		op = &w->ops.v[i];
		if (op->kind == PUB_OP_FAIL && op->rc == QUEUE_OK &&
		    (op->permanent || op->attempts >= op->max_attempts)) {
			metrics_count(MET_PUBLISH, w->ncs, "failed", NULL);
			log_event(LL_WARN, "publish.failed", "ncs=%s job=%lld "
			    "obj=%s attempts=%d text=%s", w->ncs,
			    (long long)op->id, log_q(op->obj_id), op->attempts,
			    log_q(op->text));
		} else if (op->kind == PUB_OP_FAIL && op->rc != QUEUE_OK)
			log_event(LL_WARN, "publish.lost", "ncs=%s job=%lld "
			    "obj=%s op=fail error=%s", w->ncs,
			    (long long)op->id, log_q(op->obj_id),
			    log_q(queue_strerror(op->rc)));
		else if (op->kind == PUB_OP_LEASE && op->rc == QUEUE_ELOST &&
		    p != NULL && (j = pub_find(p, op->id, op->gen)) != NULL &&
		    !j->lost) {
			j->lost = true;
			log_event(LL_WARN, "publish.lost", "ncs=%s job=%lld "
			    "obj=%s", w->ncs, (long long)op->id,
			    log_q(j->obj_id));
		}
	}
}

/* Whether ops hold a completion or failure of obj_id not yet stored. */
static bool
pub_ops_touch(const struct pub_ops *o, const char *obj_id)
{
	size_t	i;

	for (i = 0; i < o->n; i++) {
		if (o->v[i].obj_id != NULL && strcmp(o->v[i].obj_id,
		    obj_id) == 0)
			return true;
	}
	return false;
}

/*
 * Whether a delivery of obj_id is in the window, in flight, or settled
 * but not yet stored (in the ops of the next flush or of the one running):
 * a job of that object claimed elsewhere is given back, since its mosObj
 * was built without the outcome of that delivery.
 */
static bool
pub_obj_busy(const struct publisher *p, const char *obj_id)
{
	size_t	i;

	if (p->has_cur && p->cur.obj_id != NULL &&
	    strcmp(p->cur.obj_id, obj_id) == 0)
		return true;
	for (i = 0; i < p->count; i++) {
		if (p->win[(p->head + i) % PUB_WINDOW].obj_id != NULL &&
		    strcmp(p->win[(p->head + i) % PUB_WINDOW].obj_id,
		    obj_id) == 0)
			return true;
	}
	return pub_ops_touch(&p->ops, obj_id) || (p->flying != NULL &&
	    pub_ops_touch(&p->flying->ops, obj_id));
}

/* The publisher of the NCS named ncs, or NULL (it was removed). */
static struct publisher *
pub_by_name(struct gw *gw, const char *ncs)
{
	struct ncs	*n;

	for (n = TAILQ_FIRST(&gw->ncs); n != NULL; n = TAILQ_NEXT(n, entry)) {
		if (strcmp(n->conf->name, ncs) == 0)
			return n->pub;
	}
	return NULL;
}

/*
 * A claimed job joins the window ahead of the jobs of a lower priority
 * (a live change before the initial sync's): no job of the same object is
 * in the window (see pub_run_job), so no delivery of an object overtakes
 * another of the same object.
 */
static void
pub_window_add(struct publisher *p, struct pub_job *j)
{
	size_t	i = p->count++, prev;

	while (i > 0) {
		prev = (p->head + i - 1) % PUB_WINDOW;
		if (p->win[prev].prio <= j->prio)
			break;
		p->win[(p->head + i) % PUB_WINDOW] = p->win[prev];
		i--;
	}
	p->win[(p->head + i) % PUB_WINDOW] = *j;
}

/*
 * The claimed jobs of w join p's window, or go back if it cannot take them
 * (or another delivery of the same object got there first: see
 * pub_obj_busy).
 */
static void
pub_take_jobs(struct gw *gw, struct publisher *p, struct pub_work *w)
{
	struct pub_ops		 back = { NULL, 0, 0 };
	struct pub_job		*j;
	size_t			 i;
	bool			 take;

	take = p != NULL && p->ncs->conf->publish && !gw->stopping &&
	    link_is_up(ncs_active_link(p->ncs, GW_PORT_LOWER));
	for (i = 0; i < w->njobs; i++) {
		j = &w->jobs[i];
		if (take && p->count < PUB_WINDOW &&
		    !pub_obj_busy(p, j->obj_id)) {
			pub_window_add(p, j);
			memset(j, 0, sizeof *j);
		} else if (j->action != PUB_RETRY)
			pub_op_release(p != NULL ? &p->ops : &back, j, 0);
	}
	if (p != NULL && p == w->owner) {
		/* nothing to send came of it: look again after PUB_POLL_MS */
		p->claimed_none = w->want > 0 && w->njobs == 0;
		if (p->claimed_none)
			p->none_mono = util_mono_ms();
		if (w->deferred > 0)
			log_event(LL_DEBUG, "publish.deferred", "ncs=%s "
			    "jobs=%zu reason=same-object-in-flight", w->ncs,
			    w->deferred);
	}
	pub_orphan(gw, w->ncs, &back);
	if (p != NULL && p->ops.n > 0)
		gw_flush_soon(gw);
}

/*
 * After the transaction of publisher_claims_run() committed (committed
 * false: it did not, nothing was claimed): the jobs join their windows and
 * go out at once. Frees the works. Whether there were claims and each got
 * as many jobs as it wanted (else a flush may find more).
 */
bool
publisher_offer(struct gw *gw, struct pub_work_list *l, bool committed)
{
	struct pub_work		*w;
	struct publisher	*p;
	bool			 full = !TAILQ_EMPTY(l) && committed;

	while ((w = TAILQ_FIRST(l)) != NULL) {
		TAILQ_REMOVE(l, w, entry);
		if (w->njobs < w->want)
			full = false;
		if (committed && w->njobs > 0) {
			p = pub_by_name(gw, w->ncs);
			pub_take_jobs(gw, p, w);
			if (p != NULL)
				publisher_pump(p);
		}
		pub_work_free(w);
	}
	return full;
}

/* Results back to the publishers, or everything kept for the next flush. */
void
publisher_settle(struct gw *gw, struct pub_work_list *l, bool committed)
{
	struct pub_work	*w;
	struct ncs	*n;

	while ((w = TAILQ_FIRST(l)) != NULL) {
		TAILQ_REMOVE(l, w, entry);
		if (w->owner != NULL)
			w->owner->flying = NULL;
		if (committed) {
			pub_ops_results(w);
			pub_take_jobs(gw, w->owner, w);
		} else if (w->owner != NULL) {
			/* the older ops first */
			pub_ops_move(&w->ops, &w->owner->ops);
			pub_ops_move(&w->owner->ops, &w->ops);
		} else {
			/* the claim was rolled back; the ops are tried again */
			pub_work_unclaim(w);
			TAILQ_INSERT_TAIL(&gw->pub_retry, w, entry);
			continue;
		}
		pub_work_free(w);
	}
	for (n = TAILQ_FIRST(&gw->ncs); n != NULL; n = TAILQ_NEXT(n, entry))
		publisher_pump(n->pub);
}
