/*
 * queue: waking the queue's owner when jobs arrive, and the session's
 * policies on PostgreSQL.
 *
 * On PostgreSQL the schema's triggers notify channel QUEUE_PG_CHANNEL when
 * jobs are added, or become due again by an update, from any process or
 * instance. queue_wake_fd() opens a connection of its own that LISTENs
 * there (a listener cannot share the queue's connection: a notification
 * read along with a statement's answer would not wake the loop). SQLite
 * has no such thing: the fd is -1 and the owner polls with its timer.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "queue/queue_int.h"

/* The descriptor that becomes readable when jobs arrive; -1 for none. */
int
queue_wake_fd(struct queue *q)
{
	struct store_conf	 c = { STORE_POSTGRESQL, NULL, q->dsn };
	char			*err = NULL;

	if (store_driver(q->db) != STORE_POSTGRESQL)
		return -1;
	if (q->wake == NULL) {
		if (store_open(&q->wake, &c, 0, &err) != STORE_OK) {
			queue_errx(q, QUEUE_EIO, "wake-up connection: %s",
			    err != NULL ? err : "out of memory");
			free(err);
			return -1;
		}
		if (store_listen(q->wake, QUEUE_PG_CHANNEL) != STORE_OK) {
			queue_errx(q, QUEUE_EIO, "LISTEN: %s",
			    store_errmsg(q->wake));
			store_close(q->wake);
			q->wake = NULL;
			return -1;
		}
	}
	return store_notify_fd(q->wake);
}

/* After the fd woke: how many notifications (0: none), -1 when lost. */
int
queue_woken(struct queue *q)
{
	int	n;

	if (q->wake == NULL)
		return 0;
	if ((n = store_notified(q->wake)) < 0)
		queue_errx(q, QUEUE_EIO, "wake-up connection: %s",
		    store_errmsg(q->wake));
	return n;
}

/*
 * PostgreSQL: load the policies into the session's table queue_policy,
 * which queue_lease_ms() and queue_backoff_ms() read (kind '' is the
 * default). Again after a reconnection (a new session has no table).
 */
int
queue_pg_policies(struct queue *q)
{
	struct store_stmt	*st;
	const struct queue_policy *p;
	size_t			 i;
	int			 rc;

	if (store_driver(q->db) != STORE_POSTGRESQL)
		return QUEUE_OK;
	q->session = store_session(q->db);
	q->policies_stale = false;
	if ((rc = store_exec(q->db, "CREATE TEMP TABLE IF NOT EXISTS "
	    "queue_policy (kind text PRIMARY KEY, lease_ms bigint, base_ms "
	    "bigint, cap_ms bigint, jitter integer); DELETE FROM "
	    "pg_temp.queue_policy")) != STORE_OK)
		return queue_err(q, rc, "policies");
	if ((rc = store_prepare(q->db, "INSERT INTO pg_temp.queue_policy "
	    "VALUES (?1, ?2, ?3, ?4, ?5)", 0, &st)) != STORE_OK)
		return queue_err(q, rc, "policies");
	for (i = 0; i < q->npolicies && rc == STORE_OK; i++) {
		p = &q->policies[i].p;
		store_bind_text(st, 1, i == 0 ? "" : q->policies[i].kind, -1);
		store_bind_int64(st, 2, p->lease_ms);
		store_bind_int64(st, 3, p->backoff_base_ms);
		store_bind_int64(st, 4, p->backoff_cap_ms);
		store_bind_int(st, 5, p->jitter_pct);
		if ((rc = store_step(st)) == STORE_DONE)
			rc = STORE_OK;
		store_reset(st);
	}
	store_finalize(st);
	return rc == STORE_OK ? QUEUE_OK : queue_err(q, rc, "policies");
}
