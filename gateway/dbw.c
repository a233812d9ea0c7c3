/*
 * The bookkeeping thread: one thread with its own connection to the
 * database runs the daemon's bookkeeping transactions (history rows,
 * completions, failures, claims of the next jobs and the building of their
 * mosObj, messageID blocks, the reaper, pruning) while the loop thread
 * carries on with the links. On two cores the NCS, the loop thread and
 * this thread run side by side instead of one after the other.
 *
 * A task is a function run on the thread with that connection and a
 * function run on the loop thread afterwards with the result; tasks run in
 * the order they were submitted. A task's argument holds everything it
 * needs (copies): the thread never touches the loop's state, and never
 * logs. Results come back through a pipe watched by the event loop.
 *
 * A batch task (dbw_submit_batch) is run together with the batch tasks of
 * the same function queued right behind it, up to DBW_BATCH_MAX: changes
 * that arrived while the thread was busy share one transaction and one
 * fsync (group commit); each still gets its own result and done callback.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "gateway/gateway.h"

#define DBW_BATCH_MAX	256

struct dbw_task {
	dbw_run_fn		 run;
	dbw_batch_fn		 batch;		/* or: run with its neighbours */
	dbw_done_fn		 done;
	void			*arg;
	int			 rc;
	TAILQ_ENTRY(dbw_task)	 entry;
};
TAILQ_HEAD(dbw_tasks, dbw_task);

struct dbw {
	struct gwdb		*db;		/* the thread's connection */
	pthread_t		 thread;
	pthread_mutex_t		 mu;
	pthread_cond_t		 todo_cv;	/* work for the thread */
	pthread_cond_t		 done_cv;	/* a result for dbw_wait */
	struct dbw_tasks	 todo;
	struct dbw_tasks	 done;
	bool			 quit;
	int			 pipe[2];	/* thread -> loop: results */
	struct event		*ev;
	size_t			 pending;	/* loop thread only */
	void			(*after)(void *, dbw_run_fn);
	void			*after_arg;
};

/*
 * Take the next task, with the batch tasks of the same function queued
 * right behind it (mutex held); their number.
 */
static size_t
dbw_take(struct dbw *d, struct dbw_task **v)
{
	struct dbw_task	*t;
	size_t		 n = 0;

	while ((t = TAILQ_FIRST(&d->todo)) != NULL && n < DBW_BATCH_MAX &&
	    (n == 0 || (t->batch != NULL && t->batch == v[0]->batch))) {
		TAILQ_REMOVE(&d->todo, t, entry);
		v[n++] = t;
		if (t->batch == NULL)
			break;
	}
	return n;
}

/* Run what was taken (mutex not held). */
static void
dbw_run(struct dbw *d, struct dbw_task **v, size_t n)
{
	void	*args[DBW_BATCH_MAX];
	int	 rcs[DBW_BATCH_MAX];
	size_t	 i;

	if (v[0]->batch == NULL) {
		v[0]->rc = v[0]->run(d->db, v[0]->arg);
		return;
	}
	for (i = 0; i < n; i++) {
		args[i] = v[i]->arg;
		rcs[i] = QUEUE_OK;
	}
	v[0]->batch(d->db, args, rcs, n);
	for (i = 0; i < n; i++)
		v[i]->rc = rcs[i];
}

/* The thread: run tasks in order until told to quit. */
static void *
dbw_main(void *arg)
{
	struct dbw	*d = arg;
	struct dbw_task	*v[DBW_BATCH_MAX];
	size_t		 n, i;
	bool		 wake;

	pthread_mutex_lock(&d->mu);
	for (;;) {
		while (TAILQ_EMPTY(&d->todo) && !d->quit)
			pthread_cond_wait(&d->todo_cv, &d->mu);
		if ((n = dbw_take(d, v)) == 0)
			break;
		pthread_mutex_unlock(&d->mu);
		dbw_run(d, v, n);
		pthread_mutex_lock(&d->mu);
		wake = TAILQ_EMPTY(&d->done);
		for (i = 0; i < n; i++)
			TAILQ_INSERT_TAIL(&d->done, v[i], entry);
		pthread_cond_signal(&d->done_cv);
		/* one byte per batch of results: the loop takes them all */
		while (wake && write(d->pipe[1], "r", 1) == -1 &&
		    errno == EINTR)
			;
	}
	pthread_mutex_unlock(&d->mu);
	return NULL;
}

/* Hand the results that are in to their done callbacks. */
static void
dbw_deliver(struct dbw *d)
{
	struct dbw_tasks	 got;
	struct dbw_task		*t;

	TAILQ_INIT(&got);
	pthread_mutex_lock(&d->mu);
	TAILQ_CONCAT(&got, &d->done, entry);
	pthread_mutex_unlock(&d->mu);
	while ((t = TAILQ_FIRST(&got)) != NULL) {
		TAILQ_REMOVE(&got, t, entry);
		d->pending--;
		t->done(t->arg, t->rc);
		if (d->after != NULL)
			d->after(d->after_arg, t->run);
		free(t);
	}
}

/* The pipe: results are in. */
static void
dbw_ready_cb(evutil_socket_t fd, short ev, void *arg)
{
	char	buf[64];

	(void)ev;
	while (read(fd, buf, sizeof buf) > 0)
		;
	dbw_deliver(arg);
}

/* Start the thread with its own connection. */
struct dbw *
dbw_new(struct event_base *base, const struct gwdb_opts *o, bool relax,
    char **err)
{
	struct dbw	*d;
	int		 rc;

	d = xcalloc(1, sizeof *d);
	TAILQ_INIT(&d->todo);
	TAILQ_INIT(&d->done);
	d->pipe[0] = d->pipe[1] = -1;
	if (gwdb_open(&d->db, o, err) != QUEUE_OK)
		goto fail;
	if (relax && gwdb_relax(d->db, true) != QUEUE_OK) {
		xasprintf(err, "cannot set synchronous: %s",
		    gwdb_errmsg(d->db));
		goto fail;
	}
	if (pipe2(d->pipe, O_NONBLOCK | O_CLOEXEC) != 0) {
		xasprintf(err, "pipe: %s", strerror(errno));
		goto fail;
	}
	if ((d->ev = event_new(base, d->pipe[0], EV_READ | EV_PERSIST,
	    dbw_ready_cb, d)) == NULL || event_add(d->ev, NULL) != 0)
		fatalx("event_new failed");
	pthread_mutex_init(&d->mu, NULL);
	pthread_cond_init(&d->todo_cv, NULL);
	pthread_cond_init(&d->done_cv, NULL);
	if ((rc = util_thread_start(&d->thread, dbw_main, d)) != 0) {
		xasprintf(err, "cannot start the bookkeeping thread: %s",
		    strerror(rc));
		pthread_mutex_destroy(&d->mu);
		pthread_cond_destroy(&d->todo_cv);
		pthread_cond_destroy(&d->done_cv);
		goto fail;
	}
	return d;
fail:
	if (d->ev != NULL)
		event_free(d->ev);
	if (d->pipe[0] != -1) {
		close(d->pipe[0]);
		close(d->pipe[1]);
	}
	gwdb_close(d->db);
	free(d);
	return NULL;
}

/* Finish every task, stop the thread, close its connection. */
void
dbw_free(struct dbw *d)
{
	if (d == NULL)
		return;
	dbw_wait(d);
	pthread_mutex_lock(&d->mu);
	d->quit = true;
	pthread_cond_signal(&d->todo_cv);
	pthread_mutex_unlock(&d->mu);
	pthread_join(d->thread, NULL);
	pthread_mutex_destroy(&d->mu);
	pthread_cond_destroy(&d->todo_cv);
	pthread_cond_destroy(&d->done_cv);
	event_free(d->ev);
	close(d->pipe[0]);
	close(d->pipe[1]);
	gwdb_close(d->db);
	free(d);
}

/* Queue a task (run, or batch) for the thread. */
static void
dbw_queue(struct dbw *d, dbw_run_fn run, dbw_batch_fn batch,
    dbw_done_fn done, void *arg)
{
	struct dbw_task	*t;

	t = xcalloc(1, sizeof *t);
	t->run = run;
	t->batch = batch;
	t->done = done;
	t->arg = arg;
	d->pending++;
	pthread_mutex_lock(&d->mu);
	TAILQ_INSERT_TAIL(&d->todo, t, entry);
	pthread_cond_signal(&d->todo_cv);
	pthread_mutex_unlock(&d->mu);
}

/* Queue a task for the thread. */
void
dbw_submit(struct dbw *d, dbw_run_fn run, dbw_done_fn done, void *arg)
{
	dbw_queue(d, run, NULL, done, arg);
}

/* Queue a task that may run in one call with its queued neighbours. */
void
dbw_submit_batch(struct dbw *d, dbw_batch_fn batch, dbw_done_fn done,
    void *arg)
{
	dbw_queue(d, NULL, batch, done, arg);
}

/* A hook after every task (events.c: something may have committed). */
void
dbw_set_after(struct dbw *d, void (*after)(void *, dbw_run_fn), void *arg)
{
	d->after = after;
	d->after_arg = arg;
}

/* Tasks whose done callback has not run yet. */
size_t
dbw_pending(const struct dbw *d)
{
	return d == NULL ? 0 : d->pending;
}

/* Block until every task is done (and so are the ones their results add). */
void
dbw_wait(struct dbw *d)
{
	if (d == NULL)
		return;
	while (d->pending > 0) {
		pthread_mutex_lock(&d->mu);
		while (TAILQ_EMPTY(&d->done))
			pthread_cond_wait(&d->done_cv, &d->mu);
		pthread_mutex_unlock(&d->mu);
		dbw_deliver(d);
	}
}
