/*
 * The catalog: put/delete and the delivery jobs in one transaction (a failed
 * enqueue leaves the catalog unchanged), revisions and their wrap,
 * tombstones, validation, and the mosObj built from a row.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/gateway.h"
#include "gateway/tests/gwunit.h"

#define TWO_NCS \
	"[gateway]\nmos_id = gw\n" \
	"[ncs.a]\nncs_id = A\nhost = 127.0.0.1\nmax_attempts = 3\n" \
	"[ncs.b]\nncs_id = B\nhost = 127.0.0.1\n" \
	"[ncs.quiet]\nncs_id = Q\nhost = 127.0.0.1\npublish = false\n"

static int
setup(void **state)
{
	struct gwunit	*u;

	if ((u = gwunit_new()) == NULL || gwunit_sync_ncs(u, TWO_NCS) != 0) {
		gwunit_free(u);
		return -1;
	}
	*state = u;
	return 0;
}

static int
teardown(void **state)
{
	gwunit_free(*state);
	return 0;
}

/* A valid asset with every optional part. */
static void
make_asset(struct catalog_asset *a, const char *id, const char *slug)
{
	memset(a, 0, sizeof *a);
	a->obj_id = xstrdup(id);
	a->slug = xstrdup(slug);
	a->type = xstrdup("VIDEO");
	a->tb = xstrdup("59.94");
	a->dur = 1798;
	a->air = xstrdup("READY");
	a->description = xstrdup("<p>Fish &amp; chips</p>");
	a->abstract = xstrdup("An <b>abstract</b>");
	a->group = xstrdup("News");
	a->changed_by = xstrdup("editor");
	catalog_add_path(a,
	    CATALOG_PATH, "MPEG2 Video", "\\\\srv\\media\\clip.mxf");
	catalog_add_path(a,
	    CATALOG_PROXY, "WM9 750Kbps", "http://srv/proxy/clip.wmv");
	catalog_add_path(a,
	    CATALOG_METADATA, "MOS Object", "http://srv/clip.xml");
	catalog_add_meta(a, "OBJECT", "http://schema.example/1", "<a "
	    "b=\"1\">x</a>");
}

/* Jobs of a lane in a state. */
static size_t
count_jobs(struct gwunit *u, const char *lane, int state)
{
	struct queue_filter	 f;
	struct queue_job	*jobs;
	size_t			 n = 0;

	memset(&f, 0, sizeof f);
	f.state = state;
	f.lane = lane;
	f.limit = 1000;
	assert_int_equal(queue_list(u->db->q, &f, &jobs, &n), QUEUE_OK);
	queue_jobs_free(jobs, n);
	return n;
}

/* put: row, revision 1, status NEW, one job per NCS with publish on. */
static void
test_put_enqueues(void **state)
{
	struct gwunit		*u = *state;
	struct catalog_asset	 a, got;
	struct queue_job	*jobs;
	struct queue_filter	 f;
	char			*err = NULL;
	int			 rev = 0, njobs = 0;
	size_t			 n;

	make_asset(&a, "CLIP-1", "First");
	assert_int_equal(catalog_put(u->db, &a, &rev, &njobs, &err), QUEUE_OK);
	assert_int_equal(rev, 1);
	assert_int_equal(njobs, 2);
	assert_int_equal(count_jobs(u, "ncs:a", QUEUE_QUEUED), 1);
	assert_int_equal(count_jobs(u, "ncs:b", QUEUE_QUEUED), 1);
	assert_int_equal(count_jobs(u, "ncs:quiet", -1), 0);
	memset(&f, 0, sizeof f);
	f.state = -1;
	f.lane = "ncs:a";
	assert_int_equal(queue_list(u->db->q, &f, &jobs, &n), QUEUE_OK);
	assert_int_equal(n, 1);
	assert_string_equal(jobs[0].kind, "publish");
	assert_int_equal(jobs[0].payload_len, 6);
	assert_memory_equal(jobs[0].payload, "CLIP-1", 6);
	assert_string_equal(jobs[0].coalesce_key, "obj:CLIP-1@a");
	assert_int_equal(jobs[0].max_attempts, 3);
	queue_jobs_free(jobs, n);

	assert_int_equal(catalog_get(u->db, "CLIP-1", &got), QUEUE_OK);
	assert_string_equal(got.slug, "First");
	assert_string_equal(got.tb, "59.94");
	assert_int_equal(got.dur, 1798);
	assert_string_equal(got.status, "NEW");
	assert_string_equal(got.created_by, "editor");
	assert_int_equal(got.created_ms, u->now_ms);
	assert_int_equal(got.npaths, 3);
	assert_int_equal(got.paths[1].kind, CATALOG_PROXY);
	assert_string_equal(got.paths[0].url, "\\\\srv\\media\\clip.mxf");
	assert_int_equal(got.nmeta, 1);
	assert_string_equal(got.meta[0].payload, "<a b=\"1\">x</a>");
	assert_false(got.deleted);
	catalog_asset_clear(&got);
	catalog_asset_clear(&a);
	assert_int_equal(catalog_get(u->db, "CLIP-2", &got), QUEUE_ENOTFOUND);
}

/* A second put: revision 2, UPDATED, created kept, the queued job coalesced. */
static void
test_update_and_coalesce(void **state)
{
	struct gwunit		*u = *state;
	struct catalog_asset	 a, got;
	char			*err = NULL;
	int			 rev = 0;

	make_asset(&a, "CLIP-1", "First");
	assert_int_equal(catalog_put(u->db, &a, &rev, NULL, &err), QUEUE_OK);
	u->now_ms += 5000;
	free(a.slug);
	a.slug = xstrdup("First, again");
	free(a.changed_by);
	a.changed_by = xstrdup("other");
	assert_int_equal(catalog_put(u->db, &a, &rev, NULL, &err), QUEUE_OK);
	assert_int_equal(rev, 2);
	assert_int_equal(count_jobs(u, "ncs:a", QUEUE_QUEUED), 1);
	assert_int_equal(count_jobs(u, "ncs:a", QUEUE_CANCELLED), 1);
	assert_int_equal(catalog_get(u->db, "CLIP-1", &got), QUEUE_OK);
	assert_string_equal(got.status, "UPDATED");
	assert_string_equal(got.slug, "First, again");
	assert_string_equal(got.created_by, "editor");
	assert_string_equal(got.changed_by, "other");
	assert_int_equal(got.changed_ms - got.created_ms, 5000);
	catalog_asset_clear(&got);
	catalog_asset_clear(&a);
}

/* Delete: tombstone with a new revision; again: not found; put: NEW again. */
static void
test_delete_tombstone(void **state)
{
	struct gwunit		*u = *state;
	struct catalog_asset	 a, got;
	char			*err = NULL;
	int			 rev = 0, njobs = 0;

	make_asset(&a, "CLIP-9", "Nine");
	assert_int_equal(catalog_put(u->db, &a, &rev, NULL, &err), QUEUE_OK);
	assert_int_equal(catalog_delete(u->db, "CLIP-9", "remover", &rev,
	    &njobs, &err), QUEUE_OK);
	assert_int_equal(rev, 2);
	assert_int_equal(njobs, 2);
	assert_int_equal(catalog_get(u->db, "CLIP-9", &got), QUEUE_OK);
	assert_true(got.deleted);
	assert_string_equal(got.status, "DELETED");
	assert_string_equal(got.changed_by, "remover");
	catalog_asset_clear(&got);
	assert_int_equal(catalog_delete(u->db, "CLIP-9", "remover", &rev, NULL,
	    &err), QUEUE_ENOTFOUND);
	assert_non_null(strstr(err, "already deleted"));
	free(err);
	err = NULL;
	assert_int_equal(catalog_delete(u->db, "NEVER", "x", NULL, NULL, &err),
	    QUEUE_ENOTFOUND);
	free(err);
	err = NULL;
	u->now_ms += 1000;
	assert_int_equal(catalog_put(u->db, &a, &rev, NULL, &err), QUEUE_OK);
	assert_int_equal(rev, 3);
	assert_int_equal(catalog_get(u->db, "CLIP-9", &got), QUEUE_OK);
	assert_false(got.deleted);
	assert_string_equal(got.status, "NEW");
	assert_int_equal(got.created_ms, u->now_ms);
	catalog_asset_clear(&got);
	catalog_asset_clear(&a);
}

/* objRev 999 is followed by 1. */
static void
test_rev_wraps(void **state)
{
	struct gwunit		*u = *state;
	struct catalog_asset	 a;
	char			*err = NULL;
	int			 rev = 0;

	make_asset(&a, "W", "Wrap");
	assert_int_equal(catalog_put(u->db, &a, &rev, NULL, &err), QUEUE_OK);
	assert_int_equal(gwunit_exec(u, "UPDATE assets SET rev = 998"),
	    STORE_OK);
	assert_int_equal(catalog_put(u->db, &a, &rev, NULL, &err), QUEUE_OK);
	assert_int_equal(rev, 999);
	assert_int_equal(catalog_put(u->db, &a, &rev, NULL, &err), QUEUE_OK);
	assert_int_equal(rev, 1);
	assert_int_equal(catalog_delete(u->db, "W", "x", &rev, NULL, &err),
	    QUEUE_OK);
	assert_int_equal(rev, 2);
	catalog_asset_clear(&a);
}

/* Make every insert into the queue's job table fail. */
static void
break_enqueue(struct gwunit *u)
{
	struct store_stmt	*st;
	char		 sql[512];
	const char	*name;
	int		 found = 0;

	if (gwunit_pg(u)) {
		assert_int_equal(gwunit_exec(u, "CREATE FUNCTION no_jobs()"
		    " RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE"
		    " EXCEPTION 'enqueue refused by the test'; END $$;"
		    "CREATE TRIGGER no_jobs BEFORE INSERT ON jobs"
		    " FOR EACH ROW EXECUTE FUNCTION no_jobs()"), STORE_OK);
		return;
	}
	assert_int_equal(store_prepare(u->db->db, "SELECT name FROM "
	    "sqlite_master WHERE type = 'table' AND sql LIKE '%coalesce_key%'",
	    0, &st), STORE_OK);
	while (store_step(st) == STORE_ROW) {
		name = store_column_text(st, 0);
		snprintf(sql, sizeof sql, "CREATE TEMP TRIGGER no_jobs_%d "
		    "BEFORE "
		    "INSERT ON main.\"%s\" BEGIN SELECT RAISE(ABORT, 'enqueue "
		    "refused by the test'); END", found, name);
		assert_int_equal(gwunit_exec(u, sql), STORE_OK);
		found++;
	}
	store_finalize(st);
	assert_true(found > 0);
}

/* A failing enqueue rolls the catalog change back: one transaction. */
static void
test_failed_enqueue_rolls_back(void **state)
{
	struct gwunit		*u = *state;
	struct catalog_asset	 a, got;
	char			*err = NULL;
	int			 rev = 0;

	make_asset(&a, "KEEP", "Original");
	assert_int_equal(catalog_put(u->db, &a, &rev, NULL, &err), QUEUE_OK);
	break_enqueue(u);

	free(a.slug);
	a.slug = xstrdup("Changed");
	assert_int_not_equal(catalog_put(u->db, &a, &rev, NULL, &err),
	    QUEUE_OK);
	assert_non_null(err);
	assert_non_null(strstr(err, "enqueue"));
	free(err);
	err = NULL;
	assert_int_equal(catalog_get(u->db, "KEEP", &got), QUEUE_OK);
	assert_string_equal(got.slug, "Original");
	assert_int_equal(got.rev, 1);
	catalog_asset_clear(&got);

	assert_int_not_equal(catalog_delete(u->db, "KEEP", "x", NULL, NULL,
	    &err), QUEUE_OK);
	free(err);
	err = NULL;
	assert_int_equal(catalog_get(u->db, "KEEP", &got), QUEUE_OK);
	assert_false(got.deleted);
	catalog_asset_clear(&got);

	catalog_asset_clear(&a);
	make_asset(&a, "NEWONE", "New");
	assert_int_not_equal(catalog_put(u->db, &a, &rev, NULL, &err),
	    QUEUE_OK);
	free(err);
	assert_int_equal(catalog_get(u->db, "NEWONE", &got), QUEUE_ENOTFOUND);
	assert_int_equal(gwunit_int(u, "SELECT count(*) FROM asset_paths WHERE "
	    "obj_id = 'NEWONE'"), 0);
	catalog_asset_clear(&a);
}

/* Put a copy of a with one field changed; expect EINVAL mentioning what. */
static void
expect_invalid(struct gwunit *u, struct catalog_asset *a, char **field,
    const char *value, const char *complaint)
{
	char	*saved = *field, *err = NULL;

	*field = value != NULL ? xstrdup(value) : NULL;
	assert_int_equal(catalog_put(u->db, a, NULL, NULL, &err), QUEUE_EINVAL);
	assert_non_null(err);
	if (strstr(err, complaint) == NULL)
		fail_msg("expected \"%s\" in \"%s\"", complaint, err);
	free(err);
	free(*field);
	*field = saved;
}

/* Bad values are refused with a clear message, before any write. */
static void
test_validation(void **state)
{
	struct gwunit		*u = *state;
	struct catalog_asset	 a;
	char			*err = NULL;

	make_asset(&a, "V", "Valid");
	expect_invalid(u, &a, &a.type, "MOVIE", "type must be");
	expect_invalid(u, &a, &a.tb, "0", "objTB");
	expect_invalid(u, &a, &a.tb, "fast", "objTB");
	expect_invalid(u, &a, &a.air, "MAYBE", "air must be");
	expect_invalid(u, &a, &a.slug, "", "slug must be");
	expect_invalid(u, &a, &a.obj_id, "tab\there", "objID must be");
	expect_invalid(u, &a,
	    &a.description, "fish & chips", "well-formed XML");
	expect_invalid(u, &a, &a.abstract, "<b>unclosed", "well-formed XML");
	expect_invalid(u, &a, &a.meta[0].payload, "<x>", "well-formed XML");
	/* fragments that would close their element and add an objID */
	expect_invalid(u, &a, &a.abstract,
	    "</mosAbstract><objID>EVIL2</objID><mosAbstract>",
	    "mosAbstract: closes its element at offset 0");
	expect_invalid(u, &a, &a.description,
	    "x</description><objID>EVIL2</objID><description>",
	    "description: closes its element at offset 1");
	expect_invalid(u, &a, &a.meta[0].payload, "</mosPayload>"
	    "</mosExternalMetadata><objID>EVIL2</objID><mosExternalMetadata>"
	    "<mosPayload>", "metadata 1: mosPayload: closes its element");
	expect_invalid(u, &a, &a.description, "<p><b>bold</b></p>",
	    "description: <b> is not allowed");
	expect_invalid(u, &a, &a.paths[0].tech, "", "techDescription");
	expect_invalid(u, &a, &a.paths[1].url, "ftp://srv/proxy.wmv", "FTP");
	a.dur = -1;
	assert_int_equal(catalog_put(u->db, &a, NULL, NULL, &err),
	    QUEUE_EINVAL);
	free(err);
	assert_int_equal(gwunit_int(u, "SELECT count(*) FROM assets"), 0);
	catalog_asset_clear(&a);
}

/* Listing pages through the catalog in objID order; tombstones on request. */
static void
test_list(void **state)
{
	struct gwunit		*u = *state;
	struct catalog_asset	 a, page[4];
	char			 id[16], *err = NULL;
	size_t			 n, i;
	int			 k;

	for (k = 9; k >= 0; k--) {
		snprintf(id, sizeof id, "L%02d", k);
		make_asset(&a, id, "listed");
		assert_int_equal(catalog_put(u->db, &a, NULL, NULL, &err),
		    QUEUE_OK);
		catalog_asset_clear(&a);
	}
	assert_int_equal(catalog_delete(u->db, "L03", "x", NULL, NULL, &err),
	    QUEUE_OK);
	assert_int_equal(catalog_list(u->db, NULL, false, page, 4, &n),
	    QUEUE_OK);
	assert_int_equal(n, 4);
	assert_string_equal(page[0].obj_id, "L00");
	assert_string_equal(page[3].obj_id, "L04");
	assert_int_equal(page[1].npaths, 3);
	for (i = 0; i < n; i++)
		catalog_asset_clear(&page[i]);
	assert_int_equal(catalog_list(u->db, "L08", false, page, 4, &n),
	    QUEUE_OK);
	assert_int_equal(n, 1);
	assert_string_equal(page[0].obj_id, "L09");
	catalog_asset_clear(&page[0]);
	assert_int_equal(catalog_list(u->db, "L02", true, page, 1, &n),
	    QUEUE_OK);
	assert_int_equal(n, 1);
	assert_string_equal(page[0].obj_id, "L03");
	assert_true(page[0].deleted);
	catalog_asset_clear(&page[0]);
}

/* The mosObj from a row: every field, written and parsed back. */
static void
test_mos_obj_from_row(void **state)
{
	struct gwunit		*u = *state;
	struct catalog_asset	 a, got;
	struct mos_msg		*m, *back = NULL;
	struct mos_buf		 buf = { NULL, 0, 0 };
	struct mos_error	 perr;
	const struct mos_obj	*o;
	char			 werr[256], *err = NULL, tb[16];

	make_asset(&a, "OBJ;1\\x", "Clip & more");
	assert_int_equal(catalog_put(u->db, &a, NULL, NULL, &err), QUEUE_OK);
	assert_int_equal(catalog_get(u->db, "OBJ;1\\x", &got), QUEUE_OK);
	assert_non_null(m = catalog_mos_obj(&got, "UPDATED", NULL));
	m->mos_id = "gw";
	m->ncs_id = "A";
	m->has_message_id = true;
	m->message_id = 77;
	assert_int_equal(mos_write(m, MOS_ENC_UTF16BE, &buf, werr,
	    sizeof werr), 0);
	assert_int_equal(mos_parse(buf.data, buf.len, MOS_ENC_UTF16BE,
	    MOS_STRICT, &back, &perr), MOS_OK);
	assert_int_equal(back->type, MOS_T_MOS_OBJ);
	assert_int_equal(back->message_id, 77);
	o = &back->u.mos_obj;
	assert_string_equal(o->obj_id, "OBJ;1\\x");
	assert_string_equal(o->obj_slug, "Clip & more");
	assert_string_equal(o->obj_type, "VIDEO");
	mos_dec_format(&o->obj_tb, tb, sizeof tb);
	assert_string_equal(tb, "59.94");
	assert_int_equal(o->obj_rev, 1);
	assert_int_equal(o->obj_dur, 1798);
	assert_string_equal(o->status, "UPDATED");
	assert_string_equal(o->obj_air, "READY");
	assert_string_equal(o->obj_group, "News");
	assert_string_equal(o->created_by, "editor");
	assert_int_equal(mos_time_utc_ms(&o->created), u->now_ms);
	assert_non_null(o->obj_paths);
	assert_int_equal(o->obj_paths->obj_path.n, 1);
	assert_string_equal(o->obj_paths->obj_path.v[0].tech_description,
	    "MPEG2 Video");
	assert_string_equal(o->obj_paths->obj_proxy_path.v[0].url,
	    "http://srv/proxy/clip.wmv");
	assert_int_equal(o->obj_paths->obj_metadata_path.n, 1);
	assert_int_equal(o->ext_meta.n, 1);
	assert_string_equal(o->ext_meta.v[0].mos_schema,
	    "http://schema.example/1");
	assert_non_null(strstr(o->ext_meta.v[0].mos_payload, "<a "
	    "b=\"1\">x</a>"));
	assert_non_null(strstr(o->description, "Fish &amp; chips"));
	mos_msg_free(back);
	mos_buf_free(&buf);
	mos_msg_free(m);
	catalog_asset_clear(&got);
	catalog_asset_clear(&a);
}

/* NEW the first time an NCS gets an object, UPDATED after, DELETED, skip. */
static void
test_delivery_status(void **state)
{
	struct gwunit		*u = *state;
	struct catalog_asset	 a;
	char			 last[16];

	memset(&a, 0, sizeof a);
	assert_string_equal(catalog_delivery_status(&a, NULL), "NEW");
	assert_string_equal(catalog_delivery_status(&a, ""), "NEW");
	assert_string_equal(catalog_delivery_status(&a, "NEW"), "UPDATED");
	assert_string_equal(catalog_delivery_status(&a, "UPDATED"), "UPDATED");
	assert_string_equal(catalog_delivery_status(&a, "DELETED"), "NEW");
	/* sent, ACK not recorded: maybe known, so NEW again */
	assert_string_equal(catalog_delivery_status(&a, CATALOG_SENDING), "NEW");
	a.deleted = true;
	assert_null(catalog_delivery_status(&a, NULL));
	assert_null(catalog_delivery_status(&a, "DELETED"));
	assert_string_equal(catalog_delivery_status(&a, "UPDATED"), "DELETED");
	/* the NCS may have it: a deletion is never skipped then */
	assert_string_equal(catalog_delivery_status(&a, CATALOG_SENDING),
	    "DELETED");

	assert_int_equal(catalog_delivery_get(u->db, "a", "X", last,
	    sizeof last), QUEUE_OK);
	assert_string_equal(last, "");
	assert_int_equal(catalog_delivery_put(u->db, "a", "X", 4, "NEW"),
	    QUEUE_OK);
	assert_int_equal(catalog_delivery_put(u->db, "a", "X", 5, "UPDATED"),
	    QUEUE_OK);
	assert_int_equal(catalog_delivery_get(u->db, "a", "X", last,
	    sizeof last), QUEUE_OK);
	assert_string_equal(last, "UPDATED");
	assert_int_equal(catalog_delivery_get(u->db, "b", "X", last,
	    sizeof last), QUEUE_OK);
	assert_string_equal(last, "");
}

/* The NCS list follows the configuration: removed sections are disabled. */
static void
test_ncs_sync(void **state)
{
	struct gwunit		*u = *state;
	struct catalog_asset	 a;
	char			*err = NULL;
	int			 njobs = 0;

	assert_int_equal(gwunit_int(u, "SELECT count(*) FROM ncs WHERE "
	    "enabled = 1"), 3);
	assert_int_equal(gwunit_sync_ncs(u, "[gateway]\nmos_id = gw\n"
	    "[ncs.b]\nncs_id = B2\nhost = h\n"), 0);
	assert_int_equal(gwunit_int(u, "SELECT count(*) FROM ncs WHERE "
	    "enabled = 1"), 1);
	assert_int_equal(gwunit_int(u, "SELECT count(*) FROM ncs"), 3);
	make_asset(&a, "S", "Synced");
	assert_int_equal(catalog_put(u->db, &a, NULL, &njobs, &err), QUEUE_OK);
	assert_int_equal(njobs, 1);
	assert_int_equal(count_jobs(u, "ncs:b", QUEUE_QUEUED), 1);
	assert_int_equal(count_jobs(u, "ncs:a", -1), 0);
	catalog_asset_clear(&a);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_put_enqueues, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_update_and_coalesce, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_delete_tombstone, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_rev_wraps, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_failed_enqueue_rolls_back,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_validation, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_list, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mos_obj_from_row, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_delivery_status, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_ncs_sync, setup, teardown),
	};

	mos_init();
	return cmocka_run_group_tests_name("gateway_catalog", tests, NULL,
	    NULL);
}
