/*
 * MOS scalar types: times (YYYY-MM-DD'T'hh:mm:ss[,ddd][Z|+-hh:mm]), exact
 * decimals (objTB 59.94) and hh:mm:ss durations.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "mosxml/mosxml.h"

/* Days since 1970-01-01 of a proleptic Gregorian date. */
static int64_t
time_days_from_civil(int64_t y, unsigned m, unsigned d)
{
	int64_t		era;
	unsigned	yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = (unsigned)(y - era * 400);
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

/* The civil date of a day count since 1970-01-01. */
static void
time_civil_from_days(int64_t z, int *y, unsigned *m, unsigned *d)
{
	int64_t		era;
	unsigned	doe, yoe, doy, mp;

	z += 719468;
	era = (z >= 0 ? z : z - 146096) / 146097;
	doe = (unsigned)(z - era * 146097);
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	*d = doy - (153 * mp + 2) / 5 + 1;
	*m = mp < 10 ? mp + 3 : mp - 9;
	*y = (int)((int64_t)yoe + era * 400 + (*m <= 2));
}

/* Days in a month of a year. */
static unsigned
time_mdays(int y, unsigned m)
{
	static const unsigned char days[] = { 31, 28, 31, 30, 31, 30, 31, 31,
	    30, 31, 30, 31 };

	if (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0))
		return 29;
	return days[m - 1];
}

/* Read exactly n digits at *pp into *out; advances *pp. */
static int
time_digits(const char **pp, int n, int *out)
{
	const char	*p = *pp;
	int		 v = 0, i;

	for (i = 0; i < n; i++) {
		if (p[i] < '0' || p[i] > '9')
			return -1;
		v = v * 10 + (p[i] - '0');
	}
	*pp = p + n;
	*out = v;
	return 0;
}

/* Skip ASCII white space. */
static const char *
time_skip_ws(const char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
		p++;
	return p;
}

/* Parse a zone suffix (Z, +hh:mm, +hhmm, +hh) into t. */
static int
time_parse_zone(const char *p, enum mos_mode mode, struct mos_time *t)
{
	int	hh, mm = 0, sign;

	if (*p == 'Z' || (mode == MOS_LENIENT && *p == 'z')) {
		t->flags |= MOS_TIME_ZONE;
		t->tz_min = 0;
		return p[1] == '\0' ? 0 : -1;
	}
	if (*p != '+' && *p != '-')
		return -1;
	sign = *p++ == '-' ? -1 : 1;
	if (time_digits(&p, 2, &hh) == -1)
		return -1;
	if (*p == ':')
		p++;
	else if (mode == MOS_STRICT)
		return -1;
	if (*p != '\0' && time_digits(&p, 2, &mm) == -1)
		return -1;
	if (*p != '\0' || hh > 23 || mm > 59)
		return -1;
	t->flags |= MOS_TIME_ZONE;
	t->tz_min = (int16_t)(sign * (hh * 60 + mm));
	return 0;
}

/*
 * Parse a MOS time. Strict: YYYY-MM-DDThh:mm:ss, an optional fraction of
 * exactly three digits after ',' or '.', an optional Z or +-hh:mm. Lenient
 * also takes surrounding white space, a space for the T, 1-9 fraction digits,
 * +-hhmm and +-hh. An empty string parses as "not set".
 */
int
mos_time_parse(const char *s, enum mos_mode mode, struct mos_time *t)
{
	const char	*p = s;
	char		 tmp[64];
	int		 y, mo, d, h, mi, se, ms = 0, n;
	size_t		 len;

	memset(t, 0, sizeof *t);
	if (mode == MOS_LENIENT) {
		p = time_skip_ws(p);
		len = strlen(p);
		while (len > 0 && strchr(" \t\r\n", p[len - 1]) != NULL)
			len--;
		if (len >= sizeof tmp)
			return -1;
		memcpy(tmp, p, len);
		tmp[len] = '\0';
		p = tmp;
	}
	if (*p == '\0')
		return mode == MOS_LENIENT ? 0 : -1;
	if (time_digits(&p, 4, &y) == -1 || *p++ != '-' ||
	    time_digits(&p, 2, &mo) == -1 || *p++ != '-' ||
	    time_digits(&p, 2, &d) == -1)
		return -1;
	if (*p != 'T' && !(mode == MOS_LENIENT && (*p == ' ' || *p == 't')))
		return -1;
	p++;
	if (time_digits(&p, 2, &h) == -1 || *p++ != ':' ||
	    time_digits(&p, 2, &mi) == -1 || *p++ != ':' ||
	    time_digits(&p, 2, &se) == -1)
		return -1;
	if (mo < 1 || mo > 12 || d < 1 || (unsigned)d > time_mdays(y, mo) ||
	    h > 23 || mi > 59 || se > 59)
		return -1;
	if (*p == ',' || *p == '.') {
		p++;
		for (n = 0; p[n] >= '0' && p[n] <= '9'; n++) {
			if (n < 3)
				ms = ms * 10 + (p[n] - '0');
		}
		if (n == 0 || (mode == MOS_STRICT && n != 3) || n > 9)
			return -1;
		for (; n < 3; n++)
			ms *= 10;
		while (*p >= '0' && *p <= '9')
			p++;
		t->flags |= MOS_TIME_FRAC;
	}
	if (*p != '\0' && time_parse_zone(p, mode, t) == -1) {
		memset(t, 0, sizeof *t);
		return -1;
	}
	t->sec = time_days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400 +
	    h * 3600 + mi * 60 + se;
	t->ms = ms;
	t->flags |= MOS_TIME_SET;
	return 0;
}

/* Format t with the given fraction separator; the shared body of both forms. */
static size_t
time_format_sep(const struct mos_time *t, char sep, char *buf, size_t len)
{
	int64_t		days, rem;
	int		y, n;
	unsigned	m, d;
	char		frac[8] = "", zone[8] = "";
	int		off;

	if (!(t->flags & MOS_TIME_SET)) {
		if (len > 0)
			buf[0] = '\0';
		return 0;
	}
	days = t->sec / 86400;
	rem = t->sec % 86400;
	if (rem < 0) {
		rem += 86400;
		days--;
	}
	time_civil_from_days(days, &y, &m, &d);
	if (t->flags & MOS_TIME_FRAC)
		snprintf(frac, sizeof frac, "%c%03d", sep, (int)(t->ms % 1000));
	if (t->flags & MOS_TIME_ZONE) {
		off = t->tz_min < 0 ? -t->tz_min : t->tz_min;
		if (t->tz_min == 0)
			strcpy(zone, "Z");
		else
			snprintf(zone, sizeof zone, "%c%02d:%02d",
			    t->tz_min < 0 ? '-' : '+', off / 60 % 100, off % 60);
	}
	n = snprintf(buf, len, "%04d-%02u-%02uT%02d:%02d:%02d%s%s", y, m, d,
	    (int)(rem / 3600), (int)(rem / 60 % 60), (int)(rem % 60), frac, zone);
	return n < 0 ? 0 : (size_t)n;
}

/* The spec form, comma fraction: "2009-04-11T14:22:07,125Z". */
size_t
mos_time_format(const struct mos_time *t, char *buf, size_t len)
{
	return time_format_sep(t, ',', buf, len);
}

/* ISO 8601 for JSON: "2009-04-11T14:22:07.125Z", the offset kept if given. */
size_t
mos_time_iso(const struct mos_time *t, char *buf, size_t len)
{
	return time_format_sep(t, '.', buf, len);
}

/* Parse the ISO form written by mos_time_iso (or the spec form). */
int
mos_time_parse_iso(const char *s, struct mos_time *t)
{
	return mos_time_parse(s, MOS_LENIENT, t);
}

/* The current time in UTC, with fraction and zone. */
void
mos_time_now(struct mos_time *t)
{
	struct timespec	ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	t->sec = ts.tv_sec;
	t->ms = (int32_t)(ts.tv_nsec / 1000000);
	t->tz_min = 0;
	t->flags = MOS_TIME_SET | MOS_TIME_FRAC | MOS_TIME_ZONE;
}

/* Milliseconds since 1970 UTC; a time without zone is taken as UTC. */
int64_t
mos_time_utc_ms(const struct mos_time *t)
{
	int64_t	ms = t->sec * 1000 + t->ms;

	if (t->flags & MOS_TIME_ZONE)
		ms -= (int64_t)t->tz_min * 60000;
	return ms;
}

/* Parse an exact decimal: digits, optionally '.' and more digits. */
int
mos_dec_parse(const char *s, struct mos_dec *d)
{
	int64_t		v = 0;
	int		scale = -1, digits = 0;
	const char	*p;

	memset(d, 0, sizeof *d);
	for (p = s; *p != '\0'; p++) {
		if (*p == '.' && scale == -1 && digits > 0) {
			scale = 0;
			continue;
		}
		if (*p < '0' || *p > '9')
			return -1;
		if (v > (INT64_MAX - 9) / 10 || ++digits > 18)
			return -1;
		v = v * 10 + (*p - '0');
		if (scale >= 0)
			scale++;
	}
	if (digits == 0 || scale == 0)
		return -1;
	d->v = v;
	d->scale = (uint8_t)(scale < 0 ? 0 : scale);
	d->set = true;
	return 0;
}

/* Format an exact decimal with all its digits ("59.94", "50"). */
size_t
mos_dec_format(const struct mos_dec *d, char *buf, size_t len)
{
	char		digits[32];
	int		n, intlen;
	uint64_t	v;

	if (!d->set) {
		if (len > 0)
			buf[0] = '\0';
		return 0;
	}
	v = d->v < 0 ? (uint64_t)0 - (uint64_t)d->v : (uint64_t)d->v;
	n = snprintf(digits, sizeof digits, "%0*llu", d->scale + 1,
	    (unsigned long long)v);
	if (d->scale == 0)
		return (size_t)snprintf(buf, len, "%s%s", d->v < 0 ? "-" : "",
		    digits);
	intlen = n - d->scale;
	return (size_t)snprintf(buf, len, "%s%.*s.%s", d->v < 0 ? "-" : "",
	    intlen, digits, digits + intlen);
}

/* The decimal as a double (for arithmetic, not for storage). */
double
mos_dec_to_double(const struct mos_dec *d)
{
	double	v = (double)d->v;
	int	i;

	for (i = 0; i < d->scale; i++)
		v /= 10;
	return v;
}

/*
 * Parse a duration "hh:mm:ss" (hours may exceed 99). Lenient also takes
 * surrounding white space, "h:mm:ss", "mm:ss" and plain seconds; an empty
 * string is "not set" there.
 */
int
mos_dur_parse(const char *s, enum mos_mode mode, struct mos_dur *d)
{
	const char	*p = s;
	uint64_t	 part[3] = { 0, 0, 0 };
	int		 nparts = 0, ndig;

	memset(d, 0, sizeof *d);
	if (mode == MOS_LENIENT)
		p = time_skip_ws(p);
	if (*p == '\0')
		return mode == MOS_LENIENT ? 0 : -1;
	for (;;) {
		for (ndig = 0; *p >= '0' && *p <= '9'; p++, ndig++) {
			part[nparts] = part[nparts] * 10 + (uint64_t)(*p - '0');
			if (part[nparts] > UINT32_MAX)
				return -1;
		}
		if (ndig == 0)
			return -1;
		if (nparts > 0 && (ndig != 2 || part[nparts] > 59))
			return -1;
		nparts++;
		if (*p != ':' || nparts == 3)
			break;
		p++;
	}
	if (mode == MOS_LENIENT)
		p = time_skip_ws(p);
	if (*p != '\0' || (mode == MOS_STRICT && nparts != 3))
		return -1;
	if (nparts == 3)
		part[0] = part[0] * 3600 + part[1] * 60 + part[2];
	else if (nparts == 2)
		part[0] = part[0] * 60 + part[1];
	if (part[0] > UINT32_MAX)
		return -1;
	d->sec = (uint32_t)part[0];
	d->set = true;
	return 0;
}

/* Format a duration as "hh:mm:ss" (two-digit hours at least). */
size_t
mos_dur_format(const struct mos_dur *d, char *buf, size_t len)
{
	if (!d->set) {
		if (len > 0)
			buf[0] = '\0';
		return 0;
	}
	return (size_t)snprintf(buf, len, "%02lu:%02u:%02u",
	    (unsigned long)(d->sec / 3600), (unsigned)(d->sec / 60 % 60),
	    (unsigned)(d->sec % 60));
}
