/* queue: the SQL of every cached statement, and the functions that run it. */
#include <stdlib.h>
#include <string.h>

#include "queue/queue_int.h"

/* The SQLite texts. */
#define IX(ix)		" INDEXED BY " ix
#define SKIP_LOCKED	""
#define INSTR(s, t)	"instr(" s ", " t ")"
#define US		"char(31)"
#define I(n)		"?" #n
#define T(n)		"?" #n
#define CTE(name)	name
static const char *const queue_sql_sqlite[ST_COUNT] = {
#include "queue/sqltext.h"
};
#undef IX
#undef SKIP_LOCKED
#undef INSTR
#undef US
#undef I
#undef T
#undef CTE

/* The PostgreSQL texts. */
#define IX(ix)		""
#define SKIP_LOCKED	" FOR UPDATE SKIP LOCKED"
#define INSTR(s, t)	"strpos(" s ", " t ")"
#define US		"chr(31)"
#define I(n)		"?" #n "::bigint"
#define T(n)		"?" #n "::text"
#define CTE(name)	"(SELECT id FROM " name ")"
static const char *const queue_sql_pg[ST_COUNT] = {
#include "queue/sqltext.h"
};

/* The event twin of each state-changing statement. */
static const enum queue_st queue_sql_twin[ST_COUNT] = {
	[ST_CLAIM_LANE] = ST_EV_CLAIM_LANE,
	[ST_CLAIM_ANY] = ST_EV_CLAIM_ANY,
	[ST_CLAIM_KINDS] = ST_EV_CLAIM_KINDS,
	[ST_COMPLETE16] = ST_EV_COMPLETE16,
	[ST_RELEASE_DEPS16] = ST_EV_RELEASE_DEPS16,
	[ST_COALESCE] = ST_EV_COALESCE,
	[ST_COMPLETE] = ST_EV_COMPLETE,
	[ST_FAIL] = ST_EV_FAIL,
	[ST_RELEASE_JOB] = ST_EV_RELEASE_JOB,
	[ST_RELEASE_DEPS] = ST_EV_RELEASE_DEPS,
	[ST_REAP] = ST_EV_REAP,
	[ST_ORPHANS] = ST_EV_ORPHANS,
	[ST_REQUEUE] = ST_EV_REQUEUE,
	[ST_CANCEL] = ST_EV_CANCEL,
	[ST_CANCEL_CHAIN] = ST_EV_CANCEL_CHAIN,
	[ST_RERUN_ROOT] = ST_EV_RERUN_ROOT,
	[ST_RERUN_DESC] = ST_EV_RERUN_DESC,
};

/* The statement texts of the queue's database. */
static const char *const *
queue_sql_texts(struct queue *q)
{
	return store_driver(q->db) == STORE_POSTGRESQL ? queue_sql_pg :
	    queue_sql_sqlite;
}

/* The cached statement st, prepared on first use; NULL on error. */
struct store_stmt *
queue_sql(struct queue *q, enum queue_st st)
{
	int	rc;

	if (q->st[st] != NULL)
		return q->st[st];
	rc = store_prepare(q->db, queue_sql_texts(q)[st], STORE_KEEP,
	    &q->st[st]);
	if (rc != STORE_OK) {
		queue_err(q, rc, "prepare");
		q->st[st] = NULL;
	}
	return q->st[st];
}

/* Reset a statement for its next use; pass rc through. */
int
queue_sql_done(struct queue *q, struct store_stmt *s, int rc)
{
	(void)q;
	if (s != NULL) {
		store_reset(s);
	}
	return rc;
}

/* Run a statement without parameters or rows; a queue rc. */
int
queue_sql_exec(struct queue *q, enum queue_st st, const char *what)
{
	struct store_stmt	*s;
	int		 rc;

	if ((s = queue_sql(q, st)) == NULL)
		return QUEUE_EIO;
	while ((rc = store_step(s)) == STORE_ROW)
		;
	if (rc != STORE_DONE)
		return queue_sql_done(q, s, queue_err(q, rc, what));
	return queue_sql_done(q, s, QUEUE_OK);
}

/* Bind parameters ?1..?n (an index a statement lacks is ignored). */
void
queue_sql_bind(struct store_stmt *s, const struct queue_arg *a, size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++) {
		if (a[i].type == 'i')
			store_bind_int64(s, (int)i + 1, a[i].i);
		else if (a[i].type == 's')
			store_bind_text(s, (int)i + 1, a[i].s, -1);
	}
}

/* Run a statement without result rows; rows changed in *changed. */
static int
queue_sql_run(struct queue *q, enum queue_st st, const struct queue_arg *a,
    size_t n, int *changed)
{
	struct store_stmt	*s;
	int		 rc;

	if ((s = queue_sql(q, st)) == NULL)
		return QUEUE_EIO;
	queue_sql_bind(s, a, n);
	if ((rc = store_step(s)) != STORE_DONE)
		return queue_sql_done(q, s, queue_err(q, rc, "update"));
	*changed = store_changes(q->db);
	return queue_sql_done(q, s, QUEUE_OK);
}

/* Run the event twin of st (if any): log the changes st is about to make. */
int
queue_sql_log(struct queue *q, enum queue_st st, const struct queue_arg *a,
    size_t n, int *logged)
{
	*logged = -1;
	if (queue_sql_twin[st] == ST_NONE)
		return QUEUE_OK;
	return queue_sql_run(q, queue_sql_twin[st], a, n, logged);
}

/*
 * Run a statement (with its event twin first, if it has one) inside the
 * caller's transaction; *changed = rows changed (may be NULL).
 */
int
queue_sql_change(struct queue *q, enum queue_st st, const struct queue_arg *a,
    size_t n, int *changed)
{
	int	rc, logged, done = 0;

	if ((rc = queue_sql_log(q, st, a, n, &logged)) != QUEUE_OK ||
	    (rc = queue_sql_run(q, st, a, n, &done)) != QUEUE_OK)
		return rc;
	if (logged >= 0 && logged != done)
		return queue_errx(q, QUEUE_EIO, "history out of step: %d events "
		    "for %d changes", logged, done);
	if (changed != NULL)
		*changed = done;
	return QUEUE_OK;
}

/* Log one state change of a job. */
int
queue_sql_event(struct queue *q, int64_t id, int64_t t, int from, int to,
    int attempt, const char *worker, const char *note)
{
	struct queue_arg	a[] = { QUEUE_INT(id), QUEUE_INT(t),
	    QUEUE_INT(from), QUEUE_INT(to), QUEUE_INT(attempt),
	    QUEUE_TEXT(worker), QUEUE_TEXT(note) };
	int			changed;

	return queue_sql_run(q, ST_EVENT, a, sizeof a / sizeof *a, &changed);
}

/* A malloc'd copy of a text column, or NULL. */
static char *
queue_sql_text_dup(struct store_stmt *s, int col, bool *nomem)
{
	const char	*t;
	char		*p;

	if ((t = store_column_text(s, col)) == NULL)
		return NULL;
	if ((p = strdup(t)) == NULL)
		*nomem = true;
	return p;
}

/* Fill a job from a row of QUEUE_JOB_COLS; QUEUE_OK or QUEUE_EIO (memory). */
int
queue_sql_job_read(struct store_stmt *s, struct queue_job *j)
{
	const void	*blob;
	bool		 nomem = false;
	int		 n;

	memset(j, 0, sizeof *j);
	j->id = store_column_int64(s, 0);
	j->lane = queue_sql_text_dup(s, 1, &nomem);
	j->kind = queue_sql_text_dup(s, 2, &nomem);
	blob = store_column_blob(s, 3);
	n = store_column_bytes(s, 3);
	if (blob != NULL && n > 0) {
		if ((j->payload = malloc((size_t)n)) == NULL)
			nomem = true;
		else {
			memcpy(j->payload, blob, (size_t)n);
			j->payload_len = (size_t)n;
		}
	}
	j->state = (enum queue_state)store_column_int(s, 4);
	j->blocked = store_column_int(s, 5) != 0;
	j->priority = store_column_int(s, 6);
	j->attempts = store_column_int(s, 7);
	j->max_attempts = store_column_int(s, 8);
	j->run_after_ms = store_column_int64(s, 9);
	j->lease_until_ms = store_column_int64(s, 10);
	j->lease_gen = store_column_int64(s, 11);
	j->worker = queue_sql_text_dup(s, 12, &nomem);
	j->idem_key = queue_sql_text_dup(s, 13, &nomem);
	j->coalesce_key = queue_sql_text_dup(s, 14, &nomem);
	j->after_job = store_column_int64(s, 15);
	j->last_error = queue_sql_text_dup(s, 16, &nomem);
	j->created_ms = store_column_int64(s, 17);
	j->updated_ms = store_column_int64(s, 18);
	if (nomem) {
		queue_job_clear(j);
		return QUEUE_EIO;
	}
	return QUEUE_OK;
}

/* Add n to a statistics counter, inside the caller's transaction. */
int
queue_sql_counter_add(struct queue *q, const char *name, int64_t n)
{
	struct store_stmt	*s;
	int		 rc;

	if (n == 0)
		return QUEUE_OK;
	if ((s = queue_sql(q, ST_COUNTER_ADD)) == NULL)
		return QUEUE_EIO;
	store_bind_text(s, 1, name, -1);
	store_bind_int64(s, 2, n);
	if ((rc = store_step(s)) != STORE_DONE)
		return queue_sql_done(q, s, queue_err(q, rc, "counter"));
	return queue_sql_done(q, s, QUEUE_OK);
}

/* Finalize every cached statement. */
void
queue_sql_finalize(struct queue *q)
{
	size_t	i;

	for (i = 0; i < ST_COUNT; i++) {
		store_finalize(q->st[i]);
		q->st[i] = NULL;
	}
}
