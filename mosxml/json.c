/*
 * struct mos_msg <-> the JSON Lines schema of `mosmsg` (docs/mosmsg.md),
 * with jansson. The same descriptor tables as the parser and the writer
 * drive one walker each way:
 *
 *   {"type":"mosObj","mosID":"...","ncsID":"...","messageID":17,"body":{...}}
 *
 * Inside body, keys are MOS element names, "@name" for attributes, "#text"
 * for an element's own text; repeated elements are arrays; numbers are
 * numbers; times are ISO 8601 strings; verbatim XML fields are strings.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "mosxml/mosxml.h"
#include "mosxml/mosjson.h"
#include "mosxml/schema.h"

#define JSON_DUMP_FLAGS	(JSON_COMPACT | JSON_REAL_PRECISION(15))

struct jctx {
	struct mos_msg	*m;
	char		*err;
	size_t		 errlen;
	char		 path[192];
};

static json_t	*struct_to_json(const struct mos_sdesc *, const void *);
static int	 struct_from_json(struct jctx *, const struct mos_sdesc *,
		    json_t *, void *);

/* Set key to v in o unless v is NULL; returns -1 on failure. */
static int
jset(json_t *o, const char *key, json_t *v)
{
	if (v == NULL)
		return -1;
	return json_object_set_new(o, key, v);
}

/* Equal values, whatever their trailing zeros (59.94 and 59.940). */
static bool
dec_same(struct mos_dec a, struct mos_dec b)
{
	while (a.scale > 0 && a.v % 10 == 0) {
		a.v /= 10;
		a.scale--;
	}
	while (b.scale > 0 && b.v % 10 == 0) {
		b.v /= 10;
		b.scale--;
	}
	return a.v == b.v && a.scale == b.scale;
}

/*
 * A JSON real as a decimal: the fewest digits after the point that read
 * back as the same double (59.94, not 59.939999999999998), and at least
 * one, so that a real stays a real (4800.0). -1 when it takes more than 18
 * digits.
 */
static int
real_to_dec(double x, struct mos_dec *d)
{
	char	buf[512];
	int	scale;

	for (scale = 1; scale <= 18; scale++) {
		snprintf(buf, sizeof buf, "%.*f", scale, x);
		if (strtod(buf, NULL) == x)
			return mos_dec_parse(buf, d);
	}
	return -1;
}

/*
 * A JSON value for a decimal: an integer, a real when it has a fraction and
 * the real that is printed reads back as the same value, else the exact
 * digits as a string (more digits than a double holds).
 */
static json_t *
dec_to_json(const struct mos_dec *d)
{
	struct mos_dec	back;
	char		exact[64], shown[64];
	double		x;

	if (d->scale == 0)
		return json_integer(d->v);
	mos_dec_format(d, exact, sizeof exact);
	x = strtod(exact, NULL);
	snprintf(shown, sizeof shown, "%.15g", x);	/* JSON_DUMP_FLAGS */
	if (strtod(shown, NULL) == x && real_to_dec(x, &back) == 0 &&
	    dec_same(back, *d))
		return json_real(x);
	return json_string(exact);
}

/* listMachInfo supportedProfiles as {"@deviceType":..,"mosProfile":{..}}. */
static int
profiles_to_json(json_t *o, const struct mos_list_mach_info *l)
{
	json_t	*sp, *mp;
	char	 key[2] = "0";
	int	 i, any = l->device_type != NULL;

	for (i = 0; i < 8; i++)
		any |= l->profiles[i] != -1;
	if (!any || l->profiles_flat)
		return 0;
	if ((sp = json_object()) == NULL || jset(o, "supportedProfiles", sp) == -1)
		return -1;
	if (l->device_type != NULL &&
	    jset(sp, "@deviceType", json_string(l->device_type)) == -1)
		return -1;
	if ((mp = json_object()) == NULL || jset(sp, "mosProfile", mp) == -1)
		return -1;
	for (i = 0; i < 8; i++) {
		key[0] = (char)('0' + i);
		if (l->profiles[i] != -1 && jset(mp, key,
		    json_string(l->profiles[i] ? "YES" : "NO")) == -1)
			return -1;
	}
	return 0;
}

/* storyBody as {"@Read1stMEMasBody":..,"#content":[{"p":..},..]}. */
static json_t *
body_to_json(const struct mos_story_body *b)
{
	static const char *const names[] = { "#text", "p", "storyPresenter",
	    "storyPresenterRR", "storyItem" };
	json_t	*o, *arr, *part;
	size_t	 i;

	if ((o = json_object()) == NULL || (arr = json_array()) == NULL) {
		json_decref(o);
		return NULL;
	}
	if ((b->read1st_mem_as_body != NULL && jset(o, "@Read1stMEMasBody",
	    json_string(b->read1st_mem_as_body)) == -1) ||
	    jset(o, "#content", arr) == -1)
		goto fail;
	for (i = 0; i < b->part.n; i++) {
		if ((unsigned)b->part.v[i].kind >= 5 ||
		    (part = json_object()) == NULL ||
		    json_array_append_new(arr, part) == -1)
			goto fail;
		if (jset(part, names[b->part.v[i].kind],
		    b->part.v[i].kind == MOS_BODY_ITEM ?
		    struct_to_json(&mos_sd_item, b->part.v[i].item) :
		    json_string(b->part.v[i].text)) == -1)
			goto fail;
	}
	return o;
fail:
	json_decref(o);
	return NULL;
}

/* An array field as a JSON array (NULL value when empty). */
static int
array_to_json(json_t *o, const struct mos_fdesc *f, const void *base)
{
	struct mos_anyarr	 a = mos_arr_get(MOS_CFP(base, f));
	json_t			*arr;
	size_t			 i;

	if (a.n == 0)
		return 0;
	if ((arr = json_array()) == NULL || jset(o, f->name, arr) == -1)
		return -1;
	for (i = 0; i < a.n; i++) {
		if (json_array_append_new(arr, f->kind == MOS_FK_STRS ?
		    json_string(((const char *const *)a.v)[i]) :
		    struct_to_json(f->sub, (const char *)a.v +
		    i * f->sub->size)) == -1)
			return -1;
	}
	return 0;
}

/*
 * A struct without one of its keys: an element a lenient parse did not
 * find (or found without its key). Its JSON form would not read back
 * (struct_from_json() requires the keys), so it is left out.
 */
static int
struct_keyless(const struct mos_sdesc *sd, const void *base)
{
	size_t	i;

	for (i = 0; i < sd->n; i++)
		if ((sd->f[i].flags & MOS_F_KEY) &&
		    *(const char *const *)MOS_CFP(base, &sd->f[i]) == NULL)
			return 1;
	return 0;
}

/* One field into o. */
static int
field_to_json(json_t *o, const struct mos_fdesc *f, const void *base)
{
	const void			*p = MOS_CFP(base, f);
	const struct mos_list_mach_info	*l = base;
	const char			*s;
	char				 key[64], buf[64];

	switch (f->kind) {
	case MOS_FK_STR: case MOS_FK_XML: case MOS_FK_TEXT: case MOS_FK_ATTR:
		if ((s = *(const char *const *)p) == NULL)
			return 0;
		snprintf(key, sizeof key, "%s%s", f->kind == MOS_FK_ATTR ?
		    "@" : "", f->name);
		return jset(o, key, json_string(s));
	case MOS_FK_U32:
		if (!*MOS_CHAS(base, f))
			return 0;
		return jset(o, f->name, json_integer(*(const uint32_t *)p));
	case MOS_FK_DEC:
		if (!((const struct mos_dec *)p)->set)
			return 0;
		return jset(o, f->name, dec_to_json(p));
	case MOS_FK_TIME:
		if (mos_time_iso(p, buf, sizeof buf) == 0)
			return 0;
		return jset(o, f->name, json_string(buf));
	case MOS_FK_DUR:
		if (mos_dur_format(p, buf, sizeof buf) == 0)
			return 0;
		return jset(o, f->name, json_string(buf));
	case MOS_FK_STRUCT:
		if (struct_keyless(f->sub, p))
			return 0;
		return jset(o, f->name, struct_to_json(f->sub, p));
	case MOS_FK_PTR:
		if (*(void *const *)p == NULL ||
		    struct_keyless(f->sub, *(void *const *)p))
			return 0;
		return jset(o, f->name, struct_to_json(f->sub,
		    *(void *const *)p));
	case MOS_FK_ARRAY: case MOS_FK_STRS: case MOS_FK_WRAP: case MOS_FK_GROUP:
		return array_to_json(o, f, base);
	case MOS_FK_PROFILES:
		return profiles_to_json(o, l);
	case MOS_FK_PROFILE:
		if (!l->profiles_flat || l->profiles[f->aux] == -1)
			return 0;
		return jset(o, f->name, json_string(l->profiles[f->aux] ?
		    "YES" : "NO"));
	case MOS_FK_BODY:
		return jset(o, f->name, body_to_json(p));
	}
	return 0;
}

/* A struct as a JSON object, fields in DTD order. */
static json_t *
struct_to_json(const struct mos_sdesc *sd, const void *base)
{
	json_t	*o;
	size_t	 i;

	if (base == NULL || (o = json_object()) == NULL)
		return NULL;
	for (i = 0; i < sd->n; i++) {
		if (field_to_json(o, &sd->f[i], base) == -1) {
			json_decref(o);
			return NULL;
		}
	}
	return o;
}

/* The JSON line of a message. */
char *
mos_msg_to_json(const struct mos_msg *m)
{
	json_t	*o, *body;
	char	*s = NULL;
	size_t	 i;

	if (m == NULL || (unsigned)m->type >= MOS_T__COUNT ||
	    (o = json_object()) == NULL)
		return NULL;
	if (jset(o, "type", json_string(mos_type_name(m->type))) == -1)
		goto done;
	if (m->type == MOS_T_UNKNOWN && jset(o, "name",
	    json_string(m->type_name ? m->type_name : "")) == -1)
		goto done;
	if ((m->mos_id != NULL && jset(o, "mosID", json_string(m->mos_id)) == -1) ||
	    (m->ncs_id != NULL && jset(o, "ncsID", json_string(m->ncs_id)) == -1) ||
	    (m->has_message_id && jset(o, "messageID",
	    json_integer(m->message_id)) == -1))
		goto done;
	if (m->type == MOS_T_UNKNOWN) {
		if ((body = json_object()) == NULL || jset(o, "body", body) == -1 ||
		    jset(body, "#xml", json_string(m->u.unknown.xml ?
		    m->u.unknown.xml : "")) == -1)
			goto done;
	} else if (jset(o, "body", struct_to_json(mos_tdescs[m->type].body,
	    &m->u)) == -1)
		goto done;
	if (m->warnings.n > 0) {
		if ((body = json_array()) == NULL || jset(o, "warnings", body) ==
		    -1)
			goto done;
		for (i = 0; i < m->warnings.n; i++) {
			if (json_array_append_new(body,
			    json_string(m->warnings.v[i])) == -1)
				goto done;
		}
	}
	s = json_dumps(o, JSON_DUMP_FLAGS);
done:
	json_decref(o);
	return s;
}

/* Record a decoding error, prefixed with the key path. */
static int
jerr(struct jctx *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int
jerr(struct jctx *c, const char *fmt, ...)
{
	va_list	ap;
	int	n = 0;

	if (c->err == NULL || c->errlen == 0)
		return -1;
	if (c->path[0] != '\0')
		n = snprintf(c->err, c->errlen, "%s: ", c->path);
	if (n < 0 || (size_t)n >= c->errlen)
		return -1;
	va_start(ap, fmt);
	vsnprintf(c->err + n, c->errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return -1;
}

/* Append "/key" or "[i]" to the path; returns the old length to restore. */
static size_t
jpush(struct jctx *c, const char *key, long idx)
{
	size_t	len = strlen(c->path);

	if (key != NULL)
		snprintf(c->path + len, sizeof c->path - len, "%s%s",
		    len ? "/" : "", key);
	else
		snprintf(c->path + len, sizeof c->path - len, "[%ld]", idx);
	return len;
}

/* A JSON string into an arena copy. */
static int
jstr(struct jctx *c, json_t *v, const char **out)
{
	if (!json_is_string(v))
		return jerr(c, "expected a string");
	*out = mos_msg_strndup_raw(c->m, json_string_value(v),
	    json_string_length(v));
	if (*out == NULL)
		return jerr(c, "out of memory");
	if (strlen(*out) != json_string_length(v))
		return jerr(c, "string holds a NUL character");
	return 0;
}

/* A decimal from a JSON integer, real or string. */
static int
jdec(struct jctx *c, json_t *v, struct mos_dec *d)
{
	char	buf[64];

	if (json_is_integer(v) && json_integer_value(v) >= 0)
		snprintf(buf, sizeof buf, "%lld",
		    (long long)json_integer_value(v));
	else if (json_is_real(v) && json_real_value(v) >= 0) {
		if (real_to_dec(json_real_value(v), d) == -1)
			return jerr(c, "%.17g is not a decimal of at most 18 "
			    "digits", json_real_value(v));
		return 0;
	} else if (json_is_string(v))
		snprintf(buf, sizeof buf, "%s", json_string_value(v));
	else
		return jerr(c, "expected a non-negative number");
	if (mos_dec_parse(buf, d) == -1)
		return jerr(c, "\"%s\" is not a decimal of at most 18 digits",
		    buf);
	return 0;
}

/* A scalar field (number, decimal, time, duration). */
static int
jscalar(struct jctx *c, const struct mos_fdesc *f, json_t *v, void *base)
{
	void		*p = MOS_FP(base, f);
	json_int_t	 i;

	switch (f->kind) {
	case MOS_FK_U32:
		if (!json_is_integer(v) || (i = json_integer_value(v)) < 0 ||
		    i > (json_int_t)UINT32_MAX)
			return jerr(c, "expected an integer from 0 to 4294967295");
		*(uint32_t *)p = (uint32_t)i;
		*MOS_HAS(base, f) = true;
		return 0;
	case MOS_FK_DEC:
		return jdec(c, v, p);
	case MOS_FK_TIME:
		if (!json_is_string(v) ||
		    mos_time_parse_iso(json_string_value(v), p) == -1 ||
		    !(((struct mos_time *)p)->flags & MOS_TIME_SET))
			return jerr(c, "expected an ISO 8601 time");
		return 0;
	case MOS_FK_DUR:
		if (json_is_integer(v) && json_integer_value(v) >= 0 &&
		    json_integer_value(v) <= (json_int_t)UINT32_MAX) {
			((struct mos_dur *)p)->sec = (uint32_t)json_integer_value(v);
			((struct mos_dur *)p)->set = true;
			return 0;
		}
		if (!json_is_string(v) || mos_dur_parse(json_string_value(v),
		    MOS_LENIENT, p) == -1 || !((struct mos_dur *)p)->set)
			return jerr(c, "expected a duration \"hh:mm:ss\"");
		return 0;
	}
	return 0;
}

/* "YES"/"NO" (or true/false) into a profile flag. */
static int
jyesno(struct jctx *c, json_t *v, int8_t *out)
{
	const char	*s = json_string_value(v);

	if (json_is_boolean(v))
		*out = json_is_true(v);
	else if (s != NULL && strcmp(s, "YES") == 0)
		*out = 1;
	else if (s != NULL && strcmp(s, "NO") == 0)
		*out = 0;
	else
		return jerr(c, "expected \"YES\" or \"NO\"");
	return 0;
}

/* supportedProfiles: {"@deviceType":"MOS","mosProfile":{"0":"YES",..}}. */
static int
jprofiles(struct jctx *c, json_t *v, struct mos_list_mach_info *l)
{
	const char	*key;
	json_t		*val, *mp;
	char		*end;
	long		 n;

	if (!json_is_object(v))
		return jerr(c, "expected an object");
	l->profiles_flat = false;
	json_object_foreach(v, key, val) {
		if (strcmp(key, "@deviceType") == 0) {
			if (jstr(c, val, &l->device_type) == -1)
				return -1;
		} else if (strcmp(key, "mosProfile") != 0)
			return jerr(c, "unknown key \"%s\"", key);
	}
	if ((mp = json_object_get(v, "mosProfile")) == NULL)
		return 0;
	if (!json_is_object(mp))
		return jerr(c, "mosProfile: expected an object");
	json_object_foreach(mp, key, val) {
		n = strtol(key, &end, 10);
		if (*key == '\0' || *end != '\0' || n < 0 || n > 7)
			return jerr(c, "mosProfile: \"%s\" is not 0-7", key);
		if (jyesno(c, val, &l->profiles[n]) == -1)
			return -1;
	}
	return 0;
}

/*
 * Verbatim XML must be a well-formed fragment; it is stored the way the
 * parser would store it, so that JSON and wire give the same model.
 */
static int
jxml(struct jctx *c, const char *elem, const char **sp)
{
	char	msg[200];

	if ((*sp = mos_xml_canon(c->m, elem, *sp, MOS_LENIENT, msg,
	    sizeof msg)) == NULL)
		return jerr(c, "%s", msg);
	return 0;
}

/* One storyBody part: an object with one key. */
static int
jbody_part(struct jctx *c, json_t *v, struct mos_body_part *p)
{
	static const char *const names[] = { "#text", "p", "storyPresenter",
	    "storyPresenterRR", "storyItem" };
	const char	*key;
	json_t		*val;
	int		 k;

	if (!json_is_object(v) || json_object_size(v) != 1)
		return jerr(c, "expected an object with one key");
	json_object_foreach(v, key, val) {
		for (k = 0; k < 5 && strcmp(key, names[k]) != 0; k++)
			;
		if (k == 5)
			return jerr(c, "unknown storyBody part \"%s\"", key);
		p->kind = (enum mos_body_kind)k;
		if (k != MOS_BODY_ITEM)
			return jstr(c, val, &p->text) == -1 ? -1 :
			    k == MOS_BODY_P ? jxml(c, "p", &p->text) : 0;
		if (!json_is_object(val))
			return jerr(c, "storyItem: expected an object");
		if ((p->item = mos_msg_alloc(c->m, sizeof *p->item)) == NULL)
			return jerr(c, "out of memory");
		return struct_from_json(c, &mos_sd_item, val, p->item);
	}
	return 0;
}

/* storyBody: {"@Read1stMEMasBody":..,"#content":[..]}. */
static int
jbody(struct jctx *c, json_t *v, struct mos_story_body *b)
{
	const char	*key;
	json_t		*val, *arr;
	size_t		 i, save;

	if (!json_is_object(v))
		return jerr(c, "expected an object");
	json_object_foreach(v, key, val) {
		if (strcmp(key, "@Read1stMEMasBody") == 0) {
			if (jstr(c, val, &b->read1st_mem_as_body) == -1)
				return -1;
		} else if (strcmp(key, "#content") != 0)
			return jerr(c, "unknown key \"%s\"", key);
	}
	if ((arr = json_object_get(v, "#content")) == NULL)
		return 0;
	if (!json_is_array(arr))
		return jerr(c, "#content: expected an array");
	if (json_array_size(arr) > 0 && (b->part.v = mos_msg_calloc(c->m,
	    json_array_size(arr), sizeof *b->part.v)) == NULL)
		return jerr(c, "out of memory");
	jpush(c, "#content", 0);
	json_array_foreach(arr, i, val) {
		save = jpush(c, NULL, (long)i);
		if (jbody_part(c, val, &b->part.v[i]) == -1)
			return -1;
		/* Character data reads back as one run, never blank. */
		if (b->part.v[i].kind == MOS_BODY_TEXT && (b->part.v[i].text
		    [strspn(b->part.v[i].text, " \t\r\n")] == '\0' || (i > 0 &&
		    b->part.v[i - 1].kind == MOS_BODY_TEXT)))
			return jerr(c, "#text must not be blank nor follow "
			    "another #text");
		c->path[save] = '\0';
		b->part.n = i + 1;
	}
	return 0;
}

/* An array field from a JSON array. */
static int
jarray(struct jctx *c, const struct mos_fdesc *f, json_t *v, void *base)
{
	size_t	 n, i, save, size;
	json_t	*e;
	char	*arr;

	if (!json_is_array(v))
		return jerr(c, "expected an array");
	if ((n = json_array_size(v)) == 0)
		return 0;
	size = f->kind == MOS_FK_STRS ? sizeof(char *) : f->sub->size;
	if ((arr = mos_msg_calloc(c->m, n, size)) == NULL)
		return jerr(c, "out of memory");
	mos_arr_set(MOS_FP(base, f), arr, n);
	json_array_foreach(v, i, e) {
		save = jpush(c, NULL, (long)i);
		if (f->kind == MOS_FK_STRS) {
			if (jstr(c, e, (const char **)(void *)(arr + i * size)) == -1)
				return -1;
		} else if (!json_is_object(e))
			return jerr(c, "expected an object");
		else if (f->kind == MOS_FK_GROUP && json_object_size(e) == 0)
			return jerr(c, "an entry needs at least one field");
		else if (struct_from_json(c, f->sub, e, arr + i * size) == -1)
			return -1;
		if (f->kind == MOS_FK_GROUP && i > 0 && !mos_group_apart(f->sub,
		    arr + (i - 1) * size, arr + i * size))
			return jerr(c, "this entry would read as part of the one "
			    "before: give it a %s", f->sub->f[0].name);
		c->path[save] = '\0';
	}
	return 0;
}

/* One field from its JSON value. */
static int
field_from_json(struct jctx *c, const struct mos_fdesc *f, json_t *v,
    void *base)
{
	void				*p = MOS_FP(base, f);
	struct mos_list_mach_info	*l = base;

	switch (f->kind) {
	case MOS_FK_STR: case MOS_FK_TEXT: case MOS_FK_ATTR:
		return jstr(c, v, p);
	case MOS_FK_XML:
		return jstr(c, v, p) == -1 ? -1 : jxml(c, f->name, p);
	case MOS_FK_U32: case MOS_FK_DEC: case MOS_FK_TIME: case MOS_FK_DUR:
		return jscalar(c, f, v, base);
	case MOS_FK_STRUCT:
		if (!json_is_object(v))
			return jerr(c, "expected an object");
		memset(p, 0, f->sub->size);
		return struct_from_json(c, f->sub, v, p);
	case MOS_FK_PTR:
		if (!json_is_object(v))
			return jerr(c, "expected an object");
		if ((*(void **)p = mos_msg_alloc(c->m, f->sub->size)) == NULL)
			return jerr(c, "out of memory");
		return struct_from_json(c, f->sub, v, *(void **)p);
	case MOS_FK_ARRAY: case MOS_FK_STRS: case MOS_FK_WRAP: case MOS_FK_GROUP:
		return jarray(c, f, v, base);
	case MOS_FK_PROFILES:
		return jprofiles(c, v, l);
	case MOS_FK_PROFILE:
		l->profiles_flat = true;
		return jyesno(c, v, &l->profiles[f->aux]);
	case MOS_FK_BODY:
		return jbody(c, v, p);
	}
	return 0;
}

/* The field a JSON key names: "@attr", "#text" or an element name. */
static const struct mos_fdesc *
jfind(const struct mos_sdesc *sd, const char *key)
{
	size_t	cur = 0;

	if (key[0] == '@')
		return mos_sdesc_find_attr(sd, key + 1);
	if (strcmp(key, "#text") == 0)
		return mos_sdesc_find_kind(sd, MOS_FK_TEXT);
	return mos_sdesc_find(sd, key, &cur);
}

/* Fill the struct at base from a JSON object. */
static int
struct_from_json(struct jctx *c, const struct mos_sdesc *sd, json_t *o,
    void *base)
{
	const struct mos_fdesc	*f;
	const char		*key;
	json_t			*v;
	size_t			 save, i;

	json_object_foreach(o, key, v) {
		if ((f = jfind(sd, key)) == NULL)
			return jerr(c, "unknown key \"%s\"", key);
		save = jpush(c, key, 0);
		if (json_is_null(v))
			return jerr(c, "null is not a value; leave the key out");
		if (field_from_json(c, f, v, base) == -1)
			return -1;
		c->path[save] = '\0';
	}
	for (i = 0; i < sd->n; i++) {
		/* An element always has text, if only "": as the parser says. */
		if (sd->f[i].kind == MOS_FK_TEXT &&
		    *(const char **)MOS_FP(base, &sd->f[i]) == NULL)
			*(const char **)MOS_FP(base, &sd->f[i]) = "";
		if ((sd->f[i].flags & MOS_F_KEY) &&
		    *(const char *const *)MOS_CFP(base, &sd->f[i]) == NULL)
			return jerr(c, "%s missing", sd->f[i].name);
	}
	return 0;
}

/* The envelope keys of the top-level object. */
static int
envelope_from_json(struct jctx *c, json_t *o)
{
	const char	*key;
	json_t		*v;
	json_int_t	 id;

	json_object_foreach(o, key, v) {
		if (strcmp(key, "type") == 0 || strcmp(key, "name") == 0 ||
		    strcmp(key, "body") == 0 || strcmp(key, "warnings") == 0)
			continue;	/* warnings: what decode reported */
		if (strcmp(key, "mosID") == 0) {
			if (jstr(c, v, &c->m->mos_id) == -1)
				return -1;
		} else if (strcmp(key, "ncsID") == 0) {
			if (jstr(c, v, &c->m->ncs_id) == -1)
				return -1;
		} else if (strcmp(key, "messageID") == 0) {
			if (!json_is_integer(v) || (id = json_integer_value(v)) < 1 ||
			    id > INT32_MAX)
				return jerr(c, "messageID must be an integer from "
				    "1 to 2147483647");
			c->m->has_message_id = true;
			c->m->message_id = (int32_t)id;
		} else
			return jerr(c, "unknown key \"%s\"", key);
	}
	return 0;
}

/* The name of an unknown message must be an XML element name. */
static int
unknown_name_check(const char *name, char *err, size_t errlen)
{
	char	*tag, msg[160];
	int	 rc = -1;

	if (mos_type_from_name(name) != MOS_T_UNKNOWN) {
		snprintf(err, errlen, "name: \"%s\" is a known type; give it as "
		    "\"type\"", name);
		return -1;
	}
	if (strcmp(name, "mosID") == 0 || strcmp(name, "ncsID") == 0 ||
	    strcmp(name, "messageID") == 0) {
		snprintf(err, errlen, "name: \"%s\" belongs to the envelope",
		    name);
		return -1;
	}
	if (*name != '\0' && strpbrk(name, "<>/&\"' \t\r\n=") == NULL &&
	    (tag = malloc(strlen(name) + 4)) != NULL) {
		sprintf(tag, "<%s/>", name);
		rc = mos_fragment_check("x", tag, strlen(tag), MOS_LENIENT,
		    NULL, msg, sizeof msg);
		free(tag);
	}
	if (rc == -1)
		snprintf(err, errlen, "name: \"%.64s\" is not an XML element "
		    "name", name);
	return rc;
}

/* The message type named by "type" (and "name" for unknown ones). */
static int
type_from_json(json_t *o, enum mos_type *t, const char **name, char *err,
    size_t errlen)
{
	json_t		*v = json_object_get(o, "type");
	const char	*s = json_string_value(v), *e;

	if (v == NULL || json_is_null(v)) {
		e = json_string_value(json_object_get(o, "error"));
		snprintf(err, errlen, "no message type%s%s", e ? ": the line "
		    "records a decoding error: " : "", e ? e : "");
		return -1;
	}
	if (s == NULL) {
		snprintf(err, errlen, "type: expected a string");
		return -1;
	}
	*t = mos_type_from_name(s);
	*name = NULL;
	if (*t != MOS_T_UNKNOWN)
		return 0;
	if (strcmp(s, "unknown") != 0) {
		snprintf(err, errlen, "type: \"%.60s\" is not a MOS message type "
		    "(use \"unknown\" with \"name\")", s);
		return -1;
	}
	if ((*name = json_string_value(json_object_get(o, "name"))) == NULL) {
		snprintf(err, errlen, "name: a string is required for type "
		    "\"unknown\"");
		return -1;
	}
	return unknown_name_check(*name, err, errlen);
}

/* The body of an unknown message: {"#xml": "..."}. */
static int
unknown_from_json(struct jctx *c, json_t *body)
{
	const char	*key;
	json_t		*v;

	json_object_foreach(body, key, v) {
		if (strcmp(key, "#xml") != 0)
			return jerr(c, "unknown key \"%s\"", key);
		if (jstr(c, v, &c->m->u.unknown.xml) == -1 ||
		    jxml(c, c->m->type_name, &c->m->u.unknown.xml) == -1)
			return -1;
	}
	if (c->m->u.unknown.xml == NULL)
		c->m->u.unknown.xml = "";	/* as an empty element reads */
	return 0;
}

/* Parse one JSON object of the mosmsg schema into a message. */
struct mos_msg *
mos_msg_from_json(const char *json, size_t len, char *errbuf, size_t errlen)
{
	struct mos_msg	*m;
	json_error_t	 je;
	json_t		*o;
	char		 dummy[8];

	if (errbuf == NULL || errlen == 0) {
		errbuf = dummy;
		errlen = sizeof dummy;
	}
	errbuf[0] = '\0';
	if ((o = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je)) == NULL) {
		snprintf(errbuf, errlen, "JSON error at line %d column %d: %s",
		    je.line, je.column, je.text);
		return NULL;
	}
	m = mos_msg_from_json_value(o, errbuf, errlen);
	json_decref(o);
	return m;
}

/* The same from a parsed JSON value (the caller keeps it). */
struct mos_msg *
mos_msg_from_json_value(struct json_t *o, char *errbuf, size_t errlen)
{
	struct jctx	 c;
	json_t		*body;
	enum mos_type	 t;
	const char	*name;
	char		 dummy[8];
	int		 rc = -1;

	if (errbuf == NULL || errlen == 0) {
		errbuf = dummy;
		errlen = sizeof dummy;
	}
	errbuf[0] = '\0';
	memset(&c, 0, sizeof c);
	c.err = errbuf;
	c.errlen = errlen;
	json_incref(o);
	if (!json_is_object(o)) {
		snprintf(errbuf, errlen, "expected a JSON object");
		goto done;
	}
	if (type_from_json(o, &t, &name, errbuf, errlen) == -1)
		goto done;
	if ((c.m = mos_msg_new(t)) == NULL) {
		snprintf(errbuf, errlen, "out of memory");
		goto done;
	}
	if (name != NULL && (c.m->type_name = mos_msg_strdup(c.m, name)) == NULL) {
		snprintf(errbuf, errlen, "out of memory");
		goto done;
	}
	if (envelope_from_json(&c, o) == -1)
		goto done;
	body = json_object_get(o, "body");
	if (body != NULL && !json_is_object(body)) {
		jerr(&c, "body: expected an object");
		goto done;
	}
	snprintf(c.path, sizeof c.path, "body");
	if (body == NULL)
		body = json_object();
	else
		json_incref(body);
	if (body == NULL)
		goto done;
	rc = t == MOS_T_UNKNOWN ? unknown_from_json(&c, body) :
	    struct_from_json(&c, mos_tdescs[t].body, body, &c.m->u);
	json_decref(body);
done:
	json_decref(o);
	if (rc == -1) {
		mos_msg_free(c.m);
		return NULL;
	}
	return c.m;
}
