/*
 * Integration history: every frame sent or received, kept in memory (the
 * wire bytes as they are) until the next flush transaction, a few ms later,
 * which the bookkeeping thread runs (dbw.c): it converts UTF-16 to UTF-8
 * and inserts the rows, so history never slows a link. Then the rows stay
 * in the history table until pruned. Exported as a capture: JSON Lines,
 * see conformance/capture.md.
 */
#include <stdlib.h>
#include <string.h>

#include "gateway/gateway.h"

#define HISTORY_MAX_PENDING	50000	/* beyond this,
    rows are dropped (logged) */
#define HISTORY_PRUNE_BATCH	1000

struct history {
	struct gwdb		*db;
	bool			 enabled;
	struct history_rec	*v;
	size_t			 n;
	size_t			 cap;
	size_t			 flushed;
	uint64_t		 dropped;
};

/* A history writer for the daemon. */
struct history *
history_new(struct gwdb *db, bool enabled)
{
	struct history	*h;

	h = xcalloc(1, sizeof *h);
	h->db = db;
	h->enabled = enabled;
	return h;
}

/* Free one record's strings. */
static void
history_rec_clear(struct history_rec *r)
{
	free(r->ncs);
	free(r->type);
	free(r->outcome);
	free(r->xml);
}

/* Free the writer and what was never flushed. */
void
history_free(struct history *h)
{
	size_t	i;

	if (h == NULL)
		return;
	for (i = 0; i < h->n; i++)
		history_rec_clear(&h->v[i]);
	free(h->v);
	free(h);
}

/* Turn recording on or off (config reload). */
void
history_set_enabled(struct history *h, bool on)
{
	h->enabled = on;
}

/* Record one frame; the XML is stored as UTF-8. */
void
history_add(struct history *h, const char *ncs, enum gw_port port,
    enum history_dir dir, uint64_t conn, int32_t message_id, const char *type,
    const char *outcome, const void *data, size_t len, enum mos_enc enc)
{
	struct history_rec	*r;
	char			*copy;

	metrics_message(type, dir);
	if (h == NULL || !h->enabled)
		return;
	if (h->n >= HISTORY_MAX_PENDING) {
		if (h->dropped++ % 10000 == 0)
			log_event(LL_WARN, "history.dropped", "pending=%zu "
			    "dropped=%llu",
			    h->n, (unsigned long long)h->dropped);
		return;
	}
	if (h->n == h->cap) {
		h->cap = h->cap == 0 ? 64 : h->cap * 2;
		h->v = xreallocarray(h->v, h->cap, sizeof *h->v);
	}
	/* the wire bytes as they are: converted to UTF-8 at flush time */
	copy = xmalloc(len + 1);
	memcpy(copy, data, len);
	copy[len] = '\0';
	r = &h->v[h->n++];
	r->id = 0;
	r->t_ms = queue_now(h->db->q);
	r->ncs = xstrdup(ncs != NULL ? ncs : "");
	r->port = port;
	r->dir = dir;
	r->conn = conn;
	r->message_id = message_id;
	r->type = xstrdup(type != NULL && *type != '\0' ? type : "unknown");
	r->outcome = xstrdup(outcome != NULL ? outcome : "");
	r->xml = copy;
	r->raw_len = len;
	r->enc = enc;
}

/* Convert a pending row's wire bytes to UTF-8 (once). */
static void
history_to_utf8(struct history_rec *r)
{
	struct sbuf	sb = { NULL, 0, 0 };

	if (r->enc != MOS_ENC_UTF16BE)
		return;
	util_utf16be_to_utf8(&sb, (const uint8_t *)r->xml, r->raw_len);
	free(r->xml);
	r->xml = sb.s != NULL ? sb.s : xstrdup("");
	r->raw_len = sb.len;
	r->enc = MOS_ENC_UTF8;
}

/* Rows waiting for the next flush. */
size_t
history_pending(struct history *h)
{
	return h == NULL ? 0 : h->n;
}

/* Move the pending rows out; the writer starts a new array. */
void
history_take(struct history *h, struct history_rec **v, size_t *n)
{
	size_t	cap = h->n > 64 ? h->n : 64;

	*v = h->v;
	*n = h->n;
	/* about as many rows will come before the next flush */
	h->v = h->n > 0 ? xreallocarray(NULL, cap, sizeof *h->v) : NULL;
	h->cap = h->n > 0 ? cap : 0;
	h->n = h->flushed = 0;
}

/* Insert rows (inside the caller's transaction), UTF-8 from here on. */
int
history_store(struct gwdb *g, struct history_rec *v, size_t n)
{
	struct history_rec	*r;
	struct store_stmt		*st;
	size_t			 i;
	int			 rc;

	for (i = 0; i < n; i++) {
		r = &v[i];
		history_to_utf8(r);
		st = gwdb_stmt(g, ST_HISTORY_ADD);
		store_bind_int64(st, 1, r->t_ms);
		store_bind_text(st, 2, r->ncs, -1);
		store_bind_text(st, 3, gw_port_name(r->port), -1);
		store_bind_text(st, 4, r->dir == HISTORY_IN ? "in" : "out",
		    -1);
		store_bind_int64(st, 5, (int64_t)r->conn);
		if (r->message_id != 0)
			store_bind_int(st, 6, r->message_id);
		store_bind_text(st, 7, r->type, -1);
		store_bind_text(st, 8, r->outcome, -1);
		store_bind_text(st, 9, r->xml, (int)r->raw_len);
		if ((rc = gwdb_exec_stmt(g, st)) != QUEUE_OK)
			return rc;
	}
	return QUEUE_OK;
}

/* Rows back in front of the ones added since they were taken. */
void
history_put_back(struct history *h, struct history_rec *v, size_t n)
{
	if (n == 0) {
		free(v);
		return;
	}
	v = xreallocarray(v, n + h->n, sizeof *v);
	if (h->n > 0)
		memcpy(v + n, h->v, h->n * sizeof *v);
	free(h->v);
	h->v = v;
	h->n += n;
	h->cap = h->n;
}

/* Insert the pending rows (inside the caller's transaction). */
int
history_flush(struct history *h)
{
	int	rc;

	rc = history_store(h->db, h->v, h->n);
	h->flushed = rc == QUEUE_OK ? h->n : 0;
	return rc;
}

/* The transaction failed: the rows stay pending. */
void
history_unflush(struct history *h)
{
	h->flushed = 0;
}

/* The transaction committed: forget the rows it stored. */
void
history_committed(struct history *h)
{
	size_t	i;

	if (h->flushed == 0)
		return;
	for (i = 0; i < h->flushed; i++)
		history_rec_clear(&h->v[i]);
	memmove(h->v, h->v + h->flushed, (h->n - h->flushed) * sizeof *h->v);
	h->n -= h->flushed;
	h->flushed = 0;
}

/* A copy of a column as a string ("" for NULL). */
static char *
history_col(struct store_stmt *st, int i)
{
	const char	*s = store_column_text(st, i);

	return xstrdup(s != NULL ? (const char *)s : "");
}

/* List rows matching a filter, oldest first unless newest_first. */
int
history_list(struct gwdb *g, const struct history_filter *f,
    struct history_rec **out, size_t *n)
{
	struct history_rec	*v = NULL, *r;
	struct sbuf		 sql = { NULL, 0, 0 };
	struct store_stmt		*st;
	enum gw_port		 port;
	size_t			 cap = 0;
	int			 rc, i = 1;

	*out = NULL;
	*n = 0;
	sbuf_puts(&sql, "SELECT id, t_ms, ncs, port, dir, conn, message_id, "
	    "type, outcome, xml FROM history WHERE 1 = 1");
	if (f->ncs != NULL)
		sbuf_puts(&sql, " AND ncs = ?1");
	if (f->since_ms != 0)
		sbuf_puts(&sql, " AND t_ms >= ?2");
	if (f->until_ms != 0)
		sbuf_puts(&sql, " AND t_ms < ?3");
	if (f->type != NULL)
		sbuf_puts(&sql, " AND type = ?6");
	if (f->after_id != 0)
		sbuf_puts(&sql,
		    f->newest_first ? " AND id < ?4" : " AND id > ?4");
	sbuf_puts(&sql, f->newest_first ? " ORDER BY id DESC LIMIT ?5" :
	    " ORDER BY id LIMIT ?5");
	rc = store_prepare(g->db, sql.s, 0, &st);
	sbuf_free(&sql);
	if (rc != STORE_OK)
		return gwdb_rc(rc);
	if (f->ncs != NULL)
		store_bind_text(st, 1, f->ncs, -1);
	store_bind_int64(st, 2, f->since_ms);
	store_bind_int64(st, 3, f->until_ms);
	store_bind_int64(st, 4, f->after_id);
	store_bind_int(st, 5, f->limit > 0 ? f->limit : 100);
	if (f->type != NULL)
		store_bind_text(st, 6, f->type, -1);
	while ((rc = store_step(st)) == STORE_ROW) {
		if (*n == cap) {
			cap = cap == 0 ? 32 : cap * 2;
			v = xreallocarray(v, cap, sizeof *v);
		}
		r = &v[(*n)++];
		i = 0;
		r->id = store_column_int64(st, i++);
		r->t_ms = store_column_int64(st, i++);
		r->ncs = history_col(st, i++);
		port = GW_PORT_LOWER;
		gw_port_parse(store_column_text(st, i++),
		    &port);
		r->port = port;
		r->dir = strcmp(store_column_text(st,
		    i++), "in") == 0 ? HISTORY_IN : HISTORY_OUT;
		r->conn = (uint64_t)store_column_int64(st, i++);
		r->message_id = store_column_int(st, i++);
		r->type = history_col(st, i++);
		r->outcome = history_col(st, i++);
		r->xml = history_col(st, i);
	}
	store_finalize(st);
	*out = v;
	if (rc != STORE_DONE) {
		history_recs_free(v, *n);
		*out = NULL;
		*n = 0;
		return gwdb_rc(rc);
	}
	return QUEUE_OK;
}

/* Free a list from history_list. */
void
history_recs_free(struct history_rec *v, size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++)
		history_rec_clear(&v[i]);
	free(v);
}

/*
 * What a row counts against history_max_bytes: its text columns and a
 * fixed overhead for the rest of the row and its index entries.
 */
#define HISTORY_ROW_BYTES_SQL \
	"(length(CAST(xml AS BLOB)) + length(CAST(outcome AS BLOB)) +" \
	" length(CAST(type AS BLOB)) + length(CAST(ncs AS BLOB)) + 48)"
#define HISTORY_ROW_BYTES_PG \
	"(octet_length(xml) + octet_length(outcome) + octet_length(type) +" \
	" octet_length(ncs) + 48)"
#define HISTORY_ROW_OVERHEAD	48
#define HISTORY_SIZE_BATCH	1000	/* rows looked at per step by size */

/* Prepare head + the bytes of a row in the store's dialect + tail. */
static int
history_prepare_bytes(struct gwdb *g, const char *head, const char *tail,
    struct store_stmt **st)
{
	char	*sql;
	int	 rc;

	xasprintf(&sql, "%s%s%s", head, gwdb_is_pg(g) ? HISTORY_ROW_BYTES_PG :
	    HISTORY_ROW_BYTES_SQL, tail);
	rc = store_prepare(g->db, sql, 0, st);
	free(sql);
	return rc;
}

/* The bytes a stored row counts (HISTORY_ROW_BYTES_SQL, from memory). */
int64_t
history_rec_bytes(const struct history_rec *r)
{
	return (int64_t)(r->raw_len + strlen(r->outcome) + strlen(r->type) +
	    strlen(r->ncs)) + HISTORY_ROW_OVERHEAD;
}

/* Rows committed (delta > 0) or deleted: keep the running total. */
void
history_account(struct gwdb *g, int64_t delta)
{
	if (g->hist_counted)
		g->hist_bytes += delta;
}

/* Count the history's bytes once (a scan of the table). Returns a queue_rc. */
static int
history_count(struct gwdb *g)
{
	struct store_stmt	*st;
	int		 rc;

	if (g->hist_counted)
		return QUEUE_OK;
	rc = history_prepare_bytes(g, "SELECT coalesce(sum(",
	    "), 0) FROM history", &st);
	if (rc != STORE_OK)
		return gwdb_rc(rc);
	if ((rc = store_step(st)) == STORE_ROW) {
		g->hist_bytes = store_column_int64(st, 0);
		g->hist_counted = true;
		rc = STORE_DONE;
	}
	store_finalize(st);
	return rc == STORE_DONE ? QUEUE_OK : gwdb_rc(rc);
}

/* The bytes history counts now (counted on first use); -1 on error. */
int64_t
history_bytes(struct gwdb *g)
{
	return history_count(g) == QUEUE_OK ? g->hist_bytes : -1;
}

/*
 * Run a DELETE ... RETURNING <row bytes> (?1 the oldest t_ms kept, ?2 the
 * batch) in batches, one transaction each, until a batch is not full, for
 * at most budget_ms (0 = until done). QUEUE_OK when done, QUEUE_EXISTS when
 * the budget ran out first.
 */
static int
history_delete_batches(struct gwdb *g, struct store_stmt *st, int batch,
    int64_t retention_ms, int64_t budget_ms, size_t *n)
{
	int64_t	start = util_mono_ms(), freed;
	int	rc, rows;

	for (;;) {
		if (budget_ms > 0 && util_mono_ms() - start >= budget_ms)
			return QUEUE_EXISTS;
		if ((rc = queue_tx_begin(g->q)) != QUEUE_OK)
			return rc;
		store_reset(st);
		store_bind_int64(st, 1, queue_now(g->q) - retention_ms);
		store_bind_int(st, 2, batch);
		rows = 0;
		freed = 0;
		while ((rc = store_step(st)) == STORE_ROW) {
			rows++;
			freed += store_column_int64(st, 0);
		}
		store_reset(st);
		if (rc != STORE_DONE) {
			queue_tx_rollback(g->q);
			return gwdb_rc(rc);
		}
		if ((rc = queue_tx_commit(g->q)) != QUEUE_OK)
			return rc;
		*n += (size_t)rows;
		history_account(g, -freed);
		if (rows < batch)
			return QUEUE_OK;
	}
}

/*
 * Delete rows older than the retention, 1,000 per transaction, for at most
 * budget_ms (0 = until done). QUEUE_OK when all are gone, QUEUE_EXISTS when
 * the budget ran out first (call again).
 */
int
history_prune(struct gwdb *g, int64_t retention_ms, int64_t budget_ms,
    size_t *n)
{
	struct store_stmt	*st;
	int		 rc;

	*n = 0;
	rc = history_prepare_bytes(g, "DELETE FROM history WHERE id IN"
	    " (SELECT id FROM history WHERE t_ms < ?1 ORDER BY t_ms LIMIT ?2)"
	    " RETURNING ", "", &st);
	if (rc != STORE_OK)
		return gwdb_rc(rc);
	rc = history_delete_batches(g, st, HISTORY_PRUNE_BATCH, retention_ms,
	    budget_ms, n);
	store_finalize(st);
	return rc;
}

/*
 * One step of pruning by size (inside a transaction): the oldest rows, at
 * most HISTORY_SIZE_BATCH of them, as many as it takes to free `want`
 * bytes. *rows and *freed: what was deleted.
 */
static int
history_prune_step(struct gwdb *g, int64_t want, int *rows, int64_t *freed)
{
	struct store_stmt	*st;
	int64_t		 cut = 0, sum = 0;
	int		 rc;

	*rows = 0;
	*freed = 0;
	rc = history_prepare_bytes(g, "SELECT id, ",
	    " FROM history ORDER BY id LIMIT ?1", &st);
	if (rc != STORE_OK)
		return gwdb_rc(rc);
	store_bind_int(st, 1, HISTORY_SIZE_BATCH);
	while (sum < want && (rc = store_step(st)) == STORE_ROW) {
		cut = store_column_int64(st, 0);
		sum += store_column_int64(st, 1);
	}
	store_finalize(st);
	if (rc != STORE_ROW && rc != STORE_DONE)
		return gwdb_rc(rc);
	if (cut == 0)
		return QUEUE_OK;
	rc = history_prepare_bytes(g, "DELETE FROM history WHERE id <= ?1"
	    " RETURNING ", "", &st);
	if (rc != STORE_OK)
		return gwdb_rc(rc);
	store_bind_int64(st, 1, cut);
	while ((rc = store_step(st)) == STORE_ROW) {
		(*rows)++;
		*freed += store_column_int64(st, 0);
	}
	store_finalize(st);
	return rc == STORE_DONE ? QUEUE_OK : gwdb_rc(rc);
}

/*
 * Over max_bytes: delete the oldest rows until history counts at most
 * 90 % of it, for at most budget_ms (0 = until done). QUEUE_OK when under,
 * QUEUE_EXISTS when the budget ran out first.
 */
int
history_prune_size(struct gwdb *g, int64_t max_bytes, int64_t budget_ms,
    size_t *n)
{
	int64_t	start = util_mono_ms(), target = max_bytes - max_bytes / 10;
	int64_t	freed;
	int	rc, rows;

	*n = 0;
	if ((rc = history_count(g)) != QUEUE_OK)
		return rc;
	if (g->hist_bytes <= max_bytes)
		return QUEUE_OK;
	while (g->hist_bytes > target) {
		if (budget_ms > 0 && util_mono_ms() - start >= budget_ms)
			return QUEUE_EXISTS;
		if ((rc = queue_tx_begin(g->q)) != QUEUE_OK)
			return rc;
		if ((rc = history_prune_step(g, g->hist_bytes - target, &rows,
		    &freed)) != QUEUE_OK) {
			queue_tx_rollback(g->q);
			return rc;
		}
		if ((rc = queue_tx_commit(g->q)) != QUEUE_OK)
			return rc;
		*n += (size_t)rows;
		history_account(g, -freed);
		if (rows == 0) {	/* nothing left: count again */
			g->hist_counted = false;
			return history_count(g);
		}
	}
	return QUEUE_OK;
}

/* One capture line (see conformance/capture.md). */
void
history_capture_line(struct sbuf *sb, const struct history_rec *r)
{
	char	ts[32];

	util_iso_ms(r->t_ms, ts, sizeof ts);
	sbuf_printf(sb, "{\"t\":\"%s\",\"ncs\":", ts);
	sbuf_json_str(sb, r->ncs);
	sbuf_printf(sb, ",\"port\":\"%s\",\"dir\":\"%s\",\"conn\":%llu",
	    gw_port_name(r->port), r->dir == HISTORY_IN ? "in" : "out",
	    (unsigned long long)r->conn);
	if (r->message_id != 0)
		sbuf_printf(sb, ",\"messageID\":%d", (int)r->message_id);
	sbuf_puts(sb, ",\"type\":");
	sbuf_json_str(sb, r->type);
	sbuf_puts(sb, ",\"xml\":");
	sbuf_json_str(sb, r->xml);
	sbuf_puts(sb, "}");
}

/* Write every matching row as capture lines, oldest first. */
int
history_export(struct gwdb *g, const struct history_filter *filter, FILE *f,
    size_t *n)
{
	struct history_filter	 page = *filter;
	struct history_rec	*v;
	struct sbuf		 sb = { NULL, 0, 0 };
	size_t			 cnt, i;
	int			 rc;

	*n = 0;
	page.newest_first = false;
	page.limit = 500;
	for (;;) {
		if ((rc = history_list(g, &page, &v, &cnt)) != QUEUE_OK)
			return rc;
		for (i = 0; i < cnt; i++) {
			sb.len = 0;
			history_capture_line(&sb, &v[i]);
			sbuf_puts(&sb, "\n");
			if (fwrite(sb.s, 1, sb.len, f) != sb.len) {
				history_recs_free(v, cnt);
				sbuf_free(&sb);
				return QUEUE_EIO;
			}
			(*n)++;
			page.after_id = v[i].id;
		}
		history_recs_free(v, cnt);
		if (cnt < (size_t)page.limit)
			break;
	}
	sbuf_free(&sb);
	return QUEUE_OK;
}
