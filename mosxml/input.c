/*
 * Input handling shared by the parser: MOS numbers (decimal or hex),
 * UTF-16BE to UTF-8 in one linear pass, the byte-level envelope scan used
 * when a frame fails, and per-thread scratch (buffers and the libxml2
 * parser context) reused between frames.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/parser.h>

#include "mosxml/mosxml.h"
#include "mosxml/schema.h"

#define SCRATCH_KEEP	(4u << 20)	/* per-thread buffers kept between frames */

static pthread_key_t	scratch_key;
static pthread_once_t	scratch_once = PTHREAD_ONCE_INIT;
static int		scratch_ok;

/*
 * A MOS number: decimal, or hex as 0xFF or xFF (SPEC-2.8.4 Numbers), an
 * optional '+', at most max. Returns 0 or -1.
 */
int
mos_parse_number(const char *s, uint64_t max, uint64_t *out)
{
	uint64_t	v = 0;
	int		base = 10, d, n = 0;

	if (*s == '+')
		s++;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
	} else if (s[0] == 'x' || s[0] == 'X') {
		base = 16;
		s++;
	}
	for (; *s != '\0'; s++, n++) {
		if (*s >= '0' && *s <= '9')
			d = *s - '0';
		else if (base == 16 && *s >= 'a' && *s <= 'f')
			d = *s - 'a' + 10;
		else if (base == 16 && *s >= 'A' && *s <= 'F')
			d = *s - 'A' + 10;
		else
			return -1;
		v = v * (uint64_t)base + (uint64_t)d;
		if (v > max)
			return -1;
	}
	if (n == 0)
		return -1;
	*out = v;
	return 0;
}

/*
 * UTF-16BE to UTF-8, linear, with an ASCII fast path. Bad input (odd
 * length, lone surrogates) is replaced by U+FFFD so that the envelope can
 * still be scanned; the return value says whether any was found.
 */
int
mos_utf16_to_utf8(const uint8_t *in, size_t len, char *out, size_t *outlen)
{
	const uint8_t	*p = in, *end = in + (len & ~(size_t)1);
	uint8_t		*o = (uint8_t *)out;
	uint32_t	 u, lo;
	uint64_t	 w;
	int		 bad = len & 1;

	while (p < end) {
		if (end - p >= 8) {
			memcpy(&w, p, 8);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
			if ((w & 0x80ff80ff80ff80ffULL) == 0) {
#else
			if ((w & 0xff80ff80ff80ff80ULL) == 0) {
#endif
				o[0] = p[1];
				o[1] = p[3];
				o[2] = p[5];
				o[3] = p[7];
				o += 4;
				p += 8;
				continue;
			}
		}
		u = (uint32_t)p[0] << 8 | p[1];
		p += 2;
		if (u < 0x80) {
			*o++ = (uint8_t)u;
			continue;
		}
		if (u < 0x800) {
			*o++ = (uint8_t)(0xc0 | u >> 6);
			*o++ = (uint8_t)(0x80 | (u & 0x3f));
			continue;
		}
		if (u >= 0xd800 && u <= 0xdfff) {
			lo = end - p >= 2 ? ((uint32_t)p[0] << 8 | p[1]) : 0;
			if (u >= 0xdc00 || lo < 0xdc00 || lo > 0xdfff) {
				bad = 1;
				u = 0xfffd;
			} else {
				p += 2;
				u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
				*o++ = (uint8_t)(0xf0 | u >> 18);
				*o++ = (uint8_t)(0x80 | ((u >> 12) & 0x3f));
				*o++ = (uint8_t)(0x80 | ((u >> 6) & 0x3f));
				*o++ = (uint8_t)(0x80 | (u & 0x3f));
				continue;
			}
		}
		*o++ = (uint8_t)(0xe0 | u >> 12);
		*o++ = (uint8_t)(0x80 | ((u >> 6) & 0x3f));
		*o++ = (uint8_t)(0x80 | (u & 0x3f));
	}
	*o = '\0';
	*outlen = (size_t)(o - (uint8_t *)out);
	return bad ? -1 : 0;
}

/*
 * A character reference at s[0..len) ("&#65;", "&#x41;"): its length, its
 * code point in *cp; 0 if there is none or it is no character.
 */
static size_t
env_charref(const char *s, size_t len, uint32_t *cp)
{
	uint32_t	v = 0, d;
	size_t		i = 2;
	bool		hex;

	if (len < 4 || s[0] != '&' || s[1] != '#')
		return 0;
	if ((hex = s[2] == 'x'))
		i++;
	for (; i < len && s[i] != ';'; i++) {
		if (s[i] >= '0' && s[i] <= '9')
			d = (uint32_t)(s[i] - '0');
		else if (hex && s[i] >= 'a' && s[i] <= 'f')
			d = (uint32_t)(s[i] - 'a' + 10);
		else if (hex && s[i] >= 'A' && s[i] <= 'F')
			d = (uint32_t)(s[i] - 'A' + 10);
		else
			return 0;
		v = v * (hex ? 16 : 10) + d;
		if (v > 0x10ffff)
			return 0;
	}
	if (i == len || i == (hex ? 3u : 2u) || v == 0 ||
	    (v >= 0xd800 && v <= 0xdfff))
		return 0;
	*cp = v;
	return i + 1;
}

/* Code point cp as UTF-8 into o (room for 4); its length. */
static size_t
env_utf8(uint32_t cp, char *o)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xc0 | cp >> 6);
		o[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xe0 | cp >> 12);
		o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		o[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (char)(0xf0 | cp >> 18);
	o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	o[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/*
 * Decode the five predefined entities and character references of
 * s[0..len) into dst (size n), as the parser reads them.
 */
static void
env_copy(char *dst, size_t n, const char *s, size_t len)
{
	static const struct {
		const char	*ent;
		char		 c;
	} ents[] = { { "&amp;", '&' }, { "&lt;", '<' }, { "&gt;", '>' },
	    { "&quot;", '"' }, { "&apos;", '\'' } };
	char		u[4];
	uint32_t	cp;
	size_t		i, j = 0, k, el, ul;

	for (i = 0; i < len && j + 1 < n; i++) {
		if ((el = env_charref(s + i, len - i, &cp)) != 0) {
			ul = env_utf8(cp, u);
			if (j + ul >= n)
				break;
			memcpy(dst + j, u, ul);
			j += ul;
			i += el - 1;
			continue;
		}
		dst[j] = s[i];
		for (k = 0; s[i] == '&' && k < 5; k++) {
			el = strlen(ents[k].ent);
			if (len - i >= el && memcmp(s + i, ents[k].ent, el) == 0) {
				dst[j] = ents[k].c;
				i += el - 1;
				break;
			}
		}
		j++;
	}
	dst[j] = '\0';
}

/* Record one child of <mos> found by the byte scan. */
static void
env_child(struct mos_envelope *env, const char *name, size_t nlen,
    const char *text, size_t tlen)
{
	char		 buf[64];
	const char	*s;
	uint64_t	 v;

	if (nlen == 5 && memcmp(name, "mosID", 5) == 0 && !env->have_mos_id) {
		env_copy(env->mos_id, sizeof env->mos_id, text, tlen);
		env->have_mos_id = true;
	} else if (nlen == 5 && memcmp(name, "ncsID", 5) == 0 &&
	    !env->have_ncs_id) {
		env_copy(env->ncs_id, sizeof env->ncs_id, text, tlen);
		env->have_ncs_id = true;
	} else if (nlen == 9 && memcmp(name, "messageID", 9) == 0) {
		env_copy(buf, sizeof buf, text, tlen);
		for (s = buf; *s == ' ' || *s == '\t' || *s == '\r' ||
		    *s == '\n'; s++)
			;
		buf[strcspn(buf, " \t\r\n")] = '\0';
		if (!env->have_message_id && mos_parse_number(s, INT32_MAX, &v) == 0 &&
		    v >= 1) {
			env->message_id = (int32_t)v;
			env->have_message_id = true;
		}
	} else if (nlen < sizeof buf && (env->type_name[0] == '\0' ||
	    mos_type_from_name(env->type_name) == MOS_T_UNKNOWN)) {
		/* The first element, or the first known message name. */
		memcpy(buf, name, nlen);
		buf[nlen] = '\0';
		if (env->type_name[0] == '\0' ||
		    mos_type_from_name(buf) != MOS_T_UNKNOWN)
			memcpy(env->type_name, buf, nlen + 1);
	}
}

/* Skip past the first occurrence of pat in [p, end); end if none. */
static const char *
env_skip(const char *p, const char *end, const char *pat)
{
	size_t	n = strlen(pat);

	for (; p + n <= end; p++) {
		if (memcmp(p, pat, n) == 0)
			return p + n;
	}
	return end;
}

/*
 * A cheap byte-level scan of (possibly broken) UTF-8 XML for the envelope
 * and the message element name, so that a failed frame can be NACKed.
 */
void
mos_env_scan(const char *s, size_t len, struct mos_envelope *env)
{
	const char	*p = s, *end = s + len, *name, *t, *gt;
	size_t		 nlen;
	int		 depth = 0, self;

	while ((p = memchr(p, '<', (size_t)(end - p))) != NULL) {
		if (end - p >= 4 && memcmp(p, "<!--", 4) == 0) {
			p = env_skip(p + 4, end, "-->");
			continue;
		}
		if (end - p >= 9 && memcmp(p, "<![CDATA[", 9) == 0) {
			p = env_skip(p + 9, end, "]]>");
			continue;
		}
		if ((gt = memchr(p, '>', (size_t)(end - p))) == NULL)
			return;
		if (p[1] == '?' || p[1] == '!') {
			p = gt + 1;
			continue;
		}
		if (p[1] == '/') {
			if (--depth <= 0)
				return;
			p = gt + 1;
			continue;
		}
		name = p + 1;
		for (nlen = 0; name + nlen < gt && !strchr(" \t\r\n/",
		    name[nlen]); nlen++)
			;
		self = gt[-1] == '/';
		if (depth == 1) {
			t = self ? gt : memchr(gt, '<', (size_t)(end - gt));
			if (t == NULL)
				t = end;
			env_child(env, name, nlen, self ? gt : gt + 1,
			    self ? 0 : (size_t)(t - gt - 1));
		}
		if (!self)
			depth++;
		p = gt + 1;
	}
}

/* Free a thread's scratch buffers and parser context when it exits. */
static void
scratch_free(void *p)
{
	struct mos_scratch	*s = p;

	if (s == NULL)
		return;
	xmlFreeParserCtxt(s->xml);
	mos_buf_free(&s->utf8);
	mos_buf_free(&s->tb);
	free(s);
}

/* Create the thread key, once. */
static void
scratch_init(void)
{
	scratch_ok = pthread_key_create(&scratch_key, scratch_free) == 0;
}

/* Free this thread's scratch buffers and parser context now. */
void
mos_thread_release(void)
{
	pthread_once(&scratch_once, scratch_init);
	if (!scratch_ok)
		return;
	scratch_free(pthread_getspecific(scratch_key));
	pthread_setspecific(scratch_key, NULL);
}

/* This thread's scratch buffers, or NULL. */
struct mos_scratch *
mos_scratch_get(void)
{
	struct mos_scratch	*s;

	pthread_once(&scratch_once, scratch_init);
	if (!scratch_ok)
		return NULL;
	if ((s = pthread_getspecific(scratch_key)) != NULL)
		return s;
	if ((s = calloc(1, sizeof *s)) == NULL)
		return NULL;
	if (pthread_setspecific(scratch_key, s) != 0) {
		free(s);
		return NULL;
	}
	return s;
}

/* Hand buffers back, dropping any that grew too big to keep. */
void
mos_scratch_put(struct mos_scratch *s, struct mos_buf *utf8, struct mos_buf *tb)
{
	if (s == NULL || utf8->cap > SCRATCH_KEEP)
		mos_buf_free(utf8);
	if (s == NULL || tb->cap > SCRATCH_KEEP)
		mos_buf_free(tb);
	if (s != NULL) {
		s->utf8 = *utf8;
		s->tb = *tb;
		s->utf8.len = s->tb.len = 0;
	}
}
