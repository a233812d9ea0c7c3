/* queue: the worker's side: enqueue, claim, heartbeat, complete, fail, reap. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "queue/queue_int.h"

/* Check an enqueue request. */
static int
queue_enqueue_check(struct queue *q, const struct queue_enqueue_req *r)
{
	if (r == NULL || r->lane == NULL || *r->lane == '\0' ||
	    r->kind == NULL || *r->kind == '\0')
		return queue_errx(q, QUEUE_EINVAL, "a job needs a lane and a "
		    "kind");
	if (r->priority < QUEUE_PRIO_URGENT || r->priority > QUEUE_PRIO_LOW)
		return queue_errx(q, QUEUE_EINVAL, "priority %d is not in "
		    "0..9", r->priority);
	if (r->max_attempts < 0 || r->run_after_ms < 0 || r->after_job < 0)
		return queue_errx(q, QUEUE_EINVAL, "negative max_attempts, "
		    "run_after or after_job");
	if ((r->payload == NULL && r->payload_len > 0) ||
	    r->payload_len > INT_MAX)
		return queue_errx(q, QUEUE_EINVAL, "bad payload");
	return QUEUE_OK;
}

/*
 * Look at the job a new one is chained after: *blocked unless it is DONE.
 * A job may not wait for a job it would supersede.
 */
static int
queue_enqueue_parent(struct queue *q, const struct queue_enqueue_req *r,
    bool *blocked)
{
	struct store_stmt	*s;
	int		 rc;

	*blocked = false;
	if (r->after_job == 0)
		return QUEUE_OK;
	if ((s = queue_sql(q, ST_PARENT)) == NULL)
		return QUEUE_EIO;
	store_bind_int64(s, 1, r->after_job);
	if ((rc = store_step(s)) == STORE_DONE)
		return queue_sql_done(q, s, queue_errx(q, QUEUE_ENOTFOUND,
		    "no job #%lld to chain after", (long long)r->after_job));
	if (rc != STORE_ROW)
		return queue_sql_done(q, s, queue_err(q, rc, "enqueue"));
	*blocked = store_column_int(s, 0) != QUEUE_DONE;
	queue_sql_done(q, s, QUEUE_OK);
	if (r->coalesce_key == NULL)
		return QUEUE_OK;
	if ((s = queue_sql(q, ST_CYCLE_CHECK)) == NULL)
		return QUEUE_EIO;
	store_bind_int64(s, 1, r->after_job);
	store_bind_text(s, 2, r->coalesce_key, -1);
	if ((rc = store_step(s)) != STORE_ROW)
		return queue_sql_done(q, s, queue_err(q, rc, "enqueue"));
	if (store_column_int64(s, 0) > 0)
		rc = queue_errx(q, QUEUE_EINVAL, "job #%lld (or a job before "
		    "it) would be superseded by this job", (long long)
		    r->after_job);
	else
		rc = QUEUE_OK;
	return queue_sql_done(q, s, rc);
}

/* The job holding an idempotency key (ON CONFLICT DO NOTHING found it). */
static int
queue_enqueue_existing(struct queue *q, const char *key, int64_t *id)
{
	struct store_stmt	*s;
	int		 rc;

	if ((s = queue_sql(q, ST_IDEM_LOOKUP)) == NULL)
		return QUEUE_EIO;
	store_bind_text(s, 1, key, -1);
	if ((rc = store_step(s)) != STORE_ROW)
		return queue_sql_done(q, s, rc == STORE_DONE ?
		    queue_errx(q, QUEUE_EIO, "enqueue: conflict without an "
		    "idempotency key") : queue_err(q, rc, "enqueue"));
	*id = store_column_int64(s, 0);
	return queue_sql_done(q, s, QUEUE_EXISTS);
}

/* Insert the row; QUEUE_EXISTS and the old id if the idem_key is taken. */
static int
queue_enqueue_insert(struct queue *q, const struct queue_enqueue_req *r,
    bool blocked, int64_t now, bool log, int64_t *id)
{
	struct store_stmt	*s;
	char		 note[64];
	int		 rc, max_attempts;

	max_attempts = r->max_attempts > 0 ? r->max_attempts :
	    queue_policy_of(q, r->kind)->max_attempts;
	if ((s = queue_sql(q, ST_INSERT)) == NULL)
		return QUEUE_EIO;
	store_bind_text(s, 1, r->lane, -1);
	store_bind_text(s, 2, r->kind, -1);
	if (r->payload != NULL)
		store_bind_blob(s, 3, r->payload, (int)r->payload_len);
	store_bind_int(s, 4, blocked);
	store_bind_int(s, 5, r->priority);
	store_bind_int(s, 6, max_attempts);
	store_bind_int64(s, 7, r->run_after_ms > 0 ? r->run_after_ms : now);
	store_bind_text(s, 8, r->idem_key, -1);
	store_bind_text(s, 9, r->coalesce_key, -1);
	if (r->after_job > 0)
		store_bind_int64(s, 10, r->after_job);
	store_bind_int64(s, 11, now);
	if ((rc = store_step(s)) == STORE_ROW) {
		*id = store_column_int64(s, 0);
		rc = store_step(s);
	} else if (rc == STORE_DONE)
		*id = 0;
	if (rc != STORE_DONE)
		return queue_sql_done(q, s, queue_err(q, rc, "enqueue"));
	queue_sql_done(q, s, QUEUE_OK);
	if (*id == 0)
		return queue_enqueue_existing(q, r->idem_key, id);
	if (!log)
		return QUEUE_OK;
	if (blocked)
		snprintf(note, sizeof note, "waiting for #%lld",
		    (long long)r->after_job);
	else
		snprintf(note, sizeof note, "enqueued");
	return queue_sql_event(q, *id, now, QUEUE_QUEUED, QUEUE_QUEUED, 0, NULL,
	    note);
}

/* Supersede the QUEUED jobs with the new job's coalesce key; *n counts them. */
static int
queue_enqueue_coalesce(struct queue *q, const char *key, int64_t id,
    int64_t now, int64_t *n)
{
	struct queue_arg	a[] = { QUEUE_INT(id), QUEUE_INT(now),
	    QUEUE_TEXT(key) };
	int			rc, changed;

	if ((rc = queue_sql_change(q, ST_REPOINT, a, 3, NULL)) != QUEUE_OK ||
	    (rc = queue_sql_change(q, ST_COALESCE, a, 3, &changed)) !=
	    QUEUE_OK)
		return rc;
	*n += changed;
	return QUEUE_OK;
}

/* Enqueue a job (idempotent with idem_key, superseding with coalesce_key). */
int
queue_enqueue(struct queue *q, const struct queue_enqueue_req *r, int64_t *idp)
{
	int64_t	now = queue_now(q), id = 0, n = 0;
	bool	blocked;
	int	rc;

	if ((rc = queue_enqueue_check(q, r)) != QUEUE_OK)
		return rc;
	if ((rc = queue_tx_enter(q)) != QUEUE_OK)
		return rc;
	if ((rc = queue_enqueue_parent(q, r, &blocked)) == QUEUE_OK)
		rc = queue_enqueue_insert(q, r, blocked, now, true, &id);
	if (rc == QUEUE_OK && r->coalesce_key != NULL &&
	    (rc = queue_enqueue_coalesce(q, r->coalesce_key, id, now, &n)) ==
	    QUEUE_OK)
		rc = queue_sql_counter_add(q, "coalesced", n);
	rc = queue_tx_leave(q, rc);
	if (rc >= 0 && idp != NULL)
		*idp = id;
	return rc;
}

/*
 * A batch of enqueues: the jobs *first..last are inserted, their QUEUED
 * events not written yet.
 */
struct queue_batch {
	int64_t	now;
	int64_t	first, last;	/* 0: none waiting */
	int64_t	coalesced;
};

/* Write the QUEUED events of the jobs waiting, in id order. */
static int
queue_batch_log(struct queue *q, struct queue_batch *b)
{
	struct queue_arg	a[] = { QUEUE_INT(b->first), QUEUE_INT(b->now),
	    QUEUE_INT(b->last) };
	int			rc, n;

	if (b->first == 0)
		return QUEUE_OK;
	if ((rc = queue_sql_change(q, ST_EV_ENQUEUED, a, 3, &n)) != QUEUE_OK)
		return rc;
	if (n != b->last - b->first + 1)
		return queue_errx(q, QUEUE_EIO, "enqueue: %d events for jobs "
		    "#%lld..%lld", n, (long long)b->first, (long long)b->last);
	b->first = b->last = 0;
	return QUEUE_OK;
}

/*
 * One job of a batch: as queue_enqueue, but its event waits (with those
 * of the jobs before it) until a coalescing or the end of the batch, and
 * the coalescing runs only when there is a job to supersede.
 */
static int
queue_batch_add(struct queue *q, struct queue_batch *b,
    const struct queue_enqueue_req *r, int64_t *id)
{
	struct queue_arg	 a[] = { QUEUE_INT(0), QUEUE_INT(b->now),
	    QUEUE_TEXT(r->coalesce_key) };
	struct store_stmt		*s;
	bool			 blocked;
	int			 rc;

	*id = 0;
	if ((rc = queue_enqueue_parent(q, r, &blocked)) != QUEUE_OK ||
	    (rc = queue_enqueue_insert(q, r, blocked, b->now, false, id)) !=
	    QUEUE_OK)
		return rc;
	if (b->first == 0)
		b->first = *id;
	b->last = *id;
	if (r->coalesce_key == NULL)
		return QUEUE_OK;
	a[0].i = *id;
	if ((s = queue_sql(q, ST_COALESCE_PROBE)) == NULL)
		return QUEUE_EIO;
	queue_sql_bind(s, a, 3);
	if ((rc = store_step(s)) != STORE_ROW)
		return queue_sql_done(q, s, rc == STORE_DONE ? QUEUE_OK :
		    queue_err(q, rc, "enqueue"));
	queue_sql_done(q, s, QUEUE_OK);
	if ((rc = queue_batch_log(q, b)) != QUEUE_OK)
		return rc;
	return queue_enqueue_coalesce(q, r->coalesce_key, *id, b->now,
	    &b->coalesced);
}

/* Enqueue n jobs in one transaction level, in order (see queue.h). */
int
queue_enqueue_many(struct queue *q, const struct queue_enqueue_req *r,
    size_t n, int64_t *ids, int *rcs, size_t *failed)
{
	struct queue_batch	b = { .now = queue_now(q) };
	int64_t			id;
	size_t			i;
	int			rc = QUEUE_OK;

	for (i = 0; i < n && rc == QUEUE_OK; i++)
		rc = queue_enqueue_check(q, &r[i]);
	if (rc != QUEUE_OK) {
		if (failed != NULL)
			*failed = i - 1;
		return rc;
	}
	if ((rc = queue_tx_enter(q)) != QUEUE_OK) {
		if (failed != NULL)
			*failed = n;
		return rc;
	}
	for (i = 0; i < n && rc >= 0; i++) {
		rc = queue_batch_add(q, &b, &r[i], &id);
		if (ids != NULL)
			ids[i] = id;
		if (rcs != NULL)
			rcs[i] = rc;
	}
	if (rc < 0) {
		if (failed != NULL)
			*failed = i - 1;
		return queue_tx_leave(q, rc);
	}
	if ((rc = queue_batch_log(q, &b)) == QUEUE_OK && b.coalesced > 0)
		rc = queue_sql_counter_add(q, "coalesced", b.coalesced);
	if ((rc = queue_tx_leave(q, rc)) < 0 && failed != NULL)
		*failed = n;
	return rc;
}

/*
 * Claim up to k jobs with priority lo..hi into jobs[*got...]; kinds (NULL =
 * any) as ST_CLAIM_KINDS wants them.
 */
static int
queue_claim_range(struct queue *q, const char *lane, const char *kinds,
    const char *worker, int64_t lease_ms, int64_t now, int lo, int hi,
    size_t k, struct queue_job *jobs, size_t *got)
{
	enum queue_st		 st = kinds != NULL ? ST_CLAIM_KINDS :
	    lane != NULL ? ST_CLAIM_LANE : ST_CLAIM_ANY;
	struct queue_arg	 a[] = { QUEUE_TEXT(worker), QUEUE_INT(now),
	    QUEUE_INT(lease_ms), QUEUE_TEXT(lane), QUEUE_INT(lo), QUEUE_INT(hi),
	    QUEUE_INT((int64_t)k), QUEUE_TEXT(kinds) };
	struct store_stmt		*s;
	size_t			 first = *got, end = *got + k;
	int			 rc, logged;

	if ((rc = queue_sql_log(q, st, a, 8, &logged)) != QUEUE_OK)
		return rc;
	if ((s = queue_sql(q, st)) == NULL)
		return QUEUE_EIO;
	queue_sql_bind(s, a, 8);
	while ((rc = store_step(s)) == STORE_ROW) {
		if (*got == end || queue_sql_job_read(s, &jobs[*got]) !=
		    QUEUE_OK) {
			rc = STORE_NOMEM;
			break;
		}
		(*got)++;
	}
	if (rc != STORE_DONE)
		return queue_sql_done(q, s, queue_err(q, rc, "claim"));
	if ((size_t)logged != *got - first)
		rc = queue_errx(q, QUEUE_EIO, "history out of step: %d events "
		    "for %zu claims", logged, *got - first);
	else
		rc = QUEUE_OK;
	return queue_sql_done(q, s, rc);
}

/* The jobs of a lane RUNNING now. */
static int
queue_running(struct queue *q, const char *lane, int64_t *count)
{
	struct store_stmt	*s;
	int		 rc;

	if ((s = queue_sql(q, ST_RUNNING_COUNT)) == NULL)
		return QUEUE_EIO;
	store_bind_text(s, 1, lane, -1);
	if ((rc = store_step(s)) != STORE_ROW)
		return queue_sql_done(q, s, queue_err(q, rc, "claim"));
	*count = store_column_int64(s, 0);
	return queue_sql_done(q, s, QUEUE_OK);
}

/* The limits of a lane, or NULL. */
static const struct queue_lane_limit *
queue_lane_limit(struct queue *q, const char *lane)
{
	size_t	i;

	for (i = 0; lane != NULL && i < q->nlanes; i++) {
		if (strcmp(q->lanes[i].lane, lane) == 0)
			return q->lanes[i].max_running > 0 ? &q->lanes[i] : NULL;
	}
	return NULL;
}

/*
 * Claim within the lane's limits: urgent jobs up to max_running, the others
 * only while fewer than max_running - reserved run.
 */
static int
queue_claim_limited(struct queue *q, const char *lane, const char *kinds,
    const char *worker, int64_t lease_ms, int64_t now, struct queue_job *jobs,
    size_t max, size_t *n)
{
	const struct queue_lane_limit	*l = queue_lane_limit(q, lane);
	int64_t				 running = 0, room;
	int				 rc;

	if (l == NULL)
		return queue_claim_range(q, lane, kinds, worker, lease_ms,
		    now, QUEUE_PRIO_URGENT, QUEUE_PRIO_LOW, max, jobs, n);
	if ((rc = queue_running(q, lane, &running)) != QUEUE_OK)
		return rc;
	if ((room = l->max_running - running) <= 0)
		return QUEUE_OK;
	rc = queue_claim_range(q, lane, kinds, worker, lease_ms, now,
	    QUEUE_PRIO_URGENT, l->urgent_prio, (size_t)room < max ?
	    (size_t)room : max, jobs, n);
	room = l->max_running - l->reserved - running - (int64_t)*n;
	if (rc != QUEUE_OK || room <= 0 || *n == max ||
	    l->urgent_prio == QUEUE_PRIO_LOW)
		return rc;
	return queue_claim_range(q, lane, kinds, worker, lease_ms, now,
	    l->urgent_prio + 1, QUEUE_PRIO_LOW, (size_t)room < max - *n ?
	    (size_t)room : max - *n, jobs, n);
}

/* Claim order: priority, then run_after, then id. */
static int
queue_job_cmp(const void *a, const void *b)
{
	const struct queue_job	*x = a, *y = b;

	if (x->priority != y->priority)
		return x->priority < y->priority ? -1 : 1;
	if (x->run_after_ms != y->run_after_ms)
		return x->run_after_ms < y->run_after_ms ? -1 : 1;
	return (x->id > y->id) - (x->id < y->id);
}

/* Claim up to max due jobs of a lane (NULL = any), of some kinds, as worker. */
static int
queue_claim_of(struct queue *q, const char *lane, const char *kinds,
    const char *worker, int64_t lease_ms, struct queue_job *jobs, size_t max,
    size_t *n)
{
	size_t	i;
	int	rc;

	*n = 0;
	if (worker == NULL || *worker == '\0' || jobs == NULL || max == 0 ||
	    lease_ms < 0)
		return queue_errx(q, QUEUE_EINVAL, "claim needs a worker name, "
		    "room for jobs and a lease >= 0");
	if (max > INT_MAX)
		max = INT_MAX;
	if ((rc = queue_tx_enter(q)) != QUEUE_OK)
		return rc;
	rc = queue_claim_limited(q, lane, kinds, worker, lease_ms, queue_now(q),
	    jobs, max, n);
	if ((rc = queue_tx_leave(q, rc)) < 0) {
		for (i = 0; i < *n; i++)
			queue_job_clear(&jobs[i]);
		*n = 0;
		return rc;
	}
	qsort(jobs, *n, sizeof *jobs, queue_job_cmp);
	return QUEUE_OK;
}

int
queue_claim(struct queue *q, const char *lane, const char *worker,
    int64_t lease_ms, struct queue_job *jobs, size_t max, size_t *n)
{
	return queue_claim_of(q, lane, NULL, worker, lease_ms, jobs, max, n);
}

/* As queue_claim, only jobs of a lane whose kind is one of kinds[]. */
int
queue_claim_kinds(struct queue *q, const char *lane,
    const char *const *kinds, size_t nkinds, const char *worker,
    int64_t lease_ms, struct queue_job *jobs, size_t max, size_t *n)
{
	char	*set, *p;
	size_t	 i, len = 2;
	int	 rc;

	*n = 0;
	for (i = 0; i < nkinds; i++) {
		if (kinds[i] == NULL || *kinds[i] == '\0' ||
		    strchr(kinds[i], QUEUE_KINDS_SEP) != NULL)
			return queue_errx(q, QUEUE_EINVAL, "a kind to claim is "
			    "empty or holds byte 0x1f");
		len += strlen(kinds[i]) + 1;
	}
	if (lane == NULL || nkinds == 0)
		return queue_errx(q, QUEUE_EINVAL, "a claim by kind needs a "
		    "lane and at least one kind");
	if ((set = p = malloc(len)) == NULL)
		return queue_errx(q, QUEUE_EIO, "out of memory");
	*p++ = QUEUE_KINDS_SEP;
	for (i = 0; i < nkinds; i++) {
		memcpy(p, kinds[i], strlen(kinds[i]));
		p += strlen(kinds[i]);
		*p++ = QUEUE_KINDS_SEP;
	}
	*p = '\0';
	rc = queue_claim_of(q, lane, set, worker, lease_ms, jobs, max, n);
	free(set);
	return rc;
}

/*
 * Run a fenced update of a claimed job (?1 id, ?2 lease_gen, ?3 now, ?4
 * arg, ?5 text) inside the current transaction; QUEUE_ELOST if it changed
 * nothing.
 */
static int
queue_fenced(struct queue *q, enum queue_st st, int64_t id, int64_t gen,
    int64_t now, int64_t arg, const char *text)
{
	struct queue_arg	a[] = { QUEUE_INT(id), QUEUE_INT(gen),
	    QUEUE_INT(now), QUEUE_INT(arg), QUEUE_TEXT(text) };
	int			rc, n;

	if ((rc = queue_sql_change(q, st, a, 5, &n)) != QUEUE_OK)
		return rc;
	if (n == 0)
		return queue_errx(q, QUEUE_ELOST, "job #%lld is no longer held "
		    "by lease %lld", (long long)id, (long long)gen);
	return QUEUE_OK;
}

/* Run one fenced update in its own transaction level. */
static int
queue_fenced_tx(struct queue *q, enum queue_st st, int64_t id, int64_t gen,
    int64_t arg)
{
	int	rc;

	if ((rc = queue_tx_enter(q)) != QUEUE_OK)
		return rc;
	rc = queue_fenced(q, st, id, gen, queue_now(q), arg, NULL);
	return queue_tx_leave(q, rc);
}

/* Extend the lease of a claimed job. */
int
queue_heartbeat(struct queue *q, int64_t id, int64_t lease_gen,
    int64_t lease_ms)
{
	if (lease_ms < 0)
		return queue_errx(q, QUEUE_EINVAL, "negative lease");
	return queue_fenced_tx(q, ST_HEARTBEAT, id, lease_gen, lease_ms);
}

/* Give a claimed job back, not counting the attempt, due after delay_ms. */
int
queue_release(struct queue *q, int64_t id, int64_t lease_gen,
    int64_t delay_ms)
{
	if (delay_ms < 0)
		return queue_errx(q, QUEUE_EINVAL, "negative delay");
	return queue_fenced_tx(q, ST_RELEASE_JOB, id, lease_gen, delay_ms);
}

/* Mark a job DONE and release the jobs chained after it. */
static int
queue_complete_one(struct queue *q, int64_t id, int64_t gen, int64_t now)
{
	struct queue_arg	a[] = { QUEUE_INT(id), QUEUE_INT(now) };
	int			rc;

	if ((rc = queue_fenced(q, ST_COMPLETE, id, gen, now, 0, NULL)) !=
	    QUEUE_OK)
		return rc;
	return queue_sql_change(q, ST_RELEASE_DEPS, a, 2, NULL);
}

/* Complete a claimed job. */
int
queue_complete(struct queue *q, int64_t id, int64_t lease_gen)
{
	int	rc;

	if ((rc = queue_tx_enter(q)) != QUEUE_OK)
		return rc;
	rc = queue_complete_one(q, id, lease_gen, queue_now(q));
	return queue_tx_leave(q, rc);
}

/*
 * Complete up to 16 jobs with one statement pair; QUEUE_ELOST (and nothing
 * changed) unless every one of them is still held.
 */
static int
queue_complete16(struct queue *q, const int64_t *ids, const int64_t *gens,
    size_t n, int64_t now)
{
	struct queue_arg	a[46];
	size_t			i;
	int			rc, done;

	memset(a, 0, sizeof a);
	a[2] = (struct queue_arg)QUEUE_INT(now);
	for (i = 0; i < n; i++) {
		a[10 + i] = (struct queue_arg)QUEUE_INT(ids[i]);
		a[30 + i] = (struct queue_arg)QUEUE_INT(gens[i]);
	}
	if ((rc = queue_tx_enter(q)) != QUEUE_OK)
		return rc;
	rc = queue_sql_change(q, ST_COMPLETE16, a, 46, &done);
	if (rc == QUEUE_OK && (size_t)done != n)
		rc = QUEUE_ELOST;
	if (rc == QUEUE_OK)
		rc = queue_sql_change(q, ST_RELEASE_DEPS16, a, 46, NULL);
	return queue_tx_leave(q, rc);
}

/*
 * Complete many claimed jobs in one transaction (group commit): 16 at a
 * time, or one by one where a lease was lost, to tell which.
 */
int
queue_complete_many(struct queue *q, const int64_t *ids, const int64_t *gens,
    size_t n, int *rcs)
{
	int64_t	now = queue_now(q);
	size_t	i, k, off;
	int	rc, one;

	if ((rc = queue_tx_enter(q)) != QUEUE_OK)
		goto out;
	for (off = 0; off < n && rc == QUEUE_OK; off += k) {
		k = n - off < 16 ? n - off : 16;
		if ((one = queue_complete16(q, ids + off, gens + off, k, now)) ==
		    QUEUE_OK) {
			for (i = 0; rcs != NULL && i < k; i++)
				rcs[off + i] = QUEUE_OK;
			continue;
		}
		if (one != QUEUE_ELOST) {
			rc = one;
			break;
		}
		for (i = off; i < off + k && rc == QUEUE_OK; i++) {
			one = queue_complete_one(q, ids[i], gens[i], now);
			if (rcs != NULL)
				rcs[i] = one;
			if (one < 0 && one != QUEUE_ELOST)
				rc = one;
		}
	}
	rc = queue_tx_leave(q, rc);
out:
	for (i = 0; rc < 0 && rcs != NULL && i < n; i++)
		rcs[i] = rc;
	return rc;
}

/* A failed attempt: retry later while attempts remain, else FAILED. */
int
queue_fail(struct queue *q, int64_t id, int64_t lease_gen, const char *error,
    bool permanent)
{
	enum queue_state	st;
	int			rc;

	if ((rc = queue_tx_enter(q)) != QUEUE_OK)
		return rc;
	rc = queue_fenced(q, ST_FAIL, id, lease_gen, queue_now(q), permanent,
	    error != NULL ? error : "failed");
	if (rc == QUEUE_OK && (rc = queue_job_state(q, id, &st)) == QUEUE_OK &&
	    st == QUEUE_QUEUED)
		rc = queue_sql_counter_add(q, "retries", 1);
	return queue_tx_leave(q, rc);
}

/* Take back expired leases (one guarded statement). */
int
queue_reap(struct queue *q, size_t *n)
{
	struct queue_arg	a[] = { QUEUE_INT(queue_now(q)) };
	int			rc, changed = 0;

	if (n != NULL)
		*n = 0;
	if ((rc = queue_tx_enter(q)) != QUEUE_OK)
		return rc;
	if ((rc = queue_sql_change(q, ST_REAP, a, 1, &changed)) == QUEUE_OK)
		rc = queue_sql_counter_add(q, "rescues", changed);
	if ((rc = queue_tx_leave(q, rc)) == QUEUE_OK && n != NULL)
		*n = (size_t)changed;
	return rc;
}

/* The RUNNING jobs of workers named prefix... but self, taken back now. */
static int
queue_orphans(struct queue *q, const char *prefix, const char *self,
    size_t *n)
{
	struct queue_arg	a[] = { QUEUE_INT(queue_now(q)),
				    QUEUE_TEXT(prefix), QUEUE_TEXT(self) };
	int			rc, changed = 0;

	if ((rc = queue_tx_enter(q)) != QUEUE_OK)
		return rc;
	if ((rc = queue_sql_change(q, ST_ORPHANS, a, 3, &changed)) ==
	    QUEUE_OK)
		rc = queue_sql_counter_add(q, "rescues", changed);
	if ((rc = queue_tx_leave(q, rc)) == QUEUE_OK && n != NULL)
		*n = (size_t)changed;
	return rc;
}

/* Take back at once the jobs of dead workers whose names start with prefix. */
int
queue_release_orphans(struct queue *q, const char *prefix, const char *self,
    size_t *n)
{
	if (n != NULL)
		*n = 0;
	if (prefix == NULL || *prefix == '\0')
		return queue_errx(q, QUEUE_EINVAL, "no worker prefix given");
	return queue_orphans(q, prefix, self != NULL ? self : "", n);
}

/* Take back every RUNNING job at once: no worker of any kind is alive. */
int
queue_release_all(struct queue *q, size_t *n)
{
	if (n != NULL)
		*n = 0;
	return queue_orphans(q, "", "", n);
}
