/*
 * Integration: POST /v1/assets:import stores what the same assets PUT one
 * by one store. Two gateways, each with two NCSs that nothing answers (the
 * jobs stay QUEUED) and no initial sync: one imports NDJSON lines, the
 * other gets the same bodies as PUTs, in order. The catalog, its paths
 * and metadata, the search index, the jobs (ids included), their history,
 * the event log and the queue's counters must then be the same, times
 * left aside. The lines update an asset that was there before, name an
 * asset twice (in one transaction and in two), and touch an asset that a
 * running order holds (its item status job). Then a line the database
 * refuses (a trigger) is refused alone, by its line number. Runs on the
 * backend of MOSGW_DB_DRIVER (the test's SQL in that dialect).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/store.h"
#include "gateway/tests/gwproc.h"
#include "gateway/tests/httpc.h"

#define TOK		"import-write-token-0123456789"
#define NLINES		420
#define WAIT_MS		60000

static const char tokens[] = "mam write " TOK "\n";

/* The two gateways. */
struct imp {
	struct gwproc	*gw[2];
	uint16_t	 ports[2][4];	/* where no NCS listens */
};

/* n gateways (1 or 2). */
static int
setup_n(void **state, size_t n)
{
	struct imp		*s;
	struct gwproc_opts	 o;
	size_t			 g, i;

	if ((s = calloc(1, sizeof *s)) == NULL)
		return -1;
	*state = s;
	for (g = 0; g < n; g++) {
		memset(&o, 0, sizeof o);
		o.api_tokens = tokens;
		o.log_level = "info";
		o.api_extra = "max_body_size = 4m\n";
		o.nncs = 2;
		for (i = 0; i < 4; i++)
			if ((s->ports[g][i] = gwproc_free_port()) == 0)
				return -1;
		for (i = 0; i < 2; i++) {
			o.ncs[i].ncs_id = i == 0 ? "NCS1" : "NCS2";
			o.ncs[i].lower_port = s->ports[g][2 * i];
			o.ncs[i].upper_port = s->ports[g][2 * i + 1];
			o.ncs[i].extra = i == 0 ? "initial_sync = none\n" :
			    "initial_sync = none\nmax_attempts = 7\n";
		}
		if ((s->gw[g] = gwproc_new(&o)) == NULL ||
		    gwproc_start(s->gw[g]) != 0)
			return -1;
	}
	return 0;
}

static int
setup(void **state)
{
	return setup_n(state, 2);
}

static int
setup_one(void **state)
{
	return setup_n(state, 1);
}

static int
teardown(void **state)
{
	struct imp	*s = *state;
	int		 rc = 0, g;

	for (g = 0; g < 2; g++) {
		if (s->gw[g] != NULL && gwproc_stop(s->gw[g]) != 0)
			rc = -1;
		gwproc_free(s->gw[g]);
	}
	free(s);
	return rc;
}

/* A connection to a gateway's database, SQLite or PostgreSQL. */
static struct store *
db_open(struct gwproc *gp, int flags)
{
	struct store	*db;

	assert_non_null(db = gwproc_store(gp, flags));
	store_busy_timeout(db, WAIT_MS);
	return db;
}

/* Run SQL on a gateway's database from the test. */
static void
db_exec(struct gwproc *gp, const char *sql)
{
	struct store	*db = db_open(gp, 0);

	if (store_exec(db, sql) != STORE_OK)
		fail_msg("%s: %s", sql, store_errmsg(db));
	store_close(db);
}

/*
 * The state an import must leave as the PUTs do, as text: every row of
 * these queries, times left out.
 */
#define DUMP_NQ	10
static char *
db_dump(struct gwproc *gp)
{
	static const char *const sqlite[DUMP_NQ] = {
		"SELECT obj_id, slug, type, tb, dur, rev, air, status,"
		" abstract, description, obj_group, created_by, changed_by,"
		" deleted FROM assets ORDER BY obj_id",
		"SELECT * FROM asset_paths ORDER BY obj_id, seq",
		"SELECT * FROM asset_meta ORDER BY obj_id, seq",
		"SELECT * FROM asset_key ORDER BY id",
		"SELECT rowid, slug, abstract, description, meta FROM asset_fts"
		" ORDER BY rowid",
		"SELECT id, lane, kind, CAST(payload AS TEXT), state, blocked,"
		" priority, attempts, max_attempts, idem_key, coalesce_key,"
		" after_job, last_error FROM jobs ORDER BY id",
		"SELECT id, job_id, from_state, to_state, attempt, worker, note"
		" FROM job_events ORDER BY id",
		"SELECT type, data, hook FROM events WHERE type NOT LIKE"
		" 'link.%' ORDER BY id",
		"SELECT name, value FROM queue_counters ORDER BY name",
		"SELECT count(*) FROM asset_fts WHERE asset_fts MATCH 'quick'",
	};
	/* the same rows on PostgreSQL (its search index, its bytea) */
	static const char *const pg[DUMP_NQ] = {
		[4] = "SELECT id, slug, abstract, description, meta"
		" FROM asset_fts ORDER BY id",
		[5] = "SELECT id, lane, kind, convert_from(payload, 'UTF8'),"
		" state, blocked, priority, attempts, max_attempts, idem_key,"
		" coalesce_key, after_job, last_error FROM jobs ORDER BY id",
		[9] = "SELECT count(*) FROM asset_fts,"
		" mosgw_tsquery('quick') q WHERE tsv @@ q",
	};
	struct store		*db = db_open(gp, STORE_OPEN_READONLY);
	struct store_stmt	*st;
	char		*out = NULL, *next;
	const char	*v, *q;
	size_t		 i;
	int		 c;

	for (i = 0; i < DUMP_NQ; i++) {
		q = gp->driver == STORE_POSTGRESQL && pg[i] != NULL ? pg[i] :
		    sqlite[i];
		if (store_prepare(db, q, 0, &st) != STORE_OK)
			fail_msg("%s: %s", q, store_errmsg(db));
		while (store_step(st) == STORE_ROW) {
			for (c = 0; c < store_column_count(st); c++) {
				v = store_column_text(st, c);
				assert_true(asprintf(&next, "%s%s|", out !=
				    NULL ? out : "", v != NULL ? v :
				    "NULL") > 0);
				free(out);
				out = next;
			}
			assert_true(asprintf(&next, "%s\n", out) > 0);
			free(out);
			out = next;
		}
		store_finalize(st);
		assert_true(asprintf(&next, "%s--\n", out != NULL ? out : "") >
		    0);
		free(out);
		out = next;
	}
	store_close(db);
	return out;
}

/* The objID of line i (from 0): two lines name an asset already named. */
static void
line_id(int i, char *id, size_t len)
{
	if (i == 9)
		i = 4;		/* again in the same transaction */
	else if (i == NLINES - 5)
		i = 3;		/* again in a later one */
	snprintf(id, len, "CMP-%04d", i);
}

/* The fields of line i: paths, metadata, markup, both objAir values. */
static json_t *
line_body(int i)
{
	json_t	*o;
	char	 slug[64], url[64], desc[96];

	snprintf(slug, sizeof slug, "Clip %d%s", i, i % 7 == 0 ?
	    " quick brown" : "");
	snprintf(desc, sizeof desc, "<p>Clip &amp; cut %d</p>", i);
	o = json_pack("{s:s, s:i, s:i, s:s}", "objSlug", slug, "objDur",
	    1000 + i, "objTB", 50, "description", desc);
	if (i % 3 == 0) {
		snprintf(url, sizeof url, "http://media/%d.mxf", i);
		json_object_set_new(o, "objPaths", json_pack("{s:[{s:s,s:s}],"
		    " s:[{s:s,s:s}]}", "objPath", "@techDescription", "MXF",
		    "#text", url, "objProxyPath", "@techDescription", "H.264",
		    "#text", "https://proxy/p.mp4"));
	}
	if (i % 5 == 0)
		json_object_set_new(o, "mosExternalMetadata", json_pack(
		    "[{s:s, s:s, s:s}]", "mosScope", "PLAYLIST", "mosSchema",
		    "http://mam/s.xsd", "mosPayload",
		    "<asset><kw>quick</kw></asset>"));
	if (i % 11 == 0)
		json_object_set_new(o, "objAir", json_string("NOT READY"));
	return o;
}

/* One request on a kept-alive connection; its status and body. */
static int
request(int fd, const char *method, const char *path, const char *body,
    char **out)
{
	struct httpc_resp	r;
	int			st;

	memset(&r, 0, sizeof r);
	if (httpc_do(fd, method, path, TOK, NULL, body, &r) != 0)
		fail_msg("%s %s: no answer", method, path);
	st = r.status;
	if (out != NULL)
		*out = strdup(r.body != NULL ? r.body : "");
	httpc_resp_clear(&r);
	return st;
}

/* POST an NDJSON body; the answer's JSON (asserted 200). */
static json_t *
import(struct gwproc *gp, const char *ndjson)
{
	struct httpc_resp	 r;
	json_t			*o;

	memset(&r, 0, sizeof r);
	if (httpc_import(gp->api_port, TOK, ndjson, WAIT_MS, &r) != 0 ||
	    r.status != 200)
		fail_msg("import: %d %s", r.status, r.body != NULL ? r.body :
		    "");
	assert_non_null(o = json_loads(r.body, 0, NULL));
	httpc_resp_clear(&r);
	return o;
}

/* The same state after an import as after the same PUTs one by one. */
static void
test_import_as_puts(void **state)
{
	struct imp	*s = *state;
	json_t		*body, *res;
	char		*nd = NULL, *next, *line, *a, *b, id[32], path[64];
	int		 g, i, fd;

	/* before: an asset to update, a running order holding another */
	for (g = 0; g < 2; g++) {
		assert_true((fd = httpc_connect(s->gw[g]->api_port)) != -1);
		assert_int_equal(request(fd, "PUT", "/v1/assets/CMP-0001",
		    "{\"objSlug\":\"Before\",\"objDur\":5}", NULL), 202);
		close(fd);
		db_exec(s->gw[g], "INSERT INTO ro(id, ncs, ro_id, head,"
		    " created, changed) VALUES(1, 'n2', 'RO1', '', 0, 0);"
		    "INSERT INTO ro_story(ro, story_id, pos, head)"
		    " VALUES(1, 'S1', 0, '');"
		    "INSERT INTO ro_item(ro, story_id, item_id, pos, obj_id,"
		    " xml) VALUES(1, 'S1', 'I1', 0, 'CMP-0007',"
		    " '<item><itemID>I1</itemID><objID>CMP-0007</objID>"
		    "</item>');");
	}
	/* gateway 0: one import; gateway 1: the same bodies PUT in order */
	assert_true((fd = httpc_connect(s->gw[1]->api_port)) != -1);
	for (i = 0; i < NLINES; i++) {
		line_id(i, id, sizeof id);
		body = line_body(i);
		assert_non_null(line = json_dumps(body, JSON_COMPACT));
		snprintf(path, sizeof path, "/v1/assets/%s", id);
		if (request(fd, "PUT", path, line, &a) != 202)
			fail_msg("PUT %s: %s", id, a);
		free(a);
		free(line);
		json_object_set_new(body, "objID", json_string(id));
		assert_non_null(line = json_dumps(body, JSON_COMPACT));
		assert_true(asprintf(&next, "%s%s\n", nd != NULL ? nd : "",
		    line) > 0);
		free(nd);
		nd = next;
		free(line);
		json_decref(body);
	}
	close(fd);
	res = import(s->gw[0], nd);
	free(nd);
	assert_int_equal(json_integer_value(json_object_get(res, "accepted")),
	    NLINES);
	assert_int_equal(json_array_size(json_object_get(res, "refused")), 0);
	json_decref(res);
	/* in batches: none of them was stored one asset at a time */
	assert_true(gwproc_log_wait(s->gw[0], 0, WAIT_MS, "event=api.import",
	    "accepted=420", "one_by_one=0", (char *)NULL) >= 0);

	a = db_dump(s->gw[0]);
	b = db_dump(s->gw[1]);
	if (strcmp(a, b) != 0) {
		for (i = 0; a[i] == b[i]; i++)
			;
		while (i > 0 && a[i - 1] != '\n')
			i--;
		fail_msg("import and PUTs differ from:\n%.300s\n---\n%.300s",
		    a + i, b + i);
	}
	/* what the comparison covers is there */
	assert_non_null(strstr(a, "CMP-0001|Clip 1|"));
	assert_non_null(strstr(a, "|coalesced into #"));
	assert_non_null(strstr(a, "|rostat:n2|rostat|CMP-0007|"));
	assert_non_null(strstr(a, "\"objID\":\"CMP-0007\""));
	assert_non_null(strstr(a, "<asset><kw>quick</kw></asset>"));
	free(a);
	free(b);
}

/*
 * A line the database refuses (here a trigger; the codec's checks pass)
 * is refused alone: the transaction of its chunk is stored again one
 * asset at a time.
 */
static void
test_import_refused_by_db(void **state)
{
	struct imp	*s = *state;
	json_t		*res, *ref;
	char		*nd = NULL, *next, *out;
	int		 i, fd;

	if (s->gw[0]->driver == STORE_POSTGRESQL)
		db_exec(s->gw[0], "CREATE FUNCTION no_bad() RETURNS trigger"
		    " LANGUAGE plpgsql AS $f$ BEGIN"
		    " RAISE EXCEPTION 'BAD-7 is not welcome'"
		    " USING ERRCODE = 'check_violation'; END $f$;"
		    "CREATE TRIGGER no_bad BEFORE INSERT ON assets"
		    " FOR EACH ROW WHEN (NEW.obj_id = 'BAD-7')"
		    " EXECUTE FUNCTION no_bad();");
	else
		db_exec(s->gw[0], "CREATE TRIGGER no_bad BEFORE INSERT ON"
		    " assets WHEN NEW.obj_id = 'BAD-7' BEGIN"
		    " SELECT RAISE(ABORT, 'BAD-7 is not welcome'); END;");
	for (i = 0; i < 30; i++) {
		assert_true(asprintf(&next, "%s{\"objID\":\"%s-%d\","
		    "\"objSlug\":\"x\"}\n", nd != NULL ? nd : "", i == 7 ?
		    "BAD" : "OK", i) > 0);
		free(nd);
		nd = next;
	}
	res = import(s->gw[0], nd);
	free(nd);
	assert_int_equal(json_integer_value(json_object_get(res, "accepted")),
	    29);
	ref = json_object_get(res, "refused");
	assert_int_equal(json_array_size(ref), 1);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(ref,
	    0), "line")), 8);
	assert_non_null(strstr(json_string_value(json_object_get(
	    json_array_get(ref, 0), "detail")), "BAD-7 is not welcome"));
	json_decref(res);
	assert_true(gwproc_log_wait(s->gw[0], 0, WAIT_MS, "event=api.import",
	    "accepted=29", "refused=1", "one_by_one=1", (char *)NULL) >= 0);
	assert_true((fd = httpc_connect(s->gw[0]->api_port)) != -1);
	assert_int_equal(request(fd, "GET", "/v1/assets/OK-29", NULL, NULL),
	    200);
	assert_int_equal(request(fd, "GET", "/v1/assets/OK-6", NULL, NULL),
	    200);
	assert_int_equal(request(fd, "GET", "/v1/assets/BAD-7", NULL, &out),
	    404);
	free(out);
	close(fd);
	out = db_dump(s->gw[0]);
	assert_null(strstr(out, "BAD-7"));
	free(out);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_import_as_puts, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_import_refused_by_db,
		    setup_one, teardown),
	};

	return cmocka_run_group_tests_name("gateway_it_import", tests, NULL,
	    NULL);
}
