/*
 * store: the calls of store.h, passed to the connection's backend; driver
 * names; the checks of a dsn (libpq connection string) before it is used.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_int.h"

#define STORE_DSN_SPANS	8

/* The backends built into this program, by enum store_driver. */
static const struct store_ops *const store_backends[] = {
	[STORE_SQLITE] = &store_sqlite_ops,
	[STORE_POSTGRESQL] = &store_pg_ops,
};

static const char *const store_driver_names[] = {
	[STORE_SQLITE] = "sqlite",
	[STORE_POSTGRESQL] = "postgresql",
};

#define STORE_NDRIVERS	(sizeof store_driver_names / sizeof *store_driver_names)

/* A malloc'd message into *err (if err is not NULL). */
void
store_seterr(char **err, const char *fmt, ...)
{
	va_list	ap;

	if (err == NULL)
		return;
	va_start(ap, fmt);
	if (vasprintf(err, fmt, ap) < 0)
		*err = NULL;
	va_end(ap);
}

/* The driver's name. */
const char *
store_driver_name(enum store_driver d)
{
	if ((size_t)d >= STORE_NDRIVERS)
		return "?";
	return store_driver_names[d];
}

/* Parse a driver's name; -1 if unknown. */
int
store_driver_parse(const char *s, enum store_driver *d)
{
	size_t	i;

	for (i = 0; i < STORE_NDRIVERS; i++) {
		if (strcmp(s, store_driver_names[i]) == 0) {
			*d = (enum store_driver)i;
			return 0;
		}
	}
	return -1;
}

/* Is the driver built into this program? */
bool
store_driver_available(enum store_driver d)
{
	return (size_t)d < STORE_NDRIVERS && store_backends[d] != NULL;
}

/* The value of a hex digit, or -1. */
static int
store_hex(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Is s (n bytes) the key "password", percent-decoded? */
static bool
store_dsn_is_password(const char *s, size_t n)
{
	static const char	 want[] = "password";
	size_t			 i, k = 0;
	int			 c;

	for (i = 0; i < n; i++, k++) {
		c = (unsigned char)s[i];
		if (c == '%' && i + 2 < n && store_hex(s[i + 1]) >= 0 &&
		    store_hex(s[i + 2]) >= 0) {
			c = store_hex(s[i + 1]) * 16 + store_hex(s[i + 2]);
			i += 2;
		}
		if (k >= sizeof want - 1 || c != want[k])
			return false;
	}
	return k == sizeof want - 1;
}

/*
 * The spans (offset, length) of the passwords in a URI dsn: the userinfo's
 * ":password" and any password= parameter.
 */
static int
store_dsn_scan_uri(const char *dsn, size_t rest, size_t sp[][2], int max)
{
	const char	*a = dsn + rest, *end, *at, *colon, *q, *p, *amp, *eq;
	int		 n = 0;

	end = a + strcspn(a, "/?");
	at = NULL;
	for (p = a; p < end; p++)
		if (*p == '@')
			at = p;
	if (at != NULL && (colon = memchr(a, ':', (size_t)(at - a))) != NULL &&
	    n < max) {
		sp[n][0] = (size_t)(colon + 1 - dsn);
		sp[n][1] = (size_t)(at - colon - 1);
		n++;
	}
	if ((q = strchr(end, '?')) == NULL)
		return n;
	for (p = q + 1; *p != '\0'; p = *amp != '\0' ? amp + 1 : amp) {
		amp = p + strcspn(p, "&");
		eq = memchr(p, '=', (size_t)(amp - p));
		if (eq != NULL && store_dsn_is_password(p, (size_t)(eq - p)) &&
		    n < max) {
			sp[n][0] = (size_t)(eq + 1 - dsn);
			sp[n][1] = (size_t)(amp - eq - 1);
			n++;
		}
	}
	return n;
}

/*
 * The spans of the password values in a key=value dsn (libpq's syntax:
 * keyword = value, the value bare or in single quotes with \ escapes);
 * -1 on a syntax error.
 */
static int
store_dsn_scan_kv(const char *dsn, size_t sp[][2], int max)
{
	const char	*p = dsn, *k, *v;
	size_t		 klen;
	int		 n = 0;

	for (;;) {
		p += strspn(p, " \t\n\r\f\v");
		if (*p == '\0')
			return n;
		k = p;
		p += strcspn(p, "= \t\n\r\f\v");
		klen = (size_t)(p - k);
		p += strspn(p, " \t\n\r\f\v");
		if (*p++ != '=' || klen == 0)
			return -1;
		p += strspn(p, " \t\n\r\f\v");
		v = p;
		if (*p == '\'') {
			for (p++; *p != '\'' && *p != '\0'; p++)
				if (*p == '\\' && p[1] != '\0')
					p++;
			if (*p++ != '\'')
				return -1;
		} else {
			for (; *p != '\0' && strchr(" \t\n\r\f\v", *p) == NULL;
			    p++)
				if (*p == '\\' && p[1] != '\0')
					p++;
		}
		if (klen == 8 && strncmp(k, "password", 8) == 0 && n < max) {
			sp[n][0] = (size_t)(v - dsn);
			sp[n][1] = (size_t)(p - v);
			n++;
		}
	}
}

/* The password spans of a dsn in either form; -1 on a syntax error. */
static int
store_dsn_scan(const char *dsn, size_t sp[][2], int max)
{
	static const char *const schemes[] = { "postgresql://", "postgres://" };
	size_t			 i, len;

	for (i = 0; i < sizeof schemes / sizeof *schemes; i++) {
		len = strlen(schemes[i]);
		if (strncmp(dsn, schemes[i], len) == 0)
			return store_dsn_scan_uri(dsn, len, sp, max);
	}
	return store_dsn_scan_kv(dsn, sp, max);
}

/* NULL if a dsn is acceptable, else why not. */
const char *
store_dsn_check(const char *dsn)
{
	size_t	sp[STORE_DSN_SPANS][2];
	int	n;

	if (dsn == NULL || dsn[strspn(dsn, " \t\n\r\f\v")] == '\0')
		return "empty connection string";
	if ((n = store_dsn_scan(dsn, sp, STORE_DSN_SPANS)) < 0)
		return "not a libpq connection string (keyword=value ... or "
		    "postgresql://...)";
	if (n > 0)
		return "a password in the connection string (put it in libpq's "
		    "password file, ~/.pgpass or PGPASSFILE)";
	return NULL;
}

/* A copy of a dsn with each password replaced by "*". */
char *
store_dsn_redact(const char *dsn)
{
	size_t	 sp[STORE_DSN_SPANS][2], at = 0, o = 0, len;
	char	*out;
	int	 i, n;

	if (dsn == NULL)
		return strdup("");
	len = strlen(dsn);
	if ((n = store_dsn_scan(dsn, sp, STORE_DSN_SPANS)) < 0)
		return strdup("(unparsable connection string)");
	if ((out = malloc(len + (size_t)n + 1)) == NULL)
		return NULL;
	for (i = 0; i < n; i++) {
		memcpy(out + o, dsn + at, sp[i][0] - at);
		o += sp[i][0] - at;
		out[o++] = '*';
		at = sp[i][0] + sp[i][1];
	}
	memcpy(out + o, dsn + at, len - at + 1);
	return out;
}

/* Open a connection through the driver's backend. */
int
store_open(struct store **sp, const struct store_conf *c, int flags,
    char **err)
{
	const char	*why;

	*sp = NULL;
	if (err != NULL)
		*err = NULL;
	if (!store_driver_available(c->driver)) {
		store_seterr(err, "database driver %s is not built into this "
		    "program", store_driver_name(c->driver));
		return STORE_CANTOPEN;
	}
	if (c->driver == STORE_SQLITE && (c->path == NULL || *c->path == '\0')) {
		store_seterr(err, "no database file given");
		return STORE_CANTOPEN;
	}
	if (c->driver != STORE_SQLITE && (why = store_dsn_check(c->dsn)) !=
	    NULL) {
		store_seterr(err, "dsn: %s", why);
		return STORE_CANTOPEN;
	}
	return store_backends[c->driver]->open(sp, c, flags, err);
}

/* Open an SQLite file. */
int
store_open_file(struct store **sp, const char *path, int flags, char **err)
{
	struct store_conf	c = { STORE_SQLITE, path, NULL };

	return store_open(sp, &c, flags, err);
}

void
store_close(struct store *s)
{
	if (s != NULL)
		s->ops->close(s);
}

enum store_driver
store_driver(struct store *s)
{
	return s->driver;
}

struct sqlite3 *
store_sqlite(struct store *s)
{
	return s != NULL ? s->ops->sqlite(s) : NULL;
}

int
store_errcode(struct store *s)
{
	return s != NULL ? s->ops->errcode(s) : STORE_NOMEM;
}

const char *
store_errmsg(struct store *s)
{
	return s != NULL ? s->ops->errmsg(s) : "no database connection";
}

int
store_errno(struct store *s)
{
	return s != NULL ? s->ops->err_no(s) : 0;
}

int
store_busy_timeout(struct store *s, int ms)
{
	return s->ops->busy_timeout(s, ms);
}

int
store_exec(struct store *s, const char *sql)
{
	return s->ops->exec(s, sql);
}

int
store_changes(struct store *s)
{
	return s->ops->changes(s);
}

bool
store_in_tx(struct store *s)
{
	return s->ops->in_tx(s);
}

int
store_begin(struct store *s, enum store_tx mode)
{
	return s->ops->begin(s, mode);
}

int
store_commit(struct store *s)
{
	return s->ops->commit(s);
}

int
store_rollback(struct store *s)
{
	return s->ops->rollback(s);
}

int
store_prepare(struct store *s, const char *sql, int flags,
    struct store_stmt **stp)
{
	return s->ops->prepare(s, sql, flags, stp);
}

void
store_finalize(struct store_stmt *st)
{
	if (st != NULL)
		st->store->ops->finalize(st);
}

int
store_reset(struct store_stmt *st)
{
	return st->store->ops->reset(st);
}

struct store *
store_stmt_store(struct store_stmt *st)
{
	return st->store;
}

int
store_bind_int(struct store_stmt *st, int i, int v)
{
	return st->store->ops->bind_int64(st, i, v);
}

int
store_bind_int64(struct store_stmt *st, int i, int64_t v)
{
	return st->store->ops->bind_int64(st, i, v);
}

int
store_bind_text(struct store_stmt *st, int i, const char *s, int len)
{
	return st->store->ops->bind_text(st, i, s, len, false);
}

int
store_bind_text_copy(struct store_stmt *st, int i, const char *s, int len)
{
	return st->store->ops->bind_text(st, i, s, len, true);
}

int
store_bind_blob(struct store_stmt *st, int i, const void *p, int len)
{
	return st->store->ops->bind_blob(st, i, p, len);
}

int
store_bind_null(struct store_stmt *st, int i)
{
	return st->store->ops->bind_null(st, i);
}

int
store_step(struct store_stmt *st)
{
	return st->store->ops->step(st);
}

int
store_column_count(struct store_stmt *st)
{
	return st->store->ops->column_count(st);
}

const char *
store_column_name(struct store_stmt *st, int col)
{
	return st->store->ops->column_name(st, col);
}

bool
store_column_is_null(struct store_stmt *st, int col)
{
	return st->store->ops->column_is_null(st, col);
}

int
store_column_int(struct store_stmt *st, int col)
{
	return (int)st->store->ops->column_int64(st, col);
}

int64_t
store_column_int64(struct store_stmt *st, int col)
{
	return st->store->ops->column_int64(st, col);
}

const char *
store_column_text(struct store_stmt *st, int col)
{
	return st->store->ops->column_text(st, col);
}

const void *
store_column_blob(struct store_stmt *st, int col)
{
	return st->store->ops->column_blob(st, col);
}

int
store_column_bytes(struct store_stmt *st, int col)
{
	return st->store->ops->column_bytes(st, col);
}

int
store_listen(struct store *s, const char *channel)
{
	size_t	n = strspn(channel, "abcdefghijklmnopqrstuvwxyz0123456789_");

	if (n == 0 || channel[n] != '\0' || n > 63)
		return STORE_MISMATCH;
	return s->ops->listen != NULL ? s->ops->listen(s, channel) : STORE_OK;
}

int
store_notify_fd(struct store *s)
{
	return s->ops->notify_fd != NULL ? s->ops->notify_fd(s) : -1;
}

int
store_answer_timeout(struct store *s, int ms)
{
	if (ms < 1)
		return STORE_MISMATCH;
	return s->ops->answer_timeout != NULL ? s->ops->answer_timeout(s, ms) :
	    STORE_OK;
}

unsigned
store_session(struct store *s)
{
	return s->ops->session != NULL ? s->ops->session(s) : 0;
}

int
store_notified(struct store *s)
{
	return s->ops->notified != NULL ? s->ops->notified(s) : 0;
}
