/*
 * queue: one writer at a time per file within a process.
 *
 * SQLite lets one connection write a file at a time; the others poll its
 * lock with sleeps. Threads of one process instead queue on a mutex of the
 * file (found by device and inode) before BEGIN IMMEDIATE: the lock passes
 * straight to the next writer, with no idle gaps and no thread starved for
 * long. Other processes are still met by SQLite's lock and the busy handler.
 * A child process must not fork while a thread is inside a transaction.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

#include "queue/queue_int.h"

struct queue_flock {
	dev_t			 dev;
	ino_t			 ino;
	int			 refs;
	pthread_mutex_t		 mu;
	struct queue_flock	*next;
};

static pthread_mutex_t		 queue_flocks_mu = PTHREAD_MUTEX_INITIALIZER;
static struct queue_flock	*queue_flocks;

/* The lock of a file, shared by every queue of this process on it. */
struct queue_flock *
queue_flock_get(const char *path)
{
	struct queue_flock	*f;
	struct stat		 st;

	if (stat(path, &st) != 0)
		return NULL;	/* ":memory:" and the like: SQLite alone */
	pthread_mutex_lock(&queue_flocks_mu);
	for (f = queue_flocks; f != NULL; f = f->next) {
		if (f->dev == st.st_dev && f->ino == st.st_ino)
			break;
	}
	if (f == NULL && (f = calloc(1, sizeof *f)) != NULL) {
		f->dev = st.st_dev;
		f->ino = st.st_ino;
		pthread_mutex_init(&f->mu, NULL);
		f->next = queue_flocks;
		queue_flocks = f;
	}
	if (f != NULL)
		f->refs++;
	pthread_mutex_unlock(&queue_flocks_mu);
	return f;
}

/* Drop a reference to a file lock (NULL is fine). */
void
queue_flock_put(struct queue_flock *f)
{
	struct queue_flock	**p;

	if (f == NULL)
		return;
	pthread_mutex_lock(&queue_flocks_mu);
	if (--f->refs == 0) {
		for (p = &queue_flocks; *p != NULL; p = &(*p)->next) {
			if (*p == f) {
				*p = f->next;
				break;
			}
		}
		pthread_mutex_destroy(&f->mu);
		free(f);
	}
	pthread_mutex_unlock(&queue_flocks_mu);
}

/* Take the file lock within ms milliseconds; 0, or -1 on timeout. */
int
queue_flock_lock(struct queue_flock *f, int ms)
{
	struct timespec	ts;

	if (f == NULL)
		return 0;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	return pthread_mutex_timedlock(&f->mu, &ts) == 0 ? 0 : -1;
}

/* Release the file lock. */
void
queue_flock_unlock(struct queue_flock *f)
{
	if (f != NULL)
		pthread_mutex_unlock(&f->mu);
}
