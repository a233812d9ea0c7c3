/* Small helpers: allocation that cannot fail, clocks, strings, UTF-16. */
#include <ctype.h>
#include <endian.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gateway/gateway.h"

/* malloc or die: out of memory is fatal in the daemon. */
void *
xmalloc(size_t n)
{
	void	*p;

	if ((p = malloc(n == 0 ? 1 : n)) == NULL)
		fatalx("out of memory (%zu bytes)", n);
	return p;
}

/* calloc or die. */
void *
xcalloc(size_t n, size_t size)
{
	void	*p;

	if ((p = calloc(n == 0 ? 1 : n, size == 0 ? 1 : size)) == NULL)
		fatalx("out of memory (%zu x %zu bytes)", n, size);
	return p;
}

/* realloc of an array with overflow check, or die. */
void *
xreallocarray(void *old, size_t n, size_t size)
{
	void	*p;

	if (size != 0 && n > SIZE_MAX / size)
		fatalx("array too large (%zu x %zu)", n, size);
	if ((p = realloc(old, n * size == 0 ? 1 : n * size)) == NULL)
		fatalx("out of memory (%zu x %zu bytes)", n, size);
	return p;
}

/* strdup or die. */
char *
xstrdup(const char *s)
{
	char	*p;

	if ((p = strdup(s)) == NULL)
		fatalx("out of memory");
	return p;
}

/* strndup or die. */
char *
xstrndup(const char *s, size_t n)
{
	char	*p;

	if ((p = strndup(s, n)) == NULL)
		fatalx("out of memory");
	return p;
}

/* asprintf or die. */
int
xasprintf(char **ret, const char *fmt, ...)
{
	va_list	ap;
	int	n;

	va_start(ap, fmt);
	n = vasprintf(ret, fmt, ap);
	va_end(ap);
	if (n < 0)
		fatalx("out of memory");
	return n;
}

/* Log and exit: only for startup failures, OOM and broken invariants. */
void
fatalx(const char *fmt, ...)
{
	va_list	ap;
	char	buf[512];

	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	log_event(LL_ERROR, "fatal", "msg=%s", log_q(buf));
	fprintf(stderr, "mosgw: %s\n", buf);
	exit(1);
}

/* Copy with truncation, always NUL-terminated. */
void
util_strlcpy(char *dst, const char *src, size_t len)
{
	size_t	n;

	if (len == 0)
		return;
	n = strlen(src);
	if (n >= len)
		n = len - 1;
	memcpy(dst, src, n);
	dst[n] = '\0';
}

/* Wall clock in milliseconds since 1970. */
int64_t
util_now_ms(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Monotonic clock in milliseconds. */
int64_t
util_mono_ms(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Monotonic clock in microseconds. */
int64_t
util_mono_us(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/*
 * Start a thread that takes no signals (they stay with the loop thread);
 * 0 or the error number.
 */
int
util_thread_start(pthread_t *th, void *(*fn)(void *), void *arg)
{
	sigset_t	all, old;
	int		rc;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(th, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

/* Format ms since 1970 as ISO 8601 UTC with ms (one thread: a static cache). */
void
util_iso_ms(int64_t ms, char *buf, size_t len)
{
	static time_t	last = -1;
	static char	prefix[64];	/* "YYYY-MM-DDTHH:MM:SS" of `last` */
	struct tm	tm;
	time_t		t;
	int64_t		frac;

	frac = ms % 1000;
	if (frac < 0) {
		frac += 1000;
		ms -= 1000;
	}
	t = (time_t)(ms / 1000);
	if (t != last) {	/* one gmtime per second, not per log line */
		gmtime_r(&t, &tm);
		snprintf(prefix, sizeof prefix, "%04d-%02d-%02dT%02d:%02d:%02d",
		    tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		    tm.tm_min, tm.tm_sec);
		last = t;
	}
	snprintf(buf, len, "%s.%03dZ", prefix, (int)frac);
}

/*
 * Parse a duration into ms: a bare number of seconds ("30", "0.2"), or one or
 * more numbers each with a unit: ms, s, m, h, d, w ("500ms", "10s", "5m",
 * "24h", "7d", "1h30m", "1.5h"). Anything above 0 is at least 1 ms. 0, or -1
 * when the text is not a duration (or is longer than 100 years).
 */
int
util_parse_duration(const char *s, int64_t *ms)
{
	static const struct {
		const char	*unit;
		double		 ms;
	} units[] = {
		{ "ms", 1 }, { "s", 1000 }, { "m", 60000 }, { "h", 3600000 },
		{ "d", 86400000 }, { "w", 604800000 },
	};
	const char	*p = s;
	char		*end;
	double		 v, total = 0;
	size_t		 i, len = 0;

	if (*p == '\0')
		return -1;
	while (*p != '\0') {
		if (!isdigit((unsigned char)*p) && *p != '.')
			return -1;
		errno = 0;
		v = strtod(p, &end);
		if (end == p || errno != 0 || !isfinite(v) || v < 0 ||
		    strspn(p, "0123456789.") != (size_t)(end - p))
			return -1;
		if (*end == '\0' && p == s) {
			total = v * 1000;	/* a bare number: seconds */
			break;
		}
		for (i = 0; i < nitems(units); i++) {
			len = strlen(units[i].unit);
			if (strncmp(end, units[i].unit, len) == 0 &&
			    !isalpha((unsigned char)end[len]))
				break;
		}
		if (i == nitems(units))
			return -1;
		total += v * units[i].ms;
		p = end + len;
	}
	if (total > 100.0 * 365 * 86400000)
		return -1;
	*ms = llround(total);
	if (*ms == 0 && total > 0)
		*ms = 1;
	return 0;
}

/*
 * Parse a time for the command line: ms since 1970 (all digits), or ISO 8601
 * "YYYY-MM-DD[THH:MM[:SS[.mmm]]][Z]" taken as UTC.
 */
int
util_parse_iso_ms(const char *s, int64_t *out)
{
	struct tm	 tm;
	const char	*p;
	char		*end;
	int		 ms = 0, n = 0;

	if (*s == '\0')
		return -1;
	if (strspn(s, "0123456789") == strlen(s)) {
		errno = 0;
		*out = strtoll(s, &end, 10);
		return errno == 0 ? 0 : -1;
	}
	memset(&tm, 0, sizeof tm);
	if (sscanf(s, "%4d-%2d-%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
	    &n) != 3)
		return -1;
	p = s + n;
	if (*p == 'T' || *p == ' ') {
		n = 0;
		if (sscanf(p + 1, "%2d:%2d%n", &tm.tm_hour, &tm.tm_min,
		    &n) != 2)
			return -1;
		p += 1 + n;
		if (*p == ':') {
			n = 0;
			if (sscanf(p + 1, "%2d%n", &tm.tm_sec, &n) != 1)
				return -1;
			p += 1 + n;
			if (*p == '.' || *p == ',') {
				n = 0;
				if (sscanf(p + 1, "%3d%n", &ms, &n) != 1)
					return -1;
				while (n++ < 3)
					ms *= 10;
				p += 1 + strspn(p + 1, "0123456789");
			}
		}
	}
	if (*p == 'Z')
		p++;
	if (*p != '\0' || tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 ||
	    tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59 ||
	    tm.tm_sec > 60)
		return -1;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	*out = (int64_t)timegm(&tm) * 1000 + ms;
	return 0;
}

/* The name of a MOS port. */
const char *
gw_port_name(enum gw_port p)
{
	switch (p) {
	case GW_PORT_LOWER:
		return "lower";
	case GW_PORT_UPPER:
		return "upper";
	case GW_PORT_QUERY:
		return "query";
	}
	return "?";
}

/* A MOS port from its name. */
int
gw_port_parse(const char *s, enum gw_port *p)
{
	if (strcmp(s, "lower") == 0)
		*p = GW_PORT_LOWER;
	else if (strcmp(s, "upper") == 0)
		*p = GW_PORT_UPPER;
	else if (strcmp(s, "query") == 0)
		*p = GW_PORT_QUERY;
	else
		return -1;
	return 0;
}

/* Append n bytes. */
void
sbuf_add(struct sbuf *sb, const char *s, size_t n)
{
	size_t	cap;

	if (sb->len + n + 1 > sb->cap) {
		cap = sb->cap == 0 ? 256 : sb->cap;
		while (cap < sb->len + n + 1)
			cap *= 2;
		sb->s = xreallocarray(sb->s, cap, 1);
		sb->cap = cap;
	}
	memcpy(sb->s + sb->len, s, n);
	sb->len += n;
	sb->s[sb->len] = '\0';
}

/* Append a string. */
void
sbuf_puts(struct sbuf *sb, const char *s)
{
	sbuf_add(sb, s, strlen(s));
}

/* Append formatted text. */
void
sbuf_printf(struct sbuf *sb, const char *fmt, ...)
{
	va_list	 ap;
	char	*s;
	int	 n;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		fatalx("out of memory");
	sbuf_add(sb, s, (size_t)n);
	free(s);
}

/* Append s as a JSON string with quotes (UTF-8 passed through). */
void
sbuf_json_str(struct sbuf *sb, const char *s)
{
	const unsigned char	*p;
	char			 esc[8];

	sbuf_add(sb, "\"", 1);
	for (p = (const unsigned char *)s; *p != '\0'; p++) {
		switch (*p) {
		case '"':
			sbuf_add(sb, "\\\"", 2);
			break;
		case '\\':
			sbuf_add(sb, "\\\\", 2);
			break;
		case '\n':
			sbuf_add(sb, "\\n", 2);
			break;
		case '\r':
			sbuf_add(sb, "\\r", 2);
			break;
		case '\t':
			sbuf_add(sb, "\\t", 2);
			break;
		default:
			if (*p < 0x20) {
				snprintf(esc, sizeof esc, "\\u%04x", *p);
				sbuf_add(sb, esc, 6);
			} else
				sbuf_add(sb, (const char *)p, 1);
		}
	}
	sbuf_add(sb, "\"", 1);
}

/* Append s escaped as XML character data. */
void
sbuf_xml_text(struct sbuf *sb, const char *s)
{
	for (; *s != '\0'; s++) {
		switch (*s) {
		case '<':
			sbuf_puts(sb, "&lt;");
			break;
		case '>':
			sbuf_puts(sb, "&gt;");
			break;
		case '&':
			sbuf_puts(sb, "&amp;");
			break;
		case '"':
			sbuf_puts(sb, "&quot;");
			break;
		default:
			sbuf_add(sb, s, 1);
		}
	}
}

/*
 * The length of the printable character at s (n bytes left): 1 for
 * printable ASCII and space, 2-4 for a valid UTF-8 sequence of a character
 * that is not a C1 control (mos_utf8_seq); 0 otherwise (C0 controls, DEL,
 * C1 controls, invalid UTF-8).
 */
size_t
util_printable(const char *s, size_t n)
{
	const unsigned char	*p = (const unsigned char *)s;
	size_t			 len;

	if (n == 0)
		return 0;
	if (p[0] < 0x80)
		return p[0] >= 0x20 && p[0] != 0x7f ? 1 : 0;
	if ((len = mos_utf8_seq(s, n)) == 0 || (p[0] == 0xc2 && p[1] < 0xa0))
		return 0;
	return len;
}

/* Append s with every byte util_printable() refuses written as \xNN. */
void
sbuf_escape(struct sbuf *sb, const char *s, size_t n)
{
	size_t	i = 0, k;

	while (i < n) {
		if ((k = util_printable(s + i, n - i)) > 0) {
			sbuf_add(sb, s + i, k);
			i += k;
		} else
			sbuf_printf(sb, "\\x%02x", (unsigned char)s[i++]);
	}
	if (sb->s == NULL)
		sbuf_puts(sb, "");
}

/* Free the buffer; the struct can be used again. */
void
sbuf_free(struct sbuf *sb)
{
	free(sb->s);
	sb->s = NULL;
	sb->len = sb->cap = 0;
}

/* Write one code point as UTF-8 at p; returns the bytes written. */
static size_t
util_put_utf8(char *p, uint32_t c)
{
	if (c < 0x80) {
		p[0] = (char)c;
		return 1;
	}
	if (c < 0x800) {
		p[0] = (char)(0xc0 | (c >> 6));
		p[1] = (char)(0x80 | (c & 0x3f));
		return 2;
	}
	if (c < 0x10000) {
		p[0] = (char)(0xe0 | (c >> 12));
		p[1] = (char)(0x80 | ((c >> 6) & 0x3f));
		p[2] = (char)(0x80 | (c & 0x3f));
		return 3;
	}
	p[0] = (char)(0xf0 | (c >> 18));
	p[1] = (char)(0x80 | ((c >> 12) & 0x3f));
	p[2] = (char)(0x80 | ((c >> 6) & 0x3f));
	p[3] = (char)(0x80 | (c & 0x3f));
	return 4;
}

/* Four UTF-16BE units that are all ASCII, written as four bytes. */
static bool
util_ascii4(const uint8_t *p, char *out)
{
	uint64_t	w;

	memcpy(&w, p, sizeof w);
	/* every even byte 0, every odd byte below 0x80 (either byte order) */
	if ((w & (htobe64(0xff80ff80ff80ff80ULL))) != 0)
		return false;
	out[0] = (char)p[1];
	out[1] = (char)p[3];
	out[2] = (char)p[5];
	out[3] = (char)p[7];
	return true;
}

/* UTF-16BE to UTF-8; lone surrogates and an odd last byte become U+FFFD. */
void
util_utf16be_to_utf8(struct sbuf *sb, const uint8_t *p, size_t len)
{
	size_t		i, o;
	uint32_t	c, lo;
	char		*out;

	/* at most 3 bytes per UTF-16 unit (a surrogate pair: 4 for 2 units) */
	sbuf_add(sb, "", 0);
	if (sb->cap < sb->len + len / 2 * 3 + 4) {
		sb->cap = sb->len + len / 2 * 3 + 4;
		sb->s = xreallocarray(sb->s, sb->cap, 1);
	}
	out = sb->s;
	o = sb->len;
	for (i = 0; i + 1 < len; i += 2) {
		/* four ASCII characters at a time: most of MOS */
		while (i + 8 <= len && util_ascii4(p + i, out + o)) {
			i += 8;
			o += 4;
		}
		if (i + 1 >= len)
			break;
		if (p[i] == 0 && p[i + 1] < 0x80) {	/* ASCII */
			out[o++] = (char)p[i + 1];
			continue;
		}
		c = (uint32_t)p[i] << 8 | p[i + 1];
		if (c >= 0xd800 && c <= 0xdbff && i + 3 < len) {
			lo = (uint32_t)p[i + 2] << 8 | p[i + 3];
			if (lo >= 0xdc00 && lo <= 0xdfff) {
				c = 0x10000 + ((c - 0xd800) << 10) + (lo -
				    0xdc00);
				i += 2;
			} else
				c = 0xfffd;
		} else if (c >= 0xd800 && c <= 0xdfff)
			c = 0xfffd;
		o += util_put_utf8(out + o, c);
	}
	if (len % 2 != 0)
		o += util_put_utf8(out + o, 0xfffd);
	out[o] = '\0';
	sb->len = o;
}

/* UTF-8 to UTF-16BE (bad bytes become U+FFFD), appended to sb. */
void
util_utf8_to_utf16be(struct sbuf *sb, const char *s, size_t len)
{
	const unsigned char	*p = (const unsigned char *)s;
	size_t			 i = 0, n, k;
	uint32_t		 c;
	char			 b[4];

	while (i < len) {
		c = p[i];
		n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 :
		    (c >> 3) == 0x1e ? 4 : 0;
		if (n == 0 || i + n > len) {
			c = 0xfffd;
			n = 1;
		} else if (n > 1) {
			c &= 0xff >> (n + 1);
			for (k = 1; k < n; k++) {
				if ((p[i + k] & 0xc0) != 0x80)
					break;
				c = c << 6 | (p[i + k] & 0x3f);
			}
			if (k < n) {
				c = 0xfffd;
				n = k;
			}
		}
		i += n;
		if (c >= 0x10000) {
			c -= 0x10000;
			b[0] = (char)(0xd8 | (c >> 18));
			b[1] = (char)((c >> 10) & 0xff);
			b[2] = (char)(0xdc | ((c >> 8) & 0x3));
			b[3] = (char)(c & 0xff);
			sbuf_add(sb, b, 4);
		} else {
			b[0] = (char)(c >> 8);
			b[1] = (char)(c & 0xff);
			sbuf_add(sb, b, 2);
		}
	}
}

/* Where ASCII text p occurs in data encoded as enc (see gateway.h). */
ssize_t
util_find_enc(const uint8_t *data, size_t len, const char *p,
    enum mos_enc enc, bool last)
{
	struct sbuf	 pat = { NULL, 0, 0 };
	size_t		 step = enc == MOS_ENC_UTF16BE ? 2 : 1, i;
	ssize_t		 found = -1;

	if (enc == MOS_ENC_UTF16BE)
		util_utf8_to_utf16be(&pat, p, strlen(p));
	else
		sbuf_puts(&pat, p);
	for (i = 0; i + pat.len <= len; i += step) {
		if (memcmp(data + i, pat.s, pat.len) == 0) {
			found = (ssize_t)i;
			if (!last)
				break;
		}
	}
	if (found >= 0 && last)
		found += (ssize_t)pat.len;
	sbuf_free(&pat);
	return found;
}
