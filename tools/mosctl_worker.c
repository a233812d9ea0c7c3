/*
 * mosctl job claim|heartbeat|complete|fail over the gateway's HTTP API
 * (--url): a worker on the command line, for scripts that do the MAM's jobs
 * (a token of role worker). claim is POST /v1/jobs/claim, the others POST
 * /v1/jobs/{id}/VERB with the lease token the claim gave. With --json the
 * API's answers are printed as they come (a claim: one job a line, with its
 * leaseToken); the exit status of claim is 1 when no job was claimed.
 */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "gateway/gateway.h"
#include "tools/mosctl.h"
#include "tools/mosctl_api.h"

#define WORKER_KINDS_MAX	16	/* as the API takes */
#define WORKER_TOKEN_MAX	256

struct worker_opts {
	const char	*kinds[WORKER_KINDS_MAX];
	int		 nkinds;
	const char	*worker;
	int		 max;		/* 0: the API's default */
	int64_t		 lease_ms;	/* -1: the API's default */
	int64_t		 wait_ms;	/* -1: none */
	const char	*token;
	json_t		*result;	/* complete */
	json_t		*asset;		/* complete */
	const char	*error;		/* fail */
	bool		 no_retry;	/* fail */
	int64_t		 id;		/* the job operand */
};

static void
worker_opts_clear(struct worker_opts *o)
{
	json_decref(o->result);
	json_decref(o->asset);
}

/* A JSON object option (--result, --asset); -1 after saying why. */
static int
worker_object(struct mosctl *ctl, const char *opt, const char *s,
    json_t **out)
{
	json_error_t	 je;
	json_t		*v;

	if ((v = json_loads(s, 0, &je)) == NULL || !json_is_object(v)) {
		job_usage_error(ctl, "%s is not a JSON object: %s", opt,
		    v == NULL ? je.text : s);
		json_decref(v);
		return -1;
	}
	json_decref(*out);
	*out = v;
	return 0;
}

/* A duration in whole seconds, lo to hi; -1 after saying why. */
static int
worker_seconds(struct mosctl *ctl, const char *opt, const char *s, int lo,
    int hi, int64_t *ms)
{
	if (util_parse_duration(s, ms) != 0 || *ms % 1000 != 0 ||
	    *ms / 1000 < lo || *ms / 1000 > hi) {
		job_usage_error(ctl, "bad %s '%s' (whole seconds, %d to %d: "
		    "e.g. 30s, 5m)", opt, s, lo, hi);
		return -1;
	}
	return 0;
}

/*
 * Parse a worker verb's options; only those in allowed (their letters) go.
 * With a job operand (need_id) it is the one operand. MOSCTL_EXIT_*.
 */
static int
worker_parse(struct mosctl *ctl, int argc, char **argv, const char *allowed,
    bool need_id, struct worker_opts *o)
{
	static const struct option longopts[] = {
		{ "kind", required_argument, NULL, 'k' },
		{ "worker", required_argument, NULL, 'w' },
		{ "max", required_argument, NULL, 'm' },
		{ "lease", required_argument, NULL, 'l' },
		{ "wait", required_argument, NULL, 'W' },
		{ "lease-token", required_argument, NULL, 't' },
		{ "result", required_argument, NULL, 'r' },
		{ "asset", required_argument, NULL, 'a' },
		{ "error", required_argument, NULL, 'e' },
		{ "no-retry", no_argument, NULL, 'N' },
		{ "json", no_argument, NULL, 'j' },
		{ NULL, 0, NULL, 0 },
	};
	int		 c;

	memset(o, 0, sizeof *o);
	o->lease_ms = o->wait_ms = -1;
	optind = 0;	/* glibc: start over, argv[0] is the verb */
	while ((c = job_getopt_only(ctl, argc, argv, longopts, allowed)) !=
	    -1) {
		if (c == JOB_GETOPT_ERR)
			return MOSCTL_EXIT_USAGE;
		switch (c) {
		case 'k':
			if (o->nkinds == WORKER_KINDS_MAX)
				return job_usage_error(ctl, "at most %d "
				    "--kind", WORKER_KINDS_MAX);
			o->kinds[o->nkinds++] = optarg;
			break;
		case 'w':
			o->worker = optarg;
			break;
		case 'm':
			if (mosctl_job_number(optarg, &o->max) != 0 ||
			    o->max < 1 || o->max > 100)
				return job_usage_error(ctl, "bad --max '%s' "
				    "(1 to 100)", optarg);
			break;
		case 'l':
			if (worker_seconds(ctl, "--lease", optarg, 1, 3600,
			    &o->lease_ms) != 0)
				return MOSCTL_EXIT_USAGE;
			break;
		case 'W':
			if (worker_seconds(ctl, "--wait", optarg, 0, 60,
			    &o->wait_ms) != 0)
				return MOSCTL_EXIT_USAGE;
			break;
		case 't':
			/* printable ASCII: it is an opaque string of the API */
			if (!mosctl_token_ok(optarg, WORKER_TOKEN_MAX))
				return job_usage_error(ctl, "bad --lease-token "
				    "(the leaseToken of the claim)");
			o->token = optarg;
			break;
		case 'r':
		case 'a':
			if (worker_object(ctl, c == 'r' ? "--result" :
			    "--asset", optarg, c == 'r' ? &o->result :
			    &o->asset) != 0)
				return MOSCTL_EXIT_USAGE;
			break;
		case 'e':
			o->error = optarg;
			break;
		case 'N':
			o->no_retry = true;
			break;
		}
	}
	if (argc - optind != (need_id ? 1 : 0))
		return job_usage_error(ctl, "job %s takes %s", argv[0],
		    need_id ? "one job id" : "no operand");
	if (need_id && (o->id = mosctl_job_id(argv[optind])) < 0)
		return job_usage_error(ctl, "bad job id '%s'", argv[optind]);
	if (need_id && o->token == NULL)
		return job_usage_error(ctl, "job %s needs --lease-token "
		    "(the leaseToken of the claim)", argv[0]);
	return MOSCTL_EXIT_OK;
}

/* POST body (consumed) to path; the answer in *ans. MOSCTL_EXIT_*. */
static int
worker_post(struct mosctl *ctl, const char *path, json_t *body,
    json_t **ans)
{
	char	*s;
	int	 rc;

	if ((s = json_dumps(body, JSON_COMPACT)) == NULL)
		fatalx("json_dumps failed");
	json_decref(body);
	rc = mosctl_api_call(ctl, "POST", path, NULL, "application/json", s,
	    strlen(s), ans);
	free(s);
	return rc;
}

/*
 * claim --kind K [--kind K]... --worker W [--max N] [--lease DUR]
 * [--wait DUR]: exit 1 when nothing was claimed.
 */
static int
worker_claim(struct mosctl *ctl, int argc, char **argv)
{
	struct worker_opts	 o;
	json_t			*req, *kinds, *ans, *v;
	char			*payload;
	size_t			 i, n;
	int			 rc, k;

	if ((rc = worker_parse(ctl, argc, argv, "kwmlW", false, &o)) != 0)
		return rc;
	if (o.nkinds == 0 || o.worker == NULL)
		return job_usage_error(ctl, "job claim needs --kind (one or "
		    "more) and --worker");
	kinds = json_array();
	for (k = 0; k < o.nkinds; k++)
		json_array_append_new(kinds, json_string(o.kinds[k]));
	req = json_pack("{s:o, s:s}", "kinds", kinds, "worker", o.worker);
	if (o.max > 0)
		json_object_set_new(req, "max", json_integer(o.max));
	if (o.lease_ms >= 0)
		json_object_set_new(req, "lease_s", json_integer(o.lease_ms /
		    1000));
	if (o.wait_ms >= 0)
		json_object_set_new(req, "wait_s", json_integer(o.wait_ms /
		    1000));
	if ((rc = worker_post(ctl, "/v1/jobs/claim", req, &ans)) != 0)
		return rc;
	n = json_array_size(json_object_get(ans, "jobs"));
	json_array_foreach(json_object_get(ans, "jobs"), i, v) {
		if (ctl->json) {
			mosctl_json_line(ctl, v);
			continue;
		}
		payload = json_dumps(json_object_get(v, "payload"),
		    JSON_COMPACT | JSON_ENCODE_ANY);
		fprintf(ctl->out, "job #%lld  %s  asset %s  attempt %lld  "
		    "lease until %s\n  leaseToken %s\n  payload %s\n",
		    (long long)json_integer_value(json_object_get(v, "jobId")),
		    json_string_value(json_object_get(v, "kind")),
		    json_is_string(json_object_get(v, "objID")) ?
		    json_string_value(json_object_get(v, "objID")) : "-",
		    (long long)json_integer_value(json_object_get(v,
		    "attempt")), json_string_value(json_object_get(v,
		    "leaseUntil")), json_string_value(json_object_get(v,
		    "leaseToken")), payload != NULL ? payload : "null");
		free(payload);
	}
	if (n == 0 && !ctl->json)
		fprintf(ctl->err, "mosctl: no job due (kinds %s%s)\n",
		    o.kinds[0], o.nkinds > 1 ? ", ..." : "");
	json_decref(ans);
	return n > 0 ? MOSCTL_EXIT_OK : MOSCTL_EXIT_FAIL;
}

/*
 * heartbeat ID --lease-token T [--lease DUR], complete ID --lease-token T
 * [--result JSON] [--asset JSON], fail ID --lease-token T --error TEXT
 * [--no-retry].
 */
static int
worker_settle(struct mosctl *ctl, int argc, char **argv)
{
	struct worker_opts	 o;
	json_t			*req, *ans, *a;
	const char		*verb = argv[0], *allowed;
	char			 path[80];
	int			 rc;

	allowed = strcmp(verb, "heartbeat") == 0 ? "tl" :
	    strcmp(verb, "complete") == 0 ? "tra" : "teN";
	if ((rc = worker_parse(ctl, argc, argv, allowed, true, &o)) != 0) {
		worker_opts_clear(&o);
		return rc;
	}
	if (strcmp(verb, "fail") == 0 && o.error == NULL) {
		worker_opts_clear(&o);
		return job_usage_error(ctl, "job fail needs --error TEXT");
	}
	req = json_pack("{s:s}", "leaseToken", o.token);
	if (o.lease_ms >= 0)
		json_object_set_new(req, "lease_s", json_integer(o.lease_ms /
		    1000));
	if (o.result != NULL)
		json_object_set(req, "result", o.result);
	if (o.asset != NULL)
		json_object_set(req, "asset", o.asset);
	if (o.error != NULL) {
		json_object_set_new(req, "error", json_string(o.error));
		json_object_set_new(req, "retry", json_boolean(!o.no_retry));
	}
	worker_opts_clear(&o);
	snprintf(path, sizeof path, "/v1/jobs/%lld/%s", (long long)o.id,
	    verb);
	if ((rc = worker_post(ctl, path, req, &ans)) != 0)
		return rc;
	if (ctl->json)
		mosctl_json_line(ctl, ans);
	else if (strcmp(verb, "heartbeat") == 0)
		fprintf(ctl->out, "job #%lld: lease until %s\n", (long long)o.id,
		    json_string_value(json_object_get(ans, "leaseUntil")));
	else {
		fprintf(ctl->out, "job #%lld: %s", (long long)o.id,
		    json_string_value(json_object_get(ans, "status")));
		if (json_is_string(json_object_get(ans, "runAfter")))
			fprintf(ctl->out, " (attempt %lld, due again %s)",
			    (long long)json_integer_value(json_object_get(ans,
			    "attempt")), json_string_value(json_object_get(ans,
			    "runAfter")));
		if ((a = json_object_get(ans, "asset")) != NULL)
			fprintf(ctl->out, " (asset %s now objRev %lld)",
			    json_string_value(json_object_get(a, "objID")),
			    (long long)json_integer_value(json_object_get(a,
			    "objRev")));
		fputc('\n', ctl->out);
	}
	json_decref(ans);
	return MOSCTL_EXIT_OK;
}

int
mosctl_job_worker(struct mosctl *ctl, int argc, char **argv)
{
	if (strcmp(argv[0], "claim") == 0)
		return worker_claim(ctl, argc, argv);
	return worker_settle(ctl, argc, argv);
}
