/* queue: open and close, errors, names, policies, lane limits. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include <sqlite3.h>

#include "queue/queue_int.h"

#define QUEUE_BUSY_MS_DEFAULT	5000
#define QUEUE_BACKOFF_CAP_MAX	(366LL * 24 * 3600 * 1000)

static const struct queue_policy queue_policy_builtin = {
	.max_attempts = 5,
	.backoff_base_ms = 1000,
	.backoff_cap_ms = 300000,
	.jitter_pct = 10,
	.lease_ms = 30000,
};

static const char *const queue_state_names[] = {
	"QUEUED", "RUNNING", "DONE", "FAILED", "CANCELLED",
};

/* Milliseconds of a clock. */
static int64_t
queue_clock_ms(clockid_t id)
{
	struct timespec	ts;

	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Milliseconds of the monotonic clock (lock waits). */
int64_t
queue_mono_ms(void)
{
	return queue_clock_ms(CLOCK_MONOTONIC);
}

/* The queue's clock: the injected one, or the wall clock. */
int64_t
queue_now(struct queue *q)
{
	if (q->clock != NULL)
		return q->clock(q->clock_arg);
	return queue_clock_ms(CLOCK_REALTIME);
}

/* The next number of the jitter generator (xorshift64*). */
uint64_t
queue_rand(struct queue *q)
{
	uint64_t	x = q->rng;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	q->rng = x;
	return x * 0x2545f4914f6cdd1dULL;
}

/* Record a store failure as the queue's last error; the queue rc for it. */
int
queue_err(struct queue *q, int src, const char *what)
{
	int	rc;

	switch (src) {
	case STORE_BUSY:
		snprintf(q->errmsg, sizeof q->errmsg, "%s: the database stayed "
		    "locked by another connection for %d ms", what, q->busy_ms);
		return QUEUE_EBUSY;
	case STORE_FULL:
		rc = QUEUE_EFULL;
		break;
	case STORE_CONSTRAINT:
		rc = QUEUE_EINVAL;
		break;
	case STORE_IOERR:
		rc = store_errno(q->db) == ENOSPC ? QUEUE_EFULL :
		    QUEUE_EIO;
		break;
	default:
		rc = QUEUE_EIO;
		break;
	}
	snprintf(q->errmsg, sizeof q->errmsg, "%s: %s", what,
	    store_errmsg(q->db));
	return rc;
}

/* Record a formatted message as the queue's last error; return rc. */
int
queue_errx(struct queue *q, int rc, const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	vsnprintf(q->errmsg, sizeof q->errmsg, fmt, ap);
	va_end(ap);
	return rc;
}

/* The last error of this queue in words. */
const char *
queue_errmsg(struct queue *q)
{
	if (q == NULL || q->errmsg[0] == '\0')
		return "no error";
	return q->errmsg;
}

/* A short description of a queue rc. */
const char *
queue_strerror(int rc)
{
	switch (rc) {
	case QUEUE_OK:
		return "ok";
	case QUEUE_EXISTS:
		return "a job with this idempotency key exists";
	case QUEUE_ELOST:
		return "lease lost: the job is no longer this worker's";
	case QUEUE_ENOTFOUND:
		return "no such job";
	case QUEUE_EBUSY:
		return "database locked past the retry budget";
	case QUEUE_EFULL:
		return "disk full: nothing was stored";
	case QUEUE_EIO:
		return "database error";
	case QUEUE_EINVAL:
		return "invalid argument";
	case QUEUE_ESTATE:
		return "the job is not in a state that allows this";
	}
	return "unknown error";
}

/* The name of a state, e.g. "FAILED". */
const char *
queue_state_name(enum queue_state st)
{
	if ((unsigned)st >= sizeof queue_state_names / sizeof *queue_state_names)
		return "?";
	return queue_state_names[st];
}

/* Parse a state name (any case); 0 or -1. */
int
queue_state_parse(const char *s, enum queue_state *st)
{
	size_t	i;

	for (i = 0; s != NULL && i < sizeof queue_state_names /
	    sizeof *queue_state_names; i++) {
		if (strcasecmp(s, queue_state_names[i]) == 0) {
			*st = (enum queue_state)i;
			return 0;
		}
	}
	return -1;
}

/* The policy of a kind (or the default). */
const struct queue_policy *
queue_policy_of(struct queue *q, const char *kind)
{
	size_t	i;

	for (i = 1; kind != NULL && i < q->npolicies; i++) {
		if (strcmp(q->policies[i].kind, kind) == 0)
			return &q->policies[i].p;
	}
	return &q->policies[0].p;
}

/* min(cap, base * 2^(attempt-1)), then +-jitter % drawn from r. */
int64_t
queue_backoff(const struct queue_policy *p, int attempt, uint64_t r)
{
	int64_t	d = p->backoff_base_ms, j;
	int	i;

	for (i = 1; i < attempt && d < p->backoff_cap_ms; i++)
		d *= 2;
	if (d > p->backoff_cap_ms)
		d = p->backoff_cap_ms;
	if (p->jitter_pct > 0 && d > 0) {
		j = d * p->jitter_pct / 100;
		d += (int64_t)(r % (uint64_t)(2 * j + 1)) - j;
	}
	return d < 0 ? 0 : d;
}

/* SQL queue_lease_ms(kind): the lease of a kind's policy. */
static void
queue_fn_lease(sqlite3_context *cx, int argc, sqlite3_value **argv)
{
	struct queue	*q = sqlite3_user_data(cx);
	const char	*kind = (const char *)sqlite3_value_text(argv[0]);

	(void)argc;
	sqlite3_result_int64(cx, queue_policy_of(q, kind)->lease_ms);
}

/* SQL queue_backoff_ms(kind, attempt): the delay before the next attempt. */
static void
queue_fn_backoff(sqlite3_context *cx, int argc, sqlite3_value **argv)
{
	struct queue	*q = sqlite3_user_data(cx);
	const char	*kind = (const char *)sqlite3_value_text(argv[0]);

	(void)argc;
	sqlite3_result_int64(cx, queue_backoff(queue_policy_of(q, kind),
	    sqlite3_value_int(argv[1]), queue_rand(q)));
}

/* Fill the zero fields of p from base; -1 if a value is out of range. */
static int
queue_policy_fill(struct queue_policy *p, const struct queue_policy *base)
{
	if (p->max_attempts == 0)
		p->max_attempts = base->max_attempts;
	if (p->backoff_base_ms == 0)
		p->backoff_base_ms = base->backoff_base_ms;
	if (p->backoff_cap_ms == 0)
		p->backoff_cap_ms = base->backoff_cap_ms;
	if (p->jitter_pct == 0)
		p->jitter_pct = base->jitter_pct;
	if (p->lease_ms == 0)
		p->lease_ms = base->lease_ms;
	if (p->max_attempts < 1 || p->backoff_base_ms < 0 ||
	    p->backoff_cap_ms < 0 || p->backoff_cap_ms > QUEUE_BACKOFF_CAP_MAX ||
	    p->jitter_pct < 0 || p->jitter_pct > 100 || p->lease_ms < 1)
		return -1;
	return 0;
}

/* Set the policy of a kind (NULL: the default) in the struct queue. */
static int
queue_set_policy_mem(struct queue *q, const char *kind,
    const struct queue_policy *policy)
{
	struct queue_kind_policy	*kp;
	struct queue_policy		 p = *policy;
	size_t				 i;

	if (queue_policy_fill(&p, kind == NULL ? &queue_policy_builtin :
	    &q->policies[0].p) != 0)
		return queue_errx(q, QUEUE_EINVAL, "policy value out of range");
	if (kind == NULL) {
		q->policies[0].p = p;
		return QUEUE_OK;
	}
	for (i = 1; i < q->npolicies; i++) {
		if (strcmp(q->policies[i].kind, kind) == 0) {
			q->policies[i].p = p;
			return QUEUE_OK;
		}
	}
	kp = reallocarray(q->policies, q->npolicies + 1, sizeof *kp);
	if (kp == NULL)
		return queue_errx(q, QUEUE_EIO, "out of memory");
	q->policies = kp;
	if ((kp[q->npolicies].kind = strdup(kind)) == NULL)
		return queue_errx(q, QUEUE_EIO, "out of memory");
	kp[q->npolicies++].p = p;
	return QUEUE_OK;
}

/*
 * Set the policy of a kind (NULL: the default). PostgreSQL reads the
 * policies from the session: they are loaded again before the next write.
 */
int
queue_set_policy(struct queue *q, const char *kind,
    const struct queue_policy *policy)
{
	int	rc;

	if ((rc = queue_set_policy_mem(q, kind, policy)) == QUEUE_OK)
		q->policies_stale = true;
	return rc;
}

/* Set the running limit and the urgent reserve of a lane. */
int
queue_set_lane_limits(struct queue *q, const char *lane, int max_running,
    int urgent_prio, int reserved)
{
	struct queue_lane_limit	*l = NULL;
	size_t			 i;

	if (lane == NULL || max_running < 0 || reserved < 0 ||
	    (max_running > 0 && reserved >= max_running) ||
	    urgent_prio < QUEUE_PRIO_URGENT || urgent_prio > QUEUE_PRIO_LOW)
		return queue_errx(q, QUEUE_EINVAL, "lane limits out of range");
	for (i = 0; i < q->nlanes; i++) {
		if (strcmp(q->lanes[i].lane, lane) == 0)
			l = &q->lanes[i];
	}
	if (l == NULL) {
		l = reallocarray(q->lanes, q->nlanes + 1, sizeof *l);
		if (l == NULL)
			return queue_errx(q, QUEUE_EIO, "out of memory");
		q->lanes = l;
		l += q->nlanes;
		if ((l->lane = strdup(lane)) == NULL)
			return queue_errx(q, QUEUE_EIO, "out of memory");
		q->nlanes++;
	}
	l->max_running = max_running;
	l->urgent_prio = urgent_prio;
	l->reserved = max_running > 0 ? reserved : 0;
	return QUEUE_OK;
}

/* Run a PRAGMA and copy its first result into buf (may be NULL). */
static int
queue_pragma(struct queue *q, const char *sql, char *buf, size_t len)
{
	struct store_stmt	*s;
	int		 rc;

	if ((rc = store_prepare(q->db, sql, 0, &s)) != STORE_OK)
		return queue_err(q, rc, sql);
	rc = store_step(s);
	if (rc == STORE_ROW && buf != NULL)
		snprintf(buf, len, "%s", store_column_text(s, 0));
	if (rc == STORE_ROW || rc == STORE_DONE)
		rc = QUEUE_OK;
	else
		rc = queue_err(q, rc, sql);
	store_finalize(s);
	return rc;
}

/* One integer of a query (a PRAGMA, a count). */
static int
queue_int_of(struct queue *q, const char *sql, int64_t *v)
{
	char	buf[32] = "";
	int	rc;

	if ((rc = queue_pragma(q, sql, buf, sizeof buf)) == QUEUE_OK)
		*v = strtoll(buf, NULL, 10);
	return rc;
}

/*
 * Is this file ours? Read only: nothing is written before the answer. A
 * file with our mark is; an empty file is (new); so is a queue file of a
 * version before marks (user_version set, the queue's tables there, no
 * mark), which *mark says to mark. Anything else is refused.
 */
static int
queue_identify(struct queue *q, int32_t want, bool *mark)
{
	int64_t	app = 0, objs = 0, ours = 0, version = 0;
	int	rc;

	*mark = false;
	if ((rc = queue_int_of(q, "PRAGMA application_id", &app)) != QUEUE_OK ||
	    (rc = queue_int_of(q, "SELECT count(*) FROM sqlite_schema",
	    &objs)) != QUEUE_OK ||
	    (rc = queue_int_of(q, "SELECT count(*) FROM sqlite_schema WHERE "
	    "type = 'table' AND name IN ('jobs', 'job_events', "
	    "'queue_counters')", &ours)) != QUEUE_OK ||
	    (rc = queue_int_of(q, "PRAGMA user_version", &version)) != QUEUE_OK)
		return rc;
	if ((int32_t)app == want)
		return QUEUE_OK;
	if (app != 0)
		return queue_errx(q, QUEUE_EINVAL, "not a mosgw database: it "
		    "belongs to another application (application_id 0x%08x); "
		    "nothing was changed", (unsigned)(uint32_t)app);
	if (objs == 0 || (ours == 3 && version >= 1)) {
		*mark = true;
		return QUEUE_OK;
	}
	return queue_errx(q, QUEUE_EINVAL, "not a mosgw database: an SQLite "
	    "file with %lld schema objects of another application and no "
	    "mosgw mark; nothing was changed", (long long)objs);
}

/* PRAGMA quick_check: the file's pages and records are sound. */
static int
queue_quick_check(struct queue *q)
{
	struct store_stmt	*s;
	const char	*r;
	int		 rc;

	rc = store_prepare(q->db, "PRAGMA quick_check(1)", 0, &s);
	if (rc != STORE_OK)
		return queue_err(q, rc, "integrity check");
	rc = store_step(s);
	r = rc == STORE_ROW ? store_column_text(s, 0) : NULL;
	if (r != NULL && strcmp(r, "ok") == 0)
		rc = QUEUE_OK;
	else if (r != NULL)
		rc = queue_errx(q, QUEUE_EIO, "the database file is damaged "
		    "(quick_check: %s); restore it from a backup", r);
	else
		rc = queue_err(q, rc, "the database file is damaged; "
		    "integrity check");
	store_finalize(s);
	return rc;
}

/* Mark a file as ours (PRAGMA application_id). */
static int
queue_mark(struct queue *q, int32_t id)
{
	char	sql[64];

	snprintf(sql, sizeof sql, "PRAGMA application_id = %d", (int)id);
	return queue_pragma(q, sql, NULL, 0);
}

/* Connection settings: WAL, durability, foreign keys, our SQL functions. */
static int
queue_setup(struct queue *q, const struct queue_opts *o)
{
	const char	*path = o->path;
	char		 mode[32] = "";
	bool		 mark = false;
	int		 rc;

	if (store_driver(q->db) == STORE_POSTGRESQL) {
		/* Lock waits are the server's: bounded by busy_ms. */
		if ((rc = store_busy_timeout(q->db, q->busy_ms)) != STORE_OK)
			return queue_err(q, rc, "lock timeout");
		if ((rc = queue_schema_migrate(q)) != QUEUE_OK)
			return rc;
		return queue_pg_policies(q);
	}
	queue_tx_hooks(q);
	if (sqlite3_create_function_v2(store_sqlite(q->db), "queue_lease_ms", 1,
	    SQLITE_UTF8, q, queue_fn_lease, NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_create_function_v2(store_sqlite(q->db), "queue_backoff_ms",
	    2, SQLITE_UTF8, q, queue_fn_backoff, NULL, NULL, NULL) != SQLITE_OK)
		return queue_err(q, store_errcode(q->db), "functions");
	if (o->application_id != 0 &&
	    (rc = queue_identify(q, o->application_id, &mark)) != QUEUE_OK)
		return rc;
	if (o->check && (rc = queue_quick_check(q)) != QUEUE_OK)
		return rc;
	if ((rc = queue_pragma(q, "PRAGMA journal_mode = WAL", mode,
	    sizeof mode)) != QUEUE_OK)
		return rc;
	if (strcasecmp(mode, "wal") != 0 && strcmp(path, ":memory:") != 0)
		return queue_errx(q, QUEUE_EIO, "cannot use WAL mode "
		    "(journal_mode stays %s)", mode);
	if ((rc = queue_pragma(q, q->sync_normal ? "PRAGMA synchronous = NORMAL"
	    : "PRAGMA synchronous = FULL", NULL, 0)) != QUEUE_OK)
		return rc;
	if ((rc = queue_pragma(q, "PRAGMA foreign_keys = ON", NULL, 0)) !=
	    QUEUE_OK)
		return rc;
	if ((rc = queue_schema_migrate(q)) != QUEUE_OK)
		return rc;
	return mark ? queue_mark(q, o->application_id) : QUEUE_OK;
}

/*
 * Create a missing database file 0640 (the umask may take more away), so
 * that every frame of history is not world-readable; SQLite gives -wal and
 * -shm the mode of the database file. An existing file is left as it is.
 */
static int
queue_create_file(const char *path, char **err)
{
	int	fd;

	if (strcmp(path, ":memory:") == 0 || access(path, F_OK) == 0)
		return QUEUE_OK;
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
	if (fd == -1 && errno != EEXIST) {
		if (err != NULL && asprintf(err, "%s: cannot create: %s", path,
		    strerror(errno)) < 0)
			*err = NULL;
		return QUEUE_EIO;
	}
	if (fd != -1)
		close(fd);
	return QUEUE_OK;
}

/* Allocate a queue with its options and default policy. */
static struct queue *
queue_alloc(const struct queue_opts *o)
{
	struct queue	*q;
	uint64_t	 seed;

	if ((q = calloc(1, sizeof *q)) == NULL)
		return NULL;
	if ((q->policies = calloc(1, sizeof *q->policies)) == NULL) {
		free(q);
		return NULL;
	}
	q->policies[0].p = queue_policy_builtin;
	q->npolicies = 1;
	q->sync_normal = o->sync_normal;
	q->busy_ms = o->busy_ms > 0 ? o->busy_ms : QUEUE_BUSY_MS_DEFAULT;
	q->clock = o->clock;
	q->clock_arg = o->clock_arg;
	seed = o->seed != 0 ? o->seed : (uint64_t)queue_clock_ms(CLOCK_REALTIME)
	    ^ ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)q;
	/* splitmix64 of the seed: never 0, well spread. */
	seed += 0x9e3779b97f4a7c15ULL;
	seed = (seed ^ (seed >> 30)) * 0xbf58476d1ce4e5b9ULL;
	seed = (seed ^ (seed >> 27)) * 0x94d049bb133111ebULL;
	q->rng = (seed ^ (seed >> 31)) | 1;
	return q;
}

/* The SQLite file's checks before it is opened: missing, or created 0640. */
static int
queue_open_file(const struct queue_opts *o, char **err)
{
	if (o->path == NULL || *o->path == '\0') {
		if (err != NULL)
			*err = strdup("no database path given");
		return QUEUE_EINVAL;
	}
	if (o->must_exist && strcmp(o->path, ":memory:") != 0 &&
	    access(o->path, F_OK) != 0) {
		if (err != NULL && asprintf(err, "%s: %s", o->path,
		    strerror(errno)) < 0)
			*err = NULL;
		return QUEUE_ENOTFOUND;
	}
	if (!o->must_exist && queue_create_file(o->path, err) != QUEUE_OK)
		return QUEUE_EIO;
	return QUEUE_OK;
}

/* Open a queue database, creating or migrating its schema. */
int
queue_open(struct queue **qp, const struct queue_opts *o, char **err)
{
	struct store_conf	 sc;
	struct queue		*q;
	char			*why = NULL, *name;
	int			 rc;

	*qp = NULL;
	if (err != NULL)
		*err = NULL;
	if (o == NULL) {
		if (err != NULL)
			*err = strdup("no database given");
		return QUEUE_EINVAL;
	}
	if (o->driver == STORE_SQLITE && (rc = queue_open_file(o, err)) !=
	    QUEUE_OK)
		return rc;
	if ((q = queue_alloc(o)) == NULL) {
		if (err != NULL)
			*err = strdup("out of memory");
		return QUEUE_EIO;
	}
	sc.driver = o->driver;
	sc.path = o->path;
	sc.dsn = o->dsn;
	sc.idle_tx_ms = o->idle_tx_ms;
	if (o->dsn != NULL && (q->dsn = strdup(o->dsn)) == NULL) {
		queue_close(q);
		if (err != NULL)
			*err = strdup("out of memory");
		return QUEUE_EIO;
	}
	rc = store_open(&q->db, &sc, o->must_exist ? 0 : STORE_OPEN_CREATE,
	    &why);
	if (rc != STORE_OK) {
		snprintf(q->errmsg, sizeof q->errmsg, "open: %s", why != NULL ?
		    why : "out of memory");
		free(why);
		rc = rc == STORE_BUSY ? QUEUE_EBUSY : rc == STORE_FULL ?
		    QUEUE_EFULL : QUEUE_EIO;
	} else {
		if (o->driver == STORE_SQLITE)
			q->flock = queue_flock_get(o->path);
		rc = queue_setup(q, o);
	}
	if (rc != QUEUE_OK) {
		name = o->driver == STORE_SQLITE ? strdup(o->path) :
		    store_dsn_redact(o->dsn);
		if (err != NULL && asprintf(err, "%s: %s", name != NULL ?
		    name : "?", q->errmsg) < 0)
			*err = NULL;
		free(name);
		queue_close(q);
		return rc;
	}
	*qp = q;
	return QUEUE_OK;
}

/* Close a queue (NULL is fine); an open transaction is rolled back. */
void
queue_close(struct queue *q)
{
	size_t	i;

	if (q == NULL)
		return;
	if (q->db != NULL) {
		queue_tx_close(q);
		queue_sql_finalize(q);
		store_close(q->db);
	}
	store_close(q->wake);
	free(q->dsn);
	queue_flock_put(q->flock);
	for (i = 0; i < q->npolicies; i++)
		free(q->policies[i].kind);
	free(q->policies);
	for (i = 0; i < q->nlanes; i++)
		free(q->lanes[i].lane);
	free(q->lanes);
	free(q);
}

/* The SQLite connection of a queue. */
struct store *
queue_db(struct queue *q)
{
	return q->db;
}

/* Change the wait for a lock per call (busy_ms of the options). */
int
queue_set_busy(struct queue *q, int busy_ms)
{
	int	rc;

	q->busy_ms = busy_ms > 0 ? busy_ms : QUEUE_BUSY_MS_DEFAULT;
	if (store_driver(q->db) == STORE_POSTGRESQL &&
	    (rc = store_busy_timeout(q->db, q->busy_ms)) != STORE_OK)
		return queue_err(q, rc, "lock timeout");
	return QUEUE_OK;
}

/* Free the strings and payload of a job and zero it. */
void
queue_job_clear(struct queue_job *j)
{
	if (j == NULL)
		return;
	free(j->lane);
	free(j->kind);
	free(j->payload);
	free(j->worker);
	free(j->idem_key);
	free(j->coalesce_key);
	free(j->last_error);
	memset(j, 0, sizeof *j);
}

/* Free an array of jobs from queue_list(). */
void
queue_jobs_free(struct queue_job *jobs, size_t n)
{
	size_t	i;

	for (i = 0; jobs != NULL && i < n; i++)
		queue_job_clear(&jobs[i]);
	free(jobs);
}

/* Free an array of events from queue_history(). */
void
queue_events_free(struct queue_event *ev, size_t n)
{
	size_t	i;

	for (i = 0; ev != NULL && i < n; i++) {
		free(ev[i].worker);
		free(ev[i].note);
	}
	free(ev);
}
