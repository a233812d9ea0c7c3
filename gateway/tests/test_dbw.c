/*
 * The bookkeeping thread (dbw.c): tasks run on another thread with their own
 * connection, in the order submitted; their results come back on the loop
 * thread, in order, through the event loop or dbw_wait; what a task
 * committed is visible to the loop's connection; dbw_free finishes every
 * task. And messageID blocks reserved ahead there (msgid.c): ids only from
 * a committed block, none while the next one is not stored yet.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "gateway/gateway.h"
#include "gateway/tests/gwunit.h"

#define NTASKS	40

struct fixture {
	struct gwunit		*u;
	struct event_base	*base;
	struct dbw		*dbw;
	pthread_t		 loop;	/* the test's own thread */
};

/* What one task did, where. */
struct task {
	struct fixture	*f;
	int		 seq;
	pthread_t	 ran_on;
	bool		 ran_elsewhere;
	bool		 done_here;
	int		 rc;
	int		*order;		/* done callbacks append seq here */
	int		*norder;
};

static int
setup(void **state)
{
	struct fixture		*f;
	struct gwdb_opts	 o;
	char			*err = NULL;

	if ((f = calloc(1, sizeof *f)) == NULL)
		return -1;
	*state = f;
	f->loop = pthread_self();
	if ((f->u = gwunit_new()) == NULL ||
	    (f->base = event_base_new()) == NULL)
		return -1;
	gwunit_opts(f->u, &o);
	o.sync_normal = false;
	o.busy_ms = 2000;
	if ((f->dbw = dbw_new(f->base, &o, true, &err)) == NULL) {
		fprintf(stderr, "dbw_new: %s\n", err);
		free(err);
		return -1;
	}
	return 0;
}

static int
teardown(void **state)
{
	struct fixture	*f = *state;

	if (f == NULL)
		return 0;
	dbw_free(f->dbw);
	if (f->base != NULL)
		event_base_free(f->base);
	gwunit_free(f->u);
	free(f);
	return 0;
}

/* On the thread: note where, store a row "t<seq>" = seq. */
static int
task_run(struct gwdb *g, void *arg)
{
	struct task	*t = arg;
	char		 key[32];
	int		 rc;

	t->ran_on = pthread_self();
	t->ran_elsewhere = !pthread_equal(t->ran_on, t->f->loop);
	snprintf(key, sizeof key, "t%d", t->seq);
	if ((rc = queue_tx_begin(g->q)) != QUEUE_OK)
		return rc;
	if ((rc = gwdb_meta_put(g, key, t->seq)) != QUEUE_OK) {
		queue_tx_rollback(g->q);
		return rc;
	}
	return t->seq % 7 == 3 ? (queue_tx_rollback(g->q), QUEUE_EINVAL) :
	    queue_tx_commit(g->q);
}

/* On the loop: note the order and the result. */
static void
task_done(void *arg, int rc)
{
	struct task	*t = arg;

	t->done_here = pthread_equal(pthread_self(), t->f->loop);
	t->rc = rc;
	t->order[(*t->norder)++] = t->seq;
}

/* Submit n tasks numbered from first. */
static void
submit(struct fixture *f, struct task *v, int first, int n, int *order,
    int *norder)
{
	int	i;

	for (i = first; i < first + n; i++) {
		v[i].f = f;
		v[i].seq = i;
		v[i].order = order;
		v[i].norder = norder;
		dbw_submit(f->dbw, task_run, task_done, &v[i]);
	}
}

/* Check every task of [0, n) ran there, came back here, in order. */
static void
check(struct fixture *f, struct task *v, int n, const int *order)
{
	int64_t	val;
	char	key[32];
	int	i;

	for (i = 0; i < n; i++) {
		assert_int_equal(order[i], i);
		assert_true(v[i].ran_elsewhere);
		assert_true(v[i].done_here);
		assert_true(pthread_equal(v[i].ran_on, v[0].ran_on));
		snprintf(key, sizeof key, "t%d", i);
		if (i % 7 == 3) {
			assert_int_equal(v[i].rc, QUEUE_EINVAL);
			assert_int_equal(gwdb_meta_get(f->u->db, key, &val),
			    QUEUE_ENOTFOUND);
		} else {
			assert_int_equal(v[i].rc, QUEUE_OK);
			assert_int_equal(gwdb_meta_get(f->u->db, key, &val),
			    QUEUE_OK);
			assert_int_equal(val, i);
		}
	}
}

/* Results come back through the event loop. */
static void
test_through_loop(void **state)
{
	struct fixture	*f = *state;
	struct task	 v[NTASKS];
	int		 order[NTASKS], norder = 0;
	int64_t		 deadline = util_mono_ms() + 10000;

	memset(v, 0, sizeof v);
	submit(f, v, 0, NTASKS, order, &norder);
	assert_int_equal(dbw_pending(f->dbw), NTASKS);
	while (norder < NTASKS && util_mono_ms() < deadline)
		event_base_loop(f->base, EVLOOP_ONCE);
	assert_int_equal(norder, NTASKS);
	assert_int_equal(dbw_pending(f->dbw), 0);
	check(f, v, NTASKS, order);
}

/* dbw_wait returns once every result is in. */
static void
test_wait(void **state)
{
	struct fixture	*f = *state;
	struct task	 v[NTASKS];
	int		 order[NTASKS], norder = 0;

	memset(v, 0, sizeof v);
	submit(f, v, 0, NTASKS, order, &norder);
	dbw_wait(f->dbw);
	assert_int_equal(norder, NTASKS);
	assert_int_equal(dbw_pending(f->dbw), 0);
	check(f, v, NTASKS, order);
	dbw_wait(f->dbw);	/* nothing pending: returns at once */
}

/* dbw_free runs what is still queued. */
static void
test_free_finishes(void **state)
{
	struct fixture	*f = *state;
	struct task	 v[NTASKS];
	int		 order[NTASKS], norder = 0;

	memset(v, 0, sizeof v);
	submit(f, v, 0, NTASKS, order, &norder);
	dbw_free(f->dbw);
	f->dbw = NULL;
	assert_int_equal(norder, NTASKS);
	check(f, v, NTASKS, order);
	dbw_free(NULL);
}

/* msgid_set_worker's callback: count the calls. */
static void
ready(void *arg, enum gw_port port)
{
	assert_int_equal(port, GW_PORT_LOWER);
	(*(int *)arg)++;
}

/* Blocks of 4: the next one is stored ahead; no id before it is stored. */
static void
test_msgid_ahead(void **state)
{
	struct fixture	*f = *state;
	struct msgid	*m;
	int		 readies = 0;
	int32_t		 i;

	m = msgid_new(f->u->db, "enps", GW_PORT_LOWER, 4);
	msgid_set_worker(m, f->dbw, ready, &readies);
	assert_int_equal(msgid_next(m), 1);	/* first block: at once */
	assert_int_equal(gwunit_int(f->u, "SELECT reserved_upto FROM msgid"),
	    4);
	assert_int_equal(msgid_next(m), 2);
	assert_int_equal(msgid_next(m), 3);	/* 1 left: 5..8 asked for */
	assert_int_equal(msgid_next(m), 4);
	/* the result is not back yet: no id beyond the stored block */
	assert_int_equal(msgid_next(m), 0);
	assert_int_equal(readies, 0);
	dbw_wait(f->dbw);
	assert_int_equal(readies, 1);
	assert_int_equal(gwunit_int(f->u, "SELECT reserved_upto FROM msgid"),
	    8);
	for (i = 5; i <= 20; i++) {
		assert_int_equal(msgid_next(m), i);
		dbw_wait(f->dbw);	/* each block ahead is stored in time */
	}
	assert_int_equal(readies, 1);
	assert_true(gwunit_int(f->u, "SELECT reserved_upto FROM msgid") >= 20);
	/* freed with a block on its way: the result is dropped */
	assert_int_equal(msgid_next(m), 21);
	assert_int_equal(msgid_next(m), 22);
	assert_int_equal(msgid_next(m), 23);
	assert_int_equal(dbw_pending(f->dbw), 1);
	msgid_free(m);
	dbw_wait(f->dbw);
	/* a restart goes on after what was stored */
	m = msgid_new(f->u->db, "enps", GW_PORT_LOWER, 4);
	assert_true(msgid_next(m) > 23);
	msgid_free(m);
}

/*
 * Another counter on the same NCS and port (another instance) takes a
 * block between: the block stored ahead is not after the current one, and
 * is used once the current one is spent.
 */
static void
test_msgid_ahead_shared(void **state)
{
	struct fixture	*f = *state;
	struct msgid	*m, *other;
	int		 readies = 0;

	m = msgid_new(f->u->db, "enps", GW_PORT_LOWER, 4);
	other = msgid_new(f->u->db, "enps", GW_PORT_LOWER, 4);
	msgid_set_worker(m, f->dbw, ready, &readies);
	assert_int_equal(msgid_next(m), 1);	/* 1..4 */
	assert_int_equal(msgid_next(other), 5);	/* 5..8 */
	assert_int_equal(msgid_next(m), 2);
	assert_int_equal(msgid_next(m), 3);	/* 1 left: a block asked for */
	dbw_wait(f->dbw);
	assert_int_equal(gwunit_int(f->u, "SELECT reserved_upto FROM msgid"),
	    12);
	assert_int_equal(msgid_next(m), 4);
	assert_int_equal(msgid_next(m), 9);	/* 9..12, not 5 */
	assert_int_equal(msgid_next(m), 10);
	assert_int_equal(msgid_next(other), 6);
	dbw_wait(f->dbw);
	assert_int_equal(msgid_next(m), 11);
	assert_int_equal(msgid_next(m), 12);
	dbw_wait(f->dbw);
	assert_int_equal(readies, 1);	/* 12 was the last of its block */
	assert_int_equal(msgid_next(m), 13);	/* taken ahead: 13..16 */
	msgid_free(other);
	msgid_free(m);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_through_loop, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_wait, setup, teardown),
		cmocka_unit_test_setup_teardown(test_free_finishes, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_msgid_ahead, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_msgid_ahead_shared, setup,
		    teardown),
	};

	mos_init();
	return cmocka_run_group_tests_name("gateway_dbw", tests, NULL, NULL);
}
