/*
 * Search over the catalog (Profile 3 mosReqObjList): a general search on
 * the FTS5 index (slug, abstract, description, external metadata text,
 * ranked by bm25 with the slug weighing most), field searches on a fixed
 * list of catalog columns, sorting, and paging with the total count.
 *
 * The field searches come as the searchField XPath attribute of the MOS
 * message, in the small form docs/gateway.md describes:
 *   /objSlug[.='Dog bites man']      equality (text compares ignore case)
 *   objDur[. > 60 and < 120]         comparisons: = != < <= > >=
 *   description[contains(., 'fire')] substring, ignoring case
 *   /changed                         no predicate: only sorts
 * The SQL is built only from the column table below and bound values.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gateway/gateway.h"

enum sf_kind {
	SF_TEXT = 0,
	SF_NUM = 1,
	SF_TIME = 2,
};

static const struct search_col {
	const char	*name;		/* MOS element name */
	const char	*alias;		/* short name, or NULL */
	const char	*col;
	enum sf_kind	 kind;
} search_cols[] = {
	{ "objID", "id", "a.obj_id", SF_TEXT },
	{ "objSlug", "slug", "a.slug", SF_TEXT },
	{ "objType", "type", "a.type", SF_TEXT },
	{ "objGroup", "group", "a.obj_group", SF_TEXT },
	{ "objAir", "air", "a.air", SF_TEXT },
	{ "objDur", "dur", "a.dur", SF_NUM },
	{ "status", NULL, "a.status", SF_TEXT },
	{ "createdBy", NULL, "a.created_by", SF_TEXT },
	{ "created", NULL, "a.created", SF_TIME },
	{ "changedBy", NULL, "a.changed_by", SF_TEXT },
	{ "changed", NULL, "a.changed", SF_TIME },
	{ "mosAbstract", "abstract", "a.abstract", SF_TEXT },
	{ "description", NULL, "a.description", SF_TEXT },
};

static const char *const search_op_sql[] = {
	[SEARCH_EQ] = "=", [SEARCH_NE] = "!=", [SEARCH_LT] = "<",
	[SEARCH_LE] = "<=", [SEARCH_GT] = ">", [SEARCH_GE] = ">=",
};

/* The searchable element names, comma separated (for messages and docs). */
const char *
search_field_names(void)
{
	return "objID, objSlug, objType, objGroup, objAir, objDur, status, "
	    "createdBy, created, changedBy, changed, mosAbstract, description";
}

/* Skip white space. */
static const char *
search_ws(const char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	return p;
}

/* The column of an element name (last path step), or -1. */
static int
search_col_find(const char *name, size_t len)
{
	size_t	i;

	for (i = 0; i < nitems(search_cols); i++) {
		if ((strlen(search_cols[i].name) == len &&
		    strncasecmp(search_cols[i].name, name, len) == 0) ||
		    (search_cols[i].alias != NULL &&
		    strlen(search_cols[i].alias) == len &&
		    strncasecmp(search_cols[i].alias, name, len) == 0))
			return (int)i;
	}
	return -1;
}

/* A comparison operator at p; its length, 0 if none. */
static size_t
search_op(const char *p, enum search_op *op)
{
	static const struct {
		const char	*s;
		enum search_op	 op;
	} ops[] = { { "!=", SEARCH_NE }, { "<=", SEARCH_LE },
	    { ">=", SEARCH_GE }, { "=", SEARCH_EQ }, { "<", SEARCH_LT },
	    { ">", SEARCH_GT } };
	size_t	i;

	for (i = 0; i < nitems(ops); i++) {
		if (strncmp(p, ops[i].s, strlen(ops[i].s)) == 0) {
			*op = ops[i].op;
			return strlen(ops[i].s);
		}
	}
	return 0;
}

/* A quoted or bare value at *pp; NULL if there is none. */
static char *
search_value(const char **pp)
{
	const char	*p = search_ws(*pp), *e;
	char		*v;

	if (*p == '\'' || *p == '"') {
		if ((e = strchr(p + 1, *p)) == NULL)
			return NULL;
		v = xstrndup(p + 1, (size_t)(e - p - 1));
		*pp = e + 1;
		return v;
	}
	e = p;
	while (*e != '\0' && *e != ']' && *e != ')' && !isspace((unsigned char)*e))
		e++;
	if (e == p)
		return NULL;
	v = xstrndup(p, (size_t)(e - p));
	*pp = e;
	return v;
}

/* Check a value against its column kind. */
static int
search_check_value(const struct search_cond *c, char **err)
{
	const struct search_col	*sc = &search_cols[c->col];
	struct mos_time		 t;
	int64_t			 v;
	char			*end;

	if (c->op == SEARCH_CONTAINS) {
		if (sc->kind != SF_TEXT) {
			xasprintf(err, "contains() needs a text field, not %s",
			    sc->name);
			return -1;
		}
		return 0;
	}
	switch (sc->kind) {
	case SF_NUM:
		v = strtoll(c->value, &end, 10);
		if (*c->value == '\0' || *end != '\0' || v < 0) {
			xasprintf(err, "%s compares with a whole number, not "
			    "'%.40s'", sc->name, c->value);
			return -1;
		}
		break;
	case SF_TIME:
		if (mos_time_parse(c->value, MOS_LENIENT, &t) != 0 &&
		    util_parse_iso_ms(c->value, &v) != 0) {
			xasprintf(err, "%s compares with a time "
			    "(YYYY-MM-DDThh:mm:ss), not '%.40s'", sc->name,
			    c->value);
			return -1;
		}
		break;
	default:
		break;
	}
	return 0;
}

/* Add one condition to q. */
static struct search_cond *
search_add_cond(struct search_query *q, int group, int col,
    enum search_op op, char *value)
{
	struct search_cond	*c;

	q->cond = xreallocarray(q->cond, q->ncond + 1, sizeof *q->cond);
	c = &q->cond[q->ncond++];
	c->group = group;
	c->col = col;
	c->op = op;
	c->value = value;
	return c;
}

/* The predicate "[...]" of a searchField; p is past the '['. */
static int
search_predicate(struct search_query *q, int group, int col, const char *p,
    char **err)
{
	struct search_cond	*c;
	enum search_op		 op;
	char			*v;
	size_t			 n;
	int			 k;

	p = search_ws(p);
	if (strncasecmp(p, "contains(", 9) == 0) {
		p = search_ws(p + 9);
		if (*p != '.' || *(p = search_ws(p + 1)) != ',')
			goto bad;
		p++;
		if ((v = search_value(&p)) == NULL)
			goto bad;
		c = search_add_cond(q, group, col, SEARCH_CONTAINS, v);
		p = search_ws(p);
		if (*p != ')' || *(p = search_ws(p + 1)) != ']')
			goto bad;
		return search_check_value(c, err);
	}
	for (k = 0; k < 2; k++) {
		if (*p == '.')
			p = search_ws(p + 1);
		else if (k == 0)
			goto bad;
		if ((n = search_op(p, &op)) == 0)
			goto bad;
		p += n;
		if ((v = search_value(&p)) == NULL)
			goto bad;
		c = search_add_cond(q, group, col, op, v);
		if (search_check_value(c, err) != 0)
			return -1;
		p = search_ws(p);
		if (*p == ']')
			return 0;
		if (k == 0 && strncasecmp(p, "and", 3) == 0 &&
		    isspace((unsigned char)p[3])) {
			p = search_ws(p + 3);
			continue;
		}
		break;
	}
bad:
	xasprintf(err, "cannot read the predicate of XPath '%s' (use "
	    "[.='text'], [. > n and < m] or [contains(., 'text')])",
	    q->xpath_seen);
	return -1;
}

/*
 * One searchField: its XPath (a condition in group `group`, or only a sort
 * key), sortByOrder and sortType. -1 and *err for what it cannot read.
 */
int
search_add_field(struct search_query *q, int group, const char *xpath,
    const char *sort_order, const char *sort_type, char **err)
{
	const char	*p, *name, *end;
	char		*e;
	long		 order;
	int		 col;

	q->xpath_seen = xpath != NULL ? xpath : "";
	p = search_ws(q->xpath_seen);
	end = p + strcspn(p, "[");
	while (end > p && isspace((unsigned char)end[-1]))
		end--;
	while (end > p && end[-1] == '/')
		end--;
	for (name = end; name > p && name[-1] != '/'; name--)
		;
	if ((col = search_col_find(name, (size_t)(end - name))) < 0) {
		xasprintf(err, "no searchable field '%.*s' (fields: %s)",
		    (int)(end - name), name, search_field_names());
		return -1;
	}
	if ((p = strchr(p, '[')) != NULL &&
	    search_predicate(q, group, col, p + 1, err) != 0)
		return -1;
	if (sort_order != NULL && *sort_order != '\0') {
		order = strtol(sort_order, &e, 10);
		if (*e != '\0' || order < 0) {
			xasprintf(err, "sortByOrder must be a number, not "
			    "'%.20s'", sort_order);
			return -1;
		}
		q->sort = xreallocarray(q->sort, q->nsort + 1,
		    sizeof *q->sort);
		q->sort[q->nsort].col = col;
		q->sort[q->nsort].order = (int)order;
		q->sort[q->nsort].desc = sort_type != NULL &&
		    strncasecmp(sort_type, "DESC", 4) == 0;
		q->nsort++;
	}
	return 0;
}

/* Free what a query holds. */
void
search_query_clear(struct search_query *q)
{
	size_t	i;

	for (i = 0; i < q->ncond; i++)
		free(q->cond[i].value);
	free(q->cond);
	free(q->sort);
	memset(q, 0, sizeof *q);
}

/*
 * The general search as an FTS5 query: every word must occur (a trailing
 * '*' asks for a prefix); words are quoted, so the user's text is never
 * FTS5 syntax. Returns false when no word is left.
 */
bool
search_fts_query(struct sbuf *sb, const char *text)
{
	const char	*p = text, *w;
	size_t		 len, i;
	bool		 any = false, prefix, word;

	while (*(p = search_ws(p)) != '\0') {
		w = p;
		while (*p != '\0' && !isspace((unsigned char)*p))
			p++;
		len = (size_t)(p - w);
		prefix = len > 1 && w[len - 1] == '*';
		if (prefix)
			len--;
		for (word = false, i = 0; i < len && !word; i++)
			word = isalnum((unsigned char)w[i]) ||
			    (unsigned char)w[i] >= 0x80;
		if (!word)
			continue;
		sbuf_add(sb, any ? " \"" : "\"", any ? 2 : 1);
		for (i = 0; i < len; i++) {
			sbuf_add(sb, w + i, 1);
			if (w[i] == '"')
				sbuf_add(sb, "\"", 1);	/* "" inside "..." */
		}
		sbuf_puts(sb, prefix ? "\"*" : "\"");
		any = true;
	}
	return any;
}

/* Sort keys in sortByOrder order. */
static int
search_sort_cmp(const void *a, const void *b)
{
	const struct search_sort	*x = a, *y = b;

	return (x->order > y->order) - (x->order < y->order);
}

/*
 * With a general search, the matches and their rank come first, computed
 * where the index can (bm25 cannot be called beside a window function).
 * On PostgreSQL the tsvector column is matched against mosgw_tsquery() of
 * the same FTS5 query text (gwdb_pg.c).
 */
static void
search_with(struct sbuf *sb, bool fts, bool pg)
{
	if (fts && pg)
		sbuf_puts(sb, "WITH f(id, r) AS MATERIALIZED (SELECT id, "
		    GWDB_PG_RANK " FROM asset_fts, mosgw_tsquery(?) q"
		    " WHERE tsv @@ q) ");
	else if (fts)
		sbuf_puts(sb, "WITH f(id, r) AS MATERIALIZED (SELECT rowid, "
		    GWDB_RANK " FROM asset_fts WHERE asset_fts MATCH ?) ");
}

/*
 * FROM and WHERE of the query (the same for the count and the page). Text
 * compares ignore ASCII case: COLLATE NOCASE on SQLite, lower() of both
 * sides on PostgreSQL.
 */
static void
search_from_where(struct sbuf *sb, const struct search_query *q, bool fts,
    bool pg)
{
	const struct search_col	*sc;
	size_t			 i;
	int			 group = -1;

	if (fts)	/* the matches, ranked, from search_with */
		sbuf_puts(sb, " FROM f JOIN asset_key k ON k.id = f.id"
		    " JOIN assets a ON a.obj_id = k.obj_id");
	else
		sbuf_puts(sb, " FROM assets a");
	sbuf_puts(sb, " WHERE a.deleted = 0");
	if (q->ncond == 0)
		return;
	sbuf_puts(sb, " AND ((");
	for (i = 0; i < q->ncond; i++) {
		sc = &search_cols[q->cond[i].col];
		if (group != -1)
			sbuf_puts(sb, q->cond[i].group == group ? " AND " :
			    ") OR (");
		group = q->cond[i].group;
		if (q->cond[i].op == SEARCH_CONTAINS)
			sbuf_printf(sb, "%s(lower(coalesce(%s, '')),"
			    " lower(?)) > 0", pg ? "strpos" : "instr", sc->col);
		else if (pg && sc->kind == SF_TEXT)
			sbuf_printf(sb, "lower(%s) %s lower(?)", sc->col,
			    search_op_sql[q->cond[i].op]);
		else
			sbuf_printf(sb, "%s %s ?%s", sc->col,
			    search_op_sql[q->cond[i].op],
			    sc->kind == SF_TEXT ? " COLLATE NOCASE" : "");
	}
	sbuf_puts(sb, "))");
}

/* Bind the values of a statement built by search_from_where. */
static int
search_bind(struct store_stmt *st, const struct search_query *q,
    const char *fts)
{
	const struct search_col	*sc;
	struct mos_time		 t;
	int64_t			 v;
	size_t			 i;
	int			 k = 1;

	if (fts != NULL)
		store_bind_text(st, k++, fts, -1);
	for (i = 0; i < q->ncond; i++, k++) {
		sc = &search_cols[q->cond[i].col];
		if (q->cond[i].op == SEARCH_CONTAINS || sc->kind == SF_TEXT)
			store_bind_text(st, k, q->cond[i].value, -1);
		else if (sc->kind == SF_NUM)
			store_bind_int64(st, k, strtoll(q->cond[i].value,
			    NULL, 10));
		else {
			if (mos_time_parse(q->cond[i].value, MOS_LENIENT,
			    &t) == 0)
				v = mos_time_utc_ms(&t);
			else if (util_parse_iso_ms(q->cond[i].value, &v) != 0)
				v = 0;
			store_bind_int64(st, k, v);
		}
	}
	return k;
}

/* Prepare one statement; its SQLite error in *err on failure. */
static struct store_stmt *
search_prepare(struct gwdb *g, const char *sql, char **err)
{
	struct store_stmt	*st = NULL;

	if (store_prepare(g->db, sql, 0, &st) != STORE_OK) {
		xasprintf(err, "search: %s", gwdb_errmsg(g));
		store_finalize(st);
		return NULL;
	}
	return st;
}

/* Step a page statement into out; the rows' children after. */
static int
search_rows(struct gwdb *g, struct store_stmt *st, struct catalog_asset *out,
    size_t max, size_t *n)
{
	size_t	i;
	int	rc = STORE_DONE;

	while (*n < max && (rc = store_step(st)) == STORE_ROW)
		catalog_row(st, &out[(*n)++]);
	if (*n < max && rc != STORE_DONE)
		return QUEUE_EIO;
	store_reset(st);
	for (i = 0; i < *n; i++) {
		if (catalog_load_children(g, &out[i]) != QUEUE_OK)
			return QUEUE_EIO;
	}
	return QUEUE_OK;
}

/*
 * The rows of a page statement (objID, total of all matches) read in full
 * into out, in order; *total from the first row (0 when there is none).
 */
static int
search_page(struct gwdb *g, struct store_stmt *st, struct catalog_asset *out,
    size_t max, size_t *n, int64_t *total)
{
	char	**ids;
	size_t	  nids = 0, i;
	int	  rc;

	ids = xcalloc(max + 1, sizeof *ids);
	rc = STORE_DONE;
	while (nids < max && (rc = store_step(st)) == STORE_ROW) {
		ids[nids++] = xstrdup(store_column_text(st, 0));
		*total = store_column_int64(st, 1);
	}
	rc = rc == STORE_ROW || rc == STORE_DONE ? QUEUE_OK : QUEUE_EIO;
	store_reset(st);
	for (i = 0; i < nids && rc == QUEUE_OK; i++) {
		if ((rc = catalog_get(g, ids[i], &out[*n])) != QUEUE_OK) {
			catalog_asset_clear(&out[*n]);
			break;
		}
		(*n)++;
	}
	for (i = 0; i < nids; i++)
		free(ids[i]);
	free(ids);
	return rc == QUEUE_OK ? QUEUE_OK : QUEUE_EIO;
}

/*
 * Only a general search: the index alone counts (deleted assets have no
 * index row) and ranks the page before its rows are looked up, with the
 * named statements of gwdb.c.
 */
static int
search_fts_only(struct gwdb *g, const char *fts, const struct search_query *q,
    struct catalog_asset *out, size_t max, size_t *n, int64_t *total)
{
	struct store_stmt	*st;
	int		 rc;

	st = gwdb_stmt(g, ST_SEARCH_COUNT);
	store_bind_text(st, 1, fts, -1);
	if ((rc = store_step(st)) == STORE_ROW)
		*total = store_column_int64(st, 0);
	store_reset(st);
	if (rc != STORE_ROW)
		return gwdb_rc(rc) == QUEUE_OK ? QUEUE_EIO : gwdb_rc(rc);
	if (*total <= q->offset || max == 0)
		return QUEUE_OK;
	st = gwdb_stmt(g, ST_SEARCH_PAGE);
	store_bind_text(st, 1, fts, -1);
	store_bind_int64(st, 2, (int64_t)max);
	store_bind_int64(st, 3, q->offset);
	rc = search_rows(g, st, out, max, n);
	store_reset(st);
	return rc;
}

/* A general search with a word in it (else search_run lists everything). */
bool
search_has_word(const char *text)
{
	struct sbuf	fts = { NULL, 0, 0 };
	bool		word = search_fts_query(&fts, text);

	sbuf_free(&fts);
	return word;
}

/*
 * Run a query: up to max assets from q->offset on (in *n, with their paths
 * and metadata) and the number of all that match (*total).
 */
int
search_run(struct gwdb *g, const struct search_query *q,
    struct catalog_asset *out, size_t max, size_t *n, int64_t *total,
    char **err)
{
	struct sbuf		 fts = { NULL, 0, 0 }, sql = { NULL, 0, 0 };
	struct search_sort	*sort = NULL;
	struct store_stmt	*st = NULL;
	bool			 text, pg = gwdb_is_pg(g);
	size_t			 i;
	int			 rc, k;

	*n = 0;
	*total = 0;
	text = q->text != NULL && search_fts_query(&fts, q->text);
	if (text && q->ncond == 0 && q->nsort == 0) {
		if ((rc = search_fts_only(g, fts.s, q, out, max, n, total)) !=
		    QUEUE_OK) {
			xasprintf(err, "search: %s", gwdb_errmsg(g));
			goto fail;
		}
		goto done;
	}
	/*
	 * One pass: the page's objIDs in order, each with the count of all
	 * matches; then only the page's rows are read in full.
	 */
	search_with(&sql, text, pg);
	sbuf_puts(&sql, "SELECT a.obj_id, count(*) OVER ()");
	search_from_where(&sql, q, text, pg);
	sbuf_puts(&sql, " ORDER BY ");
	if (q->nsort > 0) {
		sort = xreallocarray(NULL, q->nsort, sizeof *sort);
		memcpy(sort, q->sort, q->nsort * sizeof *sort);
		qsort(sort, q->nsort, sizeof *sort, search_sort_cmp);
		for (i = 0; i < q->nsort; i++)
			sbuf_printf(&sql, "%s%s, ", search_cols[sort[i].col].col,
			    sort[i].desc ? " DESC" : "");
		free(sort);
	}
	if (text)
		sbuf_puts(&sql, "f.r, k.id");
	else
		sbuf_puts(&sql, pg ? "lower(a.slug), a.obj_id" :
		    "a.slug COLLATE NOCASE, a.obj_id");
	sbuf_puts(&sql, " LIMIT ? OFFSET ?");
	if ((st = search_prepare(g, sql.s, err)) == NULL)
		goto fail;
	k = search_bind(st, q, text ? fts.s : NULL);
	store_bind_int64(st, k, (int64_t)(max > 0 ? max : 1));
	store_bind_int64(st, k + 1, q->offset);
	rc = search_page(g, st, out, max, n, total);
	store_finalize(st);
	st = NULL;
	if (rc != QUEUE_OK) {
		xasprintf(err, "search: %s", gwdb_errmsg(g));
		goto fail;
	}
	if (*n > 0 || (q->offset == 0 && max > 0))
		goto done;
	/* past the end (or no room): the total alone */
	sql.len = 0;
	search_with(&sql, text, pg);
	sbuf_puts(&sql, "SELECT count(*)");
	search_from_where(&sql, q, text, pg);
	if ((st = search_prepare(g, sql.s, err)) == NULL)
		goto fail;
	search_bind(st, q, text ? fts.s : NULL);
	if ((rc = store_step(st)) == STORE_ROW)
		*total = store_column_int64(st, 0);
	store_finalize(st);
	if (rc != STORE_ROW) {
		xasprintf(err, "search: %s", gwdb_errmsg(g));
		goto fail;
	}
done:
	sbuf_free(&fts);
	sbuf_free(&sql);
	return QUEUE_OK;
fail:
	for (i = 0; i < *n; i++)
		catalog_asset_clear(&out[i]);
	*n = 0;
	sbuf_free(&fts);
	sbuf_free(&sql);
	return QUEUE_EIO;
}
