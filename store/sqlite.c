/*
 * store: the SQLite backend. A thin layer: statements are SQLite's own,
 * result codes are mapped to STORE_*, and the transaction statements are
 * prepared once per connection.
 */
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_int.h"

enum sqlite_tx_st {
	TX_BEGIN_READ,
	TX_BEGIN_WRITE,
	TX_COMMIT,
	TX_ROLLBACK,
	TX__COUNT
};

static const char *const sqlite_tx_sql[TX__COUNT] = {
	[TX_BEGIN_READ] = "BEGIN",
	[TX_BEGIN_WRITE] = "BEGIN IMMEDIATE",
	[TX_COMMIT] = "COMMIT",
	[TX_ROLLBACK] = "ROLLBACK",
};

struct sqlite_store {
	struct store	 base;
	sqlite3		*db;
	sqlite3_stmt	*tx[TX__COUNT];
};

struct sqlite_stmt {
	struct store_stmt	 base;
	sqlite3_stmt		*st;
};

#define DB(s)	(((struct sqlite_store *)(void *)(s))->db)
#define ST(st)	(((struct sqlite_stmt *)(void *)(st))->st)

/* An SQLite result code (extended or not) as a STORE_* code. */
static int
sqlite_rc(int rc)
{
	switch (rc & 0xff) {
	case SQLITE_OK:
		return STORE_OK;
	case SQLITE_ROW:
		return STORE_ROW;
	case SQLITE_DONE:
		return STORE_DONE;
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return STORE_BUSY;
	case SQLITE_CONSTRAINT:
		return STORE_CONSTRAINT;
	case SQLITE_MISMATCH:
	case SQLITE_RANGE:
		return STORE_MISMATCH;
	case SQLITE_FULL:
		return STORE_FULL;
	case SQLITE_IOERR:
		return STORE_IOERR;
	case SQLITE_CORRUPT:
	case SQLITE_NOTADB:
		return STORE_CORRUPT;
	case SQLITE_READONLY:
		return STORE_READONLY;
	case SQLITE_CANTOPEN:
		return STORE_CANTOPEN;
	case SQLITE_NOMEM:
		return STORE_NOMEM;
	default:
		return STORE_ERROR;
	}
}

static int
sqlite_open(struct store **sp, const struct store_conf *c, int flags,
    char **err)
{
	struct sqlite_store	*s;
	int			 oflags, rc;

	if ((s = calloc(1, sizeof *s)) == NULL) {
		store_seterr(err, "out of memory");
		return STORE_NOMEM;
	}
	s->base.ops = &store_sqlite_ops;
	s->base.driver = STORE_SQLITE;
	oflags = SQLITE_OPEN_NOMUTEX | ((flags & STORE_OPEN_READONLY) ?
	    SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE);
	if (flags & STORE_OPEN_CREATE)
		oflags |= SQLITE_OPEN_CREATE;
	if ((rc = sqlite3_open_v2(c->path, &s->db, oflags, NULL)) !=
	    SQLITE_OK) {
		store_seterr(err, "%s", s->db != NULL ? sqlite3_errmsg(s->db) :
		    sqlite3_errstr(rc));
		sqlite3_close(s->db);
		free(s);
		return sqlite_rc(rc);
	}
	sqlite3_extended_result_codes(s->db, 1);
	*sp = &s->base;
	return STORE_OK;
}

static void
sqlite_close(struct store *b)
{
	struct sqlite_store	*s = (struct sqlite_store *)(void *)b;
	size_t			 i;

	for (i = 0; i < TX__COUNT; i++)
		sqlite3_finalize(s->tx[i]);
	sqlite3_close(s->db);
	free(s);
}

static struct sqlite3 *
sqlite_handle(struct store *s)
{
	return DB(s);
}

static int
sqlite_errcode(struct store *s)
{
	return sqlite_rc(sqlite3_errcode(DB(s)));
}

static const char *
sqlite_errmsg(struct store *s)
{
	return sqlite3_errmsg(DB(s));
}

static int
sqlite_errno(struct store *s)
{
	return sqlite3_system_errno(DB(s));
}

static int
sqlite_busy_timeout(struct store *s, int ms)
{
	return sqlite_rc(sqlite3_busy_timeout(DB(s), ms));
}

static int
sqlite_exec(struct store *s, const char *sql)
{
	return sqlite_rc(sqlite3_exec(DB(s), sql, NULL, NULL, NULL));
}

static int
sqlite_changes(struct store *s)
{
	return sqlite3_changes(DB(s));
}

static bool
sqlite_in_tx(struct store *s)
{
	return !sqlite3_get_autocommit(DB(s));
}

/* Run one of the connection's transaction statements. */
static int
sqlite_tx(struct store *b, enum sqlite_tx_st which)
{
	struct sqlite_store	*s = (struct sqlite_store *)(void *)b;
	int			 rc;

	if (s->tx[which] == NULL && (rc = sqlite3_prepare_v3(s->db,
	    sqlite_tx_sql[which], -1, SQLITE_PREPARE_PERSISTENT,
	    &s->tx[which], NULL)) != SQLITE_OK)
		return sqlite_rc(rc);
	while ((rc = sqlite3_step(s->tx[which])) == SQLITE_ROW)
		;
	sqlite3_reset(s->tx[which]);
	return rc == SQLITE_DONE ? STORE_OK : sqlite_rc(rc);
}

static int
sqlite_begin(struct store *s, enum store_tx mode)
{
	return sqlite_tx(s, mode == STORE_TX_WRITE ? TX_BEGIN_WRITE :
	    TX_BEGIN_READ);
}

static int
sqlite_commit(struct store *s)
{
	return sqlite_tx(s, TX_COMMIT);
}

static int
sqlite_rollback(struct store *s)
{
	return sqlite_tx(s, TX_ROLLBACK);
}

static int
sqlite_prepare(struct store *s, const char *sql, int flags,
    struct store_stmt **stp)
{
	struct sqlite_stmt	*st;
	int			 rc;

	*stp = NULL;
	if ((st = calloc(1, sizeof *st)) == NULL)
		return STORE_NOMEM;
	rc = sqlite3_prepare_v3(DB(s), sql, -1, (flags & STORE_KEEP) ?
	    SQLITE_PREPARE_PERSISTENT : 0, &st->st, NULL);
	if (rc != SQLITE_OK || st->st == NULL) {
		sqlite3_finalize(st->st);
		free(st);
		return rc != SQLITE_OK ? sqlite_rc(rc) : STORE_ERROR;
	}
	st->base.store = s;
	*stp = &st->base;
	return STORE_OK;
}

static void
sqlite_finalize(struct store_stmt *st)
{
	sqlite3_finalize(ST(st));
	free(st);
}

static int
sqlite_reset(struct store_stmt *st)
{
	int	rc;

	rc = sqlite3_reset(ST(st));
	sqlite3_clear_bindings(ST(st));
	return sqlite_rc(rc);
}

static int
sqlite_bind_int64(struct store_stmt *st, int i, int64_t v)
{
	return sqlite_rc(sqlite3_bind_int64(ST(st), i, v));
}

static int
sqlite_bind_text(struct store_stmt *st, int i, const char *s, int len,
    bool copy)
{
	return sqlite_rc(sqlite3_bind_text(ST(st), i, s, len, copy ?
	    SQLITE_TRANSIENT : SQLITE_STATIC));
}

static int
sqlite_bind_blob(struct store_stmt *st, int i, const void *p, int len)
{
	return sqlite_rc(sqlite3_bind_blob(ST(st), i, p, len, SQLITE_STATIC));
}

static int
sqlite_bind_null(struct store_stmt *st, int i)
{
	return sqlite_rc(sqlite3_bind_null(ST(st), i));
}

static int
sqlite_step(struct store_stmt *st)
{
	return sqlite_rc(sqlite3_step(ST(st)));
}

static int
sqlite_column_count(struct store_stmt *st)
{
	return sqlite3_column_count(ST(st));
}

static const char *
sqlite_column_name(struct store_stmt *st, int col)
{
	return sqlite3_column_name(ST(st), col);
}

static bool
sqlite_column_is_null(struct store_stmt *st, int col)
{
	return sqlite3_column_type(ST(st), col) == SQLITE_NULL;
}

static int64_t
sqlite_column_int64(struct store_stmt *st, int col)
{
	return sqlite3_column_int64(ST(st), col);
}

static const char *
sqlite_column_text(struct store_stmt *st, int col)
{
	return (const char *)sqlite3_column_text(ST(st), col);
}

static const void *
sqlite_column_blob(struct store_stmt *st, int col)
{
	return sqlite3_column_blob(ST(st), col);
}

static int
sqlite_column_bytes(struct store_stmt *st, int col)
{
	return sqlite3_column_bytes(ST(st), col);
}

const struct store_ops store_sqlite_ops = {
	.open = sqlite_open,
	.close = sqlite_close,
	.sqlite = sqlite_handle,
	.errcode = sqlite_errcode,
	.errmsg = sqlite_errmsg,
	.err_no = sqlite_errno,
	.busy_timeout = sqlite_busy_timeout,
	.exec = sqlite_exec,
	.changes = sqlite_changes,
	.in_tx = sqlite_in_tx,
	.begin = sqlite_begin,
	.commit = sqlite_commit,
	.rollback = sqlite_rollback,
	.prepare = sqlite_prepare,
	.finalize = sqlite_finalize,
	.reset = sqlite_reset,
	.bind_int64 = sqlite_bind_int64,
	.bind_text = sqlite_bind_text,
	.bind_blob = sqlite_bind_blob,
	.bind_null = sqlite_bind_null,
	.step = sqlite_step,
	.column_count = sqlite_column_count,
	.column_name = sqlite_column_name,
	.column_is_null = sqlite_column_is_null,
	.column_int64 = sqlite_column_int64,
	.column_text = sqlite_column_text,
	.column_blob = sqlite_column_blob,
	.column_bytes = sqlite_column_bytes,
};
