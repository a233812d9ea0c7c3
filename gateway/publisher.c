/*
 * The publisher of one NCS: claims delivery jobs of lane "ncs:NAME" in
 * batches when the NCS's active lower link is up, sends one mosObj at a time
 * built from the CURRENT catalog row (NEW, UPDATED or DELETED with the
 * current objRev), and completes a job only on the matching mosAck ACK.
 *
 * Completions are group-committed: they wait in memory for the next flush
 * transaction (gw_flush, every few ms, shared with history), and the next
 * batch is claimed in that same transaction, after the completions. A NACK
 * fails the job at once (retry with backoff; FAILED after max_attempts,
 * the NACK text kept in the job's history). A link that goes down keeps the
 * message in flight (it is resent, with its messageID, when a link comes
 * back) and gives the rest of the batch back to the queue.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "gateway/gateway.h"

#define PUB_BATCH	128
#define PUB_POLL_MS	50
#define PUB_RETRY_MS	200

/* What to do with a claimed job, decided when it is claimed. */
enum pub_action {
	PUB_SEND = 0,	/* msg is the mosObj */
	PUB_SKIP,	/* a tombstone the NCS never had: complete it */
	PUB_FAIL,	/* permanent failure, why says it */
	PUB_RETRY,	/* the catalog could not be read: give it back */
};

struct pub_job {
	int64_t		 id;
	int64_t		 gen;
	char		*obj_id;
	int		 attempts;
	int		 max_attempts;
	bool		 lost;
	enum pub_action	 action;
	struct mos_msg	*msg;
	int		 rev;
	char		 status[16];
	const char	*why;
};

struct pub_done {
	int64_t		 id;
	int64_t		 gen;
	char		*obj_id;
	int		 rev;
	char		 status[16];
	bool		 mark;		/* record it in the delivery table */
};

struct publisher {
	struct ncs	*ncs;
	char		 lane[96];
	char		 worker[128];
	struct pub_job	 batch[PUB_BATCH];
	size_t		 n;
	size_t		 next;
	struct pub_job	 cur;
	bool		 has_cur;
	int		 cur_rev;
	char		 cur_status[16];
	struct link_msg	*cur_msg;
	struct pub_done	*done;
	size_t		 ndone;
	size_t		 cap;
	size_t		 nflush;
	bool		 want_claim;
	bool		 claimed;	/* a claim ran in this flush */
	bool		 claimed_none;
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

/* Time to claim: the flush transaction does it. */
static void
pub_poll_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct publisher	*p = arg;

	(void)fd;
	(void)ev;
	if (p->want_claim)
		gw_flush(p->ncs->gw);
}

/* Free what a job holds. */
static void
pub_job_clear(struct pub_job *j)
{
	free(j->obj_id);
	j->obj_id = NULL;
	mos_msg_free(j->msg);
	j->msg = NULL;
}

/* Free the jobs of the batch from index i. */
static void
pub_batch_clear(struct publisher *p, size_t from)
{
	size_t	i;

	for (i = from; i < p->n; i++)
		pub_job_clear(&p->batch[i]);
	p->n = p->next = 0;
}

/* Give the unsent jobs of the batch back to the queue (one transaction). */
static void
pub_release_batch(struct publisher *p)
{
	struct queue	*q = p->ncs->gw->db->q;
	size_t		 i;
	int		 rc;

	if (p->next >= p->n) {
		pub_batch_clear(p, p->next);
		return;
	}
	if ((rc = queue_tx_begin(q)) == QUEUE_OK) {
		for (i = p->next; i < p->n; i++) {
			if (!p->batch[i].lost)
				queue_release(q, p->batch[i].id,
				    p->batch[i].gen, 0);
		}
		rc = queue_tx_commit(q);
	}
	if (rc != QUEUE_OK)
		log_event(LL_WARN, "publish.release", "ncs=%s jobs=%zu "
		    "error=%s "
		    "note=lease-expiry-returns-them", p->ncs->conf->name,
		    p->n - p->next, log_q(queue_strerror(rc)));
	pub_batch_clear(p, p->next);
}

/* Keep the leases of every claimed job alive. */
static void
pub_lease_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct publisher	*p = arg;
	struct gw		*gw = p->ncs->gw;
	struct queue		*q = gw->db->q;
	struct pub_job		*j;
	size_t			 i;

	(void)fd;
	(void)ev;
	if ((!p->has_cur && p->next >= p->n) || queue_tx_begin(q) != QUEUE_OK)
		return;
	for (i = p->next; i <= p->n; i++) {
		j = i < p->n ? &p->batch[i] : (p->has_cur ? &p->cur : NULL);
		if (j == NULL || j->lost)
			continue;
		if (queue_heartbeat(q, j->id, j->gen, gw->cfg->lease_ms) ==
		    QUEUE_ELOST) {
			j->lost = true;
			log_event(LL_WARN, "publish.lost", "ncs=%s job=%lld "
			    "obj=%s", p->ncs->conf->name, (long long)j->id,
			    log_q(j->obj_id));
		}
	}
	if (queue_tx_commit(q) != QUEUE_OK)
		log_event(LL_WARN, "publish.lease", "ncs=%s error=commit",
		    p->ncs->conf->name);
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
	snprintf(p->worker, sizeof p->worker, "mosgw:%d:%s", (int)getpid(),
	    n->conf->name);
	p->poll_ev = evtimer_new(n->gw->base, pub_poll_cb, p);
	p->lease_ev = event_new(n->gw->base, -1, EV_PERSIST, pub_lease_cb, p);
	if (p->poll_ev == NULL || p->lease_ev == NULL)
		fatalx("event_new failed");
	tv = pub_tv(n->gw->cfg->lease_ms / 3);
	event_add(p->lease_ev, &tv);
	return p;
}

/* Free (jobs must have been released or cancelled first). */
void
publisher_free(struct publisher *p)
{
	size_t	i;

	if (p == NULL)
		return;
	pub_batch_clear(p, 0);
	pub_job_clear(&p->cur);
	for (i = 0; i < p->ndone; i++)
		free(p->done[i].obj_id);
	free(p->done);
	event_free(p->poll_ev);
	event_free(p->lease_ev);
	free(p);
}

/* Remember a completion for the next flush. */
static void
pub_done_add(struct publisher *p, struct pub_job *j, int rev,
    const char *status,
    bool mark)
{
	struct pub_done	*d;

	if (p->ndone == p->cap) {
		p->cap = p->cap == 0 ? PUB_BATCH * 2 : p->cap * 2;
		p->done = xreallocarray(p->done, p->cap, sizeof *p->done);
	}
	d = &p->done[p->ndone++];
	d->id = j->id;
	d->gen = j->gen;
	d->obj_id = j->obj_id;
	j->obj_id = NULL;
	d->rev = rev;
	util_strlcpy(d->status, status, sizeof d->status);
	d->mark = mark;
	gw_flush_soon(p->ncs->gw);
}

/* Fail a job; log FAILED when that was its last attempt. */
static void
pub_fail(struct publisher *p, struct pub_job *j, const char *text,
    bool permanent)
{
	struct queue	*q = p->ncs->gw->db->q;
	int		 rc;

	rc = j->lost ? QUEUE_ELOST : queue_fail(q, j->id, j->gen, text,
	    permanent);
	log_event(LL_WARN, "publish.nacked", "ncs=%s job=%lld obj=%s "
	    "attempt=%d "
	    "max_attempts=%d text=%s%s", p->ncs->conf->name, (long long)j->id,
	    log_q(j->obj_id), j->attempts, j->max_attempts, log_q(text),
	    rc == QUEUE_OK ? "" : " error=job-not-updated");
	if (rc == QUEUE_OK && (permanent || j->attempts >= j->max_attempts))
		log_event(LL_WARN, "publish.failed", "ncs=%s job=%lld obj=%s "
		    "attempts=%d text=%s", p->ncs->conf->name, (long long)j->id,
		    log_q(j->obj_id), j->attempts, log_q(text));
	pub_job_clear(j);
}

/* An ACK: the next mosObj goes out first, then the bookkeeping of this one. */
static void
pub_acked(struct publisher *p, struct pub_job *j, int32_t message_id)
{
	struct pub_job	done = *j;
	int		rev = p->cur_rev;
	char		status[16];

	util_strlcpy(status, p->cur_status, sizeof status);
	j->obj_id = NULL;
	j->msg = NULL;
	publisher_pump(p);
	log_event(LL_INFO, "publish.acked", "ncs=%s job=%lld obj=%s rev=%d "
	    "status=%s message_id=%d", p->ncs->conf->name, (long long)done.id,
	    log_q(done.obj_id), rev, status, (int)message_id);
	if (!done.lost)
		pub_done_add(p, &done, rev, status, true);
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

	p->has_cur = false;
	p->cur_msg = NULL;
	if (res == LINK_CANCELLED) {
		if (!j->lost)
			queue_release(p->ncs->gw->db->q, j->id, j->gen, 0);
		pub_job_clear(j);
		return;
	}
	if (reply->type == MOS_T_MOS_ACK && reply->u.mos_ack.status != NULL &&
	    strcmp(reply->u.mos_ack.status, "ACK") == 0) {
		pub_acked(p, j, lm->message_id);
		return;
	}
	if (reply->type == MOS_T_MOS_ACK)
		text = reply->u.mos_ack.status_description;
	else if (reply->type == MOS_T_RO_ACK)
		text = reply->u.ro_ack.ro_status;
	else
		text = reply->type_name;
	pub_fail(p, j, text != NULL && *text != '\0' ? text : "NACK", false);
	publisher_pump(p);
}

/*
 * Decide what a claimed job becomes, from the catalog row and what the NCS
 * last acknowledged (read inside the claim's transaction: no extra lock).
 */
static void
pub_prepare(struct publisher *p, struct pub_job *j)
{
	struct ncs		*n = p->ncs;
	struct catalog_asset	 a;
	const char		*status;
	char			 last[16];
	int			 rc;

	if ((rc = catalog_get(n->gw->db, j->obj_id, &a)) == QUEUE_ENOTFOUND) {
		j->action = PUB_FAIL;
		j->why = "objID not in the catalog";
		return;
	}
	if (rc != QUEUE_OK || catalog_delivery_get(n->gw->db, n->conf->name,
	    j->obj_id, last, sizeof last) != QUEUE_OK) {
		j->action = PUB_RETRY;
		catalog_asset_clear(&a);
		return;
	}
	j->rev = a.rev;
	if ((status = catalog_delivery_status(&a, last)) == NULL) {
		j->action = PUB_SKIP;
		util_strlcpy(j->status, "DELETED", sizeof j->status);
	} else if ((j->msg = catalog_mos_obj(&a, status)) == NULL) {
		j->action = PUB_FAIL;
		j->why = "cannot build the mosObj from the catalog row";
	} else {
		j->action = PUB_SEND;
		util_strlcpy(j->status, status, sizeof j->status);
	}
	catalog_asset_clear(&a);
}

/* Send one claimed job as a mosObj (or settle it at once). */
static void
pub_send(struct publisher *p, struct pub_job *j)
{
	struct ncs		*n = p->ncs;
	struct link_msg		*lm;

	if (j->lost) {
		pub_job_clear(j);
		return;
	}
	switch (j->action) {
	case PUB_FAIL:
		pub_fail(p, j, j->why, true);
		return;
	case PUB_RETRY:
		queue_release(n->gw->db->q, j->id, j->gen, PUB_RETRY_MS);
		log_event(LL_WARN, "publish.retry", "ncs=%s job=%lld obj=%s "
		    "error=catalog-read", n->conf->name, (long long)j->id,
		    log_q(j->obj_id));
		pub_job_clear(j);
		return;
	case PUB_SKIP:
		log_event(LL_INFO, "publish.skipped", "ncs=%s job=%lld obj=%s "
		    "reason=deleted-before-delivery", n->conf->name,
		    (long long)j->id, log_q(j->obj_id));
		pub_done_add(p, j, j->rev, j->status, false);
		return;
	case PUB_SEND:
		break;
	}
	p->cur = *j;
	j->obj_id = NULL;
	j->msg = NULL;
	p->has_cur = true;
	p->cur_rev = p->cur.rev;
	util_strlcpy(p->cur_status, p->cur.status, sizeof p->cur_status);
	lm = link_msg_new(p->cur.msg, pub_reply_cb, p);
	p->cur.msg = NULL;
	p->cur_msg = lm;
	log_event(LL_DEBUG, "publish.sent", "ncs=%s job=%lld obj=%s rev=%d "
	    "status=%s attempt=%d", n->conf->name, (long long)p->cur.id,
	    log_q(p->cur.obj_id), p->cur_rev, p->cur_status, p->cur.attempts);
	ncs_send(n, GW_PORT_LOWER, lm);
}

/* Send what can be sent; when the batch is used up, ask for a claim. */
void
publisher_pump(struct publisher *p)
{
	struct ncs	*n = p->ncs;
	struct timeval	 tv;

	if (!n->conf->publish || n->gw->stopping)
		return;
	while (!p->has_cur) {
		if (!link_is_up(ncs_active_link(n, GW_PORT_LOWER)))
			return;
		if (p->next < p->n) {
			pub_send(p, &p->batch[p->next++]);
			continue;
		}
		pub_batch_clear(p, p->next);
		p->want_claim = true;
		if (!evtimer_pending(p->poll_ev, NULL)) {
			tv = pub_tv(p->claimed_none ? PUB_POLL_MS : 0);
			evtimer_add(p->poll_ev, &tv);
		}
		return;
	}
}

/* The active lower link went down: the unsent jobs go back to the queue. */
void
publisher_link_down(struct publisher *p)
{
	p->want_claim = false;
	evtimer_del(p->poll_ev);
	pub_release_batch(p);
}

/* Stop: release what is claimed and not in flight. */
void
publisher_release_all(struct publisher *p)
{
	publisher_link_down(p);
}

/* Claim a new batch (inside the flush transaction). */
static int
pub_claim(struct publisher *p)
{
	struct gw		*gw = p->ncs->gw;
	struct queue_job	 jobs[PUB_BATCH];
	struct pub_job		*j;
	size_t			 cnt = 0, i;
	int			 rc;

	rc = queue_claim(gw->db->q, p->lane, p->worker, gw->cfg->lease_ms, jobs,
	    PUB_BATCH, &cnt);
	if (rc != QUEUE_OK)
		return rc;
	for (i = 0; i < cnt; i++) {
		j = &p->batch[i];
		memset(j, 0, sizeof *j);
		j->id = jobs[i].id;
		j->gen = jobs[i].lease_gen;
		j->obj_id = xstrndup(jobs[i].payload != NULL ?
		    jobs[i].payload : "", jobs[i].payload_len);
		j->attempts = jobs[i].attempts;
		j->max_attempts = jobs[i].max_attempts;
		queue_job_clear(&jobs[i]);
		pub_prepare(p, j);
	}
	p->n = cnt;
	p->next = 0;
	p->claimed = true;
	p->claimed_none = cnt == 0;
	return QUEUE_OK;
}

/*
 * Inside the flush transaction: delivery markers, completions, the next claim.
 */
int
publisher_flush(struct publisher *p)
{
	struct gw	*gw = p->ncs->gw;
	int64_t		*ids, *gens;
	size_t		 i;
	int		 rc = QUEUE_OK;

	p->nflush = 0;
	p->claimed = false;
	if (p->ndone > 0) {
		ids = xreallocarray(NULL, p->ndone, sizeof *ids);
		gens = xreallocarray(NULL, p->ndone, sizeof *gens);
		for (i = 0; i < p->ndone && rc == QUEUE_OK; i++) {
			ids[i] = p->done[i].id;
			gens[i] = p->done[i].gen;
			rc = catalog_delivery_put(gw->db, p->ncs->conf->name,
			    p->done[i].obj_id, p->done[i].rev,
			    p->done[i].status);
		}
		if (rc == QUEUE_OK)
			rc = queue_complete_many(gw->db->q, ids, gens,
			    p->ndone, NULL);
		free(ids);
		free(gens);
		if (rc != QUEUE_OK)
			return rc;
		p->nflush = p->ndone;
	}
	if (p->want_claim && p->n == 0 && !p->has_cur && !gw->stopping &&
	    link_is_up(ncs_active_link(p->ncs, GW_PORT_LOWER)))
		rc = pub_claim(p);
	return rc;
}

/* After the flush transaction: forget what was stored, send the new batch. */
void
publisher_flush_done(struct publisher *p, bool committed)
{
	size_t	i;

	if (!committed) {
		if (p->claimed)
			pub_batch_clear(p, 0);	/* the claim was rolled back */
		p->nflush = 0;
		p->claimed = false;
		return;
	}
	for (i = 0; i < p->nflush; i++)
		free(p->done[i].obj_id);
	if (p->nflush > 0) {
		memmove(p->done, p->done + p->nflush, (p->ndone - p->nflush) *
		    sizeof *p->done);
		p->ndone -= p->nflush;
	}
	p->nflush = 0;
	if (p->claimed) {
		p->claimed = false;
		p->want_claim = false;
		publisher_pump(p);
	}
}

/* A message of ours is in flight or queued. */
bool
publisher_busy(const struct publisher *p)
{
	return p->has_cur;
}

/* Completions not yet committed. */
size_t
publisher_pending(const struct publisher *p)
{
	return p->ndone;
}
