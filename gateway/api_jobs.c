/*
 * /v1/jobs and /v1/assets/{objID}/jobs: the MAM's own work through the
 * durable queue, for workers in any language.
 *
 * Jobs submitted here go to the lane JOBS_LANE ("mam"), the lane where
 * profile3.c already puts its obj-create, obj-update and obj-delete jobs
 * for the MAM's worker; a claim takes jobs of that lane only, by kind. The
 * gateway's own kinds (mosObj deliveries, roElementStat, the Profile 3
 * requests) may not be submitted, and the delivery lanes ("ncs:NAME",
 * "rostat:NAME") are never claimed here: a worker can neither fake nor take
 * the gateway's own work.
 *
 * A claim answers with a lease token per job: "ID.GEN.MAC", the job, the
 * lease generation (the queue's fencing token) and an HMAC-SHA256 of both
 * under a key kept in the database (so tokens outlive a restart, as leases
 * do). heartbeat, complete and fail need it; the queue's fencing turns a
 * stale one into 409. A claim with nothing due waits up to wait_s: it is
 * parked on the loop (at most JOBS_WAITERS_MAX of them) and claims again
 * every JOBS_RETRY_MS, or at once when a job may have become due (a submit,
 * a completion, a requeue). Expired leases are taken back by the daemon's
 * reaper (gw.c, every second, every lane).
 *
 * Everything that touches the database runs on the bookkeeping thread, as
 * in api_assets.c; the answer is sent from the done callback.
 */
#include <sys/random.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <event2/http.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include "gateway/gateway.h"

#define JOBS_LANE		PROFILE3_LANE
#define JOBS_DATA_MAX		65536	/* payload, result: bytes of JSON */
#define JOBS_KINDS_MAX		16
#define JOBS_CLAIM_MAX		100
#define JOBS_LEASE_DEFAULT_S	60
#define JOBS_LEASE_MAX_S	3600
#define JOBS_WAIT_MAX_S		60
#define JOBS_WAITERS_MAX	64	/* claims parked at once */
#define JOBS_RETRY_MS		1000	/* a parked claim looks again */
#define JOBS_LIST_DEFAULT	100
#define JOBS_LIST_MAX		1000
#define JOBS_ERROR_MAX		4096	/* fail: error text */
#define JOBS_IDEM_MAX		128
#define JOBS_IDEM_PREFIX	"api:"
#define JOBS_OBJ_MAX		128
#define JOBS_KEY_OBJ		"api.objID"	/* job data: its asset */
#define JOBS_KEY_REQUEST	"api.request"	/* SHA-256 of the submit */
#define JOBS_KEY_RESULT		"result"	/* complete: the result */
#define JOBS_MAC_LEN		16	/* HMAC bytes in a lease token */
#define JOBS_SECRET_LEN		16	/* two int64 in gw_meta */
#define JOBS_TOKEN_LEN		96
#define JOBS_NO_OBJ		"-"	/* asset parsed before its objID */

/* The gateway's own kinds: never submitted through the API. */
static const char *const reserved_kinds[] = { CATALOG_KIND_PUBLISH,
    ROSTAT_KIND, ROSTAT_KIND_REPLACE, PROFILE3_KIND_CREATE,
    PROFILE3_KIND_UPDATE, PROFILE3_KIND_DELETE };

struct job_task;
TAILQ_HEAD(job_wait_list, job_task);

struct api_jobs {
	struct gw		*gw;
	unsigned char		 secret[JOBS_SECRET_LEN];
	struct job_wait_list	 waiting;	/* parked claims */
	size_t			 nwaiting;
	bool			 stopped;
};

enum job_op {
	OP_REQUEUE,
	OP_CANCEL,
	OP_RERUN,
};

/* What a task on the bookkeeping thread needs and gives back. */
struct job_task {
	struct api_req		*r;
	struct api_jobs		*aj;
	int64_t			 id;		/* the path's job */
	int64_t			 gen;		/* its lease token's */
	/* submit */
	char			*obj_id;
	char			*kind;
	char			*payload;	/* JSON text */
	char			*idem;
	int			 priority;
	int64_t			 after;
	char			 hash[2 * SHA256_DIGEST_LENGTH + 1];
	bool			 conflict;	/* same key, other body */
	/* claim */
	char			**kinds;
	size_t			 nkinds;
	char			*worker;
	size_t			 max;
	int64_t			 lease_ms;
	int64_t			 deadline;	/* monotonic: stop waiting */
	struct event		*timer;
	bool			 waiting;	/* in aj->waiting */
	bool			 busy;		/* a claim on the thread */
	TAILQ_ENTRY(job_task)	 entry;
	/* heartbeat, complete, fail, admin */
	char			*text;		/* result JSON, error text */
	bool			 retry;
	bool			 wake;		/* claims may find a job */
	bool			 has_asset;
	bool			 asset_id;	/* objID given in the asset */
	struct catalog_asset	 a;
	enum job_op		 op;
	/* list */
	int			 state;		/* -1 = any */
	char			*lkind;
	int			 limit;
	/* out */
	int			 status;	/* of a good answer */
	const char		*field;		/* a 422's field */
	char			*err;
	enum queue_state	 cur;		/* ESTATE: the job's state */
	json_t			*out;
};

static void
job_task_free(struct job_task *t)
{
	size_t	i;

	free(t->obj_id);
	free(t->kind);
	free(t->payload);
	free(t->idem);
	for (i = 0; i < t->nkinds; i++)
		free(t->kinds[i]);
	free(t->kinds);
	free(t->worker);
	if (t->timer != NULL)
		event_free(t->timer);
	free(t->text);
	catalog_asset_clear(&t->a);
	free(t->lkind);
	free(t->err);
	if (t->out != NULL)
		json_decref(t->out);
	free(t);
}

/* An answer was sent before the task was submitted: drop it and the body. */
static void
job_drop(struct job_task *t, json_t *body)
{
	if (body != NULL)
		json_decref(body);
	t->r = NULL;
	job_task_free(t);
}

static struct job_task *
job_task_new(struct api_req *r)
{
	struct job_task	*t;

	t = xcalloc(1, sizeof *t);
	t->r = r;
	t->aj = api_jobs_of(r);
	t->state = -1;
	return t;
}

/* ------------------------------------------------------------------------ */
/* Lease tokens */

/* "ID.GEN.MAC" for a claim (buf of JOBS_TOKEN_LEN). */
static void
job_token(const struct api_jobs *aj, int64_t id, int64_t gen, char *buf)
{
	unsigned char	 mac[EVP_MAX_MD_SIZE];
	unsigned int	 len = 0;
	char		 msg[48];
	size_t		 i, n;

	snprintf(msg, sizeof msg, "%lld.%lld", (long long)id, (long long)gen);
	if (HMAC(EVP_sha256(), aj->secret, sizeof aj->secret,
	    (const unsigned char *)msg, strlen(msg), mac, &len) == NULL ||
	    len < JOBS_MAC_LEN)
		fatalx("HMAC failed");
	n = (size_t)snprintf(buf, JOBS_TOKEN_LEN, "%s.", msg);
	for (i = 0; i < JOBS_MAC_LEN; i++)
		snprintf(buf + n + 2 * i, JOBS_TOKEN_LEN - n - 2 * i, "%02x",
		    mac[i]);
}

/*
 * Read a lease token for job id: 0 and *gen; -1 when it is not one this
 * gateway gave for that job (wrong form, MAC or job).
 */
static int
job_token_read(const struct api_jobs *aj, const char *tok, int64_t id,
    int64_t *gen)
{
	const char	*p = tok;
	char		 want[JOBS_TOKEN_LEN], *e;
	long long	 i, g;

	errno = 0;
	i = strtoll(p, &e, 10);
	if (e == p || *e != '.' || errno != 0)
		return -1;
	p = e + 1;
	g = strtoll(p, &e, 10);
	if (e == p || *e != '.' || errno != 0 || i != id || g < 1)
		return -1;
	job_token(aj, (int64_t)i, (int64_t)g, want);
	if (strlen(want) != strlen(tok) || CRYPTO_memcmp(want, tok,
	    strlen(tok)) != 0)
		return -1;
	*gen = (int64_t)g;
	return 0;
}

/* ------------------------------------------------------------------------ */
/* The job as JSON (on the bookkeeping thread) */

/* A stored JSON text as JSON; a string when it is not JSON; else null. */
static json_t *
job_json_text(const void *p, size_t len)
{
	json_t	*o;

	if (p == NULL || len == 0)
		return json_null();
	if ((o = json_loadb(p, len, JSON_DECODE_ANY, NULL)) != NULL)
		return o;
	if ((o = json_stringn(p, len)) != NULL)
		return o;
	return json_null();
}

/*
 * The asset a job is about (malloc'd, or NULL): what a submit recorded,
 * else the objID of a JSON payload (Profile 3 jobs), else the payload of
 * a delivery job (the objID itself).
 */
static char *
job_obj_id(struct gwdb *g, const struct queue_job *j)
{
	json_t		*o;
	void		*v;
	char		*s = NULL;
	size_t		 len;

	if (queue_data_get(g->q, j->id, JOBS_KEY_OBJ, &v, &len) == QUEUE_OK)
		return v;
	if (j->payload == NULL || j->payload_len == 0)
		return NULL;
	if ((o = json_loadb(j->payload, j->payload_len, 0, NULL)) != NULL) {
		if (json_is_string(json_object_get(o, "objID")))
			s = xstrdup(json_string_value(json_object_get(o,
			    "objID")));
		json_decref(o);
		return s;
	}
	if (strncmp(j->lane, CATALOG_LANE_PREFIX,
	    strlen(CATALOG_LANE_PREFIX)) == 0 || strncmp(j->lane,
	    ROSTAT_LANE_PREFIX, strlen(ROSTAT_LANE_PREFIX)) == 0)
		return xstrndup(j->payload, j->payload_len);
	return NULL;
}

static json_t *
job_time(int64_t ms)
{
	char	buf[40];

	util_iso_ms(ms, buf, sizeof buf);
	return json_string(buf);
}

/* A job; full: with payload, result and history. */
static int
job_json(struct gwdb *g, const struct queue_job *j, bool full, json_t **out)
{
	struct queue_event	*ev = NULL;
	json_t			*o, *h;
	void			*v;
	char			*obj;
	size_t			 n = 0, i, len;
	int			 rc;

	o = json_pack("{s:I, s:s, s:s, s:s, s:b, s:i, s:i, s:i, s:o, s:o}",
	    "jobId", (json_int_t)j->id, "lane", j->lane, "kind", j->kind,
	    "state", queue_state_name(j->state), "blocked", j->blocked,
	    "priority", j->priority, "attempt", j->attempts, "maxAttempts",
	    j->max_attempts, "created", job_time(j->created_ms), "updated",
	    job_time(j->updated_ms));
	if (o == NULL)
		fatalx("json_pack failed");
	obj = job_obj_id(g, j);
	json_object_set_new(o, "objID", obj != NULL ? json_string(obj) :
	    json_null());
	free(obj);
	if (j->after_job != 0)
		json_object_set_new(o, "after", json_integer(j->after_job));
	if (j->worker != NULL)
		json_object_set_new(o, "worker", json_string(j->worker));
	if (j->state == QUEUE_QUEUED)
		json_object_set_new(o, "runAfter", job_time(j->run_after_ms));
	if (j->state == QUEUE_RUNNING)
		json_object_set_new(o, "leaseUntil",
		    job_time(j->lease_until_ms));
	if (j->last_error != NULL)
		json_object_set_new(o, "error", json_string(j->last_error));
	*out = o;
	if (!full)
		return QUEUE_OK;
	json_object_set_new(o, "payload", job_json_text(j->payload,
	    j->payload_len));
	rc = queue_data_get(g->q, j->id, JOBS_KEY_RESULT, &v, &len);
	if (rc == QUEUE_OK) {
		json_object_set_new(o, "result", job_json_text(v, len));
		free(v);
	} else if (rc != QUEUE_ENOTFOUND)
		return rc;
	if ((rc = queue_history(g->q, j->id, &ev, &n)) != QUEUE_OK)
		return rc;
	h = json_array();
	for (i = 0; i < n; i++) {
		json_array_append_new(h, json_pack("{s:o, s:s, s:s, s:i, "
		    "s:o, s:o}", "t", job_time(ev[i].t_ms), "from",
		    queue_state_name(ev[i].from), "to",
		    queue_state_name(ev[i].to), "attempt", ev[i].attempt,
		    "worker", ev[i].worker != NULL ?
		    json_string(ev[i].worker) : json_null(), "note",
		    ev[i].note != NULL ? json_string(ev[i].note) :
		    json_null()));
	}
	queue_events_free(ev, n);
	json_object_set_new(o, "history", h);
	return QUEUE_OK;
}

/* t->out = the job t->id (full). */
static int
job_out(struct gwdb *g, struct job_task *t)
{
	struct queue_job	 j;
	int			 rc;

	if ((rc = queue_get(g->q, t->id, &j)) != QUEUE_OK)
		return rc;
	if (t->out != NULL)
		json_decref(t->out);
	t->out = NULL;
	rc = job_json(g, &j, true, &t->out);
	queue_job_clear(&j);
	return rc;
}

/* ------------------------------------------------------------------------ */
/* Answers and input */

/* Back on the loop: the answer for rc. */
static void
job_answer(struct job_task *t, int rc)
{
	struct api_req	*r = t->r;

	if (rc == QUEUE_OK) {
		api_reply_json(r, t->status != 0 ? t->status : 200, t->out);
		t->out = NULL;
	} else if (rc == QUEUE_EXISTS && t->conflict)
		api_problem(r, 409, "idempotency-conflict", "Idempotency-Key "
		    "reused", "Idempotency-Key", "the key '%s' was used for "
		    "job %lld with another request", t->idem, (long long)t->id);
	else if (rc == QUEUE_EINVAL && t->field != NULL &&
	    strncmp(t->field, "asset", 5) == 0)
		api_problem(r, 422, "invalid-asset", "Invalid asset", t->field,
		    "%s", t->err != NULL ? t->err : "invalid");
	else if (rc == QUEUE_EINVAL || (rc == QUEUE_ENOTFOUND &&
	    t->field != NULL))
		api_problem(r, 422, "invalid-job", "Invalid job", t->field,
		    "%s", t->err != NULL ? t->err : "invalid");
	else if (rc == QUEUE_ENOTFOUND)
		api_problem(r, 404, "not-found", "No such job", "id",
		    "no job %lld", (long long)t->id);
	else if (rc == QUEUE_ELOST && t->err != NULL)
		api_problem(r, 409, "lease-lost", "Lease lost", "leaseToken",
		    "%s", t->err);
	else if (rc == QUEUE_ELOST)
		api_problem(r, 409, "lease-lost", "Lease lost", "leaseToken",
		    "job %lld is no longer held by this lease (it expired and "
		    "was taken back, or the job was settled or cancelled): "
		    "drop the job", (long long)t->id);
	else if (rc == QUEUE_ESTATE)
		api_problem(r, 409, "invalid-transition", "Invalid "
		    "transition", NULL, "job %lld is %s: %s", (long long)t->id,
		    queue_state_name(t->cur), t->err != NULL ? t->err :
		    "not possible now");
	else
		api_problem_db(r, rc, t->err);
}

/* 422 with a field and a detail. */
static void
job_invalid(struct api_req *r, const char *field, const char *fmt, ...)
{
	va_list	 ap;
	char	*d;

	va_start(ap, fmt);
	if (vasprintf(&d, fmt, ap) < 0)
		fatalx("out of memory");
	va_end(ap);
	api_problem(r, 422, "invalid-job", "Invalid job", field, "%s", d);
	free(d);
}

/* The body's keys are all in allowed[] (NULL-terminated); else a 422. */
static bool
job_keys_ok(struct api_req *r, json_t *body, const char *const *allowed)
{
	const char	*k;
	json_t		*v;
	size_t		 i;

	json_object_foreach(body, k, v) {
		for (i = 0; allowed[i] != NULL; i++) {
			if (strcmp(k, allowed[i]) == 0)
				break;
		}
		if (allowed[i] == NULL) {
			job_invalid(r, k, "unknown key \"%s\"", k);
			return false;
		}
	}
	return true;
}

/* An integer field in lo..hi (def when absent); false once a 422 is sent. */
static bool
job_int(struct api_req *r, json_t *body, const char *key, int64_t lo,
    int64_t hi, int64_t def, int64_t *out)
{
	json_t	*v = json_object_get(body, key);

	*out = def;
	if (v == NULL)
		return true;
	if (!json_is_integer(v) || json_integer_value(v) < lo ||
	    json_integer_value(v) > hi) {
		job_invalid(r, key, "%s must be an integer from %lld to %lld",
		    key, (long long)lo, (long long)hi);
		return false;
	}
	*out = json_integer_value(v);
	return true;
}

/* A JSON object field as compact text within JOBS_DATA_MAX; NULL if absent. */
static bool
job_object(struct api_req *r, json_t *body, const char *key, char **out)
{
	json_t	*v = json_object_get(body, key);
	size_t	 len;

	*out = NULL;
	if (v == NULL)
		return true;
	if (!json_is_object(v)) {
		job_invalid(r, key, "%s must be a JSON object", key);
		return false;
	}
	if ((*out = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS)) == NULL)
		fatalx("out of memory");
	if ((len = strlen(*out)) > JOBS_DATA_MAX) {
		free(*out);
		*out = NULL;
		job_invalid(r, key, "%s is %zu bytes of JSON, at most %d", key,
		    len, JOBS_DATA_MAX);
		return false;
	}
	return true;
}

/* A name: 1 to 63 of A-Z a-z 0-9 _ . - (kinds, workers). */
static bool
job_name(struct api_req *r, json_t *v, const char *field, const char *what)
{
	if (json_is_string(v) && api_name_ok(json_string_value(v)))
		return true;
	job_invalid(r, field, "%s must be a string of 1 to 63 of A-Z a-z 0-9 "
	    "_ . -", what);
	return false;
}

/* The {id} of the path; false once a 404 is sent. */
static bool
job_id_param(struct api_req *r, int64_t *id)
{
	const char	*s = r->param[0];
	char		*e;
	long long	 v;

	errno = 0;
	v = strtoll(s, &e, 10);
	if (e == s || *e != '\0' || errno != 0 || v < 1 || *s == '+') {
		api_problem(r, 404, "not-found", "No such job", "id", "no job "
		    "'%s' (job ids are positive integers)", s);
		return false;
	}
	*id = (int64_t)v;
	return true;
}

/* Wake parked claims: a job may have become due. */
static void job_wake(struct api_jobs *);

/* ------------------------------------------------------------------------ */
/* POST /v1/assets/{objID}/jobs */

/* The bookkeeping thread: one job, or the one its Idempotency-Key made. */
static int
job_submit_run(struct gwdb *g, void *arg)
{
	struct job_task			*t = arg;
	struct queue_enqueue_req	 req;
	struct queue_job		 p;
	json_t				*full;
	char				*key = NULL;
	void				*v;
	size_t				 len;
	int				 rc;

	memset(&req, 0, sizeof req);
	req.lane = JOBS_LANE;
	req.kind = t->kind;
	req.payload = t->payload;
	req.payload_len = strlen(t->payload);
	req.priority = t->priority;
	req.after_job = t->after;
	if (t->idem != NULL) {
		xasprintf(&key, JOBS_IDEM_PREFIX "%s", t->idem);
		req.idem_key = key;
	}
	if ((rc = gwdb_durable(g, true)) != QUEUE_OK)
		goto out;
	if ((rc = queue_tx_begin(g->q)) != QUEUE_OK)
		goto out;
	rc = queue_enqueue(g->q, &req, &t->id);
	if (rc == QUEUE_ENOTFOUND) {
		t->field = "after";
		xasprintf(&t->err, "after: no job %lld", (long long)t->after);
	} else if (rc == QUEUE_EXISTS) {
		/* the key's job: the same request again, or a conflict */
		rc = queue_data_get(g->q, t->id, JOBS_KEY_REQUEST, &v, &len);
		if (rc == QUEUE_OK) {
			t->conflict = len != strlen(t->hash) ||
			    memcmp(v, t->hash, len) != 0;
			free(v);
		} else if (rc == QUEUE_ENOTFOUND)
			t->conflict = true;
		if (rc == QUEUE_OK || rc == QUEUE_ENOTFOUND)
			rc = t->conflict ? QUEUE_EXISTS : QUEUE_OK;
		t->status = 200;
		queue_tx_rollback(g->q);
		if (rc == QUEUE_OK && (rc = job_out(g, t)) == QUEUE_OK) {
			full = t->out;
			t->out = json_pack("{s:I, s:s}", "jobId",
			    (json_int_t)t->id, "status",
			    json_string_value(json_object_get(full, "state")));
			json_decref(full);
		}
		goto out;
	}
	if (rc == QUEUE_OK && t->after != 0 &&
	    (rc = queue_get(g->q, t->after, &p)) == QUEUE_OK) {
		if (strcmp(p.lane, JOBS_LANE) != 0) {
			rc = QUEUE_EINVAL;
			t->field = "after";
			xasprintf(&t->err, "after: job %lld is not a worker "
			    "job (lane %s)", (long long)t->after, p.lane);
		}
		queue_job_clear(&p);
	}
	if (rc == QUEUE_OK)
		rc = queue_data_put(g->q, t->id, JOBS_KEY_OBJ, t->obj_id,
		    strlen(t->obj_id));
	if (rc == QUEUE_OK)
		rc = queue_data_put(g->q, t->id, JOBS_KEY_REQUEST, t->hash,
		    strlen(t->hash));
	if (rc == QUEUE_OK)
		rc = queue_tx_commit(g->q);
	else
		queue_tx_rollback(g->q);
	if (rc == QUEUE_OK) {
		t->status = 202;
		t->out = json_pack("{s:I, s:s}", "jobId", (json_int_t)t->id,
		    "status", "QUEUED");
	}
out:
	gwdb_durable(g, false);
	free(key);
	return rc;
}

static void
job_submit_done(void *arg, int rc)
{
	struct job_task	*t = arg;

	if (rc == QUEUE_OK && t->status == 202)
		job_wake(t->aj);
	job_answer(t, rc);
	job_task_free(t);
}

/* The Idempotency-Key header: 0, 1 when absent, -1 once a 400 is sent. */
static int
job_idem(struct api_req *r, char **out)
{
	const char	*h;
	size_t		 i, len;

	h = evhttp_find_header(evhttp_request_get_input_headers(r->req),
	    "Idempotency-Key");
	if (h == NULL)
		return 1;
	len = strlen(h);
	for (i = 0; i < len; i++) {
		if (h[i] < 0x21 || h[i] > 0x7e)
			break;
	}
	if (len == 0 || len > JOBS_IDEM_MAX || i < len) {
		api_problem(r, 400, "bad-request", "Malformed request",
		    "Idempotency-Key", "Idempotency-Key must be 1 to %d "
		    "printable ASCII characters without blanks",
		    JOBS_IDEM_MAX);
		return -1;
	}
	*out = xstrdup(h);
	return 0;
}

/* SHA-256 (hex) of what the request asks: the asset and the body. */
static void
job_hash(struct job_task *t)
{
	unsigned char	 md[SHA256_DIGEST_LENGTH];
	json_t		*o;
	char		*s;
	size_t		 i;

	o = json_pack("{s:s, s:s, s:s, s:i, s:I}", "objID", t->obj_id, "kind",
	    t->kind, "payload", t->payload, "priority", t->priority, "after",
	    (json_int_t)t->after);
	if (o == NULL || (s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS)) ==
	    NULL)
		fatalx("out of memory");
	json_decref(o);
	SHA256((const unsigned char *)s, strlen(s), md);
	free(s);
	for (i = 0; i < sizeof md; i++)
		snprintf(t->hash + 2 * i, sizeof t->hash - 2 * i, "%02x",
		    md[i]);
}

void
api_job_submit(struct api_req *r)
{
	static const char *const keys[] = { "kind", "payload", "priority",
	    "after", NULL };
	struct job_task	*t;
	json_t		*body = NULL, *kind;
	int64_t		 v;
	size_t		 i, len = strlen(r->param[0]);

	if (len > JOBS_OBJ_MAX) {
		job_invalid(r, "objID", "objID is %zu bytes, at most %d", len,
		    JOBS_OBJ_MAX);
		return;
	}
	t = job_task_new(r);
	t->obj_id = xstrdup(r->param[0]);
	if (job_idem(r, &t->idem) < 0 || (body = api_body_json(r)) == NULL ||
	    !job_keys_ok(r, body, keys))
		goto bad;
	kind = json_object_get(body, "kind");
	if (!job_name(r, kind, "kind", "kind"))
		goto bad;
	for (i = 0; i < nitems(reserved_kinds); i++) {
		if (strcmp(json_string_value(kind), reserved_kinds[i]) == 0) {
			job_invalid(r, "kind", "kind \"%s\" is the gateway's "
			    "own and cannot be submitted",
			    json_string_value(kind));
			goto bad;
		}
	}
	t->kind = xstrdup(json_string_value(kind));
	if (!job_object(r, body, "payload", &t->payload) ||
	    !job_int(r, body, "priority", QUEUE_PRIO_URGENT, QUEUE_PRIO_LOW,
	    QUEUE_PRIO_DEFAULT, &v))
		goto bad;
	t->priority = (int)v;
	if (t->payload == NULL)
		t->payload = xstrdup("{}");
	if (json_is_null(json_object_get(body, "after")))
		json_object_del(body, "after");
	if (!job_int(r, body, "after", 1, INT64_MAX, 0, &t->after))
		goto bad;
	json_decref(body);
	job_hash(t);
	dbw_submit(api_gw(r)->dbw, job_submit_run, job_submit_done, t);
	return;
bad:
	job_drop(t, body);
}

/* ------------------------------------------------------------------------ */
/* POST /v1/jobs/claim */

/* The bookkeeping thread: claim, and each job with its lease token. */
static int
job_claim_run(struct gwdb *g, void *arg)
{
	struct job_task		*t = arg;
	struct queue_job	*v;
	json_t			*jobs, *o;
	char			 tok[JOBS_TOKEN_LEN], *obj;
	size_t			 n = 0, i;
	int			 rc;

	v = xcalloc(t->max, sizeof *v);
	rc = queue_claim_kinds(g->q, JOBS_LANE, (const char *const *)t->kinds,
	    t->nkinds, t->worker, t->lease_ms, v, t->max, &n);
	if (rc != QUEUE_OK) {
		free(v);
		return rc;
	}
	jobs = json_array();
	for (i = 0; i < n; i++) {
		job_token(t->aj, v[i].id, v[i].lease_gen, tok);
		obj = job_obj_id(g, &v[i]);
		o = json_pack("{s:I, s:s, s:o, s:o, s:i, s:s, s:o}", "jobId",
		    (json_int_t)v[i].id, "kind", v[i].kind, "objID",
		    obj != NULL ? json_string(obj) : json_null(), "payload",
		    job_json_text(v[i].payload, v[i].payload_len), "attempt",
		    v[i].attempts, "leaseToken", tok, "leaseUntil",
		    job_time(v[i].lease_until_ms));
		free(obj);
		json_array_append_new(jobs, o);
		queue_job_clear(&v[i]);
	}
	free(v);
	if (t->out != NULL)
		json_decref(t->out);
	t->out = json_pack("{s:o}", "jobs", jobs);
	return QUEUE_OK;
}

static void
job_unpark(struct job_task *t)
{
	if (!t->waiting)
		return;
	TAILQ_REMOVE(&t->aj->waiting, t, entry);
	t->aj->nwaiting--;
	t->waiting = false;
	evtimer_del(t->timer);
}

/* Answer a claim (what it has, maybe nothing) and free it. */
static void
job_claim_answer(struct job_task *t, int rc)
{
	job_unpark(t);
	job_answer(t, rc);
	job_task_free(t);
}

static void job_claim_done(void *, int);

/* Claim again (parked: the timer or a wake-up). */
static void
job_claim_again(struct job_task *t)
{
	struct gw	*gw = t->aj->gw;

	if (t->busy)
		return;
	evtimer_del(t->timer);
	if (api_client_gone(t->r) || t->aj->stopped) {
		json_decref(t->out);
		t->out = json_pack("{s:[]}", "jobs");
		job_claim_answer(t, QUEUE_OK);
		return;
	}
	t->busy = true;
	dbw_submit(gw->dbw, job_claim_run, job_claim_done, t);
}

static void
job_claim_timer(evutil_socket_t fd, short ev, void *arg)
{
	(void)fd;
	(void)ev;
	job_claim_again(arg);
}

/* Back on the loop: answer, or park until a job is due or wait_s is over. */
static void
job_claim_done(void *arg, int rc)
{
	struct job_task	*t = arg;
	struct timeval	 tv;
	int64_t		 left = t->deadline - util_mono_ms();

	t->busy = false;
	if (rc != QUEUE_OK || json_array_size(json_object_get(t->out,
	    "jobs")) > 0 || left <= 0 || t->aj->stopped ||
	    api_client_gone(t->r)) {
		job_claim_answer(t, rc);
		return;
	}
	if (!t->waiting) {
		if (t->aj->nwaiting >= JOBS_WAITERS_MAX) {
			api_problem(t->r, 503, "too-many-claims", "Too many "
			    "waiting claims", "wait_s", "%d claims are "
			    "already waiting for jobs; claim again later",
			    JOBS_WAITERS_MAX);
			job_task_free(t);
			return;
		}
		TAILQ_INSERT_TAIL(&t->aj->waiting, t, entry);
		t->aj->nwaiting++;
		t->waiting = true;
		log_event(LL_DEBUG, "job.claim.wait", "worker=%s waiting=%zu",
		    log_q(t->worker), t->aj->nwaiting);
	}
	if (left > JOBS_RETRY_MS)
		left = JOBS_RETRY_MS;
	tv.tv_sec = (time_t)(left / 1000);
	tv.tv_usec = (suseconds_t)(left % 1000) * 1000;
	evtimer_add(t->timer, &tv);
}

static void
job_wake(struct api_jobs *aj)
{
	struct job_task	*t, *next;

	for (t = TAILQ_FIRST(&aj->waiting); t != NULL; t = next) {
		next = TAILQ_NEXT(t, entry);
		job_claim_again(t);
	}
}

void
api_jobs_claim(struct api_req *r)
{
	static const char *const keys[] = { "kinds", "worker", "max",
	    "lease_s", "wait_s", NULL };
	struct job_task	*t;
	json_t		*body, *kinds, *k;
	int64_t		 max, lease, wait;
	size_t		 i, j;
	char		 field[32];

	if ((body = api_body_json(r)) == NULL)
		return;
	t = job_task_new(r);
	if (!job_keys_ok(r, body, keys))
		goto bad;
	kinds = json_object_get(body, "kinds");
	if (!json_is_array(kinds) || json_array_size(kinds) == 0 ||
	    json_array_size(kinds) > JOBS_KINDS_MAX) {
		job_invalid(r, "kinds", "kinds must be an array of 1 to %d "
		    "kinds", JOBS_KINDS_MAX);
		goto bad;
	}
	t->kinds = xcalloc(json_array_size(kinds), sizeof *t->kinds);
	json_array_foreach(kinds, i, k) {
		snprintf(field, sizeof field, "kinds[%zu]", i);
		if (!job_name(r, k, field, "each kind"))
			goto bad;
		for (j = 0; j < t->nkinds; j++) {
			if (strcmp(t->kinds[j], json_string_value(k)) == 0)
				break;
		}
		if (j == t->nkinds)
			t->kinds[t->nkinds++] = xstrdup(json_string_value(k));
	}
	if (!job_name(r, json_object_get(body, "worker"), "worker", "worker") ||
	    !job_int(r, body, "max", 1, JOBS_CLAIM_MAX, 1, &max) ||
	    !job_int(r, body, "lease_s", 1, JOBS_LEASE_MAX_S,
	    JOBS_LEASE_DEFAULT_S, &lease) ||
	    !job_int(r, body, "wait_s", 0, JOBS_WAIT_MAX_S, 0, &wait))
		goto bad;
	t->worker = xstrdup(json_string_value(json_object_get(body,
	    "worker")));
	json_decref(body);
	t->max = (size_t)max;
	t->lease_ms = lease * 1000;
	t->deadline = util_mono_ms() + wait * 1000;
	if ((t->timer = evtimer_new(api_gw(r)->base, job_claim_timer, t)) ==
	    NULL)
		fatalx("evtimer_new failed");
	t->busy = true;
	dbw_submit(api_gw(r)->dbw, job_claim_run, job_claim_done, t);
	return;
bad:
	job_drop(t, body);
}

/* ------------------------------------------------------------------------ */
/* POST /v1/jobs/{id}/heartbeat, complete, fail */

/* ELOST: is the job there at all? (404 rather than 409 if not) */
static int
job_lost(struct gwdb *g, struct job_task *t, int rc)
{
	struct queue_job	j;

	if (rc != QUEUE_ELOST)
		return rc;
	if (t->gen < 0 && t->err == NULL)
		xasprintf(&t->err, "this is not a lease token of job %lld",
		    (long long)t->id);
	if (queue_get(g->q, t->id, &j) == QUEUE_ENOTFOUND)
		return QUEUE_ENOTFOUND;
	queue_job_clear(&j);
	return rc;
}

static int
job_heartbeat_run(struct gwdb *g, void *arg)
{
	struct job_task		*t = arg;
	struct queue_job	 j;
	int			 rc;

	if (t->gen < 0)
		return job_lost(g, t, QUEUE_ELOST);
	rc = queue_heartbeat(g->q, t->id, t->gen, t->lease_ms);
	if (rc != QUEUE_OK)
		return job_lost(g, t, rc);
	if ((rc = queue_get(g->q, t->id, &j)) != QUEUE_OK)
		return rc;
	t->out = json_pack("{s:I, s:o}", "jobId", (json_int_t)t->id,
	    "leaseUntil", job_time(j.lease_until_ms));
	queue_job_clear(&j);
	return QUEUE_OK;
}

/* complete: the result and an asset change commit with the completion. */
static int
job_complete_run(struct gwdb *g, void *arg)
{
	struct job_task		*t = arg;
	struct queue_job	 j;
	json_t			*asset = NULL;
	char			*obj;
	int			 rc, cur;

	if (t->gen < 0)
		return job_lost(g, t, QUEUE_ELOST);
	if ((rc = gwdb_durable(g, true)) != QUEUE_OK)
		goto out;
	if ((rc = queue_tx_begin(g->q)) != QUEUE_OK)
		goto out;
	rc = queue_complete(g->q, t->id, t->gen);
	if (rc == QUEUE_OK && t->text != NULL)
		rc = queue_data_put(g->q, t->id, JOBS_KEY_RESULT, t->text,
		    strlen(t->text));
	if (rc == QUEUE_OK && t->has_asset && !t->asset_id &&
	    (rc = queue_get(g->q, t->id, &j)) == QUEUE_OK) {
		if ((obj = job_obj_id(g, &j)) == NULL) {
			rc = QUEUE_EINVAL;
			t->field = "asset/objID";
			t->err = xstrdup("the job has no asset: give "
			    "asset.objID");
		} else {
			free(t->a.obj_id);
			t->a.obj_id = obj;
		}
		queue_job_clear(&j);
	}
	if (rc == QUEUE_OK && t->has_asset) {
		rc = api_asset_apply(g, t->a.obj_id, &t->a, NULL, -1, &cur,
		    &asset, &t->err);
		if (rc == QUEUE_EINVAL && t->field == NULL)
			t->field = "asset";
	}
	if (rc == QUEUE_OK)
		rc = queue_tx_commit(g->q);
	else
		queue_tx_rollback(g->q);
	if (rc == QUEUE_OK) {
		t->out = json_pack("{s:I, s:s}", "jobId", (json_int_t)t->id,
		    "status", "DONE");
		if (asset != NULL)
			json_object_set_new(t->out, "asset", asset);
	} else if (asset != NULL)
		json_decref(asset);
out:
	gwdb_durable(g, false);
	return job_lost(g, t, rc);
}

/* fail: retry with backoff, or FAILED now. */
static int
job_fail_run(struct gwdb *g, void *arg)
{
	struct job_task		*t = arg;
	struct queue_job	 j;
	int			 rc;

	if (t->gen < 0)
		return job_lost(g, t, QUEUE_ELOST);
	if ((rc = gwdb_durable(g, true)) != QUEUE_OK)
		goto out;
	rc = queue_fail(g->q, t->id, t->gen, t->text, !t->retry);
	if (rc == QUEUE_OK && (rc = queue_get(g->q, t->id, &j)) == QUEUE_OK) {
		t->out = json_pack("{s:I, s:s, s:i}", "jobId",
		    (json_int_t)t->id, "status", queue_state_name(j.state),
		    "attempt", j.attempts);
		if (j.state == QUEUE_QUEUED)
			json_object_set_new(t->out, "runAfter",
			    job_time(j.run_after_ms));
		queue_job_clear(&j);
	}
out:
	gwdb_durable(g, false);
	return job_lost(g, t, rc);
}

static void
job_settle_done(void *arg, int rc)
{
	struct job_task	*t = arg;

	if (rc == QUEUE_OK && t->has_asset)
		api_asset_wake(t->aj->gw);
	if (rc == QUEUE_OK && t->wake)
		job_wake(t->aj);
	job_answer(t, rc);
	job_task_free(t);
}

/*
 * A settle request: the path's job, the body with only these keys, its
 * lease token read. NULL once an answer is sent.
 */
static struct job_task *
job_settle_new(struct api_req *r, const char *const *keys, json_t **bodyp)
{
	struct job_task	*t;
	json_t		*body, *tok;

	*bodyp = NULL;
	t = job_task_new(r);
	if (!job_id_param(r, &t->id) || (body = api_body_json(r)) == NULL)
		goto bad;
	*bodyp = body;
	if (!job_keys_ok(r, body, keys))
		goto bad;
	tok = json_object_get(body, "leaseToken");
	if (!json_is_string(tok)) {
		job_invalid(r, "leaseToken", "leaseToken (a string, from the "
		    "claim) is required");
		goto bad;
	}
	/* a token that is not this job's: 404 or 409 once the job is looked up */
	if (job_token_read(t->aj, json_string_value(tok), t->id, &t->gen) !=
	    0)
		t->gen = -1;
	return t;
bad:
	job_drop(t, *bodyp);
	*bodyp = NULL;
	return NULL;
}

void
api_job_heartbeat(struct api_req *r)
{
	static const char *const keys[] = { "leaseToken", "lease_s", NULL };
	struct job_task	*t;
	json_t		*body;
	int64_t		 lease;

	if ((t = job_settle_new(r, keys, &body)) == NULL)
		return;
	if (!job_int(r, body, "lease_s", 1, JOBS_LEASE_MAX_S,
	    JOBS_LEASE_DEFAULT_S, &lease)) {
		job_drop(t, body);
		return;
	}
	json_decref(body);
	t->lease_ms = lease * 1000;
	dbw_submit(api_gw(r)->dbw, job_heartbeat_run, job_settle_done, t);
}

/* The "asset" of a completion, read as a PUT body; false once a 422 is sent. */
static bool
job_asset(struct api_req *r, struct job_task *t, json_t *asset)
{
	json_t	*id = json_object_get(asset, "objID");
	char	 field[128], full[160], *detail = NULL;

	if (!json_is_object(asset)) {
		api_problem(r, 422, "invalid-asset", "Invalid asset", "asset",
		    "asset must be a JSON object (the fields of a PUT)");
		return false;
	}
	if (id != NULL && (!json_is_string(id) || json_string_length(id) ==
	    0 || json_string_length(id) > JOBS_OBJ_MAX)) {
		api_problem(r, 422, "invalid-asset", "Invalid asset",
		    "asset/objID", "asset.objID must be a string of 1 to %d "
		    "bytes", JOBS_OBJ_MAX);
		return false;
	}
	t->asset_id = id != NULL;
	if (t->asset_id)
		t->obj_id = xstrdup(json_string_value(id));
	json_object_del(asset, "objID");
	if (api_asset_read(asset, t->asset_id ? t->obj_id : JOBS_NO_OBJ,
	    r->who, &t->a, field, sizeof field, &detail) != 0) {
		snprintf(full, sizeof full, "asset%s%s", *field != '\0' ? "/" :
		    "", field);
		api_problem(r, 422, "invalid-asset", "Invalid asset", full,
		    "asset: %s", detail);
		free(detail);
		return false;
	}
	t->has_asset = true;
	return true;
}

void
api_job_complete(struct api_req *r)
{
	static const char *const keys[] = { "leaseToken", "result", "asset",
	    NULL };
	struct job_task	*t;
	json_t		*body, *asset;

	if ((t = job_settle_new(r, keys, &body)) == NULL)
		return;
	if (!job_object(r, body, "result", &t->text))
		goto bad;
	if ((asset = json_object_get(body, "asset")) != NULL &&
	    !job_asset(r, t, asset))
		goto bad;
	json_decref(body);
	t->wake = true;		/* jobs chained after it */
	dbw_submit(api_gw(r)->dbw, job_complete_run, job_settle_done, t);
	return;
bad:
	job_drop(t, body);
}

void
api_job_fail(struct api_req *r)
{
	static const char *const keys[] = { "leaseToken", "error", "retry",
	    NULL };
	struct job_task	*t;
	json_t		*body, *e, *retry;

	if ((t = job_settle_new(r, keys, &body)) == NULL)
		return;
	e = json_object_get(body, "error");
	retry = json_object_get(body, "retry");
	if (!json_is_string(e) || json_string_length(e) == 0 ||
	    json_string_length(e) > JOBS_ERROR_MAX) {
		job_invalid(r, "error", "error must be a string of 1 to %d "
		    "bytes", JOBS_ERROR_MAX);
		goto bad;
	}
	if (retry != NULL && !json_is_boolean(retry)) {
		job_invalid(r, "retry", "retry must be true or false");
		goto bad;
	}
	t->text = xstrdup(json_string_value(e));
	t->retry = retry == NULL || json_is_true(retry);
	json_decref(body);
	dbw_submit(api_gw(r)->dbw, job_fail_run, job_settle_done, t);
	return;
bad:
	job_drop(t, body);
}

/* ------------------------------------------------------------------------ */
/* GET /v1/jobs/{id}, GET /v1/jobs, requeue, cancel, rerun */

static int
job_get_run(struct gwdb *g, void *arg)
{
	return job_out(g, arg);
}

static void
job_read_done(void *arg, int rc)
{
	struct job_task	*t = arg;

	job_answer(t, rc);
	job_task_free(t);
}

void
api_job_get(struct api_req *r)
{
	struct job_task	*t;

	t = job_task_new(r);
	if (!job_id_param(r, &t->id)) {
		job_drop(t, NULL);
		return;
	}
	dbw_submit(api_gw(r)->dbw, job_get_run, job_read_done, t);
}

static int
job_list_run(struct gwdb *g, void *arg)
{
	struct job_task		*t = arg;
	struct queue_filter	 f;
	struct queue_job	*v = NULL;
	json_t			*items, *o;
	size_t			 n = 0, i;
	int			 rc = QUEUE_OK;

	memset(&f, 0, sizeof f);
	f.state = t->state;
	f.kind = t->lkind;
	f.after_id = t->after;
	f.limit = t->limit;
	if ((rc = queue_list(g->q, &f, &v, &n)) != QUEUE_OK)
		return rc;
	items = json_array();
	for (i = 0; rc == QUEUE_OK && i < n; i++) {
		o = NULL;
		rc = job_json(g, &v[i], false, &o);
		if (o != NULL)
			json_array_append_new(items, o);
	}
	t->out = json_pack("{s:o}", "jobs", items);
	if (n == (size_t)t->limit && n > 0)
		json_object_set_new(t->out, "next", json_integer(v[n - 1].id));
	queue_jobs_free(v, n);
	return rc;
}

void
api_jobs_list(struct api_req *r)
{
	struct job_task		*t;
	enum queue_state	 st;
	const char		*state = api_query(r, "state");
	const char		*kind = api_query(r, "kind");
	const char		*after = api_query(r, "after");
	const char		*lim = api_query(r, "limit");
	char			*e;
	long long		 v;

	t = job_task_new(r);
	t->limit = JOBS_LIST_DEFAULT;
	if (state != NULL) {
		if (queue_state_parse(state, &st) != 0) {
			api_problem(r, 422, "invalid-parameter", "Invalid "
			    "parameter", "state", "state must be QUEUED, "
			    "RUNNING, DONE, FAILED or CANCELLED");
			goto bad;
		}
		t->state = (int)st;
	}
	if (kind != NULL) {
		if (!api_name_ok(kind)) {
			api_problem(r, 422, "invalid-parameter", "Invalid "
			    "parameter", "kind", "kind must be 1 to 63 of "
			    "A-Z a-z 0-9 _ . -");
			goto bad;
		}
		t->lkind = xstrdup(kind);
	}
	if (after != NULL) {
		errno = 0;
		v = strtoll(after, &e, 10);
		if (e == after || *e != '\0' || errno != 0 || v < 0) {
			api_problem(r, 422, "invalid-parameter", "Invalid "
			    "parameter", "after", "after must be a job id");
			goto bad;
		}
		t->after = (int64_t)v;
	}
	if (lim != NULL) {
		v = strtoll(lim, &e, 10);
		if (e == lim || *e != '\0' || v < 1 || v > JOBS_LIST_MAX) {
			api_problem(r, 422, "invalid-parameter", "Invalid "
			    "parameter", "limit", "limit must be 1 to %d",
			    JOBS_LIST_MAX);
			goto bad;
		}
		t->limit = (int)v;
	}
	dbw_submit(api_gw(r)->dbw, job_list_run, job_read_done, t);
	return;
bad:
	job_drop(t, NULL);
}

/* requeue, cancel, rerun (durable), then the job as it is now. */
static int
job_admin_run(struct gwdb *g, void *arg)
{
	struct job_task		*t = arg;
	struct queue_job	 j;
	char			*note;
	size_t			 n = 0;
	int			 rc;

	if ((rc = queue_get(g->q, t->id, &j)) != QUEUE_OK)
		return rc;
	t->cur = j.state;
	queue_job_clear(&j);
	if ((rc = gwdb_durable(g, true)) != QUEUE_OK)
		goto out;
	switch (t->op) {
	case OP_REQUEUE:
		xasprintf(&note, "requeued by %s (API)", t->worker);
		rc = queue_requeue(g->q, t->id, 0, note);
		t->err = xstrdup("only FAILED or CANCELLED jobs can be "
		    "requeued");
		break;
	case OP_CANCEL:
		xasprintf(&note, "cancelled by %s (API)", t->worker);
		rc = queue_cancel(g->q, t->id, note);
		t->err = xstrdup("only QUEUED, RUNNING or FAILED jobs can be "
		    "cancelled");
		break;
	case OP_RERUN:
	default:
		xasprintf(&note, "rerun by %s (API)", t->worker);
		rc = queue_rerun_from(g->q, t->id, note, &n);
		t->err = xstrdup("a job of its chain is RUNNING, or the job "
		    "has not ended (only DONE, FAILED or CANCELLED jobs are "
		    "rerun)");
		break;
	}
	free(note);
	if (rc == QUEUE_OK && (rc = job_out(g, t)) == QUEUE_OK &&
	    t->op == OP_RERUN)
		json_object_set_new(t->out, "rerun", json_integer((json_int_t)n));
out:
	gwdb_durable(g, false);
	return rc;
}

static void
job_admin_done(void *arg, int rc)
{
	struct job_task	*t = arg;

	if (rc == QUEUE_OK && t->op != OP_CANCEL)
		job_wake(t->aj);
	job_answer(t, rc);
	job_task_free(t);
}

static void
job_admin(struct api_req *r, enum job_op op)
{
	struct job_task	*t;

	t = job_task_new(r);
	if (!job_id_param(r, &t->id)) {
		job_drop(t, NULL);
		return;
	}
	t->op = op;
	t->worker = xstrdup(r->who);
	dbw_submit(api_gw(r)->dbw, job_admin_run, job_admin_done, t);
}

void
api_job_requeue(struct api_req *r)
{
	job_admin(r, OP_REQUEUE);
}

void
api_job_cancel(struct api_req *r)
{
	job_admin(r, OP_CANCEL);
}

void
api_job_rerun(struct api_req *r)
{
	job_admin(r, OP_RERUN);
}

/* ------------------------------------------------------------------------ */
/* Life cycle */

/* The lease-token key: kept in gw_meta, made once. */
static int
job_secret(struct gw *gw, unsigned char *key, char **cause)
{
	static const char *const names[] = { "api_lease_key0",
	    "api_lease_key1" };
	int64_t		 v[2];
	size_t		 i, got = 0;
	int		 rc;

	for (i = 0; i < 2; i++) {
		rc = gwdb_meta_get(gw->db, names[i], &v[i]);
		if (rc == QUEUE_OK)
			got++;
		else if (rc != QUEUE_ENOTFOUND)
			goto fail;
	}
	if (got < 2) {
		if (getrandom(v, sizeof v, 0) != (ssize_t)sizeof v) {
			xasprintf(cause, "api: no random bytes for the lease "
			    "key: %s", strerror(errno));
			return -1;
		}
		for (i = 0; i < 2; i++) {
			if ((rc = gwdb_meta_put(gw->db, names[i], v[i])) !=
			    QUEUE_OK)
				goto fail;
		}
	}
	memcpy(key, v, JOBS_SECRET_LEN);
	return 0;
fail:
	xasprintf(cause, "api: cannot keep the lease key: %s",
	    queue_strerror(rc));
	return -1;
}

struct api_jobs *
api_jobs_new(struct gw *gw, char **cause)
{
	struct api_jobs	*aj;

	aj = xcalloc(1, sizeof *aj);
	aj->gw = gw;
	TAILQ_INIT(&aj->waiting);
	if (job_secret(gw, aj->secret, cause) != 0) {
		free(aj);
		return NULL;
	}
	return aj;
}

/* Stop: parked claims are answered now (with no jobs), none wait again. */
void
api_jobs_stop(struct api_jobs *aj)
{
	struct job_task	*t;

	if (aj == NULL)
		return;
	aj->stopped = true;
	while ((t = TAILQ_FIRST(&aj->waiting)) != NULL) {
		if (t->busy) {
			job_unpark(t);	/* its done callback answers */
			continue;
		}
		json_decref(t->out);
		t->out = json_pack("{s:[]}", "jobs");
		job_claim_answer(t, QUEUE_OK);
	}
}

void
api_jobs_free(struct api_jobs *aj)
{
	if (aj == NULL)
		return;
	api_jobs_stop(aj);
	OPENSSL_cleanse(aj->secret, sizeof aj->secret);
	free(aj);
}
