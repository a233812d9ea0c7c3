/*
 * queue: the durable job queue on SQLite.
 *
 * States: QUEUED -> RUNNING -> DONE; RUNNING -> QUEUED (retry, later run_after)
 * or FAILED (attempts used up, or permanent failure); QUEUED/RUNNING/FAILED ->
 * CANCELLED. Attempts are counted at claim. Claims are leases: every call that
 * changes a RUNNING job is fenced by (id, worker, lease generation); 0 rows
 * changed means the worker lost the job (QUEUE_ELOST) and must drop it.
 *
 * Every state change appends an event in the same transaction. STORE_BUSY is
 * retried inside the library (bounded, short sleeps), never surfaced as a lost
 * job; a caller on an event loop sets busy_ms small and retries QUEUE_EBUSY
 * from a timer.
 *
 * A job chained after another (after_job) stays QUEUED with `blocked` set
 * until that job is DONE; the completion releases it in the same transaction.
 *
 * The queue owns PRAGMA user_version of its file (its schema version); a
 * caller keeping its own tables in the same file versions them elsewhere.
 * docs/queue.md has the semantics, the guarantees and the schema.
 *
 * Depends on store/ (SQLite) and libc only. One struct queue per thread; the
 * threads of a process take turns writing a file (queue/lock.c). Do not
 * fork while a thread is inside a queue transaction.
 */
#ifndef QUEUE_H
#define QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

#define QUEUE_SCHEMA_VERSION	1

#define QUEUE_PRIO_URGENT	0
#define QUEUE_PRIO_DEFAULT	5	/* callers set it: a zeroed request means 0 */
#define QUEUE_PRIO_LOW		9

/* Default ages for queue_prune(). */
#define QUEUE_PRUNE_DONE_MS	(24LL * 3600 * 1000)		/* 24 h */
#define QUEUE_PRUNE_FAILED_MS	(7LL * 24 * 3600 * 1000)	/* 7 days */

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
	enum store_driver driver;	/* STORE_SQLITE (0) or another backend */
	const char	*path;		/* sqlite: file, created if missing */
	const char	*dsn;		/* other drivers: connection string */
	int		 idle_tx_ms;	/* see struct store_conf; 0 = none */
	bool		 sync_normal;	/* false: synchronous=FULL (default) */
	int		 busy_ms;	/* total wait for a lock per call; 0 = 5000 */
	queue_clock_fn	 clock;		/* NULL = wall clock */
	void		*clock_arg;
	uint64_t	 seed;		/* jitter PRNG seed; 0 = from time and pid */
	bool		 must_exist;	/* fail instead of creating a missing file */
	/*
	 * The file's mark (PRAGMA application_id), 0 = none checked. With a
	 * mark, a file is used only if it has it, or is empty (new), or is
	 * a queue file of a version before marks (it is then marked): any
	 * other file is refused before anything in it is changed.
	 */
	int32_t		 application_id;
	bool		 check;		/* PRAGMA quick_check before use */
};

/*
 * Per-kind retry policy; kinds without one use the defaults shown. A field
 * left 0 takes its default. Policies live in the struct queue (not in the
 * file): every process sets its own.
 */
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
	int		 priority;	/* 0 (most urgent) .. 9: QUEUE_PRIO_* */
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
	bool		 blocked;	/* QUEUED, waiting for after_job to be DONE */
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
	int		 limit;		/* 0 = 100 (queue_requeue_many: 0 = all) */
};

struct queue_stats {
	int64_t	count[5];		/* by enum queue_state */
	int64_t	oldest_due_age_ms;	/* QUEUED and due; 0 if none */
	int64_t	retries;		/* RUNNING -> QUEUED transitions on failure */
	int64_t	rescues;		/* expired leases taken back by the reaper */
	int64_t	coalesced;		/* jobs superseded by a newer one */
};

struct queue;

/*
 * Open (creating or migrating the schema). On error *err is malloc'd text.
 * A file the queue creates is 0640 (less if the umask says so); SQLite gives
 * its -wal and -shm files the same mode.
 */
int	 queue_open(struct queue **, const struct queue_opts *, char **err);
void	 queue_close(struct queue *);
/* The connection, so that a caller can keep its own tables beside the queue. */
struct store *queue_db(struct queue *);
/* Change busy_ms, the wait for a lock per call (0: the default). */
int	 queue_set_busy(struct queue *, int busy_ms);
/*
 * Waking the owner when jobs arrive (PostgreSQL). queue_wake_fd() opens a
 * connection of its own that LISTENs for jobs added, or made due again by
 * an update, by any process or instance, and returns its descriptor:
 * watch it for reading, then call queue_woken(), which returns how many
 * wake-ups came (0: none; -1: the connection was lost, and is made again
 * at the next call) and ask queue_wake_fd() again (the descriptor changes
 * with a new connection). A wake-up means "look now", not a count of jobs;
 * jobs due later (run_after, retries) still need the owner's timer. On
 * SQLite there is nothing to watch: queue_wake_fd() returns -1.
 */
int	 queue_wake_fd(struct queue *);
int	 queue_woken(struct queue *);
const char *queue_strerror(int rc);
/* The last error of this queue in words (SQLite's message included). */
const char *queue_errmsg(struct queue *);
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

/*
 * Checkpoints made elsewhere: each time a commit leaves the WAL
 * QUEUE_CHECKPOINT_PAGES frames larger than at the last call (or at that
 * size after it started over), call fn(arg, frames) once the writer lock
 * is released, instead of checkpointing on this connection (which makes
 * the committing thread wait for the copy and its fsyncs). fn runs on the
 * committing thread and must return at once. At QUEUE_CHECKPOINT_CAP
 * frames (a steady stream of commits never lets the log be all copied
 * back), this connection checkpoints after its commit anyway, so that the
 * log starts over. NULL: this connection checkpoints itself at
 * QUEUE_CHECKPOINT_PAGES (the default).
 */
#define QUEUE_CHECKPOINT_PAGES	1000	/* SQLite's own default */
#define QUEUE_CHECKPOINT_CAP	(4 * QUEUE_CHECKPOINT_PAGES)
void	 queue_set_checkpointer(struct queue *, void (*fn)(void *, int),
	    void *arg);

/* Set the policy of a kind (NULL: the default for kinds without one). */
int	 queue_set_policy(struct queue *, const char *kind, const struct queue_policy *);
/*
 * At most max_running jobs of a lane RUNNING at once (0 = unlimited); of
 * those, `reserved` slots are kept for jobs with priority <= urgent_prio, so a
 * flood of low-priority work cannot starve urgent work. The count is taken
 * from the database, so the limit holds across processes; a claim with lane
 * NULL ignores lane limits.
 */
int	 queue_set_lane_limits(struct queue *, const char *lane, int max_running,
	    int urgent_prio, int reserved);

/*
 * Enqueue a job: QUEUE_OK and its id, or QUEUE_EXISTS and the id of the job
 * that already holds idem_key (nothing else happens then). A coalesce_key
 * supersedes every QUEUED job with the same key (CANCELLED, "coalesced into
 * #id"; jobs waiting for it now wait for the new one). QUEUE_ENOTFOUND: no
 * job after_job.
 */
int	 queue_enqueue(struct queue *, const struct queue_enqueue_req *, int64_t *id);
/*
 * Enqueue n jobs in one transaction (or savepoint), in order, each with
 * the effect queue_enqueue would have had after the ones before it: ids[i]
 * and rcs[i] (QUEUE_OK or QUEUE_EXISTS) if not NULL. All or nothing: on
 * the first failure nothing of it is stored, its rc is returned and
 * *failed (if not NULL) is the index of the request that failed (n when
 * the transaction itself failed). Faster than n calls: one savepoint, and
 * the coalescing statements run only for keys that have a job to supersede.
 */
int	 queue_enqueue_many(struct queue *, const struct queue_enqueue_req *,
	    size_t n, int64_t *ids, int *rcs, size_t *failed);

/*
 * Claim up to max due QUEUED jobs of a lane (NULL = any lane), in priority,
 * then run_after, then id order, setting attempts+1, worker and lease. jobs
 * must hold max entries; *n says how many were claimed. Free each with
 * queue_job_clear(). lease_ms 0 = the kind's policy.
 */
int	 queue_claim(struct queue *, const char *lane, const char *worker,
	    int64_t lease_ms, struct queue_job *jobs, size_t max, size_t *n);
/*
 * As queue_claim, only jobs of that lane (not NULL) whose kind is one of
 * kinds[0..nkinds-1] (names without byte 0x1f); lane limits apply.
 */
#define QUEUE_KINDS_SEP	'\x1f'
int	 queue_claim_kinds(struct queue *, const char *lane,
	    const char *const *kinds, size_t nkinds, const char *worker,
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

/*
 * Return expired leases to QUEUED (with backoff) or FAILED, in one guarded
 * statement (a completed job is never touched). *n = how many (may be NULL).
 */
int	 queue_reap(struct queue *, size_t *n);

/*
 * A worker that restarts after a crash takes back at once what its previous
 * life held, instead of waiting for the leases to expire: every RUNNING job
 * whose worker name starts with prefix (but is not self, may be NULL) goes
 * back to QUEUED, due now, or to FAILED when its attempts are used up (the
 * attempt stays counted, as with the reaper: a job that crashes its worker
 * every time still ends). Only the caller knows that those workers are dead
 * (e.g. it holds a lock they held): jobs of other workers keep their lease.
 * A late call of the dead worker is fenced off (QUEUE_ELOST).
 * *n = how many (may be NULL).
 */
int	 queue_release_orphans(struct queue *, const char *prefix,
	    const char *self, size_t *n);
/*
 * The same for every RUNNING job, whoever holds it: only where no worker of
 * any kind can be alive (a stopped site's database being moved).
 */
int	 queue_release_all(struct queue *, size_t *n);

/*
 * Operator actions. requeue: FAILED/CANCELLED -> QUEUED, raising max_attempts
 * to attempts + extra_attempts (0 = the job's original allowance); the
 * history is kept. cancel: QUEUED/RUNNING/FAILED -> CANCELLED, together with
 * the jobs waiting in its chain. requeue_many: filter->state must be FAILED,
 * CANCELLED or -1 (both); works in batches, one transaction each.
 */
int	 queue_requeue(struct queue *, int64_t id, int extra_attempts,
	    const char *note);
int	 queue_requeue_many(struct queue *, const struct queue_filter *,
	    int extra_attempts, const char *note, size_t *n);
int	 queue_cancel(struct queue *, int64_t id, const char *note);
/*
 * Re-run a chain from a step: that job and every job chained after it go
 * back to QUEUED (the later ones blocked until their step is DONE again).
 * QUEUE_ESTATE if any of them is RUNNING.
 */
int	 queue_rerun_from(struct queue *, int64_t id, const char *note, size_t *n);

int	 queue_get(struct queue *, int64_t id, struct queue_job *);
int	 queue_list(struct queue *, const struct queue_filter *,
	    struct queue_job **jobs, size_t *n);	/* free with queue_jobs_free */
int	 queue_history(struct queue *, int64_t id, struct queue_event **ev,
	    size_t *n);					/* free with queue_events_free */
int	 queue_stats(struct queue *, struct queue_stats *);
/*
 * Delete DONE older than done_age_ms and FAILED/CANCELLED older than
 * failed_age_ms (0 = the QUEUE_PRUNE_* default, < 0 = keep them), in
 * batches of 500 per transaction. A job is kept while a job chained after
 * it is still QUEUED, RUNNING or FAILED. Events and data go with the job.
 */
int	 queue_prune(struct queue *, int64_t done_age_ms, int64_t failed_age_ms,
	    size_t *n);

/*
 * Data between the steps of a chain: small named values kept with a job
 * (and deleted with it). Put inside the worker's transaction with its
 * completion; get gives a malloc'd copy with a NUL after it, or
 * QUEUE_ENOTFOUND.
 */
int	 queue_data_put(struct queue *, int64_t id, const char *key,
	    const void *val, size_t len);
int	 queue_data_get(struct queue *, int64_t id, const char *key, void **val,
	    size_t *len);

void	 queue_job_clear(struct queue_job *);
void	 queue_jobs_free(struct queue_job *, size_t);
void	 queue_events_free(struct queue_event *, size_t);

#endif /* QUEUE_H */
