/*
 * mosctl history: the gateway's record of every frame sent and received.
 * `export` writes the capture format of conformance/capture.md. With --url,
 * `ls` and `export` read GET /v1/history of the running daemon instead of
 * the file, and print the same.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/http.h>
#include <jansson.h>

#include "gateway/gateway.h"
#include "tools/mosctl.h"
#include "tools/mosctl_api.h"

#define HISTORY_DEFAULT_RETENTION_S	604800

/* Usage of the history commands. */
void
mosctl_history_usage(FILE *f)
{
	fprintf(f,
	    "  history ls [--ncs NAME] [--type TYPE] [--since T] [--until T] "
	    "[--limit N]\n"
	    "  history export [--ncs NAME] [--type TYPE] [--since T] "
	    "[--until T] [-o FILE]\n"
	    "  (TYPE: a MOS message, e.g. mosObj, roCreate, heartbeat)\n"
	    "  history prune [--older-than DUR]   (default 7d; DUR: 500ms, 10s, 5m, "
	    "24h, 7d or seconds)\n"
	    "  (T: ISO 8601 UTC like 2026-11-29T10:00:00Z, or ms since "
	    "1970)\n");
}

/* Parse the shared filter options; -1 on a usage error. */
static int
history_options(struct mosctl *ctl, int argc, char **argv,
    struct history_filter *f, const char **out)
{
	static const struct option longopts[] = {
		{ "ncs", required_argument, NULL, 'n' },
		{ "type", required_argument, NULL, 't' },
		{ "since", required_argument, NULL, 's' },
		{ "until", required_argument, NULL, 'u' },
		{ "limit", required_argument, NULL, 'l' },
		{ "output", required_argument, NULL, 'o' },
		{ NULL, 0, NULL, 0 },
	};
	char	*end;
	int	 c;

	memset(f, 0, sizeof *f);
	optind = 0;
	while ((c = getopt_long(argc, argv, out != NULL ? "o:" : "", longopts,
	    NULL)) != -1) {
		switch (c) {
		case 'n':
			f->ncs = optarg;
			break;
		case 't':
			f->type = optarg;
			break;
		case 's':
		case 'u':
			if (util_parse_iso_ms(optarg, c == 's' ? &f->since_ms :
			    &f->until_ms) != 0) {
				fprintf(ctl->err, "mosctl: --%s: '%s' is not a "
				    "time (ISO 8601 UTC or ms since 1970)\n",
				    c == 's' ? "since" : "until", optarg);
				return -1;
			}
			break;
		case 'l':
			f->limit = (int)strtol(optarg, &end, 10);
			if (*end != '\0' || f->limit <= 0) {
				fprintf(ctl->err, "mosctl: --limit takes a "
				    "positive number\n");
				return -1;
			}
			break;
		case 'o':
			if (out == NULL)
				goto usage;
			*out = optarg;
			break;
		default:
			goto usage;
		}
	}
	if (optind != argc)
		goto usage;
	return 0;
usage:
	mosctl_history_usage(ctl->err);
	return -1;
}

/* Print history rows as ls does: a table, or capture lines (--json). */
static void
history_print(struct mosctl *ctl, const struct history_rec *v, size_t n)
{
	struct sbuf	sb = { NULL, 0, 0 };
	char		ts[32];
	size_t		i;

	if (!ctl->json)
		fprintf(ctl->out, "%-8s %-24s %-10s %-5s %-3s %6s %10s %-16s "
		    "%s\n",
		    "ID", "TIME", "NCS", "PORT", "DIR", "CONN", "MSGID", "TYPE",
		    "OUTCOME");
	for (i = 0; i < n; i++) {
		if (ctl->json) {
			sb.len = 0;
			history_capture_line(&sb, &v[i]);
			fprintf(ctl->out, "%s\n", sb.s);
			continue;
		}
		util_iso_ms(v[i].t_ms, ts, sizeof ts);
		fprintf(ctl->out, "%-8lld %-24s %-10s %-5s %-3s %6llu %10d "
		    "%-16s %s\n",
		    (long long)v[i].id, ts, v[i].ncs, gw_port_name(v[i].port),
		    v[i].dir == HISTORY_IN ? "in" : "out",
		    (unsigned long long)v[i].conn, (int)v[i].message_id,
		    v[i].type, v[i].outcome);
	}
	sbuf_free(&sb);
}

/* The query string of GET /v1/history for a filter. */
static void
history_query(struct sbuf *q, const struct history_filter *f,
    const char *more)
{
	char	*enc;

	sbuf_printf(q, "/v1/history?%s", more);
	if (f->ncs != NULL) {
		enc = evhttp_uriencode(f->ncs, -1, 0);
		sbuf_printf(q, "&ncs=%s", enc);
		free(enc);
	}
	if (f->type != NULL) {
		enc = evhttp_uriencode(f->type, -1, 0);
		sbuf_printf(q, "&type=%s", enc);
		free(enc);
	}
	if (f->since_ms != 0)
		sbuf_printf(q, "&since=%lld", (long long)f->since_ms);
	if (f->until_ms != 0)
		sbuf_printf(q, "&until=%lld", (long long)f->until_ms);
	if (f->limit != 0)
		sbuf_printf(q, "&limit=%d", f->limit);
}

/* A string member, copied ("" when absent). */
static char *
history_jstr(json_t *o, const char *key)
{
	const char	*s = json_string_value(json_object_get(o, key));

	return xstrdup(s != NULL ? s : "");
}

/* history ls over the API: the same rows from GET /v1/history. */
static int
history_ls_api(struct mosctl *ctl, const struct history_filter *f)
{
	struct sbuf		 q = { NULL, 0, 0 };
	struct history_rec	*v;
	json_t			*o, *a, *m;
	enum gw_port		 port;
	size_t			 i, n;
	int			 rc;

	history_query(&q, f, "order=newest");
	rc = mosctl_api_get_json(ctl, q.s, &o);
	sbuf_free(&q);
	if (rc != MOSCTL_EXIT_OK)
		return rc;
	a = json_object_get(o, "messages");
	n = json_array_size(a);
	v = xcalloc(n + 1, sizeof *v);
	json_array_foreach(a, i, m) {
		v[i].id = json_integer_value(json_object_get(m, "id"));
		if (util_parse_iso_ms(json_string_value(json_object_get(m,
		    "t")), &v[i].t_ms) != 0)
			v[i].t_ms = 0;
		v[i].ncs = history_jstr(m, "ncs");
		port = GW_PORT_LOWER;
		gw_port_parse(json_string_value(json_object_get(m, "port")),
		    &port);
		v[i].port = port;
		v[i].dir = strcmp(json_string_value(json_object_get(m, "dir")),
		    "in") == 0 ? HISTORY_IN : HISTORY_OUT;
		v[i].conn = (uint64_t)json_integer_value(json_object_get(m,
		    "conn"));
		v[i].message_id = (int32_t)json_integer_value(json_object_get(m,
		    "messageID"));
		v[i].type = history_jstr(m, "type");
		v[i].outcome = history_jstr(m, "outcome");
		v[i].xml = history_jstr(m, "xml");
	}
	history_print(ctl, v, n);
	history_recs_free(v, n);
	json_decref(o);
	return MOSCTL_EXIT_OK;
}

/* history ls: newest first. */
static int
history_ls(struct mosctl *ctl, int argc, char **argv)
{
	struct history_filter	 f;
	struct history_rec	*v;
	struct gwdb		*g;
	size_t			 n;
	int			 rc;

	if (history_options(ctl, argc, argv, &f, NULL) != 0)
		return MOSCTL_EXIT_USAGE;
	if (f.limit == 0)
		f.limit = 50;
	f.newest_first = true;
	if (ctl->url != NULL)
		return history_ls_api(ctl, &f);
	if ((g = mosctl_gwdb_open(ctl)) == NULL)
		return MOSCTL_EXIT_DB;
	if ((rc = history_list(g, &f, &v, &n)) != QUEUE_OK) {
		fprintf(ctl->err, "mosctl: history ls: %s\n",
		    queue_strerror(rc));
		gwdb_close(g);
		return MOSCTL_EXIT_DB;
	}
	history_print(ctl, v, n);
	history_recs_free(v, n);
	gwdb_close(g);
	return MOSCTL_EXIT_OK;
}

/* history export over the API: the capture download, written as it is. */
static int
history_export_api(struct mosctl *ctl, const struct history_filter *f,
    FILE *fp, size_t *n)
{
	struct sbuf		 q = { NULL, 0, 0 };
	struct mosctl_resp	 r;
	size_t			 i;
	int			 rc;

	history_query(&q, f, "format=capture");
	rc = mosctl_api_request(ctl, "GET", q.s, NULL, NULL, NULL, 0, &r);
	if (rc != 0) {
		sbuf_free(&q);
		return MOSCTL_EXIT_API;
	}
	if (r.status != 200 || strncmp(r.ctype,
	    "application/vnd.mosgw.capture+jsonl", 35) != 0) {
		fprintf(ctl->err, "mosctl: GET %s: %d %s\n", q.s, r.status,
		    r.body);
		rc = MOSCTL_EXIT_API;
	} else if (fwrite(r.body, 1, r.len, fp) != r.len) {
		fprintf(ctl->err, "mosctl: history export: %s\n",
		    strerror(errno));
		rc = MOSCTL_EXIT_FAIL;
	} else {
		for (i = 0; i < r.len; i++)
			*n += r.body[i] == '\n';
		rc = MOSCTL_EXIT_OK;
	}
	sbuf_free(&q);
	mosctl_resp_clear(&r);
	return rc;
}

/* history export: capture lines, oldest first, to stdout or -o FILE. */
static int
history_export_cmd(struct mosctl *ctl, int argc, char **argv)
{
	struct history_filter	 f;
	struct gwdb		*g;
	const char		*out = NULL;
	FILE			*fp;
	size_t			 n = 0;
	int			 rc;

	if (history_options(ctl, argc, argv, &f, &out) != 0)
		return MOSCTL_EXIT_USAGE;
	g = NULL;
	if (ctl->url == NULL && (g = mosctl_gwdb_open(ctl)) == NULL)
		return MOSCTL_EXIT_DB;
	fp = ctl->out;
	if (out != NULL && strcmp(out, "-") != 0 && (fp =
	    fopen(out, "w")) == NULL) {
		fprintf(ctl->err, "mosctl: %s: %s\n", out, strerror(errno));
		if (g != NULL)
			gwdb_close(g);
		return MOSCTL_EXIT_FAIL;
	}
	if (g == NULL) {
		rc = history_export_api(ctl, &f, fp, &n);
		if (fp != ctl->out && fclose(fp) != 0 && rc == MOSCTL_EXIT_OK)
			rc = MOSCTL_EXIT_FAIL;
		if (rc != MOSCTL_EXIT_OK)
			return rc;
		goto done;
	}
	rc = history_export(g, &f, fp, &n);
	if (fp != ctl->out && fclose(fp) != 0 && rc == QUEUE_OK)
		rc = QUEUE_EIO;
	gwdb_close(g);
	if (rc != QUEUE_OK) {
		fprintf(ctl->err, "mosctl: history export: %s\n",
		    queue_strerror(rc));
		return MOSCTL_EXIT_DB;
	}
done:
	/* on stderr, so that stdout stays a capture */
	fprintf(ctl->err, "mosctl: %zu message%s written to %s\n", n,
	    n == 1 ? "" : "s", out != NULL && strcmp(out, "-") != 0 ? out :
	    "stdout");
	return MOSCTL_EXIT_OK;
}

/* history prune [--older-than DUR] */
static int
history_prune_cmd(struct mosctl *ctl, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "older-than", required_argument, NULL, 'o' },
		{ NULL, 0, NULL, 0 },
	};
	struct gwdb	*g;
	int64_t		 ms = HISTORY_DEFAULT_RETENTION_S * 1000LL;
	size_t		 n = 0;
	int		 c, rc;

	optind = 0;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			if (util_parse_duration(optarg, &ms) != 0) {
				fprintf(ctl->err, "mosctl: --older-than: '%s' "
				    "is not a duration (500ms, 10s, 5m, 24h, "
				    "7d or seconds)\n", optarg);
				return MOSCTL_EXIT_USAGE;
			}
			break;
		default:
			mosctl_history_usage(ctl->err);
			return MOSCTL_EXIT_USAGE;
		}
	}
	if (optind != argc) {
		mosctl_history_usage(ctl->err);
		return MOSCTL_EXIT_USAGE;
	}
	if (ctl->url != NULL) {
		fprintf(ctl->err, "mosctl: history prune works on the database "
		    "file only (--db FILE)\n");
		return MOSCTL_EXIT_USAGE;
	}
	if ((g = mosctl_gwdb_open(ctl)) == NULL)
		return MOSCTL_EXIT_DB;
	rc = history_prune(g, ms, 0, &n);
	gwdb_close(g);
	if (rc != QUEUE_OK) {
		fprintf(ctl->err, "mosctl: history prune: %s\n",
		    queue_strerror(rc));
		return MOSCTL_EXIT_DB;
	}
	if (ctl->json)
		fprintf(ctl->out, "{\"pruned\":%zu}\n", n);
	else
		fprintf(ctl->out, "%zu history rows deleted\n", n);
	return MOSCTL_EXIT_OK;
}

/* mosctl history VERB ... */
int
mosctl_history(struct mosctl *ctl, int argc, char **argv)
{
	static const struct mosctl_verb verbs[] = {
		{ "ls", history_ls },
		{ "export", history_export_cmd },
		{ "prune", history_prune_cmd },
		{ NULL, NULL },
	};

	return mosctl_dispatch(ctl, "history", verbs, mosctl_history_usage,
	    argc, argv);
}
