/*
 * The parser: one frame -> struct mos_msg.
 *
 * Input checks come first (size cap, even length and surrogate pairs for
 * UTF-16BE, no NUL) and UTF-16BE is transcoded to UTF-8 in the same pass
 * (input.c). libxml2 then parses as hardening.md 1.9 says: options
 * NONET|NOERROR|NOWARNING|IGNORE_ENC, a DOCTYPE stops the parser, the
 * deny-all entity loader of mos_init(), success only when errNo is
 * XML_ERR_OK. Unlike 1.9 the context is not new for every frame: each
 * thread keeps one, reset by xmlCtxtReadMemory(), and replaces it after a
 * failed frame, every CTXT_FRAMES frames and when its dictionary grows
 * (1.6); small frames spend much of their time creating contexts. For the
 * same reason the text is handed over with no encoding named unless it
 * starts like a BOM or other signature (no copying UTF-8 decoder), and
 * with white space appended after the root (see XML_PAD).
 *
 * No tree is built: SAX2 callbacks fill the model directly, driven by the
 * descriptor tables of schema.c. A stack of frames follows the schema;
 * unknown elements are skipped by depth counting; verbatim-XML fields
 * (mosPayload, description, ...) are serialised as they stream past.
 */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <libxml/parser.h>

#include "mosxml/mosxml.h"
#include "mosxml/schema.h"

#define PARSE_OPTS	(XML_PARSE_NONET | XML_PARSE_NOERROR | \
			 XML_PARSE_NOWARNING | XML_PARSE_IGNORE_ENC)
#define STACK_MAX	32	/* frames; the schema nests about ten deep */
#define ENV_SCAN_MAX	(64u << 10)
#define CTXT_FRAMES	1000		/* frames one parser context serves */
#define CTXT_DICT_MAX	(64u << 10)	/* bytes of names it may keep */
#define MSG_NAME_MAX	64		/* bytes in the name of an unknown message */
/*
 * Spaces appended after the text: libxml2 2.9.14 calls its input-growing
 * code at nearly every token within INPUT_CHUNK (250) bytes of the end,
 * which is all of a small frame. UTF-8 frames up to PAD_COPY_MAX are
 * copied to get the room; bigger ones gain too little to pay the copy.
 */
#define XML_PAD		256
#define PAD_COPY_MAX	(64u << 10)

enum fr_kind { FR_ROOT, FR_STRUCT, FR_FIELD, FR_BODY, FR_PROFILES, FR_WRAP };

/* Where the text of an FR_FIELD goes when its element ends. */
enum fr_sink {
	SINK_FIELD,		/* field f of base */
	SINK_STRS,		/* the string slot of a MOS_FK_STRS array */
	SINK_PART,		/* the storyBody part at slot */
	SINK_PROFILE,		/* container <mosProfile number="N">: profile */
	SINK_MOS_ID, SINK_NCS_ID, SINK_MESSAGE_ID,
	SINK_UNKNOWN,		/* the element of an unknown message */
	SINK_CANON,		/* the wrapper of mos_fragment_check() */
};

struct frame {
	uint8_t			 kind;
	uint8_t			 sink;
	int8_t			 profile;
	uint8_t			 glast;	/* 1 + index of the last group field */
	const char		*name;
	const struct mos_sdesc	*sd;	/* FR_STRUCT; FR_FIELD of objPath */
	const struct mos_fdesc	*f;
	void			*base;
	void			*slot;
	uint64_t		 seen;
	size_t			 cursor;
	size_t			 tstart;	/* where this frame's text starts in tb */
};

/* What a description element may hold (mos_fragment_check). */
enum frag_kind { FK_TOP, FK_P, FK_EM, FK_TAB };

/* The state of one mos_fragment_check(). */
struct frag {
	const char	*elem;		/* the element the fragment fills */
	const char	*doc;		/* "<elem>" fragment "</elem>" */
	size_t		 open;		/* length of "<elem>" */
	size_t		 len;		/* of the fragment */
	int		 strict;	/* depth and element rules apply */
	int		 desc;		/* the description rules apply */
	uint8_t		 kind[4];	/* enum frag_kind by depth (description) */
	long		 xml_off;	/* where libxml2 first complained, or -1 */
	int		 xml_depth;	/* the capture depth then */
	int		 xml_code;
	char		 xml_msg[120];
	struct mos_buf	*canon;		/* NULL, or where the result goes */
};

struct pctx {
	struct mos_msg		*m;
	enum mos_mode		 mode;
	struct mos_error	*err;
	xmlParserCtxt		*ctxt;
	struct mos_buf		 tb;	/* text and captured XML, used as a stack */
	struct frame		 st[STACK_MAX];
	int			 sp;
	int			 skip;		/* depth inside an ignored element */
	int			 inner;		/* elements inside a text field */
	int			 capture;	/* depth inside a verbatim-XML field */
	int			 pending;	/* a captured start tag awaits '>' */
	int			 failed;
	int			 doctype;
	int			 check_only;	/* mos_fragment_check() */
	struct frag		*frag;		/* its state */
	int			 have_msg;
	int			 have_unknown;
	int			 have_mid;
};

static size_t			 parse_max = MOS_FRAME_MAX_DEFAULT;
static _Thread_local struct pctx *sax_cur;

/* The name of an error code. */
const char *
mos_err_name(enum mos_err e)
{
	static const char *const names[] = { "ok", "xml", "doctype", "root",
	    "envelope", "field", "too-big", "nomem", "encoding" };

	if ((unsigned)e >= sizeof names / sizeof names[0])
		return "?";
	return names[e];
}

/* Set the parser's size cap. */
void
mos_parse_set_max(size_t max)
{
	parse_max = max == 0 ? MOS_FRAME_MAX_DEFAULT : max;
}

/* The element path and ": " into buf ("roCreate/story/item: "); its length. */
static size_t
ppath(const struct pctx *c, char *buf, size_t len)
{
	size_t	off = 0;
	int	i, n;

	buf[0] = '\0';
	for (i = 1; i < c->sp && off < 128; i++) {
		if (c->st[i].kind == FR_FIELD && c->st[i].sd == NULL)
			continue;	/* the message names the field */
		n = snprintf(buf + off, len - off, "%s%s", off ? "/" : "",
		    c->st[i].name);
		off += n > 0 ? (size_t)n : 0;
	}
	if (off > 0 && off < len - 3) {
		memcpy(buf + off, ": ", 3);
		off += 2;
	}
	return off;
}

/* Record an error with the element path; stops a running parse. */
static int
perr(struct pctx *c, enum mos_err code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int
perr(struct pctx *c, enum mos_err code, const char *fmt, ...)
{
	va_list	ap;
	size_t	off;

	if (c->failed)
		return -1;
	c->failed = 1;
	if (c->ctxt != NULL)
		xmlStopParser(c->ctxt);
	c->err->code = code;
	off = ppath(c, c->err->msg, sizeof c->err->msg);
	if (off < sizeof c->err->msg) {
		va_start(ap, fmt);
		vsnprintf(c->err->msg + off, sizeof c->err->msg - off, fmt, ap);
		va_end(ap);
	}
	if (c->ctxt != NULL && c->ctxt->input != NULL)
		c->err->line = c->ctxt->input->line;
	return -1;
}

#define WARN_MAX	64	/* repairs recorded per message */

/*
 * Lenient mode repaired a value (clamped a number out of range): record it
 * with the element path in the message's warnings, for the caller to log.
 */
static void	*arr_push(struct pctx *, void *, size_t);
static int	 perr_nomem(struct pctx *);
static void	 pwarn(struct pctx *c, const char *fmt, ...)
		    __attribute__((format(printf, 2, 3)));

static void
pwarn(struct pctx *c, const char *fmt, ...)
{
	va_list		 ap;
	const char	**slot;
	char		 buf[256];
	size_t		 off;

	if (c->m->warnings.n >= WARN_MAX)
		return;
	off = ppath(c, buf, sizeof buf);
	if (off < sizeof buf) {
		va_start(ap, fmt);
		vsnprintf(buf + off, sizeof buf - off, fmt, ap);
		va_end(ap);
	}
	if ((slot = arr_push(c, &c->m->warnings, sizeof *slot)) != NULL &&
	    (*slot = mos_msg_strdup(c->m, buf)) == NULL)
		perr_nomem(c);
}

/* Out of memory. */
static int
perr_nomem(struct pctx *c)
{
	return perr(c, MOS_E_NOMEM, "out of memory");
}

/* Whether a character is XML white space. */
static int
is_space(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r';
}

/* The text of the top frame, trimmed and NUL-terminated inside tb. */
static char *
frame_trimmed(struct pctx *c, const struct frame *fr)
{
	char	*s;
	size_t	 len;

	if (mos_buf_reserve(&c->tb, 1) == -1)
		return NULL;
	s = (char *)c->tb.data + fr->tstart;
	len = c->tb.len - fr->tstart;
	s[len] = '\0';
	while (len > 0 && is_space(s[len - 1]))
		s[--len] = '\0';
	while (is_space(*s))
		s++;
	return s;
}

/* An arena copy of the top frame's text, untrimmed. */
static char *
frame_dup(struct pctx *c, const struct frame *fr)
{
	return mos_msg_strndup_raw(c->m, c->tb.len > fr->tstart ?
	    (const char *)c->tb.data + fr->tstart : "", c->tb.len - fr->tstart);
}

/*
 * An identifier (MOS_F_ID, and the envelope's mosID and ncsID) without the
 * white space around it, so that a pretty-printed <storyID> and the same ID
 * written tight are one ID (docs/mosmsg.md). s is an arena copy.
 */
static char *
id_trim(char *s)
{
	size_t	len;

	if (s == NULL)
		return NULL;
	while (is_space(*s))
		s++;
	len = strlen(s);
	while (len > 0 && is_space(s[len - 1]))
		s[--len] = '\0';
	return s;
}

/* An arena copy of a field's text, trimmed if it is an identifier. */
static char *
field_dup(struct pctx *c, const struct frame *fr, const struct mos_fdesc *f)
{
	char	*s = frame_dup(c, fr);

	return f != NULL && (f->flags & MOS_F_ID) ? id_trim(s) : s;
}

/* An arena copy of an attribute value; SAX2 leaves '&' as "&#38;" there. */
static char *
attr_dup(struct pctx *c, const xmlChar *v, const xmlChar *end)
{
	char	*s, *i, *o, *e;

	if ((s = mos_msg_strndup_raw(c->m, (const char *)v,
	    (size_t)(end - v))) == NULL)
		return NULL;
	e = s + (end - v);
	for (i = o = s; i < e; o++) {
		if (*i == '&' && e - i >= 5 && memcmp(i, "&#38;", 5) == 0) {
			*o = '&';
			i += 5;
		} else
			*o = *i++;
	}
	*o = '\0';
	return s;
}

/* Strict checks and normalisation of a string value. */
static int
check_str(struct pctx *c, const struct mos_fdesc *f, const char **sp)
{
	const char	*s = *sp;

	if ((f->flags & MOS_F_AIR) && strcmp(s, "NOTREADY") == 0)
		*sp = s = "NOT READY";
	if (c->mode != MOS_STRICT)
		return 0;
	if ((f->flags & MOS_F_MAX128) && mos_utf8_chars(s) > 128)
		return perr(c, MOS_E_FIELD, "%s longer than 128 characters",
		    f->name);
	if ((f->flags & MOS_F_MAX255) && mos_utf8_chars(s) > 255)
		return perr(c, MOS_E_FIELD, "%s longer than 255 characters",
		    f->name);
	if ((f->flags & MOS_F_ENUM) && !mos_enum_ok(f->vals, s))
		return perr(c, MOS_E_FIELD, "%s: \"%.40s\" is not a valid value",
		    f->name, s);
	return 0;
}

/*
 * Lenient: a whole number out of the unsigned 32-bit range. Returns 0 for
 * a negative one, UINT32_MAX + 2 for one too large, 1 for not a number.
 */
static uint64_t
number_clamp(const char *s)
{
	size_t	n;

	if (*s == '-') {
		n = strspn(s + 1, "0123456789");
		return n > 0 && s[1 + n] == '\0' ? 0 : 1;
	}
	if (*s == '+')
		s++;
	n = strspn(s, "0123456789");
	return n > 0 && s[n] == '\0' ? UINT32_MAX + 2ULL : 1;
}

/* Parse trimmed text into a number, decimal, time or duration field. */
static int
parse_scalar(struct pctx *c, const struct mos_fdesc *f, const char *s,
    void *base)
{
	void		*p = MOS_FP(base, f);
	uint64_t	 v;
	int		 rc = 0;

	if (*s == '\0') {
		if (c->mode == MOS_STRICT)
			return perr(c, MOS_E_FIELD, "%s is empty", f->name);
		return 0;	/* empty reads as not set */
	}
	switch (f->kind) {
	case MOS_FK_U32:
		if (mos_parse_number(s, UINT32_MAX, &v) == -1 &&
		    (c->mode == MOS_STRICT || (v = number_clamp(s)) == 1))
			return perr(c, MOS_E_FIELD, "%s: \"%.40s\" is not a "
			    "number from 0 to 4294967295", f->name, s);
		if (v == 0 && *s == '-') {
			pwarn(c, "%s: \"%.40s\" is below 0, read as 0",
			    f->name, s);
		} else if (v == UINT32_MAX + 2ULL) {
			v = UINT32_MAX;
			pwarn(c, "%s: \"%.40s\" is above 4294967295, read "
			    "as 4294967295", f->name, s);
		}
		if ((f->flags & MOS_F_REV) && c->mode == MOS_STRICT && v > 999)
			return perr(c, MOS_E_FIELD, "%s: %lu exceeds 999",
			    f->name, (unsigned long)v);
		*(uint32_t *)p = (uint32_t)v;
		*MOS_HAS(base, f) = true;
		return 0;
	case MOS_FK_DEC:
		rc = mos_dec_parse(s, p);
		break;
	case MOS_FK_TIME:
		rc = mos_time_parse(s, c->mode, p);
		break;
	case MOS_FK_DUR:
		rc = mos_dur_parse(s, c->mode, p);
		break;
	}
	if (rc == -1)
		return perr(c, MOS_E_FIELD, "%s: \"%.40s\" is not a valid %s",
		    f->name, s, f->kind == MOS_FK_DEC ? "decimal" :
		    f->kind == MOS_FK_TIME ? "time" : "duration (hh:mm:ss)");
	return 0;
}

/* A profile flag: YES/NO (flat form also true/false/1/0); -1 when empty. */
static int
parse_yesno(struct pctx *c, const char *name, const char *s, int flat,
    int8_t *out)
{
	int	loose = flat || c->mode == MOS_LENIENT;

	if (strcmp(s, "YES") == 0 || (loose && (strcasecmp(s, "yes") == 0 ||
	    strcasecmp(s, "true") == 0 || strcmp(s, "1") == 0)))
		*out = 1;
	else if (strcmp(s, "NO") == 0 || (loose && (strcasecmp(s, "no") == 0 ||
	    strcasecmp(s, "false") == 0 || strcmp(s, "0") == 0)))
		*out = 0;
	else if (*s == '\0' && c->mode == MOS_LENIENT)
		*out = -1;
	else
		return perr(c, MOS_E_FIELD, "%s: \"%.20s\" is not YES or NO",
		    name, s);
	return 0;
}

/*
 * The next element of a growable array field. Its capacity is implicit:
 * n rounded up to a power of two, so it grows when n is one.
 */
static void *
arr_push(struct pctx *c, void *p, size_t size)
{
	struct mos_anyarr	 a = mos_arr_get(p);
	void			*v;

	if ((a.n & (a.n - 1)) == 0) {
		if ((v = mos_msg_calloc(c->m, a.n ? a.n * 2 : 1, size)) == NULL) {
			perr_nomem(c);
			return NULL;
		}
		if (a.n > 0)
			memcpy(v, a.v, a.n * size);
		a.v = v;
	}
	mos_arr_set(p, a.v, a.n + 1);
	return (char *)a.v + a.n * size;
}

/* Strict check of a group's entries: every required field set. */
static int
check_group(struct pctx *c, const struct mos_fdesc *g, const void *base)
{
	struct mos_anyarr	 a = mos_arr_get(MOS_CFP(base, g));
	const struct mos_fdesc	*f;
	size_t			 i, j;

	for (i = 0; i < a.n; i++) {
		for (j = 0; j < g->sub->n; j++) {
			f = &g->sub->f[j];
			if ((f->flags & MOS_F_REQ) && *(const char *const *)
			    MOS_CFP((const char *)a.v + i * g->sub->size, f) ==
			    NULL)
				return perr(c, MOS_E_FIELD, "%s missing in entry "
				    "%zu", f->name, i + 1);
		}
	}
	return 0;
}

/* Strict: exactly one of the arrays of a struct is used. */
static int
check_one_list(struct pctx *c, const struct frame *fr)
{
	size_t	i, used = 0;

	for (i = 0; i < fr->sd->n; i++)
		used += mos_arr_get(MOS_CFP(fr->base, &fr->sd->f[i])).n > 0;
	if (used != 1)
		return perr(c, MOS_E_FIELD, "%s must hold exactly one kind of "
		    "list (strict)", fr->sd->name);
	return 0;
}

/* Required fields of a finished struct: KEY always, REQ in strict mode. */
static int
check_required(struct pctx *c, const struct frame *fr)
{
	const struct mos_fdesc	*f;
	size_t			 i;

	if ((fr->sd->flags & MOS_SF_ONE_LIST) && c->mode == MOS_STRICT &&
	    check_one_list(c, fr) == -1)
		return -1;
	for (i = 0; i < fr->sd->n; i++) {
		f = &fr->sd->f[i];
		if (f->kind == MOS_FK_GROUP && c->mode == MOS_STRICT &&
		    check_group(c, f, fr->base) == -1)
			return -1;
		if (fr->seen & ((uint64_t)1 << i))
			continue;
		if ((f->flags & MOS_F_KEY) ||
		    ((f->flags & MOS_F_REQ) && c->mode == MOS_STRICT))
			return perr(c, MOS_E_FIELD, "%s missing%s", f->name,
			    (f->flags & MOS_F_KEY) ? "" : " (strict)");
	}
	return 0;
}

/* A new frame on the stack. */
static struct frame *
push(struct pctx *c, enum fr_kind kind, const xmlChar *name)
{
	struct frame	*fr;

	if (c->sp >= STACK_MAX) {
		perr(c, MOS_E_FIELD, "elements nested too deep");
		return NULL;
	}
	fr = &c->st[c->sp++];
	memset(fr, 0, sizeof *fr);
	fr->kind = kind;
	fr->name = (const char *)name;
	fr->tstart = c->tb.len;
	fr->profile = -1;
	return fr;
}

/* A text-collecting frame for one field. */
static struct frame *
push_field(struct pctx *c, const xmlChar *name, enum fr_sink sink,
    const struct mos_fdesc *f, void *base, void *slot)
{
	struct frame	*fr;

	if ((fr = push(c, FR_FIELD, name)) == NULL)
		return NULL;
	fr->sink = sink;
	fr->f = f;
	fr->base = base;
	fr->slot = slot;
	return fr;
}

/* The value of a named attribute among SAX2 attributes, or NULL. */
static char *
attr_find(struct pctx *c, const char *name, int nb, const xmlChar **a)
{
	char	*s;
	int	 i;

	for (i = 0; i < nb; i++) {
		if (strcmp((const char *)a[i * 5], name) != 0)
			continue;
		if ((s = attr_dup(c, a[i * 5 + 3], a[i * 5 + 4])) == NULL)
			perr_nomem(c);
		return s;
	}
	return NULL;
}

/* Attribute fields of a struct. */
static int
struct_attrs(struct pctx *c, struct frame *fr, int nb, const xmlChar **a)
{
	const struct mos_fdesc	*f;
	const char		*s;
	char			*t;
	int			 i;

	for (i = 0; i < nb; i++) {
		if ((f = mos_sdesc_find_attr(fr->sd,
		    (const char *)a[i * 5])) == NULL)
			continue;
		fr->seen |= (uint64_t)1 << (f - fr->sd->f);
		if ((t = attr_dup(c, a[i * 5 + 3], a[i * 5 + 4])) == NULL)
			return perr_nomem(c);
		s = (f->flags & MOS_F_ID) ? id_trim(t) : t;
		if (check_str(c, f, &s) == -1)
			return -1;
		*(const char **)MOS_FP(fr->base, f) = s;
	}
	return 0;
}

/* Start a struct; a struct with its own text (objPath) is a text frame. */
static void
push_struct(struct pctx *c, const struct mos_sdesc *sd, const xmlChar *name,
    void *base, int nb, const xmlChar **attrs)
{
	const struct mos_fdesc	*tf = mos_sdesc_find_kind(sd, MOS_FK_TEXT);
	struct frame		*fr;

	if ((fr = push(c, tf ? FR_FIELD : FR_STRUCT, name)) == NULL)
		return;
	fr->sd = sd;
	fr->base = base;
	fr->f = tf;
	fr->sink = SINK_FIELD;
	if (tf != NULL)
		fr->seen |= (uint64_t)1 << (tf - sd->f);
	struct_attrs(c, fr, nb, attrs);
}

/*
 * An element of roAck's flat group; returns 0 if name is not one. A new
 * entry starts when a field does not follow the last one in DTD order.
 */
static int
group_child(struct pctx *c, struct frame *top, const xmlChar *name)
{
	const struct mos_fdesc	*g, *gf;
	struct mos_anyarr	 a;
	void			*e;
	size_t			 cur = 0;

	if ((g = mos_sdesc_find_kind(top->sd, MOS_FK_GROUP)) == NULL ||
	    (gf = mos_sdesc_find(g->sub, (const char *)name, &cur)) == NULL)
		return 0;
	a = mos_arr_get(MOS_FP(top->base, g));
	e = a.n ? (char *)a.v + (a.n - 1) * g->sub->size : NULL;
	if (e == NULL || (size_t)(gf - g->sub->f) < top->glast)
		e = arr_push(c, MOS_FP(top->base, g), g->sub->size);
	top->glast = (uint8_t)(gf - g->sub->f + 1);
	if (e != NULL)
		push_field(c, name, SINK_FIELD, gf, e, NULL);
	return 1;
}

/* listMachInfo <supportedProfiles deviceType="...">. */
static void
start_profiles(struct pctx *c, struct mos_list_mach_info *l,
    const xmlChar *name, int nb, const xmlChar **attrs)
{
	struct frame	*fr;

	l->profiles_flat = false;
	if ((l->device_type = attr_find(c, "deviceType", nb, attrs)) == NULL &&
	    c->mode == MOS_STRICT) {
		perr(c, MOS_E_FIELD, "supportedProfiles: deviceType missing");
		return;
	}
	if ((fr = push(c, FR_PROFILES, name)) != NULL)
		fr->base = l;
}

/* roStorySend <storyBody Read1stMEMasBody="...">. */
static void
start_body(struct pctx *c, struct mos_story_body *b, const xmlChar *name,
    int nb, const xmlChar **attrs)
{
	struct frame	*fr;

	memset(b, 0, sizeof *b);
	b->read1st_mem_as_body = attr_find(c, "Read1stMEMasBody", nb, attrs);
	if ((fr = push(c, FR_BODY, name)) != NULL)
		fr->slot = b;
}

/* A child element of a struct: find its field and start it. */
static void
struct_child(struct pctx *c, struct frame *top, const xmlChar *name,
    int nb, const xmlChar **attrs)
{
	const struct mos_fdesc		*f;
	struct mos_list_mach_info	*l = top->base;
	struct frame			*fr;
	uint64_t			 bit;
	void				*p, *slot;

	if ((f = mos_sdesc_find(top->sd, (const char *)name,
	    &top->cursor)) == NULL) {
		if (!group_child(c, top, name))
			c->skip = 1;	/* unknown elements are skipped */
		return;
	}
	bit = (uint64_t)1 << (f - top->sd->f);
	if (f->kind == MOS_FK_PROFILE)
		bit |= (uint64_t)1 << (mos_sdesc_find_kind(top->sd,
		    MOS_FK_PROFILES) - top->sd->f);
	if ((top->seen & bit) && !mos_fk_repeats(f->kind) &&
	    c->mode == MOS_STRICT) {
		perr(c, MOS_E_FIELD, "%s appears twice", f->name);
		return;
	}
	top->seen |= bit;
	p = MOS_FP(top->base, f);
	switch (f->kind) {
	case MOS_FK_XML:
		if (push_field(c, name, SINK_FIELD, f, top->base, NULL) != NULL)
			c->capture = 1;
		break;
	case MOS_FK_PROFILE:
		l->profiles_flat = true;
		/* FALLTHROUGH */
	case MOS_FK_STR: case MOS_FK_U32: case MOS_FK_DEC: case MOS_FK_TIME:
	case MOS_FK_DUR:
		push_field(c, name, SINK_FIELD, f, top->base, NULL);
		break;
	case MOS_FK_STRUCT:
		memset(p, 0, f->sub->size);
		push_struct(c, f->sub, name, p, nb, attrs);
		break;
	case MOS_FK_PTR:
		if ((*(void **)p = mos_msg_alloc(c->m, f->sub->size)) == NULL) {
			perr_nomem(c);
			break;
		}
		push_struct(c, f->sub, name, *(void **)p, nb, attrs);
		break;
	case MOS_FK_ARRAY:
		if ((slot = arr_push(c, p, f->sub->size)) != NULL)
			push_struct(c, f->sub, name, slot, nb, attrs);
		break;
	case MOS_FK_STRS:
		if ((slot = arr_push(c, p, sizeof(char *))) != NULL)
			push_field(c, name, SINK_STRS, f, top->base, slot);
		break;
	case MOS_FK_WRAP:
		mos_arr_set(p, NULL, 0);
		if ((fr = push(c, FR_WRAP, name)) != NULL) {
			fr->f = f;
			fr->base = top->base;
		}
		break;
	case MOS_FK_PROFILES:
		start_profiles(c, l, name, nb, attrs);
		break;
	case MOS_FK_BODY:
		start_body(c, p, name, nb, attrs);
		break;
	}
}

/* Character data straight in storyBody: a text part (merged with the last). */
static void
body_flush(struct pctx *c, struct frame *fr)
{
	struct mos_story_body	*b = fr->slot;
	struct mos_body_part	*p;
	const char		*s;
	size_t			 len = c->tb.len - fr->tstart, i, la;
	char			*t;

	if (len == 0)
		return;		/* nothing (tb may not even be allocated) */
	s = (const char *)c->tb.data + fr->tstart;
	for (i = 0; i < len && is_space(s[i]); i++)
		;
	if (i == len) {
		c->tb.len = fr->tstart;
		return;
	}
	if (b->part.n > 0 && b->part.v[b->part.n - 1].kind == MOS_BODY_TEXT) {
		p = &b->part.v[b->part.n - 1];
		la = strlen(p->text);
		if ((t = mos_msg_alloc(c->m, la + len + 1)) == NULL) {
			perr_nomem(c);
			return;
		}
		memcpy(t, p->text, la);
		memcpy(t + la, s, len);
		t[la + len] = '\0';
		p->text = t;
	} else if ((p = arr_push(c, &b->part, sizeof *p)) != NULL) {
		p->kind = MOS_BODY_TEXT;
		if ((p->text = frame_dup(c, fr)) == NULL)
			perr_nomem(c);
	}
	c->tb.len = fr->tstart;
}

/* A child element of storyBody: p, storyPresenter(RR) or storyItem. */
static void
body_child(struct pctx *c, struct frame *top, const xmlChar *name,
    int nb, const xmlChar **attrs)
{
	struct mos_story_body	*b = top->slot;
	struct mos_body_part	*p;
	const char		*n = (const char *)name;
	enum mos_body_kind	 kind;

	body_flush(c, top);
	if (strcmp(n, "p") == 0)
		kind = MOS_BODY_P;
	else if (strcmp(n, "storyPresenter") == 0)
		kind = MOS_BODY_PRESENTER;
	else if (strcmp(n, "storyPresenterRR") == 0)
		kind = MOS_BODY_PRESENTER_RR;
	else if (strcmp(n, "storyItem") == 0)
		kind = MOS_BODY_ITEM;
	else {
		c->skip = 1;
		return;
	}
	if (c->failed || (p = arr_push(c, &b->part, sizeof *p)) == NULL)
		return;
	p->kind = kind;
	if (kind == MOS_BODY_ITEM) {
		if ((p->item = mos_msg_alloc(c->m, sizeof *p->item)) == NULL)
			perr_nomem(c);
		else
			push_struct(c, &mos_sd_item, name, p->item, nb, attrs);
		return;
	}
	if (push_field(c, name, SINK_PART, NULL, NULL, p) != NULL &&
	    kind == MOS_BODY_P)
		c->capture = 1;
}

/* Switch the message to its type, now that its element is known. */
static void
set_type(struct pctx *c, enum mos_type t)
{
	c->m->type = t;
	c->m->type_name = mos_type_name(t);
	memset(&c->m->u, 0, sizeof c->m->u);
	if (t == MOS_T_LIST_MACH_INFO)
		memset(c->m->u.list_mach_info.profiles, -1,
		    sizeof c->m->u.list_mach_info.profiles);
}

/* A child of <mos>: the envelope, or the message element. */
static void
root_child(struct pctx *c, const xmlChar *name, int nb, const xmlChar **attrs)
{
	const char	*n = (const char *)name;
	enum mos_type	 t;

	if (strcmp(n, "mosID") == 0 || strcmp(n, "ncsID") == 0 ||
	    strcmp(n, "messageID") == 0) {
		push_field(c, name, n[0] == 'm' && n[1] == 'o' ? SINK_MOS_ID :
		    n[0] == 'n' ? SINK_NCS_ID : SINK_MESSAGE_ID, NULL, NULL,
		    NULL);
		return;
	}
	if (c->have_msg) {
		c->skip = 1;
		return;
	}
	if ((t = mos_type_from_name(n)) != MOS_T_UNKNOWN) {
		c->have_msg = 1;
		set_type(c, t);
		push_struct(c, mos_tdescs[t].body, name, &c->m->u, nb, attrs);
		return;
	}
	if (c->have_unknown) {
		c->skip = 1;
		return;
	}
	c->have_unknown = 1;
	if ((c->m->type_name = mos_msg_strdup(c->m, n)) == NULL) {
		perr_nomem(c);
		return;
	}
	if (push_field(c, name, SINK_UNKNOWN, NULL, NULL, NULL) != NULL)
		c->capture = 1;
}

/* Append a qualified name. */
static int
cap_qname(struct pctx *c, const xmlChar *prefix, const xmlChar *local)
{
	if (prefix != NULL && (mos_buf_add(&c->tb, prefix,
	    strlen((const char *)prefix)) == -1 || mos_buf_add(&c->tb, ":",
	    1) == -1))
		return -1;
	return mos_buf_add(&c->tb, local, strlen((const char *)local));
}

/*
 * Append name="escaped value" for a SAX2 attribute value or namespace URI
 * [v, end), in which '&' arrives as "&#38;" (no copy: fragment checks have
 * no arena). xmlns names a namespace declaration, local an attribute.
 */
static int
cap_attr(struct pctx *c, const char *xmlns, const xmlChar *prefix,
    const xmlChar *local, const xmlChar *v, const xmlChar *end)
{
	const char	*p = (const char *)v, *e = (const char *)end, *amp;
	int		 bad;

	if (mos_buf_add(&c->tb, " ", 1) == -1 || (xmlns != NULL &&
	    mos_buf_add(&c->tb, xmlns, strlen(xmlns)) == -1) ||
	    (local != NULL && cap_qname(c, prefix, local) == -1) ||
	    mos_buf_add(&c->tb, "=\"", 2) == -1)
		return -1;
	while (p < e) {
		if ((amp = memchr(p, '&', (size_t)(e - p))) == NULL)
			amp = e;
		if (mos_buf_escape(&c->tb, p, (size_t)(amp - p), 1, &bad) == -1)
			return -1;
		if (amp == e)
			break;
		if (mos_buf_add(&c->tb, "&amp;", 5) == -1)
			return -1;
		p = e - amp >= 5 && memcmp(amp, "&#38;", 5) == 0 ? amp + 5 :
		    amp + 1;
	}
	return mos_buf_add(&c->tb, "\"", 1);
}

/* Close a captured start tag that now has content. */
static int
cap_content(struct pctx *c)
{
	if (!c->pending)
		return 0;
	c->pending = 0;
	return mos_buf_add(&c->tb, ">", 1);
}

/* Serialise a start tag inside a verbatim-XML field. */
static void
cap_start(struct pctx *c, const xmlChar *local, const xmlChar *prefix,
    int nb_ns, const xmlChar **ns, int nb, const xmlChar **a)
{
	const xmlChar	*uri;
	int		 i;

	if (cap_content(c) == -1 || mos_buf_add(&c->tb, "<", 1) == -1 ||
	    cap_qname(c, prefix, local) == -1)
		goto nomem;
	for (i = 0; i < nb_ns; i++) {
		uri = ns[i * 2 + 1] != NULL ? ns[i * 2 + 1] : (const xmlChar *)"";
		if (cap_attr(c, ns[i * 2] ? "xmlns:" : "xmlns", NULL,
		    ns[i * 2], uri, uri + strlen((const char *)uri)) == -1)
			goto nomem;
	}
	for (i = 0; i < nb; i++) {
		if (cap_attr(c, NULL, a[i * 5 + 1], a[i * 5], a[i * 5 + 3],
		    a[i * 5 + 4]) == -1)
			goto nomem;
	}
	c->pending = 1;
	return;
nomem:
	perr_nomem(c);
}

/* Serialise an end tag inside a verbatim-XML field. */
static void
cap_end(struct pctx *c, const xmlChar *local, const xmlChar *prefix)
{
	int	rc;

	if (c->pending) {
		c->pending = 0;
		rc = mos_buf_add(&c->tb, "/>", 2);
	} else
		rc = mos_buf_add(&c->tb, "</", 2) == -1 ||
		    cap_qname(c, prefix, local) == -1 ||
		    mos_buf_add(&c->tb, ">", 1) == -1 ? -1 : 0;
	if (rc == -1)
		perr_nomem(c);
}

/*
 * Where the parser is in a fragment, in bytes from its start; with tag, the
 * start of the tag just read (no '<' can occur inside a tag).
 */
static size_t
frag_off(struct pctx *c, int tag)
{
	struct frag	*f = c->frag;
	long		 at = c->ctxt != NULL ? xmlByteConsumed(c->ctxt) : -1;
	size_t		 o, i;

	o = at < 0 ? f->open : (size_t)at;
	if (o > f->open + f->len)
		o = f->open + f->len;
	if (o < f->open)
		o = f->open;
	for (i = o; tag && i > f->open; i--) {
		if (f->doc[i - 1] == '<')
			return i - 1 - f->open;
	}
	return o - f->open;
}

/* An element starts inside a fragment: depth, and the description rules. */
static int
frag_start(struct pctx *c, const xmlChar *local, const xmlChar *prefix,
    int nb_ns, int nb)
{
	struct frag	*f = c->frag;
	const char	*n = (const char *)local;
	int		 d = c->capture, k, parent;

	if (f->strict && d > MOS_FRAGMENT_DEPTH)
		return perr(c, MOS_E_FIELD, "%s: elements nested deeper than %d "
		    "(offset %zu)", f->elem, MOS_FRAGMENT_DEPTH,
		    frag_off(c, 1));
	if (!f->desc)
		return 0;
	parent = f->kind[d - 1];
	k = prefix != NULL ? -1 : strcmp(n, "p") == 0 ? FK_P :
	    strcmp(n, "em") == 0 ? FK_EM : strcmp(n, "tab") == 0 ? FK_TAB : -1;
	if (k == -1)
		return perr(c, MOS_E_FIELD, "%s: <%s%s%.40s> is not allowed, "
		    "only text, <p>, <em> and <tab/> (offset %zu)", f->elem,
		    prefix != NULL ? (const char *)prefix : "",
		    prefix != NULL ? ":" : "", n, frag_off(c, 1));
	if (parent == FK_TAB || (k == FK_P && parent != FK_TOP) ||
	    (k == FK_EM && parent == FK_EM))
		return perr(c, MOS_E_FIELD, "%s: <%s> inside <%s> (offset %zu)",
		    f->elem, n, parent == FK_P ? "p" : parent == FK_EM ? "em" :
		    "tab", frag_off(c, 1));
	if (nb_ns > 0 || nb > 0)
		return perr(c, MOS_E_FIELD, "%s: <%s> takes no attributes "
		    "(offset %zu)", f->elem, n, frag_off(c, 1));
	f->kind[d] = (uint8_t)k;
	return 0;
}

/*
 * The wrapper element ends: only at the very end of the document, else
 * the fragment closed its own element.
 */
static int
frag_end(struct pctx *c)
{
	struct frag	*f = c->frag;
	long		 at = xmlByteConsumed(c->ctxt);

	if (at >= 0 && (size_t)at == f->open + f->len + f->open + 1)
		return 0;
	return perr(c, MOS_E_XML, "%s: closes its element at offset %zu",
	    f->elem, frag_off(c, 1));
}

/* A container <mosProfile number="N">. */
static void
profile_start(struct pctx *c, struct frame *top, const xmlChar *name,
    int nb, const xmlChar **attrs)
{
	struct frame	*fr;
	const char	*num;
	uint64_t	 v;
	int		 bad;

	num = attr_find(c, "number", nb, attrs);
	bad = num == NULL || mos_parse_number(num, 7, &v) == -1;
	if (bad && c->mode == MOS_STRICT) {
		perr(c, MOS_E_FIELD, "mosProfile: number missing or not 0-7");
		return;
	}
	if ((fr = push_field(c, name, SINK_PROFILE, NULL, top->base,
	    NULL)) != NULL)
		fr->profile = bad ? -1 : (int8_t)v;
}

/* A child of a wrapped list (mosObjList's <list>). */
static void
wrap_child(struct pctx *c, struct frame *top, const xmlChar *name,
    int nb, const xmlChar **attrs)
{
	const struct mos_fdesc	*f = top->f;
	void			*slot;

	if (strcmp((const char *)name, f->elem) != 0) {
		c->skip = 1;
		return;
	}
	if ((slot = arr_push(c, MOS_FP(top->base, f), f->sub->size)) != NULL)
		push_struct(c, f->sub, name, slot, nb, attrs);
}

/* SAX: an element starts. */
static void
sax_start(void *ctx, const xmlChar *local, const xmlChar *prefix,
    const xmlChar *uri, int nb_ns, const xmlChar **ns, int nb,
    int nb_def, const xmlChar **attrs)
{
	struct pctx	*c = sax_cur;
	struct frame	*top;

	(void)ctx;
	(void)uri;
	(void)nb_def;
	if (c->failed)
		return;
	if (c->skip > 0) {
		c->skip++;
		return;
	}
	if (c->capture > 0) {
		if (c->check_only && frag_start(c, local, prefix, nb_ns,
		    nb) == -1)
			return;
		cap_start(c, local, prefix, nb_ns, ns, nb, attrs);
		c->capture++;
		return;
	}
	if (c->sp == 0) {
		if (c->check_only) {
			if (push_field(c, local, SINK_CANON, NULL, NULL,
			    NULL) != NULL)
				c->capture = 1;
		} else if (strcmp((const char *)local, "mos") != 0)
			perr(c, MOS_E_ROOT, "root element is <%.40s>, not <mos>",
			    (const char *)local);
		else
			push(c, FR_ROOT, local);
		return;
	}
	top = &c->st[c->sp - 1];
	switch (top->kind) {
	case FR_FIELD:
		c->inner++;	/* markup inside a text field: keep its text */
		break;
	case FR_ROOT:
		root_child(c, local, nb, attrs);
		break;
	case FR_STRUCT:
		struct_child(c, top, local, nb, attrs);
		break;
	case FR_BODY:
		body_child(c, top, local, nb, attrs);
		break;
	case FR_WRAP:
		wrap_child(c, top, local, nb, attrs);
		break;
	case FR_PROFILES:
		if (strcmp((const char *)local, "mosProfile") == 0)
			profile_start(c, top, local, nb, attrs);
		else
			c->skip = 1;
		break;
	}
}

/* The envelope's messageID. */
static void
field_message_id(struct pctx *c, const char *s)
{
	uint64_t	v;

	if (c->have_mid && c->mode == MOS_STRICT) {
		perr(c, MOS_E_ENVELOPE, "messageID appears twice");
		return;
	}
	c->have_mid = 1;
	if (*s == '\0' && c->mode == MOS_LENIENT)
		return;
	if (mos_parse_number(s, INT32_MAX, &v) == -1 || v < 1) {
		perr(c, MOS_E_ENVELOPE, "messageID \"%.40s\" is not a number "
		    "from 1 to 2147483647", s);
		return;
	}
	c->m->has_message_id = true;
	c->m->message_id = (int32_t)v;
}

/* mosID or ncsID of the envelope. */
static void
field_env_id(struct pctx *c, const struct frame *fr, const char **dst)
{
	if (*dst != NULL && c->mode == MOS_STRICT) {
		perr(c, MOS_E_ENVELOPE, "%s appears twice", fr->name);
		return;
	}
	if ((*dst = id_trim(frame_dup(c, fr))) == NULL)
		perr_nomem(c);
}

/* The value of a field of a struct, from the frame's text. */
static void
field_value(struct pctx *c, const struct frame *fr)
{
	const struct mos_fdesc		*f = fr->f;
	struct mos_list_mach_info	*l = fr->base;
	const char			*s;
	char				*t;

	switch (f->kind) {
	case MOS_FK_STR: case MOS_FK_XML: case MOS_FK_TEXT:
		if ((s = field_dup(c, fr, f)) == NULL) {
			perr_nomem(c);
			return;
		}
		if (check_str(c, f, &s) == 0)
			*(const char **)MOS_FP(fr->base, f) = s;
		return;
	}
	if ((t = frame_trimmed(c, fr)) == NULL) {
		perr_nomem(c);
		return;
	}
	if (f->kind == MOS_FK_PROFILE)
		parse_yesno(c, f->name, t, 1, &l->profiles[f->aux]);
	else
		parse_scalar(c, f, t, fr->base);
}

/* A text frame ends: store its text where it belongs. */
static void
field_end(struct pctx *c, const struct frame *fr)
{
	struct mos_list_mach_info	*l = fr->base;
	struct mos_body_part		*p = fr->slot;
	const char			*s;

	switch (fr->sink) {
	case SINK_FIELD:
		field_value(c, fr);
		if (fr->sd != NULL && !c->failed)
			check_required(c, fr);
		return;
	case SINK_STRS:
		if ((s = field_dup(c, fr, fr->f)) == NULL)
			perr_nomem(c);
		else if (check_str(c, fr->f, &s) == 0)
			*(const char **)fr->slot = s;
		return;
	case SINK_PART:
		if ((p->text = frame_dup(c, fr)) == NULL)
			perr_nomem(c);
		return;
	case SINK_PROFILE:
		if ((s = frame_trimmed(c, fr)) == NULL)
			perr_nomem(c);
		else if (fr->profile >= 0)
			parse_yesno(c, "mosProfile", s, 0,
			    &l->profiles[fr->profile]);
		return;
	case SINK_MOS_ID:
		field_env_id(c, fr, &c->m->mos_id);
		return;
	case SINK_NCS_ID:
		field_env_id(c, fr, &c->m->ncs_id);
		return;
	case SINK_MESSAGE_ID:
		if ((s = frame_trimmed(c, fr)) == NULL)
			perr_nomem(c);
		else
			field_message_id(c, s);
		return;
	case SINK_UNKNOWN:
		if ((c->m->u.unknown.xml = frame_dup(c, fr)) == NULL)
			perr_nomem(c);
		return;
	case SINK_CANON:
		if (c->frag->canon == NULL)
			return;
		if ((c->tb.len > fr->tstart && mos_buf_add(c->frag->canon,
		    c->tb.data + fr->tstart, c->tb.len - fr->tstart) == -1) ||
		    mos_buf_reserve(c->frag->canon, 1) == -1)
			perr_nomem(c);
		else
			c->frag->canon->data[c->frag->canon->len] = '\0';
		return;
	}
}

/* SAX: an element ends. */
static void
sax_end(void *ctx, const xmlChar *local, const xmlChar *prefix,
    const xmlChar *uri)
{
	struct pctx	*c = sax_cur;
	struct frame	*fr;

	(void)ctx;
	(void)uri;
	if (c->failed)
		return;
	if (c->skip > 0) {
		c->skip--;
		return;
	}
	if (c->capture > 1) {
		cap_end(c, local, prefix);
		c->capture--;
		return;
	}
	if (c->capture == 1) {
		if (c->check_only && frag_end(c) == -1)
			return;
		c->capture = 0;
	}
	else if (c->inner > 0) {
		c->inner--;
		return;
	}
	if (c->sp == 0)
		return;
	fr = &c->st[c->sp - 1];
	switch (fr->kind) {
	case FR_FIELD:
		field_end(c, fr);
		break;
	case FR_STRUCT:
		check_required(c, fr);
		break;
	case FR_BODY:
		body_flush(c, fr);
		break;
	default:
		break;
	}
	c->tb.len = fr->tstart;
	c->sp--;
}

/* Append character data to the current text, escaped when capturing. */
static void
sax_text(struct pctx *c, const xmlChar *ch, int len, int cdata)
{
	struct frame	*top;
	int		 bad, rc;

	if (c->failed || c->skip > 0 || c->sp == 0)
		return;
	if (c->capture > 0) {
		if (c->check_only && c->frag->desc &&
		    c->frag->kind[c->capture - 1] == FK_TAB) {
			perr(c, MOS_E_FIELD, "%s: <tab/> must be empty (offset "
			    "%zu)", c->frag->elem, frag_off(c, 0));
			return;
		}
		if (cdata)
			rc = cap_content(c) == -1 ||
			    mos_buf_add(&c->tb, "<![CDATA[", 9) == -1 ||
			    mos_buf_add(&c->tb, ch, (size_t)len) == -1 ||
			    mos_buf_add(&c->tb, "]]>", 3) == -1 ? -1 : 0;
		else
			rc = cap_content(c) == -1 ||
			    mos_buf_escape(&c->tb, (const char *)ch, (size_t)len,
			    0, &bad) == -1 ? -1 : 0;
	} else {
		top = &c->st[c->sp - 1];
		if (top->kind != FR_FIELD && top->kind != FR_BODY)
			return;
		rc = mos_buf_add(&c->tb, ch, (size_t)len);
	}
	if (rc == -1)
		perr_nomem(c);
}

/* SAX: character data. */
static void
sax_chars(void *ctx, const xmlChar *ch, int len)
{
	(void)ctx;
	sax_text(sax_cur, ch, len, 0);
}

/* SAX: a CDATA section. */
static void
sax_cdata(void *ctx, const xmlChar *ch, int len)
{
	(void)ctx;
	sax_text(sax_cur, ch, len, 1);
}

/* Append a comment or processing instruction to a verbatim-XML field. */
static void
sax_markup(struct pctx *c, const char *open, const xmlChar *a,
    const xmlChar *b, const char *close)
{
	if (c->failed || c->skip > 0 || c->capture == 0)
		return;
	if (c->check_only && c->frag->desc) {
		perr(c, MOS_E_FIELD, "%s: comments and processing instructions "
		    "are not allowed (offset %zu)", c->frag->elem,
		    frag_off(c, 1));
		return;
	}
	if (cap_content(c) == -1 || mos_buf_add(&c->tb, open, strlen(open)) ==
	    -1 || mos_buf_add(&c->tb, a, strlen((const char *)a)) == -1 ||
	    (b != NULL && *b != '\0' && (mos_buf_add(&c->tb, " ", 1) == -1 ||
	    mos_buf_add(&c->tb, b, strlen((const char *)b)) == -1)) ||
	    mos_buf_add(&c->tb, close, strlen(close)) == -1)
		perr_nomem(c);
}

/* SAX: a comment. */
static void
sax_comment(void *ctx, const xmlChar *value)
{
	(void)ctx;
	sax_markup(sax_cur, "<!--", value, NULL, "-->");
}

/* SAX: a processing instruction. */
static void
sax_pi(void *ctx, const xmlChar *target, const xmlChar *data)
{
	(void)ctx;
	sax_markup(sax_cur, "<?", target, data, "?>");
}

/* libxml2's errors as they happen: where the first one of a fragment is. */
static void
sax_serror(void *ctx, xmlErrorPtr e)
{
	struct pctx	*c = sax_cur;
	struct frag	*f;
	char		*p;

	if (c == NULL || !c->check_only || e == NULL ||
	    e->level == XML_ERR_WARNING || (f = c->frag)->xml_off >= 0)
		return;
	f->xml_off = xmlByteConsumed(ctx);
	if (f->xml_off < 0)
		f->xml_off = 0;
	f->xml_depth = c->capture;
	f->xml_code = e->code;
	snprintf(f->xml_msg, sizeof f->xml_msg, "%s", e->message != NULL ?
	    e->message : "not well-formed");
	for (p = f->xml_msg; *p != '\0'; p++) {
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	}
	while (p > f->xml_msg && p[-1] == ' ')
		*--p = '\0';
}

/* SAX: a DOCTYPE stops the parser (MOS has no DTD). */
static void
sax_reject_dtd(void *ctx, const xmlChar *name, const xmlChar *eid,
    const xmlChar *sid)
{
	(void)name;
	(void)eid;
	(void)sid;
	sax_cur->doctype = 1;
	xmlStopParser(ctx);
}

/* libxml2's error, one line, into err. */
static void
xml_error(struct pctx *c)
{
	const xmlError	*e = xmlCtxtGetLastError(c->ctxt);
	struct mos_error *err = c->err;
	int		 code = e && e->code ? e->code : c->ctxt->errNo;
	char		*p;

	err->xml_code = code;
	err->line = e && e->line ? e->line : (c->ctxt->input ?
	    c->ctxt->input->line : 0);
	if (c->doctype) {
		err->code = MOS_E_DOCTYPE;
		snprintf(err->msg, sizeof err->msg, "DOCTYPE not allowed in MOS "
		    "messages (line %d)", err->line);
		return;
	}
	err->code = MOS_E_XML;
	snprintf(err->msg, sizeof err->msg, "XML error %d at line %d: %s",
	    code, err->line, e && e->message ? e->message : "not well-formed");
	for (p = err->msg; *p != '\0'; p++) {
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	}
	while (p > err->msg && p[-1] == ' ')
		*--p = '\0';
}

/*
 * A parser context for one frame: this thread's kept one with the number
 * of frames it has parsed, or a new one.
 */
static xmlParserCtxt *
ctxt_take(struct mos_scratch *sc, unsigned *frames)
{
	xmlParserCtxt	*ctxt;

	*frames = 0;
	if (sc == NULL || sc->xml == NULL)
		return xmlNewParserCtxt();
	ctxt = sc->xml;
	*frames = sc->xml_frames;
	sc->xml = NULL;
	return ctxt;
}

/*
 * Keep the context for the thread's next frame, or free it: after any
 * failed frame (no halted state, error or namespace leaks into the next),
 * after CTXT_FRAMES frames, and once its dictionary, which a reset keeps,
 * holds CTXT_DICT_MAX bytes of names (hardening.md 1.6).
 */
static void
ctxt_put(struct mos_scratch *sc, xmlParserCtxt *ctxt, unsigned frames,
    int failed)
{
	if (sc == NULL || sc->xml != NULL || failed ||
	    frames + 1 >= CTXT_FRAMES ||
	    xmlDictGetUsage(ctxt->dict) > CTXT_DICT_MAX) {
		xmlFreeParserCtxt(ctxt);
		return;
	}
	sc->xml = ctxt;
	sc->xml_frames = frames + 1;
}

/*
 * The encoding to name to libxml2. None for text starting with ASCII
 * other than 'L' and no NUL in its first four bytes: libxml2 then finds
 * no signature and reads it as UTF-8 without a copying UTF-8 decoder (and
 * still rejects bad UTF-8). Otherwise "UTF-8", so that no BOM or EBCDIC
 * signature can switch the encoding.
 */
static const char *
xml_encoding(const char *buf, size_t len)
{
	size_t	i;

	if (len < 4 || (unsigned char)buf[0] >= 0x80 || buf[0] == 'L')
		return "UTF-8";
	for (i = 1; i < 4; i++) {
		if (buf[i] == '\0')
			return "UTF-8";
	}
	return NULL;
}

/* Point the context's SAX handler at our callbacks. */
static void
sax_setup(xmlSAXHandler *sax)
{
	sax->internalSubset = sax_reject_dtd;
	sax->externalSubset = NULL;
	sax->startDocument = NULL;
	sax->endDocument = NULL;
	sax->startElement = NULL;
	sax->endElement = NULL;
	sax->startElementNs = sax_start;
	sax->endElementNs = sax_end;
	sax->characters = sax_chars;
	sax->ignorableWhitespace = sax_chars;
	sax->cdataBlock = sax_cdata;
	sax->comment = sax_comment;
	sax->processingInstruction = sax_pi;
	sax->reference = NULL;
	sax->serror = sax_serror;
}

/* Fill the XML_PAD bytes at end with white space; returns XML_PAD. */
static size_t
text_pad(char *end)
{
	memset(end, ' ', XML_PAD);
	return XML_PAD;
}

/*
 * Run the SAX parse of UTF-8 text; 0 when well-formed and built. The
 * thread's context is reused: xmlCtxtReadMemory() resets it first.
 */
static int
sax_run(struct pctx *c, const char *buf, size_t len)
{
	struct mos_scratch	*sc = mos_scratch_get();
	unsigned		 frames;

	if ((c->ctxt = ctxt_take(sc, &frames)) == NULL)
		return perr_nomem(c);
	sax_setup(c->ctxt->sax);
	sax_cur = c;
	xmlFreeDoc(xmlCtxtReadMemory(c->ctxt, buf, (int)len, NULL,
	    xml_encoding(buf, len), PARSE_OPTS));
	sax_cur = NULL;
	if (!c->failed && (!c->ctxt->wellFormed ||
	    c->ctxt->errNo != XML_ERR_OK)) {
		xml_error(c);
		c->failed = 1;
	}
	ctxt_put(sc, c->ctxt, frames, c->failed);
	c->ctxt = NULL;
	return c->failed ? -1 : 0;
}

/* After the parse: a message element, and the strict envelope rules. */
static int
check_message(struct pctx *c)
{
	const struct mos_msg	*m = c->m;
	int			 flags = mos_tdescs[m->type].flags;

	if (!c->have_msg && !c->have_unknown)
		return perr(c, MOS_E_ENVELOPE, "no message element in <mos>");
	/* Its name is what JSON and the fragment check take (frag_name_ok). */
	if (!c->have_msg && strlen(m->type_name) > MSG_NAME_MAX)
		return perr(c, MOS_E_FIELD, "message element <%.40s...> has a "
		    "name of %zu bytes (at most %d)", m->type_name,
		    strlen(m->type_name), MSG_NAME_MAX);
	if (c->mode != MOS_STRICT || (flags & MOS_TF_NOIDS))
		return 0;
	if (m->mos_id == NULL || *m->mos_id == '\0')
		return perr(c, MOS_E_ENVELOPE, "mosID missing or empty");
	if (m->ncs_id == NULL || *m->ncs_id == '\0')
		return perr(c, MOS_E_ENVELOPE, "ncsID missing or empty");
	if (mos_utf8_chars(m->mos_id) > 128 || mos_utf8_chars(m->ncs_id) > 128)
		return perr(c, MOS_E_ENVELOPE, "mosID or ncsID longer than 128 "
		    "characters");
	if (!c->have_mid && !(flags & MOS_TF_NOMSGID))
		return perr(c, MOS_E_ENVELOPE, "messageID missing");
	return 0;
}

/*
 * Whether s can name the wrapper: an element name without a prefix, up
 * to MSG_NAME_MAX bytes (libxml2 judges the non-ASCII characters).
 */
static int
frag_name_ok(const char *s)
{
	const unsigned char	*p = (const unsigned char *)s;
	size_t			 i;

	if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
	    *p == '_' || *p >= 0x80))
		return 0;
	for (i = 1; p[i] != '\0'; i++) {
		if (!((p[i] >= 'A' && p[i] <= 'Z') || (p[i] >= 'a' &&
		    p[i] <= 'z') || (p[i] >= '0' && p[i] <= '9') ||
		    p[i] == '_' || p[i] == '-' || p[i] == '.' || p[i] >= 0x80))
			return 0;
	}
	return i <= MSG_NAME_MAX;
}

/* The message for a fragment that libxml2 found not well-formed. */
static void
frag_xml_error(const struct frag *f, const struct mos_error *err, char *msg,
    size_t msglen)
{
	size_t	off;
	long	i;

	if (err->code != MOS_E_XML || f->xml_off < 0) {
		snprintf(msg, msglen, "%s", err->msg);
		return;
	}
	off = (size_t)f->xml_off;
	off = off < f->open ? 0 : off - f->open > f->len ? f->len :
	    off - f->open;
	if (f->xml_code == XML_ERR_TAG_NAME_MISMATCH && f->xml_depth == 1) {
		for (i = (long)off - 1; i >= 0 && f->doc[f->open + i] != '<'; i--)
			;
		snprintf(msg, msglen, "%s: end tag at offset %zu closes an "
		    "element it did not open", f->elem, i >= 0 ? (size_t)i : off);
	} else
		snprintf(msg, msglen, "%s: not a well-formed XML fragment at "
		    "offset %zu: %s", f->elem, off, f->xml_msg);
}

/* Check a verbatim-XML fragment as the content of its element. */
int
mos_fragment_check(const char *elem, const char *s, size_t len,
    enum mos_mode mode, struct mos_buf *canon, char *msg, size_t msglen)
{
	struct mos_error	 err;
	struct mos_scratch	*sc;
	struct mos_buf		 b = { NULL, 0, 0 };
	struct pctx		 c;
	struct frag		 f;
	const char		*end;
	size_t			 n, el, clen = canon != NULL ? canon->len : 0;
	int			 rc = -1;

	mos_init();
	if (elem == NULL || !frag_name_ok(elem)) {
		snprintf(msg, msglen, "\"%.40s\" is not an element name",
		    elem != NULL ? elem : "(null)");
		return -1;
	}
	if (s == NULL || len > parse_max || len > INT_MAX / 4) {
		snprintf(msg, msglen, "%s: %zu bytes exceed the cap of %zu",
		    elem, s == NULL ? 0 : len, parse_max);
		return -1;
	}
	if ((n = mos_utf8_valid(s, len)) != len) {
		snprintf(msg, msglen, "%s: %s at offset %zu", elem, s[n] == '\0' ?
		    "NUL character" : (unsigned char)s[n] < 0x20 ? "control "
		    "character" : "invalid UTF-8 (or a surrogate or U+FFFE/FFFF)",
		    n);
		return -1;
	}
	/*
	 * Plain text (no markup, no references) needs no parser to be
	 * judged, only "]]>" is not allowed in it: a checked catalog row with
	 * a long plain description costs a scan, not a parse.
	 */
	if (canon == NULL && memchr(s, '<', len) == NULL &&
	    memchr(s, '&', len) == NULL) {
		if ((end = memmem(s, len, "]]>", 3)) == NULL)
			return 0;
		snprintf(msg, msglen, "%s: not a well-formed XML fragment at "
		    "offset %zu: Sequence ']]>' not allowed in content", elem,
		    (size_t)(end - s));
		return -1;
	}
	memset(&err, 0, sizeof err);
	memset(&c, 0, sizeof c);
	memset(&f, 0, sizeof f);
	c.err = &err;
	c.check_only = 1;
	c.frag = &f;
	f.elem = elem;
	f.len = len;
	f.strict = mode == MOS_STRICT;
	f.desc = f.strict && strcmp(elem, "description") == 0;
	f.xml_off = -1;
	f.canon = canon;
	el = strlen(elem);
	f.open = el + 2;
	if ((sc = mos_scratch_get()) != NULL) {
		b = sc->utf8;
		c.tb = sc->tb;
		memset(&sc->utf8, 0, sizeof sc->utf8);
		memset(&sc->tb, 0, sizeof sc->tb);
	}
	b.len = 0;
	if (mos_buf_reserve(&b, len + 2 * el + 5 + XML_PAD) == -1) {
		snprintf(msg, msglen, "%s: out of memory", elem);
		goto done;
	}
	b.data[b.len++] = '<';
	memcpy(b.data + b.len, elem, el);
	b.len += el;
	b.data[b.len++] = '>';
	memcpy(b.data + b.len, s, len);
	b.len += len;
	memcpy(b.data + b.len, "</", 2);
	memcpy(b.data + b.len + 2, elem, el);
	b.data[b.len + 2 + el] = '>';
	b.len += el + 3;
	f.doc = (const char *)b.data;
	if (sax_run(&c, f.doc, b.len + text_pad((char *)b.data + b.len)) == 0)
		rc = 0;
	else
		frag_xml_error(&f, &err, msg, msglen);
done:
	mos_scratch_put(sc, &b, &c.tb);
	if (rc == -1 && canon != NULL)
		canon->len = clen;
	return rc;
}

/*
 * A fragment as the parser would store it, in m's arena; NULL and msg
 * filled when mos_fragment_check() refuses it.
 */
const char *
mos_xml_canon(struct mos_msg *m, const char *elem, const char *s,
    enum mos_mode mode, char *msg, size_t msglen)
{
	struct mos_buf	 out = { NULL, 0, 0 };
	const char	*r = NULL;

	if (mos_fragment_check(elem, s, strlen(s), mode, &out, msg,
	    msglen) == 0 &&
	    (r = mos_msg_strndup_raw(m, out.data != NULL ?
	    (const char *)out.data : "", out.len)) == NULL)
		snprintf(msg, msglen, "%s: out of memory", elem);
	mos_buf_free(&out);
	return r;
}

/* Parse one frame into a typed message. */
int
mos_parse(const void *frame, size_t len, enum mos_enc enc, enum mos_mode mode,
    struct mos_msg **out, struct mos_error *err)
{
	struct mos_error	 dummy;
	struct pctx		 c;
	struct mos_scratch	*sc;
	struct mos_buf		 utf8 = { NULL, 0, 0 };
	const uint8_t		*in = frame;
	const char		*text = frame;
	size_t			 tlen = len, pad = 0;

	*out = NULL;
	if (err == NULL)
		err = &dummy;
	memset(err, 0, sizeof *err);
	memset(&c, 0, sizeof c);
	c.mode = mode;
	c.err = err;
	mos_init();
	if ((sc = mos_scratch_get()) != NULL) {
		utf8 = sc->utf8;
		c.tb = sc->tb;
		memset(&sc->utf8, 0, sizeof sc->utf8);
		memset(&sc->tb, 0, sizeof sc->tb);
	}
	if (enc == MOS_ENC_AUTO)
		enc = len > 0 && in[0] == 0 ? MOS_ENC_UTF16BE : MOS_ENC_UTF8;
	if (len > parse_max || len > INT_MAX / 2) {
		perr(&c, MOS_E_TOO_BIG, "frame of %zu bytes exceeds the cap of "
		    "%zu", len, parse_max);
		tlen = len = len < ENV_SCAN_MAX ? len : ENV_SCAN_MAX;
	}
	if (enc == MOS_ENC_UTF16BE || len <= PAD_COPY_MAX) {
		if (mos_buf_reserve(&utf8, (enc == MOS_ENC_UTF16BE ? len / 2 * 3 +
		    4 : len) + XML_PAD) == -1) {
			perr_nomem(&c);
			goto done;
		}
		if (enc != MOS_ENC_UTF16BE)
			memcpy(utf8.data, frame, len);
		else if (mos_utf16_to_utf8(in, len, (char *)utf8.data,
		    &tlen) == -1)
			perr(&c, MOS_E_ENCODING, "not UTF-16BE: odd length or "
			    "lone surrogate");
		text = (const char *)utf8.data;
		pad = text_pad((char *)utf8.data + tlen);
	}
	if (!c.failed && memchr(text, '\0', tlen) != NULL)
		perr(&c, MOS_E_ENCODING, "NUL character in frame");
	if (!c.failed && (c.m = mos_msg_new(MOS_T_UNKNOWN)) == NULL)
		perr_nomem(&c);
	if (!c.failed && sax_run(&c, text, tlen + pad) == 0 &&
	    check_message(&c) == 0) {
		*out = c.m;
		c.m = NULL;
	}
	if (err->code != MOS_OK)
		mos_env_scan(text, tlen < ENV_SCAN_MAX ? tlen : ENV_SCAN_MAX,
		    &err->env);
done:
	mos_msg_free(c.m);
	mos_scratch_put(sc, &utf8, &c.tb);
	return err->code;
}
