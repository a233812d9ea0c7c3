/*
 * The rig shared by the queue test suites: a scratch directory per test, a
 * queue on a controllable clock, and short ways to enqueue and claim.
 */
#ifndef QTEST_H
#define QTEST_H

#include <limits.h>
#include <stdint.h>

#include "queue/queue.h"
#include "store/tests/pgdb.h"

#define QTEST_T0	1700000000000LL	/* the fake clock's start, in ms */

/*
 * The backend is $MOSGW_DB_DRIVER's (sqlite when unset): a file in the
 * scratch dir, or a database of the test's own on $MOSGW_PG_DSN.
 */
struct qtest {
	char		 dir[PATH_MAX];
	char		 path[PATH_MAX + 32];
	enum store_driver driver;
	struct pgdb	 pg;
	struct queue	*q;
	int64_t		 now;		/* the fake clock */
};

/* cmocka setup/teardown: a scratch dir and a queue on the fake clock. */
int	 qtest_setup(void **);
int	 qtest_teardown(void **);
/*
 * The same for a struct qtest inside another fixture (open: the queue too).
 * qtest_fini also checks the job histories of the file, if a queue is open.
 */
int	 qtest_init(struct qtest *, bool open);
void	 qtest_fini(struct qtest *);

int	 qtest_mkdtemp(char *dir, size_t len);
void	 qtest_rmtree(const char *dir);
int64_t	 qtest_clock(void *arg);
int	 qtest_open(struct qtest *, struct queue **, bool sync_normal);

/* Enqueue a job; returns its id (fails the test on error). */
int64_t	 qtest_put(struct queue *, const char *lane, const char *kind, int prio);
/* Claim exactly one job of a lane (fails the test otherwise). */
void	 qtest_claim1(struct queue *, const char *lane, struct queue_job *);
/* Claim as many as possible; how many (jobs are cleared). */
size_t	 qtest_claim_n(struct queue *, const char *lane, size_t max,
	    int64_t *ids);
/* The state of a job. */
enum queue_state qtest_state(struct queue *, int64_t id);
/* Count events of a job going to a state (-1: all events). */
size_t	 qtest_events(struct queue *, int64_t id, int to);
/* Breaks in the job histories (0: each one chain ending in its state). */
int64_t	 qtest_history_breaks(struct queue *);
/* One scalar of an SQL query on the queue's connection. */
int64_t	 qtest_sql_int(struct queue *, const char *sql);
/* Skip the calling test on PostgreSQL, saying why. */
void	 qtest_sqlite_only(const struct qtest *, const char *why);

#endif /* QTEST_H */
