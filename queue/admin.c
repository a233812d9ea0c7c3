/* queue: the operator's side: look, requeue, cancel, re-run, stats, prune. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "queue/queue_int.h"

#define QUEUE_LIST_DEFAULT	100
#define QUEUE_BATCH		500

/* The state of a job, or QUEUE_ENOTFOUND. */
int
queue_job_state(struct queue *q, int64_t id, enum queue_state *state)
{
	struct store_stmt	*s;
	int		 rc;

	if ((s = queue_sql(q, ST_STATE_OF)) == NULL)
		return QUEUE_EIO;
	store_bind_int64(s, 1, id);
	if ((rc = store_step(s)) == STORE_ROW) {
		*state = (enum queue_state)store_column_int(s, 0);
		rc = QUEUE_OK;
	} else if (rc == STORE_DONE)
		rc = queue_errx(q, QUEUE_ENOTFOUND, "no job #%lld",
		    (long long)id);
	else
		rc = queue_err(q, rc, "job state");
	return queue_sql_done(q, s, rc);
}

/* Why an operator action changed nothing: not found, or the wrong state. */
static int
queue_why_not(struct queue *q, int64_t id, const char *action)
{
	enum queue_state	st;
	int			rc;

	if ((rc = queue_job_state(q, id, &st)) != QUEUE_OK)
		return rc;
	return queue_errx(q, QUEUE_ESTATE, "job #%lld is %s: cannot %s it",
	    (long long)id, queue_state_name(st), action);
}

/* Run an operator update: ?1 a number, ?2 now, ?3 note, ?4 the job. */
static int
queue_update(struct queue *q, enum queue_st st, int64_t a, int64_t now,
    const char *note, int64_t b, int *changed)
{
	struct queue_arg	args[] = { QUEUE_INT(a), QUEUE_INT(now),
	    QUEUE_TEXT(note), QUEUE_INT(b) };

	return queue_sql_change(q, st, args, 4, changed);
}

/* Fetch one job. */
int
queue_get(struct queue *q, int64_t id, struct queue_job *j)
{
	struct store_stmt	*s;
	int		 rc;

	memset(j, 0, sizeof *j);
	if ((s = queue_sql(q, ST_GET)) == NULL)
		return QUEUE_EIO;
	store_bind_int64(s, 1, id);
	if ((rc = store_step(s)) == STORE_ROW)
		rc = queue_sql_job_read(s, j) == QUEUE_OK ? QUEUE_OK :
		    queue_errx(q, QUEUE_EIO, "out of memory");
	else if (rc == STORE_DONE)
		rc = queue_errx(q, QUEUE_ENOTFOUND, "no job #%lld",
		    (long long)id);
	else
		rc = queue_err(q, rc, "get");
	return queue_sql_done(q, s, rc);
}

/*
 * Prepare the query behind list and requeue_many: cols of the jobs that
 * match f, by id. requeueable: state -1 means FAILED or CANCELLED.
 */
static struct store_stmt *
queue_list_prepare(struct queue *q, const struct queue_filter *f,
    const char *cols, bool requeueable, int limit)
{
	struct store_stmt	*s;
	char		 sql[512];
	int		 rc;

	snprintf(sql, sizeof sql, "SELECT %s FROM jobs WHERE id > ?1%s%s%s%s "
	    "ORDER BY id LIMIT ?6", cols, f->state >= 0 ? " AND state = ?2" :
	    requeueable ? " AND state IN (3, 4)" : "",
	    f->kind != NULL ? " AND kind = ?3" : "",
	    f->lane != NULL ? " AND lane = ?4" : "",
	    f->older_than_ms > 0 ? " AND updated < ?5" : "");
	if ((rc = store_prepare(q->db, sql, 0, &s)) != STORE_OK) {
		queue_err(q, rc, "list");
		return NULL;
	}
	/* Parameters a query does not use are out of range: ignored. */
	store_bind_int64(s, 1, f->after_id);
	store_bind_int(s, 2, f->state);
	store_bind_text(s, 3, f->kind, -1);
	store_bind_text(s, 4, f->lane, -1);
	store_bind_int64(s, 5, queue_now(q) - f->older_than_ms);
	store_bind_int(s, 6, limit);
	return s;
}

/* Check a filter. */
static int
queue_filter_check(struct queue *q, const struct queue_filter *f)
{
	if (f == NULL || f->state < -1 || f->state > QUEUE_CANCELLED ||
	    f->older_than_ms < 0 || f->after_id < 0 || f->limit < 0)
		return queue_errx(q, QUEUE_EINVAL, "bad filter");
	return QUEUE_OK;
}

/* List jobs matching a filter, by id. */
int
queue_list(struct queue *q, const struct queue_filter *f,
    struct queue_job **jobs, size_t *n)
{
	struct store_stmt	*s;
	struct queue_job *v;
	int		 rc, limit;

	*jobs = NULL;
	*n = 0;
	if ((rc = queue_filter_check(q, f)) != QUEUE_OK)
		return rc;
	limit = f->limit > 0 ? f->limit : QUEUE_LIST_DEFAULT;
	if ((s = queue_list_prepare(q, f, QUEUE_JOB_COLS, false, limit)) ==
	    NULL)
		return QUEUE_EIO;
	while ((rc = store_step(s)) == STORE_ROW) {
		if ((v = reallocarray(*jobs, *n + 1, sizeof *v)) == NULL ||
		    queue_sql_job_read(s, &v[*n]) != QUEUE_OK) {
			if (v != NULL)
				*jobs = v;
			rc = STORE_NOMEM;
			break;
		}
		*jobs = v;
		(*n)++;
	}
	rc = rc == STORE_DONE ? QUEUE_OK : queue_err(q, rc, "list");
	store_finalize(s);
	if (rc != QUEUE_OK) {
		queue_jobs_free(*jobs, *n);
		*jobs = NULL;
		*n = 0;
	}
	return rc;
}

/* Read one event row. */
static int
queue_event_read(struct store_stmt *s, struct queue_event *e)
{
	const char	*w = store_column_text(s, 5);
	const char	*t = store_column_text(s, 6);

	e->job_id = store_column_int64(s, 0);
	e->t_ms = store_column_int64(s, 1);
	e->from = (enum queue_state)store_column_int(s, 2);
	e->to = (enum queue_state)store_column_int(s, 3);
	e->attempt = store_column_int(s, 4);
	e->worker = w != NULL ? strdup((const char *)w) : NULL;
	e->note = t != NULL ? strdup((const char *)t) : NULL;
	if ((w != NULL && e->worker == NULL) || (t != NULL && e->note == NULL))
		return QUEUE_EIO;
	return QUEUE_OK;
}

/* The events of a job, oldest first. */
int
queue_history(struct queue *q, int64_t id, struct queue_event **ev,
    size_t *n)
{
	struct store_stmt		*s;
	struct queue_event	*v;
	enum queue_state	 st;
	int			 rc;

	*ev = NULL;
	*n = 0;
	if ((s = queue_sql(q, ST_HISTORY)) == NULL)
		return QUEUE_EIO;
	store_bind_int64(s, 1, id);
	while ((rc = store_step(s)) == STORE_ROW) {
		if ((v = reallocarray(*ev, *n + 1, sizeof *v)) == NULL) {
			rc = STORE_NOMEM;
			break;
		}
		*ev = v;
		memset(&v[*n], 0, sizeof *v);
		if (queue_event_read(s, &v[(*n)++]) != QUEUE_OK) {
			rc = STORE_NOMEM;
			break;
		}
	}
	rc = rc == STORE_DONE ? QUEUE_OK : queue_err(q, rc, "history");
	queue_sql_done(q, s, rc);
	if (rc == QUEUE_OK && *n == 0)
		rc = queue_job_state(q, id, &st);
	if (rc != QUEUE_OK) {
		queue_events_free(*ev, *n);
		*ev = NULL;
		*n = 0;
	}
	return rc;
}

/* Requeue one FAILED or CANCELLED job inside the current transaction. */
static int
queue_requeue_one(struct queue *q, int64_t id, int extra, const char *note,
    int64_t now)
{
	int	rc, changed;

	rc = queue_update(q, ST_REQUEUE, extra, now, note != NULL ? note :
	    "requeued by operator", id, &changed);
	if (rc == QUEUE_OK && changed == 0)
		rc = queue_why_not(q, id, "requeue");
	return rc;
}

/* Requeue a FAILED or CANCELLED job, raising its max_attempts. */
int
queue_requeue(struct queue *q, int64_t id, int extra_attempts,
    const char *note)
{
	int	rc;

	if (extra_attempts < 0)
		return queue_errx(q, QUEUE_EINVAL, "negative extra attempts");
	if ((rc = queue_tx_enter(q)) != QUEUE_OK)
		return rc;
	rc = queue_requeue_one(q, id, extra_attempts, note, queue_now(q));
	return queue_tx_leave(q, rc);
}

/* Requeue one batch of the jobs matching f; *last = the last id seen. */
static int
queue_requeue_batch(struct queue *q, const struct queue_filter *f, int limit,
    int extra, const char *note, size_t *n, int64_t *last, int *seen)
{
	struct store_stmt	*s;
	int64_t		 ids[QUEUE_BATCH], now = queue_now(q);
	int		 rc, i;

	*seen = 0;
	if ((rc = queue_tx_enter(q)) != QUEUE_OK)
		return rc;
	if ((s = queue_list_prepare(q, f, "id", true, limit)) == NULL)
		return queue_tx_leave(q, QUEUE_EIO);
	rc = STORE_DONE;
	while (*seen < limit && (rc = store_step(s)) == STORE_ROW)
		ids[(*seen)++] = store_column_int64(s, 0);
	/* The loop stops on the limit with a row in hand, or at the end. */
	rc = rc == STORE_DONE || rc == STORE_ROW ? QUEUE_OK :
	    queue_err(q, rc, "requeue");
	store_finalize(s);
	for (i = 0; i < *seen && rc == QUEUE_OK; i++)
		rc = queue_requeue_one(q, ids[i], extra, note, now);
	if ((rc = queue_tx_leave(q, rc)) == QUEUE_OK && *seen > 0) {
		*n += (size_t)*seen;
		*last = ids[*seen - 1];
	}
	return rc;
}

/* Requeue every FAILED/CANCELLED job matching f, a batch per transaction. */
int
queue_requeue_many(struct queue *q, const struct queue_filter *f,
    int extra_attempts, const char *note, size_t *n)
{
	struct queue_filter	page;
	int64_t			left;
	int			rc, seen, limit;

	*n = 0;
	if ((rc = queue_filter_check(q, f)) != QUEUE_OK)
		return rc;
	if ((f->state != -1 && f->state != QUEUE_FAILED &&
	    f->state != QUEUE_CANCELLED) || extra_attempts < 0)
		return queue_errx(q, QUEUE_EINVAL, "only FAILED or CANCELLED "
		    "jobs can be requeued");
	page = *f;
	left = f->limit > 0 ? f->limit : INT64_MAX;
	do {
		limit = left < QUEUE_BATCH ? (int)left : QUEUE_BATCH;
		rc = queue_requeue_batch(q, &page, limit, extra_attempts, note,
		    n, &page.after_id, &seen);
		left -= seen;
	} while (rc == QUEUE_OK && seen == limit && left > 0);
	return rc;
}

/* Cancel a job and the jobs waiting in its chain. */
int
queue_cancel(struct queue *q, int64_t id, const char *note)
{
	char	chain[64];
	int64_t	now = queue_now(q);
	int	rc, changed;

	if ((rc = queue_tx_enter(q)) != QUEUE_OK)
		return rc;
	rc = queue_update(q, ST_CANCEL, 0, now, note != NULL ? note :
	    "cancelled by operator", id, &changed);
	if (rc == QUEUE_OK && changed == 0)
		rc = queue_why_not(q, id, "cancel");
	snprintf(chain, sizeof chain, "chain cancelled at #%lld",
	    (long long)id);
	if (rc == QUEUE_OK)
		rc = queue_update(q, ST_CANCEL_CHAIN, 0, now, chain, id, NULL);
	return queue_tx_leave(q, rc);
}

/* Re-run a chain from a step: the step and every job after it. */
int
queue_rerun_from(struct queue *q, int64_t id, const char *note, size_t *n)
{
	enum queue_state	 st;
	struct store_stmt		*s;
	char			 buf[64];
	int64_t			 now = queue_now(q);
	int			 rc, a = 0, b = 0;

	*n = 0;
	snprintf(buf, sizeof buf, "re-run from #%lld", (long long)id);
	if (note == NULL)
		note = buf;
	if ((rc = queue_tx_enter(q)) != QUEUE_OK)
		return rc;
	if ((rc = queue_job_state(q, id, &st)) != QUEUE_OK)
		return queue_tx_leave(q, rc);
	if ((s = queue_sql(q, ST_RERUN_CHECK)) == NULL)
		return queue_tx_leave(q, QUEUE_EIO);
	store_bind_int64(s, 1, id);
	if ((rc = store_step(s)) != STORE_ROW)
		rc = queue_err(q, rc, "re-run");
	else if (store_column_int64(s, 0) > 0)
		rc = queue_errx(q, QUEUE_ESTATE, "job #%lld or a job after it "
		    "is RUNNING: cancel it or wait", (long long)id);
	else
		rc = QUEUE_OK;
	queue_sql_done(q, s, rc);
	if (rc == QUEUE_OK)
		rc = queue_update(q, ST_RERUN_ROOT, id, now, note, 0, &a);
	if (rc == QUEUE_OK)
		rc = queue_update(q, ST_RERUN_DESC, id, now, note, 0, &b);
	if ((rc = queue_tx_leave(q, rc)) == QUEUE_OK)
		*n = (size_t)(a + b);
	return rc;
}

/* Read the rows of a (key, count) query into stats. */
static int
queue_stats_rows(struct queue *q, enum queue_st st, struct queue_stats *out)
{
	struct store_stmt	*s;
	const char	*name;
	int64_t		 v;
	int		 rc, k;

	if ((s = queue_sql(q, st)) == NULL)
		return QUEUE_EIO;
	store_bind_int64(s, 1, queue_now(q));
	while ((rc = store_step(s)) == STORE_ROW) {
		v = store_column_int64(s, 1);
		if (st == ST_STATE_COUNTS) {
			k = store_column_int(s, 0);
			if (k >= 0 && k <= QUEUE_CANCELLED)
				out->count[k] = v;
		} else if (st == ST_OLDEST_DUE) {
			if (!store_column_is_null(s, 0))
				out->oldest_due_age_ms = queue_now(q) -
				    store_column_int64(s, 0);
		} else if ((name = store_column_text(s, 0)) !=
		    NULL) {
			if (strcmp(name, "retries") == 0)
				out->retries = v;
			else if (strcmp(name, "rescues") == 0)
				out->rescues = v;
			else if (strcmp(name, "coalesced") == 0)
				out->coalesced = v;
		}
	}
	rc = rc == STORE_DONE ? QUEUE_OK : queue_err(q, rc, "stats");
	return queue_sql_done(q, s, rc);
}

/* Counts by state, the oldest due job's age, and the counters. */
int
queue_stats(struct queue *q, struct queue_stats *out)
{
	enum queue_st	 st[] = { ST_STATE_COUNTS, ST_OLDEST_DUE, ST_COUNTERS };
	size_t		 i;
	int		 rc = QUEUE_OK;
	bool		 own;

	memset(out, 0, sizeof *out);
	/* One snapshot for the three reads (a read transaction, no lock). */
	own = q->depth == 0 && store_exec(q->db, store_driver(q->db) ==
	    STORE_POSTGRESQL ? "BEGIN ISOLATION LEVEL REPEATABLE READ" :
	    "BEGIN") == STORE_OK;
	for (i = 0; i < sizeof st / sizeof *st && rc == QUEUE_OK; i++)
		rc = queue_stats_rows(q, st[i], out);
	if (own)
		store_exec(q->db, "COMMIT");
	return rc;
}

/* Delete one batch of prunable jobs in state st older than cut. */
static int
queue_prune_batch(struct queue *q, int st, int64_t cut, int *changed)
{
	struct store_stmt	*s;
	int		 rc;

	*changed = 0;
	if ((rc = queue_tx_enter(q)) != QUEUE_OK)
		return rc;
	if ((s = queue_sql(q, ST_PRUNE)) == NULL)
		return queue_tx_leave(q, QUEUE_EIO);
	store_bind_int(s, 1, st);
	store_bind_int64(s, 2, cut);
	store_bind_int(s, 3, QUEUE_BATCH);
	if ((rc = store_step(s)) != STORE_DONE)
		rc = queue_err(q, rc, "prune");
	else {
		*changed = store_changes(q->db);
		rc = QUEUE_OK;
	}
	queue_sql_done(q, s, rc);
	return queue_tx_leave(q, rc);
}

/* Delete old DONE, FAILED and CANCELLED jobs in small batches. */
int
queue_prune(struct queue *q, int64_t done_age_ms, int64_t failed_age_ms,
    size_t *n)
{
	int64_t	now = queue_now(q), age[3];
	int	st[3] = { QUEUE_DONE, QUEUE_FAILED, QUEUE_CANCELLED };
	int	i, rc = QUEUE_OK, changed;

	if (n != NULL)
		*n = 0;
	age[0] = done_age_ms != 0 ? done_age_ms : QUEUE_PRUNE_DONE_MS;
	age[1] = age[2] = failed_age_ms != 0 ? failed_age_ms :
	    QUEUE_PRUNE_FAILED_MS;
	for (i = 0; i < 3 && rc == QUEUE_OK; i++) {
		if (age[i] < 0)
			continue;
		do {
			rc = queue_prune_batch(q, st[i], now - age[i], &changed);
			if (rc == QUEUE_OK && n != NULL)
				*n += (size_t)changed;
		} while (rc == QUEUE_OK && changed == QUEUE_BATCH);
	}
	return rc;
}

/* Keep a named value with a job. */
int
queue_data_put(struct queue *q, int64_t id, const char *key, const void *val,
    size_t len)
{
	struct store_stmt	*s;
	int		 rc;

	if (key == NULL || (val == NULL && len > 0) || len > INT32_MAX)
		return queue_errx(q, QUEUE_EINVAL, "bad job data");
	if ((rc = queue_tx_enter(q)) != QUEUE_OK)
		return rc;
	if ((s = queue_sql(q, ST_DATA_PUT)) == NULL)
		return queue_tx_leave(q, QUEUE_EIO);
	store_bind_int64(s, 1, id);
	store_bind_text(s, 2, key, -1);
	store_bind_blob(s, 3, val != NULL ? val : "", (int)len);
	rc = store_step(s);
	if (rc == STORE_CONSTRAINT)
		rc = queue_errx(q, QUEUE_ENOTFOUND, "no job #%lld",
		    (long long)id);
	else
		rc = rc == STORE_DONE ? QUEUE_OK : queue_err(q, rc, "data");
	queue_sql_done(q, s, rc);
	return queue_tx_leave(q, rc);
}

/* Fetch a named value of a job (malloc'd, NUL after it). */
int
queue_data_get(struct queue *q, int64_t id, const char *key, void **val,
    size_t *len)
{
	struct store_stmt	*s;
	const void	*b;
	int		 rc, n;

	*val = NULL;
	*len = 0;
	if ((s = queue_sql(q, ST_DATA_GET)) == NULL)
		return QUEUE_EIO;
	store_bind_int64(s, 1, id);
	store_bind_text(s, 2, key, -1);
	if ((rc = store_step(s)) == STORE_ROW) {
		b = store_column_blob(s, 0);
		n = store_column_bytes(s, 0);
		if ((*val = malloc((size_t)n + 1)) == NULL)
			rc = queue_errx(q, QUEUE_EIO, "out of memory");
		else {
			if (n > 0)
				memcpy(*val, b, (size_t)n);
			((char *)*val)[n] = '\0';
			*len = (size_t)n;
			rc = QUEUE_OK;
		}
	} else if (rc == STORE_DONE)
		rc = queue_errx(q, QUEUE_ENOTFOUND, "job #%lld has no data "
		    "'%s'", (long long)id, key);
	else
		rc = queue_err(q, rc, "data");
	return queue_sql_done(q, s, rc);
}
