/*
 * The writer: struct mos_msg -> one <mos>...</mos> frame in DTD element
 * order, no BOM, no XML declaration. The frame is built as UTF-8 in a
 * growing buffer (escaping by table, copying runs), then transcoded to
 * UTF-16BE in one linear pass when that is the link's encoding.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mosxml/mosxml.h"
#include "mosxml/schema.h"

#define WRITE_PATH	12

struct wctx {
	struct mos_buf	*b;
	char		*err;
	size_t		 errlen;
	const char	*path[WRITE_PATH];
	int		 depth;
};

/* Escape classes of bytes; see mos_buf_escape(). */
enum {
	E_PLAIN = 0, E_AMP, E_LT, E_GT, E_QUOT, E_CR, E_TAB, E_LF, E_CTL, E_HI
};

static const uint8_t esc_class[256] = {
	E_CTL, E_CTL, E_CTL, E_CTL, E_CTL, E_CTL, E_CTL, E_CTL,
	E_CTL, E_TAB, E_LF, E_CTL, E_CTL, E_CR, E_CTL, E_CTL,
	E_CTL, E_CTL, E_CTL, E_CTL, E_CTL, E_CTL, E_CTL, E_CTL,
	E_CTL, E_CTL, E_CTL, E_CTL, E_CTL, E_CTL, E_CTL, E_CTL,
	['"'] = E_QUOT, ['&'] = E_AMP, ['<'] = E_LT, ['>'] = E_GT,
	[0x80] = E_HI, E_HI, E_HI, E_HI, E_HI, E_HI, E_HI, E_HI,
	E_HI, E_HI, E_HI, E_HI, E_HI, E_HI, E_HI, E_HI,
	E_HI, E_HI, E_HI, E_HI, E_HI, E_HI, E_HI, E_HI,
	E_HI, E_HI, E_HI, E_HI, E_HI, E_HI, E_HI, E_HI,
	E_HI, E_HI, E_HI, E_HI, E_HI, E_HI, E_HI, E_HI,
	E_HI, E_HI, E_HI, E_HI, E_HI, E_HI, E_HI, E_HI,
	E_HI, E_HI, E_HI, E_HI, E_HI, E_HI, E_HI, E_HI,
	E_HI, E_HI, E_HI, E_HI, E_HI, E_HI, E_HI, E_HI,
	E_HI, E_HI, E_HI, E_HI, E_HI, E_HI, E_HI, E_HI,
	E_HI, E_HI, E_HI, E_HI, E_HI, E_HI, E_HI, E_HI,
	E_HI, E_HI, E_HI, E_HI, E_HI, E_HI, E_HI, E_HI,
	E_HI, E_HI, E_HI, E_HI, E_HI, E_HI, E_HI, E_HI,
	E_HI, E_HI, E_HI, E_HI, E_HI, E_HI, E_HI, E_HI,
	E_HI, E_HI, E_HI, E_HI, E_HI, E_HI, E_HI, E_HI,
	E_HI, E_HI, E_HI, E_HI, E_HI, E_HI, E_HI, E_HI,
	E_HI, E_HI, E_HI, E_HI, E_HI, E_HI, E_HI, E_HI,
};

/* Free a buffer's storage; the struct itself is the caller's. */
void
mos_buf_free(struct mos_buf *b)
{
	if (b == NULL)
		return;
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

/* Make room for n more bytes. */
int
mos_buf_reserve(struct mos_buf *b, size_t n)
{
	size_t	 cap;
	uint8_t	*p;

	if (b->cap - b->len >= n)
		return 0;
	if (n > SIZE_MAX / 2 - b->len)
		return -1;
	cap = b->cap ? b->cap * 2 : 256;
	if (cap < b->len + n)
		cap = b->len + n;
	if ((p = realloc(b->data, cap)) == NULL)
		return -1;
	b->data = p;
	b->cap = cap;
	return 0;
}

/* Append n bytes. */
int
mos_buf_add(struct mos_buf *b, const void *p, size_t n)
{
	if (n == 0)
		return 0;
	if (n > b->cap - b->len && mos_buf_reserve(b, n) == -1)
		return -1;
	memcpy(b->data + b->len, p, n);
	b->len += n;
	return 0;
}

/* Append a NUL-terminated string. */
static int
buf_str(struct mos_buf *b, const char *s)
{
	return mos_buf_add(b, s, strlen(s));
}

/*
 * The length of the valid UTF-8 sequence at p (1-4), or 0. Surrogates,
 * overlong forms and U+FFFE/U+FFFF are refused.
 */
static size_t
utf8_seq(const uint8_t *p, const uint8_t *end)
{
	uint32_t	u;
	size_t		n, i;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		n = 2, u = p[0] & 0x1f;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		n = 3, u = p[0] & 0x0f;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		n = 4, u = p[0] & 0x07;
	else
		return 0;
	if ((size_t)(end - p) < n)
		return 0;
	for (i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		u = u << 6 | (p[i] & 0x3f);
	}
	if ((n == 3 && (u < 0x800 || (u >= 0xd800 && u <= 0xdfff) ||
	    u == 0xfffe || u == 0xffff)) || (n == 4 && (u < 0x10000 ||
	    u > 0x10ffff)))
		return 0;
	return n;
}

/*
 * The length of the longest prefix of s that is valid UTF-8 text: valid
 * sequences, no NUL or C0 control but HT, LF, CR.
 */
size_t
mos_utf8_valid(const char *s, size_t len)
{
	const uint8_t	*p = (const uint8_t *)s, *end = p + len;
	size_t		 n;

	while (p < end) {
		if (*p >= 0x20 && *p < 0x80) {
			p++;
			continue;
		}
		if (*p < 0x20 && *p != '\t' && *p != '\n' && *p != '\r')
			break;
		if ((n = utf8_seq(p, end)) == 0)
			break;
		p += n;
	}
	return (size_t)(p - (const uint8_t *)s);
}

/* The length of the valid UTF-8 sequence at s (n bytes left): 1-4, or 0. */
size_t
mos_utf8_seq(const char *s, size_t n)
{
	const uint8_t	*p = (const uint8_t *)s;

	return n == 0 ? 0 : utf8_seq(p, p + n);
}

/* Check UTF-8 text (see mos_utf8_valid). 0 or -1. */
int
mos_utf8_check(const char *s, size_t len)
{
	return mos_utf8_valid(s, len) == len ? 0 : -1;
}

/* Append s escaped for XML text or a double-quoted attribute value. */
int
mos_buf_escape(struct mos_buf *b, const char *s, size_t len, int attr,
    int *bad)
{
	const uint8_t	*p = (const uint8_t *)s, *end = p + len, *run = p;
	const char	*rep;
	size_t		 n;
	int		 cls;

	*bad = 3;
	if (mos_buf_reserve(b, len) == -1)
		return -1;
	while (p < end) {
		cls = esc_class[*p];
		if (cls == E_PLAIN || (!attr && (cls == E_QUOT || cls == E_TAB ||
		    cls == E_LF))) {
			p++;
			continue;
		}
		if (cls == E_HI) {
			if ((n = utf8_seq(p, end)) == 0) {
				*bad = 2;
				return -1;
			}
			p += n;
			continue;
		}
		if (mos_buf_add(b, run, (size_t)(p - run)) == -1)
			return -1;
		switch (cls) {
		case E_AMP: rep = "&amp;"; break;
		case E_LT: rep = "&lt;"; break;
		case E_GT: rep = "&gt;"; break;
		case E_QUOT: rep = "&quot;"; break;
		case E_CR: rep = "&#13;"; break;
		case E_TAB: rep = "&#9;"; break;
		case E_LF: rep = "&#10;"; break;
		default:
			*bad = 1;
			return -1;
		}
		if (buf_str(b, rep) == -1)
			return -1;
		run = ++p;
	}
	return mos_buf_add(b, run, (size_t)(p - run));
}

/* Record a writer error naming the element path. */
static int
werr(struct wctx *w, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int
werr(struct wctx *w, const char *fmt, ...)
{
	va_list	ap;
	size_t	off = 0;
	int	i, n;

	if (w->err == NULL || w->errlen == 0)
		return -1;
	w->err[0] = '\0';
	for (i = 0; i < w->depth && i < WRITE_PATH && off + 1 < w->errlen; i++) {
		n = snprintf(w->err + off, w->errlen - off, "%s%s",
		    i ? "/" : "", w->path[i]);
		off += n > 0 ? (size_t)n : 0;
	}
	if (off > 0 && off + 3 < w->errlen) {
		memcpy(w->err + off, ": ", 3);
		off += 2;
	}
	if (off < w->errlen) {
		va_start(ap, fmt);
		vsnprintf(w->err + off, w->errlen - off, fmt, ap);
		va_end(ap);
	}
	return -1;
}

/* Append escaped text, or fail naming the field. */
static int
w_text(struct wctx *w, const char *name, const char *s, int attr)
{
	int	bad;

	if (mos_buf_escape(w->b, s, strlen(s), attr, &bad) == 0)
		return 0;
	if (bad == 1)
		return werr(w, "%s holds a control character that XML 1.0 "
		    "cannot carry", name);
	if (bad == 2)
		return werr(w, "%s is not valid UTF-8", name);
	return werr(w, "out of memory");
}

/* Append <name>. */
static int
w_open(struct wctx *w, const char *name)
{
	return mos_buf_add(w->b, "<", 1) == -1 || buf_str(w->b, name) == -1 ||
	    mos_buf_add(w->b, ">", 1) == -1 ? werr(w, "out of memory") : 0;
}

/* Append </name>. */
static int
w_close(struct wctx *w, const char *name)
{
	return mos_buf_add(w->b, "</", 2) == -1 || buf_str(w->b, name) == -1 ||
	    mos_buf_add(w->b, ">", 1) == -1 ? werr(w, "out of memory") : 0;
}

/* Append <name>raw</name>, raw already being XML (or formatted digits). */
static int
w_raw(struct wctx *w, const char *name, const char *raw, size_t len)
{
	if (w_open(w, name) == -1)
		return -1;
	if (mos_buf_add(w->b, raw, len) == -1)
		return werr(w, "out of memory");
	return w_close(w, name);
}

/* Append <name>escaped text</name>. */
static int
w_elem(struct wctx *w, const char *name, const char *s)
{
	if (w_open(w, name) == -1 || w_text(w, name, s, 0) == -1)
		return -1;
	return w_close(w, name);
}

/* Append <name>verbatim XML</name>, checking it is UTF-8. */
static int
w_xml(struct wctx *w, const char *name, const char *s)
{
	size_t	len = strlen(s);

	if (mos_utf8_check(s, len) == -1)
		return werr(w, "%s is not valid UTF-8 XML text", name);
	return w_raw(w, name, s, len);
}

/* Decimal digits of v into buf (at least 11 bytes); returns the length. */
static size_t
fmt_u32(uint32_t v, char *buf)
{
	char	tmp[12];
	size_t	n = 0, i;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v != 0);
	for (i = 0; i < n; i++)
		buf[i] = tmp[n - 1 - i];
	buf[n] = '\0';
	return n;
}

static int	w_struct(struct wctx *, const struct mos_sdesc *, const char *,
		    const void *);

/* One profile flag: <mosProfileN>YES</mosProfileN> or the container form. */
static int
w_profile(struct wctx *w, int i, int8_t v, bool flat)
{
	char	d[2] = { (char)('0' + i), '\0' };

	if (buf_str(w->b, flat ? "<mosProfile" : "<mosProfile number=\"") ==
	    -1 || buf_str(w->b, d) == -1 || buf_str(w->b, flat ? ">" : "\">") ==
	    -1 || buf_str(w->b, v ? "YES" : "NO") == -1 ||
	    buf_str(w->b, "</mosProfile") == -1 ||
	    (flat && buf_str(w->b, d) == -1) || buf_str(w->b, ">") == -1)
		return werr(w, "out of memory");
	return 0;
}


/* <tag attr="value"> (the attribute left out when value is NULL). */
static int
w_open_attr(struct wctx *w, const char *tag, const char *attr,
    const char *value)
{
	if (buf_str(w->b, "<") == -1 || buf_str(w->b, tag) == -1)
		return werr(w, "out of memory");
	if (value != NULL && (buf_str(w->b, " ") == -1 ||
	    buf_str(w->b, attr) == -1 || buf_str(w->b, "=\"") == -1 ||
	    w_text(w, attr, value, 1) == -1 || buf_str(w->b, "\"") == -1))
		return -1;
	if (buf_str(w->b, ">") == -1)
		return werr(w, "out of memory");
	return 0;
}

/* listMachInfo profiles: flat <mosProfileN> or <supportedProfiles>. */
static int
w_profiles(struct wctx *w, const struct mos_list_mach_info *l)
{
	int	i, any = l->device_type != NULL;

	for (i = 0; i < 8; i++)
		any |= l->profiles[i] != -1;
	if (!any && !l->profiles_flat)
		return 0;
	if (!l->profiles_flat) {
		if (w_open_attr(w, "supportedProfiles", "deviceType",
		    l->device_type) == -1)
			return -1;
	}
	for (i = 0; i < 8; i++) {
		if (l->profiles[i] != -1 &&
		    w_profile(w, i, l->profiles[i], l->profiles_flat) == -1)
			return -1;
	}
	if (!l->profiles_flat && buf_str(w->b, "</supportedProfiles>") == -1)
		return werr(w, "out of memory");
	return 0;
}

/* storyBody: its parts in order. */
static int
w_body(struct wctx *w, const struct mos_story_body *sb)
{
	const struct mos_body_part	*p;
	size_t				 i;
	int				 rc;

	if (w_open_attr(w, "storyBody", "Read1stMEMasBody",
	    sb->read1st_mem_as_body) == -1)
		return -1;
	for (i = 0; i < sb->part.n; i++) {
		p = &sb->part.v[i];
		if (p->kind != MOS_BODY_ITEM && p->text == NULL)
			return werr(w, "storyBody part %zu has no text", i + 1);
		switch (p->kind) {
		case MOS_BODY_TEXT:
			rc = w_text(w, "storyBody", p->text, 0);
			break;
		case MOS_BODY_P:
			rc = w_xml(w, "p", p->text);
			break;
		case MOS_BODY_PRESENTER:
			rc = w_elem(w, "storyPresenter", p->text);
			break;
		case MOS_BODY_PRESENTER_RR:
			rc = w_elem(w, "storyPresenterRR", p->text);
			break;
		case MOS_BODY_ITEM:
			if (p->item == NULL)
				return werr(w, "storyBody part %zu has no item",
				    i + 1);
			rc = w_struct(w, &mos_sd_item, "storyItem", p->item);
			break;
		default:
			return werr(w, "storyBody part %zu has a bad kind", i + 1);
		}
		if (rc == -1)
			return -1;
	}
	return w_close(w, "storyBody");
}

/* The elements of an array, string list, wrapped list or flat group. */
static int
w_array(struct wctx *w, const struct mos_fdesc *f, const void *base)
{
	struct mos_anyarr	 a = mos_arr_get(MOS_CFP(base, f));
	const char		*s;
	size_t			 i, j, mark;

	if (f->kind == MOS_FK_WRAP && a.n > 0 && w_open(w, f->name) == -1)
		return -1;
	for (i = 0; i < a.n; i++) {
		if (f->kind == MOS_FK_STRS) {
			s = ((const char *const *)a.v)[i];
			if (w_elem(w, f->name, s ? s : "") == -1)
				return -1;
			continue;
		}
		if (f->kind != MOS_FK_GROUP) {
			if (w_struct(w, f->sub, f->kind == MOS_FK_WRAP ? f->elem :
			    f->name, (char *)a.v + i * f->sub->size) == -1)
				return -1;
			continue;
		}
		mark = w->b->len;
		for (j = 0; j < f->sub->n; j++) {
			s = *(const char *const *)MOS_CFP((char *)a.v +
			    i * f->sub->size, &f->sub->f[j]);
			if (s != NULL && w_elem(w, f->sub->f[j].name, s) == -1)
				return -1;
		}
		if (w->b->len == mark)
			return werr(w, "%s entry %zu is empty", f->name, i + 1);
		if (i > 0 && !mos_group_apart(f->sub, (char *)a.v + (i - 1) *
		    f->sub->size, (char *)a.v + i * f->sub->size))
			return werr(w, "%s entry %zu would read as part of entry "
			    "%zu: give it a %s", f->name, i + 1, i,
			    f->sub->f[0].name);
	}
	if (f->kind == MOS_FK_WRAP && a.n > 0)
		return w_close(w, f->name);
	return 0;
}

/* One child field of a struct. */
static int
w_field(struct wctx *w, const struct mos_fdesc *f, const void *base)
{
	const void	*p = MOS_CFP(base, f);
	const char	*s;
	char		 buf[64];
	size_t		 n;

	switch (f->kind) {
	case MOS_FK_STR:
		s = *(const char *const *)p;
		return s == NULL ? 0 : w_elem(w, f->name, s);
	case MOS_FK_XML:
		s = *(const char *const *)p;
		return s == NULL ? 0 : w_xml(w, f->name, s);
	case MOS_FK_U32:
		if (!*MOS_CHAS(base, f))
			return 0;
		n = fmt_u32(*(const uint32_t *)p, buf);
		return w_raw(w, f->name, buf, n);
	case MOS_FK_DEC:
		n = mos_dec_format(p, buf, sizeof buf);
		return n == 0 ? 0 : w_raw(w, f->name, buf, n);
	case MOS_FK_TIME:
		n = mos_time_format(p, buf, sizeof buf);
		return n == 0 ? 0 : w_raw(w, f->name, buf, n);
	case MOS_FK_DUR:
		n = mos_dur_format(p, buf, sizeof buf);
		return n == 0 ? 0 : w_raw(w, f->name, buf, n);
	case MOS_FK_STRUCT:
		return w_struct(w, f->sub, f->name, p);
	case MOS_FK_PTR:
		return p == NULL || *(void *const *)p == NULL ? 0 :
		    w_struct(w, f->sub, f->name, *(void *const *)p);
	case MOS_FK_ARRAY: case MOS_FK_STRS: case MOS_FK_WRAP: case MOS_FK_GROUP:
		return w_array(w, f, base);
	case MOS_FK_PROFILES:
		return w_profiles(w, base);
	case MOS_FK_BODY:
		return w_body(w, p);
	}
	return 0;	/* attributes, text, MOS_FK_PROFILE: written elsewhere */
}

/* Attributes of a struct's element. */
static int
w_attrs(struct wctx *w, const struct mos_sdesc *sd, const void *base)
{
	const struct mos_fdesc	*f;
	const char		*s;
	size_t			 i;

	for (i = 0; i < sd->n; i++) {
		f = &sd->f[i];
		if (f->kind != MOS_FK_ATTR)
			continue;
		if ((s = *(const char *const *)MOS_CFP(base, f)) == NULL)
			continue;
		if (mos_buf_add(w->b, " ", 1) == -1 || buf_str(w->b, f->name) ==
		    -1 || mos_buf_add(w->b, "=\"", 2) == -1)
			return werr(w, "out of memory");
		if (w_text(w, f->name, s, 1) == -1)
			return -1;
		if (mos_buf_add(w->b, "\"", 1) == -1)
			return werr(w, "out of memory");
	}
	return 0;
}

/* One struct as the element name, attributes then children in order. */
static int
w_struct(struct wctx *w, const struct mos_sdesc *sd, const char *name,
    const void *base)
{
	const struct mos_fdesc	*f;
	size_t			 i, mark;

	if (w->depth < WRITE_PATH)
		w->path[w->depth] = name;
	w->depth++;
	for (i = 0; i < sd->n; i++) {
		f = &sd->f[i];
		if ((f->flags & MOS_F_KEY) &&
		    *(const char *const *)MOS_CFP(base, f) == NULL)
			return werr(w, "%s missing", f->name);
	}
	if (mos_buf_add(w->b, "<", 1) == -1 || buf_str(w->b, name) == -1)
		return werr(w, "out of memory");
	if (w_attrs(w, sd, base) == -1)
		return -1;
	if (mos_buf_add(w->b, ">", 1) == -1)
		return werr(w, "out of memory");
	mark = w->b->len;
	for (i = 0; i < sd->n; i++) {
		f = &sd->f[i];
		if (f->kind == MOS_FK_TEXT) {
			if (*(const char *const *)MOS_CFP(base, f) != NULL &&
			    w_text(w, f->name,
			    *(const char *const *)MOS_CFP(base, f), 0) == -1)
				return -1;
		} else if (w_field(w, f, base) == -1)
			return -1;
	}
	if (w->b->len == mark) {
		w->b->len--;
		if (mos_buf_add(w->b, "/>", 2) == -1)
			return werr(w, "out of memory");
	} else if (w_close(w, name) == -1)
		return -1;
	w->depth--;
	return 0;
}

/*
 * Whether s looks like an XML name (for the element of an unknown message):
 * ASCII name characters, and any non-ASCII UTF-8 as libxml2 accepted it.
 */
static int
xml_name_ok(const char *s)
{
	const unsigned char	*p;

	if (s == NULL || *s == '\0' || strchr("-.0123456789", *s) != NULL ||
	    mos_utf8_check(s, strlen(s)) == -1)
		return 0;
	for (p = (const unsigned char *)s; *p != '\0'; p++) {
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || *p == '_' || *p == '-' ||
		    *p == '.' || *p == ':' || *p >= 0x80))
			return 0;
	}
	return 1;
}

/* The whole frame as UTF-8 into w->b. */
static int
w_frame(struct wctx *w, const struct mos_msg *m)
{
	char	buf[16];
	size_t	n;

	if (buf_str(w->b, "<mos>") == -1)
		return werr(w, "out of memory");
	if (m->mos_id != NULL && w_elem(w, "mosID", m->mos_id) == -1)
		return -1;
	if (m->ncs_id != NULL && w_elem(w, "ncsID", m->ncs_id) == -1)
		return -1;
	if (m->has_message_id) {
		if (m->message_id < 1)
			return werr(w, "messageID %d is not 1 or more",
			    (int)m->message_id);
		n = fmt_u32((uint32_t)m->message_id, buf);
		if (w_raw(w, "messageID", buf, n) == -1)
			return -1;
	}
	if ((unsigned)m->type >= MOS_T__COUNT)
		return werr(w, "unknown message type %d", (int)m->type);
	if (m->type == MOS_T_UNKNOWN) {
		if (!xml_name_ok(m->type_name))
			return werr(w, "unknown message without a valid name");
		if (w_xml(w, m->type_name, m->u.unknown.xml ?
		    m->u.unknown.xml : "") == -1)
			return -1;
	} else if (w_struct(w, mos_tdescs[m->type].body,
	    mos_tdescs[m->type].name, &m->u) == -1)
		return -1;
	if (buf_str(w->b, "</mos>") == -1)
		return werr(w, "out of memory");
	return 0;
}

/* Append UTF-8 text (already checked) as UTF-16BE. */
static int
utf8_to_utf16(const uint8_t *s, size_t len, struct mos_buf *out)
{
	const uint8_t	*p = s, *end = s + len;
	uint8_t		*o;
	uint64_t	 w;
	uint32_t	 u, hi;
	size_t		 n;

	if (len > SIZE_MAX / 2 || mos_buf_reserve(out, len * 2) == -1)
		return -1;
	o = out->data + out->len;
	while (p < end) {
		if (end - p >= 8) {
			memcpy(&w, p, 8);
			if ((w & 0x8080808080808080ULL) == 0) {
				o[0] = 0; o[1] = p[0]; o[2] = 0; o[3] = p[1];
				o[4] = 0; o[5] = p[2]; o[6] = 0; o[7] = p[3];
				o[8] = 0; o[9] = p[4]; o[10] = 0; o[11] = p[5];
				o[12] = 0; o[13] = p[6]; o[14] = 0; o[15] = p[7];
				o += 16;
				p += 8;
				continue;
			}
		}
		if (*p < 0x80) {
			*o++ = 0;
			*o++ = *p++;
			continue;
		}
		if ((n = utf8_seq(p, end)) == 0)
			return -1;
		if (n == 2)
			u = (uint32_t)(p[0] & 0x1f) << 6 | (p[1] & 0x3f);
		else if (n == 3)
			u = (uint32_t)(p[0] & 0x0f) << 12 |
			    (uint32_t)(p[1] & 0x3f) << 6 | (p[2] & 0x3f);
		else
			u = (uint32_t)(p[0] & 0x07) << 18 |
			    (uint32_t)(p[1] & 0x3f) << 12 |
			    (uint32_t)(p[2] & 0x3f) << 6 | (p[3] & 0x3f);
		p += n;
		if (u >= 0x10000) {
			u -= 0x10000;
			hi = 0xd800 | u >> 10;
			*o++ = (uint8_t)(hi >> 8);
			*o++ = (uint8_t)hi;
			u = 0xdc00 | (u & 0x3ff);
		}
		*o++ = (uint8_t)(u >> 8);
		*o++ = (uint8_t)u;
	}
	out->len = (size_t)(o - out->data);
	return 0;
}

/* Append one complete frame for m in the given encoding. */
int
mos_write(const struct mos_msg *m, enum mos_enc enc, struct mos_buf *out,
    char *errbuf, size_t errlen)
{
	struct wctx	w;
	struct mos_buf	tmp = { NULL, 0, 0 };
	size_t		save = out->len;
	int		rc;

	memset(&w, 0, sizeof w);
	w.err = errbuf;
	w.errlen = errlen;
	if (errbuf != NULL && errlen > 0)
		errbuf[0] = '\0';
	if (m == NULL)
		return werr(&w, "no message");
	if (enc == MOS_ENC_AUTO)
		return werr(&w, "the writer needs utf16be or utf8, not auto");
	w.b = enc == MOS_ENC_UTF8 ? out : &tmp;
	if (w.b == &tmp && mos_buf_reserve(&tmp, 1024) == -1)
		return werr(&w, "out of memory");
	rc = w_frame(&w, m);
	if (rc == 0 && enc == MOS_ENC_UTF16BE &&
	    utf8_to_utf16(tmp.data, tmp.len, out) == -1)
		rc = werr(&w, "out of memory or bad UTF-8");
	if (rc == -1)
		out->len = save;
	mos_buf_free(&tmp);
	return rc;
}
