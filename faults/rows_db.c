/*
 * Rows 22-26 and 30: the database and the process. kill -9, power loss
 * (faultvfs undo logs), disk full and I/O errors (faultvfs failures), a
 * competing writer, SIGTERM.
 *
 * "Acknowledged" here is what mosctl reported stored (exit 0, "put rev N"):
 * mosgw stores nothing an NCS sends, so its acknowledgements to the NCS
 * carry no data to lose.
 */
#include <sys/mount.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


#include "store/store.h"
#include "faults/faults.h"

#define CRASH_DB	"backoff_base = 0.1\nbackoff_max = 0.5\nlease = 2\n"
#define CRASH_NCS	"max_attempts = 1000\nack_timeout = 1\n" \
			"reconnect_min = 0.1\nreconnect_max = 0.5\n"

/* What a series of crashes left behind. */
struct crash_stats {
	int		 rounds;
	long		 acked;		/* changes mosctl reported stored */
	long		 failed_puts;	/* mosctl said not stored */
	long long	 undone;	/* bytes a power loss took back */
	long		 lost;		/* acknowledged, never delivered */
	long		 missing;	/* acknowledged, not in the database */
	long		 dups;
	long		 back;
	long		 unreported;
	long		 reused;
	bool		 integrity;
	int64_t		 recover_ms;	/* worst restart -> idle */
	int		 ro_acked;	/* roCreate the NCS got an roAck OK for */
	int		 ro_missing;	/* of those, not in the database */
};

#define CRASH_MAX_RO	64

/* Running orders the NCS sent; acked[i] once it got roAck OK. */
struct ro_ledger {
	char	id[CRASH_MAX_RO][32];
	bool	acked[CRASH_MAX_RO];
	int	n;
	int	conn;
};

/*
 * The NCS sends a roCreate on its upper connection; with wait, the roAck
 * is awaited and recorded (a roCreate in flight when the gateway dies may
 * or may not be stored: it was not acknowledged).
 */
static void
ro_send(struct ro_ledger *rl, struct gwrig *r, const char *label, bool wait)
{
	const struct ncspeer_frame	*f;
	char				 body[512], *x;
	int				 i;

	if (rl->n == CRASH_MAX_RO)
		return;
	if (rl->conn <= 0 || !ncspeer_conn_open(r->ncs, rl->conn))
		rl->conn = gwrig_dial(r, NCSPEER_UPPER);
	if (rl->conn <= 0)
		return;
	i = rl->n++;
	snprintf(rl->id[i], sizeof rl->id[i], "RO-%s-%d", label, i);
	snprintf(body, sizeof body, "<roCreate><roID>%s</roID><roSlug>Crash "
	    "test</roSlug><story><storyID>S1</storyID><storySlug>One"
	    "</storySlug></story><story><storyID>S2</storyID><storySlug>Two"
	    "</storySlug></story></roCreate>", rl->id[i]);
	x = frame_xml(5000 + i, body);
	if (ncspeer_send_xml(r->ncs, rl->conn, x) == 0 && wait &&
	    (f = reply_on(r, rl->conn, 5000 + i, F_WAIT_MS)) != NULL &&
	    f->msg != NULL && f->msg->type == MOS_T_RO_ACK &&
	    f->msg->u.ro_ack.ro_status != NULL &&
	    strcmp(f->msg->u.ro_ack.ro_status, "OK") == 0)
		rl->acked[i] = true;
	free(x);
}

/* Acknowledged running orders the database does not hold. */
static int
ro_missing(struct ro_ledger *rl, struct gwproc *gw, int *acked)
{
	struct store		*db;
	struct store_stmt	*st;
	int		 i, missing = 0;

	*acked = 0;
	if (store_open_file(&db, gw->db, STORE_OPEN_READONLY, NULL) !=
	    STORE_OK || store_prepare(db, "SELECT count(*) FROM ro "
	    "WHERE ro_id = ?", 0, &st) != STORE_OK) {
		store_close(db);
		return -1;
	}
	for (i = 0; i < rl->n; i++) {
		if (!rl->acked[i])
			continue;
		(*acked)++;
		store_reset(st);
		store_bind_text(st, 1, rl->id[i], -1);
		if (store_step(st) != STORE_ROW ||
		    store_column_int(st, 0) != 1)
			missing++;
	}
	store_finalize(st);
	store_close(db);
	return missing;
}

/* A few changes through mosctl, some deletions among them. */
static void
crash_changes(struct ledger *l, struct gwproc *gw, int n, unsigned *seed,
    struct crash_stats *cs)
{
	int	i, k;
	bool	ok;

	for (i = 0; i < n; i++) {
		*seed = *seed * 1103515245u + 12345u;
		k = (int)((*seed >> 16) % (unsigned)l->n);
		if (l->rev[k] > 0 && !l->deleted[k] && k % 4 == 0)
			ok = ledger_del(l, gw, k);
		else
			ok = ledger_put(l, gw, k);
		if (ok)
			cs->acked++;
		else
			cs->failed_puts++;
	}
}

/* mosObj frames the NCS has seen. */
static size_t
objs_seen(struct ncspeer *ncs)
{
	struct ncspeer_match	mt;

	memset(&mt, 0, sizeof mt);
	mt.type = "mosObj";
	mt.side = NCSPEER_ACCEPTED;
	return ncspeer_count(ncs, &mt);
}

/*
 * Rounds of: changes, publishing under way, the gateway killed (and with
 * power the writes since the last fsync undone), changes while it is down,
 * restart. Then drain and compare. vfs: the shim's mode for every process
 * (NULL: none); mosctl_cut: one mosctl per round loses power at a sync.
 */
static int
crash_rounds(struct row *row, int rounds, const char *dbmode, bool power,
    bool mosctl_cut, struct crash_stats *cs)
{
	struct frig		*f;
	struct ledger		 l;
	struct ro_ledger	 rl;
	struct ncspeer_policy	 pol;
	char			 dbx[256], mode[32];
	unsigned		 seed = 4242u + (unsigned)rounds;
	size_t			 seen;
	long long		 u;
	int64_t			 t;
	int			 i, rc = -1;

	memset(cs, 0, sizeof *cs);
	memset(&rl, 0, sizeof rl);
	ledger_init(&l, row->full ? 200 : 60, power ? "PWR" : "K9");
	l.sync_normal = strcmp(dbmode, "normal") == 0;
	snprintf(dbx, sizeof dbx, "%ssynchronous = %s\n", CRASH_DB, dbmode);
	if (power)
		fault_vfs_env("powerloss", NULL, NULL);
	if ((f = frig_new(false, NULL, dbx, CRASH_NCS)) == NULL ||
	    frig_start(f, NULL) != 0) {
		row_fail(row, "the rig did not start");
		goto out;
	}
	memset(&pol, 0, sizeof pol);
	pol.ack_delay_ms = 40;
	ncspeer_set_policy(f->r->ncs, &pol);
	for (i = 0; i < rounds; i++) {
		seen = objs_seen(f->r->ncs);
		crash_changes(&l, f->r->gw, 12, &seed, cs);
		/* the NCS's running orders: one acknowledged, one in flight */
		ro_send(&rl, f->r, dbmode, true);
		ro_send(&rl, f->r, dbmode, false);
		(void)ncspeer_wait_count(f->r->ncs, &(struct ncspeer_match){
		    .type = "mosObj", .side = NCSPEER_ACCEPTED }, seen + 3,
		    F_WAIT_MS);
		usleep((useconds_t)((seed >> 8) % 100) * 1000);
		if (mosctl_cut) {
			/* the power goes at mosctl's commit (its first sync) */
			snprintf(mode, sizeof mode, "powerloss:1");
			setenv("MOSGW_FAULTVFS", mode, 1);
			crash_changes(&l, f->r->gw, 1, &seed, cs);
			setenv("MOSGW_FAULTVFS", "powerloss", 1);
		}
		gwproc_kill(f->r->gw);
		rl.conn = 0;
		if (power) {
			if ((u = faultvfs_power_loss(f->r->gw->db)) < 0) {
				row_fail(row, "power loss could not be "
				    "simulated");
				goto out;
			}
			cs->undone += u;
		}
		crash_changes(&l, f->r->gw, 3, &seed, cs);
		t = ncspeer_now_ms();
		if (frig_start(f, NULL) != 0) {
			row_fail(row, "restart %d failed", i + 1);
			goto out;
		}
		if (i == rounds - 1)
			break;
		(void)t;
	}
	cs->rounds = rounds;
	t = ncspeer_now_ms();
	if (gwproc_wait_idle(f->r->gw, f->r->lane, F_DRAIN_MS) != 0) {
		row_fail(row, "did not drain after the last restart");
		goto out;
	}
	cs->recover_ms = ncspeer_now_ms() - t;
	ledger_check(&l, f->r->ncs, &cs->lost, &cs->dups, &cs->back);
	cs->unreported = ledger_unreported(&l, f->r->ncs);
	cs->reused = msgid_reused(f->r->ncs);
	if (gwproc_stop(f->r->gw) != 0)
		row_note(row, "SIGTERM exit status not 0");
	cs->missing = ledger_missing_in_db(&l, f->r->gw);
	cs->ro_missing = ro_missing(&rl, f->r->gw, &cs->ro_acked);
	cs->integrity = db_integrity_ok(f->r->gw);
	rc = 0;
out:
	fault_vfs_env(NULL, NULL, NULL);
	frig_free(f);
	ledger_free(&l);
	return rc;
}

/* One line of figures for a series. */
static void
crash_fig(struct row *row, const char *label, const struct crash_stats *cs)
{
	row_fig(row, "%s: %d cuts, %ld acknowledged (%ld refused), %ld lost, "
	    "%ld missing in the database, %d/%d roAck'd running orders "
	    "missing, %ld duplicate mosObj, %ld messageIDs reused, %lld bytes "
	    "undone, drain after last restart %.1f s, integrity %s", label,
	    cs->rounds, cs->acked, cs->failed_puts, cs->lost, cs->missing,
	    cs->ro_missing, cs->ro_acked, cs->dups, cs->reused, cs->undone,
	    (double)cs->recover_ms / 1000, cs->integrity ? "ok" : "BAD");
}

/* Row 22: kill -9 in the middle of publishing. */
void
row22_kill9(struct row *row)
{
	struct crash_stats	cs;

	if (crash_rounds(row, row->full ? 20 : 3, "full", false, false,
	    &cs) != 0)
		return;
	crash_fig(row, "kill -9", &cs);
	ROW_CHECK(row, cs.lost == 0 && cs.missing == 0, "%ld acknowledged "
	    "changes lost", cs.lost + cs.missing);
	ROW_CHECK(row, cs.ro_acked > 0 && cs.ro_missing == 0, "%d of %d "
	    "acknowledged running orders missing", cs.ro_missing, cs.ro_acked);
	ROW_CHECK(row, cs.back == 0, "%ld revisions went backwards", cs.back);
	ROW_CHECK(row, cs.unreported == 0, "%ld mosObj of changes never "
	    "stored", cs.unreported);
	ROW_CHECK(row, cs.integrity, "integrity_check failed");
	row_note(row, "%d kill -9 mid-publish: every acknowledged change "
	    "delivered at its newest revision, every roAck'd running order "
	    "stored, nothing sent that was not stored, integrity ok",
	    cs.rounds);
out:
	return;
}

/* Row 23: power loss with synchronous full, and what normal loses. */
void
row23_power_loss(struct row *row)
{
	struct crash_stats	full, normal;
	int			rounds = row->full ? 10 : 3;

	if (fault_vfs_path() == NULL) {
		row_fail(row, "faultvfs.so was not built");
		return;
	}
	if (crash_rounds(row, rounds, "full", true, true, &full) != 0)
		return;
	crash_fig(row, "full", &full);
	if (crash_rounds(row, rounds, "normal", true, false, &normal) != 0)
		return;
	crash_fig(row, "normal", &normal);
	ROW_CHECK(row, full.lost == 0 && full.missing == 0, "full: %ld "
	    "acknowledged changes lost", full.lost + full.missing);
	ROW_CHECK(row, full.reused == 0, "full: %ld messageIDs reused",
	    full.reused);
	ROW_CHECK(row, full.ro_acked > 0 && full.ro_missing == 0, "full: %d "
	    "of %d acknowledged running orders lost", full.ro_missing,
	    full.ro_acked);
	ROW_CHECK(row, full.integrity && normal.integrity,
	    "integrity_check failed after a power loss");
	ROW_CHECK(row, full.undone > 0 || normal.undone > 0,
	    "no write was ever undone: the simulation did nothing");
	row_note(row, "full: %d power cuts (one inside mosctl's commit each): "
	    "0 acknowledged changes or running orders lost; normal: %ld of "
	    "%ld acknowledged changes gone from the database, %ld never "
	    "delivered at their newest revision, %d of %d roAck'd running "
	    "orders gone, %ld messageIDs reused (consistent, not durable)",
	    rounds, normal.missing, normal.acked, normal.lost,
	    normal.ro_missing, normal.ro_acked, normal.reused);
out:
	return;
}

/* A file's path in the gateway's directory. */
static void
gw_file(struct gwproc *gw, const char *name, char *out, size_t len)
{
	snprintf(out, len, "%s/%s", gw->dir, name);
}

static void
touch(const char *path)
{
	int	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);

	if (fd != -1)
		close(fd);
}

/*
 * Rows 24 and 26: the disk breaks under a running gateway (every write or
 * sync fails from the moment the arm file exists), then heals.
 */
static void
broken_disk(struct row *row, const char *mode, const char *what,
    bool gw_fails)
{
	struct frig	*f;
	struct ledger	 l;
	char		 arm[512], clear[512], *out = NULL;
	pid_t		 pid;
	long		 mark;
	int		 c, i, st, refused = 0;

	ledger_init(&l, 8, "DISK");
	if ((f = frig_new(false, NULL, CRASH_DB, CRASH_NCS)) == NULL) {
		row_fail(row, "the rig did not start");
		goto out;
	}
	gw_file(f->r->gw, "arm", arm, sizeof arm);
	gw_file(f->r->gw, "clear", clear, sizeof clear);
	fault_vfs_env(mode, clear, arm);
	ROW_CHECK(row, frig_start(f, NULL) == 0 && frig_links(f, F_WAIT_MS) ==
	    0, "the rig did not start");
	pid = f->r->gw->pid;
	for (i = 0; i < 2; i++)
		ROW_CHECK(row, ledger_put(&l, f->r->gw, i), "put before the "
		    "fault failed");
	ROW_CHECK(row, gwproc_wait_idle(f->r->gw, f->r->lane, F_WAIT_MS) == 0,
	    "first deliveries failed");
	/* two changes wait for the NCS; the disk breaks; the NCS comes */
	ncspeer_down(f->r->ncs, false);
	for (i = 2; i < 4; i++)
		ROW_CHECK(row, ledger_put(&l, f->r->gw, i), "put failed");
	mark = (long)gwproc_log_size(f->r->gw);
	touch(arm);
	for (i = 4; i < 7; i++) {
		st = gwproc_mosctl(f->r->gw, &out, "asset", "put", l.id[i],
		    "--slug", "on a broken disk", (char *)NULL);
		if (st != 0)
			refused++;
		free(out);
		out = NULL;
	}
	ROW_CHECK(row, refused == 3, "mosctl reported %d of 3 changes stored "
	    "on a broken disk", 3 - refused);
	ROW_CHECK(row, ncspeer_up(f->r->ncs) == 0, "NCS did not come back");
	/* relaxed bookkeeping commits without fsync: only writes fail it */
	ROW_CHECK(row, !gw_fails || gwproc_log_wait(f->r->gw, mark,
	    F_WAIT_MS, "event=db.error", (char *)NULL) != -1,
	    "no database error logged");
	c = gwrig_dial(f->r, NCSPEER_LOWER);
	ROW_CHECK(row, c > 0 && heartbeat_ok(f->r, c), "heartbeats stalled "
	    "while the disk was broken");
	ROW_CHECK(row, gwproc_job_count(f->r->gw, f->r->lane, QUEUE_DONE) ==
	    2, "a completion was reported stored on a broken disk");
	row_note(row, "%s: mosctl refused 3/3 changes (exit != 0, not "
	    "acknowledged), %s, heartbeats answered", what, gw_fails ?
	    "gateway logged db.error and retried" : "gateway bookkeeping "
	    "(relaxed, no fsync per commit) unaffected");
	touch(clear);
	for (i = 4; i < 7; i++)
		ROW_CHECK(row, ledger_put(&l, f->r->gw, i), "put after healing "
		    "failed");
	ROW_CHECK(row, gwproc_wait_idle(f->r->gw, f->r->lane, F_DRAIN_MS) == 0
	    && gwproc_job_count(f->r->gw, f->r->lane, QUEUE_DONE) == 7,
	    "did not resume after the disk healed (DONE %ld of 7)",
	    gwproc_job_count(f->r->gw, f->r->lane, QUEUE_DONE));
	ROW_CHECK(row, f->r->gw->pid == pid && gwproc_running(f->r->gw),
	    "the gateway restarted or died");
	ROW_CHECK(row, gwproc_stop(f->r->gw) == 0, "SIGTERM exit not 0");
	ROW_CHECK(row, db_integrity_ok(f->r->gw) &&
	    ledger_missing_in_db(&l, f->r->gw) == 0, "database damaged or "
	    "incomplete");
	row_note(row, "healed: resumed without restart, 7/7 delivered, "
	    "integrity ok");
	row_fig(row, "%s: %d db.error lines while broken", what,
	    gwproc_log_count(f->r->gw, mark, "event=db.error", (char *)NULL));
out:
	fault_vfs_env(NULL, NULL, NULL);
	frig_free(f);
	ledger_free(&l);
}

/* Copy a file; 0 or -1. */
static int
copy_file(const char *from, const char *to)
{
	char	buf[65536];
	ssize_t	n;
	int	in, out, rc = 0;

	if ((in = open(from, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	if ((out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
	    0600)) == -1) {
		close(in);
		return -1;
	}
	while ((n = read(in, buf, sizeof buf)) > 0)
		if (write(out, buf, (size_t)n) != n)
			rc = -1;
	if (n < 0 || fsync(out) != 0)
		rc = -1;
	close(in);
	close(out);
	return rc;
}

/* mosctl asset put on a database file; true when it said stored. */
static bool
put_on(const char *db, const char *id, const char *slug, const char *desc)
{
	struct gwproc	gw;

	memset(&gw, 0, sizeof gw);
	snprintf(gw.db, sizeof gw.db, "%s", db);
	return gwproc_mosctl(&gw, NULL, "asset", "put", id, "--slug", slug,
	    "--description", desc, (char *)NULL) == 0;
}

/* Assets in a database file; -1. */
static int
count_assets(const char *path)
{
	struct store		*db;
	struct store_stmt	*st;
	int		 n = -1;

	if (store_open_file(&db, path, STORE_OPEN_READONLY, NULL) ==
	    STORE_OK && store_prepare(db, "SELECT count(*) FROM assets", 0,
	    &st) == STORE_OK) {
		if (store_step(st) == STORE_ROW)
			n = store_column_int(st, 0);
		store_finalize(st);
	}
	store_close(db);
	return n;
}

/* A real full disk: mosctl on a 2 MiB tmpfs (root only), then more room. */
static void
tmpfs_full(struct row *row)
{
	struct frig	*f = NULL;
	char	 dir[] = "/tmp/mosgw-tmpfs-XXXXXX", path[300], id[32];
	char	 desc[16384];
	int	 i, stored = 0, after = 0, n;

	if (geteuid() != 0) {
		row_note(row, "tmpfs variant skipped: needs root");
		return;
	}
	if (mkdtemp(dir) == NULL)
		return;
	if (mount("tmpfs", dir, "tmpfs", 0, "size=2m") != 0) {
		row_note(row, "tmpfs variant skipped: mount failed (%s)",
		    strerror(errno));
		rmdir(dir);
		return;
	}
	snprintf(path, sizeof path, "%s/full.db", dir);
	/* mosctl never creates a database: mosgw makes one, it goes there */
	if ((f = frig_up(row, false, NULL, NULL, NULL)) == NULL)
		goto out;
	if (gwproc_stop(f->r->gw) != 0 || copy_file(f->r->gw->db, path) != 0) {
		row_fail(row, "tmpfs: could not place a database there");
		goto out;
	}
	memset(desc, 'x', sizeof desc - 1);
	desc[sizeof desc - 1] = '\0';
	for (i = 0; i < 400; i++) {
		snprintf(id, sizeof id, "T-%d", i);
		if (!put_on(path, id, "filling the disk", desc))
			break;
		stored++;
	}
	if (i == 400) {
		row_note(row, "tmpfs never filled");
		goto out;
	}
	/* an operator makes room: the same file goes on working */
	if (mount("tmpfs", dir, "tmpfs", MS_REMOUNT, "size=16m") != 0) {
		row_note(row, "tmpfs remount failed: %s", strerror(errno));
		goto out;
	}
	for (i = 0; i < 3; i++) {
		snprintf(id, sizeof id, "AFTER-%d", i);
		if (put_on(path, id, "after", "room again"))
			after++;
	}
	n = count_assets(path);
	if (after != 3 || n != stored + after)
		row_fail(row, "tmpfs: %d/3 puts after making room, %d rows for "
		    "%d reported stored", after, n, stored + after);
	else
		row_note(row, "2 MiB tmpfs: mosctl stored %d changes, then "
		    "refused with an error; after making room 3/3 stored, "
		    "%d rows = %d reported", stored, n, stored + after);
out:
	frig_free(f);
	umount2(dir, MNT_DETACH);
	rmdir(dir);
}

/* Row 24: disk full. */
void
row24_disk_full(struct row *row)
{
	if (fault_vfs_path() == NULL) {
		row_fail(row, "faultvfs.so was not built");
		return;
	}
	broken_disk(row, "full:1+", "SQLITE_FULL on every write", true);
	if (row->result == ROW_PASS && row->full)
		tmpfs_full(row);
	else if (row->result == ROW_PASS)
		row_note(row, "the real tmpfs variant runs in make faults");
}

/* Row 26: I/O errors on write, then on fsync. */
void
row26_io_error(struct row *row)
{
	if (fault_vfs_path() == NULL) {
		row_fail(row, "faultvfs.so was not built");
		return;
	}
	broken_disk(row, "ioerr-write:1+", "EIO on every write", true);
	if (row->result == ROW_PASS)
		broken_disk(row, "ioerr-fsync:1+", "EIO on every fsync",
		    false);
}

/* Row 25: another process holds the write lock. */
void
row25_busy(struct row *row)
{
	struct frig	*f;
	struct store		*db = NULL;
	char		*out = NULL;
	int64_t		 t0, worst = 0, t;
	int		 secs = row->full ? 30 : 3, c, hb = 0, st;

	if ((f = frig_up(row, false, NULL, CRASH_DB, CRASH_NCS)) == NULL)
		goto out;
	c = gwrig_dial(f->r, NCSPEER_LOWER);
	ROW_CHECK(row, c > 0 && heartbeat_ok(f->r, c), "dial failed");
	ROW_CHECK(row, store_open_file(&db, f->r->gw->db, STORE_OPEN_CREATE,
	    NULL) == STORE_OK &&
	    store_busy_timeout(db, F_WAIT_MS) == STORE_OK &&
	    store_exec(db, "BEGIN IMMEDIATE") ==
	    STORE_OK, "could not take the lock");
	t0 = ncspeer_now_ms();
	while (ncspeer_now_ms() - t0 < secs * 1000) {
		t = ncspeer_now_ms();
		if (heartbeat_ok(f->r, c))
			hb++;
		if (ncspeer_now_ms() - t > worst)
			worst = ncspeer_now_ms() - t;
		usleep(200000);
	}
	t0 = ncspeer_now_ms();
	st = gwproc_mosctl(f->r->gw, &out, "asset", "put", "BUSY-0",
	    "--slug", "locked out", (char *)NULL);
	t = ncspeer_now_ms() - t0;
	ROW_CHECK(row, st != 0, "mosctl reported a change stored while "
	    "the database was locked");
	row_note(row, "mosctl refused while locked (exit %d after its busy "
	    "timeout, %lld ms)", st, (long long)t);
	ROW_CHECK(row, heartbeat_ok(f->r, c), "heartbeat after mosctl failed");
	store_exec(db, "COMMIT");
	store_close(db);
	db = NULL;
	ROW_CHECK(row, hb > 0, "no heartbeat answered while locked");
	ROW_CHECK(row, gwproc_asset_put(f->r->gw, "BUSY-1", "free") == 0 &&
	    gwproc_wait_idle(f->r->gw, f->r->lane, F_DRAIN_MS) == 0,
	    "not resumed after the lock was released");
	ROW_CHECK(row, gwproc_job_count(f->r->gw, f->r->lane, -1) == 1,
	    "the refused change left a job");
	row_note(row, "%d heartbeats answered during %d s of lock; after "
	    "release: stored and delivered", hb, secs);
	row_fig(row, "slowest heartbeat while locked %lld ms; mosctl gave up "
	    "after the busy timeout", (long long)worst);
out:
	free(out);
	if (db != NULL)
		store_close(db);
	frig_free(f);
}

/* Row 30: SIGTERM while publishing. */
void
row30_sigterm(struct row *row)
{
	struct frig		*f;
	struct ledger		 l;
	struct ncspeer_policy	 pol;
	long			 lost, dups, back;
	int			 i, st;

	ledger_init(&l, 80, "TERM");
	if ((f = frig_up(row, false, NULL, CRASH_DB, CRASH_NCS)) == NULL)
		goto out;
	ncspeer_down(f->r->ncs, false);
	for (i = 0; i < l.n; i++)
		ROW_CHECK(row, ledger_put(&l, f->r->gw, i), "put failed");
	memset(&pol, 0, sizeof pol);
	pol.ack_delay_ms = 10;
	ncspeer_set_policy(f->r->ncs, &pol);
	ROW_CHECK(row, ncspeer_up(f->r->ncs) == 0, "NCS did not come back");
	(void)ncspeer_wait_count(f->r->ncs, &(struct ncspeer_match){
	    .type = "mosObj", .side = NCSPEER_ACCEPTED }, 20, F_WAIT_MS);
	st = gwproc_stop(f->r->gw);
	ROW_CHECK(row, st == 0, "exit status %d on SIGTERM", st);
	ROW_CHECK(row, gwproc_log_count(f->r->gw, 0, "event=shutdown",
	    "phase=done", (char *)NULL) >= 1, "no clean shutdown logged");
	row_note(row, "SIGTERM after %zu of %d mosObj: exit 0, shutdown "
	    "done", objs_seen(f->r->ncs), l.n);
	ROW_CHECK(row, frig_start(f, NULL) == 0 &&
	    gwproc_wait_idle(f->r->gw, f->r->lane, F_DRAIN_MS) == 0,
	    "restart did not drain");
	ledger_check(&l, f->r->ncs, &lost, &dups, &back);
	ROW_CHECK(row, lost == 0, "%ld changes lost", lost);
	row_note(row, "after restart all %d delivered", l.n);
	row_fig(row, "lost 0, duplicate mosObj %ld", dups);
out:
	frig_free(f);
	ledger_free(&l);
}
