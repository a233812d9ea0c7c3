/*
 * queue: transactions. Every write is one BEGIN IMMEDIATE transaction, or a
 * savepoint inside the caller's; lock waits are bounded by busy_ms; the WAL
 * is checkpointed after the writer lock is released.
 */
#include <time.h>
#include <sqlite3.h>

#include "queue/queue_int.h"

/*
 * Wait for a lock held by another process: short sleeps growing from 20 us
 * to about 1.3 ms, with jitter, until busy_ms have passed since this wait
 * (or the transaction that waits) began.
 */
static int
queue_busy_cb(void *arg, int count)
{
	struct queue	*q = arg;
	struct timespec	 ts;
	int64_t		 now = queue_mono_ms(), left, us;

	if (count == 0 && !q->busy_fixed)
		q->busy_start = now;
	if ((left = q->busy_ms - (now - q->busy_start)) <= 0)
		return 0;
	us = (int64_t)20 << (count < 6 ? count : 6);
	us = us / 2 + (int64_t)(queue_rand(q) % (uint64_t)us);
	if (us > left * 1000)
		us = left * 1000;
	ts.tv_sec = us / 1000000;
	ts.tv_nsec = (us % 1000000) * 1000;
	nanosleep(&ts, NULL);
	return 1;
}

/*
 * BEGIN IMMEDIATE, first in line among this process's threads (lock.c),
 * then against other processes (the busy handler), within one budget.
 */
static int
queue_tx_begin_immediate(struct queue *q)
{
	int	rc;

	q->busy_start = queue_mono_ms();
	q->busy_fixed = true;
	if (queue_flock_lock(q->flock, q->busy_ms) != 0) {
		q->busy_fixed = false;
		return queue_errx(q, QUEUE_EBUSY, "begin transaction: another "
		    "thread of this process held the queue for %d ms",
		    q->busy_ms);
	}
	if (store_driver(q->db) == STORE_POSTGRESQL) {
		/* A new session (the server was lost) has no policies yet. */
		if ((q->policies_stale || store_session(q->db) != q->session) &&
		    (rc = queue_pg_policies(q)) != QUEUE_OK) {
			q->busy_fixed = false;
			queue_flock_unlock(q->flock);
			return rc;
		}
		/* BEGIN and the store-wide writer lock (store.h). */
		if ((rc = store_begin(q->db, STORE_TX_WRITE)) != STORE_OK)
			rc = queue_err(q, rc, "begin transaction");
	} else
		rc = queue_sql_exec(q, ST_BEGIN, "begin transaction");
	q->busy_fixed = false;
	if (rc != QUEUE_OK)
		queue_flock_unlock(q->flock);
	else
		q->flocked = true;
	return rc;
}

/*
 * Enter a transaction level: BEGIN IMMEDIATE, or a savepoint inside one
 * (ours, or one the caller began on queue_db() itself).
 */
int
queue_tx_enter(struct queue *q)
{
	int	rc;

	if (q->depth == 0 && store_in_tx(q->db))
		q->foreign = true;
	if (q->depth > 0 || q->foreign) {
		if (q->broken != 0)
			return q->broken;
		rc = queue_sql_exec(q, ST_SAVEPOINT, "savepoint");
	} else
		rc = queue_tx_begin_immediate(q);
	if (rc == QUEUE_OK)
		q->depth++;
	return rc;
}

/* Roll back whatever is open, keeping the last error message. */
static void
queue_tx_abort(struct queue *q)
{
	if (store_in_tx(q->db))
		store_rollback(q->db);
}

/*
 * Copy the WAL back into the database once it has grown (no waiting), or
 * ask the checkpointer to, once per QUEUE_CHECKPOINT_PAGES of growth. Its
 * checkpoints run beside new commits, so under a steady stream of them the
 * log is never all copied back and never starts over: at
 * QUEUE_CHECKPOINT_CAP this connection copies back the little that is
 * left itself, and the next commit starts the log over.
 */
static void
queue_checkpoint(struct queue *q)
{
	int	pages = q->wal_pages;

	if (store_sqlite(q->db) == NULL)	/* no WAL on PostgreSQL */
		return;
	if (pages < q->ckpt_asked)	/* the log started over */
		q->ckpt_asked = 0;
	if (pages < QUEUE_CHECKPOINT_PAGES)
		return;
	if (q->ckpt_fn == NULL || pages >= QUEUE_CHECKPOINT_CAP) {
		q->wal_pages = q->ckpt_asked = 0;
		sqlite3_wal_checkpoint_v2(store_sqlite(q->db), NULL,
		    SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
	} else if (pages - q->ckpt_asked >= QUEUE_CHECKPOINT_PAGES) {
		q->ckpt_asked = pages;
		q->ckpt_fn(q->ckpt_arg, pages);
	}
}

/* Checkpoints made elsewhere (see queue.h). */
void
queue_set_checkpointer(struct queue *q, void (*fn)(void *, int), void *arg)
{
	q->ckpt_fn = fn;
	q->ckpt_arg = arg;
	q->ckpt_asked = 0;
}

/*
 * After each commit: note the WAL size. The checkpoint waits until this
 * process's writer lock is free, so the other threads need not wait for
 * its I/O (SQLite's automatic checkpoint would run inside COMMIT).
 */
static int
queue_wal_cb(void *arg, struct sqlite3 *db, const char *name, int pages)
{
	struct queue	*q = arg;

	(void)db;
	(void)name;
	q->wal_pages = pages;
	if (!q->flocked)
		queue_checkpoint(q);
	return SQLITE_OK;
}

/* The outer transaction is over: let the next writer of this process in. */
static void
queue_tx_done(struct queue *q)
{
	if (q->flocked) {
		q->flocked = false;
		queue_flock_unlock(q->flock);
		queue_checkpoint(q);
	}
}

/* Leave a savepoint level: release it, rolled back first if rc < 0. */
static int
queue_tx_leave_savepoint(struct queue *q, int rc)
{
	int	rc2;

	/* A disk-full or I/O error may have rolled back everything. */
	if (q->broken == 0 && !store_in_tx(q->db))
		q->broken = rc < 0 ? rc : QUEUE_EIO;
	if (q->broken != 0)
		return rc < 0 ? rc : q->broken;
	if (rc < 0 && (rc2 = queue_sql_exec(q, ST_ROLLBACK_SP,
	    "rollback to savepoint")) != QUEUE_OK)
		q->broken = rc2;
	if ((rc2 = queue_sql_exec(q, ST_RELEASE_SP, "release savepoint")) !=
	    QUEUE_OK) {
		if (q->broken == 0)
			q->broken = rc2;
		if (rc >= 0)
			rc = rc2;
	}
	return rc;
}

/*
 * COMMIT. On PostgreSQL through the store, which reports a transaction an
 * earlier error aborted (its COMMIT rolls back) as the failure it is.
 */
static int
queue_tx_commit_top(struct queue *q)
{
	int	rc;

	if (store_driver(q->db) != STORE_POSTGRESQL)
		return queue_sql_exec(q, ST_COMMIT, "commit");
	if ((rc = store_commit(q->db)) != STORE_OK)
		return queue_err(q, rc, "commit");
	return QUEUE_OK;
}

/* Leave the outer level: COMMIT when rc >= 0, else ROLLBACK. */
static int
queue_tx_leave_top(struct queue *q, int rc)
{
	int	rc2;

	if (q->broken != 0) {
		if (rc >= 0)
			rc = q->broken;
		q->broken = 0;
	} else if (rc >= 0) {
		if (!store_in_tx(q->db))
			rc = queue_errx(q, QUEUE_EIO, "the transaction was "
			    "rolled back by an earlier error");
		else if ((rc2 = queue_tx_commit_top(q)) != QUEUE_OK)
			rc = rc2;
	}
	if (rc < 0)
		queue_tx_abort(q);
	queue_tx_done(q);
	return rc;
}

/* Leave a transaction level: keep its work when rc >= 0, else undo it. */
int
queue_tx_leave(struct queue *q, int rc)
{
	if (q->depth == 0)
		return rc;
	if (--q->depth > 0)
		return queue_tx_leave_savepoint(q, rc);
	if (q->foreign) {
		/* The caller's own transaction: it commits or rolls back. */
		rc = queue_tx_leave_savepoint(q, rc);
		q->foreign = false;
		q->broken = 0;
		return rc;
	}
	return queue_tx_leave_top(q, rc);
}

/* Begin a caller transaction. */
int
queue_tx_begin(struct queue *q)
{
	return queue_tx_enter(q);
}

/* Commit a caller transaction; on failure it is rolled back. */
int
queue_tx_commit(struct queue *q)
{
	if (q->depth == 0)
		return queue_errx(q, QUEUE_EINVAL, "no transaction to commit");
	return queue_tx_leave(q, QUEUE_OK);
}

/* Roll back a caller transaction. */
void
queue_tx_rollback(struct queue *q)
{
	if (q->depth > 0)
		queue_tx_leave(q, QUEUE_EINVAL);
}

/* Install the lock-wait and commit hooks on a new connection. */
void
queue_tx_hooks(struct queue *q)
{
	sqlite3_busy_handler(store_sqlite(q->db), queue_busy_cb, q);
	sqlite3_wal_hook(store_sqlite(q->db), queue_wal_cb, q);
}

/* Closing: roll back whatever is open and release the writer lock. */
void
queue_tx_close(struct queue *q)
{
	queue_tx_abort(q);
	queue_tx_done(q);
}
