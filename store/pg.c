/*
 * store: the PostgreSQL backend, through libpq.
 *
 * Statements: the text's ? and ?NNN placeholders become $N (outside quoted
 * strings, quoted identifiers, dollar-quoted strings and comments; a $N
 * already there counts as parameter N), and the statement is prepared on
 * the server once per connection (PQprepare) under a name of its own, so a
 * syntax error or a missing table shows at prepare as on SQLite. A
 * parameter below the highest index that the text never names is declared
 * text and ignored. Parameters go as text, blobs as binary (bytea).
 *
 * Results come whole (PQexecPrepared's result), so that other statements of
 * the same connection may run while one is between rows, as on SQLite.
 * Columns are read as text: a boolean reads as 1 or 0, a bytea column is
 * decoded (text, blob and bytes give its bytes).
 *
 * Transactions: STORE_TX_WRITE is BEGIN; SELECT pg_advisory_xact_lock(key)
 * (store.h). Unlike SQLite, an error inside a transaction aborts the whole
 * transaction: every later statement fails until the rollback, and a
 * COMMIT of it fails with the code of the first error.
 *
 * Waits are bounded: a statement's answer is awaited at most the lock wait
 * (store_busy_timeout, default PG_LOCK_MS) plus the answer timeout
 * (store_answer_timeout, default PG_ANSWER_MS); past that, or
 * when the server goes away, the connection counts as lost (STORE_LOST),
 * the transaction with it. The next call outside a transaction connects
 * again (prepared statements are prepared again when next used, LISTENs
 * are renewed).
 *
 * Errors map from SQLSTATE: class 23 constraint, 40001/40P01/55P03 busy,
 * 53100 full, 08 and 57P0x lost, 25006 read-only, 22 mismatch, 58030 I/O,
 * XX001/XX002 corrupt. A password is never part of a message: libpq's
 * messages do not carry one and the dsn is never printed.
 */
#include <errno.h>
#include <inttypes.h>
#include <libpq-fe.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "store/store_int.h"

#define PG_LOCK_MS	60000	/* default lock wait (lock_timeout) */
#define PG_ANSWER_MS	30000	/* an answer's time beyond the lock wait */
#define PG_CONNECT_S	"10"	/* connect_timeout unless the dsn has one */
#define PG_MAX_PARAMS	999	/* as SQLite's default ?NNN limit */
#define PG_MAX_LISTEN	8

/* Type OIDs (pg_type) read specially. */
#define PG_BOOLOID	16
#define PG_BYTEAOID	17
#define PG_TEXTOID	25

struct pg_param {
	const char	*val;	/* NULL: SQL NULL */
	int		 len;
	int		 fmt;	/* 0 text, 1 binary */
	char		*own;	/* a copy this parameter owns */
	char		 num[24];
};

struct pg_store {
	struct store	 base;
	PGconn		*conn;
	char		*dsn;
	bool		 lost;		/* the connection is gone or stuck */
	bool		 tx_lost;	/* ... with a transaction open */
	bool		 tx_before;	/* one was open before this call */
	int		 abort_code;	/* why the open transaction failed */
	unsigned	 gen;		/* connection generation */
	unsigned	 next_name;
	int		 lock_ms;
	int		 answer_ms;
	bool		 readonly;
	int		 code;
	char		 msg[512];
	int		 changes;
	char		*listen[PG_MAX_LISTEN];
	int		 nlisten;
	char		**dealloc;	/* statements to DEALLOCATE */
	int		 ndealloc;
};

struct pg_stmt {
	struct store_stmt	 base;
	char			 name[24];
	char			*sql;		/* with $N placeholders */
	unsigned		 gen;		/* prepared in this session */
	int			 nparams;
	Oid			*types;
	struct pg_param		*params;
	PGresult		*res;		/* the current result */
	PGresult		*desc;		/* its description, lazily */
	int			 row;		/* current row; -1 before */
	bool			 done;
	int			 bcol_row;	/* row of the bytea cache */
	unsigned char		**bcol;
	size_t			*bcol_len;
	int			 ncols;		/* size of bcol */
};

#define PS(s)	((struct pg_store *)(void *)(s))
#define PST(st)	((struct pg_stmt *)(void *)(st))

static int	pg_exec(struct store *, const char *);
static int	pg_commit(struct store *);
static int	pg_rollback(struct store *);

/* Record an error: code and words. */
static int
pg_fail(struct pg_store *s, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int
pg_fail(struct pg_store *s, int code, const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	vsnprintf(s->msg, sizeof s->msg, fmt, ap);
	va_end(ap);
	s->code = code;
	return code;
}

/* libpq's text without its trailing newline. */
static void
pg_chomp(char *m)
{
	size_t	n = strlen(m);

	while (n > 0 && (m[n - 1] == '\n' || m[n - 1] == ' '))
		m[--n] = '\0';
}

/* An SQLSTATE as a STORE_* code. */
static int
pg_sqlstate(const char *st)
{
	if (st == NULL || strlen(st) != 5)
		return STORE_ERROR;
	if (strncmp(st, "23", 2) == 0)
		return STORE_CONSTRAINT;
	if (strcmp(st, "40001") == 0 || strcmp(st, "40P01") == 0 ||
	    strcmp(st, "55P03") == 0)
		return STORE_BUSY;
	if (strcmp(st, "53100") == 0)
		return STORE_FULL;
	if (strcmp(st, "53200") == 0)
		return STORE_NOMEM;
	if (strncmp(st, "08", 2) == 0 || strcmp(st, "57P01") == 0 ||
	    strcmp(st, "57P02") == 0 || strcmp(st, "57P03") == 0)
		return STORE_LOST;
	if (strcmp(st, "25006") == 0)
		return STORE_READONLY;
	if (strncmp(st, "22", 2) == 0)
		return STORE_MISMATCH;
	if (strcmp(st, "58030") == 0)
		return STORE_IOERR;
	if (strcmp(st, "XX001") == 0 || strcmp(st, "XX002") == 0)
		return STORE_CORRUPT;
	return STORE_ERROR;
}

/* Milliseconds of a monotonic clock. */
static int64_t
pg_now_ms(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The connection is gone: remember whether a transaction went with it. */
static int
pg_lost(struct pg_store *s, const char *why)
{
	if (!s->lost)
		s->tx_lost = s->tx_lost || s->tx_before;
	s->lost = true;
	return pg_fail(s, STORE_LOST, "connection to PostgreSQL lost: %s",
	    why);
}

/*
 * Wait for the answer to what was sent, within the lock wait plus the
 * answer timeout. Returns the first error result, else the last result (NULL:
 * lost, the error recorded).
 */
static PGresult *
pg_wait(struct pg_store *s)
{
	struct pollfd	 pfd;
	PGresult	*r, *keep = NULL;
	int64_t		 end;
	int		 left, n;
	char		 why[256];

	end = pg_now_ms() + s->lock_ms + s->answer_ms;
	for (;;) {
		while (PQisBusy(s->conn)) {
			left = (int)(end - pg_now_ms());
			if (left <= 0) {
				PQclear(keep);
				pg_lost(s, "no answer in time");
				return NULL;
			}
			pfd.fd = PQsocket(s->conn);
			pfd.events = POLLIN;
			n = poll(&pfd, 1, left);
			if (n < 0 && errno != EINTR) {
				PQclear(keep);
				pg_lost(s, strerror(errno));
				return NULL;
			}
			if (n > 0 && !PQconsumeInput(s->conn)) {
				snprintf(why, sizeof why, "%s",
				    PQerrorMessage(s->conn));
				pg_chomp(why);
				PQclear(keep);
				pg_lost(s, why);
				return NULL;
			}
		}
		if ((r = PQgetResult(s->conn)) == NULL)
			break;
		if (keep != NULL && PQresultStatus(keep) ==
		    PGRES_FATAL_ERROR) {
			PQclear(r);
			continue;
		}
		PQclear(keep);
		keep = r;
	}
	if (keep == NULL || PQstatus(s->conn) == CONNECTION_BAD) {
		snprintf(why, sizeof why, "%s", PQerrorMessage(s->conn));
		pg_chomp(why);
		PQclear(keep);
		pg_lost(s, why[0] != '\0' ? why : "no result");
		return NULL;
	}
	return keep;
}

/* Note the rows an INSERT, UPDATE, DELETE or MERGE changed. */
static void
pg_note_changes(struct pg_store *s, PGresult *r)
{
	const char	*tag = PQcmdStatus(r);

	if (strncmp(tag, "INSERT ", 7) == 0 || strncmp(tag, "UPDATE ", 7) ==
	    0 || strncmp(tag, "DELETE ", 7) == 0 || strncmp(tag, "MERGE ", 6) ==
	    0)
		s->changes = atoi(PQcmdTuples(r));
}

/*
 * The outcome of a result: STORE_OK, or the error recorded (the result is
 * then cleared and *rp set to NULL).
 */
static int
pg_check(struct pg_store *s, PGresult **rp)
{
	PGresult	*r = *rp;
	const char	*prim, *state;
	int		 code;

	switch (PQresultStatus(r)) {
	case PGRES_COMMAND_OK:
	case PGRES_TUPLES_OK:
	case PGRES_EMPTY_QUERY:
		pg_note_changes(s, r);
		s->code = STORE_OK;
		return STORE_OK;
	default:
		break;
	}
	state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
	prim = PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY);
	code = pg_sqlstate(state);
	if (prim == NULL)
		prim = PQresultErrorMessage(r);
	pg_fail(s, code, "%s (SQLSTATE %s)", prim, state != NULL ? state :
	    "?");
	pg_chomp(s->msg);
	if (PQtransactionStatus(s->conn) == PQTRANS_INERROR &&
	    s->abort_code == STORE_OK)
		s->abort_code = code;
	PQclear(r);
	*rp = NULL;
	if (code == STORE_LOST)
		pg_lost(s, s->msg);
	return code;
}

/*
 * The answer to a PQsend* call (sent: what it returned), checked: STORE_OK
 * with the result in *rp (for the caller to clear), or the error.
 */
static int
pg_answer(struct pg_store *s, int sent, PGresult **rp)
{
	*rp = NULL;
	if (!sent) {
		pg_fail(s, STORE_ERROR, "%s", PQerrorMessage(s->conn));
		pg_chomp(s->msg);
		if (PQstatus(s->conn) == CONNECTION_BAD)
			return pg_lost(s, s->msg);
		return STORE_ERROR;
	}
	if ((*rp = pg_wait(s)) == NULL)
		return s->code;
	return pg_check(s, rp);
}

/* Forget prepared statements the server lost with its session. */
static void
pg_drop_dealloc(struct pg_store *s)
{
	int	i;

	for (i = 0; i < s->ndealloc; i++)
		free(s->dealloc[i]);
	s->ndealloc = 0;
}

/* Connection settings of every session (again after a reconnection). */
static int
pg_session(struct pg_store *s)
{
	char	sql[160];
	int	i, rc;

	snprintf(sql, sizeof sql, "SET lock_timeout = %d%s", s->lock_ms,
	    s->readonly ? "; SET default_transaction_read_only = on" : "");
	if ((rc = pg_exec(&s->base, sql)) != STORE_OK)
		return rc;
	for (i = 0; i < s->nlisten; i++) {
		snprintf(sql, sizeof sql, "LISTEN \"%s\"", s->listen[i]);
		if ((rc = pg_exec(&s->base, sql)) != STORE_OK)
			return rc;
	}
	return STORE_OK;
}

/*
 * Outside a transaction, connect again to a server that went away. Inside
 * one, the caller must roll back first (STORE_LOST).
 */
static int
pg_ready(struct pg_store *s)
{
	if (!s->lost && PQstatus(s->conn) == CONNECTION_OK) {
		s->tx_before = PQtransactionStatus(s->conn) != PQTRANS_IDLE;
		return STORE_OK;
	}
	if (!s->lost)
		pg_lost(s, "the server closed the connection");
	if (s->tx_lost)
		return pg_fail(s, STORE_LOST, "connection to PostgreSQL lost "
		    "inside a transaction: roll it back");
	PQreset(s->conn);
	if (PQstatus(s->conn) != CONNECTION_OK) {
		pg_fail(s, STORE_LOST, "cannot connect to PostgreSQL again: "
		    "%s", PQerrorMessage(s->conn));
		pg_chomp(s->msg);
		return STORE_LOST;
	}
	s->lost = false;
	s->tx_before = false;
	s->gen++;
	s->abort_code = STORE_OK;
	pg_drop_dealloc(s);
	return pg_session(s);
}

/* Server notices (NOTICE, WARNING) are not errors: not printed. */
static void
pg_notice(void *arg, const char *message)
{
	(void)arg;
	(void)message;
}

static int
pg_open(struct store **sp, const struct store_conf *c, int flags,
    char **err)
{
	static const char *const keys[] = { "connect_timeout",
	    "fallback_application_name", "client_encoding", "options",
	    "dbname", NULL };
	const char	*vals[6];
	char		 opt[80] = "";
	struct pg_store	*s;
	int		 rc;

	if ((s = calloc(1, sizeof *s)) == NULL || (s->dsn = strdup(c->dsn)) ==
	    NULL) {
		free(s);
		store_seterr(err, "out of memory");
		return STORE_NOMEM;
	}
	s->base.ops = &store_pg_ops;
	s->base.driver = STORE_POSTGRESQL;
	s->lock_ms = PG_LOCK_MS;
	s->answer_ms = PG_ANSWER_MS;
	s->readonly = (flags & STORE_OPEN_READONLY) != 0;
	/* The dsn (expanded from dbname) overrides the keywords before it. */
	vals[0] = PG_CONNECT_S;
	vals[1] = "mosgw";
	vals[2] = "UTF8";
	/* options in the dsn replace these */
	if (c->idle_tx_ms > 0)
		snprintf(opt, sizeof opt, "-c idle_in_transaction_session_"
		    "timeout=%d", c->idle_tx_ms);
	vals[3] = opt;
	vals[4] = s->dsn;
	vals[5] = NULL;
	s->conn = PQconnectdbParams(keys, vals, 1);
	if (s->conn == NULL || PQstatus(s->conn) != CONNECTION_OK) {
		if (s->conn != NULL) {
			store_seterr(err, "PostgreSQL: %s",
			    PQerrorMessage(s->conn));
			if (err != NULL && *err != NULL)
				pg_chomp(*err);
		} else
			store_seterr(err, "out of memory");
		PQfinish(s->conn);
		free(s->dsn);
		free(s);
		return STORE_CANTOPEN;
	}
	PQsetNoticeProcessor(s->conn, pg_notice, NULL);
	if ((rc = pg_session(s)) != STORE_OK) {
		store_seterr(err, "PostgreSQL: %s", s->msg);
		PQfinish(s->conn);
		free(s->dsn);
		free(s);
		return rc;
	}
	*sp = &s->base;
	return STORE_OK;
}

static void
pg_close(struct store *b)
{
	struct pg_store	*s = PS(b);
	int		 i;

	PQfinish(s->conn);
	pg_drop_dealloc(s);
	free(s->dealloc);
	for (i = 0; i < s->nlisten; i++)
		free(s->listen[i]);
	free(s->dsn);
	free(s);
}

static struct sqlite3 *
pg_sqlite(struct store *s)
{
	(void)s;
	return NULL;
}

static int
pg_errcode(struct store *s)
{
	return PS(s)->code;
}

static const char *
pg_errmsg(struct store *s)
{
	return PS(s)->code == STORE_OK ? "not an error" : PS(s)->msg;
}

static int
pg_errno(struct store *s)
{
	(void)s;
	return 0;
}

/* The lock wait: ms <= 0 waits as little as PostgreSQL can (1 ms). */
static int
pg_busy_timeout(struct store *b, int ms)
{
	struct pg_store	*s = PS(b);
	int		 old = s->lock_ms, rc;

	s->lock_ms = ms > 0 ? ms : 1;
	if (s->lost)
		return STORE_OK;	/* applied when connected again */
	if ((rc = pg_session(s)) != STORE_OK)
		s->lock_ms = old;
	return rc;
}

/* Run SQL text (one or more statements, no parameters). */
static int
pg_exec(struct store *b, const char *sql)
{
	struct pg_store	*s = PS(b);
	PGresult	*r;
	int		 rc;

	/* Ending a transaction the lost session took with it. */
	if (s->lost && s->tx_lost && (strcasecmp(sql, "ROLLBACK") == 0 ||
	    strcasecmp(sql, "COMMIT") == 0))
		return strcasecmp(sql, "ROLLBACK") == 0 ? pg_rollback(b) :
		    pg_commit(b);
	if ((rc = pg_ready(s)) != STORE_OK)
		return rc;
	rc = pg_answer(s, PQsendQuery(s->conn, sql), &r);
	PQclear(r);
	return rc;
}

static int
pg_changes(struct store *s)
{
	return PS(s)->changes;
}

static bool
pg_in_tx(struct store *b)
{
	struct pg_store	*s = PS(b);

	if (s->lost)
		return s->tx_lost;
	return PQtransactionStatus(s->conn) != PQTRANS_IDLE;
}

static int
pg_begin(struct store *b, enum store_tx mode)
{
	struct pg_store	*s = PS(b);
	char		 sql[96];
	int		 rc;

	if (pg_in_tx(b))
		return pg_fail(s, STORE_ERROR, "cannot start a transaction "
		    "within a transaction");
	s->abort_code = STORE_OK;
	if (mode != STORE_TX_WRITE)
		return pg_exec(b, "BEGIN");
	snprintf(sql, sizeof sql, "BEGIN; SELECT pg_advisory_xact_lock(%d)",
	    STORE_PG_WRITE_LOCK);
	if ((rc = pg_exec(b, sql)) != STORE_OK && !s->lost &&
	    PQtransactionStatus(s->conn) != PQTRANS_IDLE) {
		/* As SQLite's BEGIN IMMEDIATE: busy leaves no transaction. */
		char	msg[sizeof s->msg];

		memcpy(msg, s->msg, sizeof msg);
		pg_exec(b, "ROLLBACK");
		memcpy(s->msg, msg, sizeof msg);
		s->code = rc;
		s->abort_code = STORE_OK;
	}
	return rc;
}

static int
pg_commit(struct store *b)
{
	struct pg_store	*s = PS(b);
	PGresult	*r;
	int		 rc, why;

	if (s->lost) {
		s->tx_lost = false;
		return pg_fail(s, STORE_LOST, "connection to PostgreSQL lost: "
		    "the transaction is gone");
	}
	why = s->abort_code;
	s->tx_before = true;
	if ((rc = pg_answer(s, PQsendQuery(s->conn, "COMMIT"), &r)) !=
	    STORE_OK) {
		/* Lost: whether it committed is unknown (as an I/O error). */
		if (s->lost)
			s->tx_lost = false;
		return rc;
	}
	/* COMMIT of a failed transaction rolls back. */
	if (strcmp(PQcmdStatus(r), "ROLLBACK") == 0) {
		PQclear(r);
		s->abort_code = STORE_OK;
		return pg_fail(s, why != STORE_OK ? why : STORE_ERROR,
		    "the transaction failed and was rolled back");
	}
	PQclear(r);
	s->abort_code = STORE_OK;
	return STORE_OK;
}

static int
pg_rollback(struct store *b)
{
	struct pg_store	*s = PS(b);
	int		 rc;

	s->abort_code = STORE_OK;
	if (s->lost) {
		/* The server rolled it back with the session. */
		s->tx_lost = false;
		s->code = STORE_OK;
		return STORE_OK;
	}
	if (PQtransactionStatus(s->conn) == PQTRANS_IDLE)
		return pg_fail(s, STORE_ERROR, "cannot rollback - no "
		    "transaction is active");
	rc = pg_exec(b, "ROLLBACK");
	if (rc == STORE_LOST) {
		s->tx_lost = false;
		s->code = STORE_OK;
		return STORE_OK;
	}
	return rc;
}

/* Is c a character of an identifier (for dollar-quote tags)? */
static bool
pg_ident_char(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || c == '_' || c >= 0x80;
}

/*
 * Rewrite ? and ?NNN to $N; mark the parameters named in used[] and set
 * *nparams to the highest. Returns the malloc'd text, or NULL with the
 * error recorded.
 */
static char *
pg_rewrite(struct pg_store *s, const char *sql, bool *used, int *nparams)
{
	const char	*p = sql, *e, *tag;
	char		*out, *o, *end;
	size_t		 taglen;
	long		 n;
	int		 max = 0;

	if ((out = malloc(strlen(sql) * 4 + 16)) == NULL) {
		pg_fail(s, STORE_NOMEM, "out of memory");
		return NULL;
	}
	o = out;
	while (*p != '\0') {
		if (*p == '\'' || *p == '"') {
			/* 'text' and "identifier", doubled to escape */
			int	q = *p;

			*o++ = *p++;
			while (*p != '\0') {
				if (*p == q && p[1] == q) {
					*o++ = *p++;
					*o++ = *p++;
				} else if (*p == q) {
					*o++ = *p++;
					break;
				} else
					*o++ = *p++;
			}
		} else if (p[0] == '-' && p[1] == '-') {
			while (*p != '\0' && *p != '\n')
				*o++ = *p++;
		} else if (p[0] == '/' && p[1] == '*') {
			e = strstr(p + 2, "*/");
			e = e != NULL ? e + 2 : p + strlen(p);
			memcpy(o, p, (size_t)(e - p));
			o += e - p;
			p = e;
		} else if ((*p == '$' && p[1] >= '0' && p[1] <= '9' &&
		    (p == sql || !pg_ident_char((unsigned char)p[-1]))) ||
		    *p == '?') {
			/* $N, ?NNN, or ? (the highest so far plus one) */
			if (p[1] >= '0' && p[1] <= '9') {
				n = strtol(p + 1, &end, 10);
				e = end;
			} else {
				n = max + 1;
				e = p + 1;
			}
			if (n < 1 || n > PG_MAX_PARAMS) {
				free(out);
				pg_fail(s, STORE_ERROR, "variable number must "
				    "be between ?1 and ?%d", PG_MAX_PARAMS);
				return NULL;
			}
			used[n - 1] = true;
			if (n > max)
				max = (int)n;
			o += sprintf(o, "$%ld", n);
			p = e;
		} else if (*p == '$' && (p == sql ||
		    !pg_ident_char((unsigned char)p[-1]))) {
			/* $tag$ ... $tag$ */
			tag = p;
			for (e = p + 1; pg_ident_char((unsigned char)*e); e++)
				;
			if (*e != '$') {
				*o++ = *p++;
				continue;
			}
			taglen = (size_t)(e + 1 - tag);
			e = strstr(e + 1, "$");
			while (e != NULL && strncmp(e, tag, taglen) != 0)
				e = strchr(e + 1, '$');
			e = e != NULL ? e + taglen : p + strlen(p);
			memcpy(o, p, (size_t)(e - p));
			o += e - p;
			p = e;
		} else
			*o++ = *p++;
	}
	*o = '\0';
	*nparams = max;
	return out;
}

/* Free the parameters' copies and unbind them. */
static void
pg_clear_params(struct pg_stmt *st)
{
	int	i;

	for (i = 0; i < st->nparams; i++) {
		free(st->params[i].own);
		st->params[i].own = NULL;
		st->params[i].val = NULL;
		st->params[i].len = 0;
		st->params[i].fmt = 0;
	}
}

/* Drop the current result and its decoded columns. */
static void
pg_clear_result(struct pg_stmt *st)
{
	int	i;

	for (i = 0; i < st->ncols; i++) {
		PQfreemem(st->bcol[i]);
		st->bcol[i] = NULL;
	}
	st->bcol_row = -1;
	PQclear(st->res);
	st->res = NULL;
	st->row = -1;
	st->done = false;
}

/* DEALLOCATE what finalize queued (in one round trip), when it can. */
static void
pg_flush_dealloc(struct pg_store *s)
{
	char	*sql, *o;
	int	 i;

	if (s->ndealloc == 0 || s->lost ||
	    PQtransactionStatus(s->conn) == PQTRANS_INERROR)
		return;
	if ((sql = malloc((size_t)s->ndealloc * 40)) == NULL)
		return;
	for (i = 0, o = sql; i < s->ndealloc; i++)
		o += sprintf(o, "DEALLOCATE %s;", s->dealloc[i]);
	if (pg_exec(&s->base, sql) == STORE_OK || s->code != STORE_LOST)
		pg_drop_dealloc(s);
	free(sql);
}

/* Prepare st on the server (again after a reconnection). */
static int
pg_server_prepare(struct pg_store *s, struct pg_stmt *st)
{
	PGresult	*r;
	int		 rc;

	pg_flush_dealloc(s);
	rc = pg_answer(s, PQsendPrepare(s->conn, st->name, st->sql,
	    st->nparams, st->types), &r);
	PQclear(r);
	if (rc == STORE_OK)
		st->gen = s->gen;
	return rc;
}

static void
pg_finalize(struct store_stmt *b)
{
	struct pg_stmt	*st = PST(b);
	struct pg_store	*s = PS(b->store);
	char		**d;

	pg_clear_result(st);
	pg_clear_params(st);
	PQclear(st->desc);
	if (st->gen == s->gen && !s->lost &&
	    (d = realloc(s->dealloc, (size_t)(s->ndealloc + 1) *
	    sizeof *d)) != NULL) {
		/* Sent before the next prepare: the error stays readable. */
		s->dealloc = d;
		if ((d[s->ndealloc] = strdup(st->name)) != NULL)
			s->ndealloc++;
	}
	free(st->bcol);
	free(st->bcol_len);
	free(st->types);
	free(st->params);
	free(st->sql);
	free(st);
}

static int
pg_prepare(struct store *b, const char *sql, int flags,
    struct store_stmt **stp)
{
	struct pg_store	*s = PS(b);
	struct pg_stmt	*st;
	bool		*used;
	int		 i, rc;

	(void)flags;	/* every statement is prepared on the server */
	*stp = NULL;
	if ((rc = pg_ready(s)) != STORE_OK)
		return rc;
	if ((st = calloc(1, sizeof *st)) == NULL ||
	    (used = calloc(PG_MAX_PARAMS, sizeof *used)) == NULL) {
		free(st);
		return pg_fail(s, STORE_NOMEM, "out of memory");
	}
	st->base.store = b;
	st->row = -1;
	st->bcol_row = -1;
	snprintf(st->name, sizeof st->name, "mosgw_%u", ++s->next_name);
	if ((st->sql = pg_rewrite(s, sql, used, &st->nparams)) == NULL) {
		free(used);
		free(st);
		return s->code;
	}
	if (st->nparams > 0 && ((st->types = calloc((size_t)st->nparams,
	    sizeof *st->types)) == NULL || (st->params =
	    calloc((size_t)st->nparams, sizeof *st->params)) == NULL)) {
		free(used);
		free(st->types);
		free(st->sql);
		free(st);
		return pg_fail(s, STORE_NOMEM, "out of memory");
	}
	for (i = 0; i < st->nparams; i++)
		st->types[i] = used[i] ? 0 : PG_TEXTOID;
	free(used);
	if ((rc = pg_server_prepare(s, st)) != STORE_OK) {
		free(st->types);
		free(st->params);
		free(st->sql);
		free(st);
		return rc;
	}
	*stp = &st->base;
	return STORE_OK;
}

static int
pg_reset(struct store_stmt *b)
{
	struct pg_stmt	*st = PST(b);

	pg_clear_result(st);
	pg_clear_params(st);
	return STORE_OK;
}

/* The parameter i (1-based), or NULL with the error recorded. */
static struct pg_param *
pg_param(struct pg_stmt *st, int i)
{
	struct pg_param	*p;

	if (i < 1 || i > st->nparams) {
		pg_fail(PS(st->base.store), STORE_MISMATCH, "column index out "
		    "of range");
		return NULL;
	}
	p = &st->params[i - 1];
	free(p->own);
	p->own = NULL;
	return p;
}

static int
pg_bind_int64(struct store_stmt *b, int i, int64_t v)
{
	struct pg_param	*p;

	if ((p = pg_param(PST(b), i)) == NULL)
		return STORE_MISMATCH;
	snprintf(p->num, sizeof p->num, "%" PRId64, v);
	p->val = p->num;
	p->len = 0;
	p->fmt = 0;
	return STORE_OK;
}

static int
pg_bind_text(struct store_stmt *b, int i, const char *t, int len,
    bool copy)
{
	struct pg_stmt	*st = PST(b);
	struct pg_param	*p;

	if ((p = pg_param(st, i)) == NULL)
		return STORE_MISMATCH;
	p->fmt = 0;
	p->len = 0;
	if (t == NULL) {
		p->val = NULL;
		return STORE_OK;
	}
	if (len >= 0 && memchr(t, '\0', (size_t)len) != NULL) {
		p->val = NULL;
		return pg_fail(PS(b->store), STORE_MISMATCH, "a text with a "
		    "NUL byte (PostgreSQL text cannot hold one)");
	}
	/* A text parameter ends at its NUL: copy one given by length. */
	if (copy || len >= 0) {
		if (len < 0)
			len = (int)strlen(t);
		if ((p->own = malloc((size_t)len + 1)) == NULL) {
			p->val = NULL;
			return pg_fail(PS(b->store), STORE_NOMEM,
			    "out of memory");
		}
		memcpy(p->own, t, (size_t)len);
		p->own[len] = '\0';
		p->val = p->own;
	} else
		p->val = t;
	return STORE_OK;
}

static int
pg_bind_blob(struct store_stmt *b, int i, const void *v, int len)
{
	struct pg_param	*p;

	if ((p = pg_param(PST(b), i)) == NULL)
		return STORE_MISMATCH;
	p->val = v == NULL ? NULL : len > 0 ? v : "";
	p->len = len > 0 ? len : 0;
	p->fmt = 1;
	return STORE_OK;
}

static int
pg_bind_null(struct store_stmt *b, int i)
{
	struct pg_param	*p;

	if ((p = pg_param(PST(b), i)) == NULL)
		return STORE_MISMATCH;
	p->val = NULL;
	p->len = 0;
	p->fmt = 0;
	return STORE_OK;
}

/* Run the statement with its bindings; keep the result. */
static int
pg_run(struct pg_store *s, struct pg_stmt *st)
{
	const char	**vals = NULL;
	int		 *lens = NULL, *fmts = NULL;
	int		  i, rc, ok;
	PGresult	 *r;

	if ((rc = pg_ready(s)) != STORE_OK)
		return rc;
	if (st->gen != s->gen && (rc = pg_server_prepare(s, st)) != STORE_OK)
		return rc;
	if (st->nparams > 0 && ((vals = calloc((size_t)st->nparams,
	    sizeof *vals)) == NULL || (lens = calloc((size_t)st->nparams,
	    sizeof *lens)) == NULL || (fmts = calloc((size_t)st->nparams,
	    sizeof *fmts)) == NULL)) {
		free(vals);
		free(lens);
		return pg_fail(s, STORE_NOMEM, "out of memory");
	}
	for (i = 0; i < st->nparams; i++) {
		vals[i] = st->params[i].val;
		lens[i] = st->params[i].len;
		fmts[i] = st->params[i].fmt;
	}
	ok = PQsendQueryPrepared(s->conn, st->name, st->nparams, vals, lens,
	    fmts, 0);
	free(vals);
	free(lens);
	free(fmts);
	if ((rc = pg_answer(s, ok, &r)) == STORE_OK)
		st->res = r;
	return rc;
}

static int
pg_step(struct store_stmt *b)
{
	struct pg_stmt	*st = PST(b);
	struct pg_store	*s = PS(b->store);
	int		 rc;

	/* After the last row, run again (as SQLite's automatic reset). */
	if (st->done)
		pg_clear_result(st);
	if (st->res == NULL) {
		if ((rc = pg_run(s, st)) != STORE_OK)
			return rc;
	}
	st->row++;
	if (PQresultStatus(st->res) == PGRES_TUPLES_OK &&
	    st->row < PQntuples(st->res))
		return STORE_ROW;
	st->done = true;
	return STORE_DONE;
}

/* The description of the result (the current one, or the statement's). */
static PGresult *
pg_shape(struct pg_stmt *st)
{
	struct pg_store	*s = PS(st->base.store);
	PGresult	*r;

	if (st->res != NULL && PQresultStatus(st->res) == PGRES_TUPLES_OK)
		return st->res;
	if (st->desc != NULL)
		return st->desc;
	if (pg_ready(s) != STORE_OK || pg_answer(s,
	    PQsendDescribePrepared(s->conn, st->name), &r) != STORE_OK)
		return NULL;
	st->desc = r;
	return r;
}

static int
pg_column_count(struct store_stmt *b)
{
	PGresult	*r = pg_shape(PST(b));

	return r != NULL ? PQnfields(r) : 0;
}

static const char *
pg_column_name(struct store_stmt *b, int col)
{
	PGresult	*r = pg_shape(PST(b));

	if (r == NULL || col < 0 || col >= PQnfields(r))
		return NULL;
	return PQfname(r, col);
}

/* Is there a value at col of the current row? */
static bool
pg_has(struct pg_stmt *st, int col)
{
	return st->res != NULL && PQresultStatus(st->res) == PGRES_TUPLES_OK &&
	    st->row >= 0 && st->row < PQntuples(st->res) && col >= 0 &&
	    col < PQnfields(st->res) && !PQgetisnull(st->res, st->row, col);
}

static bool
pg_column_is_null(struct store_stmt *b, int col)
{
	return !pg_has(PST(b), col);
}

/* A bytea column of the current row, decoded (cached for the row). */
static const unsigned char *
pg_bytea(struct pg_stmt *st, int col, size_t *len)
{
	int	n = PQnfields(st->res), i;

	if (st->ncols < n) {
		unsigned char	**c;
		size_t		 *l;

		if ((c = realloc(st->bcol, (size_t)n * sizeof *c)) == NULL)
			return NULL;
		st->bcol = c;
		if ((l = realloc(st->bcol_len, (size_t)n * sizeof *l)) ==
		    NULL)
			return NULL;
		st->bcol_len = l;
		for (i = st->ncols; i < n; i++)
			st->bcol[i] = NULL;
		st->ncols = n;
	}
	if (st->bcol_row != st->row) {
		for (i = 0; i < st->ncols; i++) {
			PQfreemem(st->bcol[i]);
			st->bcol[i] = NULL;
		}
		st->bcol_row = st->row;
	}
	if (st->bcol[col] == NULL) {
		st->bcol[col] = PQunescapeBytea((const unsigned char *)
		    PQgetvalue(st->res, st->row, col), &st->bcol_len[col]);
		if (st->bcol[col] == NULL)
			return NULL;
	}
	*len = st->bcol_len[col];
	return st->bcol[col];
}

static const char *
pg_column_text(struct store_stmt *b, int col)
{
	struct pg_stmt	*st = PST(b);
	size_t		 len;

	if (!pg_has(st, col))
		return NULL;
	switch (PQftype(st->res, col)) {
	case PG_BOOLOID:
		return *PQgetvalue(st->res, st->row, col) == 't' ? "1" : "0";
	case PG_BYTEAOID:
		/* PQunescapeBytea ends its output with a NUL. */
		return (const char *)pg_bytea(st, col, &len);
	default:
		return PQgetvalue(st->res, st->row, col);
	}
}

static int64_t
pg_column_int64(struct store_stmt *b, int col)
{
	const char	*t = pg_column_text(b, col);
	char		*e;
	int64_t		 v;

	if (t == NULL)
		return 0;
	v = strtoll(t, &e, 10);
	if (*e == '.' || *e == 'e' || *e == 'E')
		v = (int64_t)strtod(t, NULL);
	return v;
}

static const void *
pg_column_blob(struct store_stmt *b, int col)
{
	return pg_column_text(b, col);
}

static int
pg_column_bytes(struct store_stmt *b, int col)
{
	struct pg_stmt	*st = PST(b);
	size_t		 len;

	if (!pg_has(st, col))
		return 0;
	switch (PQftype(st->res, col)) {
	case PG_BOOLOID:
		return 1;
	case PG_BYTEAOID:
		return pg_bytea(st, col, &len) != NULL ? (int)len : 0;
	default:
		return PQgetlength(st->res, st->row, col);
	}
}

static int
pg_listen(struct store *b, const char *channel)
{
	struct pg_store	*s = PS(b);
	char		 sql[96], *c;
	int		 i, rc;

	for (i = 0; i < s->nlisten; i++)
		if (strcmp(s->listen[i], channel) == 0)
			return STORE_OK;
	if (s->nlisten == PG_MAX_LISTEN)
		return pg_fail(s, STORE_ERROR, "too many channels");
	snprintf(sql, sizeof sql, "LISTEN \"%s\"", channel);
	if ((rc = pg_exec(b, sql)) != STORE_OK)
		return rc;
	if ((c = strdup(channel)) == NULL)
		return pg_fail(s, STORE_NOMEM, "out of memory");
	s->listen[s->nlisten++] = c;
	return STORE_OK;
}

static int
pg_notify_fd(struct store *b)
{
	struct pg_store	*s = PS(b);

	return s->lost ? -1 : PQsocket(s->conn);
}

/* Read what arrived; count the notifications. A lost connection is -1. */
static int
pg_notified(struct store *b)
{
	struct pg_store	*s = PS(b);
	PGnotify	*n;
	int		 count = 0;

	if (s->lost || !PQconsumeInput(s->conn) ||
	    PQstatus(s->conn) == CONNECTION_BAD) {
		if (!s->lost)
			pg_lost(s, "the server closed the connection");
		/* Connect again now, so that a new fd can be watched. */
		if (!s->tx_lost && pg_ready(s) == STORE_OK)
			return 1;	/* what came meanwhile is unknown */
		return -1;
	}
	while ((n = PQnotifies(s->conn)) != NULL) {
		count++;
		PQfreemem(n);
	}
	return count;
}

static int
pg_answer_timeout(struct store *b, int ms)
{
	PS(b)->answer_ms = ms;
	return STORE_OK;
}

static unsigned
pg_session_gen(struct store *b)
{
	struct pg_store	*s = PS(b);

	if (!s->tx_lost)
		(void)pg_ready(s);
	return s->gen;
}

const struct store_ops store_pg_ops = {
	.open = pg_open,
	.close = pg_close,
	.sqlite = pg_sqlite,
	.errcode = pg_errcode,
	.errmsg = pg_errmsg,
	.err_no = pg_errno,
	.busy_timeout = pg_busy_timeout,
	.exec = pg_exec,
	.changes = pg_changes,
	.in_tx = pg_in_tx,
	.begin = pg_begin,
	.commit = pg_commit,
	.rollback = pg_rollback,
	.prepare = pg_prepare,
	.finalize = pg_finalize,
	.reset = pg_reset,
	.bind_int64 = pg_bind_int64,
	.bind_text = pg_bind_text,
	.bind_blob = pg_bind_blob,
	.bind_null = pg_bind_null,
	.step = pg_step,
	.column_count = pg_column_count,
	.column_name = pg_column_name,
	.column_is_null = pg_column_is_null,
	.column_int64 = pg_column_int64,
	.column_text = pg_column_text,
	.column_blob = pg_column_blob,
	.column_bytes = pg_column_bytes,
	.listen = pg_listen,
	.notify_fd = pg_notify_fd,
	.notified = pg_notified,
	.session = pg_session_gen,
	.answer_timeout = pg_answer_timeout,
};
