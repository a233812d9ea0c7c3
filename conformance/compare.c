/*
 * One reply against the expected one, field by field: both frames are parsed
 * into the typed model (mosxml) and mapped to the JSON of docs/mosmsg.md,
 * then the two trees are walked together. Text layout, element order the
 * model fixes, entity spelling and encodings do not matter; values do.
 *
 * Normalised before the walk: the messageID (the caller maps it through the
 * session), times that depend on the clock (time, opTime, created, changed,
 * roEventTime: compared for presence), the fields the scenario lists in
 * "any" (presence only; one the expected frame leaves out may be there or
 * not) and in "not" (must differ from a value).
 */
#include <string.h>

#include "conformance/replay.h"
#include "mosxml/mosjson.h"

#define CMP_VALUE_MAX	160	/* characters of a value shown in a diff */

static const char *const cmp_times[] = {
	"time", "opTime", "created", "changed", "roEventTime",
};

/* A frame as the JSON of its model; NULL with why when it does not parse. */
static json_t *
cmp_json(const void *data, size_t len, enum mos_enc enc, char *why,
    size_t wlen)
{
	struct mos_msg		*m = NULL;
	struct mos_error	 e;
	json_error_t		 je;
	json_t			*o;
	char			*s;

	if (mos_parse(data, len, enc, MOS_LENIENT, &m, &e) != MOS_OK) {
		snprintf(why, wlen, "%s: %s", mos_err_name(e.code), e.msg);
		return NULL;
	}
	s = mos_msg_to_json(m);
	mos_msg_free(m);
	if (s == NULL || (o = json_loads(s, 0, &je)) == NULL) {
		snprintf(why, wlen, "cannot map the message to JSON");
		free(s);
		return NULL;
	}
	free(s);
	return o;
}

/* The messageID of a frame, 0 if none. */
int32_t
cmp_message_id(const void *data, size_t len, enum mos_enc enc)
{
	struct mos_msg		*m = NULL;
	struct mos_error	 e;
	int32_t			 id = 0;

	if (mos_parse(data, len, enc, MOS_LENIENT, &m, &e) == MOS_OK) {
		if (m->has_message_id)
			id = m->message_id;
		mos_msg_free(m);
	} else if (e.env.have_message_id)
		id = e.env.message_id;
	return id;
}

/* True when key is one of the names in the array. */
static bool
cmp_listed(const json_t *names, const char *key)
{
	const json_t	*v;
	size_t		 i;

	if (names == NULL)
		return false;
	json_array_foreach(names, i, v) {
		if (strcmp(json_string_value(v), key) == 0)
			return true;
	}
	return false;
}

/* True for the clock-dependent time fields. */
static bool
cmp_is_time(const char *key)
{
	size_t	i;

	for (i = 0; i < nitems(cmp_times); i++) {
		if (strcmp(cmp_times[i], key) == 0)
			return true;
	}
	return false;
}

/* A value for a diff line, cut when long. */
static void
cmp_value(struct sbuf *sb, const json_t *v)
{
	char	*s;
	size_t	 len;

	if (v == NULL) {
		sbuf_puts(sb, "(absent)");
		return;
	}
	s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
	if (s == NULL) {
		sbuf_puts(sb, "?");
		return;
	}
	len = strlen(s);
	if (len > CMP_VALUE_MAX) {
		sbuf_add(sb, s, CMP_VALUE_MAX);
		sbuf_puts(sb, "...");
	} else
		sbuf_puts(sb, s);
	free(s);
}

/* One difference. */
static void
cmp_line(struct sbuf *diff, const char *path, const json_t *want,
    const json_t *got)
{
	sbuf_printf(diff, "  %s: expected ", path);
	cmp_value(diff, want);
	sbuf_puts(diff, ", got ");
	cmp_value(diff, got);
	sbuf_puts(diff, "\n");
}

/* Scalars equal, numbers by value (objTB 50 equals 50.0). */
static bool
cmp_scalar_equal(const json_t *a, const json_t *b)
{
	if (json_is_number(a) && json_is_number(b))
		return json_number_value(a) == json_number_value(b);
	return json_equal(a, b);
}

/* Equal, or both absent. */
static bool
cmp_same(const json_t *a, const json_t *b)
{
	if (a == NULL || b == NULL)
		return a == b;
	return json_equal(a, b);
}

static int	cmp_walk(const char *, const json_t *, const json_t *,
		    const struct cmp_rules *, struct sbuf *);

/* One object key of the walk. */
static int
cmp_key(const char *path, const char *key, const json_t *want,
    const json_t *got, const struct cmp_rules *r, struct sbuf *diff)
{
	const json_t	*bad;
	char		 sub[512];

	snprintf(sub, sizeof sub, "%s%s%s", path, *path != '\0' ? "." : "",
	    key);
	if (r->differ != NULL &&
	    (bad = json_object_get(r->differ, key)) != NULL) {
		if (got == NULL || cmp_scalar_equal(bad, got)) {
			sbuf_printf(diff, "  %s: expected anything but ", sub);
			cmp_value(diff, bad);
			sbuf_puts(diff, ", got ");
			cmp_value(diff, got);
			sbuf_puts(diff, "\n");
			return 1;
		}
		return 0;
	}
	if (cmp_is_time(key) || cmp_listed(r->any, key) ||
	    cmp_listed(r->any, sub)) {
		/* listed in "any" but not written: the device's choice */
		if (want == NULL && !cmp_is_time(key))
			return 0;
		if ((want == NULL) != (got == NULL)) {
			cmp_line(diff, sub, want, got);
			return 1;
		}
		return 0;
	}
	if (want == NULL || got == NULL) {
		cmp_line(diff, sub, want, got);
		return 1;
	}
	return cmp_walk(sub, want, got, r, diff);
}

/* Walk two values together; the number of differences found. */
static int
cmp_walk(const char *path, const json_t *want, const json_t *got,
    const struct cmp_rules *r, struct sbuf *diff)
{
	const char	*key;
	const json_t	*v;
	char		 sub[512];
	size_t		 i, n;
	int		 bad = 0;

	if (json_is_object(want) && json_is_object(got)) {
		json_object_foreach((json_t *)(uintptr_t)want, key, v)
			bad += cmp_key(path, key, v, json_object_get(got, key),
			    r, diff);
		json_object_foreach((json_t *)(uintptr_t)got, key, v) {
			if (json_object_get(want, key) == NULL)
				bad += cmp_key(path, key, NULL, v, r, diff);
		}
		return bad;
	}
	if (json_is_array(want) && json_is_array(got)) {
		n = json_array_size(want);
		if (json_array_size(got) > n)
			n = json_array_size(got);
		for (i = 0; i < n; i++) {
			snprintf(sub, sizeof sub, "%s[%zu]", path, i);
			if (i >= json_array_size(want) ||
			    i >= json_array_size(got)) {
				cmp_line(diff, sub, json_array_get(want, i),
				    json_array_get(got, i));
				bad++;
			} else
				bad += cmp_walk(sub, json_array_get(want, i),
				    json_array_get(got, i), r, diff);
		}
		return bad;
	}
	if (!cmp_scalar_equal(want, got)) {
		cmp_line(diff, path, want, got);
		return 1;
	}
	return 0;
}

/* Compare a reply with the expected one. */
int
cmp_frames(const char *expected_xml, const void *got, size_t got_len,
    enum mos_enc enc, const struct cmp_rules *r, struct sbuf *diff)
{
	json_t	*w, *g;
	char	 why[400];
	int	 bad;

	if ((w = cmp_json(expected_xml, strlen(expected_xml), MOS_ENC_UTF8, why,
	    sizeof why)) == NULL) {
		sbuf_printf(diff, "  the expected frame does not parse: %s\n",
		    why);
		return 1;
	}
	if ((g = cmp_json(got, got_len, enc, why, sizeof why)) == NULL) {
		sbuf_printf(diff, "  the reply does not parse: %s\n", why);
		json_decref(w);
		return 1;
	}
	json_object_del(w, "messageID");
	json_object_del(g, "messageID");
	if (r->mos_id != NULL)
		json_object_set_new(w, "mosID", json_string(r->mos_id));
	if (r->ncs_id != NULL)
		json_object_set_new(w, "ncsID", json_string(r->ncs_id));
	if (!cmp_same(json_object_get(w, "type"), json_object_get(g,
	    "type")) || !cmp_same(json_object_get(w, "name"),
	    json_object_get(g, "name"))) {
		sbuf_puts(diff, "  message: expected ");
		cmp_value(diff, json_object_get(w, "name") != NULL ?
		    json_object_get(w, "name") : json_object_get(w, "type"));
		sbuf_puts(diff, ", got ");
		cmp_value(diff, json_object_get(g, "name") != NULL ?
		    json_object_get(g, "name") : json_object_get(g, "type"));
		sbuf_puts(diff, "\n");
		bad = 1;
	} else
		bad = cmp_walk("", w, g, r, diff);
	json_decref(w);
	json_decref(g);
	return bad != 0;
}
