/*
 * Our messageIDs, per NCS and port: increasing from 1, wrapping to 1 after
 * 2^31-1, and never reused across a restart. The database keeps the last ID
 * of the reserved block (msgid.reserved_upto); a restart continues after it,
 * so at most one block is skipped and one write is made per block. That
 * write is always durable (synchronous=FULL), even on a relaxed connection.
 * A block is taken by the database itself (one statement advances
 * reserved_upto and returns it, under the writer lock), so that counters
 * of two instances on one database never hand out the same id: a block
 * taken while another instance took the one after ours is not contiguous,
 * and is used once the current one runs out.
 *
 * With a bookkeeping thread (msgid_set_worker) the next block is stored
 * there while half of the current one is left, so the fsync never holds up
 * the loop; an id is only handed out once its block is committed.
 */
#include <stdlib.h>

#include "gateway/gateway.h"

/* The next block, being stored on the bookkeeping thread. */
struct msgid_ahead {
	struct msgid	*m;		/* NULL once the counter is freed */
	char		*ncs;
	enum gw_port	 port;
	int32_t		 block;
	int32_t		 upto;		/* the block's last id, once taken */
};

/* id advanced by n, wrapping within 1..MSGID_MAX. */
int32_t
msgid_advance(int32_t id, int32_t n)
{
	int64_t	v = ((int64_t)id - 1 + n) % MSGID_MAX;

	if (v < 0)
		v += MSGID_MAX;
	return (int32_t)(v + 1);
}

/*
 * The counter for one NCS and port: its first id is the first of the next
 * block taken, after the stored one.
 */
struct msgid *
msgid_new(struct gwdb *g, const char *ncs, enum gw_port port, int32_t block)
{
	struct msgid	*m;

	m = xcalloc(1, sizeof *m);
	m->db = g;
	m->ncs = xstrdup(ncs);
	m->port = port;
	m->block = block > 0 ? block : MSGID_BLOCK;
	m->remaining = 0;
	return m;
}

/* Free a counter. */
void
msgid_free(struct msgid *m)
{
	if (m == NULL)
		return;
	if (m->ahead != NULL)
		m->ahead->m = NULL;	/* its result is dropped */
	free(m->ncs);
	free(m);
}

/*
 * Take the next block of n ids after the stored one (durable, in its own
 * transaction); *upto gets its last id.
 */
static int
msgid_take(struct gwdb *g, const char *ncs, enum gw_port port, int32_t n,
    int32_t *upto)
{
	struct store_stmt	*st;
	int		 rc;

	if ((rc = gwdb_durable(g, true)) != QUEUE_OK)
		return rc;
	if ((rc = queue_tx_begin(g->q)) != QUEUE_OK) {
		gwdb_durable(g, false);
		return rc;
	}
	st = gwdb_stmt(g, ST_MSGID_TAKE);
	store_bind_text(st, 1, ncs, -1);
	store_bind_text(st, 2, gw_port_name(port), -1);
	store_bind_int(st, 3, n);
	if ((rc = store_step(st)) == STORE_ROW) {
		*upto = store_column_int(st, 0);
		rc = STORE_DONE;
	}
	store_reset(st);
	if ((rc = gwdb_rc(rc)) != QUEUE_OK)
		queue_tx_rollback(g->q);
	else
		rc = queue_tx_commit(g->q);
	gwdb_durable(g, false);
	return rc;
}

/* Reserve ahead on the bookkeeping thread from now on. */
void
msgid_set_worker(struct msgid *m, struct dbw *d, msgid_ready_fn ready,
    void *arg)
{
	m->dbw = d;
	m->ready = ready;
	m->ready_arg = arg;
}

/* The bookkeeping thread: take the block. */
static int
msgid_ahead_run(struct gwdb *g, void *arg)
{
	struct msgid_ahead	*a = arg;

	return msgid_take(g, a->ncs, a->port, a->block, &a->upto);
}

/* A block taken (its last id upto) comes after the ids left. */
static void
msgid_add_block(struct msgid *m, int32_t upto)
{
	int32_t	first = msgid_advance(upto, 1 - m->block);

	if (m->remaining == 0) {
		m->next = first;
		m->remaining = m->block;
	} else if (first == msgid_advance(m->next, m->remaining))
		m->remaining += m->block;
	else {
		/* another counter took the ids between: this block later */
		m->then = first;
		m->then_n = m->block;
	}
}

/* Back on the loop: the ids of the block may be used. */
static void
msgid_ahead_done(void *arg, int rc)
{
	struct msgid_ahead	*a = arg;
	struct msgid		*m = a->m;
	bool			 ran_out;

	if (m != NULL) {
		m->ahead = NULL;
		ran_out = m->remaining == 0;
		if (rc == QUEUE_OK)
			msgid_add_block(m, a->upto);
		else
			log_event_rl(LL_WARN, "msgid.error", m->ncs, "ncs=%s "
			    "port=%s error=%s", log_q(m->ncs),
			    gw_port_name(m->port), log_q(queue_strerror(rc)));
		if (ran_out && m->ready != NULL)
			m->ready(m->ready_arg, m->port);
	}
	free(a->ncs);
	free(a);
}

/* Take the block after the current one on the bookkeeping thread. */
static void
msgid_reserve_ahead(struct msgid *m)
{
	struct msgid_ahead	*a;

	a = xcalloc(1, sizeof *a);
	a->m = m;
	a->ncs = xstrdup(m->ncs);
	a->port = m->port;
	a->block = m->block;
	m->ahead = a;
	dbw_submit(m->dbw, msgid_ahead_run, msgid_ahead_done, a);
}

/* The next messageID, or 0 when no reserved id is left. */
int32_t
msgid_next(struct msgid *m)
{
	int32_t	id, upto;
	int	rc;

	if (m->remaining == 0 && m->then_n > 0) {
		m->next = m->then;
		m->remaining = m->then_n;
		m->then_n = 0;
	}
	if (m->remaining == 0) {
		if (m->ahead != NULL)
			return 0;	/* m->ready follows */
		rc = msgid_take(m->db, m->ncs, m->port, m->block, &upto);
		if (rc != QUEUE_OK) {
			log_event_rl(LL_WARN, "msgid.error", m->ncs, "ncs=%s "
			    "port=%s error=%s", log_q(m->ncs),
			    gw_port_name(m->port), log_q(queue_strerror(rc)));
			return 0;
		}
		msgid_add_block(m, upto);
	}
	id = m->next;
	m->next = msgid_advance(m->next, 1);
	m->remaining--;
	if (m->dbw != NULL && m->ahead == NULL && m->then_n == 0 &&
	    m->remaining < m->block / 2)
		msgid_reserve_ahead(m);
	return id;
}
