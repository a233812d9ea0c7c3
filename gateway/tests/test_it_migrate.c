/*
 * Integration: mosctl db migrate moves a site from SQLite to PostgreSQL.
 *
 * A real mosgw on SQLite, with its scripted NCS and a webhook, makes the
 * source: assets delivered, one FAILED (the NCS refuses it), one RUNNING
 * when the daemon is killed (the NCS never answers it), changes queued
 * while it is down, a running order, history, events and webhook jobs.
 * mosctl refuses to copy it while the daemon runs. Once copied, every job
 * is in the target as it was (the RUNNING one due again), the catalog and
 * the running order read back identical, and a mosgw started on
 * PostgreSQL with the same NCS delivers everything pending at its newest
 * revision, with messageIDs after every one used before and a new job id
 * above every old one. The refusals (no source, not a mosgw file, a bad
 * or unreachable dsn, a target with data) leave the target unchanged.
 *
 * Needs a PostgreSQL server (MOSGW_PG_DSN, tools/pgtest.sh); skips without.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "gateway/gateway.h"
#include "gateway/tests/itutil.h"
#include "tools/mosctl.h"

#define WAIT_MS		15000
#define MOSID		"mosgw.test"
#define NCSID		"NCSPEER"

/* Every job as "id kind state attempts" lines, in id order. */
#define JOBS_SQL \
	"SELECT id, kind, state, attempts FROM jobs ORDER BY id"

/* The catalog, in short. */
#define ASSETS_SQL	"SELECT obj_id, rev FROM assets ORDER BY obj_id"

static bool	have_pg;

static int
group_setup(void **state)
{
	const char	*dsn = getenv("MOSGW_PG_DSN");

	(void)state;
	have_pg = dsn != NULL && *dsn != '\0';
	if (!have_pg)
		printf("SKIP: MOSGW_PG_DSN is unset: no PostgreSQL server "
		    "(tools/pgtest.sh start DIR)\n");
	return 0;
}

/* The rows of sql on s, one line each, columns separated by spaces. */
static char *
rows_text(struct store *s, const char *sql)
{
	struct store_stmt	*st;
	struct sbuf		 sb = { NULL, 0, 0 };
	int			 i, rc;

	if (store_prepare(s, sql, 0, &st) != STORE_OK)
		fail_msg("%s: %s", sql, store_errmsg(s));
	while ((rc = store_step(st)) == STORE_ROW) {
		for (i = 0; i < store_column_count(st); i++)
			sbuf_printf(&sb, "%s%s", i > 0 ? " " : "",
			    store_column_is_null(st, i) ? "NULL" :
			    store_column_text(st, i));
		sbuf_puts(&sb, "\n");
	}
	if (rc != STORE_DONE)
		fail_msg("%s: %s", sql, store_errmsg(s));
	store_finalize(st);
	return sb.s != NULL ? sb.s : strdup("");
}

/* The integer of a one-row query. */
static int64_t
one_int(struct store *s, const char *sql)
{
	struct store_stmt	*st;
	int64_t			 v;

	if (store_prepare(s, sql, 0, &st) != STORE_OK ||
	    store_step(st) != STORE_ROW)
		fail_msg("%s: %s", sql, store_errmsg(s));
	v = store_column_int64(st, 0);
	store_finalize(st);
	return v;
}

/* A connection to a PostgreSQL database. */
static struct store *
pg_open(const char *dsn)
{
	struct store_conf	 c = { .driver = STORE_POSTGRESQL, .dsn = dsn };
	struct store		*s;
	char			*err = NULL;

	if (store_open(&s, &c, 0, &err) != STORE_OK)
		fail_msg("%s: %s", dsn, err);
	return s;
}

/* Does the database hold mosgw's tables? */
static bool
pg_has_schema(const char *dsn)
{
	struct store	*s = pg_open(dsn);
	bool		 has;

	has = one_int(s, "SELECT CASE WHEN to_regclass('gw_meta') IS NULL "
	    "THEN 0 ELSE 1 END") != 0;
	store_close(s);
	return has;
}

/*
 * mosctl db migrate --from from --to to [--json]: its exit status; stdout
 * and stderr in *out and *err (malloc'd).
 */
static int
migrate(struct gwproc *gp, const char *from, const char *to, bool json,
    char **out, char **err)
{
	return gwproc_mosctl_cmd(gp, out, err, "db", "migrate", "--from",
	    from, "--to", to, json ? "--json" : (char *)NULL, (char *)NULL);
}

/* Send body on conn in our envelope; the answer. */
static const struct ncspeer_frame *
send_body(struct gwrig *r, int conn, int id, const char *body)
{
	const struct ncspeer_frame	*f;
	char				*text;

	text = itutil_frame_text(MOSID, NCSID, id, body);
	f = itutil_send_text(r, conn, id, text, WAIT_MS);
	free(text);
	return f;
}

/* mosctl ARGS on the database of gp (--db or -c): its stdout. */
static char *
ctl_out(struct gwproc *gp, const char *a1, const char *a2, const char *a3)
{
	char	*out = NULL;

	if (gwproc_mosctl(gp, &out, a1, a2, a3 != NULL ? a3 : "--json",
	    a3 != NULL ? "--json" : (char *)NULL, (char *)NULL) != 0)
		fail_msg("mosctl %s %s %s failed: %s", a1, a2, a3, out);
	return out;
}

/* The highest messageID of a mosObj the NCS took from seq `from` on. */
static int32_t
max_obj_id(struct ncspeer *ncs, size_t from, size_t to)
{
	const struct ncspeer_frame	*f;
	int32_t				 max = 0;
	size_t				 i;

	for (i = from; i < to; i++) {
		f = ncspeer_frame_at(ncs, i);
		if (f->side == NCSPEER_ACCEPTED && f->has_message_id &&
		    strcmp(f->type_name, "mosObj") == 0 && f->message_id > max)
			max = f->message_id;
	}
	return max;
}

/* Wait for a mosObj of obj_id at rev after seq `from`. */
static bool
wait_obj(struct ncspeer *ncs, size_t from, const char *obj_id, uint32_t rev)
{
	const struct ncspeer_frame	*f;
	struct ncspeer_match		 mt = { .type = "mosObj",
					    .side = NCSPEER_ACCEPTED,
					    .obj_id = obj_id };
	int64_t				 end = ncspeer_now_ms() + WAIT_MS;

	for (mt.from = from; ncspeer_now_ms() < end; mt.from = f->seq + 1) {
		f = ncspeer_wait(ncs, &mt, (int)(end - ncspeer_now_ms()));
		if (f == NULL)
			return false;
		if (f->msg != NULL && f->msg->u.mos_obj.obj_rev == rev)
			return true;
	}
	return false;
}

/* The counts of the --json report by table. */
static int64_t
report_rows(json_t *o, const char *table)
{
	json_t	*t;
	size_t	 i;

	json_array_foreach(json_object_get(o, "tables"), i, t) {
		if (strcmp(json_string_value(json_object_get(t, "table")),
		    table) == 0)
			return json_integer_value(json_object_get(t, "rows"));
	}
	return -1;
}

static void
test_migrate_site(void **state)
{
	static const char *const tables[] = { "jobs", "job_events",
	    "assets", "asset_paths", "delivery", "delivery_failed", "history",
	    "ro", "ro_story", "ro_item", "events", "msgid", "ncs",
	    "asset_key" };
	struct gwproc_opts		 o, o2;
	struct ncspeer_policy		 pol;
	struct gwrig			*r;
	struct gwproc			*pg = NULL;
	struct pgdb			 target;
	struct store			*src, *dst;
	const struct ncspeer_frame	*f;
	json_t				*rep;
	char				 sections[256], why[256], sql[256];
	char				*out = NULL, *err = NULL, *jobs_src;
	char				*jobs_dst, *assets, *ros, *ro1, *s;
	char				*jobs_want;
	int64_t				 max_job, new_job, old_events, running;
	int32_t				 old_msgid;
	size_t				 i, nseen;
	int				 c;

	(void)state;
	if (!have_pg)
		skip();
	memset(&o, 0, sizeof o);
	o.sqlite = true;
	o.log_level = "info";
	/* the held job stays RUNNING however slow the machine is */
	o.database_extra = "backoff_base = 0.1\nbackoff_max = 0.5\n"
	    "lease = 300\n";
	o.nncs = 1;
	o.ncs[0].extra = "max_attempts = 2\nack_timeout = 300\n";
	/* a webhook nobody answers: its jobs wait in the queue */
	snprintf(sections, sizeof sections, "[webhook.h]\nurl = "
	    "http://127.0.0.1:%u/\nevents = *\nsecret = s\n",
	    (unsigned)gwproc_free_port());
	o.sections_extra = sections;
	r = gwrig_new_opts(MOS_ENC_UTF8, &o);
	assert_non_null(r);

	/* delivered */
	GWRIG_CHECK(r, gwproc_asset_put(r->gw, "A1", "one") == 0);
	GWRIG_CHECK(r, gwproc_asset_put(r->gw, "A2", "two") == 0);
	GWRIG_CHECK(r, gwproc_mosctl(r->gw, NULL, "asset", "put", "A3",
	    "--slug", "three", "--abstract", "Ärger im Äther",
	    "--path", "https://media/a3.mxf", "--tech", "MXF",
	    (char *)NULL) == 0);
	GWRIG_CHECK(r, wait_obj(r->ncs, 0, "A3", 1));
	GWRIG_CHECK(r, gwproc_wait_idle(r->gw, r->lane, WAIT_MS) == 0);
	/* a running order using them */
	c = gwrig_dial(r, NCSPEER_UPPER);
	GWRIG_CHECK(r, c > 0);
	f = send_body(r, c, 500, "<roCreate><roID>R1</roID><roSlug>Six"
	    "</roSlug><story><storyID>S1</storyID><storySlug>Fire</storySlug>"
	    "<item><itemID>I1</itemID><objID>A1</objID><mosID>" MOSID
	    "</mosID><itemChannel>B</itemChannel></item>"
	    "<item><itemID>I2</itemID><objID>A2</objID><mosID>" MOSID
	    "</mosID></item></story>"
	    "<story><storyID>S2</storyID></story></roCreate>");
	GWRIG_CHECK(r, f != NULL && f->msg != NULL &&
	    f->msg->type == MOS_T_RO_ACK);
	GWRIG_CHECK(r, gwproc_wait_idle(r->gw, r->lane, WAIT_MS) == 0);
	/* refused twice: FAILED */
	memset(&pol, 0, sizeof pol);
	pol.obj = NCSPEER_OBJ_NACK;
	ncspeer_set_policy(r->ncs, &pol);
	GWRIG_CHECK(r, gwproc_asset_put(r->gw, "F1", "refused") == 0);
	GWRIG_CHECK(r, gwproc_wait_jobs(r->gw, r->lane, QUEUE_FAILED, 1,
	    WAIT_MS) >= 1);
	/* never answered: RUNNING when the daemon dies */
	pol.obj = NCSPEER_OBJ_IGNORE;
	ncspeer_set_policy(r->ncs, &pol);
	GWRIG_CHECK(r, gwproc_asset_put(r->gw, "P1", "held") == 0);
	GWRIG_CHECK(r, gwproc_wait_jobs(r->gw, r->lane, QUEUE_RUNNING, 1,
	    WAIT_MS) >= 1);
	GWRIG_CHECK(r, gwproc_asset_put(r->gw, "P2", "waits") == 0);

	/* not while the daemon runs; the target stays as it was */
	GWRIG_CHECK(r, pgdb_create(&target, why, sizeof why) == 0);
	GWRIG_CHECK(r, migrate(r->gw, r->gw->db, target.dsn, false, &out,
	    &err) == MOSCTL_EXIT_FAIL);
	GWRIG_CHECK(r, strstr(err, "in use by a running mosgw") != NULL);
	GWRIG_CHECK(r, !pg_has_schema(target.dsn));
	free(out);
	free(err);

	gwproc_kill(r->gw);
	/* changes made while it is down */
	GWRIG_CHECK(r, gwproc_asset_put(r->gw, "P3", "later") == 0);
	GWRIG_CHECK(r, gwproc_asset_put(r->gw, "A1", "one again") == 0);
	nseen = ncspeer_nframes(r->ncs);
	old_msgid = max_obj_id(r->ncs, 0, nseen);
	GWRIG_CHECK(r, old_msgid > 0);

	/* what the source holds */
	src = gwproc_store(r->gw, STORE_OPEN_READONLY);
	GWRIG_CHECK(r, src != NULL);
	jobs_src = rows_text(src, JOBS_SQL);
	/* the RUNNING job comes back QUEUED, its attempt counted */
	jobs_want = rows_text(src, "SELECT id, kind, CASE WHEN state <> 1 "
	    "THEN state WHEN attempts >= max_attempts THEN 3 ELSE 0 END, "
	    "attempts FROM jobs ORDER BY id");
	running = one_int(src, "SELECT count(*) FROM jobs WHERE state = 1");
	GWRIG_CHECK(r, running >= 1);
	GWRIG_CHECK(r, one_int(src, "SELECT count(*) FROM jobs WHERE state "
	    "= 3") >= 1);
	GWRIG_CHECK(r, one_int(src, "SELECT count(*) FROM jobs WHERE kind "
	    "LIKE 'webhook%'") >= 1);
	max_job = one_int(src, "SELECT max(id) FROM jobs");
	old_events = one_int(src, "SELECT max(seq) FROM sqlite_sequence "
	    "WHERE name = 'events'");
	GWRIG_CHECK(r, old_events > 0);
	assets = ctl_out(r->gw, "asset", "ls", "--all");
	ros = ctl_out(r->gw, "ro", "ls", NULL);
	ro1 = ctl_out(r->gw, "ro", "show", "R1");
	GWRIG_CHECK(r, strstr(ro1, "I2") != NULL);

	GWRIG_CHECK(r, migrate(r->gw, r->gw->db, target.dsn, true, &out,
	    &err) == 0);
	rep = json_loads(out, 0, NULL);
	GWRIG_CHECK(r, rep != NULL);
	GWRIG_CHECK(r, json_is_integer(json_object_get(rep, "ms")));
	GWRIG_CHECK(r, json_integer_value(json_object_get(rep, "rows")) > 0);
	GWRIG_CHECK(r, json_integer_value(json_object_get(rep, "released"))
	    == running);
	dst = pg_open(target.dsn);
	for (i = 0; i < nitems(tables); i++) {
		snprintf(sql, sizeof sql, "SELECT count(*) FROM %s",
		    tables[i]);
		if (report_rows(rep, tables[i]) != one_int(src, sql)) {
			gwrig_dump(r, "rows", __FILE__, __LINE__);
			fail_msg("%s: %lld rows reported, %lld in the source",
			    tables[i], (long long)report_rows(rep, tables[i]),
			    (long long)one_int(src, sql));
		}
		assert_true(one_int(src, sql) > 0);
	}
	/* job_events and events gained the take-back of the RUNNING job */
	assert_int_equal(one_int(dst, "SELECT count(*) FROM job_events"),
	    report_rows(rep, "job_events") + running);
	assert_true(one_int(dst, "SELECT count(*) FROM events") >
	    report_rows(rep, "events"));
	/* the source is still the daemon's, unchanged */
	s = rows_text(src, JOBS_SQL);
	assert_string_equal(s, jobs_src);
	free(s);
	store_close(src);
	jobs_dst = rows_text(dst, JOBS_SQL);
	assert_string_equal(jobs_dst, jobs_want);
	free(jobs_dst);
	/* event ids go on after the old ones: the take-back's are above */
	snprintf(sql, sizeof sql, "SELECT count(*) FROM events WHERE id > "
	    "%lld", (long long)old_events);
	assert_true(one_int(dst, sql) >= 1);
	/* the search index was built on the target */
	assert_true(json_integer_value(json_object_get(rep, "indexed")) >= 5);
	json_decref(rep);
	free(out);
	free(err);

	/* a second run finds the target full, and changes nothing */
	s = rows_text(dst, JOBS_SQL);
	GWRIG_CHECK(r, migrate(r->gw, r->gw->db, target.dsn, false, &out,
	    &err) == MOSCTL_EXIT_FAIL);
	GWRIG_CHECK(r, strstr(err, "already holds mosgw data") != NULL);
	GWRIG_CHECK(r, strstr(err, "jobs (") != NULL);
	jobs_dst = rows_text(dst, JOBS_SQL);
	assert_string_equal(jobs_dst, s);
	free(jobs_dst);
	free(s);
	free(out);
	free(err);

	/* mosgw on PostgreSQL, the same NCS and webhook */
	memcpy(&o2, &r->opts, sizeof o2);
	o2.sqlite = false;
	o2.pg_dsn = target.dsn;
	pg = gwproc_new(&o2);
	GWRIG_CHECK(r, pg != NULL);
	/* the catalog and the running order read back identical */
	GWRIG_CHECK(r, gwproc_write_config(pg) == 0);
	s = ctl_out(pg, "asset", "ls", "--all");
	assert_string_equal(s, assets);
	free(s);
	s = ctl_out(pg, "ro", "ls", NULL);
	assert_string_equal(s, ros);
	free(s);
	s = ctl_out(pg, "ro", "show", "R1");
	assert_string_equal(s, ro1);
	free(s);

	memset(&pol, 0, sizeof pol);
	ncspeer_set_policy(r->ncs, &pol);
	nseen = ncspeer_nframes(r->ncs);
	GWRIG_CHECK(r, gwproc_start(pg) == 0);
	/* everything pending arrives at its newest revision */
	GWRIG_CHECK(r, wait_obj(r->ncs, nseen, "P1", 1));
	GWRIG_CHECK(r, wait_obj(r->ncs, nseen, "P2", 1));
	GWRIG_CHECK(r, wait_obj(r->ncs, nseen, "P3", 1));
	GWRIG_CHECK(r, wait_obj(r->ncs, nseen, "A1", 2));
	GWRIG_CHECK(r, gwproc_wait_idle(pg, r->lane, WAIT_MS) == 0);
	/* the failed one stays failed */
	snprintf(sql, sizeof sql, "SELECT count(*) FROM jobs WHERE state = 3 "
	    "AND lane = '%s'", r->lane);
	assert_true(one_int(dst, sql) >= 1);
	/* no messageID given again */
	for (i = nseen; i < ncspeer_nframes(r->ncs); i++) {
		f = ncspeer_frame_at(r->ncs, i);
		if (f->side == NCSPEER_ACCEPTED && f->has_message_id &&
		    strcmp(f->type_name, "mosObj") == 0 &&
		    f->message_id <= old_msgid) {
			gwrig_dump(r, "messageID", __FILE__, __LINE__);
			fail_msg("messageID %d given again (the old ones went "
			    "up to %d)", f->message_id, old_msgid);
		}
	}
	/* a new job's id is above every old one */
	GWRIG_CHECK(r, gwproc_asset_put(pg, "N1", "new") == 0);
	GWRIG_CHECK(r, wait_obj(r->ncs, nseen, "N1", 1));
	new_job = one_int(dst, "SELECT min(id) FROM jobs WHERE coalesce_key "
	    "LIKE 'obj:N1@%'");
	assert_true(new_job > max_job);
	store_close(dst);
	assert_int_equal(gwproc_stop(pg), 0);
	gwproc_free(pg);
	pgdb_drop(&target);
	free(jobs_src);
	free(jobs_want);
	free(assets);
	free(ros);
	free(ro1);
	gwrig_free(r);
}

/* A refused migration: exit status rc, want in its stderr, no password. */
static void
refused(struct gwproc *gp, const char *from, const char *to, int rc,
    const char *want)
{
	char	*out = NULL, *err = NULL;
	int	 got;

	got = migrate(gp, from, to, false, &out, &err);
	if (got != rc || strstr(err, want) == NULL ||
	    strstr(err, "secret") != NULL)
		fail_msg("migrate %s to %s: exit %d (want %d), stderr: %s "
		    "(want '%s')", from, to, got, rc, err, want);
	assert_string_equal(out, "");
	free(out);
	free(err);
}

static void
test_refusals(void **state)
{
	struct gwproc_opts	 o;
	struct gwproc		*gp;
	struct pgdb		 target;
	struct store		*s, *s2;
	char			 why[256], path[400], dsn[1200], *err = NULL;
	char			*jobs, *out = NULL;
	FILE			*f;

	(void)state;
	if (!have_pg)
		skip();
	memset(&o, 0, sizeof o);
	o.sqlite = true;
	gp = gwproc_new(&o);
	assert_non_null(gp);
	assert_int_equal(gwproc_mosctl(gp, NULL, "init", (char *)NULL), 0);
	assert_int_equal(gwproc_asset_put(gp, "X1", "x"), 0);
	assert_int_equal(pgdb_create(&target, why, sizeof why), 0);

	/* no source */
	snprintf(path, sizeof path, "%s/nope.db", gp->dir);
	refused(gp, path, target.dsn, MOSCTL_EXIT_DB, "no database at");
	assert_int_equal(access(path, F_OK), -1);
	/* a text file; an SQLite file of something else */
	snprintf(path, sizeof path, "%s/text.db", gp->dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("not a database at all, just some text long enough to fill a "
	    "header of one hundred bytes or so, which SQLite reads first\n",
	    f);
	fclose(f);
	refused(gp, path, target.dsn, MOSCTL_EXIT_FAIL,
	    "is not a mosgw database");
	snprintf(path, sizeof path, "%s/other.db", gp->dir);
	assert_int_equal(store_open_file(&s, path, STORE_OPEN_CREATE, &err),
	    STORE_OK);
	assert_int_equal(store_exec(s, "CREATE TABLE x(a); INSERT INTO x "
	    "VALUES (1)"), STORE_OK);
	store_close(s);
	refused(gp, path, target.dsn, MOSCTL_EXIT_FAIL,
	    "is not a mosgw database");
	/* a mosgw file of another schema version */
	snprintf(path, sizeof path, "%s/old.db", gp->dir);
	assert_int_equal(gwproc_mosctl_cmd(gp, NULL, NULL, "--db", path,
	    "init", (char *)NULL), 0);
	assert_int_equal(store_open_file(&s, path, 0, &err), STORE_OK);
	snprintf(dsn, sizeof dsn, "UPDATE gw_meta SET value = %d WHERE "
	    "key = 'schema_version'", GWDB_SCHEMA_VERSION - 1);
	assert_int_equal(store_exec(s, dsn), STORE_OK);
	store_close(s);
	snprintf(dsn, sizeof dsn, "has gateway schema version %d; this "
	    "mosctl copies version %d", GWDB_SCHEMA_VERSION - 1,
	    GWDB_SCHEMA_VERSION);
	refused(gp, path, target.dsn, MOSCTL_EXIT_FAIL, dsn);
	/* a table nobody told mosctl about would be left behind */
	assert_int_equal(store_open_file(&s, path, 0, &err), STORE_OK);
	snprintf(dsn, sizeof dsn, "UPDATE gw_meta SET value = %d WHERE "
	    "key = 'schema_version'; CREATE TABLE extra(a)",
	    GWDB_SCHEMA_VERSION);
	assert_int_equal(store_exec(s, dsn), STORE_OK);
	store_close(s);
	refused(gp, path, target.dsn, MOSCTL_EXIT_FAIL,
	    "has a table this mosctl does not know how to copy: extra");
	/* a dsn with a password; a server nobody listens on */
	snprintf(dsn, sizeof dsn, "%s password=secret", target.dsn);
	refused(gp, gp->db, dsn, MOSCTL_EXIT_USAGE, "password");
	refused(gp, gp->db, "host=127.0.0.1 port", MOSCTL_EXIT_USAGE,
	    "not a libpq connection string");
	snprintf(dsn, sizeof dsn, "host=127.0.0.1 port=%u dbname=nope "
	    "user=mosgw connect_timeout=5", (unsigned)gwproc_free_port());
	refused(gp, gp->db, dsn, MOSCTL_EXIT_DB, "dbname=nope");
	assert_false(pg_has_schema(target.dsn));

	/* a table of another program with rows in it: left alone */
	s = pg_open(target.dsn);
	assert_int_equal(store_exec(s, "CREATE TABLE jobs (a int); "
	    "INSERT INTO jobs VALUES (1)"), STORE_OK);
	refused(gp, gp->db, target.dsn, MOSCTL_EXIT_FAIL,
	    "already holds mosgw data: jobs (1 rows)");
	assert_false(pg_has_schema(target.dsn));
	assert_int_equal(store_exec(s, "DROP TABLE jobs"), STORE_OK);

	/* a value PostgreSQL cannot hold: all rolled back, no data */
	snprintf(path, sizeof path, "%s/nul.db", gp->dir);
	assert_int_equal(gwproc_mosctl_cmd(gp, NULL, NULL, "--db", path,
	    "init", (char *)NULL), 0);
	assert_int_equal(gwproc_mosctl_cmd(gp, NULL, NULL, "--db", path,
	    "asset", "put", "Z1", "--slug", "z", (char *)NULL), 0);
	assert_int_equal(store_open_file(&s2, path, 0, &err), STORE_OK);
	assert_int_equal(store_exec(s2, "UPDATE assets SET description = "
	    "'a' || char(0) || 'b'"), STORE_OK);
	store_close(s2);
	refused(gp, path, target.dsn, MOSCTL_EXIT_DB, "table assets, column "
	    "description: a text with a NUL byte");
	assert_true(pg_has_schema(target.dsn));
	assert_int_equal(one_int(s, "SELECT count(*) FROM assets"), 0);
	assert_int_equal(one_int(s, "SELECT count(*) FROM queue_counters"),
	    3);

	/* copied once; a second copy is refused and changes nothing */
	assert_int_equal(gwproc_mosctl_cmd(gp, &out, NULL, "db", "migrate",
	    "--from", gp->db, "--to", target.dsn, (char *)NULL), 0);
	snprintf(why, sizeof why, "\n%-16s %10d\n", "assets", 1);
	assert_non_null(strstr(out, why));
	assert_non_null(strstr(out, "\ncopied "));
	free(out);
	jobs = rows_text(s, ASSETS_SQL);
	assert_string_equal(jobs, "X1 1\n");
	refused(gp, gp->db, target.dsn, MOSCTL_EXIT_FAIL,
	    "already holds mosgw data: ");
	refused(gp, gp->db, target.dsn, MOSCTL_EXIT_FAIL, "assets (1 rows)");
	err = rows_text(s, ASSETS_SQL);
	assert_string_equal(err, jobs);
	free(err);
	free(jobs);
	store_close(s);
	pgdb_drop(&target);
	gwproc_free(gp);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_migrate_site),
	};

	return cmocka_run_group_tests(tests, group_setup, NULL);
}
