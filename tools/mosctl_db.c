/*
 * mosctl db migrate --from FILE.db --to DSN: move a site's SQLite database
 * to PostgreSQL.
 *
 * The source must be a mosgw database file at the schema versions of this
 * program. It is opened read-only (no checkpoint on close) and read inside
 * one read transaction, so that every table comes from one snapshot; a
 * shared flock(2) on it keeps a daemon from starting on it meanwhile, and
 * the daemon's own exclusive flock (gwdb_hold) makes the migration refuse
 * a file a daemon has open. Nothing in the source changes.
 *
 * The target is brought to the current schema with the daemon's own
 * migrations (gwdb_open) and must hold no mosgw data. Every table is then
 * copied in one write transaction, driven by the table list below: the
 * columns are the target's (information_schema) matched by name with the
 * source's (PRAGMA table_info), values go as parameters, many rows to an
 * INSERT. Then, in the same transaction: identity sequences continue after
 * the highest id copied (events after SQLite's AUTOINCREMENT counter, so a
 * pruned event id is never given again), the row counts of both sides are
 * compared, jobs RUNNING in the source are taken back as the queue takes
 * back a dead worker's jobs, and the search index is built from the copied
 * assets. Any error or mismatch rolls everything back.
 */
#include <sys/file.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sqlite3.h>
#include <jansson.h>

#include "gateway/gateway.h"
#include "tools/mosctl.h"

#define DBM_MAX_PARAMS	999	/* parameters in one statement */
#define DBM_MAX_ROWS	200	/* rows in one INSERT */
#define DBM_MAX_COLS	64
#define DBM_ANSWER_MS	600000	/* the longest wait for one statement */

/*
 * The tables copied, in an order that satisfies the foreign keys (jobs
 * before job_data and job_events; jobs by id, for after_job). The search
 * index (asset_fts) is built on the target instead, and mosgw_owner
 * belongs to the instances running on PostgreSQL.
 */
static const struct dbm_table {
	const char	*name;
	const char	*where;	/* the rows copied (both sides); NULL: all */
	const char	*data;	/* of those, the target's that are data */
	bool		 seeded;	/* rows the migrations made: replaced */
} dbm_tables[] = {
	{ "gw_meta", "key <> 'schema_version'", NULL, false },
	{ "queue_counters", NULL, "value <> 0", true },
	{ "ncs", NULL, NULL, false },
	{ "ncs_sync", NULL, NULL, false },
	{ "msgid", NULL, NULL, false },
	{ "assets", NULL, NULL, false },
	{ "asset_paths", NULL, NULL, false },
	{ "asset_meta", NULL, NULL, false },
	{ "asset_key", NULL, NULL, false },
	{ "delivery", NULL, NULL, false },
	{ "delivery_failed", NULL, NULL, false },
	{ "history", NULL, NULL, false },
	{ "ro", NULL, NULL, false },
	{ "ro_story", NULL, NULL, false },
	{ "ro_item", NULL, NULL, false },
	{ "ro_answer", NULL, NULL, false },
	{ "jobs", NULL, NULL, false },
	{ "job_data", NULL, NULL, false },
	{ "job_events", NULL, NULL, false },
	{ "events", NULL, NULL, false },
};
#define DBM_NTABLES	nitems(dbm_tables)

/* The tables whose triggers must not fire for copied rows. */
#define DBM_TRIGGERS(verb) \
	"ALTER TABLE jobs " verb " TRIGGER USER;" \
	"ALTER TABLE job_events " verb " TRIGGER USER"

/* One table's columns, as the target has them. */
struct dbm_cols {
	char	*name[DBM_MAX_COLS];
	bool	 bytea[DBM_MAX_COLS];
	int	 n;
	char	*identity;	/* the identity column, or NULL */
};

struct dbm {
	struct mosctl	*ctl;
	const char	*from;
	const char	*dsn;
	char		*to;		/* the dsn, redacted */
	int		 lockfd;
	struct store	*src;
	struct gwdb	*g;
	int64_t		 rows[DBM_NTABLES];
	int64_t		 total;
	int64_t		 released;
	int64_t		 indexed;
	char		*err;		/* why it failed */
};

void
mosctl_db_usage(FILE *f)
{
	fprintf(f, "  db migrate --from FILE.db --to DSN   (a stopped daemon's "
	    "SQLite file into an\n"
	    "            empty PostgreSQL database, in one transaction)\n");
}

/* Record why the migration failed (the first reason wins). */
static void __attribute__((format(printf, 2, 3)))
dbm_fail(struct dbm *m, const char *fmt, ...)
{
	va_list	ap;

	if (m->err != NULL)
		return;
	va_start(ap, fmt);
	if (vasprintf(&m->err, fmt, ap) == -1)
		m->err = NULL;
	va_end(ap);
	if (m->err == NULL)
		m->err = xstrdup("out of memory");
}

/* Append a quoted identifier. */
static void
dbm_ident(struct sbuf *sb, const char *s)
{
	sbuf_puts(sb, "\"");
	for (; *s != '\0'; s++) {
		if (*s == '"')
			sbuf_puts(sb, "\"\"");
		else
			sbuf_add(sb, s, 1);
	}
	sbuf_puts(sb, "\"");
}

/* The integer of a one-row query (?1 = arg when not NULL); a store code. */
static int
dbm_int(struct store *s, const char *sql, const char *arg, int64_t *v)
{
	struct store_stmt	*st;
	int			 rc;

	*v = 0;
	if ((rc = store_prepare(s, sql, 0, &st)) != STORE_OK)
		return rc;
	if (arg != NULL)
		store_bind_text(st, 1, arg, -1);
	if ((rc = store_step(st)) == STORE_ROW) {
		*v = store_column_int64(st, 0);
		rc = STORE_OK;
	} else if (rc == STORE_DONE)
		rc = STORE_OK;
	store_finalize(st);
	return rc;
}

/* "SELECT count(*) FROM t WHERE (where) AND (data)" on s. */
static int
dbm_count(struct store *s, const struct dbm_table *t, bool data, int64_t *n)
{
	struct sbuf	sb = { NULL, 0, 0 };
	int		rc;

	sbuf_puts(&sb, "SELECT count(*) FROM ");
	dbm_ident(&sb, t->name);
	sbuf_puts(&sb, " WHERE true");
	if (t->where != NULL)
		sbuf_printf(&sb, " AND (%s)", t->where);
	if (data && t->data != NULL)
		sbuf_printf(&sb, " AND (%s)", t->data);
	rc = dbm_int(s, sb.s, NULL, n);
	sbuf_free(&sb);
	return rc;
}

/*
 * Does the target hold mosgw data? Tables it lacks hold none (before its
 * migration). Fails naming each table that has rows.
 */
static int
dbm_target_empty(struct dbm *m, struct store *s)
{
	struct sbuf	 sb = { NULL, 0, 0 };
	int64_t		 has, n;
	size_t		 i;
	int		 rc;

	for (i = 0; i < DBM_NTABLES; i++) {
		rc = dbm_int(s, "SELECT CASE WHEN to_regclass(?1) IS NULL "
		    "THEN 0 ELSE 1 END", dbm_tables[i].name, &has);
		if (rc == STORE_OK && has)
			rc = dbm_count(s, &dbm_tables[i], true, &n);
		if (rc != STORE_OK) {
			dbm_fail(m, "%s: %s", m->to, store_errmsg(s));
			sbuf_free(&sb);
			return MOSCTL_EXIT_DB;
		}
		if (has && n > 0)
			sbuf_printf(&sb, "%s%s (%lld rows)", sb.len > 0 ?
			    ", " : "", dbm_tables[i].name, (long long)n);
	}
	if (sb.len == 0)
		return MOSCTL_EXIT_OK;
	dbm_fail(m, "%s already holds mosgw data: %s; mosctl db migrate only "
	    "fills an empty database (make a new one with createdb)", m->to,
	    sb.s);
	sbuf_free(&sb);
	return MOSCTL_EXIT_FAIL;
}

/* The source's schema version (what gives it: sql) must be ours. */
static int
dbm_version(struct dbm *m, const char *what, const char *sql, int ours)
{
	int64_t	v;

	if (dbm_int(m->src, sql, NULL, &v) == STORE_OK && v == ours)
		return 0;
	dbm_fail(m, "%s has %s schema version %lld; this mosctl copies "
	    "version %d%s", m->from, what, (long long)v, ours, v < ours ?
	    " (open it once with this mosctl, e.g. mosctl --db FILE job ls, "
	    "to bring it up to date)" : "");
	return -1;
}

/*
 * Every table of the source is one this program copies (or the search
 * index it builds again): nothing is left behind unnoticed.
 */
static int
dbm_source_tables(struct dbm *m)
{
	struct store_stmt	*st;
	const char		*name;
	size_t			 i;
	int			 rc;

	if (store_prepare(m->src, "SELECT name FROM sqlite_master WHERE "
	    "type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND "
	    "name <> 'asset_fts' AND name NOT LIKE 'asset\\_fts\\_%' "
	    "ESCAPE '\\' ORDER BY name", 0, &st) != STORE_OK) {
		dbm_fail(m, "%s: %s", m->from, store_errmsg(m->src));
		return MOSCTL_EXIT_DB;
	}
	while ((rc = store_step(st)) == STORE_ROW) {
		name = store_column_text(st, 0);
		for (i = 0; i < DBM_NTABLES; i++) {
			if (strcmp(dbm_tables[i].name, name) == 0)
				break;
		}
		if (i == DBM_NTABLES) {
			dbm_fail(m, "%s has a table this mosctl does not "
			    "know how to copy: %s", m->from, name);
			store_finalize(st);
			return MOSCTL_EXIT_FAIL;
		}
	}
	store_finalize(st);
	if (rc != STORE_DONE) {
		dbm_fail(m, "%s: %s", m->from, store_errmsg(m->src));
		return MOSCTL_EXIT_DB;
	}
	return MOSCTL_EXIT_OK;
}

/*
 * The source: an existing mosgw file at our schema versions, no daemon on
 * it, opened read-only with a read transaction open (the snapshot).
 */
static int
dbm_source_open(struct dbm *m)
{
	char		*why = NULL;
	int64_t		 v;
	int		 rc;

	if ((m->lockfd = open(m->from, O_RDONLY | O_CLOEXEC)) == -1) {
		dbm_fail(m, "no database at %s: %s (mosctl never creates one)",
		    m->from, strerror(errno));
		return MOSCTL_EXIT_DB;
	}
	/* the daemon holds an exclusive flock while it runs (gwdb_hold) */
	if (flock(m->lockfd, LOCK_SH | LOCK_NB) == -1) {
		if (errno == EWOULDBLOCK)
			dbm_fail(m, "%s is in use by a running mosgw (it holds "
			    "the file's lock): stop the daemon first", m->from);
		else
			dbm_fail(m, "%s: cannot lock: %s", m->from,
			    strerror(errno));
		return MOSCTL_EXIT_FAIL;
	}
	if (store_open_file(&m->src, m->from, STORE_OPEN_READONLY, &why) !=
	    STORE_OK) {
		dbm_fail(m, "%s: %s", m->from, why != NULL ? why : "?");
		free(why);
		return MOSCTL_EXIT_DB;
	}
	sqlite3_db_config(store_sqlite(m->src), SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
	    1, NULL);
	store_busy_timeout(m->src, 5000);
	if ((rc = store_begin(m->src, STORE_TX_READ)) != STORE_OK ||
	    (rc = dbm_int(m->src, "PRAGMA application_id", NULL, &v)) !=
	    STORE_OK) {
		dbm_fail(m, "%s is not a mosgw database: %s", m->from,
		    store_errmsg(m->src));
		return MOSCTL_EXIT_FAIL;
	}
	if (v != GWDB_APPLICATION_ID) {
		dbm_fail(m, "%s is not a mosgw database (its application_id is "
		    "%lld, not mosgw's %d)", m->from, (long long)v,
		    GWDB_APPLICATION_ID);
		return MOSCTL_EXIT_FAIL;
	}
	if (dbm_version(m, "queue", "PRAGMA user_version",
	    QUEUE_SCHEMA_VERSION) == -1 || dbm_version(m, "gateway",
	    "SELECT value FROM gw_meta WHERE key = 'schema_version'",
	    GWDB_SCHEMA_VERSION) == -1)
		return MOSCTL_EXIT_FAIL;
	return dbm_source_tables(m);
}

/* Free a table's columns. */
static void
dbm_cols_free(struct dbm_cols *c)
{
	int	i;

	for (i = 0; i < c->n; i++)
		free(c->name[i]);
	free(c->identity);
	memset(c, 0, sizeof *c);
}

/*
 * The target's columns of table t (generated ones left out), which must
 * be the source's, by name.
 */
static int
dbm_columns(struct dbm *m, const struct dbm_table *t, struct dbm_cols *c)
{
	struct store		*dst = m->g->db;
	struct store_stmt	*st;
	struct sbuf		 sb = { NULL, 0, 0 };
	const char		*name;
	int			 i, rc, nsrc = 0;
	bool			 found;

	memset(c, 0, sizeof *c);
	if ((rc = store_prepare(dst, "SELECT column_name, data_type, "
	    "CASE WHEN is_identity = 'YES' THEN 1 ELSE 0 END "
	    "FROM information_schema.columns WHERE table_schema = "
	    "current_schema() AND table_name = ?1 AND is_generated = 'NEVER' "
	    "ORDER BY ordinal_position", 0, &st)) != STORE_OK) {
		dbm_fail(m, "%s: %s", m->to, store_errmsg(dst));
		return -1;
	}
	store_bind_text(st, 1, t->name, -1);
	while ((rc = store_step(st)) == STORE_ROW && c->n < DBM_MAX_COLS) {
		c->name[c->n] = xstrdup(store_column_text(st, 0));
		c->bytea[c->n] = strcmp(store_column_text(st, 1), "bytea") == 0;
		if (store_column_int(st, 2) != 0 && c->identity == NULL)
			c->identity = xstrdup(c->name[c->n]);
		c->n++;
	}
	store_finalize(st);
	if (rc != STORE_DONE || c->n == 0) {
		dbm_fail(m, "%s: table %s: %s", m->to, t->name, rc != STORE_DONE
		    ? store_errmsg(dst) : "not found (or too many columns)");
		return -1;
	}
	/* every source column has its place in the target, and back */
	sbuf_puts(&sb, "PRAGMA table_info(");
	dbm_ident(&sb, t->name);
	sbuf_puts(&sb, ")");
	rc = store_prepare(m->src, sb.s, 0, &st);
	sbuf_free(&sb);
	if (rc != STORE_OK) {
		dbm_fail(m, "%s: %s", m->from, store_errmsg(m->src));
		return -1;
	}
	while ((rc = store_step(st)) == STORE_ROW) {
		name = store_column_text(st, 1);
		nsrc++;
		for (i = 0, found = false; i < c->n && !found; i++)
			found = strcmp(c->name[i], name) == 0;
		if (!found) {
			dbm_fail(m, "table %s: the source's column %s has no "
			    "place in the target", t->name, name);
			store_finalize(st);
			return -1;
		}
	}
	store_finalize(st);
	if (rc != STORE_DONE || nsrc != c->n) {
		dbm_fail(m, "table %s: %s", t->name, rc != STORE_DONE ?
		    store_errmsg(m->src) : "the target has columns the source "
		    "lacks");
		return -1;
	}
	return 0;
}

/* INSERT INTO t (cols) VALUES (?,...), ... for nrows rows. */
static int
dbm_insert_prepare(struct dbm *m, const struct dbm_table *t,
    const struct dbm_cols *c, int nrows, struct store_stmt **st)
{
	struct sbuf	sb = { NULL, 0, 0 };
	int		r, i, rc;

	sbuf_puts(&sb, "INSERT INTO ");
	dbm_ident(&sb, t->name);
	sbuf_puts(&sb, " (");
	for (i = 0; i < c->n; i++) {
		if (i > 0)
			sbuf_puts(&sb, ", ");
		dbm_ident(&sb, c->name[i]);
	}
	sbuf_puts(&sb, ") VALUES ");
	for (r = 0; r < nrows; r++) {
		sbuf_puts(&sb, r > 0 ? ", (" : "(");
		for (i = 0; i < c->n; i++)
			sbuf_printf(&sb, "%s?%d", i > 0 ? ", " : "",
			    r * c->n + i + 1);
		sbuf_puts(&sb, ")");
	}
	rc = store_prepare(m->g->db, sb.s, 0, st);
	sbuf_free(&sb);
	if (rc != STORE_OK) {
		dbm_fail(m, "%s: table %s: %s", m->to, t->name,
		    store_errmsg(m->g->db));
		return -1;
	}
	return 0;
}

/* One value of the source row as the text the target reads (malloc'd). */
static char *
dbm_value(struct dbm *m, const struct dbm_table *t, struct store_stmt *st,
    const struct dbm_cols *c, int i)
{
	static const char	 hex[] = "0123456789abcdef";
	const unsigned char	*b;
	const char		*s;
	char			*v;
	int			 n, k;

	if (store_column_is_null(st, i))
		return NULL;
	if (c->bytea[i]) {
		/* bytea's text form: \x and two hex digits a byte */
		b = store_column_blob(st, i);
		n = store_column_bytes(st, i);
		v = xcalloc(1, (size_t)n * 2 + 3);
		v[0] = '\\';
		v[1] = 'x';
		for (k = 0; k < n; k++) {
			v[2 + 2 * k] = hex[b[k] >> 4];
			v[3 + 2 * k] = hex[b[k] & 15];
		}
		return v;
	}
	s = store_column_text(st, i);
	n = store_column_bytes(st, i);
	if (s == NULL)
		s = "";
	if (memchr(s, '\0', (size_t)n) != NULL) {
		dbm_fail(m, "table %s, column %s: a text with a NUL byte, "
		    "which PostgreSQL cannot hold", t->name, c->name[i]);
		return NULL;
	}
	v = xcalloc(1, (size_t)n + 1);
	memcpy(v, s, (size_t)n);
	return v;
}

/* Insert the nrows rows held in vals; they are freed. */
static int
dbm_flush(struct dbm *m, const struct dbm_table *t, const struct dbm_cols *c,
    struct store_stmt *full, int per, char **vals, int nrows)
{
	struct store_stmt	*st = full;
	int			 i, rc;

	if (nrows < per && dbm_insert_prepare(m, t, c, nrows, &st) == -1)
		rc = STORE_ERROR;
	else {
		for (i = 0; i < nrows * c->n; i++) {
			if (vals[i] == NULL)
				store_bind_null(st, i + 1);
			else
				store_bind_text(st, i + 1, vals[i], -1);
		}
		if ((rc = store_step(st)) == STORE_DONE)
			rc = STORE_OK;
		else
			dbm_fail(m, "%s: table %s: %s", m->to, t->name,
			    store_errmsg(m->g->db));
		store_reset(st);
		if (st != full)
			store_finalize(st);
	}
	for (i = 0; i < nrows * c->n; i++) {
		free(vals[i]);
		vals[i] = NULL;
	}
	return rc == STORE_OK ? 0 : -1;
}

/*
 * The identity sequence of table t continues after its highest id, and
 * after the source's AUTOINCREMENT counter (ids of pruned rows).
 */
static int
dbm_identity(struct dbm *m, const struct dbm_table *t, const char *col)
{
	struct store_stmt	*st;
	struct sbuf		 sb = { NULL, 0, 0 };
	int64_t			 high, seq = 0, has;
	int			 rc;

	sbuf_puts(&sb, "SELECT coalesce(max(");
	dbm_ident(&sb, col);
	sbuf_puts(&sb, "), 0) FROM ");
	dbm_ident(&sb, t->name);
	rc = dbm_int(m->g->db, sb.s, NULL, &high);
	sbuf_free(&sb);
	if (rc != STORE_OK) {
		dbm_fail(m, "%s: %s", m->to, store_errmsg(m->g->db));
		return -1;
	}
	if (dbm_int(m->src, "SELECT count(*) FROM sqlite_master WHERE "
	    "name = 'sqlite_sequence'", NULL, &has) != STORE_OK || (has &&
	    dbm_int(m->src, "SELECT coalesce((SELECT seq FROM sqlite_sequence "
	    "WHERE name = ?1), 0)", t->name, &seq) != STORE_OK)) {
		dbm_fail(m, "%s: %s", m->from, store_errmsg(m->src));
		return -1;
	}
	if (seq > high)
		high = seq;
	if (high <= 0)
		return 0;
	if ((rc = store_prepare(m->g->db, "SELECT setval("
	    "pg_get_serial_sequence(?1, ?2), ?3)", 0, &st)) == STORE_OK) {
		store_bind_text(st, 1, t->name, -1);
		store_bind_text(st, 2, col, -1);
		store_bind_int64(st, 3, high);
		rc = store_step(st) == STORE_ROW ? STORE_OK : STORE_ERROR;
		store_finalize(st);
	}
	if (rc != STORE_OK) {
		dbm_fail(m, "%s: the sequence of %s: %s", m->to, t->name,
		    store_errmsg(m->g->db));
		return -1;
	}
	return 0;
}

/* Copy one table; *rows = how many. */
static int
dbm_copy(struct dbm *m, const struct dbm_table *t, int64_t *rows)
{
	struct dbm_cols		 c;
	struct store_stmt	*sel = NULL, *full = NULL;
	struct sbuf		 sb = { NULL, 0, 0 };
	char			*vals[DBM_MAX_PARAMS];
	int			 i, rc, per, k = 0, ret = -1;

	*rows = 0;
	memset(vals, 0, sizeof vals);
	if (dbm_columns(m, t, &c) == -1)
		return -1;
	per = DBM_MAX_PARAMS / c.n;
	if (per > DBM_MAX_ROWS)
		per = DBM_MAX_ROWS;
	if (t->seeded) {
		sbuf_puts(&sb, "DELETE FROM ");
		dbm_ident(&sb, t->name);
		rc = store_exec(m->g->db, sb.s);
		sbuf_free(&sb);
		if (rc != STORE_OK) {
			dbm_fail(m, "%s: %s", m->to, store_errmsg(m->g->db));
			goto out;
		}
	}
	sbuf_puts(&sb, "SELECT ");
	for (i = 0; i < c.n; i++) {
		if (i > 0)
			sbuf_puts(&sb, ", ");
		dbm_ident(&sb, c.name[i]);
	}
	sbuf_puts(&sb, " FROM ");
	dbm_ident(&sb, t->name);
	if (t->where != NULL)
		sbuf_printf(&sb, " WHERE %s", t->where);
	if (c.identity != NULL) {
		sbuf_puts(&sb, " ORDER BY ");
		dbm_ident(&sb, c.identity);
	}
	rc = store_prepare(m->src, sb.s, 0, &sel);
	sbuf_free(&sb);
	if (rc != STORE_OK) {
		dbm_fail(m, "%s: table %s: %s", m->from, t->name,
		    store_errmsg(m->src));
		goto out;
	}
	if (dbm_insert_prepare(m, t, &c, per, &full) == -1)
		goto out;
	while ((rc = store_step(sel)) == STORE_ROW) {
		for (i = 0; i < c.n; i++) {
			vals[k * c.n + i] = dbm_value(m, t, sel, &c, i);
			if (m->err != NULL)
				goto out;
		}
		if (++k == per) {
			if (dbm_flush(m, t, &c, full, per, vals, k) == -1)
				goto out;
			*rows += k;
			k = 0;
		}
	}
	if (rc != STORE_DONE) {
		dbm_fail(m, "%s: table %s: %s", m->from, t->name,
		    store_errmsg(m->src));
		goto out;
	}
	if (k > 0 && dbm_flush(m, t, &c, full, per, vals, k) == -1)
		goto out;
	*rows += k;
	k = 0;
	ret = 0;
out:
	for (i = 0; i < DBM_MAX_PARAMS; i++)
		free(vals[i]);
	store_finalize(sel);
	store_finalize(full);
	if (ret == 0 && c.identity != NULL)
		ret = dbm_identity(m, t, c.identity);
	dbm_cols_free(&c);
	return ret;
}

/* The rows of each table on both sides are the rows copied. */
static int
dbm_verify(struct dbm *m)
{
	int64_t		 ns, nd;
	size_t		 i;

	for (i = 0; i < DBM_NTABLES; i++) {
		if (dbm_count(m->src, &dbm_tables[i], false, &ns) != STORE_OK) {
			dbm_fail(m, "%s: %s", m->from, store_errmsg(m->src));
			return -1;
		}
		if (dbm_count(m->g->db, &dbm_tables[i], false, &nd) !=
		    STORE_OK) {
			dbm_fail(m, "%s: %s", m->to, store_errmsg(m->g->db));
			return -1;
		}
		if (ns != m->rows[i] || nd != m->rows[i]) {
			dbm_fail(m, "table %s: %lld rows in the source, %lld "
			    "copied, %lld in the target", dbm_tables[i].name,
			    (long long)ns, (long long)m->rows[i],
			    (long long)nd);
			return -1;
		}
	}
	return 0;
}

/*
 * Jobs RUNNING in the source were held by a daemon that is gone: due again
 * at once, their attempt counted (FAILED when it was the last), as the
 * queue takes back a dead worker's jobs (queue_release_all).
 */
static int
dbm_release(struct dbm *m)
{
	size_t	n;

	if (queue_release_all(m->g->q, &n) != QUEUE_OK) {
		dbm_fail(m, "%s: taking back the running jobs: %s", m->to,
		    queue_errmsg(m->g->q));
		return -1;
	}
	m->released = (int64_t)n;
	return 0;
}

/* Everything in one transaction on the target; 0 when committed. */
static int
dbm_run(struct dbm *m)
{
	struct store	*dst = m->g->db;
	size_t		 i;
	int		 rc;

	if ((rc = queue_tx_begin(m->g->q)) != QUEUE_OK) {
		dbm_fail(m, "%s: cannot start the transaction: %s", m->to,
		    store_errmsg(dst));
		return MOSCTL_EXIT_DB;
	}
	/* a daemon may have filled it since it was first looked at */
	if ((rc = dbm_target_empty(m, dst)) != MOSCTL_EXIT_OK)
		goto fail;
	rc = MOSCTL_EXIT_DB;
	if (store_exec(dst, DBM_TRIGGERS("DISABLE")) != STORE_OK) {
		dbm_fail(m, "%s: %s (the tables must belong to the user of "
		    "the dsn)", m->to, store_errmsg(dst));
		goto fail;
	}
	for (i = 0; i < DBM_NTABLES; i++) {
		if (dbm_copy(m, &dbm_tables[i], &m->rows[i]) == -1)
			goto fail;
		m->total += m->rows[i];
	}
	if (dbm_verify(m) == -1)
		goto fail;
	if (store_exec(dst, DBM_TRIGGERS("ENABLE")) != STORE_OK) {
		dbm_fail(m, "%s: %s", m->to, store_errmsg(dst));
		goto fail;
	}
	if (dbm_release(m) == -1)
		goto fail;
	if (store_exec(dst, gwdb_pg_fts_fill) != STORE_OK ||
	    dbm_int(dst, "SELECT count(*) FROM asset_fts", NULL,
	    &m->indexed) != STORE_OK) {
		dbm_fail(m, "%s: the search index: %s", m->to,
		    store_errmsg(dst));
		goto fail;
	}
	if (queue_tx_commit(m->g->q) != QUEUE_OK) {
		dbm_fail(m, "%s: commit: %s", m->to, store_errmsg(dst));
		return MOSCTL_EXIT_DB;
	}
	/* planner statistics for the new rows (outside the transaction) */
	store_exec(dst, "ANALYZE");
	return MOSCTL_EXIT_OK;
fail:
	queue_tx_rollback(m->g->q);
	return rc;
}

/* The table of rows copied, and the time taken. */
static void
dbm_report(struct dbm *m, double secs)
{
	json_t	*o, *a;
	char	*s;
	size_t	 i;

	if (m->ctl->json) {
		a = json_array();
		for (i = 0; i < DBM_NTABLES; i++)
			json_array_append_new(a, json_pack("{s:s, s:I}",
			    "table", dbm_tables[i].name, "rows",
			    (json_int_t)m->rows[i]));
		o = json_pack("{s:s, s:s, s:o, s:I, s:I, s:I, s:I}",
		    "from", m->from, "to", m->to, "tables", a,
		    "rows", (json_int_t)m->total,
		    "released", (json_int_t)m->released,
		    "indexed", (json_int_t)m->indexed,
		    "ms", (json_int_t)(secs * 1000));
		if (o != NULL && (s = json_dumps(o, JSON_COMPACT)) != NULL) {
			fprintf(m->ctl->out, "%s\n", s);
			free(s);
		}
		json_decref(o);
		return;
	}
	fprintf(m->ctl->out, "%-16s %10s\n", "TABLE", "ROWS");
	for (i = 0; i < DBM_NTABLES; i++)
		fprintf(m->ctl->out, "%-16s %10lld\n", dbm_tables[i].name,
		    (long long)m->rows[i]);
	fprintf(m->ctl->out, "%-16s %10lld (built on the target)\n",
	    "asset_fts", (long long)m->indexed);
	if (m->released > 0)
		fprintf(m->ctl->out, "%lld running job(s) taken back: due "
		    "again (FAILED when their last attempt was used)\n",
		    (long long)m->released);
	fprintf(m->ctl->out, "copied %lld rows from %s to %s in %.2f s\n",
	    (long long)m->total, m->from, m->to, secs);
}

/* mosctl db migrate --from FILE.db --to DSN */
static int
dbm_migrate(struct mosctl *ctl, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "from", required_argument, NULL, 'f' },
		{ "to", required_argument, NULL, 't' },
		{ NULL, 0, NULL, 0 },
	};
	struct gwdb_opts	 o;
	struct timespec		 t0, t1;
	struct store_conf	 sc;
	struct store		*probe = NULL;
	struct dbm		 m;
	const char		*why;
	char			*err = NULL;
	int			 c, rc;

	memset(&m, 0, sizeof m);
	m.ctl = ctl;
	m.lockfd = -1;
	optind = 0;
	while ((c = job_getopt(ctl, argc, argv, longopts)) != -1) {
		switch (c) {
		case 'f':
			m.from = optarg;
			break;
		case 't':
			m.dsn = optarg;
			break;
		default:
			return MOSCTL_EXIT_USAGE;
		}
	}
	if (optind != argc || m.from == NULL || m.dsn == NULL) {
		fprintf(ctl->err, "usage: mosctl db migrate --from FILE.db "
		    "--to DSN [--json]\n");
		return MOSCTL_EXIT_USAGE;
	}
	if ((why = store_dsn_check(m.dsn)) != NULL) {
		fprintf(ctl->err, "mosctl db migrate: --to: %s\n", why);
		return MOSCTL_EXIT_USAGE;
	}
	if ((m.to = store_dsn_redact(m.dsn)) == NULL) {
		fprintf(ctl->err, "mosctl: out of memory\n");
		return MOSCTL_EXIT_FAIL;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if ((rc = dbm_source_open(&m)) != MOSCTL_EXIT_OK)
		goto out;
	/* refuse a target with data before its schema is touched */
	memset(&sc, 0, sizeof sc);
	sc.driver = STORE_POSTGRESQL;
	sc.dsn = m.dsn;
	if (store_open(&probe, &sc, 0, &err) != STORE_OK) {
		dbm_fail(&m, "%s: %s", m.to, err != NULL ? err : "?");
		rc = MOSCTL_EXIT_DB;
		goto out;
	}
	if ((rc = dbm_target_empty(&m, probe)) != MOSCTL_EXIT_OK)
		goto out;
	store_close(probe);
	probe = NULL;
	memset(&o, 0, sizeof o);
	o.driver = STORE_POSTGRESQL;
	o.dsn = m.dsn;
	o.must_exist = true;
	if (gwdb_open(&m.g, &o, &err) != QUEUE_OK) {
		dbm_fail(&m, "%s", err != NULL ? err : "?");
		rc = MOSCTL_EXIT_DB;
		goto out;
	}
	/* one statement may fill the search index of a large catalog */
	store_answer_timeout(m.g->db, DBM_ANSWER_MS);
	if ((rc = dbm_run(&m)) != MOSCTL_EXIT_OK)
		goto out;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	dbm_report(&m, (double)(t1.tv_sec - t0.tv_sec) +
	    (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
out:
	if (rc != MOSCTL_EXIT_OK)
		fprintf(ctl->err, "mosctl db migrate: %s; nothing was "
		    "copied\n", m.err != NULL ? m.err : "failed");
	store_close(probe);
	gwdb_close(m.g);
	/* the source after SQLite let go of it: then its flock */
	store_close(m.src);
	if (m.lockfd != -1)
		close(m.lockfd);
	free(m.to);
	free(m.err);
	free(err);
	return rc;
}

int
mosctl_db(struct mosctl *ctl, int argc, char **argv)
{
	static const struct mosctl_verb verbs[] = {
		{ "migrate", dbm_migrate },
		{ NULL, NULL },
	};

	return mosctl_dispatch(ctl, "db", verbs, mosctl_db_usage, argc, argv);
}
