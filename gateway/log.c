/*
 * Logging: one line per event,
 *   2026-11-29T10:00:00.123Z level=info event=link.up ncs=ENPS1 port=lower ...
 * to stderr, syslog or a file. errno is kept intact. Every line is made
 * printable on its way out: control characters and bytes that are not
 * UTF-8 become \xNN, whatever a value held.
 *
 * Events that can repeat at a peer's or the disk's pace go through
 * log_event_rl(): at most `burst` lines per interval for one (event, key),
 * and at most LOG_RL_EVENT_BURSTS times that for the event over all keys;
 * the next line that passes carries suppressed=N.
 *
 * With the json format the same pairs go out as one JSON object a line:
 *   {"time":"2026-11-29T10:00:00.123Z","level":"info","event":"link.up",...}
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "gateway/gateway.h"

#define LOG_RL_SLOTS		256	/* (event, key) pairs tracked */
#define LOG_RL_PROBE		16	/* slots tried for one pair */
#define LOG_RL_EVENTS		32	/* events tracked over all their keys */
#define LOG_RL_KEYLEN		48
#define LOG_RL_EVENT_BURSTS	10	/* an event's lines per interval: bursts */

/* One (event, key) pair, or one event over all keys. */
struct log_rl_slot {
	const char	*event;		/* NULL: free */
	char		 key[LOG_RL_KEYLEN];
	int64_t		 start;		/* of the current interval */
	unsigned	 n;		/* lines passed in it */
	uint64_t	 dropped;	/* since the last line that passed */
};

struct log_limiter {
	unsigned		burst;		/* 0: no limit */
	int64_t			interval_ms;
	struct log_rl_slot	key[LOG_RL_SLOTS];
	struct log_rl_slot	event[LOG_RL_EVENTS];
};

enum log_kind {
	LOG_TO_STDERR,
	LOG_TO_SYSLOG,
	LOG_TO_FILE,
};

static struct {
	enum log_level	 level;
	enum log_kind	 kind;
	FILE		*fp;
} lg = { LL_INFO, LOG_TO_STDERR, NULL };

static struct log_limiter	lg_rl = { LOG_RL_BURST, LOG_RL_INTERVAL_MS,
				    { { NULL, "", 0, 0, 0 } },
				    { { NULL, "", 0, 0, 0 } } };
static pthread_mutex_t		lg_rl_mtx = PTHREAD_MUTEX_INITIALIZER;
static enum log_format		lg_format = LOG_FMT_LOGFMT;

#define LOG_Q_SLOTS	16
#define LOG_Q_LEN	512
#define LOG_LINE	4096

/* Open (or reopen, for SIGHUP) a target: "stderr", "syslog" or a file path. */
int
log_open(enum log_level level, const char *target, char **cause)
{
	FILE	*fp = NULL;
	int	 kind, fd;

	if (target == NULL || strcmp(target, "stderr") == 0)
		kind = LOG_TO_STDERR;
	else if (strcmp(target, "syslog") == 0)
		kind = LOG_TO_SYSLOG;
	else {
		kind = LOG_TO_FILE;
		/* 0640: the log names objects and peers */
		fd = open(target, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC,
		    0640);
		if (fd == -1 || (fp = fdopen(fd, "a")) == NULL) {
			xasprintf(cause, "%s: %s", target, strerror(errno));
			if (fd != -1)
				close(fd);
			return -1;
		}
		setvbuf(fp, NULL, _IOLBF, 0);
	}
	log_close();
	lg.kind = kind;
	lg.fp = fp;
	lg.level = level;
	if (kind == LOG_TO_SYSLOG)
		openlog("mosgw", LOG_PID | LOG_NDELAY, LOG_DAEMON);
	return 0;
}

/* Close the current target; logging falls back to stderr. */
void
log_close(void)
{
	if (lg.kind == LOG_TO_FILE && lg.fp != NULL)
		fclose(lg.fp);
	if (lg.kind == LOG_TO_SYSLOG)
		closelog();
	lg.fp = NULL;
	lg.kind = LOG_TO_STDERR;
}

/* Change the level. */
void
log_set_level(enum log_level level)
{
	lg.level = level;
}

/* Change the format of the lines (logfmt or json). */
void
log_set_format(enum log_format format)
{
	lg_format = format;
}

/* Would a line at this level be written? */
bool
log_enabled(enum log_level level)
{
	return level >= lg.level;
}

/* The name of a level. */
const char *
log_level_name(enum log_level level)
{
	static const char *names[] = { "debug", "info", "warn", "error" };

	if ((unsigned)level >= nitems(names))
		return "?";
	return names[level];
}

/* A new limiter: burst lines per interval for one (event, key); 0 = none. */
struct log_limiter *
log_limiter_new(unsigned burst, int64_t interval_ms)
{
	struct log_limiter	*l = xcalloc(1, sizeof *l);

	log_limiter_set(l, burst, interval_ms);
	return l;
}

/* Free a limiter. */
void
log_limiter_free(struct log_limiter *l)
{
	free(l);
}

/* Change the limits; what was counted is forgotten. */
void
log_limiter_set(struct log_limiter *l, unsigned burst, int64_t interval_ms)
{
	memset(l, 0, sizeof *l);
	l->burst = burst;
	l->interval_ms = interval_ms > 0 ? interval_ms : 1;
}

/* A new interval for a slot once the last one is over. */
static void
log_rl_roll(const struct log_limiter *l, struct log_rl_slot *sl, int64_t now)
{
	if (now - sl->start >= l->interval_ms || now < sl->start) {
		sl->start = now;
		sl->n = 0;
	}
}

/* Is the slot free, or over and owing nothing? */
static bool
log_rl_reusable(const struct log_limiter *l, const struct log_rl_slot *sl,
    int64_t now)
{
	return sl->event == NULL || (sl->dropped == 0 &&
	    (now - sl->start >= l->interval_ms || now < sl->start));
}

/* Claim a slot for (event, key). */
static struct log_rl_slot *
log_rl_claim(struct log_rl_slot *sl, const char *event, const char *key,
    int64_t now)
{
	memset(sl, 0, sizeof *sl);
	sl->event = event;
	util_strlcpy(sl->key, key, sizeof sl->key);
	sl->start = now;
	return sl;
}

/* The slot of an event over all its keys, or NULL when all are taken. */
static struct log_rl_slot *
log_rl_event(struct log_limiter *l, const char *event, int64_t now)
{
	struct log_rl_slot	*free_sl = NULL;
	size_t			 i;

	for (i = 0; i < LOG_RL_EVENTS; i++) {
		if (l->event[i].event != NULL &&
		    strcmp(l->event[i].event, event) == 0)
			return &l->event[i];
		if (free_sl == NULL && l->event[i].event == NULL)
			free_sl = &l->event[i];
	}
	return free_sl != NULL ? log_rl_claim(free_sl, event, "", now) : NULL;
}

/* The slot of (event, key), or NULL when the slots it may use are taken. */
static struct log_rl_slot *
log_rl_key(struct log_limiter *l, const char *event, const char *key,
    int64_t now)
{
	struct log_rl_slot	*sl, *reuse = NULL;
	uint32_t		 h = 2166136261u;
	const char		*p;
	size_t			 i;

	for (p = event; *p != '\0'; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	for (p = key, i = 0; *p != '\0' && i < LOG_RL_KEYLEN - 1; p++, i++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	for (i = 0; i < LOG_RL_PROBE; i++) {
		sl = &l->key[(h + i) % LOG_RL_SLOTS];
		if (sl->event != NULL && strcmp(sl->event, event) == 0 &&
		    strncmp(sl->key, key, sizeof sl->key - 1) == 0)
			return sl;
		if (reuse == NULL && log_rl_reusable(l, sl, now))
			reuse = sl;
	}
	return reuse != NULL ? log_rl_claim(reuse, event, key, now) : NULL;
}

/*
 * Whether one more line of (event, key) may be written at now (ms, any
 * monotonic clock). If so, *suppressed is how many were refused since the
 * last one that passed. event must outlive the limiter (a literal).
 */
bool
log_limiter_pass(struct log_limiter *l, const char *event, const char *key,
    int64_t now, uint64_t *suppressed)
{
	struct log_rl_slot	*e, *k;
	unsigned		 kmax, emax;

	*suppressed = 0;
	if (l->burst == 0)
		return true;
	if (key == NULL)
		key = "";
	emax = l->burst * LOG_RL_EVENT_BURSTS;
	e = log_rl_event(l, event, now);
	/* with every key slot taken, the keys share the event's slot */
	if ((k = log_rl_key(l, event, key, now)) == NULL && (k = e) == NULL)
		return true;
	kmax = k == e ? emax : l->burst;
	log_rl_roll(l, k, now);
	if (e != NULL && e != k)
		log_rl_roll(l, e, now);
	if (k->n >= kmax || (e != NULL && e != k && e->n >= emax)) {
		k->dropped++;
		return false;
	}
	k->n++;
	if (e != NULL && e != k)
		e->n++;
	*suppressed = k->dropped;
	k->dropped = 0;
	return true;
}

/* The limits of log_event_rl(). */
void
log_set_rate(unsigned burst, int64_t interval_ms)
{
	pthread_mutex_lock(&lg_rl_mtx);
	if (burst != lg_rl.burst || interval_ms != lg_rl.interval_ms)
		log_limiter_set(&lg_rl, burst, interval_ms);
	pthread_mutex_unlock(&lg_rl_mtx);
}

/* The host part of "host:port" or "[v6]:port", for a rate-limit key. */
const char *
log_host_key(const char *peer, char *buf, size_t len)
{
	const char	*end;

	if (peer == NULL)
		return "";
	if (*peer == '[' && (end = strchr(peer, ']')) != NULL)
		peer++;
	else if ((end = strrchr(peer, ':')) == NULL ||
	    strchr(peer, ':') != end)
		end = peer + strlen(peer);
	snprintf(buf, len, "%.*s", (int)(end - peer), peer);
	return buf;
}

/* Does this value need quotes (or escapes) in key=value form? */
static bool
log_needs_quote(const char *s)
{
	size_t	n = strlen(s), i = 0, k;

	if (n == 0)
		return true;
	while (i < n) {
		if ((k = util_printable(s + i, n - i)) == 0 || s[i] == ' ' ||
		    s[i] == '"' || s[i] == '=' || s[i] == '\\')
			return true;
		i += k;
	}
	return false;
}

/*
 * Quote a value when needed: \" \\ \n \r \t, other control characters and
 * bytes that are not UTF-8 as \xNN, valid UTF-8 kept. The result lives
 * until this thread's 16th next call.
 */
const char *
log_q(const char *s)
{
	static _Thread_local char	 ring[LOG_Q_SLOTS][LOG_Q_LEN];
	static _Thread_local unsigned	 slot;
	char				*out, *o, *end;
	size_t				 n, i = 0, k;

	if (s == NULL)
		return "-";
	n = strlen(s);
	if (!log_needs_quote(s) && n < LOG_Q_LEN)
		return s;
	out = ring[slot++ % LOG_Q_SLOTS];
	o = out;
	end = out + LOG_Q_LEN - 6;	/* room for ...", NUL */
	*o++ = '"';
	while (i < n && o + 4 <= end) {
		k = util_printable(s + i, n - i);
		if (s[i] == '"' || s[i] == '\\') {
			*o++ = '\\';
			*o++ = s[i++];
		} else if (s[i] == '\n' || s[i] == '\r' || s[i] == '\t') {
			*o++ = '\\';
			*o++ = s[i] == '\n' ? 'n' : s[i] == '\r' ? 'r' : 't';
			i++;
		} else if (k == 0) {
			snprintf(o, 5, "\\x%02x", (unsigned char)s[i++]);
			o += 4;
		} else if (o + k <= end) {
			memcpy(o, s + i, k);
			o += k;
			i += k;
		} else
			break;
	}
	if (i < n) {
		memcpy(o, "...", 3);
		o += 3;
	}
	*o++ = '"';
	*o = '\0';
	return out;
}

/* Copy a line, every byte util_printable() refuses as \xNN; cut to fit. */
static void
log_clean(const char *in, char *out, size_t len)
{
	size_t	n = strlen(in), i = 0, o = 0, k;

	while (i < n && o + 5 < len) {
		if ((k = util_printable(in + i, n - i)) == 0) {
			snprintf(out + o, 5, "\\x%02x", (unsigned char)in[i++]);
			o += 4;
		} else if (o + k < len) {
			memcpy(out + o, in + i, k);
			o += k;
			i += k;
		} else
			break;
	}
	out[o] = '\0';
}

/* Append s[0..len) to out as JSON string content; false when out is full. */
static bool
log_json_add(char **o, const char *end, const char *s, size_t len)
{
	static const char	hex[] = "0123456789abcdef";
	unsigned char		c;
	size_t			i;

	for (i = 0; i < len; i++) {
		if (end - *o < 8)
			return false;
		c = (unsigned char)s[i];
		if (c == '"' || c == '\\') {
			*(*o)++ = '\\';
			*(*o)++ = (char)c;
		} else if (c < 0x20 || c == 0x7f) {
			memcpy(*o, "\\u00", 4);
			(*o)[4] = hex[c >> 4];
			(*o)[5] = hex[c & 15];
			*o += 6;
		} else
			*(*o)++ = (char)c;
	}
	return true;
}

/*
 * A logfmt line (key=value, values quoted with \" \\ \n \r \t escapes as
 * log_q writes them; \xNN is kept as it is) as one JSON object with string
 * values, time first.
 */
static void
log_json(const char *ts, const char *line, char *out, size_t outlen)
{
	const char	*p = line, *k, *v;
	char		*o = out, *end = out + outlen - 4, unq[LOG_LINE];
	size_t		 klen, vlen;

	if (ts != NULL)
		o += snprintf(out, outlen, "{\"time\":\"%s\"", ts);
	else
		*o++ = '{';
	while (*p != '\0') {
		while (*p == ' ')
			p++;
		if (*p == '\0')
			break;
		k = p;
		klen = strcspn(p, "= ");
		p += klen;
		if (*p != '=') {	/* a word without a key */
			v = k;
			vlen = klen;
			k = "msg";
			klen = 3;
		} else if (*++p == '"') {
			for (p++, vlen = 0; *p != '\0' && *p != '"' &&
			    vlen + 1 < sizeof unq; p++) {
				if (*p != '\\' || p[1] == '\0')
					unq[vlen++] = *p;
				else if (strchr("\"\\nrt", p[1]) == NULL)
					unq[vlen++] = *p;	/* \xNN stays */
				else {
					p++;
					unq[vlen++] = *p == 'n' ? '\n' :
					    *p == 'r' ? '\r' : *p == 't' ? '\t' : *p;
				}
			}
			if (*p == '"')
				p++;
			v = unq;
		} else {
			v = p;
			vlen = strcspn(p, " ");
			p += vlen;
		}
		if (end - o < 8)
			break;
		if (o > out + 1)
			*o++ = ',';
		*o++ = '"';
		if (!log_json_add(&o, end, k, klen))
			break;
		memcpy(o, "\":\"", 3);
		o += 3;
		if (!log_json_add(&o, end, v, vlen))
			break;
		*o++ = '"';
	}
	if (o > end)
		o = end;
	if (o[-1] != '"' && o[-1] != '}')
		*o++ = '"';	/* cut: close the string */
	*o++ = '}';
	*o = '\0';
}

/* Format and write one line, with suppressed=N when some were dropped. */
static void
log_vevent(enum log_level level, const char *event, uint64_t suppressed,
    const char *fmt, va_list ap)
{
	static const int prio[] = { LOG_DEBUG, LOG_INFO, LOG_WARNING, LOG_ERR };
	/* a byte of the line takes at most 6 in JSON: nothing is ever cut */
	char		 ts[32], line[LOG_LINE], clean[LOG_LINE];
	char		 json[LOG_LINE * 6 + 64];
	size_t		 n;
	int		 rc;

	rc = snprintf(line, sizeof line, "level=%s event=%s",
	    log_level_name(level), event);
	n = rc > 0 ? (size_t)rc : 0;
	if (fmt != NULL && *fmt != '\0' && n < sizeof line - 1) {
		line[n++] = ' ';
		rc = vsnprintf(line + n, sizeof line - n, fmt, ap);
		n += rc > 0 ? (size_t)rc : 0;
	}
	if (suppressed > 0 && n < sizeof line - 1)
		snprintf(line + n, sizeof line - n, " suppressed=%llu",
		    (unsigned long long)suppressed);
	log_clean(line, clean, sizeof clean);
	if (lg_format == LOG_FMT_JSON) {
		if (lg.kind != LOG_TO_SYSLOG)
			util_iso_ms(util_now_ms(), ts, sizeof ts);
		log_json(lg.kind != LOG_TO_SYSLOG ? ts : NULL, clean, json,
		    sizeof json);
		if (lg.kind == LOG_TO_SYSLOG)
			syslog(prio[level], "%s", json);
		else
			fprintf(lg.fp != NULL ? lg.fp : stderr, "%s\n", json);
	} else if (lg.kind == LOG_TO_SYSLOG)
		syslog(prio[level], "%s", clean);
	else {
		util_iso_ms(util_now_ms(), ts, sizeof ts);
		fprintf(lg.fp != NULL ? lg.fp : stderr, "%s %s\n", ts, clean);
	}
}

/* Write one event line. */
void
log_event(enum log_level level, const char *event, const char *fmt, ...)
{
	va_list	ap;
	int	saved = errno;

	if (level < lg.level)
		return;
	va_start(ap, fmt);
	log_vevent(level, event, 0, fmt, ap);
	va_end(ap);
	errno = saved;
}

/* Write one event line unless (event, key) is over its rate. */
void
log_event_rl(enum log_level level, const char *event, const char *key,
    const char *fmt, ...)
{
	va_list		ap;
	uint64_t	suppressed;
	bool		pass;
	int		saved = errno;

	if (level < lg.level)
		return;
	pthread_mutex_lock(&lg_rl_mtx);
	pass = log_limiter_pass(&lg_rl, event, key, util_mono_ms(),
	    &suppressed);
	pthread_mutex_unlock(&lg_rl_mtx);
	if (pass) {
		va_start(ap, fmt);
		log_vevent(level, event, suppressed, fmt, ap);
		va_end(ap);
	}
	errno = saved;
}
