/*
 * owner: which instance talks to each NCS.
 *
 * Several mosgw instances may share one PostgreSQL database. Each NCS's
 * outbound links (lower, upper, query, to the primary and the buddy) are
 * opened by one instance at a time, its owner:
 *
 *   lock     a session-level advisory lock per NCS (OWNER_LOCK_CLASS, a
 *            hash of the NCS name), held on a session of its own: a libpq
 *            connection this file opens, not the store's. Whoever holds it
 *            may own the NCS.
 *   epoch    the table mosgw_owner (ncs, instance, epoch, since, renewed,
 *            pid; a step of the schema, gwdb_pg.c): the new holder bumps the NCS's epoch in a write
 *            transaction. Deliveries carry the epoch they were claimed
 *            under; a completion commits only while it is still the
 *            NCS's epoch (owner_fence, in the completion's transaction),
 *            so a stale owner can never settle a job.
 *   renew    the owner writes `renewed` (server time) every takeover/4 on
 *            that session, for all the NCSs it holds in one statement
 *            (each row only at the epoch this instance holds it under),
 *            each query bounded by takeover/4. The loop
 *            drops the NCS's links as soon as the last renew that
 *            succeeded was sent more than OWNER_DROP of takeover ago
 *            (a lost session, a silent network), before anyone else may
 *            take them, and competes again.
 *   take     an instance without the lock tries it every takeover/4; when
 *            the owner's row has not been renewed for OWNER_STALE of
 *            takeover (its session silent but still holding the lock on
 *            the server), it ends that session (pg_terminate_backend, the
 *            pid in that row only: never one that took the lock since) and
 *            takes the lock. A dead process's session ends at once, so its
 *            NCSs change owner within takeover/4 or so.
 *   write    before every frame on an NCS's outbound links, and every
 *            connect, the loop asks owner_may_talk (link.c, through
 *            conn_write): the hold must be current by the monotonic clock
 *            (held, at the epoch the links were opened under, the last good
 *            renewal younger than OWNER_DROP of takeover). A process that
 *            stood still (SIGSTOP, a paused VM, a long stall) keeps its
 *            sockets; when it goes on, its timers and sockets are all due
 *            at once, in no set order, and a heartbeat, a resend or a reply
 *            may come before owner_tick_cb looks. Such a frame is not
 *            written; the NCS's links are dropped at once (owner.drop,
 *            "ownership lapsed ...") and what was in flight goes back to
 *            the queue for the new owner. Replies on the listeners'
 *            connections (an NCS may connect to any instance) are not
 *            outbound links and are not asked about.
 *
 * The session runs on a thread of its own (its queries may wait on the
 * network); the loop reads what it found every OWNER_TICK_MS. A new
 * owner first takes back the jobs that workers of the NCS held (any
 * instance's: that owner is fenced off), then opens the links.
 *
 *   instance a session-level advisory lock on the instance name
 *            (OWNER_INSTANCE_CLASS), taken on that session at start and
 *            held for the life of the process: whoever holds it is the
 *            only live process of the instance, so the jobs that workers
 *            named for the instance hold are a previous life's (kill -9, a
 *            crash): back in the queue at once (owner_instance_start).
 *            Other instances' workers are never touched.
 *
 * On SQLite there is one instance: every NCS is owned, at epoch 0 (never
 * fenced), through the same calls, with no session and no thread.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>

#include "gateway/gateway.h"

#define OWNER_LOCK_CLASS	0x6d6f776e	/* "mown" */
#define OWNER_INSTANCE_CLASS	0x6d6f6973	/* "mois": one per instance */
#define OWNER_TICK_MS		100
/* Fractions of takeover. */
#define OWNER_PERIOD(t)		((t) / 4)		/* checks, query bound */
#define OWNER_DROP(t)		((t) * 6 / 10)		/* owner drops */
#define OWNER_STALE(t)		((t) * 8 / 10)		/* others take */
/* a previous life's session: the server ends it (at least 5 s) */
#define OWNER_INSTANCE_WAIT(t)	((t) > 5000 ? (int)(t) : 5000)

#define OWNER_NOW	"(extract(epoch from clock_timestamp()) * 1000)::bigint"

/* One NCS as the session thread sees it (under the mutex). */
struct owner_ncs {
	char		*name;
	int32_t		 key;		/* the lock's second half */
	bool		 wanted;	/* configured (false: let go) */
	bool		 held;		/* lock held, row ours */
	int64_t		 epoch;		/* ours while held */
	int64_t		 ok_mono;	/* when the last good renew was sent */
	char		 holder[65];	/* the owner seen in the table, or "" */
	int64_t		 holder_epoch;
	bool		 taking;	/* the loop: orphans being released */
	bool		 lapsed;	/* the loop: a write found it lapsed */
	bool		 renewing;	/* in the renewal being sent */
};

struct owner {
	struct gw		*gw;
	bool			 local;		/* SQLite: always the owner */
	int64_t			 takeover;
	char			*instance;
	char			*dsn;
	pthread_t		 thread;
	bool			 started;
	pthread_mutex_t		 mu;
	pthread_cond_t		 cv;
	bool			 stop;
	struct owner_ncs	**v;		/* never freed before owner */
	size_t			 n;
	bool			 connected;	/* the session is up */
	char			 error[256];	/* why not, or "" */
	char			 logged[256];	/* the loop: error last logged */
	struct event		*tick;
	struct event		*lapse;		/* a write was refused: drop */
	int64_t			 tick_mono;	/* the loop: last tick */
	/* thread only */
	struct store		*s;
	unsigned		 session;
};

/* The lock key of an NCS name: FNV-1a, 31 bits. */
static int32_t
owner_key(const char *name)
{
	uint32_t	h = 2166136261u;

	for (; *name != '\0'; name++) {
		h ^= (unsigned char)*name;
		h *= 16777619u;
	}
	return (int32_t)(h & 0x7fffffff);
}

static struct owner_ncs *
owner_find(struct owner *o, const char *name)
{
	size_t	i;

	for (i = 0; i < o->n; i++) {
		if (strcmp(o->v[i]->name, name) == 0)
			return o->v[i];
	}
	return NULL;
}

/* ------------------------------------------------------------------------ */
/* The session thread. */

/* Run one statement with text parameters; STORE_ROW/DONE or an error. */
static int
owner_query(struct owner *o, struct store_stmt **stp, const char *sql,
    const char *const *args, size_t nargs)
{
	size_t	i;
	int	rc;

	*stp = NULL;
	if ((rc = store_prepare(o->s, sql, 0, stp)) != STORE_OK)
		return rc;
	for (i = 0; i < nargs; i++)
		store_bind_text(*stp, (int)i + 1, args[i], -1);
	rc = store_step(*stp);
	return rc;
}

static void
owner_seterr(struct owner *o, const char *what)
{
	pthread_mutex_lock(&o->mu);
	snprintf(o->error, sizeof o->error, "%s: %s", what,
	    o->s != NULL ? store_errmsg(o->s) : "not connected");
	pthread_mutex_unlock(&o->mu);
}

/* Everything held is gone with the session (the server lets go). */
static void
owner_lost_all(struct owner *o)
{
	size_t	i;

	pthread_mutex_lock(&o->mu);
	for (i = 0; i < o->n; i++)
		o->v[i]->held = false;
	o->connected = false;
	pthread_mutex_unlock(&o->mu);
}

/* Connect (bounded); a new session holds nothing. */
static int
owner_connect(struct owner *o)
{
	struct store_conf	 c;
	char			*err = NULL;
	int			 rc;

	if (o->s == NULL) {
		memset(&c, 0, sizeof c);
		c.driver = STORE_POSTGRESQL;
		c.dsn = o->dsn;
		if ((rc = store_open(&o->s, &c, 0, &err)) != STORE_OK) {
			pthread_mutex_lock(&o->mu);
			snprintf(o->error, sizeof o->error, "%s", err != NULL ?
			    err : "cannot connect");
			pthread_mutex_unlock(&o->mu);
			free(err);
			return rc;
		}
		store_answer_timeout(o->s, (int)OWNER_PERIOD(o->takeover));
		store_busy_timeout(o->s, (int)OWNER_PERIOD(o->takeover));
	}
	if (store_session(o->s) != o->session) {
		/* a new session holds nothing */
		owner_lost_all(o);
		o->session = store_session(o->s);
	}
	pthread_mutex_lock(&o->mu);
	o->connected = true;
	o->error[0] = '\0';
	pthread_mutex_unlock(&o->mu);
	return STORE_OK;
}

static int	owner_let_go(struct owner *, struct owner_ncs *);

/*
 * The owner renews the rows of every NCS it holds, in one statement (a
 * JSON list of NCS and epoch): a row is renewed only while it is still
 * this instance's at that epoch. An NCS whose row was not renewed is
 * someone else's: let go.
 */
static int
owner_renew_all(struct owner *o)
{
	struct sbuf		 js = { NULL, 0, 0 };
	struct store_stmt	*st;
	struct owner_ncs	*x;
	const char		*args[2], *name;
	int64_t			 t0;
	size_t			 i, n = 0, all;
	int			 rc;

	sbuf_puts(&js, "[");
	pthread_mutex_lock(&o->mu);
	all = o->n;
	for (i = 0; i < all; i++) {
		x = o->v[i];
		if (!x->held || !x->wanted)
			continue;
		x->renewing = true;
		sbuf_puts(&js, n++ > 0 ? ",{\"ncs\":" : "{\"ncs\":");
		sbuf_json_str(&js, x->name);
		sbuf_printf(&js, ",\"epoch\":%lld}", (long long)x->epoch);
	}
	pthread_mutex_unlock(&o->mu);
	sbuf_puts(&js, "]");
	if (n == 0) {
		sbuf_free(&js);
		return STORE_OK;
	}
	args[0] = js.s;
	args[1] = o->instance;
	t0 = util_mono_ms();
	rc = owner_query(o, &st, "UPDATE mosgw_owner o SET renewed = "
	    OWNER_NOW " FROM jsonb_to_recordset($1::jsonb) AS v(ncs text, "
	    "epoch bigint) WHERE o.ncs = v.ncs AND o.epoch = v.epoch AND "
	    "o.instance = $2 RETURNING o.ncs", args, 2);
	for (; rc == STORE_ROW; rc = store_step(st)) {
		if ((name = store_column_text(st, 0)) == NULL)
			continue;
		pthread_mutex_lock(&o->mu);
		if ((x = owner_find(o, name)) != NULL && x->renewing) {
			x->renewing = false;
			x->ok_mono = t0;
		}
		pthread_mutex_unlock(&o->mu);
	}
	store_finalize(st);
	sbuf_free(&js);
	for (i = 0; i < all; i++) {
		pthread_mutex_lock(&o->mu);
		x = o->v[i];
		if (!x->renewing) {
			pthread_mutex_unlock(&o->mu);
			continue;
		}
		x->renewing = false;
		if (rc != STORE_DONE) {
			/* not renewed: dropped once the margin runs out */
			pthread_mutex_unlock(&o->mu);
			continue;
		}
		x->held = false;	/* the row is not ours */
		pthread_mutex_unlock(&o->mu);
		if ((rc = owner_let_go(o, x)) != STORE_OK)
			break;
		rc = STORE_DONE;
	}
	return rc == STORE_DONE ? STORE_OK : rc;
}

/*
 * A new owner: bump the NCS's epoch and make the row the instance's, under
 * the store's writer lock (so never inside another's completion). A store
 * code; *epoch gets the new epoch.
 */
int
owner_bump(struct store *s, const char *ncs, const char *instance,
    int64_t *epoch)
{
	struct store_stmt	*st;
	int			 rc;

	if ((rc = store_begin(s, STORE_TX_WRITE)) != STORE_OK)
		return rc;
	if ((rc = store_prepare(s, "INSERT INTO mosgw_owner (ncs, instance, "
	    "epoch, since, renewed, pid) VALUES (?1, ?2, 1, " OWNER_NOW ", "
	    OWNER_NOW ", pg_backend_pid()) ON CONFLICT (ncs) DO UPDATE SET "
	    "instance = excluded.instance, epoch = mosgw_owner.epoch + 1, "
	    "since = excluded.since, renewed = excluded.renewed, "
	    "pid = excluded.pid RETURNING epoch", 0, &st)) == STORE_OK) {
		store_bind_text(st, 1, ncs, -1);
		store_bind_text(st, 2, instance, -1);
		if ((rc = store_step(st)) == STORE_ROW)
			*epoch = store_column_int64(st, 0);
	}
	store_finalize(st);
	if (rc != STORE_ROW) {
		store_rollback(s);
		return rc == STORE_DONE || rc == STORE_OK ? STORE_ERROR : rc;
	}
	return store_commit(s);
}

/*
 * A statement on an NCS's lock ($1 its class, $2 its key); *first (if not
 * NULL) gets the first column of its row as a boolean.
 */
static int
owner_lock_sql(struct owner *o, int32_t key, int32_t class, const char *sql,
    bool *first)
{
	struct store_stmt	*st;
	char			 cls[16], k[16];
	const char		*args[2] = { cls, k };
	int			 rc;

	snprintf(cls, sizeof cls, "%d", (int)class);
	snprintf(k, sizeof k, "%d", (int)key);
	rc = owner_query(o, &st, sql, args, 2);
	if (first != NULL)
		*first = rc == STORE_ROW && store_column_int(st, 0) == 1;
	store_finalize(st);
	return rc == STORE_ROW || rc == STORE_DONE ? STORE_OK : rc;
}

#define OWNER_SQL_UNLOCK	"SELECT pg_advisory_unlock($1::integer, " \
	"$2::integer)"

/*
 * End the session of the silent owner whose row was read (pid), if it
 * still holds the NCS's lock. Only that one: another instance may have
 * ended it and taken the lock since the row was read, and must not be
 * ended in turn.
 */
static int
owner_evict(struct owner *o, struct owner_ncs *x, int64_t pid)
{
	struct store_stmt	*st;
	char			 cls[16], k[16], p[24];
	const char		*args[3] = { cls, k, p };
	int			 rc;

	snprintf(cls, sizeof cls, "%d", OWNER_LOCK_CLASS);
	snprintf(k, sizeof k, "%d", (int)x->key);
	snprintf(p, sizeof p, "%lld", (long long)pid);
	rc = owner_query(o, &st, "SELECT pg_terminate_backend(pid) FROM "
	    "pg_locks WHERE locktype = 'advisory' AND classid = "
	    "$1::bigint::oid AND objid = $2::bigint::oid AND objsubid = 2 AND "
	    "granted AND pid = $3::integer AND pid <> pg_backend_pid()", args,
	    3);
	store_finalize(st);
	return rc == STORE_ROW || rc == STORE_DONE ? STORE_OK : rc;
}

/*
 * Not the owner: read the row; try the lock (after ending a stale
 * holder's session); on success bump the epoch.
 */
static int
owner_try(struct owner *o, struct owner_ncs *x, const char *name, int32_t key,
    int64_t t0)
{
	struct store_stmt	*st;
	const char		*args[1] = { name };
	char			 holder[65] = "";
	int64_t			 age = 0, hep = 0, epoch = 0, pid = 0;
	bool			 got = false;
	int			 rc, tries;

	rc = owner_query(o, &st, "SELECT instance, epoch, " OWNER_NOW
	    " - renewed, pid FROM mosgw_owner WHERE ncs = $1", args, 1);
	if (rc == STORE_ROW) {
		util_strlcpy(holder, store_column_text(st, 0) != NULL ?
		    store_column_text(st, 0) : "", sizeof holder);
		hep = store_column_int64(st, 1);
		age = store_column_int64(st, 2);
		pid = store_column_int64(st, 3);
	}
	store_finalize(st);
	if (rc != STORE_ROW && rc != STORE_DONE)
		return rc;
	pthread_mutex_lock(&o->mu);
	util_strlcpy(x->holder, holder, sizeof x->holder);
	x->holder_epoch = hep;
	pthread_mutex_unlock(&o->mu);
	/* a silent owner (this instance's earlier life too) is ended */
	if (holder[0] != '\0' && age > OWNER_STALE(o->takeover) &&
	    (rc = owner_evict(o, x, pid)) != STORE_OK)
		return rc;
	/* an ended session lets go a moment later */
	for (tries = 0; tries < 5 && !got; tries++) {
		if ((rc = owner_lock_sql(o, key, OWNER_LOCK_CLASS, "SELECT "
		    "pg_try_advisory_lock($1::integer, $2::integer)", &got)) !=
		    STORE_OK)
			return rc;
		if (got || holder[0] == '\0' || age <= OWNER_STALE(o->takeover))
			break;
		nanosleep(&(struct timespec){ 0, 50 * 1000000L }, NULL);
	}
	if (!got)
		return STORE_OK;
	if ((rc = owner_bump(o->s, name, o->instance, &epoch)) != STORE_OK) {
		if (rc != STORE_LOST)
			owner_lock_sql(o, key, OWNER_LOCK_CLASS,
			    OWNER_SQL_UNLOCK, NULL);
		return rc;
	}
	pthread_mutex_lock(&o->mu);
	x->held = true;
	x->epoch = epoch;
	x->ok_mono = t0;
	util_strlcpy(x->holder, o->instance, sizeof x->holder);
	x->holder_epoch = epoch;
	pthread_mutex_unlock(&o->mu);
	return STORE_OK;
}

/* Let an NCS no longer configured go. */
static int
owner_let_go(struct owner *o, struct owner_ncs *x)
{
	pthread_mutex_lock(&o->mu);
	x->held = false;
	pthread_mutex_unlock(&o->mu);
	return owner_lock_sql(o, x->key, OWNER_LOCK_CLASS, OWNER_SQL_UNLOCK,
	    NULL);
}

/* One round over every NCS. */
static void
owner_round(struct owner *o)
{
	struct owner_ncs	*x;
	char			*name;
	bool			 held, wanted;
	int64_t			 t0;
	int32_t			 key;
	size_t			 i, n;
	int			 rc = STORE_OK;

	if (owner_connect(o) != STORE_OK) {
		owner_lost_all(o);
		return;
	}
	if ((rc = owner_renew_all(o)) != STORE_OK)
		owner_seterr(o, "renewal");
	pthread_mutex_lock(&o->mu);
	n = o->n;
	pthread_mutex_unlock(&o->mu);
	for (i = 0; i < n && rc != STORE_LOST && !o->stop; i++) {
		pthread_mutex_lock(&o->mu);
		x = o->v[i];
		name = xstrdup(x->name);
		key = x->key;
		held = x->held;
		wanted = x->wanted;
		pthread_mutex_unlock(&o->mu);
		t0 = util_mono_ms();
		if (held && !wanted)
			rc = owner_let_go(o, x);
		else if (!held && wanted)
			rc = owner_try(o, x, name, key, t0);
		else
			rc = STORE_OK;
		if (rc != STORE_OK)
			owner_seterr(o, name);
		free(name);
	}
	if (rc == STORE_LOST || (o->s != NULL &&
	    store_session(o->s) != o->session))
		owner_lost_all(o);
}

static void *
owner_main(void *arg)
{
	struct owner	*o = arg;
	struct timespec	 ts;
	int64_t		 period = OWNER_PERIOD(o->takeover), next;

	pthread_mutex_lock(&o->mu);
	while (!o->stop) {
		pthread_mutex_unlock(&o->mu);
		next = util_mono_ms() + period;
		owner_round(o);
		pthread_mutex_lock(&o->mu);
		while (!o->stop && util_mono_ms() < next) {
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += 20 * 1000000L;
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			pthread_cond_timedwait(&o->cv, &o->mu, &ts);
		}
	}
	pthread_mutex_unlock(&o->mu);
	store_close(o->s);	/* the server lets go of every lock */
	o->s = NULL;
	return NULL;
}

/* ------------------------------------------------------------------------ */
/* The loop. */

/* Orphans of the NCS taken back: now the links may open. */
struct owner_take {
	struct owner	*o;
	char		*ncs;
	int64_t		 epoch;
	char		 prefix[128];
	size_t		 n;
};

static int
owner_take_run(struct gwdb *g, void *arg)
{
	struct owner_take	*t = arg;

	return queue_release_orphans(g->q, t->prefix, NULL, &t->n);
}

static void
owner_take_done(void *arg, int rc)
{
	struct owner_take	*t = arg;
	struct owner		*o = t->o;
	struct owner_ncs	*x;
	struct ncs		*n;
	bool			 ok = false;

	if (o != NULL) {
		pthread_mutex_lock(&o->mu);
		if ((x = owner_find(o, t->ncs)) != NULL) {
			x->taking = false;
			ok = rc == QUEUE_OK && x->held &&
			    x->epoch == t->epoch && util_mono_ms() -
			    x->ok_mono < OWNER_DROP(o->takeover);
		}
		pthread_mutex_unlock(&o->mu);
	}
	if (rc != QUEUE_OK)
		log_event(LL_WARN, "owner.error", "ncs=%s error=%s", t->ncs,
		    log_q(queue_strerror(rc)));
	if (ok && (n = ncs_find_by_name(o->gw, t->ncs)) != NULL &&
	    !o->gw->stopping) {
		log_event(LL_INFO, "owner.take", "ncs=%s instance=%s epoch=%lld"
		    " jobs_taken_back=%zu", t->ncs, o->instance,
		    (long long)t->epoch, t->n);
		if (t->n > 0)
			log_event(LL_INFO, "job.orphans", "ncs=%s jobs=%zu "
			    "note=%s", t->ncs, t->n, log_q("claimed by the "
			    "NCS's previous owner, back in the queue"));
		ncs_set_owned(n, true, t->epoch, "owner");
	}
	free(t->ncs);
	free(t);
}

/* Compare what the session holds with what the links do. */
static void
owner_tick_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct owner		*o = arg;
	struct gw		*gw = o->gw;
	struct owner_ncs	*x;
	struct owner_take	*t;
	struct ncs		*n;
	int64_t			 now = util_mono_ms(), gap;
	bool			 active;
	char			 why[300], reason[400];

	(void)fd;
	(void)ev;
	/* a loop that did not come here for a period: the process stood still */
	gap = o->tick_mono != 0 ? now - o->tick_mono : 0;
	o->tick_mono = now;
	pthread_mutex_lock(&o->mu);
	snprintf(why, sizeof why, "%s", o->connected ? "lost the lock" :
	    o->error[0] != '\0' ? o->error : "database unreachable");
	if (strcmp(o->error, o->logged) != 0) {
		util_strlcpy(o->logged, o->error, sizeof o->logged);
		if (o->error[0] != '\0')
			log_event(LL_WARN, "owner.error", "instance=%s error=%s",
			    o->instance, log_q(o->error));
	}
	for (n = TAILQ_FIRST(&gw->ncs); n != NULL; n = TAILQ_NEXT(n, entry)) {
		if ((x = owner_find(o, n->conf->name)) == NULL)
			continue;
		n->own = x;
		active = x->held && now - x->ok_mono < OWNER_DROP(o->takeover);
		if (n->owned && (x->lapsed || !active ||
		    x->epoch != n->epoch)) {
			if (gap >= OWNER_PERIOD(o->takeover))
				snprintf(reason, sizeof reason, "ownership "
				    "lapsed while the process was not running "
				    "(%lld ms without a turn of its loop)%s",
				    (long long)gap, x->lapsed ? ", found before "
				    "a write" : "");
			else
				snprintf(reason, sizeof reason, "%s", x->lapsed ?
				    "ownership lapsed, found before a write" :
				    x->held ? "no renewal within the takeover "
				    "margin" : why);
			x->lapsed = false;
			pthread_mutex_unlock(&o->mu);
			log_event(LL_WARN, "owner.drop", "ncs=%s instance=%s "
			    "epoch=%lld reason=%s", n->conf->name, o->instance,
			    (long long)n->epoch, log_q(reason));
			ncs_set_owned(n, false, 0, "not-owner");
			pthread_mutex_lock(&o->mu);
		} else if (!n->owned && active && !x->taking &&
		    !gw->stopping && gw->dbw != NULL) {
			x->taking = true;
			x->lapsed = false;
			t = xcalloc(1, sizeof *t);
			t->o = o;
			t->ncs = xstrdup(n->conf->name);
			t->epoch = x->epoch;
			snprintf(t->prefix, sizeof t->prefix, GW_NCS_WORKER_PREFIX
			    "%s/", n->conf->name);
			dbw_submit(gw->dbw, owner_take_run, owner_take_done, t);
		}
	}
	pthread_mutex_unlock(&o->mu);
}

/* Keep the session's list of NCSs as configured. */
static void
owner_sync_names(struct owner *o)
{
	struct owner_ncs	*x;
	struct ncs		*n;
	size_t			 i;

	pthread_mutex_lock(&o->mu);
	for (i = 0; i < o->n; i++)
		o->v[i]->wanted = false;
	for (n = TAILQ_FIRST(&o->gw->ncs); n != NULL;
	    n = TAILQ_NEXT(n, entry)) {
		if ((x = owner_find(o, n->conf->name)) == NULL) {
			o->v = xreallocarray(o->v, o->n + 1, sizeof *o->v);
			x = o->v[o->n++] = xcalloc(1, sizeof *x);
			x->name = xstrdup(n->conf->name);
			x->key = owner_key(x->name);
		}
		x->wanted = true;
		n->own = x;
	}
	pthread_mutex_unlock(&o->mu);
}

/*
 * At start, on the session before its thread runs: take this instance's
 * lock, waiting up to OWNER_INSTANCE_WAIT for a previous life's session
 * that the server is still ending; holding it, take back the jobs of the
 * workers named for this instance (its webhooks', its NCSs'), before any
 * worker of this process claims. Without the lock (no server, or another
 * live session holds it) nothing is taken back: those jobs wait for their
 * leases, or for the NCS's next owner.
 */
static void
owner_instance_start(struct owner *o)
{
	struct gw_config	*cfg = o->gw->cfg;
	struct queue		*q = o->gw->db->q;
	char			 prefix[160];
	size_t			 i, n, all = 0;
	int			 rc;

	if ((rc = owner_connect(o)) != STORE_OK) {
		log_event(LL_WARN, "owner.instance", "instance=%s error=%s "
		    "note=%s", o->instance, log_q(o->error), log_q("the jobs "
		    "of a previous life wait for their leases"));
		return;
	}
	store_busy_timeout(o->s, OWNER_INSTANCE_WAIT(o->takeover));
	rc = owner_lock_sql(o, owner_key(o->instance), OWNER_INSTANCE_CLASS,
	    "SELECT pg_advisory_lock($1::integer, $2::integer)", NULL);
	store_busy_timeout(o->s, (int)OWNER_PERIOD(o->takeover));
	if (rc != STORE_OK) {
		log_event(LL_WARN, "owner.instance", "instance=%s error=%s "
		    "note=%s", o->instance, log_q(rc == STORE_BUSY ? "another "
		    "session holds this instance's lock (a previous life the "
		    "server has not ended yet, or another process with this "
		    "instance name)" : store_errmsg(o->s)), log_q("the jobs of "
		    "a previous life wait for their leases"));
		return;
	}
	/* a start: wait for the writer lock as the start-up writes did */
	queue_set_busy(q, (int)cfg->start_wait_ms);
	for (i = 0, rc = QUEUE_OK; i <= cfg->nncs && rc == QUEUE_OK; i++) {
		if (i == cfg->nncs)
			snprintf(prefix, sizeof prefix, GW_HOOK_WORKER_PREFIX
			    "%s/", o->instance);
		else
			snprintf(prefix, sizeof prefix, GW_NCS_WORKER_PREFIX
			    "%s/%s/", cfg->ncs[i].name, o->instance);
		if ((rc = queue_release_orphans(q, prefix, NULL, &n)) ==
		    QUEUE_OK)
			all += n;
	}
	queue_set_busy(q, (int)cfg->busy_ms);
	if (rc != QUEUE_OK)
		log_event(LL_WARN, "owner.instance", "instance=%s error=%s "
		    "note=%s", o->instance, log_q(queue_errmsg(q)), log_q("the "
		    "jobs of a previous life wait for their leases"));
	else if (all > 0)
		log_event(LL_INFO, "job.orphans", "instance=%s jobs=%zu note=%s",
		    o->instance, all, log_q("claimed by this instance's "
		    "previous life, back in the queue"));
}

struct owner *
owner_new(struct gw *gw, char **cause)
{
	struct owner	*o;
	struct timeval	 tv = { 0, OWNER_TICK_MS * 1000 };
	const char	*dsn = gw->cfg->db_dsn;
	int		 cs;

	o = xcalloc(1, sizeof *o);
	o->gw = gw;
	o->instance = xstrdup(gw->cfg->instance);
	o->takeover = gw->cfg->takeover_ms;
	o->local = gw->cfg->db_driver != STORE_POSTGRESQL;
	pthread_mutex_init(&o->mu, NULL);
	pthread_cond_init(&o->cv, NULL);
	if (o->local)
		return o;
	/* a connection attempt ends well before takeover (libpq: >= 2 s) */
	cs = (int)((OWNER_PERIOD(o->takeover) + 999) / 1000);
	if (cs < 2)
		cs = 2;
	if (strstr(dsn, "connect_timeout") == NULL && strncmp(dsn,
	    "postgres", 8) != 0)
		xasprintf(&o->dsn, "%s connect_timeout=%d", dsn, cs);
	else
		o->dsn = xstrdup(dsn);
	o->tick = event_new(gw->base, -1, EV_PERSIST, owner_tick_cb, o);
	o->lapse = event_new(gw->base, -1, 0, owner_tick_cb, o);
	if (o->tick == NULL || o->lapse == NULL)
		fatalx("event_new failed");
	owner_instance_start(o);
	if (pthread_create(&o->thread, NULL, owner_main, o) != 0) {
		xasprintf(cause, "owner: cannot start its thread: %s",
		    strerror(errno));
		owner_free(o);
		return NULL;
	}
	o->started = true;
	event_add(o->tick, &tv);
	return o;
}

void
owner_free(struct owner *o)
{
	size_t	i;

	if (o == NULL)
		return;
	if (o->tick != NULL)
		event_free(o->tick);
	if (o->lapse != NULL)
		event_free(o->lapse);
	if (o->started) {
		pthread_mutex_lock(&o->mu);
		o->stop = true;
		pthread_cond_signal(&o->cv);
		pthread_mutex_unlock(&o->mu);
		pthread_join(o->thread, NULL);
	}
	for (i = 0; i < o->n; i++) {
		free(o->v[i]->name);
		free(o->v[i]);
	}
	free(o->v);
	pthread_mutex_destroy(&o->mu);
	pthread_cond_destroy(&o->cv);
	free(o->instance);
	free(o->dsn);
	free(o);
}

/*
 * An NCS starts (or the configuration changed): the session competes for
 * it. Locally the NCS is owned at once.
 */
void
owner_ncs_start(struct owner *o, struct ncs *n)
{
	if (o == NULL || o->local) {
		ncs_set_owned(n, true, 0, "owner");
		return;
	}
	owner_sync_names(o);
}

/* The NCS list changed (reload): NCSs gone are let go. */
void
owner_ncs_changed(struct owner *o)
{
	if (o != NULL && !o->local)
		owner_sync_names(o);
}

/* Who owns an NCS, as far as this instance knows ("" unknown). */
void
owner_info(struct owner *o, const struct ncs *n, char *holder, size_t len,
    int64_t *epoch)
{
	struct owner_ncs	*x;

	*epoch = n->epoch;
	if (o == NULL || o->local || n->owned) {
		util_strlcpy(holder, o != NULL ? o->instance : "", len);
		return;
	}
	pthread_mutex_lock(&o->mu);
	if ((x = owner_find(o, n->conf->name)) != NULL) {
		util_strlcpy(holder, x->holder, len);
		*epoch = x->holder_epoch;
	} else
		util_strlcpy(holder, "", len);
	pthread_mutex_unlock(&o->mu);
}

const char *
owner_instance(const struct owner *o)
{
	return o != NULL ? o->instance : "";
}

/*
 * Before every frame on an NCS's outbound links, and every connect
 * (link.c): is this instance's hold current? Held at the epoch the links
 * were opened under, the last good renewal younger than OWNER_DROP of
 * takeover by the monotonic clock. A process that stood still (SIGSTOP, a
 * paused VM) comes back with its timers and sockets all ready at once, in
 * no set order: whatever runs first asks here, before owner_tick_cb may
 * have looked. When not current the NCS is marked lapsed (every later
 * call says no), and the links are dropped by owner_tick_cb, made to run
 * next. O(1): one mutex, no query.
 */
bool
owner_may_talk(struct owner *o, struct ncs *n)
{
	struct owner_ncs	*x = n->own;
	int64_t			 now;
	bool			 ok;

	if (o == NULL || o->local)
		return true;
	if (!n->owned || x == NULL)
		return false;
	now = util_mono_ms();
	pthread_mutex_lock(&o->mu);
	ok = !x->lapsed && x->held && x->epoch == n->epoch &&
	    now - x->ok_mono < OWNER_DROP(o->takeover);
	if (!ok && !x->lapsed) {
		x->lapsed = true;
		event_active(o->lapse, EV_TIMEOUT, 0);
	}
	pthread_mutex_unlock(&o->mu);
	return ok;
}

/*
 * Inside a transaction: is epoch still the NCS's? QUEUE_OK, QUEUE_ELOST
 * (another owner came since), or a database error. Epoch 0 (SQLite, a
 * single instance) is never fenced.
 */
int
owner_fence(struct gwdb *g, const char *ncs, int64_t epoch, int64_t *cur)
{
	struct store_stmt	*st;
	int			 rc;

	*cur = 0;
	if (epoch == 0)
		return QUEUE_OK;
	if ((rc = store_prepare(g->db, "SELECT epoch FROM mosgw_owner WHERE "
	    "ncs = ?1", 0, &st)) != STORE_OK)
		return gwdb_rc(rc);
	store_bind_text(st, 1, ncs, -1);
	rc = store_step(st);
	if (rc == STORE_ROW)
		*cur = store_column_int64(st, 0);
	store_finalize(st);
	if (rc != STORE_ROW && rc != STORE_DONE)
		return gwdb_rc(rc);
	return *cur == epoch ? QUEUE_OK : QUEUE_ELOST;
}
