/*
 * Logging: one line per event,
 *   2026-11-29T10:00:00.123Z level=info event=link.up ncs=ENPS1 port=lower ...
 * to stderr, syslog or a file. errno is kept intact.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "gateway/gateway.h"

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

#define LOG_Q_SLOTS	16
#define LOG_Q_LEN	512

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

/* Does this value need quotes in key=value form? */
static bool
log_needs_quote(const char *s)
{
	if (*s == '\0')
		return true;
	for (; *s != '\0'; s++) {
		if ((unsigned char)*s <= ' ' || *s == '"' || *s == '=' ||
		    *s == '\\' || (unsigned char)*s == 0x7f)
			return true;
	}
	return false;
}

/* Quote a value when needed; the result lives until 16 more calls. */
const char *
log_q(const char *s)
{
	static char	 ring[LOG_Q_SLOTS][LOG_Q_LEN];
	static unsigned	 slot;
	char		*out, *o, *end;

	if (s == NULL)
		return "-";
	if (!log_needs_quote(s) && strlen(s) < LOG_Q_LEN)
		return s;
	out = ring[slot++ % LOG_Q_SLOTS];
	o = out;
	end = out + LOG_Q_LEN - 6;	/* room for ...", NUL */
	*o++ = '"';
	for (; *s != '\0' && o < end; s++) {
		if (*s == '"' || *s == '\\') {
			*o++ = '\\';
			*o++ = *s;
		} else if (*s == '\n') {
			*o++ = '\\';
			*o++ = 'n';
		} else if ((unsigned char)*s < ' ' || (unsigned char)*s == 0x7f)
			*o++ = '?';
		else
			*o++ = *s;
	}
	if (*s != '\0') {
		memcpy(o, "...", 3);
		o += 3;
	}
	*o++ = '"';
	*o = '\0';
	return out;
}

/* Write one event line. */
void
log_event(enum log_level level, const char *event, const char *fmt, ...)
{
	static const int prio[] = { LOG_DEBUG, LOG_INFO, LOG_WARNING, LOG_ERR };
	va_list		 ap;
	char		 ts[32], line[4096];
	int		 saved = errno, n;

	if (level < lg.level)
		return;
	n = snprintf(line, sizeof line, "level=%s event=%s",
	    log_level_name(level), event);
	if (fmt != NULL && *fmt != '\0' && n > 0 && (size_t)n < sizeof line -
	    1) {
		line[n++] = ' ';
		va_start(ap, fmt);
		vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
		va_end(ap);
	}
	if (lg.kind == LOG_TO_SYSLOG)
		syslog(prio[level], "%s", line);
	else {
		util_iso_ms(util_now_ms(), ts, sizeof ts);
		fprintf(lg.fp != NULL ? lg.fp : stderr, "%s %s\n", ts, line);
	}
	errno = saved;
}
