/*
 * Search over the catalog: the FTS5 index follows every put and delete in
 * the same transaction, the migration indexes an older database, bm25
 * ranking (slug over description), paging past the end, empty results,
 * field searches (groups ORed, fields ANDed), sorting, the readable errors,
 * and a 100,000-asset catalog (20,000 on PostgreSQL).
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

#define PAGE	100

/* Put one asset (no NCS configured: no jobs). */
static void
put(struct gwunit *u, const char *id, const char *slug, const char *desc,
    const char *payload, int64_t dur)
{
	struct catalog_asset	a;
	char			*err = NULL;

	memset(&a, 0, sizeof a);
	a.obj_id = xstrdup(id);
	a.slug = xstrdup(slug);
	a.type = xstrdup("VIDEO");
	a.tb = xstrdup("50");
	a.dur = dur;
	a.air = xstrdup("READY");
	a.description = xstrdup(desc);
	a.changed_by = xstrdup("editor");
	if (payload != NULL)
		catalog_add_meta(&a, "OBJECT", "urn:test", payload);
	if (catalog_put(u->db, &a, NULL, NULL, &err) != QUEUE_OK)
		fail_msg("put %s: %s", id, err);
	catalog_asset_clear(&a);
}

/* Run a search; the objIDs found, space separated, into buf. */
static int64_t
find(struct gwunit *u, struct search_query *q, size_t max, char *buf,
    size_t len)
{
	struct catalog_asset	a[PAGE];
	char			*err = NULL;
	int64_t			 total = -1;
	size_t			 n, i;

	assert_true(max <= PAGE);
	if (search_run(u->db, q, a, max, &n, &total, &err) != QUEUE_OK)
		fail_msg("search: %s", err);
	buf[0] = '\0';
	for (i = 0; i < n; i++) {
		snprintf(buf + strlen(buf), len - strlen(buf), "%s%s",
		    i > 0 ? " " : "", a[i].obj_id);
		catalog_asset_clear(&a[i]);
	}
	return total;
}

/* A general search of text: its page as text, its total. */
static int64_t
find_text(struct gwunit *u, const char *text, int64_t offset, size_t max,
    char *buf, size_t len)
{
	struct search_query	q;
	int64_t			total;

	memset(&q, 0, sizeof q);
	q.text = text;
	q.offset = offset;
	total = find(u, &q, max, buf, len);
	search_query_clear(&q);
	return total;
}

/* Index follows put, update and delete; markup and entities are text. */
static void
test_index_follows(void **state)
{
	struct gwunit	*u = *state;
	char		 buf[256];
	char		*err = NULL;

	put(u, "A", "Harbour fire", "<p>Smoke over the <em>docks</em></p>",
	    NULL, 10);
	put(u, "B", "Council vote", "Fish &amp; chips", "<k>weather</k>", 20);
	assert_int_equal(find_text(u, "docks", 0, 10, buf, sizeof buf), 1);
	assert_string_equal(buf, "A");
	assert_int_equal(find_text(u, "chips", 0, 10, buf, sizeof buf), 1);
	assert_string_equal(buf, "B");
	/* The metadata payload's text, not its tags. */
	assert_int_equal(find_text(u, "weather", 0, 10, buf, sizeof buf), 1);
	assert_int_equal(find_text(u, "k", 0, 10, buf, sizeof buf), 0);
	assert_int_equal(find_text(u, "em", 0, 10, buf, sizeof buf), 0);
	/* An update replaces the old words. */
	put(u, "A", "Harbour blaze", "Nothing", NULL, 10);
	assert_int_equal(find_text(u, "docks", 0, 10, buf, sizeof buf), 0);
	assert_int_equal(find_text(u, "blaze", 0, 10, buf, sizeof buf), 1);
	/* A delete takes it out; a put again brings it back. */
	assert_int_equal(catalog_delete(u->db, "A", "editor", NULL, NULL,
	    &err), QUEUE_OK);
	assert_int_equal(find_text(u, "harbour", 0, 10, buf, sizeof buf), 0);
	put(u, "A", "Harbour again", "x", NULL, 10);
	assert_int_equal(find_text(u, "harbour", 0, 10, buf, sizeof buf), 1);
	assert_int_equal(gwunit_int(u, "SELECT count(*) FROM asset_fts"), 2);
	/* Diacritics fold; prefixes with '*'; every word must match. */
	put(u, "C", "Café Tromsø", "x", NULL, 1);
	assert_int_equal(find_text(u, "cafe", 0, 10, buf, sizeof buf), 1);
	assert_int_equal(find_text(u, "harb*", 0, 10, buf, sizeof buf), 1);
	assert_int_equal(find_text(u, "harbour council", 0, 10, buf,
	    sizeof buf), 0);
	/* FTS5 syntax in the user's text is only text. */
	assert_int_equal(find_text(u, "\"harbour OR NEAR(", 0, 10, buf,
	    sizeof buf), 0);
	assert_int_equal(find_text(u, "harbour) (", 0, 10, buf, sizeof buf),
	    1);
}

/* A failed put leaves the index as it was (same transaction). */
static void
test_index_rollback(void **state)
{
	struct gwunit	*u = *state;
	char		 buf[64];

	put(u, "A", "Harbour fire", "x", NULL, 1);
	assert_int_equal(queue_tx_begin(u->db->q), QUEUE_OK);
	put(u, "A", "Volcano", "x", NULL, 1);
	put(u, "B", "Volcano two", "x", NULL, 1);
	queue_tx_rollback(u->db->q);
	assert_int_equal(find_text(u, "volcano", 0, 10, buf, sizeof buf), 0);
	assert_int_equal(find_text(u, "harbour", 0, 10, buf, sizeof buf), 1);
}

/* The slug weighs more than the description; then fewer other words. */
static void
test_ranking(void **state)
{
	struct gwunit	*u = *state;
	char		 buf[256];

	put(u, "D1", "Budget", "The storm hit the coast", NULL, 1);
	put(u, "S1", "Storm", "Pictures", NULL, 1);
	put(u, "M1", "Budget talks", "x", "<tag>storm</tag>", 1);
	put(u, "N1", "Nothing", "at all", NULL, 1);
	assert_int_equal(find_text(u, "storm", 0, 10, buf, sizeof buf), 3);
	assert_string_equal(buf, "S1 D1 M1");
}

/* Pages: in order, past the end, an empty search lists everything. */
static void
test_paging(void **state)
{
	struct gwunit	*u = *state;
	char		 buf[512], id[16], slug[32];
	int		 i;

	for (i = 0; i < 25; i++) {
		snprintf(id, sizeof id, "P%02d", i);
		snprintf(slug, sizeof slug, "Clip %02d news", i);
		put(u, id, slug, "x", NULL, i);
	}
	assert_int_equal(find_text(u, "news", 0, 10, buf, sizeof buf), 25);
	assert_int_equal(find_text(u, "news", 20, 10, buf, sizeof buf), 25);
	assert_string_equal(buf, "P20 P21 P22 P23 P24");
	/* Past the end: nothing, the total still told. */
	assert_int_equal(find_text(u, "news", 25, 10, buf, sizeof buf), 25);
	assert_string_equal(buf, "");
	assert_int_equal(find_text(u, "news", 1000, 10, buf, sizeof buf), 25);
	assert_string_equal(buf, "");
	/* No words (or only punctuation): everything, by slug. */
	assert_int_equal(find_text(u, NULL, 0, 3, buf, sizeof buf), 25);
	assert_string_equal(buf, "P00 P01 P02");
	assert_int_equal(find_text(u, " -- ", 0, 3, buf, sizeof buf), 25);
	/* Nothing matches. */
	assert_int_equal(find_text(u, "zebra", 0, 10, buf, sizeof buf), 0);
	assert_string_equal(buf, "");
}

/* Field searches: groups ORed, fields ANDed; sorting; with text. */
static void
test_fields(void **state)
{
	struct gwunit		*u = *state;
	struct search_query	 q;
	char			 buf[256], *err = NULL;

	put(u, "F1", "Alpha news", "fire at the docks", NULL, 100);
	put(u, "F2", "Beta news", "no fire", NULL, 50);
	put(u, "F3", "Gamma", "x", NULL, 75);
	memset(&q, 0, sizeof q);
	assert_int_equal(search_add_field(&q, 0, "/mosObj/objSlug[. = "
	    "'beta NEWS']", NULL, NULL, &err), 0);
	assert_int_equal(find(u, &q, 10, buf, sizeof buf), 1);
	assert_string_equal(buf, "F2");
	search_query_clear(&q);

	/* objDur between 60 and 120, or objID F2; sorted by objDur down. */
	assert_int_equal(search_add_field(&q, 0, "objDur[.>60 and <=100]",
	    "1", "DESCENDING", &err), 0);
	assert_int_equal(search_add_field(&q, 1, "/objID[.='F2']", NULL, NULL,
	    &err), 0);
	assert_int_equal(find(u, &q, 10, buf, sizeof buf), 3);
	assert_string_equal(buf, "F1 F3 F2");
	/* With a general search: only those among them with "news". */
	q.text = "news";
	assert_int_equal(find(u, &q, 10, buf, sizeof buf), 2);
	assert_string_equal(buf, "F1 F2");
	search_query_clear(&q);

	assert_int_equal(search_add_field(&q, 0, "description[contains(., "
	    "'DOCKS')]", NULL, NULL, &err), 0);
	assert_int_equal(search_add_field(&q, 0, "objDur[. != 50]", NULL,
	    NULL, &err), 0);
	assert_int_equal(find(u, &q, 10, buf, sizeof buf), 1);
	assert_string_equal(buf, "F1");
	search_query_clear(&q);

	/* Only a sort key. */
	assert_int_equal(search_add_field(&q, 0, "/objDur", "1", NULL, &err),
	    0);
	assert_int_equal(find(u, &q, 10, buf, sizeof buf), 3);
	assert_string_equal(buf, "F2 F3 F1");
	search_query_clear(&q);

	/* What it cannot read is said, not guessed. */
	assert_int_equal(search_add_field(&q, 0, "/asset/keywords[.='x']",
	    NULL, NULL, &err), -1);
	assert_non_null(strstr(err, "no searchable field 'keywords'"));
	free(err);
	err = NULL;
	assert_int_equal(search_add_field(&q, 0, "objDur[.='long']", NULL,
	    NULL, &err), -1);
	assert_non_null(strstr(err, "whole number"));
	free(err);
	err = NULL;
	assert_int_equal(search_add_field(&q, 0, "objSlug[@kind='clip']",
	    NULL, NULL, &err), -1);
	assert_non_null(strstr(err, "predicate"));
	free(err);
	err = NULL;
	assert_int_equal(search_add_field(&q, 0, "objSlug", "first", NULL,
	    &err), -1);
	free(err);
	search_query_clear(&q);
}

/* A database from before the index gets it built by the migration. */
static void
test_migration(void **state)
{
	struct gwunit		*u = *state;
	struct gwdb_opts	 o;
	char			 buf[64], sql[128], *err = NULL;

	put(u, "OLD1", "Harbour fire", "docks", NULL, 1);
	put(u, "OLD2", "Deleted one", "harbour", NULL, 1);
	assert_int_equal(catalog_delete(u->db, "OLD2", "e", NULL, NULL, &err),
	    QUEUE_OK);
	/* Back to version 2, before the index: no tables of 3 and later. */
	assert_int_equal(gwunit_exec(u, "DROP TABLE asset_fts"), STORE_OK);
	assert_int_equal(gwunit_exec(u, "DROP TABLE asset_key"), STORE_OK);
	/* and without the later versions' tables */
	assert_int_equal(gwunit_exec(u, "DROP TABLE ncs_sync"), STORE_OK);
	assert_int_equal(gwunit_exec(u, gwunit_pg(u) ?
	    "DROP TRIGGER events_job ON job_events" :
	    "DROP TRIGGER events_job"), STORE_OK);
	assert_int_equal(gwunit_exec(u, "DROP TABLE events"), STORE_OK);
	assert_int_equal(gwunit_exec(u, "DROP TABLE ro_answer"), STORE_OK);
	assert_int_equal(gwunit_rewind_v8(u), STORE_OK);
	snprintf(sql, sizeof sql, "UPDATE gw_meta SET value = %d WHERE "
	    "key = 'schema_version'", 2);
	assert_int_equal(gwunit_exec(u, sql), STORE_OK);
	gwdb_close(u->db);
	gwunit_opts(u, &o);
	o.busy_ms = 1000;
	assert_int_equal(gwdb_open(&u->db, &o, &err), QUEUE_OK);
	assert_int_equal(gwunit_int(u, "SELECT value FROM gw_meta WHERE key ="
	    " 'schema_version'"), GWDB_SCHEMA_VERSION);
	assert_int_equal(find_text(u, "harbour", 0, 10, buf, sizeof buf), 1);
	assert_string_equal(buf, "OLD1");
	assert_int_equal(find_text(u, "docks", 0, 10, buf, sizeof buf), 1);
}

/* plain text of verbatim XML text */
static void
test_plain_text(void **state)
{
	struct sbuf	sb = { NULL, 0, 0 };

	(void)state;
	catalog_plain_text(&sb, "<p>A &amp; B &lt;c&gt; &#233;t&#xE9;</p>"
	    "<tab/>x &bogus; < y");
	assert_string_equal(sb.s, " A & B <c> \xc3\xa9t\xc3\xa9 "
	    " x &bogus; < y");
	sbuf_free(&sb);
}

/* 100,000 assets (20,000): a rare word, a common word's first and last page. */
static void
test_large_catalog(void **state)
{
	static const char *const words[] = { "fire", "vote", "storm",
	    "match", "budget", "flood", "concert", "strike" };
	struct gwunit	*u = *state;
	char		 buf[4096], id[16], slug[64], desc[96], want[16];
	int64_t		 total, fire = 0, fire_vote = 0;
	int		 i, a, b;
	/* a round trip per statement: a fifth of it on PostgreSQL */
	const int	 n = gwunit_pg(u) ? 20000 : 100000, rare = n * 7 / 9;

	assert_int_equal(gwdb_relax(u->db, true), QUEUE_OK);
	assert_int_equal(queue_tx_begin(u->db->q), QUEUE_OK);
	for (i = 0; i < n; i++) {
		snprintf(id, sizeof id, "L%06d", i);
		a = i % 8;
		b = (i / 8) % 8;
		snprintf(slug, sizeof slug, "%s %s %d", words[a], words[b], i);
		fire += a == 0 || b == 0;
		fire_vote += (a == 0 && b == 1) || (a == 1 && b == 0);
		snprintf(desc, sizeof desc, "%s item number w%d",
		    i == rare ? "xylophone" : "plain", i);
		put(u, id, slug, desc, NULL, i);
	}
	assert_int_equal(queue_tx_commit(u->db->q), QUEUE_OK);
	assert_int_equal(find_text(u, "xylophone", 0, 10, buf, sizeof buf), 1);
	snprintf(want, sizeof want, "L%06d", rare);
	assert_string_equal(buf, want);
	/* Common words: the total counted, full pages, past the end. */
	total = find_text(u, "fire", 0, 100, buf, sizeof buf);
	assert_int_equal(total, fire);
	assert_int_equal(strlen(buf), 100 * 8 - 1);
	total = find_text(u, "fire vote", fire_vote, 100, buf, sizeof buf);
	assert_int_equal(total, fire_vote);
	assert_string_equal(buf, "");
	total = find_text(u, "fire vote", fire_vote - 10, 100, buf,
	    sizeof buf);
	assert_int_equal(strlen(buf), 10 * 8 - 1);
	assert_int_equal(find_text(u, "w4242", 0, 10, buf, sizeof buf), 1);
	assert_string_equal(buf, "L004242");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_index_follows,
		    gwunit_setup, gwunit_teardown),
		cmocka_unit_test_setup_teardown(test_index_rollback,
		    gwunit_setup, gwunit_teardown),
		cmocka_unit_test_setup_teardown(test_ranking, gwunit_setup,
		    gwunit_teardown),
		cmocka_unit_test_setup_teardown(test_paging, gwunit_setup,
		    gwunit_teardown),
		cmocka_unit_test_setup_teardown(test_fields, gwunit_setup,
		    gwunit_teardown),
		cmocka_unit_test_setup_teardown(test_migration, gwunit_setup,
		    gwunit_teardown),
		cmocka_unit_test(test_plain_text),
		cmocka_unit_test_setup_teardown(test_large_catalog,
		    gwunit_setup, gwunit_teardown),
	};

	mos_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
