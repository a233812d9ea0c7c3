/*
 * mosctl links, queue stats and status: the running gateway as its HTTP API
 * sees it (GET /v1/links, GET /v1/queue/stats, GET /v1/jobs?state=FAILED).
 * `status` exits 0 only when every NCS link that carries traffic (the active
 * target's ports) is up, so a monitoring script can use it; it lists the
 * failed jobs too (at most STATUS_FAILED_MAX).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "tools/mosctl.h"
#include "tools/mosctl_api.h"

#define STATUS_FAILED_MAX	20

static const char *const job_states[] = { "QUEUED", "RUNNING", "DONE",
    "FAILED", "CANCELLED" };

void
mosctl_status_usage(FILE *f)
{
	fprintf(f,
	    "  (with --url URL --token-file FILE [--cacert FILE]:)\n"
	    "  status                           NCS links, queue, failed jobs; "
	    "exit 0 only\n"
	    "                                   when all links are up\n"
	    "  links                            every NCS link: state, "
	    "heartbeat, in flight\n"
	    "  queue stats                      job counts by state, oldest due "
	    "job\n"
	    "  history ls|export, asset put|delete|ls|show: as with --db, "
	    "through the daemon\n");
}

/* No arguments but --json (taken by mosctl_dispatch or main). */
static int
status_no_args(struct mosctl *ctl, const char *what, int argc, char **argv)
{
	int	i;

	for (i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0)
			ctl->json = true;
		else {
			fprintf(ctl->err, "mosctl %s: unexpected '%s' "
			    "(mosctl --help)\n", what, argv[i]);
			return -1;
		}
	}
	return 0;
}

/* A string member, or "-". */
static const char *
str(json_t *o, const char *key)
{
	const char	*s = json_string_value(json_object_get(o, key));

	return s != NULL && *s != '\0' ? s : "-";
}

/* "2026-12-01T10:00:00.120Z" as "10:00:00" (the day is rarely news). */
static const char *
hms(json_t *o, const char *key, char *buf, size_t len)
{
	const char	*s = json_string_value(json_object_get(o, key));

	if (s == NULL || strlen(s) < 19)
		return "-";
	snprintf(buf, len, "%.8s", s + 11);
	return buf;
}

/* Is this link one that must be up: the active target's? */
static bool
link_needed(json_t *l)
{
	return json_is_true(json_object_get(l, "active"));
}

static bool
link_up(json_t *l)
{
	return strcmp(str(l, "state"), "up") == 0;
}

/* One line per link. */
static void
links_table(struct mosctl *ctl, json_t *links)
{
	json_t		*l, *hb, *fl;
	size_t		 i;
	char		 b1[16], b2[16], fbuf[64];

	fprintf(ctl->out, "%-12s %-6s %-8s %-3s %-10s %-8s %-8s %-8s %-20s "
	    "%s\n", "NCS", "PORT", "TARGET", "ACT", "STATE", "SINCE",
	    "HB-SENT", "HB-RECV", "IN-FLIGHT", "WHY");
	json_array_foreach(links, i, l) {
		hb = json_object_get(l, "heartbeat");
		fl = json_object_get(l, "inFlight");
		if (json_is_object(fl))
			snprintf(fbuf, sizeof fbuf, "%s#%lld", str(fl, "type"),
			    (long long)json_integer_value(json_object_get(fl,
			    "messageID")));
		else
			snprintf(fbuf, sizeof fbuf, "-");
		fprintf(ctl->out, "%-12s %-6s %-8s %-3s %-10s %-8s %-8s %-8s "
		    "%-20s %s\n", str(l, "ncs"), str(l, "port"),
		    str(l, "target"), link_needed(l) ? "*" : "", str(l,
		    "state"), hms(l, "since", b1, sizeof b1),
		    hms(hb, "lastSent", b2, sizeof b2),
		    hms(hb, "lastReceived", b1, sizeof b1), fbuf,
		    strcmp(str(l, "why"), "-") != 0 ? str(l, "why") :
		    strcmp(str(l, "lastError"), "-") != 0 ?
		    str(l, "lastError") : "-");
	}
}

static void
print_json(struct mosctl *ctl, json_t *o)
{
	char	*s = json_dumps(o, JSON_COMPACT);

	if (s != NULL)
		fprintf(ctl->out, "%s\n", s);
	free(s);
}

int
mosctl_links(struct mosctl *ctl, int argc, char **argv)
{
	json_t	*o;
	int	 rc;

	if (status_no_args(ctl, "links", argc, argv) != 0)
		return MOSCTL_EXIT_USAGE;
	if ((rc = mosctl_api_get_json(ctl, "/v1/links", &o)) != MOSCTL_EXIT_OK)
		return rc;
	if (ctl->json) {
		json_t	*l;
		size_t	 i;

		json_array_foreach(json_object_get(o, "links"), i, l) {
			print_json(ctl, l);
		}
	} else
		links_table(ctl, json_object_get(o, "links"));
	json_decref(o);
	return MOSCTL_EXIT_OK;
}

/* The counts of GET /v1/queue/stats as one line. */
static void
queue_line(struct mosctl *ctl, json_t *q)
{
	json_t	*c = json_object_get(q, "count");
	size_t	 i;

	fprintf(ctl->out, "queue:");
	for (i = 0; i < sizeof job_states / sizeof job_states[0]; i++)
		fprintf(ctl->out, " %s %lld", job_states[i],
		    (long long)json_integer_value(json_object_get(c,
		    job_states[i])));
	fprintf(ctl->out, "; oldest due %lld ms; retries %lld, rescues %lld\n",
	    (long long)json_integer_value(json_object_get(q,
	    "oldestDueAgeMs")),
	    (long long)json_integer_value(json_object_get(q, "retries")),
	    (long long)json_integer_value(json_object_get(q, "rescues")));
}

int
mosctl_queue(struct mosctl *ctl, int argc, char **argv)
{
	json_t	*o;
	int	 rc;

	if (argc < 1 || strcmp(argv[0], "stats") != 0) {
		fprintf(ctl->err, "mosctl queue: the only verb is 'stats' "
		    "(mosctl --help)\n");
		return MOSCTL_EXIT_USAGE;
	}
	if (status_no_args(ctl, "queue stats", argc - 1, argv + 1) != 0)
		return MOSCTL_EXIT_USAGE;
	if ((rc = mosctl_api_get_json(ctl, "/v1/queue/stats", &o)) !=
	    MOSCTL_EXIT_OK)
		return rc;
	if (ctl->json)
		print_json(ctl, o);
	else
		queue_line(ctl, o);
	json_decref(o);
	return MOSCTL_EXIT_OK;
}

/* The failed jobs (at most STATUS_FAILED_MAX of count) as a table. */
static void
failed_table(struct mosctl *ctl, json_t *jobs, long long count)
{
	json_t		*j;
	size_t		 i, n = json_array_size(jobs);
	char		 tries[24], err[MOSCTL_JOB_ERR_LEN];

	if (count < (long long)n)
		count = (long long)n;
	if (count == 0)
		return;
	fprintf(ctl->out, "%lld failed job%s:\n  %-8s %-12s %-24s %-7s %s\n",
	    count, count == 1 ? "" : "s", "ID", "KIND", "OBJID", "TRIES",
	    "LAST ERROR");
	json_array_foreach(jobs, i, j) {
		snprintf(tries, sizeof tries, "%lld/%lld", (long long)
		    json_integer_value(json_object_get(j, "attempt")),
		    (long long)json_integer_value(json_object_get(j,
		    "maxAttempts")));
		fprintf(ctl->out, "  %-8lld %-12s %-24s %-7s %s\n",
		    (long long)json_integer_value(json_object_get(j, "jobId")),
		    str(j, "kind"), str(j, "objID"), tries,
		    mosctl_job_err(json_string_value(json_object_get(j,
		    "error")), err));
	}
	if (count > (long long)n)
		fprintf(ctl->out, "  and %lld more (mosctl job ls --state "
		    "FAILED)\n", count - (long long)n);
}

int
mosctl_status(struct mosctl *ctl, int argc, char **argv)
{
	json_t		*lo, *qo = NULL, *fo = NULL, *links, *l, *down, *fj;
	size_t		 i, nneeded = 0;
	int		 rc;
	long long	 failed;
	char		 path[64];

	if (status_no_args(ctl, "status", argc, argv) != 0)
		return MOSCTL_EXIT_USAGE;
	if ((rc = mosctl_api_get_json(ctl, "/v1/links", &lo)) !=
	    MOSCTL_EXIT_OK)
		return rc;
	snprintf(path, sizeof path, "/v1/jobs?state=FAILED&limit=%d",
	    STATUS_FAILED_MAX);
	if ((rc = mosctl_api_get_json(ctl, "/v1/queue/stats", &qo)) !=
	    MOSCTL_EXIT_OK || (rc = mosctl_api_get_json(ctl, path, &fo)) !=
	    MOSCTL_EXIT_OK) {
		json_decref(lo);
		json_decref(qo);
		return rc;
	}
	fj = json_object_get(fo, "jobs");
	links = json_object_get(lo, "links");
	down = json_array();
	json_array_foreach(links, i, l) {
		if (!link_needed(l))
			continue;
		nneeded++;
		if (!link_up(l))
			json_array_append(down, l);
	}
	failed = (long long)json_integer_value(json_object_get(
	    json_object_get(qo, "count"), "FAILED"));
	if (ctl->json) {
		json_t	*o = json_pack("{s:b, s:O, s:O, s:I, s:O}", "ok",
		    json_array_size(down) == 0, "links", links, "queue", qo,
		    "failedJobs", (json_int_t)failed, "failed", fj);

		print_json(ctl, o);
		json_decref(o);
	} else {
		if (json_array_size(down) == 0)
			fprintf(ctl->out, "OK: %zu NCS link%s up\n", nneeded,
			    nneeded == 1 ? "" : "s");
		else
			fprintf(ctl->out, "NOT OK: %zu of %zu NCS links not "
			    "up\n", json_array_size(down), nneeded);
		json_array_foreach(down, i, l) {
			fprintf(ctl->out, "  %s %s %s: %s (%s)\n", str(l,
			    "ncs"), str(l, "port"), str(l, "target"), str(l,
			    "state"), strcmp(str(l, "why"), "-") != 0 ?
			    str(l, "why") : str(l, "lastError"));
		}
		links_table(ctl, links);
		queue_line(ctl, qo);
		failed_table(ctl, fj, failed);
	}
	rc = json_array_size(down) == 0 ? MOSCTL_EXIT_OK : MOSCTL_EXIT_FAIL;
	json_decref(down);
	json_decref(lo);
	json_decref(qo);
	json_decref(fo);
	return rc;
}
