/*
 * store: the storage interface under the queue and the gateway's tables.
 *
 * One connection is a struct store; a prepared statement is a struct
 * store_stmt. The calls have the shape of SQLite's C API (prepare, bind by
 * 1-based index, step to a row or to the end, read columns by 0-based index,
 * reset, finalize), so that code written for one backend runs on every
 * backend. Backends:
 *
 *   sqlite      a file (or ":memory:"), through SQLite (store/sqlite.c).
 *   postgresql  a database named by a libpq connection string (a dsn,
 *               key=value or URI form), through libpq.
 *
 * SQL texts are written in the SQLite dialect with ? or ?NNN placeholders.
 * The PostgreSQL backend rewrites the placeholders to $N (outside quotes,
 * identifiers and comments); where the dialects differ the caller keeps a
 * PostgreSQL text beside the SQLite one and picks it by store_driver().
 *
 * Transactions: store_begin(STORE_TX_WRITE) serialises writers as SQLite
 * does with BEGIN IMMEDIATE. On PostgreSQL it is
 *   BEGIN; SELECT pg_advisory_xact_lock(STORE_PG_WRITE_LOCK)
 * so that code written for SQLite's single writer stays correct with
 * several processes (and instances) on one database; the lock is released
 * by COMMIT or ROLLBACK.
 *
 * Features only SQLite has (the WAL hook, the busy handler, checkpoints,
 * SQL functions written in C, the fault-injecting VFS of the tests, PRAGMAs,
 * file locks) are reached through store_sqlite(), which is NULL on any
 * other backend.
 *
 * One connection belongs to one thread at a time. Errors are STORE_* codes;
 * store_errmsg() has the last one in words. A password is never part of a
 * dsn (store_dsn_check refuses it): libpq reads it from its password file.
 */
#ifndef STORE_H
#define STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sqlite3;
struct store;
struct store_stmt;

enum store_driver {
	STORE_SQLITE = 0,
	STORE_POSTGRESQL = 1,
};

/*
 * Result codes. STORE_ROW and STORE_DONE come from store_step() only;
 * every other call returns STORE_OK or an error.
 */
enum store_rc {
	STORE_OK = 0,
	STORE_ERROR = 1,	/* SQL error, misuse, anything not below */
	STORE_BUSY = 2,		/* locked by another connection past the wait */
	STORE_CONSTRAINT = 3,	/* unique, foreign key, check, not null */
	STORE_MISMATCH = 4,	/* a value of the wrong type or out of range */
	STORE_FULL = 5,		/* disk (or quota) full: nothing was stored */
	STORE_IOERR = 6,	/* I/O error (store_errno() may say which) */
	STORE_CORRUPT = 7,	/* damaged, or not a database */
	STORE_READONLY = 8,	/* opened read-only, or a read-only server */
	STORE_CANTOPEN = 9,	/* the file or the server cannot be reached */
	STORE_LOST = 10,	/* the connection to the server is gone */
	STORE_NOMEM = 11,	/* out of memory */
	STORE_ROW = 100,	/* store_step: a row is ready */
	STORE_DONE = 101,	/* store_step: no more rows */
};

/*
 * The advisory lock key a PostgreSQL write transaction takes ("mosg"): one
 * store-wide writer at a time, as on SQLite.
 */
#define STORE_PG_WRITE_LOCK	0x6d6f7367

/* Where a connection goes. */
struct store_conf {
	enum store_driver	 driver;
	const char		*path;	/* sqlite: the file, or ":memory:" */
	const char		*dsn;	/* postgresql: libpq conninfo */
	/*
	 * postgresql: the server ends a session idle inside a transaction
	 * for longer than this (idle_in_transaction_session_timeout), so
	 * that a client cut off in the middle of one cannot hold its locks
	 * (the store-wide writer lock) for ever; 0 = the server's setting.
	 */
	int			 idle_tx_ms;
};

/* store_open flags */
#define STORE_OPEN_READONLY	0x01	/* no writes (default: read-write) */
#define STORE_OPEN_CREATE	0x02	/* sqlite: create a missing file */

/* store_prepare flags */
#define STORE_KEEP		0x01	/* kept for the connection's life */

/* store_begin modes */
enum store_tx {
	STORE_TX_READ = 0,	/* BEGIN (deferred) */
	STORE_TX_WRITE = 1,	/* the store-wide writer: BEGIN IMMEDIATE */
};

/* The driver's name ("sqlite", "postgresql"). */
const char *store_driver_name(enum store_driver);
/* Parse a driver's name; -1 if unknown. */
int	 store_driver_parse(const char *, enum store_driver *);
/* Is the driver built into this program? */
bool	 store_driver_available(enum store_driver);
/*
 * Check a dsn before use: NULL if it is acceptable, else why not (static
 * text). A dsn with a password (key=value password=, or a URI's
 * user:password@) is refused: the password belongs in libpq's password
 * file, never in a configuration or a log.
 */
const char *store_dsn_check(const char *dsn);
/*
 * A printable copy of a dsn (malloc'd; NULL on no memory) with any
 * password replaced by "*", for logs and errors.
 */
char	*store_dsn_redact(const char *dsn);

/*
 * Open a connection. On error *sp is NULL, the STORE_* code is returned and
 * *err (if err is not NULL) is malloc'd text.
 */
int	 store_open(struct store **sp, const struct store_conf *, int flags,
	    char **err);
/* Open an SQLite file: store_open with driver sqlite, errors in *err. */
int	 store_open_file(struct store **sp, const char *path, int flags,
	    char **err);
/* Close (NULL is fine); finalize its statements first. */
void	 store_close(struct store *);
enum store_driver store_driver(struct store *);
/* The SQLite handle of a connection; NULL on any other backend. */
struct sqlite3 *store_sqlite(struct store *);

/* The last error of the connection: its code, its text, the OS errno. */
int	 store_errcode(struct store *);
const char *store_errmsg(struct store *);
int	 store_errno(struct store *);

/*
 * How long a statement waits for a lock another connection holds, in ms,
 * before STORE_BUSY (SQLite's busy timeout; PostgreSQL's lock_timeout).
 */
int	 store_busy_timeout(struct store *, int ms);

/* Run one or more statements separated by ';' (no parameters, rows ignored). */
int	 store_exec(struct store *, const char *sql);
/* Rows changed by the last INSERT, UPDATE or DELETE. */
int	 store_changes(struct store *);
/* Is a transaction open on this connection? */
bool	 store_in_tx(struct store *);
/* Transactions; commit and rollback also end one begun by store_exec. */
int	 store_begin(struct store *, enum store_tx);
int	 store_commit(struct store *);
int	 store_rollback(struct store *);

/*
 * Prepare one statement (STORE_KEEP: it will be used many times). On error
 * *stp is NULL and the code is returned; store_errmsg() says why.
 */
int	 store_prepare(struct store *, const char *sql, int flags,
	    struct store_stmt **stp);
/* Free a statement (NULL is fine). */
void	 store_finalize(struct store_stmt *);
/* Make a statement ready to run again: its bindings are cleared too. */
int	 store_reset(struct store_stmt *);
/* The connection of a statement. */
struct store *store_stmt_store(struct store_stmt *);

/*
 * Bind parameter i (1-based; ?NNN is parameter NNN). A text or blob is not
 * copied: it must stay valid until the statement is reset or finalized
 * (store_bind_text_copy copies). len -1: the text's strlen. A NULL text
 * or blob binds NULL. An index the statement lacks changes nothing
 * (STORE_MISMATCH).
 */
int	 store_bind_int(struct store_stmt *, int i, int v);
int	 store_bind_int64(struct store_stmt *, int i, int64_t v);
int	 store_bind_text(struct store_stmt *, int i, const char *s, int len);
int	 store_bind_text_copy(struct store_stmt *, int i, const char *s,
	    int len);
int	 store_bind_blob(struct store_stmt *, int i, const void *p, int len);
int	 store_bind_null(struct store_stmt *, int i);

/* Run a statement: STORE_ROW (a row is ready), STORE_DONE, or an error. */
int	 store_step(struct store_stmt *);

/*
 * Columns of the current row (0-based). A NULL reads as 0, NULL text, or
 * a NULL blob of 0 bytes. Texts and blobs stay valid until the next step,
 * reset or finalize of the statement.
 */
int	 store_column_count(struct store_stmt *);
const char *store_column_name(struct store_stmt *, int col);
bool	 store_column_is_null(struct store_stmt *, int col);
int	 store_column_int(struct store_stmt *, int col);
int64_t	 store_column_int64(struct store_stmt *, int col);
const char *store_column_text(struct store_stmt *, int col);
const void *store_column_blob(struct store_stmt *, int col);
int	 store_column_bytes(struct store_stmt *, int col);

/*
 * Notifications: PostgreSQL's LISTEN/NOTIFY; SQLite has none (listen does
 * nothing there, the fd is -1, nothing is ever notified). store_listen
 * subscribes the connection to a channel (a lower-case name of letters,
 * digits and _, at most 63 bytes), renewed after a reconnection. The
 * connection's fd is readable when something arrives; store_notified then
 * reads it and returns how many notifications came (0 for none), or -1
 * when the connection is lost. The fd changes with a reconnection: ask
 * store_notify_fd again after each store_notified.
 */
int	 store_listen(struct store *, const char *channel);
/*
 * The session: a number that changes each time the connection is made
 * again (PostgreSQL, after the server was lost; outside a transaction it
 * connects again first). State kept in a session (temporary tables,
 * settings) must then be set up again. Always 0 on SQLite.
 */
unsigned store_session(struct store *);
/*
 * How long to wait for a server's answer beyond the lock wait, in ms
 * (PostgreSQL; default 30000): past it the connection counts as lost
 * (STORE_LOST), as when a network cut leaves it open but silent. Nothing
 * on SQLite.
 */
int	 store_answer_timeout(struct store *, int ms);
int	 store_notify_fd(struct store *);
int	 store_notified(struct store *);

#endif /* STORE_H */
