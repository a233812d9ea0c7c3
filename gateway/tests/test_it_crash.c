/*
 * Integration: the gateway killed in the middle of publishing.
 *
 * 120 assets are queued, the NCS peer starts taking them (with a short delay
 * per mosAck so that the publishing takes a while), and mosgw is killed with
 * SIGKILL twice in the middle of it, with more changes made while it is down.
 * After each restart on the same database every change must reach the NCS:
 * every objID at its newest objRev (DELETED for deletions; a deletion of an
 * object the NCS never received may be skipped), no job lost or failed, and
 * no objID ever going back to an older revision at the NCS.
 * The same with SIGTERM, which must also exit 0. A restart takes back at
 * once the jobs its killed predecessor held, and only those.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


#include "store/store.h"
#include "gateway/tests/gwproc.h"

#define NASSETS		120
#define WAIT_MS		10000
#define DRAIN_MS	30000	/* a restart may wait for leases to expire */

/* What the NCS must end up with for each asset. */
struct expect {
	char	id[16];
	int	rev;
	bool	deleted;
};

struct crash {
	struct gwrig	*r;
	struct expect	 ex[NASSETS];
};

/* A gateway with short retries, these [database] lines, and its NCS peer. */
static int
setup_db(void **state, const char *database_extra)
{
	struct gwproc_opts	 o;
	struct crash		*c;

	if ((c = calloc(1, sizeof *c)) == NULL)
		return -1;
	*state = c;
	memset(&o, 0, sizeof o);
	o.log_level = "info";
	o.database_extra = database_extra;
	o.nncs = 1;
	o.ncs[0].extra = "max_attempts = 20\n";
	c->r = gwrig_new_opts(MOS_ENC_UTF16BE, &o);
	return c->r == NULL ? -1 : 0;
}

/* Short leases: a killed gateway's jobs come back quickly anyway. */
static int
setup(void **state)
{
	return setup_db(state, "backoff_base = 0.1\nbackoff_max = 0.5\n"
	    "lease = 2\n");
}

/* Kill whatever still runs and remove the directory. */
static int
teardown(void **state)
{
	struct crash	*c = *state;

	if (c != NULL)
		gwrig_free(c->r);
	free(c);
	return 0;
}

/* Put asset i (a new revision) and remember it. */
static void
put(struct crash *c, int i, const char *slug)
{
	struct expect	*e = &c->ex[i];

	snprintf(e->id, sizeof e->id, "K-%03d", i);
	GWRIG_CHECK(c->r, gwproc_asset_put(c->r->gw, e->id, slug) == 0);
	e->rev++;
	e->deleted = false;
}

/* Delete asset i (its tombstone is one more revision). */
static void
del(struct crash *c, int i)
{
	struct expect	*e = &c->ex[i];

	GWRIG_CHECK(c->r, gwproc_asset_delete(c->r->gw, e->id) == 0);
	e->rev++;
	e->deleted = true;
}

/* mosObj frames the NCS has taken so far (from its record). */
static size_t
objs_seen(struct crash *c)
{
	struct ncspeer_match	mt = { .type = "mosObj", .side = NCSPEER_ACCEPTED };

	return ncspeer_count(c->r->ncs, &mt);
}

/* Wait until the NCS has seen n more mosObj than `from`. */
static void
wait_seen(struct crash *c, size_t from, size_t n)
{
	struct ncspeer_match	mt = { .type = "mosObj", .side = NCSPEER_ACCEPTED };

	GWRIG_CHECK(c->r, ncspeer_wait_count(c->r->ncs, &mt, from + n,
	    WAIT_MS) >= from + n);
}

/* Print the rows of one SQL statement on an objID (after a failure). */
static void
dump_rows(struct store *db, const char *what, const char *sql,
    const char *obj_id)
{
	struct store_stmt	*st = NULL;
	int		 i;

	if (store_prepare(db, sql, 0, &st) != STORE_OK) {
		fprintf(stderr, "  %s: %s\n", what, store_errmsg(db));
		return;
	}
	store_bind_text(st, 1, obj_id, -1);
	while (store_step(st) == STORE_ROW) {
		fprintf(stderr, "  %s:", what);
		for (i = 0; i < store_column_count(st); i++)
			fprintf(stderr, " %s=%s", store_column_name(st, i),
			    store_column_text(st, i) != NULL ?
			    store_column_text(st, i) : "NULL");
		fputc('\n', stderr);
	}
	store_finalize(st);
}

/*
 * What became of one asset: its catalog row, the delivery the gateway
 * recorded, its jobs with their history, and every mosObj the NCS took.
 */
static void
dump_asset(struct crash *c, const char *obj_id)
{
	const struct ncspeer_frame	*f;
	struct queue			*q;
	size_t				 i;

	for (i = 0; (f = ncspeer_frame_at(c->r->ncs, i)) != NULL; i++) {
		if (f->msg != NULL && f->msg->type == MOS_T_MOS_OBJ &&
		    f->msg->u.mos_obj.obj_id != NULL &&
		    strcmp(f->msg->u.mos_obj.obj_id, obj_id) == 0)
			fprintf(stderr, "  ncs: frame %zu conn %d t=%lld "
			    "rev=%u status=%s message_id=%d\n", i, f->conn,
			    (long long)f->t_ms, f->msg->u.mos_obj.obj_rev,
			    f->msg->u.mos_obj.status != NULL ?
			    f->msg->u.mos_obj.status : "?",
			    (int)f->message_id);
	}
	if ((q = gwproc_queue(c->r->gw)) == NULL)
		return;
	dump_rows(queue_db(q), "asset", "SELECT rev, deleted, status "
	    "FROM assets WHERE obj_id = ?1", obj_id);
	dump_rows(queue_db(q), "delivery", "SELECT ncs, rev, status, t_ms "
	    "FROM delivery WHERE obj_id = ?1", obj_id);
	dump_rows(queue_db(q), "job", "SELECT id, lane, state, attempts, "
	    "lease_gen, worker, last_error FROM jobs WHERE "
	    "CAST(payload AS TEXT) = ?1 ORDER BY id", obj_id);
	dump_rows(queue_db(q), "event", "SELECT e.job_id, e.t, e.from_state, "
	    "e.to_state, e.attempt, e.worker, e.note FROM job_events e JOIN "
	    "jobs j ON j.id = e.job_id WHERE CAST(j.payload AS TEXT) = ?1 "
	    "ORDER BY e.id", obj_id);
	queue_close(q);
}

/*
 * Every asset reached the NCS at its newest revision, and no asset's
 * revision ever went backwards in what the NCS received.
 */
static void
check_delivered(struct crash *c)
{
	const struct ncspeer_frame	*f;
	const struct mos_obj		*o;
	uint32_t			 last[NASSETS];
	const char			*status[NASSETS];
	size_t				 i;
	int				 k;

	memset(last, 0, sizeof last);
	memset(status, 0, sizeof status);
	for (i = 0; (f = ncspeer_frame_at(c->r->ncs, i)) != NULL; i++) {
		if (f->msg == NULL || f->msg->type != MOS_T_MOS_OBJ)
			continue;
		o = &f->msg->u.mos_obj;
		GWRIG_CHECK(c->r, o->obj_id != NULL &&
		    sscanf(o->obj_id, "K-%d", &k) == 1 && k >= 0 && k < NASSETS);
		if (o->obj_rev < last[k]) {
			fprintf(stderr, "%s: rev %u after rev %u\n", o->obj_id,
			    o->obj_rev, last[k]);
			dump_asset(c, o->obj_id);
		}
		GWRIG_CHECK(c->r, o->obj_rev >= last[k]);
		last[k] = o->obj_rev;
		status[k] = o->status;
	}
	for (k = 0; k < NASSETS; k++) {
		/* A deletion of an object the NCS never had may be skipped. */
		if (c->ex[k].deleted && last[k] == 0)
			continue;
		if ((int)last[k] != c->ex[k].rev) {
			fprintf(stderr, "%s: NCS has rev %u, newest is %d\n",
			    c->ex[k].id, last[k], c->ex[k].rev);
			dump_asset(c, c->ex[k].id);
		}
		GWRIG_CHECK(c->r, (int)last[k] == c->ex[k].rev);
		GWRIG_CHECK(c->r, status[k] != NULL &&
		    (strcmp(status[k], "DELETED") == 0) == c->ex[k].deleted);
	}
	GWRIG_CHECK(c->r, gwproc_job_count(c->r->gw, NULL, QUEUE_FAILED) == 0);
}

/*
 * The NCS acknowledges each mosObj 15 ms late; with hold > 0 only the next
 * hold of them, holding the answers to the rest (until the next policy):
 * the publishing then stops with a job in flight, wherever the test
 * thread's own progress is on a loaded machine, so a kill lands mid-publish.
 */
static void
ncs_pace(struct crash *c, int hold)
{
	struct ncspeer_policy	pol;

	memset(&pol, 0, sizeof pol);
	pol.ack_delay_ms = 15;
	pol.hold_after = hold;
	ncspeer_set_policy(c->r->ncs, &pol);
}

/* Queue NASSETS assets while the NCS is away, then let it take them. */
static void
queue_all(struct crash *c, int hold)
{
	int	i;

	ncspeer_down(c->r->ncs, false);
	for (i = 0; i < NASSETS; i++)
		put(c, i, "Queued while the NCS was away");
	ncs_pace(c, hold);
	GWRIG_CHECK(c->r, ncspeer_up(c->r->ncs) == 0);
}

/* Changes made while the gateway is down: updates and deletions. */
static void
change_while_down(struct crash *c, int first, int step)
{
	int	i;

	for (i = first; i < NASSETS; i += step) {
		/* A tombstone cannot be deleted again: bring it back instead. */
		if (i % 3 == 0 && !c->ex[i].deleted)
			del(c, i);
		else
			put(c, i, "Changed while the gateway was down");
	}
}

/* SIGKILL twice mid-publish; after restarts nothing is lost. */
static void
test_sigkill_mid_publish(void **state)
{
	struct crash	*c = *state;
	size_t		 seen;

	queue_all(c, 30);
	wait_seen(c, 0, 30);
	gwproc_kill(c->r->gw);
	seen = objs_seen(c);
	GWRIG_CHECK(c->r, seen < NASSETS);
	change_while_down(c, 1, 7);
	ncs_pace(c, 30);
	GWRIG_CHECK(c->r, gwproc_start(c->r->gw) == 0);

	wait_seen(c, seen, 30);
	gwproc_kill(c->r->gw);
	change_while_down(c, 2, 11);
	ncs_pace(c, 0);
	GWRIG_CHECK(c->r, gwproc_start(c->r->gw) == 0);

	GWRIG_CHECK(c->r, gwproc_wait_idle(c->r->gw, c->r->lane, DRAIN_MS) == 0);
	check_delivered(c);
	GWRIG_CHECK(c->r, gwproc_stop(c->r->gw) == 0);
}

/* SIGTERM mid-publish: exit 0, and a restart delivers the rest. */
static void
test_sigterm_mid_publish(void **state)
{
	struct crash	*c = *state;

	queue_all(c, 0);
	wait_seen(c, 0, 20);
	GWRIG_CHECK(c->r, gwproc_stop(c->r->gw) == 0);
	GWRIG_CHECK(c->r, gwproc_log_count(c->r->gw, 0, "event=shutdown",
	    (char *)NULL) >= 1);
	change_while_down(c, 0, 13);
	GWRIG_CHECK(c->r, gwproc_start(c->r->gw) == 0);
	GWRIG_CHECK(c->r, gwproc_wait_idle(c->r->gw, c->r->lane, DRAIN_MS) == 0);
	check_delivered(c);
	GWRIG_CHECK(c->r, gwproc_stop(c->r->gw) == 0);
}

/* Leases of an hour: only a take-back at restart can free a job. */
static int
setup_long_lease(void **state)
{
	return setup_db(state, "backoff_base = 0.1\nbackoff_max = 0.5\n"
	    "lease = 3600\n");
}

/* One RUNNING job of the lane claimed by a worker named like prefix. */
static int
running_of(struct gwrig *r, const char *prefix, struct queue_job *out)
{
	struct queue		*q;
	struct queue_filter	 flt;
	struct queue_job	*jobs;
	size_t			 n, i;
	int			 found = -1;

	if ((q = gwproc_queue(r->gw)) == NULL)
		return -1;
	memset(&flt, 0, sizeof flt);
	flt.state = QUEUE_RUNNING;
	flt.lane = r->lane;
	flt.limit = 1000;
	if (queue_list(q, &flt, &jobs, &n) == QUEUE_OK) {
		for (i = 0; i < n && found != 0; i++) {
			if (jobs[i].worker != NULL && strncmp(jobs[i].worker,
			    prefix, strlen(prefix)) == 0) {
				*out = jobs[i];
				memset(&jobs[i], 0, sizeof jobs[i]);
				found = 0;
			}
		}
		queue_jobs_free(jobs, n);
	}
	queue_close(q);
	return found;
}

/*
 * After kill -9 the next start takes back at once the jobs its previous
 * life held (the lease is an hour: nothing else could free them), and only
 * those: a job another worker claimed keeps its lease. A late completion
 * of the dead gateway changes nothing.
 */
static void
test_restart_takes_back_own_jobs(void **state)
{
	struct crash		*c = *state;
	struct ncspeer_match	 mt = { .type = "mosObj" };
	struct queue_job	 other, dead, now;
	struct queue		*q;
	size_t			 n;
	long			 off;
	int			 i, nput = NASSETS / 4;

	ncspeer_down(c->r->ncs, false);
	for (i = 0; i < nput; i++)
		put(c, i, "Claimed when the gateway dies");
	/* another worker takes the first job for an hour */
	GWRIG_CHECK(c->r, (q = gwproc_queue(c->r->gw)) != NULL);
	GWRIG_CHECK(c->r, queue_claim(q, c->r->lane, "mosctl:test", 3600000,
	    &other, 1, &n) == QUEUE_OK && n == 1);
	queue_close(q);
	ncs_pace(c, 5);
	GWRIG_CHECK(c->r, ncspeer_up(c->r->ncs) == 0);
	wait_seen(c, 0, 6);	/* the sixth waits for its answer */
	gwproc_kill(c->r->gw);
	GWRIG_CHECK(c->r, running_of(c->r, "mosgw:", &dead) == 0);

	ncs_pace(c, 0);
	GWRIG_CHECK(c->r, gwproc_start(c->r->gw) == 0);
	off = gwproc_log_wait(c->r->gw, 0, WAIT_MS, "event=job.orphans",
	    (char *)NULL);
	GWRIG_CHECK(c->r, off >= 0);
	GWRIG_CHECK(c->r, (q = gwproc_queue(c->r->gw)) != NULL);
	GWRIG_CHECK(c->r, queue_complete(q, dead.id, dead.lease_gen) ==
	    QUEUE_ELOST);
	queue_close(q);
	/* everything but the other worker's job is delivered */
	for (i = 0; i < DRAIN_MS / 25 &&
	    gwproc_jobs_pending(c->r->gw, c->r->lane) != 1; i++)
		usleep(25 * 1000);
	GWRIG_CHECK(c->r, gwproc_jobs_pending(c->r->gw, c->r->lane) == 1);
	for (i = 1; i < nput; i++) {
		mt.obj_id = c->ex[i].id;
		GWRIG_CHECK(c->r, ncspeer_count(c->r->ncs, &mt) >= 1);
	}
	GWRIG_CHECK(c->r, running_of(c->r, "mosctl:", &now) == 0);
	GWRIG_CHECK(c->r, now.id == other.id &&
	    now.lease_gen == other.lease_gen);
	GWRIG_CHECK(c->r, (q = gwproc_queue(c->r->gw)) != NULL);
	GWRIG_CHECK(c->r, queue_complete(q, other.id, other.lease_gen) ==
	    QUEUE_OK);
	queue_close(q);
	GWRIG_CHECK(c->r, gwproc_job_count(c->r->gw, NULL, QUEUE_FAILED) == 0);
	queue_job_clear(&other);
	queue_job_clear(&dead);
	queue_job_clear(&now);
	GWRIG_CHECK(c->r, gwproc_stop(c->r->gw) == 0);
}

/* The it_crash suite. */
int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_sigkill_mid_publish, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_sigterm_mid_publish, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(
		    test_restart_takes_back_own_jobs, setup_long_lease,
		    teardown),
	};

	return cmocka_run_group_tests_name("it_crash", tests, NULL, NULL);
}
