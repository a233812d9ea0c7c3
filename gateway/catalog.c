/*
 * The asset catalog: one row per objID (with its paths and external
 * metadata in child tables), and the mosObj built from a row. A put or a
 * delete and the delivery jobs it causes commit in ONE transaction, so an
 * acknowledged change is never lost and never half-stored.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "gateway/gateway.h"

static const char *const path_kinds[] = { "path", "proxy", "metadata" };

/* A copy of a column, or NULL for SQL NULL. */
static char *
catalog_col(struct store_stmt *st, int i)
{
	const char	*s = store_column_text(st, i);

	return s == NULL ? NULL : xstrdup((const char *)s);
}

/* Fill the scalar fields of an asset from a row of CATALOG_COLS. */
void
catalog_row(struct store_stmt *st, struct catalog_asset *a)
{
	memset(a, 0, sizeof *a);
	a->obj_id = catalog_col(st, 0);
	a->slug = catalog_col(st, 1);
	a->type = catalog_col(st, 2);
	a->tb = catalog_col(st, 3);
	a->dur = store_column_int64(st, 4);
	a->rev = store_column_int(st, 5);
	a->air = catalog_col(st, 6);
	a->status = catalog_col(st, 7);
	a->abstract = catalog_col(st, 8);
	a->description = catalog_col(st, 9);
	a->group = catalog_col(st, 10);
	a->created_by = catalog_col(st, 11);
	a->created_ms = store_column_int64(st, 12);
	a->changed_by = catalog_col(st, 13);
	a->changed_ms = store_column_int64(st, 14);
	a->deleted = store_column_int(st, 15) != 0;
}

/* Append a path. */
void
catalog_add_path(struct catalog_asset *a, int kind, const char *tech,
    const char *url)
{
	struct catalog_path	*p;

	a->paths = xreallocarray(a->paths, a->npaths + 1, sizeof *a->paths);
	p = &a->paths[a->npaths++];
	p->kind = kind;
	p->tech = xstrdup(tech != NULL ? tech : "");
	p->url = xstrdup(url);
}

/* Append an external metadata block. */
void
catalog_add_meta(struct catalog_asset *a, const char *scope, const char *schema,
    const char *payload)
{
	struct catalog_meta	*m;

	a->meta = xreallocarray(a->meta, a->nmeta + 1, sizeof *a->meta);
	m = &a->meta[a->nmeta++];
	m->scope = scope != NULL ? xstrdup(scope) : NULL;
	m->schema = xstrdup(schema != NULL ? schema : "");
	m->payload = xstrdup(payload != NULL ? payload : "");
}

/* Load the child rows (paths, metadata) of an asset. */
int
catalog_load_children(struct gwdb *g, struct catalog_asset *a)
{
	struct store_stmt	*st;
	const char	*kind;
	int		 rc, k;

	st = gwdb_stmt(g, ST_ASSET_PATHS);
	store_bind_text(st, 1, a->obj_id, -1);
	while ((rc = store_step(st)) == STORE_ROW) {
		kind = store_column_text(st, 0);
		for (k = 0; k < (int)nitems(path_kinds); k++) {
			if (kind != NULL && strcmp(kind, path_kinds[k]) == 0)
				break;
		}
		catalog_add_path(a, k % (int)nitems(path_kinds),
		    store_column_text(st, 1),
		    store_column_text(st, 2));
	}
	store_reset(st);
	if (rc != STORE_DONE)
		return gwdb_rc(rc);
	st = gwdb_stmt(g, ST_ASSET_META);
	store_bind_text(st, 1, a->obj_id, -1);
	while ((rc = store_step(st)) == STORE_ROW)
		catalog_add_meta(a, store_column_text(st, 0),
		    store_column_text(st, 1),
		    store_column_text(st, 2));
	store_reset(st);
	return rc == STORE_DONE ? QUEUE_OK : gwdb_rc(rc);
}

/* One asset by objID. */
int
catalog_get(struct gwdb *g, const char *obj_id, struct catalog_asset *a)
{
	struct store_stmt	*st = gwdb_stmt(g, ST_ASSET_GET);
	int		 rc;

	memset(a, 0, sizeof *a);
	store_bind_text(st, 1, obj_id, -1);
	rc = store_step(st);
	if (rc == STORE_ROW)
		catalog_row(st, a);
	store_reset(st);
	if (rc == STORE_DONE)
		return QUEUE_ENOTFOUND;
	if (rc != STORE_ROW)
		return gwdb_rc(rc);
	if ((rc = catalog_load_children(g, a)) != QUEUE_OK)
		catalog_asset_clear(a);
	return rc;
}

/* A page of assets in objID order after `after`. */
int
catalog_list(struct gwdb *g, const char *after, bool deleted_too,
    struct catalog_asset *out, size_t max, size_t *n)
{
	struct store_stmt	*st = gwdb_stmt(g, ST_ASSET_LIST);
	size_t		 i;
	int		 rc = STORE_DONE;

	*n = 0;
	store_bind_text_copy(st, 1, after != NULL ? after : "", -1);
	store_bind_int(st, 2, deleted_too ? 1 : 0);
	store_bind_int64(st, 3, (int64_t)max);
	while (*n < max && (rc = store_step(st)) == STORE_ROW)
		catalog_row(st, &out[(*n)++]);
	if (*n < max && rc != STORE_DONE) {
		store_reset(st);
		goto fail;
	}
	store_reset(st);
	for (i = 0; i < *n; i++) {
		if ((rc = catalog_load_children(g, &out[i])) != QUEUE_OK)
			goto fail;
	}
	return QUEUE_OK;
fail:
	for (i = 0; i < *n; i++)
		catalog_asset_clear(&out[i]);
	*n = 0;
	return gwdb_rc(rc);
}

/* Free what an asset holds; the struct is zeroed. */
void
catalog_asset_clear(struct catalog_asset *a)
{
	size_t	i;

	if (a == NULL)
		return;
	free(a->obj_id);
	free(a->slug);
	free(a->type);
	free(a->tb);
	free(a->air);
	free(a->status);
	free(a->abstract);
	free(a->description);
	free(a->group);
	free(a->created_by);
	free(a->changed_by);
	for (i = 0; i < a->npaths; i++) {
		free(a->paths[i].tech);
		free(a->paths[i].url);
	}
	free(a->paths);
	for (i = 0; i < a->nmeta; i++) {
		free(a->meta[i].scope);
		free(a->meta[i].schema);
		free(a->meta[i].payload);
	}
	free(a->meta);
	memset(a, 0, sizeof *a);
}

/* A mos_time from ms since 1970, in UTC with a fraction. */
static void
catalog_time(struct mos_time *t, int64_t ms)
{
	t->sec = ms / 1000;
	t->ms = (int32_t)(ms % 1000);
	t->tz_min = 0;
	t->flags = MOS_TIME_SET | MOS_TIME_FRAC | MOS_TIME_ZONE;
}

/* Fill the path arrays of a mosObj. */
static void
catalog_fill_paths(struct mos_msg *m, struct mos_obj *o,
    const struct catalog_asset *a)
{
	struct mos_obj_paths	*op;
	struct mos_path		*dst;
	size_t			 i, count[3] = { 0, 0, 0 };

	for (i = 0; i < a->npaths; i++)
		count[a->paths[i].kind]++;
	op = mos_msg_alloc(m, sizeof *op);
	op->obj_path.v = mos_msg_alloc(m, (count[0] + 1) *
	    sizeof (struct mos_path));
	op->obj_proxy_path.v = mos_msg_alloc(m, (count[1] + 1) *
	    sizeof (struct mos_path));
	op->obj_metadata_path.v = mos_msg_alloc(m, (count[2] + 1) *
	    sizeof (struct mos_path));
	for (i = 0; i < a->npaths; i++) {
		switch (a->paths[i].kind) {
		case CATALOG_PATH:
			dst = &op->obj_path.v[op->obj_path.n++];
			break;
		case CATALOG_PROXY:
			dst = &op->obj_proxy_path.v[op->obj_proxy_path.n++];
			break;
		default:
			dst = &op->obj_metadata_path.v[
			    op->obj_metadata_path.n++];
			break;
		}
		dst->tech_description = mos_msg_strdup(m, a->paths[i].tech);
		dst->url = mos_msg_strdup(m, a->paths[i].url);
	}
	o->obj_paths = op;
}

/* Fill the body of a mosObj from a catalog row. 0, or -1 on a bad value. */
int
catalog_fill_obj(struct mos_msg *m, struct mos_obj *o,
    const struct catalog_asset *a, const char *status)
{
	size_t	i;

	memset(o, 0, sizeof *o);
	o->obj_id = mos_msg_strdup(m, a->obj_id);
	o->obj_slug = mos_msg_strdup(m, a->slug);
	o->mos_abstract = mos_msg_strdup(m, a->abstract);
	o->obj_group = mos_msg_strdup(m, a->group);
	o->obj_type = mos_msg_strdup(m, a->type);
	if (a->tb == NULL || mos_dec_parse(a->tb, &o->obj_tb) != 0)
		return -1;
	o->obj_rev = (uint32_t)a->rev;
	o->has_obj_rev = true;
	o->obj_dur = (uint32_t)a->dur;
	o->has_obj_dur = true;
	o->status = mos_msg_strdup(m, status);
	o->obj_air = mos_msg_strdup(m, a->air);
	if (a->npaths > 0)
		catalog_fill_paths(m, o, a);
	o->created_by = mos_msg_strdup(m, a->created_by);
	catalog_time(&o->created, a->created_ms);
	o->changed_by = mos_msg_strdup(m, a->changed_by);
	catalog_time(&o->changed, a->changed_ms);
	o->description = mos_msg_strdup(m, a->description != NULL ?
	    a->description : "");
	if (a->nmeta > 0) {
		o->ext_meta.v = mos_msg_alloc(m,
		    a->nmeta * sizeof *o->ext_meta.v);
		for (i = 0; i < a->nmeta; i++) {
			o->ext_meta.v[i].mos_scope = mos_msg_strdup(m,
			    a->meta[i].scope);
			o->ext_meta.v[i].mos_schema = mos_msg_strdup(m,
			    a->meta[i].schema);
			o->ext_meta.v[i].mos_payload = mos_msg_strdup(m,
			    a->meta[i].payload);
		}
		o->ext_meta.n = a->nmeta;
	}
	return 0;
}

/* One verbatim-XML field checked on its own; 0, or -1 with *err. */
static int
catalog_fragment(const char *what, const char *elem, const char *s,
    char **err)
{
	char	msg[256];

	if (s == NULL || mos_fragment_check(elem, s, strlen(s), MOS_STRICT,
	    NULL, msg, sizeof msg) == 0)
		return 0;
	if (err != NULL)
		xasprintf(err, "%s%s", what, msg);
	return -1;
}

/*
 * Check the verbatim-XML fields of an asset (abstract, description, the
 * metadata payloads) each as the content of its own element: none may
 * close its element or add siblings to the mosObj.
 */
int
catalog_check_xml(const struct catalog_asset *a, char **err)
{
	char	what[64];
	size_t	i;

	if (catalog_fragment("", "mosAbstract", a->abstract, err) == -1 ||
	    catalog_fragment("", "description", a->description, err) == -1)
		return -1;
	for (i = 0; i < a->nmeta; i++) {
		snprintf(what, sizeof what, "metadata %zu: ", i + 1);
		if (catalog_fragment(what, "mosPayload", a->meta[i].payload,
		    err) == -1)
			return -1;
	}
	return 0;
}

/*
 * A mosObj message for a row (the caller sets the envelope). Every mosObj
 * built from the catalog comes from here, so a row stored by a version
 * that did not check its fragments is refused here too, never sent.
 */
struct mos_msg *
catalog_mos_obj(const struct catalog_asset *a, const char *status,
    char **err)
{
	struct mos_msg	*m;

	if (catalog_check_xml(a, err) != 0)
		return NULL;
	if ((m = mos_msg_new(MOS_T_MOS_OBJ)) == NULL) {
		if (err != NULL)
			xasprintf(err, "out of memory");
		return NULL;
	}
	if (catalog_fill_obj(m, &m->u.mos_obj, a, status) != 0) {
		if (err != NULL)
			xasprintf(err, "objTB '%s' is not a decimal number",
			    a->tb != NULL ? a->tb : "");
		mos_msg_free(m);
		return NULL;
	}
	return m;
}

/* Is s 1..max characters with no control characters? */
static bool
catalog_text_ok(const char *s, size_t max)
{
	size_t	len;

	if (s == NULL || (len = strlen(s)) == 0 || len > max)
		return false;
	for (; *s != '\0'; s++) {
		if ((unsigned char)*s < 0x20 || (unsigned char)*s == 0x7f)
			return false;
	}
	return true;
}

/* Check the scalar fields; returns the complaint or NULL. */
static const char *
catalog_check_fields(const struct catalog_asset *a)
{
	static const char *const types[] =
	    { "STILL", "AUDIO", "VIDEO", "OTHER" };
	struct mos_dec	tb;
	size_t		i;

	if (!catalog_text_ok(a->obj_id, 128))
		return "objID must be 1 to 128 characters without control "
		    "characters";
	if (!catalog_text_ok(a->slug, 128))
		return "slug must be 1 to 128 characters without control "
		    "characters";
	for (i = 0; i < nitems(types); i++) {
		if (a->type != NULL && strcmp(a->type, types[i]) == 0)
			break;
	}
	if (i == nitems(types))
		return "type must be STILL, AUDIO, VIDEO or OTHER";
	if (a->tb == NULL || mos_dec_parse(a->tb, &tb) != 0 || tb.v <= 0)
		return "tb (objTB) must be a decimal number greater than 0";
	if (a->dur < 0 || a->dur > 0xffffffffLL)
		return "dur (objDur) must be 0 to 4294967295 samples";
	if (a->air == NULL || (strcmp(a->air, "READY") != 0 &&
	    strcmp(a->air, "NOT READY") != 0))
		return "air must be READY or NOT READY";
	if (a->group != NULL && *a->group != '\0' &&
	    !catalog_text_ok(a->group, 128))
		return "group must be at most 128 characters";
	if (!catalog_text_ok(a->changed_by, 128))
		return "the user (--by) must be 1 to 128 characters";
	for (i = 0; i < a->npaths; i++) {
		if (!catalog_text_ok(a->paths[i].url, 255))
			return "a path must be 1 to 255 characters";
		if (!catalog_text_ok(a->paths[i].tech, 128))
			return "a path needs a techDescription (--tech) of 1 "
			    "to 128 characters";
		if (a->paths[i].kind == CATALOG_PROXY &&
		    strncasecmp(a->paths[i].url, "ftp", 3) == 0)
			return "objProxyPath may not be an FTP URL";
	}
	for (i = 0; i < a->nmeta; i++) {
		if (!catalog_text_ok(a->meta[i].schema, 4096))
			return "external metadata needs a mosSchema";
	}
	return NULL;
}

/*
 * Check an asset: the fields, then the mosObj built from it (which checks
 * the verbatim-XML fields on their own) must write and parse again.
 */
int
catalog_validate(const struct catalog_asset *in, char **err)
{
	struct catalog_asset	 a = *in;
	struct mos_msg		*m, *back = NULL;
	struct mos_error	 perr;
	struct mos_buf		 buf = { NULL, 0, 0 };
	const char		*why;
	char			 wbuf[256];

	if ((why = catalog_check_fields(in)) != NULL) {
		xasprintf(err, "%s", why);
		return QUEUE_EINVAL;
	}
	a.rev = 1;
	a.created_by = in->created_by != NULL ? in->created_by : in->changed_by;
	if ((m = catalog_mos_obj(&a, "NEW", err)) == NULL)
		return QUEUE_EINVAL;
	m->mos_id = "check";
	m->ncs_id = "check";
	m->has_message_id = true;
	m->message_id = 1;
	if (mos_write(m, MOS_ENC_UTF8, &buf, wbuf, sizeof wbuf) != 0) {
		xasprintf(err, "cannot write a mosObj from this asset: %s",
		    wbuf);
		goto fail;
	}
	if (mos_parse(buf.data, buf.len, MOS_ENC_UTF8, MOS_LENIENT, &back,
	    &perr) != MOS_OK) {
		xasprintf(err, "description, abstract or metadata payload is "
		    "not "
		    "well-formed XML text (escape & as &amp; and < as &lt;): "
		    "%s", perr.msg);
		goto fail;
	}
	mos_msg_free(back);
	mos_buf_free(&buf);
	mos_msg_free(m);
	return QUEUE_OK;
fail:
	mos_buf_free(&buf);
	mos_msg_free(m);
	return QUEUE_EINVAL;
}

/* Replace the child rows of an asset (a new one has none to delete). */
static int
catalog_put_children(struct gwdb *g, const struct catalog_asset *a,
    bool existed)
{
	struct store_stmt	*st;
	size_t		 i;
	int		 rc;

	if (!existed)
		goto add;
	st = gwdb_stmt(g, ST_ASSET_PATHS_DEL);
	store_bind_text(st, 1, a->obj_id, -1);
	if ((rc = gwdb_exec_stmt(g, st)) != QUEUE_OK)
		return rc;
	st = gwdb_stmt(g, ST_ASSET_META_DEL);
	store_bind_text(st, 1, a->obj_id, -1);
	if ((rc = gwdb_exec_stmt(g, st)) != QUEUE_OK)
		return rc;
add:
	for (i = 0; i < a->npaths; i++) {
		st = gwdb_stmt(g, ST_ASSET_PATH_ADD);
		store_bind_text(st, 1, a->obj_id, -1);
		store_bind_int64(st, 2, (int64_t)i);
		store_bind_text(st, 3, path_kinds[a->paths[i].kind], -1);
		store_bind_text(st, 4, a->paths[i].tech, -1);
		store_bind_text(st, 5, a->paths[i].url, -1);
		if ((rc = gwdb_exec_stmt(g, st)) != QUEUE_OK)
			return rc;
	}
	for (i = 0; i < a->nmeta; i++) {
		st = gwdb_stmt(g, ST_ASSET_META_ADD);
		store_bind_text(st, 1, a->obj_id, -1);
		store_bind_int64(st, 2, (int64_t)i);
		gwdb_bind_text(st, 3, a->meta[i].scope);
		store_bind_text(st, 4, a->meta[i].schema, -1);
		store_bind_text(st, 5, a->meta[i].payload, -1);
		if ((rc = gwdb_exec_stmt(g, st)) != QUEUE_OK)
			return rc;
	}
	return QUEUE_OK;
}

/* Append code point cp as UTF-8 (bad ones become U+FFFD). */
static void
catalog_utf8(struct sbuf *sb, unsigned long cp)
{
	char	b[4];

	if (cp == 0 || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		cp = 0xfffd;
	if (cp < 0x80) {
		b[0] = (char)cp;
		sbuf_add(sb, b, 1);
	} else if (cp < 0x800) {
		b[0] = (char)(0xc0 | (cp >> 6));
		b[1] = (char)(0x80 | (cp & 0x3f));
		sbuf_add(sb, b, 2);
	} else if (cp < 0x10000) {
		b[0] = (char)(0xe0 | (cp >> 12));
		b[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		b[2] = (char)(0x80 | (cp & 0x3f));
		sbuf_add(sb, b, 3);
	} else {
		b[0] = (char)(0xf0 | (cp >> 18));
		b[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
		b[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
		b[3] = (char)(0x80 | (cp & 0x3f));
		sbuf_add(sb, b, 4);
	}
}

/* One entity reference at s ('&'); returns the bytes it took (0 = none). */
static size_t
catalog_entity(struct sbuf *sb, const char *s)
{
	static const struct {
		const char	*name;
		char		 ch;
	} names[] = { { "amp;", '&' }, { "lt;", '<' }, { "gt;", '>' },
	    { "quot;", '"' }, { "apos;", '\'' } };
	unsigned long	 cp;
	char		*end;
	size_t		 i, len;

	for (i = 0; i < nitems(names); i++) {
		len = strlen(names[i].name);
		if (strncmp(s + 1, names[i].name, len) == 0) {
			sbuf_add(sb, &names[i].ch, 1);
			return len + 1;
		}
	}
	if (s[1] != '#')
		return 0;
	if (s[2] == 'x')
		cp = strtoul(s + 3, &end, 16);
	else
		cp = strtoul(s + 2, &end, 10);
	if (*end != ';' || end == s + 2 || end == s + 3)
		return 0;
	catalog_utf8(sb, cp);
	return (size_t)(end - s) + 1;
}

/*
 * The plain text of verbatim XML text (description, mosAbstract, a
 * mosPayload): markup becomes a space, entity references their character.
 * What the search index holds.
 */
void
catalog_plain_text(struct sbuf *sb, const char *s)
{
	const char	*gt;
	size_t		 n;

	sbuf_add(sb, "", 0);
	while (*s != '\0') {
		if (*s == '<' && (gt = strchr(s, '>')) != NULL) {
			sbuf_add(sb, " ", 1);
			s = gt + 1;
		} else if (*s == '&' && (n = catalog_entity(sb, s)) > 0)
			s += n;
		else {
			n = strcspn(s + 1, "<&") + 1;
			sbuf_add(sb, s, n);
			s += n;
		}
	}
}

/*
 * Bring the search index of one asset up to date (inside a transaction);
 * a new asset has no entry to delete.
 */
static int
catalog_index(struct gwdb *g, const char *obj_id, bool existed)
{
	static const enum gwdb_stmt	steps[] = { ST_FTS_KEY, ST_FTS_DEL,
					    ST_FTS_ADD };
	struct store_stmt			*st;
	size_t				 i;
	int				 rc = QUEUE_OK;

	for (i = 0; rc == QUEUE_OK && i < nitems(steps); i++) {
		if (!existed && steps[i] == ST_FTS_DEL)
			continue;
		st = gwdb_stmt(g, steps[i]);
		store_bind_text(st, 1, obj_id, -1);
		rc = gwdb_exec_stmt(g, st);
	}
	return rc;
}

/* One job about obj_id, coalesced by key (see gateway.h). */
int
catalog_enqueue_one(struct gwdb *g, const char *lane, const char *kind,
    const char *key, const char *obj_id, int priority, int max_attempts,
    bool *added)
{
	struct queue_enqueue_req	 req;
	int64_t				 id;
	int				 rc;

	memset(&req, 0, sizeof req);
	req.lane = lane;
	req.kind = kind;
	req.payload = obj_id;
	req.payload_len = strlen(obj_id);
	req.priority = priority;
	req.max_attempts = max_attempts;
	req.coalesce_key = key;
	rc = queue_enqueue(g->q, &req, &id);
	if (added != NULL)
		*added = rc == QUEUE_OK;
	return rc == QUEUE_EXISTS ? QUEUE_OK : rc;
}

/* One job per NCS row of st (see gateway.h). */
int
catalog_enqueue_rows(struct gwdb *g, struct store_stmt *st,
    const char *lane_prefix,
    const char *kind, const char *key_tag, const char *obj_id, int *njobs)
{
	char	**names = NULL, *lane, *key;
	int	 *max = NULL, rc;
	size_t	  n = 0, i;

	while ((rc = store_step(st)) == STORE_ROW) {
		names = xreallocarray(names, n + 1, sizeof *names);
		max = xreallocarray(max, n + 1, sizeof *max);
		names[n] = xstrdup(store_column_text(st, 0));
		max[n++] = store_column_int(st, 1);
	}
	store_reset(st);
	rc = rc == STORE_DONE ? QUEUE_OK : gwdb_rc(rc);
	for (i = 0; rc == QUEUE_OK && i < n; i++) {
		xasprintf(&lane, "%s%s", lane_prefix, names[i]);
		xasprintf(&key, "%s:%s@%s", key_tag, obj_id, names[i]);
		rc = catalog_enqueue_one(g, lane, kind, key, obj_id,
		    QUEUE_PRIO_DEFAULT, max[i], NULL);
		free(lane);
		free(key);
	}
	if (njobs != NULL)
		*njobs = rc == QUEUE_OK ? (int)n : 0;
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	free(max);
	return rc;
}

/* Enqueue one publish job per enabled NCS with publish on. */
static int
catalog_enqueue(struct gwdb *g, const char *obj_id, int *njobs)
{
	return catalog_enqueue_rows(g, gwdb_stmt(g, ST_NCS_PUBLISH),
	    CATALOG_LANE_PREFIX, CATALOG_KIND_PUBLISH, "obj", obj_id, njobs);
}

/* Roll back and describe what failed (a queue call, or our own SQL). */
static int
catalog_abort(struct gwdb *g, int rc, const char *what, bool queue_call,
    char **err)
{
	if (err != NULL)
		xasprintf(err, "%s: %s (%s)", what, queue_strerror(rc),
		    queue_call ? queue_errmsg(g->q) : gwdb_errmsg(g));
	queue_tx_rollback(g->q);
	return rc;
}

/* Do the paths of a differ from the stored ones ("kind tech url" lines)? */
static bool
catalog_paths_differ(const struct catalog_asset *a, const char *stored)
{
	struct sbuf	sb = { NULL, 0, 0 };
	size_t		i;
	bool		differ;

	for (i = 0; i < a->npaths; i++)
		sbuf_printf(&sb, "%s%s %s %s", i > 0 ? "\n" : "",
		    path_kinds[a->paths[i].kind], a->paths[i].tech,
		    a->paths[i].url);
	differ = strcmp(sb.s != NULL ? sb.s : "", stored != NULL ? stored :
	    "") != 0;
	sbuf_free(&sb);
	return differ;
}

/* Check, then upsert an asset and enqueue its deliveries. */
int
catalog_put(struct gwdb *g, const struct catalog_asset *a, int *rev,
    int *njobs, char **err)
{
	int	rc;

	if ((rc = catalog_validate(a, err)) != QUEUE_OK)
		return rc;
	return catalog_store(g, a, rev, njobs, err);
}

/* What storing the row of an asset found and did. */
struct catalog_stored {
	int		 rev;
	bool		 existed;	/* a row (maybe a tombstone) was there */
	bool		 ready_changed;	/* objAir, or a tombstone brought back */
	bool		 media_changed;	/* timing or paths of a live asset */
	const char	*what;		/* the step that failed */
};

/*
 * Inside a transaction: read what the row was, upsert it, replace its
 * paths and metadata. The search index and the jobs are the caller's.
 */
static int
catalog_store_row(struct gwdb *g, const struct catalog_asset *a,
    struct catalog_stored *s)
{
	struct store_stmt	*st;
	int		 rc;

	memset(s, 0, sizeof *s);
	s->ready_changed = true;
	/* before: no row, a tombstone, or its objAir, timing and paths */
	st = gwdb_stmt(g, ST_RO_ASSET_AIR);
	store_bind_text(st, 1, a->obj_id, -1);
	if ((rc = store_step(st)) == STORE_ROW) {
		s->ready_changed = store_column_int(st, 1) != 0 ||
		    strcmp(store_column_text(st, 0),
		    a->air) != 0;
		s->media_changed = store_column_int(st, 1) == 0 &&
		    (store_column_int64(st, 2) != a->dur ||
		    strcmp(store_column_text(st, 3),
		    a->tb) != 0 || catalog_paths_differ(a,
		    store_column_text(st, 4)));
	}
	store_reset(st);
	s->what = "catalog read";
	if (rc != STORE_ROW && rc != STORE_DONE)
		return gwdb_rc(rc);
	s->existed = rc == STORE_ROW;
	st = gwdb_stmt(g, ST_ASSET_UPSERT);
	store_bind_text(st, 1, a->obj_id, -1);
	store_bind_text(st, 2, a->slug, -1);
	store_bind_text(st, 3, a->type, -1);
	store_bind_text(st, 4, a->tb, -1);
	store_bind_int64(st, 5, a->dur);
	store_bind_text(st, 6, a->air, -1);
	gwdb_bind_text(st, 7, a->abstract);
	store_bind_text(st, 8, a->description != NULL ? a->description : "",
	    -1);
	gwdb_bind_text(st, 9, a->group != NULL && *a->group != '\0' ? a->group :
	    NULL);
	store_bind_text(st, 10, a->changed_by, -1);
	store_bind_int64(st, 11, queue_now(g->q));
	if ((rc = store_step(st)) == STORE_ROW)
		s->rev = store_column_int(st, 0);
	rc = rc == STORE_ROW ? QUEUE_OK : gwdb_rc(rc);
	store_reset(st);
	s->what = "catalog write";
	if (rc != QUEUE_OK)
		return rc;
	s->what = "catalog paths";
	return catalog_put_children(g, a, s->existed);
}

/* The item status and replace jobs of a stored asset (see rostat.c). */
static int
catalog_store_rostat(struct gwdb *g, const char *obj_id,
    const struct catalog_stored *s, const char **what)
{
	int	rc;

	*what = "enqueue of the item statuses";
	if (s->ready_changed && (rc = rostat_enqueue(g, obj_id,
	    ROSTAT_KIND)) != QUEUE_OK)
		return rc;
	*what = "enqueue of the item replaces";
	if (s->media_changed && (rc = rostat_enqueue(g, obj_id,
	    ROSTAT_KIND_REPLACE)) != QUEUE_OK)
		return rc;
	return QUEUE_OK;
}

/* Upsert a checked asset and enqueue its deliveries in one transaction. */
int
catalog_store(struct gwdb *g, const struct catalog_asset *a, int *rev,
    int *njobs, char **err)
{
	struct catalog_stored	 s;
	const char		*what;
	int			 rc;

	if ((rc = queue_tx_begin(g->q)) != QUEUE_OK) {
		xasprintf(err, "cannot start a transaction: %s",
		    queue_strerror(rc));
		return rc;
	}
	if ((rc = catalog_store_row(g, a, &s)) != QUEUE_OK)
		return catalog_abort(g, rc, s.what, false, err);
	if ((rc = catalog_index(g, a->obj_id, s.existed)) != QUEUE_OK)
		return catalog_abort(g, rc, "search index", false, err);
	if ((rc = catalog_enqueue(g, a->obj_id, njobs)) != QUEUE_OK)
		return catalog_abort(g, rc, "enqueue of the deliveries", true,
		    err);
	if ((rc = catalog_store_rostat(g, a->obj_id, &s, &what)) != QUEUE_OK)
		return catalog_abort(g, rc, what, true, err);
	if ((rc = queue_tx_commit(g->q)) != QUEUE_OK) {
		if (err != NULL)
			xasprintf(err, "commit: %s", queue_strerror(rc));
		return rc;
	}
	if (rev != NULL)
		*rev = s.rev;
	return QUEUE_OK;
}

/* The publish jobs of a batch, waiting to be enqueued together. */
struct catalog_reqs {
	struct queue_enqueue_req	*v;
	size_t				 n, cap;
	char				**ncs;		/* publishing NCSs */
	int				*max;		/* their max_attempts */
	size_t				 nncs;
};

/* Forget the jobs waiting. */
static void
catalog_reqs_drop(struct catalog_reqs *r)
{
	size_t	i;

	for (i = 0; i < r->n; i++) {
		free((char *)(uintptr_t)r->v[i].lane);
		free((char *)(uintptr_t)r->v[i].coalesce_key);
	}
	r->n = 0;
}

/* Enqueue the jobs waiting, in their order. */
static int
catalog_reqs_flush(struct gwdb *g, struct catalog_reqs *r)
{
	int	rc = QUEUE_OK;

	if (r->n > 0)
		rc = queue_enqueue_many(g->q, r->v, r->n, NULL, NULL, NULL);
	catalog_reqs_drop(r);
	return rc;
}

/* The NCSs that publish (ST_NCS_PUBLISH), once for a batch. */
static int
catalog_reqs_ncs(struct gwdb *g, struct catalog_reqs *r)
{
	struct store_stmt	*st = gwdb_stmt(g, ST_NCS_PUBLISH);
	int		 rc;

	while ((rc = store_step(st)) == STORE_ROW) {
		r->ncs = xreallocarray(r->ncs, r->nncs + 1, sizeof *r->ncs);
		r->max = xreallocarray(r->max, r->nncs + 1, sizeof *r->max);
		r->ncs[r->nncs] = xstrdup(store_column_text(st, 0));
		r->max[r->nncs++] = store_column_int(st, 1);
	}
	store_reset(st);
	return rc == STORE_DONE ? QUEUE_OK : gwdb_rc(rc);
}

/* The publish jobs of one object, as catalog_enqueue makes them. */
static void
catalog_reqs_add(struct catalog_reqs *r, const char *obj_id)
{
	struct queue_enqueue_req	*q;
	char				*lane, *key;
	size_t				 i;

	for (i = 0; i < r->nncs; i++) {
		if (r->n == r->cap) {
			r->cap = r->cap == 0 ? 64 : r->cap * 2;
			r->v = xreallocarray(r->v, r->cap, sizeof *r->v);
		}
		xasprintf(&lane, "%s%s", CATALOG_LANE_PREFIX, r->ncs[i]);
		xasprintf(&key, "obj:%s@%s", obj_id, r->ncs[i]);
		q = &r->v[r->n++];
		memset(q, 0, sizeof *q);
		q->lane = lane;
		q->kind = CATALOG_KIND_PUBLISH;
		q->payload = obj_id;
		q->payload_len = strlen(obj_id);
		q->priority = QUEUE_PRIO_DEFAULT;
		q->max_attempts = r->max[i];
		q->coalesce_key = key;
	}
}

static void
catalog_reqs_free(struct catalog_reqs *r)
{
	size_t	i;

	catalog_reqs_drop(r);
	free(r->v);
	for (i = 0; i < r->nncs; i++)
		free(r->ncs[i]);
	free(r->ncs);
	free(r->max);
}

/*
 * The search index of a batch in three statements, after every other
 * write of the transaction: a statement journal opened after an FTS5 write
 * makes FTS5 flush its pending terms to a new segment, so writing the
 * index per asset between the other writes costs a segment per asset.
 */
static int
catalog_index_many(struct gwdb *g, json_t *all, json_t *existed)
{
	static const enum gwdb_stmt	 steps[] = { ST_FTS_KEYS,
					    ST_FTS_DEL_MANY, ST_FTS_ADD_MANY };
	struct store_stmt			*st;
	char				*a, *e;
	size_t				 i;
	int				 rc = QUEUE_OK;

	a = json_dumps(all, JSON_COMPACT);
	e = json_dumps(existed, JSON_COMPACT);
	if (a == NULL || e == NULL)
		fatalx("out of memory");
	for (i = 0; rc == QUEUE_OK && i < nitems(steps); i++) {
		if (steps[i] == ST_FTS_DEL_MANY && json_array_size(existed) == 0)
			continue;
		st = gwdb_stmt(g, steps[i]);
		store_bind_text(st, 1, steps[i] == ST_FTS_DEL_MANY ? e : a,
		    -1);
		rc = gwdb_exec_stmt(g, st);
	}
	free(a);
	free(e);
	return rc;
}

/*
 * Many checked assets in one transaction (a savepoint inside the
 * caller's), with what catalog_store does for each, in order: the same
 * rows, jobs (same ids) and events as n catalog_store calls. The jobs go
 * through queue_enqueue_many, the search index is written last (see
 * catalog_index_many). All or nothing.
 */
int
catalog_store_many(struct gwdb *g, const struct catalog_asset *const *v,
    size_t n, char **err)
{
	struct catalog_reqs	 r;
	struct catalog_stored	 s;
	struct store_stmt		*st;
	json_t			*all, *existed;
	const char		*what;
	bool			 ro;
	size_t			 i;
	int			 rc;

	if ((rc = queue_tx_begin(g->q)) != QUEUE_OK) {
		xasprintf(err, "cannot start a transaction: %s",
		    queue_strerror(rc));
		return rc;
	}
	memset(&r, 0, sizeof r);
	all = json_array();
	existed = json_array();
	/* item statuses only when running orders hold items at all */
	st = gwdb_stmt(g, ST_RO_ITEM_ANY);
	rc = store_step(st);
	ro = rc == STORE_ROW && store_column_int(st, 0) != 0;
	store_reset(st);
	if (rc != STORE_ROW) {
		rc = catalog_abort(g, gwdb_rc(rc), "catalog read", false, err);
		goto out;
	}
	if ((rc = catalog_reqs_ncs(g, &r)) != QUEUE_OK) {
		rc = catalog_abort(g, rc, "catalog read", false, err);
		goto out;
	}
	for (i = 0; i < n; i++) {
		if ((rc = catalog_store_row(g, v[i], &s)) != QUEUE_OK) {
			rc = catalog_abort(g, rc, s.what, false, err);
			goto out;
		}
		json_array_append_new(all, json_string(v[i]->obj_id));
		if (s.existed)
			json_array_append_new(existed,
			    json_string(v[i]->obj_id));
		catalog_reqs_add(&r, v[i]->obj_id);
		if (!ro || (!s.ready_changed && !s.media_changed))
			continue;
		/* in the order catalog_store makes them */
		what = "enqueue of the deliveries";
		if ((rc = catalog_reqs_flush(g, &r)) == QUEUE_OK)
			rc = catalog_store_rostat(g, v[i]->obj_id, &s, &what);
		if (rc != QUEUE_OK) {
			rc = catalog_abort(g, rc, what, true, err);
			goto out;
		}
	}
	if ((rc = catalog_reqs_flush(g, &r)) != QUEUE_OK) {
		rc = catalog_abort(g, rc, "enqueue of the deliveries", true,
		    err);
		goto out;
	}
	if ((rc = catalog_index_many(g, all, existed)) != QUEUE_OK) {
		rc = catalog_abort(g, rc, "search index", false, err);
		goto out;
	}
	if ((rc = queue_tx_commit(g->q)) != QUEUE_OK)
		xasprintf(err, "commit: %s", queue_strerror(rc));
out:
	catalog_reqs_free(&r);
	json_decref(all);
	json_decref(existed);
	return rc;
}

/* Tombstone an asset and enqueue the DELETED deliveries in one transaction. */
int
catalog_delete(struct gwdb *g, const char *obj_id, const char *by, int *rev,
    int *njobs, char **err)
{
	struct store_stmt	*st;
	int		 rc, r = 0;

	if (!catalog_text_ok(by, 128)) {
		xasprintf(err, "the user (--by) must be 1 to 128 characters");
		return QUEUE_EINVAL;
	}
	if ((rc = queue_tx_begin(g->q)) != QUEUE_OK) {
		xasprintf(err, "cannot start a transaction: %s",
		    queue_strerror(rc));
		return rc;
	}
	st = gwdb_stmt(g, ST_ASSET_DELETE);
	store_bind_text(st, 1, obj_id, -1);
	store_bind_text(st, 2, by, -1);
	store_bind_int64(st, 3, queue_now(g->q));
	rc = store_step(st);
	if (rc == STORE_ROW)
		r = store_column_int(st, 0);
	store_reset(st);
	if (rc == STORE_DONE) {
		queue_tx_rollback(g->q);
		xasprintf(err, "no asset '%s' (or already deleted)", obj_id);
		return QUEUE_ENOTFOUND;
	}
	if (rc != STORE_ROW)
		return catalog_abort(g, gwdb_rc(rc), "catalog write", false,
		    err);
	if ((rc = catalog_index(g, obj_id, true)) != QUEUE_OK)
		return catalog_abort(g, rc, "search index", false, err);
	if ((rc = catalog_enqueue(g, obj_id, njobs)) != QUEUE_OK)
		return catalog_abort(g, rc, "enqueue of the deliveries", true,
		    err);
	if ((rc = rostat_enqueue(g, obj_id, ROSTAT_KIND)) != QUEUE_OK)
		return catalog_abort(g, rc, "enqueue of the item statuses",
		    true, err);
	if ((rc = queue_tx_commit(g->q)) != QUEUE_OK) {
		xasprintf(err, "commit: %s", queue_strerror(rc));
		return rc;
	}
	if (rev != NULL)
		*rev = r;
	return QUEUE_OK;
}

/* What an NCS last acknowledged for an object ("" if never). */
int
catalog_delivery_get(struct gwdb *g, const char *ncs, const char *obj_id,
    char *status, size_t len)
{
	struct store_stmt	*st = gwdb_stmt(g, ST_DELIVERY_GET);
	int		 rc;

	*status = '\0';
	store_bind_text(st, 1, ncs, -1);
	store_bind_text(st, 2, obj_id, -1);
	rc = store_step(st);
	if (rc == STORE_ROW)
		util_strlcpy(status, store_column_text(st, 0),
		    len);
	store_reset(st);
	return rc == STORE_ROW || rc == STORE_DONE ? QUEUE_OK : gwdb_rc(rc);
}

/* Record an acknowledged delivery (inside the flush transaction). */
int
catalog_delivery_put(struct gwdb *g, const char *ncs, const char *obj_id,
    int rev, const char *status)
{
	struct store_stmt	*st = gwdb_stmt(g, ST_DELIVERY_PUT);

	store_bind_text(st, 1, ncs, -1);
	store_bind_text(st, 2, obj_id, -1);
	store_bind_int(st, 3, rev);
	store_bind_text(st, 4, status, -1);
	store_bind_int64(st, 5, queue_now(g->q));
	return gwdb_exec_stmt(g, st);
}

/*
 * The status of a delivery: NEW the first time an NCS gets the object (or
 * after it was told DELETED), UPDATED after that, DELETED for a tombstone;
 * NULL when a tombstone certainly never reached that NCS (nothing to delete
 * there). CATALOG_SENDING marks a NEW that was sent but whose ACK is not
 * recorded (the gateway may have died in between): the NCS may have the
 * object, so a tombstone is sent as DELETED, and a change goes out as NEW
 * again rather than UPDATED.
 */
const char *
catalog_delivery_status(const struct catalog_asset *a, const char *last)
{
	bool	none = last == NULL || *last == '\0' ||
		    strcmp(last, "DELETED") == 0;
	bool	maybe = !none && strcmp(last, CATALOG_SENDING) == 0;

	if (a->deleted)
		return none ? NULL : "DELETED";
	return none || maybe ? "NEW" : "UPDATED";
}
