/*
 * The running-order store: the public running-order examples applied in
 * sequence against an order written down by hand, every roElementAction
 * variant and deprecated message with their edge cases (move to the end,
 * empty targets, swap with a missing element, duplicate IDs), the roAck
 * per-item status from the catalog, mosItemReplace, roListAll and the
 * unconfirmed mark, asset usage.
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

#include "gateway/gateway.h"
#include "gateway/tests/gwunit.h"

#define NCS	"n1"
#define MOSID	"gw"

/* The order of a running order: "S1[I1,I2] S2[]", or "-" if not held. */
static char *
order(struct gwunit *u, const char *ro_id)
{
	struct mos_msg	*m;
	struct sbuf	 sb = { NULL, 0, 0 };
	size_t		 i, j;
	int		 rc;

	rc = rostore_get(u->db, NCS, ro_id, &m, NULL);
	if (rc == QUEUE_ENOTFOUND)
		return xstrdup("-");
	assert_int_equal(rc, QUEUE_OK);
	for (i = 0; i < m->u.ro_list.story.n; i++) {
		const struct mos_story *s = &m->u.ro_list.story.v[i];

		sbuf_printf(&sb, "%s%s[", i > 0 ? " " : "", s->story_id);
		for (j = 0; j < s->item.n; j++)
			sbuf_printf(&sb, "%s%s", j > 0 ? "," : "",
			    s->item.v[j].item_id);
		sbuf_puts(&sb, "]");
	}
	mos_msg_free(m);
	if (sb.s == NULL)
		return xstrdup("");
	return sb.s;
}

/* Apply a parsed message; returns res.err (RO_OK, ...). */
static int
apply_msg(struct gwunit *u, const struct mos_msg *m, struct ro_result *res)
{
	struct ro_result	 local;
	int			 err;

	if (res == NULL)
		res = &local;
	assert_int_equal(rostore_apply(u->db, NCS, MOSID, m, res), QUEUE_OK);
	err = res->err;
	if (res == &local)
		rostore_result_clear(res, false);
	return err;
}

/* Apply the message element given as XML (wrapped in an envelope). */
static int
apply_xml(struct gwunit *u, const char *body, struct ro_result *res)
{
	struct mos_msg		*m;
	struct mos_error	 err;
	char			*xml;
	int			 rc;

	xasprintf(&xml, "<mos><mosID>" MOSID "</mosID><ncsID>N</ncsID>"
	    "<messageID>1</messageID>%s</mos>", body);
	memset(&err, 0, sizeof err);
	if (mos_parse(xml, strlen(xml), MOS_ENC_UTF8, MOS_LENIENT, &m,
	    &err) != MOS_OK)
		fail_msg("parse: %s in %s", err.msg, xml);
	free(xml);
	rc = apply_msg(u, m, res);
	mos_msg_free(m);
	return rc;
}

static void
assert_order(struct gwunit *u, const char *ro_id, const char *want)
{
	char	*got = order(u, ro_id);

	if (strcmp(got, want) != 0)
		fail_msg("order of %s:\n got  %s\n want %s", ro_id, got, want);
	free(got);
}

/* A small running order R: S1[I1,I2,I3] S2[I4] S3[]. */
static void
create_r(struct gwunit *u)
{
	assert_int_equal(apply_xml(u, "<roCreate><roID>R</roID>"
	    "<roSlug>r</roSlug>"
	    "<story><storyID>S1</storyID>"
	    "<item><itemID>I1</itemID><objID>O1</objID><mosID>gw</mosID>"
	    "</item>"
	    "<item><itemID>I2</itemID><objID>O2</objID><mosID>gw</mosID>"
	    "</item>"
	    "<item><itemID>I3</itemID><objID>O1</objID><mosID>gw</mosID>"
	    "</item></story>"
	    "<story><storyID>S2</storyID>"
	    "<item><itemID>I4</itemID><objID>O4</objID><mosID>other</mosID>"
	    "</item></story>"
	    "<story><storyID>S3</storyID></story>"
	    "</roCreate>", NULL), RO_OK);
	assert_order(u, "R", "S1[I1,I2,I3] S2[I4] S3[]");
}

/* A catalog asset with that readiness. */
static void
put_asset(struct gwunit *u, const char *id, const char *air)
{
	struct catalog_asset	a;

	memset(&a, 0, sizeof a);
	a.obj_id = xstrdup(id);
	a.slug = xstrdup(id);
	a.type = xstrdup("VIDEO");
	a.tb = xstrdup("50");
	a.dur = 100;
	a.air = xstrdup(air);
	a.description = xstrdup("");
	a.changed_by = xstrdup("t");
	assert_int_equal(catalog_put(u->db, &a, NULL, NULL, NULL), QUEUE_OK);
	catalog_asset_clear(&a);
}

/* One step of the examples: a file, whether it applies, the order after. */
struct step {
	const char	*file;
	int		 err;
	const char	*want;
};

#define A0 "STORY1[ITEM1,ITEM2,ITEM3] STORY2[ITEM21,ITEM22,ITEM23] " \
	    "STORY3[ITEM31,ITEM32,ITEM33]"
#define S2 "STORY2[ITEM21,ITEM22,ITEM23]"
#define S3 "STORY3[ITEM31,ITEM32,ITEM33]"
#define S2R "STORY2[ITEM24,ITEM25,ITEM22,ITEM23]"

/*
 * Every example targets the running order "RO ID" as roCreate__1 builds it;
 * roReplace__1 (the same content) starts each group again. The order after
 * each step follows the spec: INSERT goes before the target, MOVE puts the
 * sources before the target, the deprecated move-multiple's last ID is the
 * target, REPLACE puts the new elements where the old one was.
 */
static const struct step steps[] = {
	{ "roCreate__1", RO_OK, A0 },
	{ "roMetadataReplace__1", RO_OK, A0 },
	{ "roReadyToAir__1", RO_OK, A0 },
	{ "roStorySend__1", RO_OK, A0 },
	{ "roStorySend__3", RO_UNKNOWN_STORY, A0 },	/* STORY1000 */
	/* items, roElementAction */
	{ "roElementAction__6", RO_OK,
	    "STORY1[ITEM1,ITEM5,ITEM2,ITEM3] " S2 " " S3 },
	{ "roElementAction__8", RO_OK,
	    "STORY1[ITEM3,ITEM1,ITEM5,ITEM2] " S2 " " S3 },
	{ "roElementAction__10", RO_OK,
	    "STORY1[ITEM3,ITEM2,ITEM5,ITEM1] " S2 " " S3 },
	{ "roElementAction__7", RO_OK,
	    "STORY1[ITEM3,ITEM2,ITEM5,ITEM21] " S2 " " S3 },
	{ "roElementAction__9", RO_UNKNOWN_ITEM,	/* ITEM1 was replaced */
	    "STORY1[ITEM3,ITEM2,ITEM5,ITEM21] " S2 " " S3 },
	/* items, deprecated */
	{ "roReplace__1", RO_OK, A0 },
	{ "roItemInsert__1", RO_OK,
	    "STORY1[ITEM1,ITEM4,ITEM5,ITEM2,ITEM3] " S2 " " S3 },
	{ "roItemMoveMultiple__1", RO_OK,
	    "STORY1[ITEM2,ITEM3,ITEM1,ITEM4,ITEM5] " S2 " " S3 },
	{ "roItemReplace__1", RO_OK,
	    "STORY1[ITEM2,ITEM3,ITEM1,ITEM4,ITEM5] " S2R " " S3 },
	{ "roItemDelete__1", RO_OK,
	    "STORY1[ITEM3,ITEM4,ITEM5] " S2R " " S3 },
	/* stories, roElementAction */
	{ "roElementAction__1", RO_OK,
	    "STORY1[ITEM3,ITEM4,ITEM5] STORY5[ITEM1] " S2R " " S3 },
	{ "roElementAction__3", RO_OK,
	    S3 " STORY1[ITEM3,ITEM4,ITEM5] STORY5[ITEM1] " S2R },
	{ "roElementAction__5", RO_OK,
	    S3 " " S2R " STORY5[ITEM1] STORY1[ITEM3,ITEM4,ITEM5]" },
	{ "roElementAction__2", RO_DUPLICATE,	/* STORY5 is there */
	    S3 " " S2R " STORY5[ITEM1] STORY1[ITEM3,ITEM4,ITEM5]" },
	{ "roElementAction__4", RO_OK, S3 " " S2R " STORY5[ITEM1]" },
	/* stories, deprecated */
	{ "roReplace__1", RO_OK, A0 },
	{ "roStoryAppend__1", RO_OK,
	    A0 " STORYNEW1[ITEMNEW1] STORYNEW2[ITEMNEW21]" },
	{ "roStoryInsert__1", RO_OK,
	    "STORY1[ITEM1,ITEM2,ITEM3] STORY4[ITEM4] STORY5[ITEM5] " S2 " "
	    S3 " STORYNEW1[ITEMNEW1] STORYNEW2[ITEMNEW21]" },
	{ "roStoryMove__1", RO_OK,
	    S3 " STORY1[ITEM1,ITEM2,ITEM3] STORY4[ITEM4] STORY5[ITEM5] " S2
	    " STORYNEW1[ITEMNEW1] STORYNEW2[ITEMNEW21]" },
	{ "roStoryMove__2", RO_BAD,		/* no storyID at all */
	    S3 " STORY1[ITEM1,ITEM2,ITEM3] STORY4[ITEM4] STORY5[ITEM5] " S2
	    " STORYNEW1[ITEMNEW1] STORYNEW2[ITEMNEW21]" },
	{ "roStoryReplace__1", RO_OK,
	    S3 " STORY1[ITEM1] STORY4[ITEM4] STORY5[ITEM5] " S2
	    " STORYNEW1[ITEMNEW1] STORYNEW2[ITEMNEW21]" },
	{ "roStoryDelete__1", RO_OK,
	    S3 " STORY4[ITEM4] STORY5[ITEM5] STORYNEW1[ITEMNEW1] "
	    "STORYNEW2[ITEMNEW21]" },
	{ "roCreate__3", RO_OK,
	    "STORY1[ITEM1] STORY2[ITEM21] " S3 },
	{ "roDelete__1", RO_OK, "-" },
	{ "roStorySend__2", RO_UNKNOWN_RO, "-" },
};

/* Read and parse one example; NULL when the examples are absent. */
static struct mos_msg *
example(const char *dir, const char *name)
{
	struct mos_msg		*m;
	struct mos_error	 err;
	char			 path[4200], *buf;
	FILE			*f;
	long			 len;

	snprintf(path, sizeof path, "%s/bbc-mosromgr__%s.xml", dir, name);
	if ((f = fopen(path, "rb")) == NULL)
		fail_msg("cannot open %s", path);
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	rewind(f);
	buf = xmalloc((size_t)len + 1);
	if (fread(buf, 1, (size_t)len, f) != (size_t)len)
		fail_msg("cannot read %s", path);
	fclose(f);
	memset(&err, 0, sizeof err);
	if (mos_parse(buf, (size_t)len, MOS_ENC_UTF8, MOS_LENIENT, &m,
	    &err) != MOS_OK)
		fail_msg("%s: %s", name, err.msg);
	free(buf);
	return m;
}

static void
test_examples_in_sequence(void **state)
{
	struct gwunit		*u = *state;
	struct rostore_info	 info;
	struct mos_msg		*m;
	const char		*shared = getenv("MOSGW_SHARED");
	char			 dir[4096];
	size_t			 i;
	int			 err;

	snprintf(dir, sizeof dir, "%s/mos-examples",
	    shared != NULL ? shared : "../shared");
	if (access(dir, R_OK) != 0) {
		printf("SKIP: %s not found (set MOSGW_SHARED)\n", dir);
		skip();
	}
	for (i = 0; i < nitems(steps); i++) {
		m = example(dir, steps[i].file);
		err = apply_msg(u, m, NULL);
		mos_msg_free(m);
		if (err != steps[i].err)
			fail_msg("%s: error %d, want %d", steps[i].file, err,
			    steps[i].err);
		assert_order(u, "RO ID", steps[i].want);
		if (strcmp(steps[i].file, "roReadyToAir__1") == 0) {
			m = NULL;
			assert_int_equal(rostore_get(u->db, NCS, "RO ID", &m,
			    &info), QUEUE_OK);
			assert_string_equal(info.air, "READY");
			assert_string_equal(m->u.ro_list.ro_slug,
			    "RO SLUG NEW");
			mos_msg_free(m);
		}
	}
}

static void
test_story_actions(void **state)
{
	struct gwunit	*u = *state;

	create_r(u);
	/* INSERT with an empty target: at the end */
	assert_int_equal(apply_xml(u, "<roElementAction operation=\"INSERT\">"
	    "<roID>R</roID><element_target><storyID></storyID>"
	    "</element_target><element_source><story><storyID>S4</storyID>"
	    "</story></element_source></roElementAction>", NULL), RO_OK);
	assert_order(u, "R", "S1[I1,I2,I3] S2[I4] S3[] S4[]");
	/* MOVE two stories to the end (empty target) */
	assert_int_equal(apply_xml(u, "<roElementAction operation=\"MOVE\">"
	    "<roID>R</roID><element_target><storyID></storyID>"
	    "</element_target><element_source><storyID>S2</storyID>"
	    "<storyID>S1</storyID></element_source></roElementAction>",
	    NULL), RO_OK);
	assert_order(u, "R", "S3[] S4[] S2[I4] S1[I1,I2,I3]");
	/* SWAP with a missing story: refused, nothing changes */
	assert_int_equal(apply_xml(u, "<roElementAction operation=\"SWAP\">"
	    "<roID>R</roID><element_source><storyID>S3</storyID>"
	    "<storyID>S9</storyID></element_source></roElementAction>",
	    NULL), RO_UNKNOWN_STORY);
	assert_int_equal(apply_xml(u, "<roElementAction operation=\"SWAP\">"
	    "<roID>R</roID><element_source><storyID>S3</storyID>"
	    "</element_source></roElementAction>", NULL), RO_BAD);
	/* duplicate IDs */
	assert_int_equal(apply_xml(u, "<roElementAction operation=\"DELETE\">"
	    "<roID>R</roID><element_source><storyID>S3</storyID>"
	    "<storyID>S3</storyID></element_source></roElementAction>",
	    NULL), RO_DUPLICATE);
	assert_int_equal(apply_xml(u, "<roElementAction operation=\"INSERT\">"
	    "<roID>R</roID><element_target><storyID>S3</storyID>"
	    "</element_target><element_source><story><storyID>S5</storyID>"
	    "</story><story><storyID>S5</storyID></story></element_source>"
	    "</roElementAction>", NULL), RO_DUPLICATE);
	assert_order(u, "R", "S3[] S4[] S2[I4] S1[I1,I2,I3]");
	/* REPLACE a story by two */
	assert_int_equal(apply_xml(u, "<roElementAction operation=\"REPLACE\">"
	    "<roID>R</roID><element_target><storyID>S4</storyID>"
	    "</element_target><element_source><story><storyID>S6</storyID>"
	    "<item><itemID>I9</itemID><objID>O9</objID><mosID>gw</mosID>"
	    "</item></story><story><storyID>S4</storyID></story>"
	    "</element_source></roElementAction>", NULL), RO_OK);
	assert_order(u, "R", "S3[] S6[I9] S4[] S2[I4] S1[I1,I2,I3]");
	/* deprecated: move to the bottom (blank second storyID), swap */
	assert_int_equal(apply_xml(u, "<roStoryMove><roID>R</roID>"
	    "<storyID>S3</storyID><storyID></storyID></roStoryMove>", NULL),
	    RO_OK);
	assert_order(u, "R", "S6[I9] S4[] S2[I4] S1[I1,I2,I3] S3[]");
	assert_int_equal(apply_xml(u, "<roStorySwap><roID>R</roID>"
	    "<storyID>S6</storyID><storyID>S3</storyID></roStorySwap>", NULL),
	    RO_OK);
	assert_order(u, "R", "S3[] S4[] S2[I4] S1[I1,I2,I3] S6[I9]");
	assert_int_equal(apply_xml(u, "<roStorySwap><roID>R</roID>"
	    "<storyID>S6</storyID><storyID>S7</storyID></roStorySwap>", NULL),
	    RO_UNKNOWN_STORY);
	assert_int_equal(apply_xml(u, "<roStoryMoveMultiple><roID>R</roID>"
	    "<storyID>S1</storyID><storyID>S6</storyID><storyID>S3</storyID>"
	    "</roStoryMoveMultiple>", NULL), RO_OK);
	assert_order(u, "R", "S1[I1,I2,I3] S6[I9] S3[] S4[] S2[I4]");
	assert_int_equal(apply_xml(u, "<roStoryMoveMultiple><roID>R</roID>"
	    "<storyID>S1</storyID><storyID>S1</storyID><storyID>S3</storyID>"
	    "</roStoryMoveMultiple>", NULL), RO_DUPLICATE);
	/* unknown running order */
	assert_int_equal(apply_xml(u, "<roStoryDelete><roID>NOPE</roID>"
	    "<storyID>S1</storyID></roStoryDelete>", NULL), RO_UNKNOWN_RO);
	/* duplicate storyIDs in a roCreate: refused whole */
	assert_int_equal(apply_xml(u, "<roCreate><roID>D</roID>"
	    "<roSlug>d</roSlug><story><storyID>A</storyID></story>"
	    "<story><storyID>A</storyID></story></roCreate>", NULL),
	    RO_DUPLICATE);
	assert_order(u, "D", "-");
}

static void
test_item_actions(void **state)
{
	struct gwunit	*u = *state;

	create_r(u);
	/* INSERT items with an empty target itemID: at the end */
	assert_int_equal(apply_xml(u, "<roElementAction operation=\"INSERT\">"
	    "<roID>R</roID><element_target><storyID>S3</storyID>"
	    "<itemID></itemID></element_target><element_source>"
	    "<item><itemID>I7</itemID><objID>O7</objID><mosID>gw</mosID>"
	    "</item><item><itemID>I8</itemID><objID>O8</objID>"
	    "<mosID>gw</mosID></item></element_source></roElementAction>",
	    NULL), RO_OK);
	assert_order(u, "R", "S1[I1,I2,I3] S2[I4] S3[I7,I8]");
	/* MOVE an item to the end of its story */
	assert_int_equal(apply_xml(u, "<roElementAction operation=\"MOVE\">"
	    "<roID>R</roID><element_target><storyID>S1</storyID>"
	    "<itemID></itemID></element_target><element_source>"
	    "<itemID>I1</itemID></element_source></roElementAction>", NULL),
	    RO_OK);
	assert_order(u, "R", "S1[I2,I3,I1] S2[I4] S3[I7,I8]");
	/* SWAP with a missing item */
	assert_int_equal(apply_xml(u, "<roElementAction operation=\"SWAP\">"
	    "<roID>R</roID><element_target><storyID>S1</storyID>"
	    "</element_target><element_source><itemID>I2</itemID>"
	    "<itemID>I4</itemID></element_source></roElementAction>", NULL),
	    RO_UNKNOWN_ITEM);
	/* an item operation in an unknown story */
	assert_int_equal(apply_xml(u, "<roElementAction operation=\"DELETE\">"
	    "<roID>R</roID><element_target><storyID>S9</storyID>"
	    "</element_target><element_source><itemID>I2</itemID>"
	    "</element_source></roElementAction>", NULL), RO_UNKNOWN_STORY);
	/* duplicate: inserting an itemID the story has */
	assert_int_equal(apply_xml(u, "<roItemInsert><roID>R</roID>"
	    "<storyID>S1</storyID><itemID>I2</itemID><item><itemID>I3"
	    "</itemID><objID>O3</objID></item></roItemInsert>", NULL),
	    RO_DUPLICATE);
	assert_int_equal(apply_xml(u, "<roItemDelete><roID>R</roID>"
	    "<storyID>S3</storyID><itemID>I8</itemID><itemID>I7</itemID>"
	    "</roItemDelete>", NULL), RO_OK);
	assert_order(u, "R", "S1[I2,I3,I1] S2[I4] S3[]");
	/* the same itemID in another story is allowed */
	assert_int_equal(apply_xml(u, "<roItemInsert><roID>R</roID>"
	    "<storyID>S3</storyID><itemID></itemID><item><itemID>I1"
	    "</itemID><objID>O1</objID></item></roItemInsert>", NULL),
	    RO_OK);
	assert_order(u, "R", "S1[I2,I3,I1] S2[I4] S3[I1]");
}

static void
test_ack_status_and_item_replace(void **state)
{
	struct gwunit		*u = *state;
	struct ro_result	 res;
	struct mos_msg		*m;
	size_t			 i;

	put_asset(u, "O1", "READY");
	put_asset(u, "O2", "NOT READY");
	assert_int_equal(apply_xml(u, "<roCreate><roID>R</roID>"
	    "<roSlug>r</roSlug><story><storyID>S1</storyID>"
	    "<item><itemID>I1</itemID><objID>O1</objID><mosID>gw</mosID>"
	    "<itemChannel>A</itemChannel></item>"
	    "<item><itemID>I2</itemID><objID>O2</objID><mosID>gw</mosID>"
	    "</item><item><itemID>I3</itemID><objID>O3</objID>"
	    "<mosID>gw</mosID></item><item><itemID>I4</itemID>"
	    "<objID>X</objID><mosID>other</mosID></item></story>"
	    "</roCreate>", &res), RO_OK);
	assert_int_equal(res.nitems, 3);	/* not the other device's */
	assert_string_equal(res.items[0].item_id, "I1");
	assert_string_equal(res.items[0].status, "READY");
	assert_string_equal(res.items[0].channel, "A");
	assert_string_equal(res.items[1].status, "NOT READY");
	assert_string_equal(res.items[2].obj_id, "O3");
	assert_string_equal(res.items[2].status, RO_STAT_UNKNOWN);
	rostore_result_clear(&res, false);
	/* mosItemReplace: the item changes in place */
	assert_int_equal(apply_xml(u, "<mosItemReplace><roID>R</roID>"
	    "<storyID>S1</storyID><item><itemID>I2</itemID>"
	    "<itemSlug>new</itemSlug><objID>O1</objID><mosID>gw</mosID>"
	    "<itemEdDur>250</itemEdDur></item></mosItemReplace>", &res),
	    RO_OK);
	assert_int_equal(res.nitems, 1);
	assert_string_equal(res.items[0].status, "READY");
	rostore_result_clear(&res, false);
	assert_int_equal(rostore_get(u->db, NCS, "R", &m, NULL), QUEUE_OK);
	assert_int_equal(m->u.ro_list.story.v[0].item.n, 4);
	assert_string_equal(m->u.ro_list.story.v[0].item.v[1].item_slug,
	    "new");
	assert_int_equal(m->u.ro_list.story.v[0].item.v[1].item_ed_dur, 250);
	mos_msg_free(m);
	assert_int_equal(apply_xml(u, "<mosItemReplace><roID>R</roID>"
	    "<storyID>S1</storyID><item><itemID>I9</itemID>"
	    "<objID>O1</objID></item></mosItemReplace>", NULL),
	    RO_UNKNOWN_ITEM);
	/* asset usage, in running-order order */
	{
		struct rostore_use	*use;
		size_t			 n;

		assert_int_equal(rostore_usage(u->db, "O1", &use, &n),
		    QUEUE_OK);
		assert_int_equal(n, 2);
		assert_string_equal(use[0].item_id, "I1");
		assert_string_equal(use[1].item_id, "I2");
		for (i = 0; i < n; i++)
			assert_string_equal(use[i].ro_id, "R");
		rostore_uses_free(use, n);
	}
}

static void
test_fields_kept(void **state)
{
	struct gwunit		*u = *state;
	struct mos_msg		*m;
	const struct mos_item	*it;

	assert_int_equal(apply_xml(u, "<roCreate><roID>F</roID>"
	    "<roSlug>f &amp; g</roSlug><roChannel>C</roChannel>"
	    "<roEdStart>2026-01-01T10:00:00</roEdStart>"
	    "<roEdDur>00:30:00</roEdDur>"
	    "<mosExternalMetadata><mosSchema>http://s</mosSchema>"
	    "<mosPayload><a x=\"1\">b<c/></a></mosPayload>"
	    "</mosExternalMetadata>"
	    "<story><storyID>S</storyID><storySlug>slug</storySlug>"
	    "<storyNum>7</storyNum><item><itemID>I</itemID>"
	    "<itemSlug>is</itemSlug><objID>O</objID><mosID>gw</mosID>"
	    "<itemChannel>B</itemChannel><itemEdStart>10</itemEdStart>"
	    "<itemEdDur>20</itemEdDur><itemUserTimingDur>30"
	    "</itemUserTimingDur><mosExternalMetadata><mosScope>STORY"
	    "</mosScope><mosSchema>http://t</mosSchema><mosPayload><p>x</p>"
	    "</mosPayload></mosExternalMetadata></item></story></roCreate>",
	    NULL), RO_OK);
	assert_int_equal(rostore_get(u->db, NCS, "F", &m, NULL), QUEUE_OK);
	assert_string_equal(m->u.ro_list.ro_slug, "f & g");
	assert_string_equal(m->u.ro_list.ro_channel, "C");
	assert_true(m->u.ro_list.ro_ed_dur.set);
	assert_int_equal(m->u.ro_list.ro_ed_dur.sec, 1800);
	assert_int_equal(m->u.ro_list.ext_meta.n, 1);
	assert_string_equal(m->u.ro_list.ext_meta.v[0].mos_payload,
	    "<a x=\"1\">b<c/></a>");
	assert_string_equal(m->u.ro_list.story.v[0].story_num, "7");
	it = &m->u.ro_list.story.v[0].item.v[0];
	assert_string_equal(it->item_channel, "B");
	assert_int_equal(it->item_ed_start, 10);
	assert_int_equal(it->item_ed_dur, 20);
	assert_int_equal(it->item_user_timing_dur, 30);
	assert_string_equal(it->ext_meta.v[0].mos_scope, "STORY");
	assert_string_equal(it->ext_meta.v[0].mos_payload, "<p>x</p>");
	mos_msg_free(m);
}

static void
test_list_all_and_confirm(void **state)
{
	struct gwunit		*u = *state;
	struct rostore_row	*r;
	struct mos_msg		*m;
	const char		*ids[] = { "B" };
	size_t			 n;

	assert_int_equal(apply_xml(u, "<roCreate><roID>A</roID><roSlug>a"
	    "</roSlug><macroIn>m</macroIn></roCreate>", NULL), RO_OK);
	assert_int_equal(apply_xml(u, "<roCreate><roID>B</roID><roSlug>b"
	    "</roSlug><story><storyID>S</storyID></story></roCreate>", NULL),
	    RO_OK);
	assert_int_equal(rostore_list_all(u->db, NCS, &m), QUEUE_OK);
	assert_int_equal(m->u.ro_list_all.ro.n, 2);
	assert_string_equal(m->u.ro_list_all.ro.v[0].ro_id, "A");
	assert_null(m->u.ro_list_all.ro.v[0].macro_in);
	assert_string_equal(m->u.ro_list_all.ro.v[1].ro_slug, "b");
	mos_msg_free(m);
	/* another NCS's list is its own */
	assert_int_equal(rostore_list_all(u->db, "other", &m), QUEUE_OK);
	assert_int_equal(m->u.ro_list_all.ro.n, 0);
	mos_msg_free(m);
	/* a list that omits A: A stays, unconfirmed */
	assert_int_equal(rostore_confirm(u->db, NCS, ids, 1), QUEUE_OK);
	assert_int_equal(rostore_list(u->db, NULL, &r, &n), QUEUE_OK);
	assert_int_equal(n, 2);
	assert_false(r[0].confirmed);
	assert_true(r[1].confirmed);
	assert_int_equal(r[1].nstories, 1);
	rostore_rows_free(r, n);
	/* an empty list: nothing deleted */
	assert_int_equal(rostore_confirm(u->db, NCS, NULL, 0), QUEUE_OK);
	assert_int_equal(rostore_list(u->db, NCS, &r, &n), QUEUE_OK);
	assert_int_equal(n, 2);
	assert_false(r[1].confirmed);
	rostore_rows_free(r, n);
}

/* Parse a message element (in an envelope with messageID id). */
static struct mos_msg *
parse_id(int id, const char *body)
{
	struct mos_msg	*m;
	char		*xml;

	xasprintf(&xml, "<mos><mosID>" MOSID "</mosID><ncsID>N</ncsID>"
	    "<messageID>%d</messageID>%s</mos>", id, body);
	if (mos_parse(xml, strlen(xml), MOS_ENC_UTF8, MOS_LENIENT, &m,
	    NULL) != MOS_OK)
		fail_msg("parse %s", xml);
	free(xml);
	return m;
}

/*
 * What rostore_once_get says of a message: "kept" (its answer, items in
 * *nitems), "new" or "reused". Applied with its answer kept if apply.
 */
static const char *
once(struct gwunit *u, struct mos_msg *m, bool apply, size_t *nitems)
{
	struct ro_once		 o;
	struct ro_result	 res;
	const char		*what;
	int			 rc;

	memset(&o, 0, sizeof o);
	o.port = GW_PORT_UPPER;
	o.message_id = m->message_id;
	rostore_digest(m, o.digest);
	rc = rostore_once_get(u->db, NCS, &o, &res);
	what = rc == QUEUE_OK ? "kept" : rc == QUEUE_ENOTFOUND ? "new" :
	    rc == QUEUE_EXISTS ? "reused" : "error";
	if (nitems != NULL)
		*nitems = res.nitems;
	rostore_result_clear(&res, false);
	if (apply) {
		assert_int_equal(rostore_apply_once(u->db, NCS, MOSID, m, &o,
		    &res), QUEUE_OK);
		assert_int_equal(res.err, RO_OK);
		rostore_result_clear(&res, false);
	}
	mos_msg_free(m);
	return what;
}

#define INS(id, item)	parse_id((id), "<roElementAction operation="	\
	"\"INSERT\"><roID>R</roID><element_target><storyID>S3</storyID>"	\
	"<itemID></itemID></element_target><element_source><item><itemID>"	\
	item "</itemID><objID>O1</objID><mosID>gw</mosID></item>"		\
	"</element_source></roElementAction>")

/*
 * Answers kept for resends: the last change only, its items as they were;
 * the same messageID with other content is reused; a change without a
 * kept answer (roCreate) forgets them.
 */
static void
test_resend_kept(void **state)
{
	struct gwunit	*u = *state;
	size_t		 n = 0;

	create_r(u);
	assert_string_equal(once(u, INS(10, "N1"), true, NULL), "new");
	assert_string_equal(once(u, INS(10, "N1"), false, &n), "kept");
	assert_int_equal(n, 1);
	assert_string_equal(once(u, INS(10, "N2"), false, NULL), "reused");
	assert_string_equal(once(u, INS(11, "N2"), true, NULL), "new");
	/* 10 is no longer the last change: not a resend */
	assert_string_equal(once(u, INS(10, "N1"), false, NULL), "new");
	assert_string_equal(once(u, INS(11, "N2"), false, NULL), "kept");
	assert_order(u, "R", "S1[I1,I2,I3] S2[I4] S3[N1,N2]");
	/* a change whose answer is not kept: nothing is a resend any more */
	assert_int_equal(apply_xml(u, "<roCreate><roID>R2</roID><story>"
	    "<storyID>X</storyID></story></roCreate>", NULL), RO_OK);
	assert_string_equal(once(u, INS(11, "N2"), false, NULL), "new");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_examples_in_sequence,
		    gwunit_setup, gwunit_teardown),
		cmocka_unit_test_setup_teardown(test_story_actions,
		    gwunit_setup, gwunit_teardown),
		cmocka_unit_test_setup_teardown(test_item_actions,
		    gwunit_setup, gwunit_teardown),
		cmocka_unit_test_setup_teardown(
		    test_ack_status_and_item_replace, gwunit_setup,
		    gwunit_teardown),
		cmocka_unit_test_setup_teardown(test_fields_kept,
		    gwunit_setup, gwunit_teardown),
		cmocka_unit_test_setup_teardown(test_list_all_and_confirm,
		    gwunit_setup, gwunit_teardown),
		cmocka_unit_test_setup_teardown(test_resend_kept,
		    gwunit_setup, gwunit_teardown),
	};

	mos_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
