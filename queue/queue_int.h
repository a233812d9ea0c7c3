/*
 * queue internals shared by the files of queue/ (not part of the API).
 */
#ifndef QUEUE_INT_H
#define QUEUE_INT_H


#include "store/store.h"
#include "queue/queue.h"

/*
 * Prepared statements, cached in struct queue (the SQL is in sql.c). A
 * statement that changes a job's state has an ST_EV_ twin that logs the
 * change; queue_sql_change() runs both.
 */
enum queue_st {
	ST_NONE,
	ST_BEGIN,
	ST_COMMIT,
	ST_ROLLBACK,
	ST_SAVEPOINT,
	ST_RELEASE_SP,
	ST_ROLLBACK_SP,
	ST_INSERT,
	ST_EVENT,
	ST_IDEM_LOOKUP,
	ST_PARENT,
	ST_CYCLE_CHECK,
	ST_REPOINT,
	ST_COALESCE,
	ST_EV_COALESCE,
	ST_COALESCE_PROBE,
	ST_EV_ENQUEUED,
	ST_COUNTER_ADD,
	ST_CLAIM_LANE,
	ST_EV_CLAIM_LANE,
	ST_CLAIM_ANY,
	ST_EV_CLAIM_ANY,
	ST_CLAIM_KINDS,
	ST_EV_CLAIM_KINDS,
	ST_RUNNING_COUNT,
	ST_HEARTBEAT,
	ST_COMPLETE,
	ST_EV_COMPLETE,
	ST_RELEASE_DEPS,
	ST_EV_RELEASE_DEPS,
	ST_COMPLETE16,
	ST_EV_COMPLETE16,
	ST_RELEASE_DEPS16,
	ST_EV_RELEASE_DEPS16,
	ST_FAIL,
	ST_EV_FAIL,
	ST_RELEASE_JOB,
	ST_EV_RELEASE_JOB,
	ST_REAP,
	ST_EV_REAP,
	ST_ORPHANS,
	ST_EV_ORPHANS,
	ST_GET,
	ST_STATE_OF,
	ST_HISTORY,
	ST_REQUEUE,
	ST_EV_REQUEUE,
	ST_CANCEL,
	ST_EV_CANCEL,
	ST_CANCEL_CHAIN,
	ST_EV_CANCEL_CHAIN,
	ST_RERUN_CHECK,
	ST_RERUN_ROOT,
	ST_EV_RERUN_ROOT,
	ST_RERUN_DESC,
	ST_EV_RERUN_DESC,
	ST_STATE_COUNTS,
	ST_OLDEST_DUE,
	ST_COUNTERS,
	ST_PRUNE,
	ST_DATA_PUT,
	ST_DATA_GET,
	ST_COUNT
};

/* A statement parameter: an integer, a text (may be NULL), or nothing. */
struct queue_arg {
	char		 type;		/* 'i', 's' */
	int64_t		 i;
	const char	*s;
};
#define QUEUE_INT(v)	{ 'i', (v), NULL }
#define QUEUE_TEXT(v)	{ 's', 0, (v) }

struct queue_flock;

struct queue_kind_policy {
	char			*kind;		/* NULL: the default */
	struct queue_policy	 p;
};

struct queue_lane_limit {
	char	*lane;
	int	 max_running;
	int	 urgent_prio;
	int	 reserved;
};

struct queue {
	struct store			*db;
	char			*dsn;		/* postgresql: its connection string */
	struct store		*wake;		/* postgresql: LISTENs (notify.c) */
	unsigned		 session;	/* postgresql: policies loaded in it */
	bool			 policies_stale; /* ... and changed since */
	bool			 sync_normal;
	int			 busy_ms;
	int64_t			 busy_start;	/* monotonic ms of this lock wait */
	bool			 busy_fixed;	/* busy_start set by tx_enter */
	struct queue_flock	*flock;		/* this process's writer lock */
	bool			 flocked;	/* held, for an open transaction */
	int			 wal_pages;	/* WAL size after the last commit */
	void			(*ckpt_fn)(void *, int);	/* or NULL */
	void			*ckpt_arg;
	int			 ckpt_asked;	/* WAL size at the last ask */
	queue_clock_fn		 clock;
	void			*clock_arg;
	uint64_t		 rng;

	int			 depth;		/* transaction nesting */
	bool			 foreign;	/* inside a caller's own BEGIN */
	int			 broken;	/* rc that killed the open transaction */

	struct store_stmt		*st[ST_COUNT];

	struct queue_kind_policy *policies;	/* [0] is the default */
	size_t			 npolicies;
	struct queue_lane_limit	*lanes;
	size_t			 nlanes;

	char			 errmsg[512];
};

/* The columns of struct queue_job, in the order queue_sql_job_read reads. */
#define QUEUE_JOB_COLS \
	"id, lane, kind, payload, state, blocked, priority, attempts, " \
	"max_attempts, run_after, lease_until, lease_gen, worker, idem_key, " \
	"coalesce_key, after_job, last_error, created, updated"

/* queue.c */
int64_t	 queue_mono_ms(void);
int	 queue_err(struct queue *, int sqlite_rc, const char *what);
int	 queue_errx(struct queue *, int rc, const char *fmt, ...)
	    __attribute__((format(printf, 3, 4)));
uint64_t queue_rand(struct queue *);
const struct queue_policy *queue_policy_of(struct queue *, const char *kind);
int64_t	 queue_backoff(const struct queue_policy *, int attempt, uint64_t r);

/* tx.c */
void	 queue_tx_hooks(struct queue *);
int	 queue_tx_enter(struct queue *);
int	 queue_tx_leave(struct queue *, int rc);
void	 queue_tx_close(struct queue *);

/* sql.c */
struct store_stmt *queue_sql(struct queue *, enum queue_st);
int	 queue_sql_done(struct queue *, struct store_stmt *, int rc);
int	 queue_sql_exec(struct queue *, enum queue_st, const char *what);
void	 queue_sql_bind(struct store_stmt *, const struct queue_arg *, size_t);
int	 queue_sql_log(struct queue *, enum queue_st, const struct queue_arg *,
	    size_t, int *logged);
int	 queue_sql_change(struct queue *, enum queue_st,
	    const struct queue_arg *, size_t, int *changed);
int	 queue_sql_event(struct queue *, int64_t id, int64_t t, int from,
	    int to, int attempt, const char *worker, const char *note);
int	 queue_sql_job_read(struct store_stmt *, struct queue_job *);
int	 queue_sql_counter_add(struct queue *, const char *name, int64_t n);
void	 queue_sql_finalize(struct queue *);

/* lock.c */
struct queue_flock *queue_flock_get(const char *path);
void	 queue_flock_put(struct queue_flock *);
int	 queue_flock_lock(struct queue_flock *, int ms);
void	 queue_flock_unlock(struct queue_flock *);

/* schema.c */
int	 queue_schema_migrate(struct queue *);

/* notify.c */
#define QUEUE_PG_CHANNEL	"mosgw_jobs"	/* notified when jobs are due */
int	 queue_pg_policies(struct queue *);

/* admin.c */
int	 queue_job_state(struct queue *, int64_t id, enum queue_state *);

#endif /* QUEUE_INT_H */
