/*
 * mosctl events: the gateway's event log over the HTTP API (GET /v1/events,
 * Server-Sent Events), one line per event. Without --follow it prints what
 * the log holds after --after (every event by default) up to the head, which
 * the daemon marks with the comment ": caught-up ID", and exits. With
 * --follow it goes on as events come and, when the connection drops,
 * reconnects with Last-Event-ID after 1, 2, 4 ... at most 30 s; it stops on
 * SIGINT or SIGTERM (exit 0) or on an answer that retrying cannot change
 * (401, 403, 422 ...).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/http.h>
#include <jansson.h>

#include "gateway/gateway.h"
#include "tools/mosctl.h"
#include "tools/mosctl_api.h"

#define EVENTS_IDLE_S		90	/* not even a keepalive: broken */
#define EVENTS_RETRY_MAX_S	30
#define EVENTS_LINE_MAX		(16 * 1024 * 1024)

static volatile sig_atomic_t	events_stop;

struct events_opts {
	int64_t		 after;		/* 0: from the oldest */
	const char	*types;		/* NULL: all */
	bool		 follow;
	long		 limit;		/* 0: none */
};

/* The reader: SSE lines and fields of the event being read. */
struct events_rd {
	struct mosctl	*ctl;
	const struct events_opts *o;
	struct sbuf	 line;
	struct sbuf	 data;
	char		*type;		/* event: */
	bool		 has_data;
	int64_t		 last_id;	/* -1: none seen */
	char		*id;		/* id: of this event, NULL none */
	long		 printed;
	bool		 done;		/* caught up (no --follow) or limit */
	bool		 bad;		/* a line too long */
};

static void
events_sig(int sig)
{
	(void)sig;
	events_stop = 1;
}

void
mosctl_events_usage(FILE *f)
{
	fprintf(f,
	    "  events [--after ID] [--types T,T] [--follow] [--limit N]\n"
	    "                                   the event log (--url only): "
	    "ID  TYPE  DATA a line;\n"
	    "                                   up to the newest, or on with "
	    "--follow\n");
}

/* Print one event and count it. */
static void
events_print(struct events_rd *rd, const char *type, const char *id,
    const char *data)
{
	struct mosctl	*ctl = rd->ctl;
	json_t		*d, *o;
	char		*s;

	if ((d = json_loads(data, JSON_DECODE_ANY, NULL)) == NULL)
		d = json_string(data);
	if (d == NULL)		/* not UTF-8 */
		d = json_string("");
	if (ctl->json) {
		o = json_object();
		if (id != NULL)
			json_object_set_new(o, "id", json_integer(
			    strtoll(id, NULL, 10)));
		json_object_set_new(o, "type", json_string(type));
		json_object_set(o, "data", d);
		mosctl_json_line(ctl, o);
		json_decref(o);
	} else {
		s = json_is_string(d) ? xstrdup(json_string_value(d)) :
		    json_dumps(d, JSON_COMPACT | JSON_ENCODE_ANY);
		fprintf(ctl->out, "%s  %s  %s\n", id != NULL ? id : "-", type,
		    s != NULL ? s : "");
		free(s);
	}
	json_decref(d);
	fflush(ctl->out);
	if (strcmp(type, "gap") != 0 && rd->o->limit > 0 &&
	    ++rd->printed >= rd->o->limit)
		rd->done = true;
}

/* The blank line: the event read so far, if any, goes out. */
static void
events_dispatch(struct events_rd *rd)
{
	if (rd->id != NULL && *rd->id != '\0')
		rd->last_id = strtoll(rd->id, NULL, 10);
	if (rd->has_data)
		events_print(rd, rd->type != NULL ? rd->type : "message",
		    rd->id != NULL && *rd->id != '\0' ? rd->id : NULL,
		    rd->data.s != NULL ? rd->data.s : "");
	free(rd->type);
	free(rd->id);
	rd->type = rd->id = NULL;
	rd->has_data = false;
	sbuf_free(&rd->data);
}

/* One line of the stream (without its end). */
static void
events_line(struct events_rd *rd, char *line)
{
	char		*v, *end;
	long long	 id;

	if (*line == '\0') {
		events_dispatch(rd);
		return;
	}
	if (*line == ':') {
		/* a comment; ": caught-up ID" ends a snapshot */
		if (strncmp(line, ": caught-up ", 12) == 0 &&
		    !rd->o->follow)
			rd->done = true;
		return;
	}
	if ((v = strchr(line, ':')) != NULL) {
		*v++ = '\0';
		if (*v == ' ')
			v++;
	} else
		v = line + strlen(line);
	if (strcmp(line, "data") == 0) {
		if (rd->has_data)
			sbuf_puts(&rd->data, "\n");
		sbuf_puts(&rd->data, v);
		rd->has_data = true;
	} else if (strcmp(line, "event") == 0) {
		free(rd->type);
		rd->type = xstrdup(v);
	} else if (strcmp(line, "id") == 0) {
		/* the daemon's ids are numbers; another is not taken */
		errno = 0;
		id = strtoll(v, &end, 10);
		if (*v >= '0' && *v <= '9' && *end == '\0' && errno == 0 &&
		    id >= 0) {
			free(rd->id);
			rd->id = xstrdup(v);
		}
	}
	/* retry: and unknown fields are ignored */
}

/* mosctl_api_stream's reader: split into lines (LF, CRLF). */
static int
events_feed(void *arg, const char *p, size_t len)
{
	struct events_rd	*rd = arg;
	const char		*nl;
	size_t			 n;

	while (len > 0 && !rd->done) {
		nl = memchr(p, '\n', len);
		n = nl != NULL ? (size_t)(nl - p) : len;
		if (rd->line.len + n > EVENTS_LINE_MAX) {
			fprintf(rd->ctl->err, "mosctl events: a line of the "
			    "stream is longer than %d bytes\n",
			    EVENTS_LINE_MAX);
			rd->bad = true;
			return 1;
		}
		sbuf_add(&rd->line, p, n);
		if (nl == NULL)
			break;
		if (rd->line.len > 0 && rd->line.s[rd->line.len - 1] == '\r')
			rd->line.len--;
		sbuf_add(&rd->line, "", 0);	/* allocated, NUL-terminated */
		rd->line.s[rd->line.len] = '\0';
		events_line(rd, rd->line.s);
		rd->line.len = 0;
		p += n + 1;
		len -= n + 1;
	}
	return rd->done || events_stop ? 1 : 0;
}

/* Sleep s seconds unless a signal stops us. */
static void
events_pause(int s)
{
	struct timespec	ts = { 0, 100 * 1000 * 1000 };
	int		i;

	for (i = 0; i < s * 10 && !events_stop; i++)
		nanosleep(&ts, NULL);
}

/* Parse the options. 0, or an exit status. */
static int
events_args(struct mosctl *ctl, int argc, char **argv, struct events_opts *o)
{
	const char	*opt, *val;
	char		*end;
	int		 i;
	long long	 v;

	memset(o, 0, sizeof *o);
	for (i = 0; i < argc; i++) {
		opt = argv[i];
		if (strcmp(opt, "--json") == 0) {
			ctl->json = true;
			continue;
		}
		if (strcmp(opt, "--follow") == 0 || strcmp(opt, "-f") == 0) {
			o->follow = true;
			continue;
		}
		if (strcmp(opt, "--after") != 0 && strcmp(opt, "--types") != 0 &&
		    strcmp(opt, "--limit") != 0)
			return mosctl_usage_error(ctl, "events", "unexpected '%s'", opt);
		if (i + 1 >= argc)
			return mosctl_usage_error(ctl, "events", "%s needs a value",
			    opt);
		val = argv[++i];
		if (strcmp(opt, "--types") == 0) {
			o->types = val;
			continue;
		}
		errno = 0;
		v = strtoll(val, &end, 10);
		if (*val < '0' || *val > '9' || *end != '\0' || errno != 0 ||
		    (strcmp(opt, "--limit") == 0 && (v < 1 || v > LONG_MAX)))
			return mosctl_usage_error(ctl, "events", "%s takes %s, not "
			    "'%s'", opt, strcmp(opt, "--after") == 0 ?
			    "an event id (0 or more)" : "a count (1 or more)",
			    val);
		if (strcmp(opt, "--after") == 0)
			o->after = (int64_t)v;
		else
			o->limit = (long)v;
	}
	return 0;
}

int
mosctl_events(struct mosctl *ctl, int argc, char **argv)
{
	struct events_opts	 o;
	struct events_rd	 rd;
	struct mosctl_stream	 st;
	struct sigaction	 sa, old_int, old_term;
	struct sbuf		 path = { 0 };
	char			 hdr[64], *enc;
	int			 rc, status, wait_s = 1;

	if ((rc = events_args(ctl, argc, argv, &o)) != 0)
		return rc;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = events_sig;	/* no SA_RESTART: reads end */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	memset(&rd, 0, sizeof rd);
	rd.ctl = ctl;
	rd.o = &o;
	rd.last_id = -1;
	memset(&st, 0, sizeof st);
	st.fn = events_feed;
	st.arg = &rd;
	st.idle_s = EVENTS_IDLE_S;
	st.cancel = &events_stop;
	for (;;) {
		/* the first time after --after; then after the last id seen */
		path.len = 0;
		sbuf_printf(&path, "/v1/events?after=%" PRId64, o.after);
		if (o.types != NULL) {
			if ((enc = evhttp_uriencode(o.types, -1, 0)) == NULL)
				fatalx("evhttp_uriencode failed");
			sbuf_printf(&path, "&types=%s", enc);
			free(enc);
		}
		hdr[0] = '\0';
		if (rd.last_id >= 0)
			snprintf(hdr, sizeof hdr, "Last-Event-ID: %" PRId64
			    "\r\n", rd.last_id);
		rc = mosctl_api_stream(ctl, path.s, hdr[0] != '\0' ? hdr :
		    NULL, &st, &status);
		/* what was read of a broken event is not kept */
		rd.line.len = 0;
		free(rd.type);
		free(rd.id);
		rd.type = rd.id = NULL;
		rd.has_data = false;
		sbuf_free(&rd.data);
		if (events_stop || rd.done) {
			rc = MOSCTL_EXIT_OK;
			break;
		}
		if (rd.bad) {
			rc = MOSCTL_EXIT_API;
			break;
		}
		if (!o.follow) {
			if (rc == MOSCTL_EXIT_OK) {
				fprintf(ctl->err, "mosctl events: the stream "
				    "ended before the newest event\n");
				rc = MOSCTL_EXIT_API;
			}
			break;
		}
		/* what retrying will not change: the set-up, a 4xx answer */
		if (status < 0 || (status >= 400 && status <= 499 &&
		    status != 408 && status != 429))
			break;
		if (status >= 200 && status <= 299)
			wait_s = 1;
		fprintf(ctl->err, "mosctl events: %s; reconnecting in %d s "
		    "(after id %" PRId64 ")\n", rc == MOSCTL_EXIT_OK ?
		    "the stream ended" : "no stream", wait_s,
		    rd.last_id >= 0 ? rd.last_id : o.after);
		events_pause(wait_s);
		if (events_stop) {
			rc = MOSCTL_EXIT_OK;
			break;
		}
		wait_s = wait_s * 2 > EVENTS_RETRY_MAX_S ? EVENTS_RETRY_MAX_S :
		    wait_s * 2;
	}
	sbuf_free(&path);
	sbuf_free(&rd.line);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	return rc;
}
