/*
 * The checkpointer: a thread with its own connection copies the WAL back
 * into the database file (a PASSIVE checkpoint) each time the commits of
 * the daemon's connections have made the WAL QUEUE_CHECKPOINT_PAGES frames
 * larger (queue_set_checkpointer). The bookkeeping thread, whose commits
 * are what the API's answers and the publishers' sends wait for, no longer
 * waits for that copy and its two fsyncs: at a steady 1,000 changes a
 * second a checkpoint came about ten times a second, and every change
 * queued behind one waited for it.
 *
 * A PASSIVE checkpoint never blocks a writer and takes no busy wait; it
 * copies what no reader still needs. SQLite starts the WAL over at the
 * next write once all of it was copied, which commits arriving during the
 * copy prevent; so at QUEUE_CHECKPOINT_CAP frames the committing
 * connection copies the rest itself (little, most of it is copied by then)
 * and the log starts over. A checkpoint that finds another one running
 * (that one, or mosctl's) is counted as busy and tried again at the next
 * request. The thread never logs: its failures are counted, and the loop
 * reports new ones (ckpt_report).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "gateway/gateway.h"

struct ckpt {
	sqlite3		*db;
	pthread_t	 thread;
	pthread_mutex_t	 mu;
	pthread_cond_t	 cv;
	bool		 want;		/* a checkpoint was asked for */
	bool		 quit;
	struct ckpt_stats st;		/* under mu */
	int64_t		 reported;	/* failures the loop has logged */
	char		 err[256];	/* the last failure, under mu */
};

/* One checkpoint; its outcome counted. */
static void
ckpt_run(struct ckpt *c)
{
	int64_t	t0 = util_mono_us(), us;
	int	rc;

	rc = sqlite3_wal_checkpoint_v2(c->db, NULL, SQLITE_CHECKPOINT_PASSIVE,
	    NULL, NULL);
	us = util_mono_us() - t0;
	pthread_mutex_lock(&c->mu);
	c->st.us += us;
	if (rc == SQLITE_OK)
		c->st.done++;
	else if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED)
		c->st.busy++;
	else {
		c->st.failed++;
		util_strlcpy(c->err, sqlite3_errmsg(c->db), sizeof c->err);
	}
	pthread_mutex_unlock(&c->mu);
}

static void *
ckpt_main(void *arg)
{
	struct ckpt	*c = arg;

	pthread_mutex_lock(&c->mu);
	for (;;) {
		while (!c->want && !c->quit)
			pthread_cond_wait(&c->cv, &c->mu);
		if (c->quit)
			break;
		c->want = false;
		pthread_mutex_unlock(&c->mu);
		ckpt_run(c);
		pthread_mutex_lock(&c->mu);
	}
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

/* Start the thread with its own connection to an existing WAL database. */
struct ckpt *
ckpt_new(const char *path, bool sync_normal, char **err)
{
	struct ckpt	*c;
	int		 rc;

	c = xcalloc(1, sizeof *c);
	if (sqlite3_open_v2(path, &c->db, SQLITE_OPEN_READWRITE |
	    SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
		xasprintf(err, "cannot open a connection for checkpoints: %s",
		    c->db != NULL ? sqlite3_errmsg(c->db) : "out of memory");
		sqlite3_close(c->db);
		free(c);
		return NULL;
	}
	/* a checkpoint syncs the WAL first and the file after, either way */
	sqlite3_exec(c->db, sync_normal ? "PRAGMA synchronous = NORMAL" :
	    "PRAGMA synchronous = FULL", NULL, NULL, NULL);
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->cv, NULL);
	if ((rc = util_thread_start(&c->thread, ckpt_main, c)) != 0) {
		xasprintf(err, "cannot start the checkpoint thread: %s",
		    strerror(rc));
		pthread_mutex_destroy(&c->mu);
		pthread_cond_destroy(&c->cv);
		sqlite3_close(c->db);
		free(c);
		return NULL;
	}
	return c;
}

/* Stop the thread (after the checkpoint running, if any), close. */
void
ckpt_free(struct ckpt *c)
{
	if (c == NULL)
		return;
	pthread_mutex_lock(&c->mu);
	c->quit = true;
	pthread_cond_signal(&c->cv);
	pthread_mutex_unlock(&c->mu);
	pthread_join(c->thread, NULL);
	pthread_mutex_destroy(&c->mu);
	pthread_cond_destroy(&c->cv);
	sqlite3_close(c->db);
	free(c);
}

/* The queue's request (any thread): checkpoint soon. */
void
ckpt_poke(void *arg, int frames)
{
	struct ckpt	*c = arg;

	(void)frames;
	pthread_mutex_lock(&c->mu);
	c->want = true;
	pthread_cond_signal(&c->cv);
	pthread_mutex_unlock(&c->mu);
}

/* What it did so far. */
void
ckpt_stats(struct ckpt *c, struct ckpt_stats *st)
{
	memset(st, 0, sizeof *st);
	if (c == NULL)
		return;
	pthread_mutex_lock(&c->mu);
	*st = c->st;
	pthread_mutex_unlock(&c->mu);
}

/* On the loop: log checkpoints that failed since the last report. */
void
ckpt_report(struct ckpt *c)
{
	char	err[sizeof c->err];
	int64_t	failed;

	if (c == NULL)
		return;
	pthread_mutex_lock(&c->mu);
	failed = c->st.failed;
	util_strlcpy(err, c->err, sizeof err);
	pthread_mutex_unlock(&c->mu);
	if (failed == c->reported)
		return;
	log_event_rl(LL_WARN, "db.checkpoint", "failed", "failures=%lld "
	    "error=%s note=%s", (long long)(failed - c->reported),
	    log_q(err), log_q("the write-ahead log is copied back at the "
	    "next attempt; until then it grows"));
	c->reported = failed;
}
