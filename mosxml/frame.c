/*
 * The MOS framer: bytes off a socket, in any chunking, to one <mos>...</mos>
 * frame at a time.
 *
 * The framer works on code units (2 bytes in UTF-16BE, 1 in UTF-8) and runs a
 * small XML lexer over them, one unit at a time, keeping its state between
 * feeds: every byte is examined once, whatever the chunking. It recognises
 * start and end tags named exactly "mos" (so not <mosID> or <mosObj>), keeps
 * the <mos>/</mos> balance (payloads may hold inner <mos> elements), and
 * skips what cannot hold markup: quoted attribute values, comments, CDATA
 * sections, processing instructions and <!...> declarations.
 *
 * A frame starts at the '<' of its <mos and ends after the '>' of the </mos>
 * that balances it. Anything before it (whitespace, a BOM, an XML
 * declaration, junk) is skipped and counted against max_junk; the XML
 * declaration is not part of the frame (the parser is told the encoding and
 * ignores declarations anyway).
 *
 * In AUTO mode the encoding is taken from the first bytes: a BOM (FE FF or
 * EF BB BF), else the first non-space character (00 3C is UTF-16BE, 3C xx
 * is UTF-8, 3C 00 is UTF-16LE and refused). In a fixed mode the same look
 * refuses a stream that plainly is in another encoding.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mosxml/mosxml.h"

/* Lexer states. */
enum framer_state {
	FS_TEXT,	/* character data */
	FS_LT,		/* after '<' */
	FS_STAG_NAME,	/* in a start tag's name */
	FS_STAG,	/* in a start tag, after its name */
	FS_STAG_SLASH,	/* in a start tag, after '/' */
	FS_STAG_DQ,	/* in a "value" */
	FS_STAG_SQ,	/* in a 'value' */
	FS_ETAG_NAME,	/* in an end tag's name */
	FS_ETAG,	/* in an end tag, after its name */
	FS_BANG,	/* after "<!" */
	FS_BANG_DASH,	/* after "<!-" */
	FS_BANG_CDATA,	/* matching "<![CDATA[" */
	FS_DECL,	/* in another <!...> declaration */
	FS_DECL_DQ,
	FS_DECL_SQ,
	FS_COMMENT,	/* after "<!--" */
	FS_CDATA,	/* after "<![CDATA[" */
	FS_PI,		/* after "<?" */
};

/* What framer_step found. */
#define STEP_NONE	0
#define STEP_FRAME	1	/* the unit just read ended a frame */
#define SNIFF_MORE	1	/* framer_sniff needs more bytes */

/* Buffers above this size shrink again once they hold little. */
#define FRAMER_SHRINK	(1u << 20)

struct mos_framer {
	enum mos_enc	 want;		/* as configured */
	enum mos_enc	 enc;		/* as decided; MOS_ENC_AUTO until then */
	size_t		 max_frame;
	size_t		 max_junk;

	uint8_t		*buf;
	size_t		 len;		/* bytes in buf */
	size_t		 cap;
	uint64_t	 base;		/* stream offset of buf[0] */
	uint64_t	 keep;		/* first stream offset still needed */

	uint64_t	 pos;		/* next byte to examine */
	uint64_t	 gap;		/* where the junk before the next frame began */
	uint64_t	 tag;		/* '<' of the markup being read */
	uint64_t	 frame;		/* '<' of the open frame */
	size_t		 depth;		/* open <mos> elements */
	enum framer_state state;
	int		 k;		/* progress in a name, keyword or terminator */
	bool		 is_mos;	/* the tag being read is named "mos" */
	bool		 sniffed;	/* encoding decided and checked */
	bool		 open;		/* a frame's "<mos" has been seen */
	bool		 dirty;		/* non-space bytes since gap */
	bool		 ready;		/* a complete frame waits for _next */
	uint64_t	 rstart;	/* the waiting frame */
	uint64_t	 rend;

	int		 err;		/* sticky */
	char		 errmsg[192];
	struct mos_framer_stats st;
};

static const char mos_name[] = "mos";
static const char cdata_open[] = "[CDATA[";

/* True for the XML whitespace characters. */
static inline bool
framer_is_space(unsigned int c)
{
	return c == 0x20 || c == 0x09 || c == 0x0a || c == 0x0d;
}

/* True for a character that may start an XML name (non-ASCII included). */
static inline bool
framer_is_name_start(unsigned int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
	    c == ':' || c >= 0x80;
}

/* True for a character that may continue an XML name. */
static inline bool
framer_is_name(unsigned int c)
{
	return framer_is_name_start(c) || (c >= '0' && c <= '9') || c == '-' ||
	    c == '.';
}

/* Record a sticky error with a one-line explanation. */
static int
framer_fail(struct mos_framer *f, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int
framer_fail(struct mos_framer *f, int err, const char *fmt, ...)
{
	va_list	ap;

	f->err = err;
	va_start(ap, fmt);
	vsnprintf(f->errmsg, sizeof f->errmsg, fmt, ap);
	va_end(ap);
	return err;
}

/* Apply limits, 0 meaning the default. */
void
mos_framer_set_limits(struct mos_framer *f, const struct mos_framer_limits *l)
{
	f->max_frame = MOS_FRAME_MAX_DEFAULT;
	f->max_junk = MOS_JUNK_MAX_DEFAULT;
	if (l != NULL && l->max_frame != 0)
		f->max_frame = l->max_frame;
	if (l != NULL && l->max_junk != 0)
		f->max_junk = l->max_junk;
}

/* A framer for one stream. */
struct mos_framer *
mos_framer_new(enum mos_enc enc, const struct mos_framer_limits *l)
{
	struct mos_framer	*f;

	if (enc != MOS_ENC_UTF16BE && enc != MOS_ENC_UTF8 && enc != MOS_ENC_AUTO)
		return NULL;
	if ((f = calloc(1, sizeof *f)) == NULL)
		return NULL;
	f->want = enc;
	f->enc = MOS_ENC_AUTO;
	f->state = FS_TEXT;
	mos_framer_set_limits(f, l);
	return f;
}

/* Free a framer; NULL is fine. */
void
mos_framer_free(struct mos_framer *f)
{
	if (f == NULL)
		return;
	free(f->buf);
	free(f);
}

/*
 * Make room for n more bytes. Bytes before keep are dropped only when the
 * buffer is full and the bytes still needed fill at most half of it, so every
 * byte is moved a bounded number of times (amortised O(1) per byte fed).
 */
static int
framer_reserve(struct mos_framer *f, size_t n)
{
	size_t	 drop = (size_t)(f->keep - f->base);
	size_t	 live = f->len - drop;
	size_t	 ncap;
	uint8_t	*nb;
	bool	 shrink;

	if (n > SIZE_MAX / 4 || live > SIZE_MAX / 4 - n)
		return -1;
	/* A big buffer (after a big frame) that now holds little shrinks. */
	shrink = f->cap > FRAMER_SHRINK && live + n <= f->cap / 8;
	if (n <= f->cap - f->len && !shrink)
		return 0;
	if (live + n <= f->cap / 2 && !shrink) {
		memmove(f->buf, f->buf + drop, live);
	} else {
		ncap = 2 * (live + n);
		if (ncap < 4096)
			ncap = 4096;
		if ((nb = malloc(ncap)) == NULL)
			return -1;
		if (live != 0)
			memcpy(nb, f->buf + drop, live);
		free(f->buf);
		f->buf = nb;
		f->cap = f->st.buffer = ncap;
	}
	f->st.moved += live;
	f->base = f->keep;
	f->len = live;
	return 0;
}

/* Append bytes; after an error they are dropped (the error stays). */
int
mos_framer_feed(struct mos_framer *f, const void *p, size_t n)
{
	if (f->err != 0 || n == 0)
		return 0;
	if (framer_reserve(f, n) == -1)
		return framer_fail(f, MOS_FRAME_ERR_NOMEM, "out of memory "
		    "buffering %zu bytes", n);
	memcpy(f->buf + f->len, p, n);
	f->len += n;
	f->st.fed += n;
	return 0;
}

/* The byte at stream offset off (which must be held). */
static inline unsigned int
framer_byte(const struct mos_framer *f, uint64_t off)
{
	return f->buf[off - f->base];
}

/* One past the last byte held. */
static inline uint64_t
framer_end(const struct mos_framer *f)
{
	return f->base + f->len;
}

/*
 * Look at the first bytes: decide the encoding in AUTO mode, refuse a stream
 * that plainly is in another encoding. Returns 0 when done, SNIFF_MORE when
 * more bytes are needed, or an error.
 */
static int
framer_sniff(struct mos_framer *f)
{
	uint64_t	 end = framer_end(f), p = f->pos, bom = 0;
	enum mos_enc	 seen;
	bool		 le = false, sure = false;
	unsigned int	 b0, b1;

	if (p == 0) {
		/* A byte order mark, or the start of one. */
		b0 = end > 0 ? framer_byte(f, 0) : 0x100;
		b1 = end > 1 ? framer_byte(f, 1) : 0x100;
		if (end == 0 || (end < 2 && (b0 == 0xfe || b0 == 0xff)) ||
		    (end < 3 && b0 == 0xef && (end < 2 || b1 == 0xbb)))
			return SNIFF_MORE;
		if (b0 == 0xfe && b1 == 0xff) {
			seen = MOS_ENC_UTF16BE, sure = true, bom = 2;
			goto decided;
		}
		if (b0 == 0xff && b1 == 0xfe)
			return framer_fail(f, MOS_FRAME_ERR_ENCODING,
			    "stream starts with a UTF-16LE byte order mark; "
			    "MOS uses UTF-16BE (or UTF-8)");
		if (b0 == 0xef && b1 == 0xbb && framer_byte(f, 2) == 0xbf) {
			seen = MOS_ENC_UTF8, sure = true, bom = 3;
			goto decided;
		}
	}
	for (;;) {
		if (p - f->gap > f->max_junk)
			return framer_fail(f, MOS_FRAME_ERR_JUNK, "more than "
			    "%zu bytes of whitespace before the first <mos>",
			    f->max_junk);
		if (p >= end)
			break;
		if ((b0 = framer_byte(f, p)) == 0x00) {
			seen = MOS_ENC_UTF16BE, sure = true;
			goto decided;
		}
		if (p + 1 >= end)
			break;
		b1 = framer_byte(f, p + 1);
		if (!framer_is_space(b0) || b1 == 0x00) {
			seen = MOS_ENC_UTF8;
			le = b1 == 0x00;
			sure = b0 == '<';
			goto decided;
		}
		p++;
	}
	f->pos = p;
	return SNIFF_MORE;

decided:
	if (le && (sure || f->want == MOS_ENC_AUTO))
		return framer_fail(f, MOS_FRAME_ERR_ENCODING, "stream looks "
		    "like UTF-16LE (byte %02x then 00 at offset %llu); MOS "
		    "uses UTF-16BE (or UTF-8)", framer_byte(f, p),
		    (unsigned long long)p);
	if (f->want == MOS_ENC_AUTO)
		f->enc = seen;
	else if (sure && !le && seen != f->want)
		return framer_fail(f, MOS_FRAME_ERR_ENCODING, "stream is %s "
		    "but the link is set to %s", mos_enc_name(seen),
		    mos_enc_name(f->want));
	else
		f->enc = f->want;
	/*
	 * UTF-16BE lexing restarts at the BOM end to keep units aligned; in
	 * UTF-8 the bytes already looked at were whitespace (or the BOM).
	 */
	if (f->enc == MOS_ENC_UTF16BE)
		p = bom;
	else if (p < bom)
		p = bom;
	f->pos = f->keep = p;
	f->sniffed = true;
	return 0;
}

/* Close a start tag; self is true for "/>". */
static int
framer_stag_close(struct mos_framer *f, bool self)
{
	f->state = FS_TEXT;
	if (!f->is_mos)
		return STEP_NONE;
	if (!self) {
		f->depth++;
		return STEP_NONE;
	}
	return f->depth == 0 ? STEP_FRAME : STEP_NONE;
}

/* Close an end tag. */
static int
framer_etag_close(struct mos_framer *f)
{
	f->state = FS_TEXT;
	if (!f->is_mos || f->depth == 0)
		return STEP_NONE;
	return --f->depth == 0 ? STEP_FRAME : STEP_NONE;
}

/* A tag name ended: note whether it is "mos"; a start tag may open a frame. */
static void
framer_name_end(struct mos_framer *f, bool start)
{
	f->is_mos = f->k == 3;
	if (start && f->is_mos && f->depth == 0 && !f->open) {
		f->open = true;
		f->frame = f->tag;
	}
}

/* Advance the name match: k counts the letters of "mos" seen, -1 = other. */
static inline void
framer_name_char(struct mos_framer *f, unsigned int c)
{
	if (f->k >= 0 && f->k < 3 && c == (unsigned char)mos_name[f->k])
		f->k++;
	else
		f->k = -1;
}

/* One unit inside <!...>, after the keyword test failed. */
static void
framer_decl(struct mos_framer *f, unsigned int c)
{
	if (c == '"')
		f->state = FS_DECL_DQ;
	else if (c == '\'')
		f->state = FS_DECL_SQ;
	else if (c == '>')
		f->state = FS_TEXT;
	else
		f->state = FS_DECL;
}

/* The unit after '<' (or a '<' that restarts a tag). */
static void
framer_lt(struct mos_framer *f, unsigned int c)
{
	f->k = 0;
	if (c == '/')
		f->state = FS_ETAG_NAME;
	else if (c == '!')
		f->state = FS_BANG;
	else if (c == '?')
		f->state = FS_PI;
	else if (c == '<')
		f->tag = f->pos;
	else if (framer_is_name_start(c)) {
		f->state = FS_STAG_NAME;
		f->k = c == 'm' ? 1 : -1;
	} else
		f->state = FS_TEXT;
}

/* Markup inside a start or end tag. */
static int
framer_step_tag(struct mos_framer *f, unsigned int c)
{
	switch (f->state) {
	case FS_STAG_NAME:
		if (framer_is_name(c)) {
			framer_name_char(f, c);
			return STEP_NONE;
		}
		if (c == '<') {
			f->tag = f->pos;
			f->state = FS_LT;
			return STEP_NONE;
		}
		if (!framer_is_space(c) && c != '>' && c != '/')
			f->k = -1;
		framer_name_end(f, true);
		/* FALLTHROUGH */
	case FS_STAG:
	case FS_STAG_SLASH:
		/* "/>" closes an empty element; a '/' elsewhere does not. */
		if (c == '>')
			return framer_stag_close(f, f->state == FS_STAG_SLASH);
		f->state = c == '/' ? FS_STAG_SLASH : c == '"' ? FS_STAG_DQ :
		    c == '\'' ? FS_STAG_SQ : FS_STAG;
		return STEP_NONE;
	case FS_STAG_DQ:
		if (c == '"')
			f->state = FS_STAG;
		return STEP_NONE;
	case FS_STAG_SQ:
		if (c == '\'')
			f->state = FS_STAG;
		return STEP_NONE;
	case FS_ETAG_NAME:
		if (framer_is_name(c)) {
			framer_name_char(f, c);
			return STEP_NONE;
		}
		if (c == '<') {
			f->tag = f->pos;
			f->state = FS_LT;
			return STEP_NONE;
		}
		if (!framer_is_space(c) && c != '>')
			f->k = -1;
		framer_name_end(f, false);
		f->state = FS_ETAG;
		/* FALLTHROUGH */
	case FS_ETAG:
		if (c == '>')
			return framer_etag_close(f);
		return STEP_NONE;
	default:
		return STEP_NONE;
	}
}

/* Comments, CDATA, PIs and declarations: skipped, never counted. */
static void
framer_step_skip(struct mos_framer *f, unsigned int c)
{
	switch (f->state) {
	case FS_BANG:
		if (c == '-')
			f->state = FS_BANG_DASH;
		else if (c == '[') {
			f->state = FS_BANG_CDATA;
			f->k = 1;
		} else
			framer_decl(f, c);
		break;
	case FS_BANG_DASH:
		if (c == '-') {
			f->state = FS_COMMENT;
			f->k = 0;
		} else
			framer_decl(f, c);
		break;
	case FS_BANG_CDATA:
		if (c != (unsigned char)cdata_open[f->k])
			framer_decl(f, c);
		else if (++f->k == (int)sizeof cdata_open - 1) {
			f->state = FS_CDATA;
			f->k = 0;
		}
		break;
	case FS_DECL:
		framer_decl(f, c);
		break;
	case FS_DECL_DQ:
		if (c == '"')
			f->state = FS_DECL;
		break;
	case FS_DECL_SQ:
		if (c == '\'')
			f->state = FS_DECL;
		break;
	case FS_COMMENT:
	case FS_CDATA:
		/* "-->" and "]]>": count the dashes or brackets before '>'. */
		if (c == (f->state == FS_COMMENT ? '-' : ']')) {
			if (f->k < 2)
				f->k++;
		} else if (c == '>' && f->k == 2)
			f->state = FS_TEXT;
		else
			f->k = 0;
		break;
	case FS_PI:
		if (c == '>' && f->k == 1)
			f->state = FS_TEXT;
		else
			f->k = c == '?';
		break;
	default:
		break;
	}
}

/* Feed one code unit (at f->pos) to the lexer. */
static inline int
framer_step(struct mos_framer *f, unsigned int c)
{
	switch (f->state) {
	case FS_TEXT:
		if (c == '<') {
			f->tag = f->pos;
			f->state = FS_LT;
		}
		return STEP_NONE;
	case FS_LT:
		framer_lt(f, c);
		return STEP_NONE;
	case FS_STAG_NAME:
	case FS_STAG:
	case FS_STAG_SLASH:
	case FS_STAG_DQ:
	case FS_STAG_SQ:
	case FS_ETAG_NAME:
	case FS_ETAG:
		return framer_step_tag(f, c);
	default:
		framer_step_skip(f, c);
		return STEP_NONE;
	}
}

/*
 * In character data of an open frame: the offset of the next '<' unit before
 * end, or the end of the whole units before it.
 */
static inline uint64_t
framer_find_lt(const struct mos_framer *f, uint64_t from, uint64_t end)
{
	const uint8_t	*s = f->buf + (from - f->base), *p, *q;
	size_t		 n = (size_t)(end - from);

	if (f->enc == MOS_ENC_UTF8) {
		q = memchr(s, '<', n);
		return q != NULL ? from + (uint64_t)(q - s) : from + n;
	}
	n &= ~(size_t)1;
	for (p = s; p < s + n; p = q + 1) {
		/* A '<' unit is 00 3C: the 3C sits at an odd distance from s. */
		if ((q = memchr(p, '<', (size_t)(s + n - p))) == NULL)
			break;
		if (((size_t)(q - s) & 1) == 1 && q[-1] == 0x00)
			return from + (uint64_t)(q - 1 - s);
	}
	return from + n;
}

/* Check the caps at stream offset at; remember what must be kept. */
static int
framer_check(struct mos_framer *f, uint64_t at)
{
	uint64_t	start;

	if (f->open) {
		if (at - f->frame > f->max_frame)
			return framer_fail(f, MOS_FRAME_ERR_TOO_BIG, "frame at "
			    "offset %llu exceeds %zu bytes",
			    (unsigned long long)f->frame, f->max_frame);
		f->keep = f->frame;
		return 0;
	}
	/* A '<' that may still become "<mos" is not junk yet. */
	if (f->state == FS_LT || (f->state == FS_STAG_NAME && f->k >= 0))
		start = f->tag;
	else
		start = at;
	if (start - f->gap > f->max_junk)
		return framer_fail(f, MOS_FRAME_ERR_JUNK, "more than %zu bytes "
		    "before <mos> (from offset %llu)", f->max_junk,
		    (unsigned long long)f->gap);
	f->keep = start;
	return 0;
}

/* A frame ended just before offset at. */
static int
framer_done(struct mos_framer *f, uint64_t at)
{
	f->open = false;
	if (at - f->frame > f->max_frame)
		return framer_fail(f, MOS_FRAME_ERR_TOO_BIG, "frame at offset "
		    "%llu exceeds %zu bytes", (unsigned long long)f->frame,
		    f->max_frame);
	f->ready = true;
	f->rstart = f->frame;
	f->rend = at;
	f->gap = f->keep = at;
	f->dirty = false;
	return MOS_FRAME_READY;
}

/* The code unit at stream offset at. */
static inline unsigned int
framer_unit(const struct mos_framer *f, uint64_t at, uint64_t us)
{
	const uint8_t	*p = f->buf + (at - f->base);

	return us == 2 ? (unsigned int)p[0] << 8 | p[1] : p[0];
}

/*
 * Inside an open frame: lex up to the end of the bytes held or the frame
 * cap, whichever comes first, with no per-unit bookkeeping.
 */
static inline int
framer_scan_open(struct mos_framer *f, uint64_t end, uint64_t us)
{
	uint64_t	stop = end, start = f->pos;
	int		r = STEP_NONE;

	if (f->max_frame < stop - f->frame)
		stop = f->frame + f->max_frame;
	while (f->pos + us <= stop) {
		if (f->state == FS_TEXT) {
			f->pos = framer_find_lt(f, f->pos, stop);
			if (f->pos + us > stop)
				break;
		}
		r = framer_step(f, framer_unit(f, f->pos, us));
		f->pos += us;
		if (r == STEP_FRAME)
			break;
	}
	f->st.scanned += f->pos - start;
	if (r == STEP_FRAME)
		return framer_done(f, f->pos);
	/* The next unit is held but would not fit under the cap. */
	if (f->pos + us <= end)
		return framer_fail(f, MOS_FRAME_ERR_TOO_BIG, "frame at offset "
		    "%llu exceeds %zu bytes", (unsigned long long)f->frame,
		    f->max_frame);
	f->keep = f->frame;
	return MOS_FRAME_MORE;
}

/* Between frames: one unit at a time, counting junk against its cap. */
static inline int
framer_scan_junk(struct mos_framer *f, uint64_t end, uint64_t us)
{
	unsigned int	c;
	int		r;

	while (f->pos + us <= end && !f->open) {
		c = framer_unit(f, f->pos, us);
		if (!framer_is_space(c))
			f->dirty = true;
		r = framer_step(f, c);
		f->pos += us;
		f->st.scanned += us;
		if (r == STEP_FRAME)
			return framer_done(f, f->pos);
		if ((r = framer_check(f, f->pos)) != 0)
			return r;
	}
	return MOS_FRAME_MORE;
}

/* Scan the bytes held until a frame ends, more are needed, or an error. */
static int
framer_scan(struct mos_framer *f)
{
	uint64_t	end = framer_end(f);
	uint64_t	us;
	int		r;

	if (f->ready)
		return MOS_FRAME_READY;
	if (!f->sniffed && (r = framer_sniff(f)) != 0)
		return r == SNIFF_MORE ? MOS_FRAME_MORE : r;
	us = f->enc == MOS_ENC_UTF16BE ? 2 : 1;
	while (f->pos + us <= end) {
		if (f->open)
			r = us == 2 ? framer_scan_open(f, end, 2) :
			    framer_scan_open(f, end, 1);
		else
			r = us == 2 ? framer_scan_junk(f, end, 2) :
			    framer_scan_junk(f, end, 1);
		if (r != MOS_FRAME_MORE || !f->open)
			return r;
	}
	return MOS_FRAME_MORE;
}

/* The next complete frame, MOS_FRAME_MORE, or the sticky error. */
int
mos_framer_next(struct mos_framer *f, struct mos_frame *out)
{
	int	r;

	if (f->err != 0)
		return f->err;
	if ((r = framer_scan(f)) != MOS_FRAME_READY)
		return r;
	out->data = f->buf + (f->rstart - f->base);
	out->len = (size_t)(f->rend - f->rstart);
	out->enc = f->enc;
	out->offset = f->rstart;
	f->ready = false;
	f->st.frames++;
	return MOS_FRAME_READY;
}

/* True if every byte held from keep on is ASCII whitespace. */
static bool
framer_held_blank(const struct mos_framer *f)
{
	uint64_t	o;

	for (o = f->keep; o < framer_end(f); o++)
		if (!framer_is_space(framer_byte(f, o)))
			return false;
	return true;
}

/*
 * End of stream: 0 when nothing but whitespace is pending, MOS_FRAME_READY
 * when a complete frame still waits for mos_framer_next, else an error
 * (which then sticks).
 */
int
mos_framer_end(struct mos_framer *f)
{
	int	r;

	if (f->err != 0)
		return f->err;
	if ((r = framer_scan(f)) == MOS_FRAME_READY || r < 0)
		return r;
	if (!f->sniffed) {
		if (framer_held_blank(f))
			return 0;
		return framer_fail(f, MOS_FRAME_ERR_TRUNCATED, "stream ended "
		    "with %zu bytes and no <mos>", mos_framer_pending(f));
	}
	if (f->open)
		return framer_fail(f, MOS_FRAME_ERR_TRUNCATED, "stream ended "
		    "inside the frame that starts at offset %llu (%llu bytes, "
		    "no balancing </mos>)", (unsigned long long)f->frame,
		    (unsigned long long)(framer_end(f) - f->frame));
	if (f->pos != framer_end(f))
		return framer_fail(f, MOS_FRAME_ERR_ODD, "stream ended on an "
		    "odd byte at offset %llu (UTF-16BE needs whole code units)",
		    (unsigned long long)f->pos);
	if (f->dirty)
		return framer_fail(f, MOS_FRAME_ERR_TRUNCATED, "stream ended "
		    "with bytes that are not a frame (from offset %llu)",
		    (unsigned long long)f->gap);
	return 0;
}

/* True once a frame's "<mos" (and the character after it) has been seen. */
bool
mos_framer_in_frame(const struct mos_framer *f)
{
	return f->open;
}

/* Bytes held: not yet handed out as a frame nor skipped. */
size_t
mos_framer_pending(const struct mos_framer *f)
{
	return (size_t)(framer_end(f) - f->keep);
}

/* The encoding in use; MOS_ENC_AUTO until the first bytes decided it. */
enum mos_enc
mos_framer_encoding(const struct mos_framer *f)
{
	return f->enc;
}

/* Counters for tests and metrics. */
void
mos_framer_stats(const struct mos_framer *f, struct mos_framer_stats *st)
{
	*st = f->st;
}

/* The sticky error in one line with its offset, or "" when there is none. */
const char *
mos_framer_errmsg(const struct mos_framer *f)
{
	return f->err != 0 ? f->errmsg : "";
}

/* A status of mos_framer_next/_end as text. */
const char *
mos_frame_strerror(int status)
{
	switch (status) {
	case MOS_FRAME_READY:
		return "frame ready";
	case MOS_FRAME_MORE:
		return "need more bytes";
	case MOS_FRAME_ERR_TOO_BIG:
		return "frame exceeds the size limit";
	case MOS_FRAME_ERR_JUNK:
		return "too many bytes before <mos>";
	case MOS_FRAME_ERR_TRUNCATED:
		return "stream ended inside a frame or with bytes that are "
		    "not a frame";
	case MOS_FRAME_ERR_ODD:
		return "stream ended on an odd byte (UTF-16BE)";
	case MOS_FRAME_ERR_ENCODING:
		return "bytes are not in the link's encoding";
	case MOS_FRAME_ERR_NOMEM:
		return "out of memory";
	default:
		return "unknown framer status";
	}
}

/* Decode one code point at s[*i] (n bytes); -1 if malformed. */
static int32_t
recode_get(const uint8_t *s, size_t n, size_t *i, enum mos_enc from)
{
	uint32_t	c, d;
	size_t		k, len;

	if (from == MOS_ENC_UTF16BE) {
		if (n - *i < 2)
			return -1;
		c = (uint32_t)s[*i] << 8 | s[*i + 1];
		*i += 2;
		if (c < 0xd800 || c > 0xdfff)
			return (int32_t)c;
		if (c > 0xdbff || n - *i < 2)
			return -1;
		d = (uint32_t)s[*i] << 8 | s[*i + 1];
		if (d < 0xdc00 || d > 0xdfff)
			return -1;
		*i += 2;
		return (int32_t)(0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00));
	}
	c = s[*i];
	if (c < 0x80) {
		(*i)++;
		return (int32_t)c;
	}
	if (c >= 0xc2 && c <= 0xdf)
		len = 2, c &= 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3, c &= 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4, c &= 0x07;
	else
		return -1;
	if (n - *i < len)
		return -1;
	for (k = 1; k < len; k++) {
		if ((s[*i + k] & 0xc0) != 0x80)
			return -1;
		c = c << 6 | (s[*i + k] & 0x3f);
	}
	/* Overlong forms, surrogates and values past U+10FFFF. */
	if ((len == 3 && c < 0x800) || (len == 4 && c < 0x10000) ||
	    (c >= 0xd800 && c <= 0xdfff) || c > 0x10ffff)
		return -1;
	*i += len;
	return (int32_t)c;
}

/* Encode code point c at p; returns the bytes written. */
static size_t
recode_put(uint8_t *p, uint32_t c, enum mos_enc to)
{
	if (to == MOS_ENC_UTF16BE) {
		if (c < 0x10000) {
			p[0] = (uint8_t)(c >> 8), p[1] = (uint8_t)c;
			return 2;
		}
		c -= 0x10000;
		p[0] = (uint8_t)(0xd8 | c >> 18), p[1] = (uint8_t)(c >> 10);
		p[2] = (uint8_t)(0xdc | (c >> 8 & 0x03)), p[3] = (uint8_t)c;
		return 4;
	}
	if (c < 0x80) {
		p[0] = (uint8_t)c;
		return 1;
	}
	if (c < 0x800) {
		p[0] = (uint8_t)(0xc0 | c >> 6), p[1] = (uint8_t)(0x80 | (c & 0x3f));
		return 2;
	}
	if (c < 0x10000) {
		p[0] = (uint8_t)(0xe0 | c >> 12);
		p[1] = (uint8_t)(0x80 | (c >> 6 & 0x3f));
		p[2] = (uint8_t)(0x80 | (c & 0x3f));
		return 3;
	}
	p[0] = (uint8_t)(0xf0 | c >> 18), p[1] = (uint8_t)(0x80 | (c >> 12 & 0x3f));
	p[2] = (uint8_t)(0x80 | (c >> 6 & 0x3f)), p[3] = (uint8_t)(0x80 | (c & 0x3f));
	return 4;
}

/*
 * Re-encode text between UTF-8 and UTF-16BE, appending to out. Invalid input
 * (bad UTF-8, lone surrogates, an odd UTF-16BE length) is refused with its
 * offset in errbuf; nothing is appended then.
 */
int
mos_recode(const void *in, size_t len, enum mos_enc from, enum mos_enc to,
    struct mos_buf *out, char *errbuf, size_t errlen)
{
	const uint8_t	*s = in;
	size_t		 i = 0, start, at, need, ncap;
	uint8_t		*nb;
	int32_t		 c;

	if ((from != MOS_ENC_UTF8 && from != MOS_ENC_UTF16BE) ||
	    (to != MOS_ENC_UTF8 && to != MOS_ENC_UTF16BE)) {
		snprintf(errbuf, errlen, "recode: encodings must be utf8 or "
		    "utf16be");
		return -1;
	}
	/* UTF-8 to UTF-16BE at most doubles; the other way grows by 3/2. */
	if (len > (SIZE_MAX - out->len) / 2 - 4) {
		snprintf(errbuf, errlen, "recode: input too large");
		return -1;
	}
	need = out->len + 2 * len + 4;
	if (need > out->cap) {
		/* Grow geometrically: appending many pieces stays linear. */
		ncap = out->cap > SIZE_MAX / 4 ? need : 2 * out->cap;
		if (ncap < need)
			ncap = need < 64 ? 64 : need;
		if ((nb = realloc(out->data, ncap)) == NULL) {
			snprintf(errbuf, errlen, "recode: out of memory");
			return -1;
		}
		out->data = nb;
		out->cap = ncap;
	}
	at = out->len;
	while (i < len) {
		start = i;
		if ((c = recode_get(s, len, &i, from)) < 0) {
			snprintf(errbuf, errlen, "invalid %s at byte %zu",
			    from == MOS_ENC_UTF8 ? "UTF-8" : "UTF-16BE", start);
			return -1;
		}
		at += recode_put(out->data + at, (uint32_t)c, to);
	}
	out->len = at;
	return 0;
}
