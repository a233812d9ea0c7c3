/*
 * Our messageIDs, per NCS and port: increasing from 1, wrapping to 1 after
 * 2^31-1, and never reused across a restart. The database keeps the last ID
 * of the reserved block (msgid.reserved_upto); a restart continues after it,
 * so at most one block is skipped and one write is made per block. That
 * write is always durable (synchronous=FULL), even on a relaxed connection.
 */
#include <sqlite3.h>
#include <stdlib.h>

#include "gateway/gateway.h"

/* id advanced by n, wrapping within 1..MSGID_MAX. */
int32_t
msgid_advance(int32_t id, int32_t n)
{
	int64_t	v = ((int64_t)id - 1 + n) % MSGID_MAX;

	if (v < 0)
		v += MSGID_MAX;
	return (int32_t)(v + 1);
}

/* The counter for one NCS and port, continuing after the stored block. */
struct msgid *
msgid_new(struct gwdb *g, const char *ncs, enum gw_port port, int32_t block)
{
	struct msgid	*m;
	sqlite3_stmt	*st;
	int64_t		 upto = 0;

	st = gwdb_stmt(g, ST_MSGID_GET);
	sqlite3_bind_text(st, 1, ncs, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, gw_port_name(port), -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW)
		upto = sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	if (upto < 0 || upto > MSGID_MAX)
		upto = 0;
	m = xcalloc(1, sizeof *m);
	m->db = g;
	m->ncs = xstrdup(ncs);
	m->port = port;
	m->block = block > 0 ? block : MSGID_BLOCK;
	m->next = msgid_advance((int32_t)upto, 1);
	m->remaining = 0;
	return m;
}

/* Free a counter. */
void
msgid_free(struct msgid *m)
{
	if (m == NULL)
		return;
	free(m->ncs);
	free(m);
}

/* Store the end of a new block. */
static int
msgid_reserve(struct msgid *m, int32_t upto)
{
	sqlite3_stmt	*st;
	int		 rc;

	if ((rc = gwdb_durable(m->db, true)) != QUEUE_OK)
		return rc;
	if ((rc = queue_tx_begin(m->db->q)) != QUEUE_OK) {
		gwdb_durable(m->db, false);
		return rc;
	}
	st = gwdb_stmt(m->db, ST_MSGID_PUT);
	sqlite3_bind_text(st, 1, m->ncs, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, gw_port_name(m->port), -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, upto);
	if ((rc = gwdb_exec_stmt(m->db, st)) != QUEUE_OK)
		queue_tx_rollback(m->db->q);
	else
		rc = queue_tx_commit(m->db->q);
	gwdb_durable(m->db, false);
	return rc;
}

/* The next messageID, or 0 when a new block could not be stored. */
int32_t
msgid_next(struct msgid *m)
{
	int32_t	id, upto;
	int	rc;

	if (m->remaining == 0) {
		upto = msgid_advance(m->next, m->block - 1);
		if ((rc = msgid_reserve(m, upto)) != QUEUE_OK) {
			log_event(LL_WARN, "msgid.error", "ncs=%s port=%s "
			    "error=%s", m->ncs, gw_port_name(m->port),
			    log_q(queue_strerror(rc)));
			return 0;
		}
		m->remaining = m->block;
	}
	id = m->next;
	m->next = msgid_advance(m->next, 1);
	m->remaining--;
	return id;
}
