/*
 * queue: the durable job queue on SQLite.
 *
 * States: QUEUED -> RUNNING -> DONE; RUNNING -> QUEUED (retry, later run_after)
 * or FAILED (attempts used up, or permanent failure); QUEUED/RUNNING/FAILED ->
 * CANCELLED. Attempts are counted at claim. Claims are leases: every call that
 * changes a RUNNING job is fenced by (id, worker, lease generation); 0 rows
 * changed means the worker lost the job (QUEUE_ELOST) and must drop it.
 *
 * Every state change appends an event in the same transaction. SQLITE_BUSY is
 * retried inside the library (bounded, short sleeps), never surfaced as a lost
 * job; a caller on an event loop sets busy_ms small and retries QUEUE_EBUSY
 * from a timer.
 *
 * Depends on sqlite3 and libc only. One struct queue per thread.
 */
#ifndef QUEUE_H
#define QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sqlite3;

enum queue_state {
	QUEUE_QUEUED = 0,
	QUEUE_RUNNING = 1,
	QUEUE_DONE = 2,
	QUEUE_FAILED = 3,
	QUEUE_CANCELLED = 4,
};

enum queue_rc {
	QUEUE_OK = 0,
	QUEUE_EXISTS = 1,	/* enqueue: idempotency key matched; *id is the old job */
	QUEUE_ELOST = -1,	/* fenced update changed nothing: lease lost, drop the job */
	QUEUE_ENOTFOUND = -2,
	QUEUE_EBUSY = -3,	/* the database stayed locked past the retry budget */
	QUEUE_EFULL = -4,	/* disk full: nothing was stored */
	QUEUE_EIO = -5,		/* I/O error, corruption, or any other SQLite failure */
	QUEUE_EINVAL = -6,
	QUEUE_ESTATE = -7,	/* the job is not in a state that allows this */
};

/* Milliseconds since 1970; tests pass a controllable clock. */
typedef int64_t (*queue_clock_fn)(void *arg);

struct queue_opts {
	const char	*path;		/* database file; created if missing */
	bool		 sync_normal;	/* false: synchronous=FULL (default) */
	int		 busy_ms;	/* total wait for a lock per call; 0 = 5000 */
	queue_clock_fn	 clock;		/* NULL = wall clock */
	void		*clock_arg;
	uint64_t	 seed;		/* jitter PRNG seed; 0 = from time and pid */
};

/* Per-kind retry policy; kinds without one use the defaults shown. */
struct queue_policy {
	int	max_attempts;	/* 5 */
	int64_t	backoff_base_ms;	/* 1000 */
	int64_t	backoff_cap_ms;	/* 300000 */
	int	jitter_pct;	/* 10: +-10 % */
	int64_t	lease_ms;	/* 30000 */
};

struct queue_enqueue_req {
	const char	*lane;		/* which workers may claim it, e.g. "ncs:ENPS1" */
	const char	*kind;		/* e.g. "publish", "ingest" */
	const void	*payload;	/* opaque bytes, may be NULL */
	size_t		 payload_len;
	int		 priority;	/* 0 (most urgent) .. 9; default 5 */
	int64_t		 run_after_ms;	/* 0 = now; absolute time for delayed jobs */
	int		 max_attempts;	/* 0 = the kind's policy */
	const char	*idem_key;	/* NULL or unique forever: returns the existing job */
	const char	*coalesce_key;	/* NULL or supersedes a QUEUED job with the same key */
	int64_t		 after_job;	/* 0, or the job whose success releases this one */
};

struct queue_job {
	int64_t		 id;
	char		*lane;
	char		*kind;
	void		*payload;
	size_t		 payload_len;
	enum queue_state state;
	int		 priority;
	int		 attempts;	/* claims so far, including the current one */
	int		 max_attempts;
	int64_t		 run_after_ms;
	int64_t		 lease_until_ms;
	int64_t		 lease_gen;	/* fencing token of the current claim */
	char		*worker;
	char		*idem_key;
	char		*coalesce_key;
	int64_t		 after_job;
	char		*last_error;
	int64_t		 created_ms;
	int64_t		 updated_ms;
};

struct queue_event {
	int64_t		 job_id;
	int64_t		 t_ms;
	enum queue_state from, to;
	int		 attempt;
	char		*worker;
	char		*note;		/* error text or operator note */
};

struct queue_filter {
	int		 state;		/* -1 = any, else enum queue_state */
	const char	*kind;		/* NULL = any */
	const char	*lane;		/* NULL = any */
	int64_t		 older_than_ms;	/* 0 = any; else updated before now - this */
	int64_t		 after_id;	/* paging: ids greater than this */
	int		 limit;		/* 0 = 100 */
};

struct queue_stats {
	int64_t	count[5];		/* by enum queue_state */
	int64_t	oldest_due_age_ms;	/* QUEUED and due; 0 if none */
	int64_t	retries;		/* RUNNING -> QUEUED transitions on failure */
	int64_t	rescues;		/* expired leases returned by the reaper */
	int64_t	coalesced;		/* jobs superseded by a newer one */
};

struct queue;

/* Open (creating or migrating the schema). On error *err is malloc'd text. */
int	 queue_open(struct queue **, const struct queue_opts *, char **err);
void	 queue_close(struct queue *);
/* The connection, so that a caller can keep its own tables in the same file. */
struct sqlite3 *queue_db(struct queue *);
const char *queue_strerror(int rc);
const char *queue_state_name(enum queue_state);
int	 queue_state_parse(const char *, enum queue_state *);
int64_t	 queue_now(struct queue *);	/* the queue's clock */

/*
 * Caller transactions: everything between begin and commit is one
 * transaction (BEGIN IMMEDIATE), so that a caller's own rows and the jobs it
 * enqueues commit together. Queue calls nest inside it.
 */
int	 queue_tx_begin(struct queue *);
int	 queue_tx_commit(struct queue *);	/* on failure the transaction is rolled back */
void	 queue_tx_rollback(struct queue *);

int	 queue_set_policy(struct queue *, const char *kind, const struct queue_policy *);
/*
 * At most max_running jobs of a lane RUNNING at once (0 = unlimited); of
 * those, `reserved` slots are kept for jobs with priority <= urgent_prio, so a
 * flood of low-priority work cannot starve urgent work.
 */
int	 queue_set_lane_limits(struct queue *, const char *lane, int max_running,
	    int urgent_prio, int reserved);

int	 queue_enqueue(struct queue *, const struct queue_enqueue_req *, int64_t *id);

/*
 * Claim up to max due QUEUED jobs of a lane (NULL = any lane), in priority,
 * then run_after, then id order, setting attempts+1, worker and lease. jobs
 * must hold max entries; *n says how many were claimed. Free each with
 * queue_job_clear(). lease_ms 0 = the kind's policy.
 */
int	 queue_claim(struct queue *, const char *lane, const char *worker,
	    int64_t lease_ms, struct queue_job *jobs, size_t max, size_t *n);
int	 queue_heartbeat(struct queue *, int64_t id, int64_t lease_gen,
	    int64_t lease_ms);
int	 queue_complete(struct queue *, int64_t id, int64_t lease_gen);
/* Group commit: complete many in one transaction; rcs[i] per job (may be NULL). */
int	 queue_complete_many(struct queue *, const int64_t *ids,
	    const int64_t *gens, size_t n, int *rcs);
/* Retry with backoff while attempts remain, else FAILED; permanent: FAILED now. */
int	 queue_fail(struct queue *, int64_t id, int64_t lease_gen,
	    const char *error, bool permanent);
/* Give a claimed job back without counting the attempt (e.g. link went down). */
int	 queue_release(struct queue *, int64_t id, int64_t lease_gen,
	    int64_t delay_ms);

/* Return expired leases to QUEUED (with backoff) or FAILED. *n = how many. */
int	 queue_reap(struct queue *, size_t *n);

/* Operator actions. requeue: FAILED/CANCELLED -> QUEUED, raising max_attempts. */
int	 queue_requeue(struct queue *, int64_t id, int extra_attempts,
	    const char *note);
int	 queue_requeue_many(struct queue *, const struct queue_filter *,
	    int extra_attempts, const char *note, size_t *n);
int	 queue_cancel(struct queue *, int64_t id, const char *note);
/* Re-run a chain from a step: that job and every job chained after it. */
int	 queue_rerun_from(struct queue *, int64_t id, const char *note, size_t *n);

int	 queue_get(struct queue *, int64_t id, struct queue_job *);
int	 queue_list(struct queue *, const struct queue_filter *,
	    struct queue_job **jobs, size_t *n);	/* free with queue_jobs_free */
int	 queue_history(struct queue *, int64_t id, struct queue_event **ev,
	    size_t *n);					/* free with queue_events_free */
int	 queue_stats(struct queue *, struct queue_stats *);
/* Delete DONE older than done_age_ms and FAILED/CANCELLED older than failed_age_ms. */
int	 queue_prune(struct queue *, int64_t done_age_ms, int64_t failed_age_ms,
	    size_t *n);

void	 queue_job_clear(struct queue_job *);
void	 queue_jobs_free(struct queue_job *, size_t);
void	 queue_events_free(struct queue_event *, size_t);

#endif /* QUEUE_H */
