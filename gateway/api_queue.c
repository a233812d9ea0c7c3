/*
 * /v1/queue: the job queue as a whole.
 */
#include <stdlib.h>

#include <jansson.h>

#include "gateway/gateway.h"

struct queue_task {
	struct api_req		*r;
	struct queue_stats	 st;
};

/* On the bookkeeping thread. */
static int
queue_stats_run(struct gwdb *g, void *arg)
{
	struct queue_task	*t = arg;

	return queue_stats(g->q, &t->st);
}

/* Back on the loop. */
static void
queue_stats_done(void *arg, int rc)
{
	struct queue_task	*t = arg;
	const struct queue_stats *s = &t->st;

	if (rc != QUEUE_OK)
		api_problem_db(t->r, rc, NULL);
	else
		api_reply_json(t->r, 200, json_pack("{s:{s:I, s:I, s:I, s:I, "
		    "s:I}, s:I, s:I, s:I, s:I}", "count",
		    "QUEUED", (json_int_t)s->count[QUEUE_QUEUED],
		    "RUNNING", (json_int_t)s->count[QUEUE_RUNNING],
		    "DONE", (json_int_t)s->count[QUEUE_DONE],
		    "FAILED", (json_int_t)s->count[QUEUE_FAILED],
		    "CANCELLED", (json_int_t)s->count[QUEUE_CANCELLED],
		    "oldestDueAgeMs", (json_int_t)s->oldest_due_age_ms,
		    "retries", (json_int_t)s->retries,
		    "rescues", (json_int_t)s->rescues,
		    "coalesced", (json_int_t)s->coalesced));
	free(t);
}

/* GET /v1/queue/stats */
void
api_queue_stats(struct api_req *r)
{
	struct queue_task	*t;

	t = xcalloc(1, sizeof *t);
	t->r = r;
	dbw_submit(api_gw(r)->dbw, queue_stats_run, queue_stats_done, t);
}
