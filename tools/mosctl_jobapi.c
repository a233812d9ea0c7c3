/*
 * mosctl job over the gateway's HTTP API (--url): ls (GET /v1/jobs, page
 * after page), show (GET /v1/jobs/{id}), requeue, cancel and rerun (POST
 * /v1/jobs/{id}/VERB) and submit (POST /v1/assets/{objID}/jobs with an
 * Idempotency-Key). The answers are turned into struct queue_job and
 * printed by the same table and text printers as with --db; --json prints
 * the API's objects, one a line.
 */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/http.h>
#include <jansson.h>

#include "gateway/gateway.h"
#include "queue/queue.h"
#include "tools/mosctl.h"
#include "tools/mosctl_api.h"

#define JOBAPI_PAGE	100	/* jobs a request (the API allows 1000) */
#define JOBAPI_KEY_MAX	128	/* Idempotency-Key */

/* The options of the API's job verbs. */
struct jobapi_opts {
	const char	*state;		/* canonical name, NULL: any */
	const char	*kind;
	int		 limit;		/* 0: all */
	const char	*payload;
	int		 priority;	/* -1: the API's default */
	int64_t		 after;		/* 0: none */
	const char	*key;
	int		 nargs;		/* operands after the verb */
	char		**args;
};

/*
 * Parse the options of a verb; only those in allowed (their letters) are
 * taken. nargs operands must follow. A MOSCTL_EXIT_* status.
 */
static int
jobapi_parse(struct mosctl *ctl, int argc, char **argv, const char *allowed,
    int nargs, struct jobapi_opts *o)
{
	static const struct option longopts[] = {
		{ "state", required_argument, NULL, 's' },
		{ "kind", required_argument, NULL, 'k' },
		{ "limit", required_argument, NULL, 'n' },
		{ "payload", required_argument, NULL, 'p' },
		{ "priority", required_argument, NULL, 'P' },
		{ "after", required_argument, NULL, 'a' },
		{ "key", required_argument, NULL, 'K' },
		{ "json", no_argument, NULL, 'j' },
		{ NULL, 0, NULL, 0 },
	};
	enum queue_state	 st;
	int			 c;

	memset(o, 0, sizeof *o);
	o->priority = -1;
	optind = 0;	/* glibc: start over, argv[0] is the verb */
	while ((c = job_getopt_only(ctl, argc, argv, longopts, allowed)) !=
	    -1) {
		if (c == JOB_GETOPT_ERR)
			return MOSCTL_EXIT_USAGE;
		switch (c) {
		case 's':
			if (queue_state_parse(optarg, &st) != 0)
				return job_usage_error(ctl, "unknown state "
				    "'%s' (QUEUED, RUNNING, DONE, FAILED or "
				    "CANCELLED)", optarg);
			o->state = queue_state_name(st);
			break;
		case 'k':
			o->kind = optarg;
			break;
		case 'n':
			if (mosctl_job_number(optarg, &o->limit) != 0 ||
			    o->limit == 0)
				return job_usage_error(ctl, "bad --limit '%s'",
				    optarg);
			break;
		case 'p':
			o->payload = optarg;
			break;
		case 'P':
			if (mosctl_job_number(optarg, &o->priority) != 0)
				return job_usage_error(ctl, "bad --priority "
				    "'%s' (0 to 9)", optarg);
			break;
		case 'a':
			if ((o->after = mosctl_job_id(optarg)) < 0)
				return job_usage_error(ctl, "bad job id '%s'",
				    optarg);
			break;
		case 'K':
			/* printable ASCII only: it goes into a header line */
			if (!mosctl_token_ok(optarg, JOBAPI_KEY_MAX))
				return job_usage_error(ctl, "bad --key: 1 to "
				    "%d printable ASCII characters, no "
				    "spaces", JOBAPI_KEY_MAX);
			o->key = optarg;
			break;
		}
	}
	o->nargs = argc - optind;
	o->args = argv + optind;
	if (o->nargs != nargs)
		return job_usage_error(ctl, "job %s takes %s", argv[0],
		    nargs == 0 ? "no operand" : nargs == 1 ? "one job id" :
		    "OBJID and KIND");
	return MOSCTL_EXIT_OK;
}

/* A string member (NULL if absent), an integer member, an ISO time in ms. */
static const char *
jstr(json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

static int64_t
jint(json_t *o, const char *key)
{
	return (int64_t)json_integer_value(json_object_get(o, key));
}

static int64_t
jtime(json_t *o, const char *key)
{
	const char	*s = jstr(o, key);
	int64_t		 ms;

	return s != NULL && util_parse_iso_ms(s, &ms) == 0 ? ms : 0;
}

static enum queue_state
jstate(json_t *o, const char *key)
{
	enum queue_state	st = QUEUE_QUEUED;
	const char		*s = jstr(o, key);

	if (s != NULL)
		queue_state_parse(s, &st);
	return st;
}

static char *
jdup(json_t *o, const char *key)
{
	const char	*s = jstr(o, key);

	return s != NULL ? xstrdup(s) : NULL;
}

/* A job of the API as the queue's struct (clear with queue_job_clear). */
static void
jobapi_job(json_t *o, struct queue_job *j)
{
	json_t	*p;

	memset(j, 0, sizeof *j);
	j->id = jint(o, "jobId");
	j->lane = xstrdup(jstr(o, "lane") != NULL ? jstr(o, "lane") : "-");
	j->kind = xstrdup(jstr(o, "kind") != NULL ? jstr(o, "kind") : "-");
	j->state = jstate(o, "state");
	j->blocked = json_is_true(json_object_get(o, "blocked"));
	j->priority = (int)jint(o, "priority");
	j->attempts = (int)jint(o, "attempt");
	j->max_attempts = (int)jint(o, "maxAttempts");
	j->run_after_ms = jtime(o, "runAfter");
	j->lease_until_ms = jtime(o, "leaseUntil");
	j->worker = jdup(o, "worker");
	j->after_job = jint(o, "after");
	j->last_error = jdup(o, "error");
	j->created_ms = jtime(o, "created");
	j->updated_ms = jtime(o, "updated");
	if ((p = json_object_get(o, "payload")) != NULL) {
		j->payload = json_dumps(p, JSON_COMPACT | JSON_ENCODE_ANY);
		j->payload_len = j->payload != NULL ? strlen(j->payload) : 0;
	}
}

/* The path of a job: /v1/jobs/ID[/verb]. */
static void
jobapi_path(char *buf, size_t len, int64_t id, const char *verb)
{
	snprintf(buf, len, "/v1/jobs/%lld%s%s", (long long)id,
	    verb != NULL ? "/" : "", verb != NULL ? verb : "");
}

/* ls: follow the pages of GET /v1/jobs up to --limit (default: all). */
static int
jobapi_ls(struct mosctl *ctl, int argc, char **argv)
{
	struct jobapi_opts	 o;
	struct queue_job	 j;
	struct sbuf		 q = { NULL, 0, 0 };
	json_t			*page, *a, *v;
	char			*enc;
	int64_t			 after = 0, shown = 0, want, now;
	size_t			 i, n;
	int			 rc;

	if ((rc = jobapi_parse(ctl, argc, argv, "skn", 0, &o)) != 0)
		return rc;
	if (!ctl->json)
		mosctl_job_head(ctl->out);
	do {
		want = o.limit > 0 && o.limit - shown < JOBAPI_PAGE ?
		    o.limit - shown : JOBAPI_PAGE;
		q.len = 0;
		sbuf_printf(&q, "/v1/jobs?limit=%lld", (long long)want);
		if (o.state != NULL)
			sbuf_printf(&q, "&state=%s", o.state);
		if (o.kind != NULL) {
			enc = evhttp_uriencode(o.kind, -1, 0);
			sbuf_printf(&q, "&kind=%s", enc);
			free(enc);
		}
		if (after > 0)
			sbuf_printf(&q, "&after=%lld", (long long)after);
		if ((rc = mosctl_api_get_json(ctl, q.s, &page)) != 0)
			break;
		now = util_now_ms();
		a = json_object_get(page, "jobs");
		n = json_array_size(a);
		json_array_foreach(a, i, v) {
			if (ctl->json) {
				mosctl_json_line(ctl, v);
				continue;
			}
			jobapi_job(v, &j);
			mosctl_job_row(ctl->out, &j, now);
			queue_job_clear(&j);
		}
		shown += (int64_t)n;
		after = jint(page, "next");
		json_decref(page);
	} while (after > 0 && (o.limit == 0 || shown < o.limit));
	sbuf_free(&q);
	return rc;
}

/* show: the job and its history. */
static int
jobapi_show(struct mosctl *ctl, int argc, char **argv)
{
	struct jobapi_opts	 o;
	struct queue_job	 j;
	struct queue_event	*ev;
	json_t			*job, *h, *v;
	char			 path[64];
	int64_t			 id;
	size_t			 i, n;
	int			 rc;

	if ((rc = jobapi_parse(ctl, argc, argv, "", 1, &o)) != 0)
		return rc;
	if ((id = mosctl_job_id(o.args[0])) < 0)
		return job_usage_error(ctl, "bad job id '%s'", o.args[0]);
	jobapi_path(path, sizeof path, id, NULL);
	if ((rc = mosctl_api_get_json(ctl, path, &job)) != 0)
		return rc;
	if (ctl->json) {
		mosctl_json_line(ctl, job);
		json_decref(job);
		return MOSCTL_EXIT_OK;
	}
	jobapi_job(job, &j);
	h = json_object_get(job, "history");
	n = json_array_size(h);
	ev = xcalloc(n > 0 ? n : 1, sizeof *ev);
	json_array_foreach(h, i, v) {
		ev[i].job_id = id;
		ev[i].t_ms = jtime(v, "t");
		ev[i].from = jstate(v, "from");
		ev[i].to = jstate(v, "to");
		ev[i].attempt = (int)jint(v, "attempt");
		ev[i].worker = jdup(v, "worker");
		ev[i].note = jdup(v, "note");
	}
	mosctl_job_show_text(ctl->out, &j, ev, n, util_now_ms());
	queue_events_free(ev, n);
	queue_job_clear(&j);
	json_decref(job);
	return MOSCTL_EXIT_OK;
}

/* requeue, cancel, rerun of one job (admin). */
static int
jobapi_admin(struct mosctl *ctl, int argc, char **argv)
{
	struct jobapi_opts	 o;
	struct queue_job	 j;
	json_t			*job;
	char			 path[80];
	int64_t			 id;
	int			 rc;

	if ((rc = jobapi_parse(ctl, argc, argv, "", 1, &o)) != 0)
		return rc;
	if ((id = mosctl_job_id(o.args[0])) < 0)
		return job_usage_error(ctl, "bad job id '%s'", o.args[0]);
	jobapi_path(path, sizeof path, id, argv[0]);
	if ((rc = mosctl_api_call(ctl, "POST", path, NULL, NULL, NULL, 0,
	    &job)) != 0)
		return rc;
	if (ctl->json)
		mosctl_json_line(ctl, job);
	else if (strcmp(argv[0], "rerun") == 0)
		mosctl_job_counted(ctl->out, "re-run", (size_t)jint(job,
		    "rerun"));
	else {
		jobapi_job(job, &j);
		mosctl_job_action(ctl->out, strcmp(argv[0], "cancel") == 0 ?
		    "cancelled" : "requeued", id, &j);
		queue_job_clear(&j);
	}
	json_decref(job);
	return MOSCTL_EXIT_OK;
}

/* submit OBJID KIND: a job for the MAM's workers. */
static int
jobapi_submit(struct mosctl *ctl, int argc, char **argv)
{
	struct jobapi_opts	 o;
	json_error_t		 je;
	json_t			*req, *p, *ans;
	char			*enc, *path, *body, *hdr = NULL;
	int			 rc;

	if ((rc = jobapi_parse(ctl, argc, argv, "pPaK", 2, &o)) != 0)
		return rc;
	if (o.args[0][0] == '\0')
		return job_usage_error(ctl, "%s", "an empty OBJID");
	req = json_pack("{s:s}", "kind", o.args[1]);
	if (o.payload != NULL) {
		if ((p = json_loads(o.payload, 0, &je)) == NULL ||
		    !json_is_object(p)) {
			json_decref(p);
			json_decref(req);
			return job_usage_error(ctl, "--payload is not a JSON "
			    "object: %s", p == NULL ? je.text : o.payload);
		}
		json_object_set_new(req, "payload", p);
	}
	if (o.priority >= 0)
		json_object_set_new(req, "priority", json_integer(o.priority));
	if (o.after > 0)
		json_object_set_new(req, "after", json_integer(o.after));
	if (o.key != NULL)
		xasprintf(&hdr, "Idempotency-Key: %s\r\n", o.key);
	enc = evhttp_uriencode(o.args[0], -1, 0);
	xasprintf(&path, "/v1/assets/%s/jobs", enc);
	free(enc);
	if ((body = json_dumps(req, JSON_COMPACT)) == NULL)
		fatalx("json_dumps failed");
	json_decref(req);
	rc = mosctl_api_call(ctl, "POST", path, hdr, "application/json", body,
	    strlen(body), &ans);
	free(body);
	free(path);
	free(hdr);
	if (rc != 0)
		return rc;
	if (ctl->json)
		mosctl_json_line(ctl, ans);
	else
		fprintf(ctl->out, "job #%lld: %s (asset %s, kind %s)\n",
		    (long long)jint(ans, "jobId"), jstr(ans, "status") != NULL ?
		    jstr(ans, "status") : "?", o.args[0], o.args[1]);
	json_decref(ans);
	return MOSCTL_EXIT_OK;
}

/* stats and prune: on the database file only. */
static int
jobapi_db_only(struct mosctl *ctl, int argc, char **argv)
{
	(void)argc;
	fprintf(ctl->err, "mosctl: job %s works on the database file only "
	    "(--db FILE); over the API: mosctl queue stats\n", argv[0]);
	return MOSCTL_EXIT_USAGE;
}

int
mosctl_job_api(struct mosctl *ctl, int argc, char **argv)
{
	static const struct mosctl_verb verbs[] = {
		{ "ls", jobapi_ls },
		{ "show", jobapi_show },
		{ "requeue", jobapi_admin },
		{ "cancel", jobapi_admin },
		{ "rerun", jobapi_admin },
		{ "submit", jobapi_submit },
		{ "claim", mosctl_job_worker },
		{ "heartbeat", mosctl_job_worker },
		{ "complete", mosctl_job_worker },
		{ "fail", mosctl_job_worker },
		{ "stats", jobapi_db_only },
		{ "prune", jobapi_db_only },
		{ NULL, NULL },
	};
	int	rc;

	rc = mosctl_dispatch(ctl, "job", verbs, mosctl_job_usage, argc, argv);
	if (fflush(ctl->out) != 0 && rc == MOSCTL_EXIT_OK) {
		fprintf(ctl->err, "mosctl job: write error: %s\n",
		    strerror(errno));
		rc = MOSCTL_EXIT_FAIL;
	}
	return rc;
}
