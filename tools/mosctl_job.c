/*
 * mosctl job: the operator's window onto the job queue, straight on the
 * database file (so jobs can be recovered while the gateway is down).
 *
 * Each verb is parsed into a struct job_cmd, run against the queue, and its
 * result printed as a table or, with --json, as one JSON object per line.
 * The table and text printers are shared with the same verbs over the HTTP
 * API (mosctl_jobapi.c).
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "gateway/gateway.h"
#include "queue/queue.h"
#include "tools/mosctl.h"

#define JOB_IDS_MAX	256
#define JOB_STATE_UNSET	(-2)	/* no --state given */
#define JOB_ERR_WIDTH	(MOSCTL_JOB_ERR_LEN - 4)

enum job_verb {
	JOB_LS,
	JOB_SHOW,
	JOB_REQUEUE,
	JOB_CANCEL,
	JOB_RERUN,
	JOB_STATS,
	JOB_PRUNE,
};

/* One parsed command: what the CLI (and later the REST API) asks for. */
struct job_cmd {
	enum job_verb		 verb;
	struct queue_filter	 filter;
	bool			 filtered;	/* a filter option was given */
	bool			 all;		/* requeue --all */
	int64_t			 ids[JOB_IDS_MAX];
	size_t			 nids;
	int			 extra_attempts;	/* -1: not given */
	const char		*note;
	int64_t			 done_age_ms;	/* prune: 0 = default */
	int64_t			 failed_age_ms;
};

static const struct {
	const char	*name;
	enum job_verb	 verb;
	int		 min_ids, max_ids;	/* -1: any number */
} job_verbs[] = {
	{ "ls", JOB_LS, 0, 0 },
	{ "show", JOB_SHOW, 1, 1 },
	{ "requeue", JOB_REQUEUE, 0, -1 },
	{ "cancel", JOB_CANCEL, 1, -1 },
	{ "rerun", JOB_RERUN, 1, 1 },
	{ "stats", JOB_STATS, 0, 0 },
	{ "prune", JOB_PRUNE, 0, 0 },
};

/* The usage of the job commands. */
void
mosctl_job_usage(FILE *f)
{
	fprintf(f,
	    "  job ls [--state S] [--kind K] [--lane L] [--older-than DUR]\n"
	    "         [--limit N] [--after ID]   list jobs (default 100, by id)\n"
	    "  job show ID                      one job and its history\n"
	    "  job requeue ID... [--extra-attempts N] [--note TEXT]\n"
	    "  job requeue --state FAILED|CANCELLED|ANY [--kind K] [--lane L]\n"
	    "         [--older-than DUR] [--limit N] [--extra-attempts N]\n"
	    "  job requeue --all [--extra-attempts N]   every FAILED job\n"
	    "  job cancel ID... [--note TEXT]   (and the jobs waiting for it)\n"
	    "  job rerun ID [--note TEXT]       re-run a chain from this step\n"
	    "  job stats                        counts, oldest due job, retries\n"
	    "  job prune [--done-age DUR] [--failed-age DUR]   (24h, 7d)\n"
	    "  states: QUEUED RUNNING DONE FAILED CANCELLED\n"
	    "  over the API (--url): job ls [--state S] [--kind K] "
	    "[--limit N],\n"
	    "  job show|requeue|cancel|rerun ID, and\n"
	    "  job submit OBJID KIND [--payload JSON] [--priority N] "
	    "[--after ID]\n"
	    "         [--key IDEMPOTENCY-KEY]   a job for the MAM's workers\n"
	    "  job claim --kind K [--kind K]... --worker NAME [--max N]\n"
	    "         [--lease DUR] [--wait DUR]   take due jobs of lane mam "
	    "(exit 1: none)\n"
	    "  job heartbeat ID --lease-token T [--lease DUR]\n"
	    "  job complete ID --lease-token T [--result JSON] [--asset JSON]\n"
	    "  job fail ID --lease-token T --error TEXT [--no-retry]\n");
}

/*
 * getopt_long over a verb's arguments (set optind to 0 first: argv[0] is
 * the verb): the next option, -1 at the end, or JOB_GETOPT_ERR after
 * printing what is wrong.
 */
int
job_getopt(struct mosctl *ctl, int argc, char **argv,
    const struct option *longopts)
{
	int	c;

	opterr = 0;
	c = getopt_long(argc, argv, ":", longopts, NULL);
	if (c == '?' || c == ':') {
		job_usage_error(ctl, c == ':' ? "option '%s' needs a value" :
		    "unknown option '%s'", argv[optind - 1]);
		return JOB_GETOPT_ERR;
	}
	return c;
}

/*
 * job_getopt for the verbs over the API: --json sets ctl->json and is not
 * returned; an option whose letter is not in allowed is refused ("--X
 * does not go with job VERB").
 */
int
job_getopt_only(struct mosctl *ctl, int argc, char **argv,
    const struct option *longopts, const char *allowed)
{
	int	c, k;

	while ((c = job_getopt(ctl, argc, argv, longopts)) == 'j')
		ctl->json = true;
	if (c == -1 || c == JOB_GETOPT_ERR || strchr(allowed, c) != NULL)
		return c;
	for (k = 0; longopts[k].val != c; k++)
		;
	job_usage_error(ctl, "--%s does not go with job %s", longopts[k].name,
	    argv[0]);
	return JOB_GETOPT_ERR;
}

/* A value that goes into a request as it is: 1 to max printable ASCII. */
bool
mosctl_token_ok(const char *s, size_t max)
{
	const char	*p;

	for (p = s; *p > 0x20 && *p < 0x7f; p++)
		;
	return *p == '\0' && p != s && (size_t)(p - s) <= max;
}

/* Parse a job id ("12" or "#12"); -1 if it is not one. */
int64_t
mosctl_job_id(const char *s)
{
	char		*end;
	long long	 v;

	if (*s == '#')
		s++;
	if (!isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno != 0 || *end != '\0' || v <= 0)
		return -1;
	return v;
}

/* A verb of mosctl_jobapi.c and mosctl_worker.c that --db has not. */
static bool
job_api_only(const char *verb)
{
	static const char *const api_only[] = { "submit", "claim",
	    "heartbeat", "complete", "fail", NULL };
	size_t	i;

	for (i = 0; api_only[i] != NULL; i++)
		if (strcmp(verb, api_only[i]) == 0)
			return true;
	return false;
}

/* Parse a --state value (a state name, or ANY). */
static int
job_parse_state(const char *s, int *state)
{
	enum queue_state	st;

	if (strcasecmp(s, "any") == 0 || strcasecmp(s, "all") == 0) {
		*state = -1;
		return 0;
	}
	if (queue_state_parse(s, &st) != 0)
		return -1;
	*state = (int)st;
	return 0;
}

/* Parse a non-negative int option (at most 1000000); -1 if it is not one. */
int
mosctl_job_number(const char *s, int *v)
{
	char	*end;
	long	 l;

	errno = 0;
	l = strtol(s, &end, 10);
	if (errno != 0 || *end != '\0' || end == s || l < 0 || l > 1000000)
		return -1;
	*v = (int)l;
	return 0;
}

/* Parse one option of a verb into cmd; a MOSCTL_EXIT_* (0: fine). */
static int
job_parse_opt(struct mosctl *ctl, struct job_cmd *cmd, int c, const char *arg)
{
	int64_t	v;

	switch (c) {
	case 's':
		if (job_parse_state(arg, &cmd->filter.state) != 0)
			return job_usage_error(ctl, "unknown state '%s' (QUEUED, "
			    "RUNNING, DONE, FAILED, CANCELLED or ANY)", arg);
		break;
	case 'k':
		cmd->filter.kind = arg;
		break;
	case 'l':
		cmd->filter.lane = arg;
		break;
	case 'o':
		if (util_parse_duration(arg, &cmd->filter.older_than_ms) != 0)
			return job_usage_error(ctl, "bad duration '%s' (e.g. "
			    "90s, 10m, 2h, 7d)", arg);
		break;
	case 'n':
		if (mosctl_job_number(arg, &cmd->filter.limit) != 0)
			return job_usage_error(ctl, "bad --limit '%s'", arg);
		break;
	case 'a':
		if ((v = mosctl_job_id(arg)) < 0)
			return job_usage_error(ctl, "bad job id '%s'", arg);
		cmd->filter.after_id = v;
		break;
	case 'x':
		if (mosctl_job_number(arg, &cmd->extra_attempts) != 0)
			return job_usage_error(ctl, "bad --extra-attempts '%s'",
			    arg);
		return MOSCTL_EXIT_OK;
	case 't':
		cmd->note = arg;
		return MOSCTL_EXIT_OK;
	case 'j':
		ctl->json = true;
		return MOSCTL_EXIT_OK;
	case 'A':
		cmd->all = true;
		break;
	case 'D':
	case 'F':
		if (util_parse_duration(arg, c == 'D' ? &cmd->done_age_ms :
		    &cmd->failed_age_ms) != 0 || (c == 'D' ? cmd->done_age_ms :
		    cmd->failed_age_ms) == 0)
			return job_usage_error(ctl, "bad age '%s' (e.g. 12h, "
			    "7d)", arg);
		return MOSCTL_EXIT_OK;
	default:
		return MOSCTL_EXIT_USAGE;
	}
	cmd->filtered = true;
	return MOSCTL_EXIT_OK;
}

/* Check that the options given make sense for the verb. */
static int
job_check(struct mosctl *ctl, struct job_cmd *cmd, int min_ids, int max_ids)
{
	bool	bulk = cmd->verb == JOB_REQUEUE && cmd->nids == 0;

	if (cmd->filtered && cmd->verb != JOB_LS && !bulk)
		return job_usage_error(ctl, "%s", "filters (--state, --kind, "
		    "--lane, --older-than, --limit, --after, --all) go with "
		    "'ls' or with 'requeue' without ids");
	if (cmd->extra_attempts >= 0 && cmd->verb != JOB_REQUEUE)
		return job_usage_error(ctl, "%s", "--extra-attempts goes with "
		    "'requeue'");
	if (cmd->note != NULL && cmd->verb != JOB_REQUEUE &&
	    cmd->verb != JOB_CANCEL && cmd->verb != JOB_RERUN)
		return job_usage_error(ctl, "%s", "--note goes with 'requeue', "
		    "'cancel' or 'rerun'");
	if ((cmd->done_age_ms >= 0 || cmd->failed_age_ms >= 0) &&
	    cmd->verb != JOB_PRUNE)
		return job_usage_error(ctl, "%s", "--done-age and --failed-age "
		    "go with 'prune'");
	if (bulk && !cmd->all && cmd->filter.state == JOB_STATE_UNSET)
		return job_usage_error(ctl, "%s", "requeue needs job ids, "
		    "--state STATE or --all");
	if (cmd->filter.state == JOB_STATE_UNSET)
		cmd->filter.state = bulk ? QUEUE_FAILED : -1;
	if (cmd->extra_attempts < 0)
		cmd->extra_attempts = 0;	/* the job's own allowance */
	if (cmd->done_age_ms < 0)
		cmd->done_age_ms = 0;		/* the default age */
	if (cmd->failed_age_ms < 0)
		cmd->failed_age_ms = 0;
	if ((int)cmd->nids < min_ids || (max_ids >= 0 &&
	    (int)cmd->nids > max_ids))
		return job_usage_error(ctl, "%s", max_ids == 0 ? "this command "
		    "takes no job id" : max_ids == 1 ? "give one job id" :
		    "give at least one job id");
	return MOSCTL_EXIT_OK;
}

/* Parse "VERB [options] [ids]" into cmd. */
static int
job_parse(struct mosctl *ctl, int argc, char **argv, struct job_cmd *cmd)
{
	static const struct option longopts[] = {
		{ "state", required_argument, NULL, 's' },
		{ "kind", required_argument, NULL, 'k' },
		{ "lane", required_argument, NULL, 'l' },
		{ "older-than", required_argument, NULL, 'o' },
		{ "limit", required_argument, NULL, 'n' },
		{ "after", required_argument, NULL, 'a' },
		{ "extra-attempts", required_argument, NULL, 'x' },
		{ "note", required_argument, NULL, 't' },
		{ "all", no_argument, NULL, 'A' },
		{ "done-age", required_argument, NULL, 'D' },
		{ "failed-age", required_argument, NULL, 'F' },
		{ "json", no_argument, NULL, 'j' },
		{ NULL, 0, NULL, 0 },
	};
	size_t	v;
	int	c, rc;

	memset(cmd, 0, sizeof *cmd);
	cmd->filter.state = JOB_STATE_UNSET;
	cmd->extra_attempts = -1;
	cmd->done_age_ms = cmd->failed_age_ms = -1;
	if (argc < 1)
		return job_usage_error(ctl, "%s", "missing verb (ls, show, "
		    "requeue, cancel, rerun, stats, prune)");
	for (v = 0; v < sizeof job_verbs / sizeof *job_verbs; v++) {
		if (strcmp(argv[0], job_verbs[v].name) == 0)
			break;
	}
	if (v == sizeof job_verbs / sizeof *job_verbs && job_api_only(argv[0]))
		return job_usage_error(ctl, "job %s works over the API only "
		    "(--url URL --token-file FILE)", argv[0]);
	if (v == sizeof job_verbs / sizeof *job_verbs)
		return job_usage_error(ctl, "unknown verb '%s'", argv[0]);
	cmd->verb = job_verbs[v].verb;

	optind = 0;	/* glibc: start over, argv[0] is the verb */
	while ((c = job_getopt(ctl, argc, argv, longopts)) != -1) {
		if (c == JOB_GETOPT_ERR)
			return MOSCTL_EXIT_USAGE;
		if ((rc = job_parse_opt(ctl, cmd, c, optarg)) != 0)
			return rc;
	}
	for (; optind < argc; optind++) {
		if (cmd->nids == JOB_IDS_MAX)
			return job_usage_error(ctl, "%s", "too many job ids");
		if ((cmd->ids[cmd->nids++] = mosctl_job_id(argv[optind])) < 0)
			return job_usage_error(ctl, "bad job id '%s'",
			    argv[optind]);
	}
	return job_check(ctl, cmd, job_verbs[v].min_ids, job_verbs[v].max_ids);
}

/* The exit status for a queue rc. */
static int
job_exit(int rc)
{
	switch (rc) {
	case QUEUE_OK:
	case QUEUE_EXISTS:
		return MOSCTL_EXIT_OK;
	case QUEUE_ENOTFOUND:
	case QUEUE_ESTATE:
	case QUEUE_ELOST:
		return MOSCTL_EXIT_FAIL;
	case QUEUE_EINVAL:
		return MOSCTL_EXIT_USAGE;
	}
	return MOSCTL_EXIT_DB;
}

/* Report a failed queue call; its exit status. */
static int
job_fail(struct mosctl *ctl, struct queue *q, int rc, int64_t id)
{
	if (id > 0)
		fprintf(ctl->err, "mosctl job: #%lld: %s\n", (long long)id,
		    queue_errmsg(q));
	else
		fprintf(ctl->err, "mosctl job: %s\n", queue_errmsg(q));
	return job_exit(rc);
}

/* A JSON string (or null). */
static void
json_str(FILE *f, const char *s)
{
	const unsigned char	*p;

	if (s == NULL) {
		fputs("null", f);
		return;
	}
	fputc('"', f);
	for (p = (const unsigned char *)s; *p != '\0'; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p == '\n')
			fputs("\\n", f);
		else if (*p < 0x20 || *p == 0x7f)
			fprintf(f, "\\u%04x", *p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

/* A time in ms as ISO 8601 UTC with milliseconds. */
static const char *
job_time(int64_t ms, char *buf, size_t len)
{
	struct tm	tm;
	time_t		t = (time_t)(ms / 1000);
	size_t		n;

	if (ms <= 0 || gmtime_r(&t, &tm) == NULL ||
	    (n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm)) == 0)
		return "-";
	snprintf(buf + n, len - n, ".%03dZ", (int)(ms % 1000));
	return buf;
}

/* A span in ms in two units at most: 3d4h, 2h5m, 4m10s, 12s, 250ms. */
static const char *
job_span(int64_t ms, char *buf, size_t len)
{
	int64_t	s = ms / 1000;

	if (ms < 0)
		ms = -ms, s = -s;
	if (ms < 1000)
		snprintf(buf, len, "%lldms", (long long)ms);
	else if (s < 60)
		snprintf(buf, len, "%llds", (long long)s);
	else if (s < 3600)
		snprintf(buf, len, "%lldm%llds", (long long)(s / 60),
		    (long long)(s % 60));
	else if (s < 86400)
		snprintf(buf, len, "%lldh%lldm", (long long)(s / 3600),
		    (long long)(s % 3600 / 60));
	else
		snprintf(buf, len, "%lldd%lldh", (long long)(s / 86400),
		    (long long)(s % 86400 / 3600));
	return buf;
}

/* One job as a JSON object (without the closing brace). */
static void
job_json_open(FILE *f, const struct queue_job *j)
{
	fprintf(f, "{\"id\":%lld,\"state\":\"%s\",\"blocked\":%s,\"lane\":",
	    (long long)j->id, queue_state_name(j->state),
	    j->blocked ? "true" : "false");
	json_str(f, j->lane);
	fputs(",\"kind\":", f);
	json_str(f, j->kind);
	fprintf(f, ",\"priority\":%d,\"attempts\":%d,\"max_attempts\":%d,"
	    "\"run_after_ms\":%lld,\"lease_until_ms\":%lld,\"lease_gen\":%lld,"
	    "\"created_ms\":%lld,\"updated_ms\":%lld,\"after_job\":%lld,"
	    "\"payload_len\":%zu,\"worker\":", j->priority, j->attempts,
	    j->max_attempts, (long long)j->run_after_ms,
	    (long long)j->lease_until_ms, (long long)j->lease_gen,
	    (long long)j->created_ms, (long long)j->updated_ms,
	    (long long)j->after_job, j->payload_len);
	json_str(f, j->worker);
	fputs(",\"idem_key\":", f);
	json_str(f, j->idem_key);
	fputs(",\"coalesce_key\":", f);
	json_str(f, j->coalesce_key);
	fputs(",\"last_error\":", f);
	json_str(f, j->last_error);
}

/* When a QUEUED job is due, in words. */
static const char *
job_due(const struct queue_job *j, int64_t now, char *buf, size_t len)
{
	char	span[32];

	if (j->state != QUEUE_QUEUED)
		return "-";
	if (j->blocked)
		snprintf(buf, len, "after #%lld", (long long)j->after_job);
	else if (j->run_after_ms <= now)
		snprintf(buf, len, "now");
	else
		snprintf(buf, len, "in %s", job_span(j->run_after_ms - now, span,
		    sizeof span));
	return buf;
}

/* The head of the ls table. */
void
mosctl_job_head(FILE *f)
{
	fprintf(f, "%-8s %-9s %3s %-16s %-12s %-7s %-8s %-10s %s\n", "ID",
	    "STATE", "PRI", "LANE", "KIND", "TRIES", "AGE", "DUE",
	    "LAST ERROR");
}

/* One line of the ls table. */
void
mosctl_job_row(FILE *f, const struct queue_job *j, int64_t now)
{
	char	tries[24], age[32], due[32], err[MOSCTL_JOB_ERR_LEN];

	snprintf(tries, sizeof tries, "%d/%d", j->attempts, j->max_attempts);
	fprintf(f, "%-8lld %-9s %3d %-16s %-12s %-7s %-8s %-10s %s\n",
	    (long long)j->id, queue_state_name(j->state), j->priority, j->lane,
	    j->kind, tries, job_span(now - j->updated_ms, age, sizeof age),
	    job_due(j, now, due, sizeof due), mosctl_job_err(j->last_error,
	    err));
}

/* An error for a table: one line, cut to JOB_ERR_WIDTH; "" for none. */
const char *
mosctl_job_err(const char *s, char err[MOSCTL_JOB_ERR_LEN])
{
	char	*p;

	snprintf(err, MOSCTL_JOB_ERR_LEN, "%s", s != NULL ? s : "");
	if (strlen(err) >= JOB_ERR_WIDTH)
		memcpy(err + JOB_ERR_WIDTH - 3, "...", 4);
	for (p = err; *p != '\0'; p++) {
		if (*p == '\n' || *p == '\t' || *p == '\r')
			*p = ' ';
	}
	return err;
}

/* ls: the jobs matching the filter. */
static int
job_ls(struct mosctl *ctl, struct queue *q, struct job_cmd *cmd)
{
	struct queue_job	*jobs;
	size_t			 n, i;
	int64_t			 now = queue_now(q);
	int			 rc;

	if ((rc = queue_list(q, &cmd->filter, &jobs, &n)) != QUEUE_OK)
		return job_fail(ctl, q, rc, 0);
	if (!ctl->json)
		mosctl_job_head(ctl->out);
	for (i = 0; i < n; i++) {
		if (ctl->json) {
			job_json_open(ctl->out, &jobs[i]);
			fputs("}\n", ctl->out);
		} else
			mosctl_job_row(ctl->out, &jobs[i], now);
	}
	if (!ctl->json && n == (size_t)(cmd->filter.limit > 0 ?
	    cmd->filter.limit : 100))
		fprintf(ctl->out, "(%zu shown; more with --after %lld)\n", n,
		    (long long)jobs[n - 1].id);
	queue_jobs_free(jobs, n);
	return MOSCTL_EXIT_OK;
}

/* The first bytes of a payload, printable. */
static void
job_preview(FILE *f, const unsigned char *p, size_t len)
{
	size_t	i, max = len < 160 ? len : 160;

	for (i = 0; i < max; i++) {
		if (p[i] >= 0x20 && p[i] < 0x7f)
			fputc(p[i], f);
		else
			fprintf(f, "\\x%02x", p[i]);
	}
	if (max < len)
		fputs("...", f);
}

/* show (human form): fields, then the history. */
void
mosctl_job_show_text(FILE *f, const struct queue_job *j,
    const struct queue_event *ev, size_t n, int64_t now)
{
	char	t[40], due[32];
	size_t	i;

	fprintf(f, "job #%lld  %s%s\n", (long long)j->id,
	    queue_state_name(j->state), j->blocked ? " (waiting)" : "");
	fprintf(f, "  lane %s  kind %s  priority %d  attempts %d/%d\n",
	    j->lane, j->kind, j->priority, j->attempts, j->max_attempts);
	fprintf(f, "  created %s", job_time(j->created_ms, t, sizeof t));
	fprintf(f, "  updated %s  due %s\n", job_time(j->updated_ms, t,
	    sizeof t), job_due(j, now, due, sizeof due));
	if (j->state == QUEUE_RUNNING)
		fprintf(f, "  worker %s  lease %lld until %s\n", j->worker,
		    (long long)j->lease_gen, job_time(j->lease_until_ms, t,
		    sizeof t));
	if (j->after_job > 0)
		fprintf(f, "  after #%lld\n", (long long)j->after_job);
	if (j->idem_key != NULL || j->coalesce_key != NULL)
		fprintf(f, "  idempotency key %s  coalesce key %s\n",
		    j->idem_key != NULL ? j->idem_key : "-",
		    j->coalesce_key != NULL ? j->coalesce_key : "-");
	if (j->last_error != NULL)
		fprintf(f, "  last error: %s\n", j->last_error);
	fprintf(f, "  payload: %zu bytes", j->payload_len);
	if (j->payload_len > 0) {
		fputs(": ", f);
		job_preview(f, j->payload, j->payload_len);
	}
	fprintf(f, "\nhistory:\n  %-24s %-9s    %-9s %3s %-14s %s\n", "TIME",
	    "FROM", "TO", "TRY", "WORKER", "NOTE");
	for (i = 0; i < n; i++)
		fprintf(f, "  %-24s %-9s -> %-9s %3d %-14s %s\n",
		    job_time(ev[i].t_ms, t, sizeof t), i == 0 ? "" :
		    queue_state_name(ev[i].from), queue_state_name(ev[i].to),
		    ev[i].attempt, ev[i].worker != NULL ? ev[i].worker : "-",
		    ev[i].note != NULL ? ev[i].note : "");
}

/* show (JSON): the job with "history":[...]. */
static void
job_show_json(FILE *f, const struct queue_job *j, const struct queue_event *ev,
    size_t n)
{
	size_t	i;

	job_json_open(f, j);
	fputs(",\"history\":[", f);
	for (i = 0; i < n; i++) {
		fprintf(f, "%s{\"t_ms\":%lld,\"from\":\"%s\",\"to\":\"%s\","
		    "\"attempt\":%d,\"worker\":", i > 0 ? "," : "",
		    (long long)ev[i].t_ms, queue_state_name(ev[i].from),
		    queue_state_name(ev[i].to), ev[i].attempt);
		json_str(f, ev[i].worker);
		fputs(",\"note\":", f);
		json_str(f, ev[i].note);
		fputc('}', f);
	}
	fputs("]}\n", f);
}

/* show: one job and its history. */
static int
job_show(struct mosctl *ctl, struct queue *q, struct job_cmd *cmd)
{
	struct queue_job	 j;
	struct queue_event	*ev;
	size_t			 n;
	int			 rc;

	if ((rc = queue_get(q, cmd->ids[0], &j)) != QUEUE_OK)
		return job_fail(ctl, q, rc, 0);
	if ((rc = queue_history(q, cmd->ids[0], &ev, &n)) != QUEUE_OK) {
		queue_job_clear(&j);
		return job_fail(ctl, q, rc, 0);
	}
	if (ctl->json)
		job_show_json(ctl->out, &j, ev, n);
	else
		mosctl_job_show_text(ctl->out, &j, ev, n, queue_now(q));
	queue_events_free(ev, n);
	queue_job_clear(&j);
	return MOSCTL_EXIT_OK;
}

/* Report the outcome of an action on one job. */
static void
job_done(struct mosctl *ctl, struct queue *q, const char *action, int64_t id)
{
	struct queue_job	j;

	if (queue_get(q, id, &j) != QUEUE_OK)
		memset(&j, 0, sizeof j);
	if (ctl->json)
		fprintf(ctl->out, "{\"action\":\"%s\",\"id\":%lld,\"ok\":true,"
		    "\"state\":\"%s\",\"max_attempts\":%d}\n", action,
		    (long long)id, queue_state_name(j.state), j.max_attempts);
	else
		mosctl_job_action(ctl->out, action, id, &j);
	queue_job_clear(&j);
}

/* "requeued #12: now QUEUED (attempts 0/5)": a job after an action. */
void
mosctl_job_action(FILE *f, const char *action, int64_t id,
    const struct queue_job *j)
{
	fprintf(f, "%s #%lld: now %s%s (attempts %d/%d)\n", action,
	    (long long)id, queue_state_name(j->state), j->blocked ?
	    ", waiting" : "", j->attempts, j->max_attempts);
}

/* Report a count of jobs an action touched. */
static void
job_count(struct mosctl *ctl, const char *action, size_t n)
{
	if (ctl->json)
		fprintf(ctl->out, "{\"action\":\"%s\",\"count\":%zu}\n", action,
		    n);
	else
		mosctl_job_counted(ctl->out, action, n);
}

/* "re-run: 3 jobs": how many jobs an action touched. */
void
mosctl_job_counted(FILE *f, const char *action, size_t n)
{
	fprintf(f, "%s: %zu job%s\n", action, n, n == 1 ? "" : "s");
}

/* requeue, cancel, rerun on each id given; the worst exit status. */
static int
job_each(struct mosctl *ctl, struct queue *q, struct job_cmd *cmd)
{
	const char	*action;
	size_t		 i, n;
	int		 rc, worst = MOSCTL_EXIT_OK, ex;

	for (i = 0; i < cmd->nids; i++) {
		if (cmd->verb == JOB_REQUEUE) {
			action = "requeued";
			rc = queue_requeue(q, cmd->ids[i], cmd->extra_attempts,
			    cmd->note);
		} else if (cmd->verb == JOB_CANCEL) {
			action = "cancelled";
			rc = queue_cancel(q, cmd->ids[i], cmd->note);
		} else {
			action = "re-run";
			rc = queue_rerun_from(q, cmd->ids[i], cmd->note, &n);
		}
		if (rc != QUEUE_OK) {
			ex = job_fail(ctl, q, rc, cmd->ids[i]);
			worst = ex > worst ? ex : worst;
		} else if (cmd->verb == JOB_RERUN)
			job_count(ctl, action, n);
		else
			job_done(ctl, q, action, cmd->ids[i]);
	}
	return worst;
}

/* stats: counts by state and the counters. */
static int
job_stats(struct mosctl *ctl, struct queue *q)
{
	struct queue_stats	st;
	char			span[32];
	const char		*name;
	int			rc, i;

	if ((rc = queue_stats(q, &st)) != QUEUE_OK)
		return job_fail(ctl, q, rc, 0);
	if (ctl->json) {
		fputc('{', ctl->out);
		for (i = QUEUE_QUEUED; i <= QUEUE_CANCELLED; i++) {
			fputc('"', ctl->out);
			for (name = queue_state_name(i); *name != '\0'; name++)
				fputc(tolower((unsigned char)*name), ctl->out);
			fprintf(ctl->out, "\":%lld,", (long long)st.count[i]);
		}
		fprintf(ctl->out, "\"oldest_due_age_ms\":%lld,\"retries\":%lld,"
		    "\"rescues\":%lld,\"coalesced\":%lld}\n",
		    (long long)st.oldest_due_age_ms, (long long)st.retries,
		    (long long)st.rescues, (long long)st.coalesced);
		return MOSCTL_EXIT_OK;
	}
	for (i = QUEUE_QUEUED; i <= QUEUE_CANCELLED; i++)
		fprintf(ctl->out, "%-10s %10lld\n", queue_state_name(i),
		    (long long)st.count[i]);
	fprintf(ctl->out, "oldest due job waiting: %s\n",
	    st.oldest_due_age_ms > 0 ? job_span(st.oldest_due_age_ms, span,
	    sizeof span) : "-");
	fprintf(ctl->out, "retries %lld  rescues %lld  coalesced %lld\n",
	    (long long)st.retries, (long long)st.rescues,
	    (long long)st.coalesced);
	return MOSCTL_EXIT_OK;
}

/* Run a parsed command on an open queue. */
static int
job_run(struct mosctl *ctl, struct queue *q, struct job_cmd *cmd)
{
	size_t	n;
	int	rc;

	switch (cmd->verb) {
	case JOB_LS:
		return job_ls(ctl, q, cmd);
	case JOB_SHOW:
		return job_show(ctl, q, cmd);
	case JOB_STATS:
		return job_stats(ctl, q);
	case JOB_PRUNE:
		rc = queue_prune(q, cmd->done_age_ms, cmd->failed_age_ms, &n);
		break;
	case JOB_REQUEUE:
		if (cmd->nids > 0)
			return job_each(ctl, q, cmd);
		rc = queue_requeue_many(q, &cmd->filter, cmd->extra_attempts,
		    cmd->note, &n);
		break;
	default:
		return job_each(ctl, q, cmd);
	}
	if (rc != QUEUE_OK)
		return job_fail(ctl, q, rc, 0);
	job_count(ctl, cmd->verb == JOB_PRUNE ? "pruned" : "requeued", n);
	return MOSCTL_EXIT_OK;
}

/* mosctl job VERB ...: parse, open the database, run. */
int
mosctl_job(struct mosctl *ctl, int argc, char **argv)
{
	struct queue_opts	 o = { .path = ctl->db, .must_exist = true,
	    .driver = (enum store_driver)ctl->driver, .dsn = ctl->dsn,
	    .sync_normal = ctl->sync_normal,
	    .application_id = GWDB_APPLICATION_ID };
	struct job_cmd		 cmd;
	struct queue		*q;
	char			*err = NULL;
	int			 rc;

	if ((rc = job_parse(ctl, argc, argv, &cmd)) != MOSCTL_EXIT_OK)
		return rc;
	if ((rc = queue_open(&q, &o, &err)) != QUEUE_OK) {
		if (rc == QUEUE_ENOTFOUND)
			mosctl_no_db(ctl);
		else
			fprintf(ctl->err, "mosctl job: cannot open the queue: "
			    "%s\n", err != NULL ? err : queue_strerror(rc));
		free(err);
		return MOSCTL_EXIT_DB;
	}
	rc = job_run(ctl, q, &cmd);
	if (fflush(ctl->out) != 0 && rc == MOSCTL_EXIT_OK) {
		fprintf(ctl->err, "mosctl job: write error: %s\n",
		    strerror(errno));
		rc = MOSCTL_EXIT_FAIL;
	}
	queue_close(q);
	return rc;
}
