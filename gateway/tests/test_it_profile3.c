/*
 * Integration: the real mosgw against a scripted NCS, Profile 3.
 *
 * mosObjCreate makes a placeholder (NOT READY) whose new objID comes back in
 * the mosAck, with a job for the MAM's worker and its mosObj NEW sent to the
 * NCS; a retry gets the same answer and creates nothing; mosReqObjAction UPDATE and DELETE change it the same way; bad
 * requests get a NACK saying why. mosReqSearchableSchema and mosReqObjList
 * are answered on the query port and on the lower port, with paging,
 * ranking, empty results and a readable status for what cannot be searched.
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
#include "gateway/tests/itutil.h"

#define WAIT_MS		5000

#define is_ack	itutil_is_ack

/* mosReqSearchableSchema on conn: the answer if it is the schema list. */
static const struct ncspeer_frame *
schema_request(struct gwrig *r, int c)
{
	const struct ncspeer_frame	*f;
	struct mos_msg			*m;

	m = ncspeer_msg(r->ncs, MOS_T_MOS_REQ_SEARCHABLE_SCHEMA);
	m->u.mos_req_searchable_schema.username = "jdoe";
	f = ncspeer_request(r->ncs, c, m, WAIT_MS);
	if (f == NULL || f->msg == NULL ||
	    f->msg->type != MOS_T_MOS_LIST_SEARCHABLE_SCHEMA)
		return NULL;
	return f;
}

/* A mosObjCreate with a slug (NULL: none). */
static struct mos_msg *
obj_create(struct gwrig *r, const char *slug)
{
	struct mos_msg		*m = ncspeer_msg(r->ncs, MOS_T_MOS_OBJ_CREATE);
	struct mos_obj_action	*o = &m->u.mos_obj_create;

	o->obj_slug = mos_msg_strdup(m, slug);
	o->obj_type = "VIDEO";
	mos_dec_parse("50", &o->obj_tb);
	o->obj_dur = 4500;
	o->has_obj_dur = true;
	o->created_by = "Per Hansen";
	o->description = "Vote at 17:30; <em>live</em> if possible.";
	return m;
}

/* mosReqObjAction op on obj_id. */
static struct mos_msg *
obj_action(struct gwrig *r, const char *op, const char *obj_id,
    const char *slug)
{
	struct mos_msg		*m = ncspeer_msg(r->ncs, MOS_T_MOS_REQ_OBJ_ACTION);
	struct mos_obj_action	*o = &m->u.mos_req_obj_action;

	o->operation = mos_msg_strdup(m, op);
	o->obj_id = mos_msg_strdup(m, obj_id);
	o->obj_slug = mos_msg_strdup(m, slug);
	o->changed_by = "Editor Two";
	return m;
}

/* mosctl asset show ID: its output (malloc'd) or NULL. */
static char *
asset_show(struct gwrig *r, const char *id)
{
	char	*out = NULL;

	if (gwproc_mosctl(r->gw, &out, "asset", "show", id, (char *)NULL) !=
	    0) {
		free(out);
		return NULL;
	}
	return out;
}

/* mosObjCreate: placeholder, objID in the ACK, MAM job, mosObj NEW out. */
static void
test_obj_create(void **state)
{
	struct gwrig			*r = *state;
	struct ncspeer_match		 mt = { .type = "mosObj",
					    .side = NCSPEER_ACCEPTED };
	struct ncspeer_match		 mt2;
	const struct ncspeer_frame	*f;
	const struct mos_obj		*o;
	char				 id[64], *out;
	long				 mark;
	int				 c;

	memset(&mt2, 0, sizeof mt2);
	c = gwrig_dial(r, NCSPEER_LOWER);
	GWRIG_CHECK(r, c > 0);
	f = ncspeer_request(r->ncs, c, obj_create(r, "Council vote"), WAIT_MS);
	GWRIG_CHECK(r, is_ack(f, "ACK", NULL));
	GWRIG_CHECK(r, strncmp(f->msg->u.mos_ack.obj_id, "PH-", 3) == 0);
	GWRIG_CHECK(r, f->msg->u.mos_ack.obj_rev == 1);
	snprintf(id, sizeof id, "%s", f->msg->u.mos_ack.obj_id);
	/* The catalog has it, not ready, with what the NCS gave. */
	out = asset_show(r, id);
	GWRIG_CHECK(r, out != NULL && strstr(out, "NOT READY") != NULL &&
	    strstr(out, "Council vote") != NULL &&
	    strstr(out, "Per Hansen") != NULL);
	free(out);
	/* A job for the MAM's worker, and the mosObj NEW to the NCS. */
	GWRIG_CHECK(r, gwproc_job_count(r->gw, "mam", QUEUE_QUEUED) == 1);
	mt.obj_id = id;
	f = ncspeer_wait(r->ncs, &mt, WAIT_MS);
	GWRIG_CHECK(r, f != NULL && f->msg != NULL);
	o = &f->msg->u.mos_obj;
	GWRIG_CHECK(r, strcmp(o->status, "NEW") == 0 &&
	    strcmp(o->obj_air, "NOT READY") == 0 && o->obj_dur == 4500 &&
	    strcmp(o->obj_slug, "Council vote") == 0);
	/* A second one gets another objID. */
	f = ncspeer_request(r->ncs, c, obj_create(r, "Second"), WAIT_MS);
	GWRIG_CHECK(r, is_ack(f, "ACK", NULL));
	GWRIG_CHECK(r, strcmp(f->msg->u.mos_ack.obj_id, id) != 0);
	GWRIG_CHECK(r, gwproc_job_count(r->gw, "mam", -1) == 2);
	/* A negative objDur (lenient): read as 0, logged, still created. */
	mark = (long)gwproc_log_size(r->gw);
	mt2.conn = c;
	mt2.message_id = 4242;
	mt2.from = ncspeer_nframes(r->ncs);
	GWRIG_CHECK(r, ncspeer_send_xml(r->ncs, c, "<mos><mosID>mosgw.test"
	    "</mosID><ncsID>NCSPEER</ncsID><messageID>4242</messageID>"
	    "<mosObjCreate><objSlug>Short</objSlug><objType>VIDEO</objType>"
	    "<objTB>50</objTB><objDur>-5</objDur></mosObjCreate></mos>") == 0);
	f = ncspeer_wait(r->ncs, &mt2, WAIT_MS);
	GWRIG_CHECK(r, is_ack(f, "ACK", NULL));
	GWRIG_CHECK(r, gwproc_log_wait(r->gw, mark, WAIT_MS,
	    "event=msg.repaired", "is below 0", (char *)NULL) != -1);
	GWRIG_CHECK(r, gwproc_job_count(r->gw, "mam", -1) == 3);
	/* Without a slug: a NACK saying so, nothing created. */
	f = ncspeer_request(r->ncs, c, obj_create(r, NULL), WAIT_MS);
	GWRIG_CHECK(r, is_ack(f, "NACK", "objSlug"));
	GWRIG_CHECK(r, gwproc_job_count(r->gw, "mam", -1) == 3);
}

/*
 * A retry (same messageID, same request) gets the first answer again and
 * creates nothing; a different request that reuses the messageID is new.
 */
static void
test_obj_create_retry(void **state)
{
	struct gwrig			*r = *state;
	const struct ncspeer_frame	*f;
	struct mos_msg			*m;
	char				 id[64];
	int32_t				 mid;
	int				 c;

	c = gwrig_dial(r, NCSPEER_LOWER);
	GWRIG_CHECK(r, c > 0);
	m = obj_create(r, "Retried");
	mid = m->message_id;
	f = ncspeer_request(r->ncs, c, m, WAIT_MS);
	GWRIG_CHECK(r, is_ack(f, "ACK", NULL));
	snprintf(id, sizeof id, "%s", f->msg->u.mos_ack.obj_id);
	m = obj_create(r, "Retried");
	m->message_id = mid;
	f = ncspeer_request(r->ncs, c, m, WAIT_MS);
	GWRIG_CHECK(r, is_ack(f, "ACK", NULL));
	GWRIG_CHECK(r, strcmp(f->msg->u.mos_ack.obj_id, id) == 0);
	GWRIG_CHECK(r, gwproc_job_count(r->gw, "mam", -1) == 1);
	GWRIG_CHECK(r, gwproc_log_count(r->gw, 0, "event=p3.retry",
	    (char *)NULL) == 1);
	m = obj_create(r, "Another one");
	m->message_id = mid;
	f = ncspeer_request(r->ncs, c, m, WAIT_MS);
	GWRIG_CHECK(r, is_ack(f, "ACK", NULL));
	GWRIG_CHECK(r, strcmp(f->msg->u.mos_ack.obj_id, id) != 0);
	GWRIG_CHECK(r, gwproc_job_count(r->gw, "mam", -1) == 2);
}

/* mosReqObjAction NEW, UPDATE, DELETE, and what is refused. */
static void
test_obj_action(void **state)
{
	struct gwrig			*r = *state;
	const struct ncspeer_frame	*f;
	struct mos_msg			*m;
	char				 id[64], *out;
	int				 c;

	c = gwrig_dial(r, NCSPEER_LOWER);
	GWRIG_CHECK(r, c > 0);
	m = obj_action(r, "NEW", NULL, "Harbour fire");
	mos_dec_parse("25", &m->u.mos_req_obj_action.obj_tb);
	f = ncspeer_request(r->ncs, c, m, WAIT_MS);
	GWRIG_CHECK(r, is_ack(f, "ACK", NULL));
	snprintf(id, sizeof id, "%s", f->msg->u.mos_ack.obj_id);
	f = ncspeer_request(r->ncs, c, obj_action(r, "UPDATE", id,
	    "Harbour fire: final"), WAIT_MS);
	GWRIG_CHECK(r, is_ack(f, "ACK", NULL));
	GWRIG_CHECK(r, strcmp(f->msg->u.mos_ack.obj_id, id) == 0 &&
	    f->msg->u.mos_ack.obj_rev == 2);
	out = asset_show(r, id);
	GWRIG_CHECK(r, out != NULL && strstr(out, "Harbour fire: final") !=
	    NULL && strstr(out, "Editor Two") != NULL);
	free(out);
	/* An existing asset of the MAM can be updated too. */
	GWRIG_CHECK(r, gwproc_asset_put(r->gw, "MAM-1", "Old slug") == 0);
	f = ncspeer_request(r->ncs, c, obj_action(r, "UPDATE", "MAM-1",
	    "New slug"), WAIT_MS);
	GWRIG_CHECK(r, is_ack(f, "ACK", NULL));
	f = ncspeer_request(r->ncs, c, obj_action(r, "DELETE", id, NULL),
	    WAIT_MS);
	GWRIG_CHECK(r, is_ack(f, "ACK", NULL));
	out = asset_show(r, id);
	GWRIG_CHECK(r, out != NULL && strstr(out, "DELETED") != NULL);
	free(out);
	GWRIG_CHECK(r, gwproc_job_count(r->gw, "mam", -1) == 4);
	/* Refused, each with its reason, and no job. */
	f = ncspeer_request(r->ncs, c, obj_action(r, "UPDATE", "NOPE", "x"),
	    WAIT_MS);
	GWRIG_CHECK(r, is_ack(f, "NACK", "Unknown object: NOPE"));
	f = ncspeer_request(r->ncs, c, obj_action(r, "DELETE", id, NULL),
	    WAIT_MS);
	GWRIG_CHECK(r, is_ack(f, "NACK", "Unknown object"));
	f = ncspeer_request(r->ncs, c, obj_action(r, "UPDATE", NULL, "x"),
	    WAIT_MS);
	GWRIG_CHECK(r, is_ack(f, "NACK", "objID"));
	f = ncspeer_request(r->ncs, c, obj_action(r, "MOVE", id, "x"),
	    WAIT_MS);
	GWRIG_CHECK(r, is_ack(f, "NACK", "operation"));
	m = obj_action(r, "UPDATE", "MAM-1", NULL);
	m->u.mos_req_obj_action.obj_type = "HOLOGRAM";
	f = ncspeer_request(r->ncs, c, m, WAIT_MS);
	GWRIG_CHECK(r, is_ack(f, "NACK", "type"));
	GWRIG_CHECK(r, gwproc_job_count(r->gw, "mam", -1) == 4);
}

/* A mosReqObjList for text, start..end (0: absent). */
static const struct ncspeer_frame *
obj_list(struct gwrig *r, int c, const char *text, uint32_t start,
    uint32_t end, const char *xpath)
{
	struct mos_msg			*m;
	struct mos_req_obj_list		*q;
	struct mos_search_group		*g;

	m = ncspeer_msg(r->ncs, MOS_T_MOS_REQ_OBJ_LIST);
	q = &m->u.mos_req_obj_list;
	q->username = "jdoe";
	q->query_id = "Q-1";
	q->list_return_start = start;
	q->has_list_return_start = start > 0;
	q->list_return_end = end;
	q->has_list_return_end = end > 0;
	q->general_search = mos_msg_strdup(m, text);
	q->mos_schema = PROFILE3_SCHEMA;
	if (xpath != NULL) {
		g = mos_msg_calloc(m, 1, sizeof *g);
		g->search_field.v = mos_msg_calloc(m, 1,
		    sizeof *g->search_field.v);
		g->search_field.v[0].xpath = mos_msg_strdup(m, xpath);
		g->search_field.n = 1;
		q->search_group.v = g;
		q->search_group.n = 1;
	}
	return ncspeer_request(r->ncs, c, m, WAIT_MS);
}

/* The objIDs of a mosObjList, space separated. */
static void
list_ids(const struct mos_obj_list *l, char *buf, size_t len)
{
	size_t	i;

	buf[0] = '\0';
	for (i = 0; i < l->list.n; i++)
		snprintf(buf + strlen(buf), len - strlen(buf), "%s%s",
		    i > 0 ? " " : "", l->list.v[i].obj_id);
}

/* Search on the query port (and the lower port): pages, ranking, empty. */
static void
test_search(void **state)
{
	struct gwrig			*r = *state;
	enum ncspeer_port		 ports[] = { NCSPEER_QUERY,
					    NCSPEER_LOWER };
	const struct ncspeer_frame	*f;
	const struct mos_obj_list	*l;
	char				 id[16], slug[64], buf[256];
	size_t				 i;
	int				 c;

	for (i = 0; i < 12; i++) {
		snprintf(id, sizeof id, "S%02zu", i);
		snprintf(slug, sizeof slug, "Ferry news %02zu", i);
		GWRIG_CHECK(r, gwproc_asset_put(r->gw, id, slug) == 0);
	}
	GWRIG_CHECK(r, gwproc_asset_put(r->gw, "X1", "Harbour") == 0);
	for (i = 0; i < nitems(ports); i++) {
		c = gwrig_dial(r, ports[i]);
		GWRIG_CHECK(r, c > 0);
		f = schema_request(r, c);
		GWRIG_CHECK(r, f != NULL);
		GWRIG_CHECK(r, strcmp(f->msg->u.mos_list_searchable_schema.
		    mos_schema, PROFILE3_SCHEMA) == 0 && strcmp(f->msg->u.
		    mos_list_searchable_schema.username, "jdoe") == 0);

		f = obj_list(r, c, "ferry", 11, 20, NULL);
		GWRIG_CHECK(r, f != NULL && f->msg != NULL && f->msg->type ==
		    MOS_T_MOS_OBJ_LIST);
		l = &f->msg->u.mos_obj_list;
		GWRIG_CHECK(r, strcmp(l->query_id, "Q-1") == 0 &&
		    strcmp(l->username, "jdoe") == 0);
		GWRIG_CHECK(r, l->list_return_total == 12 &&
		    l->list_return_start == 11 && l->list_return_end == 12);
		list_ids(l, buf, sizeof buf);
		GWRIG_CHECK(r, strcmp(buf, "S10 S11") == 0);
		GWRIG_CHECK(r, l->list.v[0].obj_slug != NULL &&
		    strcmp(l->list.v[0].obj_slug, "Ferry news 10") == 0);

		/* No listReturnEnd: the default page. */
		f = obj_list(r, c, "news", 0, 0, NULL);
		l = &f->msg->u.mos_obj_list;
		GWRIG_CHECK(r, l->list_return_start == 1 &&
		    l->list_return_end == 12 && l->list.n == 12);

		/* Past the end; nothing matches: a status, no list. */
		f = obj_list(r, c, "ferry", 30, 40, NULL);
		l = &f->msg->u.mos_obj_list;
		GWRIG_CHECK(r, l->list.n == 0 && l->list_return_total == 12 &&
		    strstr(l->list_return_status, "past the last") != NULL);
		f = obj_list(r, c, "zebra", 1, 10, NULL);
		l = &f->msg->u.mos_obj_list;
		GWRIG_CHECK(r, l->list.n == 0 && l->list_return_total == 0 &&
		    strstr(l->list_return_status, "No objects") != NULL);

		/* A field search; one it cannot read. */
		f = obj_list(r, c, NULL, 1, 10, "/objSlug[.='harbour']");
		l = &f->msg->u.mos_obj_list;
		list_ids(l, buf, sizeof buf);
		GWRIG_CHECK(r, strcmp(buf, "X1") == 0);
		f = obj_list(r, c, NULL, 1, 10, "/asset/rights[@t='NO']");
		l = &f->msg->u.mos_obj_list;
		GWRIG_CHECK(r, l->list.n == 0 && strstr(l->list_return_status,
		    "no searchable field") != NULL);
	}
}

/* The NCS's query port configured: the gateway dials it. */
static int
setup_query_link(void **state)
{
	struct gwproc_opts	o;

	memset(&o, 0, sizeof o);
	o.ncs[0].query = true;
	return itutil_setup_opts(state, MOS_ENC_UTF16BE, &o);
}

/*
 * With query_port, the gateway keeps a link to the NCS's query port, sends
 * no heartbeats there, answers the requests the NCS sends on it, and dials
 * it again when it drops.
 */
static void
test_query_link(void **state)
{
	struct gwrig			*r = *state;
	struct ncspeer_match		 mt = { .type = "heartbeat",
					    .port = NCSPEER_QUERY };
	struct ncspeer_match		 up = { .type = "heartbeat",
					    .port = NCSPEER_UPPER,
					    .side = NCSPEER_ACCEPTED };
	const struct ncspeer_frame	*f;
	const struct mos_obj_list	*l;
	int				 c;

	GWRIG_CHECK(r, gwproc_asset_put(r->gw, "Q1", "Query link news") == 0);
	GWRIG_CHECK(r, ncspeer_wait_open(r->ncs, NCSPEER_QUERY,
	    NCSPEER_ACCEPTED, 1, WAIT_MS) == 0);
	GWRIG_CHECK(r, gwproc_log_wait(r->gw, 0, WAIT_MS, "event=link.up",
	    "port=query", (char *)NULL) != -1);
	c = ncspeer_conn_of(r->ncs, NCSPEER_QUERY, NCSPEER_ACCEPTED);
	GWRIG_CHECK(r, c > 0);
	GWRIG_CHECK(r, schema_request(r, c) != NULL);
	f = obj_list(r, c, "query link", 1, 5, NULL);
	GWRIG_CHECK(r, f != NULL && f->msg != NULL);
	l = &f->msg->u.mos_obj_list;
	GWRIG_CHECK(r, l->list_return_total == 1 && l->list.n == 1 &&
	    strcmp(l->list.v[0].obj_id, "Q1") == 0);
	/* Heartbeats go on lower and upper (interval 1 s), never here. */
	up.from = ncspeer_nframes(r->ncs);
	GWRIG_CHECK(r, ncspeer_wait_count(r->ncs, &up, 2, WAIT_MS) >= 2);
	GWRIG_CHECK(r, ncspeer_count(r->ncs, &mt) == 0);
	/* Dropped: dialed again. */
	ncspeer_close(r->ncs, c, false);
	GWRIG_CHECK(r, ncspeer_wait_closed(r->ncs, c, WAIT_MS) == 0);
	GWRIG_CHECK(r, ncspeer_wait_open(r->ncs, NCSPEER_QUERY,
	    NCSPEER_ACCEPTED, 1, WAIT_MS) == 0);
	GWRIG_CHECK(r, ncspeer_conn_of(r->ncs, NCSPEER_QUERY,
	    NCSPEER_ACCEPTED) != c);
}

/* A search that must read every description, NGROUPS times over. */
#define HEAVY_ASSETS	30000
#define HEAVY_GROUPS	10

struct heavy {
	struct gwrig		*r;
	struct ncspeer_match	 mt;	/* the search's answer */
};

static bool
heavy_answered(void *arg)
{
	struct heavy	*h = arg;

	return ncspeer_find(h->r->ncs, &h->mt) != NULL;
}

/*
 * A search that takes long (every description of a large catalog read,
 * for each of several searchGroups) runs on the bookkeeping thread:
 * heartbeats on another connection are answered while it runs, none of
 * them waiting for anything like the time the search takes.
 */
static void
test_heavy_search(void **state)
{
	struct gwrig			*r = *state;
	struct heavy			 h;
	const struct ncspeer_frame	*f;
	struct mos_msg			*m;
	struct mos_req_obj_list		*q;
	struct mos_search_group		*g;
	struct queue			*qu;
	char				 sql[512], xp[64];
	int64_t				 t0, took, slowest;
	int				 c, hb, n, i;

	/* a catalog of descriptions of 1,000 characters, straight in */
	GWRIG_CHECK(r, (qu = gwproc_queue(r->gw)) != NULL);
	snprintf(sql, sizeof sql, "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL"
	    " SELECT i + 1 FROM n WHERE i < %d) INSERT INTO assets(obj_id,"
	    " slug, type, tb, dur, rev, air, status, description, created_by,"
	    " created, changed_by, changed) SELECT 'H' || i, 'heavy ' || i,"
	    " 'VIDEO', '50', i, 1, 'READY', 'NEW', %s, 't',"
	    " 0, 't', 0 FROM n", HEAVY_ASSETS, store_driver(queue_db(qu)) ==
	    STORE_POSTGRESQL ? "substr(repeat(md5(random()::text), 32), 1,"
	    " 1000)" : "hex(randomblob(500))");
	GWRIG_CHECK(r, store_exec(queue_db(qu), sql) ==
	    STORE_OK);
	queue_close(qu);
	c = gwrig_dial(r, NCSPEER_LOWER);
	hb = gwrig_dial(r, NCSPEER_LOWER);
	GWRIG_CHECK(r, c > 0 && hb > 0);
	m = ncspeer_msg(r->ncs, MOS_T_MOS_REQ_OBJ_LIST);
	q = &m->u.mos_req_obj_list;
	q->username = "jdoe";
	q->query_id = "HEAVY";
	q->mos_schema = PROFILE3_SCHEMA;
	g = mos_msg_calloc(m, HEAVY_GROUPS, sizeof *g);
	for (i = 0; i < HEAVY_GROUPS; i++) {
		g[i].search_field.v = mos_msg_calloc(m, 1,
		    sizeof *g[i].search_field.v);
		snprintf(xp, sizeof xp, "description[contains(., 'zz%d')]", i);
		g[i].search_field.v[0].xpath = mos_msg_strdup(m, xp);
		g[i].search_field.n = 1;
	}
	q->search_group.v = g;
	q->search_group.n = HEAVY_GROUPS;
	memset(&h, 0, sizeof h);
	h.r = r;
	h.mt.conn = c;
	h.mt.message_id = m->message_id;
	h.mt.from = ncspeer_nframes(r->ncs);
	t0 = ncspeer_now_ms();
	GWRIG_CHECK(r, ncspeer_send(r->ncs, c, m) == 0);
	mos_msg_free(m);
	n = itutil_heartbeats_until(r, hb, heavy_answered, &h, 60000,
	    &slowest);
	f = ncspeer_wait(r->ncs, &h.mt, 60000);
	took = ncspeer_now_ms() - t0;
	printf("search over %d descriptions, %d groups: answered in %lld ms; "
	    "%d heartbeats answered meanwhile, the slowest in %lld ms\n",
	    HEAVY_ASSETS, HEAVY_GROUPS, (long long)took, n,
	    (long long)slowest);
	GWRIG_CHECK(r, f != NULL && f->msg != NULL &&
	    f->msg->type == MOS_T_MOS_OBJ_LIST &&
	    f->msg->u.mos_obj_list.list_return_total == 0);
	if (n < 2 || itutil_loop_stalled(slowest, took)) {
		gwrig_dump(r, "heartbeats during the search", __FILE__,
		    __LINE__);
		fail_msg("%d heartbeats in %lld ms, slowest %lld ms", n,
		    (long long)took, (long long)slowest);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_heavy_search,
		    itutil_setup, itutil_teardown),
		cmocka_unit_test_setup_teardown(test_obj_create, itutil_setup,
		    itutil_teardown),
		cmocka_unit_test_setup_teardown(test_obj_create_retry,
		    itutil_setup, itutil_teardown),
		cmocka_unit_test_setup_teardown(test_obj_action, itutil_setup,
		    itutil_teardown),
		cmocka_unit_test_setup_teardown(test_search, itutil_setup,
		    itutil_teardown),
		cmocka_unit_test_setup_teardown(test_query_link,
		    setup_query_link, itutil_teardown),
	};

	mos_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
