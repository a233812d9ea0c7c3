/*
 * Captures: JSON Lines as `mosctl history export` writes them
 * (conformance/capture.md), plus the optional keys a scenario adds to mark
 * its expectations (conformance/README.md). Every line is checked where it
 * enters; an error names the file and the line.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "conformance/replay.h"

/* Free one frame's strings. */
static void
capture_frame_clear(struct cap_frame *f)
{
	free(f->ncs);
	free(f->type);
	free(f->xml);
	json_decref(f->any);
	json_decref(f->differ);
}

/* Free a capture's contents. */
void
capture_free(struct capture *c)
{
	size_t	i;

	for (i = 0; i < c->n; i++)
		capture_frame_clear(&c->f[i]);
	free(c->f);
	free(c->path);
	free(c->title);
	memset(c, 0, sizeof *c);
}

/* A required string key. */
static const char *
capture_str(json_t *o, const char *key)
{
	json_t	*v = json_object_get(o, key);

	return json_is_string(v) ? json_string_value(v) : NULL;
}

/* Read the scenario keys of one line. 0, or -1 with why. */
static int
capture_scenario_keys(json_t *o, struct cap_frame *f, struct capture *c,
    char *why, size_t len)
{
	json_t		*v;
	const char	*k;
	json_t		*x;
	size_t		 i;

	if ((v = json_object_get(o, "chunk")) != NULL) {
		if (!json_is_integer(v) || json_integer_value(v) < 1) {
			snprintf(why, len, "\"chunk\" must be a positive "
			    "integer");
			return -1;
		}
		f->chunk = (size_t)json_integer_value(v);
	}
	if ((v = json_object_get(o, "coalesce")) != NULL) {
		if (!json_is_boolean(v)) {
			snprintf(why, len, "\"coalesce\" must be true or "
			    "false");
			return -1;
		}
		f->coalesce = json_is_true(v);
	}
	if ((v = json_object_get(o, "silence_ms")) != NULL) {
		if (!json_is_integer(v) || json_integer_value(v) < 1 ||
		    json_integer_value(v) > 60000) {
			snprintf(why, len, "\"silence_ms\" must be 1 to "
			    "60000");
			return -1;
		}
		f->silence_ms = (int)json_integer_value(v);
	}
	if ((v = json_object_get(o, "any")) != NULL) {
		if (!json_is_array(v)) {
			snprintf(why, len, "\"any\" must be an array of field "
			    "names");
			return -1;
		}
		json_array_foreach(v, i, x) {
			if (!json_is_string(x)) {
				snprintf(why, len, "\"any\" must be an array "
				    "of field names");
				return -1;
			}
		}
		f->any = json_incref(v);
	}
	if ((v = json_object_get(o, "not")) != NULL) {
		if (!json_is_object(v)) {
			snprintf(why, len, "\"not\" must be an object "
			    "{field: value}");
			return -1;
		}
		json_object_foreach(v, k, x) {
			if (!json_is_string(x) && !json_is_number(x)) {
				snprintf(why, len, "\"not\": \"%s\" must be a "
				    "string or a number", k);
				return -1;
			}
		}
		f->differ = json_incref(v);
	}
	if ((v = json_object_get(o, "profile")) != NULL) {
		if (!json_is_integer(v) || json_integer_value(v) < 0 ||
		    json_integer_value(v) > 7) {
			snprintf(why, len, "\"profile\" must be 0 to 7");
			return -1;
		}
		c->profile = (int)json_integer_value(v);
	}
	if ((k = capture_str(o, "title")) != NULL && c->title == NULL)
		c->title = xstrdup(k);
	return 0;
}

/* One line into f. 0, or -1 with why. */
static int
capture_parse_line(struct capture *c, struct cap_frame *f, const char *s,
    size_t len, char *why, size_t wlen)
{
	json_error_t	 je;
	json_t		*o, *v;
	const char	*str;
	int		 rc = -1;

	if ((o = json_loadb(s, len, JSON_REJECT_DUPLICATES, &je)) == NULL) {
		snprintf(why, wlen, "not JSON: %s", je.text);
		return -1;
	}
	if (!json_is_object(o)) {
		snprintf(why, wlen, "not a JSON object");
		goto out;
	}
	if ((str = capture_str(o, "t")) == NULL ||
	    util_parse_iso_ms(str, &f->t_ms) != 0) {
		snprintf(why, wlen, "\"t\" missing or not an ISO 8601 time");
		goto out;
	}
	if ((str = capture_str(o, "ncs")) == NULL) {
		snprintf(why, wlen, "\"ncs\" missing or not a string");
		goto out;
	}
	f->ncs = xstrdup(str);
	if ((str = capture_str(o, "port")) == NULL ||
	    gw_port_parse(str, &f->port) != 0) {
		snprintf(why, wlen, "\"port\" must be lower, upper or query");
		goto out;
	}
	if ((str = capture_str(o, "dir")) == NULL ||
	    (strcmp(str, "in") != 0 && strcmp(str, "out") != 0)) {
		snprintf(why, wlen, "\"dir\" must be in or out");
		goto out;
	}
	f->dir = strcmp(str, "in") == 0 ? HISTORY_IN : HISTORY_OUT;
	v = json_object_get(o, "conn");
	if (!json_is_integer(v) || json_integer_value(v) < 0) {
		snprintf(why, wlen, "\"conn\" missing or not a number");
		goto out;
	}
	f->conn = (uint64_t)json_integer_value(v);
	if ((v = json_object_get(o, "messageID")) != NULL) {
		if (!json_is_integer(v) || json_integer_value(v) < 1 ||
		    json_integer_value(v) > MSGID_MAX) {
			snprintf(why, wlen, "\"messageID\" must be 1 to %d",
			    MSGID_MAX);
			goto out;
		}
		f->message_id = (int32_t)json_integer_value(v);
	}
	str = capture_str(o, "type");
	f->type = xstrdup(str != NULL ? str : "unknown");
	if ((str = capture_str(o, "xml")) == NULL) {
		snprintf(why, wlen, "\"xml\" missing or not a string");
		goto out;
	}
	f->xml = xstrdup(str);
	rc = capture_scenario_keys(o, f, c, why, wlen);
out:
	json_decref(o);
	return rc;
}

/* The highest profile among the frames' types. */
static int
capture_type_profile(const struct capture *c)
{
	size_t	i;
	int	p, best = -1;

	for (i = 0; i < c->n; i++) {
		p = mos_type_profile(mos_type_from_name(c->f[i].type));
		if (p > best)
			best = p;
	}
	return best < 0 ? 0 : best;
}

/* Load a capture file. */
int
capture_load(const char *path, struct capture *c, char **err)
{
	FILE		*fp;
	char		*line = NULL, why[256];
	size_t		 cap = 0, alloc = 0;
	ssize_t		 n;
	int		 lineno = 0;
	struct cap_frame *f;

	memset(c, 0, sizeof *c);
	c->profile = -1;
	*err = NULL;
	if ((fp = fopen(path, "r")) == NULL) {
		xasprintf(err, "%s: %s", path, strerror(errno));
		return -1;
	}
	c->path = xstrdup(path);
	while ((n = getline(&line, &cap, fp)) != -1) {
		lineno++;
		while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = '\0';
		if (n == 0)
			continue;
		if (c->n == alloc) {
			alloc = alloc == 0 ? 32 : alloc * 2;
			c->f = xreallocarray(c->f, alloc, sizeof *c->f);
		}
		f = &c->f[c->n];
		memset(f, 0, sizeof *f);
		f->line = lineno;
		if (capture_parse_line(c, f, line, (size_t)n, why,
		    sizeof why) != 0) {
			capture_frame_clear(f);
			xasprintf(err, "%s:%d: %s", path, lineno, why);
			goto fail;
		}
		c->n++;
	}
	if (ferror(fp)) {
		xasprintf(err, "%s: %s", path, strerror(errno));
		goto fail;
	}
	if (c->n == 0) {
		xasprintf(err, "%s: no frames", path);
		goto fail;
	}
	if (c->profile < 0)
		c->profile = capture_type_profile(c);
	free(line);
	fclose(fp);
	return 0;
fail:
	free(line);
	fclose(fp);
	capture_free(c);
	return -1;
}

/* True when the first frame of conn was sent by the NCS. */
bool
capture_ncs_opened(const struct capture *c, uint64_t conn)
{
	size_t	i;

	for (i = 0; i < c->n; i++) {
		if (c->f[i].conn == conn)
			return c->f[i].dir == HISTORY_IN;
	}
	return false;
}

/* One capture line for a frame on the wire. */
void
capture_line(struct sbuf *sb, int64_t t_ms, const char *ncs, enum gw_port port,
    enum history_dir dir, uint64_t conn, const void *data, size_t len,
    enum mos_enc enc)
{
	struct history_rec	 r;
	struct sbuf		 xml = { NULL, 0, 0 };
	struct mos_msg		*m = NULL;
	struct mos_error	 e;

	memset(&r, 0, sizeof r);
	r.t_ms = t_ms;
	r.ncs = (char *)(uintptr_t)ncs;
	r.port = port;
	r.dir = dir;
	r.conn = conn;
	r.type = (char *)(uintptr_t)"unknown";
	if (mos_parse(data, len, enc, MOS_LENIENT, &m, &e) == MOS_OK) {
		r.message_id = m->has_message_id ? m->message_id : 0;
		r.type = (char *)(uintptr_t)(m->type_name != NULL ?
		    m->type_name : mos_type_name(m->type));
	} else if (e.env.have_message_id)
		r.message_id = e.env.message_id;
	capture_utf8(&xml, data, len, enc);
	r.xml = xml.s != NULL ? xml.s : (char *)(uintptr_t)"";
	history_capture_line(sb, &r);
	sbuf_puts(sb, "\n");
	mos_msg_free(m);
	sbuf_free(&xml);
}

/* Wire bytes as UTF-8 text. */
void
capture_utf8(struct sbuf *sb, const void *data, size_t len, enum mos_enc enc)
{
	if (enc == MOS_ENC_UTF16BE)
		util_utf16be_to_utf8(sb, data, len);
	else
		sbuf_add(sb, data, len);
}

/* UTF-8 text as wire bytes. */
void
capture_wire(struct sbuf *sb, const char *s, size_t len, enum mos_enc enc)
{
	if (enc == MOS_ENC_UTF16BE)
		util_utf8_to_utf16be(sb, s, len);
	else
		sbuf_add(sb, s, len);
}
